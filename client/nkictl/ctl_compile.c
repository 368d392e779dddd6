/*
 * ctl_compile.c: `nkictl compile KERNEL`: compile a traced kernel (or find
 * it in nkid's cache) and show its NEFF key.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_kargs.h"
#include "ctl_kernel.h"

static int
ctl_compile_exec(ctl_ctx *ctx, int argc, char **argv)
{
	Nkid__V1__CompileRequest req = NKID__V1__COMPILE_REQUEST__INIT;
	Nkid__V1__KernelRef ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__CompileReply *reply = NULL;
	Nkid__V1__KernelRef *saved = NULL;
	const Nkid__V1__Kernel *k;
	ctl_kargs ka;
	char err[1024];
	int rc;

	if (ctl_kargs_parse(ctx, argc, argv, CTL_KARGS_NEFF, &ka, &rc) < 0)
		goto out;
	if (ctl_kernel_read(ka.kernel, &saved, err, sizeof(err)) < 0) {
		ctl_errorf(ctx, "compile: %s", err);
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	k = saved->kernel;
	ctl_kargs_ref(&ka, saved, &ref);
	req.ref = &ref;
	req.return_neff = ka.neff != NULL;
	rc = ctl_call(ctx, "Compile", &req.base,
	    &nkid__v1__compile_reply__descriptor, (ProtobufCMessage **)&reply);
	if (rc != CTL_EXIT_OK)
		goto out;
	if (ka.neff != NULL) {
		rc = ctl_kargs_write_file(ctx, ka.neff, reply->neff.data,
		    reply->neff.len);
		if (rc != CTL_EXIT_OK)
			goto out;
	}
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject();

		if (o != NULL) {
			cJSON_AddStringToObject(o, "kernel",
			    *reply->kernel_name ? reply->kernel_name : k->name);
			cJSON_AddStringToObject(o, "neff_key", reply->neff_key);
			cJSON_AddBoolToObject(o, "cache_hit", reply->cache_hit);
			cJSON_AddBoolToObject(o, "coalesced", reply->coalesced);
			cJSON_AddNumberToObject(o, "compile_ms",
			    reply->compile_ms);
			cJSON_AddNumberToObject(o, "neff_size",
			    (double)reply->neff_size);
			if (ka.neff != NULL)
				cJSON_AddStringToObject(o, "neff_path",
				    ka.neff);
			cJSON_AddStringToObject(o, "log", reply->log);
		}
		rc = ctl_json_print(ctx, o);
	} else {
		ctl_kv(ctx, "kernel", "%s", *reply->kernel_name ?
		    reply->kernel_name : k->name);
		ctl_kv(ctx, "neff key", "%s", reply->neff_key);
		ctl_kv(ctx, "cache hit", "%s%s", reply->cache_hit ? "yes" :
		    "no", reply->coalesced ? " (joined a compile in flight)" :
		    "");
		ctl_kv(ctx, "compile", "%.1f ms", reply->compile_ms);
		ctl_kv(ctx, "neff size", "%llu bytes",
		    (unsigned long long)reply->neff_size);
		if (ka.neff != NULL)
			ctl_kv(ctx, "neff", "%s", ka.neff);
		if (*reply->log != '\0')
			fprintf(ctx->out, "log:\n%s%s", reply->log,
			    reply->log[strlen(reply->log) - 1] == '\n' ? "" :
			    "\n");
	}
out:
	if (reply != NULL)
		protobuf_c_message_free_unpacked(&reply->base, NULL);
	ctl_kernel_free(saved);
	ctl_kargs_release(&ka);
	return rc;
}

const ctl_cmd ctl_compile_cmd = {
	.name = "compile",
	.usage = "KERNEL [--target T] [--options OPTS] [--retry-failed] "
	    "[--neff FILE]",
	.help = "compile a traced kernel file (or find it in the cache) and "
	    "show its NEFF key",
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_compile_exec,
};
