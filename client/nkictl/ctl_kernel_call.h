/*
 * ctl_kernel_call.h: the life of a command that sends a kernel (compile,
 * run, simulate): its command line and kernel file read, the inputs
 * loaded, the call made, the NEFF and the outputs written.
 */
#ifndef NKID_CTL_KERNEL_CALL_H
#define NKID_CTL_KERNEL_CALL_H

#include <stddef.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_kargs.h"
#include "ctl_tensor.h"

struct cJSON;

typedef struct ctl_kernel_call {
	ctl_kargs ka;
	Nkid__V1__KernelRef *saved;      /* the kernel file's */
	Nkid__V1__KernelRef ref;         /* for the request (borrows) */
	const Nkid__V1__Kernel *kernel;  /* saved->kernel */
	ctl_inputs in;                   /* with CTL_KARGS_INPUTS */
	ProtobufCMessage *reply;         /* after ctl_kernel_call_send */
} ctl_kernel_call;

/*
 * Parse argv for the options in flags (ctl_kargs_parse), read the kernel
 * file into kc->saved and fill kc->ref from both; with CTL_KARGS_INPUTS
 * also load the inputs into kc->in. Returns 0 to go on, or -1 when the
 * command must return *rc now (--help: 0; otherwise the failure is
 * printed). Release kc with ctl_kernel_call_release in both cases.
 */
int ctl_kernel_call_init(ctl_ctx *ctx, int argc, char **argv,
    unsigned flags, ctl_kernel_call *kc, int *rc);

/*
 * Call method with req (which borrows kc->ref) and keep the reply of type
 * reply_desc in kc->reply (freed by ctl_kernel_call_release). Returns
 * CTL_EXIT_OK, or the failure (printed) as ctl_call does.
 */
int ctl_kernel_call_send(ctl_ctx *ctx, ctl_kernel_call *kc,
    const char *method, const ProtobufCMessage *req,
    const ProtobufCMessageDescriptor *reply_desc);

/*
 * With --neff FILE, write the reply's NEFF image there (borrowed). Returns
 * CTL_EXIT_OK (also without --neff) or CTL_EXIT_FAIL (printed).
 */
int ctl_kernel_call_neff_write(ctl_ctx *ctx, const ctl_kernel_call *kc,
    const ProtobufCBinaryData *neff);

/*
 * Finish a run-like reply: write the outputs to -o DIR (ctl_outputs_write)
 * after what the caller printed; with --json, o (the caller's object, may
 * be NULL when out of memory, taken over here) gets an "outputs" array and
 * is printed. Returns the command's exit code.
 */
int ctl_kernel_call_outputs_write(ctl_ctx *ctx, const ctl_kernel_call *kc,
    struct cJSON *o, Nkid__V1__Tensor *const *outs, size_t n);

/*
 * Begin the report of a reply: with --json a new object (NULL when out of
 * memory; the caller prints or frees it) with "kernel" (name, or the
 * kernel's own if NULL or "") and "neff_key"; else print those two lines
 * and return NULL.
 */
struct cJSON *ctl_kernel_call_head_print(ctl_ctx *ctx,
    const ctl_kernel_call *kc, const char *name, const char *neff_key);

void ctl_kernel_call_release(ctl_kernel_call *kc);

#endif
