/* kcache.h: compiled kernels in memory, keyed by the NEFF key (the SQLite cache replaces the store later). */
#ifndef NKID_KCACHE_H
#define NKID_KCACHE_H

#include <stddef.h>
#include <stdint.h>

#define KCACHE_KEY_LEN	64	/* hex SHA-256 */

struct backend;
struct backend_program;
struct kcache;
struct kcache_entry;

struct kcache_stats {
	uint64_t	entries;
	uint64_t	bytes;
	uint64_t	max_bytes;
	uint64_t	hits;
	uint64_t	misses;
	uint64_t	compiles;
	uint64_t	failures;
	uint64_t	evictions;
};

/* Inputs of the NEFF key. Strings may be empty, never NULL. */
struct kcache_key_input {
	const char	*format;
	const void	*ir;
	size_t		 ir_len;
	const char	*target;
	const char	*options;	/* normalized: runs of blanks are one */
	const char	*backend;
	const char	*compiler_version;
};

/*
 * Write the NEFF key of in into key (KCACHE_KEY_LEN + 1 bytes): the hex
 * SHA-256 of the length-prefixed fields, options normalized.
 */
void	kcache_key_compute(const struct kcache_key_input *in, char *key);

/* A table of at most max_bytes of images whose programs are unloaded
 * through b. Freed with kcache_free once no entry is referenced. */
struct kcache *kcache_new(struct backend *b, uint64_t max_bytes);
void	kcache_free(struct kcache *kc);
/* Change the size budget (reload); evicts at once if needed. */
void	kcache_max_bytes_set(struct kcache *kc, uint64_t max_bytes);

/* The entry of key with a reference the caller drops with
 * kcache_entry_unref, or NULL (a miss, counted). */
struct kcache_entry *kcache_get(struct kcache *kc, const char *key);
/*
 * Insert a compiled kernel; takes ownership of image (malloc'd) and prog.
 * If key is already there the new copy is dropped and the old entry
 * returned. Returns a referenced entry. May evict unreferenced entries,
 * least recently used first, to stay within the budget.
 */
struct kcache_entry *kcache_put(struct kcache *kc, const char *key,
	    const char *kernel_name, void *image, size_t image_len,
	    struct backend_program *prog, double compile_ms);
void	kcache_entry_unref(struct kcache *kc, struct kcache_entry *e);
/* Count a compile that failed. */
void	kcache_failure_count(struct kcache *kc);

const char *kcache_entry_key(const struct kcache_entry *e);
const char *kcache_entry_name(const struct kcache_entry *e);
const void *kcache_entry_image(const struct kcache_entry *e, size_t *len);
const struct backend_program *kcache_entry_program(
	    const struct kcache_entry *e);
void	kcache_stats_get(const struct kcache *kc, struct kcache_stats *st);

#endif /* NKID_KCACHE_H */
