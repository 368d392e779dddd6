/* kcache.c: loaded kernels in memory over the persistent cache; single-flight lookups and compiles on the thread pool, each flight a state machine (enum kcache_stage) that may ask a cache tier between the disk and the compiler. */
#include <sys/queue.h>

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/errstr.h"
#include "daemon/kcache.h"
#include "daemon/kcache_impl.h"
#include "daemon/log.h"
#include "daemon/xmalloc.h"

struct kcache_async {
	uv_work_t	 work;
	struct kcache	*kc;
	struct cache	*disk;		/* kc's when it was queued */
	void		(*fn)(struct cache *, void *);
	void		(*done)(void *);
	void		*arg;
};

static const char *kcache_errs[] = {
	"success", "not in the cache", "a compile failure is cached",
	"compile failed", "load failed",
};

const char *
kcache_strerror(int err)
{
	return (ERRSTR(kcache_errs, err));
}

static void	kcache_flight_compile_start(struct kcache *kc,
		    struct kcache_flight *f);
static void	kcache_flight_miss(struct kcache *, struct kcache_flight *);
static int	kcache_flight_accept_cb(void *, struct cache_entry *);
static void	kcache_flight_tier_cb(void *, enum kcache_tier_outcome,
		    void *);

struct kcache *
kcache_open(uv_loop_t *loop, struct backend *b, const struct config *cfg)
{
	struct kcache	*kc;

	/* libcrypto's first use allocates per-thread state: do it here, on
	 * the loop thread, not first on a pool thread (which leaks it). */
	cache_crypto_init();
	kc = xcalloc(1, sizeof *kc);
	kc->loop = loop;
	kc->backend = b;
	kc->mem_max = cfg->cache_memory_bytes;
	kc->workers = cfg->cache_compile_workers > 0 ?
	    cfg->cache_compile_workers : 1;
	TAILQ_INIT(&kc->lru);
	LIST_INIT(&kc->flights);
	TAILQ_INIT(&kc->pending);
	kcache_disk_open(kc, cfg);
	return (kc);
}

static void
kcache_mem_free(struct kcache *kc, struct kcache_entry *e)
{
	if (e->touches > 0)
		kcache_touch_keep(kc, e->key, e->touches, e->last_used);
	kc->mem_entries--;
	kc->mem_bytes -= e->mem;
	if (kc->backend != NULL)
		backend_unload(kc->backend, e->prog);
	free(e->image);
	free(e->name);
	free(e);
}

void
kcache_close(struct kcache *kc)
{
	struct kcache_entry	*e;

	if (kc == NULL)
		return;
	assert(LIST_EMPTY(&kc->flights));
	kcache_disk_quiesce(kc);
	while ((e = TAILQ_FIRST(&kc->lru)) != NULL) {
		assert(e->refs == 0);
		TAILQ_REMOVE(&kc->lru, e, lru);
		kcache_mem_free(kc, e);
	}
	kcache_disk_close(kc);
	free(kc);
}

void
kcache_tier_attach(struct kcache *kc, const struct kcache_tier *t)
{
	assert(LIST_EMPTY(&kc->flights));
	if (t != NULL)
		kc->tier = *t;
	else
		memset(&kc->tier, 0, sizeof kc->tier);
}

static void
kcache_mem_evict(struct kcache *kc)
{
	struct kcache_entry	*e, *prev;

	for (e = TAILQ_LAST(&kc->lru, kcache_list); e != NULL; e = prev) {
		prev = TAILQ_PREV(e, kcache_list, lru);
		if (e->refs > 0 || (kc->mem_bytes <= kc->mem_max && !e->forget))
			continue;
		log_debug("kcache: unloading '%s' (%zu bytes)", e->key,
		    e->mem);
		TAILQ_REMOVE(&kc->lru, e, lru);
		kcache_mem_free(kc, e);
		kc->mem_evictions++;
	}
}

