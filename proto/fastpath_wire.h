/* fastpath_wire.h: the frames of nkid's fast path for warm calls, which nkid, nkictl and the C client library share (docs/protocol.md, "Fast path"). */
#ifndef NKID_FASTPATH_WIRE_H
#define NKID_FASTPATH_WIRE_H

#include <stdint.h>

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

#endif /* NKID_FASTPATH_WIRE_H */
