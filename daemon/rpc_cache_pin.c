/* rpc_cache_pin.c: CachePin, pin entries (never evicted: a deployment set) or unpin them, off the loop. */
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/xmalloc.h"

struct rpc_cache_pin {
	char	**keys;		/* borrowed from the request */
	size_t	  n;
	int	  unpin;
	int	 *rc;
	int	  nodisk;
};

static void
rpc_cache_pin_work_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_pin	*k = arg;
	size_t			 i;

	if (disk == NULL) {
		k->nodisk = 1;
		return;
	}
	for (i = 0; i < k->n; i++)
		k->rc[i] = cache_pin(disk, k->keys[i], !k->unpin);
}

static void
rpc_cache_pin_done_cb(struct rpc_call *c, void *arg)
{
	struct rpc_cache_pin	*k = arg;
	Nkid__V1__CachePinReply	 r = NKID__V1__CACHE_PIN_REPLY__INIT;
	size_t			 i;

	if (k->nodisk) {
		rpc_fail(c, GRPC_STATUS_FAILED_PRECONDITION, "nkid runs "
		    "without a persistent cache (see its log)");
		goto out;
	}
	r.missing = xcalloc(k->n, sizeof *r.missing);
	for (i = 0; i < k->n; i++) {
		if (k->rc[i] == 0)
			r.changed++;
		else
			r.missing[r.n_missing++] = k->keys[i];
	}
	rpc_reply(c, &r.base);
	free(r.missing);
out:
	free(k->rc);
	free(k);
}

static void
rpc_cache_pin(struct rpc_call *c)
{
	const Nkid__V1__CachePinRequest	*req = (const void *)c->req;
	struct rpc_cache_pin		*k;

	if (req->n_keys == 0) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "CachePin names no "
		    "key");
		return;
	}
	k = xcalloc(1, sizeof *k);
	k->keys = req->keys;
	k->n = req->n_keys;
	k->unpin = req->unpin;
	k->rc = xcalloc(k->n, sizeof *k->rc);
	kcache_async(c->d->kcache, c, rpc_cache_pin_work_cb,
	    rpc_cache_pin_done_cb, k);
}

const struct rpc_method rpc_cache_pin_method = {
	.name = "CachePin",
	.path = DISPATCH_SERVICE "CachePin",
	.kind = RPC_UNARY,
	.request = &nkid__v1__cache_pin_request__descriptor,
	.cap = CONFIG_CAP_CONTROL,
	.flags = RPC_F_ASYNC,
	.handler = rpc_cache_pin,
};
