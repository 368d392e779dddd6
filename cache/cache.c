/* cache.c: the SQLite index of the NEFF cache: open and recovery, get, put, eviction, pins (the schema and its migrations: cache_schema.c; garbage collection: cache_gc.c). */
#include <sys/stat.h>
#include <sys/time.h>

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache_impl.h"

static const char *cache_errs[] = {
	"success",
	"no such entry",
	"stored blob does not match its digest",
	"no space left on device",
	"does not fit in the cache budget (cache.max_bytes)",
	"i/o error",
	"database error",
	"invalid argument",
	"malformed or hostile bundle",
	"entry of another backend or compiler version",
	"compile failure cached",
	"cache opened read-only",
	"over the pin quota of its uid",
};

const char *
cache_strerror(int err)
{
	if (err > 0 || -err >= (int)(sizeof cache_errs / sizeof cache_errs[0]))
		return ("unknown error");
	return (cache_errs[-err]);
}

void
cache_logf(struct cache *c, int level, const char *fmt, ...)
{
	char	buf[1024];
	va_list	ap;

	if (c->log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	c->log(c->log_arg, level, buf);
}

static double
cache_now(void)
{
	struct timeval	tv;

	gettimeofday(&tv, NULL);
	return ((double)tv.tv_sec + (double)tv.tv_usec / 1e6);
}

/* The cache_err of each SQLite primary result code; CACHE_EDB for the
 * others. */
static const struct cache_sqlite_err {
	int	sqlite;
	int	err;
} cache_sqlite_errs[] = {
	{ SQLITE_OK, CACHE_OK },
	{ SQLITE_DONE, CACHE_OK },
	{ SQLITE_ROW, CACHE_OK },
	{ SQLITE_FULL, CACHE_ENOSPC },
	{ SQLITE_IOERR, CACHE_EIO },
	{ SQLITE_READONLY, CACHE_EREADONLY },
	{ SQLITE_CORRUPT, CACHE_ECORRUPT },
	{ SQLITE_NOTADB, CACHE_ECORRUPT },
};

int
cache_sqlite_err(int rc)
{
	size_t	i;

	for (i = 0; i < sizeof cache_sqlite_errs / sizeof cache_sqlite_errs[0];
	    i++)
		if (cache_sqlite_errs[i].sqlite == (rc & 0xff))
			return (cache_sqlite_errs[i].err);
	return (CACHE_EDB);
}

int
cache_exec(struct cache *c, const char *sql)
{
	char	*msg = NULL;
	int	 rc;

	if ((rc = sqlite3_exec(c->db, sql, NULL, NULL, &msg)) != SQLITE_OK) {
		cache_logf(c, CACHE_LOG_DEBUG, "cache: '%.60s': %s", sql,
		    msg != NULL ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
	}
	return (rc);
}

static sqlite3_stmt *
cache_stmt(struct cache *c, enum cache_stmt s)
{
	sqlite3_stmt	*st = c->stmt[s];

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return (st);
}

static char *
cache_strdup(const char *s)
{
	char	*p = strdup(s != NULL ? s : "");

	if (p == NULL)
		abort();
	return (p);
}

static char *
cache_path(const char *dir, const char *name)
{
	char	*p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	return (p);
}

static int
cache_meta_put_u64(struct cache *c, const char *name, uint64_t v)
{
	sqlite3_stmt	*st = cache_stmt(c, CST_META_PUT);
	char		 buf[32];

	snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, buf, -1, SQLITE_TRANSIENT);
	return (sqlite3_step(st) == SQLITE_DONE ? 0 : CACHE_EDB);
}

static int
cache_meta_put_str(struct cache *c, const char *name, const char *v)
{
	sqlite3_stmt	*st = cache_stmt(c, CST_META_PUT);

	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, v, -1, SQLITE_TRANSIENT);
	return (sqlite3_step(st) == SQLITE_DONE ? 0 : CACHE_EDB);
}

/* The totals as kept by the running process, into the meta table. */
int
cache_totals_save(struct cache *c)
{
	if (cache_meta_put_u64(c, "entries", CACHE_ST(c, entries)) != 0 ||
	    cache_meta_put_u64(c, "bytes", CACHE_ST(c, bytes)) != 0)
		return (CACHE_EDB);
	return (0);
}

static int
cache_meta_get(struct cache *c, const char *name, char *buf, size_t len)
{
	sqlite3_stmt	*st;
	int		 rc = CACHE_ENOENT;

	if (sqlite3_prepare_v2(c->db, "SELECT value FROM meta WHERE name = ?1",
	    -1, &st, NULL) != SQLITE_OK)
		return (CACHE_EDB);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st,
		    0));
		rc = 0;
	}
	sqlite3_finalize(st);
	return (rc);
}

/* Remove what a crash left in tmp/: its files (and links, never what
 * they point to), tmp/ itself never followed if it is a link. */
static void
cache_tmp_clean(struct cache *c)
{
	char		 path[PATH_MAX];
	struct dirent	*de;
	struct stat	 sb;
	DIR		*dp;
	unsigned	 n = 0;
	int		 fd;

	snprintf(path, sizeof path, "%s/tmp", c->dir);
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		if (errno != ENOENT)
			cache_logf(c, CACHE_LOG_WARN, "cache: temp files not "
			    "removed: cannot open '%s': %s", path,
			    errno == ELOOP || errno == ENOTDIR ?
			    "not a directory (a symbolic link?)" :
			    strerror(errno));
		return;
	}
	if ((dp = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(dp)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(dp), de->d_name, &sb,
		    AT_SYMLINK_NOFOLLOW) == -1 || S_ISDIR(sb.st_mode))
			continue;
		if (unlinkat(dirfd(dp), de->d_name, 0) == 0)
			n++;
	}
	closedir(dp);
	if (n > 0)
		cache_logf(c, CACHE_LOG_INFO, "cache: removed %u leftover "
		    "temp file%s from '%s'", n, n == 1 ? "" : "s", path);
}

