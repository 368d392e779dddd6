/* kcache_remote.c: the remote tier's client of Redis: hiredis on the loop, connections, timeouts, the circuit breaker, opening and closing, pushes; what the fleet must hear of the connection (down, a message on the channel) it tells through r->ev, never by name. */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "daemon/config.h"
#include "daemon/errstr.h"
#include "daemon/kcache_remote.h"
#include "daemon/kcache_remote_impl.h"
#include "daemon/log.h"
#include "daemon/xmalloc.h"

static const char *kcache_remote_errs[] = {
	"success", "not in the remote tier", "rejected",
	"the remote tier is down", "no answer within remote.timeout_ms",
	"connection lost or error reply", "credentials refused",
	"the remote tier is read-only", "cannot read a file of the config",
	"larger than remote.max_entry_bytes",
	"a value of another type than the remote tier writes",
};

const char *
kcache_remote_strerror(int err)
{
	return (ERRSTR(kcache_remote_errs, err));
}

static void	kcache_remote_connect(struct kcache_remote *);
static void	kcache_remote_drop(struct kcache_remote *, int, const char *);

/* ------------------------------------------------------------ state */

int
kcache_remote_usable(struct kcache_remote *r)
{
	return (!r->closing && r->ac != NULL &&
	    uv_now(r->loop) >= r->open_until &&
	    (r->state == KCACHE_REMOTE_UP || r->failures == 0));
}

/* last_error was just written: when, in wall-clock ms. */
static void
kcache_remote_stamp(struct kcache_remote *r)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	r->st.last_error_ms = (uint64_t)ts.tv_sec * 1000 +
	    (uint64_t)ts.tv_nsec / 1000000;
}

/* A failure of the store: count it, and open the circuit after
 * KCACHE_REMOTE_FAILURES in a row. */
static void
kcache_remote_fail(struct kcache_remote *r, const char *fmt, ...)
{
	va_list		ap;
	uint64_t	now = uv_now(r->loop), ms;

	va_start(ap, fmt);
	vsnprintf(r->last_error, sizeof r->last_error, fmt, ap);
	va_end(ap);
	kcache_remote_stamp(r);
	r->st.errors++;
	if (r->failures++ == 0 && r->trips == 0)
		log_warn("remote tier '%s': %s; requests are served from the "
		    "local cache meanwhile", r->url_text, r->last_error);
	else
		log_debug("remote tier '%s': %s", r->url_text, r->last_error);
	if (r->failures < KCACHE_REMOTE_FAILURES || now < r->open_until)
		return;
	ms = (uint64_t)KCACHE_REMOTE_OPEN_MIN_MS <<
	    (r->trips < 4 ? r->trips : 4);
	if (ms > KCACHE_REMOTE_OPEN_MAX_MS)
		ms = KCACHE_REMOTE_OPEN_MAX_MS;
	r->trips++;
	r->open_until = now + ms;
	log_warn("remote tier '%s': %u failures in a row (last: %s); not "
	    "asking it for %llu ms", r->url_text, r->failures, r->last_error,
	    (unsigned long long)ms);
	r->ev.down(r);
}

static void
kcache_remote_ok(struct kcache_remote *r)
{
	/* "again" only for a store that answered before it failed. */
	if ((r->trips > 0 || r->failures > 0) && r->answered)
		log_info("remote tier '%s' answers again", r->url_text);
	else if (r->trips > 0 || r->failures > 0)
		log_info("remote tier '%s' answers (after %u failures)",
		    r->url_text, r->failures);
	r->answered = 1;
	r->failures = 0;
	r->trips = 0;
	r->open_until = 0;
}

/* ------------------------------------------------------------ commands */

static void kcache_remote_cmd_timer_cb(uv_timer_t *);

static void
kcache_remote_cmd_timer_set(struct kcache_remote *r)
{
	struct kcache_remote_cmd	*c;
	uint64_t	 now = uv_now(r->loop);

	if (r->closing)
		return;
	if ((c = TAILQ_FIRST(&r->cmds)) == NULL) {
		uv_timer_stop(&r->cmd_timer);
		return;
	}
	/* Its time counts from when the answers ahead of it are in: a
	 * large value ahead of it is not its delay. */
	if (c->deadline < now + c->budget)
		c->deadline = now + c->budget;
	uv_timer_start(&r->cmd_timer, kcache_remote_cmd_timer_cb,
	    c->deadline > now ? c->deadline - now : 0, 0);
}

