/* check_kcache_remote.c: the remote tier's entries (encoding, HMAC with the fleet key, every verification), its URLs, and opening it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "cache/cache.h"
#include "daemon/config.h"
#include "daemon/kcache_remote.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("kcache_remote", NULL, NULL, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(errors, 0);
CHECK_TCASE(limits, 0);

static const char	fkey[] = "fleet-key-of-the-unit-tests-0123";
static const char	key[] = "0123456789abcdef0123456789abcdef"
			    "0123456789abcdef0123456789abcdef";
static char		why[512];

/* An entry of blob len bytes (or a failure with a log). */
static void
entry_make(struct cache_entry *e, size_t len, int failed)
{
	size_t	i;

	memset(e, 0, sizeof *e);
	memcpy(e->key, key, sizeof e->key);
	e->kernel = (char *)"tensor_add";
	e->format = (char *)"nkir/1";
	e->target = (char *)"trn1";
	e->backend = (char *)"cpu";
	e->compiler_version = (char *)"sim nkir/1";
	e->options = (char *)"-O2";
	e->compile_ms = 12.5;
	e->created = 1700000000.0;
	e->failed = failed;
	e->log = failed ? (char *)"kernel.py:3: partition dimension 256 "
	    "exceeds 128\n" : NULL;
	if (!failed) {
		e->data = malloc(len);
		for (i = 0; i < len; i++)
			((unsigned char *)e->data)[i] = (unsigned char)(i * 7);
		e->len = len;
	}
}

/*
 * entry_make(e, len, failed), encoded with the fleet key: the bytes (*vlen
 * of them), the caller's to free, as e->data.
 */
static void *
entry_encoded(struct cache_entry *e, size_t len, int failed, size_t *vlen)
{
	void	*v;

	entry_make(e, len, failed);
	kcache_remote_entry_encode(fkey, strlen(fkey), e, &v, vlen);
	return (v);
}

static int
decode(const void *v, size_t len, const char *want, struct cache_entry *e)
{
	return (kcache_remote_entry_decode(fkey, strlen(fkey), want, "cpu",
	    "sim nkir/1", v, len, e, why, sizeof why));
}

/* Sign v again (as a writer with the fleet key would) after a change. */
static void
resign(unsigned char *v, size_t len)
{
	unsigned int	n = 32;

	HMAC(EVP_sha256(), fkey, (int)strlen(fkey), v, len - 32, v + len - 32,
	    &n);
}

CHECK_TEST(core, test_kcache_remote_entry_roundtrip)
{
	struct cache_entry	 e, d;
	void			*v;
	size_t			 len;

	v = entry_encoded(&e, 5000, 0, &len);
	ck_assert_uint_eq(len, KCACHE_REMOTE_OVERHEAD + 5000 + strlen(key) +
	    strlen("tensor_add") + strlen("nkir/1") + strlen("trn1") +
	    strlen("cpu") + strlen("sim nkir/1") + strlen("-O2") + 2 + 4 +
	    CACHE_KEY_LEN + 6 + 14);
	ck_assert_msg(decode(v, len, key, &d) == 0, "%s", why);
	ck_assert_str_eq(d.key, key);
	ck_assert_str_eq(d.kernel, "tensor_add");
	ck_assert_str_eq(d.options, "-O2");
	ck_assert_int_eq(d.failed, 0);
	ck_assert_uint_eq(d.len, 5000);
	ck_assert_uint_eq(d.size, 5000);
	ck_assert_mem_eq(d.data, e.data, 5000);
	ck_assert(d.compile_ms == 12.5);
	ck_assert(d.created == 1700000000.0);
	cache_entry_release(&d);
	free(e.data);
	free(v);
}
END_TEST

CHECK_TEST(core, test_kcache_remote_entry_failure_travels)
{
	struct cache_entry	 e, d;
	void			*v;
	size_t			 len;

	v = entry_encoded(&e, 0, 1, &len);
	ck_assert_msg(decode(v, len, key, &d) == 0, "%s", why);
	ck_assert_int_eq(d.failed, 1);
	ck_assert_uint_eq(d.len, 0);
	ck_assert_ptr_null(d.data);
	ck_assert_str_eq(d.log, e.log);
	cache_entry_release(&d);
	free(v);
}
END_TEST

CHECK_TEST(errors, test_kcache_remote_entry_every_byte_signed)
{
	struct cache_entry	 e, d;
	unsigned char		*v;
	size_t			 len, i;

	v = entry_encoded(&e, 300, 0, &len);
	for (i = 0; i < len; i++) {
		v[i] ^= 0x01;
		ck_assert_msg(decode(v, len, key, &d) == KCACHE_REMOTE_EREJECT,
		    "a flip at byte %zu of %zu was accepted", i, len);
		v[i] ^= 0x01;
	}
	ck_assert_int_eq(decode(v, len, key, &d), 0);
	cache_entry_release(&d);
	free(e.data);
	free(v);
}
END_TEST

