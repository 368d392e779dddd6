/* rpc_lookup.c: Lookup, a specialization key to the NEFF key it compiled to, so a warm client sends no IR. */
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/xmalloc.h"

struct rpc_lookup {
	char	 neff_key[KCACHE_KEY_LEN + 1];
	char	*kernel;
	int	 found;
};

/* Off the loop: spec -> NEFF key, and that entry must be servable. */
static void
rpc_lookup_work_cb(struct cache *disk, void *arg)
{
	struct rpc_lookup	*l = arg;
	const char		*spec = l->kernel;

	l->kernel = NULL;
	if (disk != NULL && cache_spec_get(disk, spec, l->neff_key,
	    &l->kernel) == 0 && cache_get(disk, l->neff_key, 0, NULL) == 0)
		l->found = 1;
	free((char *)spec);
}

static void
rpc_lookup_done_cb(struct rpc_call *c, void *arg)
{
	struct rpc_lookup	*l = arg;
	Nkid__V1__LookupReply	 r = NKID__V1__LOOKUP_REPLY__INIT;

	if (l->found) {
		r.found = 1;
		r.neff_key = l->neff_key;
		r.kernel_name = l->kernel != NULL ? l->kernel : (char *)"";
	}
	rpc_reply(c, &r.base);
	free(l->kernel);
	free(l);
}

static void
rpc_lookup(struct rpc_call *c)
{
	const Nkid__V1__LookupRequest	*req = (const void *)c->req;
	struct rpc_lookup		*l;

	if (req->spec_key[0] == '\0' || strlen(req->spec_key) > 256) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "Lookup needs a "
		    "spec_key of 1 to 256 characters");
		return;
	}
	l = xcalloc(1, sizeof *l);
	l->kernel = xstrdup(req->spec_key);	/* the work's input */
	kcache_async(c->d->kcache, c, rpc_lookup_work_cb, rpc_lookup_done_cb,
	    l);
}

const struct rpc_method rpc_lookup_method = {
	.name = "Lookup",
	.path = DISPATCH_SERVICE "Lookup",
	.kind = RPC_UNARY,
	.request = &nkid__v1__lookup_request__descriptor,
	.cap = CONFIG_CAP_CONTROL,
	.flags = RPC_F_ASYNC,
	.handler = rpc_lookup,
};
