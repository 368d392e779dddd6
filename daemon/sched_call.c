/* sched_call.c: the glue between a call and the scheduler, for jobs and leases: admission answers, cancellation on disconnect, statuses for the history. */
#include <assert.h>
#include <stdio.h>

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/dispatch_error.h"
#include "daemon/sched_call.h"
#include "daemon/sched.h"

#include "nkid.pb-c.h"

/*
 * Our deadline is the client's timeout counted from when the call reached
 * us, so it falls later than the client's own by the transit: a client
 * whose deadline passed cancels a little before ours does. A call
 * cancelled this close to its deadline is counted as expired.
 */
#define SCHED_CALL_DEADLINE_SLACK_NS	(100 * 1000 * 1000ULL)

static void
sched_call_cancel_cb(struct rpc_call *c)
{
	int	outcome;

	if (c->sj == NULL)
		return;
	outcome = rpc_deadline_left_ns(c) <= SCHED_CALL_DEADLINE_SLACK_NS ?
	    SCHED_EXPIRED : SCHED_GONE;
	sched_job_cancel(c->d->sched, c->sj, outcome);
}

static void
sched_call_finish_cb(struct rpc_call *c)
{
	if (c->sj == NULL)
		return;
	sched_job_status_set(c->d->sched, c->sj->id, (int)c->status,
	    c->d->cfg.jobs_history);
	c->sj = NULL;
}

int
sched_call_submit(struct rpc_call *c, struct sched_job *sj, const char *kind,
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
		rpc_fail(c, dispatch_status_sched(error), "cannot %s '%s': %s",
		    verb, kernel != NULL ? kernel : kind, msg);
		return (-1);
	}
	c->sj = sj;
	c->on_cancel = sched_call_cancel_cb;
	c->on_finish = sched_call_finish_cb;
	/* Gone already (between resolve and submit): do not wait. */
	if (__atomic_load_n(&c->cancelled, __ATOMIC_ACQUIRE))
		sched_call_cancel_cb(c);
	return (0);
}
