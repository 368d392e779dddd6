/* fastpath.c: the fast path for warm calls: rendezvous sockets offered by the FastPath RPC, one SOCK_SEQPACKET connection per client, frames in and out, and the transport that carries their calls through dispatch. */
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/fastpath.h"
#include "daemon/log.h"
#include "daemon/xmalloc.h"

/* BSD's, which glibc's <sys/queue.h> lacks. */
#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)			\
	for ((var) = TAILQ_FIRST(head);					\
	    (var) != NULL && ((tvar) = TAILQ_NEXT(var, field), 1);	\
	    (var) = (tvar))
#endif

/* A socket path's room (struct sockaddr_un's sun_path). */
#define FASTPATH_PATH_MAX	sizeof(((struct sockaddr_un *)0)->sun_path)

/* How long a rendezvous socket waits for its client. */
#define FASTPATH_OFFER_MS	10000
/* Frames read per wakeup of one connection, so that one client cannot
 * hold the loop. */
#define FASTPATH_BURST		32

struct fastpath_call;

TAILQ_HEAD(fastpath_calls, fastpath_call);

/* A reply that did not fit in the socket's buffer, waiting for room. */
struct fastpath_out {
	size_t			 len;
	TAILQ_ENTRY(fastpath_out) entry;
	uint8_t			 data[];
};
TAILQ_HEAD(fastpath_outq, fastpath_out);

/* A rendezvous socket waiting for the process it was offered to. */
struct fastpath_offer {
	struct fastpath		*fp;
	uv_poll_t		 poll;
	uv_timer_t		 timer;
	int			 fd;
	int			 handles;	/* open, to close */
	char			 path[FASTPATH_PATH_MAX];
	struct rpc_identity	 id;
	TAILQ_ENTRY(fastpath_offer) entry;
};

/* One client's connection. */
struct fastpath_conn {
	struct fastpath		*fp;
	uv_poll_t		 poll;
	int			 fd;
	int			 dead;		/* gone, or cut off */
	int			 closing;
	struct rpc_identity	 id;
	uint8_t			*buf;		/* max_frame + 1 */
	unsigned		 inflight;
	struct fastpath_calls	 calls;		/* in flight */
	struct fastpath_outq	 outq;
	TAILQ_ENTRY(fastpath_conn) entry;
};

/* One call from a frame: the rpc_call dispatch sees comes first. */
struct fastpath_call {
	struct rpc_call		 rc;
	struct fastpath_conn	*conn;		/* NULL: answered */
	uint32_t		 id;
	TAILQ_ENTRY(fastpath_call) entry;
};

/* The methods a frame may call, by their code (FASTPATH_M_*). */
static const char *const fastpath_method_names[] = {
	[FASTPATH_M_PING] = "Ping",
	[FASTPATH_M_RUN] = "Run",
	[FASTPATH_M_SIMULATE] = "Simulate",
	[FASTPATH_M_LOOKUP] = "Lookup",
	[FASTPATH_M_COMPILE] = "Compile",
	[FASTPATH_M_STATUS] = "Status",
};
#define FASTPATH_NMETHODS \
	(sizeof fastpath_method_names / sizeof fastpath_method_names[0])

struct fastpath {
	struct daemon		*d;
	char			 dir[FASTPATH_PATH_MAX];
	uint32_t		 max_frame;
	uint32_t		 max_inflight;
	uint32_t		 max_per_uid;
	TAILQ_HEAD(, fastpath_offer) offers;
	TAILQ_HEAD(, fastpath_conn) conns;
	/* Answered calls, freed by reap after the loop turn. */
	struct fastpath_calls	 done;
	uv_check_t		 reap;
	uv_timer_t		 grace;
	int			 handles;	/* open, to close */
	int			 stopping;
	int			 freeing;
	void			(*stopped)(void *);
	void			*stopped_arg;
	struct fastpath_stats	 st;
	/* fastpath_method_names' methods, found once. */
	const struct rpc_method	*methods[FASTPATH_NMETHODS];
};


static void	fastpath_send(struct rpc_call *, const uint8_t *, size_t);
static void	fastpath_conn_cb(uv_poll_t *, int, int);
static void	fastpath_conn_end(struct fastpath_conn *, const char *);
static void	fastpath_stop_check(struct fastpath *);

static const struct rpc_transport fastpath_transport = {
	.send = fastpath_send,
};

static const struct rpc_method *
fastpath_method(const struct fastpath *fp, uint32_t code)
{
	return (code < FASTPATH_NMETHODS ? fp->methods[code] : NULL);
}

