/* rpc_lease.c: Lease, a bidi stream that holds a core from GRANTED until the client ends the stream, goes away, or max_seconds pass. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/sched_call.h"
#include "daemon/log.h"
#include "daemon/sched.h"
#include "daemon/xmalloc.h"

/* Replies waiting for the one send in flight: QUEUED, GRANTED, an end. */
#define RPC_LEASE_OUTBOX	4

struct rpc_lease_out {
	int	 state;
	char	*message;
};

struct rpc_lease {
	struct sched_job	 sj;
	struct rpc_call		*c;
	uv_timer_t		 timer;
	double			 max_s;
	char			 holder[128];
	struct rpc_lease_out	 out[RPC_LEASE_OUTBOX];
	size_t			 nout;
	int			 granted;
	int			 ended;		/* the core is not ours */
	int			 finishing;
	grpc_status_code	 code;
	char			*message;
};

static void	rpc_lease_flush(struct rpc_lease *l);

static void
rpc_lease_free_cb(uv_handle_t *h)
{
	struct rpc_lease	*l = h->data;
	size_t		 i;

	for (i = 0; i < l->nout; i++)
		free(l->out[i].message);
	free(l->message);
	free(l);
}

/* c->job_release: the call is gone; so is the lease. */
static void
rpc_lease_release_cb(void *arg)
{
	struct rpc_lease	*l = arg;

	if (!l->ended) {
		sched_lease_end(l->c->d->sched, &l->sj);
		l->ended = 1;
	}
	uv_timer_stop(&l->timer);
	uv_close((uv_handle_t *)&l->timer, rpc_lease_free_cb);
}

