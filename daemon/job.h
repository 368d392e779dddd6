/* job.h: the handler and pipeline of every kernel RPC (Run, Simulate, Benchmark, Profile): decode, validate, resolve the kernel, queue, execute, reply. */
#ifndef NKID_JOB_H
#define NKID_JOB_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "daemon/backend.h"
#include "daemon/dispatch.h"
#include "daemon/job_output.h"
#include "daemon/sched.h"
#include "nkid.pb-c.h"

struct job;
struct kcache_entry;
struct rpc_call;
struct shm_set;

/* Where a kind's executions run. */
enum job_where {
	JOB_ON_CORE,		/* the core's fair queue (daemon/sched.c) */
	JOB_ON_POOL,		/* the thread pool, no core (Simulate) */
};

/*
 * What one kernel RPC's jobs are, declared next to its handler and reply
 * (rpc_run.c, ...): a const table the pipeline follows.
 */
struct job_kind {
	const char	*verb;		/* "run": messages and the history */
	enum job_where	 where;
	int		 shapes_only;	/* inputs may have no values */
	int		 in_place;	/* one execution: its outputs are
					 * written where they go (output_shm,
					 * else warm buffers if inline) */
	size_t		 size;		/* of the kind's state, which extends
					 * struct job (first) */
	/*
	 * On a worker thread: the backend call for one job on core (0 on
	 * the pool), with x filled by the pipeline. Returns 0 or a
	 * BACKEND_E* code with a message in j->diag.
	 */
	int		(*exec)(struct job *j, unsigned core,
			    struct backend_exec *x);
	/* On the loop thread after a successful execution: rpc_reply. */
	void		(*reply)(struct job *j);
	/* Free the kind's own state (not j). May be NULL. */
	void		(*release)(struct job *j);
};

/* What the pipeline takes from a kernel request, filled by its handler;
 * borrowed from the request, which lives as long as the call. */
struct job_args {
	const Nkid__V1__KernelRef	 *ref;
	Nkid__V1__Tensor *const		 *inputs;
	size_t				  ninputs;
	const Nkid__V1__ShmRegion	 *output_shm;	/* may be NULL */
	int				  core;		/* -1: any */
	int				  job_class;	/* the wire's */
};

/* One job: shared by every kind; a kind's state follows it. */
struct job {
	struct sched_job	 sj;		/* on a core's queue */
	uv_work_t		 work;		/* on the thread pool */
	const struct job_kind	*kind;
	struct rpc_call		*c;
	struct backend		*b;
	struct kcache_entry	*e;		/* the kernel, referenced */
	int			 cache_hit;
	int			 core;		/* requested; -1: any */
	int			 job_class;
	struct sim_tensor	*inputs;
	size_t			 ninputs;
	struct sim_tensor	*outputs;
	size_t			 noutputs;
	int			 error;		/* BACKEND_E* */
	char			 diag[BACKEND_DIAG_LEN];
	uint64_t		 exec_ns;
	/* Shared memory (daemon/shm.h): the regions of the inputs and of
	 * output_shm, unmapped and closed by job_free. */
	struct shm_set		*shm;
	struct job_output	 out;		/* where the outputs go */
};

/*
 * A new job of kind k for kernel call c, its state (k->size bytes) zeroed
 * but for what job.c owns. The job belongs to the call from now on: it is
 * freed once its reply is sent, or with the call (c->job_release) if the
 * call ends first. The handler fills its kind's state, then calls
 * job_start, or answers the call itself and returns.
 */
struct job	*job_new(struct rpc_call *c, const struct job_kind *k);
/*
 * Run job j with the request's fields a: validate (the core and class,
 * every input, output_shm), resolve the kernel through the cache
 * (compile on a miss), queue it on a core (or the thread pool), execute
 * it and reply (the kind's reply), then free it. Every failure on the way
 * answers the call with its status and words (daemon/dispatch_error.c).
 * Returns at once; the call is answered later or before this returns.
 */
void	job_start(struct job *j, const struct job_args *a);

/*
 * For a handler when the backend lacks the function its kind needs:
 * answer call c UNIMPLEMENTED, "cannot VERB 'KERNEL': the B backend does
 * not VERB" (ref's kernel).
 */
void	job_fail_unsupported(struct rpc_call *c, const char *verb,
	    const Nkid__V1__KernelRef *ref);

/*
 * For a reply: the reply's output messages, inline or naming output_shm.
 * Free with tensor_messages_free(m, j->noutputs).
 */
Nkid__V1__Tensor **job_outputs_messages(struct job *j);
/* For a reply: the NEFF image of j's kernel, borrowed until j is freed. */
void	job_neff_get(const struct job *j, ProtobufCBinaryData *neff);

#endif /* NKID_JOB_H */
