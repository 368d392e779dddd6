/* server.c: lock, listening socket, accept with SO_PEERCRED policy, and the gRPC core bridge to the loop. */
#include <sys/file.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <systemd/sd-daemon.h>
#include <uv.h>

#include "daemon/access.h"
#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/devlock.h"
#include "daemon/dispatch.h"
#include "daemon/log.h"
#include "daemon/server.h"
#include "daemon/xmalloc.h"

/* Requests kept posted per method, and for unknown methods. */
#define SERVER_POSTED_PER_METHOD	4
#define SERVER_POSTED_GENERIC		2
/* Most connections accepted per loop wakeup. */
#define SERVER_ACCEPT_BATCH		64
/* Sweep interval for closed connections. */
#define SERVER_SWEEP_MS			1000
/* Refused peers whose connections are handed to gRPC to be told why
 * (PERMISSION_DENIED); over this many open at once, closed at accept. */
#define SERVER_REFUSED_MAX		16
/* A refused connection is shut down this long after its first answer, or
 * after it was accepted if it makes no call. */
#define SERVER_REFUSED_LINGER_NS	(200ULL * 1000000)
#define SERVER_REFUSED_IDLE_NS		(3000ULL * 1000000)

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

/* One accepted connection, at fd number fd_base + its slot. */
struct server_conn {
	uint64_t	id;
	uint64_t	seq;		/* stamp when handed to gRPC; 0: never */
	uint32_t	uid;
	uint32_t	gid;
	int			 admin;		/* access_peer_admin */
	uint32_t	pid;
	dev_t		dev;
	ino_t		ino;
	int		alive;
	int		refused;	/* every call: PERMISSION_DENIED */
	char		*refusal;	/* its message (refused only) */
	uint64_t	accepted_ns;
	uint64_t	answered_ns;	/* first refusal sent; 0: not yet */
	int		shut;		/* shutdown(2) done */
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
	int			 pending;	/* batches in flight */
	grpc_byte_buffer	*send_bb;
	grpc_slice		 status_slice;
	int			 has_status_slice;
	TAILQ_ENTRY(server_call) entry;
};
TAILQ_HEAD(server_calls, server_call);

struct server {
	struct daemon		*d;

	int			 lock_fd;
	char			*lock_path;
	struct devlock		*devlock;	/* lock_dir/core-N */
	int			 listen_fd;
	int			 listen_ours;	/* we created the path */
	char			*socket_path;
	uint32_t		 sock_gid;
	uint32_t		 self_uid;
	uv_poll_t		 listen_poll;
	int			 listen_polling;

	grpc_server		*srv;
	grpc_completion_queue	*cq;
	grpc_server_credentials	*creds;
	void			*handles[DAEMON_MAX_METHODS];
	pthread_t		 cq_thread;
	int			 cq_thread_started;
	_Atomic uint64_t	 seq;

	uv_async_t		 async;
	pthread_mutex_t		 mu;
	struct server_event	*events;	/* under mu */
	size_t			 nevents;
	size_t			 capevents;

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

	struct server_calls	 live;
	size_t			 nlive;
	size_t			 nposted;

	uv_timer_t		 sweep_timer;
	uv_timer_t		 grace_timer;
	struct server_tag	 shutdown_tag;
	int			 stopping;
	int			 shutdown_notified;
	int			 finishing;
	int			 closing_handles;
	void			(*done)(void *);
	void			*done_arg;
};

static void	server_call_maybe_free(struct server_call *sc);
static void	server_stop_check(struct server *s);

/* ------------------------------------------------------------ lock */

