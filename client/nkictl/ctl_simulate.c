/*
 * ctl_simulate.c: `nkictl simulate KERNEL -i NAME=FILE.npy ... [-o DIR]`:
 * execute on nkid's cpu simulator, print device_print output, write the
 * outputs as .npy files.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_kernel_call.h"

static int
ctl_simulate_exec(ctl_ctx *ctx, int argc, char **argv)
{
	Nkid__V1__SimulateRequest req = NKID__V1__SIMULATE_REQUEST__INIT;
	const Nkid__V1__SimulateReply *reply;
	ctl_kernel_call kc;
	cJSON *o = NULL;
	size_t plen;
	int rc;

	if (ctl_kernel_call_init(ctx, argc, argv, CTL_KARGS_INPUTS, &kc,
	    &rc) < 0)
		goto out;
	req.ref = &kc.ref;
	req.n_inputs = kc.in.n;
	req.inputs = kc.in.ptrs;
	rc = ctl_kernel_call_send(ctx, &kc, "Simulate", &req.base,
	    &nkid__v1__simulate_reply__descriptor);
	if (rc != CTL_EXIT_OK)
		goto out;
	reply = (const Nkid__V1__SimulateReply *)kc.reply;
	if (!ctx->json) {
		plen = strlen(reply->device_print);
		fputs(reply->device_print, ctx->out);
		if (plen > 0 && reply->device_print[plen - 1] != '\n')
			fputc('\n', ctx->out);
	}
	o = ctl_kernel_call_head_print(ctx, &kc, NULL, reply->neff_key);
	if (ctx->json) {
		cJSON_AddNumberToObject(o, "exec_us", reply->exec_us);
		cJSON_AddStringToObject(o, "device_print", reply->device_print);
	} else
		ctl_kv(ctx, "executed", "%.0f us", reply->exec_us);
	rc = ctl_kernel_call_outputs_write(ctx, &kc, o, reply->outputs,
	    reply->n_outputs);
out:
	ctl_kernel_call_release(&kc);
	return rc;
}

const ctl_cmd ctl_simulate_cmd = {
	.name = "simulate",
	.usage = "KERNEL [-i [NAME=]FILE.npy]... [-o DIR] [--target T] "
	    "[--options OPTS]",
	.help = "execute a traced kernel on nkid's cpu simulator, printing "
	    "its device_print output",
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_simulate_exec,
};
