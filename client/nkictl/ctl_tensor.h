/*
 * ctl_tensor.h: a kernel's inputs from .npy files (`-i NAME=FILE.npy`) and
 * its outputs to .npy files, shared by run, simulate and later benchmark
 * and profile.
 */
#ifndef NKID_CTL_TENSOR_H
#define NKID_CTL_TENSOR_H

#include <stddef.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "npy.h"

/* Inputs in the kernel's parameter order, ready for a request. */
typedef struct ctl_inputs {
	size_t n;
	Nkid__V1__Tensor *tensors;   /* n messages; data borrowed from arrays */
	Nkid__V1__Tensor **ptrs;     /* n pointers into tensors */
	npy_array *arrays;           /* n arrays that own the data */
	char **names;                /* n parameter names (owned) */
} ctl_inputs;

/*
 * Split an input spec: "NAME=FILE" when NAME is an identifier, else the
 * whole spec is FILE and *name is NULL. Both point into a copy the caller
 * frees with free(*name ? *name : *file).
 */
int ctl_input_spec_split(const char *spec, char **name, char **file);

/*
 * Load the input specs for kernel k. With an nkir/1 kernel, named inputs
 * go to the parameter of that name, unnamed ones fill the remaining
 * parameters in order, and every parameter must get exactly one; for an
 * opaque format inputs go in the order given. '<V1' files take the
 * parameter's float8 dtype. Prints what is wrong; returns CTL_EXIT_OK,
 * CTL_EXIT_USAGE (specs that do not fit the kernel) or CTL_EXIT_FAIL (a
 * file cannot be read). Release in with ctl_inputs_release in any case.
 */
int ctl_inputs_load(ctl_ctx *ctx, const Nkid__V1__Kernel *k,
    char *const *specs, size_t nspecs, ctl_inputs *in);

void ctl_inputs_release(ctl_inputs *in);

/*
 * Write each output to DIR/NAME.npy (DIR created if missing; a name that
 * is not a plain file name becomes outputN). With arr (a cJSON array) add
 * {name, dtype, shape, path} objects to it, else print a table to
 * ctx->out. Returns CTL_EXIT_OK or CTL_EXIT_FAIL (messages printed; the
 * other outputs are still written).
 */
struct cJSON;
int ctl_outputs_write(ctl_ctx *ctx, const char *dir,
    Nkid__V1__Tensor *const *outs, size_t n, struct cJSON *arr);

/* "(2, 3)" / "(5,)" / "()" into buf. */
void ctl_shape_format(const uint64_t *shape, size_t rank, char *buf,
    size_t len);

#endif
