/* rpc_profile.c: Profile, like Run executed num_execs times in the batch class, with a per-op trace of the chosen executions. */
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

/* Most executions (num_execs, profile_nth) one request may ask for. */
#define RPC_PROFILE_MAX		1000u

/* A profile job: a job (first, so job_free frees it all) and traces. */
struct rpc_profile {
	struct job		 j;
	unsigned		 num_execs;
	unsigned		 profile_nth;
	struct backend_trace	*traces;
	size_t			 ntraces;
};

static void
rpc_profile_free(struct rpc_profile *rp)
{
	backend_traces_free(rp->traces, rp->ntraces);
	rp->traces = NULL;
	rp->ntraces = 0;
	job_free(&rp->j);
}

static void
rpc_profile_release_cb(void *arg)
{
	rpc_profile_free(arg);
}

static void
rpc_profile_work_cb(struct sched_job *sj, unsigned core)
{
	struct rpc_profile	*rp = (struct rpc_profile *)sj;
	struct job		*j = &rp->j;
	struct backend_exec	 x;
	uint64_t		 t0 = job_exec_begin(j, &x);

	job_exec_end(j, j->b->ops->profile(j->b->state,
	    kcache_entry_program(j->e), core, &x, rp->num_execs,
	    rp->profile_nth, &rp->traces, &rp->ntraces, j->diag), t0);
}

static void
rpc_profile_done_cb(struct sched_job *sj, int ran)
{
	struct rpc_profile	*rp = (struct rpc_profile *)sj;
	struct job		*j = &rp->j;
	struct rpc_call		*c = j->c;
	Nkid__V1__ProfileReply	 r = NKID__V1__PROFILE_REPLY__INIT;
	Nkid__V1__ProfileTrace	*tv, **tp;
	Nkid__V1__Tensor	**out;
	size_t			 i;

	if (job_done_check(j, ran, "profile") != 0) {
		rpc_profile_free(rp);
		return;
	}
	tv = xcalloc(rp->ntraces + 1, sizeof *tv);
	tp = xcalloc(rp->ntraces + 1, sizeof *tp);
	for (i = 0; i < rp->ntraces; i++) {
		nkid__v1__profile_trace__init(&tv[i]);
		tv[i].execution = rp->traces[i].execution;
		tv[i].trace.data = rp->traces[i].trace;
		tv[i].trace.len = rp->traces[i].trace_len;
		tv[i].summary_json.data = (uint8_t *)rp->traces[i].summary_json;
		tv[i].summary_json.len = rp->traces[i].summary_len;
		tp[i] = &tv[i];
	}
	out = job_outputs_messages(j);
	job_neff_get(j, &r.neff);
	r.n_traces = rp->ntraces;
	r.traces = tp;
	r.n_outputs = j->noutputs;
	r.outputs = out;
	r.neff_key = (char *)kcache_entry_key(j->e);
	rpc_reply(c, &r.base);
	tensor_messages_free(out, j->noutputs);
	free(tp);
	free(tv);
	rpc_profile_free(rp);
}

static void
rpc_profile_kernel_cb(struct rpc_call *c, struct kcache_entry *e,
    int cache_hit, double compile_ms)
{
	const Nkid__V1__ProfileRequest	*req = (const void *)c->req;
	struct rpc_profile		*rp = c->job;

	if (job_submit(&rp->j, e, cache_hit, rpc_profile_work_cb,
	    rpc_profile_done_cb, req->core,
	    NKID__V1__JOB_CLASS__JOB_CLASS_BATCH, "profile") != 0)
		rpc_profile_free(rp);
}

static void
rpc_profile(struct rpc_call *c)
{
	const Nkid__V1__ProfileRequest	*req = (const void *)c->req;
	struct daemon			*d = c->d;
	struct rpc_profile		*rp;
	unsigned			 num_execs, nth;

	num_execs = req->num_execs ? req->num_execs : 1;
	nth = req->profile_nth ? req->profile_nth : 1;
	if (d->backend->ops->profile == NULL) {
		rpc_fail(c, GRPC_STATUS_UNIMPLEMENTED, "cannot profile '%s': "
		    "the %s backend does not profile",
		    kernel_ref_name(req->ref), d->backend->ops->name);
		return;
	}
	if (job_core_check(c, req->core) != 0)
		return;
	if (num_execs > RPC_PROFILE_MAX || nth > RPC_PROFILE_MAX) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "cannot profile '%s': "
		    "num_execs and profile_nth must be 1 to %u (got %u and %u)",
		    kernel_ref_name(req->ref), RPC_PROFILE_MAX, num_execs, nth);
		return;
	}
	rp = xcalloc(1, sizeof *rp);
	if (job_init(&rp->j, c, req->inputs, req->n_inputs, req->output_shm,
	    0) != 0) {
		free(rp);
		return;
	}
	rp->num_execs = num_execs;
	rp->profile_nth = nth;
	c->job_release = rpc_profile_release_cb;
	kernel_resolve(c, req->ref, rpc_profile_kernel_cb);
}

const struct rpc_method rpc_profile_method = {
	.name = "Profile",
	.path = DISPATCH_SERVICE "Profile",
	.kind = RPC_UNARY,
	.request = &nkid__v1__profile_request__descriptor,
	.cap = CONFIG_CAP_TENSOR,
	.flags = RPC_F_ASYNC,
	.handler = rpc_profile,
};
