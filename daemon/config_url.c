/* config_url.c: the addresses a config names: remote.url parsed and probed, a metrics.listen value checked. */
#include <sys/socket.h>
#include <sys/un.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config.h"

int
config_remote_url_parse(const char *url, struct config_remote_url *u,
    char *err, size_t errlen)
{
	const char		*p, *hs, *he, *end;
	char			*e;
	unsigned long		 n;
	size_t			 len;

	memset(u, 0, sizeof *u);
	u->port = 6379;
	if (strncmp(url, "unix://", 7) == 0) {
		p = url + 7;
		len = strcspn(p, "?");
		if (p[0] != '/' || len >= sizeof u->path) {
			snprintf(err, errlen, "'%s' must name an absolute "
			    "socket path shorter than %zu bytes "
			    "(unix:///run/redis/redis.sock)", url,
			    sizeof u->path);
			return (-1);
		}
		memcpy(u->path, p, len);
		u->path[len] = '\0';
		p += len;
		if (*p == '\0')
			return (0);
		if (strncmp(p, "?db=", 4) != 0)
			goto bad;
		errno = 0;
		n = strtoul(p + 4, &e, 10);
		if (p[4] == '\0' || *e != '\0' || errno != 0 || n > 65535)
			goto bad;
		u->db = (unsigned)n;
		return (0);
	}
	if (strncmp(url, "rediss://", 9) == 0) {
		snprintf(err, errlen, "'%s': TLS (rediss://) is not supported; "
		    "use a unix socket, or redis:// through a TLS tunnel", url);
		return (-1);
	}
	if (strncmp(url, "redis://", 8) != 0)
		goto bad;
	p = url + 8;
	end = p + strcspn(p, "/");
	if (memchr(p, '@', (size_t)(end - p)) != NULL) {
		snprintf(err, errlen, "'%s': no user or password in the URL; "
		    "use remote.user and remote.password_file", url);
		return (-1);
	}
	if (*p == '[') {
		hs = p + 1;
		if ((he = memchr(hs, ']', (size_t)(end - hs))) == NULL)
			goto bad;
		p = he + 1;
	} else {
		hs = p;
		he = p + strcspn(p, ":/");
		p = he;
	}
	if (he == hs || (size_t)(he - hs) >= sizeof u->host)
		goto bad;
	memcpy(u->host, hs, (size_t)(he - hs));
	u->host[he - hs] = '\0';
	if (*p == ':') {
		errno = 0;
		n = strtoul(p + 1, &e, 10);
		if (e == p + 1 || errno != 0 || n == 0 || n > 65535 ||
		    (*e != '\0' && *e != '/'))
			goto bad;
		u->port = (unsigned)n;
		p = e;
	}
	if (*p == '/' && p[1] != '\0') {
		errno = 0;
		n = strtoul(p + 1, &e, 10);
		if (!(p[1] >= '0' && p[1] <= '9') || *e != '\0' ||
		    errno != 0 || n > 65535)
			goto bad;
		u->db = (unsigned)n;
	} else if (*p == '/' || *p == '\0')
		;
	else
		goto bad;
	return (0);
bad:
	snprintf(err, errlen, "'%s' is not a Redis URL "
	    "(redis://HOST[:PORT][/DB] or unix:///PATH[?db=DB])", url);
	return (-1);
}

int
config_listen_valid(const char *s)
{
	const char	*colon, *p;
	char		*end;
	unsigned long	 port;

	if (*s == '\0')
		return (1);
	if (*s == '/')
		return (strlen(s) < sizeof(((struct sockaddr_un *)0)->sun_path));
	if ((colon = strrchr(s, ':')) == NULL || !isdigit((unsigned char)
	    colon[1]))
		return (0);
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || errno != 0 || port < 1 || port > 65535)
		return (0);
	if (*s == '[')
		return (colon - s > 2 && colon[-1] == ']' &&
		    strcspn(s + 1, "[]") == (size_t)(colon - s - 2));
	for (p = s; p < colon; p++) {
		if (*p == ':' || *p == '[' || *p == ']' || *p == '/' ||
		    isspace((unsigned char)*p))
			return (0);
	}
	return (1);
}

