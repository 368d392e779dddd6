/* tensor.h: wire Tensor messages to and from the backends' host tensors, checked before any allocation. */
#ifndef NKID_TENSOR_H
#define NKID_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "nkid.pb-c.h"
#include "sim/sim.h"

struct backend_program;

enum tensor_err {
	TENSOR_OK = 0,
	TENSOR_EDTYPE = -1,	/* unknown dtype name */
	TENSOR_ERANK = -2,	/* rank over SIM_MAX_RANK */
	TENSOR_ESIZE = -3,	/* shape x dtype overflows or data length differs */
	TENSOR_ELIMIT = -4,	/* over max_tensors or max_bytes */
};

/*
 * Check n wire tensors (dtype known, rank, shape x dtype size without
 * overflow, data length equal to it, count <= max_tensors, total bytes <=
 * max_bytes) and only then fill out[0 .. n-1] (a new array the caller
 * frees with free(); data borrowed from the messages). On failure writes
 * a message naming the tensor into err and *out is NULL.
 */
int	tensor_inputs_convert(Nkid__V1__Tensor *const *in, size_t n,
	    size_t max_tensors, uint64_t max_bytes, sim_tensor **out,
	    char *err, size_t errlen);
/*
 * Bytes needed by the outputs of p, checked for overflow; -1 with a
 * message if over max_bytes or overflowing.
 */
int	tensor_outputs_size(const struct backend_program *p,
	    uint64_t max_bytes, uint64_t *total, char *err, size_t errlen);
/*
 * Wire messages for the n output tensors t of p, named after the
 * kernel's outputs. The messages borrow t's data and p's names: free the
 * array with tensor_messages_free before releasing t.
 */
Nkid__V1__Tensor **tensor_outputs_messages(const struct backend_program *p,
	    const sim_tensor *t, size_t n);
void	tensor_messages_free(Nkid__V1__Tensor **m, size_t n);

#endif /* NKID_TENSOR_H */
