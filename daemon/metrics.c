/* metrics.c: the Prometheus text exposition of a daemon's counters, gauges and histograms. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/fastpath.h"
#include "daemon/kcache.h"
#include "daemon/kcache_remote.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/metrics_hist.h"
#include "daemon/sched.h"
#include "daemon/xmalloc.h"

#ifndef NKID_VERSION
#define NKID_VERSION "unknown"
#endif

/* What the scheduler says of one core, read once per scrape. */
struct metrics_core {
	struct sched_core_info	info;
	struct metrics_hist	wait[SCHED_NCLASSES];
	struct metrics_hist	exec[SCHED_NCLASSES];
};

static void
metrics_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One family with one unlabelled sample. */
static void
metrics_scalar(FILE *f, const char *name, const char *type, const char *help,
    uint64_t v)
{
	metrics_family(f, name, type, help);
	fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

/* A label value as the text format quotes it (\\, \" and \n escaped). */
static void
metrics_label_value(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void
metrics_seconds(FILE *f, uint64_t ns)
{
	fprintf(f, "%llu.%09llu", (unsigned long long)(ns / 1000000000ULL),
	    (unsigned long long)(ns % 1000000000ULL));
}

/* The samples of histogram h with the labels labels (already quoted,
 * without braces). */
static void
metrics_hist_write(FILE *f, const char *name, const char *labels,
    const struct metrics_hist *h)
{
	uint64_t	cum = 0;
	size_t		i;

	for (i = 0; i < METRICS_HIST_BUCKETS; i++) {
		cum += h->counts[i];
		fprintf(f, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels,
		    (double)metrics_hist_bound_ns(i) / 1e9,
		    (unsigned long long)cum);
	}
	cum += h->counts[METRICS_HIST_BUCKETS];
	fprintf(f, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels,
	    (unsigned long long)cum);
	fprintf(f, "%s_sum{%s} ", name, labels);
	metrics_seconds(f, h->sum_ns);
	fprintf(f, "\n%s_count{%s} %llu\n", name, labels,
	    (unsigned long long)h->count);
}

static void
metrics_render_build(FILE *f, struct daemon *d)
{
	metrics_family(f, "nkid_build_info", "gauge",
	    "Always 1; the label names the version of nkid.");
	fputs("nkid_build_info{version=\"", f);
	metrics_label_value(f, NKID_VERSION);
	fputs("\"} 1\n", f);
	metrics_family(f, "nkid_backend_info", "gauge",
	    "Always 1; the label names the backend driving the cores.");
	fputs("nkid_backend_info{backend=\"", f);
	metrics_label_value(f, backend_name(d->backend));
	fputs("\"} 1\n", f);
	metrics_family(f, "nkid_start_time_seconds", "gauge",
	    "When nkid started, in seconds since the epoch.");
	fprintf(f, "nkid_start_time_seconds %.3f\n", sched_wall_now() -
	    daemon_uptime(d));
}

static void
metrics_render_rpc(FILE *f, struct daemon *d)
{
	const struct daemon_method_counter	*mc;
	const char				*name;
	char					 labels[96];
	size_t					 i, n = dispatch_method_count();

	metrics_family(f, "nkid_rpc_calls_total", "counter",
	    "RPC calls started, per method.");
	for (i = 0; i < n; i++)
		fprintf(f, "nkid_rpc_calls_total{method=\"%s\"} %llu\n",
		    dispatch_method(i)->name,
		    (unsigned long long)d->methods[i].calls);
	metrics_family(f, "nkid_rpc_errors_total", "counter",
	    "RPC calls that ended with a status other than OK, per method.");
	for (i = 0; i < n; i++)
		fprintf(f, "nkid_rpc_errors_total{method=\"%s\"} %llu\n",
		    dispatch_method(i)->name,
		    (unsigned long long)d->methods[i].errors);
	metrics_family(f, "nkid_rpc_duration_seconds", "histogram",
	    "Time from the start of an RPC call to its status, per method "
	    "(a stream's whole life).");
	for (i = 0; i < n; i++) {
		mc = &d->methods[i];
		name = dispatch_method(i)->name;
		snprintf(labels, sizeof labels, "method=\"%s\"", name);
		metrics_hist_write(f, "nkid_rpc_duration_seconds", labels,
		    &mc->duration);
	}
}

/* A family of one histogram per core and class: the cores' wait
 * histograms, or with exec their execution ones. */
static void
metrics_core_hists(FILE *f, const char *name, const char *help,
    const struct metrics_core *mc, unsigned n, int exec)
{
	char		labels[96];
	unsigned	i;
	int		k;

	metrics_family(f, name, "histogram", help);
	for (i = 0; i < n; i++) {
		for (k = 0; k < SCHED_NCLASSES; k++) {
			snprintf(labels, sizeof labels,
			    "core=\"%u\",class=\"%s\"", i, sched_class_name(k));
			metrics_hist_write(f, name, labels, exec ?
			    &mc[i].exec[k] : &mc[i].wait[k]);
		}
	}
}

static void
metrics_render_cores(FILE *f, struct daemon *d)
{
	struct metrics_core	*mc;
	unsigned		 i, n = sched_core_count(d->sched);
	int			 st;

	mc = xcalloc(n, sizeof *mc);
	for (i = 0; i < n; i++) {
		sched_core_info(d->sched, i, &mc[i].info);
		sched_core_hists(d->sched, i, mc[i].wait, mc[i].exec);
	}
	metrics_scalar(f, "nkid_cores", "gauge",
	    "Cores nkid schedules work on.", n);
	metrics_family(f, "nkid_core_state", "gauge",
	    "1 for the state each core is in, 0 for the others.");
	for (i = 0; i < n; i++) {
		for (st = SCHED_CORE_IDLE; st <= SCHED_CORE_UNHEALTHY; st++)
			fprintf(f, "nkid_core_state{core=\"%u\",state=\"%s\"} "
			    "%d\n", i, sched_core_state_name(st),
			    mc[i].info.state == st);
	}
	metrics_family(f, "nkid_core_busy_seconds_total", "counter",
	    "Time each core was held by a job or a lease.");
	for (i = 0; i < n; i++)
		fprintf(f, "nkid_core_busy_seconds_total{core=\"%u\"} %.6f\n",
		    i, mc[i].info.busy_s);
	metrics_family(f, "nkid_core_queued_jobs", "gauge",
	    "Jobs and leases waiting for each core.");
	for (i = 0; i < n; i++)
		fprintf(f, "nkid_core_queued_jobs{core=\"%u\"} %u\n", i,
		    mc[i].info.queued);
	metrics_core_hists(f, "nkid_job_queue_wait_seconds",
	    "Time jobs waited from submission to their start, per core and "
	    "class (leases not counted).", mc, n, 0);
	metrics_core_hists(f, "nkid_job_execution_seconds",
	    "Time jobs held their core, per core and class (leases not "
	    "counted).", mc, n, 1);
	free(mc);
}

static void
metrics_render_jobs(FILE *f, struct daemon *d)
{
	struct sched_counters	sc;

	sched_counters_get(d->sched, &sc);
	metrics_family(f, "nkid_jobs", "gauge",
	    "Jobs (leases included) queued and running now.");
	fprintf(f, "nkid_jobs{state=\"queued\"} %llu\n",
	    (unsigned long long)sc.queued);
	fprintf(f, "nkid_jobs{state=\"running\"} %llu\n",
	    (unsigned long long)sc.running);
	metrics_scalar(f, "nkid_jobs_completed_total", "counter",
	    "Jobs whose work ran, and leases that ended after their grant.",
	    sc.completed);
	metrics_scalar(f, "nkid_jobs_cancelled_total", "counter",
	    "Jobs and leases that never started: cancelled, expired or their "
	    "client gone.", sc.cancelled);
	metrics_scalar(f, "nkid_jobs_rejected_total", "counter",
	    "Jobs and leases refused at admission (limits).",
	    sc.rejected + d->jobs_rejected);
	metrics_family(f, "nkid_leases", "gauge",
	    "Leases waiting for a core and leases holding one.");
	fprintf(f, "nkid_leases{state=\"waiting\"} %llu\n",
	    (unsigned long long)sc.leases_waiting);
	fprintf(f, "nkid_leases{state=\"held\"} %llu\n",
	    (unsigned long long)sc.leases_held);
	metrics_scalar(f, "nkid_leases_granted_total", "counter",
	    "Leases granted a core.", sc.leases_granted);
}

#define KS(field)	offsetof(struct kcache_stats, field)

/* The cache's metrics, one per field of struct kcache_stats (uint64_t). */
static const struct metrics_field {
	const char	*name;
	const char	*type;
	const char	*help;
	size_t		 off;
} metrics_cache_fields[] = {
	{ "nkid_cache_entries", "gauge",
	  "Entries in the kernel cache.", KS(entries) },
	{ "nkid_cache_bytes", "gauge",
	  "Bytes of the kernel cache's blobs.", KS(bytes) },
	{ "nkid_cache_max_bytes", "gauge",
	  "The kernel cache's budget (cache.max_bytes).", KS(max_bytes) },
	{ "nkid_cache_hits_total", "counter",
	  "Kernels served from the cache, in memory or on disk.", KS(hits) },
	{ "nkid_cache_misses_total", "counter",
	  "Kernels not in the cache.", KS(misses) },
	{ "nkid_cache_compiles_total", "counter",
	  "Compiles that succeeded.", KS(compiles) },
	{ "nkid_cache_compile_failures_total", "counter",
	  "Compiles that failed.", KS(failures) },
	{ "nkid_cache_coalesced_total", "counter",
	  "Requests that joined an identical compile in flight.",
	  KS(coalesced) },
	{ "nkid_cache_evictions_total", "counter",
	  "Entries evicted to keep the cache within its budget.",
	  KS(evictions) },
	{ "nkid_cache_corrupt_total", "counter",
	  "Blobs whose digest did not match, quarantined.", KS(corrupt) },
};

static void
metrics_render_cache(FILE *f, struct daemon *d)
{
	const struct metrics_field	*mf;
	struct kcache_stats		 ks;
	size_t				 i;

	kcache_stats_get(d->kcache, &ks);
	for (i = 0; i < sizeof metrics_cache_fields /
	    sizeof metrics_cache_fields[0]; i++) {
		mf = &metrics_cache_fields[i];
		metrics_scalar(f, mf->name, mf->type, mf->help,
		    *(const uint64_t *)((const char *)&ks + mf->off));
	}
}

#define RS(field)	offsetof(struct kcache_remote_stats, field)

/* The remote tier's counters (docs/metrics.md), uint64_t fields. */
static const struct metrics_field metrics_remote_fields[] = {
	{ "nkid_remote_hits_total", "counter",
	  "Entries pulled from the remote tier, verified and used.", RS(hits) },
	{ "nkid_remote_misses_total", "counter",
	  "Local misses the remote tier did not have either.", RS(misses) },
	{ "nkid_remote_pushes_total", "counter",
	  "Entries pushed to the remote tier.", RS(pushes) },
	{ "nkid_remote_rejected_total", "counter",
	  "Remote values that failed verification (never served).",
	  RS(rejected) },
	{ "nkid_remote_errors_total", "counter",
	  "Failed calls to the remote tier (timeouts, lost connections, "
	  "error replies).", RS(errors) },
	{ "nkid_remote_skipped_total", "counter",
	  "Requests that skipped the remote tier: down or circuit open.",
	  RS(skipped) },
	{ "nkid_remote_pulled_bytes_total", "counter",
	  "Bytes of the entries pulled and used.", RS(pulled_bytes) },
	{ "nkid_remote_pushed_bytes_total", "counter",
	  "Bytes of the entries pushed.", RS(pushed_bytes) },
};

/* Nothing when the tier is off (remote.mode). */
static void
metrics_render_remote(FILE *f, struct daemon *d)
{
	static const char		*states[] = { "up", "connecting",
					    "down" };
	const struct metrics_field	*mf;
	struct kcache_remote_stats	 rs;
	size_t				 i;

	if (d->remote == NULL)
		return;
	kcache_remote_stats_get(d->remote, &rs);
	metrics_family(f, "nkid_remote_state", "gauge",
	    "1 for the remote tier's state now: up, connecting or down.");
	for (i = 0; i < sizeof states / sizeof states[0]; i++)
		fprintf(f, "nkid_remote_state{state=\"%s\"} %d\n", states[i],
		    strcmp(rs.state, states[i]) == 0);
	metrics_scalar(f, "nkid_remote_breaker_open", "gauge",
	    "1 while the circuit breaker keeps requests off the remote tier.",
	    rs.breaker_open != 0);
	for (i = 0; i < sizeof metrics_remote_fields /
	    sizeof metrics_remote_fields[0]; i++) {
		mf = &metrics_remote_fields[i];
		metrics_scalar(f, mf->name, mf->type, mf->help,
		    *(const uint64_t *)((const char *)&rs + mf->off));
	}
	metrics_family(f, "nkid_remote_fleet_locks_total", "counter",
	    "Fleet locks: taken to compile here, waited for (another host's), "
	    "ignored (not a lock of the fleet: no TTL, another type).");
	fprintf(f, "nkid_remote_fleet_locks_total{outcome=\"taken\"} %llu\n"
	    "nkid_remote_fleet_locks_total{outcome=\"waited\"} %llu\n"
	    "nkid_remote_fleet_locks_total{outcome=\"ignored\"} %llu\n",
	    (unsigned long long)rs.locks_taken,
	    (unsigned long long)rs.locks_waited,
	    (unsigned long long)rs.locks_ignored);
}

static void
metrics_render_conns(FILE *f, struct daemon *d)
{
	metrics_scalar(f, "nkid_connections_accepted_total", "counter",
	    "Client connections accepted by the access policy.",
	    d->connections);
	metrics_scalar(f, "nkid_connections_refused_total", "counter",
	    "Client connections refused by the access policy.", d->refused);
	metrics_scalar(f, "nkid_connections_open", "gauge",
	    "Accepted client connections open now.", d->active_connections);
}

/* The fast path (docs/protocol.md, "Fast path"); zeros when it is off. */
static void
metrics_render_fastpath(FILE *f, struct daemon *d)
{
	struct fastpath_stats	st;

	fastpath_stats_get(d->fastpath, &st);
	metrics_scalar(f, "nkid_fastpath_clients", "gauge",
	    "Fast-path connections open now.", st.clients);
	metrics_scalar(f, "nkid_fastpath_connections_total", "counter",
	    "Fast-path connections accepted.", st.connected);
	metrics_scalar(f, "nkid_fastpath_calls_total", "counter",
	    "Calls that came over the fast path (also counted per method in "
	    "nkid_rpc_calls_total).", st.calls);
	metrics_scalar(f, "nkid_fastpath_refused_total", "counter",
	    "Connections to a fast-path rendezvous from a process it was not "
	    "offered to.", st.refused);
	metrics_scalar(f, "nkid_fastpath_bad_frames_total", "counter",
	    "Fast-path frames answered with an error or cut off as "
	    "malformed.", st.bad_frames);
}

char *
metrics_render(struct daemon *d, size_t *len)
{
	FILE	*f;
	char	*buf = NULL;
	size_t	 n = 0;

	if ((f = open_memstream(&buf, &n)) == NULL)
		fatal("out of memory rendering the metrics");
	metrics_render_build(f, d);
	metrics_render_rpc(f, d);
	metrics_render_cores(f, d);
	metrics_render_jobs(f, d);
	metrics_render_cache(f, d);
	metrics_render_remote(f, d);
	metrics_render_conns(f, d);
	metrics_render_fastpath(f, d);
	if (ferror(f) || fclose(f) != 0)
		fatal("out of memory rendering the metrics");
	*len = n;
	return (buf);
}