/* The pending error of a connection still connecting: ETIMEDOUT if none. */
static int
kcache_remote_so_error(const redisAsyncContext *ac)
{
	socklen_t	len;
	int		e = 0;

	len = sizeof e;
	if (ac->c.fd < 0 || getsockopt(ac->c.fd, SOL_SOCKET, SO_ERROR, &e,
	    &len) != 0 || e == 0)
		e = ETIMEDOUT;
	return (e);
}

static void
kcache_remote_cmd_timer_cb(uv_timer_t *t)
{
	struct kcache_remote	*r = t->data;
	struct kcache_remote_cmd		*c;

	if ((c = TAILQ_FIRST(&r->cmds)) == NULL)
		return;
	if (uv_now(r->loop) < c->deadline) {
		kcache_remote_cmd_timer_set(r);
		return;
	}
	log_debug("remote tier '%s': a command of %llu ms unanswered",
	    r->url_text, (unsigned long long)c->budget);
	if (r->ac != NULL && !(r->ac->c.flags & REDIS_CONNECTED))
		kcache_remote_fail(r, "cannot connect within %u ms "
		    "(remote.timeout_ms): %s", r->timeout_ms,
		    strerror(kcache_remote_so_error(r->ac)));
	else
		kcache_remote_fail(r, "no answer within %u ms "
		    "(remote.timeout_ms)", r->timeout_ms);
	kcache_remote_drop(r, KCACHE_REMOTE_ETIMEDOUT, "timeout");
}

static void
kcache_remote_cmd_reply_cb(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct kcache_remote_cmd		*c = privdata;
	struct kcache_remote	*r = c->r;
	redisReply		*rp = reply;
	int			 err = 0;

	TAILQ_REMOVE(&r->cmds, c, link);
	if (rp == NULL)
		err = r->dropping != 0 ? r->dropping : KCACHE_REMOTE_EIO;
	else if (rp->type == REDIS_REPLY_ERROR && rp->str != NULL &&
	    strncmp(rp->str, "WRONGTYPE", 9) == 0) {
		/* The store answered: what someone put at a key is wrong. */
		err = KCACHE_REMOTE_EWRONGTYPE;
		kcache_remote_ok(r);
	} else if (rp->type == REDIS_REPLY_ERROR) {
		err = KCACHE_REMOTE_EIO;
		kcache_remote_fail(r, "error reply: %.200s", rp->str);
	} else
		kcache_remote_ok(r);
	kcache_remote_cmd_timer_set(r);
	c->cb(r, err == 0 ? rp : NULL, err, c->arg);
	free(c);
}

/*
 * Send argv on the main connection; cb(r, reply, err, arg) runs once,
 * later (reply NULL when err). Returns 0, or KCACHE_REMOTE_EDOWN when it
 * cannot be sent (cb never runs).
 */
int
kcache_remote_command(struct kcache_remote *r, kcache_remote_reply_cb cb,
    void *arg, int argc, const char **argv, const size_t *argvlen)
{
	return (kcache_remote_command_sized(r, cb, arg, argc, argv, argvlen,
	    0));
}

int
kcache_remote_command_sized(struct kcache_remote *r,
    kcache_remote_reply_cb cb, void *arg, int argc, const char **argv,
    const size_t *argvlen, uint64_t bytes)
{
	struct kcache_remote_cmd	*c;

	if (r->ac == NULL || r->closing)
		return (KCACHE_REMOTE_EDOWN);
	c = xcalloc(1, sizeof *c);
	c->r = r;
	c->cb = cb;
	c->arg = arg;
	c->budget = r->timeout_ms + (bytes * KCACHE_REMOTE_MS_PER_MIB +
	    (1 << 20) - 1) / (1 << 20);
	c->deadline = uv_now(r->loop) + c->budget;
	if (redisAsyncCommandArgv(r->ac, kcache_remote_cmd_reply_cb, c, argc,
	    argv, argvlen) != REDIS_OK) {
		free(c);
		return (KCACHE_REMOTE_EDOWN);
	}
	TAILQ_INSERT_TAIL(&r->cmds, c, link);
	if (TAILQ_FIRST(&r->cmds) == c)
		kcache_remote_cmd_timer_set(r);
	return (0);
}