/* ------------------------------------------------------------ frames */

/*
 * Send one reply frame, or queue it when the socket is full. 0, or -1
 * when the connection is broken (it is then ended).
 */
static int
fastpath_frame_send(struct fastpath_conn *conn, uint32_t id, int status,
    const char *msg, const uint8_t *reply, size_t len)
{
	struct fastpath_reply	 h;
	struct fastpath_out	*o;
	struct iovec		 iov[3];
	struct msghdr		 mh;
	size_t			 mlen = msg != NULL ? strlen(msg) : 0;
	ssize_t			 n;

	if (conn->dead)
		return (-1);
	h.id = id;
	h.status = status;
	h.msg_len = (uint32_t)mlen;
	h.reply_len = (uint32_t)len;
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof h;
	iov[1].iov_base = (void *)msg;
	iov[1].iov_len = mlen;
	iov[2].iov_base = (void *)reply;
	iov[2].iov_len = len;
	if (TAILQ_EMPTY(&conn->outq)) {
		memset(&mh, 0, sizeof mh);
		mh.msg_iov = iov;
		mh.msg_iovlen = 3;
		n = sendmsg(conn->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n >= 0)
			return (0);
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			fastpath_conn_end(conn, strerror(errno));
			return (-1);
		}
	}
	/* The client is not reading: keep the frame (bounded by the calls
	 * in flight) until the socket has room. */
	o = xmalloc(sizeof *o + sizeof h + mlen + len);
	o->len = sizeof h + mlen + len;
	memcpy(o->data, &h, sizeof h);
	memcpy(o->data + sizeof h, msg, mlen);
	if (len > 0)
		memcpy(o->data + sizeof h + mlen, reply, len);
	TAILQ_INSERT_TAIL(&conn->outq, o, entry);
	uv_poll_start(&conn->poll, (conn->fp->stopping ? 0 : UV_READABLE) |
	    UV_WRITABLE | UV_DISCONNECT, fastpath_conn_cb);
	return (0);
}

/* An error frame for call id (a status message in printf format). */
static void __attribute__((format(printf, 4, 5)))
fastpath_frame_fail(struct fastpath_conn *conn, uint32_t id, int status,
    const char *fmt, ...)
{
	va_list	ap;
	char	msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fastpath_frame_send(conn, id, status, msg, NULL, 0);
}

/* ------------------------------------------------------------ calls */

static void
fastpath_reap_cb(uv_check_t *h)
{
	struct fastpath		*fp = h->data;
	struct fastpath_call	*fc;

	while ((fc = TAILQ_FIRST(&fp->done)) != NULL) {
		TAILQ_REMOVE(&fp->done, fc, entry);
		dispatch_call_release(&fc->rc);
		free(fc);
	}
	uv_check_stop(&fp->reap);
	fastpath_stop_check(fp);
}

/* The transport's send: the reply frame, then the call is freed after
 * this loop turn (dispatch and the job may still use it on the way out). */
static void
fastpath_send(struct rpc_call *c, const uint8_t *reply, size_t len)
{
	struct fastpath_call	*fc = (struct fastpath_call *)c;
	struct fastpath_conn	*conn = fc->conn;
	struct fastpath		*fp = c->d->fastpath;

	if (conn != NULL) {
		TAILQ_REMOVE(&conn->calls, fc, entry);
		conn->inflight--;
		fc->conn = NULL;
		if (c->status == GRPC_STATUS_OK && reply != NULL &&
		    sizeof(struct fastpath_reply) + len > fp->max_frame)
			fastpath_frame_fail(conn, fc->id,
			    GRPC_STATUS_RESOURCE_EXHAUSTED, "the reply of %s "
			    "(%zu bytes) exceeds the fast path's frame of %u "
			    "bytes (fastpath.max_frame_bytes): call it over "
			    "gRPC, or with output_shm", c->m->name, len,
			    fp->max_frame);
		else
			fastpath_frame_send(conn, fc->id, c->status,
			    c->message, c->status == GRPC_STATUS_OK ? reply :
			    NULL, c->status == GRPC_STATUS_OK ? len : 0);
		/* Gone, or nkid stopping: closed once the last reply left. */
		if (conn->inflight == 0 && (conn->dead || (fp->stopping &&
		    TAILQ_EMPTY(&conn->outq))))
			fastpath_conn_end(conn, NULL);
	}
	TAILQ_INSERT_TAIL(&fp->done, fc, entry);
	uv_check_start(&fp->reap, fastpath_reap_cb);
}

