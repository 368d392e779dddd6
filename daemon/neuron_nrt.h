/* neuron_nrt.h: the Neuron runtime's C API (libnrt.so.1), loaded with dlopen so nkid builds and runs without it. */
#ifndef NKID_NEURON_NRT_H
#define NKID_NEURON_NRT_H

#include <stddef.h>
#include <stdint.h>

/*
 * The subset of nrt/nrt.h, nrt/nrt_experimental.h, nrt/nrt_version.h and
 * nrt/nrt_status.h that nkid uses, declared from the runtime's documented
 * ABI (Neuron SDK 2.x, NRT_MAJOR_VERSION 2). The C enums of the runtime
 * are int-sized; structures keep the runtime's layout.
 */

/* NRT_STATUS values (nrt_status.h). */
enum {
	NEURON_NRT_SUCCESS = 0,
	NEURON_NRT_FAILURE = 1,
	NEURON_NRT_INVALID = 2,
	NEURON_NRT_INVALID_HANDLE = 3,
	NEURON_NRT_RESOURCE = 4,
	NEURON_NRT_TIMEOUT = 5,
	NEURON_NRT_HW_ERROR = 6,
	NEURON_NRT_QUEUE_FULL = 7,
	NEURON_NRT_LOAD_NOT_ENOUGH_NC = 9,
	NEURON_NRT_UNSUPPORTED_NEFF_VERSION = 10,
	NEURON_NRT_FAIL_HOST_MEM_ALLOC = 11,
	NEURON_NRT_UNINITIALIZED = 13,
	NEURON_NRT_CLOSED = 14,
	NEURON_NRT_EXEC_BAD_INPUT = 1002,
	NEURON_NRT_EXEC_COMPLETED_WITH_NUM_ERR = 1003,
	NEURON_NRT_EXEC_COMPLETED_WITH_ERR = 1004,
	NEURON_NRT_EXEC_NC_BUSY = 1005,
	NEURON_NRT_EXEC_OOB = 1006,
};

/* nrt_framework_type_t: framework-less execution. */
#define NEURON_NRT_FRAMEWORK_NO_FW	1
/* nrt_tensor_placement_t. */
#define NEURON_NRT_PLACEMENT_DEVICE	0
/* nrt_tensor_usage_t. */
#define NEURON_NRT_USAGE_INPUT		0
#define NEURON_NRT_USAGE_OUTPUT		1

/* nrt_dtype_t. */
enum {
	NEURON_NRT_DTYPE_UINT64 = 0x1,
	NEURON_NRT_DTYPE_INT8 = 0x2,
	NEURON_NRT_DTYPE_UINT8 = 0x3,
	NEURON_NRT_DTYPE_INT16 = 0x4,
	NEURON_NRT_DTYPE_UINT16 = 0x5,
	NEURON_NRT_DTYPE_BFLOAT16 = 0x6,
	NEURON_NRT_DTYPE_FLOAT16 = 0x7,
	NEURON_NRT_DTYPE_INT32 = 0x8,
	NEURON_NRT_DTYPE_UINT32 = 0x9,
	NEURON_NRT_DTYPE_FLOAT32 = 0xA,
	NEURON_NRT_DTYPE_FP32R = 0xB,
	NEURON_NRT_DTYPE_INT64 = 0xC,
	NEURON_NRT_DTYPE_FP8_E3 = 0xD,
	NEURON_NRT_DTYPE_FP8_E4 = 0xE,
	NEURON_NRT_DTYPE_FP8_E5 = 0xF,
};

typedef struct neuron_nrt_model		neuron_nrt_model;
typedef struct neuron_nrt_tensor	neuron_nrt_tensor;
typedef void				neuron_nrt_tensor_set;

/* nrt_version_t. */
struct neuron_nrt_version {
	uint64_t	major;
	uint64_t	minor;
	uint64_t	patch;
	uint64_t	maintenance;
	char		detail[128];
	char		git_hash[64];
};

/* nrt_tensor_info_t and nrt_tensor_info_array_t. */
#define NEURON_NRT_TENSOR_NAME_MAX	256
struct neuron_nrt_tensor_info {
	char		 name[NEURON_NRT_TENSOR_NAME_MAX];
	int		 usage;
	size_t		 size;
	int		 dtype;
	uint32_t	*shape;
	uint32_t	 ndim;
};

struct neuron_nrt_tensor_info_array {
	uint64_t			count;
	struct neuron_nrt_tensor_info	info[];
};

/* The entry points, resolved by name. */
struct neuron_nrt {
	void	*dl;
	int	(*init)(int framework, const char *fw_version,
		    const char *fal_version);
	void	(*close)(void);
	int	(*get_version)(struct neuron_nrt_version *v, size_t size);
	int	(*load)(const void *neff, size_t size, int32_t vnc,
		    int32_t vnc_count, neuron_nrt_model **model);
	int	(*unload)(neuron_nrt_model *model);
	int	(*get_model_tensor_info)(neuron_nrt_model *model,
		    struct neuron_nrt_tensor_info_array **info);
	int	(*free_model_tensor_info)(
		    struct neuron_nrt_tensor_info_array *info);
	int	(*tensor_allocate)(int placement, int vnc, size_t size,
		    const char *name, neuron_nrt_tensor **t);
	void	(*tensor_free)(neuron_nrt_tensor **t);
	int	(*tensor_write)(neuron_nrt_tensor *t, const void *buf,
		    size_t offset, size_t size);
	int	(*tensor_read)(const neuron_nrt_tensor *t, void *buf,
		    size_t offset, size_t size);
	int	(*allocate_tensor_set)(neuron_nrt_tensor_set **set);
	void	(*destroy_tensor_set)(neuron_nrt_tensor_set **set);
	int	(*add_tensor_to_tensor_set)(neuron_nrt_tensor_set *set,
		    const char *name, neuron_nrt_tensor *t);
	int	(*execute)(neuron_nrt_model *model,
		    const neuron_nrt_tensor_set *in, neuron_nrt_tensor_set *out);
};

/*
 * dlopen path (RTLD_NOW | RTLD_LOCAL; a bare name is searched the
 * dynamic loader's way) and resolve every entry point. On failure
 * returns -1 with a message that names the library and what is wrong
 * ("cannot load the Neuron runtime 'libnrt.so.1': ...: cannot open shared
 * object file" or "... lacks the symbol 'nrt_execute'"); nrt is left
 * empty. On success the caller releases nrt with neuron_nrt_close.
 */
int	neuron_nrt_open(struct neuron_nrt *nrt, const char *path, char *err,
	    size_t errlen);
/* dlclose; the runtime must have been nrt_close'd. */
void	neuron_nrt_close(struct neuron_nrt *nrt);

/* The name of an NRT_STATUS ("NRT_EXEC_NC_BUSY"), or "NRT status N" in
 * buf for an unknown one; returns buf or a static string. */
const char *neuron_nrt_status_name(int status, char *buf, size_t len);
/* numpy-style name of a runtime dtype ("float32"), or NULL. */
const char *neuron_nrt_dtype_name(int dtype);

#endif /* NKID_NEURON_NRT_H */
