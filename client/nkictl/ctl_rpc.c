/* ctl_rpc.c: blocking gRPC calls from nkictl to nkid over a Unix socket (gRPC core 1.51 C API, protobuf-c messages). */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "ctl_rpc.h"

#define CTL_RPC_SERVICE	"/nkid.v1.Nkid/"
/* The trailing metadata of a call nkid did not start (daemon/server.h). */
#define CTL_RPC_RETRYABLE_KEY	"nkid-retryable"
/* Waits for nkid: 1 ms doubling to 50 ms. */
#define CTL_RPC_WAIT_FIRST	0.001
#define CTL_RPC_WAIT_MAX	0.050

/* Methods that may run twice (docs/protocol.md, "Restarts"), sorted. */
static const char *const ctl_rpc_idempotent[] = {
	"Benchmark", "CacheExport", "CacheList", "CacheStat", "CacheVerify",
	"Compile", "FastPath", "Jobs", "Lookup", "Ping", "Profile", "Run",
	"Simulate", "Status", "Warmup",
};

struct ctl_rpc {
	char			 path[CTL_RPC_PATH_MAX + 1];
	grpc_channel		*channel;
	grpc_channel_args	 chargs;
	grpc_arg		 args[4];
	grpc_completion_queue	*cq;
};

static double
ctl_rpc_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

