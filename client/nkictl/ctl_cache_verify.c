/* ctl_cache_verify.c: `nkictl cache verify [MANIFEST] [-k KEY]...`: the deployment gate: nkid (or, with --cache-dir/--state-dir, nkictl in a cache directory) reads every entry, or those named, or every kernel a manifest lists, and checks its digest; exit 0 only if all are present and verify. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cache/cache.h"
#include "ctl_cache.h"
#include "ctl_manifest.h"

/* The states of CacheVerifyResult, counted; the counts add up. */
static const char *const ctl_cache_verify_states[] = {
	"ok", "failed", "missing", "stale", "corrupt", "error",
};
#define CTL_CACHE_VERIFY_NSTATES \
	(sizeof ctl_cache_verify_states / sizeof ctl_cache_verify_states[0])

static size_t
ctl_cache_verify_state(const char *state)
{
	size_t	i;

	for (i = 0; i < CTL_CACHE_VERIFY_NSTATES - 1; i++)
		if (strcmp(state, ctl_cache_verify_states[i]) == 0)
			return (i);
	return (CTL_CACHE_VERIFY_NSTATES - 1);
}

/* The kernels of m as CacheVerify names them (freed by the caller, the
 * strings borrowed from m and digests). */
static Nkid__V1__LookupRequest **
ctl_cache_verify_kernels(const struct ctl_manifest *m, char (*digests)[65])
{
	Nkid__V1__LookupRequest	**v;
	Nkid__V1__KernelRef	  ref;
	size_t			  i;

	if ((v = calloc(m->n + 1, sizeof *v)) == NULL)
		abort();
	for (i = 0; i < m->n; i++) {
		if ((v[i] = calloc(1, sizeof *v[i])) == NULL)
			abort();
		nkid__v1__lookup_request__init(v[i]);
		ctl_manifest_ref(m, i, &ref);
		cache_digest_hex(ref.kernel->ir.data, ref.kernel->ir.len,
		    digests[i]);
		v[i]->ir_digest = digests[i];
		v[i]->format = ref.kernel->format;
		v[i]->target = ref.target;
		v[i]->options = ref.options;
	}
	return (v);
}

/* Print the report of r; returns the exit code. m: the manifest, if the
 * results are its kernels'. */
static int
ctl_cache_verify_report(struct ctl_ctx *ctx,
    const Nkid__V1__CacheVerifyReply *r, const struct ctl_manifest *m,
    int offline)
{
	static const struct ctl_table_col cols[] = {
		{ "STATE", 0 }, { "KEY", 0 }, { "KERNEL", CTL_TABLE_TRUNC },
		{ "MESSAGE", CTL_TABLE_TRUNC },
	};
	const Nkid__V1__CacheVerifyResult	*x;
	struct ctl_table			*t = NULL;
	unsigned				 count[8];
	cJSON					*o = NULL, *arr = NULL, *e;
	char					 key[CTL_CACHE_ABBREV + 1];
	char					 name[1024];
	size_t					 i, s, bad = 0;
	int					 rc = CTL_EXIT_OK;

	_Static_assert(CTL_CACHE_VERIFY_NSTATES <= 8, "count[]");

	memset(count, 0, sizeof count);
	if (ctx->json) {
		o = cJSON_CreateObject();
		arr = cJSON_AddArrayToObject(o, "entries");
	} else
		t = ctl_table_new(cols, sizeof cols / sizeof cols[0]);
	for (i = 0; i < r->n_results; i++) {
		x = r->results[i];
		s = ctl_cache_verify_state(x->state);
		count[s]++;
		/* A cached failure is what a kernel of a manifest must not
		 * be; in the cache it is data. */
		if (s != 0 && (s != 1 || m != NULL))
			bad++;
		snprintf(name, sizeof name, "%s%s%s%s", m != NULL && i < m->n ?
		    m->items[i].path : "", m != NULL && *x->kernel ? " (" : "",
		    x->kernel, m != NULL && *x->kernel ? ")" : "");
		if (arr != NULL) {
			e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "key", x->key);
			cJSON_AddStringToObject(e, "kernel", x->kernel);
			if (m != NULL && i < m->n)
				cJSON_AddStringToObject(e, "path",
				    m->items[i].path);
			cJSON_AddStringToObject(e, "state", x->state);
			cJSON_AddStringToObject(e, "message", x->message);
			cJSON_AddItemToArray(arr, e);
		} else if (s != 0) {
			snprintf(key, sizeof key, "%.*s", CTL_CACHE_ABBREV,
			    x->key);
			ctl_table_row(t, x->state, key, name, x->message);
		}
	}
	if (o != NULL) {
		cJSON_AddNumberToObject(o, "checked", (double)r->n_results);
		for (s = 0; s < CTL_CACHE_VERIFY_NSTATES; s++)
			cJSON_AddNumberToObject(o, s == CTL_CACHE_VERIFY_NSTATES
			    - 1 ? "errors" : ctl_cache_verify_states[s],
			    count[s]);
		cJSON_AddBoolToObject(o, "offline", offline);
		rc = ctl_json_print(ctx, o);
	} else {
		if (ctl_table_rows(t) > 0)
			ctl_table_print(t, ctx->out);
		else
			ctl_table_free(t);
		fprintf(ctx->out, "verified %zu %s: %u ok", r->n_results,
		    m != NULL ? "kernels" : r->n_results == 1 ? "entry" :
		    "entries", count[0]);
		for (s = 1; s < CTL_CACHE_VERIFY_NSTATES; s++)
			if (count[s] > 0)
				fprintf(ctx->out, ", %u %s%s", count[s],
				    ctl_cache_verify_states[s], s == 1 ?
				    " (cached compile failures)" : "");
		fputc('\n', ctx->out);
	}
	if (rc == CTL_EXIT_OK && bad > 0)
		rc = ctl_fail(ctx, "DATA_LOSS", "%zu of %zu %s not verify", bad,
		    r->n_results, bad == 1 ? "does" : "do");
	return (rc);
}

