/* cache_gc.c: garbage collection of the NEFF cache directory: old temporaries, quarantined files, blob files no row names (the directory walks are here too), failed entries on request, and the budget enforced. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cache/cache_impl.h"

int
cache_gc(struct cache *c, double min_age_s, int drop_failed,
    struct cache_gc_result *r)
{
	char		  path[PATH_MAX];
	char		**gone = NULL;
	size_t		  ngone = 0, i;
	uint64_t	  ev0;
	int		  rc = 0, n;

	memset(r, 0, sizeof *r);
	if (c->readonly)
		return (CACHE_EREADONLY);
	pthread_mutex_lock(&c->mu);
	snprintf(path, sizeof path, "%s/tmp", c->dir);
	cache_gc_dir(c, path, min_age_s, 0, &r->temps);
	snprintf(path, sizeof path, "%s/quarantine", c->dir);
	cache_gc_dir(c, path, 0, 0, &r->quarantined);
	cache_gc_blobs(c, min_age_s, 1, 0, &r->orphans);
	if (cache_exec(c, "BEGIN IMMEDIATE") != SQLITE_OK) {
		rc = CACHE_EDB;
		goto out;
	}
	if (drop_failed) {
		if (cache_exec(c, "DELETE FROM neff WHERE status = 'failed'") ==
		    SQLITE_OK && (n = sqlite3_changes(c->db)) > 0) {
			r->failed = (unsigned)n;
			CACHE_ST_ADD(c, entries, -(uint64_t)n);
		}
	}
	ev0 = CACHE_ST(c, evictions);
	rc = cache_evict(c, 0, NULL, &gone, &ngone);
	r->evicted = (unsigned)(CACHE_ST(c, evictions) - ev0);
	if (cache_totals_save(c) != 0 || cache_exec(c, "COMMIT") !=
	    SQLITE_OK) {
		cache_exec(c, "ROLLBACK");
		rc = CACHE_EDB;
	}
	for (i = 0; i < ngone; i++) {
		if (rc != CACHE_EDB)
			cache_blob_unref(c, gone[i]);
		free(gone[i]);
	}
	free(gone);
out:
	pthread_mutex_unlock(&c->mu);
	return (rc == CACHE_EFULL ? 0 : rc);
}

/* ------------------------------------------------------------ blob files */

int
cache_gc_dir(struct cache *c, const char *path, double min_age_s,
    int check_refs, unsigned *count)
{
	struct dirent	*de;
	struct stat	 sb;
	sqlite3_stmt	*st = NULL;
	DIR		*dp;
	time_t		 now = time(NULL);
	int		 refs;

	if ((dp = opendir(path)) == NULL)
		return (errno == ENOENT ? 0 : CACHE_EIO);
	if (check_refs && sqlite3_prepare_v2(c->db, "SELECT count(*) FROM neff"
	    " WHERE digest = ?1", -1, &st, NULL) != SQLITE_OK) {
		closedir(dp);
		return (CACHE_EDB);
	}
	while ((de = readdir(dp)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(dp), de->d_name, &sb, AT_SYMLINK_NOFOLLOW)
		    == -1 || !S_ISREG(sb.st_mode))
			continue;
		if (difftime(now, sb.st_mtime) < min_age_s)
			continue;
		if (check_refs) {
			sqlite3_reset(st);
			sqlite3_bind_text(st, 1, de->d_name, -1,
			    SQLITE_TRANSIENT);
			refs = sqlite3_step(st) == SQLITE_ROW ?
			    sqlite3_column_int(st, 0) : 1;
			if (refs > 0)
				continue;
		}
		if (unlinkat(dirfd(dp), de->d_name, 0) == 0)
			(*count)++;
	}
	sqlite3_finalize(st);
	closedir(dp);
	return (0);
}

/*
 * cache_gc_dir on each fan-out directory of blobs/ (blobs/xx); with purge,
 * the directory is removed after (rmdir: only if that emptied it).
 */
void
cache_gc_blobs(struct cache *c, double min_age_s, int check_refs, int purge,
    unsigned *count)
{
	char		 path[PATH_MAX];
	struct dirent	*de;
	DIR		*dp;

	snprintf(path, sizeof path, "%s/blobs", c->dir);
	if ((dp = opendir(path)) == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		if (de->d_name[0] == '.' || strlen(de->d_name) != 2)
			continue;
		snprintf(path, sizeof path, "%s/blobs/%s", c->dir, de->d_name);
		cache_gc_dir(c, path, min_age_s, check_refs, count);
		if (purge)
			rmdir(path);
	}
	closedir(dp);
}

/* Every blob file and fan-out directory (after a migration emptied the
 * index: no row names any of them). */
void
cache_blobs_purge(struct cache *c)
{
	unsigned	n = 0;

	cache_gc_blobs(c, 0, 0, 1, &n);
}
