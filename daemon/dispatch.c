/* dispatch.c: the sorted method table, receive caps, unpacking, replies and counters. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/errstr.h"
#include "daemon/log.h"
#include "daemon/metrics_hist.h"
#include "daemon/xmalloc.h"
#include "proto/wire.h"

/* daemon/rpc_benchmark.c */
extern const struct rpc_method rpc_benchmark_method;
/* daemon/rpc_profile.c */
extern const struct rpc_method rpc_profile_method;
/* daemon/rpc_cache_verify.c */
extern const struct rpc_method rpc_cache_verify_method;
/* daemon/rpc_cache_pull.c, rpc_cache_push.c: the remote tier's */
extern const struct rpc_method rpc_cache_pull_method;
extern const struct rpc_method rpc_cache_push_method;

/* Every method of nkid.v1.Nkid, sorted by name: the index of the daemon. */
static const struct rpc_method *const dispatch_methods[] = {
	&rpc_benchmark_method,
	&rpc_cache_export_method,
	&rpc_cache_import_method,
	&rpc_cache_list_method,
	&rpc_cache_pin_method,
	&rpc_cache_pull_method,
	&rpc_cache_push_method,
	&rpc_cache_remove_method,
	&rpc_cache_stat_method,
	&rpc_cache_verify_method,
	&rpc_cancel_method,
	&rpc_compile_method,
	&rpc_fast_path_method,
	&rpc_jobs_method,
	&rpc_lease_method,
	&rpc_lookup_method,
	&rpc_ping_method,
	&rpc_profile_method,
	&rpc_run_method,
	&rpc_simulate_method,
	&rpc_status_method,
	&rpc_warmup_method,
};
#define DISPATCH_NMETHODS (sizeof dispatch_methods / sizeof dispatch_methods[0])

_Static_assert(DISPATCH_NMETHODS <= DAEMON_MAX_METHODS,
    "DAEMON_MAX_METHODS too small");

const char *
rpc_status_name(grpc_status_code code)
{
	return (wire_status_name(code));
}

size_t
dispatch_method_count(void)
{
	return (DISPATCH_NMETHODS);
}

const struct rpc_method *
dispatch_method(size_t i)
{
	assert(i < DISPATCH_NMETHODS);
	return (dispatch_methods[i]);
}

size_t
dispatch_method_index(const struct rpc_method *m)
{
	size_t	i;

	for (i = 0; i < DISPATCH_NMETHODS; i++) {
		if (dispatch_methods[i] == m)
			return (i);
	}
	assert(!"method not in the table");
	return (0);
}

const ProtobufCMethodDescriptor *
dispatch_method_proto(const struct rpc_method *m)
{
	const ProtobufCMethodDescriptor	*md;

	md = protobuf_c_service_descriptor_get_method_by_name(
	    &nkid__v1__nkid__descriptor, m->name);
	assert(md != NULL);
	return (md);
}

static int
dispatch_method_cmp(const void *key, const void *elem)
{
	const struct rpc_method *const *m = elem;

	return (strcmp(key, (*m)->name));
}

const struct rpc_method *
dispatch_method_find(const char *name)
{
	const struct rpc_method *const	*m;
	size_t				 len = strlen(DISPATCH_SERVICE);

	if (strncmp(name, DISPATCH_SERVICE, len) == 0)
		name += len;
	else if (*name == '/')
		return (NULL);
	m = bsearch(name, dispatch_methods, DISPATCH_NMETHODS,
	    sizeof dispatch_methods[0], dispatch_method_cmp);
	return (m != NULL ? *m : NULL);
}

static void
dispatch_call_finish(struct rpc_call *c)
{
	struct daemon_method_counter	*mc;

	assert(!c->replied);
	c->replied = 1;
	c->on_cancel = NULL;
	if (c->on_finish != NULL) {
		c->on_finish(c);
		c->on_finish = NULL;
	}
	if (c->m != NULL) {
		mc = &c->d->methods[dispatch_method_index(c->m)];
		metrics_hist_observe(&mc->duration, uv_hrtime() - c->start_ns);
		if (c->status != GRPC_STATUS_OK)
			mc->errors++;
	}
	if (c->status != GRPC_STATUS_OK)
		log_debug("%s from uid %u pid %u: %s: %s", c->m != NULL ?
		    c->m->name : "call", c->id.uid, c->id.pid,
		    rpc_status_name(c->status), c->message);
	c->tr->send(c, c->reply, c->reply_len);
}