static void
ctl_rpc_sleep(double s)
{
	struct timespec	ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

int
ctl_rpc_reconnect_timeout(double *out)
{
	const char	*v = getenv(CTL_RPC_RECONNECT_ENV);
	char		*end;
	double		 d;

	*out = CTL_RPC_RECONNECT_DEFAULT;
	if (v == NULL || *v == '\0')
		return (0);
	errno = 0;
	d = strtod(v, &end);
	if (errno != 0 || *end != '\0' || !(d >= 0) || d > 1e9)
		return (-1);
	*out = d;
	return (0);
}

/* Whether a nkid may come back at path: its socket or its lock file
 * (left by every nkid that ran there) exists. */
static int
ctl_rpc_expected(const char *path)
{
	char	lock[CTL_RPC_PATH_MAX + 8];

	snprintf(lock, sizeof lock, "%s.lock", path);
	return (access(path, F_OK) == 0 || access(lock, F_OK) == 0);
}

static int
ctl_rpc_method_cmp(const void *a, const void *b)
{
	return (strcmp(a, *(const char *const *)b));
}

int
ctl_rpc_idempotent_method(const char *method)
{
	return (bsearch(method, ctl_rpc_idempotent, sizeof ctl_rpc_idempotent /
	    sizeof ctl_rpc_idempotent[0], sizeof ctl_rpc_idempotent[0],
	    ctl_rpc_method_cmp) != NULL);
}

static int
ctl_rpc_fail_connect(struct ctl_rpc_status *st, int err, const char *msg)
{
	st->code = GRPC_STATUS_UNAVAILABLE;
	st->connect_errno = err;
	snprintf(st->msg, sizeof st->msg, "%s", msg ? msg : strerror(err));
	return (-1);
}

/* A socket connected to socket_path, or -errno. */
static int
ctl_rpc_connect(const char *socket_path)
{
	struct sockaddr_un	sa;
	int			fd, e;

	if (strlen(socket_path) > CTL_RPC_PATH_MAX)
		return (-ENAMETOOLONG);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, socket_path, strlen(socket_path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return (-errno);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		e = errno;
		close(fd);
		return (-e);
	}
	return (fd);
}

int
ctl_rpc_probe(const char *socket_path)
{
	int	fd = ctl_rpc_connect(socket_path);

	if (fd < 0)
		return (-fd);
	close(fd);
	return (0);
}

int
ctl_rpc_open(const char *socket_path, struct ctl_rpc **out,
    struct ctl_rpc_status *st)
{
	grpc_channel_credentials	*creds;
	char				 target[CTL_RPC_PATH_MAX + 8];
	struct stat			 sb;
	struct ctl_rpc			*r;
	double				 cap, end, wait = CTL_RPC_WAIT_FIRST;
	int				 fd;

	assert(socket_path != NULL && out != NULL && st != NULL);
	memset(st, 0, sizeof *st);
	*out = NULL;
	/* Diagnose what can be seen without a connection: nkid does not
	 * see (and count) a probe for the common "not running" case. */
	if (*socket_path == '\0')
		return (ctl_rpc_fail_connect(st, EINVAL, "empty socket path"));
	if (strlen(socket_path) > CTL_RPC_PATH_MAX)
		return (ctl_rpc_fail_connect(st, ENAMETOOLONG,
		    "socket path longer than 107 bytes"));
	if (ctl_rpc_reconnect_timeout(&cap) != 0)
		return (ctl_rpc_fail_connect(st, EINVAL, CTL_RPC_RECONNECT_ENV
		    " must be a number of seconds (0: do not wait)"));
	end = ctl_rpc_now() + cap;
	for (;;) {
		/* nkid restarting: wait for it (ENOENT, ECONNREFUSED). */
		if (stat(socket_path, &sb) < 0)
			fd = -errno;
		else if (!S_ISSOCK(sb.st_mode))
			return (ctl_rpc_fail_connect(st, ENOTSOCK,
			    "not a socket"));
		else if (access(socket_path, W_OK) < 0)
			return (ctl_rpc_fail_connect(st, errno, NULL));
		else if ((fd = ctl_rpc_connect(socket_path)) >= 0)
			break;
		if ((fd != -ENOENT && fd != -ECONNREFUSED) ||
		    !ctl_rpc_expected(socket_path) || ctl_rpc_now() >= end)
			return (ctl_rpc_fail_connect(st, -fd, NULL));
		ctl_rpc_sleep(wait);
		wait = wait * 2 > CTL_RPC_WAIT_MAX ? CTL_RPC_WAIT_MAX :
		    wait * 2;
	}

	r = calloc(1, sizeof *r);
	if (r == NULL) {
		close(fd);
		return (ctl_rpc_fail_connect(st, ENOMEM, NULL));
	}
	snprintf(r->path, sizeof r->path, "%s", socket_path);
	snprintf(target, sizeof target, "unix:%s", socket_path);

	/* Receive and send caps set explicitly (the client default is
	 * 4 MiB): tensors and NEFFs travel inline. No retries: a retried call
	 * buffers its request, and nkictl reports failures instead. */
	r->args[0].type = GRPC_ARG_INTEGER;
	r->args[0].key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
	r->args[0].value.integer = INT_MAX;
	r->args[1].type = GRPC_ARG_INTEGER;
	r->args[1].key = GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
	r->args[1].value.integer = INT_MAX;
	r->args[2].type = GRPC_ARG_INTEGER;
	r->args[2].key = GRPC_ARG_ENABLE_RETRIES;
	r->args[2].value.integer = 0;
	r->args[3].type = GRPC_ARG_INTEGER;
	r->args[3].key = GRPC_ARG_ENABLE_HTTP_PROXY;
	r->args[3].value.integer = 0;
	r->chargs.num_args = sizeof r->args / sizeof r->args[0];
	r->chargs.args = r->args;

	/* Connected above, the channel is made on the socket: no resolver,
	 * subchannel or connector (threads and hops nkictl, one call and
	 * gone, has no use for), and a refusal is known at once. */
	grpc_init();
	creds = grpc_insecure_credentials_create();
	r->channel = grpc_channel_create_from_fd(target, fd, creds,
	    &r->chargs);
	grpc_channel_credentials_release(creds);
	r->cq = grpc_completion_queue_create_for_next(NULL);
	if (r->channel == NULL || r->cq == NULL) {
		ctl_rpc_close(r);
		return (ctl_rpc_fail_connect(st, EPROTO,
		    "cannot create a gRPC channel"));
	}
	*out = r;
	return (0);
}

/* Wait for the completion of tag on r->cq. */
static int
ctl_rpc_wait(struct ctl_rpc *r, void *tag)
{
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(r->cq,
		    gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_OP_COMPLETE && ev.tag == tag)
			return (ev.success ? 0 : -1);
		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			return (-1);
	}
}

/* msg packed into a new byte buffer (the caller destroys it); NULL when
 * out of memory. */
