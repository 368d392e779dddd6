/* rpc_compile.c: Compile, a kernel into the compiled-kernel table; returns its NEFF key. */
#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"

static void
rpc_compile_done_cb(struct rpc_call *c, struct kcache_entry *e, int cache_hit,
    double compile_ms)
{
	const Nkid__V1__CompileRequest	*req = (const void *)c->req;
	Nkid__V1__CompileReply		 r = NKID__V1__COMPILE_REPLY__INIT;
	const void			*image;
	size_t				 len;

	image = kcache_entry_image(e, &len);
	r.neff_key = (char *)kcache_entry_key(e);
	r.kernel_name = (char *)kcache_entry_name(e);
	r.cache_hit = cache_hit;
	r.compile_ms = compile_ms;
	r.neff_size = len;
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

	kernel_resolve(c, req->ref, rpc_compile_done_cb);
}

const struct rpc_method rpc_compile_method = {
	.name = "Compile",
	.path = DISPATCH_SERVICE "Compile",
	.kind = RPC_UNARY,
	.request = &nkid__v1__compile_request__descriptor,
	.cap = CONFIG_CAP_KERNEL,
	.flags = RPC_F_ASYNC,
	.handler = rpc_compile,
};
