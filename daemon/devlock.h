/* devlock.h: the per-core lock files (lock_dir/core-N) that nkid holds with flock for its lifetime. */
#ifndef NKID_DEVLOCK_H
#define NKID_DEVLOCK_H

#include <stddef.h>

enum devlock_err {
	DEVLOCK_OK = 0,
	DEVLOCK_EOPEN = -1,	/* cannot create the directory or a file */
	DEVLOCK_EHELD = -2,	/* another process holds a core's lock */
};

struct devlock;

/*
 * Create lock_dir if missing and take an exclusive flock on
 * lock_dir/core-0 .. core-(ncores-1), each opened O_CLOEXEC so that no
 * child inherits it; nkid's pid is written into each. If any lock is held
 * elsewhere, nothing is kept and the message in err names the core, the
 * file and (from /proc/locks) the holder's pid and command. On success
 * *out is freed with devlock_close, which releases the locks.
 */
int	devlock_open(const char *lock_dir, unsigned ncores,
	    struct devlock **out, char *err, size_t errlen);
void	devlock_close(struct devlock *dl);
/* The pid holding an flock on the file open at fd (by /proc/locks), not
 * counting self; 0 if none found. */
long	devlock_holder(int fd, long self);
const char *devlock_strerror(int err);

#endif /* NKID_DEVLOCK_H */