static grpc_byte_buffer *
ctl_rpc_pack(const ProtobufCMessage *msg)
{
	grpc_byte_buffer	*bb;
	grpc_slice		 body;
	uint8_t			*buf;
	size_t			 len = protobuf_c_message_get_packed_size(msg);

	if ((buf = malloc(len ? len : 1)) == NULL)
		return (NULL);
	protobuf_c_message_pack(msg, buf);
	/* The slice takes the buffer (no copy) and frees it. */
	body = grpc_slice_new(buf, len, free);
	bb = grpc_raw_byte_buffer_create(&body, 1);
	grpc_slice_unref(body);
	return (bb);
}

/* The message of type desc that bb holds into *msg (NULL: malformed).
 * Returns 0, or -1 if bb cannot be read. */
static int
ctl_rpc_unpack(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc,
    ProtobufCMessage **msg)
{
	grpc_byte_buffer_reader	rd;
	grpc_slice		all;

	*msg = NULL;
	if (!grpc_byte_buffer_reader_init(&rd, bb))
		return (-1);
	all = grpc_byte_buffer_reader_readall(&rd);
	grpc_byte_buffer_reader_destroy(&rd);
	*msg = protobuf_c_message_unpack(desc, NULL, GRPC_SLICE_LENGTH(all),
	    GRPC_SLICE_START_PTR(all));
	grpc_slice_unref(all);
	return (0);
}

/* s seconds from now (< 0: never). */
static gpr_timespec
ctl_rpc_deadline(double s)
{
	if (s < 0)
		return (gpr_inf_future(GPR_CLOCK_MONOTONIC));
	return (gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
	    gpr_time_from_micros((int64_t)(s * 1e6), GPR_TIMESPAN)));
}

/* A call of method on r's channel that ends after timeout_s seconds (<= 0:
 * never). */
static grpc_call *
ctl_rpc_call_new(struct ctl_rpc *r, const char *method, double timeout_s)
{
	gpr_timespec	 deadline;
	grpc_slice	 mslice;
	grpc_call	*call;
	char		 path[128];

	deadline = timeout_s <= 0 ? gpr_inf_future(GPR_CLOCK_REALTIME) :
	    ctl_rpc_deadline(timeout_s);
	snprintf(path, sizeof path, CTL_RPC_SERVICE "%s", method);
	/* A copy: the call may read the method after path is gone. */
	mslice = grpc_slice_from_copied_string(path);
	call = grpc_channel_create_call(r->channel, NULL,
	    GRPC_PROPAGATE_DEFAULTS, r->cq, mslice, NULL, deadline, NULL);
	grpc_slice_unref(mslice);
	return (call);
}

/* Whether md holds the mark of a call nkid did not start. */
static int
ctl_rpc_marked(const grpc_metadata_array *md)
{
	size_t	i;

	for (i = 0; i < md->count; i++) {
		if (grpc_slice_str_cmp(md->metadata[i].key,
		    CTL_RPC_RETRYABLE_KEY) == 0 &&
		    grpc_slice_str_cmp(md->metadata[i].value, "1") == 0)
			return (1);
	}
	return (0);
}

