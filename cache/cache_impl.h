/* cache_impl.h: what the files of libnkicache share and nobody else sees. */
#ifndef NKID_CACHE_IMPL_H
#define NKID_CACHE_IMPL_H

#include <pthread.h>

#include <sqlite3.h>

#include "cache/cache.h"

struct cache_hold {
	char			 key[CACHE_KEY_LEN + 1];
	unsigned		 n;
	struct cache_hold	*next;
};

enum cache_stmt {
	CST_GET, CST_TOUCH, CST_PUT, CST_DEL, CST_PIN, CST_LRU, CST_REFS,
	CST_SIZE, CST_META_PUT, CST_TOUCH_N, CST_PINNED_BY,
	CST_COUNT,
};

struct cache {
	pthread_mutex_t		 mu;		/* one user of db at a time */
	sqlite3			*db;
	sqlite3_stmt		*stmt[CST_COUNT];
	int			 purge_blobs;	/* migrated from version 1 */
	char			*dir;
	char			*dbpath;
	char			 backend[128];
	char			 compiler[256];
	int			 readonly;
	int			 recover;
	int			 skip_check;
	size_t			 inline_max;
	struct cache_stats	 st;		/* fields read with atomics */
	pthread_mutex_t		 holds_mu;	/* after mu; never held long */
	struct cache_hold	*holds;
	unsigned		 fault_enospc;
	unsigned		 tmpseq;
	void			(*log)(void *, int, const char *);
	void			*log_arg;
};

void	cache_logf(struct cache *c, int level, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* Store st field v (a uint64_t of c->st) atomically. */
#define CACHE_ST_SET(c, f, v)	__atomic_store_n(&(c)->st.f, (v), \
				    __ATOMIC_RELAXED)
#define CACHE_ST_ADD(c, f, v)	__atomic_add_fetch(&(c)->st.f, (v), \
				    __ATOMIC_RELAXED)
#define CACHE_ST(c, f)		__atomic_load_n(&(c)->st.f, __ATOMIC_RELAXED)

/* Path of the blob file of digest into buf (PATH_MAX). */
void	cache_blob_path(struct cache *c, const char *digest, char *buf,
	    size_t len);
/* Write p to the blob file of digest (temp, fsync, rename, dir fsync).
 * Returns 0, CACHE_ENOSPC or CACHE_EIO. Takes no lock. */
int	cache_blob_write(struct cache *c, const char *digest, const void *p,
	    size_t len);
/* Unlink digest's file when no row names it any more. Locked. */
void	cache_blob_unref(struct cache *c, const char *digest);
/* Insert or replace the row of e (data if inline) and fit the budget, in
 * the current transaction; locked. Returns 0, CACHE_EFULL or CACHE_EDB;
 * evicted digests to unlink after commit go to *gone (malloc'd array). */
int	cache_row_put(struct cache *c, const struct cache_entry *e,
	    const char *digest, int is_inline, char ***gone, size_t *ngone);
int	cache_exec(struct cache *c, const char *sql);
/* Evict least recently used entries (not except, nor a held one) until
 * need more bytes fit; locked, in a transaction. Returns 0 or
 * CACHE_EFULL; the digests to unlink after commit go to *gone. */
int	cache_evict(struct cache *c, uint64_t need, const char *except,
	    char ***gone, size_t *ngone);
/* The totals as kept by the running process, into the meta table. */
int	cache_totals_save(struct cache *c);
/* Unlink the regular files of directory path older than min_age_s (with
 * check_refs, only those no row names), counted in *count. 0 or
 * CACHE_EIO, CACHE_EDB. */
int	cache_gc_dir(struct cache *c, const char *path, double min_age_s,
	    int check_refs, unsigned *count);
/* cache_gc_dir on each fan-out directory of blobs/; with purge, each
 * directory is removed after (only if that emptied it). */
void	cache_gc_blobs(struct cache *c, double min_age_s, int check_refs,
	    int purge, unsigned *count);
/* Remove every blob file and fan-out directory (after a migration
 * emptied the index). */
void	cache_blobs_purge(struct cache *c);
/* Map a SQLite result to a cache_err. */
int	cache_sqlite_err(int rc);
/* The statements of enum cache_stmt, prepared once at open
 * (cache_schema.c). */
extern const char *const cache_schema_sql[CST_COUNT];
/*
 * Bring c->db from its PRAGMA user_version to CACHE_SCHEMA_VERSION, each
 * step in a transaction of its own (cache_schema.c); sets c->purge_blobs
 * after the step from version 1. 0, or a cache_err with err set: a newer
 * schema is refused, a read-only handle cannot migrate.
 */
int	cache_schema_migrate(struct cache *c, char *err, size_t errlen);

#endif /* NKID_CACHE_IMPL_H */