static void
cache_db_close(struct cache *c)
{
	int	i;

	for (i = 0; i < CST_COUNT; i++) {
		sqlite3_finalize(c->stmt[i]);
		c->stmt[i] = NULL;
	}
	if (c->db != NULL)
		sqlite3_close_v2(c->db);
	c->db = NULL;
}

/*
 * Open c->dbpath: pragmas, quick_check, migrations, statements, totals.
 * Returns 0 or a cache_err with err set; CACHE_ECORRUPT means the file is
 * damaged (the caller may set it aside).
 */
static int
cache_db_open(struct cache *c, char *err, size_t errlen)
{
	sqlite3_stmt	*st;
	char		 buf[64];
	const char	*v;
	int		 flags, rc, i;

	flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW | (c->readonly ?
	    SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
	if ((rc = sqlite3_open_v2(c->dbpath, &c->db, flags, NULL)) !=
	    SQLITE_OK) {
		snprintf(err, errlen, "%s", c->db != NULL ?
		    sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_extended_result_codes(c->db, 0);
	sqlite3_busy_timeout(c->db, 5000);
	if (!c->readonly && (rc = cache_exec(c, "PRAGMA journal_mode = WAL"))
	    != SQLITE_OK)
		goto fail_db;
	if ((rc = cache_exec(c, "PRAGMA synchronous = NORMAL")) != SQLITE_OK ||
	    (rc = cache_exec(c, "PRAGMA foreign_keys = OFF")) != SQLITE_OK)
		goto fail_db;

	/* quick_check: the structure of every page, without the indexes'
	 * content (that is integrity_check); O(database pages). */
	if (c->skip_check) {
		/* Still read the schema: a file that is not a database
		 * fails here, at open. */
		if ((rc = cache_exec(c, "SELECT count(*) FROM sqlite_schema"))
		    != SQLITE_OK)
			goto fail_db;
		goto checked;
	}
	if ((rc = sqlite3_prepare_v2(c->db, "PRAGMA quick_check", -1, &st,
	    NULL)) != SQLITE_OK)
		goto fail_db;
	rc = sqlite3_step(st);
	v = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
	if (rc != SQLITE_ROW || v == NULL || strcmp(v, "ok") != 0) {
		snprintf(err, errlen, "quick_check failed: %s", v != NULL ? v :
		    sqlite3_errmsg(c->db));
		sqlite3_finalize(st);
		rc = SQLITE_CORRUPT;
		goto fail;
	}
	sqlite3_finalize(st);
checked:
	if ((rc = cache_schema_migrate(c, err, errlen)) != 0)
		goto fail_code;
	for (i = 0; i < CST_COUNT; i++) {
		if ((rc = sqlite3_prepare_v3(c->db, cache_schema_sql[i], -1,
		    SQLITE_PREPARE_PERSISTENT, &c->stmt[i], NULL)) !=
		    SQLITE_OK)
			goto fail_db;
	}
	if (cache_meta_get(c, "entries", buf, sizeof buf) == 0)
		CACHE_ST_SET(c, entries, strtoull(buf, NULL, 10));
	if (cache_meta_get(c, "bytes", buf, sizeof buf) == 0)
		CACHE_ST_SET(c, bytes, strtoull(buf, NULL, 10));
	return (0);

fail_db:
	snprintf(err, errlen, "%s", sqlite3_errmsg(c->db));
fail:
	rc = cache_sqlite_err(rc);
fail_code:
	cache_db_close(c);
	return (rc);
}

/* Rename index.db and its -wal/-shm to index.db.corrupt-TIME*. */
static void
cache_db_set_aside(struct cache *c, const char *why)
{
	static const char *const sfx[] = { "", "-wal", "-shm" };
	char	from[PATH_MAX], to[PATH_MAX];
	time_t	now = time(NULL);
	size_t	i;

	for (i = 0; i < 3; i++) {
		snprintf(from, sizeof from, "%s%s", c->dbpath, sfx[i]);
		snprintf(to, sizeof to, "%s.corrupt-%lld%s", c->dbpath,
		    (long long)now, sfx[i]);
		if (rename(from, to) == -1 && errno != ENOENT)
			cache_logf(c, CACHE_LOG_ERROR, "cache: cannot rename "
			    "'%s' aside: %s", from, strerror(errno));
	}
	cache_logf(c, CACHE_LOG_ERROR, "cache: DATABASE '%s' IS DAMAGED (%s): "
	    "set aside as '%s.corrupt-%lld', starting with an empty cache",
	    c->dbpath, why, c->dbpath, (long long)now);
	CACHE_ST_ADD(c, recovered, 1);
	CACHE_ST_ADD(c, corrupt, 1);
}

/* dir/sub, made if missing; one that exists must be a directory, not a
 * symbolic link (files under it are opened by name). */
static int
cache_mkdir(const char *dir, const char *sub)
{
	char		path[PATH_MAX];
	struct stat	sb;

	snprintf(path, sizeof path, "%s/%s", dir, sub);
	if (mkdir(path, 0750) == -1 && errno != EEXIST)
		return (-1);
	if (lstat(path, &sb) == -1)
		return (-1);
	if (!S_ISDIR(sb.st_mode)) {
		errno = ENOTDIR;
		return (-1);
	}
	return (0);
}

int
cache_open(struct cache **out, const struct cache_opts *o, char *err,
    size_t errlen)
{
	struct cache	*c;
	struct stat	 sb;
	char		 why[512], buf[256];
	int		 rc;

	assert(out != NULL && o != NULL && o->dir != NULL);
	*out = NULL;
	if (stat(o->dir, &sb) == -1) {
		snprintf(err, errlen, "cannot open cache '%s': %s", o->dir,
		    strerror(errno));
		return (CACHE_EIO);
	}
	if (!S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "cannot open cache '%s': not a directory",
		    o->dir);
		return (CACHE_EIO);
	}
	if ((c = calloc(1, sizeof *c)) == NULL)
		abort();
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->holds_mu, NULL);
	c->dir = cache_strdup(o->dir);
	c->dbpath = cache_path(o->dir, "index.db");
	c->readonly = o->readonly;
	c->recover = o->recover;
	c->skip_check = o->defer_check;
	c->inline_max = o->inline_max > 0 ? o->inline_max : CACHE_INLINE_MAX;
	c->log = o->log;
	c->log_arg = o->log_arg;
	c->st.max_bytes = o->max_bytes;
	if (!c->readonly && (cache_mkdir(o->dir, "blobs") == -1 ||
	    cache_mkdir(o->dir, "tmp") == -1 ||
	    cache_mkdir(o->dir, "quarantine") == -1)) {
		snprintf(err, errlen, "cannot open cache '%s': %s", o->dir,
		    errno == ENOTDIR ? "blobs/, tmp/ or quarantine/ is not a "
		    "directory (a symbolic link?)" : strerror(errno));
		cache_close(c);
		return (errno == ENOSPC ? CACHE_ENOSPC : CACHE_EIO);
	}
	if (!c->readonly)
		cache_tmp_clean(c);

	rc = cache_db_open(c, why, sizeof why);
	if (rc == CACHE_ECORRUPT && o->recover && !c->readonly) {
		c->skip_check = 0;
		cache_db_set_aside(c, why);
		rc = cache_db_open(c, why, sizeof why);
		if (rc == 0)
			cache_meta_put_u64(c, "recoveries", 1);
	}
	if (rc != 0) {
		snprintf(err, errlen, "cannot open cache '%s': %s", c->dbpath,
		    why);
		cache_close(c);
		return (rc);
	}
	if (c->purge_blobs) {
		cache_blobs_purge(c);
		cache_logf(c, CACHE_LOG_INFO, "cache '%s': entries of schema "
		    "version 1 dropped (NEFF keys are now derived from the IR "
		    "digest)", c->dir);
	}
	if (o->backend != NULL) {
		snprintf(c->backend, sizeof c->backend, "%s", o->backend);
		snprintf(c->compiler, sizeof c->compiler, "%s",
		    o->compiler_version != NULL ? o->compiler_version : "");
		if (!c->readonly) {
			cache_meta_put_str(c, "backend", c->backend);
			cache_meta_put_str(c, "compiler_version", c->compiler);
		}
	} else {
		if (cache_meta_get(c, "backend", buf, sizeof buf) == 0)
			snprintf(c->backend, sizeof c->backend, "%.127s", buf);
		if (cache_meta_get(c, "compiler_version", buf, sizeof buf) == 0)
			snprintf(c->compiler, sizeof c->compiler, "%s", buf);
	}
	if (!c->readonly && o->max_bytes > 0)
		cache_meta_put_u64(c, "max_bytes", o->max_bytes);
	else if (o->max_bytes == 0 && cache_meta_get(c, "max_bytes", buf,
	    sizeof buf) == 0)
		c->st.max_bytes = strtoull(buf, NULL, 10);
	*out = c;
	return (0);
}

void
cache_close(struct cache *c)
{
	struct cache_hold	*h;

	if (c == NULL)
		return;
	if (c->db != NULL && !c->readonly)
		cache_exec(c, "PRAGMA optimize");
	cache_db_close(c);
	while ((h = c->holds) != NULL) {
		c->holds = h->next;
		free(h);
	}
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->holds_mu);
	free(c->dir);
	free(c->dbpath);
	free(c);
}

