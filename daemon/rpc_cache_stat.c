/* rpc_cache_stat.c: CacheStat, the cache's totals and counters (kept in memory: no disk access), counted from zero after a request to zero them. */
#include <string.h>
#include <time.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"

/*
 * The counters when CacheStat last zeroed them, and when, for the daemon d
 * (unit tests run several in one process). Loop thread only. The counters
 * themselves never go back: Status and the metrics count since start.
 */
static struct {
	const struct daemon	*d;
	struct kcache_stats	 at;
	double			 when;
} rpc_cache_stat_zero;

/* v - base, never below 0. */
static uint64_t
rpc_cache_stat_since(uint64_t v, uint64_t base)
{
	return (v > base ? v - base : 0);
}

static void
rpc_cache_stat(struct rpc_call *c)
{
	const Nkid__V1__CacheStatRequest *req = (const void *)c->req;
	Nkid__V1__CacheStatReply	r = NKID__V1__CACHE_STAT_REPLY__INIT;
	struct kcache_stats		ks, z;

	kcache_stats_get(c->d->kcache, &ks);
	if (req->zero) {
		if (rpc_admin_check(c, "zero the cache counters") != 0)
			return;
		rpc_cache_stat_zero.d = c->d;
		rpc_cache_stat_zero.at = ks;
		rpc_cache_stat_zero.when = (double)time(NULL);
	}
	memset(&z, 0, sizeof z);
	if (rpc_cache_stat_zero.d == c->d) {
		z = rpc_cache_stat_zero.at;
		r.zeroed_at = rpc_cache_stat_zero.when;
	}
	r.entries = ks.entries;
	r.bytes = ks.bytes;
	r.max_bytes = ks.max_bytes;
	r.hits = rpc_cache_stat_since(ks.hits, z.hits);
	r.misses = rpc_cache_stat_since(ks.misses, z.misses);
	r.compiles = rpc_cache_stat_since(ks.compiles, z.compiles);
	r.coalesced = rpc_cache_stat_since(ks.coalesced, z.coalesced);
	r.failures = rpc_cache_stat_since(ks.failures, z.failures);
	r.evictions = rpc_cache_stat_since(ks.evictions, z.evictions);
	r.corrupt = rpc_cache_stat_since(ks.corrupt, z.corrupt);
	rpc_reply(c, &r.base);
}

const struct rpc_method rpc_cache_stat_method = {
	.name = "CacheStat", .path = DISPATCH_SERVICE "CacheStat",
	.kind = RPC_UNARY,
	.request = &nkid__v1__cache_stat_request__descriptor,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_stat,
};
