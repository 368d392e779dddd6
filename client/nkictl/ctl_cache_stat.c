/*
 * ctl_cache_stat.c: `nkictl cache stat`: the cache's totals and counters,
 * from nkid, or from a cache directory with --cache-dir/--state-dir.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static int
ctl_cache_stat_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON, CTL_CACHE_LONGOPTS_DIR, { 0, 0, 0, 0 } };
	Nkid__V1__CacheStatRequest req = NKID__V1__CACHE_STAT_REQUEST__INIT;
	Nkid__V1__CacheStatReply *r = NULL, off = NKID__V1__CACHE_STAT_REPLY__INIT;
	ctl_cache_where w = { NULL };
	struct cache *c = NULL;
	struct cache_stats cs;
	int rc = 0, opt;

	while ((opt = ctl_opt_next(ctx, argc, argv, "", longopts, &rc)) != -1) {
		if (opt == CTL_OPT_DONE)
			goto out;
		if (!ctl_cache_where_opt(&w, opt, optarg)) {
			rc = ctl_usage_fail(ctx, "unexpected option");
			goto out;
		}
	}
	if (optind < argc) {
		rc = ctl_usage_fail(ctx, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (w.dir != NULL) {
		if ((rc = ctl_cache_open(ctx, &w, 1, &c)) != 0)
			goto out;
		cache_stats_get(c, &cs);
		off.entries = cs.entries;
		off.bytes = cs.bytes;
		off.max_bytes = cs.max_bytes;
		r = &off;
	} else if ((rc = ctl_call(ctx, "CacheStat", &req.base,
	    &nkid__v1__cache_stat_reply__descriptor, (ProtobufCMessage **)&r))
	    != 0)
		goto out;
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject();

		if (o != NULL) {
			cJSON_AddNumberToObject(o, "entries", (double)r->entries);
			cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
			cJSON_AddNumberToObject(o, "max_bytes",
			    (double)r->max_bytes);
			cJSON_AddNumberToObject(o, "hits", (double)r->hits);
			cJSON_AddNumberToObject(o, "misses", (double)r->misses);
			cJSON_AddNumberToObject(o, "compiles",
			    (double)r->compiles);
			cJSON_AddNumberToObject(o, "coalesced",
			    (double)r->coalesced);
			cJSON_AddNumberToObject(o, "failures",
			    (double)r->failures);
			cJSON_AddNumberToObject(o, "evictions",
			    (double)r->evictions);
			cJSON_AddNumberToObject(o, "corrupt", (double)r->corrupt);
		}
		rc = ctl_json_print(ctx, o);
	} else {
		ctl_kv(ctx, "entries", "%llu", (unsigned long long)r->entries);
		ctl_kv(ctx, "bytes", "%llu of %llu (%.1f%%)",
		    (unsigned long long)r->bytes,
		    (unsigned long long)r->max_bytes, r->max_bytes ?
		    100.0 * (double)r->bytes / (double)r->max_bytes : 0.0);
		if (w.dir == NULL) {
			ctl_kv(ctx, "hits", "%llu", (unsigned long long)r->hits);
			ctl_kv(ctx, "misses", "%llu",
			    (unsigned long long)r->misses);
			ctl_kv(ctx, "compiles", "%llu (%llu coalesced)",
			    (unsigned long long)r->compiles,
			    (unsigned long long)r->coalesced);
			ctl_kv(ctx, "failures", "%llu",
			    (unsigned long long)r->failures);
			ctl_kv(ctx, "evictions", "%llu",
			    (unsigned long long)r->evictions);
			ctl_kv(ctx, "corrupt", "%llu",
			    (unsigned long long)r->corrupt);
		}
	}
out:
	if (r != NULL && r != &off)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	cache_close(c);
	ctl_cache_where_release(&w);
	return rc;
}

const ctl_cmd ctl_cache_stat_cmd = {
	.name = "cache stat",
	.usage = "[--cache-dir DIR | --state-dir DIR]",
	.help = "show the cache's size, budget and counters",
	.exec = ctl_cache_stat_exec,
};