void
kcache_config_apply(struct kcache *kc, const struct config *cfg)
{
	kc->mem_max = cfg->cache_memory_bytes;
	kc->workers = cfg->cache_compile_workers > 0 ?
	    cfg->cache_compile_workers : 1;
	kcache_mem_evict(kc);
	/* Eviction on disk is quick (rows, then unlinks); the budget
	 * shrinks rarely. */
	if (kc->disk != NULL)
		cache_max_bytes_set(kc->disk, cfg->cache_max_bytes);
}

/*
 * Count what e really holds: its image, and what the backend says its
 * loaded program holds (plans, buffers, pools). Only while no job runs e.
 */
static void
kcache_entry_measure(struct kcache *kc, struct kcache_entry *e)
{
	size_t	mem = sizeof *e + e->image_len;

	mem += backend_footprint(kc->backend, e->prog);
	kc->mem_bytes -= e->mem;
	e->mem = mem;
	kc->mem_bytes += e->mem;
}

static struct kcache_entry *
kcache_mem_find(struct kcache *kc, const char *key)
{
	struct kcache_entry	*e;

	TAILQ_FOREACH(e, &kc->lru, lru) {
		if (strcmp(e->key, key) == 0 && !e->forget)
			return (e);
	}
	return (NULL);
}

/* One more user of e; touched: its use was served from memory. */
static void
kcache_entry_ref(struct kcache *kc, struct kcache_entry *e, int touched)
{
	kcache_disk_use(kc, e, e->refs++ == 0, touched);
}

void
kcache_entry_unref(struct kcache *kc, struct kcache_entry *e)
{
	assert(e->refs > 0);
	if (--e->refs == 0) {
		kcache_disk_unuse(kc, e);
		/* Executions grow what a program holds (its run memory):
		 * count it again now that none runs. */
		kcache_entry_measure(kc, e);
		if (kc->mem_bytes > kc->mem_max || e->forget)
			kcache_mem_evict(kc);
	}
}

const char *
kcache_loaded(struct kcache *kc, const char *key)
{
	struct kcache_entry	*e;

	return ((e = kcache_mem_find(kc, key)) != NULL ? e->name : NULL);
}

void
kcache_forget(struct kcache *kc, const char *key)
{
	struct kcache_entry	*e;

	if ((e = kcache_mem_find(kc, key)) == NULL)
		return;
	e->forget = 1;
	if (e->refs == 0)
		kcache_mem_evict(kc);
}

const char *
kcache_entry_key(const struct kcache_entry *e)
{
	return (e->key);
}

const char *
kcache_entry_name(const struct kcache_entry *e)
{
	return (e->name);
}

const void *
kcache_entry_image(const struct kcache_entry *e, size_t *len)
{
	if (len != NULL)
		*len = e->image_len;
	return (e->image);
}

const struct backend_program *
kcache_entry_program(const struct kcache_entry *e)
{
	return (e->prog);
}

void
kcache_stats_get(const struct kcache *kc, struct kcache_stats *st)
{
	struct cache_stats	cs;

	*st = kc->st;
	if (kc->disk != NULL) {
		cache_stats_get(kc->disk, &cs);
		st->entries = cs.entries;
		st->bytes = cs.bytes;
		st->max_bytes = cs.max_bytes;
		st->evictions = cs.evictions;
		st->corrupt = cs.corrupt;
	} else {
		st->entries = kc->mem_entries;
		st->bytes = kc->mem_bytes;
		st->max_bytes = kc->mem_max;
		st->evictions = kc->mem_evictions;
	}
}

/* ------------------------------------------------------------ async */

static void
kcache_async_work_cb(uv_work_t *w)
{
	struct kcache_async	*a = w->data;

	a->fn(a->disk, a->arg);
}

static void
kcache_async_after_cb(uv_work_t *w, int status)
{
	struct kcache_async	*a = w->data;

	a->done(a->arg);
	free(a);
}

void
kcache_async(struct kcache *kc, void (*work)(struct cache *disk, void *arg),
    void (*done)(void *arg), void *arg)
{
	struct kcache_async	*a;
	int			 error;

	a = xcalloc(1, sizeof *a);
	a->work.data = a;
	a->kc = kc;
	a->disk = kc->disk;
	a->fn = work;
	a->done = done;
	a->arg = arg;
	if ((error = uv_queue_work(kc->loop, &a->work, kcache_async_work_cb,
	    kcache_async_after_cb)) != 0)
		fatal("cannot queue cache work: %s", uv_strerror(error));
}

