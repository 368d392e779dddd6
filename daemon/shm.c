/* shm.c: client shared-memory regions: checks, guarded read-only mappings, output writes. */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/shm.h"
#include "daemon/xmalloc.h"

struct shm_region {
	char		*name;
	int		 fd;		/* -1 once closed */
	int		 writable;
	uint64_t	 file_size;
};

struct shm_map {
	void		*addr;
	size_t		 len;
	int		 slot;		/* in shm_guard */
	int		 region;
};

struct shm_set {
	char			*dir;
	uint32_t		 uid;
	struct shm_region	*regions;
	size_t			 nregions;
	struct shm_map		*maps;
	size_t			 nmaps;
	size_t			 capmaps;
};

/*
 * The SIGBUS guard. A client may truncate its region while nkid reads it;
 * touching a mapped page past the new end of file raises SIGBUS in the
 * reading thread. The handler finds the mapping in this table, replaces
 * it in place with anonymous zero pages (MAP_FIXED, as Wayland
 * compositors do for client buffers) and marks it hit; the read then
 * resumes and sees zeros, and the job fails when shm_set_damaged is
 * asked. A fault outside every slot restores the previous disposition
 * and happens again: a real bug still dumps core.
 */
struct shm_guard_slot {
	atomic_int		used;
	atomic_size_t		len;
	atomic_uintptr_t	base;	/* 0: free */
	atomic_int		hit;
	atomic_int		prot;	/* of the mapping, kept by the zeros */
};

static struct shm_guard_slot	shm_guard[SHM_MAX_MAPS];
static struct sigaction		shm_guard_old;
static pthread_once_t		shm_guard_once = PTHREAD_ONCE_INIT;
static int			shm_guard_ok;
static atomic_uint		shm_guard_active;

static void
shm_guard_sigbus(int sig, siginfo_t *si, void *uctx)
{
	uintptr_t	 a = (uintptr_t)si->si_addr, b;
	size_t		 i, len;
	int		 saved = errno;

	if (si->si_code > 0) {
		for (i = 0; i < SHM_MAX_MAPS; i++) {
			b = atomic_load(&shm_guard[i].base);
			len = atomic_load(&shm_guard[i].len);
			if (b == 0 || a < b || a - b >= len)
				continue;
			if (mmap((void *)b, len, atomic_load(&shm_guard[i].prot),
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
			    MAP_FAILED)
				break;
			atomic_store(&shm_guard[i].hit, 1);
			errno = saved;
			return;
		}
	}
	/* Not ours: the previous disposition handles the repeated fault. */
	sigaction(SIGBUS, &shm_guard_old, NULL);
	if (si->si_code <= 0)
		raise(SIGBUS);
	errno = saved;
}

static void
shm_guard_install(void)
{
	struct sigaction	sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = shm_guard_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	shm_guard_ok = sigaction(SIGBUS, &sa, &shm_guard_old) == 0;
}

static int
shm_guard_add(void *addr, size_t len, int prot)
{
	int	i, zero;

	for (i = 0; i < SHM_MAX_MAPS; i++) {
		zero = 0;
		if (!atomic_compare_exchange_strong(&shm_guard[i].used, &zero,
		    1))
			continue;
		atomic_store(&shm_guard[i].hit, 0);
		atomic_store(&shm_guard[i].prot, prot);
		atomic_store(&shm_guard[i].len, len);
		atomic_store(&shm_guard[i].base, (uintptr_t)addr);
		atomic_fetch_add(&shm_guard_active, 1);
		return (i);
	}
	return (-1);
}

static void
shm_guard_remove(int i)
{
	atomic_store(&shm_guard[i].base, 0);
	atomic_store(&shm_guard[i].len, 0);
	atomic_store(&shm_guard[i].used, 0);
	atomic_fetch_sub(&shm_guard_active, 1);
}

unsigned
shm_maps_active(void)
{
	return (atomic_load(&shm_guard_active));
}

int
shm_name_check(const char *name, char *err, size_t errlen)
{
	size_t	len, i;
	char	ch;

	if (name == NULL || name[0] == '\0') {
		snprintf(err, errlen, "a shared-memory region needs a name");
		return (SHM_EINVAL);
	}
	len = strnlen(name, SHM_NAME_MAX + 1);
	if (len > SHM_NAME_MAX) {
		snprintf(err, errlen, "shared-memory region name '%.32s...' is "
		    "longer than %d bytes", name, SHM_NAME_MAX);
		return (SHM_EINVAL);
	}
	if (strncmp(name, SHM_PREFIX, strlen(SHM_PREFIX)) != 0 ||
	    len == strlen(SHM_PREFIX)) {
		snprintf(err, errlen, "shared-memory region name '%s' must "
		    "start with '%s' and name a file directly in %s", name,
		    SHM_PREFIX, SHM_DIR);
		return (SHM_EINVAL);
	}
	for (i = 0; i < len; i++) {
		ch = name[i];
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
		    ch == '-')
			continue;
		snprintf(err, errlen, "shared-memory region name '%s' may "
		    "only hold letters, digits, '.', '_' and '-' (one file "
		    "in %s; no '/')", name, SHM_DIR);
		return (SHM_EINVAL);
	}
	return (0);
}

