/* ctl_run.c: `nkictl run KERNEL -i NAME=FILE.npy ... [-o DIR]`: compile if needed, execute once on a core, write the outputs as .npy files. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_kernel_call.h"

static const struct ctl_opt ctl_run_opts[] = {
	CTL_KERNEL_CALL_OPTS_INPUT,
	CTL_KERNEL_CALL_OPTS_OUTPUT,
	CTL_KERNEL_CALL_OPT_CORE,
	CTL_KERNEL_CALL_OPT_BATCH,
	CTL_KERNEL_CALL_OPTS_TARGET,
	CTL_KERNEL_CALL_OPTS_RETRY,
	CTL_KERNEL_CALL_OPTS_NEFF,
	CTL_OPT_END
};

/* The figures of the reply in --json, before the outputs. */
static const char *const ctl_run_keys[] = {
	"cache_hit", "job_id", "core", "queue_us", "exec_us", NULL
};

/* The reply's figures, then the outputs written. */
static int
ctl_run_report(struct ctl_ctx *ctx, const struct ctl_kernel_call *kc,
    void *arg)
{
	const Nkid__V1__RunReply	*r = (const void *)kc->reply;
	cJSON				*o;
	char				 t[32];

	o = ctl_kernel_call_head_print(ctx, kc, NULL, r->neff_key);
	if (ctx->json)
		ctl_json_fields(o, &r->base, ctl_run_keys);
	else {
		ctl_kv(ctx, "cache hit", "%s", r->cache_hit ? "yes" : "no");
		ctl_kv(ctx, "job", "%llu on core %u",
		    (unsigned long long)r->job_id, r->core);
		ctl_kv(ctx, "queued", "%s", ctl_fmt_us(r->queue_us, t,
		    sizeof t));
		ctl_kv(ctx, "executed", "%s", ctl_fmt_us(r->exec_us, t,
		    sizeof t));
	}
	return (ctl_kernel_call_outputs_write(ctx, kc, o, r->outputs,
	    r->n_outputs));
}

static int
ctl_run_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__RunRequest	req = NKID__V1__RUN_REQUEST__INIT;

	return (ctl_kernel_call_exec(ctx, a, "Run", &req.base,
	    &nkid__v1__run_reply__descriptor, ctl_run_report, NULL));
}

const struct ctl_cmd ctl_run_cmd = {
	.name = "run",
	.usage = "KERNEL [-i [NAME=]FILE.npy]... [-o DIR] [-c CORE] [--batch] "
	    "[--target T] [--options OPTS] [--retry-failed] [--neff FILE]",
	.help = "run a traced kernel once on a core; outputs go to "
	    "DIR/NAME.npy",
	.about =
	    "For an nkir/1 kernel -i NAME=FILE gives parameter NAME and -i\n"
	    "FILE the next one not given by name; each must match its\n"
	    "parameter's dtype and shape, or nkictl exits 2 before calling\n"
	    "nkid.\n",
	.opts = ctl_run_opts,
	.args = CTL_KERNEL_CALL_ARGS,
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_run_exec,
};
