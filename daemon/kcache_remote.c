/* kcache_remote.c: the remote tier on Redis through hiredis on the loop: connections, timeouts, the circuit breaker, pull, push and the fleet lock. */
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "daemon/config.h"
#include "daemon/kcache_remote.h"
#include "daemon/log.h"
#include "daemon/xmalloc.h"

/* Names in the store (docs/cache.md, "The remote tier"). */
#define KR_NEFF		"nkid:neff:"	/* + key: the entry */
#define KR_LOCK		"nkid:lock:"	/* + key: the fleet lock, a token */
#define KR_CHANNEL	"nkid:done:"	/* + db: "key" when a compile ends */

/* Failures in a row that open the circuit; how long it stays open (doubled
 * while the store keeps failing); the first reconnect after a drop. */
#define KR_FAILURES	3
#define KR_OPEN_MIN_MS	1000
#define KR_OPEN_MAX_MS	10000
#define KR_RETRY_MS	200
/* A cached compile failure lives a day in the store (or ttl_days). */
#define KR_FAILED_TTL_MS	(86400ULL * 1000)
/* Longest secret read from a file. */
#define KR_SECRET_MAX	4096
/* Shortest fleet key. */
#define KR_FKEY_MIN	16

/* Release and renew the fleet lock only while it is ours. */
#define KR_LUA_RELEASE	"if redis.call('get', KEYS[1]) == ARGV[1] then " \
	"return redis.call('del', KEYS[1]) else return 0 end"
#define KR_LUA_RENEW	"if redis.call('get', KEYS[1]) == ARGV[1] then " \
	"return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"

enum kr_state { KR_DOWN, KR_CONNECTING, KR_UP };

struct kcache_remote;

/* One command on the main connection, answered in order. */
struct kr_cmd {
	struct kcache_remote	*r;
	void			(*cb)(struct kcache_remote *, redisReply *,
				    int, void *);
	void			*arg;
	uint64_t		 deadline;	/* uv_now, ms */
	TAILQ_ENTRY(kr_cmd)	 link;
};
TAILQ_HEAD(kr_cmds, kr_cmd);

struct kcache_remote_lock {
	struct kcache_remote		*r;
	char				 key[CACHE_KEY_LEN + 1];
	char				 token[128];
	uint64_t			 renew_at;
	int				 renewing;
	int				 lost;
	TAILQ_ENTRY(kcache_remote_lock)	 link;
};
TAILQ_HEAD(kr_locks, kcache_remote_lock);

/* One resolve (kcache_remote_resolve). */
struct kr_op {
	struct kcache_remote		*r;
	char				 key[CACHE_KEY_LEN + 1];
	int				 flags;
	kcache_remote_accept_cb		 accept;
	kcache_remote_done_cb		 done;
	void				*arg;
	struct kcache_remote_lock	*lk;
	int				 busy;		/* a call or verify */
	int				 waiting;	/* on r->waits */
	int				 woken;		/* told while busy */
	int				 waited;	/* counted */
	int				 missed;	/* counted */
	uint64_t			 wait_end;	/* uv_now, ms */
	uint64_t			 next_poll;
	long long			 strlen;
	char				 token[128];	/* asked for */
	void				*value;
	size_t				 len;
	int				 verify_rc;
	int				 taken;
	char				 why[256];
	uv_work_t			 work;
	TAILQ_ENTRY(kr_op)		 link;
};
TAILQ_HEAD(kr_ops, kr_op);

/* A push (kcache_remote_push). */
struct kr_push {
	kcache_remote_push_cb	 cb;
	void			*arg;
	size_t			 len;
};

struct kcache_remote {
	uv_loop_t			*loop;
	struct config_remote_url	 url;
	char				*url_text;
	char				*user;
	char				*password;	/* NULL: no AUTH */
	int				 writable;
	uint32_t			 timeout_ms;
	uint64_t			 max_bytes;
	uint64_t			 ttl_ms;
	uint64_t			 failed_ttl_ms;
	uint32_t			 lock_ms;
	uint32_t			 poll_ms;
	uint32_t			 wait_ms;
	unsigned char			*fkey;
	size_t				 fkeylen;
	char				*backend;
	char				*compiler;
	const volatile int		*stopping;
	char				 channel[32];
	char				 token_base[96];
	uint64_t			 token_seq;

	redisAsyncContext		*ac;		/* commands */
	redisAsyncContext		*sub;		/* the channel */
	enum kr_state			 state;
	int				 resolving;	/* getaddrinfo */
	uv_getaddrinfo_t		 gai;
	/* the oldest's deadline */
	uv_timer_t			 cmd_timer;
	uv_timer_t			 retry_timer;	/* reconnect */
	uv_timer_t			 tick;		/* waits and locks */
	int				 handles;	/* open uv handles */
	int				 closing;
	/* error of our own drop */
	int				 dropping;
	struct kr_cmds			 cmds;
	struct kr_ops			 waits;
	struct kr_locks			 locks;
	unsigned			 work;		/* verifies queued */
	unsigned			 failures;	/* in a row */
	unsigned			 trips;
	uint64_t			 open_until;	/* uv_now, ms */
	uint32_t			 retry_ms;

	struct kcache_remote_stats	 st;
	char				 last_error[256];
};

static const char *kcache_remote_errs[] = {
	"success", "not in the remote tier", "rejected",
	"the remote tier is down", "no answer within remote.timeout_ms",
	"connection lost or error reply", "credentials refused",
	"the remote tier is read-only", "cannot read a file of the config",
	"larger than remote.max_entry_bytes",
};

