/* check_cache_owner.c: unit tests of whose each cache entry is (schema 3's owner): stored, kept, migrated from version 2, and what a viewer sees of lists, bundles and CacheVerify. */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>

#include "cache/cache.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("cache_owner", check_dir_setup, check_dir_teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(recovery, 0);

static struct cache *
owner_open(const char *dir)
{
	struct cache_opts	 o;
	struct cache		*c;
	char			 err[512];

	memset(&o, 0, sizeof o);
	o.dir = dir;
	o.backend = "cpu";
	o.compiler_version = "sim nkir/1";
	o.recover = 1;
	ck_assert_msg(cache_open(&c, &o, err, sizeof err) == 0, "%s", err);
	return (c);
}

static void
owner_key(unsigned i, char *key)
{
	char	s[32];

	snprintf(s, sizeof s, "owned-%u", i);
	cache_digest_hex(s, strlen(s), key);
}

/* Store entry i (a small blob) as owner's; its key into key. */
static void
owner_put(struct cache *c, unsigned i, int64_t owner, char *key)
{
	struct cache_entry	e = { 0 };
	char			blob[64];

	snprintf(blob, sizeof blob, "neff of %u", i);
	owner_key(i, e.key);
	e.kernel = "k";
	e.format = "nkir/1";
	e.data = blob;
	e.len = strlen(blob);
	e.owner = owner;
	ck_assert_int_eq(cache_put(c, &e), 0);
	if (key != NULL)
		memcpy(key, e.key, sizeof e.key);
}

static int64_t
owner_of(struct cache *c, const char *key)
{
	struct cache_entry	e;
	int64_t			o;

	ck_assert_int_eq(cache_get(c, key, 0, &e), 0);
	o = e.owner;
	cache_entry_release(&e);
	return (o);
}

struct owner_seen {
	int64_t		viewer;
	unsigned	n;
};

static int
owner_list_cb(void *arg, const struct cache_entry *e)
{
	struct owner_seen	*s = arg;

	s->n += cache_entry_visible(e, s->viewer);
	return (0);
}

static unsigned
owner_seen(struct cache *c, int64_t viewer)
{
	struct owner_seen	s = { viewer, 0 };

	ck_assert_int_eq(cache_list(c, NULL, 0, owner_list_cb, &s), 0);
	return (s.n);
}

static int
owner_write_cb(void *arg, const void *p, size_t n)
{
	return (write(*(int *)arg, p, n) == (ssize_t)n ? 0 : -1);
}

/* An entry is its storer's; replaced (a failure compiled again), it stays
 * the first known owner's; one of nobody known becomes the storer's. */
CHECK_TEST(core, test_cache_owner_stored_and_kept)
{
	struct cache	*c = owner_open(check_dir);
	char		 k1[CACHE_KEY_LEN + 1], k2[CACHE_KEY_LEN + 1];

	owner_put(c, 1, 1000, k1);
	ck_assert_int_eq(owner_of(c, k1), 1000);
	owner_put(c, 1, 2000, NULL);
	ck_assert_int_eq(owner_of(c, k1), 1000);
	owner_put(c, 2, CACHE_OWNER_NONE, k2);
	ck_assert_int_eq(owner_of(c, k2), CACHE_OWNER_NONE);
	owner_put(c, 2, 3000, NULL);
	ck_assert_int_eq(owner_of(c, k2), 3000);
	cache_close(c);
	/* And after a reopen. */
	c = owner_open(check_dir);
	ck_assert_int_eq(owner_of(c, k1), 1000);
	cache_close(c);
}
END_TEST

/* A viewer sees what it stored and what is pinned by nobody in
 * particular (an administrator); CACHE_VIEW_ALL sees everything; a pin
 * by a uid shows an entry to nobody else. */