int
cache_check(struct cache *c)
{
	sqlite3_stmt	*st = NULL;
	sqlite3		*db = NULL;
	const char	*v = NULL;
	char		 why[512], err[512];
	int		 rc, ok;

	if (sqlite3_open_v2(c->dbpath, &db, SQLITE_OPEN_READONLY |
	    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return (0);	/* cannot tell: the next start checks */
	}
	sqlite3_busy_timeout(db, 5000);
	rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
		v = (const char *)sqlite3_column_text(st, 0);
	ok = v != NULL && strcmp(v, "ok") == 0;
	snprintf(why, sizeof why, "quick_check failed: %s", v != NULL ? v :
	    sqlite3_errmsg(db));
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (ok || (rc != SQLITE_ROW && (rc & 0xff) != SQLITE_CORRUPT &&
	    (rc & 0xff) != SQLITE_NOTADB))
		return (0);
	if (!c->recover || c->readonly) {
		cache_logf(c, CACHE_LOG_ERROR, "cache: database '%s' is "
		    "damaged: %s", c->dbpath, why);
		return (CACHE_ECORRUPT);
	}
	pthread_mutex_lock(&c->mu);
	cache_db_close(c);
	cache_db_set_aside(c, why);
	CACHE_ST_SET(c, entries, 0);
	CACHE_ST_SET(c, bytes, 0);
	c->skip_check = 0;
	if (cache_db_open(c, err, sizeof err) != 0)
		cache_logf(c, CACHE_LOG_ERROR, "cache: cannot recreate '%s': "
		    "%s", c->dbpath, err);
	else {
		cache_meta_put_u64(c, "recoveries", 1);
		cache_meta_put_str(c, "backend", c->backend);
		cache_meta_put_str(c, "compiler_version", c->compiler);
	}
	pthread_mutex_unlock(&c->mu);
	return (CACHE_ECORRUPT);
}

void
cache_stats_get(struct cache *c, struct cache_stats *st)
{
	st->entries = CACHE_ST(c, entries);
	st->bytes = CACHE_ST(c, bytes);
	st->max_bytes = CACHE_ST(c, max_bytes);
	st->evictions = CACHE_ST(c, evictions);
	st->corrupt = CACHE_ST(c, corrupt);
	st->recovered = CACHE_ST(c, recovered);
	st->store_errors = CACHE_ST(c, store_errors);
}

const char *
cache_backend(struct cache *c)
{
	return (c->backend);
}

const char *
cache_compiler_version(struct cache *c)
{
	return (c->compiler);
}

void
cache_fault_enospc(struct cache *c, unsigned n)
{
	__atomic_store_n(&c->fault_enospc, n, __ATOMIC_RELAXED);
}

void
cache_entry_release(struct cache_entry *e)
{
	if (e == NULL)
		return;
	free(e->kernel);
	free(e->format);
	free(e->target);
	free(e->backend);
	free(e->compiler_version);
	free(e->options);
	free(e->log);
	free(e->data);
	memset(e, 0, sizeof *e);
}

int
cache_entry_visible(const struct cache_entry *e, int64_t viewer)
{
	if (viewer == CACHE_VIEW_ALL)
		return (1);
	if (viewer >= 0 && e->owner == viewer)
		return (1);
	return (e->pinned && e->pinned_by == CACHE_PIN_ANYONE);
}

/* ------------------------------------------------------------ holds */

static struct cache_hold *
cache_hold_find(struct cache *c, const char *key)
{
	struct cache_hold	*h;

	for (h = c->holds; h != NULL; h = h->next) {
		if (strcmp(h->key, key) == 0)
			return (h);
	}
	return (NULL);
}

void
cache_hold(struct cache *c, const char *key)
{
	struct cache_hold	*h;

	pthread_mutex_lock(&c->holds_mu);
	if ((h = cache_hold_find(c, key)) == NULL) {
		if ((h = calloc(1, sizeof *h)) == NULL)
			abort();
		snprintf(h->key, sizeof h->key, "%s", key);
		h->next = c->holds;
		c->holds = h;
	}
	h->n++;
	pthread_mutex_unlock(&c->holds_mu);
}

void
cache_unhold(struct cache *c, const char *key)
{
	struct cache_hold	*h, **hp;

	pthread_mutex_lock(&c->holds_mu);
	for (hp = &c->holds; (h = *hp) != NULL; hp = &h->next) {
		if (strcmp(h->key, key) != 0)
			continue;
		if (--h->n == 0) {
			*hp = h->next;
			free(h);
		}
		break;
	}
	pthread_mutex_unlock(&c->holds_mu);
}

/* ------------------------------------------------------------ blobs */

void
cache_blob_path(struct cache *c, const char *digest, char *buf, size_t len)
{
	snprintf(buf, len, "%s/blobs/%.2s/%s", c->dir, digest, digest);
}

static int
cache_fsync_dir(const char *path)
{
	int	fd, rc;

	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return (-1);
	rc = fsync(fd);
	close(fd);
	return (rc);
}

static int
cache_errno_err(int e)
{
	return (e == ENOSPC || e == EDQUOT ? CACHE_ENOSPC : CACHE_EIO);
}

/*
 * Unlink the blob file of digest and its fan-out directory if that is
 * left empty (rmdir fails harmlessly otherwise), so failed stores on a
 * full disk leave nothing behind.
 */
static void
cache_blob_drop(struct cache *c, const char *digest)
{
	char	path[PATH_MAX];

	cache_blob_path(c, digest, path, sizeof path);
	unlink(path);
	snprintf(path, sizeof path, "%s/blobs/%.2s", c->dir, digest);
	rmdir(path);
}

int
cache_blob_write(struct cache *c, const char *digest, const void *p,
    size_t len)
{
	char		 tmp[PATH_MAX], dir[PATH_MAX], dst[PATH_MAX];
	const char	*b = p;
	size_t		 off = 0;
	unsigned	 seq, fault;
	ssize_t		 n;
	int		 fd, e, newdir = 0;

	seq = __atomic_add_fetch(&c->tmpseq, 1, __ATOMIC_RELAXED);
	snprintf(tmp, sizeof tmp, "%s/tmp/%.16s.%ld.%u.tmp", c->dir, digest,
	    (long)getpid(), seq);
	snprintf(dir, sizeof dir, "%s/blobs/%.2s", c->dir, digest);
	cache_blob_path(c, digest, dst, sizeof dst);

	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0640)) == -1)
		return (cache_errno_err(errno));
	while (off < len) {
		if ((n = write(fd, b + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		off += (size_t)n;
	}
	if (fsync(fd) == -1)
		goto fail;
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (mkdir(dir, 0750) == 0)
		newdir = 1;
	else if (errno != EEXIST)
		goto fail;
	/* Injected faults strike where a full disk does last: the entry in
	 * a new fan-out directory. */
	fault = __atomic_load_n(&c->fault_enospc, __ATOMIC_RELAXED);
	while (fault > 0 && !__atomic_compare_exchange_n(&c->fault_enospc,
	    &fault, fault - 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	if (fault > 0) {
		errno = ENOSPC;
		goto fail;
	}
	if (rename(tmp, dst) == -1)
		goto fail;
	if (cache_fsync_dir(dir) == -1)
		goto fail_dst;
	if (newdir) {
		snprintf(tmp, sizeof tmp, "%s/blobs", c->dir);
		if (cache_fsync_dir(tmp) == -1)
			goto fail_dst;
	}
	return (0);

fail_dst:
	e = errno;
	cache_blob_drop(c, digest);
	errno = e;
	return (cache_errno_err(e));
fail:
	e = errno;
	if (fd != -1)
		close(fd);
	unlink(tmp);
	if (newdir)
		rmdir(dir);
	errno = e;
	return (cache_errno_err(e));
}

void
cache_blob_unref(struct cache *c, const char *digest)
{
	sqlite3_stmt	*st = cache_stmt(c, CST_REFS);
	int		 n = 1;

	sqlite3_bind_text(st, 1, digest, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_reset(st);
	if (n == 0)
		cache_blob_drop(c, digest);
}

/* Read a blob file whole. Returns 0, CACHE_ENOENT or CACHE_EIO. */
static int
cache_blob_read(struct cache *c, const char *digest, uint64_t size,
    void **out, size_t *outlen)
{
	char		 path[PATH_MAX];
	struct stat	 sb;
	size_t		 off = 0;
	ssize_t		 n;
	char		*buf;
	int		 fd, rc = CACHE_EIO;

	cache_blob_path(c, digest, path, sizeof path);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return (errno == ENOENT ? CACHE_ENOENT : CACHE_EIO);
	if (fstat(fd, &sb) == -1 || (uint64_t)sb.st_size != size) {
		close(fd);
		return (CACHE_ECORRUPT);
	}
	if ((buf = malloc(size > 0 ? size : 1)) == NULL)
		abort();
	while (off < size) {
		if ((n = read(fd, buf + off, size - off)) <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			goto out;
		}
		off += (size_t)n;
	}
	rc = 0;
	*out = buf;
	*outlen = size;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return (rc);
}

/* ------------------------------------------------------------ rows */

static void
cache_row_fill(sqlite3_stmt *st, const char *key, struct cache_entry *e)
{
	memset(e, 0, sizeof *e);
	snprintf(e->key, sizeof e->key, "%s", key);
	e->kernel = cache_strdup((const char *)sqlite3_column_text(st, 0));
	e->format = cache_strdup((const char *)sqlite3_column_text(st, 1));
	e->target = cache_strdup((const char *)sqlite3_column_text(st, 2));
	e->backend = cache_strdup((const char *)sqlite3_column_text(st, 3));
	e->compiler_version = cache_strdup((const char *)
	    sqlite3_column_text(st, 4));
	e->options = cache_strdup((const char *)sqlite3_column_text(st, 5));
	e->size = (uint64_t)sqlite3_column_int64(st, 6);
	snprintf(e->digest, sizeof e->digest, "%s",
	    (const char *)sqlite3_column_text(st, 7));
	e->is_inline = sqlite3_column_int(st, 8);
	e->created = sqlite3_column_double(st, 9);
	e->last_used = sqlite3_column_double(st, 10);
	e->hits = (uint64_t)sqlite3_column_int64(st, 11);
	e->compile_ms = sqlite3_column_double(st, 12);
	e->pinned = sqlite3_column_int(st, 13);
	e->failed = strcmp((const char *)sqlite3_column_text(st, 14),
	    "failed") == 0;
	e->log = cache_strdup((const char *)sqlite3_column_text(st, 15));
	e->owner = sqlite3_column_int64(st, 17);
	e->pinned_by = sqlite3_column_int64(st, 18);
}

/* Delete key's row in the current transaction, keeping the totals. */
static int
cache_row_delete(struct cache *c, const char *key, uint64_t size)
{
	sqlite3_stmt	*st = cache_stmt(c, CST_DEL);

	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		return (CACHE_EDB);
	if (sqlite3_changes(c->db) > 0) {
		CACHE_ST_ADD(c, entries, -1);
		CACHE_ST_ADD(c, bytes, -size);
	}
	return (0);
}

/* Move the bad blob aside and drop key's row; locked. */
static void
cache_quarantine(struct cache *c, const struct cache_entry *e,
    const char *why)
{
	char	from[PATH_MAX], to[PATH_MAX];

	CACHE_ST_ADD(c, corrupt, 1);
	if (c->readonly) {
		/* A read-only open only reports: it changes nothing, so that
		 * a second look sees the same. */
		cache_logf(c, CACHE_LOG_WARN, "cache: entry '%s' (%s) is "
		    "corrupt: %s; left in place (the cache is open read-only)",
		    e->key, e->kernel, why);
		return;
	}
	if (!e->is_inline) {
		cache_blob_path(c, e->digest, from, sizeof from);
		snprintf(to, sizeof to, "%s/quarantine/%s.%lld", c->dir,
		    e->digest, (long long)time(NULL));
		if (rename(from, to) == -1 && errno != ENOENT)
			unlink(from);
	}
	cache_logf(c, CACHE_LOG_WARN, "cache: entry '%s' (%s) is corrupt: %s; "
	    "quarantined, it will be recompiled", e->key, e->kernel, why);
	if (cache_exec(c, "BEGIN IMMEDIATE") != SQLITE_OK)
		return;
	if (cache_row_delete(c, e->key, e->size) != 0 ||
	    cache_totals_save(c) != 0 || cache_exec(c, "COMMIT") !=
	    SQLITE_OK)
		cache_exec(c, "ROLLBACK");
}

int
cache_get(struct cache *c, const char *key, int flags, struct cache_entry *e)
{
	struct cache_entry	 tmp;
	sqlite3_stmt		*st;
	char			 digest[CACHE_KEY_LEN + 1];
	const void		*p;
	int			 rc;

	if (!cache_key_valid(key))
		return (CACHE_EINVAL);
	if (e == NULL)
		e = &tmp;
	pthread_mutex_lock(&c->mu);
	st = cache_stmt(c, CST_GET);
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
		rc = rc == SQLITE_DONE ? CACHE_ENOENT : cache_sqlite_err(rc);
		memset(e, 0, sizeof *e);
		goto out;
	}
	cache_row_fill(st, key, e);
	if (!(flags & CACHE_GET_ANY) && c->backend[0] != '\0' &&
	    (strcmp(e->backend, c->backend) != 0 ||
	    strcmp(e->compiler_version, c->compiler) != 0)) {
		rc = CACHE_ESTALE;
		goto out;
	}
	if (e->failed) {
		rc = CACHE_EFAILED;
		goto out;
	}
	if (flags & CACHE_GET_DATA) {
		if (e->is_inline) {
			e->len = (size_t)sqlite3_column_bytes(st, 16);
			p = sqlite3_column_blob(st, 16);
			if ((e->data = malloc(e->len > 0 ? e->len : 1)) == NULL)
				abort();
			if (e->len > 0)
				memcpy(e->data, p, e->len);
			rc = e->len == e->size ? 0 : CACHE_ECORRUPT;
		} else
			rc = cache_blob_read(c, e->digest, e->size, &e->data,
			    &e->len);
		sqlite3_reset(st);
		if (rc == 0) {
			cache_digest_hex(e->data, e->len, digest);
			if (strcmp(digest, e->digest) != 0)
				rc = CACHE_ECORRUPT;
		}
		if (rc == CACHE_EIO)
			goto out;
		if (rc != 0) {
			cache_quarantine(c, e, rc == CACHE_ENOENT ?
			    "its blob file is missing" :
			    "the blob does not match its digest");
			rc = CACHE_ECORRUPT;
			goto out;
		}
	}
	sqlite3_reset(st);
	if ((flags & CACHE_GET_TOUCH) && !c->readonly) {
		st = cache_stmt(c, CST_TOUCH);
		sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
		sqlite3_bind_double(st, 2, cache_now());
		if (sqlite3_step(st) == SQLITE_DONE)
			e->hits++;
		sqlite3_reset(st);
	}
	rc = 0;
out:
	sqlite3_reset(c->stmt[CST_GET]);
	pthread_mutex_unlock(&c->mu);
	if (e == &tmp || (rc != 0 && rc != CACHE_EFAILED &&
	    rc != CACHE_ESTALE))
		cache_entry_release(e);
	return (rc);
}

static void
cache_gone_add(char ***gone, size_t *n, const char *digest)
{
	*gone = realloc(*gone, (*n + 1) * sizeof **gone);
	if (*gone == NULL)
		abort();
	(*gone)[(*n)++] = cache_strdup(digest);
}

/* Evict least recently used entries until need more bytes fit; locked,
 * in a transaction. Returns 0 or CACHE_EFULL. */
int
cache_evict(struct cache *c, uint64_t need, const char *except,
    char ***gone, size_t *ngone)
{
	sqlite3_stmt	*st;
	char		 key[CACHE_KEY_LEN + 1], digest[CACHE_KEY_LEN + 1];
	uint64_t	 max = CACHE_ST(c, max_bytes), size;
	int		 progress, isin, isheld;

	if (max == 0)
		return (0);
	if (need > max)
		return (CACHE_EFULL);
	while (CACHE_ST(c, bytes) + need > max) {
		st = cache_stmt(c, CST_LRU);
		sqlite3_bind_text(st, 1, except != NULL ? except : "", -1,
		    SQLITE_STATIC);
		progress = 0;
		while (CACHE_ST(c, bytes) + need > max &&
		    sqlite3_step(st) == SQLITE_ROW) {
			snprintf(key, sizeof key, "%s",
			    (const char *)sqlite3_column_text(st, 0));
			size = (uint64_t)sqlite3_column_int64(st, 1);
			snprintf(digest, sizeof digest, "%s",
			    (const char *)sqlite3_column_text(st, 2));
			isin = sqlite3_column_int(st, 3);
			pthread_mutex_lock(&c->holds_mu);
			isheld = cache_hold_find(c, key) != NULL;
			pthread_mutex_unlock(&c->holds_mu);
			if (isheld)
				continue;
			/* Deleting under a running SELECT is fine in
			 * SQLite; the walk restarts after each batch. */
			if (cache_row_delete(c, key, size) != 0) {
				sqlite3_reset(st);
				return (CACHE_EDB);
			}
			if (!isin)
				cache_gone_add(gone, ngone, digest);
			CACHE_ST_ADD(c, evictions, 1);
			cache_logf(c, CACHE_LOG_DEBUG, "cache: evicted '%s' "
			    "(%llu bytes)", key, (unsigned long long)size);
			progress = 1;
		}
		sqlite3_reset(st);
		if (!progress)
			return (CACHE_EFULL);
	}
	return (0);
}

int
cache_row_put(struct cache *c, const struct cache_entry *e,
    const char *digest, int is_inline, char ***gone, size_t *ngone)
{
	sqlite3_stmt	*st;
	char		*kernel, *log;
	uint64_t	 old = 0, size = e->failed ? 0 : e->len;
	int		 exists = 0, pinned = e->pinned, rc;
	sqlite3_int64	 pinned_by = CACHE_PIN_ANYONE, owner = e->owner;
	double		 created = e->created > 0 ? e->created : cache_now();

	st = cache_stmt(c, CST_SIZE);
	sqlite3_bind_text(st, 1, e->key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		exists = 1;
		old = (uint64_t)sqlite3_column_int64(st, 0);
		pinned |= sqlite3_column_int(st, 1);
		if (sqlite3_column_int(st, 1))
			pinned_by = sqlite3_column_int64(st, 4);
		/* Replaced (a failure compiled again, say): still whose it
		 * was, if that is known. */
		if (sqlite3_column_int64(st, 5) != CACHE_OWNER_NONE)
			owner = sqlite3_column_int64(st, 5);
	}
	sqlite3_reset(st);
	if (exists) {
		/* Replacing: the old size leaves first. */
		CACHE_ST_ADD(c, bytes, -old);
		CACHE_ST_ADD(c, entries, -1);
	}
	if ((rc = cache_evict(c, size, e->key, gone, ngone)) != 0)
		return (rc);
	/* What is stored is listed and sent in replies: valid UTF-8, the log
	 * cut at a character boundary. */
	kernel = cache_text_clean(e->kernel ? e->kernel : "", CACHE_LOG_MAX);
	log = cache_text_clean(e->log ? e->log : "", CACHE_LOG_MAX);
	if (kernel == NULL || log == NULL)
		abort();		/* as cache_strdup */
	st = cache_stmt(c, CST_PUT);
	sqlite3_bind_text(st, 1, e->key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, kernel, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, e->format ? e->format : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, e->target ? e->target : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, e->backend ? e->backend : c->backend, -1,
	    SQLITE_STATIC);
	sqlite3_bind_text(st, 6, e->compiler_version ? e->compiler_version :
	    c->compiler, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, e->options ? e->options : "", -1,
	    SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)size);
	sqlite3_bind_text(st, 9, digest, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 10, is_inline);
	sqlite3_bind_double(st, 11, created);
	sqlite3_bind_double(st, 12, e->compile_ms);
	sqlite3_bind_int(st, 13, pinned ? 1 : 0);
	sqlite3_bind_text(st, 14, e->failed ? "failed" : "ok", -1,
	    SQLITE_STATIC);
	sqlite3_bind_text(st, 15, log, -1, SQLITE_STATIC);
	if (is_inline && !e->failed)
		sqlite3_bind_blob(st, 16, e->len > 0 ? e->data : "",
		    (int)e->len, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 16);
	sqlite3_bind_int64(st, 17, pinned_by);
	sqlite3_bind_int64(st, 18, owner);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	free(kernel);
	free(log);
	if (rc != SQLITE_DONE)
		return (cache_sqlite_err(rc));
	CACHE_ST_ADD(c, entries, 1);
	CACHE_ST_ADD(c, bytes, size);
	return (cache_totals_save(c));
}

int
cache_put(struct cache *c, const struct cache_entry *e)
{
	char		  digest[CACHE_KEY_LEN + 1];
	char		**gone = NULL;
	size_t		  ngone = 0, i;
	uint64_t	  entries0, bytes0;
	int		  is_inline, rc;

	if (!cache_key_valid(e->key) || (!e->failed && e->len > 0 &&
	    e->data == NULL) || (!e->failed && e->len > CACHE_BLOB_MAX))
		return (CACHE_EINVAL);
	if (c->readonly)
		return (CACHE_EREADONLY);
	if (e->failed) {
		cache_digest_hex("", 0, digest);
		is_inline = 1;
	} else {
		cache_digest_hex(e->data, e->len, digest);
		is_inline = e->len <= c->inline_max;
	}
	if (CACHE_ST(c, max_bytes) > 0 && !e->failed &&
	    e->len > CACHE_ST(c, max_bytes))
		return (CACHE_EFULL);
	/* The file is durable before the row names it. */
	if (!is_inline && (rc = cache_blob_write(c, digest, e->data,
	    e->len)) != 0) {
		CACHE_ST_ADD(c, store_errors, 1);
		return (rc);
	}
	pthread_mutex_lock(&c->mu);
	entries0 = CACHE_ST(c, entries);
	bytes0 = CACHE_ST(c, bytes);
	if ((rc = cache_exec(c, "BEGIN IMMEDIATE")) != SQLITE_OK) {
		rc = cache_sqlite_err(rc);
		goto fail;
	}
	if ((rc = cache_row_put(c, e, digest, is_inline, &gone, &ngone)) !=
	    0 || (rc = cache_sqlite_err(cache_exec(c, "COMMIT"))) != 0) {
		cache_exec(c, "ROLLBACK");
		for (i = 0; i < ngone; i++)
			free(gone[i]);
		free(gone);
		gone = NULL;
		ngone = 0;
		goto fail;
	}
	for (i = 0; i < ngone; i++) {
		cache_blob_unref(c, gone[i]);
		free(gone[i]);
	}
	free(gone);
	pthread_mutex_unlock(&c->mu);
	return (0);

fail:
	CACHE_ST_SET(c, entries, entries0);
	CACHE_ST_SET(c, bytes, bytes0);
	if (rc != CACHE_EFULL)
		CACHE_ST_ADD(c, store_errors, 1);
	if (!is_inline)
		cache_blob_unref(c, digest);
	pthread_mutex_unlock(&c->mu);
	return (rc);
}

int
cache_touch_batch(struct cache *c, const struct cache_touch *t, size_t n)
{
	sqlite3_stmt	*st;
	size_t		 i;
	int		 rc = 0;

	if (c->readonly)
		return (CACHE_EREADONLY);
	if (n == 0)
		return (0);
	pthread_mutex_lock(&c->mu);
	if (cache_exec(c, "BEGIN IMMEDIATE") != SQLITE_OK) {
		pthread_mutex_unlock(&c->mu);
		return (CACHE_EDB);
	}
	st = cache_stmt(c, CST_TOUCH_N);
	for (i = 0; i < n && rc == 0; i++) {
		if (!cache_key_valid(t[i].key))
			continue;
		sqlite3_bind_text(st, 1, t[i].key, -1, SQLITE_STATIC);
		sqlite3_bind_double(st, 2, t[i].last_used);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)t[i].hits);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = CACHE_EDB;
		sqlite3_reset(st);
	}
	if (rc != 0 || cache_exec(c, "COMMIT") != SQLITE_OK) {
		cache_exec(c, "ROLLBACK");
		rc = CACHE_EDB;
	}
	pthread_mutex_unlock(&c->mu);
	return (rc);
}

double
cache_time_now(void)
{
	return (cache_now());
}

int
cache_max_bytes_set(struct cache *c, uint64_t max_bytes)
{
	char	**gone = NULL;
	size_t	  ngone = 0, i;
	int	  rc = 0;

	pthread_mutex_lock(&c->mu);
	CACHE_ST_SET(c, max_bytes, max_bytes);
	if (!c->readonly && max_bytes > 0 && CACHE_ST(c, bytes) > max_bytes) {
		if (cache_exec(c, "BEGIN IMMEDIATE") != SQLITE_OK) {
			rc = CACHE_EDB;
			goto out;
		}
		rc = cache_evict(c, 0, NULL, &gone, &ngone);
		if (cache_totals_save(c) != 0 || cache_exec(c, "COMMIT") !=
		    SQLITE_OK) {
			cache_exec(c, "ROLLBACK");
			rc = CACHE_EDB;
		}
		for (i = 0; i < ngone; i++) {
			if (rc == 0 || rc == CACHE_EFULL)
				cache_blob_unref(c, gone[i]);
			free(gone[i]);
		}
		free(gone);
	}
	if (!c->readonly)
		cache_meta_put_u64(c, "max_bytes", max_bytes);
out:
	pthread_mutex_unlock(&c->mu);
	return (rc);
}

/*
 * The start of a change to key's row: key and c checked, c->mu taken,
 * statement s ready with key bound first. Returns 0 with c->mu held and
 * *stp set, or an error with nothing held.
 */
static int
cache_key_change(struct cache *c, const char *key, enum cache_stmt s,
    sqlite3_stmt **stp)
{
	if (!cache_key_valid(key))
		return (CACHE_EINVAL);
	if (c->readonly)
		return (CACHE_EREADONLY);
	pthread_mutex_lock(&c->mu);
	*stp = cache_stmt(c, s);
	sqlite3_bind_text(*stp, 1, key, -1, SQLITE_STATIC);
	return (0);
}

int
cache_remove(struct cache *c, const char *key)
{
	sqlite3_stmt	*st;
	char		 digest[CACHE_KEY_LEN + 1];
	uint64_t	 size;
	int		 rc, isin;

	if ((rc = cache_key_change(c, key, CST_GET, &st)) != 0)
		return (rc);
	if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
		sqlite3_reset(st);
		rc = rc == SQLITE_DONE ? CACHE_ENOENT : CACHE_EDB;
		goto out;
	}
	size = (uint64_t)sqlite3_column_int64(st, 6);
	snprintf(digest, sizeof digest, "%s",
	    (const char *)sqlite3_column_text(st, 7));
	isin = sqlite3_column_int(st, 8);
	sqlite3_reset(st);
	if (cache_exec(c, "BEGIN IMMEDIATE") != SQLITE_OK) {
		rc = CACHE_EDB;
		goto out;
	}
	if ((rc = cache_row_delete(c, key, size)) != 0 ||
	    (rc = cache_totals_save(c)) != 0 ||
	    (rc = cache_sqlite_err(cache_exec(c, "COMMIT"))) != 0) {
		cache_exec(c, "ROLLBACK");
		CACHE_ST_ADD(c, entries, 1);
		CACHE_ST_ADD(c, bytes, size);
		goto out;
	}
	if (!isin)
		cache_blob_unref(c, digest);
out:
	pthread_mutex_unlock(&c->mu);
	return (rc);
}

