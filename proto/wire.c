/* wire.c: the gRPC status names, the cache entry to nkid.v1.CacheEntry and the checked entry to CacheVerifyResult conversions, linked into nkid and nkictl through libnkiproto. */
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

/* CacheVerifyResult.state, by enum cache_verify_state. */
static const char *const wire_verify_states[] = {
	"", "ok", "failed", "stale", "missing", "corrupt", "error",
};

Nkid__V1__CacheVerifyResult *
wire_cache_verify_result_new(const struct cache_verify_item *it)
{
	Nkid__V1__CacheVerifyResult m = NKID__V1__CACHE_VERIFY_RESULT__INIT;
	Nkid__V1__CacheVerifyResult	*copy = NULL;
	Nkid__V1__Tensor		*t = NULL, **tp = NULL;
	uint8_t				*buf = NULL;
	size_t				 i, len;

	/* Borrowed pointers, then a round trip through the wire form: the
	 * copy owns everything. */
	m.key = (char *)it->key;
	m.kernel = it->kernel;
	m.state = (char *)((size_t)it->state < sizeof wire_verify_states /
	    sizeof wire_verify_states[0] ? wire_verify_states[it->state] :
	    "error");
	m.message = it->message;
	if (it->nparams > 0) {
		t = calloc(it->nparams, sizeof *t);
		tp = calloc(it->nparams, sizeof *tp);
		if (t == NULL || tp == NULL)
			goto out;
		for (i = 0; i < it->nparams; i++) {
			nkid__v1__tensor__init(&t[i]);
			t[i].name = it->params[i].name;
			t[i].dtype = (char *)it->params[i].dtype;
			t[i].n_shape = it->params[i].rank;
			t[i].shape = it->params[i].shape;
			tp[i] = &t[i];
		}
		m.n_params = it->nparams;
		m.params = tp;
	}
	len = nkid__v1__cache_verify_result__get_packed_size(&m);
	if ((buf = malloc(len > 0 ? len : 1)) == NULL)
		goto out;
	nkid__v1__cache_verify_result__pack(&m, buf);
	copy = nkid__v1__cache_verify_result__unpack(NULL, len, buf);
out:
	free(buf);
	free(tp);
	free(t);
	return (copy);
}
