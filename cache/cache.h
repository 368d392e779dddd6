/* cache.h: libnkicache, the persistent NEFF and specialization cache (SQLite index, content-addressed blobs, bundles). */
#ifndef NKID_CACHE_H
#define NKID_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define CACHE_KEY_LEN		64	/* hex SHA-256 */
#define CACHE_SCHEMA_VERSION	3
/* Blobs up to this size live in the index row, larger ones in files
 * (measured: docs/cache.md, "Inline threshold"). */
#define CACHE_INLINE_MAX	(32 * 1024)
/* Longest compiler log kept with a failed entry. */
#define CACHE_LOG_MAX		(64 * 1024)
/* Largest blob the cache stores or a bundle may carry. */
#define CACHE_BLOB_MAX		(1ULL << 30)

/* Error codes: 0 or one of these; cache_strerror names them. */
enum cache_err {
	CACHE_OK = 0,
	CACHE_ENOENT = -1,	/* no such entry */
	CACHE_ECORRUPT = -2,	/* digest mismatch (entry quarantined) */
	CACHE_ENOSPC = -3,	/* the disk is full */
	CACHE_EFULL = -4,	/* does not fit in max_bytes */
	CACHE_EIO = -5,		/* a file operation failed */
	CACHE_EDB = -6,		/* SQLite failed */
	CACHE_EINVAL = -7,	/* bad argument */
	CACHE_EBUNDLE = -8,	/* malformed or hostile bundle */
	CACHE_ESTALE = -9,	/* entry of another backend or compiler version */
	CACHE_EFAILED = -10,	/* a cached compile failure */
	CACHE_EREADONLY = -11,	/* opened read-only */
	CACHE_EQUOTA = -12,	/* over the pinning uid's quota */
};

enum cache_log_level { CACHE_LOG_ERROR, CACHE_LOG_WARN, CACHE_LOG_INFO,
	CACHE_LOG_DEBUG };

struct cache;

struct cache_opts {
	const char	*dir;		/* must exist; index.db, blobs/, tmp/ */
	uint64_t	 max_bytes;	/* budget; 0: no limit */
	/* The compiler whose entries are served (others are kept). NULL:
	 * take them from the index's metadata (offline tools). */
	const char	*backend;
	const char	*compiler_version;
	int		 readonly;	/* no writes */
	/* Skip quick_check in cache_open (O(database size)); the caller
	 * runs cache_check later, off its critical path (the daemon). */
	int		 defer_check;
	/* Largest inline blob; 0: CACHE_INLINE_MAX (tests lower it). */
	size_t		 inline_max;
	/* Set a failing database aside and start empty (the daemon); else
	 * a failing quick_check is an error (offline tools). */
	int		 recover;
	/* Messages (recovery, eviction, faults); may be NULL. */
	void		(*log)(void *arg, int level, const char *msg);
	void		*log_arg;
};

/* One NEFF entry. Strings are malloc'd and freed by cache_entry_release. */
struct cache_entry {
	char		 key[CACHE_KEY_LEN + 1];
	char		*kernel;
	char		*format;
	char		*target;
	char		*backend;
	char		*compiler_version;
	char		*options;
	uint64_t	 size;
	char		 digest[CACHE_KEY_LEN + 1];
	int		 is_inline;
	double		 created;	/* seconds since the epoch */
	double		 last_used;
	uint64_t	 hits;
	double		 compile_ms;
	int		 pinned;
	int		 failed;	/* status "failed": log holds why */
	char		*log;
	void		*data;		/* blob, with CACHE_GET_DATA */
	size_t		 len;
	/* The uid whose request stored it (compiled, pulled from the
	 * fleet, imported); CACHE_OWNER_NONE: unknown. cache_put stores it
	 * for a new key; a replaced entry keeps a known owner. */
	int64_t		 owner;
	int64_t		 pinned_by;	/* read only: see cache_pin_by */
};

/* The owner of an entry stored before owners were recorded (schema 2),
 * or by an offline tool. */
#define CACHE_OWNER_NONE	(-1)
/* A viewer that sees every entry (cache_entry_visible). */
#define CACHE_VIEW_ALL		(-2)

struct cache_stats {
	uint64_t	entries;
	uint64_t	bytes;
	uint64_t	max_bytes;
	uint64_t	evictions;
	uint64_t	corrupt;	/* blobs quarantined + databases set aside */
	uint64_t	recovered;	/* databases set aside at open */
	uint64_t	store_errors;	/* stores that failed (disk full, ...) */
};

/* cache_get flags. */
#define CACHE_GET_DATA		0x1	/* read the blob and verify its digest */
#define CACHE_GET_TOUCH		0x2	/* count a hit, update last_used */
#define CACHE_GET_ANY		0x4	/* serve other compiler versions too */

