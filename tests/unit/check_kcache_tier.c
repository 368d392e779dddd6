/* check_kcache_tier.c: the kernel cache's tier seam (struct kcache_tier) and the stages of a flight: a tier that holds the kernel serves it without a compile, one that does not hands out a claim that comes back with the compile's value, one that is stopping ends the flight, one that is down is skipped; the tier here is a second real cache directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <uv.h>

#include "cache/cache.h"
#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/kcache.h"
#include "sim/sim.h"
#include "tests/unit/nkir_fixture.h"
#include "tests/unit/check_main.h"

static uv_loop_t	 loop;
static struct config	 cfg;
static struct backend	*be;
static struct kcache	*kc;
static char		 dir[64], store_dir[64];

/*
 * The tier: a cache directory of its own (as a shared file system would
 * be), read off the loop. mode says how it answers a key it lacks.
 */
enum store_mode { STORE_COMPILE, STORE_STOP, STORE_DOWN };

struct store {
	struct cache		*c;
	enum store_mode		 mode;
	int			 claim;		/* &claim: the claim */
	unsigned		 resolves;
	unsigned		 publishes;
	void			*claim_back;	/* publish's */
	size_t			 value_len;	/* publish's */
	int			 failed;	/* publish's */
};

struct store_call {
	uv_work_t		 work;
	struct store		*s;
	char			 key[KCACHE_KEY_LEN + 1];
	kcache_tier_accept_cb	 accept;
	kcache_tier_done_cb	 done;
	void			*arg;
	int			 taken;
};

static struct store	store;

static void
store_work_cb(uv_work_t *w)
{
	struct store_call	*call = w->data;
	struct cache_entry	 e;

	if (cache_get(call->s->c, call->key, CACHE_GET_DATA, &e) != 0)
		return;
	call->taken = call->accept(call->arg, &e) == 0;
	cache_entry_release(&e);
}

static void
store_after_cb(uv_work_t *w, int status)
{
	struct store_call	*call = w->data;
	struct store		*s = call->s;

	if (call->taken)
		call->done(call->arg, KCACHE_TIER_TAKEN, NULL);
	else if (s->mode == STORE_STOP)
		call->done(call->arg, KCACHE_TIER_STOP, NULL);
	else
		call->done(call->arg, KCACHE_TIER_COMPILE, &s->claim);
	free(call);
}

static int
store_resolve(void *state, const char *key, int flags,
    kcache_tier_accept_cb accept, kcache_tier_done_cb done, void *arg)
{
	struct store		*s = state;
	struct store_call	*call;

	if (s->mode == STORE_DOWN)
		return (-1);
	s->resolves++;
	call = calloc(1, sizeof *call);
	ck_assert_ptr_nonnull(call);
	call->work.data = call;
	call->s = s;
	snprintf(call->key, sizeof call->key, "%s", key);
	call->accept = accept;
	call->done = done;
	call->arg = arg;
	ck_assert_int_eq(uv_queue_work(&loop, &call->work, store_work_cb,
	    store_after_cb), 0);
	return (0);
}

/* Off the loop: the entry's blob is the value. */
static void
store_encode(void *state, const struct cache_entry *e, void **out,
    size_t *outlen)
{
	*out = NULL;
	*outlen = 0;
	if (e->failed || e->len == 0)
		return;
	*out = malloc(e->len);
	ck_assert_ptr_nonnull(*out);
	memcpy(*out, e->data, e->len);
	*outlen = e->len;
}

static void
store_publish(void *state, const char *key, void *claim, void *value,
    size_t len, int failed)
{
	struct store	*s = state;

	s->publishes++;
	s->claim_back = claim;
	s->value_len = value != NULL ? len : 0;
	s->failed = failed;
	free(value);
}

static const struct kcache_tier_ops store_ops = {
	.resolve = store_resolve,
	.encode = store_encode,
	.publish = store_publish,
};

/* What one resolve ended with, kept past the callback. */
struct outcome {
	int			 done;
	int			 error;
	int			 backend_error;
	int			 cache_hit;
	struct kcache_entry	*e;
	char			 key[KCACHE_KEY_LEN + 1];
	char			 diag[256];
};

static void
outcome_cb(void *arg, const struct kcache_result *r)
{
	struct outcome	*o = arg;

	o->done = 1;
	o->error = r->error;
	o->backend_error = r->backend_error;
	o->cache_hit = r->cache_hit;
	o->e = r->e;
	snprintf(o->key, sizeof o->key, "%s", r->key);
	snprintf(o->diag, sizeof o->diag, "%s", r->diag);
}

