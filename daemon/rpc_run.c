/* rpc_run.c: Run, compile if needed, wait for a core, execute once, return the outputs. */
#include <stdio.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/job.h"
#include "daemon/jobs.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/log.h"
#include "daemon/sched.h"
#include "daemon/tensor.h"

static void
rpc_run_work_cb(struct sched_job *sj, unsigned core)
{
	struct job		*j = (struct job *)sj;
	struct backend_exec	 x;
	uint64_t		 t0 = job_exec_begin(j, &x);

	/* One execution: its outputs may go straight into output_shm. */
	x.out_bufs = j->out_bufs;
	job_exec_end(j, j->b->ops->execute(j->b->state,
	    kcache_entry_program(j->e), core, &x, j->diag), t0);
}

static void
rpc_run_done_cb(struct sched_job *sj, int ran)
{
	struct job			*j = (struct job *)sj;
	struct rpc_call			*c = j->c;
	const Nkid__V1__RunRequest	*req = (const void *)c->req;
	Nkid__V1__RunReply		 r = NKID__V1__RUN_REPLY__INIT;
	Nkid__V1__Tensor		**out;

	if (job_done_check(j, ran, "run") != 0) {
		job_free(j);
		return;
	}
	out = job_outputs_messages(j);
	r.n_outputs = j->noutputs;
	r.outputs = out;
	r.neff_key = (char *)kcache_entry_key(j->e);
	r.cache_hit = j->cache_hit;
	r.job_id = sj->id;
	r.core = sj->core;
	r.queue_us = (double)(sj->started_ns - sj->queued_ns) / 1e3;
	r.exec_us = (double)j->exec_ns / 1e3;
	if (req->return_neff)
		job_neff_get(j, &r.neff);
	rpc_reply(c, &r.base);
	tensor_messages_free(out, j->noutputs);
	job_free(j);
}

static void
rpc_run_kernel_cb(struct rpc_call *c, struct kcache_entry *e, int cache_hit,
    double compile_ms)
{
	const Nkid__V1__RunRequest	*req = (const void *)c->req;
	struct job			*j = c->job;

	if (job_submit(j, e, cache_hit, rpc_run_work_cb, rpc_run_done_cb,
	    req->core, req->job_class, "run") != 0)
		job_free(j);
}

static void
rpc_run(struct rpc_call *c)
{
	const Nkid__V1__RunRequest	*req = (const void *)c->req;
	struct job			*j;

	if (job_core_check(c, req->core) != 0 ||
	    job_class_check(c, req->job_class) != 0)
		return;
	if ((j = job_new(c, req->inputs, req->n_inputs, req->output_shm)) ==
	    NULL)
		return;
	j->pool_outputs = 1;
	kernel_resolve(c, req->ref, rpc_run_kernel_cb);
}

const struct rpc_method rpc_run_method = {
	.name = "Run",
	.path = DISPATCH_SERVICE "Run",
	.kind = RPC_UNARY,
	.request = &nkid__v1__run_request__descriptor,
	.cap = CONFIG_CAP_TENSOR,
	.flags = RPC_F_ASYNC,
	.handler = rpc_run,
};
