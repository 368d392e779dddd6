/* kcache_remote.h: the remote tier of the kernel cache: NEFF entries a fleet shares in Redis, verified and authenticated, and the fleet lock that compiles each kernel once. */
#ifndef NKID_KCACHE_REMOTE_H
#define NKID_KCACHE_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "cache/cache.h"

struct config;
struct kcache_remote;
struct kcache_remote_lock;
struct kcache_tier;

/* Error codes: 0 or one of these; kcache_remote_strerror names them. */
enum kcache_remote_err {
	KCACHE_REMOTE_OK = 0,
	KCACHE_REMOTE_ENOENT = -1,	/* not in the store */
	KCACHE_REMOTE_EREJECT = -2,	/* failed verification: never served */
	/* not connected, or the circuit is open */
	KCACHE_REMOTE_EDOWN = -3,
	KCACHE_REMOTE_ETIMEDOUT = -4,	/* no answer within remote.timeout_ms */
	KCACHE_REMOTE_EIO = -5,		/* connection lost, or an error reply */
	KCACHE_REMOTE_EAUTH = -6,	/* Redis refused the credentials */
	KCACHE_REMOTE_EREADONLY = -7,	/* remote.mode is "read" */
	KCACHE_REMOTE_ECONFIG = -8,	/* a file the config names */
	KCACHE_REMOTE_ETOOBIG = -9,	/* over remote.max_entry_bytes */
	/* a key of another type than the tier writes there (WRONGTYPE) */
	KCACHE_REMOTE_EWRONGTYPE = -10,
};

/* Static text naming an error ("not in the remote tier", ...). */
const char *kcache_remote_strerror(int err);

/* The figures Status and CacheStat show (docs/cache.md). */
struct kcache_remote_stats {
	const char	*state;		/* "up", "connecting", "down" */
	const char	*url;
	const char	*mode;		/* "read", "read-write" */
	uint64_t	 hits;
	uint64_t	 misses;
	uint64_t	 pushes;
	uint64_t	 rejected;
	uint64_t	 errors;
	uint64_t	 locks_taken;
	uint64_t	 locks_waited;
	/* locks not the fleet's (no TTL, too long a TTL, another type):
	 * ignored, the kernel compiled here */
	uint64_t	 locks_ignored;
	uint64_t	 skipped;
	uint64_t	 pulled_bytes;
	uint64_t	 pushed_bytes;
	const char	*last_error;	/* "" if none */
	int		 breaker_open;	/* the circuit is open */
	uint64_t	 last_error_ms;	/* when (Unix ms), 0 if none */
};

/* ------------------------------------------------ entries (any thread) */

/* Bytes of an entry's value besides its blob, log and metadata strings. */
#define KCACHE_REMOTE_OVERHEAD	(8 + 4 + 13 * 4 + 8 + 32)

/*
 * Encode e (key, kernel, format, target, backend, compiler_version,
 * options, compile_ms, created; data/len, or failed with log) as the value
 * the store keeps for e->key: the magic "NKIDRMT1", the metadata (with the
 * blob's size and SHA-256, computed here), the blob, and an HMAC-SHA256
 * with the fleet key fkey over all of it (docs/cache.md, "The remote
 * tier"). *out is malloc'd (the caller frees). Thread-safe.
 */
void	kcache_remote_entry_encode(const void *fkey, size_t fkeylen,
	    const struct cache_entry *e, void **out, size_t *outlen);
/*
 * Decode and verify value v (len bytes) read for want_key: its framing,
 * the HMAC with fkey (before anything else is believed), then the key it
 * names, the blob's size and SHA-256, and, when backend and
 * compiler_version are not NULL, that they are those. Returns 0 with e
 * filled (released with cache_entry_release; data malloc'd), or
 * KCACHE_REMOTE_EREJECT with why it was refused in why. Thread-safe.
 */
int	kcache_remote_entry_decode(const void *fkey, size_t fkeylen,
	    const char *want_key, const char *backend,
	    const char *compiler_version, const void *v, size_t len,
	    struct cache_entry *e, char *why, size_t whylen);

/* ------------------------------------------------ the tier (loop thread) */

/*
 * Open the remote tier of cfg for the loop's thread, or set *out to NULL
 * when remote.mode is "off". Reads remote.password_file and
 * remote.hmac_key_file, then connects once, synchronously, within
 * remote.timeout_ms, to authenticate: credentials Redis refuses or a file
 * that cannot be read fail the open (-1, err names the remote tier);
 * a store that cannot be reached is logged and retried in the background
 * (serving never waits for it). backend and compiler_version are those of
 * the entries nkid serves; wait_ms bounds a wait for another host's
 * compile; while *stopping is non-zero, waits end (KCACHE_REMOTE_STOP).
 * Freed with kcache_remote_close once no resolve is pending. (Defined in
 * kcache_remote_tier.c, which wires the connection to the fleet.)
 */