static struct fastpath_call *
fastpath_call_find(struct fastpath_conn *conn, uint32_t id)
{
	struct fastpath_call	*fc;

	TAILQ_FOREACH(fc, &conn->calls, entry)
		if (fc->id == id)
			return (fc);
	return (NULL);
}

/* One frame of len bytes in conn->buf (len may exceed max_frame: the
 * frame was truncated). Returns -1 when the client was cut off. */
static int
fastpath_frame_read(struct fastpath_conn *conn, size_t len)
{
	struct fastpath		*fp = conn->fp;
	struct fastpath_req	 h;
	struct fastpath_call	*fc;
	const struct rpc_method	*m;

	if (len < sizeof h) {
		fp->st.bad_frames++;
		fastpath_frame_fail(conn, 0, GRPC_STATUS_INVALID_ARGUMENT,
		    "malformed fast-path frame of %zu bytes: a frame starts "
		    "with a %zu-byte header", len, sizeof h);
		fastpath_conn_end(conn, "malformed frame");
		return (-1);
	}
	memcpy(&h, conn->buf, sizeof h);
	if (h.id == 0 || (h.kind != FASTPATH_CALL && h.kind !=
	    FASTPATH_CANCEL)) {
		fp->st.bad_frames++;
		fastpath_frame_fail(conn, 0, GRPC_STATUS_INVALID_ARGUMENT,
		    "malformed fast-path frame: kind %u, id %u (kinds: 1 "
		    "call, 2 cancel; ids from 1)", h.kind, h.id);
		fastpath_conn_end(conn, "malformed frame");
		return (-1);
	}
	if (h.kind == FASTPATH_CANCEL) {
		if ((fc = fastpath_call_find(conn, h.id)) != NULL)
			dispatch_call_cancel(&fc->rc);
		return (0);
	}
	if (len > fp->max_frame) {
		fp->st.bad_frames++;
		fastpath_frame_fail(conn, h.id, GRPC_STATUS_RESOURCE_EXHAUSTED,
		    "fast-path frame of %zu bytes exceeds %u bytes "
		    "(fastpath.max_frame_bytes): send it over gRPC", len,
		    fp->max_frame);
		return (0);
	}
	if ((m = fastpath_method(fp, h.method)) == NULL) {
		fp->st.bad_frames++;
		fastpath_frame_fail(conn, h.id, GRPC_STATUS_UNIMPLEMENTED,
		    "method %u is not on the fast path (1 Ping, 2 Run, 3 "
		    "Simulate, 4 Lookup, 5 Compile, 6 Status)", h.method);
		return (0);
	}
	if (fastpath_call_find(conn, h.id) != NULL) {
		fp->st.bad_frames++;
		fastpath_frame_fail(conn, h.id, GRPC_STATUS_INVALID_ARGUMENT,
		    "call id %u is already in flight on this connection",
		    h.id);
		return (0);
	}
	if (conn->inflight >= fp->max_inflight) {
		fastpath_frame_fail(conn, h.id, GRPC_STATUS_RESOURCE_EXHAUSTED,
		    "%u calls in flight on the fast path already "
		    "(fastpath.max_inflight)", conn->inflight);
		return (0);
	}
	fc = xcalloc(1, sizeof *fc);
	fc->conn = conn;
	fc->id = h.id;
	fc->rc.d = fp->d;
	fc->rc.m = m;
	fc->rc.tr = &fastpath_transport;
	fc->rc.id = conn->id;
	if (h.timeout_ms != 0)
		fc->rc.deadline_ns = uv_hrtime() + (uint64_t)h.timeout_ms *
		    1000000;
	TAILQ_INSERT_TAIL(&conn->calls, fc, entry);
	conn->inflight++;
	fp->st.calls++;
	dispatch_call_start(&fc->rc, conn->buf + sizeof h, len - sizeof h);
	return (0);
}

/* ------------------------------------------------------------ conns */

static void
fastpath_conn_closed_cb(uv_handle_t *h)
{
	struct fastpath_conn	*conn = h->data;
	struct fastpath		*fp = conn->fp;
	struct fastpath_out	*o;

	while ((o = TAILQ_FIRST(&conn->outq)) != NULL) {
		TAILQ_REMOVE(&conn->outq, o, entry);
		free(o);
	}
	close(conn->fd);
	TAILQ_REMOVE(&fp->conns, conn, entry);
	fp->st.clients--;
	free(conn->buf);
	free(conn);
	fastpath_stop_check(fp);
}