static int
server_lock_open(struct server *s, const char *socket, char *err,
    size_t errlen)
{
	char	buf[32];
	ssize_t	n;
	long	pid;

	s->lock_path = xasprintf("%s.lock", socket);
	s->lock_fd = open(s->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (s->lock_fd == -1) {
		snprintf(err, errlen, "cannot open lock '%s': %s", s->lock_path,
		    strerror(errno));
		return (-1);
	}
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno != EWOULDBLOCK) {
			snprintf(err, errlen, "cannot lock '%s': %s",
			    s->lock_path, strerror(errno));
			return (-1);
		}
		n = pread(s->lock_fd, buf, sizeof buf - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		pid = strtol(buf, NULL, 10);
		if (pid > 0)
			snprintf(err, errlen, "socket '%s' is in use by nkid "
			    "pid %ld (lock '%s')", socket, pid, s->lock_path);
		else
			snprintf(err, errlen, "socket '%s' is in use by another "
			    "nkid (lock '%s')", socket, s->lock_path);
		return (-1);
	}
	n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (ftruncate(s->lock_fd, 0) == -1 ||
	    pwrite(s->lock_fd, buf, (size_t)n, 0) != n)
		log_warn("cannot write pid into '%s': %s", s->lock_path,
		    strerror(errno));
	return (0);
}

/* ------------------------------------------------------------ socket */

static int
server_group_resolve(const char *name, uint32_t *gid, char *err,
    size_t errlen)
{
	char		 buf[16384], *end;
	struct group	 gr, *grp;
	unsigned long	 n;

	if (*name == '\0') {
		*gid = (uint32_t)getegid();
		return (0);
	}
	errno = 0;
	n = strtoul(name, &end, 10);
	if (*end == '\0' && errno == 0 && n < UINT32_MAX) {
		*gid = (uint32_t)n;
		return (0);
	}
	if (getgrnam_r(name, &gr, buf, sizeof buf, &grp) != 0 || grp == NULL) {
		snprintf(err, errlen, "unknown socket_group '%s'", name);
		return (-1);
	}
	*gid = grp->gr_gid;
	return (0);
}

static int
server_socket_create(struct server *s, char *err, size_t errlen)
{
	const struct config	*cfg = &s->d->cfg;
	struct sockaddr_un	 sun;
	struct stat		 sb;
	char			*dir, *slash;
	mode_t			 old;
	int			 fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(cfg->socket) >= sizeof sun.sun_path) {
		snprintf(err, errlen, "socket path '%s' is too long",
		    cfg->socket);
		return (-1);
	}
	strcpy(sun.sun_path, cfg->socket);

	/* Its directory: create one level (systemd's RuntimeDirectory
	 * usually has). */
	dir = xstrdup(cfg->socket);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create directory '%s': %s",
			    dir, strerror(errno));
			free(dir);
			return (-1);
		}
	}
	free(dir);

	/* We hold the lock: a socket left at the path is stale. */
	if (lstat(cfg->socket, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode)) {
			snprintf(err, errlen, "'%s' exists and is not a socket",
			    cfg->socket);
			return (-1);
		}
		if (unlink(cfg->socket) == -1) {
			snprintf(err, errlen, "cannot remove stale socket '%s': "
			    "%s", cfg->socket, strerror(errno));
			return (-1);
		}
		log_info("removed stale socket '%s'", cfg->socket);
	}

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd == -1) {
		snprintf(err, errlen, "cannot create socket: %s",
		    strerror(errno));
		return (-1);
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		umask(old);
		snprintf(err, errlen, "cannot bind '%s': %s", cfg->socket,
		    strerror(errno));
		close(fd);
		return (-1);
	}
	umask(old);
	s->listen_ours = 1;
	if (*cfg->socket_group != '\0' &&
	    chown(cfg->socket, (uid_t)-1, (gid_t)s->sock_gid) == -1) {
		snprintf(err, errlen, "cannot give '%s' to group %u: %s",
		    cfg->socket, s->sock_gid, strerror(errno));
		close(fd);
		return (-1);
	}
	if (chmod(cfg->socket, cfg->socket_mode) == -1) {
		snprintf(err, errlen, "cannot chmod '%s' to %04o: %s",
		    cfg->socket, cfg->socket_mode, strerror(errno));
		close(fd);
		return (-1);
	}
	if (listen(fd, SOMAXCONN) == -1) {
		snprintf(err, errlen, "cannot listen on '%s': %s", cfg->socket,
		    strerror(errno));
		close(fd);
		return (-1);
	}
	s->listen_fd = fd;
	return (0);
}