const char *cache_strerror(int err);

/*
 * Open the cache in o->dir: create blobs/, tmp/, quarantine/ as needed,
 * remove leftover temp files, open index.db (WAL, synchronous=NORMAL,
 * busy_timeout), migrate the schema, run quick_check. A database that
 * fails quick_check (or is not a database) is renamed aside with its
 * -wal/-shm and an empty one created; that is logged and counted. Open
 * reads no blob and scans no directory but tmp/. On success *out is freed
 * with cache_close; on failure err holds the reason.
 * The handle may be used from any thread; one writer at a time.
 */
int	cache_open(struct cache **out, const struct cache_opts *o, char *err,
	    size_t errlen);
void	cache_close(struct cache *c);
/*
 * PRAGMA quick_check on a connection of its own (readers do not wait for
 * it). On failure with o->recover the database is set aside as at open and
 * c continues on an empty one (logged, counted). Returns 0, or
 * CACHE_ECORRUPT when the database was damaged.
 */
int	cache_check(struct cache *c);

/* Current totals and counters (no disk access). */
void	cache_stats_get(struct cache *c, struct cache_stats *st);
/* Change the budget; evicts at once to fit. */
int	cache_max_bytes_set(struct cache *c, uint64_t max_bytes);
/* The backend and compiler whose entries are served: static strings of c. */
const char *cache_backend(struct cache *c);
const char *cache_compiler_version(struct cache *c);

/*
 * Look key up. flags: CACHE_GET_DATA reads the blob into e->data
 * (malloc'd) and checks its digest: a mismatch quarantines the entry
 * (file moved to quarantine/, row removed), counts it and returns
 * CACHE_ECORRUPT. A failed entry returns CACHE_EFAILED with e filled (its
 * log). An entry of another compiler returns CACHE_ESTALE unless
 * CACHE_GET_ANY. e may be NULL (presence only). The caller releases e
 * with cache_entry_release whenever the return is 0, CACHE_EFAILED or
 * CACHE_ESTALE.
 */
int	cache_get(struct cache *c, const char *key, int flags,
	    struct cache_entry *e);
/*
 * Store e (key, kernel, format, target, options, compile_ms, failed, log
 * and, unless failed, data/len; backend and compiler default to c's): the
 * blob is written (file: temp, fsync, rename, dir fsync) before the row.
 * Evicts least recently used entries that are neither pinned nor held to
 * stay within max_bytes; CACHE_EFULL if that is impossible (nothing
 * stored). CACHE_ENOSPC if the disk is full (nothing stored). An existing
 * entry of key is replaced.
 */
int	cache_put(struct cache *c, const struct cache_entry *e);
void	cache_entry_release(struct cache_entry *e);
/*
 * Nonzero if viewer (a uid, or CACHE_VIEW_ALL) may see e when entries are
 * visible to their owners only (access.cache_visibility "owner"): it
 * stored e, or e is pinned by nobody in particular (an administrator, an
 * offline tool or a bundle pinned it). The caller decides who is
 * CACHE_VIEW_ALL (administrators, shared visibility).
 */
int	cache_entry_visible(const struct cache_entry *e, int64_t viewer);

/* Mark key in use (never evicted) until the matching cache_unhold
 * (holds nest: one unhold per hold). */
void	cache_hold(struct cache *c, const char *key);
void	cache_unhold(struct cache *c, const char *key);

/* Uses of an entry served without reading the cache (a kernel loaded in
 * memory): key's hits grow by hits and its last use becomes last_used
 * (cache_time_now's clock) if later. */
struct cache_touch {
	char		key[CACHE_KEY_LEN + 1];
	uint64_t	hits;
	double		last_used;
};
/*
 * Record n such uses in one transaction (missing keys are skipped), so
 * that hits, `cache ls` order and LRU eviction follow real use. 0,
 * CACHE_EDB or CACHE_EREADONLY.
 */
int	cache_touch_batch(struct cache *c, const struct cache_touch *t,
	    size_t n);
/* Now, on the clock of created and last_used (seconds since the epoch). */
double	cache_time_now(void);

/* Remove key (its file too when no other entry shares it). */
int	cache_remove(struct cache *c, const char *key);
/* Pin (pinned != 0) or unpin key. */
int	cache_pin(struct cache *c, const char *key, int pinned);
/* Who pinned an entry when nobody in particular did (offline, a bundle). */
#define CACHE_PIN_ANYONE	(-1)
/*
 * Pin (or unpin) key on behalf of uid (CACHE_PIN_ANYONE: nobody's quota),
 * if the bytes of the entries uid has pinned, this one included, stay
 * within quota (UINT64_MAX: no limit); else CACHE_EQUOTA and nothing
 * changes. An entry pinned already stays as it is and is not counted
 * again. *used (may be NULL) gets uid's pinned bytes with this entry.
 * Returns 0, CACHE_ENOENT, CACHE_EQUOTA, or another cache_err.
 */
