/* rpc_cache_remove.c: CacheRemove, drop entries by key (off the loop), and their loaded kernels once unused. */
#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/rpc_cache.h"

static int
rpc_cache_remove_key_cb(struct cache *disk, const char *key, void *arg)
{
	return (cache_remove(disk, key));
}

static void
rpc_cache_remove_done_cb(struct rpc_call *c,
    const struct rpc_cache_keys_result *kr, void *arg)
{
	Nkid__V1__CacheRemoveReply	 r = NKID__V1__CACHE_REMOVE_REPLY__INIT;
	size_t				 i;

	for (i = 0; i < kr->nkeys; i++)
		kcache_forget(c->d->kcache, kr->keys[i]);
	r.removed = kr->ndone;
	r.n_missing = kr->nmissing;
	r.missing = kr->missing;
	rpc_reply(c, &r.base);
}

static void
rpc_cache_remove(struct rpc_call *c)
{
	const Nkid__V1__CacheRemoveRequest	*req = (const void *)c->req;

	if (rpc_admin_check(c, "remove cache entries") != 0)
		return;
	rpc_cache_keys_async(c, "CacheRemove", req->keys, req->n_keys,
	    rpc_cache_remove_key_cb, rpc_cache_remove_done_cb, NULL);
}

const struct rpc_method rpc_cache_remove_method = {
	DISPATCH_METHOD_NAME("CacheRemove"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_remove,
};
