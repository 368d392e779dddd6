/* job.h: the state that one Run, Simulate, Benchmark or Profile request carries from validation to reply. */
#ifndef NKID_JOB_H
#define NKID_JOB_H

#include <stddef.h>

#include <uv.h>

#include "daemon/backend.h"
#include "daemon/sched.h"
#include "nkid.pb-c.h"

struct kcache_entry;
struct rpc_call;
struct shm_set;

struct job {
	struct sched_job	 sj;		/* Run: the core's queue */
	uv_work_t		 work;		/* Simulate: the thread pool */
	struct rpc_call		*c;
	struct backend		*b;
	struct kcache_entry	*e;
	int			 cache_hit;
	struct sim_tensor		*inputs;
	size_t			 ninputs;
	struct sim_tensor		*outputs;
	size_t			 noutputs;
	int			 error;
	int			 outputs_filled;
	char			 diag[BACKEND_DIAG_LEN];
	char			*print;		/* Simulate: device_print text */
	size_t			 print_len;
	size_t			 print_cap;
	int			 print_truncated;
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
	int			 pool_outputs;	/* Run: inline outputs pooled */
};

/* Most device_print text kept for one Simulate reply. */
#define JOB_PRINT_MAX	(16 * 1024 * 1024)

/*
 * Fill the zeroed job j (the first member of a bigger state for
 * Benchmark and Profile) for call c: inputs checked and converted, inline
 * or mapped from the caller's shared-memory regions (flags for
 * tensor_inputs_convert), and output_shm (may be NULL) opened and checked
 * for writing. Sets c->job = j; the caller sets c->job_release. On bad
 * input the call is answered (INVALID_ARGUMENT, RESOURCE_EXHAUSTED,
 * NOT_FOUND, PERMISSION_DENIED) with nothing left held in j, and -1
 * returned.
 */
int	job_init(struct job *j, struct rpc_call *c,
	    Nkid__V1__Tensor *const *inputs, size_t ninputs,
	    const Nkid__V1__ShmRegion *output_shm, int flags);
/*
 * A new job for call c (job_init), c->job_release set; NULL if the call
 * was answered. Freed with job_free.
 */
struct job *job_new(struct rpc_call *c, Nkid__V1__Tensor *const *inputs,
	    size_t ninputs, const Nkid__V1__ShmRegion *output_shm);
/*
 * Take the resolved kernel e (the reference moves to the job), check that
 * the outputs fit the limits and allocate them. On failure answers the
 * call and returns -1.
 */
int	job_kernel_set(struct job *j, struct kcache_entry *e, int cache_hit);
/*
 * In the handler: answer the call (INVALID_ARGUMENT) and return -1 when
 * core is neither -1 (any) nor one of nkid's cores; else 0.
 */
int	job_core_check(struct rpc_call *c, int core);
/*
 * In a kernel_resolve callback: bind e to j (job_kernel_set), then submit
 * j->sj with work and done on core (-1: any) in job_class (the wire's
 * JobClass), verb naming the job in the history and in messages
 * (jobs_submit). On failure the call is answered and -1 returned; the
 * caller then frees its job state.
 */
int	job_submit(struct job *j, struct kcache_entry *e, int cache_hit,
	    sched_work_fn work, sched_done_fn done, int core, int job_class,
	    const char *verb);
/*
 * On the worker, before the backend call: zero x and fill it with j's
 * inputs, outputs and the call's cancel flag. Returns the start time
 * (uv_hrtime) to give job_exec_end.
 */
uint64_t job_exec_begin(struct job *j, struct backend_exec *x);
/*
 * On the worker, right after the backend call that returned error (0 or
 * a BACKEND_E* code) and began at t0: set j->error, outputs_filled and
 * exec_ns, then place the outputs (job_outputs_place).
 */
void	job_exec_end(struct job *j, int error, uint64_t t0);
/*
 * In a sched done callback: when the job did not run (outcome !=
 * SCHED_RAN, jobs_fail_unrun) or its execution failed (job_fail), answer
 * the call with verb and return -1; the caller then frees its job state.
 * Else 0: the caller replies.
 */
int	job_done_check(struct job *j, int outcome, const char *verb);
/*
 * Point neff at the NEFF image of j's kernel, borrowed from j->e: valid
 * until job_free.
 */
void	job_neff_get(const struct job *j, ProtobufCBinaryData *neff);
/*
 * On the worker, right after the execution (outputs_filled and error
 * set, exec_ns taken): fail the job (BACKEND_EARG) if a shared-memory
 * input shrank while it ran; else, when the outputs fit output_shm,
 * write them there (one copy each, pwrite) and release them. An output
 * that cannot be written stays inline.
 */
void	job_outputs_place(struct job *j);
/*
 * The reply's output messages: inline, or naming output_shm (see
 * tensor_outputs_messages). Free with tensor_messages_free(m,
 * j->noutputs) before job_free.
 */
Nkid__V1__Tensor **job_outputs_messages(struct job *j);
/* Answer the call for a failed execution (j->error, j->diag). */
void	job_fail(struct job *j, const char *verb);
/* Release everything the job holds; c->job is cleared. */
void	job_free(struct job *j);

#endif /* NKID_JOB_H */
