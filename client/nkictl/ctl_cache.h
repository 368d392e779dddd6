/* ctl_cache.h: what the `nkictl cache ...` commands share: the cache directory options (--cache-dir, --state-dir), the offline cache, listings, KEY... results and entries as JSON. */
#ifndef NKID_CTL_CACHE_H
#define NKID_CTL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "nkid.pb-c.h"
#include "cache/cache.h"
#include "ctl.h"

/* Default cache directory of offline commands (nkid's default cache_dir). */
#define CTL_CACHE_DEFAULT_DIR	"/var/cache/nkid"

/* The rows of the commands that can work on a cache directory without
 * nkid; ctl_cache_where_get reads them. */
#define CTL_CACHE_OPTS_DIR						\
	{ 0, "cache-dir", "DIR", "work on the cache directory DIR, "	\
	    "without nkid" },						\
	{ 0, "state-dir", "DIR", "work on nkid's cache in DIR/cache, "	\
	    "without nkid" }

/* --offline, for the commands that work through nkid unless told. */
#define CTL_CACHE_OPT_OFFLINE						\
	{ 0, "offline", NULL, "work on the cache directory (default "	\
	    CTL_CACHE_DEFAULT_DIR ") without nkid" }

/* Where a command works: through nkid, or offline on a cache directory. */
struct ctl_cache_where {
	int	 offline;	/* --offline or a directory given */
	char	*dir;		/* malloc'd; NULL: the default */
};

/* A CacheList reply, from nkid or from a cache directory. */
struct ctl_cache_listing {
	Nkid__V1__CacheListReply	*r;	/* NULL before _get */
	Nkid__V1__CacheListReply	 off;	/* offline: r is &off */
};

/*
 * Where a's options say the command works: the cache directory that
 * --cache-dir DIR or --state-dir DIR (then DIR/cache) names into w->dir,
 * NULL if neither; w->offline if one of them or --offline is given.
 * Returns 0, or CTL_EXIT_USAGE (printed) if both directories are given.
 * Release w with ctl_cache_where_release in both cases.
 */
int	 ctl_cache_where_get(struct ctl_ctx *ctx, const struct ctl_args *a,
	    struct ctl_cache_where *w);
void	 ctl_cache_where_release(struct ctl_cache_where *w);

/*
 * Open the cache in w->dir (default CTL_CACHE_DEFAULT_DIR) for an offline
 * command; readonly for inspection. Returns 0 with *out, closed with
 * cache_close, or prints the failure and returns CTL_EXIT_FAIL.
 */
int	 ctl_cache_open(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
	    int readonly, struct cache **out);

/*
 * The entries whose key starts with prefix ("": all), at most limit (0:
 * no limit), most recently used first: from the cache directory if
 * w->offline, else from nkid (CacheList). Returns 0 with l->r set, or
 * prints the failure and returns its exit code. l must be zeroed before;
 * release it with ctl_cache_listing_release in any case.
 */
int	 ctl_cache_listing_get(struct ctl_ctx *ctx,
	    const struct ctl_cache_where *w, const char *prefix,
	    unsigned limit, struct ctl_cache_listing *l);
void	 ctl_cache_listing_release(struct ctl_cache_listing *l);

/* An entry as a JSON object (its log only if with_log); NULL when out of
 * memory. */
struct cJSON *ctl_cache_entry_json(const Nkid__V1__CacheEntry *m,
	    int with_log);

/* The cache's counters (CacheStat, also in Status) as a JSON object;
 * NULL when out of memory. */
struct cJSON *ctl_cache_stats_json(const Nkid__V1__CacheStatReply *r);

/* A KEY... command: cache pin, unpin and rm. */
struct ctl_cache_keys {
	const char				*method;	/* "CachePin" */
	const ProtobufCMessageDescriptor	*reply;
	/* Offline: do it to key in c; 0, or the key is missing. */
	int	(*fn)(struct cache *c, const char *key, void *arg);
	void					*arg;
	/* From nkid's reply: how many done, and the missing keys. */
	void	(*result)(const ProtobufCMessage *reply, uint32_t *done,
		    char *const **missing, size_t *n_missing);
	const char				*what;	/* JSON: "changed" */
	const char				*verb;	/* text: "pinned" */
};

/*
 * Run a KEY... command on the keys that are a's operands: offline (see
 * ctl_cache_where_get) k->fn on each key, else k->method with req (which
 * names the keys). Print with --json {what: done, "missing": [...]},
 * else "VERB N entries" and a "no entry 'KEY'" error for each missing
 * one. Returns the exit code: CTL_EXIT_FAIL also if a key was missing.
 */
int	 ctl_cache_keys_run(struct ctl_ctx *ctx, const struct ctl_args *a,
	    const ProtobufCMessage *req, const struct ctl_cache_keys *k);

#endif /* NKID_CTL_CACHE_H */
