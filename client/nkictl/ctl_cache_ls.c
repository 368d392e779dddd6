/*
 * ctl_cache_ls.c: `nkictl cache ls [PREFIX]`: entries, most recently used
 * first, from nkid or from a cache directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static int
ctl_cache_ls_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON, CTL_CACHE_LONGOPTS_DIR, { 0, 0, 0, 0 } };
	ctl_cache_listing l = { 0 };
	const Nkid__V1__CacheListReply *r;
	ctl_cache_where w = { NULL };
	const char *prefix = "";
	unsigned long long n;
	unsigned limit = 0;
	size_t i;
	int rc = 0, opt;

	while ((opt = ctl_opt_next(ctx, argc, argv, "n:", longopts, &rc)) !=
	    -1) {
		if (opt == CTL_OPT_DONE)
			goto out;
		if (opt == 'n') {
			if (ctl_parse_uint(optarg, 1, 1000000, &n) < 0) {
				rc = ctl_usage_fail(ctx, "bad -n '%s'", optarg);
				goto out;
			}
			limit = (unsigned)n;
		} else if (!ctl_cache_where_opt(&w, opt, optarg)) {
			rc = ctl_usage_fail(ctx, "unexpected option");
			goto out;
		}
	}
	if (optind < argc)
		prefix = argv[optind++];
	if (optind < argc) {
		rc = ctl_usage_fail(ctx, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if ((rc = ctl_cache_listing_get(ctx, &w, prefix, limit, &l)) != 0)
		goto out;
	r = l.r;
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject(), *a;

		a = o != NULL ? cJSON_AddArrayToObject(o, "entries") : NULL;
		for (i = 0; a != NULL && i < r->n_entries; i++)
			cJSON_AddItemToArray(a, ctl_cache_entry_json(
			    r->entries[i], 0));
		rc = ctl_json_print(ctx, o);
	} else {
		fprintf(ctx->out, "%-16s  %-24s  %10s  %6s  %-6s  %s\n", "KEY",
		    "KERNEL", "SIZE", "HITS", "STATUS", "LAST USED");
		for (i = 0; i < r->n_entries; i++) {
			const Nkid__V1__CacheEntry *e = r->entries[i];
			char when[32];
			time_t t = (time_t)e->last_used;

			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S",
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
	return rc;
}

const ctl_cmd ctl_cache_ls_cmd = {
	.name = "cache ls",
	.usage = "[PREFIX] [-n LIMIT] [--cache-dir DIR | --state-dir DIR]",
	.help = "list cache entries, most recently used first",
	.exec = ctl_cache_ls_exec,
};