int
shm_range_check(const char *name, uint64_t offset, uint64_t size,
    uint64_t file_size, char *err, size_t errlen)
{
	uint64_t	end;

	if (__builtin_add_overflow(offset, size, &end)) {
		snprintf(err, errlen, "shared-memory region '%s': offset %llu "
		    "+ size %llu overflows 64 bits", name,
		    (unsigned long long)offset, (unsigned long long)size);
		return (SHM_EINVAL);
	}
	if (end > file_size) {
		snprintf(err, errlen, "shared-memory region '%s' is %llu "
		    "bytes, too small for bytes %llu to %llu", name,
		    (unsigned long long)file_size, (unsigned long long)offset,
		    (unsigned long long)end);
		return (SHM_EINVAL);
	}
	return (0);
}

struct shm_set *
shm_set_new(const char *dir, uint32_t uid)
{
	struct shm_set	*s;

	s = xcalloc(1, sizeof *s);
	s->dir = xstrdup(dir);
	s->uid = uid;
	return (s);
}

/* open(2) errno -> shm_err with a message. */
static int
shm_open_error(const struct shm_set *s, const char *name, int e, char *err,
    size_t errlen)
{
	switch (e) {
	case ENOENT:
		snprintf(err, errlen, "no shared-memory region '%s' in %s",
		    name, s->dir);
		return (SHM_ENOENT);
	case ELOOP:
		snprintf(err, errlen, "shared-memory region '%s' is a symbolic "
		    "link; nkid opens regular files only", name);
		return (SHM_EINVAL);
	case EACCES:
	case EPERM:
		snprintf(err, errlen, "nkid (uid %u) may not open shared-memory "
		    "region '%s': %s; create it mode 0660 with the group of "
		    "nkid's socket", (unsigned)geteuid(), name, strerror(e));
		return (SHM_EPERM);
	case EMFILE:
	case ENFILE:
	case ENOMEM:
		snprintf(err, errlen, "cannot open shared-memory region '%s': "
		    "%s", name, strerror(e));
		return (SHM_ELIMIT);
	default:
		snprintf(err, errlen, "cannot open shared-memory region '%s': "
		    "%s", name, strerror(e));
		return (SHM_ESYS);
	}
}

int
shm_set_open(struct shm_set *s, const char *name, int writable,
    uint64_t offset, uint64_t size, char *err, size_t errlen)
{
	struct shm_region	*r;
	struct stat		 sb;
	char			*path;
	size_t			 i;
	int			 fd, error;

	if ((error = shm_name_check(name, err, errlen)) != 0)
		return (error);
	writable = writable != 0;
	for (i = 0; i < s->nregions; i++) {
		r = &s->regions[i];
		if (r->writable == writable && strcmp(r->name, name) == 0) {
			if (r->fd == -1) {
				snprintf(err, errlen, "shared-memory region "
				    "'%s' is closed", name);
				return (SHM_ESYS);
			}
			if ((error = shm_range_check(name, offset, size,
			    r->file_size, err, errlen)) != 0)
				return (error);
			return ((int)i);
		}
	}
	if (s->nregions >= SHM_MAX_REGIONS) {
		snprintf(err, errlen, "a request may name at most %d "
		    "shared-memory regions", SHM_MAX_REGIONS);
		return (SHM_ELIMIT);
	}
	path = xasprintf("%s/%s", s->dir, name);
	fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW |
	    O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	free(path);
	if (fd == -1)
		return (shm_open_error(s, name, errno, err, errlen));
	if (fstat(fd, &sb) == -1) {
		error = shm_open_error(s, name, errno, err, errlen);
		close(fd);
		return (error);
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "shared-memory region '%s' is not a "
		    "regular file", name);
		close(fd);
		return (SHM_EINVAL);
	}
	if (sb.st_uid != s->uid) {
		snprintf(err, errlen, "shared-memory region '%s' belongs to uid "
		    "%u, not to the caller (uid %u)", name, (unsigned)sb.st_uid,
		    (unsigned)s->uid);
		close(fd);
		return (SHM_EPERM);
	}
	if ((error = shm_range_check(name, offset, size, (uint64_t)sb.st_size,
	    err, errlen)) != 0) {
		close(fd);
		return (error);
	}
	s->regions = xreallocarray(s->regions, s->nregions + 1,
	    sizeof *s->regions);
	r = &s->regions[s->nregions];
	r->name = xstrdup(name);
	r->fd = fd;
	r->writable = writable;
	r->file_size = (uint64_t)sb.st_size;
	return ((int)s->nregions++);
}

uint64_t
shm_set_file_size(const struct shm_set *s, int i)
{
	return (s->regions[i].file_size);
}

const char *
shm_set_name(const struct shm_set *s, int i)
{
	return (s->regions[i].name);
}

