/*
 * ctl_rpc.c: blocking unary gRPC calls from nkictl to nkid over a Unix
 * socket (gRPC core 1.51 C API, protobuf-c messages).
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "ctl_rpc.h"

#define CTL_RPC_SERVICE "/nkid.v1.Nkid/"

struct ctl_rpc {
	char path[CTL_RPC_PATH_MAX + 1];
	grpc_channel *channel;
	grpc_completion_queue *cq;
};

static const char *const ctl_rpc_codes[] = {
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
	"RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
};

const char *
ctl_rpc_code_name(int code)
{
	if (code < 0 || (size_t)code >= sizeof(ctl_rpc_codes) /
	    sizeof(ctl_rpc_codes[0]))
		return "UNKNOWN";
	return ctl_rpc_codes[code];
}

static int
ctl_rpc_fail_connect(ctl_rpc_status *st, int err, const char *msg)
{
	st->code = GRPC_STATUS_UNAVAILABLE;
	st->connect_errno = err;
	snprintf(st->msg, sizeof(st->msg), "%s", msg ? msg : strerror(err));
	return -1;
}

int
ctl_rpc_probe(const char *socket_path)
{
	struct sockaddr_un sa;
	int fd, rc = 0;

	if (strlen(socket_path) > CTL_RPC_PATH_MAX)
		return ENAMETOOLONG;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, socket_path, strlen(socket_path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		rc = errno;
	close(fd);
	return rc;
}

int
ctl_rpc_open(const char *socket_path, ctl_rpc **out, ctl_rpc_status *st)
{
	grpc_arg args[4];
	grpc_channel_args chargs = { sizeof(args) / sizeof(args[0]), args };
	grpc_channel_credentials *creds;
	char target[CTL_RPC_PATH_MAX + 8];
	struct stat sb;
	ctl_rpc *r;

	assert(socket_path != NULL && out != NULL && st != NULL);
	memset(st, 0, sizeof(*st));
	*out = NULL;
	/* Diagnose what can be seen without a connection: nkid does not
	 * see (and count) a probe for the common "not running" case. */
	if (*socket_path == '\0')
		return ctl_rpc_fail_connect(st, EINVAL, "empty socket path");
	if (strlen(socket_path) > CTL_RPC_PATH_MAX)
		return ctl_rpc_fail_connect(st, ENAMETOOLONG,
		    "socket path longer than 107 bytes");
	if (stat(socket_path, &sb) < 0)
		return ctl_rpc_fail_connect(st, errno, NULL);
	if (!S_ISSOCK(sb.st_mode))
		return ctl_rpc_fail_connect(st, ENOTSOCK, "not a socket");
	if (access(socket_path, W_OK) < 0)
		return ctl_rpc_fail_connect(st, errno, NULL);

	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return ctl_rpc_fail_connect(st, ENOMEM, NULL);
	snprintf(r->path, sizeof(r->path), "%s", socket_path);
	snprintf(target, sizeof(target), "unix:%s", socket_path);

	/* Receive and send caps set explicitly (the client default is
	 * 4 MiB): tensors and NEFFs travel inline. No retries: a retried call
	 * buffers its request, and nkictl reports failures instead. */
	args[0].type = GRPC_ARG_INTEGER;
	args[0].key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
	args[0].value.integer = INT_MAX;
	args[1].type = GRPC_ARG_INTEGER;
	args[1].key = GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
	args[1].value.integer = INT_MAX;
	args[2].type = GRPC_ARG_INTEGER;
	args[2].key = GRPC_ARG_ENABLE_RETRIES;
	args[2].value.integer = 0;
	args[3].type = GRPC_ARG_INTEGER;
	args[3].key = GRPC_ARG_ENABLE_HTTP_PROXY;
	args[3].value.integer = 0;

	grpc_init();
	creds = grpc_insecure_credentials_create();
	r->channel = grpc_channel_create(target, creds, &chargs);
	grpc_channel_credentials_release(creds);
	r->cq = grpc_completion_queue_create_for_next(NULL);
	if (r->channel == NULL || r->cq == NULL) {
		ctl_rpc_close(r);
		return ctl_rpc_fail_connect(st, EPROTO,
		    "cannot create a gRPC channel");
	}
	*out = r;
	return 0;
}

