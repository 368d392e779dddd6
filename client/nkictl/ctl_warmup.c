/*
 * ctl_warmup.c: `nkictl warmup MANIFEST`: compile every kernel a manifest
 * lists into nkid's cache, in batches of -j (nkid runs at most
 * cache.compile_workers compiles at once), with a progress line and a
 * summary.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static int
ctl_warmup_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON, { "jobs", required_argument, NULL, 'j' },
		{ 0, 0, 0, 0 } };
	Nkid__V1__WarmupRequest req = NKID__V1__WARMUP_REQUEST__INIT;
	Nkid__V1__WarmupReply *r = NULL;
	Nkid__V1__WarmupItem *items = NULL, **itemp = NULL;
	Nkid__V1__KernelRef *refs = NULL;
	ctl_manifest m = { NULL, 0 };
	unsigned long long jobs = 16;
	unsigned compiled = 0, cached = 0, failed = 0;
	cJSON *o = NULL, *a = NULL, *x;
	char err[1024];
	size_t i, j, done = 0, batch;
	int rc = 0, opt, tty = isatty(fileno(ctx->err));

	while ((opt = ctl_opt_next(ctx, argc, argv, "j:", longopts, &rc)) !=
	    -1) {
		if (opt == CTL_OPT_DONE)
			goto out;
		if (opt == 'j' && ctl_parse_uint(optarg, 1, 4096, &jobs) == 0)
			continue;
		rc = ctl_usage_fail(ctx, "bad -j '%s'", optarg);
		goto out;
	}
	if (argc - optind != 1) {
		rc = ctl_usage_fail(ctx, "give one MANIFEST");
		goto out;
	}
	if (ctl_manifest_read(argv[optind], &m, err, sizeof(err)) < 0) {
		ctl_errorf(ctx, "warmup: %s", err);
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	items = calloc(m.n, sizeof(*items));
	itemp = calloc(m.n, sizeof(*itemp));
	refs = calloc(m.n, sizeof(*refs));
	if (items == NULL || itemp == NULL || refs == NULL)
		abort();
	for (i = 0; i < m.n; i++) {
		nkid__v1__warmup_item__init(&items[i]);
		ctl_manifest_ref(&m, i, &refs[i]);
		items[i].ref = &refs[i];
		itemp[i] = &items[i];
	}
	if (ctx->json) {
		o = cJSON_CreateObject();
		a = cJSON_AddArrayToObject(o, "results");
	}
	for (i = 0; i < m.n; i += batch) {
		batch = m.n - i < jobs ? m.n - i : jobs;
		req.items = itemp + i;
		req.n_items = batch;
		if ((rc = ctl_call(ctx, "Warmup", &req.base,
		    &nkid__v1__warmup_reply__descriptor,
		    (ProtobufCMessage **)&r)) != 0)
			goto out;
		compiled += r->compiled;
		cached += r->cached;
		failed += r->failed;
		for (j = 0; j < r->n_results; j++) {
			const Nkid__V1__WarmupResult *w = r->results[j];

			if (a != NULL) {
				x = cJSON_CreateObject();
				cJSON_AddStringToObject(x, "path",
				    m.items[i + j].path);
				cJSON_AddStringToObject(x, "kernel", w->kernel);
				cJSON_AddStringToObject(x, "neff_key",
				    w->neff_key);
				cJSON_AddStringToObject(x, "state", w->state);
				cJSON_AddStringToObject(x, "message",
				    w->message);
				cJSON_AddItemToArray(a, x);
			} else if (strcmp(w->state, "failed") == 0)
				fprintf(ctx->err, "%snkictl: warmup: '%s': %s\n",
				    tty ? "\r\033[K" : "", m.items[i + j].path,
				    w->message);
		}
		done += batch;
		protobuf_c_message_free_unpacked(&r->base, NULL);
		r = NULL;
		if (!ctx->json)
			fprintf(ctx->err, "%swarmup: %zu/%zu: %u compiled, %u "
			    "already cached, %u failed%s", tty ? "\r\033[K" : "",
			    done, m.n, compiled, cached, failed,
			    tty ? "" : "\n");
	}
	if (o != NULL) {
		cJSON_AddNumberToObject(o, "compiled", compiled);
		cJSON_AddNumberToObject(o, "cached", cached);
		cJSON_AddNumberToObject(o, "failed", failed);
		rc = ctl_json_print(ctx, o);
		o = NULL;
	} else {
		if (tty)
			fputc('\n', ctx->err);
		fprintf(ctx->out, "warmup: %zu kernels: %u compiled, %u already "
		    "cached, %u failed\n", m.n, compiled, cached, failed);
	}
	if (rc == 0 && failed > 0)
		rc = CTL_EXIT_FAIL;
out:
	cJSON_Delete(o);
	if (r != NULL)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	free(items);
	free(itemp);
	free(refs);
	ctl_manifest_release(&m);
	return rc;
}

const ctl_cmd ctl_warmup_cmd = {
	.name = "warmup",
	.usage = "MANIFEST [-j N]",
	.help = "compile every kernel of a manifest into nkid's cache",
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_warmup_exec,
};
