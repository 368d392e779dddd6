/* rpc_profile.c: Profile, like Run executed num_execs times in the batch class, with a trace of the chosen executions (daemon/job_traces.c). */
#include "nkid.pb-c.h"

#include "daemon/dispatch.h"
#include "daemon/job.h"
#include "daemon/kcache.h"
#include "daemon/tensor.h"
#include "daemon/job_traces.h"

static void
rpc_profile_reply(struct job *j)
{
	Nkid__V1__ProfileReply	r = NKID__V1__PROFILE_REPLY__INIT;

	job_traces_reply_fill(j, &r);
	r.outputs = job_outputs_messages(j);
	r.n_outputs = j->noutputs;
	r.neff_key = (char *)kcache_entry_key(j->e);
	job_neff_get(j, &r.neff);
	rpc_reply(j->c, &r.base);
	tensor_messages_free(r.outputs, j->noutputs);
}

static const struct job_kind rpc_profile_kind = {
	.verb = "profile",
	.where = JOB_ON_CORE,
	.size = sizeof(struct job_traces),
	.exec = job_traces_exec,
	.reply = rpc_profile_reply,
	.release = job_traces_release,
};

static void
rpc_profile(struct rpc_call *c)
{
	const Nkid__V1__ProfileRequest	*req = (const void *)c->req;
	struct job_args			 a = {
		.ref = req->ref,
		.inputs = req->inputs,
		.ninputs = req->n_inputs,
		.output_shm = req->output_shm,
		.core = req->core,
		.job_class = NKID__V1__JOB_CLASS__JOB_CLASS_BATCH,
	};
	struct job			*j;

	j = job_new(c, &rpc_profile_kind);
	if (job_traces_init(j, req) == 0)
		job_start(j, &a);
}

const struct rpc_method rpc_profile_method = {
	DISPATCH_METHOD_NAME("Profile"),
	.kind = RPC_UNARY,
	.cap = CONFIG_CAP_TENSOR,
	.handler = rpc_profile,
};
