/* check_cache_verify.c: unit tests of CacheVerify in libnkicache (cache_verify.c): each state with its message, every entry or named keys, signatures of cpu images, a read-only look, cancelling. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "cache/cache.h"
#include "sim/sim.h"
#include "tests/unit/check_main.h"
#include "tests/unit/nkir_fixture.h"

CHECK_SUITE("cache_verify", check_dir_setup, check_dir_teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(errors, 0);
CHECK_TCASE(recovery, 0);

static struct cache *
open_cache(const char *compiler, int readonly)
{
	struct cache_opts	 o;
	struct cache		*c;
	char			 err[512];

	memset(&o, 0, sizeof o);
	o.dir = check_dir;
	o.backend = "cpu";
	o.compiler_version = compiler;
	o.recover = 1;
	o.readonly = readonly;
	o.inline_max = 100;
	ck_assert_msg(cache_open(&c, &o, err, sizeof err) == 0, "%s", err);
	return (c);
}

/* Store entry `name` (key: the digest of the name) holding len bytes of
 * data (or failed, with a log); its key into key. */
static void
put(struct cache *c, const char *name, const void *data, size_t len,
    int failed, char *key)
{
	struct cache_entry	e = { 0 };

	cache_digest_hex(name, strlen(name), key);
	memcpy(e.key, key, CACHE_KEY_LEN + 1);
	e.kernel = (char *)name;
	e.format = "nkir/1";
	e.data = (void *)data;
	e.len = len;
	e.failed = failed;
	e.log = failed ? "partition dimension 256 exceeds 128" : NULL;
	ck_assert_int_eq(cache_put(c, &e), 0);
}

static const struct cache_verify_item *
find(const struct cache_verify *v, const char *key)
{
	size_t	i;

	for (i = 0; i < v->n; i++)
		if (strcmp(v->items[i].key, key) == 0)
			return (&v->items[i]);
	ck_abort_msg("no item '%s'", key);
	return (NULL);
}

/* Flip a bit in the blob file of the entry of key. */
static void
flip_blob(struct cache *c, const char *key)
{
	struct cache_entry	 e;
	unsigned char		 b;
	char			 p[512];
	int			 fd;

	ck_assert_int_eq(cache_get(c, key, 0, &e), 0);
	snprintf(p, sizeof p, "%s/blobs/%.2s/%s", check_dir, e.digest,
	    e.digest);
	cache_entry_release(&e);
	ck_assert_int_ge(fd = open(p, O_RDWR), 0);
	ck_assert_int_eq(pread(fd, &b, 1, 150), 1);
	b ^= 1;
	ck_assert_int_eq(pwrite(fd, &b, 1, 150), 1);
	close(fd);
}

static char	blob[4096];

/* ------------------------------------------------------------ core */

CHECK_TEST(core, test_cache_verify_every_entry_states)
{
	struct cache		*c = open_cache("sim nkir/1", 0);
	struct cache_verify	 v = { NULL, 0, 0, 0 };
	char			 ok[CACHE_KEY_LEN + 1];
	char			 bad[CACHE_KEY_LEN + 1];
	char			 failed[CACHE_KEY_LEN + 1];
	char			 other[CACHE_KEY_LEN + 1];
	const struct cache_verify_item	*it;

	put(c, "ok", blob, sizeof blob, 0, ok);
	put(c, "bad", blob, sizeof blob - 1, 0, bad);
	put(c, "failed", NULL, 0, 1, failed);
	cache_close(c);
	/* An entry of another compiler: kept, stale when named. */
	c = open_cache("sim nkir/0", 0);
	put(c, "other", blob, 10, 0, other);
	cache_close(c);
	c = open_cache("sim nkir/1", 0);
	flip_blob(c, bad);

	ck_assert_int_eq(cache_verify_run(c, &v, CACHE_VERIFY_ALL, NULL), 0);
	ck_assert_uint_eq(v.n, 4);
	it = find(&v, ok);
	ck_assert_int_eq(it->state, CACHE_VERIFY_OK);
	ck_assert_str_eq(it->kernel, "ok");
	ck_assert_str_eq(it->message, "");
	ck_assert_uint_eq(it->nparams, 0);
	it = find(&v, bad);
	ck_assert_int_eq(it->state, CACHE_VERIFY_CORRUPT);
	ck_assert_str_eq(it->message,
	    "its blob does not match its digest: quarantined");
	ck_assert_int_eq(find(&v, failed)->state, CACHE_VERIFY_FAILED);
	/* Every entry: other compilers' too (CACHE_GET_ANY). */
	ck_assert_int_eq(find(&v, other)->state, CACHE_VERIFY_OK);
	cache_verify_release(&v);
	ck_assert_uint_eq(v.n, 0);
	cache_close(c);
}
END_TEST

