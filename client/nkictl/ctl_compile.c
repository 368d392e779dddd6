/* ctl_compile.c: `nkictl compile KERNEL`: compile a traced kernel (or find it in nkid's cache) and show its NEFF key. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_kernel_call.h"

static const struct ctl_opt ctl_compile_opts[] = {
	CTL_KERNEL_CALL_OPTS_TARGET,
	CTL_KERNEL_CALL_OPTS_RETRY,
	CTL_KERNEL_CALL_OPTS_NEFF,
	CTL_OPT_END
};

/* The figures of the reply in --json, before the NEFF's path. */
static const char *const ctl_compile_keys[] = {
	"cache_hit", "coalesced", "compile_ms", "neff_size", NULL
};

static void
ctl_compile_print(struct ctl_ctx *ctx, const struct ctl_kernel_call *kc,
    const Nkid__V1__CompileReply *r)
{
	char	buf[32];

	ctl_kv(ctx, "cache hit", "%s%s", r->cache_hit ? "yes" : "no",
	    r->coalesced ? " (joined a compile in flight)" : "");
	if (r->cache_hit && r->compile_ms <= 0)
		ctl_kv(ctx, "compile", "none (served from the cache)");
	else
		ctl_kv(ctx, "compile", "%s", ctl_fmt_us(r->compile_ms * 1e3,
		    buf, sizeof buf));
	ctl_kv(ctx, "neff size", "%s", ctl_fmt_bytes(r->neff_size, buf,
	    sizeof buf));
	if (kc->neff != NULL)
		ctl_kv(ctx, "neff", "%s", kc->neff);
	ctl_text_print(ctx->out, "log:\n", r->log);
}

static int
ctl_compile_report(struct ctl_ctx *ctx, const struct ctl_kernel_call *kc,
    void *arg)
{
	const Nkid__V1__CompileReply	*r = (const void *)kc->reply;
	cJSON				*o;

	o = ctl_kernel_call_head_print(ctx, kc, r->kernel_name, r->neff_key);
	if (!ctx->json) {
		ctl_compile_print(ctx, kc, r);
		return (CTL_EXIT_OK);
	}
	if (o != NULL) {
		ctl_json_fields(o, &r->base, ctl_compile_keys);
		if (kc->neff != NULL)
			cJSON_AddStringToObject(o, "neff_path", kc->neff);
		cJSON_AddStringToObject(o, "log", r->log);
	}
	return (ctl_json_print(ctx, o));
}

static int
ctl_compile_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__CompileRequest	req = NKID__V1__COMPILE_REQUEST__INIT;

	return (ctl_kernel_call_exec(ctx, a, "Compile", &req.base,
	    &nkid__v1__compile_reply__descriptor, ctl_compile_report, NULL));
}

const struct ctl_cmd ctl_compile_cmd = {
	.name = "compile",
	.usage = "KERNEL [--target T] [--options OPTS] [--retry-failed] "
	    "[--neff FILE]",
	.help = "compile a traced kernel file (or find it in the cache) and "
	    "show its NEFF key",
	.opts = ctl_compile_opts,
	.args = CTL_KERNEL_CALL_ARGS,
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_compile_exec,
};