/* ------------------------------------------------------------ flights */

/* Stage DISK, off the loop: the disk cache. */
static void
kcache_flight_disk_work_cb(uv_work_t *w)
{
	struct kcache_flight	*f = w->data;
	struct backend		*b = f->kc->backend;
	struct cache_entry	 ce;
	int			 rc;

	if (f->disk == NULL)
		return;
	rc = cache_get(f->disk, f->key, CACHE_GET_DATA | CACHE_GET_TOUCH,
	    &ce);
	if (rc == CACHE_EFAILED) {
		if (!f->retry_failed) {
			f->failed_cached = 1;
			f->log = ce.log;
			ce.log = NULL;
		}
		cache_entry_release(&ce);
		return;
	}
	if (rc == CACHE_ESTALE) {
		cache_entry_release(&ce);
		return;
	}
	if (rc != 0)
		return;
	f->image = ce.data;
	f->image_len = ce.len;
	f->ms = ce.compile_ms;
	ce.data = NULL;
	if (f->name[0] == '\0' || strcmp(f->name, "kernel") == 0) {
		free(f->name);
		f->name = xstrdup(ce.kernel);
	}
	cache_entry_release(&ce);
	if (backend_load(b, f->image, f->image_len, &f->prog,
	    f->diag) != 0 || backend_program_names_check(f->prog,
	    f->diag) != 0) {
		/* Verified but not loadable: compile it anew. */
		if (f->prog != NULL)
			backend_unload(b, f->prog);
		free(f->image);
		f->image = NULL;
		f->prog = NULL;
		return;
	}
	f->hit = 1;
}

/* Stage COMPILE, off the loop: compile, load, store. */
static void
kcache_flight_compile_work_cb(uv_work_t *w)
{
	struct kcache_flight	*f = w->data;
	struct backend		*b = f->kc->backend;
	struct cache_entry	 ce;
	uint64_t		 t0 = uv_hrtime();

	f->error = backend_compile(b, f->ir, f->ir_len, f->target, f->options,
	    &f->image, &f->image_len, f->diag);
	if (f->error == 0) {
		f->load_stage = 1;
		f->error = backend_load(b, f->image, f->image_len,
		    &f->prog, f->diag);
	}
	/* Names travel in replies (protobuf strings): a kernel whose names
	 * are not UTF-8 is refused like any invalid kernel, and cached so. */
	if (f->error == 0 && backend_program_names_check(f->prog,
	    f->diag) != 0) {
		backend_unload(b, f->prog);
		f->prog = NULL;
		free(f->image);
		f->image = NULL;
		f->error = BACKEND_EINVAL;
		f->load_stage = 0;
	}
	f->ms = (double)(uv_hrtime() - t0) / 1e6;
	memset(&ce, 0, sizeof ce);
	memcpy(ce.key, f->key, sizeof ce.key);
	ce.kernel = f->name;
	ce.format = (char *)f->format;
	ce.target = (char *)f->target;
	ce.options = (char *)f->options;
	ce.backend = (char *)backend_name(b);
	ce.compiler_version = (char *)backend_compiler_version(b);
	ce.compile_ms = f->ms;
	ce.created = (double)time(NULL);
	ce.owner = f->owner;
	if (f->error == 0) {
		ce.data = f->image;
		ce.len = f->image_len;
	} else if (f->load_stage == 0 && (f->error == BACKEND_EINVAL ||
	    f->error == BACKEND_EPARSE)) {
		/* Deterministic: the same IR fails the same way. */
		ce.failed = 1;
		ce.log = f->diag;
	} else
		return;
	if (f->disk != NULL)
		f->store_rc = cache_put(f->disk, &ce);
	/* The tier's copy is made here, off the loop. */
	if (f->kc->tier.ops != NULL)
		f->kc->tier.ops->encode(f->kc->tier.state, &ce, &f->push,
		    &f->push_len);
}

