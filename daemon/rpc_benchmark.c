/* rpc_benchmark.c: Benchmark, like Run executed warmup + iters times in the batch class, with latency percentiles computed here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/job.h"
#include "daemon/jobs.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/sched.h"
#include "daemon/tensor.h"
#include "daemon/xmalloc.h"

/* Most executions one request may ask for (warmup and iters each). */
#define RPC_BENCHMARK_MAX		1000000u
/* Fewer timed executions than this: no percentiles in the reply (the
 * client's nc_latency is None). */
#define RPC_BENCHMARK_MIN_ITERS		2u

static const double rpc_benchmark_ps[] = { 0, 1, 10, 25, 50, 90, 99, 100 };
#define RPC_BENCHMARK_NPS	(sizeof rpc_benchmark_ps / sizeof rpc_benchmark_ps[0])

/* A benchmark job: a job (first, so job_free frees it all) and samples. */
struct rpc_benchmark {
	struct job	 j;
	double		*samples_us;
	unsigned	 warmup;
	unsigned	 iters;
	/* The backend's model of one execution (cpu: docs/model.md). */
	int		 modeled;
	double		 model_us;
	char		 model_target[16];
	char		 model_diag[BACKEND_DIAG_LEN];
};

static void
rpc_benchmark_free(struct rpc_benchmark *rb)
{
	free(rb->samples_us);
	rb->samples_us = NULL;
	job_free(&rb->j);
}

static void
rpc_benchmark_release_cb(void *arg)
{
	rpc_benchmark_free(arg);
}

