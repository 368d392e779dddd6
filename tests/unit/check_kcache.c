/* check_kcache.c: the kernel cache over the real cpu backend and a real disk cache: single flight, cached failures, eviction, removal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <uv.h>

#include "cache/cache.h"
#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/kcache.h"
#include "tests/unit/nkir_fixture.h"
#include "tests/unit/check_main.h"

static uv_loop_t	 loop;
static struct config	 cfg;
static struct backend	*be;
static struct kcache	*kc;
static char		 dir[64];

/* What one resolve ended with, kept past the callback. */
struct outcome {
	int			 done;
	int			 error;
	int			 backend_error;
	int			 cache_hit;
	int			 coalesced;
	struct kcache_entry	*e;
	char			 key[KCACHE_KEY_LEN + 1];
};

static void
outcome_cb(void *arg, const struct kcache_result *r)
{
	struct outcome	*o = arg;

	ck_assert_int_eq(o->done, 0);
	o->done = 1;
	o->error = r->error;
	o->backend_error = r->backend_error;
	o->cache_hit = r->cache_hit;
	o->coalesced = r->coalesced;
	o->e = r->e;
	snprintf(o->key, sizeof o->key, "%s", r->key);
	ck_assert(r->e != NULL ? r->error == KCACHE_OK : r->error != KCACHE_OK);
}