/* One try of ctl_rpc_call; *marked: nkid marked the failure retryable. */
static int
ctl_rpc_call_once(struct ctl_rpc *r, const char *method,
    const ProtobufCMessage *req, const ProtobufCMessageDescriptor *reply_desc,
    double timeout_s, ProtobufCMessage **reply, struct ctl_rpc_status *st,
    int *marked)
{
	grpc_metadata_array	 md_initial, md_trailing;
	grpc_byte_buffer	*send_bb = NULL, *recv_bb = NULL;
	grpc_status_code	 code = GRPC_STATUS_UNKNOWN;
	grpc_slice		 details = grpc_empty_slice();
	const char		*error_string = NULL;
	grpc_op			 ops[6];
	grpc_call		*call;
	grpc_call_error		 cerr;
	int			 rc = -1;

	assert(r != NULL && method != NULL && req != NULL && reply != NULL);
	memset(st, 0, sizeof *st);
	*reply = NULL;

	if ((send_bb = ctl_rpc_pack(req)) == NULL) {
		st->code = GRPC_STATUS_RESOURCE_EXHAUSTED;
		snprintf(st->msg, sizeof st->msg,
		    "out of memory for a request of %zu bytes",
		    protobuf_c_message_get_packed_size(req));
		return (-1);
	}
	call = ctl_rpc_call_new(r, method, timeout_s);
	grpc_metadata_array_init(&md_initial);
	grpc_metadata_array_init(&md_trailing);

	memset(ops, 0, sizeof ops);
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = send_bb;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &md_initial;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &recv_bb;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &md_trailing;
	ops[5].data.recv_status_on_client.status = &code;
	ops[5].data.recv_status_on_client.status_details = &details;
	ops[5].data.recv_status_on_client.error_string = &error_string;

	cerr = grpc_call_start_batch(call, ops, 6, call, NULL);
	if (cerr != GRPC_CALL_OK) {
		st->code = GRPC_STATUS_INTERNAL;
		snprintf(st->msg, sizeof st->msg, "cannot start the call: %s",
		    grpc_call_error_to_string(cerr));
		goto out;
	}
	ctl_rpc_wait(r, call);

	st->code = code;
	if (code != GRPC_STATUS_OK) {
		char *d = grpc_slice_to_c_string(details);

		*marked = ctl_rpc_marked(&md_trailing);

		snprintf(st->msg, sizeof st->msg, "%s",
		    *d ? d : error_string ? error_string : "no message");
		gpr_free(d);
		/* UNAVAILABLE before any answer: is anyone listening? */
		if (code == GRPC_STATUS_UNAVAILABLE) {
			int e = ctl_rpc_probe(r->path);

			if (e != 0)
				ctl_rpc_fail_connect(st, e, NULL);
		}
		goto out;
	}
	if (recv_bb == NULL) {
		st->code = GRPC_STATUS_INTERNAL;
		snprintf(st->msg, sizeof st->msg, "no reply message");
		goto out;
	}
	if (ctl_rpc_unpack(recv_bb, reply_desc, reply) < 0) {
		st->code = GRPC_STATUS_INTERNAL;
		snprintf(st->msg, sizeof st->msg, "cannot read the reply");
		goto out;
	}
	if (*reply == NULL) {
		st->code = GRPC_STATUS_INTERNAL;
		snprintf(st->msg, sizeof st->msg, "malformed %s reply",
		    reply_desc->short_name);
		goto out;
	}
	rc = 0;
out:
	if (error_string != NULL)
		gpr_free((void *)error_string);
	grpc_slice_unref(details);
	grpc_metadata_array_destroy(&md_initial);
	grpc_metadata_array_destroy(&md_trailing);
	if (recv_bb != NULL)
		grpc_byte_buffer_destroy(recv_bb);
	grpc_byte_buffer_destroy(send_bb);
	grpc_call_unref(call);
	return (rc);
}

/* A new connection for r, waiting (until end) for a nkid that restarts. */
static int
ctl_rpc_reconnect(struct ctl_rpc *r, double end, struct ctl_rpc_status *st)
{
	grpc_channel_credentials	*creds;
	char				 target[CTL_RPC_PATH_MAX + 8];
	double				 wait = CTL_RPC_WAIT_FIRST;
	int				 fd;

	for (;;) {
		if ((fd = ctl_rpc_connect(r->path)) >= 0)
			break;
		if ((fd != -ENOENT && fd != -ECONNREFUSED) ||
		    ctl_rpc_now() >= end)
			return (ctl_rpc_fail_connect(st, -fd, NULL));
		ctl_rpc_sleep(wait);
		wait = wait * 2 > CTL_RPC_WAIT_MAX ? CTL_RPC_WAIT_MAX :
		    wait * 2;
	}
	snprintf(target, sizeof target, "unix:%s", r->path);
	grpc_channel_destroy(r->channel);
	creds = grpc_insecure_credentials_create();
	r->channel = grpc_channel_create_from_fd(target, fd, creds,
	    &r->chargs);
	grpc_channel_credentials_release(creds);
	return (r->channel != NULL ? 0 : ctl_rpc_fail_connect(st, EPROTO,
	    "cannot create a gRPC channel"));
}

/* gRPC's words for a call cut with its connection, or never sent; any
 * other UNAVAILABLE is nkid's own answer (a busy device), final. */
static const char *const ctl_rpc_cut_words[] = {
	"stream removed", "socket closed", "connection reset", "goaway",
	"cancelling all calls", "recvmsg", "sendmsg", "broken pipe",
	"failed to connect", "connection refused", "transport closed",
	"endpoint closing", "server shutdown",
};

