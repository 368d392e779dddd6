/* ctl_cache_ls.c: `nkictl cache ls [PREFIX]`: entries, most recently used first, from nkid or from a cache directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static const struct ctl_opt ctl_cache_ls_opts[] = {
	{ 'n', NULL, "LIMIT", "list at most LIMIT entries" },
	CTL_CACHE_OPTS_DIR,
	CTL_OPT_END
};

static int
ctl_cache_ls_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	struct ctl_cache_listing	 l;
	const Nkid__V1__CacheListReply	*r;
	const Nkid__V1__CacheEntry	*e;
	struct ctl_cache_where		 w = { 0, NULL };
	unsigned long long		 limit = 0;
	cJSON				*o, *arr;
	char				 when[32];
	time_t				 t;
	size_t				 i;
	int				 rc;

	memset(&l, 0, sizeof l);
	if ((rc = ctl_args_uint(ctx, a, "n", 1, 1000000, &limit)) != 0 ||
	    (rc = ctl_cache_where_get(ctx, a, &w)) != 0)
		goto out;
	if ((rc = ctl_cache_listing_get(ctx, &w, a->argc > 0 ? a->argv[0] :
	    "", (unsigned)limit, &l)) != 0)
		goto out;
	r = l.r;
	if (ctx->json) {
		o = cJSON_CreateObject();
		arr = o != NULL ? cJSON_AddArrayToObject(o, "entries") : NULL;
		for (i = 0; arr != NULL && i < r->n_entries; i++)
			cJSON_AddItemToArray(arr, ctl_cache_entry_json(
			    r->entries[i], 0));
		rc = ctl_json_print(ctx, o);
	} else {
		fprintf(ctx->out, "%-16s  %-24s  %10s  %6s  %-6s  %s\n", "KEY",
		    "KERNEL", "SIZE", "HITS", "STATUS", "LAST USED");
		for (i = 0; i < r->n_entries; i++) {
			e = r->entries[i];
			t = (time_t)e->last_used;
			strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S",
			    localtime(&t));
			fprintf(ctx->out, "%.16s  %-24.24s  %10llu  %6llu  "
			    "%-6s  %s%s\n", e->key, e->kernel,
			    (unsigned long long)e->size,
			    (unsigned long long)e->hits, e->status, when,
			    e->pinned ? "  pinned" : "");
		}
	}
out:
	ctl_cache_listing_release(&l);
	ctl_cache_where_release(&w);
	return (rc);
}

const struct ctl_cmd ctl_cache_ls_cmd = {
	.name = "cache ls",
	.usage = "[PREFIX] [-n LIMIT] [--cache-dir DIR | --state-dir DIR]",
	.help = "list cache entries, most recently used first",
	.opts = ctl_cache_ls_opts,
	.args = { 0, 1, NULL },
	.exec = ctl_cache_ls_exec,
};
