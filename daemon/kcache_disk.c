/* kcache_disk.c: the kernel cache's persistent tier: opening it (and again with a backoff when it could not), its quick_check, and memory hits written to it in batches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/kcache.h"
#include "daemon/kcache_impl.h"
#include "daemon/log.h"
#include "daemon/xmalloc.h"

static void	kcache_check_start(struct kcache *);
static void	kcache_reopen_arm(struct kcache *);
static void	kcache_touch_arm(struct kcache *);
static void	kcache_touch_collect(struct kcache *);
static void	kcache_touch_close_cb(uv_handle_t *);

static void
kcache_log_cb(void *arg, int level, const char *msg)
{
	switch (level) {
	case CACHE_LOG_ERROR:
		log_error("%s", msg);
		break;
	case CACHE_LOG_WARN:
		log_warn("%s", msg);
		break;
	case CACHE_LOG_INFO:
		log_info("%s", msg);
		break;
	default:
		log_debug("%s", msg);
		break;
	}
}

static void
kcache_check_work_cb(uv_work_t *w)
{
	struct kcache	*kc = w->data;

	cache_check(kc->disk);
}

static void
kcache_check_after_cb(uv_work_t *w, int status)
{
	struct kcache	*kc = w->data;

	kc->checking = 0;
}

/* quick_check reads the whole database: after ready, off the loop; a
 * damaged one is set aside then (cache_check). */
static void
kcache_check_start(struct kcache *kc)
{
	kc->check.data = kc;
	if (uv_queue_work(kc->loop, &kc->check, kcache_check_work_cb,
	    kcache_check_after_cb) == 0)
		kc->checking = 1;
}

static void
kcache_reopen_work_cb(uv_work_t *w)
{
	struct kcache	*kc = w->data;
	char		 err[1024];

	if (cache_open(&kc->reopened, &kc->opts, err, sizeof err) != 0) {
		kc->reopened = NULL;
		log_debug("%s", err);
	}
}

static void
kcache_reopen_after_cb(uv_work_t *w, int status)
{
	struct kcache		*kc = w->data;
	struct cache_stats	 cs;

	kc->reopen_busy = 0;
	if (kc->reopened == NULL) {
		if (kc->reopen_closed)
			return;
		kc->reopen_ms *= 2;
		if (kc->reopen_ms > KCACHE_REOPEN_MAX_MS)
			kc->reopen_ms = KCACHE_REOPEN_MAX_MS;
		kcache_reopen_arm(kc);
		return;
	}
	kc->disk = kc->reopened;
	kc->reopened = NULL;
	cache_stats_get(kc->disk, &cs);
	log_info("cache '%s' opened at last: %llu entries, %llu bytes; "
	    "compiles are stored again", kc->dir,
	    (unsigned long long)cs.entries, (unsigned long long)cs.bytes);
	if (!kc->reopen_closed)
		kcache_check_start(kc);
}

static void
kcache_reopen_timer_cb(uv_timer_t *t)
{
	struct kcache	*kc = t->data;

	kc->reopen_work.data = kc;
	if (uv_queue_work(kc->loop, &kc->reopen_work, kcache_reopen_work_cb,
	    kcache_reopen_after_cb) != 0) {
		kc->reopen_busy = 0;
		return;
	}
}

static void
kcache_reopen_arm(struct kcache *kc)
{
	kc->reopen_busy = 1;
	uv_timer_start(&kc->reopen, kcache_reopen_timer_cb, kc->reopen_ms, 0);
}

static void
kcache_reopen_close_cb(uv_handle_t *h)
{
	struct kcache	*kc = h->data;

	kc->reopen_closed = 2;
}

