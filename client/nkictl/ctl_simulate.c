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
#include "ctl_kargs.h"
#include "ctl_kernel.h"
#include "ctl_tensor.h"

static int
ctl_simulate_exec(ctl_ctx *ctx, int argc, char **argv)
{
	Nkid__V1__SimulateRequest req = NKID__V1__SIMULATE_REQUEST__INIT;
	Nkid__V1__KernelRef ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__SimulateReply *reply = NULL;
	Nkid__V1__KernelRef *saved = NULL;
	const Nkid__V1__Kernel *k;
	ctl_inputs in = { 0 };
	cJSON *o = NULL, *arr = NULL;
	ctl_kargs ka;
	char err[1024];
	size_t plen;
	int rc, wrc;

	if (ctl_kargs_parse(ctx, argc, argv, CTL_KARGS_INPUTS, &ka, &rc) < 0)
		goto out;
	if (ctl_kernel_read(ka.kernel, &saved, err, sizeof(err)) < 0) {
		ctl_errorf(ctx, "simulate: %s", err);
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	k = saved->kernel;
	rc = ctl_inputs_load(ctx, k, ka.specs, ka.nspecs, &in);
	if (rc != CTL_EXIT_OK)
		goto out;
	ctl_kargs_ref(&ka, saved, &ref);
	req.ref = &ref;
	req.n_inputs = in.n;
	req.inputs = in.ptrs;
	rc = ctl_call(ctx, "Simulate", &req.base,
	    &nkid__v1__simulate_reply__descriptor, (ProtobufCMessage **)&reply);
	if (rc != CTL_EXIT_OK)
		goto out;
	if (ctx->json) {
		o = cJSON_CreateObject();
		if (o == NULL)
			goto nomem;
		cJSON_AddStringToObject(o, "kernel", k->name);
		cJSON_AddStringToObject(o, "neff_key", reply->neff_key);
		cJSON_AddNumberToObject(o, "exec_us", reply->exec_us);
		cJSON_AddStringToObject(o, "device_print", reply->device_print);
		arr = cJSON_AddArrayToObject(o, "outputs");
		if (arr == NULL)
			goto nomem;
	} else {
		plen = strlen(reply->device_print);
		fputs(reply->device_print, ctx->out);
		if (plen > 0 && reply->device_print[plen - 1] != '\n')
			fputc('\n', ctx->out);
		ctl_kv(ctx, "kernel", "%s", k->name);
		ctl_kv(ctx, "neff key", "%s", reply->neff_key);
		ctl_kv(ctx, "executed", "%.0f us", reply->exec_us);
	}
	wrc = ctl_outputs_write(ctx, ka.outdir, reply->outputs,
	    reply->n_outputs, arr);
	if (o != NULL) {
		rc = ctl_json_print(ctx, o);
		o = NULL;
	}
	if (wrc != CTL_EXIT_OK)
		rc = wrc;
	goto out;
nomem:
	ctl_errorf(ctx, "simulate: out of memory");
	rc = CTL_EXIT_FAIL;
out:
	cJSON_Delete(o);
	if (reply != NULL)
		protobuf_c_message_free_unpacked(&reply->base, NULL);
	ctl_inputs_release(&in);
	ctl_kernel_free(saved);
	ctl_kargs_release(&ka);
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
