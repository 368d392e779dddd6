/* check_cache.c: unit tests of libnkicache (index, blobs, budget, bundles, recovery). */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <openssl/sha.h>
#include <sqlite3.h>

#include "cache/cache.h"
#include "tests/unit/check_main.h"


CHECK_SUITE("cache", check_dir_setup, check_dir_teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(limits, 600);
CHECK_TCASE(errors, 0);
CHECK_TCASE(recovery, 0);

/* The options of a cache in dir of the cpu backend's compiler. */
static void
opts_cpu(struct cache_opts *o, const char *dir)
{
	memset(o, 0, sizeof *o);
	o->dir = dir;
	o->backend = "cpu";
	o->compiler_version = "sim nkir/1";
}

static struct cache *
open_cache(uint64_t max_bytes, size_t inline_max)
{
	struct cache_opts	 o;
	struct cache		*c;
	char			 err[512];

	opts_cpu(&o, check_dir);
	o.max_bytes = max_bytes;
	o.recover = 1;
	o.inline_max = inline_max;
	ck_assert_msg(cache_open(&c, &o, err, sizeof err) == 0, "%s", err);
	return (c);
}

/* Key number i and a blob of len bytes derived from it. */
static void
mk_key(unsigned i, char *key)
{
	char	s[32];

	snprintf(s, sizeof s, "entry-%u", i);
	cache_digest_hex(s, strlen(s), key);
}

static int
put(struct cache *c, unsigned i, size_t len)
{
	struct cache_entry	e = { 0 };
	unsigned char		*b = malloc(len + 1);
	size_t			j;
	int			rc;

	for (j = 0; j < len; j++)
		b[j] = (unsigned char)(i * 31 + j);
	mk_key(i, e.key);
	e.kernel = "k";
	e.format = "nkir/1";
	e.data = b;
	e.len = len;
	rc = cache_put(c, &e);
	free(b);
	return (rc);
}

static int
get(struct cache *c, unsigned i, int flags)
{
	struct cache_entry	e;
	char			key[CACHE_KEY_LEN + 1];
	int			rc;

	mk_key(i, key);
	rc = cache_get(c, key, flags, &e);
	if (rc == 0 || rc == CACHE_EFAILED || rc == CACHE_ESTALE)
		cache_entry_release(&e);
	return (rc);
}

static unsigned
count_files(const char *sub)
{
	char		 p[512];
	DIR		*d;
	struct dirent	*de;
	unsigned	 n = 0;

	snprintf(p, sizeof p, "%s/%s", check_dir, sub);
	if ((d = opendir(p)) == NULL)
		return (0);
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return (n);
}

/* Flip one bit of the blob file of entry i (stored as a file); its path
 * into p (len bytes). */
static void
flip_blob(struct cache *c, unsigned i, char *p, size_t len)
{
	struct cache_entry	 e;
	char			 key[CACHE_KEY_LEN + 1];
	unsigned char		 b;
	int			 fd;

	mk_key(i, key);
	ck_assert_int_eq(cache_get(c, key, 0, &e), 0);
	snprintf(p, len, "%s/blobs/%.2s/%s", check_dir, e.digest, e.digest);
	cache_entry_release(&e);
	fd = open(p, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &b, 1, 100), 1);
	b ^= 1;
	ck_assert_int_eq(pwrite(fd, &b, 1, 100), 1);
	close(fd);
}

/* ------------------------------------------------------------ core */

CHECK_TEST(core, test_cache_put_get_inline_and_file)
{
	struct cache		*c = open_cache(0, 100);
	struct cache_entry	 e;
	char			 key[CACHE_KEY_LEN + 1];

	ck_assert_int_eq(put(c, 1, 50), 0);
	ck_assert_int_eq(put(c, 2, 5000), 0);
	mk_key(1, key);
	ck_assert_int_eq(cache_get(c, key, CACHE_GET_DATA | CACHE_GET_TOUCH,
	    &e), 0);
	ck_assert(e.is_inline);
	ck_assert_uint_eq(e.len, 50);
	ck_assert_uint_eq(((unsigned char *)e.data)[3], (31 + 3) & 0xff);
	ck_assert_uint_eq(e.hits, 1);
	cache_entry_release(&e);
	mk_key(2, key);
	ck_assert_int_eq(cache_get(c, key, CACHE_GET_DATA, &e), 0);
	ck_assert(!e.is_inline);
	ck_assert_uint_eq(e.len, 5000);
	cache_entry_release(&e);
	ck_assert_int_eq(get(c, 3, 0), CACHE_ENOENT);
	cache_close(c);

	/* The index is the truth after a reopen. */
	c = open_cache(0, 100);
	ck_assert_int_eq(get(c, 2, CACHE_GET_DATA), 0);
	{
		struct cache_stats st;

		cache_stats_get(c, &st);
		ck_assert_uint_eq(st.entries, 2);
		ck_assert_uint_eq(st.bytes, 5050);
	}
	cache_close(c);
}
END_TEST

