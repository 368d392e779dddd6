/* rpc_cache_pull.c: CachePull, kernels named by their IR digest pulled from the fleet's remote tier into the local cache, verified first, many at a time. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kcache_remote.h"
#include "daemon/rpc_cache.h"
#include "daemon/xmalloc.h"

/* Pulls in flight at once: enough to keep the connection busy. */
#define RPC_CACHE_PULL_WINDOW	32

struct rpc_cache_pull {
	struct rpc_call			 *c;
	struct kcache_remote		 *remote;
	Nkid__V1__CachePullReply	  r;		/* counts, results */
	Nkid__V1__CachePullResult	 *res;		/* r.results[i] */
	char				(*keys)[KCACHE_KEY_LEN + 1];
	size_t				  n;
	size_t				  next;
	unsigned			  inflight;
};

struct rpc_cache_pull_item {
	struct rpc_cache_pull		*p;
	Nkid__V1__CachePullResult	*res;
	const char			*key;
	struct cache			*disk;
	int				 present;
	int				 store_rc;
	size_t				 len;
};

static void	rpc_cache_pull_pump(struct rpc_cache_pull *);

static void
rpc_cache_pull_reply(struct rpc_cache_pull *p)
{
	size_t	i;

	rpc_reply(p->c, &p->r.base);
	for (i = 0; i < p->n; i++)
		if (p->res[i].message != protobuf_c_empty_string)
			free(p->res[i].message);
	free(p->keys);
	free(p->res);
	free(p->r.results);
	free(p);
}

/* One item ended in state (a static string), with a message. */
static void	rpc_cache_pull_item_end(struct rpc_cache_pull_item *,
		    const char *, const char *, ...)
		    __attribute__((format(printf, 3, 4)));

static void
rpc_cache_pull_item_end(struct rpc_cache_pull_item *it, const char *state,
    const char *fmt, ...)
{
	struct rpc_cache_pull	*p = it->p;
	va_list			 ap;
	char			 msg[512] = "";

	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
	}
	it->res->state = (char *)state;
	if (msg[0] != '\0')
		it->res->message = xstrdup(msg);
	if (strcmp(state, "pulled") == 0) {
		p->r.pulled++;
		p->r.bytes += it->len;
	} else if (strcmp(state, "present") == 0)
		p->r.present++;
	else if (strcmp(state, "missing") == 0)
		p->r.missing++;
	else
		p->r.failed++;
	free(it);
	p->inflight--;
	rpc_cache_pull_pump(p);
}

/* Off the loop: a verified entry, stored here as it came. */
static int
rpc_cache_pull_accept_cb(void *arg, struct cache_entry *ce)
{
	struct rpc_cache_pull_item	*it = arg;

	it->len = ce->len;
	/* Pulled on the caller's request: the caller's. */
	ce->owner = (int64_t)it->p->c->id.uid;
	it->store_rc = cache_put(it->disk, ce);
	return (it->store_rc == 0 ? 0 : -1);
}

static void
rpc_cache_pull_done_cb(void *arg, int outcome, int err,
    struct kcache_remote_lock *lk)
{
	struct rpc_cache_pull_item	*it = arg;

	if (outcome == KCACHE_REMOTE_TAKEN)
		rpc_cache_pull_item_end(it, "pulled", NULL);
	else if (err == KCACHE_REMOTE_ENOENT)
		rpc_cache_pull_item_end(it, "missing", NULL);
	else if (err == KCACHE_REMOTE_EREJECT || err == KCACHE_REMOTE_ETOOBIG)
		rpc_cache_pull_item_end(it, "rejected", "%s (nkid's log says "
		    "why)", kcache_remote_strerror(err));
	else if (err == 0 && it->store_rc != 0)
		rpc_cache_pull_item_end(it, "failed", "cannot store it: %s",
		    cache_strerror(it->store_rc));
	else
		rpc_cache_pull_item_end(it, "failed", "%s",
		    kcache_remote_strerror(err != 0 ? err : KCACHE_REMOTE_EIO));
}

