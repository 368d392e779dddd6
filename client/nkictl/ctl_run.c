/*
 * ctl_run.c: `nkictl run KERNEL -i NAME=FILE.npy ... [-o DIR]`: compile if
 * needed, execute once on a core, write the outputs as .npy files.
 */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_kernel_call.h"

static int
ctl_run_exec(ctl_ctx *ctx, int argc, char **argv)
{
	Nkid__V1__RunRequest req = NKID__V1__RUN_REQUEST__INIT;
	const Nkid__V1__RunReply *reply;
	ctl_kernel_call kc;
	cJSON *o = NULL;
	int rc;

	if (ctl_kernel_call_init(ctx, argc, argv, CTL_KARGS_INPUTS |
	    CTL_KARGS_CORE | CTL_KARGS_NEFF, &kc, &rc) < 0)
		goto out;
	req.ref = &kc.ref;
	req.n_inputs = kc.in.n;
	req.inputs = kc.in.ptrs;
	req.core = kc.ka.core;
	req.job_class = kc.ka.batch ? NKID__V1__JOB_CLASS__JOB_CLASS_BATCH :
	    NKID__V1__JOB_CLASS__JOB_CLASS_INTERACTIVE;
	req.return_neff = kc.ka.neff != NULL;
	rc = ctl_kernel_call_send(ctx, &kc, "Run", &req.base,
	    &nkid__v1__run_reply__descriptor);
	if (rc != CTL_EXIT_OK)
		goto out;
	reply = (const Nkid__V1__RunReply *)kc.reply;
	rc = ctl_kernel_call_neff_write(ctx, &kc, &reply->neff);
	if (rc != CTL_EXIT_OK)
		goto out;
	o = ctl_kernel_call_head_print(ctx, &kc, NULL, reply->neff_key);
	if (ctx->json) {
		cJSON_AddBoolToObject(o, "cache_hit", reply->cache_hit);
		cJSON_AddNumberToObject(o, "job_id", (double)reply->job_id);
		cJSON_AddNumberToObject(o, "core", reply->core);
		cJSON_AddNumberToObject(o, "queue_us", reply->queue_us);
		cJSON_AddNumberToObject(o, "exec_us", reply->exec_us);
	} else {
		ctl_kv(ctx, "cache hit", "%s", reply->cache_hit ? "yes" : "no");
		ctl_kv(ctx, "job", "%llu on core %u",
		    (unsigned long long)reply->job_id, reply->core);
		ctl_kv(ctx, "queued", "%.0f us", reply->queue_us);
		ctl_kv(ctx, "executed", "%.0f us", reply->exec_us);
	}
	rc = ctl_kernel_call_outputs_write(ctx, &kc, o, reply->outputs,
	    reply->n_outputs);
out:
	ctl_kernel_call_release(&kc);
	return rc;
}

const ctl_cmd ctl_run_cmd = {
	.name = "run",
	.usage = "KERNEL [-i [NAME=]FILE.npy]... [-o DIR] [-c CORE] [--batch] "
	    "[--target T] [--options OPTS] [--retry-failed] [--neff FILE]",
	.help = "run a traced kernel once on a core; outputs go to "
	    "DIR/NAME.npy",
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_run_exec,
};