/* The socket systemd passed (LISTEN_FDS), if any: 1 taken, 0 none. */
static int
server_socket_inherit(struct server *s, char *err, size_t errlen)
{
	struct sockaddr_un	sun;
	socklen_t		len = sizeof sun;
	struct stat		sb;
	int			n, fd, fl;

	if ((n = sd_listen_fds(1)) <= 0)
		return (0);
	fd = SD_LISTEN_FDS_START;
	if (n > 1)
		log_warn("systemd passed %d sockets; using the first", n);
	if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
		snprintf(err, errlen, "the socket systemd passed (fd %d) is not "
		    "a listening unix stream socket", fd);
		return (-1);
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) == -1) {
		snprintf(err, errlen, "cannot set up fd %d: %s", fd,
		    strerror(errno));
		return (-1);
	}
	memset(&sun, 0, sizeof sun);
	if (getsockname(fd, (struct sockaddr *)&sun, &len) == 0 &&
	    sun.sun_path[0] != '\0') {
		free(s->d->cfg.socket);
		s->d->cfg.socket = xstrdup(sun.sun_path);
		if (stat(sun.sun_path, &sb) == 0 &&
		    *s->d->cfg.socket_group == '\0')
			s->sock_gid = (uint32_t)sb.st_gid;
	}
	s->listen_fd = fd;
	s->listen_ours = 0;
	log_info("listening on '%s' (from systemd)", s->d->cfg.socket);
	return (1);
}

/* ------------------------------------------------------------ conns */

static void
server_fd_range_init(struct server *s)
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
	s->fd_base = (int)(rl.rlim_cur / 2);
	s->fd_range = (int)rl.rlim_cur - s->fd_base - 16;
	if (s->fd_range < 16)
		fatal("the descriptor limit %llu is too small",
		    (unsigned long long)rl.rlim_cur);
	if (s->fd_range < 4096)
		log_warn("only %d descriptor numbers to rotate connections "
		    "through (RLIMIT_NOFILE %llu); raise the limit", s->fd_range,
		    (unsigned long long)rl.rlim_cur);
	s->fd_next = s->fd_base;
	s->conns = xcalloc((size_t)s->fd_range, sizeof *s->conns);
	log_debug("connections rotate through descriptors %d to %d",
	    s->fd_base, s->fd_base + s->fd_range - 1);
}

static struct server_conn *
server_conn_at(struct server *s, int fd)
{
	if (fd < s->fd_base || fd >= s->fd_base + s->fd_range)
		return (NULL);
	return (&s->conns[fd - s->fd_base]);
}

static void
server_conn_dead(struct server *s, size_t i)
{
	struct server_conn	*conn = server_conn_at(s, s->alive[i]);

	log_debug("connection %llu (fd %d, uid %u pid %u%s) closed",
	    (unsigned long long)conn->id, s->alive[i], conn->uid, conn->pid,
	    conn->refused ? ", refused" : "");
	conn->alive = 0;
	if (conn->refused) {
		conn->refused = 0;
		free(conn->refusal);
		conn->refusal = NULL;
		s->nrefused_open--;
	}
	s->alive[i] = s->alive[--s->nalive];
	s->d->active_connections = s->nalive - s->nrefused_open;
}

/* A refused connection has been told, or had its chance: shut it down so
 * that gRPC closes it (the fd stays gRPC's to close). */
static void
server_conn_refused_expire(struct server *s, int fd, struct server_conn *conn,
    uint64_t now)
{
	if (conn->shut)
		return;
	if (conn->answered_ns != 0 ? now - conn->answered_ns <
	    SERVER_REFUSED_LINGER_NS : now - conn->accepted_ns <
	    SERVER_REFUSED_IDLE_NS)
		return;
	shutdown(fd, SHUT_RDWR);
	conn->shut = 1;
}