/*
 * The client is gone (why: a reason to log; NULL: quietly), or nkid is
 * done with it: cancel its calls in flight; the connection closes when
 * the last of them is answered. Called again (a reply that found the
 * socket broken ends it, then its sender ends it too) once it is
 * closing, it does nothing.
 */
static void
fastpath_conn_end(struct fastpath_conn *conn, const char *why)
{
	struct fastpath_call	*fc, *next;

	if (conn->closing)
		return;
	if (!conn->dead && why != NULL)
		log_debug("fast path of pid %u uid %u: %s", conn->id.pid,
		    conn->id.uid, why);
	conn->dead = 1;
	uv_poll_stop(&conn->poll);
	TAILQ_FOREACH_SAFE(fc, &conn->calls, entry, next)
		dispatch_call_cancel(&fc->rc);
	if (conn->inflight > 0 || conn->closing)
		return;		/* closing: a cancel's reply ended it */
	conn->closing = 1;
	uv_close((uv_handle_t *)&conn->poll, fastpath_conn_closed_cb);
}

static void
fastpath_conn_write(struct fastpath_conn *conn)
{
	struct fastpath_out	*o;
	ssize_t			 n;

	while ((o = TAILQ_FIRST(&conn->outq)) != NULL) {
		n = send(conn->fd, o->data, o->len, MSG_DONTWAIT |
		    MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) {
			fastpath_conn_end(conn, strerror(errno));
			return;
		}
		TAILQ_REMOVE(&conn->outq, o, entry);
		free(o);
	}
	if (conn->fp->stopping && conn->inflight == 0) {
		fastpath_conn_end(conn, NULL);
		return;
	}
	uv_poll_start(&conn->poll, conn->fp->stopping ? UV_DISCONNECT :
	    UV_READABLE | UV_DISCONNECT, fastpath_conn_cb);
}

static void
fastpath_conn_cb(uv_poll_t *h, int status, int events)
{
	struct fastpath_conn	*conn = h->data;
	ssize_t			 n;
	int			 i;

	if (status < 0) {
		fastpath_conn_end(conn, uv_strerror(status));
		return;
	}
	if (events & UV_WRITABLE)
		fastpath_conn_write(conn);
	for (i = 0; !conn->dead && !conn->fp->stopping &&
	    (events & UV_READABLE) && i < FASTPATH_BURST; i++) {
		n = recv(conn->fd, conn->buf, conn->fp->max_frame + 1,
		    MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) {
			fastpath_conn_end(conn, strerror(errno));
			return;
		}
		/* 0: the client closed (an empty frame is no call either). */
		if (n == 0) {
			fastpath_conn_end(conn, NULL);
			return;
		}
		if (fastpath_frame_read(conn, (size_t)n) != 0)
			return;
	}
	if (!conn->dead && (events & UV_DISCONNECT) && !(events & UV_READABLE))
		fastpath_conn_end(conn, NULL);
}

/* ------------------------------------------------------------ offers */

static void
fastpath_offer_closed_cb(uv_handle_t *h)
{
	struct fastpath_offer	*o = h->data;
	struct fastpath		*fp = o->fp;

	if (--o->handles > 0)
		return;
	TAILQ_REMOVE(&fp->offers, o, entry);
	free(o);
	fastpath_stop_check(fp);
}

static void
fastpath_offer_close(struct fastpath_offer *o)
{
	if (o->fd < 0)
		return;
	unlink(o->path);
	uv_poll_stop(&o->poll);
	close(o->fd);
	o->fd = -1;
	uv_close((uv_handle_t *)&o->poll, fastpath_offer_closed_cb);
	uv_close((uv_handle_t *)&o->timer, fastpath_offer_closed_cb);
}

static void
fastpath_offer_timer_cb(uv_timer_t *t)
{
	struct fastpath_offer	*o = t->data;

	log_debug("fast path offered to pid %u uid %u: not taken within %d "
	    "ms", o->id.pid, o->id.uid, FASTPATH_OFFER_MS);
	fastpath_offer_close(o);
}

