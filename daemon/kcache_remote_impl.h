/* kcache_remote_impl.h: what the files of the remote tier share and nobody else sees: its state, its calls to Redis, the fleet's waits and locks. */
#ifndef NKID_KCACHE_REMOTE_IMPL_H
#define NKID_KCACHE_REMOTE_IMPL_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <uv.h>

#include "daemon/config.h"
#include "daemon/kcache_remote.h"

/* Names in the store (docs/cache.md, "The remote tier"): + key, the
 * entry; + key, the fleet lock (its holder's token); + db, the channel
 * where "key" is published when a compile ends. */
#define KCACHE_REMOTE_NEFF	"nkid:neff:"
#define KCACHE_REMOTE_LOCK	"nkid:lock:"
#define KCACHE_REMOTE_CHANNEL	"nkid:done:"

/* Failures in a row that open the circuit; how long it stays open (doubled
 * while the store keeps failing); the first reconnect after a drop. */
#define KCACHE_REMOTE_FAILURES	3
#define KCACHE_REMOTE_OPEN_MIN_MS	1000
#define KCACHE_REMOTE_OPEN_MAX_MS	10000
#define KCACHE_REMOTE_RETRY_MS	200
/* A cached compile failure lives a day in the store (or ttl_days). */
#define KCACHE_REMOTE_FAILED_TTL_MS	(86400ULL * 1000)
/* What a value's transfer may add to remote.timeout_ms: a command that
 * moves N MiB gets N times this many ms more (a floor of 20 MiB/s). */
#define KCACHE_REMOTE_MS_PER_MIB	50
/* Longest secret read from a file. */
#define KCACHE_REMOTE_SECRET_MAX	4096
/* Shortest fleet key. */
#define KCACHE_REMOTE_FKEY_MIN	16

/* Release and renew the fleet lock only while it is ours. */
#define KCACHE_REMOTE_LUA_RELEASE					\
	"if redis.call('get', KEYS[1]) == ARGV[1] then "		\
	"return redis.call('del', KEYS[1]) else return 0 end"
#define KCACHE_REMOTE_LUA_RENEW						\
	"if redis.call('get', KEYS[1]) == ARGV[1] then "		\
	"return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"

enum kcache_remote_state {
	KCACHE_REMOTE_DOWN,
	KCACHE_REMOTE_CONNECTING,
	KCACHE_REMOTE_UP,
};

struct kcache_remote;

/*
 * What the connection (kcache_remote.c) tells the layer above it (the
 * fleet: kcache_remote_fleet.c), which kcache_remote_tier.c wires at open:
 * down, the store failed or the circuit opened (waits end now); message,
 * a host ended its compile of key (a message on the channel).
 */
struct kcache_remote_events {
	void	(*down)(struct kcache_remote *r);
	void	(*message)(struct kcache_remote *r, const char *key);
};

/* The answer to one command (kcache_remote_command). */
typedef void (*kcache_remote_reply_cb)(struct kcache_remote *r,
	    redisReply *rp, int err, void *arg);

/* One command on the main connection, answered in order. */
struct kcache_remote_cmd {
	struct kcache_remote	*r;
	kcache_remote_reply_cb	 cb;
	void			*arg;
	uint64_t		 deadline;	/* uv_now, ms */
	uint64_t		 budget;	/* ms, from when it leads */
	TAILQ_ENTRY(kcache_remote_cmd)	 link;
};
TAILQ_HEAD(kcache_remote_cmds, kcache_remote_cmd);

struct kcache_remote_lock {
	struct kcache_remote		*r;
	char				 key[CACHE_KEY_LEN + 1];
	char				 token[128];
	uint64_t			 renew_at;
	int				 renewing;
	int				 lost;
	TAILQ_ENTRY(kcache_remote_lock)	 link;
};
TAILQ_HEAD(kcache_remote_locks, kcache_remote_lock);

/* One resolve (kcache_remote_resolve). */
struct kcache_remote_op {
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
	int				 lock_set;	/* 1 ok, 0 nil */
	char				 lock_type[16]; /* its TYPE */
	char				 token[128];	/* asked for */
	void				*value;
	size_t				 len;
	int				 verify_rc;
	int				 taken;
	char				 why[256];
	uv_work_t			 work;
	TAILQ_ENTRY(kcache_remote_op)		 link;
};
TAILQ_HEAD(kcache_remote_ops, kcache_remote_op);