static void
setup(void)
{
	struct kcache_tier	 t = { &store_ops, &store };
	struct cache_opts	 o;
	char			 json[256], err[512];

	check_dir_make(dir, sizeof dir, "check_kcache_tier");
	check_dir_make(store_dir, sizeof store_dir, "check_kcache_store");
	snprintf(json, sizeof json, "{\"cache_dir\": \"%s\"}", dir);
	ck_assert_msg(config_load_string(&cfg, "t", json, strlen(json), NULL,
	    err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_msg(backend_open(&cfg, &be, err, sizeof err) == 0, "%s",
	    err);
	kc = kcache_open(&loop, be, &cfg);
	memset(&store, 0, sizeof store);
	memset(&o, 0, sizeof o);
	o.dir = store_dir;
	ck_assert_msg(cache_open(&store.c, &o, err, sizeof err) == 0, "%s",
	    err);
	kcache_tier_attach(kc, &t);
}

static void
teardown(void)
{
	uv_run(&loop, UV_RUN_DEFAULT);
	kcache_close(kc);
	cache_close(store.c);
	backend_close(be);
	config_release(&cfg);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	check_dir_remove(dir);
	check_dir_remove(store_dir);
}

CHECK_SUITE("kcache_tier", setup, teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(errors, 0);

/* The fixture kernel, its IR distinct by n (an unknown field appended). */
static uint8_t *
ir_variant(unsigned n, size_t *len)
{
	uint8_t	*ir = ir_tensor_add(len, 0, P);

	ir = realloc(ir, *len + 3);
	ck_assert_ptr_nonnull(ir);
	ir[(*len)++] = 0xc0;		/* field 1000, varint */
	ir[(*len)++] = 0x3e;
	ir[(*len)++] = (uint8_t)(n & 0x7f);
	return (ir);
}

static void
resolve_wait(const void *ir, size_t len, struct outcome *o)
{
	struct kcache_request	rq;
	char			digest[KCACHE_KEY_LEN + 1];

	memset(o, 0, sizeof *o);
	memset(&rq, 0, sizeof rq);
	rq.name = "tensor_add";
	rq.format = SIM_FORMAT;
	rq.ir = ir;
	rq.ir_len = len;
	rq.target = rq.options = "";
	rq.neff_key = "";
	cache_digest_hex(ir, len, digest);
	backend_cache_key(be, rq.format, digest, "", "", rq.key);
	kcache_resolve(kc, &rq, outcome_cb, o);
	while (!o->done)
		uv_run(&loop, UV_RUN_ONCE);
}

CHECK_TEST(core, test_kcache_tier_serves_without_compile)
{
	struct kcache_stats	 st;
	struct cache_entry	 e = { 0 };
	struct sim_diag		 d;
	struct outcome		 o;
	uint8_t			*ir;
	void			*img;
	size_t			 len, ilen;
	char			 digest[KCACHE_KEY_LEN + 1];

	/* The kernel compiled elsewhere, in the tier. */
	ir = ir_variant(1, &len);
	ck_assert_int_eq(sim_compile(ir, len, &img, &ilen, &d), SIM_OK);
	cache_digest_hex(ir, len, digest);
	backend_cache_key(be, SIM_FORMAT, digest, "", "", e.key);
	e.kernel = "tensor_add";
	e.format = SIM_FORMAT;
	e.backend = (char *)cache_backend(kcache_disk(kc));
	e.compiler_version = (char *)cache_compiler_version(kcache_disk(kc));
	e.data = img;
	e.len = ilen;
	ck_assert_int_eq(cache_put(store.c, &e), 0);
	free(img);

	resolve_wait(ir, len, &o);
	ck_assert_int_eq(o.error, KCACHE_OK);
	ck_assert_int_eq(o.cache_hit, 1);
	ck_assert_str_eq(o.key, e.key);
	kcache_stats_get(kc, &st);
	ck_assert_uint_eq(st.misses, 1);	/* on the local disk */
	ck_assert_uint_eq(st.compiles, 0);
	ck_assert_uint_eq(store.resolves, 1);
	ck_assert_uint_eq(store.publishes, 0);
	/* Stored on the local disk on the way. */
	ck_assert_int_eq(cache_get(kcache_disk(kc), e.key, 0, NULL), 0);
	kcache_entry_unref(kc, o.e);
	free(ir);
}
END_TEST

CHECK_TEST(core, test_kcache_tier_claim_comes_back_with_compile)
{
	struct kcache_stats	 st;
	struct outcome		 o;
	uint8_t			*ir;
	size_t			 len;

	ir = ir_variant(2, &len);
	resolve_wait(ir, len, &o);
	ck_assert_int_eq(o.error, KCACHE_OK);
	ck_assert_int_eq(o.cache_hit, 0);
	kcache_stats_get(kc, &st);
	ck_assert_uint_eq(st.compiles, 1);
	ck_assert_uint_eq(store.resolves, 1);
	ck_assert_uint_eq(store.publishes, 1);
	ck_assert_ptr_eq(store.claim_back, &store.claim);
	ck_assert_uint_gt(store.value_len, 0);
	ck_assert_int_eq(store.failed, 0);
	kcache_entry_unref(kc, o.e);
	free(ir);
}
END_TEST

CHECK_TEST(errors, test_kcache_tier_stopping_ends_flight)
{
	struct kcache_stats	 st;
	struct outcome		 o;
	uint8_t			*ir;
	size_t			 len;

	store.mode = STORE_STOP;
	ir = ir_variant(3, &len);
	resolve_wait(ir, len, &o);
	ck_assert_int_eq(o.error, KCACHE_ECOMPILE);
	ck_assert_int_eq(o.backend_error, BACKEND_ECANCELED);
	ck_assert_str_eq(o.diag, "nkid is stopping");
	kcache_stats_get(kc, &st);
	ck_assert_uint_eq(st.compiles, 0);
	ck_assert_uint_eq(store.publishes, 0);
	free(ir);
}
END_TEST

CHECK_TEST(errors, test_kcache_tier_down_is_skipped)
{
	struct kcache_stats	 st;
	struct outcome		 o;
	uint8_t			*ir;
	size_t			 len;

	store.mode = STORE_DOWN;
	ir = ir_variant(4, &len);
	resolve_wait(ir, len, &o);
	ck_assert_int_eq(o.error, KCACHE_OK);
	kcache_stats_get(kc, &st);
	ck_assert_uint_eq(st.compiles, 1);
	ck_assert_uint_eq(store.resolves, 0);
	/* The compile is still offered, without a claim. */
	ck_assert_uint_eq(store.publishes, 1);
	ck_assert_ptr_null(store.claim_back);
	kcache_entry_unref(kc, o.e);
	free(ir);
}
END_TEST
