/* rpc_run.c: Run, compile if needed, wait for a core, execute once, return the outputs. */
#include "nkid.pb-c.h"

#include "daemon/backend.h"
#include "daemon/dispatch.h"
#include "daemon/job.h"
#include "daemon/kcache.h"
#include "daemon/tensor.h"

static int
rpc_run_exec(struct job *j, unsigned core, struct backend_exec *x)
{
	return (backend_execute(j->b, kcache_entry_program(j->e), core, x,
	    j->diag));
}

static void
rpc_run_reply(struct job *j)
{
	const Nkid__V1__RunRequest	*req = (const void *)j->c->req;
	Nkid__V1__RunReply		 r = NKID__V1__RUN_REPLY__INIT;

	r.outputs = job_outputs_messages(j);
	r.n_outputs = j->noutputs;
	r.neff_key = (char *)kcache_entry_key(j->e);
	r.cache_hit = j->cache_hit;
	r.job_id = j->sj.id;
	r.core = j->sj.core;
	r.queue_us = (double)(j->sj.started_ns - j->sj.queued_ns) / 1e3;
	r.exec_us = (double)j->exec_ns / 1e3;
	if (req->return_neff)
		job_neff_get(j, &r.neff);
	rpc_reply(j->c, &r.base);
	tensor_messages_free(r.outputs, j->noutputs);
}

static const struct job_kind rpc_run_kind = {
	.verb = "run",
	.where = JOB_ON_CORE,
	.in_place = 1,
	.size = sizeof(struct job),
	.exec = rpc_run_exec,
	.reply = rpc_run_reply,
};

static void
rpc_run(struct rpc_call *c)
{
	const Nkid__V1__RunRequest	*req = (const void *)c->req;
	struct job_args			 a = {
		.ref = req->ref,
		.inputs = req->inputs,
		.ninputs = req->n_inputs,
		.output_shm = req->output_shm,
		.core = req->core,
		.job_class = req->job_class,
	};

	job_start(job_new(c, &rpc_run_kind), &a);
}

const struct rpc_method rpc_run_method = {
	DISPATCH_METHOD_NAME("Run"),
	.kind = RPC_UNARY,
	.cap = CONFIG_CAP_TENSOR,
	.handler = rpc_run,
};
