/* server_listen.h: the socket lock, the listening Unix socket nkid creates, and the one systemd passes. */
#ifndef NKID_SERVER_LISTEN_H
#define NKID_SERVER_LISTEN_H

#include <stddef.h>
#include <stdint.h>

struct config;

/* nkid's listening socket, and the lock that makes the path nkid's alone. */
struct server_listen {
	int		 lock_fd;	/* flock held on lock_path; -1: none */
	char		*lock_path;	/* path + ".lock" */
	int		 fd;		/* the listening socket; -1: none */
	int		 ours;		/* nkid bound path (and removes it) */
	char		*path;		/* where the socket is (to be) bound */
	uint32_t	 gid;		/* the socket's group */
};

/*
 * Resolve cfg->socket_group (a name or a number; "": nkid's own group),
 * take the socket systemd passed (LISTEN_FDS), if any, and lock the file
 * beside the socket's path: the path an inherited socket is bound to
 * (getsockname), else cfg->socket. The lock is an exclusive flock on
 * path + ".lock", opened O_CLOEXEC, holding nkid's pid; if another process
 * holds it, err names the socket, that process's pid (as written in the
 * file) and the lock. On success l->path is the socket's path (the caller
 * may adopt it as its config's socket) and everything is released with
 * server_listen_close. On failure returns -1 with a message in err and
 * leaves nothing to release.
 */
int	server_listen_open(struct server_listen *l, const struct config *cfg,
	    char *err, size_t errlen);
/*
 * Unless systemd passed the socket: create l->path's directory (one
 * level), remove a stale socket left there (the lock says no nkid owns
 * it), bind a new socket with cfg->socket_mode whatever the umask, give
 * it the socket's group if cfg->socket_group is set, and listen. l must
 * have been opened. On failure returns -1 with a message in err; the
 * socket is then left for server_listen_close.
 */
int	server_listen_bind(struct server_listen *l, const struct config *cfg,
	    char *err, size_t errlen);
/*
 * Stop listening: close the socket and remove its path if nkid bound it
 * (systemd keeps its own socket). The lock is kept. Whoever polls the
 * socket must have stopped first. Safe to call twice.
 */
void	server_listen_stop(struct server_listen *l);
/* Stop listening if not yet done, release the lock and free l's fields. */
void	server_listen_close(struct server_listen *l);

#endif /* NKID_SERVER_LISTEN_H */
