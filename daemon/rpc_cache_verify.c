/* rpc_cache_verify.c: CacheVerify, every entry (or some keys, or a manifest's kernels) read off the loop and checked against its digest by libnkicache (cache_verify_run), with the signatures its compiled images tell. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/log.h"
#include "daemon/rpc_cache.h"
#include "daemon/xmalloc.h"
#include "proto/wire.h"

/* Most keys and kernels one request may name. */
#define RPC_CACHE_VERIFY_MAX	100000

/* One CacheVerify: the entries to check (cache_verify.c checks them off
 * the loop) and, made off the loop too, the results of the reply. */
struct rpc_cache_verify {
	struct rpc_call			 *c;	/* read: c->cancelled */
	struct cache_verify		  v;
	int				  flags;	/* CACHE_VERIFY_* */
	int				  error;	/* cache_verify_run's */
	Nkid__V1__CacheVerifyResult	**results;	/* v.n of them */
};

static void
rpc_cache_verify_work_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_verify	*x = arg;
	size_t			 i;

	x->error = cache_verify_run(disk, &x->v, x->flags, &x->c->cancelled);
	if (x->error != 0)
		return;
	x->results = xcalloc(x->v.n + 1, sizeof *x->results);
	for (i = 0; i < x->v.n; i++)
		if ((x->results[i] = wire_cache_verify_result_new(
		    &x->v.items[i])) == NULL)
			fatal("out of memory copying the result of '%s'",
			    x->v.items[i].key);
}

static void
rpc_cache_verify_free(struct rpc_cache_verify *x)
{
	size_t	i;

	for (i = 0; x->results != NULL && i < x->v.n; i++)
		nkid__v1__cache_verify_result__free_unpacked(x->results[i],
		    NULL);
	free(x->results);
	cache_verify_release(&x->v);
	free(x);
}

static void
rpc_cache_verify_done_cb(void *arg)
{
	struct rpc_cache_verify		 *x = arg;
	struct rpc_call			 *c = x->c;
	Nkid__V1__CacheVerifyReply r = NKID__V1__CACHE_VERIFY_REPLY__INIT;

	if (x->error != 0) {
		rpc_fail(c, GRPC_STATUS_INTERNAL, "cannot list the cache: %s",
		    cache_strerror(x->error));
		rpc_cache_verify_free(x);
		return;
	}
	if (c->cancelled) {
		rpc_fail(c, GRPC_STATUS_CANCELLED, "CacheVerify cancelled");
		rpc_cache_verify_free(x);
		return;
	}
	r.n_results = x->v.n;
	r.results = x->results;
	rpc_reply(c, &r.base);
	rpc_cache_verify_free(x);
}

/*
 * Add the kernel a Lookup-style request names, with its key derived as a
 * compile would. Returns 0, or -1 after failing c (INVALID_ARGUMENT).
 */
static int
rpc_cache_verify_kernel(struct rpc_call *c, struct rpc_cache_verify *x,
    const Nkid__V1__LookupRequest *k, size_t i)
{
	struct daemon	*d = c->d;
	char		 key[KCACHE_KEY_LEN + 1];

	if (!cache_key_valid(k->ir_digest) || !backend_name_valid(k->target) ||
	    !backend_name_valid(k->options)) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "CacheVerify: kernel "
		    "%zu needs an ir_digest of 64 lower-case hex digits and a "
		    "valid target and options", i + 1);
		return (-1);
	}
	if (strcmp(k->format, backend_format(d->backend)) != 0) {
		/* Never compiled here: it cannot be in this cache. */
		cache_verify_set(cache_verify_add(&x->v, "", NULL),
		    CACHE_VERIFY_MISSING, "format '%s' is not the %s backend's "
		    "'%s'", k->format, backend_name(d->backend),
		    backend_format(d->backend));
		return (0);
	}
	backend_cache_key(d->backend, k->format, k->ir_digest, k->target,
	    k->options, key);
	/* Named by the caller's own IR digest: shown whoever stored it. */
	cache_verify_add(&x->v, key, NULL)->proven = 1;
	return (0);
}

static void
rpc_cache_verify(struct rpc_call *c)
{
	const Nkid__V1__CacheVerifyRequest	*req = (const void *)c->req;
	struct rpc_cache_verify			*x;
	size_t					 i;

	if (kcache_disk(c->d->kcache) == NULL) {
		rpc_fail(c, GRPC_STATUS_FAILED_PRECONDITION, "CacheVerify: "
		    "nkid runs without a cache directory");
		return;
	}
	if (req->n_keys + req->n_kernels > RPC_CACHE_VERIFY_MAX) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "CacheVerify: %zu "
		    "keys and kernels exceed the limit of %d",
		    req->n_keys + req->n_kernels, RPC_CACHE_VERIFY_MAX);
		return;
	}
	x = xcalloc(1, sizeof *x);
	x->c = c;
	x->v.viewer = kernel_viewer(c);
	x->v.filter = x->v.viewer != CACHE_VIEW_ALL;
	if (req->signatures)
		x->flags |= CACHE_VERIFY_SIGNATURES;
	if (req->n_keys == 0 && req->n_kernels == 0)
		x->flags |= CACHE_VERIFY_ALL;
	for (i = 0; i < req->n_keys; i++) {
		if (!cache_key_valid(req->keys[i])) {
			rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
			    "CacheVerify: '%s' is not a key (64 lower-case hex "
			    "digits)", req->keys[i]);
			rpc_cache_verify_free(x);
			return;
		}
		cache_verify_add(&x->v, req->keys[i], NULL);
	}
	for (i = 0; i < req->n_kernels; i++)
		if (rpc_cache_verify_kernel(c, x, req->kernels[i], i) != 0) {
			rpc_cache_verify_free(x);
			return;
		}
	kcache_async(c->d->kcache, rpc_cache_verify_work_cb,
	    rpc_cache_verify_done_cb, x);
}

const struct rpc_method rpc_cache_verify_method = {
	DISPATCH_METHOD_NAME("CacheVerify"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_verify,
};