static void
setup_budget(const char *memory)
{
	char	json[256], err[512];

	check_dir_make(dir, sizeof dir, "check_kcache");
	snprintf(json, sizeof json, "{\"cache_dir\": \"%s\", \"cache\": "
	    "{\"max_memory_bytes\": \"%s\"}}", dir, memory);
	ck_assert_msg(config_load_string(&cfg, "t", json, strlen(json), NULL,
	    err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_msg(backend_open(&cfg, &be, err, sizeof err) == 0, "%s",
	    err);
	kc = kcache_open(&loop, be, &cfg);
	ck_assert_ptr_nonnull(kcache_disk(kc));
}

static void
setup(void)
{
	setup_budget("64MiB");
}

static void
teardown(void)
{
	uv_run(&loop, UV_RUN_DEFAULT);
	kcache_close(kc);
	backend_close(be);
	config_release(&cfg);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	check_dir_remove(dir);
}

CHECK_SUITE("kcache", setup, teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(limits, 60);
CHECK_TCASE(recovery, 0);

/*
 * The fixture kernel made distinct by n: a field no parser knows (number
 * 1000, varint n) appended to its IR, which protobuf-c skips. Another
 * digest, another key, the same kernel. The caller frees the bytes.
 */
static uint8_t *
ir_variant(unsigned n, size_t *len)
{
	uint8_t	*ir = ir_tensor_add(len, 0, P);

	ir = realloc(ir, *len + 8);
	ck_assert_ptr_nonnull(ir);
	ir[(*len)++] = 0xc0;		/* field 1000, varint */
	ir[(*len)++] = 0x3e;
	do {
		ir[(*len)++] = (uint8_t)((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
		n >>= 7;
	} while (n > 0);
	return (ir);
}

/* Resolve ir (len bytes; format NULL: by key alone) into o, without
 * running the loop. */
static void
resolve(const void *ir, size_t len, const char *key, int retry,
    struct outcome *o)
{
	struct kcache_request	rq;
	char			digest[KCACHE_KEY_LEN + 1];

	memset(o, 0, sizeof *o);
	memset(&rq, 0, sizeof rq);
	rq.name = "tensor_add";
	rq.format = ir != NULL ? SIM_FORMAT : NULL;
	rq.ir = ir;
	rq.ir_len = len;
	rq.target = rq.options = "";
	rq.neff_key = key != NULL ? key : "";
	rq.retry_failed = retry;
	if (rq.format != NULL) {
		cache_digest_hex(ir, len, digest);
		backend_cache_key(be, rq.format, digest, "", "", rq.key);
	}
	kcache_resolve(kc, &rq, outcome_cb, o);
}

static void
wait_for(struct outcome *o)
{
	while (!o->done)
		uv_run(&loop, UV_RUN_ONCE);
}

/* ------------------------------------------------------------ core */

CHECK_TEST(core, test_kcache_coalesces_identical_resolves)
{
	struct outcome		a, b, c;
	struct kcache_stats	st;
	uint8_t			*ir;
	size_t			 len;

	ir = ir_tensor_add(&len, 0, P);
	resolve(ir, len, NULL, 0, &a);
	resolve(ir, len, NULL, 0, &b);
	wait_for(&a);
	wait_for(&b);
	ck_assert_int_eq(a.error, KCACHE_OK);
	ck_assert_int_eq(b.error, KCACHE_OK);
	ck_assert_int_eq(a.coalesced, 0);
	ck_assert_int_eq(b.coalesced, 1);
	ck_assert_ptr_eq(a.e, b.e);
	ck_assert_str_eq(a.key, b.key);
	kcache_stats_get(kc, &st);
	ck_assert_uint_eq(st.compiles, 1);
	ck_assert_uint_eq(st.coalesced, 1);
	/* Loaded now: a hit at once, and Lookup's view agrees. */
	resolve(ir, len, NULL, 0, &c);
	ck_assert_int_eq(c.done, 1);
	ck_assert_int_eq(c.cache_hit, 1);
	ck_assert_ptr_nonnull(kcache_loaded(kc, a.key));
	kcache_entry_unref(kc, a.e);
	kcache_entry_unref(kc, b.e);
	kcache_entry_unref(kc, c.e);
	free(ir);
}
END_TEST

CHECK_TEST(core, test_kcache_failure_cached_and_retried)
{
	static const uint8_t	 bad[] = { 0xff, 0xff, 0xff, 0xff };
	struct outcome		 a, b, c;
	struct kcache_stats	 st;

	resolve(bad, sizeof bad, NULL, 0, &a);
	wait_for(&a);
	ck_assert_int_eq(a.error, KCACHE_ECOMPILE);
	ck_assert(a.backend_error == BACKEND_EPARSE ||
	    a.backend_error == BACKEND_EINVAL);
	/* The same IR again: the cached failure, no compile. */
	resolve(bad, sizeof bad, NULL, 0, &b);
	wait_for(&b);
	ck_assert_int_eq(b.error, KCACHE_EFAILED);
	kcache_stats_get(kc, &st);
	ck_assert_uint_eq(st.failures, 2);
	ck_assert_uint_eq(st.compiles, 0);
	/* retry_failed compiles it again (and fails the same way). */
	resolve(bad, sizeof bad, NULL, 1, &c);
	wait_for(&c);
	ck_assert_int_eq(c.error, KCACHE_ECOMPILE);
	ck_assert_str_eq(a.key, c.key);
}
END_TEST

/* ------------------------------------------------------------ limits */

/* Kernels held by a job stay loaded beyond the budget; once let go, the
 * least recently used go first. */
CHECK_TEST(limits, test_kcache_held_entry_survives_eviction)
{
	struct outcome		 held, o;
	struct kcache_stats	 st;
	uint8_t			*ir;
	size_t			 len;
	int			 i;

	ir = ir_tensor_add(&len, 0, P);
	resolve(ir, len, NULL, 0, &held);
	wait_for(&held);
	free(ir);
	ck_assert_int_eq(held.error, KCACHE_OK);
	/* 1 MiB of budget; each kernel holds 64 KiB or more. */
	cfg.cache_memory_bytes = 1024 * 1024;
	kcache_config_apply(kc, &cfg);
	for (i = 1; i <= 40; i++) {
		ir = ir_variant((unsigned)i, &len);
		resolve(ir, len, NULL, 0, &o);
		wait_for(&o);
		ck_assert_int_eq(o.error, KCACHE_OK);
		kcache_entry_unref(kc, o.e);
		free(ir);
	}
	ck_assert_ptr_nonnull(kcache_loaded(kc, held.key));
	ck_assert_ptr_nonnull(kcache_entry_program(held.e));
	ck_assert_str_eq(kcache_entry_name(held.e), "tensor_add");
	/* The first of the forty is long gone from memory. */
	kcache_stats_get(kc, &st);
	ck_assert_uint_eq(st.compiles, 41);
	kcache_entry_unref(kc, held.e);
	for (i = 41; i <= 60; i++) {
		ir = ir_variant((unsigned)i, &len);
		resolve(ir, len, NULL, 0, &o);
		wait_for(&o);
		kcache_entry_unref(kc, o.e);
		free(ir);
	}
	ck_assert_ptr_null(kcache_loaded(kc, held.key));
	/* Still on disk: a hit by key alone, loaded again. */
	resolve(NULL, 0, held.key, 0, &o);
	wait_for(&o);
	ck_assert_int_eq(o.error, KCACHE_OK);
	ck_assert_int_eq(o.cache_hit, 1);
	kcache_entry_unref(kc, o.e);
}
END_TEST

/*
 * Uses served from memory reach the disk in a batch: hits count, and LRU
 * eviction on disk follows real use. A hot kernel compiled first survives
 * a cold one compiled after it.
 */
CHECK_TEST(limits, test_kcache_hot_kernel_survives_disk_eviction)
{
	struct cache		*disk = kcache_disk(kc);
	struct outcome		 a, b, o;
	struct cache_entry	 ea, eb;
	struct cache_stats	 cs;
	uint8_t			*ira, *irb, *irc;
	size_t			 la, lb, lc;
	int			 i;

	ira = ir_variant(1, &la);
	irb = ir_variant(2, &lb);
	irc = ir_variant(3, &lc);
	resolve(ira, la, NULL, 0, &a);
	wait_for(&a);
	kcache_entry_unref(kc, a.e);
	resolve(irb, lb, NULL, 0, &b);
	wait_for(&b);
	kcache_entry_unref(kc, b.e);
	/* a is hot: ten calls, all served from memory. */
	for (i = 0; i < 10; i++) {
		resolve(ira, la, NULL, 0, &o);
		ck_assert_int_eq(o.done, 1);
		ck_assert_int_eq(o.cache_hit, 1);
		kcache_entry_unref(kc, o.e);
	}
	uv_run(&loop, UV_RUN_DEFAULT);	/* the batch is written */
	ck_assert_int_eq(cache_get(disk, a.key, 0, &ea), 0);
	ck_assert_int_eq(cache_get(disk, b.key, 0, &eb), 0);
	ck_assert_uint_eq(ea.hits, 10);
	ck_assert_uint_eq(eb.hits, 0);
	ck_assert(ea.last_used > eb.last_used);
	cache_entry_release(&ea);
	cache_entry_release(&eb);
	/* Room for two: the third evicts the least recently used, b. */
	cache_stats_get(disk, &cs);
	ck_assert_int_eq(cache_max_bytes_set(disk, cs.bytes + 1), 0);
	resolve(irc, lc, NULL, 0, &o);
	wait_for(&o);
	ck_assert_int_eq(o.error, KCACHE_OK);
	kcache_entry_unref(kc, o.e);
	ck_assert_int_eq(cache_get(disk, a.key, 0, NULL), 0);
	ck_assert_int_eq(cache_get(disk, b.key, 0, NULL), CACHE_ENOENT);
	free(ira);
	free(irb);
	free(irc);
}
END_TEST

/* ------------------------------------------------------------ recovery */

/* A kernel removed from the cache while a job holds it: the job keeps a
 * valid kernel; afterwards nothing serves it by key, and its IR compiles
 * it anew. */
CHECK_TEST(recovery, test_kcache_resolve_races_removal)
{
	struct outcome	 a, b, c, d;
	uint8_t		*ir;
	size_t		 len, image_len;

	ir = ir_tensor_add(&len, 0, P);
	resolve(ir, len, NULL, 0, &a);
	/* Removed on disk before the flight's lookup ran. */
	ck_assert_int_eq(a.done, 0);
	wait_for(&a);
	ck_assert_int_eq(a.error, KCACHE_OK);
	ck_assert_int_eq(cache_remove(kcache_disk(kc), a.key), 0);
	kcache_forget(kc, a.key);
	/* Held: forgotten, not freed. */
	ck_assert_ptr_nonnull(kcache_entry_image(a.e, &image_len));
	ck_assert_uint_gt(image_len, 0);
	ck_assert_ptr_null(kcache_loaded(kc, a.key));
	/* A resolve by key while the holder runs: nothing serves it. */
	resolve(NULL, 0, a.key, 0, &b);
	wait_for(&b);
	ck_assert_int_eq(b.error, KCACHE_ENOENT);
	kcache_entry_unref(kc, a.e);
	/* The IR compiles it again, under the same key. */
	resolve(ir, len, NULL, 0, &c);
	wait_for(&c);
	ck_assert_int_eq(c.error, KCACHE_OK);
	ck_assert_int_eq(c.cache_hit, 0);
	ck_assert_str_eq(c.key, a.key);
	/* And a removal racing a flight in progress: the waiter still gets
	 * a loaded kernel; the disk has none. */
	kcache_entry_unref(kc, c.e);
	kcache_forget(kc, c.key);
	ck_assert_int_eq(cache_remove(kcache_disk(kc), c.key), 0);
	resolve(ir, len, NULL, 0, &d);
	ck_assert_int_eq(d.done, 0);
	ck_assert_int_eq(cache_remove(kcache_disk(kc), c.key), CACHE_ENOENT);
	wait_for(&d);
	ck_assert_int_eq(d.error, KCACHE_OK);
	ck_assert_ptr_nonnull(kcache_entry_program(d.e));
	kcache_entry_unref(kc, d.e);
	free(ir);
}
END_TEST
