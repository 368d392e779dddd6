/* ctl_cache_stat.c: `nkictl cache stat`: the cache's totals and counters, from nkid, or from a cache directory with --cache-dir/--state-dir. */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"
#include "ctl_cache_remote.h"

static const struct ctl_opt ctl_cache_stat_opts[] = {
	{ 0, "zero", NULL, "count hits, misses, compiles and the others from "
	    "zero from now on (root, nkid's uid or access.admin_gids)" },
	CTL_CACHE_OPTS_DIR,
	CTL_OPT_END
};

/* The totals, and the counters that only nkid keeps. */
static void
ctl_cache_stat_print(struct ctl_ctx *ctx, const Nkid__V1__CacheStatReply *r,
    int offline)
{
	char	b1[32], b2[32], b3[32];

	ctl_kv(ctx, "entries", "%llu", (unsigned long long)r->entries);
	if (r->max_bytes > 0)
		ctl_kv(ctx, "size", "%s of %s (%s)", ctl_fmt_bytes(r->bytes, b1,
		    sizeof b1), ctl_fmt_bytes(r->max_bytes, b2, sizeof b2),
		    ctl_fmt_percent(r->bytes, r->max_bytes, b3, sizeof b3));
	else
		ctl_kv(ctx, "size", "%s (no budget)", ctl_fmt_bytes(r->bytes,
		    b1, sizeof b1));
	if (offline)
		return;
	if (r->zeroed_at > 0)
		ctl_kv(ctx, "counting since", "%s (zeroed %s)", ctl_fmt_time(
		    r->zeroed_at, b1, sizeof b1), ctl_fmt_age(r->zeroed_at,
		    ctl_fmt_now(), b2, sizeof b2));
	ctl_kv(ctx, "hit rate", "%s (%llu hit%s, %llu miss%s)",
	    ctl_fmt_percent(r->hits, r->hits + r->misses, b1, sizeof b1),
	    (unsigned long long)r->hits, r->hits == 1 ? "" : "s",
	    (unsigned long long)r->misses, r->misses == 1 ? "" : "es");
	ctl_kv(ctx, "compiles", "%llu (%llu coalesced, %llu failed)",
	    (unsigned long long)r->compiles, (unsigned long long)r->coalesced,
	    (unsigned long long)r->failures);
	ctl_kv(ctx, "evictions", "%llu", (unsigned long long)r->evictions);
	ctl_kv(ctx, "corrupt", "%llu", (unsigned long long)r->corrupt);
	if (r->remote != NULL)
		ctl_cache_remote_print(ctx, r->remote);
}

static int
ctl_cache_stat_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__CacheStatRequest req = NKID__V1__CACHE_STAT_REQUEST__INIT;
	Nkid__V1__CacheStatReply off = NKID__V1__CACHE_STAT_REPLY__INIT;
	Nkid__V1__CacheStatReply	*r = NULL;
	struct ctl_cache_where		 w = { 0, NULL };
	struct cache			*c = NULL;
	struct cache_stats		 cs;
	cJSON				*o;
	int				 rc;

	if ((rc = ctl_cache_where_get(ctx, a, &w)) != 0)
		goto out;
	req.zero = ctl_args_has(a, "zero") > 0;
	if (w.offline && req.zero) {
		rc = ctl_usage_fail(ctx, "--zero needs nkid: a cache directory "
		    "keeps no counters");
		goto out;
	}
	if (w.offline) {
		if ((rc = ctl_cache_open(ctx, &w, 1, &c)) != 0)
			goto out;
		cache_stats_get(c, &cs);
		off.entries = cs.entries;
		off.bytes = cs.bytes;
		off.max_bytes = cs.max_bytes;
		r = &off;
	} else if ((rc = ctl_call(ctx, "CacheStat", &req.base,
	    &nkid__v1__cache_stat_reply__descriptor,
	    (ProtobufCMessage **)&r)) != 0)
		goto out;
	if (ctx->json) {
		o = ctl_cache_stats_json(r);
		if (o != NULL && r->remote != NULL)
			cJSON_AddItemToObject(o, "remote",
			    ctl_cache_remote_json(r->remote));
		rc = ctl_json_print(ctx, o);
	} else
		ctl_cache_stat_print(ctx, r, w.offline);
out:
	if (r != NULL && r != &off)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	cache_close(c);
	ctl_cache_where_release(&w);
	return (rc);
}

const struct ctl_cmd ctl_cache_stat_cmd = {
	.name = "cache stat",
	.usage = "[--zero] " CTL_CACHE_USAGE_DIR,
	.help = "show the cache's size, budget, hit rate and counters",
	.opts = ctl_cache_stat_opts,
	.exec = ctl_cache_stat_exec,
};
