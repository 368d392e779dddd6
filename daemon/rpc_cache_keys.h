/* rpc_cache_keys.h: what the per-key cache RPCs (CachePin, CacheRemove) share: every key done on the disk cache off the loop, the outcome gathered on the loop. */
#ifndef NKID_RPC_CACHE_KEYS_H
#define NKID_RPC_CACHE_KEYS_H

#include <stddef.h>

struct cache;
struct rpc_call;

/* Off the loop, for one key: 0 when done, else the key has no entry. */
typedef int (*rpc_cache_keys_fn)(struct cache *disk, const char *key,
	    void *arg);

/* What a per-key RPC did; every pointer is valid during the callback. */
struct rpc_cache_keys_result {
	char	**keys;		/* all the keys, as requested */
	size_t	  nkeys;
	size_t	  ndone;	/* keys fn did */
	char	**missing;	/* the others, in request order */
	size_t	  nmissing;
};

typedef void (*rpc_cache_keys_done_cb)(struct rpc_call *c,
	    const struct rpc_cache_keys_result *r, void *arg);

/*
 * Do fn(disk, key, arg) for each of the nkeys keys of call c (borrowed
 * from its request, as is arg) off the loop, then done(c, result, arg) on
 * the loop thread, which replies. No key answers INVALID_ARGUMENT ("RPC
 * names no key", rpc the method's name) and nkid without a disk cache
 * FAILED_PRECONDITION; done is not called then.
 */
void	rpc_cache_keys_async(struct rpc_call *c, const char *rpc, char **keys,
	    size_t nkeys, rpc_cache_keys_fn fn, rpc_cache_keys_done_cb done,
	    void *arg);

#endif /* NKID_RPC_CACHE_KEYS_H */
