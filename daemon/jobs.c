/* jobs.c: the glue between a call and the scheduler: admission answers, cancellation on disconnect, statuses for the history. */
#include <assert.h>
#include <stdio.h>

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/jobs.h"
#include "daemon/sched.h"

#include "nkid.pb-c.h"

static void
jobs_call_cancel_cb(struct rpc_call *c)
{
	int	outcome;

	if (c->sj == NULL)
		return;
	outcome = rpc_deadline_left_ns(c) == 0 ? SCHED_EXPIRED : SCHED_GONE;
	sched_job_cancel(c->d->sched, c->sj, outcome);
}

static void
jobs_call_finish_cb(struct rpc_call *c)
{
	if (c->sj == NULL)
		return;
	sched_job_status_set(c->d->sched, c->sj->id, (int)c->status,
	    c->d->cfg.jobs_history);
	c->sj = NULL;
}

int
jobs_submit(struct rpc_call *c, struct sched_job *sj, const char *kind,
    const char *kernel, int core, int job_class, const char *verb)
{
	struct daemon		*d = c->d;
	struct sched_limits	 lim;
	char			 msg[512];
	int			 error;

	assert(c->sj == NULL);
	sj->uid = c->id.uid;
	sj->pid = c->id.pid;
	sj->cls = job_class == NKID__V1__JOB_CLASS__JOB_CLASS_BATCH ?
	    SCHED_CLASS_BATCH : SCHED_CLASS_INTERACTIVE;
	sj->deadline_ns = c->deadline_ns;
	sj->cancel = &c->cancelled;
	sj->kind = kind;
	sj->kernel = kernel;
	sched_limits_config(&d->cfg, &lim);
	if ((error = sched_job_submit(d->sched, sj, core, &lim, msg,
	    sizeof msg)) != 0) {
		rpc_fail(c, error == SCHED_ENOCORE ?
		    GRPC_STATUS_INVALID_ARGUMENT : error == SCHED_ESTOPPED ?
		    GRPC_STATUS_UNAVAILABLE : GRPC_STATUS_RESOURCE_EXHAUSTED,
		    "cannot %s '%s': %s", verb, kernel != NULL ? kernel : kind,
		    msg);
		return (-1);
	}
	c->sj = sj;
	c->on_cancel = jobs_call_cancel_cb;
	c->on_finish = jobs_call_finish_cb;
	/* Gone already (between resolve and submit): do not wait. */
	if (__atomic_load_n(&c->cancelled, __ATOMIC_ACQUIRE))
		jobs_call_cancel_cb(c);
	return (0);
}

void
jobs_fail_unrun(struct rpc_call *c, const struct sched_job *sj, int outcome,
    const char *verb, const char *name)
{
	double	waited = (double)(sj->finished_ns - sj->queued_ns) / 1e9;

	switch (outcome) {
	case SCHED_EXPIRED:
		rpc_fail(c, GRPC_STATUS_DEADLINE_EXCEEDED, "cannot %s '%s': "
		    "its deadline passed after %.3f s in the queue of core %u, "
		    "before it started (job %llu never ran)", verb, name,
		    waited, sj->core, (unsigned long long)sj->id);
		break;
	case SCHED_CANCELLED:
		rpc_fail(c, GRPC_STATUS_CANCELLED, "%s of '%s' cancelled: job "
		    "%llu was cancelled before it started", verb, name,
		    (unsigned long long)sj->id);
		break;
	case SCHED_STOPPED:
		rpc_fail(c, GRPC_STATUS_UNAVAILABLE, "cannot %s '%s': nkid is "
		    "stopping (job %llu never ran)", verb, name,
		    (unsigned long long)sj->id);
		break;
	default:
		rpc_fail(c, GRPC_STATUS_CANCELLED, "%s of '%s' cancelled: the "
		    "client went away (job %llu never ran)", verb, name,
		    (unsigned long long)sj->id);
		break;
	}
}
