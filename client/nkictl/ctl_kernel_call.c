/* ctl_kernel_call.c: what compile, run and simulate share: their options read, the kernel file and inputs read, the call made, the NEFF and outputs written. */
#include <sys/stat.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ctl_kernel.h"
#include "ctl_kernel_call.h"

/* Most -i inputs a command takes. */
#define CTL_KERNEL_CALL_MAX_INPUTS	4096

/* The options of a that a kernel command may have, into kc. */
static int
ctl_kernel_call_opts(struct ctl_ctx *ctx, const struct ctl_args *a,
    struct ctl_kernel_call *kc)
{
	unsigned long long	core = 0;
	int			rc;

	if ((rc = ctl_args_uint(ctx, a, "core", 0, 65535, &core)) != 0)
		return (rc);
	kc->core = ctl_args_has(a, "core") ? (int)core : -1;
	kc->batch = ctl_args_has(a, "batch") > 0;
	kc->outdir = ctl_args_get(a, "output-dir");
	if (kc->outdir == NULL)
		kc->outdir = ".";
	else if (*kc->outdir == '\0')
		return (ctl_usage_fail(ctx, "empty output directory"));
	/* Before the kernel runs: a directory the outputs cannot go to. */
	if (strcmp(kc->outdir, ".") != 0 && ((mkdir(kc->outdir, 0777) < 0 &&
	    errno != EEXIST) || access(kc->outdir, W_OK | X_OK) < 0)) {
		ctl_errorf(ctx, "%s: cannot write into output directory "
		    "'%s': %s", ctx->cmd->name, kc->outdir, strerror(errno));
		return (CTL_EXIT_FAIL);
	}
	kc->neff = ctl_args_get(a, "neff");
	if (kc->neff != NULL && *kc->neff == '\0')
		return (ctl_usage_fail(ctx, "empty --neff path"));
	if (ctl_args_has(a, "input") > CTL_KERNEL_CALL_MAX_INPUTS)
		return (ctl_usage_fail(ctx, "more than %d inputs",
		    CTL_KERNEL_CALL_MAX_INPUTS));
	return (CTL_EXIT_OK);
}

int
ctl_kernel_call_init(struct ctl_ctx *ctx, const struct ctl_args *a,
    struct ctl_kernel_call *kc)
{
	const char	*target, *options;
	char *const	*specs;
	char		 err[1024];
	size_t		 nspecs;
	int		 rc;

	assert(a->argc == 1);
	memset(kc, 0, sizeof *kc);
	nkid__v1__kernel_ref__init(&kc->ref);
	if ((rc = ctl_kernel_call_opts(ctx, a, kc)) != CTL_EXIT_OK)
		return (rc);
	if (ctl_kernel_read(a->argv[0], &kc->saved, err, sizeof err) < 0) {
		ctl_errorf(ctx, "%s: %s", ctx->cmd->name, err);
		return (CTL_EXIT_FAIL);
	}
	kc->kernel = kc->saved->kernel;
	if (ctl_args_takes(a, "input")) {
		specs = ctl_args_values(a, "input", &nspecs);
		if (nspecs == 0 && (ctx->cmd->flags & CTL_CMD_SHAPES))
			rc = ctl_tensor_inputs_shapes(ctx, kc->kernel,
			    &kc->in);
		else
			rc = ctl_tensor_inputs_load(ctx, kc->kernel, specs,
			    nspecs, &kc->in);
		if (rc != CTL_EXIT_OK)
			return (rc);
	}

	target = ctl_args_get(a, "target");
	options = ctl_args_get(a, "options");
	kc->ref.kernel = kc->saved->kernel;
	kc->ref.neff_key = kc->saved->neff_key;
	kc->ref.target = target != NULL && *target != '\0' ? (char *)target :
	    kc->saved->target;
	kc->ref.options = options != NULL && *options != '\0' ?
	    (char *)options : kc->saved->options;
	kc->ref.retry_failed = ctl_args_has(a, "retry-failed") ||
	    kc->saved->retry_failed;
	return (CTL_EXIT_OK);
}

void
ctl_kernel_call_release(struct ctl_kernel_call *kc)
{
	if (kc->reply != NULL)
		protobuf_c_message_free_unpacked(kc->reply, NULL);
	ctl_tensor_inputs_release(&kc->in);
	ctl_kernel_free(kc->saved);
	memset(kc, 0, sizeof *kc);
}

/* Where message m keeps its field name, of type t; NULL if its type has
 * none. */
static const ProtobufCFieldDescriptor *
ctl_kernel_call_field(const ProtobufCMessage *m, const char *name,
    ProtobufCType t)
{
	const ProtobufCFieldDescriptor	*f;

	f = protobuf_c_message_descriptor_get_field_by_name(m->descriptor,
	    name);
	assert(f == NULL || f->type == t);
	return (f);
}