static const struct ctl_opt ctl_cache_verify_opts[] = {
	{ 'k', "key", "KEY", "check this entry (a key or a unique prefix of "
	    "one; any number of times)" },
	CTL_CACHE_OPTS_DIR,
	CTL_OPT_END
};

static int
ctl_cache_verify_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__CacheVerifyRequest req = NKID__V1__CACHE_VERIFY_REQUEST__INIT;
	struct ctl_cache_checked	  v;
	struct ctl_cache_where		  w = { 0, NULL };
	struct ctl_manifest		  m = { NULL, 0, 0 };
	char *const			 *prefixes;
	char				**keys = NULL, err[1024];
	char				(*digests)[65] = NULL;
	size_t				  i, nkeys = 0;
	int				  rc;

	memset(&v, 0, sizeof v);
	prefixes = ctl_args_values(a, "key", &nkeys);
	if ((rc = ctl_cache_where_get(ctx, a, &w)) != 0)
		goto out;
	if (a->argc > 0 && nkeys > 0) {
		rc = ctl_usage_fail(ctx, "MANIFEST and -k KEY exclude each "
		    "other");
		goto out;
	}
	if ((rc = ctl_cache_keys_resolve(ctx, &w, prefixes, nkeys, &keys)) !=
	    0)
		goto out;
	if (a->argc > 0) {
		if (ctl_manifest_read(a->argv[0], &m, err, sizeof err) < 0) {
			ctl_errorf(ctx, "cache verify: %s", err);
			rc = CTL_EXIT_FAIL;
			goto out;
		}
		if ((digests = calloc(m.n + 1, sizeof *digests)) == NULL)
			abort();
		req.kernels = ctl_cache_verify_kernels(&m, digests);
		req.n_kernels = m.n;
	}
	req.keys = keys;
	req.n_keys = nkeys;
	if ((rc = ctl_cache_checked_get(ctx, &w, &req, &v)) == 0)
		rc = ctl_cache_verify_report(ctx, v.r, a->argc > 0 ? &m : NULL,
		    w.offline);
out:
	for (i = 0; i < req.n_kernels; i++)
		free(req.kernels[i]);
	free(req.kernels);
	free(digests);
	ctl_cache_checked_release(&v);
	ctl_cache_keys_free(keys, nkeys);
	ctl_manifest_release(&m);
	ctl_cache_where_release(&w);
	return (rc);
}

const struct ctl_cmd ctl_cache_verify_cmd = {
	.name = "cache verify",
	.usage = "[MANIFEST | -k KEY...] " CTL_CACHE_USAGE_DIR,
	.help = "check that every entry (or those named, or every kernel of "
	    "MANIFEST) is present and matches its digest",
	.about =
	    "Through nkid (CacheVerify), or with --cache-dir/--state-dir in\n"
	    "that directory (read-only). Each entry is ok, failed (a cached\n"
	    "compile failure), missing, stale (another compiler's), corrupt\n"
	    "(quarantined by nkid) or error; the counts add up to the\n"
	    "entries checked. Exit 0 only if none is missing, stale,\n"
	    "corrupt or an error, and, for MANIFEST, none failed.\n",
	.opts = ctl_cache_verify_opts,
	.args = { 0, 1, NULL },
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_cache_verify_exec,
};
