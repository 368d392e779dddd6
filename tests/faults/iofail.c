/*
 * iofail.c: an LD_PRELOAD shim that makes chosen I/O calls fail, the way
 * SQLite's fault-injection tests do, for make faults.
 *
 * Environment:
 *   IOFAIL_OPS    comma-separated calls to fail: write, pwrite, read, pread,
 *                 fsync, fdatasync, rename, open (default: none: a no-op)
 *   IOFAIL_PATH   only calls on a file whose path contains this (default:
 *                 any regular file; sockets, pipes and ttys never fail)
 *   IOFAIL_AFTER  let this many matching calls succeed first (default 0)
 *   IOFAIL_COUNT  then fail this many (default 1; 0: every one after)
 *   IOFAIL_ERRNO  the error: EIO (default), ENOSPC, EDQUOT, EROFS
 *   IOFAIL_LOG    append one line per injected failure to this file
 */

/*
 * The shim defines both the plain and the 64-bit entry points (open and
 * open64, pread and pread64, ...); with _FILE_OFFSET_BITS=64, which some
 * pkg-config flags in CPPFLAGS bring, the headers would rename the plain
 * ones to the 64-bit names and the two definitions would clash.
 */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

enum iofail_op {
	IOFAIL_WRITE, IOFAIL_PWRITE, IOFAIL_READ, IOFAIL_PREAD, IOFAIL_FSYNC,
	IOFAIL_FDATASYNC, IOFAIL_RENAME, IOFAIL_OPEN, IOFAIL_NOPS,
};

static const char *const iofail_names[IOFAIL_NOPS] = {
	"write", "pwrite", "read", "pread", "fsync", "fdatasync", "rename",
	"open",
};

static int		 iofail_ready;
static int		 iofail_on[IOFAIL_NOPS];
static const char	*iofail_path;
static long		 iofail_after, iofail_count = 1;
static int		 iofail_errno = EIO;
static const char	*iofail_log;
static atomic_long	 iofail_seen;
static atomic_long	 iofail_failed;

static void
iofail_init(void)
{
	const char	*ops, *e;
	int		 i;

	if (iofail_ready)
		return;
	if ((ops = getenv("IOFAIL_OPS")) != NULL) {
		for (i = 0; i < IOFAIL_NOPS; i++) {
			const char	*p = ops;
			size_t		 n = strlen(iofail_names[i]);

			while ((p = strstr(p, iofail_names[i])) != NULL) {
				if ((p == ops || p[-1] == ',') &&
				    (p[n] == '\0' || p[n] == ','))
					iofail_on[i] = 1;
				p += n;
			}
		}
	}
	iofail_path = getenv("IOFAIL_PATH");
	if ((e = getenv("IOFAIL_AFTER")) != NULL)
		iofail_after = atol(e);
	if ((e = getenv("IOFAIL_COUNT")) != NULL)
		iofail_count = atol(e);
	if ((e = getenv("IOFAIL_ERRNO")) != NULL) {
		if (strcmp(e, "ENOSPC") == 0)
			iofail_errno = ENOSPC;
		else if (strcmp(e, "EDQUOT") == 0)
			iofail_errno = EDQUOT;
		else if (strcmp(e, "EROFS") == 0)
			iofail_errno = EROFS;
	}
	iofail_log = getenv("IOFAIL_LOG");
	iofail_ready = 1;
}

/* Does a call on this path (or fd, when path is NULL) match? */
static int
iofail_match(int fd, const char *path)
{
	char		link[64], buf[4096];
	struct stat	st;
	ssize_t		n;

	if (path == NULL) {
		if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
			return (0);
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		if ((n = readlink(link, buf, sizeof buf - 1)) <= 0)
			return (0);
		buf[n] = '\0';
		path = buf;
	}
	return (iofail_path == NULL || strstr(path, iofail_path) != NULL);
}

/* 1 when this call must fail (errno set). */
static int
iofail_hit(enum iofail_op op, int fd, const char *path)
{
	long	seen;
	FILE	*f;
	int	 saved = errno;

	iofail_init();
	if (!iofail_on[op] || !iofail_match(fd, path)) {
		errno = saved;
		return (0);
	}
	seen = atomic_fetch_add(&iofail_seen, 1);
	if (seen < iofail_after || (iofail_count > 0 &&
	    seen >= iofail_after + iofail_count)) {
		errno = saved;
		return (0);
	}
	atomic_fetch_add(&iofail_failed, 1);
	if (iofail_log != NULL && (f = fopen(iofail_log, "a")) != NULL) {
		fprintf(f, "%s %s call %ld: %s\n", iofail_names[op],
		    path != NULL ? path : "(fd)", seen + 1,
		    strerror(iofail_errno));
		fclose(f);
	}
	errno = iofail_errno;
	return (1);
}

/* next: the libc function this one stands in front of. */
#define IOFAIL_NEXT(name) \
	static __typeof__(name) *next; \
	if (next == NULL) \
		next = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

/*
 * The stand-in for libc's type name(params) on a descriptor fd: it fails as
 * op when iofail_hit() says so, and is libc's name(args) otherwise.
 */
#define IOFAIL_FD_CALL(type, name, op, params, args)			\
type									\
name params								\
{									\
	IOFAIL_NEXT(name);						\
	if (iofail_hit(op, fd, NULL))					\
		return (-1);						\
	return (next args);						\
}

IOFAIL_FD_CALL(ssize_t, write, IOFAIL_WRITE,
    (int fd, const void *buf, size_t n), (fd, buf, n))
IOFAIL_FD_CALL(ssize_t, pwrite, IOFAIL_PWRITE,
    (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off))
IOFAIL_FD_CALL(ssize_t, pwrite64, IOFAIL_PWRITE,
    (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off))
IOFAIL_FD_CALL(ssize_t, read, IOFAIL_READ,
    (int fd, void *buf, size_t n), (fd, buf, n))
IOFAIL_FD_CALL(ssize_t, pread, IOFAIL_PREAD,
    (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off))
IOFAIL_FD_CALL(ssize_t, pread64, IOFAIL_PREAD,
    (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off))
IOFAIL_FD_CALL(int, fsync, IOFAIL_FSYNC, (int fd), (fd))
IOFAIL_FD_CALL(int, fdatasync, IOFAIL_FDATASYNC, (int fd), (fd))

int
rename(const char *from, const char *to)
{
	IOFAIL_NEXT(rename);
	if (iofail_hit(IOFAIL_RENAME, -1, to))
		return (-1);
	return (next(from, to));
}

/* open(2) or open64(2) through next; ap holds the mode when flags create. */
static int
iofail_open(int (*next)(const char *, int, ...), const char *path, int flags,
    va_list ap)
{
	mode_t	mode = 0;

	if (flags & (O_CREAT | __O_TMPFILE))
		mode = va_arg(ap, mode_t);
	if (iofail_hit(IOFAIL_OPEN, -1, path))
		return (-1);
	return (next(path, flags, mode));
}

/* The stand-in for open(2) or open64(2), name. */
#define IOFAIL_OPEN_CALL(name)						\
int									\
name(const char *path, int flags, ...)					\
{									\
	va_list	ap;							\
	int	rc;							\
									\
	IOFAIL_NEXT(name);						\
	va_start(ap, flags);						\
	rc = iofail_open(next, path, flags, ap);			\
	va_end(ap);							\
	return (rc);							\
}

IOFAIL_OPEN_CALL(open)
IOFAIL_OPEN_CALL(open64)