/* argvlen[i] = strlen(argv[i]) for the n arguments. */
void
kcache_remote_lens(const char **argv, size_t *argvlen, int n)
{
	int	i;

	for (i = 0; i < n; i++)
		argvlen[i] = strlen(argv[i]);
}

/* A command whose answer only matters as success or failure. */
void
kcache_remote_ignore_cb(struct kcache_remote *r, redisReply *rp, int err,
    void *arg)
{
}

/* ------------------------------------------------------------ connection */

static void
kcache_remote_retry_timer_cb(uv_timer_t *t)
{
	kcache_remote_connect(t->data);
}

static void
kcache_remote_retry_arm(struct kcache_remote *r)
{
	uint64_t	now = uv_now(r->loop), ms = r->retry_ms;

	if (r->closing)
		return;
	if (r->open_until > now + ms)
		ms = r->open_until - now;
	uv_timer_start(&r->retry_timer, kcache_remote_retry_timer_cb, ms, 0);
	r->retry_ms *= 2;
	if (r->retry_ms > KCACHE_REMOTE_OPEN_MAX_MS)
		r->retry_ms = KCACHE_REMOTE_OPEN_MAX_MS;
}

/* Close both connections (their pending commands end with err); unless
 * closing, connect again later. */
static void
kcache_remote_drop(struct kcache_remote *r, int err, const char *why)
{
	redisAsyncContext	*ac = r->ac, *sub = r->sub;

	r->ac = NULL;
	r->sub = NULL;
	r->state = KCACHE_REMOTE_DOWN;
	log_debug("remote tier '%s': dropping the connection (%s)",
	    r->url_text, why);
	r->dropping = err;
	if (ac != NULL)
		redisAsyncFree(ac);
	if (sub != NULL)
		redisAsyncFree(sub);
	r->dropping = 0;
	uv_timer_stop(&r->cmd_timer);
	r->ev.down(r);
	if (!uv_is_active((uv_handle_t *)&r->retry_timer))
		kcache_remote_retry_arm(r);
}

/* hiredis frees ac after its connect or disconnect callback: forget it.
 * Returns -1 when ac is neither of r's contexts (dropped already). */
static int
kcache_remote_ctx_forget(struct kcache_remote *r, const redisAsyncContext *ac)
{
	if (ac == r->ac)
		r->ac = NULL;
	else if (ac == r->sub)
		r->sub = NULL;
	else
		return (-1);
	return (0);
}

static void
kcache_remote_connect_cb(const redisAsyncContext *ac, int status)
{
	struct kcache_remote	*r = ac->data;

	if (status == REDIS_OK || kcache_remote_ctx_forget(r, ac) != 0)
		return;
	kcache_remote_fail(r, "cannot connect: %s", ac->errstr);
	kcache_remote_drop(r, KCACHE_REMOTE_EIO, "connect failed");
}

static void
kcache_remote_disconnect_cb(const redisAsyncContext *ac, int status)
{
	struct kcache_remote	*r = ac->data;

	if (kcache_remote_ctx_forget(r, ac) != 0)
		return;
	kcache_remote_fail(r, "connection lost: %s", ac->err != 0 ? ac->errstr :
	    "closed by the server");
	kcache_remote_drop(r, KCACHE_REMOTE_EIO, "disconnected");
}

static void
kcache_remote_auth_cb(struct kcache_remote *r, redisReply *rp, int err,
    void *arg)
{
	if (err == 0 || r->ac == NULL)
		return;
	log_error("remote tier '%s': Redis refused the credentials of "
	    "user '%s' (%s)", r->url_text, r->user[0] != '\0' ? r->user :
	    "default", r->last_error);
	kcache_remote_drop(r, KCACHE_REMOTE_EAUTH, "credentials refused");
}

