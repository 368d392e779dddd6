/* nkid_fastpath.h: a C client of nkid's fast path for warm calls: set up with the FastPath RPC over gRPC, then one SOCK_SEQPACKET frame each way per call (docs/protocol.md, "Fast path"). */
#ifndef NKID_CLIENT_FASTPATH_H
#define NKID_CLIENT_FASTPATH_H

#include <stddef.h>

#include "proto/fastpath_wire.h"

struct nkid_fastpath;

enum nkid_fastpath_err {
	NKID_FASTPATH_OK = 0,
	NKID_FASTPATH_ESETUP = -1,	/* FastPath failed or was refused */
	NKID_FASTPATH_ELOST = -2,	/* the connection broke (nkid went
					 * away): the call may have run */
	NKID_FASTPATH_ESIZE = -3,	/* the request does not fit a frame:
					 * send it over gRPC */
	NKID_FASTPATH_ETIMEDOUT = -4,	/* no reply within the timeout (the
					 * call was cancelled) */
};

/* One reply, borrowed from the connection until its next call. */
struct nkid_fastpath_reply {
	int		 status;	/* a gRPC status code */
	const char	*message;	/* status message, not terminated */
	size_t		 message_len;
	const void	*data;		/* the reply message (status 0) */
	size_t		 len;
};

/*
 * Set up a fast path to the nkid listening on socket_path: call FastPath
 * over gRPC as this process, connect to the offered rendezvous and read
 * nkid's hello. On failure returns NKID_FASTPATH_ESETUP with a message in
 * err. The caller closes *out with nkid_fastpath_close. Not for use by
 * two threads at once; after fork(), only the process that opened it may
 * use it.
 */
int	nkid_fastpath_open(const char *socket_path, struct nkid_fastpath **out,
	    char *err, size_t errlen);
/*
 * Call method (FASTPATH_M_*) with the request message's len bytes and
 * wait for its reply up to timeout_ms (0: no limit) into *r. Returns 0
 * (the call's status is r->status), NKID_FASTPATH_ESIZE, _ETIMEDOUT or
 * _ELOST (the connection is then unusable: open another, or use gRPC).
 */
int	nkid_fastpath_call(struct nkid_fastpath *fp, unsigned method,
	    const void *req, size_t len, unsigned timeout_ms,
	    struct nkid_fastpath_reply *r);
/* The largest request message a call may send. */
size_t	nkid_fastpath_max_request(const struct nkid_fastpath *fp);
/* Close the connection and free fp; NULL is ignored. */
void	nkid_fastpath_close(struct nkid_fastpath *fp);
/* A message for an nkid_fastpath_err code. */
const char *nkid_fastpath_strerror(int err);

#endif /* NKID_CLIENT_FASTPATH_H */
