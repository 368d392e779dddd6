/* job.c: input checks, kernel binding, scheduling, execution, output allocation and error mapping shared by Run, Simulate, Benchmark and Profile. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/job.h"
#include "daemon/jobs.h"
#include "daemon/kcache.h"
#include "daemon/log.h"
#include "daemon/outpool.h"
#include "daemon/shm.h"
#include "daemon/tensor.h"
#include "daemon/xmalloc.h"

static void	job_outputs_map(struct job *);
static void	job_outputs_pool(struct job *, const struct backend_program *);

static void
job_release_cb(void *arg)
{
	job_free(arg);
}

int
job_init(struct job *j, struct rpc_call *c, Nkid__V1__Tensor *const *inputs,
    size_t ninputs, const Nkid__V1__ShmRegion *output_shm, int flags)
{
	struct daemon	*d = c->d;
	struct shm_set	*shm;
	struct sim_tensor	*st;
	char		 err[768];
	int		 error, ri = -1;

	shm = shm_set_new(SHM_DIR, c->id.uid);
	error = tensor_inputs_convert(inputs, ninputs, d->cfg.max_tensors,
	    d->cfg.max_tensor_bytes, flags, shm, &st, err, sizeof err);
	if (error != 0) {
		shm_set_free(shm);
		rpc_fail(c, tensor_err_status(error), "%s", err);
		return (-1);
	}
	if (output_shm != NULL && (ri = shm_set_open(shm, output_shm->name, 1,
	    output_shm->offset, output_shm->size, err, sizeof err)) < 0) {
		free(st);
		shm_set_free(shm);
		rpc_fail(c, ri == SHM_ENOENT ? GRPC_STATUS_NOT_FOUND :
		    ri == SHM_EPERM ? GRPC_STATUS_PERMISSION_DENIED :
		    ri == SHM_ELIMIT ? GRPC_STATUS_RESOURCE_EXHAUSTED :
		    ri == SHM_ESYS ? GRPC_STATUS_INTERNAL :
		    GRPC_STATUS_INVALID_ARGUMENT, "output_shm: %s", err);
		return (-1);
	}
	j->c = c;
	j->b = d->backend;
	j->inputs = st;
	j->ninputs = ninputs;
	j->shm = shm;
	j->out_region = ri;
	if (ri >= 0) {
		j->out_offset = output_shm->offset;
		j->out_size = output_shm->size;
	}
	c->job = j;
	return (0);
}

struct job *
job_new(struct rpc_call *c, Nkid__V1__Tensor *const *inputs, size_t ninputs,
    const Nkid__V1__ShmRegion *output_shm)
{
	struct job	*j;

	j = xcalloc(1, sizeof *j);
	if (job_init(j, c, inputs, ninputs, output_shm, 0) != 0) {
		free(j);
		return (NULL);
	}
	c->job_release = job_release_cb;
	return (j);
}

int
job_kernel_set(struct job *j, struct kcache_entry *e, int cache_hit)
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
	if (j->pool_outputs && j->out_bufs == NULL)
		job_outputs_pool(j, p);
	return (0);
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

int
job_core_check(struct rpc_call *c, int core)
{
	unsigned	ncores = sched_core_count(c->d->sched);

	if (core < -1 || (core >= 0 && (unsigned)core >= ncores)) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
		    "core %d does not exist: nkid has %u core%s (0 to %u, or -1 "
		    "for any)", core, ncores, ncores == 1 ? "" : "s",
		    ncores - 1);
		return (-1);
	}
	return (0);
}

int
job_submit(struct job *j, struct kcache_entry *e, int cache_hit,
    sched_work_fn work, sched_done_fn done, int core, int job_class,
    const char *verb)
{
	assert(work != NULL && done != NULL);
	if (job_kernel_set(j, e, cache_hit) != 0)
		return (-1);
	j->sj.work = work;
	j->sj.done = done;
	return (jobs_submit(j->c, &j->sj, verb, kcache_entry_name(e), core,
	    job_class, verb));
}

uint64_t
job_exec_begin(struct job *j, struct backend_exec *x)
{
	uint64_t	t0 = uv_hrtime();

	memset(x, 0, sizeof *x);
	x->inputs = j->inputs;
	x->ninputs = j->ninputs;
	x->outputs = j->outputs;
	x->noutputs = j->noutputs;
	x->cancel = &j->c->cancelled;
	return (t0);
}

void
job_exec_end(struct job *j, int error, uint64_t t0)
{
	j->error = error;
	j->outputs_filled = error == 0;
	j->exec_ns = uv_hrtime() - t0;
	job_outputs_place(j);
}

int
job_done_check(struct job *j, int outcome, const char *verb)
{
	if (outcome != SCHED_RAN) {
		jobs_fail_unrun(j->c, &j->sj, outcome, verb,
		    kcache_entry_name(j->e));
		return (-1);
	}
	if (j->error != 0) {
		job_fail(j, verb);
		return (-1);
	}
	return (0);
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

void
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

Nkid__V1__Tensor **
job_outputs_messages(struct job *j)
{
	return (tensor_outputs_messages(kcache_entry_program(j->e),
	    j->outputs, j->noutputs, j->outputs_in_shm ?
	    shm_set_name(j->shm, j->out_region) : NULL, j->out_offsets));
}

void
job_fail(struct job *j, const char *verb)
{
	struct rpc_call	*c = j->c;
	const char	*name = kcache_entry_name(j->e);

	switch (j->error) {
	case BACKEND_EARG:
	case BACKEND_EINVAL:
	case BACKEND_EPARSE:
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "cannot %s '%s': %s",
		    verb, name, j->diag);
		break;
	case BACKEND_ECANCELED:
		rpc_fail(c, GRPC_STATUS_CANCELLED, "%s of '%s' cancelled: the "
		    "client went away or its deadline passed", verb, name);
		break;
	case BACKEND_ELIMIT:
	case BACKEND_ENOMEM:
		rpc_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED,
		    "cannot %s '%s': %s", verb, name, j->diag);
		break;
	case BACKEND_EBUSY:
		rpc_fail(c, GRPC_STATUS_UNAVAILABLE, "cannot %s '%s': %s", verb,
		    name, j->diag);
		break;
	default:
		rpc_fail(c, GRPC_STATUS_INTERNAL, "cannot %s '%s': %s", verb,
		    name, j->diag);
		break;
	}
}

void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	/* Outputs in the client's region are not ours to free. */
	for (size_t i = 0; j->out_bufs != NULL && j->outputs != NULL &&
	    i < j->noutputs; i++)
		if (j->outputs[i].data == j->out_bufs[i])
			j->outputs[i].data = NULL;
	if (j->outputs != NULL && j->outputs_filled)
		sim_tensors_release(j->outputs, j->noutputs);
	for (size_t i = 0; j->out_pooled != NULL && i < j->noutputs; i++)
		if (j->out_pooled[i] != 0)
			outpool_put(j->out_bufs[i], j->out_pooled[i]);
	free(j->out_pooled);
	free(j->out_bufs);
	free(j->outputs);
	free(j->inputs);
	shm_set_free(j->shm);
	free(j->out_offsets);
	free(j->out_sizes);
	free(j->print);
	if (j->e != NULL)
		kcache_entry_unref(j->c->d->kcache, j->e);
	if (j->c->job == j)
		j->c->job = NULL;
	free(j);
}