void
kcache_disk_open(struct kcache *kc, const struct config *cfg)
{
	struct backend		*b = kc->backend;
	struct cache_opts	 o;
	struct cache_stats	 cs;
	char			 err[1024];
	uint64_t		 t0 = uv_hrtime();
	int			 rc;

	memset(&o, 0, sizeof o);
	o.dir = cfg->cache_dir;
	o.max_bytes = cfg->cache_max_bytes;
	o.backend = b != NULL ? backend_name(b) : "";
	o.compiler_version = b != NULL ?
	    backend_compiler_version(b) : "";
	o.recover = 1;
	o.defer_check = 1;
	/* Tests put small blobs in files: the threshold is measured for
	 * production (docs/cache.md). */
	if (getenv("NKID_CACHE_INLINE_MAX") != NULL)
		o.inline_max = strtoull(getenv("NKID_CACHE_INLINE_MAX"), NULL,
		    10);
	o.log = kcache_log_cb;
	/*
	 * The reopen timer re-arms for as long as the cache cannot be
	 * opened: it must not keep the loop running once the server has
	 * stopped (kcache_disk_quiesce ends it when nkid releases the
	 * cache). A touch batch is due within KCACHE_TOUCH_MS and keeps it.
	 */
	uv_timer_init(kc->loop, &kc->reopen);
	kc->reopen.data = kc;
	uv_unref((uv_handle_t *)&kc->reopen);
	uv_timer_init(kc->loop, &kc->touch_timer);
	kc->touch_timer.data = kc;
	if (cfg->cache_dir == NULL) {
		log_warn("no cache_dir; running without a persistent cache");
		return;
	}
	kc->dir = xstrdup(cfg->cache_dir);
	o.dir = kc->dir;
	kc->opts = o;
	if ((rc = cache_open(&kc->disk, &o, err, sizeof err)) != 0) {
		log_warn("%s; running without a persistent cache, trying "
		    "again in %d s", err, KCACHE_REOPEN_MIN_MS / 1000);
		kc->disk = NULL;
		kc->reopen_ms = KCACHE_REOPEN_MIN_MS;
		kcache_reopen_arm(kc);
		return;
	}
	cache_stats_get(kc->disk, &cs);
	log_info("cache '%s': %llu entries, %llu bytes, opened in %.1f ms",
	    cfg->cache_dir, (unsigned long long)cs.entries,
	    (unsigned long long)cs.bytes, (double)(uv_hrtime() - t0) / 1e6);
	kcache_check_start(kc);
}

/*
 * End a timer-driven task (the reopen, the touch batches): no new round
 * (*closed = 1), an armed timer stopped, work in flight waited for, then
 * the timer closed with close_cb, which sets *closed = 2.
 */
static void
kcache_task_quiesce(struct kcache *kc, uv_timer_t *t, int *busy, int *closed,
    uv_close_cb close_cb)
{
	*closed = 1;
	if (uv_is_active((uv_handle_t *)t)) {
		uv_timer_stop(t);
		*busy = 0;
	}
	while (*busy)
		uv_run(kc->loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)t, close_cb);
}

void
kcache_disk_quiesce(struct kcache *kc)
{
	kcache_task_quiesce(kc, &kc->reopen, &kc->reopen_busy,
	    &kc->reopen_closed, kcache_reopen_close_cb);
	/* The last batch of memory hits: written now, on the way out. */
	kcache_task_quiesce(kc, &kc->touch_timer, &kc->touch_busy,
	    &kc->touch_closed, kcache_touch_close_cb);
	while (kc->checking || kc->reopen_closed != 2 || kc->touch_closed != 2)
		uv_run(kc->loop, UV_RUN_ONCE);
}

void
kcache_disk_close(struct kcache *kc)
{
	kcache_touch_collect(kc);
	if (kc->disk != NULL)
		cache_touch_batch(kc->disk, kc->touch_out, kc->ntouch_out);
	free(kc->touch_out);
	free(kc->orphans);
	cache_close(kc->disk);
	free(kc->dir);
}

struct cache *
kcache_disk(struct kcache *kc)
{
	return (kc->disk);
}

/* ------------------------------------------------------------ touches */

