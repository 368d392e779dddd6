/* rpc_cache_pin.c: CachePin, pin entries (never evicted: a deployment set) or unpin them, off the loop. */
#include "nkid.pb-c.h"

#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/rpc_cache.h"

static int
rpc_cache_pin_key_cb(struct cache *disk, const char *key, void *arg)
{
	const Nkid__V1__CachePinRequest	*req = arg;

	return (cache_pin(disk, key, !req->unpin));
}

static const struct rpc_cache_keys_rpc rpc_cache_pin_keys = {
	.fn = rpc_cache_pin_key_cb,
	.count = "changed",
};

static void
rpc_cache_pin(struct rpc_call *c)
{
	const Nkid__V1__CachePinRequest	*req = (const void *)c->req;

	/* Pinning protects an entry; unpinning exposes another's. */
	if (req->unpin && rpc_admin_check(c, "unpin cache entries") != 0)
		return;
	rpc_cache_keys_async(c, &rpc_cache_pin_keys, req->keys, req->n_keys,
	    (void *)req);
}

const struct rpc_method rpc_cache_pin_method = {
	DISPATCH_METHOD_NAME("CachePin"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_pin,
};
