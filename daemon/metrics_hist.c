/* metrics_hist.c: counting durations into the fixed buckets of a Prometheus histogram. */
#include <assert.h>

#include "daemon/metrics_hist.h"

#define US	1000ULL
#define MS	(1000ULL * US)
#define S	(1000ULL * MS)

/*
 * One set of bounds for every histogram nkid exports (RPC durations, queue
 * waits, executions): a 1-2.5-5 series from 100 us, which a Ping resolves,
 * to 5 minutes, a long compile. One set lets a dashboard put a Run's
 * duration beside its job's queue wait and execution.
 */
static const uint64_t metrics_hist_bounds[METRICS_HIST_BUCKETS] = {
	100 * US, 250 * US, 500 * US,
	1 * MS, 2500 * US, 5 * MS,
	10 * MS, 25 * MS, 50 * MS,
	100 * MS, 250 * MS, 500 * MS,
	1 * S, 2500 * MS, 5 * S,
	10 * S, 30 * S, 60 * S,
	300 * S,
};

uint64_t
metrics_hist_bound_ns(size_t i)
{
	assert(i < METRICS_HIST_BUCKETS);
	return (metrics_hist_bounds[i]);
}

void
metrics_hist_observe(struct metrics_hist *h, uint64_t ns)
{
	size_t	i;

	for (i = 0; i < METRICS_HIST_BUCKETS; i++) {
		if (ns <= metrics_hist_bounds[i])
			break;
	}
	h->counts[i]++;
	h->sum_ns += ns;
	h->count++;
}
