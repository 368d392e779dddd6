/* kcache.h: the daemon side of the kernel cache: loaded kernels in memory over libnkicache, single-flight compiles off the loop. */
#ifndef NKID_KCACHE_H
#define NKID_KCACHE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "cache/cache.h"

#define KCACHE_KEY_LEN	CACHE_KEY_LEN	/* hex SHA-256 */

struct backend;
struct backend_program;
struct config;
struct kcache;
struct kcache_entry;

struct kcache_stats {
	uint64_t	entries;	/* on disk (in memory without a disk) */
	uint64_t	bytes;
	uint64_t	max_bytes;
	uint64_t	hits;
	uint64_t	misses;
	uint64_t	compiles;
	uint64_t	coalesced;
	uint64_t	failures;
	uint64_t	evictions;
	uint64_t	corrupt;
};

/*
 * Open the cache of d's config: cfg->cache_dir through libnkicache
 * (budget cache.max_bytes) under an in-memory table of loaded kernels
 * (cache.max_memory_bytes), compiles and loads through b on loop's thread
 * pool, at most cache.compile_workers at a time. If the directory cannot
 * be opened the daemon runs with the memory table only (logged). Freed
 * with kcache_close once no call is pending.
 */
struct kcache *kcache_open(uv_loop_t *loop, struct backend *b,
	    const struct config *cfg);
void	kcache_close(struct kcache *kc);
/* Apply the live cache settings of cfg (reload). */
void	kcache_config_apply(struct kcache *kc, const struct config *cfg);
/* The persistent cache, or NULL when running without one. */
struct cache *kcache_disk(struct kcache *kc);
/*
 * A cache tier between the disk and the compiler (the store a fleet
 * shares: daemon/kcache_remote.h makes one). A flight that misses on disk
 * asks it before compiling; a fresh compile is encoded for it off the loop
 * and handed to it. The kernel cache knows no more of a tier than this.
 */
enum kcache_tier_outcome {
	KCACHE_TIER_TAKEN,	/* accept took an entry: serve it */
	KCACHE_TIER_COMPILE,	/* compile here (with the tier's claim) */
	KCACHE_TIER_STOP,	/* nkid is stopping: give up */
};

/* kcache_tier_ops.resolve flags. */
#define KCACHE_TIER_KEY_ONLY	0x1	/* no IR: no claim, no wait */

/*
 * Off the loop: take e, verified by the tier for the key asked (the
 * callee may steal its strings and data). 0 if taken, -1 if not.
 */
typedef int (*kcache_tier_accept_cb)(void *arg, struct cache_entry *e);
/*
 * On the loop: the tier's answer. claim, when not NULL, is what the tier
 * holds for the flight that compiles (the fleet lock): given back with
 * publish.
 */
typedef void (*kcache_tier_done_cb)(void *arg,
	    enum kcache_tier_outcome outcome, void *claim);

struct kcache_tier_ops {
	/* On the loop, after a disk miss of key: 0 and done(arg, ...)
	 * runs once, later (accept first, off the loop, for an entry it
	 * found); non-zero: the tier is skipped, done never runs. */
	int	(*resolve)(void *state, const char *key, int flags,
		    kcache_tier_accept_cb accept, kcache_tier_done_cb done,
		    void *arg);
	/* Off the loop: e (just compiled, or a deterministic failure) as
	 * the value to publish, malloc'd; *out NULL: nothing to publish. */
	void	(*encode)(void *state, const struct cache_entry *e,
		    void **out, size_t *outlen);
	/* On the loop, after the compile of key: value (taken over; NULL:
	 * none; failed: a compile failure) and claim (NULL: none) back to
	 * the tier. Never calls back. */
	void	(*publish)(void *state, const char *key, void *claim,
		    void *value, size_t len, int failed);
};

struct kcache_tier {
	const struct kcache_tier_ops	*ops;	/* NULL: no tier */
	void				*state;
};

/* Put tier t (copied; NULL or t->ops NULL: none) between the disk and the
 * compiler. Before any resolve; its state outlives kc's flights. */
