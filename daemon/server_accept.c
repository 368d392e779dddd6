/* server_accept.c: accepting connections: peer credentials, the access policy, the connection table, descriptor rotation and refusals. */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "daemon/access.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/log.h"
#include "daemon/server_accept.h"
#include "daemon/xmalloc.h"

/* Most connections accepted per loop wakeup. */
#define SERVER_ACCEPT_BATCH		64
/* Sweep interval for closed connections. */
#define SERVER_ACCEPT_SWEEP_MS		1000
/* Out of descriptors: the longest pause before accepting is tried again
 * (a connection that closes ends it sooner). */
#define SERVER_ACCEPT_PAUSE_MS		1000
/* Refused peers whose connections are handed to gRPC to be told why
 * (PERMISSION_DENIED); over this many open at once, closed at accept. */
#define SERVER_ACCEPT_REFUSED_MAX	16
/* A refused connection is shut down this long after its first answer, or
 * after it was accepted if it makes no call. */
#define SERVER_ACCEPT_REFUSED_LINGER_NS	(200ULL * 1000000)
#define SERVER_ACCEPT_REFUSED_IDLE_NS	(3000ULL * 1000000)

/* One accepted connection, at fd number fd_base + its slot. */
struct server_conn {
	uint64_t	id;
	uint64_t	seq;		/* stamp when handed to gRPC; 0: never */
	uint32_t	uid;
	uint32_t	gid;
	uint32_t	pid;
	int		admin;		/* access_peer_admin, at accept */
	dev_t		dev;
	ino_t		ino;
	int		alive;
	int		refused;	/* every call: PERMISSION_DENIED */
	char		*refusal;	/* its message (refused only) */
	uint64_t	accepted_ns;
	uint64_t	answered_ns;	/* first refusal sent; 0: not yet */
	int		shut;		/* shutdown(2) done */
};

struct server_accept {
	struct daemon		*d;
	int			 listen_fd;
	uint32_t		 sock_gid;
	uint32_t		 self_uid;
	uint64_t		(*hand_cb)(int, void *);
	void			*hand_arg;

	uv_poll_t		 poll;
	uv_timer_t		 sweep_timer;
	uv_timer_t		 pause_timer;
	int			 polling;	/* poll started */
	int			 stopped;	/* accepting ended for good */
	int			 closing;	/* handles being closed */
	int			 close_called;
	void			(*done)(void *);
	void			*done_arg;

	/* Out of descriptors (or accept failing): an episode lasts until
	 * an accept succeeds again. */
	int			 reserve_fd;	/* -1: none */
	int			 exhausted;
	uint64_t		 shed;		/* refused during the episode */

	struct server_conn	*conns;
	int			 fd_base;
	int			 fd_range;
	int			 fd_next;
	int			*alive;		/* fds of live conns */
	size_t			 nalive;
	uint64_t		 next_conn_id;
	uint64_t		 refusal_logged_ns;
	uint64_t		 refusals_quiet;
	size_t			 nrefused_open;	/* refused conns alive */
};

static void	server_accept_cb(uv_poll_t *p, int status, int events);

/* ------------------------------------------------------------ conns */

static void
server_accept_fd_range_init(struct server_accept *a)
{
	struct rlimit	rl;
	rlim_t		want = 65536;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < want && rl.rlim_max > rl.rlim_cur) {
			rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
			if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
				getrlimit(RLIMIT_NOFILE, &rl);
		}
	} else
		rl.rlim_cur = 1024;
	if (rl.rlim_cur > INT_MAX)
		rl.rlim_cur = INT_MAX;
	/* Accepted fds live in the upper half, rotating through it. */
	a->fd_base = (int)(rl.rlim_cur / 2);
	a->fd_range = (int)rl.rlim_cur - a->fd_base - 16;
	if (a->fd_range < 16)
		fatal("the descriptor limit %llu is too small",
		    (unsigned long long)rl.rlim_cur);
	if (a->fd_range < 4096)
		log_warn("only %d descriptor numbers to rotate connections "
		    "through (RLIMIT_NOFILE %llu); raise the limit", a->fd_range,
		    (unsigned long long)rl.rlim_cur);
	a->fd_next = a->fd_base;
	a->conns = xcalloc((size_t)a->fd_range, sizeof *a->conns);
	log_debug("connections rotate through descriptors %d to %d",
	    a->fd_base, a->fd_base + a->fd_range - 1);
}