static void
fastpath_offer_cb(uv_poll_t *h, int status, int events)
{
	struct fastpath_offer	*o = h->data;
	struct fastpath		*fp = o->fp;
	struct fastpath_conn	*conn;
	struct ucred		 cr;
	socklen_t		 crlen = sizeof cr;
	int			 fd, sz;

	if (status < 0) {
		fastpath_offer_close(o);
		return;
	}
	fd = accept4(o->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;		/* EAGAIN, or the client gave up */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0 ||
	    (uint32_t)cr.pid != o->id.pid || (uint32_t)cr.uid != o->id.uid) {
		fp->st.refused++;
		log_warn("fast path '%s' offered to pid %u uid %u: refused a "
		    "connection from pid %ld uid %ld", o->path, o->id.pid,
		    o->id.uid, (long)cr.pid, (long)cr.uid);
		close(fd);
		return;
	}
	/* Replies up to a frame fit in the socket's buffer when they can. */
	sz = (int)fp->max_frame * 2;
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
	conn = xcalloc(1, sizeof *conn);
	conn->fp = fp;
	conn->fd = fd;
	conn->id = o->id;
	conn->buf = xmalloc((size_t)fp->max_frame + 1);
	TAILQ_INIT(&conn->calls);
	TAILQ_INIT(&conn->outq);
	uv_poll_init(fp->d->loop, &conn->poll, fd);
	conn->poll.data = conn;
	TAILQ_INSERT_TAIL(&fp->conns, conn, entry);
	fp->st.clients++;
	fp->st.connected++;
	fastpath_offer_close(o);
	/* The hello: the connection is the caller's from now on. */
	if (fastpath_frame_send(conn, 0, GRPC_STATUS_OK, NULL, NULL, 0) == 0)
		uv_poll_start(&conn->poll, UV_READABLE | UV_DISCONNECT,
		    fastpath_conn_cb);
}

static unsigned
fastpath_uid_count(const struct fastpath *fp, uint32_t uid)
{
	const struct fastpath_offer	*o;
	const struct fastpath_conn	*conn;
	unsigned			 n = 0;

	TAILQ_FOREACH(o, &fp->offers, entry)
		n += o->fd >= 0 && o->id.uid == uid;
	TAILQ_FOREACH(conn, &fp->conns, entry)
		n += !conn->dead && conn->id.uid == uid;
	return (n);
}

void
fastpath_offer(struct fastpath *fp, struct rpc_call *c)
{
	Nkid__V1__FastPathReply	 r = NKID__V1__FAST_PATH_REPLY__INIT;
	struct fastpath_offer	*o;
	struct sockaddr_un	 sa;
	uint8_t			 rnd[8];
	char			 hex[17];
	int			 fd, i;

	if (fp == NULL || fp->stopping) {
		rpc_fail(c, GRPC_STATUS_UNAVAILABLE, "the fast path is %s",
		    fp == NULL ? "off (fastpath.max_clients_per_uid is 0)" :
		    "closed: nkid is stopping");
		return;
	}
	if (fastpath_uid_count(fp, c->id.uid) >= fp->max_per_uid) {
		rpc_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "uid %u has %u "
		    "fast-path connections already "
		    "(fastpath.max_clients_per_uid)", c->id.uid,
		    fp->max_per_uid);
		return;
	}
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
		rpc_fail(c, GRPC_STATUS_INTERNAL, "cannot offer a fast path: "
		    "getrandom: %s", strerror(errno));
		return;
	}
	for (i = 0; i < 8; i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if ((size_t)snprintf(sa.sun_path, sizeof sa.sun_path, "%s/.fp.%s",
	    fp->dir, hex) >= sizeof sa.sun_path) {
		rpc_fail(c, GRPC_STATUS_INTERNAL, "cannot offer a fast path: "
		    "directory '%s' is too long for a socket path", fp->dir);
		return;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    chmod(sa.sun_path, 0666) != 0 || listen(fd, 4) != 0) {
		rpc_fail(c, GRPC_STATUS_UNAVAILABLE, "cannot offer a fast path "
		    "at '%s': %s", sa.sun_path, strerror(errno));
		if (fd >= 0) {
			unlink(sa.sun_path);
			close(fd);
		}
		return;
	}
	o = xcalloc(1, sizeof *o);
	o->fp = fp;
	o->fd = fd;
	o->id = c->id;
	o->handles = 2;
	memcpy(o->path, sa.sun_path, sizeof o->path);
	uv_poll_init(fp->d->loop, &o->poll, fd);
	o->poll.data = o;
	uv_poll_start(&o->poll, UV_READABLE, fastpath_offer_cb);
	uv_timer_init(fp->d->loop, &o->timer);
	o->timer.data = o;
	uv_timer_start(&o->timer, fastpath_offer_timer_cb, FASTPATH_OFFER_MS,
	    0);
	TAILQ_INSERT_TAIL(&fp->offers, o, entry);

	r.path = o->path;
	r.version = FASTPATH_VERSION;
	r.max_frame_bytes = fp->max_frame;
	r.max_inflight = fp->max_inflight;
	r.expires_ms = FASTPATH_OFFER_MS;
	rpc_reply(c, &r.base);
}

