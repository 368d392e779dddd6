/*
 * ctl_kernel_call.c: what compile, run and simulate share: the kernel
 * file and inputs read, the call made, the NEFF and outputs written.
 */
#include <assert.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl_kernel.h"
#include "ctl_kernel_call.h"

int
ctl_kernel_call_init(ctl_ctx *ctx, int argc, char **argv, unsigned flags,
    ctl_kernel_call *kc, int *rc)
{
	char err[1024];

	memset(kc, 0, sizeof(*kc));
	nkid__v1__kernel_ref__init(&kc->ref);
	if (ctl_kargs_parse(ctx, argc, argv, flags, &kc->ka, rc) < 0)
		return -1;
	if (ctl_kernel_read(kc->ka.kernel, &kc->saved, err, sizeof(err)) < 0) {
		ctl_errorf(ctx, "%s: %s", ctx->cmd->name, err);
		*rc = CTL_EXIT_FAIL;
		return -1;
	}
	kc->kernel = kc->saved->kernel;
	if (flags & CTL_KARGS_INPUTS) {
		*rc = ctl_inputs_load(ctx, kc->kernel, kc->ka.specs,
		    kc->ka.nspecs, &kc->in);
		if (*rc != CTL_EXIT_OK)
			return -1;
	}
	ctl_kargs_ref(&kc->ka, kc->saved, &kc->ref);
	return 0;
}

int
ctl_kernel_call_send(ctl_ctx *ctx, ctl_kernel_call *kc, const char *method,
    const ProtobufCMessage *req, const ProtobufCMessageDescriptor *reply_desc)
{
	assert(kc->reply == NULL);
	return ctl_call(ctx, method, req, reply_desc, &kc->reply);
}

int
ctl_kernel_call_neff_write(ctl_ctx *ctx, const ctl_kernel_call *kc,
    const ProtobufCBinaryData *neff)
{
	if (kc->ka.neff == NULL)
		return CTL_EXIT_OK;
	return ctl_kargs_write_file(ctx, kc->ka.neff, neff->data, neff->len);
}

int
ctl_kernel_call_outputs_write(ctl_ctx *ctx, const ctl_kernel_call *kc,
    cJSON *o, Nkid__V1__Tensor *const *outs, size_t n)
{
	cJSON *arr = NULL;
	int rc = CTL_EXIT_OK, wrc;

	if (ctx->json && (o == NULL ||
	    (arr = cJSON_AddArrayToObject(o, "outputs")) == NULL)) {
		cJSON_Delete(o);
		ctl_errorf(ctx, "%s: out of memory", ctx->cmd->name);
		return CTL_EXIT_FAIL;
	}
	wrc = ctl_outputs_write(ctx, kc->ka.outdir, outs, n, arr);
	if (o != NULL)
		rc = ctl_json_print(ctx, o);
	return wrc != CTL_EXIT_OK ? wrc : rc;
}

cJSON *
ctl_kernel_call_head_print(ctl_ctx *ctx, const ctl_kernel_call *kc,
    const char *name, const char *neff_key)
{
	cJSON *o;

	if (name == NULL || *name == '\0')
		name = kc->kernel->name;
	if (!ctx->json) {
		ctl_kv(ctx, "kernel", "%s", name);
		ctl_kv(ctx, "neff key", "%s", neff_key);
		return NULL;
	}
	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "kernel", name);
	cJSON_AddStringToObject(o, "neff_key", neff_key);
	return o;
}

void
ctl_kernel_call_release(ctl_kernel_call *kc)
{
	if (kc->reply != NULL)
		protobuf_c_message_free_unpacked(kc->reply, NULL);
	ctl_inputs_release(&kc->in);
	ctl_kernel_free(kc->saved);
	ctl_kargs_release(&kc->ka);
	memset(kc, 0, sizeof(*kc));
}
