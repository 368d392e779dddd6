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
rpc_cache_remove_forget_cb(struct rpc_call *c, const char *key)
{
	kcache_forget(c->d->kcache, key);
}

static void
rpc_cache_remove_reply_cb(struct rpc_call *c, uint32_t nremoved,
    char **missing, size_t nmissing)
{
	Nkid__V1__CacheRemoveReply	r = NKID__V1__CACHE_REMOVE_REPLY__INIT;

	r.removed = nremoved;
	r.missing = missing;
	r.n_missing = nmissing;
	rpc_reply(c, &r.base);
}

static const struct rpc_cache_keys_rpc rpc_cache_remove_keys = {
	.fn = rpc_cache_remove_key_cb,
	.each = rpc_cache_remove_forget_cb,
	.reply = rpc_cache_remove_reply_cb,
};

static void
rpc_cache_remove(struct rpc_call *c)
{
	const Nkid__V1__CacheRemoveRequest	*req = (const void *)c->req;

	if (rpc_admin_check(c, "remove cache entries") != 0)
		return;
	rpc_cache_keys_async(c, &rpc_cache_remove_keys, req->keys, req->n_keys,
	    NULL);
}

const struct rpc_method rpc_cache_remove_method = {
	DISPATCH_METHOD_NAME("CacheRemove"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_remove,
};
