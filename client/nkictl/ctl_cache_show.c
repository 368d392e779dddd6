/* ctl_cache_show.c: `nkictl cache show KEY`: one entry in full, its compiler log included; KEY may be a unique prefix. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static const struct ctl_opt ctl_cache_show_opts[] = {
	CTL_CACHE_OPTS_DIR,
	CTL_OPT_END
};

static int
ctl_cache_show_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	struct ctl_cache_listing	 l;
	const Nkid__V1__CacheListReply	*r;
	const Nkid__V1__CacheEntry	*e;
	struct ctl_cache_where		 w = { 0, NULL };
	const char			*key = a->argv[0];
	char				 when[32];
	time_t				 t;
	int				 rc;

	memset(&l, 0, sizeof l);
	if ((rc = ctl_cache_where_get(ctx, a, &w)) != 0)
		goto out;
	if ((rc = ctl_cache_listing_get(ctx, &w, key, 2, &l)) != 0)
		goto out;
	r = l.r;
	if (r->n_entries != 1) {
		ctl_errorf(ctx, "cache show: %s '%s'", r->n_entries == 0 ?
		    "no entry has key" : "more than one entry starts with",
		    key);
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	e = r->entries[0];
	if (ctx->json) {
		rc = ctl_json_print(ctx, ctl_cache_entry_json(e, 1));
		goto out;
	}
	ctl_kv(ctx, "key", "%s", e->key);
	ctl_kv(ctx, "kernel", "%s", e->kernel);
	ctl_kv(ctx, "status", "%s%s", e->status, e->pinned ? ", pinned" : "");
	ctl_kv(ctx, "format", "%s", e->format);
	ctl_kv(ctx, "target", "%s", *e->target ? e->target : "-");
	ctl_kv(ctx, "backend", "%s (%s)", e->backend, e->compiler_version);
	ctl_kv(ctx, "size", "%llu bytes", (unsigned long long)e->size);
	ctl_kv(ctx, "digest", "sha256:%s", e->digest);
	ctl_kv(ctx, "compile", "%.1f ms", e->compile_ms);
	ctl_kv(ctx, "hits", "%llu", (unsigned long long)e->hits);
	t = (time_t)e->created;
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
	ctl_kv(ctx, "created", "%s", when);
	t = (time_t)e->last_used;
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
	ctl_kv(ctx, "last used", "%s", when);
	if (*e->log != '\0')
		fprintf(ctx->out, "log:\n%s%s", e->log,
		    e->log[strlen(e->log) - 1] == '\n' ? "" : "\n");
out:
	ctl_cache_listing_release(&l);
	ctl_cache_where_release(&w);
	return (rc);
}

const struct ctl_cmd ctl_cache_show_cmd = {
	.name = "cache show",
	.usage = "KEY [--cache-dir DIR | --state-dir DIR]",
	.help = "show one cache entry with its compiler log",
	.opts = ctl_cache_show_opts,
	.args = { 1, 1, "KEY (a key or a unique prefix of one)" },
	.exec = ctl_cache_show_exec,
};