/* On the loop: answer every waiter and free f. */
static void
kcache_flight_finish(struct kcache *kc, struct kcache_flight *f)
{
	struct kcache_waiter	*wt;
	struct kcache_entry	*e = NULL;
	struct kcache_result	 r;

	f->stage = KCACHE_STAGE_DONE;
	LIST_REMOVE(f, link);
	memset(&r, 0, sizeof r);
	r.key = f->key;
	r.name = f->name;
	r.diag = r.log = "";
	if (f->prog != NULL && f->error == 0) {
		if (!f->hit && f->store_rc != 0)
			log_warn("cache: '%s' (%s) served uncached: %s",
			    f->name, f->key, cache_strerror(f->store_rc));
		e = xcalloc(1, sizeof *e);
		memcpy(e->key, f->key, sizeof e->key);
		e->name = f->name;
		f->name = NULL;
		e->image = f->image;
		e->image_len = f->image_len;
		e->prog = f->prog;
		e->compile_ms = f->ms;
		f->image = NULL;
		f->prog = NULL;
		TAILQ_INSERT_HEAD(&kc->lru, e, lru);
		kc->mem_entries++;
		kcache_entry_measure(kc, e);
		r.name = e->name;
		r.cache_hit = f->hit;
		r.compile_ms = f->hit ? 0 : f->ms;
	} else {
		if (f->prog != NULL)
			backend_unload(kc->backend, f->prog);
		f->prog = NULL;
		if (f->failed_cached) {
			r.error = KCACHE_EFAILED;
			r.diag = r.log = f->log != NULL ? f->log : "";
		} else if (f->format == NULL)
			r.error = KCACHE_ENOENT;
		else {
			r.error = f->load_stage == 0 ? KCACHE_ECOMPILE :
			    KCACHE_ELOAD;
			r.backend_error = f->error != 0 ? f->error :
			    BACKEND_ERUNTIME;
			r.diag = f->diag;
			if (f->error != BACKEND_ECANCELED)
				r.log = f->diag;
		}
	}
	/* Every waiter's reference first, so that none can evict e before
	 * the last is answered; a joined waiter was served without the disk. */
	if (e != NULL) {
		TAILQ_FOREACH(wt, &f->waiters, link)
			kcache_entry_ref(kc, e, wt->coalesced);
	}
	while ((wt = TAILQ_FIRST(&f->waiters)) != NULL) {
		TAILQ_REMOVE(&f->waiters, wt, link);
		r.coalesced = wt->coalesced;
		if (wt->coalesced)
			r.cache_hit = 0;
		r.e = e;
		wt->cb(wt->arg, &r);
		free(wt);
	}
	if (e != NULL)
		kcache_mem_evict(kc);	/* e counts now */
	assert(f->claim == NULL);
	free(f->push);
	free(f->image);
	free(f->name);
	free(f->log);
	free(f);
}

/* Stage COMPILE ended, on the loop: count it, start the next queued
 * compile, hand the result to the tier (the reply does not wait), answer. */
static void
kcache_flight_compile_cb(uv_work_t *w, int status)
{
	struct kcache_flight	*f = w->data;
	struct kcache		*kc = f->kc;
	struct kcache_flight	*next;

	assert(f->stage == KCACHE_STAGE_COMPILE);
	kc->compiling--;
	if ((next = TAILQ_FIRST(&kc->pending)) != NULL) {
		TAILQ_REMOVE(&kc->pending, next, pending);
		kcache_flight_compile_start(kc, next);
	}
	if (status != 0 && f->error == 0) {
		f->error = BACKEND_ECANCELED;
		snprintf(f->diag, sizeof f->diag, "%s", uv_strerror(status));
	}
	if (f->error != 0 || f->prog == NULL)
		kc->st.failures++;
	else
		kc->st.compiles++;
	if (kc->tier.ops != NULL && (f->claim != NULL || f->push != NULL))
		kc->tier.ops->publish(kc->tier.state, f->key, f->claim,
		    f->push, f->push_len, f->error != 0);
	f->claim = NULL;
	f->push = NULL;
	kcache_flight_finish(kc, f);
}