/* Off the loop: is it here already? */
static void
rpc_cache_pull_look_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_pull_item	*it = arg;

	it->disk = disk;
	it->present = disk != NULL && cache_get(disk, it->key, 0, NULL) == 0;
}

static void
rpc_cache_pull_look_done_cb(void *arg)
{
	struct rpc_cache_pull_item	*it = arg;
	int				 err;

	if (it->present) {
		rpc_cache_pull_item_end(it, "present", NULL);
		return;
	}
	if (it->disk == NULL) {
		rpc_cache_pull_item_end(it, "failed", RPC_CACHE_NODISK);
		return;
	}
	if ((err = kcache_remote_resolve(it->p->remote, it->key,
	    KCACHE_REMOTE_PULL_ONLY, rpc_cache_pull_accept_cb,
	    rpc_cache_pull_done_cb, it)) != 0)
		rpc_cache_pull_item_end(it, "failed", "%s",
		    kcache_remote_strerror(err));
}

static void
rpc_cache_pull_pump(struct rpc_cache_pull *p)
{
	struct rpc_cache_pull_item	*it;
	struct kcache			*kc = p->c->d->kcache;

	while (p->inflight < RPC_CACHE_PULL_WINDOW && p->next < p->n &&
	    !p->c->cancelled) {
		it = xcalloc(1, sizeof *it);
		it->p = p;
		it->res = &p->res[p->next];
		it->key = p->keys[p->next];
		p->next++;
		p->inflight++;
		if (kcache_loaded(kc, it->key) != NULL) {
			rpc_cache_pull_item_end(it, "present", NULL);
			continue;
		}
		kcache_async(kc, rpc_cache_pull_look_cb,
		    rpc_cache_pull_look_done_cb, it);
	}
	if (p->inflight == 0 && (p->next == p->n || p->c->cancelled))
		rpc_cache_pull_reply(p);
}

static void
rpc_cache_pull(struct rpc_call *c)
{
	const Nkid__V1__CachePullRequest	*req = (const void *)c->req;
	const Nkid__V1__CachePullItem		*in;
	struct daemon				*d = c->d;
	struct rpc_cache_pull			*p;
	size_t					 i;

	if (d->remote == NULL) {
		rpc_fail(c, GRPC_STATUS_FAILED_PRECONDITION, "CachePull needs "
		    "the remote tier (remote.mode is 'off')");
		return;
	}
	for (i = 0; i < req->n_items; i++) {
		in = req->items[i];
		if (!cache_key_valid(in->ir_digest) ||
		    strcmp(in->format, backend_format(d->backend)) != 0 ||
		    !backend_name_valid(in->target) ||
		    !backend_name_valid(in->options) ||
		    !backend_name_valid(in->name)) {
			rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "CachePull "
			    "item %zu: needs an ir_digest of 64 lower-case hex "
			    "digits, the format of backend '%s' ('%s') and "
			    "UTF-8 name, target and options", i,
			    backend_name(d->backend), backend_format(d->backend));
			return;
		}
	}
	p = xcalloc(1, sizeof *p);
	p->c = c;
	p->remote = d->remote;
	p->n = req->n_items;
	nkid__v1__cache_pull_reply__init(&p->r);
	p->r.n_results = p->n;
	p->r.results = xcalloc(p->n + 1, sizeof *p->r.results);
	p->res = xcalloc(p->n + 1, sizeof *p->res);
	p->keys = xcalloc(p->n + 1, sizeof *p->keys);
	for (i = 0; i < p->n; i++) {
		in = req->items[i];
		nkid__v1__cache_pull_result__init(&p->res[i]);
		p->res[i].name = in->name;
		backend_cache_key(d->backend, in->format, in->ir_digest,
		    in->target, in->options, p->keys[i]);
		p->res[i].neff_key = p->keys[i];
		p->res[i].state = (char *)"failed";
		p->r.results[i] = &p->res[i];
	}
	rpc_cache_pull_pump(p);
}

const struct rpc_method rpc_cache_pull_method = {
	DISPATCH_METHOD_NAME("CachePull"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_pull,
};
