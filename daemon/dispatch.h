/* dispatch.h: the method table and the life of one call, independent of the transport. */
#ifndef NKID_DISPATCH_H
#define NKID_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/status.h>
#include <protobuf-c/protobuf-c.h>

#include "daemon/config.h"

#define DISPATCH_SERVICE	"/nkid.v1.Nkid/"

struct daemon;
struct rpc_call;

enum rpc_kind {
	RPC_UNARY,
	RPC_SERVER_STREAM,
	RPC_CLIENT_STREAM,
	RPC_BIDI_STREAM,
};

/* The method replies later, from another callback: the transport starts
 * watching for the client going away (rpc_call.cancelled) first. */
#define RPC_F_ASYNC	0x1

/* One RPC: a const descriptor defined in its rpc_<name>.c (or in
 * dispatch.c for the ones not built yet), listed in dispatch.c's table. */
struct rpc_method {
	const char			*name;		/* "Ping" */
	const char			*path;		/* "/nkid.v1.Nkid/Ping" */
	enum rpc_kind			 kind;
	const ProtobufCMessageDescriptor *request;
	enum config_cap			 cap;		/* receive cap class */
	int				 flags;
	/* Runs on the loop thread with c->req unpacked; must end, now or
	 * later, in exactly one rpc_reply or rpc_fail. NULL: unimplemented. */
	void				(*handler)(struct rpc_call *c);
	/* For handler == NULL: what is missing, for the UNIMPLEMENTED
	 * message ("the cache issue"). */
	const char			*missing;
};

/* Who is calling: the credentials read with SO_PEERCRED at accept. */
struct rpc_identity {
	uint32_t	uid;
	uint32_t	gid;
	uint32_t	pid;
	uint64_t	conn_id;
};

/* How a call's reply leaves nkid: gRPC in server.c, a recorder in tests. */
struct rpc_transport {
	/* Send status (and reply bytes when status is OK and reply != NULL;
	 * the bytes stay valid until release). Called once per call; must
	 * not free c (the transport frees it later, from its own callback). */
	void	(*send)(struct rpc_call *c, const uint8_t *reply, size_t len);
};

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

	/* Becomes non-zero when the client goes away or its deadline
	 * passes; workers read it (sim_run_opts.cancel). */
	volatile int			 cancelled;
	/* Called on the loop thread when cancelled becomes set before the
	 * reply; the handler's pending work uses it to give up early. */
	void				(*on_cancel)(struct rpc_call *c);
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
/* The name of a status code ("INVALID_ARGUMENT"); a static string. */
const char	*rpc_status_name(grpc_status_code code);

/* Methods defined in their own files. */
extern const struct rpc_method rpc_ping_method;
extern const struct rpc_method rpc_status_method;
extern const struct rpc_method rpc_compile_method;
extern const struct rpc_method rpc_run_method;
extern const struct rpc_method rpc_simulate_method;

#endif /* NKID_DISPATCH_H */