const char *
kcache_remote_strerror(int err)
{
	if (err > 0 || -err >= (int)(sizeof kcache_remote_errs /
	    sizeof kcache_remote_errs[0]))
		return ("unknown error");
	return (kcache_remote_errs[-err]);
}

static void	kr_connect(struct kcache_remote *);
static void	kr_drop(struct kcache_remote *, int, const char *);
static int	kr_op_get(struct kr_op *);
static int	kr_op_lock(struct kr_op *);
static void	kr_op_next(struct kr_op *, int (*)(struct kr_op *));
static void	kr_op_end(struct kr_op *, int, int);
static void	kr_tick_start(struct kcache_remote *);
static void	kr_tick_kick(struct kcache_remote *);
static void	kr_waits_end(struct kcache_remote *, int, int);

/* ------------------------------------------------------------ state */

static int
kr_usable(struct kcache_remote *r)
{
	return (!r->closing && r->ac != NULL &&
	    uv_now(r->loop) >= r->open_until &&
	    (r->state == KR_UP || r->failures == 0));
}

/* A failure of the store: count it, and open the circuit after
 * KR_FAILURES in a row. */
static void
kr_fail(struct kcache_remote *r, const char *fmt, ...)
{
	va_list		ap;
	uint64_t	now = uv_now(r->loop), ms;

	va_start(ap, fmt);
	vsnprintf(r->last_error, sizeof r->last_error, fmt, ap);
	va_end(ap);
	r->st.errors++;
	if (r->failures++ == 0 && r->trips == 0)
		log_warn("remote tier '%s': %s; requests are served from the "
		    "local cache meanwhile", r->url_text, r->last_error);
	else
		log_debug("remote tier '%s': %s", r->url_text, r->last_error);
	if (r->failures < KR_FAILURES || now < r->open_until)
		return;
	ms = (uint64_t)KR_OPEN_MIN_MS << (r->trips < 4 ? r->trips : 4);
	if (ms > KR_OPEN_MAX_MS)
		ms = KR_OPEN_MAX_MS;
	r->trips++;
	r->open_until = now + ms;
	log_warn("remote tier '%s': %u failures in a row (last: %s); not "
	    "asking it for %llu ms", r->url_text, r->failures, r->last_error,
	    (unsigned long long)ms);
	kr_waits_end(r, KCACHE_REMOTE_COMPILE, KCACHE_REMOTE_EDOWN);
}

static void
kr_ok(struct kcache_remote *r)
{
	if (r->trips > 0 || r->failures > 0)
		log_info("remote tier '%s' answers again", r->url_text);
	r->failures = 0;
	r->trips = 0;
	r->open_until = 0;
}

/* ------------------------------------------------------------ commands */

static void kr_cmd_timer_cb(uv_timer_t *);

static void
kr_cmd_timer_set(struct kcache_remote *r)
{
	struct kr_cmd	*c;
	uint64_t	 now = uv_now(r->loop);

	if (r->closing)
		return;
	if ((c = TAILQ_FIRST(&r->cmds)) == NULL) {
		uv_timer_stop(&r->cmd_timer);
		return;
	}
	uv_timer_start(&r->cmd_timer, kr_cmd_timer_cb,
	    c->deadline > now ? c->deadline - now : 0, 0);
}

static void
kr_cmd_timer_cb(uv_timer_t *t)
{
	struct kcache_remote	*r = t->data;
	struct kr_cmd		*c;

	if ((c = TAILQ_FIRST(&r->cmds)) == NULL)
		return;
	if (uv_now(r->loop) < c->deadline) {
		kr_cmd_timer_set(r);
		return;
	}
	kr_fail(r, "no answer within %u ms (remote.timeout_ms)",
	    r->timeout_ms);
	kr_drop(r, KCACHE_REMOTE_ETIMEDOUT, "timeout");
}

static void
kr_cmd_reply_cb(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct kr_cmd		*c = privdata;
	struct kcache_remote	*r = c->r;
	redisReply		*rp = reply;
	int			 err = 0;

	TAILQ_REMOVE(&r->cmds, c, link);
	if (rp == NULL)
		err = r->dropping != 0 ? r->dropping : KCACHE_REMOTE_EIO;
	else if (rp->type == REDIS_REPLY_ERROR) {
		err = KCACHE_REMOTE_EIO;
		kr_fail(r, "error reply: %.200s", rp->str);
	} else
		kr_ok(r);
	kr_cmd_timer_set(r);
	c->cb(r, err == 0 ? rp : NULL, err, c->arg);
	free(c);
}

/*
 * Send argv on the main connection; cb(r, reply, err, arg) runs once,
 * later (reply NULL when err). Returns 0, or KCACHE_REMOTE_EDOWN when it
 * cannot be sent (cb never runs).
 */
static int
kr_command(struct kcache_remote *r, void (*cb)(struct kcache_remote *,
    redisReply *, int, void *), void *arg, int argc, const char **argv,
    const size_t *argvlen)
{
	struct kr_cmd	*c;

	if (r->ac == NULL || r->closing)
		return (KCACHE_REMOTE_EDOWN);
	c = xcalloc(1, sizeof *c);
	c->r = r;
	c->cb = cb;
	c->arg = arg;
	c->deadline = uv_now(r->loop) + r->timeout_ms;
	if (redisAsyncCommandArgv(r->ac, kr_cmd_reply_cb, c, argc, argv,
	    argvlen) != REDIS_OK) {
		free(c);
		return (KCACHE_REMOTE_EDOWN);
	}
	TAILQ_INSERT_TAIL(&r->cmds, c, link);
	if (TAILQ_FIRST(&r->cmds) == c)
		kr_cmd_timer_set(r);
	return (0);
}

