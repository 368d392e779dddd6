/* metrics_hist.h: a Prometheus histogram of durations, one fixed set of bucket bounds from 100 us to 5 min. */
#ifndef NKID_METRICS_HIST_H
#define NKID_METRICS_HIST_H

#include <stddef.h>
#include <stdint.h>

/* Finite bucket bounds; counts[METRICS_HIST_BUCKETS] is the +Inf bucket. */
#define METRICS_HIST_BUCKETS	19

/*
 * Observations per bucket (not cumulative), their sum and count. All zero
 * is an empty histogram, so one embedded in a zeroed struct needs no
 * init. Not locked: its owner serializes observe and copy (the loop
 * thread for RPCs, the scheduler's mutex for jobs).
 */
struct metrics_hist {
	uint64_t	counts[METRICS_HIST_BUCKETS + 1];
	uint64_t	sum_ns;
	uint64_t	count;
};

/* Upper bound of bucket i (< METRICS_HIST_BUCKETS) in nanoseconds. */
uint64_t metrics_hist_bound_ns(size_t i);
/* Count one duration of ns nanoseconds (in the first bucket whose bound
 * is >= ns, as Prometheus' "le" says). */
void	metrics_hist_observe(struct metrics_hist *h, uint64_t ns);

#endif /* NKID_METRICS_HIST_H */