static struct server_conn *
server_accept_conn_at(struct server_accept *a, int fd)
{
	if (fd < a->fd_base || fd >= a->fd_base + a->fd_range)
		return (NULL);
	return (&a->conns[fd - a->fd_base]);
}

static void
server_accept_counters(struct server_accept *a)
{
	a->d->active_connections = a->nalive - a->nrefused_open;
}

static void	server_accept_resume(struct server_accept *a);

static void
server_accept_conn_dead(struct server_accept *a, size_t i)
{
	struct server_conn	*conn = server_accept_conn_at(a, a->alive[i]);

	log_debug("connection %llu (fd %d, uid %u pid %u%s) closed",
	    (unsigned long long)conn->id, a->alive[i], conn->uid, conn->pid,
	    conn->refused ? ", refused" : "");
	conn->alive = 0;
	if (conn->refused) {
		conn->refused = 0;
		free(conn->refusal);
		conn->refusal = NULL;
		a->nrefused_open--;
	}
	a->alive[i] = a->alive[--a->nalive];
	server_accept_counters(a);
	/* A descriptor came free: try accepting again. */
	server_accept_resume(a);
}

/* A refused connection has been told, or had its chance: shut it down so
 * that gRPC closes it (the fd stays gRPC's to close). */
static void
server_accept_refused_expire(int fd, struct server_conn *conn, uint64_t now)
{
	if (conn->shut)
		return;
	if (conn->answered_ns != 0 ? now - conn->answered_ns <
	    SERVER_ACCEPT_REFUSED_LINGER_NS : now - conn->accepted_ns <
	    SERVER_ACCEPT_REFUSED_IDLE_NS)
		return;
	shutdown(fd, SHUT_RDWR);
	conn->shut = 1;
}

static void	server_accept_refuse_flush(struct server_accept *a,
		    uint64_t now);

void
server_accept_sweep(struct server_accept *a)
{
	struct server_conn	*conn;
	struct stat		 sb;
	uint64_t		 now = uv_hrtime();
	size_t			 i;

	for (i = 0; i < a->nalive; ) {
		conn = server_accept_conn_at(a, a->alive[i]);
		if (fstat(a->alive[i], &sb) == -1 || sb.st_dev != conn->dev ||
		    sb.st_ino != conn->ino) {
			server_accept_conn_dead(a, i);
			continue;
		}
		if (conn->refused)
			server_accept_refused_expire(a->alive[i], conn, now);
		i++;
	}
	server_accept_counters(a);
	server_accept_refuse_flush(a, now);
}

static unsigned
server_accept_conns_of_uid(struct server_accept *a, uint32_t uid)
{
	struct server_conn	*conn;
	unsigned		 n = 0;
	size_t			 i;

	for (i = 0; i < a->nalive; i++) {
		conn = server_accept_conn_at(a, a->alive[i]);
		if (conn->uid == uid && !conn->refused)
			n++;
	}
	return (n);
}

static void
server_accept_sweep_cb(uv_timer_t *t)
{
	server_accept_sweep(t->data);
}

/* Move fd to the next free number of the rotating range; -1 if none. */
static int
server_accept_fd_rotate(struct server_accept *a, int fd)
{
	int	nfd, tries;

	for (tries = 0; tries < 2; tries++) {
		nfd = fcntl(fd, F_DUPFD_CLOEXEC, a->fd_next);
		if (nfd != -1 && nfd < a->fd_base + a->fd_range) {
			a->fd_next = nfd + 1;
			if (a->fd_next >= a->fd_base + a->fd_range)
				a->fd_next = a->fd_base;
			close(fd);
			return (nfd);
		}
		if (nfd != -1)
			close(nfd);
		a->fd_next = a->fd_base;	/* wrap */
	}
	return (-1);
}

/* ------------------------------------------------------------ refusals */

