/* server_accept.h: accepting connections: peer credentials, the access policy, the connection table, descriptor rotation and refusals. */
#ifndef NKID_SERVER_ACCEPT_H
#define NKID_SERVER_ACCEPT_H

#include <stdint.h>

struct daemon;
struct rpc_identity;
struct server_accept;

/* Who made a call, as server_accept_identify finds it. */
enum server_accept_who {
	SERVER_ACCEPT_ALLOWED = 0,	/* identified */
	SERVER_ACCEPT_REFUSED = 1,	/* identified; its connection is refused */
	SERVER_ACCEPT_UNKNOWN = -1,	/* no connection was accepted there */
	SERVER_ACCEPT_GONE = -2,	/* the call predates the connection there */
};

/*
 * Start accepting on listen_fd (a listening, non-blocking Unix socket that
 * the caller keeps open until server_accept_stop) from d->loop. Each
 * connection has its SO_PEERCRED and SO_PEERGROUPS checked against the
 * access policy (daemon/access.c, with sock_gid as the socket's group),
 * is moved to the next free number of a rotating range in the upper half
 * of RLIMIT_NOFILE (raised up to 65536), recorded, and given to
 * hand_cb(fd, arg), which must hand fd to gRPC core (the fd is then
 * gRPC's to close) and return a sequence stamp taken before gRPC could
 * see fd. A refused peer is handed over too, marked refused (its calls
 * are answered PERMISSION_DENIED), at most 16 at a time; beyond that, and
 * when no number is free, the connection is closed at once. Refusals are
 * logged at most once a second and counted in d->refused; d->connections
 * and d->active_connections are kept up to date. Out of descriptors
 * (EMFILE, ENFILE) nkid stops accepting, refuses one waiting client by
 * way of a reserve descriptor, and tries again when a connection closes
 * or a second later, logging once per episode. Never fails: what it
 * cannot do without is fatal. Freed by server_accept_close.
 */
struct server_accept *server_accept_open(struct daemon *d, int listen_fd,
	    uint32_t sock_gid, uint64_t (*hand_cb)(int, void *), void *arg);
/*
 * Stop accepting for good; listen_fd may be closed as soon as this
 * returns. The connection table stays until server_accept_close. Safe to
 * call twice.
 */
void	server_accept_stop(struct server_accept *a);
/*
 * Stop accepting if not yet done, close a's loop handles and its reserve
 * descriptor, and free a once the handles are closed; done(arg) then runs
 * on the loop. a may not be used after this call.
 */
void	server_accept_close(struct server_accept *a, void (*done)(void *),
	    void *arg);
/*
 * Who made a call on the connection gRPC holds at fd, the call's event
 * having been stamped stamp (from the same counter as hand_cb's stamps):
 * SERVER_ACCEPT_ALLOWED with *id filled, SERVER_ACCEPT_REFUSED with *id
 * filled and *refusal the message to answer with (borrowed, valid until
 * the connection closes), or a negative who when the call's connection
 * is unknown or gone (nothing filled).
 */
int	server_accept_identify(struct server_accept *a, int fd,
	    uint64_t stamp, struct rpc_identity *id, const char **refusal);
/*
 * A refused connection at fd (whose id is conn_id) has been sent its
 * first answer: it is shut down shortly after. Does nothing for any
 * other connection.
 */
void	server_accept_answered(struct server_accept *a, int fd,
	    uint64_t conn_id);
/*
 * Re-check which connections are still open (gRPC closes them on its
 * own), update the counters and shut down refused connections whose time
 * is up. Runs every second by itself.
 */
void	server_accept_sweep(struct server_accept *a);

#endif /* NKID_SERVER_ACCEPT_H */
