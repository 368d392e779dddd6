/* outpool.c: reusable buffers for outputs that travel inline. */
#include <sys/mman.h>

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/outpool.h"

struct outpool_buf {
	void	*p;
	size_t	 size;		/* mapped bytes */
};

static struct outpool_buf	outpool_idle[OUTPOOL_KEEP];
static size_t			outpool_n;

static size_t
outpool_round(size_t len)
{
	size_t	page = (size_t)2 << 20;

	return ((len + page - 1) / page * page);
}

void *
outpool_get(size_t len)
{
	size_t	i, best = OUTPOOL_KEEP, size;
	void	*p;

	assert(len >= OUTPOOL_MIN);
	size = outpool_round(len);
	for (i = 0; i < outpool_n; i++) {
		if (outpool_idle[i].size < size ||
		    outpool_idle[i].size / 2 > size)
			continue;
		if (best == OUTPOOL_KEEP ||
		    outpool_idle[i].size < outpool_idle[best].size)
			best = i;
	}
	if (best != OUTPOOL_KEEP) {
		p = outpool_idle[best].p;
		outpool_idle[best] = outpool_idle[--outpool_n];
		return (p);
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0);
	return (p == MAP_FAILED ? NULL : p);
}

void
outpool_put(void *p, size_t len)
{
	size_t	size = outpool_round(len), total = size, i;

	for (i = 0; i < outpool_n; i++)
		total += outpool_idle[i].size;
	if (outpool_n == OUTPOOL_KEEP || total > OUTPOOL_KEEP_BYTES) {
		munmap(p, size);
		return;
	}
	outpool_idle[outpool_n].p = p;
	outpool_idle[outpool_n].size = size;
	outpool_n++;
}

void
outpool_drain(void)
{
	while (outpool_n > 0) {
		outpool_n--;
		munmap(outpool_idle[outpool_n].p, outpool_idle[outpool_n].size);
	}
}