static int
ctl_rpc_cut(const struct ctl_rpc_status *st)
{
	size_t	i;

	if (st->connect_errno != 0)
		return (1);
	for (i = 0; i < sizeof ctl_rpc_cut_words /
	    sizeof ctl_rpc_cut_words[0]; i++) {
		if (strcasestr(st->msg, ctl_rpc_cut_words[i]) != NULL)
			return (1);
	}
	return (0);
}

/* Whether a failed call is sent again: marked by nkid (never started),
 * or cut with its connection and idempotent (it may have run). */
static int
ctl_rpc_retry(const char *method, const struct ctl_rpc_status *st, int marked)
{
	if (st->code == GRPC_STATUS_UNAVAILABLE && marked)
		return (1);
	if (!ctl_rpc_idempotent_method(method))
		return (0);
	if (st->code == GRPC_STATUS_UNAVAILABLE)
		return (ctl_rpc_cut(st));
	/* gRPC's own word for a call cut; nkid's say what and why. */
	return (st->code == GRPC_STATUS_CANCELLED &&
	    (strcasecmp(st->msg, "cancelled") == 0 ||
	    strcmp(st->msg, "no message") == 0));
}

int
ctl_rpc_call(struct ctl_rpc *r, const char *method, const ProtobufCMessage *req,
    const ProtobufCMessageDescriptor *reply_desc, double timeout_s,
    ProtobufCMessage **reply, struct ctl_rpc_status *st)
{
	double	start = ctl_rpc_now(), end, cap, left = timeout_s;
	double	wait = CTL_RPC_WAIT_FIRST;
	int	marked;

	if (ctl_rpc_reconnect_timeout(&cap) != 0)
		cap = CTL_RPC_RECONNECT_DEFAULT;
	end = start + cap;
	if (timeout_s > 0 && start + timeout_s < end)
		end = start + timeout_s;
	for (;;) {
		marked = 0;
		if (ctl_rpc_call_once(r, method, req, reply_desc, left, reply,
		    st, &marked) == 0)
			return (0);
		if (!ctl_rpc_retry(method, st, marked) || ctl_rpc_now() >= end)
			return (-1);
		ctl_rpc_sleep(wait);
		wait = wait * 2 > CTL_RPC_WAIT_MAX ? CTL_RPC_WAIT_MAX :
		    wait * 2;
		if (ctl_rpc_reconnect(r, end, st) != 0)
			return (-1);
		if (timeout_s > 0 && (left = start + timeout_s -
		    ctl_rpc_now()) < 0.001)
			left = 0.001;
	}
}

void
ctl_rpc_close(struct ctl_rpc *r)
{
	if (r == NULL)
		return;
	if (r->channel != NULL)
		grpc_channel_destroy(r->channel);
	if (r->cq != NULL) {
		grpc_completion_queue_shutdown(r->cq);
		while (grpc_completion_queue_next(r->cq,
		    gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
		    GRPC_QUEUE_SHUTDOWN)
			;
		grpc_completion_queue_destroy(r->cq);
	}
	free(r);
	grpc_shutdown();
}

/* ------------------------------------------------------------ streams */

struct ctl_rpc_stream {
	struct ctl_rpc		*r;
	grpc_call		*call;
	grpc_metadata_array	 md_initial;
	grpc_metadata_array	 md_trailing;
	grpc_status_code	 code;
	grpc_slice		 details;
	const char		*error_string;
	grpc_byte_buffer	*send_bb;
	grpc_byte_buffer	*recv_bb;	/* output of the armed receive */
	int			 tag_send;	/* the addresses of these four */
	int			 tag_recv;	/* are the ops' tags */
	int			 tag_status;
	int			 tag_md;
	int			 send_busy;
	int			 recv_busy;
	int			 status_busy;
	int			 recv_ok;
	int			 send_ok;
	int			 md_received;
	int			 finished;
};

/* Wait for completions until tag's op is done (1), or deadline (0). */
static int
ctl_rpc_stream_wait(struct ctl_rpc_stream *cs, int *tag, gpr_timespec deadline)
{
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(cs->r->cq, deadline,
		    NULL);

		if (ev.type == GRPC_QUEUE_TIMEOUT)
			return (0);
		if (ev.type != GRPC_OP_COMPLETE)
			return (1);
		if (ev.tag == &cs->tag_send) {
			cs->send_busy = 0;
			cs->send_ok = ev.success;
		} else if (ev.tag == &cs->tag_recv) {
			cs->recv_busy = 0;
			cs->recv_ok = ev.success;
		} else if (ev.tag == &cs->tag_status) {
			cs->status_busy = 0;
			cs->finished = 1;
		}
		if (ev.tag == tag)
			return (1);
	}
}

