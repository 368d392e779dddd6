/* wire.h: facts of the nkid.v1 wire that nkid and nkictl share: the names of gRPC status codes, the CacheEntry message of a cache entry and the CacheVerifyResult of a checked one. */
#ifndef NKID_WIRE_H
#define NKID_WIRE_H

#include "nkid.pb-c.h"

struct cache_entry;
struct cache_verify_item;

/* The name of a gRPC status code ("INVALID_ARGUMENT"), "UNKNOWN" when out
 * of range; a static string. */
const char	*wire_status_name(int code);

/*
 * Fill m with e as an nkid.v1.CacheEntry: every field of the message, its
 * status "ok" or "failed". The strings are borrowed from e, so m must not
 * outlive e nor be freed with protobuf-c.
 */
void		 wire_cache_entry_fill(Nkid__V1__CacheEntry *m,
		    const struct cache_entry *e);

/*
 * A CacheEntry of e that owns its strings (e may go away), freed with
 * nkid__v1__cache_entry__free_unpacked(m, NULL). NULL when out of memory.
 */
Nkid__V1__CacheEntry *wire_cache_entry_new(const struct cache_entry *e);

/*
 * The CacheVerifyResult of a checked item (cache_verify_run), owning its
 * strings, freed with nkid__v1__cache_verify_result__free_unpacked(m,
 * NULL). NULL when out of memory.
 */
Nkid__V1__CacheVerifyResult *wire_cache_verify_result_new(
		    const struct cache_verify_item *it);

/*
 * Check the string fields of the message of type d in data (len bytes,
 * which protobuf-c unpacked already), at every depth: each must be valid
 * UTF-8 without a NUL byte. 0, or -1 with why naming the field
 * ("field 'Tensor.dtype' holds a NUL byte").
 */
int		 wire_strings_check(const ProtobufCMessageDescriptor *d,
		    const uint8_t *data, size_t len, char *why, size_t whylen);

#endif /* NKID_WIRE_H */
