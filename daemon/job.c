/* job.c: the pipeline of every kernel RPC: validate a request's fields, resolve the kernel, queue on a core or the thread pool, execute, reply; and the inputs a job holds on the way (its outputs: job_output.c). */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/dispatch_error.h"
#include "daemon/job.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/log.h"
#include "daemon/sched_call.h"
#include "daemon/shm.h"
#include "daemon/tensor.h"
#include "daemon/xmalloc.h"

/*
 * A Run whose kernel's last execution took at most this long runs on the
 * loop thread when its core is idle (sched.c, struct sched_job's here):
 * the hops to the core's worker and back cost more than such a job.
 */
#define JOB_HERE_MAX_NS		100000
/* Last execution time per NEFF key, direct-mapped (a heuristic: a
 * collision only sends a job to the worker). Loop thread only. */
#define JOB_HERE_SLOTS		256

struct job_here_slot {
	char		key[KCACHE_KEY_LEN + 1];
	uint64_t	exec_ns;
};

static struct job_here_slot	job_here_slots[JOB_HERE_SLOTS];

static void	job_free(struct job *);

static void
job_release_cb(void *arg)
{
	job_free(arg);
}

/* Validate: the core and class of the request, for a kind on a core. */
static int
job_placement_check(struct job *j)
{
	struct rpc_call	*c = j->c;
	unsigned	 ncores = sched_core_count(c->d->sched);

	if (j->kind->where != JOB_ON_CORE)
		return (0);
	if (j->core < -1 || (j->core >= 0 && (unsigned)j->core >= ncores)) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
		    "core %d does not exist: nkid has %u core%s (0 to %u, or -1 "
		    "for any)", j->core, ncores, ncores == 1 ? "" : "s",
		    ncores - 1);
		return (-1);
	}
	if (j->job_class != NKID__V1__JOB_CLASS__JOB_CLASS_INTERACTIVE &&
	    j->job_class != NKID__V1__JOB_CLASS__JOB_CLASS_BATCH) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "job_class %d is not "
		    "a job class: 0 (interactive) or 1 (batch)", j->job_class);
		return (-1);
	}
	return (0);
}

/*
 * Validate: every input, inline or mapped from the caller's shared-memory
 * regions, and output_shm opened and checked for writing. On bad input
 * answers the call with nothing left held in j.
 */
static int
job_inputs_take(struct job *j, const struct job_args *a)
{
	struct rpc_call	*c = j->c;
	struct daemon	*d = c->d;
	struct shm_set	*shm;
	struct sim_tensor	*st;
	char		 err[768];
	int		 error, ri = -1;

	shm = shm_set_new(SHM_DIR, c->id.uid);
	error = tensor_inputs_convert(a->inputs, a->ninputs, d->cfg.max_tensors,
	    d->cfg.max_tensor_bytes, j->kind->shapes_only ?
	    TENSOR_TAKE_SHAPES : 0, shm, &st, err, sizeof err);
	if (error != 0) {
		shm_set_free(shm);
		rpc_fail(c, dispatch_status_tensor(error), "%s", err);
		return (-1);
	}
	if (a->output_shm != NULL && (ri = shm_set_open(shm,
	    a->output_shm->name, 1, a->output_shm->offset,
	    a->output_shm->size, err, sizeof err)) < 0) {
		free(st);
		shm_set_free(shm);
		rpc_fail(c, dispatch_status_shm(ri), "output_shm: %s", err);
		return (-1);
	}
	j->inputs = st;
	j->ninputs = a->ninputs;
	j->shm = shm;
	job_output_init(&j->out, shm, ri, ri >= 0 ? a->output_shm->offset : 0,
	    ri >= 0 ? a->output_shm->size : 0);
	return (0);
}

/*
 * Take the resolved kernel (the reference moves to the job), check that
 * the inputs match it and the outputs fit the limits, and place the
 * outputs. On failure answers the call and returns -1.
 */