/* A push (kcache_remote_push). */
struct kcache_remote_pushing {
	kcache_remote_push_cb	 cb;
	void			*arg;
	size_t			 len;
};

struct kcache_remote {
	uv_loop_t			*loop;
	struct kcache_remote_events	 ev;
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
	enum kcache_remote_state			 state;
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
	struct kcache_remote_cmds			 cmds;
	struct kcache_remote_ops			 waits;
	struct kcache_remote_locks			 locks;
	unsigned			 work;		/* verifies queued */
	unsigned			 failures;	/* in a row */
	int				 answered;	/* ever */
	int				 ignored_logged;
	unsigned			 trips;
	uint64_t			 open_until;	/* uv_now, ms */
	uint32_t			 retry_ms;

	struct kcache_remote_stats	 st;
	char				 last_error[256];
};

/* ------------------------------------------------ kcache_remote.c */

/*
 * Open the connection side of the tier as kcache_remote_open describes,
 * telling ev what the fleet must hear (kcache_remote_tier.c passes the
 * fleet's). *out NULL when remote.mode is "off".
 */
int	kcache_remote_conn_open(struct kcache_remote **out, uv_loop_t *loop,
	    const struct config *cfg, const char *backend,
	    const char *compiler_version, uint32_t wait_ms,
	    const volatile int *stopping, const struct kcache_remote_events *ev,
	    char *err, size_t errlen);
/* SET the entry value (len bytes) for key with the TTL of an entry (or of
 * a failure); cb as kcache_remote_command's, *err its return. */
void	kcache_remote_set(struct kcache_remote *r, const char *key,
	    const void *value, size_t len, int failed,
	    kcache_remote_reply_cb cb, void *arg, int *err);

/* Nonzero if a call to the store may be made now: connected (or making
 * the first connection), the circuit closed. */
int	kcache_remote_usable(struct kcache_remote *r);
/*
 * Send argv (argc arguments of argvlen bytes) on the main connection;
 * cb(r, reply, err, arg) runs once, later, reply NULL when err (a timeout,
 * a lost connection, an error reply: counted). Returns 0, or
 * KCACHE_REMOTE_EDOWN when it cannot be sent (cb never runs).
 */
int	kcache_remote_command(struct kcache_remote *r,
	    kcache_remote_reply_cb cb, void *arg, int argc, const char **argv,
	    const size_t *argvlen);
/*
 * kcache_remote_command for a command that moves about bytes (a value
 * sent or read): its answer may take remote.timeout_ms plus
 * KCACHE_REMOTE_MS_PER_MIB per MiB, counted from when the commands ahead
 * of it have been answered. A WRONGTYPE error reply is not a failure of
 * the store: cb gets KCACHE_REMOTE_EWRONGTYPE, the breaker counts nothing.
 */
int	kcache_remote_command_sized(struct kcache_remote *r,
	    kcache_remote_reply_cb cb, void *arg, int argc, const char **argv,
	    const size_t *argvlen, uint64_t bytes);
/* argvlen[i] = strlen(argv[i]) for the n arguments. */
void	kcache_remote_lens(const char **argv, size_t *argvlen, int n);
/* A command callback for answers that matter only as success or not. */
void	kcache_remote_ignore_cb(struct kcache_remote *r, redisReply *rp,
	    int err, void *arg);

/* ------------------------------------------------ kcache_remote_fleet.c */

/* End every wait for another host's compile that no call is pending for
 * (done(outcome, err)); a busy one ends when its call returns. */
void	kcache_remote_waits_end(struct kcache_remote *r, int outcome,
	    int err);
/* Release lk if it is still ours (token-checked) and free it. */
void	kcache_remote_lock_release(struct kcache_remote_lock *lk);
/* A host ended its compile of key (a message on the channel): the waits
 * for key pull now. */
void	kcache_remote_wake(struct kcache_remote *r, const char *key);

#endif /* NKID_KCACHE_REMOTE_IMPL_H */
