/* rpc_cache_verify.c: CacheVerify, every entry (or some keys, or a manifest's kernels) read off the loop and checked against its digest, with the signatures its compiled images tell. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/xmalloc.h"
#include "sim/sim.h"

/* Most keys and kernels one request may name. */
#define RPC_CACHE_VERIFY_MAX	100000

/*
 * The entries to check, each as the result the reply carries, every string
 * of it malloc'd: kernel "" is unknown yet, state "" is to check.
 */
struct rpc_cache_verify {
	struct rpc_call			 *c;	/* read: c->cancelled */
	Nkid__V1__CacheVerifyResult	**v;
	size_t				  n;
	int				 all;	/* list the entries first */
	int				 signatures;
	int				 error;	/* of cache_list */
};

static void
rpc_cache_verify_add(struct rpc_cache_verify *x, const char *key,
    const char *kernel)
{
	Nkid__V1__CacheVerifyResult	*it;

	it = xmalloc(sizeof *it);
	nkid__v1__cache_verify_result__init(it);
	it->key = xstrdup(key);
	if (kernel != NULL && kernel[0] != '\0')
		it->kernel = xstrdup(kernel);
	x->v = xreallocarray(x->v, x->n + 1, sizeof *x->v);
	x->v[x->n++] = it;
}

static int
rpc_cache_verify_list_cb(void *arg, const struct cache_entry *e)
{
	rpc_cache_verify_add(arg, e->key, e->kernel);
	return (0);
}

/* The parameters of a cpu image as Tensors without data; none if the
 * image is not one. */
static void
rpc_cache_verify_signature(Nkid__V1__CacheVerifyResult *it, const void *img,
    size_t len)
{
	const struct sim_sig		*s;
	Nkid__V1__Tensor	*t;
	struct sim_program		*p;
	struct sim_diag		 diag;
	const char		*dt;
	size_t			 i, j;

	if (sim_program_load(img, len, &p, &diag) != SIM_OK)
		return;
	it->n_params = sim_program_nparams(p);
	it->params = xcalloc(it->n_params + 1, sizeof *it->params);
	for (i = 0; i < it->n_params; i++) {
		s = sim_program_param(p, i);
		t = xmalloc(sizeof *t);
		nkid__v1__tensor__init(t);
		t->name = xstrdup(s->name != NULL ? s->name : "");
		dt = sim_dtype_name(s->dtype);
		t->dtype = xstrdup(dt != NULL ? dt : "");
		t->n_shape = (size_t)s->rank;
		t->shape = xcalloc(s->rank + 1, sizeof *t->shape);
		for (j = 0; j < (size_t)s->rank; j++)
			t->shape[j] = s->shape[j];
		it->params[i] = t;
	}
	sim_program_free(p);
}

/* What CacheVerify says of cache_get's answers; any other is "error". */
static const struct rpc_cache_verify_outcome {
	int		 rc;
	const char	*state;
	const char	*message;	/* NULL: none */
} rpc_cache_verify_outcomes[] = {
	{ 0, "ok", NULL },
	{ CACHE_EFAILED, "failed", NULL },
	{ CACHE_ESTALE, "stale",
	    "compiled by another backend or compiler version" },
	{ CACHE_ENOENT, "missing", NULL },
	{ CACHE_ECORRUPT, "corrupt",
	    "its blob does not match its digest: quarantined" },
};
#define RPC_CACHE_VERIFY_NOUTCOMES \
	(sizeof rpc_cache_verify_outcomes / sizeof rpc_cache_verify_outcomes[0])

/* Off the loop: read and check one entry. */
static void
rpc_cache_verify_one(struct rpc_cache_verify *x, struct cache *disk,
    Nkid__V1__CacheVerifyResult *it)
{
	const struct rpc_cache_verify_outcome	*o;
	struct cache_entry			 e;
	size_t					 i;
	int					 r;

	r = cache_get(disk, it->key, CACHE_GET_DATA |
	    (x->all ? CACHE_GET_ANY : 0), &e);
	if ((r == 0 || r == CACHE_EFAILED || r == CACHE_ESTALE) &&
	    it->kernel[0] == '\0')
		it->kernel = xstrdup(e.kernel);
	for (i = 0; i < RPC_CACHE_VERIFY_NOUTCOMES; i++) {
		o = &rpc_cache_verify_outcomes[i];
		if (o->rc == r) {
			it->state = xstrdup(o->state);
			if (o->message != NULL)
				it->message = xstrdup(o->message);
			break;
		}
	}
	if (i == RPC_CACHE_VERIFY_NOUTCOMES) {
		it->state = xstrdup("error");
		it->message = xstrdup(cache_strerror(r));
	}
	/* A cached failure says why: the compiler's first line. */
	if (r == CACHE_EFAILED)
		it->message = e.log != NULL && *e.log != '\0' ?
		    xasprintf("%.*s", (int)strcspn(e.log, "\n"), e.log) :
		    xstrdup("the compile failed (no log)");
	if (r == 0 && x->signatures)
		rpc_cache_verify_signature(it, e.data, e.len);
	if (r == 0 || r == CACHE_EFAILED || r == CACHE_ESTALE)
		cache_entry_release(&e);
}

static void
rpc_cache_verify_work_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_verify	*x = arg;
	size_t			 i;

	if (x->all && (x->error = cache_list(disk, NULL, 0,
	    rpc_cache_verify_list_cb, x)) != 0)
		return;
	for (i = 0; i < x->n && !x->c->cancelled; i++)
		if (x->v[i]->state[0] == '\0')
			rpc_cache_verify_one(x, disk, x->v[i]);
}

static void
rpc_cache_verify_free(struct rpc_cache_verify *x)
{
	size_t	i;

	for (i = 0; i < x->n; i++)
		nkid__v1__cache_verify_result__free_unpacked(x->v[i], NULL);
	free(x->v);
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
	r.n_results = x->n;
	r.results = x->v;
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
	if (strcmp(k->format, d->backend->ops->format) != 0) {
		/* Never compiled here: it cannot be in this cache. */
		rpc_cache_verify_add(x, "", NULL);
		x->v[x->n - 1]->state = xstrdup("missing");
		x->v[x->n - 1]->message = xasprintf("format '%s' is not the "
		    "%s backend's '%s'", k->format, d->backend->ops->name,
		    d->backend->ops->format);
		return (0);
	}
	kcache_key_derive(d->kcache, k->format, k->ir_digest, k->target,
	    k->options, key);
	rpc_cache_verify_add(x, key, NULL);
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
	x->signatures = req->signatures;
	x->all = req->n_keys == 0 && req->n_kernels == 0;
	for (i = 0; i < req->n_keys; i++) {
		if (!cache_key_valid(req->keys[i])) {
			rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
			    "CacheVerify: '%s' is not a key (64 lower-case hex "
			    "digits)", req->keys[i]);
			rpc_cache_verify_free(x);
			return;
		}
		rpc_cache_verify_add(x, req->keys[i], NULL);
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