/* Wait for the completion of tag on r->cq. */
static int
ctl_rpc_wait(ctl_rpc *r, void *tag)
{
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(r->cq,
		    gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_OP_COMPLETE && ev.tag == tag)
			return ev.success ? 0 : -1;
		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			return -1;
	}
}

int
ctl_rpc_call(ctl_rpc *r, const char *method, const ProtobufCMessage *req,
    const ProtobufCMessageDescriptor *reply_desc, double timeout_s,
    ProtobufCMessage **reply, ctl_rpc_status *st)
{
	grpc_metadata_array md_initial, md_trailing;
	grpc_byte_buffer *send_bb = NULL, *recv_bb = NULL;
	grpc_status_code code = GRPC_STATUS_UNKNOWN;
	grpc_slice details = grpc_empty_slice(), body, mslice;
	const char *error_string = NULL;
	char path[128];
	grpc_op ops[6];
	grpc_call *call;
	grpc_call_error cerr;
	gpr_timespec deadline;
	uint8_t *buf;
	size_t len;
	int rc = -1;

	assert(r != NULL && method != NULL && req != NULL && reply != NULL);
	memset(st, 0, sizeof(*st));
	*reply = NULL;

	len = protobuf_c_message_get_packed_size(req);
	buf = malloc(len ? len : 1);
	if (buf == NULL) {
		st->code = GRPC_STATUS_RESOURCE_EXHAUSTED;
		snprintf(st->msg, sizeof(st->msg),
		    "out of memory for a request of %zu bytes", len);
		return -1;
	}
	protobuf_c_message_pack(req, buf);
	/* The slice takes the buffer (no copy) and frees it. */
	body = grpc_slice_new(buf, len, free);
	send_bb = grpc_raw_byte_buffer_create(&body, 1);
	grpc_slice_unref(body);

	if (timeout_s <= 0)
		deadline = gpr_inf_future(GPR_CLOCK_REALTIME);
	else
		deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
		    gpr_time_from_micros((int64_t)(timeout_s * 1e6),
		    GPR_TIMESPAN));
	snprintf(path, sizeof(path), CTL_RPC_SERVICE "%s", method);
	mslice = grpc_slice_from_static_string(path);
	call = grpc_channel_create_call(r->channel, NULL,
	    GRPC_PROPAGATE_DEFAULTS, r->cq, mslice, NULL, deadline, NULL);
	grpc_metadata_array_init(&md_initial);
	grpc_metadata_array_init(&md_trailing);

	memset(ops, 0, sizeof(ops));
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
		snprintf(st->msg, sizeof(st->msg), "cannot start the call: %s",
		    grpc_call_error_to_string(cerr));
		goto out;
	}
	ctl_rpc_wait(r, call);

	st->code = code;
	if (code != GRPC_STATUS_OK) {
		char *d = grpc_slice_to_c_string(details);

		snprintf(st->msg, sizeof(st->msg), "%s",
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
		snprintf(st->msg, sizeof(st->msg), "no reply message");
		goto out;
	}
	{
		grpc_byte_buffer_reader rd;
		grpc_slice all;

		if (!grpc_byte_buffer_reader_init(&rd, recv_bb)) {
			st->code = GRPC_STATUS_INTERNAL;
			snprintf(st->msg, sizeof(st->msg),
			    "cannot read the reply");
			goto out;
		}
		all = grpc_byte_buffer_reader_readall(&rd);
		grpc_byte_buffer_reader_destroy(&rd);
		*reply = protobuf_c_message_unpack(reply_desc, NULL,
		    GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
		grpc_slice_unref(all);
	}
	if (*reply == NULL) {
		st->code = GRPC_STATUS_INTERNAL;
		snprintf(st->msg, sizeof(st->msg), "malformed %s reply",
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
	return rc;
}

void
ctl_rpc_close(ctl_rpc *r)
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
