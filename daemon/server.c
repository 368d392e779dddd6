/* server.c: the gRPC core bridge: the server, its completion-queue thread feeding the loop, and the calls behind rpc_transport. */
#include <sys/queue.h>

#include <assert.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <uv.h>

#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/devlock.h"
#include "daemon/dispatch.h"
#include "daemon/log.h"
#include "daemon/server.h"
#include "daemon/server_accept.h"
#include "daemon/server_listen.h"
#include "daemon/wake.h"
#include "daemon/xmalloc.h"

/* Requests kept posted per method, and for unknown methods. */
#define SERVER_POSTED_PER_METHOD	4
#define SERVER_POSTED_GENERIC		2

struct server;
struct server_tag {
	void	(*cb)(struct server *s, struct server_tag *t, int ok,
		    uint64_t stamp);
};

struct server_event {
	struct server_tag	*tag;
	int			 ok;
	uint64_t		 stamp;
};

struct server_call {
	struct rpc_call		 rc;
	struct server		*s;
	ssize_t			 method;	/* -1: generic */
	grpc_call		*call;
	gpr_timespec		 deadline;
	grpc_metadata_array	 md;
	grpc_byte_buffer	*payload;	/* output of the request */
	grpc_call_details	 details;	/* generic only */
	struct server_tag	 req_tag;
	struct server_tag	 send_tag;
	struct server_tag	 close_tag;
	struct server_tag	 recv_tag;	/* stream RECV_MESSAGE */
	struct server_tag	 msg_tag;	/* stream SEND_MESSAGE */
	grpc_byte_buffer	*recv_bb;	/* output of RECV_MESSAGE */
	grpc_byte_buffer	*msg_bb;	/* the stream message in flight */
	int			 md_sent;	/* initial metadata sent */
	int			 final_deferred; /* status waits for msg_bb */
	int			 refused_fd;	/* -1, or the refused conn's fd */
	int			 close_cancelled; /* output of RECV_CLOSE */
	int			 close_started;
	int			 stop_refused;	/* answered: nkid is stopping */
	int			 pending;	/* batches in flight */
	grpc_byte_buffer	*send_bb;
	grpc_slice		 status_slice;
	int			 has_status_slice;
	TAILQ_ENTRY(server_call) entry;
};
TAILQ_HEAD(server_calls, server_call);

struct server {
	struct daemon		*d;

	struct server_listen	 listen;	/* the lock and the socket */
	struct devlock		*devlock;	/* lock_dir/core-N */
	struct server_accept	*acc;		/* NULL once closed */

	grpc_server		*srv;
	grpc_completion_queue	*cq;
	grpc_server_credentials	*creds;
	void			*handles[DAEMON_MAX_METHODS];
	pthread_t		 cq_thread;
	int			 cq_thread_started;
	_Atomic uint64_t	 seq;

	struct wake		 wake;		/* the loop, for events */
	pthread_mutex_t		 mu;
	struct server_event	*events;	/* under mu */
	size_t			 nevents;
	size_t			 capevents;

	struct server_calls	 live;
	size_t			 nlive;
	size_t			 nrefused;	/* live, stop_refused */
	size_t			 nposted;

	uv_timer_t		 grace_timer;
	struct server_tag	 shutdown_tag;
	int			 stopping;	/* refusing new calls */
	int			 grpc_down;	/* gRPC shutdown started */
	int			 shutdown_notified;
	int			 finishing;
	int			 closing_handles;
	void			(*done)(void *);
	void			*done_arg;
};

static void	server_call_maybe_free(struct server_call *sc);
static void	server_stop_check(struct server *s);
static void	server_shutdown_cb(struct server *, struct server_tag *, int,
		    uint64_t);

/* ------------------------------------------------------------ bridge */

