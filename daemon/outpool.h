/* outpool.h: reusable buffers for outputs that travel inline, so that a run writes into warm pages instead of a fresh allocation and its page faults. */
#ifndef NKID_OUTPOOL_H
#define NKID_OUTPOOL_H

#include <stddef.h>

/* Buffers below this size come from malloc; the pool is not worth it. */
#define OUTPOOL_MIN		(1u << 20)
/* Idle buffers kept: at most this many, and this many bytes in all. */
#define OUTPOOL_KEEP		4
#define OUTPOOL_KEEP_BYTES	((size_t)256 << 20)

/*
 * A buffer of at least len bytes (len >= OUTPOOL_MIN): an idle one that
 * fits without wasting more than half, else a new mapping. Returns NULL
 * if memory cannot be mapped. Loop thread only. The caller gives it back
 * with outpool_put(p, len) with the same len.
 */
void	*outpool_get(size_t len);
/* Give back a buffer from outpool_get: kept for reuse, or unmapped when
 * the pool is full. Loop thread only. */
void	 outpool_put(void *p, size_t len);
/* Unmap every idle buffer (shutdown, tests). */
void	 outpool_drain(void);

#endif /* NKID_OUTPOOL_H */
