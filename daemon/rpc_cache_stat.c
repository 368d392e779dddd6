/* rpc_cache_stat.c: CacheStat, the cache's totals and counters and the remote tier's (kept in memory: no disk access), counted from zero after a request to zero them. */
#include <string.h>
#include <time.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kcache_remote.h"
#include "daemon/rpc_cache_stat.h"

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

void
rpc_cache_stat_fill(struct daemon *d, Nkid__V1__CacheStatReply *r,
    Nkid__V1__RemoteStat *rs)
{
	struct kcache_stats		ks;
	struct kcache_remote_stats	rst;

	nkid__v1__cache_stat_reply__init(r);
	nkid__v1__remote_stat__init(rs);
	kcache_stats_get(d->kcache, &ks);
	r->entries = ks.entries;
	r->bytes = ks.bytes;
	r->max_bytes = ks.max_bytes;
	r->hits = ks.hits;
	r->misses = ks.misses;
	r->compiles = ks.compiles;
	r->coalesced = ks.coalesced;
	r->failures = ks.failures;
	r->evictions = ks.evictions;
	r->corrupt = ks.corrupt;
	if (d->remote == NULL)
		return;
	kcache_remote_stats_get(d->remote, &rst);
	rs->state = (char *)rst.state;
	rs->url = (char *)rst.url;
	rs->mode = (char *)rst.mode;
	rs->hits = rst.hits;
	rs->misses = rst.misses;
	rs->pushes = rst.pushes;
	rs->rejected = rst.rejected;
	rs->errors = rst.errors;
	rs->locks_taken = rst.locks_taken;
	rs->locks_waited = rst.locks_waited;
	rs->skipped = rst.skipped;
	rs->pulled_bytes = rst.pulled_bytes;
	rs->pushed_bytes = rst.pushed_bytes;
	rs->last_error = (char *)rst.last_error;
	rs->last_error_unix_ms = rst.last_error_ms;
	r->remote = rs;
}

static void
rpc_cache_stat(struct rpc_call *c)
{
	const Nkid__V1__CacheStatRequest *req = (const void *)c->req;
	Nkid__V1__CacheStatReply	r;
	Nkid__V1__RemoteStat		rs;
	struct kcache_stats		ks, z;

	kcache_stats_get(c->d->kcache, &ks);
	if (req->zero) {
		if (rpc_admin_check(c, "zero the cache counters") != 0)
			return;
		rpc_cache_stat_zero.d = c->d;
		rpc_cache_stat_zero.at = ks;
		rpc_cache_stat_zero.when = (double)time(NULL);
	}
	rpc_cache_stat_fill(c->d, &r, &rs);
	memset(&z, 0, sizeof z);
	if (rpc_cache_stat_zero.d == c->d) {
		z = rpc_cache_stat_zero.at;
		r.zeroed_at = rpc_cache_stat_zero.when;
	}
	r.hits = rpc_cache_stat_since(r.hits, z.hits);
	r.misses = rpc_cache_stat_since(r.misses, z.misses);
	r.compiles = rpc_cache_stat_since(r.compiles, z.compiles);
	r.coalesced = rpc_cache_stat_since(r.coalesced, z.coalesced);
	r.failures = rpc_cache_stat_since(r.failures, z.failures);
	r.evictions = rpc_cache_stat_since(r.evictions, z.evictions);
	r.corrupt = rpc_cache_stat_since(r.corrupt, z.corrupt);
	rpc_reply(c, &r.base);
}

const struct rpc_method rpc_cache_stat_method = {
	DISPATCH_METHOD_NAME("CacheStat"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_stat,
};
