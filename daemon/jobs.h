/* jobs.h: device work of a call through the scheduler: its identity, class, deadline and cancellation go in, its final status goes into the job history. */
#ifndef NKID_JOBS_H
#define NKID_JOBS_H

struct rpc_call;
struct sched_job;

/*
 * Submit sj (work and done set by the caller) for call c: the client
 * identity (uid + pid), the call's deadline and cancel flag, kind ("run")
 * and kernel name (copied) for the history, core (-1: least loaded) and
 * class (the wire's JobClass value). c->on_cancel is set so that a client
 * that goes away takes its queued job with it (DEADLINE_EXCEEDED in the
 * history if its deadline passed), and c's final status is recorded when
 * it ends. On failure answers c (RESOURCE_EXHAUSTED with the numbers,
 * INVALID_ARGUMENT for a core that does not exist, UNAVAILABLE when
 * stopping) with "cannot VERB 'KERNEL': ..." and returns -1; the caller
 * then frees its state. Returns 0 on success.
 */
int	jobs_submit(struct rpc_call *c, struct sched_job *sj, const char *kind,
	    const char *kernel, int core, int job_class, const char *verb);
/*
 * Answer c for a job that never ran (done with outcome != SCHED_RAN):
 * DEADLINE_EXCEEDED, CANCELLED or UNAVAILABLE, with a message that names
 * the job, kernel and wait.
 */
void	jobs_fail_unrun(struct rpc_call *c, const struct sched_job *sj,
	    int outcome, const char *verb, const char *name);

#endif /* NKID_JOBS_H */
