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
	.job_class = NKID__V1__JOB_CLASS__JOB_CLASS_BATCH,
	.ops = &job_traces_ops,
	.reply = rpc_profile_reply,
};

const struct rpc_method rpc_profile_method =
    JOB_METHOD("Profile", rpc_profile_kind);
