/* kcache_impl.h: what the kernel cache's two files share (kcache.c: loaded kernels, flights; kcache_disk.c: the persistent tier below them); no other module includes it. */
#ifndef NKID_KCACHE_IMPL_H
#define NKID_KCACHE_IMPL_H

#include <sys/queue.h>

#include <stdint.h>

#include <uv.h>

#include "cache/cache.h"
#include "daemon/backend.h"

/* A loaded kernel in the memory table. */
struct kcache_entry {
	char			 key[KCACHE_KEY_LEN + 1];
	char			*name;
	void			*image;
	size_t			 image_len;
	struct backend_program	*prog;
	double			 compile_ms;
	size_t			 mem;		/* counted in mem_bytes */
	uint64_t		 touches;	/* memory hits not yet on disk */
	double			 last_used;	/* of the latest such hit */
	unsigned		 refs;
	int			 forget;	/* drop when unused */
	TAILQ_ENTRY(kcache_entry) lru;		/* head: most recent */
};
TAILQ_HEAD(kcache_list, kcache_entry);

/* A request waiting for a flight. */
struct kcache_waiter {
	kcache_done_cb			 cb;
	void				*arg;
	int				 coalesced;
	TAILQ_ENTRY(kcache_waiter)	 link;
};
TAILQ_HEAD(kcache_waiters, kcache_waiter);

/*
 * The stages of a flight, in order; a flight moves forward only, and
 * each stage ends in its own callback on the loop (kcache.c):
 * DISK (kcache_flight_disk_cb) -> TIER (kcache_flight_tier_cb) ->
 * QUEUED -> COMPILE (kcache_flight_compile_cb) -> DONE. A hit or a cached
 * failure ends early; a stage with nothing to do (no disk, no tier) is
 * passed through.
 */
enum kcache_stage {
	KCACHE_STAGE_DISK,	/* the disk read and verified, off the loop */
	KCACHE_STAGE_TIER,	/* asking the tier (kcache_tier) */
	KCACHE_STAGE_QUEUED,	/* waiting for a compile worker */
	KCACHE_STAGE_COMPILE,	/* compile, load, store, off the loop */
	KCACHE_STAGE_DONE,	/* answering the waiters */
};

/* One NEFF key being looked up on disk, then maybe compiled. */
struct kcache_flight {
	uv_work_t		 work;
	struct kcache		*kc;
	struct cache		*disk;		/* kc's when it started */
	char			 key[KCACHE_KEY_LEN + 1];
	char			*name;
	/* Borrowed from the first waiter's request (alive until it is
	 * answered, which happens after the flight ends). */
	const char		*format;	/* NULL: key only */
	const void		*ir;
	size_t			 ir_len;
	const char		*target;
	const char		*options;
	int			 retry_failed;
	int64_t			 owner;		/* the first waiter's uid */

	enum kcache_stage	 stage;
	/* What the stages found. */
	int			 hit;
	int			 failed_cached;
	int			 store_rc;
	int			 error;
	int			 load_stage;	/* error in 0 compile, 1 load */
	void			*image;
	size_t			 image_len;
	struct backend_program	*prog;
	double			 ms;
	char			*log;
	char			 diag[BACKEND_DIAG_LEN];
	/* The tier's claim while this compiles (the fleet lock); the value
	 * to publish once compiled. */
	void			*claim;
	void			*push;
	size_t			 push_len;
	struct kcache_waiters	 waiters;
	LIST_ENTRY(kcache_flight) link;
	TAILQ_ENTRY(kcache_flight) pending;
};
LIST_HEAD(kcache_flights, kcache_flight);
TAILQ_HEAD(kcache_pending, kcache_flight);

struct kcache {
	uv_loop_t		*loop;
	struct backend		*backend;
	struct cache		*disk;		/* NULL: memory only */
	struct kcache_tier	 tier;		/* ops NULL: none */
	struct kcache_list	 lru;
	uint64_t		 mem_bytes;
	uint64_t		 mem_max;
	uint64_t		 mem_entries;
	unsigned		 workers;	/* compiles at once */
	unsigned		 compiling;
	struct kcache_flights	 flights;
	struct kcache_pending	 pending;
	struct kcache_stats	 st;		/* hits ... failures */
	uint64_t		 mem_evictions;
	uv_work_t		 check;		/* quick_check after start */
	int			 checking;
	/* A cache that could not open (disk full, ...) is retried with a
	 * backoff: its options, a timer and the open off the loop. */
	struct cache_opts	 opts;
	char			*dir;
	uv_timer_t		 reopen;
	uv_work_t		 reopen_work;
	struct cache		*reopened;
	uint64_t		 reopen_ms;
	int			 reopen_busy;	/* timer armed or work queued */
	int			 reopen_closed;
	/* Memory hits reach the disk's hits and last_used in batches:
	 * a timer, one write off the loop at a time, and the touches of
	 * kernels unloaded before their batch went. */
	uv_timer_t		 touch_timer;
	uv_work_t		 touch_work;
	struct cache_touch	*touch_out;	/* being written */
	size_t			 ntouch_out;
	struct cache_touch	*orphans;
	size_t			 norphans;
	int			 touch_busy;	/* timer armed or work queued */
	int			 touch_closed;
};

/* How long memory hits wait to be written to the disk together. */
#define KCACHE_TOUCH_MS		1000

/* First and longest wait between attempts to open the cache again. */
#define KCACHE_REOPEN_MIN_MS	1000
#define KCACHE_REOPEN_MAX_MS	60000

/*
 * Open the persistent tier of kc (cfg->cache_dir); if it cannot be
 * opened, kc runs on memory alone and tries again with a backoff
 * (logged). Its quick_check runs off the loop.
 */
void	kcache_disk_open(struct kcache *kc, const struct config *cfg);
/* Stop the tier's timers and wait for its work in flight (closing). */
void	kcache_disk_quiesce(struct kcache *kc);
/* Write the last memory hits and close the tier (after quiesce). */
void	kcache_disk_close(struct kcache *kc);
/*
 * A use of the loaded kernel e: the first of its users (first) holds its
 * disk entry against eviction (cache_hold; the last lets go:
 * kcache_disk_unuse); one served from memory (touched) is counted now and
 * written in a batch.
 */
void	kcache_disk_use(struct kcache *kc, struct kcache_entry *e, int first,
	    int touched);
/* The last user of e is gone: its disk entry may be evicted again. */
void	kcache_disk_unuse(struct kcache *kc, struct kcache_entry *e);
/* Keep the unwritten uses of a kernel leaving memory for the next batch. */
void	kcache_touch_keep(struct kcache *kc, const char *key, uint64_t hits,
	    double last_used);

#endif /* NKID_KCACHE_IMPL_H */
