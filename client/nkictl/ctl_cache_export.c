/*
 * ctl_cache_export.c: `nkictl cache export FILE [--pinned | KEY...]`:
 * write a self-verifying bundle from a cache directory (docs/cache.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static int
ctl_cache_export_write_cb(void *arg, const void *p, size_t n)
{
	return fwrite(p, 1, n, arg) == n ? 0 : -1;
}

static int
ctl_cache_export_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON, CTL_CACHE_LONGOPTS_DIR,
		{ "pinned", no_argument, NULL, 'p' }, { 0, 0, 0, 0 } };
	ctl_cache_where w = { NULL };
	struct cache *c = NULL;
	const char *path;
	char *tmp = NULL, err[1024];
	unsigned count = 0;
	FILE *f = NULL;
	int rc = 0, opt, pinned = 0, fd;

	while ((opt = ctl_opt_next(ctx, argc, argv, "", longopts, &rc)) != -1) {
		if (opt == CTL_OPT_DONE)
			goto out;
		if (opt == 'p')
			pinned = 1;
		else if (!ctl_cache_where_opt(&w, opt, optarg)) {
			rc = ctl_usage_fail(ctx, "unexpected option");
			goto out;
		}
	}
	if (optind == argc) {
		rc = ctl_usage_fail(ctx, "give the bundle FILE");
		goto out;
	}
	path = argv[optind++];
	if (pinned && optind < argc) {
		rc = ctl_usage_fail(ctx, "--pinned and KEY... exclude each "
		    "other");
		goto out;
	}
	if ((rc = ctl_cache_open(ctx, &w, 1, &c)) != 0)
		goto out;
	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		abort();
	if ((fd = mkstemp(tmp)) == -1 || (f = fdopen(fd, "w")) == NULL) {
		ctl_errorf(ctx, "cache export: cannot create '%s': %s", tmp,
		    strerror(errno));
		free(tmp);
		tmp = NULL;
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	if (cache_bundle_export(c, (const char *const *)argv + optind,
	    argc - optind, pinned, ctl_cache_export_write_cb, f, &count, err,
	    sizeof(err)) != 0) {
		ctl_errorf(ctx, "cache export: %s", err);
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0) {
		f = NULL;
		ctl_errorf(ctx, "cache export: cannot write '%s': %s", tmp,
		    strerror(errno));
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	f = NULL;
	if (rename(tmp, path) == -1) {
		ctl_errorf(ctx, "cache export: cannot rename to '%s': %s", path,
		    strerror(errno));
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	free(tmp);
	tmp = NULL;
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "bundle", path);
		cJSON_AddNumberToObject(o, "entries", count);
		rc = ctl_json_print(ctx, o);
	} else
		fprintf(ctx->out, "exported %u entr%s to %s\n", count,
		    count == 1 ? "y" : "ies", path);
out:
	if (f != NULL)
		fclose(f);
	if (tmp != NULL) {
		unlink(tmp);
		free(tmp);
	}
	cache_close(c);
	ctl_cache_where_release(&w);
	return rc;
}

const ctl_cmd ctl_cache_export_cmd = {
	.name = "cache export",
	.usage = "FILE [--pinned | KEY...] [--cache-dir DIR | --state-dir DIR]",
	.help = "write cache entries to a self-verifying bundle",
	.exec = ctl_cache_export_exec,
};
