/* job.h: the handler and pipeline of every kernel RPC (Run, Simulate, Benchmark, Profile): decode, validate, resolve the kernel, queue, execute, reply. */
#ifndef NKID_JOB_H
#define NKID_JOB_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "daemon/backend.h"
#include "daemon/dispatch.h"
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
 * How a kind's jobs hold their state and execute: the state extends
 * struct job (which comes first) to size bytes. A module that measures
 * (job_latency.c, job_traces.c) exports its ops whole.
 */
struct job_ops {
	size_t		 size;		/* of the kind's state, >= struct job */
	/*
	 * On the loop thread, before anything is checked or held: take the
	 * kind's fields from j->c->req. On a bad request answer the call
	 * and return -1. May be NULL.
	 */
	int		(*init)(struct job *j);
	/*
	 * On a worker thread: the backend call for one job on core (0 on
	 * the pool), with x filled by the pipeline. Returns 0 or a
	 * BACKEND_E* code with a message in j->diag.
	 */
	int		(*exec)(struct job *j, unsigned core,
			    struct backend_exec *x);
	/* Free the kind's own state (not j). May be NULL. */
	void		(*release)(struct job *j);
};

/*
 * What one kernel RPC is, declared next to its reply (rpc_run.c, ...): a
 * const table the pipeline follows, named by its method (JOB_METHOD).
 */
struct job_kind {
	const char	*verb;		/* "run": messages and the history */
	enum job_where	 where;
	int		 job_class;	/* -1: the request's; else the wire's
					 * JobClass every job of the kind has */
	int		 shapes_only;	/* inputs may have no values */
	int		 in_place;	/* one execution: its outputs are
					 * written where they go (output_shm,
					 * else warm buffers if inline) */
	const struct job_ops *ops;
	/* On the loop thread after a successful execution: rpc_reply. */
	void		(*reply)(struct job *j);
};

/*
 * The struct rpc_method (daemon/dispatch.h) of kernel RPC name whose kind
 * is k: unary, with the tensor receive cap, handled by job_rpc.
 */
#define JOB_METHOD(name, k) {						\
	DISPATCH_METHOD_NAME(name), .kind = RPC_UNARY,			\
	.cap = CONFIG_CAP_TENSOR, .handler = job_rpc, .job = &(k),	\
}

/* What the pipeline takes from a kernel request, read by the fields'
 * names (job_args_decode); borrowed from the request, which lives as long
 * as the call. */
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
	struct sim_tensor		*inputs;
	size_t			 ninputs;
	struct sim_tensor		*outputs;
	size_t			 noutputs;
	int			 error;		/* BACKEND_E* */
	int			 outputs_filled;
	char			 diag[BACKEND_DIAG_LEN];
	uint64_t		 exec_ns;
	/* Shared memory (daemon/shm.h): the regions of the inputs and of
	 * output_shm, unmapped and closed by job_free. */
	struct shm_set		*shm;
	int			 out_region;	/* index in shm; -1: none */
	uint64_t		 out_offset;	/* output_shm's range */
	uint64_t		 out_size;
	uint64_t		*out_offsets;	/* set if the outputs fit */
	uint64_t		*out_sizes;
	int			 outputs_in_shm; /* written there */
	void			**out_bufs;	/* where the outputs go */
	size_t			*out_pooled;	/* set: out_bufs from outpool */
};

/*
 * Fill a from kernel request req (RunRequest, SimulateRequest, ...): each
 * field of struct job_args from the request's field of the same name
 * (ninputs: inputs' count); a field the request lacks takes its zero value.
 * A field of that name but another type or label is a bug (assert).
 */
void	job_args_decode(const ProtobufCMessage *req, struct job_args *a);

/*
 * The handler of every kernel RPC (JOB_METHOD): start call c's job of
 * kind c->m->job with its request decoded (job_args_decode): validate
 * (the ops' init, the core and class, every input, output_shm), resolve
 * the kernel through the cache (compile on a miss), queue it on a core
 * (or the thread pool), execute it and reply (the kind's reply), then free
 * it. Every failure on the way answers the call with its status and words
 * (daemon/dispatch_error.c). Returns at once; the call is answered later
 * or before this returns.
 */
void	job_rpc(struct rpc_call *c);

/*
 * For a kind's init when the backend lacks the function the kind needs:
 * answer j's call UNIMPLEMENTED, "cannot VERB 'KERNEL': the B backend
 * does not VERB" (the kind's verb, ref's kernel). Returns -1, init's.
 */
int	job_fail_unsupported(struct job *j, const Nkid__V1__KernelRef *ref);

/*
 * For a reply: the reply's output messages, inline or naming output_shm.
 * Free with tensor_messages_free(m, j->noutputs).
 */
Nkid__V1__Tensor **job_outputs_messages(struct job *j);
/* For a reply: the NEFF image of j's kernel, borrowed until j is freed. */
void	job_neff_get(const struct job *j, ProtobufCBinaryData *neff);

#endif /* NKID_JOB_H */