/* argvlen[i] = strlen(argv[i]) for the n arguments. */
static void
kr_lens(const char **argv, size_t *argvlen, int n)
{
	int	i;

	for (i = 0; i < n; i++)
		argvlen[i] = strlen(argv[i]);
}

/* A command whose answer only matters as success or failure. */
static void
kr_ignore_cb(struct kcache_remote *r, redisReply *rp, int err, void *arg)
{
}

/* ------------------------------------------------------------ connection */

static void
kr_retry_timer_cb(uv_timer_t *t)
{
	kr_connect(t->data);
}

static void
kr_retry_arm(struct kcache_remote *r)
{
	uint64_t	now = uv_now(r->loop), ms = r->retry_ms;

	if (r->closing)
		return;
	if (r->open_until > now + ms)
		ms = r->open_until - now;
	uv_timer_start(&r->retry_timer, kr_retry_timer_cb, ms, 0);
	r->retry_ms *= 2;
	if (r->retry_ms > KR_OPEN_MAX_MS)
		r->retry_ms = KR_OPEN_MAX_MS;
}

/* Close both connections (their pending commands end with err); unless
 * closing, connect again later. */
static void
kr_drop(struct kcache_remote *r, int err, const char *why)
{
	redisAsyncContext	*ac = r->ac, *sub = r->sub;

	r->ac = NULL;
	r->sub = NULL;
	r->state = KR_DOWN;
	log_debug("remote tier '%s': dropping the connection (%s)",
	    r->url_text, why);
	r->dropping = err;
	if (ac != NULL)
		redisAsyncFree(ac);
	if (sub != NULL)
		redisAsyncFree(sub);
	r->dropping = 0;
	uv_timer_stop(&r->cmd_timer);
	kr_waits_end(r, KCACHE_REMOTE_COMPILE, KCACHE_REMOTE_EDOWN);
	if (!uv_is_active((uv_handle_t *)&r->retry_timer))
		kr_retry_arm(r);
}

static void
kr_connect_cb(const redisAsyncContext *ac, int status)
{
	struct kcache_remote	*r = ac->data;

	if (status == REDIS_OK)
		return;
	/* hiredis frees ac after this. */
	if (ac == r->ac)
		r->ac = NULL;
	else if (ac == r->sub)
		r->sub = NULL;
	else
		return;
	kr_fail(r, "cannot connect: %s", ac->errstr);
	kr_drop(r, KCACHE_REMOTE_EIO, "connect failed");
}

static void
kr_disconnect_cb(const redisAsyncContext *ac, int status)
{
	struct kcache_remote	*r = ac->data;

	/* hiredis frees ac after this. */
	if (ac == r->ac)
		r->ac = NULL;
	else if (ac == r->sub)
		r->sub = NULL;
	else
		return;
	kr_fail(r, "connection lost: %s", ac->err != 0 ? ac->errstr :
	    "closed by the server");
	kr_drop(r, KCACHE_REMOTE_EIO, "disconnected");
}

static void
kr_auth_cb(struct kcache_remote *r, redisReply *rp, int err, void *arg)
{
	if (err == 0 || r->ac == NULL)
		return;
	log_error("remote tier '%s': Redis refused the credentials of "
	    "user '%s' (%s)", r->url_text, r->user[0] != '\0' ? r->user :
	    "default", r->last_error);
	kr_drop(r, KCACHE_REMOTE_EAUTH, "credentials refused");
}

static void
kr_ping_cb(struct kcache_remote *r, redisReply *rp, int err, void *arg)
{
	if (err != 0 || r->ac == NULL)
		return;
	if (r->state != KR_UP)
		log_info("remote tier '%s' connected (%s)", r->url_text,
		    r->writable ? "read-write" : "read");
	r->state = KR_UP;
	r->retry_ms = KR_RETRY_MS;
}

/* Messages on the channel: "key" when a host ends a compile of key. */
static void
kr_sub_cb(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct kcache_remote	*r = privdata;
	redisReply		*rp = reply;
	struct kr_op		*op;

	if (rp == NULL || ac != r->sub)
		return;
	if (rp->type == REDIS_REPLY_ERROR) {
		kr_fail(r, "channel: %.200s", rp->str);
		kr_drop(r, KCACHE_REMOTE_EIO, "channel error");
		return;
	}
	if (rp->type != REDIS_REPLY_ARRAY || rp->elements != 3 ||
	    rp->element[0]->type != REDIS_REPLY_STRING ||
	    strcmp(rp->element[0]->str, "message") != 0 ||
	    rp->element[2]->type != REDIS_REPLY_STRING)
		return;
	TAILQ_FOREACH(op, &r->waits, link) {
		if (strcmp(op->key, rp->element[2]->str) != 0)
			continue;
		op->woken = 1;
		op->next_poll = 0;
	}
	if (!TAILQ_EMPTY(&r->waits))
		kr_tick_kick(r);
}

/* AUTH (and SELECT) on a new connection, through hiredis's buffer. */
static void
kr_login(struct kcache_remote *r, redisAsyncContext *ac, int sub)
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
		kr_lens(argv, argvlen, n);
		if (sub)
			redisAsyncCommandArgv(ac, NULL, NULL, n, argv, argvlen);
		else
			kr_command(r, kr_auth_cb, NULL, n, argv, argvlen);
	}
	if (sub || r->url.db == 0)
		return;
	snprintf(db, sizeof db, "%u", r->url.db);
	argv[0] = "SELECT";
	argv[1] = db;
	argvlen[0] = 6;
	argvlen[1] = strlen(db);
	kr_command(r, kr_ignore_cb, NULL, 2, argv, argvlen);
}

