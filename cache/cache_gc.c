/* cache_gc.c: garbage collection of the NEFF cache directory: old temporaries, quarantined files, blob files no row names (walked by cache.c), failed entries on request, and the budget enforced. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
