/* ctl_tensor.h: a kernel's inputs from .npy files (-i NAME=FILE.npy) and its outputs to .npy files, for the commands that run kernels. */
#ifndef NKID_CTL_TENSOR_H
#define NKID_CTL_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "nkid.pb-c.h"
#include "npy.h"

struct cJSON;
struct ctl_ctx;

/* Inputs in the kernel's parameter order, ready for a request. */
struct ctl_tensor_inputs {
	size_t			  n;
	Nkid__V1__Tensor	 *tensors;	/* data from arrays */
	Nkid__V1__Tensor	**ptrs;		/* into tensors */
	struct npy_array	 *arrays;	/* own the data */
	char			**names;	/* parameter names */
};

/*
 * Split an input spec: "NAME=FILE" when NAME is an identifier, else the
 * whole spec is FILE and *name is NULL. Both point into a copy the caller
 * frees with free(*name != NULL ? *name : *file). -1 when out of memory.
 */
int	 ctl_tensor_spec_split(const char *spec, char **name, char **file);

/*
 * Load the input specs for kernel k. With an nkir/1 kernel, named inputs
 * go to the parameter of that name, unnamed ones fill the remaining
 * parameters in order, and every parameter must get exactly one; for an
 * opaque format inputs go in the order given. '<V1' files take the
 * parameter's float8 dtype. Prints what is wrong; returns CTL_EXIT_OK,
 * CTL_EXIT_USAGE (specs that do not fit the kernel) or CTL_EXIT_FAIL (a
 * file cannot be read). Release in with ctl_tensor_inputs_release in any
 * case.
 */
int	 ctl_tensor_inputs_load(struct ctl_ctx *ctx,
	    const Nkid__V1__Kernel *k, char *const *specs, size_t nspecs,
	    struct ctl_tensor_inputs *in);
void	 ctl_tensor_inputs_release(struct ctl_tensor_inputs *in);
/*
 * The inputs of kernel k as shapes and dtypes without data (Benchmark):
 * from an nkir/1 kernel's parameters; another format is a usage error.
 * Returns CTL_EXIT_OK, or the failure (printed). Release in with
 * ctl_tensor_inputs_release in any case.
 */
int	 ctl_tensor_inputs_shapes(struct ctl_ctx *ctx,
	    const Nkid__V1__Kernel *k, struct ctl_tensor_inputs *in);

/*
 * Write each output to DIR/NAME.npy (DIR created if missing; a name that
 * is not a plain file name becomes outputN, a repeated one gets _N). With
 * arr (a cJSON array) add {name, dtype, shape, path} objects to it, else
 * print a table to ctx->out. Returns CTL_EXIT_OK or CTL_EXIT_FAIL
 * (messages printed; the other outputs are still written).
 */
int	 ctl_tensor_outputs_write(struct ctl_ctx *ctx, const char *dir,
	    Nkid__V1__Tensor *const *outs, size_t n, struct cJSON *arr);

/* "(2, 3)" / "(5,)" / "()" into buf. */
void	 ctl_tensor_shape_format(const uint64_t *shape, size_t rank,
	    char *buf, size_t len);

#endif /* NKID_CTL_TENSOR_H */
