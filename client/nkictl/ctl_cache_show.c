/*
 * ctl_cache_show.c: `nkictl cache show KEY`: one entry in full, its
 * compiler log included; KEY may be a unique prefix.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static int
ctl_cache_show_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON, CTL_CACHE_LONGOPTS_DIR, { 0, 0, 0, 0 } };
	Nkid__V1__CacheListRequest req = NKID__V1__CACHE_LIST_REQUEST__INIT;
	Nkid__V1__CacheListReply *r = NULL, off = NKID__V1__CACHE_LIST_REPLY__INIT;
	const Nkid__V1__CacheEntry *e;
	struct cache_entry *store = NULL;
	ctl_cache_where w = { NULL };
	char when[32];
	time_t t;
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
		rc = ctl_usage_fail(ctx, "give one KEY");
		goto out;
	}
	req.prefix = argv[optind];
	req.limit = 2;
	if (w.dir != NULL) {
		if ((rc = ctl_cache_list_offline(ctx, &w, req.prefix, 2, &off,
		    &store)) != 0)
			goto out;
		r = &off;
	} else if ((rc = ctl_call(ctx, "CacheList", &req.base,
	    &nkid__v1__cache_list_reply__descriptor, (ProtobufCMessage **)&r))
	    != 0)
		goto out;
	if (r->n_entries != 1) {
		ctl_errorf(ctx, "cache show: %s '%s'", r->n_entries == 0 ?
		    "no entry has key" : "more than one entry starts with",
		    req.prefix);
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
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	ctl_kv(ctx, "created", "%s", when);
	t = (time_t)e->last_used;
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	ctl_kv(ctx, "last used", "%s", when);
	if (*e->log != '\0')
		fprintf(ctx->out, "log:\n%s%s", e->log,
		    e->log[strlen(e->log) - 1] == '\n' ? "" : "\n");
out:
	if (r == &off)
		ctl_cache_list_offline_free(&off, store);
	else if (r != NULL)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	ctl_cache_where_release(&w);
	return rc;
}

const ctl_cmd ctl_cache_show_cmd = {
	.name = "cache show",
	.usage = "KEY [--cache-dir DIR | --state-dir DIR]",
	.help = "show one cache entry with its compiler log",
	.exec = ctl_cache_show_exec,
};