int
ctl_rpc_stream_open(struct ctl_rpc *r, const char *method, double timeout_s,
    struct ctl_rpc_stream **out, struct ctl_rpc_status *st)
{
	struct ctl_rpc_stream	*cs;
	grpc_op			 ops[2];

	memset(st, 0, sizeof *st);
	*out = NULL;
	if ((cs = calloc(1, sizeof *cs)) == NULL) {
		st->code = GRPC_STATUS_RESOURCE_EXHAUSTED;
		snprintf(st->msg, sizeof st->msg, "out of memory");
		return (-1);
	}
	cs->r = r;
	cs->details = grpc_empty_slice();
	cs->code = GRPC_STATUS_UNKNOWN;
	grpc_metadata_array_init(&cs->md_initial);
	grpc_metadata_array_init(&cs->md_trailing);
	cs->call = ctl_rpc_call_new(r, method, timeout_s);

	memset(ops, 0, sizeof ops);
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (grpc_call_start_batch(cs->call, ops, 1, &cs->tag_md, NULL) !=
	    GRPC_CALL_OK)
		goto fail;
	ctl_rpc_stream_wait(cs, &cs->tag_md, gpr_inf_future(
	    GPR_CLOCK_MONOTONIC));
	memset(ops, 0, sizeof ops);
	ops[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[0].data.recv_status_on_client.trailing_metadata =
	    &cs->md_trailing;
	ops[0].data.recv_status_on_client.status = &cs->code;
	ops[0].data.recv_status_on_client.status_details = &cs->details;
	ops[0].data.recv_status_on_client.error_string = &cs->error_string;
	if (grpc_call_start_batch(cs->call, ops, 1, &cs->tag_status, NULL) !=
	    GRPC_CALL_OK)
		goto fail;
	cs->status_busy = 1;
	*out = cs;
	return (0);
fail:
	st->code = GRPC_STATUS_INTERNAL;
	snprintf(st->msg, sizeof st->msg, "cannot start the %s call", method);
	ctl_rpc_stream_free(cs);
	return (-1);
}

int
ctl_rpc_stream_send(struct ctl_rpc_stream *cs, const ProtobufCMessage *msg)
{
	grpc_op	op;

	if (cs->finished || (cs->send_bb = ctl_rpc_pack(msg)) == NULL)
		return (-1);
	memset(&op, 0, sizeof op);
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = cs->send_bb;
	if (grpc_call_start_batch(cs->call, &op, 1, &cs->tag_send, NULL) !=
	    GRPC_CALL_OK) {
		grpc_byte_buffer_destroy(cs->send_bb);
		cs->send_bb = NULL;
		return (-1);
	}
	cs->send_busy = 1;
	ctl_rpc_stream_wait(cs, &cs->tag_send,
	    gpr_inf_future(GPR_CLOCK_MONOTONIC));
	grpc_byte_buffer_destroy(cs->send_bb);
	cs->send_bb = NULL;
	return (cs->send_ok ? 0 : -1);
}

int
ctl_rpc_stream_close_send(struct ctl_rpc_stream *cs)
{
	grpc_op	op;

	memset(&op, 0, sizeof op);
	op.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	if (grpc_call_start_batch(cs->call, &op, 1, &cs->tag_send, NULL) !=
	    GRPC_CALL_OK)
		return (-1);
	cs->send_busy = 1;
	ctl_rpc_stream_wait(cs, &cs->tag_send,
	    gpr_inf_future(GPR_CLOCK_MONOTONIC));
	return (cs->send_ok ? 0 : -1);
}

int
ctl_rpc_stream_recv(struct ctl_rpc_stream *cs,
    const ProtobufCMessageDescriptor *desc, double wait_s,
    ProtobufCMessage **msg)
{
	grpc_op	ops[2], *op = ops;
	int	rc;

	*msg = NULL;
	if (!cs->recv_busy) {
		memset(ops, 0, sizeof ops);
		if (!cs->md_received) {
			op->op = GRPC_OP_RECV_INITIAL_METADATA;
			op->data.recv_initial_metadata.recv_initial_metadata =
			    &cs->md_initial;
			op++;
			cs->md_received = 1;
		}
		op->op = GRPC_OP_RECV_MESSAGE;
		op->data.recv_message.recv_message = &cs->recv_bb;
		op++;
		if (grpc_call_start_batch(cs->call, ops, (size_t)(op - ops),
		    &cs->tag_recv, NULL) != GRPC_CALL_OK)
			return (-1);
		cs->recv_busy = 1;
	}
	if (!ctl_rpc_stream_wait(cs, &cs->tag_recv, ctl_rpc_deadline(wait_s)))
		return (2);
	if (cs->recv_busy)
		return (2);	/* woken by another op */
	if (!cs->recv_ok)
		return (-1);
	if (cs->recv_bb == NULL)
		return (0);
	rc = ctl_rpc_unpack(cs->recv_bb, desc, msg);
	grpc_byte_buffer_destroy(cs->recv_bb);
	cs->recv_bb = NULL;
	return (rc == 0 && *msg != NULL ? 1 : -1);
}

int
ctl_rpc_stream_finish(struct ctl_rpc_stream *cs, struct ctl_rpc_status *st)
{
	return (ctl_rpc_stream_finish_within(cs, -1, st));
}

int
ctl_rpc_stream_finish_within(struct ctl_rpc_stream *cs, double wait_s,
    struct ctl_rpc_status *st)
{
	gpr_timespec	deadline = ctl_rpc_deadline(wait_s);

