/* rpc_ping.c: Ping, liveness and round-trip measurement: echoes the payload. */
#include "nkid.pb-c.h"

#include "daemon/dispatch.h"

static void
rpc_ping(struct rpc_call *c)
{
	const Nkid__V1__PingRequest	*req = (const void *)c->req;
	Nkid__V1__PingReply		 reply = NKID__V1__PING_REPLY__INIT;

	reply.payload = req->payload;
	rpc_reply(c, &reply.base);
}

const struct rpc_method rpc_ping_method = {
	DISPATCH_METHOD_NAME("Ping"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_ping,
};