CHECK_TEST(errors, test_kcache_remote_entry_truncated_or_longer)
{
	struct cache_entry	 e, d;
	unsigned char		*v;
	size_t			 len, i;

	v = entry_encoded(&e, 300, 0, &len);
	for (i = 0; i < len; i++)
		ck_assert_msg(decode(v, i, key, &d) == KCACHE_REMOTE_EREJECT,
		    "%zu of %zu bytes accepted", i, len);
	ck_assert_ptr_nonnull(strstr(why, "truncated"));
	v = realloc(v, len + 1);
	v[len] = 0;
	ck_assert_int_eq(decode(v, len + 1, key, &d), KCACHE_REMOTE_EREJECT);
	ck_assert_str_eq(why, "1 stray bytes after the entry");
	free(e.data);
	free(v);
}
END_TEST

CHECK_TEST(errors, test_kcache_remote_entry_other_fleet_key)
{
	struct cache_entry	 e, d;
	void			*v;
	size_t			 len;

	entry_make(&e, 100, 0);
	kcache_remote_entry_encode("another fleet's key", 19, &e, &v, &len);
	ck_assert_int_eq(decode(v, len, key, &d), KCACHE_REMOTE_EREJECT);
	ck_assert_ptr_nonnull(strstr(why, "HMAC does not match the fleet "
	    "key"));
	free(e.data);
	free(v);
}
END_TEST

CHECK_TEST(errors, test_kcache_remote_entry_signed_but_wrong)
{
	struct cache_entry	 e, d;
	unsigned char		*v;
	char			 other[CACHE_KEY_LEN + 1];
	size_t			 len, off;

	/* Another key's entry (a fleet member wrote it, for that key). */
	v = entry_encoded(&e, 100, 0, &len);
	memset(other, 'f', CACHE_KEY_LEN);
	other[CACHE_KEY_LEN] = '\0';
	ck_assert_int_eq(decode(v, len, other, &d), KCACHE_REMOTE_EREJECT);
	ck_assert_ptr_nonnull(strstr(why, "it is the entry of key '0123"));
	/* Of another compiler. */
	ck_assert_int_eq(kcache_remote_entry_decode(fkey, strlen(fkey), key,
	    "cpu", "sim nkir/2", v, len, &d, why, sizeof why),
	    KCACHE_REMOTE_EREJECT);
	ck_assert_ptr_nonnull(strstr(why, "compiled by 'cpu' 'sim nkir/1'"));
	/* A blob byte changed and signed again: the digest catches it. */
	off = len - 32 - 1;
	v[off] ^= 0x40;
	resign(v, len);
	ck_assert_int_eq(decode(v, len, key, &d), KCACHE_REMOTE_EREJECT);
	ck_assert_ptr_nonnull(strstr(why, "its SHA-256 is"));
	v[off] ^= 0x40;
	/* The size field (decimal "100") says otherwise, signed again. */
	off = (size_t)((unsigned char *)memmem(v, len, "\003\000\000\000100",
	    7) - v) + 4;
	v[off] = '9';
	resign(v, len);
	ck_assert_int_eq(decode(v, len, key, &d), KCACHE_REMOTE_EREJECT);
	ck_assert_str_eq(why, "its size says 900, it holds 100 bytes");
	v[off] = '1';
	resign(v, len);
	ck_assert_int_eq(decode(v, len, key, &d), 0);
	cache_entry_release(&d);
	free(e.data);
	free(v);
}
END_TEST

/* A failed entry whose log (or name) is not UTF-8, signed by a holder of
 * the fleet key: refused, since every string nkid stores is UTF-8. */
CHECK_TEST(errors, test_kcache_remote_entry_not_utf8)
{
	struct cache_entry	 e, d;
	unsigned char		*v, *p;
	size_t			 len;

	v = entry_encoded(&e, 0, 1, &len);
	p = memmem(v, len, "partition", 9);
	ck_assert_ptr_nonnull(p);
	memcpy(p, "\xff\xfe", 2);
	resign(v, len);
	ck_assert_int_eq(decode(v, len, key, &d), KCACHE_REMOTE_EREJECT);
	ck_assert_ptr_nonnull(strstr(why, "malformed metadata"));
	memcpy(p, "pa", 2);
	p = memmem(v, len, "tensor_add", 10);
	memcpy(p, "\xc0\x80", 2);	/* an overlong NUL */
	resign(v, len);
	ck_assert_int_eq(decode(v, len, key, &d), KCACHE_REMOTE_EREJECT);
	memcpy(p, "te", 2);
	resign(v, len);
	ck_assert_int_eq(decode(v, len, key, &d), 0);
	cache_entry_release(&d);
	free(v);
}
END_TEST

CHECK_TEST(errors, test_kcache_remote_entry_garbage)
{
	static const char	junk[] = "this is not an entry of nkid";
	struct cache_entry	d;

	ck_assert_int_eq(decode(junk, sizeof junk, key, &d),
	    KCACHE_REMOTE_EREJECT);
	ck_assert_str_eq(why, "not an nkid entry (no magic)");
	ck_assert_int_eq(decode("", 0, key, &d), KCACHE_REMOTE_EREJECT);
	ck_assert_int_eq(decode("NKIDRMT1\377\377\377\377", 12, key, &d),
	    KCACHE_REMOTE_EREJECT);
	ck_assert_str_eq(why, "truncated: 12 bytes");
}
END_TEST