void	kcache_tier_attach(struct kcache *kc, const struct kcache_tier *t);

/* What the compile path needs; borrowed until the callback runs. */
struct kcache_request {
	const char	*name;		/* for messages */
	const char	*format;	/* NULL: no IR, neff_key only */
	const void	*ir;
	size_t		 ir_len;
	const char	*target;
	const char	*options;
	const char	*neff_key;	/* "" or a key to try first */
	int		 retry_failed;
	/* format != NULL: the IR's key (backend_cache_key) */
	char		 key[KCACHE_KEY_LEN + 1];
	/* The uid whose request it is: what a flight it starts stores
	 * (compiled, or pulled from a tier) is that uid's (cache_entry's
	 * owner); CACHE_OWNER_NONE: nobody known. */
	int64_t		 owner;
};

/* How a resolve can fail (kcache_result.error). */
enum kcache_err {
	KCACHE_OK = 0,
	KCACHE_ENOENT = -1,	/* a key alone, not in the cache */
	KCACHE_EFAILED = -2,	/* a deterministic failure cached for it */
	KCACHE_ECOMPILE = -3,	/* the backend failed to compile it */
	KCACHE_ELOAD = -4,	/* compiled, the backend failed to load it */
};

/* Static text naming a kcache_err ("not in the cache", ...). */
const char *kcache_strerror(int err);

/*
 * How a resolve ended, valid during the callback only. On success e is
 * referenced (the callee drops it with kcache_entry_unref). On failure e
 * is NULL, error says how, backend_error (KCACHE_ECOMPILE, KCACHE_ELOAD)
 * the backend's code and diag its words or the cached failure's log. The
 * words a user reads are made from these in one place above the cache
 * (daemon/dispatch_error.c).
 */
struct kcache_result {
	struct kcache_entry	*e;
	int			 error;		/* enum kcache_err */
	int			 backend_error;	/* BACKEND_E* */
	int			 cache_hit;
	int			 coalesced;	/* joined a compile in flight */
	double			 compile_ms;
	const char		*name;		/* the kernel's, for messages */
	const char		*key;		/* the NEFF key, "" if none */
	const char		*diag;		/* "" if none */
	const char		*log;		/* compiler log, "" if none */
};

typedef void (*kcache_done_cb)(void *arg, const struct kcache_result *r);

/*
 * The compile path of Compile, Run, Simulate, Benchmark, Profile and
 * Warmup, on the loop thread: a loaded kernel in memory is served now;
 * the same key already in flight is joined (single-flight); otherwise the
 * disk cache is read and verified off the loop, and on a miss the kernel
 * is compiled off the loop, stored (off the loop) and served. A cached
 * deterministic failure is KCACHE_EFAILED unless rq->retry_failed.
 * done(arg, result) runs exactly once, maybe before this returns.
 */
void	kcache_resolve(struct kcache *kc, const struct kcache_request *rq,
	    kcache_done_cb done, void *arg);

/*
 * Run work(disk, arg) on the thread pool (disk may be NULL), then
 * done(arg) on the loop thread. For the cache RPCs: the loop never
 * touches the database.
 */
void	kcache_async(struct kcache *kc,
	    void (*work)(struct cache *disk, void *arg),
	    void (*done)(void *arg), void *arg);
/* The name of key's kernel if it is loaded in memory now (a Lookup
 * needs no disk then; borrowed, valid until the loop runs on), else
 * NULL. */
const char *kcache_loaded(struct kcache *kc, const char *key);
/* Forget key's loaded kernel (after CacheRemove) once unused. */
void	kcache_forget(struct kcache *kc, const char *key);

void	kcache_entry_unref(struct kcache *kc, struct kcache_entry *e);
const char *kcache_entry_key(const struct kcache_entry *e);
const char *kcache_entry_name(const struct kcache_entry *e);
const void *kcache_entry_image(const struct kcache_entry *e, size_t *len);
const struct backend_program *kcache_entry_program(
	    const struct kcache_entry *e);
void	kcache_stats_get(const struct kcache *kc, struct kcache_stats *st);

#endif /* NKID_KCACHE_H */
