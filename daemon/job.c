/* job.c: the handler and pipeline of every kernel RPC: decode the request, validate, resolve the kernel, queue on a core or the thread pool, execute, reply; and the inputs and outputs a job holds on the way. */
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
#include "daemon/outpool.h"
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

/*
 * The fields of struct job_args, each read from the kernel request's field
 * of the same name and type: a table, so that every kernel RPC is decoded
 * alike (job_args_decode).
 */
static const struct job_args_field {
	const char	*name;
	ProtobufCType	 type;		/* a message (pointer), int32 or enum */
	ProtobufCLabel	 label;
	const void	*descriptor;	/* of a message or enum field */
	size_t		 offset;	/* in struct job_args */
	size_t		 count;		/* repeated: its count's offset */
} job_args_fields[] = {
	{ "ref", PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
	    &nkid__v1__kernel_ref__descriptor, offsetof(struct job_args, ref),
	    0 },
	{ "inputs", PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_REPEATED,
	    &nkid__v1__tensor__descriptor, offsetof(struct job_args, inputs),
	    offsetof(struct job_args, ninputs) },
	{ "output_shm", PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
	    &nkid__v1__shm_region__descriptor,
	    offsetof(struct job_args, output_shm), 0 },
	{ "core", PROTOBUF_C_TYPE_INT32, PROTOBUF_C_LABEL_NONE, NULL,
	    offsetof(struct job_args, core), 0 },
	{ "job_class", PROTOBUF_C_TYPE_ENUM, PROTOBUF_C_LABEL_NONE,
	    &nkid__v1__job_class__descriptor,
	    offsetof(struct job_args, job_class), 0 },
};
#define JOB_ARGS_NFIELDS (sizeof job_args_fields / sizeof job_args_fields[0])

/* An int32 or enum field lands in an int of struct job_args. */
_Static_assert(sizeof(int) == sizeof(int32_t), "int is not 32 bits");

struct job_here_slot {
	char		key[KCACHE_KEY_LEN + 1];
	uint64_t	exec_ns;
};

static struct job_here_slot	job_here_slots[JOB_HERE_SLOTS];