static void
kcache_remote_ping_cb(struct kcache_remote *r, redisReply *rp, int err,
    void *arg)
{
	if (err != 0 || r->ac == NULL)
		return;
	if (rp->type != REDIS_REPLY_STATUS) {
		kcache_remote_fail(r, "PING answered with a reply of type %d",
		    rp->type);
		kcache_remote_drop(r, KCACHE_REMOTE_EIO, "odd PING reply");
		return;
	}
	if (r->state != KCACHE_REMOTE_UP)
		log_info("remote tier '%s' connected (%s)", r->url_text,
		    r->writable ? "read-write" : "read");
	r->state = KCACHE_REMOTE_UP;
	r->retry_ms = KCACHE_REMOTE_RETRY_MS;
}

/* Messages on the channel: "key" when a host ends a compile of key. */
static void
kcache_remote_channel_cb(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct kcache_remote	*r = privdata;
	redisReply		*rp = reply;

	if (rp == NULL || ac != r->sub)
		return;
	if (rp->type == REDIS_REPLY_ERROR) {
		kcache_remote_fail(r, "channel: %.200s", rp->str);
		kcache_remote_drop(r, KCACHE_REMOTE_EIO, "channel error");
		return;
	}
	if (rp->type != REDIS_REPLY_ARRAY || rp->elements != 3 ||
	    rp->element[0]->type != REDIS_REPLY_STRING ||
	    strcmp(rp->element[0]->str, "message") != 0 ||
	    rp->element[2]->type != REDIS_REPLY_STRING)
		return;
	r->ev.message(r, rp->element[2]->str);
}

/* AUTH (and SELECT) on a new connection, through hiredis's buffer. */
static void
kcache_remote_login(struct kcache_remote *r, redisAsyncContext *ac, int sub)
{
	const char	*argv[3];
	size_t		 argvlen[3];
	char		 db[16];
	int		 n = 0;

	if (r->password != NULL) {
		argv[n++] = "AUTH";
		if (r->user[0] != '\0')
			argv[n++] = r->user;
		argv[n++] = r->password;
		kcache_remote_lens(argv, argvlen, n);
		if (sub)
			redisAsyncCommandArgv(ac, NULL, NULL, n, argv, argvlen);
		else
			kcache_remote_command(r, kcache_remote_auth_cb, NULL, n,
			    argv, argvlen);
	}
	if (sub || r->url.db == 0)
		return;
	snprintf(db, sizeof db, "%u", r->url.db);
	argv[0] = "SELECT";
	argv[1] = db;
	argvlen[0] = 6;
	argvlen[1] = strlen(db);
	kcache_remote_command(r, kcache_remote_ignore_cb, NULL, 2, argv,
	    argvlen);
}

static redisAsyncContext *
kcache_remote_context_new(struct kcache_remote *r, const char *ip)
{
	redisAsyncContext	*ac;

	ac = r->url.path[0] != '\0' ? redisAsyncConnectUnix(r->url.path) :
	    redisAsyncConnect(ip, (int)r->url.port);
	if (ac == NULL) {
		kcache_remote_fail(r, "cannot connect: out of memory");
		return (NULL);
	}
	if (ac->err != 0) {
		kcache_remote_fail(r, "cannot connect: %s", ac->errstr);
		redisAsyncFree(ac);
		return (NULL);
	}
	ac->data = r;
	if (redisLibuvAttach(ac, r->loop) != REDIS_OK) {
		kcache_remote_fail(r, "cannot watch the connection");
		redisAsyncFree(ac);
		return (NULL);
	}
	/* The store never keeps nkid's loop alive: stopping ends it. */
	uv_unref((uv_handle_t *)&((redisLibuvEvents *)ac->ev.data)->handle);
	redisAsyncSetConnectCallback(ac, kcache_remote_connect_cb);
	redisAsyncSetDisconnectCallback(ac, kcache_remote_disconnect_cb);
	return (ac);
}

/* Open both connections to ip (NULL: the unix socket). */
static void
kcache_remote_connect_to(struct kcache_remote *r, const char *ip)
{
	const char	*argv[2];
	size_t		 argvlen[2];

	if ((r->ac = kcache_remote_context_new(r, ip)) == NULL) {
		kcache_remote_retry_arm(r);
		return;
	}
	if ((r->sub = kcache_remote_context_new(r, ip)) == NULL) {
		kcache_remote_drop(r, KCACHE_REMOTE_EIO, "connect failed");
		return;
	}
	r->state = KCACHE_REMOTE_CONNECTING;
	kcache_remote_login(r, r->ac, 0);
	argv[0] = "PING";
	argvlen[0] = 4;
	kcache_remote_command(r, kcache_remote_ping_cb, NULL, 1, argv, argvlen);
	kcache_remote_login(r, r->sub, 1);
	argv[0] = "SUBSCRIBE";
	argv[1] = r->channel;
	argvlen[0] = 9;
	argvlen[1] = strlen(r->channel);
	redisAsyncCommandArgv(r->sub, kcache_remote_channel_cb, r, 2, argv,
	    argvlen);
}

