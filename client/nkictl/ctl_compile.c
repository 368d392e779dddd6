/*
 * ctl_compile.c: `nkictl compile KERNEL`: compile a traced kernel (or find
 * it in nkid's cache) and show its NEFF key.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_kernel_call.h"

static int
ctl_compile_exec(ctl_ctx *ctx, int argc, char **argv)
{
	Nkid__V1__CompileRequest req = NKID__V1__COMPILE_REQUEST__INIT;
	const Nkid__V1__CompileReply *reply;
	ctl_kernel_call kc;
	cJSON *o;
	int rc;

	if (ctl_kernel_call_init(ctx, argc, argv, CTL_KARGS_NEFF, &kc, &rc) < 0)
		goto out;
	req.ref = &kc.ref;
	req.return_neff = kc.ka.neff != NULL;
	rc = ctl_kernel_call_send(ctx, &kc, "Compile", &req.base,
	    &nkid__v1__compile_reply__descriptor);
	if (rc != CTL_EXIT_OK)
		goto out;
	reply = (const Nkid__V1__CompileReply *)kc.reply;
	rc = ctl_kernel_call_neff_write(ctx, &kc, &reply->neff);
	if (rc != CTL_EXIT_OK)
		goto out;
	o = ctl_kernel_call_head_print(ctx, &kc, reply->kernel_name,
	    reply->neff_key);
	if (ctx->json) {
		if (o != NULL) {
			cJSON_AddBoolToObject(o, "cache_hit", reply->cache_hit);
			cJSON_AddBoolToObject(o, "coalesced", reply->coalesced);
			cJSON_AddNumberToObject(o, "compile_ms",
			    reply->compile_ms);
			cJSON_AddNumberToObject(o, "neff_size",
			    (double)reply->neff_size);
			if (kc.ka.neff != NULL)
				cJSON_AddStringToObject(o, "neff_path",
				    kc.ka.neff);
			cJSON_AddStringToObject(o, "log", reply->log);
		}
		rc = ctl_json_print(ctx, o);
	} else {
		ctl_kv(ctx, "cache hit", "%s%s", reply->cache_hit ? "yes" :
		    "no", reply->coalesced ? " (joined a compile in flight)" :
		    "");
		ctl_kv(ctx, "compile", "%.1f ms", reply->compile_ms);
		ctl_kv(ctx, "neff size", "%llu bytes",
		    (unsigned long long)reply->neff_size);
		if (kc.ka.neff != NULL)
			ctl_kv(ctx, "neff", "%s", kc.ka.neff);
		if (*reply->log != '\0')
			fprintf(ctx->out, "log:\n%s%s", reply->log,
			    reply->log[strlen(reply->log) - 1] == '\n' ? "" :
			    "\n");
	}
out:
	ctl_kernel_call_release(&kc);
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