CHECK_TEST(core, test_cache_verify_named_keys)
{
	struct cache		*c = open_cache("sim nkir/0", 0);
	struct cache_verify	 v = { NULL, 0, 0, 0 };
	char			 other[CACHE_KEY_LEN + 1];
	char			 none[CACHE_KEY_LEN + 1];
	const struct cache_verify_item	*it;

	put(c, "other", blob, 10, 0, other);
	cache_close(c);
	c = open_cache("sim nkir/1", 0);
	cache_digest_hex("none", 4, none);
	cache_verify_add(&v, other, NULL);
	cache_verify_add(&v, none, "k");
	/* Decided by the caller: not read. */
	cache_verify_set(cache_verify_add(&v, "", NULL), CACHE_VERIFY_MISSING,
	    "format '%s' is not the cpu backend's", "penguin");
	ck_assert_int_eq(cache_verify_run(c, &v, 0, NULL), 0);
	ck_assert_uint_eq(v.n, 3);
	it = find(&v, other);
	ck_assert_int_eq(it->state, CACHE_VERIFY_STALE);
	ck_assert_str_eq(it->message,
	    "compiled by another backend or compiler version");
	ck_assert_str_eq(it->kernel, "other");
	it = find(&v, none);
	ck_assert_int_eq(it->state, CACHE_VERIFY_MISSING);
	ck_assert_str_eq(it->kernel, "k");
	ck_assert_str_eq(it->message, "");
	ck_assert_int_eq(v.items[2].state, CACHE_VERIFY_MISSING);
	ck_assert_str_eq(v.items[2].message,
	    "format 'penguin' is not the cpu backend's");
	cache_verify_release(&v);
	cache_close(c);
}
END_TEST

CHECK_TEST(core, test_cache_verify_signatures_of_cpu_images)
{
	struct cache		*c = open_cache("sim nkir/1", 0);
	struct cache_verify	 v = { NULL, 0, 0, 0 };
	struct sim_diag		 d;
	uint8_t			*ir;
	void			*img;
	size_t			 len, ilen;
	char			 key[CACHE_KEY_LEN + 1];
	char			 raw[CACHE_KEY_LEN + 1];
	const struct cache_verify_item	*it;

	ir = ir_tensor_add(&len, 0, P);
	ck_assert_int_eq(sim_compile(ir, len, &img, &ilen, &d), SIM_OK);
	free(ir);
	put(c, "tensor_add", img, ilen, 0, key);
	free(img);
	put(c, "raw", blob, sizeof blob, 0, raw);
	cache_verify_add(&v, key, NULL);
	cache_verify_add(&v, raw, NULL);
	ck_assert_int_eq(cache_verify_run(c, &v, CACHE_VERIFY_SIGNATURES,
	    NULL), 0);
	it = find(&v, key);
	ck_assert_int_eq(it->state, CACHE_VERIFY_OK);
	ck_assert_uint_eq(it->nparams, 2);
	ck_assert_str_eq(it->params[0].name, "a");
	ck_assert_str_eq(it->params[0].dtype, "float32");
	ck_assert_uint_eq(it->params[0].rank, 2);
	ck_assert_uint_eq(it->params[0].shape[0], P);
	ck_assert_uint_eq(it->params[0].shape[1], F);
	ck_assert_str_eq(it->params[1].name, "b");
	/* Not a cpu image: ok, without a signature. */
	it = find(&v, raw);
	ck_assert_int_eq(it->state, CACHE_VERIFY_OK);
	ck_assert_uint_eq(it->nparams, 0);
	cache_verify_release(&v);
	cache_close(c);
}
END_TEST

/* ------------------------------------------------------------ errors */

CHECK_TEST(errors, test_cache_verify_cancelled_stops)
{
	struct cache		*c = open_cache("sim nkir/1", 0);
	struct cache_verify	 v = { NULL, 0, 0, 0 };
	char			 key[CACHE_KEY_LEN + 1];
	volatile int		 cancel = 1;

	put(c, "ok", blob, 10, 0, key);
	cache_verify_add(&v, key, NULL);
	ck_assert_int_eq(cache_verify_run(c, &v, 0, &cancel), 0);
	ck_assert_int_eq(v.items[0].state, CACHE_VERIFY_UNCHECKED);
	cancel = 0;
	ck_assert_int_eq(cache_verify_run(c, &v, 0, &cancel), 0);
	ck_assert_int_eq(v.items[0].state, CACHE_VERIFY_OK);
	cache_verify_release(&v);
	cache_close(c);
}
END_TEST

/* ------------------------------------------------------------ recovery */

/* A read-only look (nkictl offline) reports the damage and leaves it. */
CHECK_TEST(recovery, test_cache_verify_readonly_not_quarantined)
{
	struct cache		*c = open_cache("sim nkir/1", 0);
	struct cache_verify	 v = { NULL, 0, 0, 0 };
	char			 bad[CACHE_KEY_LEN + 1];
	int			 i;

	put(c, "bad", blob, sizeof blob, 0, bad);
	flip_blob(c, bad);
	cache_close(c);
	for (i = 0; i < 2; i++) {
		c = open_cache("sim nkir/1", 1);
		ck_assert_int_eq(cache_verify_run(c, &v, CACHE_VERIFY_ALL,
		    NULL), 0);
		ck_assert_uint_eq(v.n, 1);
		ck_assert_int_eq(v.items[0].state, CACHE_VERIFY_CORRUPT);
		ck_assert_str_eq(v.items[0].message,
		    "its blob does not match its digest");
		cache_verify_release(&v);
		cache_close(c);
	}
}
END_TEST
