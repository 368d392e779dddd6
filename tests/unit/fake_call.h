/*
 * fake_call.h: a call whose reply is recorded instead of sent, for unit
 * tests that drive RPC handlers through dispatch without gRPC.
 */
#ifndef NKID_TESTS_FAKE_CALL_H
#define NKID_TESTS_FAKE_CALL_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/dispatch.h"

struct fake_call {
	struct rpc_call	 rc;
	int		 sent;
	uint8_t		*reply;		/* a copy of the packed reply */
	size_t		 reply_len;
};

/* The transport's send: exactly once per call, reply copied. */
static inline void
fake_send(struct rpc_call *c, const uint8_t *reply, size_t len)
{
	struct fake_call	*fc = (struct fake_call *)c;

	ck_assert_int_eq(fc->sent, 0);
	fc->sent = 1;
	if (reply != NULL) {
		fc->reply = malloc(len + 1);
		memcpy(fc->reply, reply, len);
		fc->reply_len = len;
	}
}

static const struct rpc_transport fake_transport = { .send = fake_send };

static inline void
fake_call_release(struct fake_call *fc)
{
	dispatch_call_release(&fc->rc);
	free(fc->reply);
}

#endif /* NKID_TESTS_FAKE_CALL_H */