/* Refusals logged within the last second are counted, and the count is
 * logged a second later at most (by the next refusal or the sweep). */
static void
server_accept_refuse_flush(struct server_accept *a, uint64_t now)
{
	if (a->refusals_quiet == 0 || now - a->refusal_logged_ns <=
	    1000000000ULL)
		return;
	log_warn("%llu more connections refused",
	    (unsigned long long)a->refusals_quiet);
	a->refusal_logged_ns = now;
	a->refusals_quiet = 0;
}

static void
server_accept_refuse_log(struct server_accept *a, const char *why)
{
	uint64_t	now = uv_hrtime();

	a->d->refused++;
	if (now - a->refusal_logged_ns > 1000000000ULL) {
		server_accept_refuse_flush(a, now);
		log_warn("refused connection: %s", why);
		a->refusal_logged_ns = now;
	} else
		a->refusals_quiet++;
}

static void
server_accept_refuse(struct server_accept *a, int fd, const char *why)
{
	close(fd);
	server_accept_refuse_log(a, why);
}

/* ------------------------------------------------------------ accept */

static void
server_accept_one(struct server_accept *a, int fd)
{
	const struct config	*cfg = &a->d->cfg;
	struct ucred		 cr;
	socklen_t		 len = sizeof cr;
	gid_t			 groups[256];
	socklen_t		 glen = sizeof groups;
	struct access_peer	 peer;
	struct server_conn	*conn;
	struct stat		 sb;
	char			 why[256], msg[320];
	unsigned		 n;
	size_t			 i;
	int			 nfd, verdict;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == -1) {
		snprintf(why, sizeof why, "cannot read SO_PEERCRED: %s",
		    strerror(errno));
		server_accept_refuse(a, fd, why);
		return;
	}
	memset(&peer, 0, sizeof peer);
	peer.uid = cr.uid;
	peer.gid = cr.gid;
	peer.pid = (uint32_t)cr.pid;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0) {
		peer.groups = groups;
		peer.ngroups = glen / sizeof groups[0];
	}
	n = server_accept_conns_of_uid(a, cr.uid);
	if (n >= cfg->max_conn_per_uid) {
		server_accept_sweep(a);
		n = server_accept_conns_of_uid(a, cr.uid);
	}
	verdict = access_peer_check(cfg, a->self_uid, a->sock_gid, &peer, n,
	    why, sizeof why);
	if (verdict != ACCESS_ALLOW) {
		snprintf(msg, sizeof msg, "pid %u: %s", peer.pid, why);
		if (a->nrefused_open >= SERVER_ACCEPT_REFUSED_MAX) {
			server_accept_refuse(a, fd, msg);
			return;
		}
		/* Handed to gRPC, so the client reads why. */
		server_accept_refuse_log(a, msg);
		if (verdict == ACCESS_EPOLICY)
			snprintf(why, sizeof why, "uid %u is not allowed to use "
			    "nkid (access.allow_uids, access.allow_gids or the "
			    "socket's group %u %s%s)", peer.uid, a->sock_gid,
			    cfg->path != NULL ? "in " : "of the built-in "
			    "defaults: nkid runs without a config file",
			    cfg->path != NULL ? cfg->path : "");
	}
	if ((nfd = server_accept_fd_rotate(a, fd)) == -1) {
		server_accept_refuse(a, fd, "no free descriptor number in the "
		    "rotating range");
		return;
	}
	if (fstat(nfd, &sb) == -1) {
		server_accept_refuse(a, nfd, "cannot fstat the connection");
		return;
	}
	conn = server_accept_conn_at(a, nfd);
	/* The number was free, so whoever had it before has closed. */
	if (conn->alive) {
		for (i = 0; i < a->nalive; i++) {
			if (a->alive[i] == nfd) {
				server_accept_conn_dead(a, i);
				break;
			}
		}
	}
	free(conn->refusal);
	memset(conn, 0, sizeof *conn);
	conn->id = ++a->next_conn_id;
	conn->accepted_ns = uv_hrtime();
	if (verdict != ACCESS_ALLOW) {
		conn->refused = 1;
		conn->refusal = xstrdup(why);
		a->nrefused_open++;
	}
	conn->uid = peer.uid;
	conn->gid = peer.gid;
	conn->pid = peer.pid;
	conn->admin = access_peer_admin(cfg, a->self_uid, &peer);
	conn->dev = sb.st_dev;
	conn->ino = sb.st_ino;
	conn->alive = 1;
	a->alive = xreallocarray(a->alive, a->nalive + 1, sizeof *a->alive);
	a->alive[a->nalive++] = nfd;
	if (!conn->refused)
		a->d->connections++;
	server_accept_counters(a);
	log_debug("connection %llu from uid %u gid %u pid %u on fd %d%s",
	    (unsigned long long)conn->id, peer.uid, peer.gid, peer.pid, nfd,
	    conn->refused ? " (refused: its calls are answered "
	    "PERMISSION_DENIED)" : "");
	/* Stamped before gRPC can see it: every call of this connection is
	 * stamped later (see docs/protocol.md, "Identity"). */
	conn->seq = a->hand_cb(nfd, a->hand_arg);
}