static int
job_kernel_bind(struct job *j, struct kcache_entry *e, int cache_hit)
{
	struct rpc_call			*c = j->c;
	const struct backend_program	*p = kcache_entry_program(e);
	uint64_t			 total;
	char				 err[512];

	j->e = e;
	j->cache_hit = cache_hit;
	if (j->ninputs != p->nparams) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
		    "cannot run '%s': it takes %zu arguments, %zu given",
		    p->name, p->nparams, j->ninputs);
		return (-1);
	}
	if (tensor_outputs_size(p, c->d->cfg.max_tensor_bytes, &total, err,
	    sizeof err) != 0) {
		rpc_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "%s", err);
		return (-1);
	}
	j->noutputs = p->noutputs;
	j->outputs = xcalloc(j->noutputs + 1, sizeof *j->outputs);
	job_output_plan(&j->out, p, j->kind->in_place);
	return (0);
}

/* On a worker: one execution through the kind, timed; then the outputs
 * are placed. */
static void
job_exec(struct job *j, unsigned core)
{
	struct backend_exec	x;
	uint64_t		t0 = uv_hrtime();

	memset(&x, 0, sizeof x);
	x.inputs = j->inputs;
	x.ninputs = j->ninputs;
	x.outputs = j->outputs;
	x.noutputs = j->noutputs;
	if (j->kind->in_place)
		x.out_bufs = j->out.bufs;
	x.cancel = &j->c->cancelled;
	j->error = j->kind->exec(j, core, &x);
	j->exec_ns = uv_hrtime() - t0;
	if (job_output_done(&j->out, j->outputs, j->error == 0, j->diag,
	    sizeof j->diag) != 0)
		j->error = BACKEND_EARG;
}

/* The slot of a NEFF key (hex SHA-256: any of its digits is uniform). */
static struct job_here_slot *
job_here_slot(const char *key)
{
	unsigned	h = 0;
	int		i;

	for (i = 0; i < 4; i++)
		h = h * 31 + (unsigned char)key[i];
	return (&job_here_slots[h % JOB_HERE_SLOTS]);
}

/*
 * Whether j may run on the loop thread: a Run (one execution, nothing
 * streamed) on the cpu backend (a device call never runs on the loop)
 * whose kernel's last execution was short.
 */
static int
job_here_ok(const struct job *j)
{
	const char		*key = kcache_entry_key(j->e);
	struct job_here_slot	*sl;

	if (!j->kind->in_place || !backend_runs_on_host(j->b) ||
	    strlen(key) != KCACHE_KEY_LEN)
		return (0);
	sl = job_here_slot(key);
	return (strcmp(sl->key, key) == 0 && sl->exec_ns <= JOB_HERE_MAX_NS);
}

/* On the loop: remember how long j's kernel ran (job_here_ok). */
static void
job_here_note(const struct job *j)
{
	const char		*key = kcache_entry_key(j->e);
	struct job_here_slot	*sl;

	if (!j->kind->in_place || strlen(key) != KCACHE_KEY_LEN)
		return;
	sl = job_here_slot(key);
	memcpy(sl->key, key, sizeof sl->key);
	sl->exec_ns = j->exec_ns;
}

/* On the loop: the execution is over (or never ran): reply, free. */
static void
job_finish(struct job *j, int outcome)
{
	const char	*name = kcache_entry_name(j->e);

	if (outcome == SCHED_RAN && j->error == 0)
		job_here_note(j);

	if (outcome != SCHED_RAN)
		dispatch_fail_unrun(j->c, &j->sj, outcome, j->kind->verb, name);
	else if (j->error != 0)
		dispatch_fail_exec(j->c, &j->sj, j->kind->verb, name, j->error,
		    j->diag);
	else
		j->kind->reply(j);
	job_free(j);
}

static void
job_core_work_cb(struct sched_job *sj, unsigned core)
{
	job_exec((struct job *)sj, core);
}

static void
job_core_done_cb(struct sched_job *sj, int outcome)
{
	job_finish((struct job *)sj, outcome);
}

static void
job_pool_work_cb(uv_work_t *w)
{
	job_exec(w->data, 0);
}

static void
job_pool_after_cb(uv_work_t *w, int status)
{
	struct job	*j = w->data;

	if (status != 0 && j->error == 0)
		j->error = BACKEND_ECANCELED;
	job_finish(j, SCHED_RAN);
}