int	cache_pin_by(struct cache *c, const char *key, int pinned,
	    int64_t uid, uint64_t quota, uint64_t *used);
/*
 * Call cb for each entry whose key starts with prefix (NULL: all), most
 * recently used first, at most limit (0: no limit); without data. cb
 * returning non-zero stops the walk.
 */
int	cache_list(struct cache *c, const char *prefix, unsigned limit,
	    int (*cb)(void *arg, const struct cache_entry *e), void *arg);


struct cache_gc_result {
	unsigned	orphans;	/* blob files no entry names */
	unsigned	temps;		/* temp files */
	unsigned	quarantined;	/* quarantined files removed */
	unsigned	evicted;	/* entries evicted to fit the budget */
	unsigned	failed;		/* failed entries removed */
};
/* Remove orphan blob files older than min_age_s seconds, quarantined
 * files, failed entries (if drop_failed) and evict to the budget. */
int	cache_gc(struct cache *c, double min_age_s, int drop_failed,
	    struct cache_gc_result *r);

/*
 * Bundles (format: docs/cache.md). Export writes the entries named by
 * keys (nkeys > 0; a key named twice travels once), else the pinned ones
 * (pinned_only), else all, through write_cb (returns 0 or -1; -1 stops
 * the export with CACHE_EIO), of those viewer sees (cache_entry_visible;
 * CACHE_VIEW_ALL: every one). Named keys are checked before anything is
 * written: CACHE_EINVAL for one that is not a key, CACHE_ENOENT naming
 * the first that is missing or that viewer does not see (the same
 * words). *count receives the number of entries.
 */
int	cache_bundle_export(struct cache *c, int64_t viewer,
	    const char *const *keys, size_t nkeys, int pinned_only,
	    int (*write_cb)(void *arg, const void *p, size_t n), void *arg,
	    unsigned *count, char *err, size_t errlen);
/*
 * Import the bundle at path all or nothing: the whole file is checked
 * first (magic, sizes, every digest, the trailer), then every entry is
 * stored in one transaction, owned by nobody known (CACHE_OWNER_NONE: an
 * offline tool). Entries already present are skipped. On failure nothing
 * changed and err says why.
 */
int	cache_bundle_import(struct cache *c, const char *path,
	    unsigned *imported, unsigned *skipped, char *err, size_t errlen);

/*
 * cache_bundle_import on a bundle open on fd (a regular file, read from
 * offset 0; not closed); name stands for it in messages; the entries
 * stored are owner's (a uid, or CACHE_OWNER_NONE). cancel, if not NULL,
 * is read between entries: once non-zero the import stops with CACHE_EIO
 * and nothing changed.
 */
int	cache_bundle_import_fd(struct cache *c, int fd, const char *name,
	    int64_t owner, const volatile int *cancel, unsigned *imported,
	    unsigned *skipped, char *err, size_t errlen);
/*
 * Check the bundle open on fd as import's first pass does (sizes, fields,
 * every digest, the trailer), without a cache and without a budget.
 * Returns 0 with *count entries, CACHE_EBUNDLE or CACHE_EIO with err set.
 */
int	cache_bundle_verify_fd(int fd, const char *name, unsigned *count,
	    char *err, size_t errlen);
/*
 * A private file in c's tmp/ for a bundle being built or received,
 * without a name (O_TMPFILE; else a name unlinked at once): nothing is
 * left behind by a crash or a client going away. Returns the fd (read
 * and write; the caller closes it), or CACHE_ENOSPC, CACHE_EIO,
 * CACHE_EREADONLY with err set.
 */
int	cache_bundle_tmp_open(struct cache *c, char *err, size_t errlen);

/*
 * Initialize libcrypto from the calling thread, once per process: call it
 * on a long-lived thread (the daemon's loop) before work that hashes on
 * short-lived or pool threads; libcrypto keeps per-thread state of the
 * thread that initializes it, which is lost with a pool thread.
 */
void	cache_crypto_init(void);

/* SHA-256 of p as hex into hex (CACHE_KEY_LEN + 1 bytes). */
void	cache_digest_hex(const void *p, size_t len, char *hex);

/*
 * Inputs of the NEFF key. Strings may be empty, never NULL. The IR enters
 * by its digest (cache_digest_hex of the IR bytes), so that a key can be
 * derived again from a digest alone (Lookup), and never from anything a
 * client asserts but the IR itself.
 */
