/* rpc_cancel.c: Cancel, a queued or running job or a lease, by its owner or root. */
#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/sched.h"

static void
rpc_cancel(struct rpc_call *c)
{
	const Nkid__V1__CancelRequest	*req = (const void *)c->req;
	Nkid__V1__CancelReply		 r = NKID__V1__CANCEL_REPLY__INIT;
	struct sched			*s = c->d->sched;
	struct sched_job		*job;
	unsigned long long		 id = req->job_id;
	uint32_t			 owner = 0;
	int				 error;

	error = sched_job_owner(s, req->job_id, &owner);
	if (error == SCHED_ENOENT) {
		rpc_fail(c, GRPC_STATUS_NOT_FOUND, "no job %llu: it never "
		    "existed or has left the history (nkictl jobs --all)", id);
		return;
	}
	if (c->id.uid != 0 && c->id.uid != owner) {
		rpc_fail(c, GRPC_STATUS_PERMISSION_DENIED, "cannot cancel job "
		    "%llu: it belongs to uid %u, and only its owner or root may "
		    "cancel it (you are uid %u)", id, owner, c->id.uid);
		return;
	}
	if (error == SCHED_EDONE || (job = sched_job_find(s, req->job_id)) ==
	    NULL) {
		rpc_fail(c, GRPC_STATUS_FAILED_PRECONDITION, "cannot cancel job "
		    "%llu: it has finished", id);
		return;
	}
	/* Queued: gone now. Running: stops at the backend's next safe point
	 * (the cpu backend checks between ops); a lease ends now. */
	r.state = job->state == SCHED_QUEUED || job->work == NULL ?
	    (char *)"cancelled" : (char *)"stopping";
	sched_job_cancel(s, job, SCHED_CANCELLED);
	rpc_reply(c, &r.base);
}

const struct rpc_method rpc_cancel_method = {
	DISPATCH_METHOD_NAME("Cancel"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cancel,
};
