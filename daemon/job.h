/* job.h: the state that one Run or Simulate request carries from validation to reply. */
#ifndef NKID_JOB_H
#define NKID_JOB_H

#include <stddef.h>

#include <uv.h>

#include "daemon/backend.h"
#include "daemon/sched.h"
#include "nkid.pb-c.h"

struct kcache_entry;
struct rpc_call;

struct job {
	struct sched_job	 sj;		/* Run: the core's queue */
	uv_work_t		 work;		/* Simulate: the thread pool */
	struct rpc_call		*c;
	struct backend		*b;
	struct kcache_entry	*e;
	int			 cache_hit;
	sim_tensor		*inputs;
	size_t			 ninputs;
	sim_tensor		*outputs;
	size_t			 noutputs;
	int			 error;
	int			 outputs_filled;
	char			 diag[BACKEND_DIAG_LEN];
	char			*print;		/* Simulate: device_print text */
	size_t			 print_len;
	size_t			 print_cap;
	int			 print_truncated;
	uint64_t		 exec_ns;
};

/* Most device_print text kept for one Simulate reply. */
#define JOB_PRINT_MAX	(16 * 1024 * 1024)

/*
 * A job for call c with its inputs checked and converted (Run and
 * Simulate requests carry the same inputs field). On bad input the call
 * is answered (INVALID_ARGUMENT or RESOURCE_EXHAUSTED) and NULL returned.
 * The job is set as c->job and freed with job_free.
 */
struct job *job_new(struct rpc_call *c, Nkid__V1__Tensor *const *inputs,
	    size_t ninputs);
/*
 * Take the resolved kernel e (the reference moves to the job), check that
 * the outputs fit the limits and allocate them. On failure answers the
 * call and returns -1.
 */
int	job_kernel_set(struct job *j, struct kcache_entry *e, int cache_hit);
/* Answer the call for a failed execution (j->error, j->diag). */
void	job_fail(struct job *j, const char *verb);
/* Release everything the job holds; c->job is cleared. */
void	job_free(struct job *j);

#endif /* NKID_JOB_H */