struct cache_key_input {
	const char	*format;
	const char	*ir_digest;	/* CACHE_KEY_LEN hex digits */
	const char	*target;
	const char	*options;	/* normalized: runs of blanks are one */
	const char	*backend;
	const char	*compiler_version;
};
/* The NEFF key of in into key (CACHE_KEY_LEN + 1 bytes): hex SHA-256 of
 * the length-prefixed fields, options normalized. */
void	cache_key_compute(const struct cache_key_input *in, char *key);
/* Nonzero if s is CACHE_KEY_LEN lower-case hex digits. */
int	cache_key_valid(const char *s);

/*
 * CacheVerify (cache_verify.c), for nkid's RPC and nkictl's offline
 * `cache verify` alike: each entry read back and checked against its
 * digest. An item's state and message are what both report (the
 * state's words on the wire: wire_cache_verify_result_new).
 */
enum cache_verify_state {
	CACHE_VERIFY_UNCHECKED = 0,	/* cache_verify_run checks it */
	CACHE_VERIFY_OK,
	CACHE_VERIFY_FAILED,		/* a cached compile failure */
	CACHE_VERIFY_STALE,		/* another backend's or compiler's */
	CACHE_VERIFY_MISSING,
	CACHE_VERIFY_CORRUPT,		/* quarantined unless read-only */
	CACHE_VERIFY_ERROR		/* the cache failed: message says */
};

/* A parameter of a compiled kernel, as its cpu image declares it. */
struct cache_verify_param {
	char		*name;
	const char	*dtype;		/* static: sim_dtype_name's */
	size_t		 rank;
	uint64_t	*shape;
};

struct cache_verify_item {
	char				 key[CACHE_KEY_LEN + 1];
	char				*kernel;	/* "": unknown */
	enum cache_verify_state		 state;
	char				*message;	/* "": none */
	struct cache_verify_param	*params;	/* signatures */
	size_t				 nparams;
	/* The caller may see this entry whoever stored it (its key was
	 * derived from the caller's own IR digest): not filtered. */
	int				 proven;
};

/* The entries of one CacheVerify; zero it to start. */
struct cache_verify {
	struct cache_verify_item	*items;
	size_t				 n;
	/* With filter set, only entries viewer sees (cache_entry_visible)
	 * are listed and checked; an unproven item viewer does not see is
	 * missing, in the words of a real miss. */
	int				 filter;
	int64_t				 viewer;
};

#define CACHE_VERIFY_ALL	0x1	/* list every entry first, of any
					 * compiler version */
#define CACHE_VERIFY_SIGNATURES	0x2	/* parameters of ok cpu images */

/* Append an unchecked item for key (at most CACHE_KEY_LEN characters;
 * "" for a kernel known to be absent); kernel may be NULL. Returns the
 * item, valid until the next add. */
struct cache_verify_item *cache_verify_add(struct cache_verify *v,
	    const char *key, const char *kernel);
/* Decide an item without reading the cache: state s and the message
 * (fmt NULL: none). */
void	cache_verify_set(struct cache_verify_item *it,
	    enum cache_verify_state s, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/*
 * Check every unchecked item of v in c (with CACHE_VERIFY_ALL, after
 * appending every entry of c); stops early when *cancel (NULL: never)
 * becomes non-zero. Reads blobs and may quarantine: call it off any
 * event loop. Returns 0, or cache_list's error with CACHE_VERIFY_ALL.
 */
int	cache_verify_run(struct cache *c, struct cache_verify *v, int flags,
	    const volatile int *cancel);
/* Free what v holds (v itself is the caller's) and empty it. */
void	cache_verify_release(struct cache_verify *v);

/*
 * Check that path (what names it: "cache_dir") and every directory above
 * it, as named and where its links lead, belong to nkid: directories owned
 * by the effective uid or root, writable by no other user (a sticky
 * directory above path, such as /tmp, is fine; group-writable only by our
 * own group). 0, or CACHE_EIO / CACHE_EINVAL with err naming the
 * directory, its owner and what to do.
 */
int	cache_dir_secure(const char *what, const char *path, char *err,
	    size_t errlen);

/* Nonzero if the n bytes at s are well-formed UTF-8 without a NUL (no
 * overlong forms, surrogates or code points past U+10FFFF). */
int	cache_text_valid(const char *s, size_t n);
/*
 * A copy of the string s that is valid UTF-8: each byte that is not part
 * of a well-formed sequence becomes the four characters "\xNN"; cut at a
 * character boundary to at most max bytes. The caller frees it; NULL
 * when out of memory.
 */
char	*cache_text_clean(const char *s, size_t max);

/* Fault injection for tests: the next n blob writes fail with ENOSPC. */
void	cache_fault_enospc(struct cache *c, unsigned n);

#endif /* NKID_CACHE_H */
