/* rpc_cache.c: what the cache RPCs share: disk cache work off the loop, refused without a disk cache; the keys of CachePin and CacheRemove done off the loop, the missing ones gathered on it. */
#include <assert.h>
#include <stdlib.h>

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/rpc_cache.h"
#include "daemon/xmalloc.h"

int
rpc_cache_async(struct rpc_call *c, const char *rpc,
    void (*work)(struct cache *disk, void *arg), void (*done)(void *arg),
    void *arg)
{
	if (kcache_disk(c->d->kcache) == NULL) {
		rpc_fail(c, GRPC_STATUS_FAILED_PRECONDITION, "%s%s"
		    RPC_CACHE_NODISK, rpc != NULL ? rpc : "",
		    rpc != NULL ? ": " : "");
		return (-1);
	}
	kcache_async(c->d->kcache, work, done, arg);
	return (0);
}

void
rpc_cache_stream_async(struct rpc_call *c, const char *rpc, void *x,
    void (*release)(void *), void (*work)(struct cache *, void *),
    void (*done)(void *))
{
	c->job = x;
	c->job_release = release;
	(void)rpc_cache_async(c, rpc, work, done, x);
}

struct rpc_cache_keys {
	struct rpc_call		 *c;
	char			**keys;		/* borrowed from the request */
	size_t			  n;
	int			 *rc;		/* per key */
	rpc_cache_keys_fn		  fn;
	rpc_cache_keys_done_cb	  done;
	void			 *arg;
};

static void
rpc_cache_keys_work_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_keys	*k = arg;
	size_t			 i;

	for (i = 0; i < k->n; i++)
		k->rc[i] = k->fn(disk, k->keys[i], k->arg);
}

static void
rpc_cache_keys_gather_cb(void *arg)
{
	struct rpc_cache_keys		*k = arg;
	struct rpc_call			*c = k->c;
	struct rpc_cache_keys_result	 r = { 0 };
	size_t				 i;

	r.keys = k->keys;
	r.nkeys = k->n;
	r.missing = xcalloc(k->n, sizeof *r.missing);
	for (i = 0; i < k->n; i++) {
		if (k->rc[i] == 0)
			r.ndone++;
		else
			r.missing[r.nmissing++] = k->keys[i];
	}
	k->done(c, &r, k->arg);
	free(r.missing);
	free(k->rc);
	free(k);
}

void
rpc_cache_keys_async(struct rpc_call *c, const char *rpc, char **keys,
    size_t nkeys, rpc_cache_keys_fn fn, rpc_cache_keys_done_cb done, void *arg)
{
	struct rpc_cache_keys	*k;

	assert(fn != NULL && done != NULL);
	if (nkeys == 0) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "%s names no key",
		    rpc);
		return;
	}
	k = xcalloc(1, sizeof *k);
	k->c = c;
	k->keys = keys;
	k->n = nkeys;
	k->rc = xcalloc(k->n, sizeof *k->rc);
	k->fn = fn;
	k->done = done;
	k->arg = arg;
	if (rpc_cache_async(c, NULL, rpc_cache_keys_work_cb,
	    rpc_cache_keys_gather_cb, k) != 0) {
		free(k->rc);
		free(k);
	}
}
