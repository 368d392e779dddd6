/*
 * fake_call.h: a call whose reply is recorded instead of sent, and the real
 * daemon it is made to, for unit tests that drive RPC handlers through
 * dispatch without gRPC.
 */
#ifndef NKID_TESTS_FAKE_CALL_H
#define NKID_TESTS_FAKE_CALL_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>
#include <grpc/status.h>
#include <protobuf-c/protobuf-c.h>
#include <uv.h>

#include "nkid.pb-c.h"

#include "daemon/config.h"
#include "daemon/daemon.h"
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

/*
 * Start the daemon d of the tests on loop: gRPC, the loop, then daemon_init()
 * with the configuration json (NULL: the defaults) and the overrides ov (may
 * be NULL).  Fails the test if any of them fails.
 */
static inline void
fake_daemon_open(struct daemon *d, uv_loop_t *loop, const char *json,
    const struct config_override *ov)
{
	struct config	cfg;
	char		err[512];

	if (json == NULL)
		ck_assert_int_eq(config_load(&cfg, NULL, ov, err, sizeof err),
		    0);
	else
		ck_assert_msg(config_load_string(&cfg, "test", json,
		    strlen(json), ov, err, sizeof err) == 0, "%s", err);
	grpc_init();
	ck_assert_int_eq(uv_loop_init(loop), 0);
	ck_assert_msg(daemon_init(d, loop, &cfg, err, sizeof err) == 0, "%s",
	    err);
}

/* Undo fake_daemon_open(): the loop must close with nothing left on it. */
static inline void
fake_daemon_close(struct daemon *d)
{
	uv_loop_t	*loop = d->loop;

	daemon_release(d);
	uv_run(loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(loop), 0);
	grpc_shutdown();
}

/*
 * Start a call of method name on daemon d with the request bytes data, as
 * uid 1000, pid 42; an unknown name is answered as dispatch answers one.
 * The answer comes while d's loop runs (fake_call_wait()).
 */
static inline void
fake_call_start(struct fake_call *fc, struct daemon *d, const char *name,
    const void *data, size_t len)
{
	memset(fc, 0, sizeof *fc);
	fc->rc.d = d;
	fc->rc.tr = &fake_transport;
	fc->rc.id.uid = 1000;
	fc->rc.id.pid = 42;
	fc->rc.m = dispatch_method_find(name);
	if (fc->rc.m == NULL)
		dispatch_call_unknown(&fc->rc, name);
	else
		dispatch_call_start(&fc->rc, data, len);
}

/* Like fake_call_start() with msg packed as the request. */
static inline void
fake_call_start_msg(struct fake_call *fc, struct daemon *d, const char *name,
    const ProtobufCMessage *msg)
{
	size_t	 len = protobuf_c_message_get_packed_size(msg);
	uint8_t	*buf = malloc(len + 1);

	protobuf_c_message_pack(msg, buf);
	fake_call_start(fc, d, name, buf, len);
	free(buf);
}

/* Run the daemon's loop until fc is answered; fail if it never is. */
static inline void
fake_call_wait(struct fake_call *fc)
{
	while (!fc->sent && uv_run(fc->rc.d->loop, UV_RUN_ONCE) != 0)
		;
	ck_assert_int_eq(fc->sent, 1);
}

/* A call of method name with msg on d, answered. */
static inline void
fake_call_msg(struct fake_call *fc, struct daemon *d, const char *name,
    const ProtobufCMessage *msg)
{
	fake_call_start_msg(fc, d, name, msg);
	fake_call_wait(fc);
}

/* A call of method name with msg on d, answered OK. */
static inline void
fake_call_ok(struct fake_call *fc, struct daemon *d, const char *name,
    const ProtobufCMessage *msg)
{
	fake_call_msg(fc, d, name, msg);
	ck_assert_msg(fc->rc.status == GRPC_STATUS_OK, "%s: %s", name,
	    fc->rc.message);
}

/* A call of method name with the bytes data on d, answered. */
static inline void
fake_call_run(struct fake_call *fc, struct daemon *d, const char *name,
    const void *data, size_t len)
{
	fake_call_start(fc, d, name, data, len);
	fake_call_wait(fc);
}

static inline void
fake_call_release(struct fake_call *fc)
{
	dispatch_call_release(&fc->rc);
	free(fc->reply);
}

/*
 * A call of method name with msg on d, answered OK with a message of type
 * desc: that message, unpacked (the caller frees it).
 */
static inline void *
fake_call_reply(struct daemon *d, const char *name,
    const ProtobufCMessage *msg, const ProtobufCMessageDescriptor *desc)
{
	struct fake_call	 fc;
	ProtobufCMessage	*rep;

	fake_call_ok(&fc, d, name, msg);
	rep = protobuf_c_message_unpack(desc, NULL, fc.reply_len, fc.reply);
	ck_assert_msg(rep != NULL, "%s: the reply does not unpack", name);
	fake_call_release(&fc);
	return (rep);
}

/*
 * A call of method name with msg on d must be answered with status and,
 * unless want is NULL, a message that holds want.
 */
static inline void
fake_call_expect(struct daemon *d, const char *name,
    const ProtobufCMessage *msg, grpc_status_code status, const char *want)
{
	struct fake_call	fc;

	fake_call_msg(&fc, d, name, msg);
	ck_assert_msg(fc.rc.status == status, "%s: status %d, not %d: %s",
	    name, (int)fc.rc.status, (int)status, fc.rc.message);
	if (want != NULL)
		ck_assert_msg(fc.rc.message != NULL &&
		    strstr(fc.rc.message, want) != NULL,
		    "%s: message '%s' lacks '%s'", name, fc.rc.message, want);
	fake_call_release(&fc);
}

/* Point ref at kernel k, tensor_add as IR of len bytes in format. */
static inline void
fake_kernel_ref(Nkid__V1__KernelRef *ref, Nkid__V1__Kernel *k,
    const char *format, const void *ir, size_t len)
{
	k->name = "tensor_add";
	k->format = (char *)format;
	k->ir.data = (uint8_t *)ir;
	k->ir.len = len;
	ref->kernel = k;
}

#endif /* NKID_TESTS_FAKE_CALL_H */
