/* metrics.h: nkid's figures in the Prometheus text exposition format (served by metrics_http.c). */
#ifndef NKID_METRICS_H
#define NKID_METRICS_H

#include <stddef.h>

/* The Content-Type of metrics_render's text (Prometheus format 0.0.4). */
#define METRICS_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

struct daemon;

/*
 * Render every metric of d (docs/metrics.md) as Prometheus text: RPC calls,
 * errors and durations per method, cores, jobs, leases, the cache,
 * connections, build information. Runs on the loop thread, which owns d;
 * reads the scheduler under its lock. Returns a malloc'd string of *len
 * bytes (not NUL-terminated for the caller's purposes, though one
 * follows) that the caller frees. Allocation failure is fatal.
 */
char	*metrics_render(struct daemon *d, size_t *len);

#endif /* NKID_METRICS_H */
