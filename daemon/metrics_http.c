/* metrics_http.c: GET /metrics over HTTP: the listening socket (configured or from systemd) and libmicrohttpd run by the loop. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>
#include <systemd/sd-daemon.h>
#include <uv.h>

#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/metrics_http.h"
#include "daemon/xmalloc.h"

/* An idle or stalled connection is closed after this many seconds. */
#define METRICS_HTTP_TIMEOUT_S	15
#define METRICS_HTTP_BACKLOG	64

struct metrics_http {
	struct daemon		*d;
	struct MHD_Daemon	*mhd;
	uv_poll_t		 poll;		/* MHD's epoll descriptor */
	uv_timer_t		 timer;		/* MHD's next timeout */
	int			 handles;	/* open, until both close */
	char			*where;
	char			*unix_path;	/* made by nkid: unlinked */
	char			 lastmsg[256];	/* libmicrohttpd's last word */
};

/*
 * libmicrohttpd, loaded when nkid first serves its metrics: it links
 * GnuTLS, whose constructor initializes itself and p11-kit in every
 * process that maps it (~2.3 MiB of an idle nkid's 20, and the files it
 * reads at start), for a feature that is off by default and never uses
 * TLS.
 */
#define METRICS_HTTP_MHD_LIB	"libmicrohttpd.so.12"

static struct {
	__typeof__(MHD_start_daemon)		*start_daemon;
	__typeof__(MHD_stop_daemon)		*stop_daemon;
	__typeof__(MHD_run)			*run;
	__typeof__(MHD_get_timeout)		*get_timeout;
	__typeof__(MHD_get_daemon_info)		*get_daemon_info;
	__typeof__(MHD_create_response_from_buffer)
						*create_response_from_buffer;
	__typeof__(MHD_add_response_header)	*add_response_header;
	__typeof__(MHD_queue_response)		*queue_response;
	__typeof__(MHD_destroy_response)	*destroy_response;
} mhd;

static const struct {
	const char	*name;
	void		**fn;
} metrics_http_mhd_syms[] = {
	{ "MHD_start_daemon", (void **)&mhd.start_daemon },
	{ "MHD_stop_daemon", (void **)&mhd.stop_daemon },
	{ "MHD_run", (void **)&mhd.run },
	{ "MHD_get_timeout", (void **)&mhd.get_timeout },
	{ "MHD_get_daemon_info", (void **)&mhd.get_daemon_info },
	{ "MHD_create_response_from_buffer",
	    (void **)&mhd.create_response_from_buffer },
	{ "MHD_add_response_header", (void **)&mhd.add_response_header },
	{ "MHD_queue_response", (void **)&mhd.queue_response },
	{ "MHD_destroy_response", (void **)&mhd.destroy_response },
};

/* Load libmicrohttpd once (on the loop thread); 0, or -1 with why in
 * err. It stays loaded: a reload may serve metrics again. */