/* Keep the touches of a kernel leaving memory for the next batch. */
void
kcache_touch_keep(struct kcache *kc, const char *key, uint64_t hits,
    double last_used)
{
	struct cache_touch	*t;

	kc->orphans = xreallocarray(kc->orphans, kc->norphans + 1,
	    sizeof *kc->orphans);
	t = &kc->orphans[kc->norphans++];
	snprintf(t->key, sizeof t->key, "%s", key);
	t->hits = hits;
	t->last_used = last_used;
	kcache_touch_arm(kc);
}

/* Move every pending touch into touch_out (nothing may be in flight). */
static void
kcache_touch_collect(struct kcache *kc)
{
	struct kcache_entry	*e;
	size_t			 n = kc->norphans;

	TAILQ_FOREACH(e, &kc->lru, lru)
		n += e->touches > 0;
	free(kc->touch_out);
	kc->touch_out = kc->orphans;
	kc->ntouch_out = kc->norphans;
	kc->orphans = NULL;
	kc->norphans = 0;
	if (n == kc->ntouch_out)
		return;
	kc->touch_out = xreallocarray(kc->touch_out, n,
	    sizeof *kc->touch_out);
	TAILQ_FOREACH(e, &kc->lru, lru) {
		if (e->touches == 0)
			continue;
		snprintf(kc->touch_out[kc->ntouch_out].key, KCACHE_KEY_LEN + 1,
		    "%s", e->key);
		kc->touch_out[kc->ntouch_out].hits = e->touches;
		kc->touch_out[kc->ntouch_out++].last_used = e->last_used;
		e->touches = 0;
	}
}

static void
kcache_touch_work_cb(uv_work_t *w)
{
	struct kcache	*kc = w->data;

	if (cache_touch_batch(kc->disk, kc->touch_out, kc->ntouch_out) != 0)
		log_debug("cache: %zu uses of loaded kernels not recorded",
		    kc->ntouch_out);
}

/* A batch is over, written or not: free it; arm the next if touches wait. */
static void
kcache_touch_done(struct kcache *kc)
{
	kc->touch_busy = 0;
	free(kc->touch_out);
	kc->touch_out = NULL;
	kc->ntouch_out = 0;
	if (kc->norphans > 0 && !kc->touch_closed)
		kcache_touch_arm(kc);
}

static void
kcache_touch_after_cb(uv_work_t *w, int status)
{
	kcache_touch_done(w->data);
}

static void
kcache_touch_timer_cb(uv_timer_t *t)
{
	struct kcache	*kc = t->data;

	kcache_touch_collect(kc);
	if (kc->disk == NULL || kc->ntouch_out == 0) {
		kcache_touch_done(kc);
		return;
	}
	kc->touch_work.data = kc;
	if (uv_queue_work(kc->loop, &kc->touch_work, kcache_touch_work_cb,
	    kcache_touch_after_cb) != 0)
		kcache_touch_done(kc);
}

/* A batch goes within KCACHE_TOUCH_MS of its first touch. */
static void
kcache_touch_arm(struct kcache *kc)
{
	if (kc->touch_busy || kc->touch_closed)
		return;
	kc->touch_busy = 1;
	uv_timer_start(&kc->touch_timer, kcache_touch_timer_cb,
	    KCACHE_TOUCH_MS, 0);
}

static void
kcache_touch_close_cb(uv_handle_t *h)
{
	struct kcache	*kc = h->data;

	kc->touch_closed = 2;
}

void
kcache_disk_use(struct kcache *kc, struct kcache_entry *e, int first,
    int touched)
{
	if (touched) {
		e->touches++;
		e->last_used = cache_time_now();
		kcache_touch_arm(kc);
	}
	if (first && kc->disk != NULL)
		cache_hold(kc->disk, e->key);
}

void
kcache_disk_unuse(struct kcache *kc, struct kcache_entry *e)
{
	if (kc->disk != NULL)
		cache_unhold(kc->disk, e->key);
}

