/* wire.c: the gRPC status names and the cache entry to nkid.v1.CacheEntry conversion, linked into nkid and nkictl through libnkiproto. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>

#include "cache/cache.h"
#include "proto/wire.h"

/* Indexed by grpc_status_code (grpc/status.h), 0 to 16. */
static const char *const wire_status_names[] = {
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
	"RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
};

const char *
wire_status_name(int code)
{
	if (code < 0 || (size_t)code >= sizeof wire_status_names /
	    sizeof wire_status_names[0])
		return ("UNKNOWN");
	return (wire_status_names[code]);
}

void
wire_cache_entry_fill(Nkid__V1__CacheEntry *m, const struct cache_entry *e)
{
	assert(m != NULL && e != NULL);
	nkid__v1__cache_entry__init(m);
	m->key = (char *)e->key;
	m->kernel = e->kernel;
	m->format = e->format;
	m->target = e->target;
	m->backend = e->backend;
	m->compiler_version = e->compiler_version;
	m->size = e->size;
	m->created = e->created;
	m->last_used = e->last_used;
	m->hits = e->hits;
	m->compile_ms = e->compile_ms;
	m->pinned = e->pinned;
	m->status = e->failed ? "failed" : "ok";
	m->digest = (char *)e->digest;
	m->log = e->log;
}

Nkid__V1__CacheEntry *
wire_cache_entry_new(const struct cache_entry *e)
{
	Nkid__V1__CacheEntry	 m, *copy;
	uint8_t			*buf;
	size_t			 len;

	/* A round trip through the wire form copies every field that
	 * wire_cache_entry_fill sets, and nothing is listed twice. */
	wire_cache_entry_fill(&m, e);
	len = nkid__v1__cache_entry__get_packed_size(&m);
	if ((buf = malloc(len > 0 ? len : 1)) == NULL)
		return (NULL);
	nkid__v1__cache_entry__pack(&m, buf);
	copy = nkid__v1__cache_entry__unpack(NULL, len, buf);
	free(buf);
	return (copy);
}
