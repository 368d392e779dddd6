/* sched_call.h: a call's device work (a job or a lease) through the scheduler: its identity, class, deadline and cancellation go in, its final status goes into the job history. */
#ifndef NKID_SCHED_CALL_H
#define NKID_SCHED_CALL_H

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
int	sched_call_submit(struct rpc_call *c, struct sched_job *sj,
	    const char *kind, const char *kernel, int core, int job_class,
	    const char *verb);
#endif /* NKID_SCHED_CALL_H */
