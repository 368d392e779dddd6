/* rpc_jobs.c: Jobs, the queued, running and (with all) recently finished jobs and leases. */
#include <stdlib.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/sched.h"
#include "daemon/xmalloc.h"

/* sched_jobs_list's callback: one job more in the reply. */
static void
rpc_jobs_add_cb(void *arg, const struct sched_job_info *ji)
{
	Nkid__V1__JobsReply	*r = arg;
	Nkid__V1__Job		*j;

	j = xmalloc(sizeof *j);
	nkid__v1__job__init(j);
	j->id = ji->id;
	j->kind = xstrdup(ji->kind);
	j->kernel = xstrdup(ji->kernel);
	j->pid = ji->pid;
	j->uid = ji->uid;
	j->core = ji->core;
	j->job_class = (char *)ji->cls;		/* static */
	j->state = (char *)ji->state;		/* static */
	j->queued_at = ji->queued_at;
	j->started_at = ji->started_at;
	j->finished_at = ji->finished_at;
	j->status = (char *)(ji->status < 0 ? "" :
	    rpc_status_name((grpc_status_code)ji->status));
	r->jobs = xreallocarray(r->jobs, r->n_jobs + 1, sizeof *r->jobs);
	r->jobs[r->n_jobs++] = j;
}

static void
rpc_jobs(struct rpc_call *c)
{
	const Nkid__V1__JobsRequest	*req = (const void *)c->req;
	Nkid__V1__JobsReply		 r = NKID__V1__JOBS_REPLY__INIT;
	size_t				 i;

	sched_jobs_list(c->d->sched, req->all, rpc_jobs_add_cb, &r);
	rpc_reply(c, &r.base);
	for (i = 0; i < r.n_jobs; i++) {
		free(r.jobs[i]->kind);
		free(r.jobs[i]->kernel);
		free(r.jobs[i]);
	}
	free(r.jobs);
}

const struct rpc_method rpc_jobs_method = {
	DISPATCH_METHOD_NAME("Jobs"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_jobs,
};
