/* ctl_simulate.c: `nkictl simulate KERNEL -i NAME=FILE.npy ... [-o DIR]`: execute on nkid's cpu simulator, print the device_print output, write the outputs as .npy files. */
#include <stdio.h>
#include <string.h>

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

static int
ctl_simulate_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__SimulateRequest req = NKID__V1__SIMULATE_REQUEST__INIT;
	const Nkid__V1__SimulateReply	*r;
	struct ctl_kernel_call		 kc;
	cJSON				*o;
	char				 t[32];
	size_t				 plen;
	int				 rc;

	if ((rc = ctl_kernel_call_init(ctx, a, &kc)) != CTL_EXIT_OK)
		goto out;
	req.ref = &kc.ref;
	req.n_inputs = kc.in.n;
	req.inputs = kc.in.ptrs;
	rc = ctl_kernel_call_send(ctx, &kc, "Simulate", &req.base,
	    &nkid__v1__simulate_reply__descriptor);
	if (rc != CTL_EXIT_OK)
		goto out;
	r = (const Nkid__V1__SimulateReply *)kc.reply;
	if (!ctx->json) {
		plen = strlen(r->device_print);
		fputs(r->device_print, ctx->out);
		if (plen > 0 && r->device_print[plen - 1] != '\n')
			fputc('\n', ctx->out);
	}
	o = ctl_kernel_call_head_print(ctx, &kc, NULL, r->neff_key);
	if (ctx->json) {
		cJSON_AddNumberToObject(o, "exec_us", r->exec_us);
		cJSON_AddStringToObject(o, "device_print", r->device_print);
	} else
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
	.args = { 1, 1, "KERNEL (a traced kernel file)" },
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_simulate_exec,
};