int	kcache_remote_open(struct kcache_remote **out, uv_loop_t *loop,
	    const struct config *cfg, const char *backend,
	    const char *compiler_version, uint32_t wait_ms,
	    const volatile int *stopping, char *err, size_t errlen);
/* Drop the connections (pushes not yet answered are lost; locks held
 * expire by themselves), close the handles, free r. NULL is allowed. */
void	kcache_remote_close(struct kcache_remote *r);
/* Nonzero if r pushes (remote.mode "read-write"). */
int	kcache_remote_writable(const struct kcache_remote *r);
/* Encode e with r's fleet key (kcache_remote_entry_encode); NULL *out if
 * the value would exceed remote.max_entry_bytes. Thread-safe. */
void	kcache_remote_encode(const struct kcache_remote *r,
	    const struct cache_entry *e, void **out, size_t *outlen);
void	kcache_remote_stats_get(const struct kcache_remote *r,
	    struct kcache_remote_stats *st);
/*
 * r as the kernel cache's tier (daemon/kcache.h) into t: a local miss is
 * resolved here (kcache_remote_resolve, the fleet lock as the claim), a
 * compile encoded with the fleet key when r is writable and published
 * (kcache_remote_publish). r NULL: t has no ops (no tier).
 */
void	kcache_remote_tier(struct kcache_remote *r, struct kcache_tier *t);

/* How a resolve ended (kcache_remote_done_cb). */
enum kcache_remote_outcome {
	KCACHE_REMOTE_TAKEN,	/* accept took a verified entry: serve it */
	KCACHE_REMOTE_COMPILE,	/* compile here (with the fleet lock if lk) */
	KCACHE_REMOTE_STOP,	/* nkid is stopping: give up */
};

/* kcache_remote_resolve flags. */
#define KCACHE_REMOTE_PULL_ONLY	0x1	/* no fleet lock, no wait */

/*
 * Off the loop (thread pool): take e, verified for the resolve's key (the
 * callee may steal its strings and data; e is released afterwards).
 * Returns 0 if taken, -1 if not (then the resolve ends COMPILE).
 */
typedef int (*kcache_remote_accept_cb)(void *arg, struct cache_entry *e);
/*
 * On the loop: the resolve ended. err says why a COMPILE came
 * (KCACHE_REMOTE_ENOENT: not in the store, or no result after waiting;
 * KCACHE_REMOTE_EREJECT, ..._ETIMEDOUT, ...; 0: verified, not taken;
 * KCACHE_REMOTE_OK with TAKEN). lk, when not
 * NULL, is the fleet lock this nkid now holds for the key: the callee
 * hands it back with kcache_remote_publish.
 */
typedef void (*kcache_remote_done_cb)(void *arg, int outcome, int err,
	    struct kcache_remote_lock *lk);

/*
 * The remote step of a local miss of key, on the loop thread. Pull the
 * entry; a value is verified and given to accept on the thread pool.
 * Missing (or not taken), and unless flags has KCACHE_REMOTE_PULL_ONLY or
 * the tier is read-only: take the fleet lock (SET NX PX remote.lock_ms,
 * kept while held) and, after pulling once more, end COMPILE with it; if
 * another host holds it, wait for its result (a message on the tier's
 * channel, or a poll) and pull that, or take the lock over when the
 * holder's expires, for at most wait_ms, then end COMPILE without it. Any
 * error of the store ends COMPILE at once. Returns 0 and done runs once,
 * later; or KCACHE_REMOTE_EDOWN (counted as skipped) and done never runs.
 */
int	kcache_remote_resolve(struct kcache_remote *r, const char *key,
	    int flags, kcache_remote_accept_cb accept,
	    kcache_remote_done_cb done, void *arg);
/*
 * After the compile of key: push value (taken over; NULL: nothing to
 * push; failed: a cached compile failure, kept a shorter time) when r is
 * writable, tell the hosts waiting for it, release lk (NULL: none; only
 * if it is still ours). Never delays the caller, never calls back.
 */
void	kcache_remote_publish(struct kcache_remote *r, const char *key,
	    struct kcache_remote_lock *lk, void *value, size_t len, int failed);

typedef void (*kcache_remote_push_cb)(void *arg, int err);
/*
 * Push value (taken over) for key (cache push). Returns 0 and cb(arg, err)
 * runs once, later; or KCACHE_REMOTE_EREADONLY, KCACHE_REMOTE_EDOWN and cb
 * never runs (value freed).
 */
int	kcache_remote_push(struct kcache_remote *r, const char *key,
	    void *value, size_t len, int failed, kcache_remote_push_cb cb,
	    void *arg);

#endif /* NKID_KCACHE_REMOTE_H */