CHECK_TEST(core, test_cache_owner_visibility)
{
	struct cache	*c = owner_open(check_dir);
	char		 k[4][CACHE_KEY_LEN + 1];

	owner_put(c, 1, 1000, k[0]);
	owner_put(c, 2, 2000, k[1]);
	owner_put(c, 3, 2000, k[2]);
	owner_put(c, 4, CACHE_OWNER_NONE, k[3]);
	ck_assert_uint_eq(owner_seen(c, CACHE_VIEW_ALL), 4);
	ck_assert_uint_eq(owner_seen(c, 1000), 1);
	ck_assert_uint_eq(owner_seen(c, 2000), 2);
	ck_assert_uint_eq(owner_seen(c, 0), 0);
	/* uid 2000 pins its own: still its own. */
	ck_assert_int_eq(cache_pin_by(c, k[1], 1, 2000, UINT64_MAX, NULL), 0);
	ck_assert_uint_eq(owner_seen(c, 1000), 1);
	/* An administrator pins one: everyone's. */
	ck_assert_int_eq(cache_pin_by(c, k[2], 1, CACHE_PIN_ANYONE,
	    UINT64_MAX, NULL), 0);
	ck_assert_uint_eq(owner_seen(c, 1000), 2);
	ck_assert_uint_eq(owner_seen(c, 4242), 1);
	ck_assert_int_eq(cache_pin(c, k[2], 0), 0);
	ck_assert_uint_eq(owner_seen(c, 1000), 1);
	cache_close(c);
}
END_TEST

/* Named keys of another's entry are missing in export's words for a key
 * nkid lacks; a whole export carries only what the viewer sees; an import
 * makes the entries the importer's, a bundle's pin everyone's. */
