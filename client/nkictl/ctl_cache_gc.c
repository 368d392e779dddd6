/*
 * ctl_cache_gc.c: `nkictl cache gc`: in a cache directory, remove orphan
 * blob files, temp and quarantined files, optionally failed entries, and
 * evict to the budget.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static int
ctl_cache_gc_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON, CTL_CACHE_LONGOPTS_DIR,
		{ "failed", no_argument, NULL, 'f' },
		{ "min-age", required_argument, NULL, 'a' },
		{ 0, 0, 0, 0 } };
	struct cache_gc_result g;
	ctl_cache_where w = { NULL };
	struct cache *c = NULL;
	double min_age = 600;
	int rc = 0, opt, failed = 0;

	while ((opt = ctl_opt_next(ctx, argc, argv, "", longopts, &rc)) != -1) {
		if (opt == CTL_OPT_DONE)
			goto out;
		if (opt == 'f')
			failed = 1;
		else if (opt == 'a') {
			char *end;

			min_age = strtod(optarg, &end);
			if (*end != '\0' || min_age < 0) {
				rc = ctl_usage_fail(ctx, "bad --min-age '%s'",
				    optarg);
				goto out;
			}
		} else if (!ctl_cache_where_opt(&w, opt, optarg)) {
			rc = ctl_usage_fail(ctx, "unexpected option");
			goto out;
		}
	}
	if (optind < argc) {
		rc = ctl_usage_fail(ctx, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if ((rc = ctl_cache_open(ctx, &w, 0, &c)) != 0)
		goto out;
	if ((rc = cache_gc(c, min_age, failed, &g)) != 0) {
		ctl_errorf(ctx, "cache gc: %s", cache_strerror(rc));
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "orphans", g.orphans);
		cJSON_AddNumberToObject(o, "temps", g.temps);
		cJSON_AddNumberToObject(o, "quarantined", g.quarantined);
		cJSON_AddNumberToObject(o, "evicted", g.evicted);
		cJSON_AddNumberToObject(o, "failed", g.failed);
		rc = ctl_json_print(ctx, o);
	} else
		fprintf(ctx->out, "removed %u orphan blob%s, %u temp file%s, "
		    "%u quarantined file%s, %u failed entr%s; evicted %u\n",
		    g.orphans, g.orphans == 1 ? "" : "s", g.temps,
		    g.temps == 1 ? "" : "s", g.quarantined,
		    g.quarantined == 1 ? "" : "s", g.failed,
		    g.failed == 1 ? "y" : "ies", g.evicted);
out:
	cache_close(c);
	ctl_cache_where_release(&w);
	return rc;
}

const ctl_cmd ctl_cache_gc_cmd = {
	.name = "cache gc",
	.usage = "[--failed] [--min-age S] [--cache-dir DIR | --state-dir DIR]",
	.help = "remove orphan and quarantined files (and failed entries) "
	    "from a cache directory",
	.exec = ctl_cache_gc_exec,
};
