/* ctl_warmup.c: `nkictl warmup MANIFEST`: compile every kernel a manifest lists into nkid's cache, in batches of -j (nkid runs at most cache.compile_workers compiles at once), with a progress line on a terminal and a summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_manifest.h"

/* The counts so far; results is the --json array (NULL: text). */
struct ctl_warmup {
	const struct ctl_manifest	*m;
	size_t				*idx;	/* sent -> item */
	int				 retry_failed;
	unsigned			 compiled;
	unsigned			 cached;
	unsigned			 failed;
	size_t				 done;
	cJSON				*results;
	struct ctl_progress		 progress;	/* on a terminal */
};

static const struct ctl_opt ctl_warmup_opts[] = {
	{ 'j', "jobs", "N", "kernels per Warmup call (default 16)" },
	{ 0, "retry-failed", NULL, "compile again the kernels whose failure "
	    "is cached" },
	CTL_OPT_END
};

/* Count and report the results of the count items from first on. */
static void
ctl_warmup_batch_cb(struct ctl_ctx *ctx, const ProtobufCMessage *reply,
    size_t first, size_t count, void *arg)
{
	const Nkid__V1__WarmupReply	*r = (const void *)reply;
	const Nkid__V1__WarmupResult	*res;
	struct ctl_warmup		*w = arg;
	const char			*path;
	cJSON				*x;
	size_t				 j;

	w->done += count;
	w->compiled += r->compiled;
	w->cached += r->cached;
	w->failed += r->failed;
	for (j = 0; j < r->n_results; j++) {
		res = r->results[j];
		path = w->m->items[w->idx[first + j]].path;
		if (w->results != NULL) {
			x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "path", path);
			cJSON_AddStringToObject(x, "kernel", res->kernel);
			cJSON_AddStringToObject(x, "neff_key", res->neff_key);
			cJSON_AddStringToObject(x, "state", res->state);
			cJSON_AddStringToObject(x, "message", res->message);
			cJSON_AddItemToArray(w->results, x);
		} else if (strcmp(res->state, "failed") == 0) {
			ctl_progress_end(&w->progress);
			ctl_fail(ctx, "FAILED_PRECONDITION", "'%s': %s", path,
			    res->message);
		}
	}
	ctl_progress_set(&w->progress, w->done);
}

/* A kernel file of the manifest that could not be read: a failure. */
static void
ctl_warmup_unreadable(struct ctl_ctx *ctx, struct ctl_warmup *w,
    const struct ctl_manifest_item *it)
{
	cJSON	*x;

	w->failed++;
	w->done++;
	if (w->results == NULL) {
		ctl_fail(ctx, CTL_CODE_LOCAL, "%s", it->err);
		return;
	}
	x = cJSON_CreateObject();
	cJSON_AddStringToObject(x, "path", it->path);
	cJSON_AddStringToObject(x, "kernel", "");
	cJSON_AddStringToObject(x, "neff_key", "");
	cJSON_AddStringToObject(x, "state", "unreadable");
	cJSON_AddStringToObject(x, "message", it->err);
	cJSON_AddItemToArray(w->results, x);
}

