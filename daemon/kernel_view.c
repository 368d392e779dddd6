/* kernel_view.c: which cache entries a call may see (access.cache_visibility), the kernels each uid proved it holds the IR of, and the gate every kernel request passes before the kernel cache. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/xmalloc.h"

/* Buckets of the grant table, and the grants it holds before it starts
 * again from empty (each costs ~90 bytes; a grant lost is one disk
 * check, or one request with the IR, later). */
#define KERNEL_GRANT_BUCKETS	4096
#define KERNEL_GRANT_MAX	65536

struct kernel_grant_rec {
	uint32_t		 uid;
	char			 key[KCACHE_KEY_LEN + 1];
	struct kernel_grant_rec	*next;
};

struct kernel_grants {
	struct kernel_grant_rec	*b[KERNEL_GRANT_BUCKETS];
	size_t			 n;
};

int64_t
kernel_viewer(const struct rpc_call *c)
{
	const char	*v = c->d->cfg.cache_visibility;

	if (c->id.admin || v == NULL || strcmp(v, "owner") != 0)
		return (CACHE_VIEW_ALL);
	return ((int64_t)c->id.uid);
}

static size_t
kernel_grant_bucket(uint32_t uid, const char *key)
{
	uint64_t	h = uid * 0x9e3779b97f4a7c15ULL;
	size_t		i;

	/* A key is a SHA-256 in hex: its first digits are hash enough. */
	for (i = 0; i < 12 && key[i] != '\0'; i++)
		h = h * 31 + (unsigned char)key[i];
	return ((size_t)(h % KERNEL_GRANT_BUCKETS));
}

void
kernel_grants_free(struct kernel_grants *g)
{
	struct kernel_grant_rec	*x;
	size_t			 i;

	if (g == NULL)
		return;
	for (i = 0; i < KERNEL_GRANT_BUCKETS; i++)
		while ((x = g->b[i]) != NULL) {
			g->b[i] = x->next;
			free(x);
		}
	free(g);
}

void
kernel_grants_clear(struct daemon *d)
{
	kernel_grants_free(d->grants);
	d->grants = NULL;
}

int
kernel_granted(struct daemon *d, uint32_t uid, const char *key)
{
	struct kernel_grant_rec	*x;

	if (d->grants == NULL)
		return (0);
	for (x = d->grants->b[kernel_grant_bucket(uid, key)]; x != NULL;
	    x = x->next)
		if (x->uid == uid && strcmp(x->key, key) == 0)
			return (1);
	return (0);
}

void
kernel_grant(struct daemon *d, uint32_t uid, const char *key)
{
	struct kernel_grant_rec	*x;
	size_t			 i;

	if (key == NULL || !cache_key_valid(key) ||
	    kernel_granted(d, uid, key))
		return;
	if (d->grants != NULL && d->grants->n >= KERNEL_GRANT_MAX)
		kernel_grants_clear(d);
	if (d->grants == NULL)
		d->grants = xcalloc(1, sizeof *d->grants);
	i = kernel_grant_bucket(uid, key);
	x = xcalloc(1, sizeof *x);
	x->uid = uid;
	memcpy(x->key, key, sizeof x->key);
	x->next = d->grants->b[i];
	d->grants->b[i] = x;
	d->grants->n++;
}

/* One kernel request held at the gate (owner visibility only). */
struct kernel_gate {
	struct rpc_call		*c;
	struct kcache_request	 rq;	/* strings borrowed from c's request */
	kcache_done_cb		 done;
	void			*arg;
	int			 visible;	/* the disk check's answer */
};

/* After a resolve with the caller's IR: the key is the caller's now. */
static void
kernel_gate_resolved_cb(void *arg, const struct kcache_result *r)
{
	struct kernel_gate	*g = arg;

	if (r->error == 0 && r->key != NULL)
		kernel_grant(g->c->d, g->c->id.uid, r->key);
	g->done(g->arg, r);
	free(g);
}

/* Off the loop: may the caller see the entry of the key it named? */
static void
kernel_gate_work_cb(struct cache *disk, void *arg)
{
	struct kernel_gate	*g = arg;
	struct cache_entry	 e;
	int			 r;

	if (disk == NULL)
		return;
	r = cache_get(disk, g->rq.neff_key, CACHE_GET_ANY, &e);
	if (r == 0 || r == CACHE_EFAILED || r == CACHE_ESTALE) {
		g->visible = cache_entry_visible(&e, (int64_t)g->c->id.uid);
		cache_entry_release(&e);
	}
}

static void
kernel_gate_done_cb(void *arg)
{
	struct kernel_gate	*g = arg;
	struct kcache_result	 r;

	if (g->visible) {
		kernel_grant(g->c->d, g->c->id.uid, g->rq.neff_key);
		kcache_resolve(g->c->d->kcache, &g->rq, g->done, g->arg);
		free(g);
		return;
	}
	/* Another's entry is answered as a key nkid does not have, in the
	 * same words (dispatch_kcache_error), so it tells nothing. */
	memset(&r, 0, sizeof r);
	r.error = KCACHE_ENOENT;
	r.key = g->rq.neff_key;
	r.name = g->rq.name != NULL ? g->rq.name : "kernel";
	r.diag = r.log = "";
	g->done(g->arg, &r);
	free(g);
}

static struct kernel_gate *
kernel_gate_new(struct rpc_call *c, const struct kcache_request *rq,
    kcache_done_cb done, void *arg)
{
	struct kernel_gate	*g;

	g = xcalloc(1, sizeof *g);
	g->c = c;
	g->rq = *rq;
	g->done = done;
	g->arg = arg;
	return (g);
}

/* What the gate does with a kernel request of c's (rq: c's own copy). */
enum kernel_gate_how {
	KERNEL_GATE_PASS,	/* straight to the kernel cache */
	KERNEL_GATE_IR,		/* by its IR; the key is c's once resolved */
	KERNEL_GATE_KEY,	/* a key alone: served only if c may see it */
};

static enum kernel_gate_how
kernel_gate_how(struct rpc_call *c, struct kcache_request *rq)
{
	int	named;

	if (kernel_viewer(c) == CACHE_VIEW_ALL)
		return (KERNEL_GATE_PASS);
	named = rq->neff_key != NULL && rq->neff_key[0] != '\0' &&
	    !kernel_granted(c->d, c->id.uid, rq->neff_key);
	if (rq->format == NULL)
		return (named ? KERNEL_GATE_KEY : KERNEL_GATE_PASS);
	/* The IR decides; a key tried first could be another's. */
	if (named)
		rq->neff_key = "";
	return (KERNEL_GATE_IR);
}

void
kernel_resolve(struct rpc_call *c, const struct kcache_request *rq,
    kcache_done_cb done, void *arg)
{
	struct kcache_request	 own = *rq;
	struct kernel_gate	*g = NULL;
	enum kernel_gate_how	 how;

	own.owner = (int64_t)c->id.uid;
	how = kernel_gate_how(c, &own);
	if (how != KERNEL_GATE_PASS)
		g = kernel_gate_new(c, &own, done, arg);
	if (how == KERNEL_GATE_KEY)
		kcache_async(c->d->kcache, kernel_gate_work_cb,
		    kernel_gate_done_cb, g);
	else if (g != NULL)
		kcache_resolve(c->d->kcache, &own, kernel_gate_resolved_cb, g);
	else
		kcache_resolve(c->d->kcache, &own, done, arg);
}