static void
server_event_push(struct server *s, struct server_tag *tag, int ok)
{
	struct server_event	*e;

	pthread_mutex_lock(&s->mu);
	if (s->nevents == s->capevents) {
		s->capevents = s->capevents == 0 ? 64 : s->capevents * 2;
		s->events = xreallocarray(s->events, s->capevents,
		    sizeof *s->events);
	}
	e = &s->events[s->nevents++];
	e->tag = tag;
	e->ok = ok;
	e->stamp = atomic_fetch_add(&s->seq, 1) + 1;
	pthread_mutex_unlock(&s->mu);
	wake_send(&s->wake);
}

static void *
server_cq_main(void *arg)
{
	struct server	*s = arg;
	grpc_event	 ev;

	for (;;) {
		ev = grpc_completion_queue_next(s->cq,
		    gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		server_event_push(s, ev.tag, ev.success);
	}
	return (NULL);
}

static void
server_events_drain(struct server *s)
{
	struct server_event	*ev, local[64];
	size_t			 n, i;

	for (;;) {
		pthread_mutex_lock(&s->mu);
		n = s->nevents < 64 ? s->nevents : 64;
		memcpy(local, s->events, n * sizeof *ev);
		memmove(s->events, s->events + n, (s->nevents - n) *
		    sizeof *ev);
		s->nevents -= n;
		pthread_mutex_unlock(&s->mu);
		if (n == 0)
			return;
		for (i = 0; i < n; i++)
			local[i].tag->cb(s, local[i].tag, local[i].ok,
			    local[i].stamp);
	}
}

static void
server_wake_cb(void *arg)
{
	server_events_drain(arg);
}

/* ------------------------------------------------------------ calls */

static void	server_req_cb(struct server *, struct server_tag *, int,
		    uint64_t);
static void	server_send_cb(struct server *, struct server_tag *, int,
		    uint64_t);
static void	server_close_cb(struct server *, struct server_tag *, int,
		    uint64_t);
static void	server_recv_cb(struct server *, struct server_tag *, int,
		    uint64_t);
static void	server_msg_cb(struct server *, struct server_tag *, int,
		    uint64_t);
static void	server_send(struct rpc_call *c, const uint8_t *reply,
		    size_t len);
static void	server_stream_send(struct rpc_call *c, const uint8_t *msg,
		    size_t len);
static void	server_stream_recv(struct rpc_call *c);

static const struct rpc_transport server_transport = {
	.send = server_send,
	.stream_send = server_stream_send,
	.stream_recv = server_stream_recv,
};

#define SC_OF(tag, field) \
	((struct server_call *)((char *)(tag) - \
	    offsetof(struct server_call, field)))

static void
server_request_post(struct server *s, ssize_t method)
{
	struct server_call	*sc;
	const struct rpc_method	*m;
	grpc_call_error		 error;

	sc = xcalloc(1, sizeof *sc);
	sc->s = s;
	sc->method = method;
	sc->req_tag.cb = server_req_cb;
	sc->send_tag.cb = server_send_cb;
	sc->close_tag.cb = server_close_cb;
	sc->recv_tag.cb = server_recv_cb;
	sc->msg_tag.cb = server_msg_cb;
	sc->refused_fd = -1;
	sc->rc.d = s->d;
	sc->rc.tr = &server_transport;
	grpc_metadata_array_init(&sc->md);
	if (method < 0) {
		grpc_call_details_init(&sc->details);
		error = grpc_server_request_call(s->srv, &sc->call,
		    &sc->details, &sc->md, s->cq, s->cq, &sc->req_tag);
	} else {
		m = dispatch_method((size_t)method);
		sc->rc.m = m;
		error = grpc_server_request_registered_call(s->srv,
		    s->handles[method], &sc->call, &sc->deadline, &sc->md,
		    (m->kind == RPC_UNARY || m->kind == RPC_SERVER_STREAM) ?
		    &sc->payload : NULL, s->cq, s->cq, &sc->req_tag);
	}
	if (error != GRPC_CALL_OK) {
		log_warn("cannot post a request for %s: error %d", method < 0 ?
		    "unknown methods" : sc->rc.m->name, error);
		grpc_metadata_array_destroy(&sc->md);
		if (method < 0)
			grpc_call_details_destroy(&sc->details);
		free(sc);
		return;
	}
	s->nposted++;
}

static void
server_call_free(struct server_call *sc)
{
	if (sc->call != NULL)
		grpc_call_unref(sc->call);
	if (sc->payload != NULL)
		grpc_byte_buffer_destroy(sc->payload);
	if (sc->send_bb != NULL)
		grpc_byte_buffer_destroy(sc->send_bb);
	if (sc->recv_bb != NULL)
		grpc_byte_buffer_destroy(sc->recv_bb);
	if (sc->msg_bb != NULL)
		grpc_byte_buffer_destroy(sc->msg_bb);
	if (sc->has_status_slice)
		grpc_slice_unref(sc->status_slice);
	grpc_metadata_array_destroy(&sc->md);
	if (sc->method < 0)
		grpc_call_details_destroy(&sc->details);
	dispatch_call_release(&sc->rc);
	free(sc);
}

static void
server_call_maybe_free(struct server_call *sc)
{
	struct server	*s = sc->s;

	if (sc->pending > 0 || !sc->rc.replied)
		return;
	TAILQ_REMOVE(&s->live, sc, entry);
	s->nlive--;
	if (sc->stop_refused)
		s->nrefused--;
	server_call_free(sc);
	server_stop_check(s);
}

/* Who made this call: the connection gRPC calls "fd:N", if the call is
 * younger than that connection (enum server_accept_who; a refused
 * connection's message in *refusal, borrowed). */
static int
server_call_identify(struct server *s, struct server_call *sc, uint64_t stamp,
    const char **refusal)
{
	char	*peer;
	int	 fd = -1, who;

	peer = grpc_call_get_peer(sc->call);
	if (peer != NULL && sscanf(peer, "fd:%d", &fd) != 1)
		fd = -1;
	who = s->acc == NULL ? SERVER_ACCEPT_UNKNOWN :
	    server_accept_identify(s->acc, fd, stamp, &sc->rc.id, refusal);
	if (who == SERVER_ACCEPT_UNKNOWN)
		log_warn("call from unknown peer '%s'", peer != NULL ? peer :
		    "?");
	gpr_free(peer);
	if (who == SERVER_ACCEPT_REFUSED)
		sc->refused_fd = fd;
	return (who);
}

/* The call's deadline, as gRPC got it from the client, on uv_hrtime's
 * clock. */
static void
server_call_deadline(struct server_call *sc)
{
	gpr_timespec	dl, now, left;
	int64_t		ns;

	dl = sc->method < 0 ? sc->details.deadline : sc->deadline;
	if (dl.tv_sec == INT64_MAX || gpr_time_cmp(dl,
	    gpr_inf_future(dl.clock_type)) == 0) {
		sc->rc.deadline_ns = 0;
		return;
	}
	dl = gpr_convert_clock_type(dl, GPR_CLOCK_MONOTONIC);
	now = gpr_now(GPR_CLOCK_MONOTONIC);
	left = gpr_time_sub(dl, now);
	if (left.tv_sec > 100LL * 365 * 86400) {
		sc->rc.deadline_ns = 0;		/* practically none */
		return;
	}
	ns = left.tv_sec * 1000000000LL + left.tv_nsec;
	sc->rc.deadline_ns = uv_hrtime() + (ns > 0 ? (uint64_t)ns : 0);
	if (sc->rc.deadline_ns == 0)
		sc->rc.deadline_ns = 1;
}

static void
server_close_start(struct server_call *sc)
{
	grpc_op		op;
	grpc_call_error	error;

	memset(&op, 0, sizeof op);
	op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	op.data.recv_close_on_server.cancelled = &sc->close_cancelled;
	error = grpc_call_start_batch(sc->call, &op, 1, &sc->close_tag, NULL);
	if (error != GRPC_CALL_OK) {
		log_warn("cannot watch call for cancellation: error %d", error);
		return;
	}
	sc->close_started = 1;
	sc->pending++;
}

/* The request's bytes, contiguous: the slice itself when there is one,
 * else a copy into *copy (the caller frees). */
static const uint8_t *
server_payload_bytes(grpc_byte_buffer *bb, size_t *len, uint8_t **copy)
{
	grpc_byte_buffer_reader	 r;
	grpc_slice		 sl;
	uint8_t			*p;
	size_t			 n, off = 0;

	*copy = NULL;
	*len = 0;
	if (bb == NULL)
		return ((const uint8_t *)"");
	if (bb->type == GRPC_BB_RAW && bb->data.raw.compression ==
	    GRPC_COMPRESS_NONE && bb->data.raw.slice_buffer.count == 1) {
		/* Not a copy of the slice: an inlined one holds its bytes. */
		const grpc_slice *slp = &bb->data.raw.slice_buffer.slices[0];

		*len = GRPC_SLICE_LENGTH(*slp);
		return (GRPC_SLICE_START_PTR(*slp));
	}
	n = grpc_byte_buffer_length(bb);
	if (!grpc_byte_buffer_reader_init(&r, bb))
		return (NULL);
	p = xmalloc(n);
	while (grpc_byte_buffer_reader_next(&r, &sl)) {
		size_t	sn = GRPC_SLICE_LENGTH(sl);

		if (sn > n - off)
			sn = n - off;
		memcpy(p + off, GRPC_SLICE_START_PTR(sl), sn);
		off += sn;
		grpc_slice_unref(sl);
	}
	grpc_byte_buffer_reader_destroy(&r);
	*copy = p;
	*len = off;
	return (p);
}

static void
server_req_cb(struct server *s, struct server_tag *t, int ok, uint64_t stamp)
{
	struct server_call	*sc = SC_OF(t, req_tag);
	const uint8_t		*data;
	uint8_t			*copy;
	const char		*refusal = NULL;
	char			*path;
	size_t			 len;
	int			 who;

	s->nposted--;
	if (!ok) {
		/* Shutting down: the request was never matched. */
		sc->rc.replied = 1;
		server_call_free(sc);
		server_stop_check(s);
		return;
	}
	if (!s->grpc_down)
		server_request_post(s, sc->method);
	TAILQ_INSERT_TAIL(&s->live, sc, entry);
	s->nlive++;
	if (s->stopping) {
		/* Nothing starts now: the client sends it to the next nkid. */
		sc->stop_refused = 1;
		s->nrefused++;
		sc->rc.m = NULL;
		rpc_fail(&sc->rc, GRPC_STATUS_UNAVAILABLE, "nkid is stopping: "
		    "the call was not started (send it again to the next "
		    "nkid)");
		return;
	}

	if ((who = server_call_identify(s, sc, stamp, &refusal)) < 0) {
		sc->rc.m = NULL;
		rpc_fail(&sc->rc, GRPC_STATUS_UNAVAILABLE,
		    "the connection of this call has closed");
		return;
	}
	if (who == SERVER_ACCEPT_REFUSED) {
		sc->rc.m = NULL;
		rpc_fail(&sc->rc, GRPC_STATUS_PERMISSION_DENIED, "%s", refusal);
		return;
	}
	server_call_deadline(sc);
	if (sc->method < 0) {
		path = grpc_slice_to_c_string(sc->details.method);
		dispatch_call_unknown(&sc->rc, path);
		gpr_free(path);
		return;
	}
	if (sc->rc.m->kind != RPC_UNARY)
		server_close_start(sc);
	data = server_payload_bytes(sc->payload, &len, &copy);
	if (data == NULL) {
		rpc_fail(&sc->rc, GRPC_STATUS_INTERNAL,
		    "cannot read the request");
		return;
	}
	dispatch_call_start(&sc->rc, data, len);
	/* A unary call answered later is watched for cancellation from now
	 * on; one answered already (a job run on the spot) took the close
	 * into its final batch. */
	if (sc->rc.m->kind == RPC_UNARY && !sc->rc.replied &&
	    !sc->close_started)
		server_close_start(sc);
	free(copy);
	if (sc->payload != NULL) {
		grpc_byte_buffer_destroy(sc->payload);
		sc->payload = NULL;
	}
}

/* The trailing metadata of a call nkid did not start (SERVER_RETRYABLE_KEY). */
static grpc_metadata	server_retryable_md;

/* The status (and the one reply of a unary or client-streaming call). */
static void
server_send_final(struct server_call *sc, const uint8_t *reply, size_t len)
{
	struct rpc_call		*c = &sc->rc;
	grpc_op			 ops[4], *op = ops;
	grpc_slice		 sl;
	grpc_call_error		 error;

	memset(ops, 0, sizeof ops);
	if (!sc->md_sent) {
		op->op = GRPC_OP_SEND_INITIAL_METADATA;
		op++;
		sc->md_sent = 1;
	}
	if (c->status == GRPC_STATUS_OK && reply != NULL) {
		sl = grpc_slice_from_static_buffer(reply, len);
		sc->send_bb = grpc_raw_byte_buffer_create(&sl, 1);
		op->op = GRPC_OP_SEND_MESSAGE;
		op->data.send_message.send_message = sc->send_bb;
		op++;
	}
	op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	op->data.send_status_from_server.status = c->status;
	/* Stopping, nkid answers UNAVAILABLE only for work it did not start:
	 * marked for clients to send again (docs/protocol.md, "Restarts"). */
	if (c->status == GRPC_STATUS_UNAVAILABLE && sc->s->stopping) {
		op->data.send_status_from_server.trailing_metadata_count = 1;
		op->data.send_status_from_server.trailing_metadata =
		    &server_retryable_md;
	}
	if (c->message != NULL) {
		sc->status_slice = grpc_slice_from_copied_string(c->message);
		sc->has_status_slice = 1;
		op->data.send_status_from_server.status_details =
		    &sc->status_slice;
	}
	op++;
	if (!sc->close_started) {
		op->op = GRPC_OP_RECV_CLOSE_ON_SERVER;
		op->data.recv_close_on_server.cancelled = &sc->close_cancelled;
		sc->close_started = 1;
		op++;
	}
	error = grpc_call_start_batch(sc->call, ops, (size_t)(op - ops),
	    &sc->send_tag, NULL);
	if (error != GRPC_CALL_OK) {
		log_warn("cannot send the reply of a call: error %d", error);
		/* Complete it from the loop, never inside the handler's
		 * stack: queue the completion as if gRPC had. */
		server_event_push(sc->s, &sc->send_tag, 0);
		sc->pending++;
		return;
	}
	sc->pending++;
}

static void
server_send(struct rpc_call *c, const uint8_t *reply, size_t len)
{
	struct server_call	*sc = (struct server_call *)c;

	if (sc->msg_bb != NULL) {
		/* After the stream message in flight (server_msg_cb). */
		sc->final_deferred = 1;
		return;
	}
	server_send_final(sc, reply, len);
}

static void
server_stream_send(struct rpc_call *c, const uint8_t *msg, size_t len)
{
	struct server_call	*sc = (struct server_call *)c;
	grpc_op			 ops[2], *op = ops;
	grpc_slice		 sl;
	grpc_call_error		 error;

	assert(sc->msg_bb == NULL);
	memset(ops, 0, sizeof ops);
	if (!sc->md_sent) {
		op->op = GRPC_OP_SEND_INITIAL_METADATA;
		op++;
		sc->md_sent = 1;
	}
	sl = grpc_slice_from_static_buffer(msg, len);
	sc->msg_bb = grpc_raw_byte_buffer_create(&sl, 1);
	op->op = GRPC_OP_SEND_MESSAGE;
	op->data.send_message.send_message = sc->msg_bb;
	op++;
	sc->pending++;
	error = grpc_call_start_batch(sc->call, ops, (size_t)(op - ops),
	    &sc->msg_tag, NULL);
	if (error != GRPC_CALL_OK) {
		log_warn("cannot send a stream message: error %d", error);
		server_event_push(sc->s, &sc->msg_tag, 0);
	}
}

static void
server_msg_cb(struct server *s, struct server_tag *t, int ok, uint64_t stamp)
{
	struct server_call	*sc = SC_OF(t, msg_tag);

	sc->pending--;
	grpc_byte_buffer_destroy(sc->msg_bb);
	sc->msg_bb = NULL;
	dispatch_stream_sent(&sc->rc, ok);
	if (sc->final_deferred) {
		sc->final_deferred = 0;
		server_send_final(sc, sc->rc.reply, sc->rc.reply_len);
	}
	server_call_maybe_free(sc);
}

static void
server_stream_recv(struct rpc_call *c)
{
	struct server_call	*sc = (struct server_call *)c;
	grpc_op			 op;
	grpc_call_error		 error;

	assert(sc->recv_bb == NULL);
	memset(&op, 0, sizeof op);
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &sc->recv_bb;
	sc->pending++;
	error = grpc_call_start_batch(sc->call, &op, 1, &sc->recv_tag, NULL);
	if (error != GRPC_CALL_OK) {
		log_warn("cannot receive a stream message: error %d", error);
		server_event_push(sc->s, &sc->recv_tag, 0);
	}
}

static void
server_recv_cb(struct server *s, struct server_tag *t, int ok,
    uint64_t stamp)
{
	struct server_call	*sc = SC_OF(t, recv_tag);
	grpc_byte_buffer	*bb = sc->recv_bb;
	const uint8_t		*data;
	uint8_t			*copy = NULL;
	size_t			 len = 0;

	sc->pending--;
	sc->recv_bb = NULL;
	if (!ok)
		dispatch_stream_received(&sc->rc, RPC_RECV_BROKEN, NULL, 0);
	else if (bb == NULL)
		dispatch_stream_received(&sc->rc, RPC_RECV_END, NULL, 0);
	else if ((data = server_payload_bytes(bb, &len, &copy)) == NULL) {
		dispatch_stream_received(&sc->rc, RPC_RECV_BROKEN, NULL, 0);
		if (!sc->rc.replied)
			rpc_fail(&sc->rc, GRPC_STATUS_INTERNAL,
			    "cannot read a stream message");
	} else
		dispatch_stream_received(&sc->rc, RPC_RECV_MESSAGE, data, len);
	free(copy);
	if (bb != NULL)
		grpc_byte_buffer_destroy(bb);
	server_call_maybe_free(sc);
}

static void
server_send_cb(struct server *s, struct server_tag *t, int ok, uint64_t stamp)
{
	struct server_call	*sc = SC_OF(t, send_tag);

	sc->pending--;
	if (!ok)
		log_debug("reply of %s not delivered", sc->rc.m != NULL ?
		    sc->rc.m->name : "call");
	/* A refused connection has had its answer: it goes soon. */
	if (sc->refused_fd != -1 && s->acc != NULL)
		server_accept_answered(s->acc, sc->refused_fd,
		    sc->rc.id.conn_id);
	server_call_maybe_free(sc);
}

static void
server_close_cb(struct server *s, struct server_tag *t, int ok,
    uint64_t stamp)
{
	struct server_call	*sc = SC_OF(t, close_tag);

	sc->pending--;
	if (sc->close_cancelled && !sc->rc.replied) {
		log_debug("%s from pid %u cancelled by the client",
		    sc->rc.m != NULL ? sc->rc.m->name : "call", sc->rc.id.pid);
		dispatch_call_cancel(&sc->rc);
	}
	server_call_maybe_free(sc);
}


/* ------------------------------------------------------------ life */

/* An accepted connection goes to gRPC core, which closes fd from now on.
 * Its stamp is taken first: every event of its calls is stamped later. */
static uint64_t
server_hand_cb(int fd, void *arg)
{
	struct server	*s = arg;
	uint64_t	 stamp;

	stamp = atomic_fetch_add(&s->seq, 1) + 1;
	grpc_server_add_channel_from_fd(s->srv, fd, s->creds);
	return (stamp);
}

int
server_open(struct daemon *d, char *err, size_t errlen)
{
	struct server		*s;
	grpc_arg		 args[2];
	grpc_channel_args	 cargs;
	const struct rpc_method	*m;
	uint64_t		 cap = 0;
	size_t			 i;
	int			 j, error;

	server_retryable_md.key = grpc_slice_from_static_string(
	    SERVER_RETRYABLE_KEY);
	server_retryable_md.value = grpc_slice_from_static_string("1");
	s = xcalloc(1, sizeof *s);
	s->d = d;
	TAILQ_INIT(&s->live);
	pthread_mutex_init(&s->mu, NULL);

	if (server_listen_open(&s->listen, &d->cfg, err, errlen) != 0) {
		pthread_mutex_destroy(&s->mu);
		free(s);
		return (-1);
	}
	/* A socket systemd passed is wherever it is bound. */
	if (strcmp(s->listen.path, d->cfg.socket) != 0) {
		free(d->cfg.socket);
		d->cfg.socket = xstrdup(s->listen.path);
	}
	/* The cores, for nkid's lifetime (docs/scheduling.md). */
	if (devlock_open(d->cfg.lock_dir, d->backend->ncores, &s->devlock, err,
	    errlen) != 0)
		goto fail;
	if (server_listen_bind(&s->listen, &d->cfg, err, errlen) != 0)
		goto fail;

	/* The transport cap is the largest method cap; each method's own
	 * cap is checked in dispatch before unpacking. */
	for (j = 0; j < CONFIG_CAP_COUNT; j++) {
		if (config_cap_bytes(&d->cfg, j) > cap)
			cap = config_cap_bytes(&d->cfg, j);
	}
	args[0].type = GRPC_ARG_INTEGER;
	args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
	args[0].value.integer = cap > INT_MAX ? INT_MAX : (int)cap;
	args[1].type = GRPC_ARG_INTEGER;
	args[1].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
	args[1].value.integer = -1;
	cargs.num_args = 2;
	cargs.args = args;
	s->srv = grpc_server_create(&cargs, NULL);
	s->cq = grpc_completion_queue_create_for_next(NULL);
	grpc_server_register_completion_queue(s->srv, s->cq, NULL);
	for (i = 0; i < dispatch_method_count(); i++) {
		m = dispatch_method(i);
		s->handles[i] = grpc_server_register_method(s->srv, m->path,
		    NULL, (m->kind == RPC_UNARY || m->kind ==
		    RPC_SERVER_STREAM) ? GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER
		    : GRPC_SRM_PAYLOAD_NONE, 0);
		if (s->handles[i] == NULL)
			fatal("cannot register method '%s'", m->path);
	}
	s->creds = grpc_insecure_server_credentials_create();
	grpc_server_start(s->srv);

	if ((error = wake_init(&s->wake, d->loop, server_wake_cb, s)) != 0)
		fatal("cannot create the loop's wakeup: %s", uv_strerror(error));
	if ((error = pthread_create(&s->cq_thread, NULL, server_cq_main, s)) !=
	    0)
		fatal("cannot start the completion queue thread: %s",
		    strerror(error));
	s->cq_thread_started = 1;

	for (i = 0; i < dispatch_method_count(); i++) {
		for (j = 0; j < SERVER_POSTED_PER_METHOD; j++)
			server_request_post(s, (ssize_t)i);
	}
	for (j = 0; j < SERVER_POSTED_GENERIC; j++)
		server_request_post(s, -1);

	uv_timer_init(d->loop, &s->grace_timer);
	s->grace_timer.data = s;

	s->acc = server_accept_open(d, s->listen.fd, s->listen.gid,
	    server_hand_cb, s);
	d->server = s;
	/* A socket systemd passed was logged as such: its mode is not ours. */
	if (s->listen.ours)
		log_info("listening on '%s' (mode %04o, group %u)",
		    d->cfg.socket, d->cfg.socket_mode, s->listen.gid);
	return (0);
fail:
	server_listen_close(&s->listen);
	devlock_close(s->devlock);
	pthread_mutex_destroy(&s->mu);
	free(s);
	return (-1);
}

/* One of the server's handles, or the accept room, has closed. */
static void
server_closed_cb(void *arg)
{
	struct server	*s = arg;

	if (--s->closing_handles == 0 && s->done != NULL)
		s->done(s->done_arg);
}

static void
server_handle_closed_cb(uv_handle_t *h)
{
	server_closed_cb(h->data);
}

static void
server_finish(struct server *s)
{
	s->finishing = 1;
	uv_timer_stop(&s->grace_timer);
	grpc_server_destroy(s->srv);
	s->srv = NULL;
	grpc_completion_queue_shutdown(s->cq);
	pthread_join(s->cq_thread, NULL);
	s->cq_thread_started = 0;
	server_events_drain(s);
	grpc_completion_queue_destroy(s->cq);
	s->cq = NULL;
	grpc_server_credentials_release(s->creds);
	s->creds = NULL;
	log_debug("gRPC server shut down");

	s->closing_handles = 3;
	wake_close(&s->wake, server_closed_cb);
	uv_close((uv_handle_t *)&s->grace_timer, server_handle_closed_cb);
	server_accept_close(s->acc, server_closed_cb, s);
	s->acc = NULL;
}

/*
 * gRPC down: the GOAWAY, then every call and connection cut. Idle
 * connections go too: a client that polls its socket only during a call
 * (grpcio without its EventEngine) would never read the GOAWAY, and gRPC's
 * shutdown waits for every connection to close.
 */
static void
server_grpc_down(struct server *s)
{
	if (s->grpc_down)
		return;
	s->grpc_down = 1;
	s->shutdown_tag.cb = server_shutdown_cb;
	grpc_server_shutdown_and_notify(s->srv, s->cq, &s->shutdown_tag);
	grpc_server_cancel_all_calls(s->srv);
}

static void
server_stop_check(struct server *s)
{
	if (!s->stopping || s->finishing)
		return;
	if (!s->grpc_down) {
		/* Until the last call has been answered, refusals included (a
		 * refusal cut by the shutdown would lose its mark). */
		if (s->nlive > 0)
			return;
		log_debug("no call in flight: shutting gRPC down");
		server_grpc_down(s);
		return;
	}
	if (!s->shutdown_notified || s->nlive > 0 || s->nposted > 0)
		return;
	server_finish(s);
}

static void
server_shutdown_cb(struct server *s, struct server_tag *t, int ok,
    uint64_t stamp)
{
	s->shutdown_notified = 1;
	server_stop_check(s);
}

static void
server_grace_cb(uv_timer_t *t)
{
	struct server		*s = t->data;
	struct server_call	*sc;

	if (s->grpc_down)
		return;
	if (s->nlive > s->nrefused)
		log_info("grace period over: cancelling %zu call%s",
		    s->nlive - s->nrefused, s->nlive - s->nrefused == 1 ? "" :
		    "s");
	server_grpc_down(s);
	/* Work that has not seen its call's cancellation yet. */
	TAILQ_FOREACH(sc, &s->live, entry) {
		if (!sc->rc.replied)
			dispatch_call_cancel(&sc->rc);
	}
}

void
server_stop(struct server *s, void (*done)(void *), void *arg)
{
	if (s->stopping)
		return;
	s->stopping = 1;
	s->done = done;
	s->done_arg = arg;
	server_accept_stop(s->acc);
	server_listen_stop(&s->listen);
	log_info("stopping: %zu call%s in flight, grace %u ms", s->nlive,
	    s->nlive == 1 ? "" : "s", s->d->cfg.shutdown_grace_ms);
	uv_timer_start(&s->grace_timer, server_grace_cb,
	    s->d->cfg.shutdown_grace_ms, 0);
	server_stop_check(s);
}

void
server_close(struct server *s)
{
	if (s == NULL)
		return;
	assert(s->srv == NULL && s->nlive == 0 && s->acc == NULL);
	if (s->d != NULL && s->d->server == s)
		s->d->server = NULL;
	devlock_close(s->devlock);
	server_listen_close(&s->listen);
	free(s->events);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

const char *
server_socket_path(const struct server *s)
{
	return (s->listen.path);
}