static int
metrics_http_mhd_load(char *err, size_t errlen)
{
	static void	*h;
	size_t		 i;

	if (h != NULL)
		return (0);
	if ((h = dlopen(METRICS_HTTP_MHD_LIB, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(err, errlen, "cannot serve metrics without "
		    "libmicrohttpd (Debian: libmicrohttpd12): %s", dlerror());
		return (-1);
	}
	for (i = 0; i < sizeof(metrics_http_mhd_syms) /
	    sizeof(metrics_http_mhd_syms[0]); i++) {
		*metrics_http_mhd_syms[i].fn = dlsym(h,
		    metrics_http_mhd_syms[i].name);
		if (*metrics_http_mhd_syms[i].fn == NULL) {
			snprintf(err, errlen, "%s has no %s: metrics need "
			    "libmicrohttpd 0.9.71 or later",
			    METRICS_HTTP_MHD_LIB, metrics_http_mhd_syms[i].name);
			dlclose(h);
			h = NULL;
			return (-1);
		}
	}
	return (0);
}

static const char metrics_http_not_found[] =
    "not found: nkid serves its metrics at /metrics\n";
static const char metrics_http_not_allowed[] =
    "method not allowed: GET /metrics\n";

/* ------------------------------------------------------------ systemd */

/* Rewrite LISTEN_FDS and LISTEN_FDNAMES for the n names without skip. */
static void
metrics_http_systemd_env(char **names, int n, int skip)
{
	char	*joined, count[16];
	size_t	 len = 1;
	int	 i;

	if (n == 1) {
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_FDNAMES");
		unsetenv("LISTEN_PID");
		return;
	}
	for (i = 0; i < n; i++)
		len += strlen(names[i]) + 1;
	joined = xcalloc(1, len);
	for (i = 0; i < n; i++) {
		if (i == skip)
			continue;
		if (*joined != '\0')
			strcat(joined, ":");
		strcat(joined, names[i]);
	}
	snprintf(count, sizeof count, "%d", n - 1);
	if (setenv("LISTEN_FDS", count, 1) == -1 ||
	    setenv("LISTEN_FDNAMES", joined, 1) == -1)
		fatal("out of memory setting LISTEN_FDS");
	free(joined);
}

int
metrics_http_systemd_take(int *fdp, char *err, size_t errlen)
{
	char	**names = NULL;
	int	  n, i, at = -1, fd, error = 0;

	*fdp = -1;
	if ((n = sd_listen_fds_with_names(0, &names)) <= 0)
		return (0);
	for (i = 0; names != NULL && i < n && at == -1; i++) {
		if (strcmp(names[i], METRICS_HTTP_FDNAME) == 0)
			at = i;
	}
	if (at == -1)
		goto out;
	fd = SD_LISTEN_FDS_START + at;
	if (sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0) {
		snprintf(err, errlen, "the socket systemd passed as '%s' (fd %d) "
		    "is not a listening stream socket", METRICS_HTTP_FDNAME, fd);
		error = -1;
		goto out;
	}
	/* Move it above the passed range, and the ones after it down one. */
	if ((*fdp = fcntl(fd, F_DUPFD_CLOEXEC, SD_LISTEN_FDS_START + n)) ==
	    -1) {
		snprintf(err, errlen, "cannot move the socket systemd passed as "
		    "'%s' (fd %d): %s", METRICS_HTTP_FDNAME, fd, strerror(errno));
		error = -1;
		goto out;
	}
	for (i = at + 1; i < n; i++) {
		if (dup2(SD_LISTEN_FDS_START + i, SD_LISTEN_FDS_START + i - 1) ==
		    -1) {
			snprintf(err, errlen, "cannot renumber fd %d: %s",
			    SD_LISTEN_FDS_START + i, strerror(errno));
			close(*fdp);
			*fdp = -1;
			error = -1;
			goto out;
		}
	}
	close(SD_LISTEN_FDS_START + n - 1);
	metrics_http_systemd_env(names, n, at);
out:
	for (i = 0; names != NULL && i < n; i++)
		free(names[i]);
	free(names);
	return (error);
}

/* ------------------------------------------------------------ sockets */

/* "ADDR:PORT", "[ADDR]:PORT" or the path of the socket fd listens on. */
static char *
metrics_http_describe(int fd)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_in	*sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_un	*sun = (struct sockaddr_un *)&ss;
	socklen_t		 len = sizeof ss;
	char			 a[INET6_ADDRSTRLEN];

	memset(&ss, 0, sizeof ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		return (xasprintf("fd %d", fd));
	switch (ss.ss_family) {
	case AF_INET:
		inet_ntop(AF_INET, &sin->sin_addr, a, sizeof a);
		return (xasprintf("%s:%u", a, ntohs(sin->sin_port)));
	case AF_INET6:
		inet_ntop(AF_INET6, &sin6->sin6_addr, a, sizeof a);
		return (xasprintf("[%s]:%u", a, ntohs(sin6->sin6_port)));
	case AF_UNIX:
		if (sun->sun_path[0] != '\0')
			return (xasprintf("%.*s", (int)sizeof sun->sun_path,
			    sun->sun_path));
		break;
	}
	return (xasprintf("fd %d", fd));
}

/* A listening TCP socket on sa, or -1 with errno set. dual: an IPv6
 * wildcard that takes IPv4 too. */
static int
metrics_http_bind(const struct sockaddr *sa, socklen_t salen, int dual)
{
	int	fd, on = 1, off = 0, saved;

	if ((fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
	if (dual)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
	if (bind(fd, sa, salen) == -1 || listen(fd, METRICS_HTTP_BACKLOG) ==
	    -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return (-1);
	}
	return (fd);
}

/*
 * HOST:PORT: the first address of HOST that binds; an empty HOST is every
 * address ([::] taking IPv4 too, else 0.0.0.0).
 */
static int
metrics_http_listen_tcp(const char *spec, char *err, size_t errlen)
{
	struct addrinfo		 hints, *res = NULL, *ai;
	struct sockaddr_in6	 any6;
	struct sockaddr_in	 any4;
	const char		*colon = strrchr(spec, ':');
	char			*host;
	int			 fd = -1, error, saved = 0;

	host = xasprintf("%.*s", (int)(colon - spec), spec);
	if (*host == '[') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	if (*host == '\0') {
		memset(&any6, 0, sizeof any6);
		any6.sin6_family = AF_INET6;
		any6.sin6_addr = in6addr_any;
		any6.sin6_port = htons((uint16_t)atoi(colon + 1));
		memset(&any4, 0, sizeof any4);
		any4.sin_family = AF_INET;
		any4.sin_addr.s_addr = htonl(INADDR_ANY);
		any4.sin_port = any6.sin6_port;
		if ((fd = metrics_http_bind((struct sockaddr *)&any6,
		    sizeof any6, 1)) == -1) {
			saved = errno;
			if ((fd = metrics_http_bind((struct sockaddr *)&any4,
			    sizeof any4, 0)) != -1 || errno != EAFNOSUPPORT)
				saved = errno;
		}
		goto out;
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if ((error = getaddrinfo(host, colon + 1, &hints, &res)) != 0) {
		snprintf(err, errlen, "cannot resolve the host of metrics.listen "
		    "'%s': %s", spec, gai_strerror(error));
		free(host);
		return (-1);
	}
	for (ai = res; ai != NULL && fd == -1; ai = ai->ai_next) {
		if ((fd = metrics_http_bind(ai->ai_addr, ai->ai_addrlen, 0)) ==
		    -1)
			saved = errno;
	}
	freeaddrinfo(res);
out:
	free(host);
	if (fd == -1)
		snprintf(err, errlen, "cannot listen on metrics.listen '%s': "
		    "%s%s", spec, strerror(saved), saved == EAFNOSUPPORT ?
		    " (under nkid.service, whose sockets are unix sockets "
		    "only, let systemd listen: nkid-metrics.socket)" : "");
	return (fd);
}

/* A unix socket at path, mode 0660. A socket file nothing accepts on is
 * replaced; one that something serves is refused. */
static int
metrics_http_listen_unix(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un	sun;
	struct stat		sb;
	mode_t			old;
	int			fd, probe, live, rc, saved;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
	if (lstat(path, &sb) == 0 && S_ISSOCK(sb.st_mode)) {
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		live = probe != -1 && connect(probe, (struct sockaddr *)&sun,
		    sizeof sun) == 0;
		if (probe != -1)
			close(probe);
		if (live) {
			snprintf(err, errlen, "cannot listen on metrics.listen "
			    "'%s': another process is serving it", path);
			return (-1);
		}
		unlink(path);
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1)
		goto fail;
	old = umask(0117);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof sun);
	saved = errno;
	umask(old);
	errno = saved;
	if (rc == -1 || listen(fd, METRICS_HTTP_BACKLOG) == -1)
		goto fail;
	return (fd);
fail:
	saved = errno;
	if (fd != -1)
		close(fd);
	snprintf(err, errlen, "cannot listen on metrics.listen '%s': %s", path,
	    strerror(saved));
	return (-1);
}

/* ------------------------------------------------------------ http */

/* libmicrohttpd's messages are mostly about what a client sent: debug
 * level. The last one is kept for a failure to start. */
static void
metrics_http_log_cb(void *arg, const char *fmt, va_list ap)
{
	struct metrics_http	*mh = arg;
	size_t			 len;

	vsnprintf(mh->lastmsg, sizeof mh->lastmsg, fmt, ap);
	len = strlen(mh->lastmsg);
	while (len > 0 && (mh->lastmsg[len - 1] == '\n' ||
	    mh->lastmsg[len - 1] == '.'))
		mh->lastmsg[--len] = '\0';
	log_debug("metrics: %s", mh->lastmsg);
}

/* Runs on the loop thread, inside MHD_run: d is ours to read. */
static enum MHD_Result
metrics_http_request_cb(void *arg, struct MHD_Connection *conn,
    const char *url, const char *method, const char *version,
    const char *upload, size_t *upload_len, void **req)
{
	struct metrics_http	*mh = arg;
	struct MHD_Response	*r;
	const char		*text;
	char			*body;
	size_t			 len;
	unsigned		 code;
	enum MHD_Result		 ret;

	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
		text = metrics_http_not_allowed;
	} else if (strcmp(url, "/metrics") != 0) {
		code = MHD_HTTP_NOT_FOUND;
		text = metrics_http_not_found;
	} else {
		body = metrics_render(mh->d, &len);
		r = mhd.create_response_from_buffer(len, body,
		    MHD_RESPMEM_MUST_FREE);
		if (r == NULL) {
			free(body);
			return (MHD_NO);
		}
		mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
		    METRICS_CONTENT_TYPE);
		ret = mhd.queue_response(conn, MHD_HTTP_OK, r);
		mhd.destroy_response(r);
		return (ret);
	}
	r = mhd.create_response_from_buffer(strlen(text), (void *)text,
	    MHD_RESPMEM_PERSISTENT);
	if (r == NULL)
		return (MHD_NO);
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
	    "text/plain; charset=utf-8");
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		mhd.add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = mhd.queue_response(conn, code, r);
	mhd.destroy_response(r);
	return (ret);
}

static void metrics_http_timer_cb(uv_timer_t *t);

/* Connections libmicrohttpd holds now. */
static unsigned
metrics_http_conns(struct metrics_http *mh)
{
	const union MHD_DaemonInfo	*info;

	info = mhd.get_daemon_info(mh->mhd,
	    MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
	return (info != NULL ? info->num_connections : 0);
}

/*
 * Let MHD do what is ready, then arm the timer for its next timeout.
 * At its connection limit MHD takes the listening socket out of its epoll
 * set, and puts it back only at the start of a later run: when a run
 * closed connections, run once more, or the scrapers waiting in the
 * backlog would never be accepted (nothing else wakes the loop for MHD).
 */
static void
metrics_http_run(struct metrics_http *mh)
{
	MHD_UNSIGNED_LONG_LONG	ms;
	unsigned		before, i;

	for (i = 0; i < 4; i++) {
		before = metrics_http_conns(mh);
		mhd.run(mh->mhd);
		if (metrics_http_conns(mh) >= before)
			break;
	}
	if (mhd.get_timeout(mh->mhd, &ms) == MHD_YES)
		uv_timer_start(&mh->timer, metrics_http_timer_cb, ms, 0);
	else
		uv_timer_stop(&mh->timer);
}

static void
metrics_http_poll_cb(uv_poll_t *p, int status, int events)
{
	struct metrics_http	*mh = p->data;

	if (status < 0)
		log_warn("metrics: polling '%s': %s", mh->where,
		    uv_strerror(status));
	metrics_http_run(mh);
}

static void
metrics_http_timer_cb(uv_timer_t *t)
{
	metrics_http_run(t->data);
}

/* ------------------------------------------------------------ life */

int
metrics_http_open(struct metrics_http **out, struct daemon *d, int fd,
    char *err, size_t errlen)
{
	struct metrics_http		*mh;
	const union MHD_DaemonInfo	*info;
	const char			*spec = d->cfg.metrics_listen;
	int				 error, fl;

	*out = NULL;
	if (fd == -1 && (spec == NULL || *spec == '\0'))
		return (0);
	if (metrics_http_mhd_load(err, errlen) == -1) {
		if (fd != -1)
			close(fd);
		return (-1);
	}
	mh = xcalloc(1, sizeof *mh);
	mh->d = d;
	if (fd != -1) {
		if ((fl = fcntl(fd, F_GETFL)) == -1 ||
		    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1) {
			snprintf(err, errlen, "cannot set up the socket systemd "
			    "passed as '%s': %s", METRICS_HTTP_FDNAME,
			    strerror(errno));
			close(fd);
			goto fail;
		}
		if (spec != NULL && *spec != '\0')
			log_info("metrics: systemd passed a socket; "
			    "metrics.listen '%s' is not used", spec);
	} else if (*spec == '/') {
		if ((fd = metrics_http_listen_unix(spec, err, errlen)) == -1)
			goto fail;
		mh->unix_path = xstrdup(spec);
	} else if ((fd = metrics_http_listen_tcp(spec, err, errlen)) == -1)
		goto fail;
	mh->where = metrics_http_describe(fd);
	mh->mhd = mhd.start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0,
	    NULL, NULL, metrics_http_request_cb, mh,
	    MHD_OPTION_EXTERNAL_LOGGER, metrics_http_log_cb, mh,
	    MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned)d->cfg.metrics_max_connections,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_HTTP_TIMEOUT_S,
	    MHD_OPTION_END);
	if (mh->mhd == NULL) {
		snprintf(err, errlen, "cannot serve metrics on '%s': "
		    "libmicrohttpd refused to start%s%s", mh->where,
		    *mh->lastmsg != '\0' ? ": " : "", mh->lastmsg);
		close(fd);
		goto fail;
	}
	info = mhd.get_daemon_info(mh->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if ((error = uv_poll_init(d->loop, &mh->poll, info->epoll_fd)) != 0)
		fatal("cannot poll the metrics server: %s", uv_strerror(error));
	uv_timer_init(d->loop, &mh->timer);
	mh->poll.data = mh;
	mh->timer.data = mh;
	mh->handles = 2;
	uv_poll_start(&mh->poll, UV_READABLE, metrics_http_poll_cb);
	metrics_http_run(mh);
	log_info("metrics: serving GET /metrics on '%s'", mh->where);
	*out = mh;
	return (0);
fail:
	if (mh->unix_path != NULL)
		unlink(mh->unix_path);
	free(mh->unix_path);
	free(mh->where);
	free(mh);
	return (-1);
}

static void
metrics_http_close_cb(uv_handle_t *h)
{
	struct metrics_http	*mh = h->data;

	if (--mh->handles > 0)
		return;
	free(mh->where);
	free(mh->unix_path);
	free(mh);
}

void
metrics_http_close(struct metrics_http *mh)
{
	if (mh == NULL)
		return;
	/* libuv lets go of MHD's epoll descriptor before MHD closes it. */
	uv_close((uv_handle_t *)&mh->poll, metrics_http_close_cb);
	uv_close((uv_handle_t *)&mh->timer, metrics_http_close_cb);
	mhd.stop_daemon(mh->mhd);
	mh->mhd = NULL;
	if (mh->unix_path != NULL)
		unlink(mh->unix_path);
}

const char *
metrics_http_where(const struct metrics_http *mh)
{
	return (mh->where);
}