/* The fields of req that kc's options fill, where req's type has them. */
static void
ctl_kernel_call_request(const struct ctl_kernel_call *kc,
    ProtobufCMessage *req)
{
	const ProtobufCFieldDescriptor	*f;
	char				*base = (char *)req;

	f = ctl_kernel_call_field(req, "ref", PROTOBUF_C_TYPE_MESSAGE);
	if (f != NULL)
		*(const Nkid__V1__KernelRef **)(base + f->offset) = &kc->ref;
	f = ctl_kernel_call_field(req, "inputs", PROTOBUF_C_TYPE_MESSAGE);
	if (f != NULL) {
		assert(f->label == PROTOBUF_C_LABEL_REPEATED);
		*(size_t *)(base + f->quantifier_offset) = kc->in.n;
		*(Nkid__V1__Tensor ***)(base + f->offset) = kc->in.ptrs;
	}
	f = ctl_kernel_call_field(req, "core", PROTOBUF_C_TYPE_INT32);
	if (f != NULL)
		*(int32_t *)(base + f->offset) = kc->core;
	f = ctl_kernel_call_field(req, "job_class", PROTOBUF_C_TYPE_ENUM);
	if (f != NULL)
		*(Nkid__V1__JobClass *)(base + f->offset) = kc->batch ?
		    NKID__V1__JOB_CLASS__JOB_CLASS_BATCH :
		    NKID__V1__JOB_CLASS__JOB_CLASS_INTERACTIVE;
	f = ctl_kernel_call_field(req, "return_neff", PROTOBUF_C_TYPE_BOOL);
	if (f != NULL)
		*(protobuf_c_boolean *)(base + f->offset) = kc->neff != NULL;
}

int
ctl_kernel_call_send(struct ctl_ctx *ctx, struct ctl_kernel_call *kc,
    const char *method, ProtobufCMessage *req,
    const ProtobufCMessageDescriptor *reply_desc)
{
	const ProtobufCFieldDescriptor	*f;
	const ProtobufCBinaryData	*neff;
	int				 rc;

	assert(kc->reply == NULL);
	ctl_kernel_call_request(kc, req);
	if ((rc = ctl_call(ctx, method, req, reply_desc, &kc->reply)) !=
	    CTL_EXIT_OK || kc->neff == NULL)
		return (rc);
	f = ctl_kernel_call_field(kc->reply, "neff", PROTOBUF_C_TYPE_BYTES);
	assert(f != NULL);
	neff = (const ProtobufCBinaryData *)((const char *)kc->reply +
	    f->offset);
	return (ctl_kernel_call_file_write(ctx, kc->neff, neff->data,
	    neff->len));
}

int
ctl_kernel_call_exec(struct ctl_ctx *ctx, const struct ctl_args *a,
    const char *method, ProtobufCMessage *req,
    const ProtobufCMessageDescriptor *reply_desc,
    int (*report)(struct ctl_ctx *, const struct ctl_kernel_call *, void *),
    void *arg)
{
	struct ctl_kernel_call	kc;
	int			rc;

	if ((rc = ctl_kernel_call_init(ctx, a, &kc)) == CTL_EXIT_OK &&
	    (rc = ctl_kernel_call_send(ctx, &kc, method, req, reply_desc)) ==
	    CTL_EXIT_OK)
		rc = report(ctx, &kc, arg);
	ctl_kernel_call_release(&kc);
	return (rc);
}

/* Write len bytes to fd; 0, or -1 with errno. */
static int
ctl_kernel_call_write_all(int fd, const uint8_t *p, size_t len)
{
	ssize_t	w;

	while (len > 0) {
		if ((w = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return (-1);
		}
		p += w;
		len -= (size_t)w;
	}
	return (0);
}

int
ctl_kernel_call_file_write(struct ctl_ctx *ctx, const char *path,
    const void *data, size_t len)
{
	char	*tmp;
	int	 fd, e;

	if (asprintf(&tmp, "%s.tmp", path) < 0)
		abort();
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) ==
	    -1)
		goto fail;
	if (ctl_kernel_call_write_all(fd, data, len) == -1) {
		e = errno;
		close(fd);
		errno = e;
		goto fail;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1)
		goto fail;
	free(tmp);
	return (CTL_EXIT_OK);
fail:
	e = errno;
	unlink(tmp);
	free(tmp);
	return (ctl_fail(ctx, CTL_CODE_LOCAL, "cannot write '%s': %s", path,
	    strerror(e)));
}

cJSON *
ctl_kernel_call_head_print(struct ctl_ctx *ctx,
    const struct ctl_kernel_call *kc, const char *name, const char *neff_key)
{
	cJSON	*o;

	if (name == NULL || *name == '\0')
		name = kc->kernel->name;
	if (!ctx->json) {
		ctl_kv(ctx, "kernel", "%s", name);
		ctl_kv(ctx, "neff key", "%s", neff_key);
		return (NULL);
	}
	if ((o = cJSON_CreateObject()) == NULL)
		return (NULL);
	cJSON_AddStringToObject(o, "kernel", name);
	cJSON_AddStringToObject(o, "neff_key", neff_key);
	return (o);
}

int
ctl_kernel_call_outputs_write(struct ctl_ctx *ctx,
    const struct ctl_kernel_call *kc, cJSON *o,
    Nkid__V1__Tensor *const *outs, size_t n)
{
	cJSON	*arr = NULL;
	int	 rc = CTL_EXIT_OK, wrc;

	if (ctx->json && (o == NULL ||
	    (arr = cJSON_AddArrayToObject(o, "outputs")) == NULL)) {
		cJSON_Delete(o);
		ctl_errorf(ctx, "%s: out of memory", ctx->cmd->name);
		return (CTL_EXIT_FAIL);
	}
	wrc = ctl_tensor_outputs_write(ctx, kc->outdir, outs, n, arr);
	if (o != NULL)
		rc = ctl_json_print(ctx, o);
	return (wrc != CTL_EXIT_OK ? wrc : rc);
}
