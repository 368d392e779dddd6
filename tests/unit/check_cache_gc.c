/* check_cache_gc.c: unit tests of the cache's garbage collection (cache_gc.c): old temporaries, quarantined files, orphan blob files, failed entries on request; live entries and fresh files kept. */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "cache/cache.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("cache_gc", check_dir_setup, check_dir_teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(errors, 0);

static struct cache *
open_cache(int readonly)
{
	struct cache_opts	 o;
	struct cache		*c;
	char			 err[512];

	memset(&o, 0, sizeof o);
	o.dir = check_dir;
	o.backend = "cpu";
	o.compiler_version = "sim nkir/1";
	o.inline_max = 100;
	o.readonly = readonly;
	ck_assert_msg(cache_open(&c, &o, err, sizeof err) == 0, "%s", err);
	return (c);
}

/* A file of a few bytes at dir/sub/name (sub made), an hour old when
 * old. */
static void
mkfile(const char *sub, const char *name, int old, char *p, size_t len)
{
	struct timespec	ts[2];
	char		d[256];
	int		fd;

	snprintf(d, sizeof d, "%s/%s", check_dir, sub);
	(void)mkdir(d, 0700);
	snprintf(p, len, "%s/%s", d, name);
	ck_assert_int_ge(fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600), 0);
	ck_assert_int_eq(write(fd, "junk", 4), 4);
	if (old) {
		clock_gettime(CLOCK_REALTIME, &ts[0]);
		ts[0].tv_sec -= 3600;
		ts[1] = ts[0];
		ck_assert_int_eq(futimens(fd, ts), 0);
	}
	close(fd);
}

static void
put(struct cache *c, const char *name, size_t len, int failed, char *key)
{
	struct cache_entry	 e = { 0 };
	char			*b = calloc(1, len + 1);

	cache_digest_hex(name, strlen(name), key);
	memcpy(e.key, key, CACHE_KEY_LEN + 1);
	e.kernel = (char *)name;
	e.format = "nkir/1";
	e.data = b;
	e.len = len;
	e.failed = failed;
	e.log = failed ? "refused" : NULL;
	ck_assert_int_eq(cache_put(c, &e), 0);
	free(b);
}

CHECK_TEST(core, test_cache_gc_removes_leftovers_keeps_entries)
{
	struct cache		*c = open_cache(0);
	struct cache_gc_result	 r;
	struct cache_entry	 e;
	char			 live[CACHE_KEY_LEN + 1];
	char			 bad[CACHE_KEY_LEN + 1];
	char			 orphan[512], fresh[512], tmp[512], q[512];
	char			 name[CACHE_KEY_LEN + 1];

	put(c, "live", 5000, 0, live);		/* a blob file */
	put(c, "bad", 0, 1, bad);		/* a cached failure */
	cache_digest_hex("nobody", 6, name);
	mkfile("blobs/aa", name, 1, orphan, sizeof orphan);
	cache_digest_hex("young", 5, name);
	mkfile("blobs/aa", name, 0, fresh, sizeof fresh);
	mkfile("tmp", "t.1", 1, tmp, sizeof tmp);
	mkfile("quarantine", "q.1", 0, q, sizeof q);

	ck_assert_int_eq(cache_gc(c, 60, 1, &r), 0);
	ck_assert_uint_eq(r.orphans, 1);
	ck_assert_uint_eq(r.temps, 1);
	ck_assert_uint_eq(r.quarantined, 1);
	ck_assert_uint_eq(r.failed, 1);
	ck_assert_int_eq(access(orphan, F_OK), -1);
	ck_assert_int_eq(access(tmp, F_OK), -1);
	ck_assert_int_eq(access(q, F_OK), -1);
	/* Younger than min_age_s: a store may be writing it. */
	ck_assert_int_eq(access(fresh, F_OK), 0);
	ck_assert_int_eq(cache_get(c, live, CACHE_GET_DATA, &e), 0);
	cache_entry_release(&e);
	ck_assert_int_eq(cache_get(c, bad, 0, NULL), CACHE_ENOENT);
	cache_close(c);
}
END_TEST

CHECK_TEST(core, test_cache_gc_keeps_failures_unless_asked)
{
	struct cache		*c = open_cache(0);
	struct cache_gc_result	 r;
	char			 bad[CACHE_KEY_LEN + 1];

	put(c, "bad", 0, 1, bad);
	ck_assert_int_eq(cache_gc(c, 0, 0, &r), 0);
	ck_assert_uint_eq(r.failed, 0);
	ck_assert_int_eq(cache_get(c, bad, 0, NULL), CACHE_EFAILED);
	cache_close(c);
}
END_TEST

CHECK_TEST(errors, test_cache_gc_readonly_refused)
{
	struct cache		*c = open_cache(0);
	struct cache_gc_result	 r;
	char			 orphan[512], name[CACHE_KEY_LEN + 1];

	cache_close(c);
	cache_digest_hex("nobody", 6, name);
	mkfile("blobs/aa", name, 1, orphan, sizeof orphan);
	c = open_cache(1);
	ck_assert_int_eq(cache_gc(c, 0, 1, &r), CACHE_EREADONLY);
	ck_assert_int_eq(access(orphan, F_OK), 0);
	cache_close(c);
}
END_TEST
