/* rpc_benchmark.c: Benchmark, like Run executed warmup + iters times in the batch class; nc_latency from the device or its model (daemon/job_latency.c). */
#include "nkid.pb-c.h"

#include "daemon/dispatch.h"
#include "daemon/job.h"
#include "daemon/kcache.h"
#include "daemon/job_latency.h"

static void
rpc_benchmark_reply(struct job *j)
{
	const Nkid__V1__BenchmarkRequest *req = (const void *)j->c->req;
	Nkid__V1__BenchmarkReply	 r = NKID__V1__BENCHMARK_REPLY__INIT;

	job_latency_reply_fill(j, &r);
	r.neff_key = (char *)kcache_entry_key(j->e);
	r.job_id = j->sj.id;
	r.core = j->sj.core;
	if (req->return_neff)
		job_neff_get(j, &r.neff);
	rpc_reply(j->c, &r.base);
}

static const struct job_kind rpc_benchmark_kind = {
	.verb = "benchmark",
	.where = JOB_ON_CORE,
	.shapes_only = 1,	/* nki.benchmark: the backend fills them */
	.size = sizeof(struct job_latency),
	.exec = job_latency_exec,
	.reply = rpc_benchmark_reply,
	.release = job_latency_release,
};

static void
rpc_benchmark(struct rpc_call *c)
{
	const Nkid__V1__BenchmarkRequest *req = (const void *)c->req;
	struct job_args			 a = {
		.ref = req->ref,
		.inputs = req->inputs,
		.ninputs = req->n_inputs,
		.core = req->core,
		.job_class = NKID__V1__JOB_CLASS__JOB_CLASS_BATCH,
	};
	struct job			*j;

	j = job_new(c, &rpc_benchmark_kind);
	if (job_latency_init(j, req) == 0)
		job_start(j, &a);
}

const struct rpc_method rpc_benchmark_method = {
	DISPATCH_METHOD_NAME("Benchmark"),
	.kind = RPC_UNARY,
	.cap = CONFIG_CAP_TENSOR,
	.handler = rpc_benchmark,
};
