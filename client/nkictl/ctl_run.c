/*
 * ctl_run.c: `nkictl run KERNEL -i NAME=FILE.npy ... [-o DIR]`: compile if
 * needed, execute once on a core, write the outputs as .npy files.
 */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_kargs.h"
#include "ctl_kernel.h"
#include "ctl_tensor.h"

static int
ctl_run_exec(ctl_ctx *ctx, int argc, char **argv)
{
	Nkid__V1__RunRequest req = NKID__V1__RUN_REQUEST__INIT;
	Nkid__V1__KernelRef ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__RunReply *reply = NULL;
	Nkid__V1__KernelRef *saved = NULL;
	const Nkid__V1__Kernel *k;
	ctl_inputs in = { 0 };
	cJSON *o = NULL, *arr = NULL;
	ctl_kargs ka;
	char err[1024];
	int rc, wrc;

	if (ctl_kargs_parse(ctx, argc, argv, CTL_KARGS_INPUTS |
	    CTL_KARGS_CORE | CTL_KARGS_NEFF, &ka, &rc) < 0)
		goto out;
	if (ctl_kernel_read(ka.kernel, &saved, err, sizeof(err)) < 0) {
		ctl_errorf(ctx, "run: %s", err);
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
	req.core = ka.core;
	req.job_class = ka.batch ? NKID__V1__JOB_CLASS__JOB_CLASS_BATCH :
	    NKID__V1__JOB_CLASS__JOB_CLASS_INTERACTIVE;
	req.return_neff = ka.neff != NULL;
	rc = ctl_call(ctx, "Run", &req.base, &nkid__v1__run_reply__descriptor,
	    (ProtobufCMessage **)&reply);
	if (rc != CTL_EXIT_OK)
		goto out;
	if (ka.neff != NULL) {
		rc = ctl_kargs_write_file(ctx, ka.neff, reply->neff.data,
		    reply->neff.len);
		if (rc != CTL_EXIT_OK)
			goto out;
	}
	if (ctx->json) {
		o = cJSON_CreateObject();
		if (o == NULL)
			goto nomem;
		cJSON_AddStringToObject(o, "kernel", k->name);
		cJSON_AddStringToObject(o, "neff_key", reply->neff_key);
		cJSON_AddBoolToObject(o, "cache_hit", reply->cache_hit);
		cJSON_AddNumberToObject(o, "job_id", (double)reply->job_id);
		cJSON_AddNumberToObject(o, "core", reply->core);
		cJSON_AddNumberToObject(o, "queue_us", reply->queue_us);
		cJSON_AddNumberToObject(o, "exec_us", reply->exec_us);
		arr = cJSON_AddArrayToObject(o, "outputs");
		if (arr == NULL)
			goto nomem;
	} else {
		ctl_kv(ctx, "kernel", "%s", k->name);
		ctl_kv(ctx, "neff key", "%s", reply->neff_key);
		ctl_kv(ctx, "cache hit", "%s", reply->cache_hit ? "yes" : "no");
		ctl_kv(ctx, "job", "%llu on core %u",
		    (unsigned long long)reply->job_id, reply->core);
		ctl_kv(ctx, "queued", "%.0f us", reply->queue_us);
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
	ctl_errorf(ctx, "run: out of memory");
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

const ctl_cmd ctl_run_cmd = {
	.name = "run",
	.usage = "KERNEL [-i [NAME=]FILE.npy]... [-o DIR] [-c CORE] [--batch] "
	    "[--target T] [--options OPTS] [--retry-failed] [--neff FILE]",
	.help = "run a traced kernel once on a core; outputs go to "
	    "DIR/NAME.npy",
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_run_exec,
};
