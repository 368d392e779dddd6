/* cache_dir.c: the directories nkid keeps its state in belong to it: owned by its uid or root, writable by nobody else, every directory above them included (as ssh's StrictModes checks a home). */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"

/* The name of uid, or its number. */
static const char *
cache_dir_user(uid_t uid, char *buf, size_t len)
{
	struct passwd	*pw = getpwuid(uid);

	if (pw != NULL)
		snprintf(buf, len, "uid %u (%s)", (unsigned)uid, pw->pw_name);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
	return (buf);
}

/* One directory: owned by us or root, not writable by others (unless
 * sticky, above the path itself) nor by a group not ours. */
static int
cache_dir_one(const char *what, const char *path, const char *dir, int top,
    char *err, size_t errlen)
{
	struct stat	sb;
	char		who[64], me[64];

	if (stat(dir, &sb) == -1) {
		snprintf(err, errlen, "%s '%s': cannot check '%s': %s", what,
		    path, dir, strerror(errno));
		return (CACHE_EIO);
	}
	if (!S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "%s '%s': '%s' is not a directory",
		    what, path, dir);
		return (CACHE_EIO);
	}
	if (sb.st_uid != geteuid() && sb.st_uid != 0) {
		snprintf(err, errlen, "%s '%s': '%s' belongs to %s, not to "
		    "%s%s: another user could replace what nkid keeps there "
		    "(chown it, or choose another directory)", what, path, dir,
		    cache_dir_user(sb.st_uid, who, sizeof who), geteuid() == 0 ?
		    "root" : cache_dir_user(geteuid(), me, sizeof me),
		    geteuid() == 0 ? "" : " (nkid) or root");
		return (CACHE_EIO);
	}
	if (((sb.st_mode & S_IWOTH) && (top || !(sb.st_mode & S_ISVTX))) ||
	    ((sb.st_mode & S_IWGRP) && sb.st_gid != getegid() &&
	    (top || !(sb.st_mode & S_ISVTX)))) {
		snprintf(err, errlen, "%s '%s': '%s' (owner %s, mode %04o) is "
		    "writable by other users (chmod go-w it)", what, path,
		    dir, cache_dir_user(sb.st_uid, who, sizeof who),
		    (unsigned)(sb.st_mode & 07777));
		return (CACHE_EIO);
	}
	return (0);
}

/* path and every directory above it, as named. */
static int
cache_dir_chain(const char *what, const char *path, const char *named,
    char *err, size_t errlen)
{
	char	buf[PATH_MAX], *p;
	int	rc;

	snprintf(buf, sizeof buf, "%s", named);
	while ((p = strrchr(buf, '/')) != NULL && p != buf && p[1] == '\0')
		*p = '\0';
	if ((rc = cache_dir_one(what, path, buf, 1, err, errlen)) != 0)
		return (rc);
	while ((p = strrchr(buf, '/')) != NULL) {
		p[p == buf ? 1 : 0] = '\0';
		if ((rc = cache_dir_one(what, path, buf, 0, err, errlen)) != 0)
			return (rc);
		if (p == buf)
			break;
	}
	return (0);
}

int
cache_dir_secure(const char *what, const char *path, char *err,
    size_t errlen)
{
	char	real[PATH_MAX];
	int	rc;

	if (strlen(path) >= sizeof real || path[0] != '/') {
		snprintf(err, errlen, "%s '%s': not an absolute path", what,
		    path);
		return (CACHE_EINVAL);
	}
	/* As named (the directories holding any link on the way), and
	 * where the links lead. */
	if ((rc = cache_dir_chain(what, path, path, err, errlen)) != 0)
		return (rc);
	if (realpath(path, real) == NULL) {
		snprintf(err, errlen, "%s '%s': %s", what, path,
		    strerror(errno));
		return (CACHE_EIO);
	}
	if (strcmp(real, path) != 0)
		return (cache_dir_chain(what, path, real, err, errlen));
	return (0);
}
