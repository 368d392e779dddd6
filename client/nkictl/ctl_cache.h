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

/* How usage lines show those rows. */
#define CTL_CACHE_USAGE_DIR	"[--cache-dir DIR | --state-dir DIR]"
/* The option table of a command that has only those rows (cache pin,
 * unpin, rm, show). */
extern const struct ctl_opt ctl_cache_opts_dir[];

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
 * Open the cache in w->dir for an offline command; readonly for
 * inspection. Without w->dir: the cache_dir that the nkid at ctx->socket
 * names in its Status when that is not the default socket (-s,
 * $NKID_SOCKET: another nkid's), else CTL_CACHE_DEFAULT_DIR. Returns 0
 * with *out, closed with cache_close, or prints the failure and returns
 * CTL_EXIT_FAIL (CTL_EXIT_USAGE: that nkid did not answer).
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

/*
 * Resolve a key or a key prefix (hex digits, any case) as every cache
 * command does, into key: a full key is taken as is (the command tells if
 * it has no entry), a prefix must start exactly one entry's key (nkid's
 * CacheList, or the cache directory's). Returns CTL_EXIT_OK, or prints
 * why not and returns CTL_EXIT_USAGE (not hex digits), CTL_EXIT_FAIL (no
 * entry: NOT_FOUND; more than one: AMBIGUOUS, naming some) or the call's
 * failure.
 */
int	 ctl_cache_key_resolve(struct ctl_ctx *ctx,
	    const struct ctl_cache_where *w, const char *prefix,
	    char key[CACHE_KEY_LEN + 1]);
/*
 * ctl_cache_key_resolve for n prefixes into *keys (n malloc'd keys, freed
 * with ctl_cache_keys_free), every failure printed. Returns CTL_EXIT_OK,
 * or the worst failure (usage before the others).
 */
int	 ctl_cache_keys_resolve(struct ctl_ctx *ctx,
	    const struct ctl_cache_where *w, char *const *prefixes, size_t n,
	    char ***keys);
void	 ctl_cache_keys_free(char **keys, size_t n);

/* An entry's target as listings show it: the one it was compiled for, or
 * "default (trn1)" (what the cpu backend models) or "default". Static or
 * e's. */
const char *ctl_cache_target(const Nkid__V1__CacheEntry *e);

/* The shortest prefix length, at least CTL_CACHE_ABBREV, that tells the
 * n keys apart: what listings print. */
#define CTL_CACHE_ABBREV	16
int	 ctl_cache_abbrev_len(char *const *keys, size_t n);

/* A CacheVerify reply, from nkid or from a cache directory. */
struct ctl_cache_checked {
	Nkid__V1__CacheVerifyReply	*r;	/* NULL before _get */
	Nkid__V1__CacheVerifyReply	 off;	/* offline: r is &off */
};

/*
 * CacheVerify req: through nkid, or if w->offline in the cache directory
 * (read-only: a corrupt entry is reported, not quarantined; the keys of
 * req->kernels derived with the cache's compiler). Returns 0 with v->r
 * set, or prints the failure and returns its exit code. v must be zeroed
 * before; release it with ctl_cache_checked_release in any case.
 */
int	 ctl_cache_checked_get(struct ctl_ctx *ctx,
	    const struct ctl_cache_where *w,
	    const Nkid__V1__CacheVerifyRequest *req,
	    struct ctl_cache_checked *v);
void	 ctl_cache_checked_release(struct ctl_cache_checked *v);

/* A signature, "x: float32[128,512], y: int8[4]", into buf ("" if n is
 * 0). */
const char *ctl_cache_sig_format(Nkid__V1__Tensor *const *params, size_t n,
	    char *buf, size_t len);
/* The same as a JSON array of {name, dtype, shape}; NULL if n is 0. */
struct cJSON *ctl_cache_sig_json(Nkid__V1__Tensor *const *params, size_t n);

/* An entry as a JSON object (its log only if with_log; its signature if
 * v is not NULL); NULL when out of memory. */
struct cJSON *ctl_cache_entry_json(const Nkid__V1__CacheEntry *m,
	    int with_log, const Nkid__V1__CacheVerifyResult *v);

/* The cache's counters (CacheStat, also in Status) as a JSON object;
 * NULL when out of memory. */
struct cJSON *ctl_cache_stats_json(const Nkid__V1__CacheStatReply *r);

/* A KEY operand, as a usage error names it. */
#define CTL_CACHE_KEY_OPERAND	"KEY (a key or a unique prefix of one)"

/* A KEY... command: cache pin, unpin and rm; its usage and operands. */
#define CTL_CACHE_KEYS_USAGE	"KEY... " CTL_CACHE_USAGE_DIR
#define CTL_CACHE_KEYS_ARGS	{ 1, -1, CTL_CACHE_KEY_OPERAND }
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
	/* NULL, or: is e already as the command leaves it (counted apart:
	 * "1 entry was pinned already"; JSON "unchanged")? */
	int	(*already)(const Nkid__V1__CacheEntry *e, void *arg);
};

/*
 * Run a KEY... command on the keys or prefixes that are a's operands,
 * resolved first (nothing is done if one does not resolve): offline (see
 * ctl_cache_where_get) k->fn on each key, else k->method with req, whose
 * keys are set to them by *set. Print with --json {what: done, "keys":
 * [...], "missing": [...]}, else "VERB N entries" and a "no entry 'KEY'"
 * error for each missing one. Returns the exit code: CTL_EXIT_FAIL also
 * if a key was missing.
 */
int	 ctl_cache_keys_run(struct ctl_ctx *ctx, const struct ctl_args *a,
	    ProtobufCMessage *req, void (*set)(ProtobufCMessage *req,
	    char **keys, size_t n), const struct ctl_cache_keys *k);

#endif /* NKID_CTL_CACHE_H */
