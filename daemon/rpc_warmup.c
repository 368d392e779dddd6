/* rpc_warmup.c: Warmup, every kernel of a manifest through the compile path at once (compiles bounded by cache.compile_workers). */
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/backend.h"
#include "daemon/dispatch.h"
#include "daemon/dispatch_error.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/xmalloc.h"

/* Most items one Warmup request may carry. */
#define RPC_WARMUP_MAX_ITEMS	4096

struct rpc_warmup;

struct rpc_warmup_item {
	struct rpc_warmup	*w;
	Nkid__V1__WarmupResult	 res;
};

struct rpc_warmup {
	struct rpc_call		*c;
	Nkid__V1__WarmupReply	 r;		/* counts, results */
	struct rpc_warmup_item	*items;		/* r.results[i]: their res */
	size_t			 n;
	size_t			 pending;
};

static void
rpc_warmup_reply(struct rpc_call *c, struct rpc_warmup *w)
{
	size_t	i;

	rpc_reply(c, &w->r.base);
	for (i = 0; i < w->n; i++) {
		free(w->items[i].res.neff_key);
		free(w->items[i].res.message);
	}
	free(w->items);
	free(w->r.results);
	free(w);
}

/* One item done: its outcome, then the reply once all are. */
static void
rpc_warmup_item_done(struct rpc_warmup_item *it, const char *key,
    const char *failure, const struct kcache_result *r)
{
	struct rpc_warmup	*w = it->w;
	struct rpc_call		*c = w->c;

	it->res.neff_key = xstrdup(key);
	if (failure != NULL) {
		it->res.state = (char *)"failed";
		it->res.message = xstrdup(failure);
		w->r.failed++;
	} else {
		it->res.message = xstrdup("");
		if (r->cache_hit) {
			it->res.state = (char *)"cached";
			w->r.cached++;
		} else {
			it->res.state = (char *)"compiled";
			w->r.compiled++;
		}
		kcache_entry_unref(c->d->kcache, r->e);
	}
	if (--w->pending == 0)
		rpc_warmup_reply(c, w);
}

static void
rpc_warmup_done_cb(void *arg, const struct kcache_result *r)
{
	char	msg[BACKEND_DIAG_LEN + 256];

	if (r->e == NULL)
		dispatch_kcache_error(r, msg, sizeof msg);
	rpc_warmup_item_done(arg, r->key, r->e == NULL ? msg : NULL, r);
}

static void
rpc_warmup(struct rpc_call *c)
{
	const Nkid__V1__WarmupRequest	*req = (const void *)c->req;
	struct kcache_request		 rq;
	struct rpc_warmup		*w;
	grpc_status_code		 code;
	char				 msg[512];
	size_t				 i;

	if (req->n_items == 0 || req->n_items > RPC_WARMUP_MAX_ITEMS) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "Warmup takes 1 to "
		    "%d items, %zu given", RPC_WARMUP_MAX_ITEMS, req->n_items);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->c = c;
	w->n = req->n_items;
	w->items = xcalloc(w->n, sizeof *w->items);
	nkid__v1__warmup_reply__init(&w->r);
	w->r.n_results = w->n;
	w->r.results = xcalloc(w->n, sizeof *w->r.results);
	/* One extra count so that no reply leaves before the loop ends. */
	w->pending = w->n + 1;
	for (i = 0; i < w->n; i++) {
		nkid__v1__warmup_result__init(&w->items[i].res);
		w->items[i].w = w;
		w->r.results[i] = &w->items[i].res;
		w->items[i].res.kernel = (char *)kernel_ref_name(
		    req->items[i]->ref);
	}
	for (i = 0; i < w->n; i++) {
		if (kernel_request_init(c->d, "Warmup", req->items[i]->ref,
		    &rq, &code, msg, sizeof msg) != 0) {
			rpc_warmup_item_done(&w->items[i], "", msg, NULL);
			continue;
		}
		kernel_resolve(c, &rq, rpc_warmup_done_cb, &w->items[i]);
	}
	if (--w->pending == 0)
		rpc_warmup_reply(c, w);
}

const struct rpc_method rpc_warmup_method = {
	DISPATCH_METHOD_NAME("Warmup"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_KERNEL, .handler = rpc_warmup,
};
