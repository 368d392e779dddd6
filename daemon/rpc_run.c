/* rpc_run.c: Run, compile if needed, wait for a core, execute once, return the outputs. */
#include "nkid.pb-c.h"

#include "daemon/dispatch.h"
#include "daemon/job.h"
#include "daemon/kcache.h"
#include "daemon/tensor.h"

static int
rpc_run_exec(struct job *j, unsigned core, struct backend_exec *x)
{
	return (j->b->ops->execute(j->b->state, kcache_entry_program(j->e),
	    core, x, j->diag));
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

static const struct job_ops rpc_run_ops = {
	.size = sizeof(struct job),
	.exec = rpc_run_exec,
};

static const struct job_kind rpc_run_kind = {
	.verb = "run",
	.where = JOB_ON_CORE,
	.job_class = -1,
	.in_place = 1,
	.ops = &rpc_run_ops,
	.reply = rpc_run_reply,
};

const struct rpc_method rpc_run_method = JOB_METHOD("Run", rpc_run_kind);
