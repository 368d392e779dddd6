/* rpc_cache_stat.c: CacheStat, the cache's totals and counters (kept in memory: no disk access). */
#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"

static void
rpc_cache_stat(struct rpc_call *c)
{
	Nkid__V1__CacheStatReply	r = NKID__V1__CACHE_STAT_REPLY__INIT;
	struct kcache_stats		ks;

	kcache_stats_get(c->d->kcache, &ks);
	r.entries = ks.entries;
	r.bytes = ks.bytes;
	r.max_bytes = ks.max_bytes;
	r.hits = ks.hits;
	r.misses = ks.misses;
	r.compiles = ks.compiles;
	r.coalesced = ks.coalesced;
	r.failures = ks.failures;
	r.evictions = ks.evictions;
	r.corrupt = ks.corrupt;
	rpc_reply(c, &r.base);
}

const struct rpc_method rpc_cache_stat_method = {
	.name = "CacheStat", .path = DISPATCH_SERVICE "CacheStat",
	.kind = RPC_UNARY,
	.request = &nkid__v1__cache_stat_request__descriptor,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_stat,
};
