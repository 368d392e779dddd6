/* ctl_cache_gc.c: `nkictl cache gc`: in a cache directory, remove orphan blob files, temp and quarantined files, optionally failed entries, and evict to the budget. */
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static const struct ctl_opt ctl_cache_gc_opts[] = {
	{ 0, "failed", NULL, "remove the cached compile failures too" },
	{ 0, "min-age", "S", "leave files younger than S seconds (default "
	    "600)" },
	CTL_CACHE_OPTS_DIR,
	CTL_OPT_END
};

static int
ctl_cache_gc_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	struct cache_gc_result	 g;
	struct ctl_cache_where	 w = { 0, NULL };
	struct cache		*c = NULL;
	cJSON			*o;
	double			 min_age = 600;
	int			 rc;

	if ((rc = ctl_args_seconds(ctx, a, "min-age", 1, &min_age)) != 0 ||
	    (rc = ctl_cache_where_get(ctx, a, &w)) != 0)
		goto out;
	if ((rc = ctl_cache_open(ctx, &w, 0, &c)) != 0)
		goto out;
	if ((rc = cache_gc(c, min_age, ctl_args_has(a, "failed") > 0,
	    &g)) != 0) {
		ctl_errorf(ctx, "cache gc: %s", cache_strerror(rc));
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	if (ctx->json) {
		o = cJSON_CreateObject();
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
	return (rc);
}

const struct ctl_cmd ctl_cache_gc_cmd = {
	.name = "cache gc",
	.usage = "[--failed] [--min-age S] " CTL_CACHE_USAGE_DIR,
	.help = "remove orphan and quarantined files (and failed entries) "
	    "from a cache directory",
	.opts = ctl_cache_gc_opts,
	.exec = ctl_cache_gc_exec,
};
