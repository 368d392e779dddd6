/* fastpath.h: the fast path for warm calls: a SOCK_SEQPACKET connection per client, offered by the FastPath RPC, carrying unary calls as frames without HTTP/2 into the same dispatch, scheduler and limits (docs/protocol.md, "Fast path"). */
#ifndef NKID_FASTPATH_H
#define NKID_FASTPATH_H

#include <stddef.h>
#include <stdint.h>

struct daemon;
struct fastpath;
struct rpc_call;

/* The version of the frames below (FastPathReply.version). */
#define FASTPATH_VERSION	1

/*
 * The frames, little-endian, one per SOCK_SEQPACKET message. A request:
 * struct fastpath_req then the method's request message; a reply:
 * struct fastpath_reply, the status message (msg_len bytes, UTF-8), then
 * the reply message (reply_len bytes, status OK only). The first frame on
 * a connection is nkid's hello: a reply with id 0 and status 0.
 */
struct fastpath_req {
	uint32_t	kind;		/* FASTPATH_CALL or FASTPATH_CANCEL */
	uint32_t	id;		/* the caller's, not 0; unique in flight */
	uint32_t	method;		/* FASTPATH_M_*; CANCEL: 0 */
	uint32_t	timeout_ms;	/* 0: no deadline */
};

struct fastpath_reply {
	uint32_t	id;		/* the call's; 0: the connection's */
	int32_t		status;		/* a gRPC status code */
	uint32_t	msg_len;
	uint32_t	reply_len;
};

enum fastpath_kind {
	FASTPATH_CALL = 1,
	FASTPATH_CANCEL = 2,
};

/* The methods a frame may call (unary, small replies). */
enum fastpath_method {
	FASTPATH_M_PING = 1,
	FASTPATH_M_RUN = 2,
	FASTPATH_M_SIMULATE = 3,
	FASTPATH_M_LOOKUP = 4,
	FASTPATH_M_COMPILE = 5,
	FASTPATH_M_STATUS = 6,
};

/*
 * Start the fast path of daemon d: rendezvous sockets go to directory dir
 * (the main socket's). Returns NULL with nothing to release when
 * fastpath.max_clients_per_uid is 0 (the fast path is off). Loop thread.
 */
struct fastpath	*fastpath_new(struct daemon *d, const char *dir);
/*
 * For the FastPath RPC: offer call c's process a connection: a one-shot
 * socket in the directory that accepts one connection from c->id's pid and
 * uid within a few seconds. Answers c (the reply, or UNAVAILABLE,
 * RESOURCE_EXHAUSTED at the per-uid limit, INTERNAL).
 */
void	fastpath_offer(struct fastpath *fp, struct rpc_call *c);
/*
 * Stop: no more offers or frames; calls in flight end (after
 * shutdown_grace_ms they are cancelled), then the connections close and
 * done(arg) runs on the loop.
 */
void	fastpath_stop(struct fastpath *fp, void (*done)(void *), void *arg);
/* Free a stopped fast path (its handles close on the loop's next run);
 * NULL is ignored. */
void	fastpath_free(struct fastpath *fp);

/* What /metrics and Status show. */
struct fastpath_stats {
	uint64_t	clients;	/* connections now */
	uint64_t	connected;	/* connections ever */
	uint64_t	calls;		/* frames that started a call */
	uint64_t	refused;	/* rendezvous from the wrong process */
	uint64_t	bad_frames;	/* clients cut off or answered an error */
};
void	fastpath_stats_get(const struct fastpath *fp, struct fastpath_stats *st);

#endif /* NKID_FASTPATH_H */