CHECK_TEST(core, test_cache_key_normalizes_options)
{
	struct cache_key_input	in = { 0 };
	char			a[CACHE_KEY_LEN + 1], b[CACHE_KEY_LEN + 1];
	char			d[CACHE_KEY_LEN + 1], d2[CACHE_KEY_LEN + 1];

	cache_digest_hex("ir", 2, d);
	in.format = "nkir/1";
	in.ir_digest = d;
	in.target = "trn1";
	in.options = "-O2  -x";
	in.backend = "cpu";
	in.compiler_version = "v1";
	cache_key_compute(&in, a);
	in.options = " -O2 -x ";
	cache_key_compute(&in, b);
	ck_assert_str_eq(a, b);
	ck_assert(cache_key_valid(a));
	in.compiler_version = "v2";
	cache_key_compute(&in, b);
	ck_assert_str_ne(a, b);
	/* Another IR, another key. */
	in.compiler_version = "v1";
	cache_digest_hex("ir2", 3, d2);
	in.ir_digest = d2;
	cache_key_compute(&in, b);
	ck_assert_str_ne(a, b);
	ck_assert(!cache_key_valid("abc"));
}
END_TEST

CHECK_TEST(core, test_cache_pin_remove)
{
	struct cache	*c = open_cache(0, 0);
	char		 key[CACHE_KEY_LEN + 1], got[CACHE_KEY_LEN + 1];

	ck_assert_int_eq(put(c, 1, 10), 0);
	mk_key(1, key);
	ck_assert_int_eq(cache_pin(c, key, 1), 0);
	mk_key(9, got);
	ck_assert_int_eq(cache_pin(c, got, 1), CACHE_ENOENT);
	ck_assert_int_eq(cache_remove(c, key), 0);
	ck_assert_int_eq(cache_remove(c, key), CACHE_ENOENT);
	cache_close(c);
}
END_TEST

CHECK_TEST(core, test_cache_other_compiler_kept_not_served)
{
	struct cache		*c = open_cache(0, 0);
	struct cache_opts	 o;
	char			 err[256];

	ck_assert_int_eq(put(c, 1, 10), 0);
	cache_close(c);
	opts_cpu(&o, check_dir);
	o.compiler_version = "sim nkir/2";
	ck_assert_int_eq(cache_open(&c, &o, err, sizeof err), 0);
	ck_assert_int_eq(get(c, 1, CACHE_GET_DATA), CACHE_ESTALE);
	ck_assert_int_eq(get(c, 1, CACHE_GET_DATA | CACHE_GET_ANY), 0);
	cache_close(c);
}
END_TEST

CHECK_TEST(core, test_cache_failure_cached_with_log)
{
	struct cache		*c = open_cache(0, 0);
	struct cache_entry	 e = { 0 }, g;

	mk_key(5, e.key);
	e.failed = 1;
	e.log = "partition dimension 256 exceeds 128";
	ck_assert_int_eq(cache_put(c, &e), 0);
	ck_assert_int_eq(cache_get(c, e.key, CACHE_GET_DATA, &g),
	    CACHE_EFAILED);
	ck_assert_str_eq(g.log, e.log);
	cache_entry_release(&g);
	cache_close(c);
}
END_TEST

/* Text stored is valid UTF-8: a log that is not is stored with its bad
 * bytes escaped, and a long one cut at a character boundary. */