int
cache_pin(struct cache *c, const char *key, int pinned)
{
	return (cache_pin_by(c, key, pinned, CACHE_PIN_ANYONE, UINT64_MAX,
	    NULL));
}

int
cache_pin_by(struct cache *c, const char *key, int pinned, int64_t uid,
    uint64_t quota, uint64_t *used)
{
	sqlite3_stmt	*st;
	uint64_t	 size, mine = 0;
	int		 rc, was;

	if (used != NULL)
		*used = 0;
	if ((rc = cache_key_change(c, key, CST_SIZE, &st)) != 0)
		return (rc);
	/* Under c->mu from here: the sum and the update are one step. */
	if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
		sqlite3_reset(st);
		rc = rc == SQLITE_DONE ? CACHE_ENOENT : cache_sqlite_err(rc);
		goto out;
	}
	size = (uint64_t)sqlite3_column_int64(st, 0);
	was = sqlite3_column_int(st, 1);
	sqlite3_reset(st);
	rc = 0;
	if (pinned && was)
		goto out;		/* kept as it is, not counted again */
	if (pinned && uid != CACHE_PIN_ANYONE) {
		st = cache_stmt(c, CST_PINNED_BY);
		sqlite3_bind_int64(st, 1, uid);
		if (sqlite3_step(st) == SQLITE_ROW)
			mine = (uint64_t)sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		if (used != NULL)
			*used = mine + size;
		if (mine + size > quota || mine + size < mine) {
			rc = CACHE_EQUOTA;
			goto out;
		}
	}
	st = cache_stmt(c, CST_PIN);
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, pinned ? 1 : 0);
	sqlite3_bind_int64(st, 3, pinned ? uid : CACHE_PIN_ANYONE);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		rc = cache_sqlite_err(rc);
	else
		rc = sqlite3_changes(c->db) > 0 ? 0 : CACHE_ENOENT;
