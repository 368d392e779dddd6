/* ctl_rpc.h: nkictl's gRPC client: one channel to nkid's Unix socket, one completion queue, blocking unary and streaming calls of protobuf-c messages. */
#ifndef NKID_CTL_RPC_H
#define NKID_CTL_RPC_H

#include <protobuf-c/protobuf-c.h>

/* Largest socket path (sun_path without its NUL). */
#define CTL_RPC_PATH_MAX	107
/* The longest wait for nkid to come back, in seconds, unless the
 * environment variable says otherwise (docs/protocol.md, "Restarts"). */
#define CTL_RPC_RECONNECT_ENV		"NKID_RECONNECT_TIMEOUT"
#define CTL_RPC_RECONNECT_DEFAULT	30.0

struct ctl_rpc;
struct ctl_rpc_stream;

/* How a call ended. code is a grpc_status_code (0: OK). connect_errno is
 * set (an errno value) when nkid could not be reached at all: the socket
 * is missing, not a socket, not accessible, or nobody listens on it. */
struct ctl_rpc_status {
	int	code;
	int	connect_errno;
	char	msg[1024];
};

/*
 * Check the socket path (exists, is a socket, writable: without touching
 * nkid), connect and create the channel; initializes gRPC on first use.
 * A socket that is missing or refuses is waited for (1 ms doubling to
 * 50 ms, at most NKID_RECONNECT_TIMEOUT seconds) when a nkid ran there
 * (the socket or its lock file exists): nkid restarting. On success
 * *out is the client, freed with ctl_rpc_close. On failure returns -1
 * with st->connect_errno and st->msg set (e.g. "No such file or
 * directory").
 */
int	 ctl_rpc_open(const char *socket_path, struct ctl_rpc **out,
	    struct ctl_rpc_status *st);
/* Destroy the channel and queue and shut gRPC down. NULL is a no-op. */
void	 ctl_rpc_close(struct ctl_rpc *r);

/*
 * Call method ("Status": the service's method name) with req and wait for
 * the reply, at most timeout_s seconds. A call nkid answered UNAVAILABLE
 * marked retryable (it stopped before starting it), or that failed with its
 * connection and is idempotent (ctl_rpc_idempotent_method), is sent again
 * on a new connection, waiting for nkid to come back within timeout_s and
 * NKID_RECONNECT_TIMEOUT. On success returns 0 and *reply
 * is a message of reply_desc, freed by the caller with
 * protobuf_c_message_free_unpacked(*reply, NULL). On failure returns -1
 * and fills st: a gRPC status (code, message), or connect_errno if the
 * call failed UNAVAILABLE because nkid's socket refuses connections.
 */
int	 ctl_rpc_call(struct ctl_rpc *r, const char *method,
	    const ProtobufCMessage *req,
	    const ProtobufCMessageDescriptor *reply_desc, double timeout_s,
	    ProtobufCMessage **reply, struct ctl_rpc_status *st);

/*
 * Streaming calls (server, client or bidi streams) on r: one per ctl_rpc
 * at a time. Open starts the call (deadline timeout_s, none if <= 0);
 * send waits until gRPC took the message; recv waits for one message at
 * most wait_s seconds (< 0: forever); finish waits for the status.
 */

/* Start method; 0 and *out (freed with ctl_rpc_stream_free), or -1. */
int	 ctl_rpc_stream_open(struct ctl_rpc *r, const char *method,
	    double timeout_s, struct ctl_rpc_stream **out,
	    struct ctl_rpc_status *st);
/* Send msg; 0, or -1 if the call has ended (see ctl_rpc_stream_finish). */
int	 ctl_rpc_stream_send(struct ctl_rpc_stream *cs,
	    const ProtobufCMessage *msg);
/* No more messages from this side (half-close); 0 or -1. */
int	 ctl_rpc_stream_close_send(struct ctl_rpc_stream *cs);
/*
 * Receive one message of desc: 1 and *msg (free with
 * protobuf_c_message_free_unpacked), 0 at the end of the stream, 2 if
 * wait_s passed first (the receive stays armed: call again), -1 on error
 * (a malformed message, or the call failed: see ctl_rpc_stream_finish).
 */
int	 ctl_rpc_stream_recv(struct ctl_rpc_stream *cs,
	    const ProtobufCMessageDescriptor *desc, double wait_s,
	    ProtobufCMessage **msg);
/* Wait for the call's status into st; 0 if OK, else -1. */
int	 ctl_rpc_stream_finish(struct ctl_rpc_stream *cs,
	    struct ctl_rpc_status *st);
/* The same, at most wait_s seconds (< 0: forever); 2 if the status has
 * not come by then (the call stays; free or cancel it). */
int	 ctl_rpc_stream_finish_within(struct ctl_rpc_stream *cs, double wait_s,
	    struct ctl_rpc_status *st);
/* Cancel the call (the server sees the client go away). */
void	 ctl_rpc_stream_cancel(struct ctl_rpc_stream *cs);
/* Cancel if not finished, wait for what is in flight, free. NULL: no-op. */
void	 ctl_rpc_stream_free(struct ctl_rpc_stream *cs);

/* Whether method ("Run") may be sent again after it may have run: its
 * effect is the same once or twice (docs/protocol.md, "Restarts"). */
int	 ctl_rpc_idempotent_method(const char *method);
/* NKID_RECONNECT_TIMEOUT into *out (its default when unset); -1 (and the
 * default) when it is not a number of seconds >= 0. */
int	 ctl_rpc_reconnect_timeout(double *out);

/*
 * Connect to the socket path and close again: 0 if something accepts
 * there, else an errno value. For diagnosis only (nkid sees and counts
 * the connection).
 */
int	 ctl_rpc_probe(const char *socket_path);

#endif /* NKID_CTL_RPC_H */