/* Warm up the readable kernels of m in batches of jobs. */
static int
ctl_warmup_run(struct ctl_ctx *ctx, struct ctl_warmup *w, size_t jobs)
{
	Nkid__V1__WarmupRequest		  req = NKID__V1__WARMUP_REQUEST__INIT;
	Nkid__V1__WarmupItem		 *items, **itemp;
	Nkid__V1__KernelRef		 *refs;
	const struct ctl_manifest	 *m = w->m;
	size_t				  i, n = 0;
	int				  rc = CTL_EXIT_OK;

	items = calloc(m->n, sizeof *items);
	itemp = calloc(m->n, sizeof *itemp);
	refs = calloc(m->n, sizeof *refs);
	w->idx = calloc(m->n, sizeof *w->idx);
	if (items == NULL || itemp == NULL || refs == NULL || w->idx == NULL)
		abort();
	for (i = 0; i < m->n; i++) {
		if (m->items[i].ref == NULL) {
			ctl_warmup_unreadable(ctx, w, &m->items[i]);
			continue;
		}
		nkid__v1__warmup_item__init(&items[n]);
		ctl_manifest_ref(m, i, &refs[n]);
		refs[n].retry_failed = w->retry_failed;
		items[n].ref = &refs[n];
		itemp[n] = &items[n];
		w->idx[n++] = i;
	}
	if (n > 0)
		rc = ctl_manifest_send(ctx, "Warmup", &req.base,
		    &nkid__v1__warmup_reply__descriptor,
		    (ProtobufCMessage **)itemp, n, jobs, ctl_warmup_batch_cb,
		    w);
	free(w->idx);
	free(items);
	free(itemp);
	free(refs);
	return (rc);
}

static int
ctl_warmup_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	struct ctl_manifest	 m;
	struct ctl_warmup	 w;
	unsigned long long	 jobs = 16;
	cJSON			*o = NULL;
	char			 err[1024];
	int			 rc;

	if ((rc = ctl_args_uint(ctx, a, "jobs", 1, 4096, &jobs)) != 0)
		return (rc);
	if (ctl_manifest_read_all(a->argv[0], &m, err, sizeof err) < 0) {
		ctl_errorf(ctx, "warmup: %s", err);
		return (CTL_EXIT_FAIL);
	}
	memset(&w, 0, sizeof w);
	w.m = &m;
	w.retry_failed = ctl_args_has(a, "retry-failed") > 0;
	ctl_progress_init(&w.progress, ctx, "warmup", "kernels", m.n);
	if (ctx->json) {
		o = cJSON_CreateObject();
		w.results = cJSON_AddArrayToObject(o, "results");
	}
	rc = ctl_warmup_run(ctx, &w, jobs);
	ctl_progress_end(&w.progress);
	if (rc != CTL_EXIT_OK)
		goto out;
	if (o != NULL) {
		cJSON_AddNumberToObject(o, "compiled", w.compiled);
		cJSON_AddNumberToObject(o, "cached", w.cached);
		cJSON_AddNumberToObject(o, "failed", w.failed);
		rc = ctl_json_print(ctx, o);
		o = NULL;
	} else {
		fprintf(ctx->out, "warmup: %zu kernels: %u compiled, %u "
		    "already cached, %u failed\n", m.n, w.compiled, w.cached,
		    w.failed);
	}
	if (rc == CTL_EXIT_OK && w.failed > 0)
		rc = CTL_EXIT_FAIL;
out:
	cJSON_Delete(o);
	ctl_manifest_release(&m);
	return (rc);
}

const struct ctl_cmd ctl_warmup_cmd = {
	.name = "warmup",
	.usage = "MANIFEST [-j N] [--retry-failed]",
	.help = "compile every kernel of MANIFEST (a JSON list of traced "
	    "kernel files, see docs/cache.md) into nkid's cache",
	.about =
	    "MANIFEST is a JSON object: {\"target\": T, \"options\": O,\n"
	    "\"kernels\": [...]}, each kernel a traced kernel file (python -m\n"
	    "nkid.trace ... -o F.nkir), relative to the manifest's\n"
	    "directory, or {\"path\": F, \"target\": T, \"options\": O};\n"
	    "target and options default to the file's. The same manifest\n"
	    "is the gate of 'cache verify MANIFEST'. A kernel file that\n"
	    "cannot be read is reported and the others are compiled. Exit 1\n"
	    "if a kernel failed to compile or could not be read. On a "
	    "terminal a progress line shows\n"
	    "kernels done, rate and ETA.\n",
	.opts = ctl_warmup_opts,
	.args = { 1, 1, "MANIFEST" },
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_warmup_exec,
};