/* The kernel is resolved (or not): bind it and queue the execution. */
static void
job_resolved_cb(void *arg, const struct kcache_result *r)
{
	struct job	*j = arg;
	struct rpc_call	*c = j->c;
	int		 error;

	if (r->e == NULL) {
		dispatch_fail_kcache(c, r);
		job_free(j);
		return;
	}
	if (__atomic_load_n(&c->cancelled, __ATOMIC_ACQUIRE)) {
		rpc_fail(c, GRPC_STATUS_CANCELLED, "cancelled while resolving "
		    "'%s'", kcache_entry_name(r->e));
		kcache_entry_unref(c->d->kcache, r->e);
		job_free(j);
		return;
	}
	if (job_kernel_bind(j, r->e, r->cache_hit) != 0) {
		job_free(j);
		return;
	}
	if (j->kind->where == JOB_ON_POOL) {
		j->work.data = j;
		if ((error = uv_queue_work(c->d->loop, &j->work,
		    job_pool_work_cb, job_pool_after_cb)) != 0) {
			rpc_fail(c, GRPC_STATUS_INTERNAL, "cannot queue %s: %s",
			    j->kind->verb, uv_strerror(error));
			job_free(j);
		}
		return;
	}
	j->sj.work = job_core_work_cb;
	j->sj.done = job_core_done_cb;
	j->sj.here = job_here_ok(j);
	if (sched_call_submit(c, &j->sj, j->kind->verb, kcache_entry_name(j->e),
	    j->core, j->job_class, j->kind->verb) != 0) {
		job_free(j);
		return;
	}
	/* Ran on the spot: answer now rather than a loop turn later (this
	 * frees j). */
	if (j->sj.here && j->sj.state == SCHED_FINISHED)
		sched_events_deliver(c->d->sched);
}

struct job *
job_new(struct rpc_call *c, const struct job_kind *k)
{
	struct job	*j;

	assert(k->size >= sizeof *j && k->exec != NULL && k->reply != NULL);
	j = xcalloc(1, k->size);
	j->kind = k;
	j->c = c;
	j->b = c->d->backend;
	job_output_init(&j->out, NULL, -1, 0, 0);
	c->job = j;
	c->job_release = job_release_cb;
	return (j);
}

/* Validate: the KernelRef, turned into the cache's request rq. */
static int
job_kernel_request(struct job *j, const Nkid__V1__KernelRef *ref,
    struct kcache_request *rq)
{
	grpc_status_code	code;
	char			msg[512];

	if (kernel_request_init(j->c->d, j->c->m->name, ref, rq, &code, msg,
	    sizeof msg) != 0) {
		rpc_fail(j->c, code, "%s", msg);
		return (-1);
	}
	return (0);
}

void
job_start(struct job *j, const struct job_args *a)
{
	struct rpc_call		*c = j->c;
	struct kcache_request	 rq;

	j->core = a->core;
	j->job_class = a->job_class;
	/* On bad input the call says what was wrong; j goes with it. */
	if (job_placement_check(j) != 0 || job_inputs_take(j, a) != 0 ||
	    job_kernel_request(j, a->ref, &rq) != 0)
		return;
	kernel_resolve(c, &rq, job_resolved_cb, j);
}

void
job_fail_unsupported(struct rpc_call *c, const char *verb,
    const Nkid__V1__KernelRef *ref)
{
	rpc_fail(c, GRPC_STATUS_UNIMPLEMENTED, "cannot %s '%s': the %s "
	    "backend does not %s", verb, kernel_ref_name(ref),
	    backend_name(c->d->backend), verb);
}

Nkid__V1__Tensor **
job_outputs_messages(struct job *j)
{
	return (tensor_outputs_messages(kcache_entry_program(j->e),
	    j->outputs, j->noutputs, j->out.in_shm ?
	    shm_set_name(j->shm, j->out.region) : NULL, j->out.offsets));
}

void
job_neff_get(const struct job *j, ProtobufCBinaryData *neff)
{
	const void	*image;
	size_t		 len;

	image = kcache_entry_image(j->e, &len);
	neff->data = (uint8_t *)image;
	neff->len = len;
}

/* Release everything the job holds, the kind's state too; c->job is
 * cleared. */
static void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	job_output_release(&j->out, j->outputs);
	free(j->outputs);
	free(j->inputs);
	shm_set_free(j->shm);
	if (j->kind->release != NULL)
		j->kind->release(j);
	if (j->e != NULL)
		kcache_entry_unref(j->c->d->kcache, j->e);
	if (j->c->job == j)
		j->c->job = NULL;
	free(j);
}
