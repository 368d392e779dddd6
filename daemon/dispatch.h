/* dispatch.h: the method table and the life of one call, independent of the transport. */
#ifndef NKID_DISPATCH_H
#define NKID_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/status.h>
#include <protobuf-c/protobuf-c.h>

#include "daemon/config.h"

#define DISPATCH_SERVICE	"/nkid.v1.Nkid/"

/* A method's name and path in its struct rpc_method, from the name
 * alone: DISPATCH_METHOD_NAME("Ping"). */
#define DISPATCH_METHOD_NAME(n)	.name = n, .path = DISPATCH_SERVICE n

struct daemon;
struct rpc_call;
struct sched_job;

enum rpc_kind {
	RPC_UNARY,
	RPC_SERVER_STREAM,
	RPC_CLIENT_STREAM,
	RPC_BIDI_STREAM,
};

/* One RPC: a const descriptor defined in its rpc_<name>.c, listed in
 * dispatch.c's table. Its request and reply messages are those the service
 * declares for name (dispatch_method_proto). */
struct rpc_method {
	const char			*name;		/* "Ping" */
	const char			*path;		/* "/nkid.v1.Nkid/Ping" */
	enum rpc_kind			 kind;
	enum config_cap			 cap;		/* receive cap class */
	/* Runs on the loop thread with c->req unpacked (unary and
	 * server-streaming; NULL for client-streaming and bidi, whose
	 * messages come through rpc_stream_recv); must end, now or later, in
	 * exactly one rpc_reply, rpc_fail or rpc_finish. A unary call not
	 * answered when the handler returns is watched for the client going
	 * away (rpc_call.cancelled) from then on. */
	void				(*handler)(struct rpc_call *c);
};

/* Who is calling: the credentials read with SO_PEERCRED at accept. */
struct rpc_identity {
	uint32_t	uid;
	uint32_t	gid;
	uint32_t	pid;
	uint64_t	conn_id;
	int		admin;		/* root, nkid's uid, access.admin_gids */
};

/*
 * How a call's messages leave and arrive: gRPC in server.c, a recorder in
 * tests. The transport calls back into dispatch (dispatch_stream_sent,
 * dispatch_stream_received) from the loop thread, never from inside one
 * of these functions.
 */
struct rpc_transport {
	/* Send status (and reply bytes when status is OK and reply != NULL;
	 * the bytes stay valid until release). Called once per call; must
	 * not free c (the transport frees it later, from its own callback).
	 * With a stream message in flight, the transport sends the status
	 * after that message. */
	void	(*send)(struct rpc_call *c, const uint8_t *reply, size_t len);
	/* Streams: send one message (bytes valid until
	 * dispatch_stream_sent). Never called with one in flight. */
	void	(*stream_send)(struct rpc_call *c, const uint8_t *msg,
		    size_t len);
	/* Streams: arm one receive; the result comes back through
	 * dispatch_stream_received. Never called with one armed. */
	void	(*stream_recv)(struct rpc_call *c);
};

/* What a receive on a stream brought (dispatch_stream_received). */
enum rpc_recv_result {
	RPC_RECV_MESSAGE = 0,	/* one message */
	RPC_RECV_END,		/* the client half-closed: no more messages */
	RPC_RECV_BROKEN,	/* the call is gone (client away, deadline) */
};

/*
 * Streams, seen from a handler:
 *  - rpc_stream_recv(c, cb): arm one receive. cb(c, msg) runs later on the
 *    loop with msg unpacked (the handler frees it with
 *    protobuf_c_message_free_unpacked), or with msg == NULL when no message
 *    will come: the client half-closed (c->cancelled == 0) or the call
 *    broke (c->cancelled != 0; on_cancel ran or runs too). A message over
 *    the method's receive cap or malformed ends the call (RESOURCE_EXHAUSTED,
 *    INVALID_ARGUMENT) and cb is not called.
 *  - rpc_stream_send(c, msg, cb): pack msg now (it stays the caller's) and
 *    send it; cb(c, ok) runs on the loop when gRPC is done with it (ok == 0:
 *    the client is gone). One send in flight: its cb is the back-pressure.
 *  - rpc_finish(c, code, fmt, ...) ends any call with a status (a send in
 *    flight goes first); rpc_reply ends a unary or client-streaming call
 *    with its one reply.
 * After the call is ended no stream callback runs; state the handler keeps
 * is freed through c->job_release when the transport releases the call.
 */
