/*
 * ctl_cache_import.c: `nkictl cache import FILE`: verify a bundle and
 * import it into a cache directory, all or nothing.
 */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static int
ctl_cache_import_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON, CTL_CACHE_LONGOPTS_DIR, { 0, 0, 0, 0 } };
	ctl_cache_where w = { NULL };
	struct cache *c = NULL;
	unsigned imported, skipped;
	char err[1024];
	int rc = 0, opt;

	while ((opt = ctl_opt_next(ctx, argc, argv, "", longopts, &rc)) != -1) {
		if (opt == CTL_OPT_DONE)
			goto out;
		if (!ctl_cache_where_opt(&w, opt, optarg)) {
			rc = ctl_usage_fail(ctx, "unexpected option");
			goto out;
		}
	}
	if (argc - optind != 1) {
		rc = ctl_usage_fail(ctx, "give one bundle FILE");
		goto out;
	}
	if ((rc = ctl_cache_open(ctx, &w, 0, &c)) != 0)
		goto out;
	if (cache_bundle_import(c, argv[optind], &imported, &skipped, err,
	    sizeof(err)) != 0) {
		ctl_errorf(ctx, "cache import: %s", err);
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "imported", imported);
		cJSON_AddNumberToObject(o, "skipped", skipped);
		rc = ctl_json_print(ctx, o);
	} else
		fprintf(ctx->out, "imported %u entr%s (%u already present)\n",
		    imported, imported == 1 ? "y" : "ies", skipped);
out:
	cache_close(c);
	ctl_cache_where_release(&w);
	return rc;
}

const ctl_cmd ctl_cache_import_cmd = {
	.name = "cache import",
	.usage = "FILE [--cache-dir DIR | --state-dir DIR]",
	.help = "import a bundle, all or nothing, after verifying every digest",
	.exec = ctl_cache_import_exec,
};
