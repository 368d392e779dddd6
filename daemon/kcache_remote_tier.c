/* kcache_remote_tier.c: the remote tier assembled: its connection (kcache_remote.c) opened with the fleet's ears (kcache_remote_fleet.c), and the face the kernel cache sees (struct kcache_tier). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/kcache.h"
#include "daemon/kcache_remote.h"
#include "daemon/kcache_remote_impl.h"
#include "daemon/xmalloc.h"

/* The store failed or the circuit opened: no wait outlasts it. */
static void
kcache_remote_tier_down(struct kcache_remote *r)
{
	kcache_remote_waits_end(r, KCACHE_REMOTE_COMPILE, KCACHE_REMOTE_EDOWN);
}

static const struct kcache_remote_events kcache_remote_tier_events = {
	.down = kcache_remote_tier_down,
	.message = kcache_remote_wake,
};

int
kcache_remote_open(struct kcache_remote **out, uv_loop_t *loop,
    const struct config *cfg, const char *backend,
    const char *compiler_version, uint32_t wait_ms,
    const volatile int *stopping, char *err, size_t errlen)
{
	return (kcache_remote_conn_open(out, loop, cfg, backend,
	    compiler_version, wait_ms, stopping, &kcache_remote_tier_events,
	    err, errlen));
}

/* One resolve for a flight: its callbacks, behind the tier's. */
struct kcache_remote_tier_call {
	kcache_tier_accept_cb	 accept;
	kcache_tier_done_cb	 done;
	void			*arg;
};

/* Off the loop. */
static int
kcache_remote_tier_accept_cb(void *arg, struct cache_entry *e)
{
	struct kcache_remote_tier_call	*call = arg;

	return (call->accept(call->arg, e));
}

static void
kcache_remote_tier_done_cb(void *arg, int outcome, int err,
    struct kcache_remote_lock *lk)
{
	struct kcache_remote_tier_call	*call = arg;
	enum kcache_tier_outcome	 o;

	switch (outcome) {
	case KCACHE_REMOTE_TAKEN:
		o = KCACHE_TIER_TAKEN;
		break;
	case KCACHE_REMOTE_STOP:
		o = KCACHE_TIER_STOP;
		break;
	default:
		o = KCACHE_TIER_COMPILE;
		break;
	}
	call->done(call->arg, o, lk);
	free(call);
}

static int
kcache_remote_tier_resolve(void *state, const char *key, int flags,
    kcache_tier_accept_cb accept, kcache_tier_done_cb done, void *arg)
{
	struct kcache_remote_tier_call	*call;
	int				 rc;

	call = xmalloc(sizeof *call);
	call->accept = accept;
	call->done = done;
	call->arg = arg;
	rc = kcache_remote_resolve(state, key, (flags & KCACHE_TIER_KEY_ONLY) ?
	    KCACHE_REMOTE_PULL_ONLY : 0, kcache_remote_tier_accept_cb,
	    kcache_remote_tier_done_cb, call);
	if (rc != 0)
		free(call);
	return (rc);
}

/* Off the loop: signed with the fleet key, if this host pushes. */
static void
kcache_remote_tier_encode(void *state, const struct cache_entry *e,
    void **out, size_t *outlen)
{
	*out = NULL;
	*outlen = 0;
	if (kcache_remote_writable(state))
		kcache_remote_encode(state, e, out, outlen);
}

static void
kcache_remote_tier_publish(void *state, const char *key, void *claim,
    void *value, size_t len, int failed)
{
	kcache_remote_publish(state, key, claim, value, len, failed);
}

static const struct kcache_tier_ops kcache_remote_tier_ops = {
	.resolve = kcache_remote_tier_resolve,
	.encode = kcache_remote_tier_encode,
	.publish = kcache_remote_tier_publish,
};

void
kcache_remote_tier(struct kcache_remote *r, struct kcache_tier *t)
{
	memset(t, 0, sizeof *t);
	if (r == NULL)
		return;
	t->ops = &kcache_remote_tier_ops;
	t->state = r;
}
