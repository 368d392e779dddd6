/* metrics_http.h: the HTTP listener of GET /metrics (libmicrohttpd driven by the loop), configured or passed by systemd. */
#ifndef NKID_METRICS_HTTP_H
#define NKID_METRICS_HTTP_H

#include <stddef.h>

/* The name systemd gives the socket (FileDescriptorName= in
 * nkid-metrics.socket). */
#define METRICS_HTTP_FDNAME	"metrics"

struct daemon;
struct metrics_http;

/*
 * Take the socket named METRICS_HTTP_FDNAME out of the ones systemd passed
 * (LISTEN_FDS, LISTEN_FDNAMES): *fd becomes a close-on-exec copy of it, and
 * the others are renumbered from SD_LISTEN_FDS_START with LISTEN_FDS and
 * LISTEN_FDNAMES rewritten, so that the server sees only its own socket.
 * *fd is -1 when systemd passed none by that name. Changes the
 * environment: call before any thread starts (before grpc_init). Returns
 * 0, or -1 with a message in err when the named descriptor is not a
 * listening stream socket or cannot be moved.
 */
int	metrics_http_systemd_take(int *fd, char *err, size_t errlen);
/*
 * Serve GET /metrics on d's loop: on fd (from metrics_http_systemd_take)
 * when it is not -1, else on d->cfg.metrics_listen (HOST:PORT or a unix
 * socket path) when that is not "", else nowhere (*out = NULL, return 0).
 * The HTTP server has no threads of its own: the loop polls its epoll
 * descriptor and runs its timeouts, and requests are answered on the loop
 * thread from d's state (docs/metrics.md). Takes fd over in every case. On
 * failure returns -1 with a message naming metrics.listen in err. Closed
 * with metrics_http_close.
 */
int	metrics_http_open(struct metrics_http **out, struct daemon *d, int fd,
	    char *err, size_t errlen);
/*
 * Stop serving at once (open connections are closed), remove the unix
 * socket if nkid made it, and close the loop handles; mh is freed from
 * their close callbacks, so the loop must run again. NULL is allowed.
 */
void	metrics_http_close(struct metrics_http *mh);
/* Where mh listens, for logs and tests ("127.0.0.1:9464", a path). */
const char *metrics_http_where(const struct metrics_http *mh);

#endif /* NKID_METRICS_HTTP_H */
