/*
 * fuzz_dispatch.c: libFuzzer target for protobuf requests through
 * dispatch (receive caps, unpacking, every handler) on a real daemon with
 * the cpu backend and a cache in a private directory, without gRPC.
 *
 * Input: byte 0 picks the method, byte 1 the caller (bit 0: administrator,
 * bit 1: another uid than nkid's), then messages, each a 2-byte
 * little-endian length and its bytes (the last one takes what is left):
 * the request of a unary or server-streaming call, the stream of a
 * client-streaming or bidi one (then the half-close). A call that has not
 * ended 2 s after its last message is cancelled, as when its client goes
 * away; it must then end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/log.h"
#include "tests/fuzz/fuzz_tmp.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_DISPATCH_GRACE_MS	2000
#define FUZZ_DISPATCH_END_MS	10000

struct fuzz_call {
	struct rpc_call	 rc;
	int		 sent;		/* the status went out */
	int		 send_pending;	/* a stream message to acknowledge */
	int		 recv_pending;	/* a receive armed */
};

static uv_loop_t	fuzz_loop;
static struct daemon	fuzz_d;
static int		fuzz_ready;

static void
fuzz_send(struct rpc_call *c, const uint8_t *reply, size_t len)
{
	struct fuzz_call	*fc = (struct fuzz_call *)c;

	if (fc->sent)
		abort();	/* one status per call */
	if (c->status == GRPC_STATUS_OK && c->message == NULL &&
	    c->m != NULL && c->m->kind == RPC_UNARY && reply == NULL)
		abort();	/* a unary OK carries its reply */
	if (c->status != GRPC_STATUS_OK && (c->message == NULL ||
	    c->message[0] == '\0'))
		abort();	/* a failure says why */
	fc->sent = 1;
}

static void
fuzz_stream_send(struct rpc_call *c, const uint8_t *msg, size_t len)
{
	((struct fuzz_call *)c)->send_pending = 1;
}

static void
fuzz_stream_recv(struct rpc_call *c)
{
	((struct fuzz_call *)c)->recv_pending = 1;
}

static const struct rpc_transport fuzz_transport = {
	.send = fuzz_send,
	.stream_send = fuzz_stream_send,
	.stream_recv = fuzz_stream_recv,
};

static void
fuzz_dispatch_init(void)
{
	struct config_override	 ov = { NULL, NULL };
	struct config		 cfg;
	const char		*dir = fuzz_tmp_make("dispatch");
	char			 cache[96], err[1024];
	static const char	 json[] = "{ \"cpu\": { \"cores\": 2 }, "
	    "\"cache\": { \"max_bytes\": \"64MiB\", "
	    "\"max_memory_bytes\": \"32MiB\" }, \"limits\": { "
	    "\"max_message_bytes\": { \"tensor\": \"64MiB\" }, "
	    "\"max_tensor_bytes\": \"64MiB\" } }";

	log_level_set(LOG_LEVEL_ERROR);
	snprintf(cache, sizeof cache, "%s/cache", dir);
	if (mkdir(cache, 0700) != 0)
		abort();
	ov.state_dir = dir;
	if (uv_loop_init(&fuzz_loop) != 0)
		abort();
	if (config_load_string(&cfg, "fuzz.json", json, sizeof json - 1, &ov,
	    err, sizeof err) != 0 || daemon_init(&fuzz_d, &fuzz_loop, &cfg,
	    err, sizeof err) != 0) {
		fprintf(stderr, "fuzz_dispatch: %s\n", err);
		abort();
	}
	fuzz_ready = 1;
}

/* The next message of the input: 2-byte length, then bytes. */
static int
fuzz_next(const uint8_t **p, const uint8_t *end, const uint8_t **msg,
    size_t *len)
{
	size_t	n;

	if (end - *p < 2)
		return (-1);
	n = (size_t)(*p)[0] | (size_t)(*p)[1] << 8;
	*p += 2;
	if (n > (size_t)(end - *p))
		n = (size_t)(end - *p);
	*msg = *p;
	*len = n;
	*p += n;
	return (0);
}

static void
fuzz_timer_cb(uv_timer_t *t)
{
}

static void
fuzz_timer_close_cb(uv_handle_t *h)
{
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_call	*fc;
	const uint8_t		*p = data, *end = data + size, *msg = NULL;
	size_t			 len = 0;
	uint64_t		 t0, last;
	uv_timer_t		 tick;
	int			 cancelled = 0, ended = 0;

	if (!fuzz_ready)
		fuzz_dispatch_init();
	if (size < 2)
		return (0);
	/* On the heap: a use after the call is released is caught. */
	if ((fc = calloc(1, sizeof *fc)) == NULL)
		abort();
	fc->rc.d = &fuzz_d;
	fc->rc.tr = &fuzz_transport;
	fc->rc.m = dispatch_method(p[0] % dispatch_method_count());
	fc->rc.id.admin = p[1] & 1;
	fc->rc.id.uid = (p[1] & 2) ? 1000 : (uint32_t)geteuid();
	fc->rc.id.gid = fc->rc.id.uid;
	fc->rc.id.pid = 4242;
	fc->rc.id.conn_id = 1;
	p += 2;

	uv_timer_init(&fuzz_loop, &tick);
	uv_timer_start(&tick, fuzz_timer_cb, 10, 10);
	if (fc->rc.m->kind == RPC_UNARY || fc->rc.m->kind ==
	    RPC_SERVER_STREAM) {
		if (fuzz_next(&p, end, &msg, &len) != 0)
			msg = NULL, len = 0;
		dispatch_call_start(&fc->rc, msg, len);
	} else
		dispatch_call_start(&fc->rc, NULL, 0);
	t0 = last = uv_now(&fuzz_loop);
	while (!fc->sent) {
		uv_run(&fuzz_loop, UV_RUN_ONCE);
		if (fc->send_pending) {
			fc->send_pending = 0;
			dispatch_stream_sent(&fc->rc, 1);
			last = uv_now(&fuzz_loop);
		}
		if (fc->recv_pending && !cancelled) {
			fc->recv_pending = 0;
			last = uv_now(&fuzz_loop);
			if (!ended && fuzz_next(&p, end, &msg, &len) == 0)
				dispatch_stream_received(&fc->rc,
				    RPC_RECV_MESSAGE, msg, len);
			else {
				ended = 1;
				dispatch_stream_received(&fc->rc, RPC_RECV_END,
				    NULL, 0);
			}
		}
		if (!fc->sent && !cancelled && uv_now(&fuzz_loop) - last >
		    FUZZ_DISPATCH_GRACE_MS) {
			cancelled = 1;
			if (fc->recv_pending) {
				fc->recv_pending = 0;
				dispatch_stream_received(&fc->rc,
				    RPC_RECV_BROKEN, NULL, 0);
			} else
				dispatch_call_cancel(&fc->rc);
		}
		if (!fc->sent && uv_now(&fuzz_loop) - t0 >
		    FUZZ_DISPATCH_END_MS + FUZZ_DISPATCH_GRACE_MS) {
			fprintf(stderr, "fuzz_dispatch: %s call not ended "
			    "%d ms after it was cancelled\n", fc->rc.m->name,
			    FUZZ_DISPATCH_END_MS);
			abort();
		}
	}
	/* A stream message still in flight is acknowledged, as gRPC does. */
	if (fc->send_pending)
		dispatch_stream_sent(&fc->rc, 0);
	uv_close((uv_handle_t *)&tick, fuzz_timer_close_cb);
	uv_run(&fuzz_loop, UV_RUN_NOWAIT);
	dispatch_call_release(&fc->rc);
	free(fc);
	return (0);
}