/* Stage DISK ended, on the loop (or passed through without a disk): a hit
 * is served; a miss asks the tier before compiling. */
static void
kcache_flight_disk_done(struct kcache *kc, struct kcache_flight *f)
{
	assert(f->stage == KCACHE_STAGE_DISK);
	if (f->hit) {
		kc->st.hits++;
		kcache_flight_finish(kc, f);
		return;
	}
	kc->st.misses++;
	if (kc->tier.ops != NULL && !f->failed_cached) {
		f->stage = KCACHE_STAGE_TIER;
		if (kc->tier.ops->resolve(kc->tier.state, f->key, f->format ==
		    NULL ? KCACHE_TIER_KEY_ONLY : 0, kcache_flight_accept_cb,
		    kcache_flight_tier_cb, f) == 0)
			return;
	}
	kcache_flight_miss(kc, f);
}

static void
kcache_flight_disk_cb(uv_work_t *w, int status)
{
	struct kcache_flight	*f = w->data;

	kcache_flight_disk_done(f->kc, f);
}

/* A miss everywhere: a cached failure or a bare key ends here, else the
 * kernel is compiled (QUEUED while every compile worker is busy). */
static void
kcache_flight_miss(struct kcache *kc, struct kcache_flight *f)
{
	if (f->failed_cached || f->format == NULL) {
		if (f->failed_cached)
			kc->st.failures++;
		kcache_flight_finish(kc, f);
		return;
	}
	f->stage = KCACHE_STAGE_QUEUED;
	if (kc->compiling >= kc->workers)
		TAILQ_INSERT_TAIL(&kc->pending, f, pending);
	else
		kcache_flight_compile_start(kc, f);
}

/*
 * Stage TIER, off the loop: an entry the tier verified for f's key.
 * Stored here, then loaded like a disk hit; a cached failure answers like
 * a local one (unless retry_failed).
 */
static int
kcache_flight_accept_cb(void *arg, struct cache_entry *ce)
{
	struct kcache_flight	*f = arg;
	struct backend		*b = f->kc->backend;

	ce->owner = f->owner;
	if (ce->failed) {
		if (f->retry_failed)
			return (-1);
		if (f->disk != NULL)
			(void)cache_put(f->disk, ce);
		f->failed_cached = 1;
		f->log = ce->log;
		ce->log = NULL;
		return (0);
	}
	if (backend_load(b, ce->data, ce->len, &f->prog,
	    f->diag) != 0 || backend_program_names_check(f->prog,
	    f->diag) != 0) {
		if (f->prog != NULL)
			backend_unload(b, f->prog);
		f->prog = NULL;
		f->diag[0] = '\0';
		return (-1);
	}
	if (f->disk != NULL)
		(void)cache_put(f->disk, ce);
	f->image = ce->data;
	f->image_len = ce->len;
	f->ms = ce->compile_ms;
	ce->data = NULL;
	if (f->name[0] == '\0' || strcmp(f->name, "kernel") == 0) {
		free(f->name);
		f->name = ce->kernel;
		ce->kernel = NULL;
	}
	f->hit = 1;
	return (0);
}

/* Stage TIER ended, on the loop. */
static void
kcache_flight_tier_cb(void *arg, enum kcache_tier_outcome outcome,
    void *claim)
{
	struct kcache_flight	*f = arg;
	struct kcache		*kc = f->kc;

	assert(f->stage == KCACHE_STAGE_TIER);
	f->claim = claim;
	switch (outcome) {
	case KCACHE_TIER_TAKEN:
		if (f->failed_cached)
			kc->st.failures++;
		kcache_flight_finish(kc, f);
		return;
	case KCACHE_TIER_STOP:
		f->error = BACKEND_ECANCELED;
		snprintf(f->diag, sizeof f->diag, "nkid is stopping");
		kcache_flight_finish(kc, f);
		return;
	case KCACHE_TIER_COMPILE:
		break;
	}
	kcache_flight_miss(kc, f);
}