void
rpc_reply(struct rpc_call *c, const ProtobufCMessage *msg)
{
	size_t	len;

	assert(c != NULL && msg != NULL);
	len = protobuf_c_message_get_packed_size(msg);
	c->reply = xmalloc(len);
	c->reply_len = protobuf_c_message_pack(msg, c->reply);
	assert(c->reply_len == len);
	c->status = GRPC_STATUS_OK;
	dispatch_call_finish(c);
}

static void
rpc_vfinish(struct rpc_call *c, grpc_status_code code, const char *fmt,
    va_list ap)
{
	assert(c != NULL && !c->replied);
	if (fmt != NULL && vasprintf(&c->message, fmt, ap) < 0)
		fatal("out of memory formatting a status message");
	c->status = code;
	dispatch_call_finish(c);
}

void
rpc_fail(struct rpc_call *c, grpc_status_code code, const char *fmt, ...)
{
	va_list	ap;

	assert(c != NULL && code != GRPC_STATUS_OK && fmt != NULL);
	va_start(ap, fmt);
	rpc_vfinish(c, code, fmt, ap);
	va_end(ap);
}

void
rpc_finish(struct rpc_call *c, grpc_status_code code, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	rpc_vfinish(c, code, fmt, ap);
	va_end(ap);
}

static const char *rpc_errs[] = {
	"success", "one operation of this kind is in flight",
	"the call or its input has ended",
};

const char *
rpc_strerror(int err)
{
	return (ERRSTR(rpc_errs, err));
}

uint64_t
rpc_deadline_left_ns(const struct rpc_call *c)
{
	uint64_t	now;

	if (c->deadline_ns == 0)
		return (UINT64_MAX);
	now = uv_hrtime();
	return (c->deadline_ns > now ? c->deadline_ns - now : 0);
}

int
rpc_stream_recv(struct rpc_call *c, rpc_recv_cb cb)
{
	assert(c != NULL && cb != NULL && c->m != NULL);
	assert(c->m->kind == RPC_CLIENT_STREAM || c->m->kind ==
	    RPC_BIDI_STREAM);
	if (c->replied || c->recv_done)
		return (RPC_EDONE);
	if (c->recv_armed)
		return (RPC_EBUSY);
	c->recv_armed = 1;
	c->recv_cb = cb;
	c->tr->stream_recv(c);
	return (0);
}

int
rpc_stream_send(struct rpc_call *c, const ProtobufCMessage *msg,
    rpc_sent_cb cb)
{
	size_t	len;

	assert(c != NULL && msg != NULL && c->m != NULL);
	assert(c->m->kind == RPC_SERVER_STREAM || c->m->kind ==
	    RPC_BIDI_STREAM);
	if (c->replied)
		return (RPC_EDONE);
	if (c->send_in_flight)
		return (RPC_EBUSY);
	len = protobuf_c_message_get_packed_size(msg);
	c->stream_buf = xmalloc(len > 0 ? len : 1);
	if (protobuf_c_message_pack(msg, c->stream_buf) != len)
		fatal("cannot pack a %s message", msg->descriptor->name);
	c->send_in_flight = 1;
	c->sent_cb = cb;
	c->stream_out++;
	c->tr->stream_send(c, c->stream_buf, len);
	return (0);
}

void
dispatch_stream_sent(struct rpc_call *c, int ok)
{
	rpc_sent_cb	cb = c->sent_cb;

	assert(c->send_in_flight);
	c->send_in_flight = 0;
	c->sent_cb = NULL;
	free(c->stream_buf);
	c->stream_buf = NULL;
	if (c->replied || cb == NULL)
		return;
	cb(c, ok);
}