CHECK_TEST(core, test_cache_text_stored_utf8)
{
	struct cache		*c = open_cache(0, 0);
	struct cache_entry	 e = { 0 }, g;
	char			*log, *s;
	size_t			 i;

	mk_key(6, e.key);
	e.failed = 1;
	e.kernel = "k\xff";
	e.log = "file '\xff\xfe.py' \xc0\x80 ok \xe2\x82\xac";
	ck_assert_int_eq(cache_put(c, &e), 0);
	ck_assert_int_eq(cache_get(c, e.key, CACHE_GET_DATA, &g),
	    CACHE_EFAILED);
	ck_assert_str_eq(g.log,
	    "file '\\xff\\xfe.py' \\xc0\\x80 ok \xe2\x82\xac");
	ck_assert_str_eq(g.kernel, "k\\xff");
	cache_entry_release(&g);

	/* 64 KiB of three-byte characters: cut on a boundary. */
	log = malloc(CACHE_LOG_MAX + 8);
	for (i = 0; i + 3 <= CACHE_LOG_MAX + 4; i += 3)
		memcpy(log + i, "\xe2\x82\xac", 3);
	log[i] = '\0';
	mk_key(7, e.key);
	e.kernel = "k";
	e.log = log;
	ck_assert_int_eq(cache_put(c, &e), 0);
	ck_assert_int_eq(cache_get(c, e.key, CACHE_GET_DATA, &g),
	    CACHE_EFAILED);
	ck_assert_uint_le(strlen(g.log), CACHE_LOG_MAX);
	ck_assert(cache_text_valid(g.log, strlen(g.log)));
	cache_entry_release(&g);
	free(log);
	cache_close(c);

	ck_assert(cache_text_valid("abc \xe2\x82\xac", 7));
	ck_assert(!cache_text_valid("\xc0\x80", 2));	/* overlong */
	ck_assert(!cache_text_valid("\xed\xa0\x80", 3));	/* surrogate */
	ck_assert(!cache_text_valid("\xf4\x90\x80\x80", 4)); /* > 10FFFF */
	ck_assert(!cache_text_valid("\xe2\x82", 2));		/* cut */
	ck_assert(!cache_text_valid("a\0b", 3));
	s = cache_text_clean("\xe2\x82\xac\xe2\x82\xac", 5);
	ck_assert_str_eq(s, "\xe2\x82\xac");
	free(s);
}
END_TEST

/* ------------------------------------------------------------ limits */

CHECK_TEST(limits, test_cache_budget_lru_pinned_held)
{
	struct cache		*c = open_cache(10000, 100);
	struct cache_stats	 st;
	char			 key[CACHE_KEY_LEN + 1];
	unsigned		 i;

	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(put(c, i, 2000), 0);
		usleep(2000);
	}
	mk_key(0, key);
	ck_assert_int_eq(cache_pin(c, key, 1), 0);	/* oldest, pinned */
	mk_key(1, key);
	cache_hold(c, key);				/* next, in use */
	ck_assert_int_eq(get(c, 2, CACHE_GET_TOUCH), 0);	/* 3 is LRU now */
	ck_assert_int_eq(put(c, 10, 3000), 0);
	cache_stats_get(c, &st);
	ck_assert_uint_le(st.bytes, 10000);
	ck_assert_uint_eq(st.evictions, 1);
	ck_assert_int_eq(get(c, 0, 0), 0);
	ck_assert_int_eq(get(c, 1, 0), 0);
	ck_assert_int_eq(get(c, 2, 0), 0);
	ck_assert_int_eq(get(c, 3, 0), CACHE_ENOENT);
	/* Its file went with it. */
	ck_assert_uint_eq(count_files("tmp"), 0);
	/* Cannot fit: pinned and held fill too much. */
	ck_assert_int_eq(put(c, 11, 9000), CACHE_EFULL);
	ck_assert_int_eq(put(c, 12, 20000), CACHE_EFULL);
	cache_stats_get(c, &st);
	ck_assert_uint_le(st.bytes, 10000);
	ck_assert_int_eq(get(c, 11, 0), CACHE_ENOENT);
	cache_unhold(c, key);
	ck_assert_int_eq(put(c, 11, 6000), 0);
	ck_assert_int_eq(get(c, 1, 0), CACHE_ENOENT);
	ck_assert_int_eq(get(c, 0, 0), 0);		/* pinned stays */
	/* A smaller budget evicts at once. */
	ck_assert_int_eq(cache_max_bytes_set(c, 3000), 0);
	cache_stats_get(c, &st);
	ck_assert_uint_eq(st.bytes, 2000);
	/* Only the pinned entry is left: it stays even over budget. */
	ck_assert_int_eq(cache_max_bytes_set(c, 1000), CACHE_EFULL);
	ck_assert_int_eq(get(c, 0, 0), 0);
	cache_close(c);
}
END_TEST