/* ------------------------------------------------------------ exhaustion */

static int
server_accept_reserve_open(void)
{
	return (open("/dev/null", O_RDONLY | O_CLOEXEC));
}

/* Out of descriptors, a client waits in the backlog with nobody to answer
 * it: free the reserve descriptor, take that client and close it at once
 * (it is told by the closed connection, not left to its deadline), and
 * take the reserve back. */
static void
server_accept_shed(struct server_accept *a)
{
	int	fd;

	if (a->reserve_fd == -1)
		return;
	close(a->reserve_fd);
	fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd != -1) {
		close(fd);
		a->d->refused++;
		a->shed++;
	}
	a->reserve_fd = server_accept_reserve_open();
}

static void
server_accept_pause_cb(uv_timer_t *t)
{
	server_accept_resume(t->data);
}

/* accept4 failed with error: stop polling (the socket stays readable, so
 * a level-triggered poll would spin), refuse one waiting client if it was
 * for want of descriptors, and try again when a connection closes or
 * after SERVER_ACCEPT_PAUSE_MS. */
static void
server_accept_pause(struct server_accept *a, int error)
{
	int	nofd = error == EMFILE || error == ENFILE;

	if (!a->exhausted) {
		a->exhausted = 1;
		a->shed = 0;
		log_warn("cannot accept on '%s': %s; accepting paused until %s",
		    a->d->cfg.socket, strerror(error), nofd ? "a connection "
		    "closes (a waiting client is refused each second)" :
		    "a connection closes or for a second");
	}
	if (nofd)
		server_accept_shed(a);
	if (a->polling) {
		uv_poll_stop(&a->poll);
		a->polling = 0;
	}
	uv_timer_start(&a->pause_timer, server_accept_pause_cb,
	    SERVER_ACCEPT_PAUSE_MS, 0);
}

static void
server_accept_resume(struct server_accept *a)
{
	if (a->polling || a->stopped)
		return;
	uv_timer_stop(&a->pause_timer);
	if (a->reserve_fd == -1)
		a->reserve_fd = server_accept_reserve_open();
	uv_poll_start(&a->poll, UV_READABLE, server_accept_cb);
	a->polling = 1;
}

static void
server_accept_cb(uv_poll_t *p, int status, int events)
{
	struct server_accept	*a = p->data;
	int			 fd, i;

	if (status < 0) {
		log_warn("accept poll: %s", uv_strerror(status));
		return;
	}
	for (i = 0; i < SERVER_ACCEPT_BATCH && !a->stopped; i++) {
		fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC |
		    SOCK_NONBLOCK);
		if (fd == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR || errno == ECONNABORTED)
				return;
			server_accept_pause(a, errno);
			return;
		}
		if (a->exhausted) {
			a->exhausted = 0;
			log_info("accepting on '%s' again (%llu connection%s "
			    "refused meanwhile)", a->d->cfg.socket,
			    (unsigned long long)a->shed, a->shed == 1 ? "" :
			    "s");
		}
		server_accept_one(a, fd);
	}
}

/* ------------------------------------------------------------ life */

