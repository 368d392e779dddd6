/* job_traces.h: what a Profile captures: its counts checked, the profiled executions run, and the reply's traces. */
#ifndef NKID_JOB_TRACES_H
#define NKID_JOB_TRACES_H

#include <stddef.h>

#include "daemon/backend.h"
#include "daemon/job.h"
#include "nkid.pb-c.h"

/* Most executions (num_execs, profile_nth) one request may ask for. */
#define JOB_TRACES_MAX	1000u

/* One profile: its job, the traces from the backend and the reply's
 * storage: the state of a Profile's jobs. */
struct job_traces {
	struct job		  j;
	unsigned		  num_execs;
	unsigned		  profile_nth;
	struct backend_trace	 *t;		/* from the backend */
	size_t			  n;
	Nkid__V1__ProfileTrace	 *tv;		/* reply storage */
	Nkid__V1__ProfileTrace	**tp;
};

/*
 * Check Profile request req for job j (a struct job_traces) and its
 * backend (it profiles; num_execs and profile_nth 1 to JOB_TRACES_MAX, 0
 * meaning 1). On a bad request answers the call (UNIMPLEMENTED,
 * INVALID_ARGUMENT, naming the kernel) and returns -1.
 */
int	job_traces_init(struct job *j, const Nkid__V1__ProfileRequest *req);
/* The kind's exec, on the worker: the profiled executions of j's kernel
 * on core (x as for execute). Returns 0 or BACKEND_E* (j->diag set). */
int	job_traces_exec(struct job *j, unsigned core, struct backend_exec *x);
/* The kind's release: free the traces (not j). */
void	job_traces_release(struct job *j);

/* Fill r's traces from job j; valid until j is released. */
void	job_traces_reply_fill(struct job *j, Nkid__V1__ProfileReply *r);

#endif /* NKID_JOB_TRACES_H */