static int
write_file_cb(void *arg, const void *p, size_t n)
{
	return (fwrite(p, 1, n, arg) == n ? 0 : -1);
}

CHECK_TEST(limits, test_cache_bundle_roundtrip_and_hostile)
{
	struct cache	*c = open_cache(0, 100), *d;
	char		 path[300], other[300], err[512];
	unsigned	 n, imp, skip;
	FILE		*f;
	long		 size;

	ck_assert_int_eq(put(c, 1, 50), 0);
	ck_assert_int_eq(put(c, 2, 5000), 0);
	snprintf(path, sizeof path, "%s/b.nkb", check_dir);
	f = fopen(path, "w");
	ck_assert_int_eq(cache_bundle_export(c, CACHE_VIEW_ALL, NULL, 0, 0,
	    write_file_cb, f, &n, err, sizeof err), 0);
	fclose(f);
	ck_assert_uint_eq(n, 2);
	cache_close(c);

	snprintf(other, sizeof other, "%s/other", check_dir);
	mkdir(other, 0700);
	{
		struct cache_opts o;

		opts_cpu(&o, other);
		ck_assert_int_eq(cache_open(&d, &o, err, sizeof err), 0);
	}
	/* Truncated: refused, nothing imported. */
	f = fopen(path, "r+");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	ck_assert_int_eq(truncate(path, size - 1), 0);
	ck_assert_int_eq(cache_bundle_import(d, path, &imp, &skip, err,
	    sizeof err), CACHE_EBUNDLE);
	ck_assert_ptr_nonnull(strstr(err, "refused"));
	{
		struct cache_stats st;

		cache_stats_get(d, &st);
		ck_assert_uint_eq(st.entries, 0);
	}
	cache_close(d);
}
END_TEST

/* ------------------------------------------------------------ errors */
/* A bundle whose kernel name is not UTF-8 (docs/cache.md: fields are
 * UTF-8) is refused, even with a trailer that matches. */
CHECK_TEST(errors, test_cache_bundle_non_utf8_refused)
{
	struct cache		*c = open_cache(0, 100), *d;
	struct cache_entry	 e = { 0 };
	struct cache_opts	 o;
	char			 path[300], other[300], err[512], *p;
	unsigned		 n, imp = 0, skip = 0;
	unsigned char		*buf;
	FILE			*f;
	long			 size;

	mk_key(9, e.key);
	e.kernel = "QQQQ";
	e.format = "nkir/1";
	e.data = "blob";
	e.len = 4;
	ck_assert_int_eq(cache_put(c, &e), 0);
	snprintf(path, sizeof path, "%s/u.nkb", check_dir);
	f = fopen(path, "w");
	ck_assert_int_eq(cache_bundle_export(c, CACHE_VIEW_ALL, NULL, 0, 0,
	    write_file_cb, f, &n, err, sizeof err), 0);
	fclose(f);
	cache_close(c);
	f = fopen(path, "r+");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	buf = malloc(size);
	ck_assert_int_eq(fread(buf, 1, size, f), size);
	p = memmem(buf, size, "QQQQ", 4);
	ck_assert_ptr_nonnull(p);
	memcpy(p, "\xff\xfe\xff\xfe", 4);
	/* The trailer: "NKIDEND1" and the SHA-256 of what precedes it. */
	SHA256(buf, size - 40, buf + size - 32);
	rewind(f);
	ck_assert_int_eq(fwrite(buf, 1, size, f), size);
	fclose(f);
	free(buf);

	snprintf(other, sizeof other, "%s/utf8", check_dir);
	mkdir(other, 0700);
	opts_cpu(&o, other);
	ck_assert_int_eq(cache_open(&d, &o, err, sizeof err), 0);
	ck_assert_int_eq(cache_bundle_import(d, path, &imp, &skip, err,
	    sizeof err), CACHE_EBUNDLE);
	ck_assert_msg(strstr(err, "not valid UTF-8") != NULL, "%s", err);
	ck_assert_uint_eq(imp, 0);
	cache_close(d);
}
END_TEST


