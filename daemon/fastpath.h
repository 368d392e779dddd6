/* fastpath.h: the fast path for warm calls: a SOCK_SEQPACKET connection per client, offered by the FastPath RPC, carrying unary calls as frames without HTTP/2 into the same dispatch, scheduler and limits (docs/protocol.md, "Fast path"). */
#ifndef NKID_FASTPATH_H
#define NKID_FASTPATH_H

#include <stddef.h>
#include <stdint.h>

#include "proto/fastpath_wire.h"

struct daemon;
struct fastpath;
struct rpc_call;

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
	uint64_t	refused;	/* rendezvous by another process */
	uint64_t	bad_frames;	/* cut off, or answered an error */
};
void	fastpath_stats_get(const struct fastpath *fp,
	    struct fastpath_stats *st);

#endif /* NKID_FASTPATH_H */
