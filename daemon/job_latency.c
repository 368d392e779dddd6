/* job_latency.c: the latency figures of a Benchmark reply: percentiles, and which source nc_latency holds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/job_latency.h"
#include "daemon/xmalloc.h"

static const double job_latency_ps[JOB_LATENCY_NPS] = {
	0, 1, 10, 25, 50, 90, 99, 100
};

static int
job_latency_dcmp(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

/*
 * The p-th percentile (0 <= p <= 100) of n sorted samples, interpolated
 * linearly between closest ranks (numpy's default).
 */
static double
job_latency_percentile(const double *sorted, size_t n, double p)
{
	double	rank = p / 100.0 * (double)(n - 1), lo;
	size_t	i;

	lo = floor(rank);
	i = (size_t)lo;
	if (i + 1 >= n)
		return (sorted[n - 1]);
	return (sorted[i] + (rank - lo) * (sorted[i + 1] - sorted[i]));
}

/* The percentiles of n samples into pv/pp (n >= JOB_LATENCY_MIN_ITERS). */
static void
job_latency_percentiles(const double *samples, size_t n,
    Nkid__V1__Percentile *pv, Nkid__V1__Percentile **pp)
{
	double	*sorted;
	size_t	 i;

	sorted = xreallocarray(NULL, n, sizeof *sorted);
	memcpy(sorted, samples, n * sizeof *sorted);
	qsort(sorted, n, sizeof *sorted, job_latency_dcmp);
	for (i = 0; i < JOB_LATENCY_NPS; i++) {
		nkid__v1__percentile__init(&pv[i]);
		pv[i].p = job_latency_ps[i];
		pv[i].us = job_latency_percentile(sorted, n, job_latency_ps[i]);
		pp[i] = &pv[i];
	}
	free(sorted);
}

int
job_latency_init(struct job *j, const Nkid__V1__BenchmarkRequest *req)
{
	struct job_latency	*l = (struct job_latency *)j;

	if (!backend_can(j->b, BACKEND_CAN_BENCHMARK)) {
		job_fail_unsupported(j->c, j->kind->verb, req->ref);
		return (-1);
	}
	if (req->iters < 1 || req->iters > JOB_LATENCY_MAX ||
	    req->warmup > JOB_LATENCY_MAX) {
		rpc_fail(j->c, GRPC_STATUS_INVALID_ARGUMENT, "cannot benchmark "
		    "'%s': iters must be 1 to %u and warmup 0 to %u (got "
		    "iters=%u, warmup=%u)", kernel_ref_name(req->ref),
		    JOB_LATENCY_MAX, JOB_LATENCY_MAX, req->iters, req->warmup);
		return (-1);
	}
	l->warmup = req->warmup;
	l->iters = req->iters;
	l->samples_us = xreallocarray(NULL, l->iters, sizeof *l->samples_us);
	return (0);
}

int
job_latency_exec(struct job *j, unsigned core, struct backend_exec *x)
{
	struct job_latency		*l = (struct job_latency *)j;
	struct backend			*b = j->b;
	const struct backend_program	*p = kcache_entry_program(j->e);
	int				 error;

	error = backend_benchmark(b, p, core, x, l->warmup, l->iters,
	    l->samples_us, j->diag);
	if (error == 0 && backend_can(b, BACKEND_CAN_MODEL))
		l->modeled = backend_model(b, p, &l->model_us,
		    l->model_target, l->model_diag) == 0 ? 1 : -1;
	return (error);
}

void
job_latency_reply_fill(struct job *j, Nkid__V1__BenchmarkReply *r)
{
	struct job_latency	*l = (struct job_latency *)j;
	const char		*policy = j->c->d->cfg.benchmark_latency;
	unsigned		 i;

	/* The cpu backend models a NeuronCore: nc_latency is the model
	 * unless benchmark.latency says "cpu" (docs/model.md). */
	r->latency_source = l->modeled == 0 ? "device" : "cpu";
	r->samples_us = l->samples_us;
	if (l->modeled != 0) {
		r->n_cpu_samples_us = l->iters;
		r->cpu_samples_us = l->samples_us;
		if (l->iters >= JOB_LATENCY_MIN_ITERS) {
			job_latency_percentiles(l->samples_us, l->iters, l->cv,
			    l->cp);
			r->n_cpu_percentiles = JOB_LATENCY_NPS;
			r->cpu_percentiles = l->cp;
		}
	}
	if (l->modeled > 0) {
		r->model_us = l->model_us;
		r->model_target = l->model_target;
		r->model_version = MODEL_VERSION;
		snprintf(l->note, sizeof l->note, "modeled NeuronCore latency on "
		    "%s by model %s (deterministic: every sample is the same); "
		    "the host executor's own time is beside it (nkictl: HOST "
		    "CPU, Python: cpu_latency)", l->model_target, MODEL_VERSION);
		if (strcmp(policy, "model") == 0) {
			r->latency_source = "model";
			l->model_samples = xreallocarray(NULL, l->iters,
			    sizeof *l->model_samples);
			for (i = 0; i < l->iters; i++)
				l->model_samples[i] = l->model_us;
			r->samples_us = l->model_samples;
		}
	} else if (l->modeled < 0)
		snprintf(l->note, sizeof l->note, "the NeuronCore model could "
		    "not run (%s); nc_latency is the host executor's time",
		    l->model_diag);
	else
		snprintf(l->note, sizeof l->note, "measured on the device");
	r->latency_note = l->note;
	if (l->iters >= JOB_LATENCY_MIN_ITERS) {
		job_latency_percentiles(r->samples_us, l->iters, l->pv, l->pp);
		r->n_percentiles = JOB_LATENCY_NPS;
		r->percentiles = l->pp;
	}
	r->n_samples_us = l->iters;
}

void
job_latency_release(struct job *j)
{
	struct job_latency	*l = (struct job_latency *)j;

	free(l->samples_us);
	free(l->model_samples);
	l->samples_us = l->model_samples = NULL;
}