/* ------------------------------------------------------------ life */

struct fastpath *
fastpath_new(struct daemon *d, const char *dir)
{
	struct fastpath	*fp;
	size_t		 i;

	if (d->cfg.fastpath_max_clients_per_uid == 0)
		return (NULL);
	fp = xcalloc(1, sizeof *fp);
	fp->d = d;
	snprintf(fp->dir, sizeof fp->dir, "%s", dir);
	fp->max_frame = d->cfg.fastpath_max_frame_bytes;
	fp->max_inflight = d->cfg.fastpath_max_inflight;
	fp->max_per_uid = d->cfg.fastpath_max_clients_per_uid;
	for (i = 0; i < FASTPATH_NMETHODS; i++) {
		if (fastpath_method_names[i] == NULL)
			continue;
		fp->methods[i] = dispatch_method_find(fastpath_method_names[i]);
		assert(fp->methods[i] != NULL);
	}
	TAILQ_INIT(&fp->offers);
	TAILQ_INIT(&fp->conns);
	TAILQ_INIT(&fp->done);
	uv_check_init(d->loop, &fp->reap);
	fp->reap.data = fp;
	uv_timer_init(d->loop, &fp->grace);
	fp->grace.data = fp;
	fp->handles = 2;
	return (fp);
}

static void
fastpath_stop_check(struct fastpath *fp)
{
	void	(*done)(void *);

	if (!fp->stopping || fp->stopped == NULL ||
	    !TAILQ_EMPTY(&fp->offers) || !TAILQ_EMPTY(&fp->conns) ||
	    !TAILQ_EMPTY(&fp->done))
		return;
	uv_timer_stop(&fp->grace);
	done = fp->stopped;
	fp->stopped = NULL;
	done(fp->stopped_arg);
}

/* Past the grace: what is still in flight is cancelled. */
static void
fastpath_grace_cb(uv_timer_t *t)
{
	struct fastpath		*fp = t->data;
	struct fastpath_conn	*conn, *next;

	TAILQ_FOREACH_SAFE(conn, &fp->conns, entry, next)
		fastpath_conn_end(conn, "nkid is stopping");
}

void
fastpath_stop(struct fastpath *fp, void (*done)(void *), void *arg)
{
	struct fastpath_offer	*o, *onext;
	struct fastpath_conn	*conn, *next;

	assert(!fp->stopping);
	fp->stopping = 1;
	fp->stopped = done;
	fp->stopped_arg = arg;
	TAILQ_FOREACH_SAFE(o, &fp->offers, entry, onext)
		fastpath_offer_close(o);
	/* No new frames; a connection closes when its calls are answered. */
	TAILQ_FOREACH_SAFE(conn, &fp->conns, entry, next) {
		if (conn->dead)
			continue;
		if (conn->inflight == 0 && TAILQ_EMPTY(&conn->outq))
			fastpath_conn_end(conn, NULL);
		else
			uv_poll_start(&conn->poll, UV_DISCONNECT |
			    (TAILQ_EMPTY(&conn->outq) ? 0 : UV_WRITABLE),
			    fastpath_conn_cb);
	}
	uv_timer_start(&fp->grace, fastpath_grace_cb,
	    fp->d->cfg.shutdown_grace_ms, 0);
	fastpath_stop_check(fp);
}

static void
fastpath_closed_cb(uv_handle_t *h)
{
	struct fastpath	*fp = h->data;

	if (--fp->handles == 0)
		free(fp);
}

void
fastpath_free(struct fastpath *fp)
{
	if (fp == NULL)
		return;
	assert(TAILQ_EMPTY(&fp->conns) && TAILQ_EMPTY(&fp->offers) &&
	    TAILQ_EMPTY(&fp->done));
	if (fp->d->fastpath == fp)
		fp->d->fastpath = NULL;
	uv_close((uv_handle_t *)&fp->reap, fastpath_closed_cb);
	uv_close((uv_handle_t *)&fp->grace, fastpath_closed_cb);
}

void
fastpath_stats_get(const struct fastpath *fp, struct fastpath_stats *st)
{
	if (fp == NULL) {
		memset(st, 0, sizeof *st);
		return;
	}
	*st = fp->st;
}
