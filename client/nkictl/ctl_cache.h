/*
 * ctl_cache.h: what the `nkictl cache ...` and `nkictl warmup` commands
 * share: their descriptors, the offline cache (--cache-dir/--state-dir),
 * entry printing and kernel manifests.
 */
#ifndef NKID_CTL_CACHE_H
#define NKID_CTL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "nkid.pb-c.h"
#include "cache/cache.h"
#include "ctl.h"

extern const ctl_cmd ctl_cache_export_cmd;
extern const ctl_cmd ctl_cache_gc_cmd;
extern const ctl_cmd ctl_cache_import_cmd;
extern const ctl_cmd ctl_cache_ls_cmd;
extern const ctl_cmd ctl_cache_pin_cmd;
extern const ctl_cmd ctl_cache_rm_cmd;
extern const ctl_cmd ctl_cache_show_cmd;
extern const ctl_cmd ctl_cache_stat_cmd;
extern const ctl_cmd ctl_cache_unpin_cmd;
extern const ctl_cmd ctl_cache_verify_cmd;
extern const ctl_cmd ctl_warmup_cmd;

/* Default cache directory of offline commands (nkid's default cache_dir). */
#define CTL_CACHE_DEFAULT_DIR "/var/cache/nkid"

/* Long options of commands that can work on a cache directory. */
#define CTL_CACHE_OPT_DIR   0x300
#define CTL_CACHE_OPT_STATE 0x301
#define CTL_CACHE_LONGOPTS_DIR \
	{ "cache-dir", required_argument, NULL, CTL_CACHE_OPT_DIR }, \
	{ "state-dir", required_argument, NULL, CTL_CACHE_OPT_STATE }

/* Where an offline command works: dir (malloc'd) or NULL (not given). */
typedef struct ctl_cache_where {
	char *dir;
} ctl_cache_where;

/* Handle CTL_CACHE_OPT_DIR/STATE (returns 1) or not (0). */
int ctl_cache_where_opt(ctl_cache_where *w, int opt, const char *arg);
void ctl_cache_where_release(ctl_cache_where *w);

/*
 * Parse the options of a command that takes only the common ones and
 * --cache-dir/--state-dir into w. Returns 0 to go on, optind at the first
 * operand, or -1 when the command must return *rc now (--help: 0; a usage
 * error, printed: 2). Release w in both cases.
 */
int ctl_cache_where_parse(ctl_ctx *ctx, int argc, char **argv,
    ctl_cache_where *w, int *rc);

/*
 * Open the cache in w->dir (default CTL_CACHE_DEFAULT_DIR) for an offline
 * command; readonly for inspection. Prints the failure and returns
 * CTL_EXIT_FAIL, else 0 with *out to close with cache_close.
 */
int ctl_cache_open(ctl_ctx *ctx, const ctl_cache_where *w, int readonly,
    struct cache **out);

/* JSON object of an entry (log only if with_log). */
struct cJSON *ctl_cache_entry_json(const Nkid__V1__CacheEntry *m,
    int with_log);

/* One kernel of a manifest: its file, read, with the manifest's target and
 * options applied. */
typedef struct ctl_manifest_item {
	char *path;
	Nkid__V1__KernelRef *ref;     /* ctl_kernel_read's */
	char *target;                 /* NULL: the file's */
	char *options;
} ctl_manifest_item;

typedef struct ctl_manifest {
	ctl_manifest_item *items;
	size_t n;
} ctl_manifest;

/*
 * Read a manifest (docs/cache.md): {"target": T, "options": O,
 * "kernels": ["file.nkir" | {"path": P, "target": T, "options": O}, ...]}
 * with paths relative to the manifest's directory, and every kernel file
 * it names. On failure err says why and -1 is returned.
 */
int ctl_manifest_read(const char *path, ctl_manifest *m, char *err,
    size_t errlen);
void ctl_manifest_release(ctl_manifest *m);
/* The effective KernelRef of item i (borrowing from m). */
void ctl_manifest_ref(const ctl_manifest *m, size_t i,
    Nkid__V1__KernelRef *ref);

/* A CacheList reply, from nkid or from a cache directory. */
typedef struct ctl_cache_listing {
	Nkid__V1__CacheListReply *r;     /* the entries; NULL before _get */
	Nkid__V1__CacheListReply off;    /* offline: r points here */
} ctl_cache_listing;

/*
 * The entries whose key starts with prefix ("": all), at most limit (0:
 * no limit), most recently used first: from the cache directory w->dir if
 * given, else from nkid (CacheList). Prints the failure and returns its
 * exit code, else 0 with l->r set. l must be zeroed before; release it
 * with ctl_cache_listing_release in any case.
 */
int ctl_cache_listing_get(ctl_ctx *ctx, const ctl_cache_where *w,
    const char *prefix, unsigned limit, ctl_cache_listing *l);
void ctl_cache_listing_release(ctl_cache_listing *l);

/*
 * Parse the command line of a KEY... command (ctl_cache_where_parse):
 * *keys (borrowed from argv) and *n get the operands, at least one.
 * Returns 0 to go on, or -1 when the command must return *rc now.
 */
int ctl_cache_keys_parse(ctl_ctx *ctx, int argc, char **argv,
    ctl_cache_where *w, char ***keys, size_t *n, int *rc);

/*
 * For a KEY... command on a cache directory: open it (ctl_cache_open) and
 * do fn(c, key, arg) for each of the n keys; *done counts those fn did (0
 * returned), *missing (calloc'd, free it; strings borrowed from keys) lists
 * the others. Prints the failure and returns its exit code, else 0.
 */
int ctl_cache_keys_apply(ctl_ctx *ctx, const ctl_cache_where *w,
    char **keys, size_t n, int (*fn)(struct cache *c, const char *key,
    void *arg), void *arg, uint32_t *done, char ***missing,
    size_t *n_missing);

/*
 * Print what a KEY... command did: with --json {what: done, "missing":
 * [...]}, else "VERB N entries" and "no entry 'KEY'" errors. Returns the
 * exit code: CTL_EXIT_FAIL if any key was missing.
 */
int ctl_cache_keys_print(ctl_ctx *ctx, const char *what, const char *verb,
    uint32_t done, char *const *missing, size_t n_missing);

#endif
