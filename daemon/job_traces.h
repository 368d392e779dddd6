/* job_traces.h: what a Profile captures: its counts checked, the profiled executions run, and the reply's traces. */
#ifndef NKID_JOB_TRACES_H
#define NKID_JOB_TRACES_H

#include <stddef.h>

#include "daemon/backend.h"
#include "nkid.pb-c.h"

struct rpc_call;

/* Most executions (num_execs, profile_nth) one request may ask for. */
#define JOB_TRACES_MAX	1000u

struct job_traces {
	unsigned		  num_execs;
	unsigned		  profile_nth;
	struct backend_trace	 *t;		/* from the backend */
	size_t			  n;
	Nkid__V1__ProfileTrace	 *tv;		/* reply storage */
	Nkid__V1__ProfileTrace	**tp;
};

/*
 * Check call c's Profile request for b (b profiles; num_execs and
 * profile_nth 1 to JOB_TRACES_MAX, 0 meaning 1). On a bad request answers c
 * (UNIMPLEMENTED, INVALID_ARGUMENT, naming the kernel) and returns -1.
 */
int	job_traces_init(struct job_traces *tr, struct rpc_call *c,
	    const struct backend *b);
/* On the worker: the profiled executions of p on core (x as for
 * execute). Returns 0 or BACKEND_E* (diag set). */
int	job_traces_run(struct job_traces *tr, struct backend *b,
	    const struct backend_program *p, unsigned core,
	    const struct backend_exec *x, char *diag);
/* Fill r's traces; valid until job_traces_release. */
void	job_traces_reply_fill(struct job_traces *tr, Nkid__V1__ProfileReply *r);
void	job_traces_release(struct job_traces *tr);

#endif /* NKID_JOB_TRACES_H */