static void	rpc_lease_send(struct rpc_lease *l, int state,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
rpc_lease_send(struct rpc_lease *l, int state, const char *fmt, ...)
{
	va_list	ap;
	char	*m = NULL;

	if (l->finishing || l->nout == RPC_LEASE_OUTBOX)
		return;
	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		fatal("out of memory");
	va_end(ap);
	l->out[l->nout].state = state;
	l->out[l->nout].message = m;
	l->nout++;
	rpc_lease_flush(l);
}

/* Give the core back (if ours) and end the call once the replies queued
 * before have gone. */
static void	rpc_lease_end(struct rpc_lease *l, grpc_status_code code,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
rpc_lease_end(struct rpc_lease *l, grpc_status_code code, const char *fmt, ...)
{
	va_list	ap;

	if (!l->ended) {
		sched_lease_end(l->c->d->sched, &l->sj);
		l->ended = 1;
		if (l->granted)
			log_debug("lease %llu of core %u by pid %u released",
			    (unsigned long long)l->sj.id, l->sj.core,
			    l->sj.pid);
	}
	uv_timer_stop(&l->timer);
	if (l->finishing)
		return;
	l->finishing = 1;
	l->code = code;
	if (fmt != NULL) {
		va_start(ap, fmt);
		if (vasprintf(&l->message, fmt, ap) < 0)
			fatal("out of memory");
		va_end(ap);
	}
	rpc_lease_flush(l);
}

static void
rpc_lease_sent_cb(struct rpc_call *c, int ok)
{
	struct rpc_lease	*l = c->job;
	size_t			 i;

	if (!ok) {
		rpc_lease_end(l, GRPC_STATUS_CANCELLED, "lease %llu: the "
		    "client went away", (unsigned long long)l->sj.id);
		/* Nobody will read the replies queued: drop them. */
		for (i = 0; i < l->nout; i++)
			free(l->out[i].message);
		l->nout = 0;
	}
	rpc_lease_flush(l);
}

static void
rpc_lease_flush(struct rpc_lease *l)
{
	struct rpc_call		*c = l->c;
	Nkid__V1__LeaseReply	 r = NKID__V1__LEASE_REPLY__INIT;
	char			 visible[16];

	if (c->replied || c->send_in_flight)
		return;
	if (l->nout > 0) {
		r.state = l->out[0].state;
		r.core = l->sj.core;
		snprintf(visible, sizeof visible, "%u",
		    backend_device_core(c->d->backend, l->sj.core));
		r.visible_cores = r.state == NKID__V1__LEASE_REPLY__STATE__GRANTED ?
		    visible : (char *)"";
		r.message = l->out[0].message;
		rpc_stream_send(c, &r.base, rpc_lease_sent_cb);
		free(l->out[0].message);
		memmove(&l->out[0], &l->out[1], (l->nout - 1) *
		    sizeof l->out[0]);
		l->nout--;
		return;
	}
	if (l->finishing)
		rpc_finish(c, l->code, l->message != NULL ? "%s" : NULL,
		    l->message);
}

static void
rpc_lease_timer_cb(uv_timer_t *t)
{
	struct rpc_lease	*l = t->data;

	rpc_lease_send(l, NKID__V1__LEASE_REPLY__STATE__EXPIRED, "lease of "
	    "core %u expired after %g s (max_seconds); the core is reclaimed",
	    l->sj.core, l->max_s);
	rpc_lease_end(l, GRPC_STATUS_OK, NULL);
}

static void
rpc_lease_grant_cb(struct sched_job *sj)
{
	struct rpc_lease	*l = sj->owner;
	double		 ms = l->max_s * 1000.0;

	l->granted = 1;
	log_debug("lease %llu of core %u granted to pid %u uid %u",
	    (unsigned long long)sj->id, sj->core, sj->pid, sj->uid);
	rpc_lease_send(l, NKID__V1__LEASE_REPLY__STATE__GRANTED, "core %u is "
	    "yours for at most %g s", sj->core, l->max_s);
	uv_timer_start(&l->timer, rpc_lease_timer_cb, ms < 1 ? 1 :
	    (uint64_t)ms, 0);
}

/* Never granted: its deadline passed, or nkid stops. */
static void
rpc_lease_done_cb(struct sched_job *sj, int outcome)
{
	struct rpc_lease	*l = sj->owner;

	l->ended = 1;
	if (outcome == SCHED_EXPIRED)
		rpc_lease_end(l, GRPC_STATUS_DEADLINE_EXCEEDED, "lease %llu: "
		    "the deadline passed before core %u was free",
		    (unsigned long long)sj->id, sj->core);
	else
		rpc_lease_end(l, outcome == SCHED_STOPPED ?
		    GRPC_STATUS_UNAVAILABLE : GRPC_STATUS_CANCELLED,
		    "lease %llu ended before it was granted: %s",
		    (unsigned long long)sj->id, outcome == SCHED_STOPPED ?
		    "nkid is stopping" : "cancelled");
}

/* Cancel (nkictl cancel) or the client gone. */
static void
rpc_lease_cancel_cb(struct sched_job *sj, int outcome)
{
	struct rpc_lease	*l = sj->owner;

	if (outcome == SCHED_CANCELLED) {
		rpc_lease_send(l, NKID__V1__LEASE_REPLY__STATE__RELEASED,
		    "lease %llu of core %u was cancelled (nkictl cancel)",
		    (unsigned long long)sj->id, sj->core);
		rpc_lease_end(l, GRPC_STATUS_CANCELLED, "lease %llu was "
		    "cancelled", (unsigned long long)sj->id);
	} else
		rpc_lease_end(l, outcome == SCHED_EXPIRED ?
		    GRPC_STATUS_DEADLINE_EXCEEDED : GRPC_STATUS_CANCELLED,
		    "lease %llu: the client went away",
		    (unsigned long long)sj->id);
}

/* Later messages: ignored; the end of the stream releases the lease. */
static void
rpc_lease_next_cb(struct rpc_call *c, ProtobufCMessage *msg)
{
	struct rpc_lease	*l = c->job;

	if (msg != NULL) {
		protobuf_c_message_free_unpacked(msg, NULL);
		rpc_stream_recv(c, rpc_lease_next_cb);
		return;
	}
	if (c->cancelled) {
		rpc_lease_end(l, GRPC_STATUS_CANCELLED, "lease %llu: the "
		    "client went away", (unsigned long long)l->sj.id);
		return;
	}
	rpc_lease_send(l, NKID__V1__LEASE_REPLY__STATE__RELEASED, "core %u "
	    "released", l->sj.core);
	rpc_lease_end(l, GRPC_STATUS_OK, NULL);
}

static void
rpc_lease_first_cb(struct rpc_call *c, ProtobufCMessage *msg)
{
	struct daemon			*d = c->d;
	const Nkid__V1__LeaseRequest	*req = (const void *)msg;
	unsigned			 ncores = sched_core_count(d->sched);
	unsigned			 ahead;
	struct rpc_lease			*l;

	if (msg == NULL) {
		rpc_finish(c, c->cancelled ? GRPC_STATUS_CANCELLED :
		    GRPC_STATUS_INVALID_ARGUMENT, "the Lease stream ended "
		    "before its request");
		return;
	}
	if (req->core < -1 || (req->core >= 0 && (unsigned)req->core >=
	    ncores)) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "cannot lease core %d: "
		    "it does not exist; nkid has %u core%s (0 to %u, or -1 for "
		    "any)", req->core, ncores, ncores == 1 ? "" : "s",
		    ncores - 1);
		goto out;
	}
	if (!isfinite(req->max_seconds) || req->max_seconds < 0 ||
	    req->max_seconds > d->cfg.lease_max_seconds) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "cannot lease for %g "
		    "s: want more than 0 and at most %u s "
		    "(leases.max_seconds)", req->max_seconds,
		    d->cfg.lease_max_seconds);
		goto out;
	}
	l = xcalloc(1, sizeof *l);
	l->c = c;
	l->max_s = req->max_seconds > 0 ? req->max_seconds :
	    d->cfg.lease_max_seconds;
	snprintf(l->holder, sizeof l->holder, "%s", req->holder);
	uv_timer_init(d->loop, &l->timer);
	l->timer.data = l;
	c->job = l;
	c->job_release = rpc_lease_release_cb;
	l->sj.grant = rpc_lease_grant_cb;
	l->sj.done = rpc_lease_done_cb;
	l->sj.cancel_cb = rpc_lease_cancel_cb;
	l->sj.owner = l;
	if (sched_call_submit(c, &l->sj, "lease", l->holder, req->core,
	    NKID__V1__JOB_CLASS__JOB_CLASS_INTERACTIVE, "lease") != 0) {
		l->ended = 1;
		goto out;
	}
	ahead = sched_core_load(d->sched, l->sj.core);
	if (!l->granted && !l->finishing)
		rpc_lease_send(l, NKID__V1__LEASE_REPLY__STATE__QUEUED,
		    "lease %llu waits for core %u (%u ahead, this one "
		    "included)", (unsigned long long)l->sj.id, l->sj.core,
		    ahead);
	rpc_stream_recv(c, rpc_lease_next_cb);
out:
	protobuf_c_message_free_unpacked(msg, NULL);
}

static void
rpc_lease(struct rpc_call *c)
{
	rpc_stream_recv(c, rpc_lease_first_cb);
}

const struct rpc_method rpc_lease_method = {
	DISPATCH_METHOD_NAME("Lease"), .kind = RPC_BIDI_STREAM,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_lease,
};
