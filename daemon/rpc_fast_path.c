/* rpc_fast_path.c: FastPath, offer the caller a connection for warm calls without HTTP/2 (daemon/fastpath.c). */
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/fastpath.h"

static void
rpc_fast_path(struct rpc_call *c)
{
	fastpath_offer(c->d->fastpath, c);
}

const struct rpc_method rpc_fast_path_method = {
	DISPATCH_METHOD_NAME("FastPath"),
	.kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL,
	.handler = rpc_fast_path,
};
