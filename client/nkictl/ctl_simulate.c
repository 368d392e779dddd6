/* ctl_simulate.c: `nkictl simulate KERNEL -i NAME=FILE.npy ... [-o DIR]`: execute on nkid's cpu simulator, print the device_print output, write the outputs as .npy files. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_kernel_call.h"

static const struct ctl_opt ctl_simulate_opts[] = {
	CTL_KERNEL_CALL_OPTS_INPUT,
	CTL_KERNEL_CALL_OPTS_OUTPUT,
	CTL_KERNEL_CALL_OPTS_TARGET,
	CTL_OPT_END
};

/* The figures of the reply in --json, before the outputs. */
static const char *const ctl_simulate_keys[] = {
	"exec_us", "device_print", NULL
};

/* The device_print output and the reply's figures, then the outputs
 * written. */
static int
ctl_simulate_report(struct ctl_ctx *ctx, const struct ctl_kernel_call *kc,
    void *arg)
{
	const Nkid__V1__SimulateReply	*r = (const void *)kc->reply;
	cJSON				*o;
	char				 t[32];

	if (!ctx->json)
		ctl_text_print(ctx->out, "", r->device_print);
	o = ctl_kernel_call_head_print(ctx, kc, NULL, r->neff_key);
	if (ctx->json)
		ctl_json_fields(o, &r->base, ctl_simulate_keys);
	else
		ctl_kv(ctx, "executed", "%s", ctl_fmt_us(r->exec_us, t,
		    sizeof t));
	return (ctl_kernel_call_outputs_write(ctx, kc, o, r->outputs,
	    r->n_outputs));
}

static int
ctl_simulate_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__SimulateRequest	req = NKID__V1__SIMULATE_REQUEST__INIT;

	return (ctl_kernel_call_exec(ctx, a, "Simulate", &req.base,
	    &nkid__v1__simulate_reply__descriptor, ctl_simulate_report, NULL));
}

const struct ctl_cmd ctl_simulate_cmd = {
	.name = "simulate",
	.usage = "KERNEL [-i [NAME=]FILE.npy]... [-o DIR] [--target T] "
	    "[--options OPTS]",
	.help = "execute a traced kernel on nkid's cpu simulator, printing "
	    "its device_print output",
	.opts = ctl_simulate_opts,
	.args = CTL_KERNEL_CALL_ARGS,
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_simulate_exec,
};
