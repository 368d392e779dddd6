/* rpc_cache.h: what the cache RPCs share: work on the disk cache off the loop, refused when nkid has none, and every key of a per-key RPC (CacheRemove) done there with the outcome gathered and replied on the loop. */
#ifndef NKID_RPC_CACHE_H
#define NKID_RPC_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct cache;
struct daemon;
struct rpc_call;

/* What a user reads when nkid runs without its disk cache. */
#define RPC_CACHE_NODISK	"nkid runs without a persistent cache (see its log)"

/*
 * kcache_async(work, done, arg) on call c's kernel cache: work(disk, arg)
 * off the loop (disk never NULL), then done(arg) on the loop thread. When
 * nkid runs without a disk cache, answers c FAILED_PRECONDITION
 * (RPC_CACHE_NODISK, after "RPC: " unless rpc is NULL) and returns -1:
 * nothing is queued and arg is the caller's to free.
 */
int	rpc_cache_async(struct rpc_call *c, const char *rpc,
	    void (*work)(struct cache *disk, void *arg), void (*done)(void *arg),
	    void *arg);

/*
 * For a streaming call whose state x goes with it: x becomes c->job, freed
 * by release(x) when the transport releases the call, then
 * rpc_cache_async(c, rpc, work, done, x). Refused without a disk cache,
 * x still goes with the call.
 */
void	rpc_cache_stream_async(struct rpc_call *c, const char *rpc, void *x,
	    void (*release)(void *x), void (*work)(struct cache *disk, void *x),
	    void (*done)(void *x));

/*
 * A per-key RPC (CacheRemove), declared in its file: what is done to each
 * key, and its typed reply: how many keys were done and the others, in
 * request order.
 */
struct rpc_cache_keys_rpc {
	/* Off the loop, for one key: 0 when done, else the key has no
	 * entry. */
	int		(*fn)(struct cache *disk, const char *key, void *arg);
	/* On the loop thread, for every key once fn did them all, before
	 * the reply. May be NULL. */
	void		(*each)(struct rpc_call *c, const char *key);
	/* On the loop thread: reply to c (missing is borrowed). */
	void		(*reply)(struct rpc_call *c, uint32_t ndone,
			    char **missing, size_t nmissing);
};
/*
 * Do k->fn(disk, key, arg) for each of the nkeys keys of call c (borrowed
 * from its request, as is arg) off the loop, then k->each on the loop
 * thread and reply. No key answers INVALID_ARGUMENT ("METHOD names no
 * key") and nkid without a disk cache FAILED_PRECONDITION (as
 * rpc_cache_async, with no prefix).
 */
void	rpc_cache_keys_async(struct rpc_call *c,
	    const struct rpc_cache_keys_rpc *k, char **keys, size_t nkeys,
	    void *arg);

#endif /* NKID_RPC_CACHE_H */
