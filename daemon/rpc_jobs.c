/* rpc_jobs.c: Jobs, the queued, running and (with all) recently finished jobs and leases (another user's kernel unnamed under owner visibility). */
#include <stdint.h>
#include <stdlib.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kernel.h"
#include "daemon/sched.h"
#include "daemon/xmalloc.h"

/* A Jobs reply being built, and whose kernels its caller may name. */
struct rpc_jobs {
	Nkid__V1__JobsReply	r;
	int64_t			viewer;		/* kernel_viewer's */
};

/* sched_jobs_list's callback: one job more in the reply. Under owner
 * visibility another user's job is listed without its kernel's name. */
static void
rpc_jobs_add_cb(void *arg, const struct sched_job_info *ji)
{
	struct rpc_jobs		*l = arg;
	Nkid__V1__JobsReply	*r = &l->r;
	Nkid__V1__Job		*j;

	j = xmalloc(sizeof *j);
	nkid__v1__job__init(j);
	j->id = ji->id;
	j->kind = xstrdup(ji->kind);
	j->kernel = xstrdup(l->viewer == CACHE_VIEW_ALL ||
	    l->viewer == (int64_t)ji->uid ? ji->kernel : "");
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
	struct rpc_jobs			 l;
	size_t				 i;

	nkid__v1__jobs_reply__init(&l.r);
	l.viewer = kernel_viewer(c);
	sched_jobs_list(c->d->sched, req->all, rpc_jobs_add_cb, &l);
	rpc_reply(c, &l.r.base);
	for (i = 0; i < l.r.n_jobs; i++) {
		free(l.r.jobs[i]->kind);
		free(l.r.jobs[i]->kernel);
		free(l.r.jobs[i]);
	}
	free(l.r.jobs);
}

const struct rpc_method rpc_jobs_method = {
	DISPATCH_METHOD_NAME("Jobs"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_jobs,
};