static int
rpc_benchmark_dcmp(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

/*
 * The p-th percentile (0 <= p <= 100) of n sorted samples, interpolated
 * linearly between closest ranks (numpy's default).
 */
static double
rpc_benchmark_percentile(const double *sorted, size_t n, double p)
{
	double	rank = p / 100.0 * (double)(n - 1), lo;
	size_t	i;

	lo = floor(rank);
	i = (size_t)lo;
	if (i + 1 >= n)
		return (sorted[n - 1]);
	return (sorted[i] + (rank - lo) * (sorted[i + 1] - sorted[i]));
}

static void
rpc_benchmark_work_cb(struct sched_job *sj, unsigned core)
{
	struct rpc_benchmark	*rb = (struct rpc_benchmark *)sj;
	struct job		*j = &rb->j;
	struct backend_exec	 x;
	uint64_t		 t0 = job_exec_begin(j, &x);

	job_exec_end(j, j->b->ops->benchmark(j->b->state,
	    kcache_entry_program(j->e), core, &x, rb->warmup, rb->iters,
	    rb->samples_us, j->diag), t0);
	if (j->error == 0 && j->b->ops->model != NULL)
		rb->modeled = j->b->ops->model(j->b->state,
		    kcache_entry_program(j->e), &rb->model_us, rb->model_target,
		    rb->model_diag) == 0 ? 1 : -1;
}

/* The percentiles of n samples into pv/pp (n >= RPC_BENCHMARK_MIN_ITERS). */
static void
rpc_benchmark_percentiles(const double *samples, size_t n,
    Nkid__V1__Percentile *pv, Nkid__V1__Percentile **pp)
{
	double	*sorted;
	size_t	 i;

	sorted = xreallocarray(NULL, n, sizeof *sorted);
	memcpy(sorted, samples, n * sizeof *sorted);
	qsort(sorted, n, sizeof *sorted, rpc_benchmark_dcmp);
	for (i = 0; i < RPC_BENCHMARK_NPS; i++) {
		nkid__v1__percentile__init(&pv[i]);
		pv[i].p = rpc_benchmark_ps[i];
		pv[i].us = rpc_benchmark_percentile(sorted, n,
		    rpc_benchmark_ps[i]);
		pp[i] = &pv[i];
	}
	free(sorted);
}

static void
rpc_benchmark_done_cb(struct sched_job *sj, int ran)
{
	struct rpc_benchmark		*rb = (struct rpc_benchmark *)sj;
	struct job			*j = &rb->j;
	struct rpc_call			*c = j->c;
	const Nkid__V1__BenchmarkRequest *req = (const void *)c->req;
	Nkid__V1__BenchmarkReply	 r = NKID__V1__BENCHMARK_REPLY__INIT;
	Nkid__V1__Percentile		 pv[RPC_BENCHMARK_NPS];
	Nkid__V1__Percentile		*pp[RPC_BENCHMARK_NPS];
	Nkid__V1__Percentile		 cv[RPC_BENCHMARK_NPS];
	Nkid__V1__Percentile		*cp[RPC_BENCHMARK_NPS];
	double				*model = NULL;
	char				 note[BACKEND_DIAG_LEN + 160];
	size_t				 i;

	if (job_done_check(j, ran, "benchmark") != 0) {
		rpc_benchmark_free(rb);
		return;
	}
	/* The cpu backend models a NeuronCore: nc_latency is the model
	 * unless benchmark.latency says "cpu" (docs/model.md). */
	r.latency_source = rb->modeled == 0 ? "device" : "cpu";
	r.samples_us = rb->samples_us;
	if (rb->modeled != 0) {
		r.n_cpu_samples_us = rb->iters;
		r.cpu_samples_us = rb->samples_us;
		if (rb->iters >= RPC_BENCHMARK_MIN_ITERS) {
			rpc_benchmark_percentiles(rb->samples_us, rb->iters,
			    cv, cp);
			r.n_cpu_percentiles = RPC_BENCHMARK_NPS;
			r.cpu_percentiles = cp;
		}
	}
	if (rb->modeled > 0) {
		r.model_us = rb->model_us;
		r.model_target = rb->model_target;
		snprintf(note, sizeof note, "modeled NeuronCore latency on %s "
		    "(deterministic: every sample is the same); cpu_latency is "
		    "the host executor's time", rb->model_target);
		if (strcmp(c->d->cfg.benchmark_latency, "model") == 0) {
			r.latency_source = "model";
			model = xreallocarray(NULL, rb->iters, sizeof *model);
			for (i = 0; i < rb->iters; i++)
				model[i] = rb->model_us;
			r.samples_us = model;
		}
	} else if (rb->modeled < 0)
		snprintf(note, sizeof note, "the NeuronCore model could not "
		    "run (%s); nc_latency is the host executor's time",
		    rb->model_diag);
	else
		snprintf(note, sizeof note, "measured on the device");
	r.latency_note = note;
	if (rb->iters >= RPC_BENCHMARK_MIN_ITERS) {
		rpc_benchmark_percentiles(r.samples_us, rb->iters, pv, pp);
		r.n_percentiles = RPC_BENCHMARK_NPS;
		r.percentiles = pp;
	}
	r.n_samples_us = rb->iters;
	r.neff_key = (char *)kcache_entry_key(j->e);
	r.job_id = sj->id;
	r.core = sj->core;
	if (req->return_neff)
		job_neff_get(j, &r.neff);
	rpc_reply(c, &r.base);
	free(model);
	rpc_benchmark_free(rb);
}

static void
rpc_benchmark_kernel_cb(struct rpc_call *c, struct kcache_entry *e,
    int cache_hit, double compile_ms)
{
	const Nkid__V1__BenchmarkRequest *req = (const void *)c->req;
	struct rpc_benchmark		*rb = c->job;

	if (job_submit(&rb->j, e, cache_hit, rpc_benchmark_work_cb,
	    rpc_benchmark_done_cb, req->core,
	    NKID__V1__JOB_CLASS__JOB_CLASS_BATCH, "benchmark") != 0)
		rpc_benchmark_free(rb);
}

static void
rpc_benchmark(struct rpc_call *c)
{
	const Nkid__V1__BenchmarkRequest *req = (const void *)c->req;
	struct daemon			*d = c->d;
	struct rpc_benchmark		*rb;

	if (d->backend->ops->benchmark == NULL) {
		rpc_fail(c, GRPC_STATUS_UNIMPLEMENTED, "cannot benchmark '%s': "
		    "the %s backend does not benchmark", kernel_ref_name(
		    req->ref), d->backend->ops->name);
		return;
	}
	if (job_core_check(c, req->core) != 0)
		return;
	if (req->iters < 1 || req->iters > RPC_BENCHMARK_MAX ||
	    req->warmup > RPC_BENCHMARK_MAX) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "cannot benchmark "
		    "'%s': iters must be 1 to %u and warmup 0 to %u (got "
		    "iters=%u, warmup=%u)", kernel_ref_name(req->ref),
		    RPC_BENCHMARK_MAX, RPC_BENCHMARK_MAX, req->iters,
		    req->warmup);
		return;
	}
	/* A tensor without data or shm (shapes only, what nki.benchmark
	 * sends) reaches the backend with data == NULL: it supplies the
	 * values. */
	rb = xcalloc(1, sizeof *rb);
	if (job_init(&rb->j, c, req->inputs, req->n_inputs, NULL,
	    TENSOR_TAKE_SHAPES) != 0) {
		free(rb);
		return;
	}
	rb->warmup = req->warmup;
	rb->iters = req->iters;
	rb->samples_us = xreallocarray(NULL, req->iters, sizeof(double));
	c->job_release = rpc_benchmark_release_cb;
	kernel_resolve(c, req->ref, rpc_benchmark_kernel_cb);
}

const struct rpc_method rpc_benchmark_method = {
	.name = "Benchmark",
	.path = DISPATCH_SERVICE "Benchmark",
	.kind = RPC_UNARY,
	.request = &nkid__v1__benchmark_request__descriptor,
	.cap = CONFIG_CAP_TENSOR,
	.flags = RPC_F_ASYNC,
	.handler = rpc_benchmark,
};