CHECK_TEST(core, test_cache_owner_bundles)
{
	struct cache	*c = owner_open(check_dir), *d;
	char		 k[3][CACHE_KEY_LEN + 1], absent[CACHE_KEY_LEN + 1];
	char		 path[300], other[300], err[512], err2[512];
	const char	*one[1];
	unsigned	 n, imp, skip;
	int		 fd;

	owner_put(c, 1, 1000, k[0]);
	owner_put(c, 2, 2000, k[1]);
	owner_put(c, 3, 2000, k[2]);
	ck_assert_int_eq(cache_pin_by(c, k[2], 1, CACHE_PIN_ANYONE,
	    UINT64_MAX, NULL), 0);
	snprintf(path, sizeof path, "%s/b.nkb", check_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(cache_bundle_export(c, 1000, NULL, 0, 0,
	    owner_write_cb, &fd, &n, err, sizeof err), 0);
	close(fd);
	ck_assert_uint_eq(n, 2);

	/* Refused before a byte is written: fd closed already. */
	one[0] = k[1];
	ck_assert_int_eq(cache_bundle_export(c, 1000, one, 1, 0,
	    owner_write_cb, &fd, &n, err, sizeof err), CACHE_ENOENT);
	owner_key(99, absent);
	one[0] = absent;
	ck_assert_int_eq(cache_bundle_export(c, 1000, one, 1, 0,
	    owner_write_cb, &fd, &n, err2, sizeof err2), CACHE_ENOENT);
	/* The same words but the key. */
	ck_assert_ptr_nonnull(strstr(err, k[1]));
	ck_assert_int_eq(strncmp(err, err2, strstr(err, k[1]) - err), 0);
	snprintf(other, sizeof other, "%s/mine.nkb", check_dir);
	fd = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	one[0] = k[1];
	ck_assert_int_eq(cache_bundle_export(c, 2000, one, 1, 0,
	    owner_write_cb, &fd, &n, err, sizeof err), 0);
	close(fd);
	ck_assert_uint_eq(n, 1);
	cache_close(c);

	snprintf(other, sizeof other, "%s/other", check_dir);
	ck_assert_int_eq(mkdir(other, 0700), 0);
	d = owner_open(other);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(cache_bundle_import_fd(d, fd, "b", 3000, NULL, &imp,
	    &skip, err, sizeof err), 0);
	close(fd);
	ck_assert_uint_eq(imp, 2);
	ck_assert_int_eq(owner_of(d, k[0]), 3000);
	ck_assert_int_eq(owner_of(d, k[2]), 3000);
	ck_assert_uint_eq(owner_seen(d, 3000), 2);
	ck_assert_uint_eq(owner_seen(d, 1000), 1);	/* the pinned one */
	cache_close(d);
}
END_TEST

/* CacheVerify for a viewer: every entry means its own; a key of
 * another's is missing in a real miss's words, unless the viewer proved
 * it (a key derived from its own IR digest). */
CHECK_TEST(core, test_cache_owner_verify_filtered)
{
	struct cache		*c = owner_open(check_dir);
	struct cache_verify	 v = { NULL, 0, 1, 1000 };
	char			 k[2][CACHE_KEY_LEN + 1];
	char			 absent[CACHE_KEY_LEN + 1];

	owner_put(c, 1, 1000, k[0]);
	owner_put(c, 2, 2000, k[1]);
	ck_assert_int_eq(cache_verify_run(c, &v, CACHE_VERIFY_ALL, NULL), 0);
	ck_assert_uint_eq(v.n, 1);
	ck_assert_str_eq(v.items[0].key, k[0]);
	cache_verify_release(&v);

	owner_key(99, absent);
	cache_verify_add(&v, k[1], NULL);
	cache_verify_add(&v, absent, NULL);
	cache_verify_add(&v, k[1], NULL)->proven = 1;
	ck_assert_int_eq(cache_verify_run(c, &v, 0, NULL), 0);
	ck_assert_int_eq(v.items[0].state, CACHE_VERIFY_MISSING);
	ck_assert_int_eq(v.items[1].state, CACHE_VERIFY_MISSING);
	ck_assert_str_eq(v.items[0].message, v.items[1].message);
	ck_assert_str_eq(v.items[0].kernel, v.items[1].kernel);
	ck_assert_int_eq(v.items[2].state, CACHE_VERIFY_OK);
	cache_verify_release(&v);
	cache_close(c);
}
END_TEST

/* A version 3 of a development build before owner joined it gains the
 * column at a read-write open (its rows nobody's known); read-only, it
 * is refused, not misread. */
CHECK_TEST(recovery, test_cache_owner_added_to_early_3)
{
	struct cache		*c = owner_open(check_dir);
	struct cache_opts	 o;
	sqlite3			*db;
	char			 p[300], k[CACHE_KEY_LEN + 1], err[512];

	owner_put(c, 1, 1000, k);
	cache_close(c);
	snprintf(p, sizeof p, "%s/index.db", check_dir);
	ck_assert_int_eq(sqlite3_open(p, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "ALTER TABLE neff DROP COLUMN owner",
	    NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	memset(&o, 0, sizeof o);
	o.dir = check_dir;
	o.readonly = 1;
	ck_assert_int_eq(cache_open(&c, &o, err, sizeof err),
	    CACHE_EREADONLY);
	ck_assert_ptr_nonnull(strstr(err, "owner column"));
	c = owner_open(check_dir);
	ck_assert_int_eq(owner_of(c, k), CACHE_OWNER_NONE);
	cache_close(c);
}
END_TEST

/* A database of schema 2 (no pinned_by, no owner) migrates: its rows are
 * nobody's known (administrators see them), new stores are their
 * storer's. */
CHECK_TEST(recovery, test_cache_owner_schema_2_migrates)
{
	struct cache	*c = owner_open(check_dir);
	sqlite3		*db;
	char		 p[300], k[2][CACHE_KEY_LEN + 1];
	int		 v = 0;

	owner_put(c, 1, 1000, k[0]);
	cache_close(c);
	snprintf(p, sizeof p, "%s/index.db", check_dir);
	ck_assert_int_eq(sqlite3_open(p, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "DROP INDEX neff_pinned_by;"
	    "ALTER TABLE neff DROP COLUMN pinned_by;"
	    "ALTER TABLE neff DROP COLUMN owner;"
	    "PRAGMA user_version = 2", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	c = owner_open(check_dir);
	ck_assert_int_eq(owner_of(c, k[0]), CACHE_OWNER_NONE);
	ck_assert_uint_eq(owner_seen(c, 1000), 0);
	ck_assert_uint_eq(owner_seen(c, CACHE_VIEW_ALL), 1);
	owner_put(c, 2, 1000, k[1]);
	ck_assert_int_eq(owner_of(c, k[1]), 1000);
	cache_close(c);
	ck_assert_int_eq(sqlite3_open(p, &db), SQLITE_OK);
	{
		sqlite3_stmt *st;

		ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA user_version",
		    -1, &st, NULL), SQLITE_OK);
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		v = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	ck_assert_int_eq(v, CACHE_SCHEMA_VERSION);
}
END_TEST