void
server_conns_sweep(struct server *s)
{
	struct server_conn	*conn;
	struct stat		 sb;
	uint64_t		 now = uv_hrtime();
	size_t			 i;

	for (i = 0; i < s->nalive; ) {
		conn = server_conn_at(s, s->alive[i]);
		if (fstat(s->alive[i], &sb) == -1 || sb.st_dev != conn->dev ||
		    sb.st_ino != conn->ino) {
			server_conn_dead(s, i);
			continue;
		}
		if (conn->refused)
			server_conn_refused_expire(s, s->alive[i], conn, now);
		i++;
	}
	s->d->active_connections = s->nalive - s->nrefused_open;
}

static unsigned
server_conns_of_uid(struct server *s, uint32_t uid)
{
	unsigned	n = 0;
	size_t		i;

	struct server_conn	*conn;

	for (i = 0; i < s->nalive; i++) {
		conn = server_conn_at(s, s->alive[i]);
		if (conn->uid == uid && !conn->refused)
			n++;
	}
	return (n);
}

static void
server_sweep_cb(uv_timer_t *t)
{
	server_conns_sweep(t->data);
}

/* Move fd to the next free number of the rotating range; -1 if none. */
static int
server_fd_rotate(struct server *s, int fd)
{
	int	nfd, tries;

	for (tries = 0; tries < 2; tries++) {
		nfd = fcntl(fd, F_DUPFD_CLOEXEC, s->fd_next);
		if (nfd != -1 && nfd < s->fd_base + s->fd_range) {
			s->fd_next = nfd + 1;
			if (s->fd_next >= s->fd_base + s->fd_range)
				s->fd_next = s->fd_base;
			close(fd);
			return (nfd);
		}
		if (nfd != -1)
			close(nfd);
		s->fd_next = s->fd_base;	/* wrap */
	}
	return (-1);
}

static void
server_refuse_log(struct server *s, const char *why)
{
	uint64_t	now = uv_hrtime();

	s->d->refused++;
	if (now - s->refusal_logged_ns > 1000000000ULL) {
		if (s->refusals_quiet > 0)
			log_warn("%llu more connections refused",
			    (unsigned long long)s->refusals_quiet);
		log_warn("refused connection: %s", why);
		s->refusal_logged_ns = now;
		s->refusals_quiet = 0;
	} else
		s->refusals_quiet++;
}

static void
server_refuse(struct server *s, int fd, const char *why)
{
	close(fd);
	server_refuse_log(s, why);
}

