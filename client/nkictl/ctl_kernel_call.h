/* ctl_kernel_call.h: the life of a command that sends a kernel (compile, run, simulate): its options, the kernel file and inputs read, the call made, the NEFF and the outputs written. */
#ifndef NKID_CTL_KERNEL_CALL_H
#define NKID_CTL_KERNEL_CALL_H

#include <stddef.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_tensor.h"

struct cJSON;

/* The rows of these commands' option tables; ctl_kernel_call_init reads
 * those a command has. */
#define CTL_KERNEL_CALL_OPTS_INPUT					\
	{ 'i', "input", "[NAME=]FILE.npy", "an input: parameter NAME, "	\
	    "or the next one not given by name" }
#define CTL_KERNEL_CALL_OPTS_OUTPUT					\
	{ 'o', "output-dir", "DIR", "write the outputs to "		\
	    "DIR/NAME.npy (default: .)" }
#define CTL_KERNEL_CALL_OPT_CORE					\
	{ 'c', "core", "CORE", "run on this core (default: any)" }
#define CTL_KERNEL_CALL_OPT_BATCH					\
	{ 0, "batch", NULL, "queue the job in the batch class" }
#define CTL_KERNEL_CALL_OPTS_TARGET					\
	{ 't', "target", "T", "compile for target T (default: the "	\
	    "file's, else the host's)" },				\
	{ 0, "options", "OPTS", "compiler options (default: the "	\
	    "file's)" }
#define CTL_KERNEL_CALL_OPTS_RETRY					\
	{ 0, "retry-failed", NULL, "compile again even if a failure "	\
	    "is cached" }
#define CTL_KERNEL_CALL_OPTS_NEFF					\
	{ 0, "neff", "FILE", "write the compiled NEFF to FILE" }

/* The operand of these commands. */
#define CTL_KERNEL_CALL_ARGS	{ 1, 1, "KERNEL (a traced kernel file)" }

struct ctl_kernel_call {
	const char			*outdir;	/* -o, or "." */
	const char			*neff;		/* --neff, or NULL */
	int				 core;		/* -c, -1: any */
	int				 batch;		/* --batch */
	Nkid__V1__KernelRef		*saved;		/* the file's */
	Nkid__V1__KernelRef		 ref;		/* to send */
	const Nkid__V1__Kernel		*kernel;	/* saved->kernel */
	struct ctl_tensor_inputs	 in;		/* -i, read */
	ProtobufCMessage		*reply;		/* after _send */
};

/*
 * Read a's options (those of the rows above the command has), the kernel
 * file (a's operand) into kc->saved and, if the command takes -i, the
 * inputs into kc->in, and
 * fill kc->ref for a request from the file and --target, --options,
 * --retry-failed. Returns CTL_EXIT_OK, or the failure (printed). Release
 * kc with ctl_kernel_call_release in both cases.
 */
int	 ctl_kernel_call_init(struct ctl_ctx *ctx, const struct ctl_args *a,
	    struct ctl_kernel_call *kc);
void	 ctl_kernel_call_release(struct ctl_kernel_call *kc);

/*
 * Call method with req and keep the reply of type reply_desc in kc->reply
 * (freed by ctl_kernel_call_release). The fields that kernel requests
 * share are set here, by name, in the requests that have them: ref (to
 * kc->ref, borrowed), inputs (-i), core (-c), job_class (--batch) and
 * return_neff (--neff); the command sets the others. With --neff FILE,
 * the reply's neff is then written there (through a temp file and a
 * rename). Returns CTL_EXIT_OK, or the failure (printed) as ctl_call
 * does, or that of the write.
 */
int	 ctl_kernel_call_send(struct ctl_ctx *ctx,
	    struct ctl_kernel_call *kc, const char *method,
	    ProtobufCMessage *req,
	    const ProtobufCMessageDescriptor *reply_desc);

/*
 * What a kernel command's exec does: read a into kc (ctl_kernel_call_init),
 * call method with req (ctl_kernel_call_send), and on success have report
 * print the reply in kc->reply (arg is report's), then release kc. Returns
 * the command's exit code: the failure (printed), or report's.
 */
int	 ctl_kernel_call_exec(struct ctl_ctx *ctx, const struct ctl_args *a,
	    const char *method, ProtobufCMessage *req,
	    const ProtobufCMessageDescriptor *reply_desc,
	    int (*report)(struct ctl_ctx *, const struct ctl_kernel_call *,
	    void *), void *arg);

/*
 * Write len bytes of data to path through path.tmp and a rename: path is
 * whole or untouched. Returns CTL_EXIT_OK or CTL_EXIT_FAIL (printed).
 */
int	 ctl_kernel_call_file_write(struct ctl_ctx *ctx, const char *path,
	    const void *data, size_t len);

/*
 * Begin the report of a reply: with --json a new object (NULL when out of
 * memory; the caller prints or frees it) with "kernel" (name, or the
 * kernel's own if NULL or "") and "neff_key"; else print those two lines
 * and return NULL.
 */
struct cJSON *ctl_kernel_call_head_print(struct ctl_ctx *ctx,
	    const struct ctl_kernel_call *kc, const char *name,
	    const char *neff_key);

/*
 * Finish a run-like reply: write the outputs to -o DIR
 * (ctl_tensor_outputs_write) after what the caller printed; with --json,
 * o (the caller's object, NULL when out of memory, taken over here) gets
 * an "outputs" array and is printed. Returns the command's exit code.
 */
int	 ctl_kernel_call_outputs_write(struct ctl_ctx *ctx,
	    const struct ctl_kernel_call *kc, struct cJSON *o,
	    Nkid__V1__Tensor *const *outs, size_t n);

#endif /* NKID_CTL_KERNEL_CALL_H */
