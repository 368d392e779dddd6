/* neuron_nrt.c: load the Neuron runtime with dlopen and resolve the entry points nkid uses. */
#include <assert.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "daemon/neuron_nrt.h"

#define NRT_SYM(field, name)	{ name, offsetof(struct neuron_nrt, field) }

static const struct {
	const char	*name;
	size_t		 off;
} neuron_nrt_syms[] = {
	NRT_SYM(init, "nrt_init"),
	NRT_SYM(close, "nrt_close"),
	NRT_SYM(get_version, "nrt_get_version"),
	NRT_SYM(load, "nrt_load"),
	NRT_SYM(unload, "nrt_unload"),
	NRT_SYM(get_model_tensor_info, "nrt_get_model_tensor_info"),
	NRT_SYM(free_model_tensor_info, "nrt_free_model_tensor_info"),
	NRT_SYM(tensor_allocate, "nrt_tensor_allocate"),
	NRT_SYM(tensor_free, "nrt_tensor_free"),
	NRT_SYM(tensor_write, "nrt_tensor_write"),
	NRT_SYM(tensor_read, "nrt_tensor_read"),
	NRT_SYM(allocate_tensor_set, "nrt_allocate_tensor_set"),
	NRT_SYM(destroy_tensor_set, "nrt_destroy_tensor_set"),
	NRT_SYM(add_tensor_to_tensor_set, "nrt_add_tensor_to_tensor_set"),
	NRT_SYM(execute, "nrt_execute"),
};

int
neuron_nrt_open(struct neuron_nrt *nrt, const char *path, char *err,
    size_t errlen)
{
	const char	*e;
	void		*sym;
	size_t		 i;

	assert(nrt != NULL && path != NULL);
	memset(nrt, 0, sizeof *nrt);
	if ((nrt->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		e = dlerror();
		snprintf(err, errlen, "cannot load the Neuron runtime '%s': %s",
		    path, e != NULL ? e : "unknown error");
		return (-1);
	}
	for (i = 0; i < sizeof neuron_nrt_syms / sizeof neuron_nrt_syms[0];
	    i++) {
		dlerror();
		sym = dlsym(nrt->dl, neuron_nrt_syms[i].name);
		if (sym == NULL) {
			snprintf(err, errlen, "the Neuron runtime '%s' lacks "
			    "the symbol '%s'", path, neuron_nrt_syms[i].name);
			dlclose(nrt->dl);
			memset(nrt, 0, sizeof *nrt);
			return (-1);
		}
		/* POSIX guarantees data and function pointers convert. */
		memcpy((char *)nrt + neuron_nrt_syms[i].off, &sym, sizeof sym);
	}
	return (0);
}

void
neuron_nrt_close(struct neuron_nrt *nrt)
{
	if (nrt == NULL || nrt->dl == NULL)
		return;
	dlclose(nrt->dl);
	memset(nrt, 0, sizeof *nrt);
}

/* The runtime's name of each status nkid knows (nrt_status.h). */
static const struct neuron_nrt_status {
	int		 status;
	const char	*name;
} neuron_nrt_statuses[] = {
	{ NEURON_NRT_SUCCESS, "NRT_SUCCESS" },
	{ NEURON_NRT_FAILURE, "NRT_FAILURE" },
	{ NEURON_NRT_INVALID, "NRT_INVALID" },
	{ NEURON_NRT_INVALID_HANDLE, "NRT_INVALID_HANDLE" },
	{ NEURON_NRT_RESOURCE, "NRT_RESOURCE" },
	{ NEURON_NRT_TIMEOUT, "NRT_TIMEOUT" },
	{ NEURON_NRT_HW_ERROR, "NRT_HW_ERROR" },
	{ NEURON_NRT_QUEUE_FULL, "NRT_QUEUE_FULL" },
	{ NEURON_NRT_LOAD_NOT_ENOUGH_NC, "NRT_LOAD_NOT_ENOUGH_NC" },
	{ NEURON_NRT_UNSUPPORTED_NEFF_VERSION, "NRT_UNSUPPORTED_NEFF_VERSION" },
	{ NEURON_NRT_FAIL_HOST_MEM_ALLOC, "NRT_FAIL_HOST_MEM_ALLOC" },
	{ NEURON_NRT_UNINITIALIZED, "NRT_UNINITIALIZED" },
	{ NEURON_NRT_CLOSED, "NRT_CLOSED" },
	{ NEURON_NRT_EXEC_BAD_INPUT, "NRT_EXEC_BAD_INPUT" },
	{ NEURON_NRT_EXEC_COMPLETED_WITH_NUM_ERR,
	    "NRT_EXEC_COMPLETED_WITH_NUM_ERR" },
	{ NEURON_NRT_EXEC_COMPLETED_WITH_ERR, "NRT_EXEC_COMPLETED_WITH_ERR" },
	{ NEURON_NRT_EXEC_NC_BUSY, "NRT_EXEC_NC_BUSY" },
	{ NEURON_NRT_EXEC_OOB, "NRT_EXEC_OOB" },
};
#define NEURON_NRT_NSTATUSES \
	(sizeof neuron_nrt_statuses / sizeof neuron_nrt_statuses[0])

const char *
neuron_nrt_status_name(int status, char *buf, size_t len)
{
	size_t	i;

	for (i = 0; i < NEURON_NRT_NSTATUSES; i++)
		if (neuron_nrt_statuses[i].status == status)
			return (neuron_nrt_statuses[i].name);
	snprintf(buf, len, "NRT status %d", status);
	return (buf);
}

/* numpy-style names of the runtime's dtypes, by value; NULL in the gaps. */
static const char *const neuron_nrt_dtype_names[] = {
	[NEURON_NRT_DTYPE_UINT64] = "uint64",
	[NEURON_NRT_DTYPE_INT8] = "int8",
	[NEURON_NRT_DTYPE_UINT8] = "uint8",
	[NEURON_NRT_DTYPE_INT16] = "int16",
	[NEURON_NRT_DTYPE_UINT16] = "uint16",
	[NEURON_NRT_DTYPE_BFLOAT16] = "bfloat16",
	[NEURON_NRT_DTYPE_FLOAT16] = "float16",
	[NEURON_NRT_DTYPE_INT32] = "int32",
	[NEURON_NRT_DTYPE_UINT32] = "uint32",
	[NEURON_NRT_DTYPE_FLOAT32] = "float32",
	[NEURON_NRT_DTYPE_FP32R] = "fp32r",
	[NEURON_NRT_DTYPE_INT64] = "int64",
	[NEURON_NRT_DTYPE_FP8_E3] = "float8_e3",
	[NEURON_NRT_DTYPE_FP8_E4] = "float8_e4m3fn",
	[NEURON_NRT_DTYPE_FP8_E5] = "float8_e5m2",
};
#define NEURON_NRT_NDTYPES \
	(sizeof neuron_nrt_dtype_names / sizeof neuron_nrt_dtype_names[0])

const char *
neuron_nrt_dtype_name(int dtype)
{
	if (dtype < 0 || (size_t)dtype >= NEURON_NRT_NDTYPES)
		return (NULL);
	return (neuron_nrt_dtype_names[dtype]);
}