static void	job_free(struct job *);
static void	job_outputs_map(struct job *);
static void	job_outputs_place(struct job *);
static void	job_outputs_pool(struct job *, const struct backend_program *);

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
	j->out_region = ri;
	if (ri >= 0) {
		j->out_offset = a->output_shm->offset;
		j->out_size = a->output_shm->size;
	}
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
	j->outputs = xcalloc(j->noutputs, sizeof *j->outputs);
	if (j->out_region >= 0) {
		j->out_offsets = xcalloc(j->noutputs + 1, sizeof(uint64_t));
		j->out_sizes = xcalloc(j->noutputs + 1, sizeof(uint64_t));
		/* end - offset cannot wrap: end >= offset. */
		if (tensor_outputs_layout(p, j->out_offset, j->out_offsets,
		    j->out_sizes, &total) != 0 ||
		    total - j->out_offset > j->out_size) {
			free(j->out_offsets);
			free(j->out_sizes);
			j->out_offsets = j->out_sizes = NULL;	/* inline */
		} else
			job_outputs_map(j);
	}
	if (j->kind->in_place && j->out_bufs == NULL)
		job_outputs_pool(j, p);
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
		x.out_bufs = j->out_bufs;
	x.cancel = &j->c->cancelled;
	j->error = j->kind->ops->exec(j, core, &x);
	j->outputs_filled = j->error == 0;
	j->exec_ns = uv_hrtime() - t0;
	job_outputs_place(j);
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

	if (!j->kind->in_place || strcmp(j->b->ops->name, "cpu") != 0 ||
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

void
job_args_decode(const ProtobufCMessage *req, struct job_args *a)
{
	const struct job_args_field	*af;
	const ProtobufCFieldDescriptor	*f;
	size_t				 i;

	memset(a, 0, sizeof *a);
	for (i = 0; i < JOB_ARGS_NFIELDS; i++) {
		af = &job_args_fields[i];
		f = protobuf_c_message_descriptor_get_field_by_name(
		    req->descriptor, af->name);
		if (f == NULL)
			continue;	/* not in this request: zero */
		assert(f->type == af->type && f->label == af->label &&
		    f->descriptor == af->descriptor);
		memcpy((char *)a + af->offset, (const char *)req + f->offset,
		    f->type == PROTOBUF_C_TYPE_MESSAGE ? sizeof(void *) :
		    sizeof(int32_t));
		if (f->label == PROTOBUF_C_LABEL_REPEATED)
			memcpy((char *)a + af->count, (const char *)req +
			    f->quantifier_offset, sizeof(size_t));
	}
}

void
job_rpc(struct rpc_call *c)
{
	const struct job_kind	*k = c->m->job;
	struct kcache_request	 rq;
	struct job_args		 a;
	struct job		*j;
	grpc_status_code	 code;
	char			 msg[512];

	assert(k != NULL && k->ops->size >= sizeof *j &&
	    k->ops->exec != NULL && k->reply != NULL);
	job_args_decode(c->req, &a);
	j = xcalloc(1, k->ops->size);
	j->kind = k;
	j->c = c;
	j->b = c->d->backend;
	j->core = a.core;
	j->job_class = k->job_class >= 0 ? k->job_class : a.job_class;
	j->out_region = -1;
	if ((k->ops->init != NULL && k->ops->init(j) != 0) ||
	    job_placement_check(j) != 0 || job_inputs_take(j, &a) != 0) {
		job_free(j);
		return;
	}
	if (kernel_request_init(c->d, c->m->name, a.ref, &rq, &code, msg,
	    sizeof msg) != 0) {
		rpc_fail(c, code, "%s", msg);
		job_free(j);
		return;
	}
	c->job = j;
	c->job_release = job_release_cb;
	kcache_resolve(c->d->kcache, &rq, job_resolved_cb, j);
}

/*
 * Outputs that travel inline: give the large ones warm buffers from the
 * pool (daemon/outpool.c), returned by job_free after the reply is sent.
 */
static void
job_outputs_pool(struct job *j, const struct backend_program *p)
{
	const struct sim_sig	*sg;
	size_t		 i, n;
	int		 any = 0, k;

	j->out_bufs = xcalloc(j->noutputs + 1, sizeof *j->out_bufs);
	j->out_pooled = xcalloc(j->noutputs + 1, sizeof *j->out_pooled);
	for (i = 0; i < j->noutputs; i++) {
		sg = p->output(p, i);
		n = sim_dtype_size(sg->dtype);
		for (k = 0; k < sg->rank; k++)
			n *= sg->shape[k];	/* checked: tensor_outputs_size */
		if (n < OUTPOOL_MIN || (j->out_bufs[i] = outpool_get(n)) == NULL)
			continue;
		j->out_pooled[i] = n;
		any = 1;
	}
	if (!any) {
		free(j->out_bufs);
		free(j->out_pooled);
		j->out_bufs = NULL;
		j->out_pooled = NULL;
	}
}

/*
 * Map each output's place in output_shm read-write, so that the executor
 * writes it there (no copy afterwards). Any failure leaves j->out_bufs
 * NULL: the outputs are then copied in by job_outputs_place.
 */
static void
job_outputs_map(struct job *j)
{
	char	err[512];
	size_t	i;

	j->out_bufs = xcalloc(j->noutputs + 1, sizeof *j->out_bufs);
	for (i = 0; i < j->noutputs; i++) {
		if (j->out_sizes[i] == 0)
			continue;
		if (shm_set_map_rw(j->shm, j->out_region, j->out_offsets[i],
		    j->out_sizes[i], &j->out_bufs[i], err, sizeof err) != 0) {
			log_debug("job %llu: %s; outputs are copied in",
			    (unsigned long long)j->sj.id, err);
			free(j->out_bufs);
			j->out_bufs = NULL;
			return;
		}
	}
}

static void
job_outputs_place(struct job *j)
{
	const char	*bad;
	char		 err[512];
	size_t		 i;
	int		 mapped, in_place;

	if (j->shm == NULL)
		return;
	/* Outputs the executor wrote into the client's region (mapped by
	 * job_outputs_map; pooled buffers are nkid's own) are the client's
	 * memory: never freed here. */
	mapped = j->out_bufs != NULL && j->out_pooled == NULL;
	in_place = mapped && j->outputs_filled;
	for (i = 0; in_place && i < j->noutputs; i++)
		if (j->out_sizes[i] != 0 && j->outputs[i].data != j->out_bufs[i])
			in_place = 0;	/* not passed to the executor: copy */
	for (i = 0; in_place && i < j->noutputs; i++)
		if (j->outputs[i].data == j->out_bufs[i])
			j->outputs[i].data = NULL;
	if (j->error == 0 && (bad = shm_set_damaged(j->shm)) != NULL) {
		j->error = BACKEND_EARG;
		snprintf(j->diag, sizeof j->diag, "shared-memory region '%s' "
		    "shrank while nkid read it (truncated by the client during "
		    "the job?)", bad);
		return;
	}
	if (j->error != 0 || !j->outputs_filled)
		return;
	if (in_place) {
		j->outputs_filled = 0;
		j->outputs_in_shm = 1;
		return;
	}
	if (j->out_offsets == NULL)
		return;
	for (i = 0; i < j->noutputs; i++)
		if (j->outputs[i].nbytes != j->out_sizes[i])
			return;
	for (i = 0; i < j->noutputs; i++) {
		if (shm_set_write(j->shm, j->out_region, j->out_offsets[i],
		    j->outputs[i].data, j->outputs[i].nbytes, err,
		    sizeof err) != 0) {
			log_warn("job %llu: %s; its outputs go inline",
			    (unsigned long long)j->sj.id, err);
			return;
		}
	}
	/* Only data goes: dtype, shape and size stay for the reply. */
	sim_tensors_release(j->outputs, j->noutputs);
	for (i = 0; i < j->noutputs; i++)
		j->outputs[i].nbytes = j->out_sizes[i];
	j->outputs_filled = 0;
	j->outputs_in_shm = 1;
}

int
job_fail_unsupported(struct job *j, const Nkid__V1__KernelRef *ref)
{
	rpc_fail(j->c, GRPC_STATUS_UNIMPLEMENTED, "cannot %s '%s': the %s "
	    "backend does not %s", j->kind->verb, kernel_ref_name(ref),
	    j->b->ops->name, j->kind->verb);
	return (-1);
}

Nkid__V1__Tensor **
job_outputs_messages(struct job *j)
{
	return (tensor_outputs_messages(kcache_entry_program(j->e),
	    j->outputs, j->noutputs, j->outputs_in_shm ?
	    shm_set_name(j->shm, j->out_region) : NULL, j->out_offsets));
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
	size_t	i;

	if (j == NULL)
		return;
	/* Outputs in the client's region are not ours to free. */
	for (i = 0; j->out_bufs != NULL && j->outputs != NULL &&
	    i < j->noutputs; i++)
		if (j->outputs[i].data == j->out_bufs[i])
			j->outputs[i].data = NULL;
	if (j->outputs != NULL && j->outputs_filled)
		sim_tensors_release(j->outputs, j->noutputs);
	for (i = 0; j->out_pooled != NULL && i < j->noutputs; i++)
		if (j->out_pooled[i] != 0)
			outpool_put(j->out_bufs[i], j->out_pooled[i]);
	free(j->out_pooled);
	free(j->out_bufs);
	free(j->outputs);
	free(j->inputs);
	shm_set_free(j->shm);
	free(j->out_offsets);
	free(j->out_sizes);
	if (j->kind->ops->release != NULL)
		j->kind->ops->release(j);
	if (j->e != NULL)
		kcache_entry_unref(j->c->d->kcache, j->e);
	if (j->c->job == j)
		j->c->job = NULL;
	free(j);
}
