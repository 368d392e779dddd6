/* devlock.c: flock on lock_dir/core-N for nkid's lifetime, so processes outside nkid that follow the convention stay off its cores. */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/devlock.h"
#include "daemon/errstr.h"
#include "daemon/xmalloc.h"

struct devlock {
	int		*fds;
	unsigned	 n;
};

static long	devlock_opener(int fd, long self);

static const char *devlock_errs[] = {
	[-DEVLOCK_OK] = "success",
	[-DEVLOCK_EOPEN] = "cannot open a core lock file",
	[-DEVLOCK_EHELD] = "a core lock is held by another process",
};

const char *
devlock_strerror(int err)
{
	return (ERRSTR(devlock_errs, err));
}

/* mkdir -p, mode 0755. */
static int
devlock_mkdirs(const char *path)
{
	char	*p = xstrdup(path), *s;
	int	 rc = 0;

	for (s = p + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) == -1 && errno != EEXIST)
			rc = -1;
		*s = '/';
	}
	if (mkdir(p, 0755) == -1 && errno != EEXIST)
		rc = -1;
	else
		rc = 0;
	free(p);
	return (rc);
}

long
devlock_holder(int fd, long self)
{
	struct stat	 sb;
	FILE		*f;
	char		 line[256], type[16];
	unsigned	 maj, min;
	unsigned long	 ino;
	long		 pid, found = 0;

	if (fstat(fd, &sb) == -1 || (f = fopen("/proc/locks", "re")) == NULL)
		return (0);
	while (fgets(line, sizeof line, f) != NULL) {
		/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" */
		if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%lu", type, &pid,
		    &maj, &min, &ino) != 5)
			continue;
		if (strcmp(type, "FLOCK") != 0 || pid == self)
			continue;
		if (maj == major(sb.st_dev) && min == minor(sb.st_dev) &&
		    ino == (unsigned long)sb.st_ino) {
			found = pid;
			break;
		}
	}
	fclose(f);
	if (found > 0) {
		snprintf(line, sizeof line, "/proc/%ld", found);
		if (access(line, F_OK) == -1 && (pid = devlock_opener(fd,
		    self)) > 0)
			found = pid;
	}
	return (found);
}

/* A live process other than self with the file of fd open: /proc/locks
 * names the process that took an flock, which may have exited while a
 * child it passed the descriptor to holds the lock. 0 if none. */
static long
devlock_opener(int fd, long self)
{
	struct stat	 sb, fb;
	DIR		*proc, *fds;
	struct dirent	*p, *f;
	char		 path[300];
	long		 pid, found = 0;

	if (fstat(fd, &sb) == -1 || (proc = opendir("/proc")) == NULL)
		return (0);
	while (found == 0 && (p = readdir(proc)) != NULL) {
		if ((pid = strtol(p->d_name, NULL, 10)) <= 0 || pid == self)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/fd", pid);
		if ((fds = opendir(path)) == NULL)
			continue;
		while ((f = readdir(fds)) != NULL) {
			snprintf(path, sizeof path, "/proc/%ld/fd/%s", pid,
			    f->d_name);
			if (f->d_name[0] != '.' && stat(path, &fb) == 0 &&
			    fb.st_dev == sb.st_dev && fb.st_ino == sb.st_ino) {
				found = pid;
				break;
			}
		}
		closedir(fds);
	}
	closedir(proc);
	return (found);
}

/* "python3" from /proc/PID/comm, or "?". */
static void
devlock_comm(long pid, char *buf, size_t len)
{
	char	 path[64];
	FILE	*f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof path, "/proc/%ld/comm", pid);
	if ((f = fopen(path, "re")) == NULL)
		return;
	if (fgets(buf, (int)len, f) != NULL)
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

int
devlock_open(const char *lock_dir, unsigned ncores, struct devlock **out,
    char *err, size_t errlen)
{
	struct devlock	*dl;
	char		*path, pidbuf[32], comm[64];
	unsigned	 i;
	long		 holder;
	int		 fd, n;

	*out = NULL;
	if (devlock_mkdirs(lock_dir) == -1) {
		snprintf(err, errlen, "cannot create lock_dir '%s': %s",
		    lock_dir, strerror(errno));
		return (DEVLOCK_EOPEN);
	}
	dl = xcalloc(1, sizeof *dl);
	dl->fds = xcalloc(ncores, sizeof *dl->fds);
	for (i = 0; i < ncores; i++) {
		path = xasprintf("%s/core-%u", lock_dir, i);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd == -1) {
			snprintf(err, errlen, "cannot open core lock '%s': %s",
			    path, strerror(errno));
			free(path);
			devlock_close(dl);
			return (DEVLOCK_EOPEN);
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
			if (errno != EWOULDBLOCK) {
				snprintf(err, errlen, "cannot lock '%s': %s",
				    path, strerror(errno));
				close(fd);
				free(path);
				devlock_close(dl);
				return (DEVLOCK_EOPEN);
			}
			holder = devlock_holder(fd, (long)getpid());
			devlock_comm(holder, comm, sizeof comm);
			if (holder > 0)
				snprintf(err, errlen, "core %u is held by pid %ld "
				    "(%s) through '%s': stop it, or give nkid "
				    "another lock_dir", i, holder, comm, path);
			else
				snprintf(err, errlen, "core %u is held by another "
				    "process through '%s'", i, path);
			close(fd);
			free(path);
			devlock_close(dl);
			return (DEVLOCK_EHELD);
		}
		n = snprintf(pidbuf, sizeof pidbuf, "%ld\n", (long)getpid());
		if (ftruncate(fd, 0) == 0 && pwrite(fd, pidbuf, (size_t)n, 0) !=
		    n) {
			/* The pid is a courtesy; the flock is what counts. */
		}
		dl->fds[dl->n++] = fd;
		free(path);
	}
	*out = dl;
	return (DEVLOCK_OK);
}

void
devlock_close(struct devlock *dl)
{
	unsigned	i;

	if (dl == NULL)
		return;
	for (i = 0; i < dl->n; i++)
		close(dl->fds[i]);
	free(dl->fds);
	free(dl);
}
