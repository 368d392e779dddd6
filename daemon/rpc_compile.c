/* rpc_compile.c: Compile, a kernel through the cache's compile path; returns its NEFF key. */
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/dispatch_error.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"

static void
rpc_compile_done_cb(void *arg, const struct kcache_result *res)
{
	struct rpc_call			*c = arg;
	const Nkid__V1__CompileRequest	*req = (const void *)c->req;
	Nkid__V1__CompileReply		 r = NKID__V1__COMPILE_REPLY__INIT;
	struct kcache_entry		*e = res->e;
	const void			*image;
	size_t				 len;

	if (e == NULL) {
		dispatch_fail_kcache(c, res);
		return;
	}
	image = kcache_entry_image(e, &len);
	r.neff_key = (char *)kcache_entry_key(e);
	r.kernel_name = (char *)kcache_entry_name(e);
	r.cache_hit = res->cache_hit;
	r.coalesced = res->coalesced;
	r.compile_ms = res->compile_ms;
	r.neff_size = len;
	r.log = (char *)res->log;
	if (req->return_neff) {
		r.neff.data = (uint8_t *)image;
		r.neff.len = len;
	}
	rpc_reply(c, &r.base);
	kcache_entry_unref(c->d->kcache, e);
}

static void
rpc_compile(struct rpc_call *c)
{
	const Nkid__V1__CompileRequest	*req = (const void *)c->req;
	struct kcache_request		 rq;
	grpc_status_code		 code;
	char				 msg[512];

	if (kernel_request_init(c->d, "Compile", req->ref, &rq, &code, msg,
	    sizeof msg) != 0) {
		rpc_fail(c, code, "%s", msg);
		return;
	}
	kernel_resolve(c, &rq, rpc_compile_done_cb, c);
}

const struct rpc_method rpc_compile_method = {
	DISPATCH_METHOD_NAME("Compile"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_KERNEL, .handler = rpc_compile,
};