static redisAsyncContext *
kr_context_new(struct kcache_remote *r, const char *ip)
{
	redisAsyncContext	*ac;

	ac = r->url.path[0] != '\0' ? redisAsyncConnectUnix(r->url.path) :
	    redisAsyncConnect(ip, (int)r->url.port);
	if (ac == NULL) {
		kr_fail(r, "cannot connect: out of memory");
		return (NULL);
	}
	if (ac->err != 0) {
		kr_fail(r, "cannot connect: %s", ac->errstr);
		redisAsyncFree(ac);
		return (NULL);
	}
	ac->data = r;
	if (redisLibuvAttach(ac, r->loop) != REDIS_OK) {
		kr_fail(r, "cannot watch the connection");
		redisAsyncFree(ac);
		return (NULL);
	}
	/* The store never keeps nkid's loop alive: stopping ends it. */
	uv_unref((uv_handle_t *)&((redisLibuvEvents *)ac->ev.data)->handle);
	redisAsyncSetConnectCallback(ac, kr_connect_cb);
	redisAsyncSetDisconnectCallback(ac, kr_disconnect_cb);
	return (ac);
}

/* Open both connections to ip (NULL: the unix socket). */
static void
kr_connect_to(struct kcache_remote *r, const char *ip)
{
	const char	*argv[2];
	size_t		 argvlen[2];

	if ((r->ac = kr_context_new(r, ip)) == NULL) {
		kr_retry_arm(r);
		return;
	}
	if ((r->sub = kr_context_new(r, ip)) == NULL) {
		kr_drop(r, KCACHE_REMOTE_EIO, "connect failed");
		return;
	}
	r->state = KR_CONNECTING;
	kr_login(r, r->ac, 0);
	argv[0] = "PING";
	argvlen[0] = 4;
	kr_command(r, kr_ping_cb, NULL, 1, argv, argvlen);
	kr_login(r, r->sub, 1);
	argv[0] = "SUBSCRIBE";
	argv[1] = r->channel;
	argvlen[0] = 9;
	argvlen[1] = strlen(r->channel);
	redisAsyncCommandArgv(r->sub, kr_sub_cb, r, 2, argv, argvlen);
}

