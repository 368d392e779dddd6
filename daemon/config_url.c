/* config_url.c: the addresses a config names: remote.url parsed, a metrics.listen value checked. */
#include <sys/un.h>

#include <ctype.h>
#include <errno.h>
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