static void
server_accept_one(struct server *s, int fd)
{
	struct ucred		 cr;
	socklen_t		 len = sizeof cr;
	gid_t			 groups[256];
	socklen_t		 glen = sizeof groups;
	struct access_peer	 peer;
	struct server_conn	*conn;
	struct stat		 sb;
	char			 why[256];
	unsigned		 n;
	int			 nfd, verdict;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == -1) {
		snprintf(why, sizeof why, "cannot read SO_PEERCRED: %s",
		    strerror(errno));
		server_refuse(s, fd, why);
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
	n = server_conns_of_uid(s, cr.uid);
	if (n >= s->d->cfg.max_conn_per_uid) {
		server_conns_sweep(s);
		n = server_conns_of_uid(s, cr.uid);
	}
	verdict = access_peer_check(&s->d->cfg, s->self_uid, s->sock_gid,
	    &peer, n, why, sizeof why);
	if (verdict != ACCESS_ALLOW) {
		char	msg[320];

		snprintf(msg, sizeof msg, "pid %u: %s", peer.pid, why);
		if (s->nrefused_open >= SERVER_REFUSED_MAX) {
			server_refuse(s, fd, msg);
			return;
		}
		/* Handed to gRPC, so the client reads why. */
		server_refuse_log(s, msg);
		if (verdict == ACCESS_EPOLICY)
			snprintf(why, sizeof why, "uid %u is not allowed to use "
			    "nkid (access.allow_uids, access.allow_gids or the "
			    "socket's group %u in %s)", peer.uid, s->sock_gid,
			    s->d->cfg.path != NULL ? s->d->cfg.path :
			    CONFIG_DEFAULT_PATH);
	}
	if ((nfd = server_fd_rotate(s, fd)) == -1) {
		server_refuse(s, fd, "no free descriptor number in the rotating "
		    "range");
		return;
	}
	if (fstat(nfd, &sb) == -1) {
		server_refuse(s, nfd, "cannot fstat the connection");
		return;
	}
	conn = server_conn_at(s, nfd);
	/* The number was free, so whoever had it before has closed. */
	if (conn->alive) {
		size_t	i;

		for (i = 0; i < s->nalive; i++) {
			if (s->alive[i] == nfd) {
				server_conn_dead(s, i);
				break;
			}
		}
	}
	free(conn->refusal);
	memset(conn, 0, sizeof *conn);
	conn->id = ++s->next_conn_id;
	conn->accepted_ns = uv_hrtime();
	if (verdict != ACCESS_ALLOW) {
		conn->refused = 1;
		conn->refusal = xstrdup(why);
		s->nrefused_open++;
	}
	conn->uid = peer.uid;
	conn->gid = peer.gid;
	conn->pid = peer.pid;
	conn->admin = access_peer_admin(&s->d->cfg, s->self_uid, &peer);
	conn->dev = sb.st_dev;
	conn->ino = sb.st_ino;
	conn->alive = 1;
	s->alive = xreallocarray(s->alive, s->nalive + 1, sizeof *s->alive);
	s->alive[s->nalive++] = nfd;
	if (!conn->refused)
		s->d->connections++;
	s->d->active_connections = s->nalive - s->nrefused_open;
	/* Stamped before gRPC can see it: every call of this connection is
	 * stamped later (see docs/protocol.md, "Identity"). */
	conn->seq = atomic_fetch_add(&s->seq, 1) + 1;
	log_debug("connection %llu from uid %u gid %u pid %u on fd %d%s",
	    (unsigned long long)conn->id, peer.uid, peer.gid, peer.pid, nfd,
	    conn->refused ? " (refused: its calls are answered "
	    "PERMISSION_DENIED)" : "");
	grpc_server_add_channel_from_fd(s->srv, nfd, s->creds);
}

static void
server_accept_cb(uv_poll_t *p, int status, int events)
{
	struct server	*s = p->data;
	int		 fd, i;

	if (status < 0) {
		log_warn("accept poll: %s", uv_strerror(status));
		return;
	}
	for (i = 0; i < SERVER_ACCEPT_BATCH && !s->stopping; i++) {
		fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC |
		    SOCK_NONBLOCK);
		if (fd == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR || errno == ECONNABORTED)
				return;
			log_warn("cannot accept on '%s': %s", s->d->cfg.socket,
			    strerror(errno));
			return;
		}
		server_accept_one(s, fd);
	}
}

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
	uv_async_send(&s->async);
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
server_async_cb(uv_async_t *a)
{
	server_events_drain(a->data);
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
	server_call_free(sc);
	server_stop_check(s);
}

/* Who made this call: the connection gRPC calls "fd:N", if the call is
 * younger than that connection. 0: identified; 1: identified, and the
 * connection is a refused one (its message in *refusal, borrowed); -1:
 * unknown. */
