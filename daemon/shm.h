/* shm.h: shared-memory regions a client created under /dev/shm to carry tensors: name and ownership checks, read-only mappings of the needed range, output writes, and a SIGBUS guard against regions that shrink while mapped. */
#ifndef NKID_SHM_H
#define NKID_SHM_H

#include <stddef.h>
#include <stdint.h>

#define SHM_DIR		"/dev/shm"
#define SHM_PREFIX	"nkid."
/* Longest region name, prefix included. */
#define SHM_NAME_MAX	128
/* Most distinct regions (name and access mode) one request may name. */
#define SHM_MAX_REGIONS	64
/* Output tensors start at file offsets that are multiples of this. */
#define SHM_ALIGN	64
/* Most read-only mappings alive in the process at once (all requests). */
#define SHM_MAX_MAPS	4096

enum shm_err {
	SHM_OK = 0,
	SHM_EINVAL = -1,	/* bad name, symlink, not a regular file,
				 * range outside the file or overflowing */
	SHM_ENOENT = -2,	/* no such region */
	SHM_EPERM = -3,		/* not the caller's, or nkid may not open it */
	SHM_ELIMIT = -4,	/* too many regions, mappings or descriptors;
				 * /dev/shm full */
	SHM_ESYS = -5,		/* another system error */
};

/*
 * 0 if name is a region name nkid accepts: SHM_PREFIX then 1 or more of
 * [A-Za-z0-9._-], at most SHM_NAME_MAX bytes in all (so one path
 * component, never "." or ".."). Else SHM_EINVAL with a message in err.
 */
int	shm_name_check(const char *name, char *err, size_t errlen);
/*
 * 0 if [offset, offset + size) lies within a file of file_size bytes
 * without overflowing 64 bits; else SHM_EINVAL with a message naming the
 * region in err.
 */
int	shm_range_check(const char *name, uint64_t offset, uint64_t size,
	    uint64_t file_size, char *err, size_t errlen);

/* The regions one request uses, owned by its job. */
struct shm_set;

/*
 * An empty set for a caller with uid, whose regions are files in dir
 * (SHM_DIR; tests pass their own). dir is copied.
 */
struct shm_set *shm_set_new(const char *dir, uint32_t uid);
/*
 * Open region name (checked with shm_name_check) read-only, or read-write
 * when writable, with O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC; check that it
 * is a regular file owned by the set's uid that holds [offset, offset +
 * size). A region already open in the same mode is reused (and the range
 * checked against it). Returns the region's index (>= 0), or an error
 * with a message naming the region in err. Loop thread.
 */
int	shm_set_open(struct shm_set *s, const char *name, int writable,
	    uint64_t offset, uint64_t size, char *err, size_t errlen);
/* File size of region i when it was opened. */
uint64_t shm_set_file_size(const struct shm_set *s, int i);
/* The name of region i (borrowed from the set). */
const char *shm_set_name(const struct shm_set *s, int i);
/*
 * Map [offset, offset + size) of open region i read-only (shared, pages
 * populated) and set *p to its first byte (to a static empty buffer when
 * size is 0). The range must have been checked by shm_set_open. The
 * mapping is guarded: if the client shrinks the file, reads past its end
 * see zeros instead of killing nkid with SIGBUS, and shm_set_damaged
 * names the region. Unmapped by shm_set_free. Loop thread.
 */
int	shm_set_map(struct shm_set *s, int i, uint64_t offset, uint64_t size,
	    const void **p, char *err, size_t errlen);
/*
 * Like shm_set_map, read-write, for a region opened writable: nkid's
 * executor writes outputs straight into it. A region that shrinks under
 * the mapping turns into private zero pages (writes land there, harmless)
 * and shm_set_damaged names it.
 */
int	shm_set_map_rw(struct shm_set *s, int i, uint64_t offset,
	    uint64_t size, void **p, char *err, size_t errlen);
/*
 * Write len bytes of data at offset into open writable region i (pwrite:
 * no mapping, so a region that shrank is extended again, never a fault).
 * Safe on a worker thread while no other call uses s. 0 or an error
 * with a message in err.
 */
int	shm_set_write(struct shm_set *s, int i, uint64_t offset,
	    const void *data, size_t len, char *err, size_t errlen);
/* Close the regions' descriptors (mappings stay); later writes fail. */
void	shm_set_close(struct shm_set *s);
/*
 * The name of a region whose mapping faulted (the client shrank it while
 * nkid read it: what nkid read there was zeros), or NULL.
 */
const char *shm_set_damaged(const struct shm_set *s);
/* Unmap, close and free everything; NULL is ignored. Loop thread. */
void	shm_set_free(struct shm_set *s);

/* Mappings alive now (tests, Status). */
unsigned shm_maps_active(void);

#endif /* NKID_SHM_H */