static void
kcache_remote_resolved_cb(uv_getaddrinfo_t *g, int status, struct addrinfo *ai)
{
	struct kcache_remote	*r = g->data;
	char			 ip[INET6_ADDRSTRLEN];
	const void		*a;

	r->resolving = 0;
	if (r->closing) {
		uv_freeaddrinfo(ai);
		return;
	}
	if (status != 0 || ai == NULL) {
		kcache_remote_fail(r, "cannot resolve '%s': %s", r->url.host,
		    uv_strerror(status));
		uv_freeaddrinfo(ai);
		kcache_remote_retry_arm(r);
		return;
	}
	a = ai->ai_family == AF_INET6 ?
	    (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr :
	    (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr;
	inet_ntop(ai->ai_family, a, ip, sizeof ip);
	uv_freeaddrinfo(ai);
	kcache_remote_connect_to(r, ip);
}

static void
kcache_remote_connect(struct kcache_remote *r)
{
	struct addrinfo	 hints;
	unsigned char	 buf[sizeof(struct in6_addr)];

	if (r->closing || r->ac != NULL || r->resolving)
		return;
	if (r->url.path[0] != '\0' || inet_pton(AF_INET, r->url.host,
	    buf) == 1 || inet_pton(AF_INET6, r->url.host, buf) == 1) {
		kcache_remote_connect_to(r, r->url.host);
		return;
	}
	/* hiredis resolves names with a blocking getaddrinfo: not here. */
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	r->gai.data = r;
	if (uv_getaddrinfo(r->loop, &r->gai, kcache_remote_resolved_cb,
	    r->url.host,
	    NULL, &hints) != 0) {
		kcache_remote_fail(r, "cannot resolve '%s'", r->url.host);
		kcache_remote_retry_arm(r);
		return;
	}
	r->resolving = 1;
}

/* ------------------------------------------------------------ open */

/* The secret in path, trailing blanks and newlines cut, into *out. */
static int
kcache_remote_secret_read(const char *what, const char *path, char **out,
    size_t *len,
    char *err, size_t errlen)
{
	FILE		*f;
	struct stat	 sb;
	char		*buf;
	size_t		 n;
	int		 fd;

	if ((fd = config_file_open(path)) == -1 ||
	    (f = fdopen(fd, "r")) == NULL) {
		snprintf(err, errlen, "remote tier: cannot read %s '%s': %s",
		    what, path, errno == EINVAL ? "not a regular file" :
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return (KCACHE_REMOTE_ECONFIG);
	}
	if (fstat(fileno(f), &sb) == 0 && (sb.st_mode & S_IROTH))
		log_warn("remote tier: %s '%s' is readable by everyone",
		    what, path);
	buf = xmalloc(KCACHE_REMOTE_SECRET_MAX + 1);
	n = fread(buf, 1, KCACHE_REMOTE_SECRET_MAX + 1, f);
	fclose(f);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' ||
	    buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		n--;
	if (n > KCACHE_REMOTE_SECRET_MAX || n == 0) {
		snprintf(err, errlen, "remote tier: %s '%s' is %s", what, path,
		    n == 0 ? "empty" : "longer than 4096 bytes");
		free(buf);
		return (KCACHE_REMOTE_ECONFIG);
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return (0);
}

/*
 * One synchronous round at start: connect, AUTH, SELECT, PING within
 * timeout_ms. Credentials or a database Redis refuses are an error; a
 * store that cannot be reached is not (logged: serving goes on).
 */
static int
kcache_remote_check(struct kcache_remote *r, char *err, size_t errlen)
{
	redisContext	*c;
	redisReply	*rp;
	struct timeval	 tv;
	int		 rc = 0, e;

	tv.tv_sec = r->timeout_ms / 1000;
	tv.tv_usec = (r->timeout_ms % 1000) * 1000;
	c = r->url.path[0] != '\0' ? redisConnectUnixWithTimeout(r->url.path,
	    tv) : redisConnectWithTimeout(r->url.host, (int)r->url.port, tv);
	e = errno;
	if (c == NULL || c->err != 0) {
		snprintf(r->last_error, sizeof r->last_error, "cannot connect: "
		    "%s", c != NULL ? c->errstr : "out of memory");
		kcache_remote_stamp(r);
		r->st.errors++;
		/* Logged here: not again by the first retry. */
		r->failures++;
		log_warn("remote tier '%s': cannot connect (%s); serving from "
		    "the local cache, connecting in the background%s",
		    r->url_text, c != NULL ? c->errstr : "out of memory",
		    c != NULL && c->err == REDIS_ERR_IO ?
		    config_remote_reach_hint(e) : "");
		redisFree(c);
		return (0);
	}
	redisSetTimeout(c, tv);
	rp = NULL;
	if (r->password != NULL)
		rp = r->user[0] != '\0' ? redisCommand(c, "AUTH %s %s",
		    r->user, r->password) : redisCommand(c, "AUTH %s",
		    r->password);
	if (r->password != NULL && (rp == NULL ||
	    rp->type == REDIS_REPLY_ERROR)) {
		if (rp != NULL) {
			snprintf(err, errlen, "remote tier '%s': Redis "
			    "refused user '%s' (remote.user, "
			    "remote.password_file): %s", r->url_text,
			    r->user[0] != '\0' ? r->user : "default", rp->str);
			rc = KCACHE_REMOTE_EAUTH;
		} else
			log_warn("remote tier '%s': no answer to AUTH (%s); "
			    "connecting in the background", r->url_text,
			    c->errstr);
		goto out;
	}
	freeReplyObject(rp);
	rp = r->url.db != 0 ? redisCommand(c, "SELECT %u", r->url.db) :
	    redisCommand(c, "PING");
	if (rp != NULL && rp->type == REDIS_REPLY_ERROR) {
		if (strncmp(rp->str, "NOAUTH", 6) == 0)
			snprintf(err, errlen, "remote tier '%s': Redis wants a "
			    "password (remote.password_file): %s", r->url_text,
			    rp->str);
		else
			snprintf(err, errlen, "remote tier '%s': %s",
			    r->url_text, rp->str);
		rc = rp->str != NULL && strncmp(rp->str, "NOAUTH", 6) == 0 ?
		    KCACHE_REMOTE_EAUTH : KCACHE_REMOTE_ECONFIG;
	}
out:
	freeReplyObject(rp);
	redisFree(c);
	return (rc);
}

static void
kcache_remote_handle_close_cb(uv_handle_t *h)
{
	struct kcache_remote	*r = h->data;

	r->handles--;
}

static void
kcache_remote_free(struct kcache_remote *r)
{
	if (r->password != NULL)
		OPENSSL_cleanse(r->password, strlen(r->password));
	if (r->fkey != NULL)
		OPENSSL_cleanse(r->fkey, r->fkeylen);
	free(r->password);
	free(r->fkey);
	free(r->user);
	free(r->url_text);
	free(r->backend);
	free(r->compiler);
	free(r);
}

int
kcache_remote_conn_open(struct kcache_remote **out, uv_loop_t *loop,
    const struct config *cfg, const char *backend,
    const char *compiler_version, uint32_t wait_ms,
    const volatile int *stopping, const struct kcache_remote_events *ev,
    char *err, size_t errlen)
{
	struct kcache_remote	*r;
	unsigned char		 rnd[8];
	char			 host[64], why[512];
	size_t			 n;
	int			 rc;

	assert(out != NULL && loop != NULL && cfg != NULL && ev != NULL);
	*out = NULL;
	if (strcmp(cfg->remote_mode, "off") == 0)
		return (0);
	r = xcalloc(1, sizeof *r);
	r->loop = loop;
	r->ev = *ev;
	if (config_remote_url_parse(cfg->remote_url, &r->url, why,
	    sizeof why) != 0) {
		snprintf(err, errlen, "remote tier: %s", why);
		kcache_remote_free(r);
		return (-1);
	}
	r->url_text = xstrdup(cfg->remote_url);
	r->user = xstrdup(cfg->remote_user);
	r->writable = strcmp(cfg->remote_mode, "read-write") == 0;
	r->timeout_ms = cfg->remote_timeout_ms;
	r->max_bytes = cfg->remote_max_entry_bytes;
	r->ttl_ms = (uint64_t)cfg->remote_ttl_days * 86400 * 1000;
	r->failed_ttl_ms = r->ttl_ms < KCACHE_REMOTE_FAILED_TTL_MS ? r->ttl_ms :
	    KCACHE_REMOTE_FAILED_TTL_MS;
	r->lock_ms = cfg->remote_lock_ms;
	r->poll_ms = r->lock_ms / 10;
	if (r->poll_ms < 20)
		r->poll_ms = 20;
	if (r->poll_ms > 1000)
		r->poll_ms = 1000;
	/* Another host's lock is waited for remote.lock_wait_ms at most,
	 * and never longer than a compile here would take. */
	r->wait_ms = cfg->remote_lock_wait_ms < wait_ms ?
	    cfg->remote_lock_wait_ms : wait_ms;
	r->backend = xstrdup(backend);
	r->compiler = xstrdup(compiler_version);
	r->stopping = stopping;
	r->retry_ms = KCACHE_REMOTE_RETRY_MS;
	r->st.url = r->url_text;
	r->st.mode = r->writable ? "read-write" : "read";
	r->st.last_error = r->last_error;
	snprintf(r->channel, sizeof r->channel, KCACHE_REMOTE_CHANNEL "%u",
	    r->url.db);
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "host");
	host[sizeof host - 1] = '\0';
	if (RAND_bytes(rnd, sizeof rnd) != 1)
		memset(rnd, 0, sizeof rnd);
	snprintf(r->token_base, sizeof r->token_base,
	    "%s:%ld:%02x%02x%02x%02x%02x%02x%02x%02x", host, (long)getpid(),
	    rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	TAILQ_INIT(&r->cmds);
	TAILQ_INIT(&r->waits);
	TAILQ_INIT(&r->locks);
	if (cfg->remote_password_file[0] != '\0' &&
	    (rc = kcache_remote_secret_read(
	    "remote.password_file", cfg->remote_password_file, &r->password,
	    &n, err, errlen)) != 0)
		goto fail;
	if ((rc = kcache_remote_secret_read("remote.hmac_key_file",
	    cfg->remote_hmac_key_file, (char **)&r->fkey, &r->fkeylen, err,
	    errlen)) != 0)
		goto fail;
	if (r->fkeylen < KCACHE_REMOTE_FKEY_MIN) {
		snprintf(err, errlen, "remote tier: the fleet key in "
		    "remote.hmac_key_file '%s' has %zu bytes, fewer than %d "
		    "(make one: head -c 32 /dev/urandom | base64 > FILE)",
		    cfg->remote_hmac_key_file, r->fkeylen,
		    KCACHE_REMOTE_FKEY_MIN);
		goto fail;
	}
	if ((rc = kcache_remote_check(r, err, errlen)) != 0)
		goto fail;
	uv_timer_init(loop, &r->cmd_timer);
	uv_timer_init(loop, &r->retry_timer);
	uv_timer_init(loop, &r->tick);
	r->cmd_timer.data = r->retry_timer.data = r->tick.data = r;
	uv_unref((uv_handle_t *)&r->cmd_timer);
	uv_unref((uv_handle_t *)&r->retry_timer);
	uv_unref((uv_handle_t *)&r->tick);
	r->handles = 3;
	kcache_remote_connect(r);
	log_info("remote tier '%s': %s, timeout %u ms, fleet lock %u ms "
	    "(waited for %u ms at most), entries kept %u days", r->url_text,
	    r->st.mode, r->timeout_ms, r->lock_ms, r->wait_ms,
	    cfg->remote_ttl_days);
	*out = r;
	return (0);
fail:
	kcache_remote_free(r);
	return (-1);
}

void
kcache_remote_close(struct kcache_remote *r)
{
	struct kcache_remote_lock	*lk;

	if (r == NULL)
		return;
	assert(TAILQ_EMPTY(&r->waits) && r->work == 0);
	r->closing = 1;
	if (r->resolving)
		uv_cancel((uv_req_t *)&r->gai);
	if (r->ac != NULL || r->sub != NULL)
		kcache_remote_drop(r, KCACHE_REMOTE_EDOWN, "closing");
	while ((lk = TAILQ_FIRST(&r->locks)) != NULL) {
		TAILQ_REMOVE(&r->locks, lk, link);
		free(lk);
	}
	uv_close((uv_handle_t *)&r->cmd_timer, kcache_remote_handle_close_cb);
	uv_close((uv_handle_t *)&r->retry_timer, kcache_remote_handle_close_cb);
	uv_close((uv_handle_t *)&r->tick, kcache_remote_handle_close_cb);
	while (r->handles > 0 || r->resolving)
		uv_run(r->loop, UV_RUN_ONCE);
	kcache_remote_free(r);
}

int
kcache_remote_writable(const struct kcache_remote *r)
{
	return (r != NULL && r->writable);
}

void
kcache_remote_encode(const struct kcache_remote *r,
    const struct cache_entry *e, void **out, size_t *outlen)
{
	kcache_remote_entry_encode(r->fkey, r->fkeylen, e, out, outlen);
	if (*outlen > r->max_bytes) {
		free(*out);
		*out = NULL;
		*outlen = 0;
	}
}

void
kcache_remote_stats_get(const struct kcache_remote *r,
    struct kcache_remote_stats *st)
{
	*st = r->st;
	st->breaker_open = uv_now(r->loop) < r->open_until;
	if (r->ac != NULL && r->state == KCACHE_REMOTE_UP &&
	    uv_now(r->loop) >= r->open_until)
		st->state = "up";
	else if (r->ac != NULL && r->state == KCACHE_REMOTE_CONNECTING)
		st->state = "connecting";
	else
		st->state = "down";
}

/* ------------------------------------------------------------ pushes */

void
kcache_remote_set(struct kcache_remote *r, const char *key, const void *value,
    size_t len, int failed, kcache_remote_reply_cb cb, void *arg, int *err)
{
	const char	*argv[5];
	size_t		 argvlen[5];
	char		 name[sizeof KCACHE_REMOTE_NEFF + CACHE_KEY_LEN];
	char		 ms[32];

	snprintf(name, sizeof name, KCACHE_REMOTE_NEFF "%s", key);
	snprintf(ms, sizeof ms, "%llu", (unsigned long long)(failed ?
	    r->failed_ttl_ms : r->ttl_ms));
	argv[0] = "SET";
	argv[1] = name;
	argv[2] = value;
	argv[3] = "PX";
	argv[4] = ms;
	argvlen[0] = 3;
	argvlen[1] = strlen(name);
	argvlen[2] = len;
	argvlen[3] = 2;
	argvlen[4] = strlen(ms);
	*err = kcache_remote_command_sized(r, cb, arg, 5, argv, argvlen, len);
}

static void
kcache_remote_pushed_cb(struct kcache_remote *r, redisReply *rp, int err,
    void *arg)
{
	struct kcache_remote_pushing	*p = arg;

	if (err == 0 && rp->type != REDIS_REPLY_STATUS)
		err = KCACHE_REMOTE_EIO;
	if (err == 0) {
		r->st.pushes++;
		r->st.pushed_bytes += p->len;
	}
	p->cb(p->arg, err);
	free(p);
}

int
kcache_remote_push(struct kcache_remote *r, const char *key, void *value,
    size_t len, int failed, kcache_remote_push_cb cb, void *arg)
{
	struct kcache_remote_pushing	*p;
	int		 err;

	assert(r != NULL && key != NULL && value != NULL && cb != NULL);
	if (!r->writable) {
		free(value);
		return (KCACHE_REMOTE_EREADONLY);
	}
	if (!kcache_remote_usable(r)) {
		free(value);
		r->st.skipped++;
		return (KCACHE_REMOTE_EDOWN);
	}
	p = xcalloc(1, sizeof *p);
	p->cb = cb;
	p->arg = arg;
	p->len = len;
	kcache_remote_set(r, key, value, len, failed, kcache_remote_pushed_cb,
	    p, &err);
	free(value);
	if (err != 0) {
		free(p);
		return (err);
	}
	return (0);
}
