/* server_listen.c: the socket lock, the listening Unix socket nkid creates, and the one systemd passes. */
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/server_listen.h"
#include "daemon/xmalloc.h"

static int
server_listen_group(const char *name, uint32_t *gid, char *err,
    size_t errlen)
{
	char		 buf[16384], *end;
	struct group	 gr, *grp;
	unsigned long	 n;

	if (*name == '\0') {
		*gid = (uint32_t)getegid();
		return (0);
	}
	errno = 0;
	n = strtoul(name, &end, 10);
	if (*end == '\0' && errno == 0 && n < UINT32_MAX) {
		*gid = (uint32_t)n;
		return (0);
	}
	if (getgrnam_r(name, &gr, buf, sizeof buf, &grp) != 0 || grp == NULL) {
		snprintf(err, errlen, "unknown socket_group '%s'", name);
		return (-1);
	}
	*gid = grp->gr_gid;
	return (0);
}

/* The socket systemd passed (LISTEN_FDS), if any: 1 taken, 0 none. */
static int
server_listen_inherit(struct server_listen *l, const struct config *cfg,
    char *err, size_t errlen)
{
	struct sockaddr_un	sun;
	socklen_t		len = sizeof sun;
	struct stat		sb;
	int			n, fd, fl;

	if ((n = sd_listen_fds(1)) <= 0)
		return (0);
	fd = SD_LISTEN_FDS_START;
	if (n > 1)
		log_warn("systemd passed %d sockets; using the first", n);
	if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
		snprintf(err, errlen, "the socket systemd passed (fd %d) is not "
		    "a listening unix stream socket", fd);
		return (-1);
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) == -1) {
		snprintf(err, errlen, "cannot set up fd %d: %s", fd,
		    strerror(errno));
		return (-1);
	}
	/* Its path, unless it is abstract or unnamed: the lock goes there. */
	memset(&sun, 0, sizeof sun);
	if (getsockname(fd, (struct sockaddr *)&sun, &len) == 0 &&
	    sun.sun_family == AF_UNIX && sun.sun_path[0] != '\0') {
		sun.sun_path[sizeof sun.sun_path - 1] = '\0';
		free(l->path);
		l->path = xstrdup(sun.sun_path);
		if (stat(sun.sun_path, &sb) == 0 && *cfg->socket_group == '\0')
			l->gid = (uint32_t)sb.st_gid;
	}
	l->fd = fd;
	l->ours = 0;
	log_info("listening on '%s' (from systemd)", l->path);
	return (1);
}

static int
server_listen_lock(struct server_listen *l, char *err, size_t errlen)
{
	char	buf[32];
	ssize_t	n;
	long	pid;

	l->lock_path = xasprintf("%s.lock", l->path);
	l->lock_fd = open(l->lock_path, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0644);
	if (l->lock_fd == -1) {
		snprintf(err, errlen, "cannot open lock '%s': %s", l->lock_path,
		    strerror(errno));
		return (-1);
	}
	if (flock(l->lock_fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno != EWOULDBLOCK) {
			snprintf(err, errlen, "cannot lock '%s': %s",
			    l->lock_path, strerror(errno));
			return (-1);
		}
		n = pread(l->lock_fd, buf, sizeof buf - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		pid = strtol(buf, NULL, 10);
		if (pid > 0)
			snprintf(err, errlen, "socket '%s' is in use by nkid "
			    "pid %ld (lock '%s')", l->path, pid, l->lock_path);
		else
			snprintf(err, errlen, "socket '%s' is in use by another "
			    "nkid (lock '%s')", l->path, l->lock_path);
		return (-1);
	}
	n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (ftruncate(l->lock_fd, 0) == -1 ||
	    pwrite(l->lock_fd, buf, (size_t)n, 0) != n)
		log_warn("cannot write pid into '%s': %s", l->lock_path,
		    strerror(errno));
	return (0);
}

int
server_listen_open(struct server_listen *l, const struct config *cfg,
    char *err, size_t errlen)
{
	memset(l, 0, sizeof *l);
	l->lock_fd = -1;
	l->fd = -1;
	l->path = xstrdup(cfg->socket);
	if (server_listen_group(cfg->socket_group, &l->gid, err, errlen) != 0)
		goto fail;
	/* First the socket systemd passed, which names the path to lock;
	 * taking it touches no path. */
	if (server_listen_inherit(l, cfg, err, errlen) < 0)
		goto fail;
	if (server_listen_lock(l, err, errlen) != 0)
		goto fail;
	return (0);
fail:
	server_listen_close(l);
	return (-1);
}

int
server_listen_bind(struct server_listen *l, const struct config *cfg,
    char *err, size_t errlen)
{
	struct sockaddr_un	 sun;
	struct stat		 sb;
	char			*dir, *slash;
	mode_t			 old;
	int			 fd;

	if (l->fd != -1)
		return (0);		/* systemd's */
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(l->path) >= sizeof sun.sun_path) {
		snprintf(err, errlen, "socket path '%s' is too long", l->path);
		return (-1);
	}
	strcpy(sun.sun_path, l->path);

	/* Its directory: create one level (systemd's RuntimeDirectory
	 * usually has). */
	dir = xstrdup(l->path);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create directory '%s': %s",
			    dir, strerror(errno));
			free(dir);
			return (-1);
		}
	}
	free(dir);

	/* We hold the lock: a socket left at the path is stale. */
	if (lstat(l->path, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode)) {
			snprintf(err, errlen, "'%s' exists and is not a socket",
			    l->path);
			return (-1);
		}
		if (unlink(l->path) == -1) {
			snprintf(err, errlen, "cannot remove stale socket '%s': "
			    "%s", l->path, strerror(errno));
			return (-1);
		}
		log_info("removed stale socket '%s'", l->path);
	}

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd == -1) {
		snprintf(err, errlen, "cannot create socket: %s",
		    strerror(errno));
		return (-1);
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		umask(old);
		snprintf(err, errlen, "cannot bind '%s': %s", l->path,
		    strerror(errno));
		close(fd);
		return (-1);
	}
	umask(old);
	/* Bound: from here on the path is ours to remove. */
	l->fd = fd;
	l->ours = 1;
	if (*cfg->socket_group != '\0' &&
	    chown(l->path, (uid_t)-1, (gid_t)l->gid) == -1) {
		snprintf(err, errlen, "cannot give '%s' to group %u: %s",
		    l->path, l->gid, strerror(errno));
		return (-1);
	}
	if (chmod(l->path, cfg->socket_mode) == -1) {
		snprintf(err, errlen, "cannot chmod '%s' to %04o: %s",
		    l->path, cfg->socket_mode, strerror(errno));
		return (-1);
	}
	if (listen(fd, SOMAXCONN) == -1) {
		snprintf(err, errlen, "cannot listen on '%s': %s", l->path,
		    strerror(errno));
		return (-1);
	}
	return (0);
}

void
server_listen_stop(struct server_listen *l)
{
	if (l->fd == -1)
		return;
	close(l->fd);
	l->fd = -1;
	if (l->ours && unlink(l->path) == -1 && errno != ENOENT)
		log_warn("cannot remove '%s': %s", l->path, strerror(errno));
	l->ours = 0;
}

void
server_listen_close(struct server_listen *l)
{
	server_listen_stop(l);
	if (l->lock_fd != -1)
		close(l->lock_fd);
	free(l->lock_path);
	free(l->path);
	memset(l, 0, sizeof *l);
	l->lock_fd = -1;
	l->fd = -1;
}