static int
server_call_identify(struct server *s, struct server_call *sc, uint64_t stamp,
    const char **refusal)
{
	struct server_conn	*conn;
	char			*peer;
	int			 fd = -1;

	peer = grpc_call_get_peer(sc->call);
	if (peer != NULL && sscanf(peer, "fd:%d", &fd) != 1)
		fd = -1;
	if ((conn = server_conn_at(s, fd)) == NULL || conn->seq == 0) {
		log_warn("call from unknown peer '%s'", peer != NULL ? peer :
		    "?");
		gpr_free(peer);
		return (-1);
	}
	gpr_free(peer);
	if (conn->seq > stamp) {
		/* The call is older than the connection now at fd: its own
		 * connection is gone. */
		log_debug("call on fd %d predates connection %llu", fd,
		    (unsigned long long)conn->id);
		return (-1);
	}
	sc->rc.id.uid = conn->uid;
	sc->rc.id.gid = conn->gid;
	sc->rc.id.admin = conn->admin;
	sc->rc.id.pid = conn->pid;
	sc->rc.id.conn_id = conn->id;
	if (conn->refused) {
		sc->refused_fd = fd;
		*refusal = conn->refusal;
		return (1);
	}
	return (0);
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
	if (!s->stopping)
		server_request_post(s, sc->method);
	TAILQ_INSERT_TAIL(&s->live, sc, entry);
	s->nlive++;

	if ((who = server_call_identify(s, sc, stamp, &refusal)) < 0) {
		sc->rc.m = NULL;
		rpc_fail(&sc->rc, GRPC_STATUS_UNAVAILABLE,
		    "the connection of this call has closed");
		return;
	}
	if (who > 0) {
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
	if ((sc->rc.m->flags & RPC_F_ASYNC) || sc->rc.m->kind != RPC_UNARY)
		server_close_start(sc);
	data = server_payload_bytes(sc->payload, &len, &copy);
	if (data == NULL) {
		rpc_fail(&sc->rc, GRPC_STATUS_INTERNAL,
		    "cannot read the request");
		return;
	}
	dispatch_call_start(&sc->rc, data, len);
	free(copy);
	if (sc->payload != NULL) {
		grpc_byte_buffer_destroy(sc->payload);
		sc->payload = NULL;
	}
}

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
	struct server_conn	*conn;

	sc->pending--;
	if (!ok)
		log_debug("reply of %s not delivered", sc->rc.m != NULL ?
		    sc->rc.m->name : "call");
	/* A refused connection has had its answer: it goes soon. */
	if (sc->refused_fd != -1 && (conn = server_conn_at(s,
	    sc->refused_fd)) != NULL && conn->alive && conn->refused &&
	    conn->id == sc->rc.id.conn_id && conn->answered_ns == 0)
		conn->answered_ns = uv_hrtime();
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

int
server_open(struct daemon *d, char *err, size_t errlen)
{
	struct server		*s;
	grpc_arg		 args[2];
	grpc_channel_args	 cargs;
	const struct rpc_method	*m;
	uint64_t		 cap = 0;
	size_t			 i;
	int			 j, error, inherited;

	s = xcalloc(1, sizeof *s);
	s->d = d;
	s->lock_fd = -1;
	s->listen_fd = -1;
	s->self_uid = (uint32_t)geteuid();
	TAILQ_INIT(&s->live);
	pthread_mutex_init(&s->mu, NULL);

	if (server_group_resolve(d->cfg.socket_group, &s->sock_gid, err,
	    errlen) != 0)
		goto fail;
	if (server_lock_open(s, d->cfg.socket, err, errlen) != 0)
		goto fail;
	/* The cores, for nkid's lifetime (docs/scheduling.md). */
	if (devlock_open(d->cfg.lock_dir, d->backend->ncores, &s->devlock, err,
	    errlen) != 0)
		goto fail;
	if ((inherited = server_socket_inherit(s, err, errlen)) < 0)
		goto fail;
	if (!inherited && server_socket_create(s, err, errlen) != 0)
		goto fail;
	s->socket_path = xstrdup(d->cfg.socket);
	server_fd_range_init(s);

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

	if ((error = uv_async_init(d->loop, &s->async, server_async_cb)) != 0)
		fatal("cannot create async handle: %s", uv_strerror(error));
	s->async.data = s;
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

	uv_timer_init(d->loop, &s->sweep_timer);
	s->sweep_timer.data = s;
	uv_timer_start(&s->sweep_timer, server_sweep_cb, SERVER_SWEEP_MS,
	    SERVER_SWEEP_MS);
	uv_timer_init(d->loop, &s->grace_timer);
	s->grace_timer.data = s;

	if ((error = uv_poll_init(d->loop, &s->listen_poll, s->listen_fd)) != 0)
		fatal("cannot poll the listening socket: %s",
		    uv_strerror(error));
	s->listen_poll.data = s;
	uv_poll_start(&s->listen_poll, UV_READABLE, server_accept_cb);
	s->listen_polling = 1;
	d->server = s;
	log_info("listening on '%s' (mode %04o, group %u)", d->cfg.socket,
	    d->cfg.socket_mode, s->sock_gid);
	return (0);
fail:
	if (s->listen_fd != -1 && s->listen_ours) {
		close(s->listen_fd);
		unlink(d->cfg.socket);
	}
	devlock_close(s->devlock);
	if (s->lock_fd != -1)
		close(s->lock_fd);
	free(s->lock_path);
	pthread_mutex_destroy(&s->mu);
	free(s);
	return (-1);
}

static void
server_handle_closed_cb(uv_handle_t *h)
{
	struct server	*s = h->data;

	if (--s->closing_handles == 0 && s->done != NULL)
		s->done(s->done_arg);
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
	uv_close((uv_handle_t *)&s->async, server_handle_closed_cb);
	uv_close((uv_handle_t *)&s->sweep_timer, server_handle_closed_cb);
	uv_close((uv_handle_t *)&s->grace_timer, server_handle_closed_cb);
}

static void
server_stop_check(struct server *s)
{
	if (!s->stopping || s->finishing || !s->shutdown_notified ||
	    s->nlive > 0 || s->nposted > 0)
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

	if (s->nlive > 0)
		log_info("grace period over: cancelling %zu call%s", s->nlive,
		    s->nlive == 1 ? "" : "s");
	grpc_server_cancel_all_calls(s->srv);
	/* Work that has not seen its call's cancellation yet. */
	TAILQ_FOREACH(sc, &s->live, entry) {
		if (!sc->rc.replied)
			dispatch_call_cancel(&sc->rc);
	}
}

static void
server_listen_closed_cb(uv_handle_t *h)
{
	struct server	*s = h->data;

	if (s->listen_fd != -1) {
		close(s->listen_fd);
		s->listen_fd = -1;
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
	if (s->listen_polling) {
		uv_poll_stop(&s->listen_poll);
		uv_close((uv_handle_t *)&s->listen_poll,
		    server_listen_closed_cb);
		s->listen_polling = 0;
	}
	if (s->listen_ours && unlink(s->socket_path) == -1 && errno != ENOENT)
		log_warn("cannot remove '%s': %s", s->socket_path,
		    strerror(errno));
	log_info("stopping: %zu call%s in flight, grace %u ms", s->nlive,
	    s->nlive == 1 ? "" : "s", s->d->cfg.shutdown_grace_ms);
	s->shutdown_tag.cb = server_shutdown_cb;
	grpc_server_shutdown_and_notify(s->srv, s->cq, &s->shutdown_tag);
	uv_timer_start(&s->grace_timer, server_grace_cb,
	    s->d->cfg.shutdown_grace_ms, 0);
	server_stop_check(s);
}

void
server_free(struct server *s)
{
	int	i;

	if (s == NULL)
		return;
	assert(s->srv == NULL && s->nlive == 0);
	if (s->d != NULL && s->d->server == s)
		s->d->server = NULL;
	devlock_close(s->devlock);
	if (s->lock_fd != -1)
		close(s->lock_fd);
	free(s->lock_path);
	free(s->socket_path);
	free(s->events);
	free(s->alive);
	for (i = 0; s->conns != NULL && i < s->fd_range; i++)
		free(s->conns[i].refusal);
	free(s->conns);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
