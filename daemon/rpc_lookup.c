/* rpc_lookup.c: Lookup, the NEFF key nkid derives for an IR digest if that kernel is cached, so a warm client sends no IR. */
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/rpc_cache.h"
#include "daemon/xmalloc.h"

struct rpc_lookup {
	struct rpc_call	*c;
	char		 neff_key[KCACHE_KEY_LEN + 1];
	char		*kernel;
	int		 found;
};

static void
rpc_lookup_reply(struct rpc_call *c, struct rpc_lookup *l)
{
	Nkid__V1__LookupReply	r = NKID__V1__LOOKUP_REPLY__INIT;

	if (l->found) {
		r.found = 1;
		r.neff_key = l->neff_key;
		r.kernel_name = l->kernel != NULL ? l->kernel : (char *)"";
	}
	rpc_reply(c, &r.base);
}

/* Off the loop: the entry must be on disk and servable. */
static void
rpc_lookup_work_cb(struct cache *disk, void *arg)
{
	struct rpc_lookup	*l = arg;
	struct cache_entry	 ce;

	if (disk != NULL && cache_get(disk, l->neff_key, 0, &ce) == 0) {
		l->found = 1;
		l->kernel = ce.kernel;
		ce.kernel = NULL;
		cache_entry_release(&ce);
	}
}

static void
rpc_lookup_done_cb(void *arg)
{
	struct rpc_lookup	*l = arg;

	/* The caller knows the IR's digest: the key is its to use alone
	 * (owner visibility: kernel_resolve). */
	if (l->found)
		kernel_grant(l->c->d, l->c->id.uid, l->neff_key);
	rpc_lookup_reply(l->c, l);
	free(l->kernel);
	free(l);
}

static void
rpc_lookup(struct rpc_call *c)
{
	const Nkid__V1__LookupRequest	*req = (const void *)c->req;
	struct daemon			*d = c->d;
	struct rpc_lookup		*l;
	const char			*name;

	if (req->ir_digest[0] == '\0') {
		/* An older client's specialization key: never trusted. */
		l = xcalloc(1, sizeof *l);
		rpc_lookup_reply(c, l);
		free(l);
		return;
	}
	if (!cache_key_valid(req->ir_digest)) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "Lookup needs an "
		    "ir_digest of 64 lower-case hex digits (SHA-256 of the IR)");
		return;
	}
	if (strcmp(req->format, backend_format(d->backend)) != 0 ||
	    !backend_name_valid(req->target) ||
	    !backend_name_valid(req->options)) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "Lookup needs the "
		    "format of backend '%s' ('%s') and UTF-8 target and "
		    "options", backend_name(d->backend), backend_format(d->backend));
		return;
	}
	l = xcalloc(1, sizeof *l);
	l->c = c;
	backend_cache_key(d->backend, req->format, req->ir_digest, req->target,
	    req->options, l->neff_key);
	if ((name = kcache_loaded(d->kcache, l->neff_key)) != NULL) {
		l->found = 1;
		l->kernel = xstrdup(name);
		rpc_lookup_done_cb(l);
		return;
	}
	kcache_async(d->kcache, rpc_lookup_work_cb, rpc_lookup_done_cb, l);
}

const struct rpc_method rpc_lookup_method = {
	DISPATCH_METHOD_NAME("Lookup"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_lookup,
};
