/* rpc_cache_list.c: CacheList, entries by key prefix, most recently used first, read off the loop. */
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/log.h"
#include "daemon/rpc_cache.h"
#include "daemon/xmalloc.h"
#include "proto/wire.h"

/* Most entries one reply carries when the request sets no limit. */
#define RPC_CACHE_LIST_MAX	10000

struct rpc_cache_list {
	struct rpc_call			*c;
	char				*prefix;
	unsigned			 limit;
	int64_t				 viewer;	/* kernel_viewer's */
	Nkid__V1__CacheListReply	 r;	/* the entries, as listed */
	int				 error;
};

static int
rpc_cache_list_entry_cb(void *arg, const struct cache_entry *e)
{
	struct rpc_cache_list	*l = arg;
	Nkid__V1__CacheEntry	*m;

	if (!cache_entry_visible(e, l->viewer))
		return (0);
	if ((m = wire_cache_entry_new(e)) == NULL)
		fatal("out of memory copying cache entry '%s'", e->key);
	l->r.entries = xreallocarray(l->r.entries, l->r.n_entries + 1,
	    sizeof *l->r.entries);
	l->r.entries[l->r.n_entries++] = m;
	return (l->r.n_entries >= l->limit);
}

static void
rpc_cache_list_work_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_list	*l = arg;

	if (disk == NULL)
		return;
	/* The callback counts to the limit: it skips what the caller may
	 * not see. */
	l->error = cache_list(disk, l->prefix[0] != '\0' ? l->prefix : NULL,
	    l->viewer == CACHE_VIEW_ALL ? l->limit : 0,
	    rpc_cache_list_entry_cb, l);
}

static void
rpc_cache_list_done_cb(void *arg)
{
	struct rpc_cache_list	*l = arg;
	struct rpc_call		*c = l->c;
	size_t			 i;

	if (l->error != 0)
		rpc_fail(c, l->error == CACHE_EINVAL ?
		    GRPC_STATUS_INVALID_ARGUMENT : GRPC_STATUS_INTERNAL,
		    "cannot list the cache: %s", cache_strerror(l->error));
	else
		rpc_reply(c, &l->r.base);
	for (i = 0; i < l->r.n_entries; i++)
		nkid__v1__cache_entry__free_unpacked(l->r.entries[i], NULL);
	free(l->r.entries);
	free(l->prefix);
	free(l);
}

static void
rpc_cache_list(struct rpc_call *c)
{
	const Nkid__V1__CacheListRequest	*req = (const void *)c->req;
	struct rpc_cache_list			*l;

	l = xcalloc(1, sizeof *l);
	l->c = c;
	nkid__v1__cache_list_reply__init(&l->r);
	l->prefix = xstrdup(req->prefix);
	l->viewer = kernel_viewer(c);
	l->limit = req->limit > 0 && req->limit < RPC_CACHE_LIST_MAX ?
	    req->limit : RPC_CACHE_LIST_MAX;
	kcache_async(c->d->kcache, rpc_cache_list_work_cb,
	    rpc_cache_list_done_cb, l);
}

const struct rpc_method rpc_cache_list_method = {
	DISPATCH_METHOD_NAME("CacheList"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_list,
};
