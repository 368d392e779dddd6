/* server.h: nkid's server: the socket (server_listen.c), accepting (server_accept.c) and the gRPC bridge. */
#ifndef NKID_SERVER_H
#define NKID_SERVER_H

#include <stddef.h>

struct daemon;
struct server;

/*
 * The trailing metadata key, value "1", of an UNAVAILABLE status sent while
 * nkid stops: the call's work never started (a queued job dropped, a job
 * refused, a call of a closed connection) and the client may send it again
 * to the next nkid, whatever the method (docs/protocol.md, "Restarts").
 */
#define SERVER_RETRYABLE_KEY	"nkid-retryable"

/*
 * Take the lock beside the socket's path (refusing, with the holder's pid
 * in err, if another nkid holds it): the path of the socket systemd
 * passed, if any (d->cfg.socket then becomes that path), else
 * d->cfg.socket, which nkid creates. Take the per-core locks, start gRPC
 * core and the completion-queue thread, and start accepting on d->loop.
 * grpc_init must have been called. On failure returns -1 with a message
 * in err and nothing to free. d->server is set on success.
 */
int	server_open(struct daemon *d, char *err, size_t errlen);
/*
 * Stop accepting, let the calls in flight finish within
 * shutdown_grace_ms, cancel the rest, then tear gRPC down in order and
 * close the server's loop handles; done(arg) runs on the loop once all of
 * that is over. Safe to call twice (the second call does nothing).
 */
void	server_stop(struct server *s, void (*done)(void *), void *arg);
/* Close s after its done callback ran: the socket, its lock and the
 * device locks (devlock), then free it. NULL is fine. */
void	server_close(struct server *s);
/* The path of the listening socket (borrowed from s). */
const char *server_socket_path(const struct server *s);

#endif /* NKID_SERVER_H */