CHECK_TEST(errors, test_cache_disk_full_then_resumes)
{
	struct cache		*c = open_cache(0, 100);
	struct cache_stats	 st;

	cache_fault_enospc(c, 1);
	ck_assert_int_eq(put(c, 1, 5000), CACHE_ENOSPC);
	ck_assert_int_eq(get(c, 1, 0), CACHE_ENOENT);
	ck_assert_uint_eq(count_files("tmp"), 0);
	ck_assert_int_eq(put(c, 1, 5000), 0);
	ck_assert_int_eq(get(c, 1, CACHE_GET_DATA), 0);
	cache_stats_get(c, &st);
	ck_assert_uint_eq(st.store_errors, 1);
	ck_assert_uint_eq(st.entries, 1);
	cache_close(c);
}
END_TEST

CHECK_TEST(errors, test_cache_open_errors)
{
	struct cache_opts	 o = { 0 };
	struct cache		*c;
	char			 err[512], p[300];

	snprintf(p, sizeof p, "%s/missing", check_dir);
	o.dir = p;
	ck_assert_int_eq(cache_open(&c, &o, err, sizeof err), CACHE_EIO);
	ck_assert_ptr_nonnull(strstr(err, p));
	c = open_cache(0, 0);
	ck_assert_int_eq(cache_get(c, "nope", 0, NULL), CACHE_EINVAL);
	ck_assert_int_eq(cache_remove(c, "nope"), CACHE_EINVAL);
	cache_close(c);
	/* Read-only: no writes. */
	o.dir = check_dir;
	o.readonly = 1;
	ck_assert_int_eq(cache_open(&c, &o, err, sizeof err), 0);
	ck_assert_int_eq(put(c, 1, 10), CACHE_EREADONLY);
	cache_close(c);
	ck_assert_str_eq(cache_strerror(CACHE_EFULL),
	    "does not fit in the cache budget (cache.max_bytes)");
}
END_TEST

