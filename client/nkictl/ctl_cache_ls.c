/* ctl_cache_ls.c: `nkictl cache ls [NAME]`: entries of a kernel (or all), most recently used first, with their signatures, from nkid or from a cache directory. */
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

/* What the listing shows. */
struct ctl_cache_ls {
	Nkid__V1__CacheEntry		**v;	/* borrowed from the listing */
	size_t				  n;
	const Nkid__V1__CacheVerifyResult **sig;	/* per entry, or NULL */
};

static const struct ctl_opt ctl_cache_ls_opts[] = {
	{ 'n', "limit", "LIMIT", "list at most LIMIT entries" },
	{ 'k', "key", "PREFIX", "only the entries whose key starts with "
	    "PREFIX" },
	{ 0, "no-signature", NULL, "do not read the entries to show their "
	    "signatures" },
	CTL_CACHE_OPTS_DIR,
	CTL_OPT_END
};

/* The entries of r whose kernel name matches pattern (NULL: all), at
 * most limit (0: all), into ls. */
static void
ctl_cache_ls_filter(const Nkid__V1__CacheListReply *r, const char *pattern,
    unsigned long long limit, struct ctl_cache_ls *ls)
{
	size_t	i;

	if ((ls->v = calloc(r->n_entries + 1, sizeof *ls->v)) == NULL ||
	    (ls->sig = calloc(r->n_entries + 1, sizeof *ls->sig)) == NULL)
		abort();
	for (i = 0; i < r->n_entries; i++) {
		if (limit > 0 && ls->n == limit)
			break;
		if (pattern == NULL ||
		    fnmatch(pattern, r->entries[i]->kernel, 0) == 0)
			ls->v[ls->n++] = r->entries[i];
	}
}

/* The signatures of the listed entries that compiled (CacheVerify reads
 * their images) into ls->sig. */
static int
ctl_cache_ls_signatures(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    struct ctl_cache_ls *ls, struct ctl_cache_checked *v)
{
	Nkid__V1__CacheVerifyRequest req = NKID__V1__CACHE_VERIFY_REQUEST__INIT;
	size_t				i, j;
	int				rc;

	if ((req.keys = calloc(ls->n + 1, sizeof *req.keys)) == NULL)
		abort();
	for (i = 0; i < ls->n; i++)
		if (strcmp(ls->v[i]->status, "ok") == 0)
			req.keys[req.n_keys++] = ls->v[i]->key;
	req.signatures = 1;
	rc = req.n_keys > 0 ? ctl_cache_checked_get(ctx, w, &req, v) : 0;
	free(req.keys);
	for (i = 0; rc == 0 && v->r != NULL && i < v->r->n_results; i++)
		for (j = 0; j < ls->n; j++)
			if (strcmp(ls->v[j]->key, v->r->results[i]->key) == 0)
				ls->sig[j] = v->r->results[i];
	return (rc);
}

static void
ctl_cache_ls_table(struct ctl_ctx *ctx, const struct ctl_cache_ls *ls)
{
	static const struct ctl_table_col cols[] = {
		{ "KEY", 0 }, { "KERNEL", CTL_TABLE_TRUNC },
		{ "TARGET", 0 }, { "SIGNATURE", CTL_TABLE_TRUNC },
		{ "SIZE", CTL_TABLE_RIGHT },
		{ "HITS", CTL_TABLE_RIGHT }, { "STATUS", 0 },
		{ "LAST USED", 0 },
	};
	const Nkid__V1__CacheEntry	 *e;
	struct ctl_table		 *t;
	char				**keys, key[CACHE_KEY_LEN + 1];
	char				  sig[1024], size[32], hits[32];
	char				  status[32], used[32];
	double				  now = ctl_fmt_now();
	size_t				  i;
	int				  abbrev;

	if ((keys = calloc(ls->n + 1, sizeof *keys)) == NULL)
		abort();
	for (i = 0; i < ls->n; i++)
		keys[i] = ls->v[i]->key;
	abbrev = ctl_cache_abbrev_len(keys, ls->n);
	free(keys);
	t = ctl_table_new(cols, sizeof cols / sizeof cols[0]);
	for (i = 0; i < ls->n; i++) {
		e = ls->v[i];
		snprintf(key, sizeof key, "%.*s", abbrev, e->key);
		sig[0] = '\0';
		if (ls->sig[i] != NULL)
			ctl_cache_sig_format(ls->sig[i]->params,
			    ls->sig[i]->n_params, sig, sizeof sig);
		snprintf(hits, sizeof hits, "%llu",
		    (unsigned long long)e->hits);
		snprintf(status, sizeof status, "%s%s", e->status, e->pinned ?
		    ", pinned" : "");
		ctl_table_row(t, key, e->kernel, ctl_cache_target(e), sig,
		    ctl_fmt_bytes(e->size, size, sizeof size), hits, status,
		    ctl_fmt_age(e->last_used, now, used, sizeof used));
	}
	ctl_table_print(t, ctx->out);
}

