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
	struct backend_exec	 x = { 0 };
	uint64_t		 t0 = uv_hrtime();

	x.inputs = j->inputs;
	x.ninputs = j->ninputs;
	x.outputs = j->outputs;
	x.noutputs = j->noutputs;
	x.cancel = &j->c->cancelled;
	j->error = j->b->ops->execute(j->b->state, kcache_entry_program(j->e),
	    core, &x, j->diag);
	j->outputs_filled = j->error == 0;
	j->exec_ns = uv_hrtime() - t0;
	job_outputs_place(j);
}

static void
rpc_run_done_cb(struct sched_job *sj, int ran)
{
	struct job			*j = (struct job *)sj;
	struct rpc_call			*c = j->c;
	const Nkid__V1__RunRequest	*req = (const void *)c->req;
	Nkid__V1__RunReply		 r = NKID__V1__RUN_REPLY__INIT;
	Nkid__V1__Tensor		**out;
	const void			*image;
	size_t				 len;

	if (ran != SCHED_RAN) {
		jobs_fail_unrun(c, sj, ran, "run", kcache_entry_name(j->e));
		job_free(j);
		return;
	}
	if (j->error != 0) {
		job_fail(j, "run");
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
	if (req->return_neff) {
		image = kcache_entry_image(j->e, &len);
		r.neff.data = (uint8_t *)image;
		r.neff.len = len;
	}
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

	if (job_kernel_set(j, e, cache_hit) != 0) {
		job_free(j);
		return;
	}
	j->sj.work = rpc_run_work_cb;
	j->sj.done = rpc_run_done_cb;
	if (jobs_submit(c, &j->sj, "run", kcache_entry_name(e), req->core,
	    req->job_class, "run") != 0)
		job_free(j);
}

static void
rpc_run(struct rpc_call *c)
{
	const Nkid__V1__RunRequest	*req = (const void *)c->req;
	unsigned			 ncores = sched_core_count(c->d->sched);

	if (req->core < -1 || (req->core >= 0 && (unsigned)req->core >=
	    ncores)) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
		    "core %d does not exist: nkid has %u core%s (0 to %u, or -1 "
		    "for any)", req->core, ncores, ncores == 1 ? "" : "s",
		    ncores - 1);
		return;
	}
	if (job_new(c, req->inputs, req->n_inputs, req->output_shm) == NULL)
		return;
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