CHECK_TEST(limits, test_kcache_remote_entry_large)
{
	struct cache_entry	 e, d;
	void			*v;
	size_t			 len;

	v = entry_encoded(&e, 1 << 20, 0, &len);
	ck_assert_msg(decode(v, len, key, &d) == 0, "%s", why);
	ck_assert_mem_eq(d.data, e.data, 1 << 20);
	cache_entry_release(&d);
	free(e.data);
	free(v);
}
END_TEST

CHECK_TEST(core, test_kcache_remote_url_parse)
{
	/* the last one: a password belongs in remote.password_file */
	static const char *const	bad[] = { "redis://h:0",
	    "redis://h:99999", "redis://h/x", "redis://", "unix://relative",
	    "unix:///s?db=x", "redis://a:b@h" };
	struct config_remote_url	u;
	char				err[256];
	size_t				i;

	ck_assert_int_eq(config_remote_url_parse("redis://cache.fleet",
	    &u, err, sizeof err), 0);
	ck_assert_str_eq(u.host, "cache.fleet");
	ck_assert_uint_eq(u.port, 6379);
	ck_assert_uint_eq(u.db, 0);
	ck_assert_int_eq(config_remote_url_parse("redis://10.0.0.5:7000/3",
	    &u, err, sizeof err), 0);
	ck_assert_str_eq(u.host, "10.0.0.5");
	ck_assert_uint_eq(u.port, 7000);
	ck_assert_uint_eq(u.db, 3);
	ck_assert_int_eq(config_remote_url_parse("redis://[fd00::1]:6380/",
	    &u, err, sizeof err), 0);
	ck_assert_str_eq(u.host, "fd00::1");
	ck_assert_uint_eq(u.port, 6380);
	ck_assert_int_eq(config_remote_url_parse(
	    "unix:///run/redis/redis.sock?db=2", &u, err, sizeof err), 0);
	ck_assert_str_eq(u.path, "/run/redis/redis.sock");
	ck_assert_uint_eq(u.db, 2);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(config_remote_url_parse(bad[i], &u, err,
		    sizeof err) == -1, "'%s' accepted", bad[i]);
	ck_assert_ptr_nonnull(strstr(err, "remote.password_file"));
}
END_TEST

/* Open: off is no tier; a fleet key that cannot be read or is too short
 * fails naming the remote tier, before any connection. */
CHECK_TEST(errors, test_kcache_remote_open_errors)
{
	struct kcache_remote	*r = (void *)1;
	struct config		 cfg;
	uv_loop_t		 loop;
	char			 json[512], err[512];
	char			 path[] = "/tmp/ckr.XXXXXX";
	int			 fd;

	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_int_eq(config_load(&cfg, NULL, NULL, err, sizeof err), 0);
	ck_assert_int_eq(kcache_remote_open(&r, &loop, &cfg, "cpu", "v", 1000,
	    NULL, err, sizeof err), 0);
	ck_assert_ptr_null(r);
	config_release(&cfg);

	snprintf(json, sizeof json, "{\"remote\": {\"mode\": \"read\", "
	    "\"url\": \"unix:///nonexistent/r.sock\", \"hmac_key_file\": "
	    "\"/nonexistent/k\"}}");
	ck_assert_int_eq(config_load_string(&cfg, "t", json, strlen(json),
	    NULL, err, sizeof err), 0);
	ck_assert_int_eq(kcache_remote_open(&r, &loop, &cfg, "cpu", "v", 1000,
	    NULL, err, sizeof err), -1);
	ck_assert_str_eq(err, "remote tier: cannot read remote.hmac_key_file "
	    "'/nonexistent/k': No such file or directory");
	config_release(&cfg);

	ck_assert_int_ne(fd = mkstemp(path), -1);
	ck_assert_int_eq(write(fd, "short\n", 6), 6);
	close(fd);
	snprintf(json, sizeof json, "{\"remote\": {\"mode\": \"read\", "
	    "\"url\": \"unix:///nonexistent/r.sock\", \"hmac_key_file\": "
	    "\"%s\"}}", path);
	ck_assert_int_eq(config_load_string(&cfg, "t", json, strlen(json),
	    NULL, err, sizeof err), 0);
	ck_assert_int_eq(kcache_remote_open(&r, &loop, &cfg, "cpu", "v", 1000,
	    NULL, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "has 5 bytes, fewer than 16"));
	config_release(&cfg);

	/* A store that is not there: the tier opens, down, and closes. */
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, fkey, strlen(fkey)), (ssize_t)strlen(fkey));
	close(fd);
	ck_assert_int_eq(config_load_string(&cfg, "t", json, strlen(json),
	    NULL, err, sizeof err), 0);
	ck_assert_int_eq(kcache_remote_open(&r, &loop, &cfg, "cpu", "v", 1000,
	    NULL, err, sizeof err), 0);
	ck_assert_ptr_nonnull(r);
	config_release(&cfg);
	kcache_remote_close(r);
	unlink(path);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST
