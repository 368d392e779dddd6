/* job_latency.h: what a Benchmark measures: its counts checked, the timed executions and the model run, and the reply's latency figures (percentiles; nc_latency from the device, the NeuronCore model or the host executor). */
#ifndef NKID_JOB_LATENCY_H
#define NKID_JOB_LATENCY_H

#include "daemon/backend.h"
#include "daemon/job.h"
#include "nkid.pb-c.h"

/* Fewer timed executions than this: no percentiles in the reply (the
 * client's nc_latency is None). */
#define JOB_LATENCY_MIN_ITERS	2u
#define JOB_LATENCY_NPS		8	/* percentiles 0 1 10 25 50 90 99 100 */

/* One benchmark: its job, its figures filled on the worker, the reply's
 * storage: the state of a Benchmark's jobs. */
struct job_latency {
	struct job		 j;
	double			*samples_us;	/* iters, from the backend */
	unsigned		 warmup;
	unsigned		 iters;
	int			 modeled;	/* 1 model ran, -1 failed, 0 none */
	double			 model_us;
	char			 model_target[16];
	char			 model_diag[BACKEND_DIAG_LEN];
	/* Reply storage, valid until job_latency_release. */
	Nkid__V1__Percentile	 pv[JOB_LATENCY_NPS], *pp[JOB_LATENCY_NPS];
	Nkid__V1__Percentile	 cv[JOB_LATENCY_NPS], *cp[JOB_LATENCY_NPS];
	double			*model_samples;
	char			 note[BACKEND_DIAG_LEN + 160];
};

/* Most executions one request may ask for (warmup and iters each). */
#define JOB_LATENCY_MAX		1000000u

/*
 * Check Benchmark request req for job j (a struct job_latency) and its
 * backend (it benchmarks; iters 1 to JOB_LATENCY_MAX, warmup 0 to
 * JOB_LATENCY_MAX) and make room for its samples. On a bad request
 * answers the call (UNIMPLEMENTED, INVALID_ARGUMENT, naming the kernel)
 * and returns -1.
 */
int	job_latency_init(struct job *j, const Nkid__V1__BenchmarkRequest *req);
/*
 * The kind's exec, on the worker: time warmup + iters executions of j's
 * kernel on core (x as for execute) into the samples and, when that
 * worked, run the backend's model of it if it has one. Returns the
 * benchmark's 0 or BACKEND_E* (j->diag set).
 */
int	job_latency_exec(struct job *j, unsigned core, struct backend_exec *x);
/* The kind's release: free what the figures hold (not j). */
void	job_latency_release(struct job *j);

/*
 * Fill r's latency fields for job j: samples, percentiles, cpu_* beside
 * the model, latency_source and latency_note, as benchmark.latency
 * ("model" or "cpu") says. Pointers in r stay valid until j is released.
 */
void	job_latency_reply_fill(struct job *j, Nkid__V1__BenchmarkReply *r);

#endif /* NKID_JOB_LATENCY_H */