typedef void (*rpc_recv_cb)(struct rpc_call *c, ProtobufCMessage *msg);
typedef void (*rpc_sent_cb)(struct rpc_call *c, int ok);

struct rpc_call {
	struct daemon			*d;
	const struct rpc_method		*m;
	const struct rpc_transport	*tr;
	struct rpc_identity		 id;
	uint64_t			 start_ns;

	ProtobufCMessage		*req;		/* unpacked request */
	grpc_status_code		 status;
	char				*message;	/* status message */
	uint8_t				*reply;		/* packed reply */
	size_t				 reply_len;
	int				 replied;

	/* The call's deadline in uv_hrtime() nanoseconds; 0: none. */
	uint64_t			 deadline_ns;

	/* Streams (see rpc_stream_recv, rpc_stream_send). */
	rpc_recv_cb			 recv_cb;	/* armed receive */
	rpc_sent_cb			 sent_cb;	/* send in flight */
	uint8_t				*stream_buf;	/* its packed bytes */
	int				 recv_armed;
	int				 recv_done;	/* END or BROKEN seen */
	int				 send_in_flight;
	uint64_t			 stream_in;	/* messages received */
	uint64_t			 stream_out;	/* messages sent */

	/* Becomes non-zero when the client goes away or its deadline
	 * passes; workers read it (sim_run_opts.cancel). */
	volatile int			 cancelled;
	/* Called on the loop thread when cancelled becomes set before the
	 * reply; the handler's pending work uses it to give up early. */
	void				(*on_cancel)(struct rpc_call *c);
	/* Called on the loop thread when the call ends, with status set
	 * (jobs.c records it in the job history). */
	void				(*on_finish)(struct rpc_call *c);
	struct sched_job		*sj;		/* the call's scheduled job */
	void				*job;		/* handler state */
	/* Frees job when the call is released with job still set. */
	void				(*job_release)(void *job);
};

/* Number of methods in the table. */
size_t		 dispatch_method_count(void);
/* Method i of the sorted table (i < dispatch_method_count()). */
const struct rpc_method *dispatch_method(size_t i);
/* The method of a full path ("/nkid.v1.Nkid/Ping") or of a bare name
 * ("Ping"), or NULL. */
const struct rpc_method *dispatch_method_find(const char *name);
/* Index of m in the table. */
size_t		 dispatch_method_index(const struct rpc_method *m);
/* Method m as the service nkid.v1.Nkid (proto/nkid.proto) declares it:
 * its request (input) and reply (output) messages. m->name must be one of
 * the service's methods. */
const ProtobufCMethodDescriptor *dispatch_method_proto(
		    const struct rpc_method *m);

/*
 * Start call c for its method c->m (c->d, c->tr, c->id set by the caller)
 * with the request's bytes: check the method's receive cap, unpack, count,
 * run the handler. The bytes are only read during this call. Every path
 * ends in the transport's send, now or later.
 */
void		 dispatch_call_start(struct rpc_call *c, const uint8_t *data,
		    size_t len);
/* Answer a call for a method nkid does not have: UNIMPLEMENTED. */
void		 dispatch_call_unknown(struct rpc_call *c, const char *path);
/* The transport saw the client go away: set c->cancelled, tell the
 * handler. Harmless after the reply. */