out:
	pthread_mutex_unlock(&c->mu);
	return (rc);
}

int
cache_list(struct cache *c, const char *prefix, unsigned limit,
    int (*cb)(void *arg, const struct cache_entry *e), void *arg)
{
	struct cache_entry	 e;
	sqlite3_stmt		*st;
	char			 pat[CACHE_KEY_LEN + 2];
	int			 rc;

	if (prefix != NULL && (strlen(prefix) > CACHE_KEY_LEN ||
	    strspn(prefix, "0123456789abcdef") != strlen(prefix)))
		return (CACHE_EINVAL);
	snprintf(pat, sizeof pat, "%s*", prefix != NULL ? prefix : "");
	pthread_mutex_lock(&c->mu);
	if (sqlite3_prepare_v2(c->db, "SELECT kernel, format, target, backend,"
	    " compiler_version, options, size, digest, inline, created,"
	    " last_used, hits, compile_ms, pinned, status, log, key, owner,"
	    " pinned_by FROM neff WHERE key GLOB ?1 ORDER BY last_used DESC"
	    " LIMIT ?2", -1, &st,
	    NULL) != SQLITE_OK) {
		pthread_mutex_unlock(&c->mu);
		return (CACHE_EDB);
	}
	sqlite3_bind_text(st, 1, pat, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, limit > 0 ? (sqlite3_int64)limit : -1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		cache_row_fill(st, (const char *)sqlite3_column_text(st, 16),
		    &e);
		rc = cb(arg, &e);
		cache_entry_release(&e);
		if (rc != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	sqlite3_finalize(st);
	pthread_mutex_unlock(&c->mu);
	return (rc == SQLITE_DONE ? 0 : cache_sqlite_err(rc));
}