static int
ctl_cache_ls_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	struct ctl_cache_listing	 l;
	struct ctl_cache_checked	 v;
	struct ctl_cache_ls		 ls;
	struct ctl_cache_where		 w = { 0, NULL };
	unsigned long long		 limit = 0;
	const char			*name, *prefix;
	char				 low[CACHE_KEY_LEN + 1];
	cJSON				*o, *arr;
	size_t				 i;
	int				 rc;

	memset(&l, 0, sizeof l);
	memset(&v, 0, sizeof v);
	memset(&ls, 0, sizeof ls);
	name = a->argc > 0 ? a->argv[0] : NULL;
	prefix = ctl_args_get(a, "key");
	if ((rc = ctl_args_uint(ctx, a, "limit", 1, 1000000, &limit)) != 0 ||
	    (rc = ctl_cache_where_get(ctx, a, &w)) != 0)
		goto out;
	if (prefix != NULL && (strlen(prefix) >= sizeof low ||
	    strspn(prefix, "0123456789abcdefABCDEF") != strlen(prefix))) {
		rc = ctl_usage_fail(ctx, "bad key prefix '%s': want at most "
		    "%d hex digits", prefix, CACHE_KEY_LEN);
		goto out;
	}
	if (prefix != NULL) {
		for (i = 0; prefix[i] != '\0'; i++)
			low[i] = (char)tolower((unsigned char)prefix[i]);
		low[i] = '\0';
		prefix = low;
	}
	/* A kernel name is matched here: nkid lists by key prefix. */
	if ((rc = ctl_cache_listing_get(ctx, &w, prefix != NULL ? prefix : "",
	    name != NULL ? 0 : (unsigned)limit, &l)) != 0)
		goto out;
	ctl_cache_ls_filter(l.r, name, limit, &ls);
	if (!ctl_args_has(a, "no-signature") &&
	    (rc = ctl_cache_ls_signatures(ctx, &w, &ls, &v)) != 0)
		goto out;
	if (ctx->json) {
		o = cJSON_CreateObject();
		arr = o != NULL ? cJSON_AddArrayToObject(o, "entries") : NULL;
		for (i = 0; arr != NULL && i < ls.n; i++)
			cJSON_AddItemToArray(arr, ctl_cache_entry_json(ls.v[i],
			    0, ls.sig[i]));
		rc = ctl_json_print(ctx, o);
	} else if (ls.n == 0)
		fprintf(ctx->out, "no entries%s%s%s\n", name != NULL ?
		    " of kernel '" : "", name != NULL ? name : "",
		    name != NULL ? "'" : "");
	else
		ctl_cache_ls_table(ctx, &ls);
out:
	free(ls.v);
	free(ls.sig);
	ctl_cache_checked_release(&v);
	ctl_cache_listing_release(&l);
	ctl_cache_where_release(&w);
	return (rc);
}

const struct ctl_cmd ctl_cache_ls_cmd = {
	.name = "cache ls",
	.usage = "[NAME] [-k PREFIX] [-n LIMIT] [--no-signature] "
	    CTL_CACHE_USAGE_DIR,
	.help = "list cache entries (of kernel NAME, a shell pattern), most "
	    "recently used first, with their signatures",
	.about =
	    "NAME matches kernel names as a shell pattern ('vector_*'). KEY\n"
	    "is the shortest prefix (16 digits or more) that tells the\n"
	    "listed keys apart: every cache command takes it. SIGNATURE,\n"
	    "the parameters' names, dtypes and shapes, is decoded from each\n"
	    "entry's compiled image (nkid keeps no signature; the cpu\n"
	    "backend's image tells it, a NEFF does not: '-'), which reads\n"
	    "every listed entry: --no-signature does not.\n",
	.opts = ctl_cache_ls_opts,
	.args = { 0, 1, NULL },
	.exec = ctl_cache_ls_exec,
};