CHECK_TEST(errors, test_cache_newer_schema_refused)
{
	struct cache_opts	 o = { 0 };
	struct cache		*c = open_cache(0, 0);
	sqlite3			*db;
	char			 err[512], p[300];

	cache_close(c);
	snprintf(p, sizeof p, "%s/index.db", check_dir);
	ck_assert_int_eq(sqlite3_open(p, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version = 99", NULL,
	    NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	o.dir = check_dir;
	o.recover = 1;
	ck_assert_int_eq(cache_open(&c, &o, err, sizeof err), CACHE_EDB);
	ck_assert_ptr_nonnull(strstr(err, "newer"));
}
END_TEST

/* Blob files under blobs/, in every fan-out directory. */
static unsigned
count_blobs(unsigned *dirs)
{
	char		 p[512];
	DIR		*d;
	struct dirent	*de;
	unsigned	 n = 0;

	*dirs = 0;
	snprintf(p, sizeof p, "%s/blobs", check_dir);
	if ((d = opendir(p)) == NULL)
		return (0);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		(*dirs)++;
		snprintf(p, sizeof p, "blobs/%s", de->d_name);
		n += count_files(p);
	}
	closedir(d);
	return (n);
}

CHECK_TEST(errors, test_cache_failed_stores_leave_no_dirs)
{
	struct cache	*c = open_cache(0, 100);
	unsigned	 dirs, i;

	cache_fault_enospc(c, 20);
	for (i = 0; i < 20; i++)
		ck_assert_int_eq(put(c, i, 5000), CACHE_ENOSPC);
	ck_assert_uint_eq(count_blobs(&dirs), 0);
	ck_assert_uint_eq(dirs, 0);
	ck_assert_uint_eq(count_files("tmp"), 0);
	ck_assert_int_eq(put(c, 1, 5000), 0);
	ck_assert_uint_eq(count_blobs(&dirs), 1);
	ck_assert_uint_eq(dirs, 1);
	cache_close(c);
}
END_TEST

/* ------------------------------------------------------------ recovery */

CHECK_TEST(recovery, test_cache_flipped_file_quarantined)
{
	struct cache		*c = open_cache(0, 100);
	struct cache_stats	 st;
	char			 p[512];

	ck_assert_int_eq(put(c, 1, 5000), 0);
	flip_blob(c, 1, p, sizeof p);
	ck_assert_int_eq(get(c, 1, CACHE_GET_DATA), CACHE_ECORRUPT);
	ck_assert_int_eq(get(c, 1, 0), CACHE_ENOENT);
	ck_assert_uint_eq(count_files("quarantine"), 1);
	cache_stats_get(c, &st);
	ck_assert_uint_eq(st.corrupt, 1);
	ck_assert_uint_eq(st.entries, 0);
	cache_close(c);
}
END_TEST

CHECK_TEST(recovery, test_cache_damaged_db_set_aside)
{
	struct cache		*c = open_cache(0, 0);
	struct cache_stats	 st;
	char			 p[300];
	FILE			*f;

	ck_assert_int_eq(put(c, 1, 10), 0);
	cache_close(c);
	snprintf(p, sizeof p, "%s/index.db", check_dir);
	f = fopen(p, "r+");
	fwrite("garbage!garbage!", 1, 16, f);
	fclose(f);
	c = open_cache(0, 0);
	cache_stats_get(c, &st);
	ck_assert_uint_eq(st.recovered, 1);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_int_eq(get(c, 1, 0), CACHE_ENOENT);
	ck_assert_int_eq(put(c, 2, 10), 0);
	cache_close(c);
}
END_TEST

/* A read-only look (offline `cache verify`) reports and changes nothing:
 * the second look sees the same damage, not a missing file. */
CHECK_TEST(recovery, test_cache_readonly_verify_twice)
{
	struct cache_opts	 o = { 0 };
	struct cache		*c = open_cache(0, 100), *r;
	struct cache_entry	 e;
	char			 key[CACHE_KEY_LEN + 1], p[512], err[512];
	int			 i;

	ck_assert_int_eq(put(c, 1, 5000), 0);
	flip_blob(c, 1, p, sizeof p);
	cache_close(c);
	mk_key(1, key);
	o.dir = check_dir;
	o.readonly = 1;
	for (i = 0; i < 2; i++) {
		ck_assert_msg(cache_open(&r, &o, err, sizeof err) == 0, "%s",
		    err);
		ck_assert_int_eq(cache_get(r, key, CACHE_GET_DATA, &e),
		    CACHE_ECORRUPT);
		cache_entry_release(&e);
		ck_assert_int_eq(access(p, F_OK), 0);
		ck_assert_uint_eq(count_files("quarantine"), 0);
		cache_close(r);
	}
}
END_TEST

CHECK_TEST(recovery, test_cache_leftover_temps_removed)
{
	struct cache	*c = open_cache(0, 0);
	char		 p[300];
	FILE		*f;

	cache_close(c);
	snprintf(p, sizeof p, "%s/tmp/abc.1.1.tmp", check_dir);
	f = fopen(p, "w");
	fputs("half", f);
	fclose(f);
	ck_assert_uint_eq(count_files("tmp"), 1);
	c = open_cache(0, 0);
	ck_assert_uint_eq(count_files("tmp"), 0);
	cache_close(c);
}
END_TEST

CHECK_TEST(recovery, test_cache_check_after_open_sets_aside)
{
	struct cache_opts	 o;
	struct cache_stats	 st;
	struct cache		*c = open_cache(0, 0);
	char			 err[512], p[300], junk[4096];
	unsigned		 i;
	FILE			*f;

	for (i = 0; i < 200; i++)
		ck_assert_int_eq(put(c, i, 300), 0);
	cache_close(c);
	snprintf(p, sizeof p, "%s/index.db", check_dir);
	memset(junk, 0xa5, sizeof junk);
	f = fopen(p, "r+");
	for (i = 1; i < 6; i++) {
		fseek(f, 4096L * i, SEEK_SET);
		fwrite(junk, 1, sizeof junk, f);
	}
	fclose(f);
	opts_cpu(&o, check_dir);
	o.recover = 1;
	o.defer_check = 1;
	ck_assert_msg(cache_open(&c, &o, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(cache_check(c), CACHE_ECORRUPT);
	cache_stats_get(c, &st);
	ck_assert_uint_eq(st.recovered, 1);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_int_eq(put(c, 1, 10), 0);
	ck_assert_int_eq(get(c, 1, CACHE_GET_DATA), 0);
	ck_assert_int_eq(cache_check(c), 0);
	cache_close(c);
}
END_TEST

CHECK_TEST(recovery, test_cache_schema_1_rows_dropped)
{
	struct cache		*c = open_cache(0, 100);
	struct cache_stats	 st;
	sqlite3			*db;
	sqlite3_stmt		*q;
	unsigned		 dirs;
	char			 p[300];

	ck_assert_int_eq(put(c, 1, 5000), 0);
	ck_assert_int_eq(put(c, 2, 50), 0);
	ck_assert_uint_eq(count_blobs(&dirs), 1);
	cache_close(c);
	/* Make it a version 1 cache: its spec table and version, without
	 * what version 3 added. */
	snprintf(p, sizeof p, "%s/index.db", check_dir);
	ck_assert_int_eq(sqlite3_open(p, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "DROP INDEX neff_pinned_by;"
	    "ALTER TABLE neff DROP COLUMN pinned_by;"
	    "ALTER TABLE neff DROP COLUMN owner;", NULL, NULL, NULL),
	    SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE spec (spec_key TEXT"
	    " PRIMARY KEY NOT NULL, neff_key TEXT NOT NULL, kernel TEXT, "
	    "signature TEXT, created REAL, last_used REAL);"
	    "INSERT INTO spec VALUES ('victim', 'x', '', '', 0, 0);"
	    "PRAGMA user_version = 1", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	c = open_cache(0, 100);
	cache_stats_get(c, &st);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.bytes, 0);
	ck_assert_int_eq(get(c, 1, 0), CACHE_ENOENT);
	ck_assert_int_eq(get(c, 2, 0), CACHE_ENOENT);
	ck_assert_uint_eq(count_blobs(&dirs), 0);
	ck_assert_uint_eq(dirs, 0);
	cache_close(c);
	ck_assert_int_eq(sqlite3_open(p, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM "
	    "sqlite_schema WHERE name = 'spec'", -1, &q, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	ck_assert_int_eq(sqlite3_column_int(q, 0), 0);
	sqlite3_finalize(q);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q,
	    NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	ck_assert_int_eq(sqlite3_column_int(q, 0), CACHE_SCHEMA_VERSION);
	sqlite3_finalize(q);
	sqlite3_close(db);
}
END_TEST

/* Version 2 (no pinned_by, no owner) becomes 3: rows kept, a pinned one
 * counted against nobody's quota (owners: check_cache_owner.c). */
CHECK_TEST(recovery, test_cache_schema_2_gains_pinned_by)
{
	struct cache	*c = open_cache(0, 100);
	sqlite3		*db;
	char		 p[300], key[CACHE_KEY_LEN + 1];
	uint64_t	 used;

	ck_assert_int_eq(put(c, 1, 50), 0);
	mk_key(1, key);
	ck_assert_int_eq(cache_pin(c, key, 1), 0);
	cache_close(c);
	snprintf(p, sizeof p, "%s/index.db", check_dir);
	ck_assert_int_eq(sqlite3_open(p, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "DROP INDEX neff_pinned_by;"
	    "ALTER TABLE neff DROP COLUMN pinned_by;"
	    "ALTER TABLE neff DROP COLUMN owner;"
	    "PRAGMA user_version = 2", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	c = open_cache(0, 100);
	ck_assert_int_eq(get(c, 1, 0), 0);
	ck_assert_int_eq(put(c, 2, 60), 0);
	mk_key(2, key);
	ck_assert_int_eq(cache_pin_by(c, key, 1, 1000, 60, &used), 0);
	ck_assert_uint_eq(used, 60);
	cache_close(c);
}
END_TEST

/* Pins count against the pinning uid's quota: over it, nothing changes;
 * pinned again, not counted twice; unpinned, freed; another uid and
 * CACHE_PIN_ANYONE are not limited by it. */
CHECK_TEST(limits, test_cache_pin_quota_per_uid)
{
	struct cache	*c = open_cache(0, 100);
	char		 k[5][CACHE_KEY_LEN + 1];
	uint64_t	 used;
	unsigned	 i;

	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(put(c, 10 + i, 400), 0);
		mk_key(10 + i, k[i]);
	}
	ck_assert_int_eq(cache_pin_by(c, k[0], 1, 1000, 1000, &used), 0);
	ck_assert_uint_eq(used, 400);
	ck_assert_int_eq(cache_pin_by(c, k[1], 1, 1000, 1000, &used), 0);
	ck_assert_uint_eq(used, 800);
	ck_assert_int_eq(cache_pin_by(c, k[2], 1, 1000, 1000, &used),
	    CACHE_EQUOTA);
	ck_assert_uint_eq(used, 1200);
	ck_assert_int_eq(cache_pin_by(c, k[1], 1, 1000, 1000, &used), 0);
	ck_assert_int_eq(cache_pin_by(c, k[2], 1, 1001, 1000, &used), 0);
	ck_assert_int_eq(cache_pin_by(c, k[3], 1, CACHE_PIN_ANYONE, 0, NULL),
	    0);
	ck_assert_int_eq(cache_pin_by(c, k[0], 0, 1000, 1000, NULL), 0);
	ck_assert_int_eq(cache_pin_by(c, k[4], 1, 1000, 1000, &used), 0);
	ck_assert_uint_eq(used, 800);
	/* Replaced by a store: still pinned, still uid 1000's. */
	ck_assert_int_eq(put(c, 14, 400), 0);
	ck_assert_int_eq(cache_pin_by(c, k[0], 1, 1000, 1000, &used),
	    CACHE_EQUOTA);
	ck_assert_int_eq(cache_pin_by(c, "nope", 1, 1000, 1000, NULL),
	    CACHE_EINVAL);
	cache_close(c);
}
END_TEST

/* ------------------------------------------------------------ figures */

static int
cmp_double(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return ((x > y) - (x < y));
}

/*
 * Time 200 hits (read + verify + touch) on keys key(i) of c into t, sorted:
 * t[100] is the median, t[198] the 99th percentile.
 */
static void
hits_time(struct cache *c, double *t, unsigned (*key)(unsigned, unsigned),
    unsigned n)
{
	double		t0;
	unsigned	i;

	for (i = 0; i < 200; i++) {
		t0 = check_now_s();
		ck_assert_int_eq(get(c, key(i, n), CACHE_GET_DATA |
		    CACHE_GET_TOUCH), 0);
		t[i] = (check_now_s() - t0) * 1e6;
	}
	qsort(t, 200, sizeof t[0], cmp_double);
}

/* Keys 1000 to 1049 in turn. */
static unsigned
key_cycle50(unsigned i, unsigned n)
{
	return (1000 + i % 50);
}

/* Keys spread over 0 to n - 1. */
static unsigned
key_spread(unsigned i, unsigned n)
{
	return ((i * 7919) % n);
}

/*
 * The median hit time of 50 blobs of size bytes in a fresh cache whose
 * inline threshold is inline_max.
 */
static double
hit_p50(size_t size, size_t inline_max)
{
	struct cache	*c = open_cache(0, inline_max);
	double		 t[200];
	unsigned	 i;

	for (i = 0; i < 50; i++)
		ck_assert_int_eq(put(c, 1000 + i, size), 0);
	hits_time(c, t, key_cycle50, 0);
	cache_close(c);
	check_dir_teardown();
	check_dir_setup();
	return (t[100]);
}

/* NKID_CACHE_FIGURES=1: the measurements quoted in docs/cache.md. */
CHECK_TEST(limits, test_cache_figures)
{
	static const size_t	 sizes[] = { 4096, 16384, 32768, 49152, 65536, 262144,
				    1048576 };
	struct cache		*c;
	double			 t[200], t0;
	unsigned		 i, k, n;
	char			*env = getenv("NKID_CACHE_FIGURES");

	if (env == NULL)
		return;
	/* Inline threshold: hit (read + SHA-256) inline versus file. */
	for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
		printf("blob %7zu bytes: hit p50 inline %7.1f us, file %7.1f "
		    "us\n", sizes[k], hit_p50(sizes[k], 2 * 1048576),
		    hit_p50(sizes[k], 1));
	/* 100,000 entries: open time and lookup p99. */
	n = (unsigned)strtoul(env, NULL, 10) > 1 ? (unsigned)strtoul(env,
	    NULL, 10) : 100000;
	c = open_cache(0, 0);
	t0 = check_now_s();
	for (i = 0; i < n; i++)
		ck_assert_int_eq(put(c, i, 600 + i % 1024), 0);
	printf("generated %u entries in %.1f s\n", n, check_now_s() - t0);
	cache_close(c);
	t0 = check_now_s();
	c = open_cache(0, 0);
	printf("open with %u entries (quick_check included): %.1f ms\n", n,
	    (check_now_s() - t0) * 1e3);
	hits_time(c, t, key_spread, n);
	printf("lookup (read + verify + touch): p50 %.1f us, p99 %.1f us\n",
	    t[100], t[198]);
	cache_close(c);
}
END_TEST