static void
kr_resolved_cb(uv_getaddrinfo_t *g, int status, struct addrinfo *ai)
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
		kr_fail(r, "cannot resolve '%s': %s", r->url.host,
		    uv_strerror(status));
		uv_freeaddrinfo(ai);
		kr_retry_arm(r);
		return;
	}
	a = ai->ai_family == AF_INET6 ?
	    (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr :
	    (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr;
	inet_ntop(ai->ai_family, a, ip, sizeof ip);
	uv_freeaddrinfo(ai);
	kr_connect_to(r, ip);
}

static void
kr_connect(struct kcache_remote *r)
{
	struct addrinfo	 hints;
	unsigned char	 buf[sizeof(struct in6_addr)];

	if (r->closing || r->ac != NULL || r->resolving)
		return;
	if (r->url.path[0] != '\0' || inet_pton(AF_INET, r->url.host,
	    buf) == 1 || inet_pton(AF_INET6, r->url.host, buf) == 1) {
		kr_connect_to(r, r->url.host);
		return;
	}
	/* hiredis resolves names with a blocking getaddrinfo: not here. */
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	r->gai.data = r;
	if (uv_getaddrinfo(r->loop, &r->gai, kr_resolved_cb, r->url.host,
	    NULL, &hints) != 0) {
		kr_fail(r, "cannot resolve '%s'", r->url.host);
		kr_retry_arm(r);
		return;
	}
	r->resolving = 1;
}

/* ------------------------------------------------------------ open */

/* The secret in path, trailing blanks and newlines cut, into *out. */
static int
kr_secret_read(const char *what, const char *path, char **out, size_t *len,
    char *err, size_t errlen)
{
	FILE		*f;
	struct stat	 sb;
	char		*buf;
	size_t		 n;

	if ((f = fopen(path, "re")) == NULL) {
		snprintf(err, errlen, "remote tier: cannot read %s '%s': %s",
		    what, path, strerror(errno));
		return (KCACHE_REMOTE_ECONFIG);
	}
	if (fstat(fileno(f), &sb) == 0 && (sb.st_mode & S_IROTH))
		log_warn("remote tier: %s '%s' is readable by everyone",
		    what, path);
	buf = xmalloc(KR_SECRET_MAX + 1);
	n = fread(buf, 1, KR_SECRET_MAX + 1, f);
	fclose(f);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' ||
	    buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		n--;
	if (n > KR_SECRET_MAX || n == 0) {
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
kr_check(struct kcache_remote *r, char *err, size_t errlen)
{
	redisContext	*c;
	redisReply	*rp;
	struct timeval	 tv;
	int		 rc = 0;

	tv.tv_sec = r->timeout_ms / 1000;
	tv.tv_usec = (r->timeout_ms % 1000) * 1000;
	c = r->url.path[0] != '\0' ? redisConnectUnixWithTimeout(r->url.path,
	    tv) : redisConnectWithTimeout(r->url.host, (int)r->url.port, tv);
	if (c == NULL || c->err != 0) {
		log_warn("remote tier '%s': cannot connect (%s); serving from "
		    "the local cache, connecting in the background",
		    r->url_text, c != NULL ? c->errstr : "out of memory");
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
kr_handle_close_cb(uv_handle_t *h)
{
	struct kcache_remote	*r = h->data;

	r->handles--;
}

static void
kr_free(struct kcache_remote *r)
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
kcache_remote_open(struct kcache_remote **out, uv_loop_t *loop,
    const struct config *cfg, const char *backend,
    const char *compiler_version, uint32_t wait_ms,
    const volatile int *stopping, char *err, size_t errlen)
{
	struct kcache_remote	*r;
	unsigned char		 rnd[8];
	char			 host[64], why[512];
	size_t			 n;
	int			 rc;

	assert(out != NULL && loop != NULL && cfg != NULL);
	*out = NULL;
	if (strcmp(cfg->remote_mode, "off") == 0)
		return (0);
	r = xcalloc(1, sizeof *r);
	r->loop = loop;
	if (config_remote_url_parse(cfg->remote_url, &r->url, why,
	    sizeof why) != 0) {
		snprintf(err, errlen, "remote tier: %s", why);
		kr_free(r);
		return (-1);
	}
	r->url_text = xstrdup(cfg->remote_url);
	r->user = xstrdup(cfg->remote_user);
	r->writable = strcmp(cfg->remote_mode, "read-write") == 0;
	r->timeout_ms = cfg->remote_timeout_ms;
	r->max_bytes = cfg->remote_max_entry_bytes;
	r->ttl_ms = (uint64_t)cfg->remote_ttl_days * 86400 * 1000;
	r->failed_ttl_ms = r->ttl_ms < KR_FAILED_TTL_MS ? r->ttl_ms :
	    KR_FAILED_TTL_MS;
	r->lock_ms = cfg->remote_lock_ms;
	r->poll_ms = r->lock_ms / 10;
	if (r->poll_ms < 20)
		r->poll_ms = 20;
	if (r->poll_ms > 1000)
		r->poll_ms = 1000;
	r->wait_ms = wait_ms;
	r->backend = xstrdup(backend);
	r->compiler = xstrdup(compiler_version);
	r->stopping = stopping;
	r->retry_ms = KR_RETRY_MS;
	r->st.url = r->url_text;
	r->st.mode = cfg->remote_mode[5] != '\0' ? "read-write" : "read";
	r->st.last_error = r->last_error;
	snprintf(r->channel, sizeof r->channel, KR_CHANNEL "%u", r->url.db);
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
	if (cfg->remote_password_file[0] != '\0' && (rc = kr_secret_read(
	    "remote.password_file", cfg->remote_password_file, &r->password,
	    &n, err, errlen)) != 0)
		goto fail;
	if ((rc = kr_secret_read("remote.hmac_key_file",
	    cfg->remote_hmac_key_file, (char **)&r->fkey, &r->fkeylen, err,
	    errlen)) != 0)
		goto fail;
	if (r->fkeylen < KR_FKEY_MIN) {
		snprintf(err, errlen, "remote tier: the fleet key in "
		    "remote.hmac_key_file '%s' has %zu bytes, fewer than %d "
		    "(make one: head -c 32 /dev/urandom | base64 > FILE)",
		    cfg->remote_hmac_key_file, r->fkeylen, KR_FKEY_MIN);
		goto fail;
	}
	if ((rc = kr_check(r, err, errlen)) != 0)
		goto fail;
	uv_timer_init(loop, &r->cmd_timer);
	uv_timer_init(loop, &r->retry_timer);
	uv_timer_init(loop, &r->tick);
	r->cmd_timer.data = r->retry_timer.data = r->tick.data = r;
	uv_unref((uv_handle_t *)&r->cmd_timer);
	uv_unref((uv_handle_t *)&r->retry_timer);
	uv_unref((uv_handle_t *)&r->tick);
	r->handles = 3;
	kr_connect(r);
	log_info("remote tier '%s': %s, timeout %u ms, fleet lock %u ms, "
	    "entries kept %u days", r->url_text, r->st.mode, r->timeout_ms,
	    r->lock_ms, cfg->remote_ttl_days);
	*out = r;
	return (0);
fail:
	kr_free(r);
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
		kr_drop(r, KCACHE_REMOTE_EDOWN, "closing");
	while ((lk = TAILQ_FIRST(&r->locks)) != NULL) {
		TAILQ_REMOVE(&r->locks, lk, link);
		free(lk);
	}
	uv_close((uv_handle_t *)&r->cmd_timer, kr_handle_close_cb);
	uv_close((uv_handle_t *)&r->retry_timer, kr_handle_close_cb);
	uv_close((uv_handle_t *)&r->tick, kr_handle_close_cb);
	while (r->handles > 0 || r->resolving)
		uv_run(r->loop, UV_RUN_ONCE);
	kr_free(r);
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
	if (r->ac != NULL && r->state == KR_UP &&
	    uv_now(r->loop) >= r->open_until)
		st->state = "up";
	else if (r->ac != NULL && r->state == KR_CONNECTING)
		st->state = "connecting";
	else
		st->state = "down";
}

/* ------------------------------------------------------------ locks */

static void
kr_lock_free(struct kcache_remote_lock *lk)
{
	TAILQ_REMOVE(&lk->r->locks, lk, link);
	free(lk);
}

/* EVAL script on lk's key with its token (and arg, if not NULL). */
static int
kr_lock_eval(struct kcache_remote_lock *lk, const char *script,
    const char *arg, void (*cb)(struct kcache_remote *, redisReply *, int,
    void *))
{
	const char	*argv[6];
	size_t		 argvlen[6];
	char		 name[sizeof KR_LOCK + CACHE_KEY_LEN];

	snprintf(name, sizeof name, KR_LOCK "%s", lk->key);
	argv[0] = "EVAL";
	argv[1] = script;
	argv[2] = "1";
	argv[3] = name;
	argv[4] = lk->token;
	argv[5] = arg;
	kr_lens(argv, argvlen, arg != NULL ? 6 : 5);
	return (kr_command(lk->r, cb, lk, arg != NULL ? 6 : 5, argv,
	    argvlen));
}

/* Release lk if it is still ours (token-checked), and free it. */
static void
kr_lock_release(struct kcache_remote_lock *lk)
{
	if (!lk->lost)
		(void)kr_lock_eval(lk, KR_LUA_RELEASE, NULL, kr_ignore_cb);
	kr_lock_free(lk);
}

static void
kr_lock_renew_cb(struct kcache_remote *r, redisReply *rp, int err, void *arg)
{
	struct kcache_remote_lock	*lk;

	/* lk may be gone: find it by address among the held ones. */
	TAILQ_FOREACH(lk, &r->locks, link)
		if (lk == arg)
			break;
	if (lk == NULL)
		return;
	lk->renewing = 0;
	if (err != 0)
		return;
	if (rp->type == REDIS_REPLY_INTEGER && rp->integer == 1) {
		lk->renew_at = uv_now(r->loop) + r->lock_ms / 3;
		return;
	}
	lk->lost = 1;
	log_warn("remote tier '%s': the fleet lock of '%s' expired while it "
	    "was compiled here (remote.lock_ms %u too short, or nkid was "
	    "stopped?); another host may compile it too", r->url_text,
	    lk->key, r->lock_ms);
}

static void
kr_lock_renew(struct kcache_remote_lock *lk)
{
	char	ms[16];

	snprintf(ms, sizeof ms, "%u", lk->r->lock_ms);
	if (kr_lock_eval(lk, KR_LUA_RENEW, ms, kr_lock_renew_cb) == 0)
		lk->renewing = 1;
}

/* ------------------------------------------------------------ resolves */

static void
kr_op_free(struct kr_op *op)
{
	free(op->value);
	free(op);
}

/* End op: done runs, op is freed. */
static void
kr_op_end(struct kr_op *op, int outcome, int err)
{
	struct kcache_remote		*r = op->r;
	struct kcache_remote_lock	*lk = op->lk;

	if (op->waiting) {
		TAILQ_REMOVE(&r->waits, op, link);
		op->waiting = 0;
	}
	if (outcome != KCACHE_REMOTE_COMPILE && lk != NULL) {
		kr_lock_release(lk);
		lk = NULL;
	}
	op->done(op->arg, outcome, err, lk);
	kr_op_free(op);
}

/* End every wait not busy with a call (a busy one ends when it returns). */
static void
kr_waits_end(struct kcache_remote *r, int outcome, int err)
{
	struct kr_op	*op;

	for (;;) {
		TAILQ_FOREACH(op, &r->waits, link)
			if (!op->busy)
				break;
		if (op == NULL)
			return;
		kr_op_end(op, outcome, err);
	}
}

static void
kr_op_verify_work_cb(uv_work_t *w)
{
	struct kr_op		*op = w->data;
	struct kcache_remote	*r = op->r;
	struct cache_entry	 ce;

	op->verify_rc = kcache_remote_entry_decode(r->fkey, r->fkeylen,
	    op->key, r->backend, r->compiler, op->value, op->len, &ce,
	    op->why, sizeof op->why);
	if (op->verify_rc != 0)
		return;
	op->taken = op->accept(op->arg, &ce) == 0;
	cache_entry_release(&ce);
}

static void
kr_op_verify_after_cb(uv_work_t *w, int status)
{
	struct kr_op		*op = w->data;
	struct kcache_remote	*r = op->r;

	r->work--;
	op->busy = 0;
	free(op->value);
	op->value = NULL;
	if (status != 0)
		kr_op_end(op, KCACHE_REMOTE_COMPILE, KCACHE_REMOTE_EIO);
	else if (op->verify_rc != 0) {
		r->st.rejected++;
		log_warn("remote tier '%s': entry '%s' rejected: %s; never "
		    "served, compiled here instead", r->url_text, op->key,
		    op->why);
		kr_op_end(op, KCACHE_REMOTE_COMPILE, KCACHE_REMOTE_EREJECT);
	} else if (op->taken) {
		r->st.hits++;
		r->st.pulled_bytes += op->len;
		kr_op_end(op, KCACHE_REMOTE_TAKEN, 0);
	} else
		kr_op_end(op, KCACHE_REMOTE_COMPILE, 0);
}

static void
kr_op_missing(struct kr_op *op)
{
	struct kcache_remote	*r = op->r;

	if (!op->missed) {
		op->missed = 1;
		r->st.misses++;
	}
	if ((op->flags & KCACHE_REMOTE_PULL_ONLY) || !r->writable ||
	    op->lk != NULL) {
		kr_op_end(op, KCACHE_REMOTE_COMPILE, KCACHE_REMOTE_ENOENT);
		return;
	}
	kr_op_next(op, kr_op_lock);
}

static void
kr_op_strlen_cb(struct kcache_remote *r, redisReply *rp, int err, void *arg)
{
	struct kr_op	*op = arg;

	op->strlen = err == 0 && rp->type == REDIS_REPLY_INTEGER ?
	    rp->integer : -1;
}

static void
kr_op_get_cb(struct kcache_remote *r, redisReply *rp, int err, void *arg)
{
	struct kr_op	*op = arg;

	op->busy = 0;
	if (err == 0 && rp->type != REDIS_REPLY_STRING)
		err = KCACHE_REMOTE_EIO;
	if (err != 0 || op->strlen < 0) {
		kr_op_end(op, KCACHE_REMOTE_COMPILE, err != 0 ? err :
		    KCACHE_REMOTE_EIO);
		return;
	}
	if (op->strlen == 0) {
		kr_op_missing(op);
		return;
	}
	if ((uint64_t)op->strlen > r->max_bytes) {
		r->st.rejected++;
		log_warn("remote tier '%s': entry '%s' rejected: %lld bytes, "
		    "more than remote.max_entry_bytes (%llu); compiled here "
		    "instead", r->url_text, op->key, op->strlen,
		    (unsigned long long)r->max_bytes);
		kr_op_end(op, KCACHE_REMOTE_COMPILE, KCACHE_REMOTE_ETOOBIG);
		return;
	}
	/* Take hiredis's buffer rather than copy it: it is malloc'd, and
	 * freeReplyObject frees a NULL str as nothing. */
	op->value = rp->str;
	op->len = rp->len;
	rp->str = NULL;
	rp->len = 0;
	op->busy = 1;
	op->work.data = op;
	r->work++;
	if (uv_queue_work(r->loop, &op->work, kr_op_verify_work_cb,
	    kr_op_verify_after_cb) != 0)
		fatal("cannot queue a remote entry's verification");
}

/* STRLEN and GETRANGE in one round trip: the size first, never more
 * than remote.max_entry_bytes read. Returns 0, or an error (nothing
 * sent). */
static int
kr_op_get(struct kr_op *op)
{
	struct kcache_remote	*r = op->r;
	const char		*argv[4];
	size_t			 argvlen[4];
	char			 name[sizeof KR_NEFF + CACHE_KEY_LEN];
	char			 end[32];
	int			 err;

	snprintf(name, sizeof name, KR_NEFF "%s", op->key);
	snprintf(end, sizeof end, "%llu",
	    (unsigned long long)r->max_bytes - 1);
	argv[0] = "STRLEN";
	argv[1] = name;
	kr_lens(argv, argvlen, 2);
	op->strlen = -1;
	if ((err = kr_command(r, kr_op_strlen_cb, op, 2, argv, argvlen)) != 0)
		return (err);
	argv[0] = "GETRANGE";
	argv[2] = "0";
	argv[3] = end;
	kr_lens(argv, argvlen, 4);
	/* Cannot fail right after STRLEN went: same connection, same turn. */
	(void)kr_command(r, kr_op_get_cb, op, 4, argv, argvlen);
	op->busy = 1;
	return (0);
}

/* The next step of op (kr_op_get, kr_op_lock), or its end if it cannot
 * be sent. */
static void
kr_op_next(struct kr_op *op, int (*step)(struct kr_op *))
{
	int	err;

	if ((err = step(op)) != 0)
		kr_op_end(op, KCACHE_REMOTE_COMPILE, err);
}

static void
kr_op_wait(struct kr_op *op)
{
	struct kcache_remote	*r = op->r;
	uint64_t		 now = uv_now(r->loop);

	if (!op->waited) {
		op->waited = 1;
		r->st.locks_waited++;
		op->wait_end = now + r->wait_ms;
		log_debug("remote tier '%s': '%s' is being compiled by another "
		    "host; waiting for it", r->url_text, op->key);
	}
	if (now >= op->wait_end) {
		log_info("remote tier '%s': waited %u ms for another host's "
		    "compile of '%s'; compiling it here", r->url_text,
		    r->wait_ms, op->key);
		kr_op_end(op, KCACHE_REMOTE_COMPILE, KCACHE_REMOTE_ENOENT);
		return;
	}
	op->waiting = 1;
	if (op->woken)
		op->next_poll = now;
	else
		op->next_poll = now + r->poll_ms;
	TAILQ_INSERT_TAIL(&r->waits, op, link);
	kr_tick_start(r);
}

static void
kr_op_lock_cb(struct kcache_remote *r, redisReply *rp, int err, void *arg)
{
	struct kr_op			*op = arg;
	struct kcache_remote_lock	*lk;

	op->busy = 0;
	if (err != 0) {
		kr_op_end(op, KCACHE_REMOTE_COMPILE, err);
		return;
	}
	if (rp->type == REDIS_REPLY_NIL) {
		kr_op_wait(op);
		return;
	}
	if (rp->type != REDIS_REPLY_STATUS) {
		kr_op_end(op, KCACHE_REMOTE_COMPILE, KCACHE_REMOTE_EIO);
		return;
	}
	lk = xcalloc(1, sizeof *lk);
	lk->r = r;
	memcpy(lk->key, op->key, sizeof lk->key);
	memcpy(lk->token, op->token, sizeof lk->token);
	lk->renew_at = uv_now(r->loop) + r->lock_ms / 3;
	TAILQ_INSERT_TAIL(&r->locks, lk, link);
	kr_tick_start(r);
	op->lk = lk;
	r->st.locks_taken++;
	/* Another host may have pushed it and released its lock between
	 * our pull and this lock: pull once more. */
	kr_op_next(op, kr_op_get);
}

/* SET the lock NX PX lock_ms with a token of ours. Returns 0, or an
 * error (nothing sent). */
static int
kr_op_lock(struct kr_op *op)
{
	struct kcache_remote	*r = op->r;
	const char		*argv[6];
	size_t			 argvlen[6];
	char			 name[sizeof KR_LOCK + CACHE_KEY_LEN];
	char			 ms[16];
	int			 err;

	snprintf(name, sizeof name, KR_LOCK "%s", op->key);
	snprintf(ms, sizeof ms, "%u", r->lock_ms);
	snprintf(op->token, sizeof op->token, "%s:%llu", r->token_base,
	    (unsigned long long)++r->token_seq);
	argv[0] = "SET";
	argv[1] = name;
	argv[2] = op->token;
	argv[3] = "NX";
	argv[4] = "PX";
	argv[5] = ms;
	kr_lens(argv, argvlen, 6);
	if ((err = kr_command(r, kr_op_lock_cb, op, 6, argv, argvlen)) != 0)
		return (err);
	op->busy = 1;
	return (0);
}

int
kcache_remote_resolve(struct kcache_remote *r, const char *key, int flags,
    kcache_remote_accept_cb accept, kcache_remote_done_cb done, void *arg)
{
	struct kr_op	*op;

	assert(r != NULL && cache_key_valid(key) && accept != NULL &&
	    done != NULL);
	if (!kr_usable(r)) {
		r->st.skipped++;
		return (KCACHE_REMOTE_EDOWN);
	}
	op = xcalloc(1, sizeof *op);
	op->r = r;
	memcpy(op->key, key, sizeof op->key);
	op->flags = flags;
	op->accept = accept;
	op->done = done;
	op->arg = arg;
	if (kr_op_get(op) != 0) {
		kr_op_free(op);
		r->st.skipped++;
		return (KCACHE_REMOTE_EDOWN);
	}
	return (0);
}

/* ------------------------------------------------------------ the tick */

static void
kr_tick_cb(uv_timer_t *t)
{
	struct kcache_remote		*r = t->data;
	struct kcache_remote_lock	*lk;
	struct kr_op			*op;
	uint64_t			 now = uv_now(r->loop);

	if (r->stopping != NULL && *r->stopping)
		kr_waits_end(r, KCACHE_REMOTE_STOP, KCACHE_REMOTE_EDOWN);
	for (;;) {
		TAILQ_FOREACH(op, &r->waits, link)
			if (!op->busy && (now >= op->next_poll ||
			    now >= op->wait_end))
				break;
		if (op == NULL)
			break;
		TAILQ_REMOVE(&r->waits, op, link);
		op->waiting = 0;
		if (now >= op->wait_end) {
			kr_op_wait(op);		/* ends it */
			continue;
		}
		/* Told that a compile ended: pull. Else (a poll) try the
		 * lock: free again if the holder died or ended. */
		if (op->woken) {
			op->woken = 0;
			kr_op_next(op, kr_op_get);
		} else
			kr_op_next(op, kr_op_lock);
	}
	TAILQ_FOREACH(lk, &r->locks, link)
		if (!lk->renewing && !lk->lost && now >= lk->renew_at)
			kr_lock_renew(lk);
	if (TAILQ_EMPTY(&r->waits) && TAILQ_EMPTY(&r->locks))
		uv_timer_stop(&r->tick);
}

/* Tick every poll_ms while there are waits or locks. */
static void
kr_tick_start(struct kcache_remote *r)
{
	if (!r->closing && !uv_is_active((uv_handle_t *)&r->tick))
		uv_timer_start(&r->tick, kr_tick_cb, r->poll_ms, r->poll_ms);
}

/* Tick now: a wait was told its compile ended. */
static void
kr_tick_kick(struct kcache_remote *r)
{
	if (!r->closing)
		uv_timer_start(&r->tick, kr_tick_cb, 0, r->poll_ms);
}

/* ------------------------------------------------------------ pushes */

static void
kr_set(struct kcache_remote *r, const char *key, const void *value,
    size_t len, int failed, void (*cb)(struct kcache_remote *, redisReply *,
    int, void *), void *arg, int *err)
{
	const char	*argv[5];
	size_t		 argvlen[5];
	char		 name[sizeof KR_NEFF + CACHE_KEY_LEN], ms[32];

	snprintf(name, sizeof name, KR_NEFF "%s", key);
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
	*err = kr_command(r, cb, arg, 5, argv, argvlen);
}

static void
kr_publish_cb(struct kcache_remote *r, redisReply *rp, int err, void *arg)
{
	if (err != 0)
		return;
	r->st.pushes++;
	r->st.pushed_bytes += (uintptr_t)arg;
}

void
kcache_remote_publish(struct kcache_remote *r, const char *key,
    struct kcache_remote_lock *lk, void *value, size_t len, int failed)
{
	const char	*argv[3];
	size_t		 argvlen[3];
	int		 err = KCACHE_REMOTE_EDOWN;

	assert(r != NULL && key != NULL);
	if (value != NULL && r->writable && kr_usable(r))
		kr_set(r, key, value, len, failed, kr_publish_cb,
		    (void *)(uintptr_t)len, &err);
	else if (value != NULL && r->writable)
		r->st.skipped++;
	/* hiredis has copied the value into its buffer. */
	free(value);
	if (lk != NULL)
		kr_lock_release(lk);
	if (err != 0 && lk == NULL)
		return;
	argv[0] = "PUBLISH";
	argv[1] = r->channel;
	argv[2] = key;
	kr_lens(argv, argvlen, 3);
	(void)kr_command(r, kr_ignore_cb, NULL, 3, argv, argvlen);
}

static void
kr_push_cb(struct kcache_remote *r, redisReply *rp, int err, void *arg)
{
	struct kr_push	*p = arg;

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
	struct kr_push	*p;
	int		 err;

	assert(r != NULL && key != NULL && value != NULL && cb != NULL);
	if (!r->writable) {
		free(value);
		return (KCACHE_REMOTE_EREADONLY);
	}
	if (!kr_usable(r)) {
		free(value);
		r->st.skipped++;
		return (KCACHE_REMOTE_EDOWN);
	}
	p = xcalloc(1, sizeof *p);
	p->cb = cb;
	p->arg = arg;
	p->len = len;
	kr_set(r, key, value, len, failed, kr_push_cb, p, &err);
	free(value);
	if (err != 0) {
		free(p);
		return (err);
	}
	return (0);
}
