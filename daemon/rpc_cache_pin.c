/* rpc_cache_pin.c: CachePin, pin entries (never evicted: a deployment set) within the caller's quota of pinned bytes, or unpin them (administrators), off the loop. */
#include <stdint.h>
#include <stdlib.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/rpc_cache.h"
#include "daemon/xmalloc.h"

/* Nonzero if viewer may not see key's entry (which may not exist). */
static int
rpc_cache_pin_hidden(struct cache *disk, int64_t viewer, const char *key)
{
	struct cache_entry	e;
	int			r, hidden = 0;

	if (viewer == CACHE_VIEW_ALL)
		return (0);
	r = cache_get(disk, key, CACHE_GET_ANY, &e);
	if (r == 0 || r == CACHE_EFAILED || r == CACHE_ESTALE) {
		hidden = !cache_entry_visible(&e, viewer);
		cache_entry_release(&e);
	}
	return (hidden);
}

/* One CachePin: per key its result, and what the quota said. */
struct rpc_cache_pin {
	struct rpc_call			*c;
	const Nkid__V1__CachePinRequest	*req;
	int64_t				 uid;	/* -1: admin */
	int64_t				 viewer;	/* kernel_viewer */
	uint64_t			 quota;
	int				*rc;
	size_t				 over;	/* first key over */
	uint64_t			 used;	/* with it */
};

static void
rpc_cache_pin_work_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_pin	*p = arg;
	uint64_t		 used;
	size_t			 i;

	p->over = p->req->n_keys;
	for (i = 0; i < p->req->n_keys; i++) {
		/* After one over the quota, the rest are not tried. */
		if (p->over < p->req->n_keys) {
			p->rc[i] = CACHE_EQUOTA;
			continue;
		}
		/* Another's entry is missing, as one nkid lacks. */
		if (rpc_cache_pin_hidden(disk, p->viewer, p->req->keys[i])) {
			p->rc[i] = CACHE_ENOENT;
			continue;
		}
		p->rc[i] = cache_pin_by(disk, p->req->keys[i], !p->req->unpin,
		    p->uid, p->quota, &used);
		if (p->rc[i] == CACHE_EQUOTA) {
			p->over = i;
			p->used = used;
		}
	}
}

static void
rpc_cache_pin_done_cb(void *arg)
{
	struct rpc_cache_pin	*p = arg;
	Nkid__V1__CachePinReply	 r = NKID__V1__CACHE_PIN_REPLY__INIT;
	size_t			 i, done = 0;

	if (p->over < p->req->n_keys) {
		for (i = 0; i < p->over; i++)
			done += p->rc[i] == 0;
		rpc_fail(p->c, GRPC_STATUS_RESOURCE_EXHAUSTED, "cannot pin "
		    "'%s': uid %lld would hold %llu pinned bytes, more than "
		    "its quota of %llu (cache.max_pinned_bytes_per_uid; "
		    "administrators have none); %zu of the keys before it "
		    "pinned, none after", p->req->keys[p->over],
		    (long long)p->uid, (unsigned long long)p->used,
		    (unsigned long long)p->quota, done);
		goto out;
	}
	r.missing = xcalloc(p->req->n_keys, sizeof *r.missing);
	for (i = 0; i < p->req->n_keys; i++)
		if (p->rc[i] != 0)
			r.missing[r.n_missing++] = p->req->keys[i];
	r.changed = (uint32_t)(p->req->n_keys - r.n_missing);
	rpc_reply(p->c, &r.base);
	free(r.missing);
out:
	free(p->rc);
	free(p);
}

static void
rpc_cache_pin(struct rpc_call *c)
{
	const Nkid__V1__CachePinRequest	*req = (const void *)c->req;
	struct rpc_cache_pin		*p;

	/* Pinning protects an entry; unpinning exposes another's. */
	if (req->unpin && rpc_admin_check(c, "unpin cache entries") != 0)
		return;
	if (req->n_keys == 0) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "%s names no key",
		    c->m->name);
		return;
	}
	p = xcalloc(1, sizeof *p);
	p->c = c;
	p->req = req;
	p->rc = xcalloc(req->n_keys, sizeof *p->rc);
	/* Pins keep bytes from everyone else's kernels: a quota per uid,
	 * none for administrators. */
	p->uid = c->id.admin ? CACHE_PIN_ANYONE : (int64_t)c->id.uid;
	p->viewer = kernel_viewer(c);
	/* An administrator's pin may have shown an entry to everyone. */
	if (req->unpin)
		kernel_grants_clear(c->d);
	p->quota = c->id.admin ? UINT64_MAX : c->d->cfg.cache_pin_quota != 0 ?
	    c->d->cfg.cache_pin_quota : c->d->cfg.cache_max_bytes / 4;
	if (rpc_cache_async(c, NULL, rpc_cache_pin_work_cb,
	    rpc_cache_pin_done_cb, p) != 0) {
		free(p->rc);
		free(p);
	}
}

const struct rpc_method rpc_cache_pin_method = {
	DISPATCH_METHOD_NAME("CachePin"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_pin,
};