/* Stage COMPILE starts: a worker is free. */
static void
kcache_flight_compile_start(struct kcache *kc, struct kcache_flight *f)
{
	int	error;

	assert(f->stage == KCACHE_STAGE_QUEUED);
	f->stage = KCACHE_STAGE_COMPILE;
	kc->compiling++;
	if ((error = uv_queue_work(kc->loop, &f->work,
	    kcache_flight_compile_work_cb, kcache_flight_compile_cb)) != 0)
		fatal("cannot queue a compile: %s", uv_strerror(error));
}

static struct kcache_flight *
kcache_flight_find(struct kcache *kc, const char *key)
{
	struct kcache_flight	*f;

	LIST_FOREACH(f, &kc->flights, link) {
		if (strcmp(f->key, key) == 0)
			return (f);
	}
	return (NULL);
}

void
kcache_resolve(struct kcache *kc, const struct kcache_request *rq,
    kcache_done_cb cb, void *arg)
{
	struct kcache_entry	*e;
	struct kcache_flight	*f;
	struct kcache_waiter	*wt;
	struct kcache_result	 r;
	const char		*key;
	int			 error;

	assert(cb != NULL);
	/* A key the client already knows: memory, else the disk. */
	if (rq->neff_key != NULL && rq->neff_key[0] != '\0') {
		if ((e = kcache_mem_find(kc, rq->neff_key)) != NULL)
			goto hit;
		if (!cache_key_valid(rq->neff_key) && rq->format == NULL) {
			/* Not a key: no entry can have it. */
			memset(&r, 0, sizeof r);
			r.error = KCACHE_ENOENT;
			r.key = rq->neff_key;
			r.name = rq->name != NULL ? rq->name : "kernel";
			r.diag = r.log = "";
			cb(arg, &r);
			return;
		}
	}
	/* The key comes from the IR itself, never from the client. */
	key = rq->format != NULL ? rq->key : rq->neff_key;
	if ((e = kcache_mem_find(kc, key)) != NULL)
		goto hit;

	wt = xcalloc(1, sizeof *wt);
	wt->cb = cb;
	wt->arg = arg;
	if ((f = kcache_flight_find(kc, key)) != NULL &&
	    (f->format != NULL || rq->format == NULL)) {
		wt->coalesced = 1;
		kc->st.coalesced++;
		TAILQ_INSERT_TAIL(&f->waiters, wt, link);
		return;
	}
	f = xcalloc(1, sizeof *f);
	f->work.data = f;
	f->kc = kc;
	f->disk = kc->disk;
	snprintf(f->key, sizeof f->key, "%s", key);
	f->name = xstrdup(rq->name != NULL ? rq->name : "kernel");
	f->format = rq->format;
	f->ir = rq->ir;
	f->ir_len = rq->ir_len;
	f->target = rq->target != NULL ? rq->target : "";
	f->options = rq->options != NULL ? rq->options : "";
	f->retry_failed = rq->retry_failed;
	f->owner = rq->owner;
	TAILQ_INIT(&f->waiters);
	TAILQ_INSERT_TAIL(&f->waiters, wt, link);
	LIST_INSERT_HEAD(&kc->flights, f, link);
	/* Stage DISK runs off the loop even without a disk (it is then a
	 * miss at once): one way through, whatever the disk's state. */
	f->stage = KCACHE_STAGE_DISK;
	if ((error = uv_queue_work(kc->loop, &f->work,
	    kcache_flight_disk_work_cb, kcache_flight_disk_cb)) != 0)
		fatal("cannot queue a cache lookup: %s", uv_strerror(error));
	return;

hit:
	kc->st.hits++;
	TAILQ_REMOVE(&kc->lru, e, lru);
	TAILQ_INSERT_HEAD(&kc->lru, e, lru);
	kcache_entry_ref(kc, e, 1);
	memset(&r, 0, sizeof r);
	r.e = e;
	r.cache_hit = 1;
	r.key = e->key;
	r.name = e->name;
	r.diag = r.log = "";
	cb(arg, &r);
}