	memset(st, 0, sizeof *st);
	while (cs->status_busy)
		if (!ctl_rpc_stream_wait(cs, &cs->tag_status, deadline)) {
			st->code = GRPC_STATUS_DEADLINE_EXCEEDED;
			snprintf(st->msg, sizeof st->msg, "no status from nkid "
			    "within %g s", wait_s);
			return (2);
		}
	st->code = cs->code;
	if (cs->code != GRPC_STATUS_OK) {
		char *d = grpc_slice_to_c_string(cs->details);

		snprintf(st->msg, sizeof st->msg, "%s", *d ? d :
		    cs->error_string ? cs->error_string : "no message");
		gpr_free(d);
		if (cs->code == GRPC_STATUS_UNAVAILABLE) {
			int e = ctl_rpc_probe(cs->r->path);

			if (e != 0)
				ctl_rpc_fail_connect(st, e, NULL);
		}
		return (-1);
	}
	return (0);
}

void
ctl_rpc_stream_cancel(struct ctl_rpc_stream *cs)
{
	if (cs != NULL && cs->call != NULL && !cs->finished)
		grpc_call_cancel(cs->call, NULL);
}

void
ctl_rpc_stream_free(struct ctl_rpc_stream *cs)
{
	if (cs == NULL)
		return;
	if (cs->call != NULL) {
		if (!cs->finished)
			grpc_call_cancel(cs->call, NULL);
		while (cs->send_busy || cs->recv_busy || cs->status_busy) {
			int *tag = cs->status_busy ? &cs->tag_status :
			    cs->recv_busy ? &cs->tag_recv : &cs->tag_send;

			ctl_rpc_stream_wait(cs, tag,
			    gpr_inf_future(GPR_CLOCK_MONOTONIC));
		}
		grpc_call_unref(cs->call);
	}
	if (cs->recv_bb != NULL)
		grpc_byte_buffer_destroy(cs->recv_bb);
	if (cs->send_bb != NULL)
		grpc_byte_buffer_destroy(cs->send_bb);
	if (cs->error_string != NULL)
		gpr_free((void *)cs->error_string);
	grpc_slice_unref(cs->details);
	grpc_metadata_array_destroy(&cs->md_initial);
	grpc_metadata_array_destroy(&cs->md_trailing);
	free(cs);
}
