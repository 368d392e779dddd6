/* job_traces.c: what a Profile captures: counts checked, the profiled executions, the reply's traces. */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/job_traces.h"
#include "daemon/xmalloc.h"

int
job_traces_init(struct job *j, const Nkid__V1__ProfileRequest *req)
{
	struct job_traces	*tr = (struct job_traces *)j;

	if (!backend_can(j->b, BACKEND_CAN_PROFILE)) {
		job_fail_unsupported(j->c, j->kind->verb, req->ref);
		return (-1);
	}
	tr->num_execs = req->num_execs ? req->num_execs : 1;
	tr->profile_nth = req->profile_nth ? req->profile_nth : 1;
	if (tr->num_execs > JOB_TRACES_MAX || tr->profile_nth > JOB_TRACES_MAX) {
		rpc_fail(j->c, GRPC_STATUS_INVALID_ARGUMENT, "cannot profile "
		    "'%s': num_execs and profile_nth must be 1 to %u (got %u "
		    "and %u)", kernel_ref_name(req->ref), JOB_TRACES_MAX,
		    tr->num_execs, tr->profile_nth);
		return (-1);
	}
	return (0);
}

int
job_traces_exec(struct job *j, unsigned core, struct backend_exec *x)
{
	struct job_traces	*tr = (struct job_traces *)j;

	return (backend_profile(j->b, kcache_entry_program(j->e), core, x, tr->num_execs, tr->profile_nth, &tr->t, &tr->n, j->diag));
}

void
job_traces_reply_fill(struct job *j, Nkid__V1__ProfileReply *r)
{
	struct job_traces	*tr = (struct job_traces *)j;
	size_t			 i;

	tr->tv = xcalloc(tr->n + 1, sizeof *tr->tv);
	tr->tp = xcalloc(tr->n + 1, sizeof *tr->tp);
	for (i = 0; i < tr->n; i++) {
		nkid__v1__profile_trace__init(&tr->tv[i]);
		tr->tv[i].execution = tr->t[i].execution;
		tr->tv[i].trace.data = tr->t[i].trace;
		tr->tv[i].trace.len = tr->t[i].trace_len;
		tr->tv[i].summary_json.data = (uint8_t *)tr->t[i].summary_json;
		tr->tv[i].summary_json.len = tr->t[i].summary_len;
		tr->tp[i] = &tr->tv[i];
	}
	r->n_traces = tr->n;
	r->traces = tr->tp;
	/* A backend with a model draws its traces from it (backend_cpu). */
	if (backend_can(j->b, BACKEND_CAN_MODEL))
		r->model_version = MODEL_VERSION;
}

void
job_traces_release(struct job *j)
{
	struct job_traces	*tr = (struct job_traces *)j;

	backend_traces_free(tr->t, tr->n);
	free(tr->tv);
	free(tr->tp);
	tr->t = NULL;
	tr->tv = NULL;
	tr->tp = NULL;
	tr->n = 0;
}