struct server_accept *
server_accept_open(struct daemon *d, int listen_fd, uint32_t sock_gid,
    uint64_t (*hand_cb)(int, void *), void *arg)
{
	struct server_accept	*a;
	int			 error;

	assert(listen_fd != -1 && hand_cb != NULL);
	a = xcalloc(1, sizeof *a);
	a->d = d;
	a->listen_fd = listen_fd;
	a->sock_gid = sock_gid;
	a->self_uid = (uint32_t)geteuid();
	a->hand_cb = hand_cb;
	a->hand_arg = arg;
	server_accept_fd_range_init(a);
	/* Opened first, so it has a low number that accept4 gets back. */
	if ((a->reserve_fd = server_accept_reserve_open()) == -1)
		log_warn("cannot open a reserve descriptor: %s", strerror(errno));

	uv_timer_init(d->loop, &a->sweep_timer);
	a->sweep_timer.data = a;
	uv_timer_start(&a->sweep_timer, server_accept_sweep_cb,
	    SERVER_ACCEPT_SWEEP_MS, SERVER_ACCEPT_SWEEP_MS);
	uv_timer_init(d->loop, &a->pause_timer);
	a->pause_timer.data = a;
	if ((error = uv_poll_init(d->loop, &a->poll, listen_fd)) != 0)
		fatal("cannot poll the listening socket: %s",
		    uv_strerror(error));
	a->poll.data = a;
	uv_poll_start(&a->poll, UV_READABLE, server_accept_cb);
	a->polling = 1;
	return (a);
}

static void
server_accept_closed_cb(uv_handle_t *h)
{
	struct server_accept	*a = h->data;
	void			(*done)(void *) = a->done;
	void			*arg = a->done_arg;
	int			 i;

	if (--a->closing > 0 || !a->close_called)
		return;
	for (i = 0; i < a->fd_range; i++)
		free(a->conns[i].refusal);
	free(a->conns);
	free(a->alive);
	free(a);
	if (done != NULL)
		done(arg);
}

void
server_accept_stop(struct server_accept *a)
{
	if (a->stopped)
		return;
	a->stopped = 1;
	a->polling = 0;
	uv_timer_stop(&a->pause_timer);
	/* uv_close stops the poll at once (the fd leaves epoll). */
	a->closing++;
	uv_close((uv_handle_t *)&a->poll, server_accept_closed_cb);
}

void
server_accept_close(struct server_accept *a, void (*done)(void *),
    void *arg)
{
	server_accept_stop(a);
	if (a->reserve_fd != -1) {
		close(a->reserve_fd);
		a->reserve_fd = -1;
	}
	a->done = done;
	a->done_arg = arg;
	a->close_called = 1;
	a->closing += 2;
	uv_close((uv_handle_t *)&a->sweep_timer, server_accept_closed_cb);
	uv_close((uv_handle_t *)&a->pause_timer, server_accept_closed_cb);
}

int
server_accept_identify(struct server_accept *a, int fd, uint64_t stamp,
    struct rpc_identity *id, const char **refusal)
{
	struct server_conn	*conn;

	if ((conn = server_accept_conn_at(a, fd)) == NULL || conn->seq == 0)
		return (SERVER_ACCEPT_UNKNOWN);
	if (conn->seq > stamp) {
		/* The call is older than the connection now at fd: its own
		 * connection is gone. */
		log_debug("call on fd %d predates connection %llu", fd,
		    (unsigned long long)conn->id);
		return (SERVER_ACCEPT_GONE);
	}
	id->uid = conn->uid;
	id->gid = conn->gid;
	id->pid = conn->pid;
	id->admin = conn->admin;
	id->conn_id = conn->id;
	if (conn->refused) {
		*refusal = conn->refusal;
		return (SERVER_ACCEPT_REFUSED);
	}
	return (SERVER_ACCEPT_ALLOWED);
}

void
server_accept_answered(struct server_accept *a, int fd, uint64_t conn_id)
{
	struct server_conn	*conn;

	if ((conn = server_accept_conn_at(a, fd)) != NULL && conn->alive &&
	    conn->refused && conn->id == conn_id && conn->answered_ns == 0)
		conn->answered_ns = uv_hrtime();
}
