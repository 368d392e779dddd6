/* rpc_cache_stat.h: the cache's figures as CacheStat and Status send them. */
#ifndef NKID_RPC_CACHE_STAT_H
#define NKID_RPC_CACHE_STAT_H

#include "nkid.pb-c.h"

struct daemon;

/*
 * Fill r with d's cache totals and counters (memory only, no disk access)
 * and, when the remote tier is on, rs with its figures, pointed at by
 * r->remote. r and rs are initialized here; their strings are d's (valid
 * until the loop runs on).
 */
void	rpc_cache_stat_fill(struct daemon *d, Nkid__V1__CacheStatReply *r,
	    Nkid__V1__RemoteStat *rs);

#endif /* NKID_RPC_CACHE_STAT_H */
