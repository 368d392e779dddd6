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

const char *
neuron_nrt_status_name(int status, char *buf, size_t len)
{
	switch (status) {
	case NEURON_NRT_SUCCESS:
		return ("NRT_SUCCESS");
	case NEURON_NRT_FAILURE:
		return ("NRT_FAILURE");
	case NEURON_NRT_INVALID:
		return ("NRT_INVALID");
	case NEURON_NRT_INVALID_HANDLE:
		return ("NRT_INVALID_HANDLE");
	case NEURON_NRT_RESOURCE:
		return ("NRT_RESOURCE");
	case NEURON_NRT_TIMEOUT:
		return ("NRT_TIMEOUT");
	case NEURON_NRT_HW_ERROR:
		return ("NRT_HW_ERROR");
	case NEURON_NRT_QUEUE_FULL:
		return ("NRT_QUEUE_FULL");
	case NEURON_NRT_LOAD_NOT_ENOUGH_NC:
		return ("NRT_LOAD_NOT_ENOUGH_NC");
	case NEURON_NRT_UNSUPPORTED_NEFF_VERSION:
		return ("NRT_UNSUPPORTED_NEFF_VERSION");
	case NEURON_NRT_FAIL_HOST_MEM_ALLOC:
		return ("NRT_FAIL_HOST_MEM_ALLOC");
	case NEURON_NRT_UNINITIALIZED:
		return ("NRT_UNINITIALIZED");
	case NEURON_NRT_CLOSED:
		return ("NRT_CLOSED");
	case NEURON_NRT_EXEC_BAD_INPUT:
		return ("NRT_EXEC_BAD_INPUT");
	case NEURON_NRT_EXEC_COMPLETED_WITH_NUM_ERR:
		return ("NRT_EXEC_COMPLETED_WITH_NUM_ERR");
	case NEURON_NRT_EXEC_COMPLETED_WITH_ERR:
		return ("NRT_EXEC_COMPLETED_WITH_ERR");
	case NEURON_NRT_EXEC_NC_BUSY:
		return ("NRT_EXEC_NC_BUSY");
	case NEURON_NRT_EXEC_OOB:
		return ("NRT_EXEC_OOB");
	}
	snprintf(buf, len, "NRT status %d", status);
	return (buf);
}

const char *
neuron_nrt_dtype_name(int dtype)
{
	switch (dtype) {
	case NEURON_NRT_DTYPE_UINT64:
		return ("uint64");
	case NEURON_NRT_DTYPE_INT8:
		return ("int8");
	case NEURON_NRT_DTYPE_UINT8:
		return ("uint8");
	case NEURON_NRT_DTYPE_INT16:
		return ("int16");
	case NEURON_NRT_DTYPE_UINT16:
		return ("uint16");
	case NEURON_NRT_DTYPE_BFLOAT16:
		return ("bfloat16");
	case NEURON_NRT_DTYPE_FLOAT16:
		return ("float16");
	case NEURON_NRT_DTYPE_INT32:
		return ("int32");
	case NEURON_NRT_DTYPE_UINT32:
		return ("uint32");
	case NEURON_NRT_DTYPE_FLOAT32:
		return ("float32");
	case NEURON_NRT_DTYPE_FP32R:
		return ("fp32r");
	case NEURON_NRT_DTYPE_INT64:
		return ("int64");
	case NEURON_NRT_DTYPE_FP8_E3:
		return ("float8_e3");
	case NEURON_NRT_DTYPE_FP8_E4:
		return ("float8_e4m3fn");
	case NEURON_NRT_DTYPE_FP8_E5:
		return ("float8_e5m2");
	}
	return (NULL);
}
