/* rpc_cache.c: what the cache RPCs share: disk cache work off the loop, refused without a disk cache; the keys of CacheRemove done off the loop, the missing ones gathered and replied on it. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
	struct rpc_call			 *c;
	const struct rpc_cache_keys_rpc	 *k;
	char				**keys;	/* borrowed from the request */
	size_t				  n;
	int				 *rc;	/* per key */
	void				 *arg;
};

static void
rpc_cache_keys_work_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_keys	*ks = arg;
	size_t			 i;

	for (i = 0; i < ks->n; i++)
		ks->rc[i] = ks->k->fn(disk, ks->keys[i], ks->arg);
}

static void
rpc_cache_keys_done_cb(void *arg)
{
	struct rpc_cache_keys	*ks = arg;
	char			**missing;
	size_t			  i, nmissing = 0;

	for (i = 0; ks->k->each != NULL && i < ks->n; i++)
		ks->k->each(ks->c, ks->keys[i]);
	missing = xcalloc(ks->n, sizeof *missing);
	for (i = 0; i < ks->n; i++)
		if (ks->rc[i] != 0)
			missing[nmissing++] = ks->keys[i];
	ks->k->reply(ks->c, (uint32_t)(ks->n - nmissing), missing, nmissing);
	free(missing);
	free(ks->rc);
	free(ks);
}

void
rpc_cache_keys_async(struct rpc_call *c, const struct rpc_cache_keys_rpc *k,
    char **keys, size_t nkeys, void *arg)
{
	struct rpc_cache_keys	*ks;

	assert(k->fn != NULL && k->reply != NULL);
	if (nkeys == 0) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "%s names no key",
		    c->m->name);
		return;
	}
	ks = xcalloc(1, sizeof *ks);
	ks->c = c;
	ks->k = k;
	ks->keys = keys;
	ks->n = nkeys;
	ks->rc = xcalloc(nkeys, sizeof *ks->rc);
	ks->arg = arg;
	if (rpc_cache_async(c, NULL, rpc_cache_keys_work_cb,
	    rpc_cache_keys_done_cb, ks) != 0) {
		free(ks->rc);
		free(ks);
	}
}