/* shm_set_map and shm_set_map_rw: map with prot. */
static int
shm_set_map_prot(struct shm_set *s, int i, uint64_t offset, uint64_t size,
    int prot, void **p, char *err, size_t errlen)
{
	static const uint8_t	 empty[1];
	struct shm_region	*r = &s->regions[i];
	struct shm_map		*m;
	uint64_t		 pg, start, len;
	void			*addr;
	int			 slot, e;

	if (size == 0) {
		*p = (void *)empty;	/* never written: size is 0 */
		return (0);
	}
	if (r->fd == -1) {
		snprintf(err, errlen, "shared-memory region '%s' is closed",
		    r->name);
		return (SHM_ESYS);
	}
	pthread_once(&shm_guard_once, shm_guard_install);
	if (!shm_guard_ok) {
		snprintf(err, errlen, "cannot map shared-memory region '%s': "
		    "no SIGBUS guard", r->name);
		return (SHM_ESYS);
	}
	pg = (uint64_t)sysconf(_SC_PAGESIZE);
	start = offset - offset % pg;
	len = offset - start + size;	/* checked by shm_set_open */
	if (len > SIZE_MAX) {
		snprintf(err, errlen, "shared-memory region '%s': %llu bytes "
		    "do not fit the address space", r->name,
		    (unsigned long long)len);
		return (SHM_ELIMIT);
	}
	addr = mmap(NULL, (size_t)len, prot, MAP_SHARED | MAP_POPULATE,
	    r->fd, (off_t)start);
	if (addr == MAP_FAILED) {
		e = errno;
		snprintf(err, errlen, "cannot map shared-memory region '%s': %s",
		    r->name, strerror(e));
		return (e == ENOMEM ? SHM_ELIMIT : SHM_ESYS);
	}
	if ((slot = shm_guard_add(addr, (size_t)len, prot)) < 0) {
		munmap(addr, (size_t)len);
		snprintf(err, errlen, "cannot map shared-memory region '%s': "
		    "%d mappings are in use", r->name, SHM_MAX_MAPS);
		return (SHM_ELIMIT);
	}
	if (s->nmaps == s->capmaps) {
		s->capmaps = s->capmaps ? s->capmaps * 2 : 4;
		s->maps = xreallocarray(s->maps, s->capmaps, sizeof *s->maps);
	}
	m = &s->maps[s->nmaps++];
	m->addr = addr;
	m->len = (size_t)len;
	m->slot = slot;
	m->region = i;
	*p = (uint8_t *)addr + (offset - start);
	return (0);
}

int
shm_set_map(struct shm_set *s, int i, uint64_t offset, uint64_t size,
    const void **p, char *err, size_t errlen)
{
	void	*q;
	int	 rc;

	rc = shm_set_map_prot(s, i, offset, size, PROT_READ, &q, err, errlen);
	*p = q;
	return (rc);
}

int
shm_set_map_rw(struct shm_set *s, int i, uint64_t offset, uint64_t size,
    void **p, char *err, size_t errlen)
{
	if (!s->regions[i].writable) {
		snprintf(err, errlen, "shared-memory region '%s' is open "
		    "read-only", s->regions[i].name);
		return (SHM_ESYS);
	}
	return (shm_set_map_prot(s, i, offset, size, PROT_READ | PROT_WRITE,
	    p, err, errlen));
}

int
shm_set_write(struct shm_set *s, int i, uint64_t offset, const void *data,
    size_t len, char *err, size_t errlen)
{
	struct shm_region	*r = &s->regions[i];
	const uint8_t		*b = data;
	ssize_t			 n;
	int			 e;

	if (r->fd == -1 || !r->writable) {
		snprintf(err, errlen, "shared-memory region '%s' is not open "
		    "for writing", r->name);
		return (SHM_ESYS);
	}
	while (len > 0) {
		n = pwrite(r->fd, b, len, (off_t)offset);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n == 0 ? EIO : errno;
			snprintf(err, errlen, "cannot write to shared-memory "
			    "region '%s' at offset %llu: %s", r->name,
			    (unsigned long long)offset, strerror(e));
			return (e == ENOSPC || e == EFBIG || e == ENOMEM ?
			    SHM_ELIMIT : SHM_ESYS);
		}
		b += n;
		len -= (size_t)n;
		offset += (uint64_t)n;
	}
	return (0);
}

void
shm_set_close(struct shm_set *s)
{
	size_t	i;

	for (i = 0; i < s->nregions; i++) {
		if (s->regions[i].fd != -1)
			close(s->regions[i].fd);
		s->regions[i].fd = -1;
	}
}

const char *
shm_set_damaged(const struct shm_set *s)
{
	size_t	i;

	for (i = 0; i < s->nmaps; i++)
		if (atomic_load(&shm_guard[s->maps[i].slot].hit))
			return (s->regions[s->maps[i].region].name);
	return (NULL);
}

void
shm_set_free(struct shm_set *s)
{
	size_t	i;

	if (s == NULL)
		return;
	for (i = 0; i < s->nmaps; i++) {
		shm_guard_remove(s->maps[i].slot);
		munmap(s->maps[i].addr, s->maps[i].len);
	}
	shm_set_close(s);
	for (i = 0; i < s->nregions; i++)
		free(s->regions[i].name);
	free(s->regions);
	free(s->maps);
	free(s->dir);
	free(s);
}