const char *
config_remote_reach_hint(int errnum)
{
	switch (errnum) {
	case EAFNOSUPPORT:
	case EPERM:
	case EACCES:
	case ENETUNREACH:
	case EHOSTUNREACH:
	case ENETDOWN:
		return ("; under systemd, nkid.service allows unix sockets "
		    "only (PrivateNetwork=yes, IPAddressDeny=any, "
		    "RestrictAddressFamilies=AF_UNIX): install the drop-in "
		    "nkid-remote.conf (docs/operations.md, \"The remote tier "
		    "under systemd\")");
	default:
		return ("");
	}
}

/* Connect to ai within ms; 0, or an errno. */
static int
config_remote_connect(const struct addrinfo *ai, unsigned ms, int *step)
{
	struct pollfd	 pfd;
	socklen_t	 len;
	int		 fd, e, rc;

	*step = 0;
	if ((fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, ai->ai_protocol)) == -1)
		return (errno);
	*step = 1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		close(fd);
		return (0);
	}
	if ((e = errno) != EINPROGRESS) {
		close(fd);
		return (e);
	}
	pfd.fd = fd;
	pfd.events = POLLOUT;
	do
		rc = poll(&pfd, 1, (int)ms);
	while (rc == -1 && errno == EINTR);
	e = ETIMEDOUT;
	len = sizeof e;
	if (rc == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
		e = errno;
	close(fd);
	return (e);
}

int
config_remote_url_reach(const char *url, unsigned timeout_ms, char *why,
    size_t whylen)
{
	struct config_remote_url	 u;
	struct addrinfo			 hints, *res, *ai;
	struct sockaddr_un		 sun;
	struct addrinfo			 uai;
	char				 port[16], where[300];
	int				 rc, e = 0, step = 0;

	if (config_remote_url_parse(url, &u, why, whylen) != 0)
		return (-1);
	if (u.path[0] != '\0') {
		memset(&sun, 0, sizeof sun);
		sun.sun_family = AF_UNIX;
		memcpy(sun.sun_path, u.path, strlen(u.path) + 1);
		memset(&uai, 0, sizeof uai);
		uai.ai_family = AF_UNIX;
		uai.ai_socktype = SOCK_STREAM;
		uai.ai_addr = (struct sockaddr *)&sun;
		uai.ai_addrlen = sizeof sun;
		if ((e = config_remote_connect(&uai, timeout_ms, &step)) == 0)
			return (0);
		snprintf(why, whylen, "cannot connect to '%s': %s", u.path,
		    strerror(e));
		return (-1);
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof port, "%u", u.port);
	if ((rc = getaddrinfo(u.host, port, &hints, &res)) != 0) {
		snprintf(why, whylen, "cannot resolve '%s': %s%s", u.host,
		    rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc),
		    config_remote_reach_hint(ENETUNREACH));
		return (-1);
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if ((e = config_remote_connect(ai, timeout_ms, &step)) == 0)
			break;
	}
	freeaddrinfo(res);
	if (e == 0)
		return (0);
	if (u.host[strcspn(u.host, ":")] != '\0')
		snprintf(where, sizeof where, "[%s]:%u", u.host, u.port);
	else
		snprintf(where, sizeof where, "%s:%u", u.host, u.port);
	if (step == 0)
		snprintf(why, whylen, "cannot open a socket for '%s': %s%s",
		    where, strerror(e), config_remote_reach_hint(e));
	else
		snprintf(why, whylen, "cannot connect to '%s'%s: %s%s", where,
		    e == ETIMEDOUT ? " within remote.timeout_ms" : "",
		    strerror(e), config_remote_reach_hint(e));
	return (-1);
}
