/* rpc_cache_push.c: CachePush, entries of the local cache pushed to the fleet's remote tier, a few at a time, read and signed off the loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kcache_remote.h"
#include "daemon/rpc_cache.h"
#include "daemon/xmalloc.h"

/* Entries read, signed or being written at once (each up to
 * remote.max_entry_bytes in memory). */
#define RPC_CACHE_PUSH_WINDOW	4

struct rpc_cache_push {
	struct rpc_call		 *c;
	struct kcache_remote	 *remote;
	char			**keys;		/* malloc'd */
	size_t			  nkeys;
	size_t			  next;
	unsigned		  inflight;
	Nkid__V1__CachePushReply r;	/* counts; missing: into keys */
};

struct rpc_cache_push_item {
	struct rpc_cache_push	*p;
	const char		*key;
	void			*value;
	size_t			 len;
	int			 failed_entry;
	int			 missing;
};

static void	rpc_cache_push_pump(struct rpc_cache_push *);

static void
rpc_cache_push_free(struct rpc_cache_push *p)
{
	size_t	i;

	for (i = 0; i < p->nkeys; i++)
		free(p->keys[i]);
	free(p->keys);
	free(p->r.missing);
	free(p);
}

static void
rpc_cache_push_reply(struct rpc_cache_push *p)
{
	rpc_reply(p->c, &p->r.base);
	rpc_cache_push_free(p);
}

/* One item ended: the next, or the reply once all are. */
static void
rpc_cache_push_item_end(struct rpc_cache_push_item *it)
{
	struct rpc_cache_push	*p = it->p;

	free(it->value);
	free(it);
	p->inflight--;
	rpc_cache_push_pump(p);
}

static void
rpc_cache_push_sent_cb(void *arg, int err)
{
	struct rpc_cache_push_item	*it = arg;

	if (err == 0) {
		it->p->r.pushed++;
		it->p->r.bytes += it->len;
	} else
		it->p->r.failed++;
	it->value = NULL;
	rpc_cache_push_item_end(it);
}

/* Off the loop: read the entry (any compiler: its key says which) and
 * sign it. */
static void
rpc_cache_push_read_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_push_item	*it = arg;
	struct cache_entry		 ce;
	int				 rc;

	if (disk == NULL) {
		it->missing = 1;
		return;
	}
	rc = cache_get(disk, it->key, CACHE_GET_DATA | CACHE_GET_ANY, &ce);
	if (rc == CACHE_ENOENT) {
		it->missing = 1;
		return;
	}
	if (rc != 0 && rc != CACHE_EFAILED)
		return;
	it->failed_entry = ce.failed;
	kcache_remote_encode(it->p->remote, &ce, &it->value, &it->len);
	cache_entry_release(&ce);
}

static void
rpc_cache_push_read_done_cb(void *arg)
{
	struct rpc_cache_push_item	*it = arg;
	struct rpc_cache_push		*p = it->p;
	void				*v = it->value;

	if (it->missing) {
		p->r.missing[p->r.n_missing++] = (char *)it->key;
		rpc_cache_push_item_end(it);
		return;
	}
	if (v == NULL) {
		/* Unreadable, or larger than remote.max_entry_bytes. */
		p->r.failed++;
		rpc_cache_push_item_end(it);
		return;
	}
	it->value = NULL;
	if (kcache_remote_push(p->remote, it->key, v, it->len, it->failed_entry,
	    rpc_cache_push_sent_cb, it) != 0) {
		p->r.failed++;
		rpc_cache_push_item_end(it);
	}
}

static void
rpc_cache_push_pump(struct rpc_cache_push *p)
{
	struct rpc_cache_push_item	*it;

	while (p->inflight < RPC_CACHE_PUSH_WINDOW && p->next < p->nkeys &&
	    !p->c->cancelled) {
		it = xcalloc(1, sizeof *it);
		it->p = p;
		it->key = p->keys[p->next++];
		p->inflight++;
		kcache_async(p->c->d->kcache, rpc_cache_push_read_cb,
		    rpc_cache_push_read_done_cb, it);
	}
	if (p->inflight == 0)
		rpc_cache_push_reply(p);
}

/* The keys are known (requested or listed): room for the missing ones,
 * then the first items. */
static void
rpc_cache_push_start_cb(void *arg)
{
	struct rpc_cache_push	*p = arg;

	p->r.missing = xcalloc(p->nkeys + 1, sizeof *p->r.missing);
	rpc_cache_push_pump(p);
}

struct rpc_cache_push_list {
	struct rpc_cache_push	*p;
	const char		*backend;
	const char		*compiler;
	size_t			 cap;
};

static int
rpc_cache_push_list_cb(void *arg, const struct cache_entry *e)
{
	struct rpc_cache_push_list	*l = arg;
	struct rpc_cache_push		*p = l->p;

	if (strcmp(e->backend, l->backend) != 0 ||
	    strcmp(e->compiler_version, l->compiler) != 0)
		return (0);
	if (p->nkeys == l->cap) {
		l->cap = l->cap == 0 ? 64 : l->cap * 2;
		p->keys = xreallocarray(p->keys, l->cap, sizeof *p->keys);
	}
	p->keys[p->nkeys++] = xstrdup(e->key);
	return (0);
}

/* Off the loop: every entry nkid serves. */
static void
rpc_cache_push_list_work_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_push_list	l;

	memset(&l, 0, sizeof l);
	l.p = arg;
	l.backend = cache_backend(disk);
	l.compiler = cache_compiler_version(disk);
	(void)cache_list(disk, NULL, 0, rpc_cache_push_list_cb, &l);
}

static void
rpc_cache_push(struct rpc_call *c)
{
	const Nkid__V1__CachePushRequest	*req = (const void *)c->req;
	struct daemon				*d = c->d;
	struct rpc_cache_push			*p;
	size_t					 i;

	if (rpc_admin_check(c, "push cache entries to the fleet") != 0)
		return;
	if (d->remote == NULL || !kcache_remote_writable(d->remote)) {
		rpc_fail(c, GRPC_STATUS_FAILED_PRECONDITION, "CachePush "
		    "needs the remote tier in mode 'read-write' (remote.mode "
		    "is '%s')", d->cfg.remote_mode);
		return;
	}
	for (i = 0; i < req->n_keys; i++) {
		if (!cache_key_valid(req->keys[i])) {
			rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "'%.80s' is "
			    "not a full NEFF key (64 lower-case hex digits)",
			    req->keys[i]);
			return;
		}
	}
	p = xcalloc(1, sizeof *p);
	p->c = c;
	p->remote = d->remote;
	nkid__v1__cache_push_reply__init(&p->r);
	if (req->n_keys == 0) {
		if (rpc_cache_async(c, NULL, rpc_cache_push_list_work_cb,
		    rpc_cache_push_start_cb, p) != 0)
			rpc_cache_push_free(p);
		return;
	}
	p->keys = xcalloc(req->n_keys, sizeof *p->keys);
	for (i = 0; i < req->n_keys; i++)
		p->keys[p->nkeys++] = xstrdup(req->keys[i]);
	rpc_cache_push_start_cb(p);
}

const struct rpc_method rpc_cache_push_method = {
	DISPATCH_METHOD_NAME("CachePush"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_push,
};