void
dispatch_stream_received(struct rpc_call *c, enum rpc_recv_result what,
    const uint8_t *data, size_t len)
{
	const struct rpc_method		*m = c->m;
	const ProtobufCMessageDescriptor *rq;
	ProtobufCMessage		*msg = NULL;
	rpc_recv_cb			 cb = c->recv_cb;
	uint64_t			 cap;
	char				 why[256];

	assert(c->recv_armed);
	c->recv_armed = 0;
	c->recv_cb = NULL;
	if (what != RPC_RECV_MESSAGE)
		c->recv_done = 1;
	if (what == RPC_RECV_BROKEN)
		dispatch_call_cancel(c);
	if (c->replied)
		return;
	if (what == RPC_RECV_MESSAGE) {
		cap = config_cap_bytes(&c->d->cfg, m->cap);
		if (len > cap) {
			rpc_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED,
			    "%s message %llu of %zu bytes exceeds the method's "
			    "limit of %llu bytes (limits.max_message_bytes)",
			    m->name, (unsigned long long)c->stream_in + 1, len,
			    (unsigned long long)cap);
			return;
		}
		rq = dispatch_method_proto(m)->input;
		msg = protobuf_c_message_unpack(rq, NULL, len, data);
		if (msg == NULL) {
			rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
			    "malformed %s message %llu: %zu bytes are not a "
			    "valid '%s' message", m->name,
			    (unsigned long long)c->stream_in + 1, len, rq->name);
			return;
		}
		if (wire_strings_check(rq, data, len, why,
		    sizeof why) != 0) {
			protobuf_c_message_free_unpacked(msg, NULL);
			rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "%s message "
			    "%llu: %s", m->name,
			    (unsigned long long)c->stream_in + 1, why);
			return;
		}
		c->stream_in++;
	}
	cb(c, msg);
}

void
dispatch_call_start(struct rpc_call *c, const uint8_t *data, size_t len)
{
	const struct rpc_method		*m = c->m;
	const ProtobufCMessageDescriptor *rq;
	uint64_t			 cap;
	char				 why[256];

	assert(c->d != NULL && c->tr != NULL && m != NULL &&
	    m->handler != NULL);
	c->start_ns = uv_hrtime();
	c->d->methods[dispatch_method_index(m)].calls++;

	cap = config_cap_bytes(&c->d->cfg, m->cap);
	if (len > cap) {
		rpc_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED,
		    "%s request of %zu bytes exceeds the method's limit of %llu "
		    "bytes (limits.max_message_bytes)", m->name, len,
		    (unsigned long long)cap);
		return;
	}
	if (m->kind == RPC_UNARY || m->kind == RPC_SERVER_STREAM) {
		rq = dispatch_method_proto(m)->input;
		c->req = protobuf_c_message_unpack(rq, NULL, len, data);
		if (c->req == NULL) {
			rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
			    "malformed %s request: %zu bytes are not a valid "
			    "'%s' message", m->name, len, rq->name);
			return;
		}
		if (wire_strings_check(rq, data, len, why,
		    sizeof why) != 0) {
			rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "%s request: "
			    "%s", m->name, why);
			return;
		}
	}
	m->handler(c);
}

void
dispatch_call_unknown(struct rpc_call *c, const char *path)
{
	assert(c->m == NULL);
	c->start_ns = uv_hrtime();
	rpc_fail(c, GRPC_STATUS_UNIMPLEMENTED,
	    "unknown method '%s': nkid serves the methods of nkid.v1.Nkid",
	    path);
}

void
dispatch_call_cancel(struct rpc_call *c)
{
	__atomic_store_n(&c->cancelled, 1, __ATOMIC_RELEASE);
	if (!c->replied && c->on_cancel != NULL)
		c->on_cancel(c);
}

void
dispatch_call_release(struct rpc_call *c)
{
	if (c->job != NULL && c->job_release != NULL)
		c->job_release(c->job);
	c->job = NULL;
	if (c->req != NULL)
		protobuf_c_message_free_unpacked(c->req, NULL);
	c->req = NULL;
	free(c->reply);
	c->reply = NULL;
	free(c->message);
	c->message = NULL;
	free(c->stream_buf);
	c->stream_buf = NULL;
}

int
rpc_admin_check(struct rpc_call *c, const char *action)
{
	if (c->id.admin)
		return (0);
	rpc_fail(c, GRPC_STATUS_PERMISSION_DENIED, "cannot %s: the cache is "
	    "shared by every client, so only root, nkid's own uid %u or a "
	    "member of access.admin_gids may (you are uid %u)", action,
	    (unsigned)geteuid(), c->id.uid);
	return (-1);
}
