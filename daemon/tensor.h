/* tensor.h: wire Tensor messages to and from the backends' host tensors, checked before any allocation. */
#ifndef NKID_TENSOR_H
#define NKID_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "nkid.pb-c.h"
#include "sim/sim.h"

struct backend_program;
struct shm_set;

enum tensor_err {
	TENSOR_OK = 0,
	TENSOR_EDTYPE = -1,	/* unknown dtype name */
	TENSOR_ERANK = -2,	/* rank over SIM_MAX_RANK */
	TENSOR_ESIZE = -3,	/* shape x dtype overflows or data length differs */
	TENSOR_ELIMIT = -4,	/* over max_tensors or max_bytes, or a
				 * shared-memory bound */
	TENSOR_ESHM = -5,	/* a shared-memory region nkid refuses: bad
				 * name, symlink, not a file, too small */
	TENSOR_ENOENT = -6,	/* no such shared-memory region */
	TENSOR_EPERM = -7,	/* a region not owned by the caller */
	TENSOR_ESYS = -8,	/* a region that cannot be opened or mapped */
};

/* TENSOR_TAKE_SHAPES: a tensor with neither data nor shm is taken with
 * data == NULL (Benchmark: the backend supplies the values). */
#define TENSOR_TAKE_SHAPES	0x1

/*
 * Check n wire tensors (dtype known, rank, shape x dtype size without
 * overflow, data length, or shm size, equal to it (not both set), a
 * valid region name, count <= max_tensors, total bytes <= max_bytes,
 * inline and shared alike) and only then fill out[0 .. n-1] (a new array
 * the caller frees with free(); data borrowed from the messages, or from
 * read-only mappings of the regions opened in shm, which the caller
 * frees with shm_set_free after the execution). shm NULL: a tensor with
 * shm set is refused. flags: TENSOR_TAKE_SHAPES or 0. On failure writes
 * a message naming the tensor into err and *out is NULL (shm may hold
 * regions opened before the failure).
 */
int	tensor_inputs_convert(Nkid__V1__Tensor *const *in, size_t n,
	    size_t max_tensors, uint64_t max_bytes, int flags,
	    struct shm_set *shm, struct sim_tensor **out, char *err, size_t errlen);
/*
 * File offsets for the outputs of p written one after the other from
 * file offset base, each aligned to SHM_ALIGN: offsets[i] (p->noutputs
 * entries), sizes[i], and *end the first byte after the last. -1 if an
 * offset overflows 64 bits.
 */
int	tensor_outputs_layout(const struct backend_program *p, uint64_t base,
	    uint64_t *offsets, uint64_t *sizes, uint64_t *end);
/*
 * Bytes needed by the outputs of p, checked for overflow; -1 with a
 * message if over max_bytes or overflowing.
 */
int	tensor_outputs_size(const struct backend_program *p,
	    uint64_t max_bytes, uint64_t *total, char *err, size_t errlen);
/*
 * Wire messages for the n output tensors t of p, named after the
 * kernel's outputs. The messages borrow t's data and p's names: free the
 * array with tensor_messages_free before releasing t. With shm_name not
 * NULL the outputs were written to that region at offsets[i]: the
 * messages carry shm (name borrowed, size t[i].nbytes) and no data.
 */
Nkid__V1__Tensor **tensor_outputs_messages(const struct backend_program *p,
	    const struct sim_tensor *t, size_t n, const char *shm_name,
	    const uint64_t *offsets);
void	tensor_messages_free(Nkid__V1__Tensor **m, size_t n);

#endif /* NKID_TENSOR_H */