void		 dispatch_call_cancel(struct rpc_call *c);
/* Free what dispatch allocated in c (request, reply, message); not c. */
void		 dispatch_call_release(struct rpc_call *c);

/*
 * Reply to c with msg (packed now; msg stays the caller's) and status OK.
 * Exactly one rpc_reply or rpc_fail per call.
 */
void		 rpc_reply(struct rpc_call *c, const ProtobufCMessage *msg);
/* Reply to c with a non-OK status and a message (printf format). */
void		 rpc_fail(struct rpc_call *c, grpc_status_code code,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/*
 * Cache administration (removing entries, unpinning them) is for root,
 * nkid's own uid and members of access.admin_gids (c->id.admin). For
 * anyone else answers PERMISSION_DENIED with a message naming the policy
 * and action (e.g. "remove cache entries") and returns -1; else 0.
 */
int		 rpc_admin_check(struct rpc_call *c, const char *action);

/* End c with status code (OK allowed) and, when fmt is not NULL, a
 * message; no reply message. The way a stream ends. */
void		 rpc_finish(struct rpc_call *c, grpc_status_code code,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/*
 * Arm one receive on a client-streaming or bidi call; cb runs once, later
 * (see "Streams" above). Returns 0, RPC_EBUSY if a receive is armed, or
 * RPC_EDONE if the call has ended or the client half-closed already.
 */
int		 rpc_stream_recv(struct rpc_call *c, rpc_recv_cb cb);
/*
 * Send msg on a server-streaming or bidi call; cb (may be NULL) runs once,
 * later. Returns 0, RPC_EBUSY if a send is in flight, or RPC_EDONE if the
 * call has ended.
 */
int		 rpc_stream_send(struct rpc_call *c, const ProtobufCMessage *msg,
		    rpc_sent_cb cb);
/* Transport side: the message sent by stream_send is done with (ok == 0:
 * not delivered). Frees its bytes, runs the handler's callback. */
void		 dispatch_stream_sent(struct rpc_call *c, int ok);
/* Transport side: the armed receive completed with what (data/len read
 * only during the call, for RPC_RECV_MESSAGE). Checks the cap, unpacks,
 * runs the handler's callback. */
void		 dispatch_stream_received(struct rpc_call *c,
		    enum rpc_recv_result what, const uint8_t *data, size_t len);
/* Nanoseconds left before c's deadline (0 if passed), or UINT64_MAX if
 * the call has none. */
uint64_t	 rpc_deadline_left_ns(const struct rpc_call *c);

enum rpc_err {
	RPC_OK = 0,
	RPC_EBUSY = -1,		/* one receive armed or one send in flight */
	RPC_EDONE = -2,		/* the call ended, or its input did */
};
const char	*rpc_strerror(int err);

/* The name of a status code ("INVALID_ARGUMENT"); a static string. */
const char	*rpc_status_name(grpc_status_code code);

/* Methods defined in their own files. */
extern const struct rpc_method rpc_ping_method;
extern const struct rpc_method rpc_status_method;
extern const struct rpc_method rpc_compile_method;
extern const struct rpc_method rpc_fast_path_method;
extern const struct rpc_method rpc_run_method;
extern const struct rpc_method rpc_simulate_method;
extern const struct rpc_method rpc_lease_method;
extern const struct rpc_method rpc_jobs_method;
extern const struct rpc_method rpc_cancel_method;
/* The cache's (daemon/rpc_cache_*.c, rpc_lookup.c, rpc_warmup.c). */
extern const struct rpc_method rpc_cache_export_method;
extern const struct rpc_method rpc_cache_import_method;
extern const struct rpc_method rpc_cache_list_method;
extern const struct rpc_method rpc_cache_pin_method;
extern const struct rpc_method rpc_cache_remove_method;
extern const struct rpc_method rpc_cache_stat_method;
extern const struct rpc_method rpc_lookup_method;
extern const struct rpc_method rpc_warmup_method;

#endif /* NKID_DISPATCH_H */
