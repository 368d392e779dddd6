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

static int
ctl_simulate_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__SimulateRequest req = NKID__V1__SIMULATE_REQUEST__INIT;
	const Nkid__V1__SimulateReply	*r;
	struct ctl_kernel_call		 kc;
	cJSON				*o;
	char				 t[32];
	int				 rc;

	if ((rc = ctl_kernel_call_init(ctx, a, &kc)) != CTL_EXIT_OK ||
	    (rc = ctl_kernel_call_send(ctx, &kc, "Simulate", &req.base,
	    &nkid__v1__simulate_reply__descriptor)) != CTL_EXIT_OK)
		goto out;
	r = (const Nkid__V1__SimulateReply *)kc.reply;
	if (!ctx->json)
		ctl_text_print(ctx->out, "", r->device_print);
	o = ctl_kernel_call_head_print(ctx, &kc, NULL, r->neff_key);
	if (ctx->json)
		ctl_json_fields(o, &r->base, ctl_simulate_keys);
	else
		ctl_kv(ctx, "executed", "%s", ctl_fmt_us(r->exec_us, t,
		    sizeof t));
	rc = ctl_kernel_call_outputs_write(ctx, &kc, o, r->outputs,
	    r->n_outputs);
out:
	ctl_kernel_call_release(&kc);
	return (rc);
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
