/* job_output.c: where a kernel job's outputs go and who frees them: mapped in the client's region, copied there after, pooled, or the executor's own (job_output.h states the rule). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/backend.h"
#include "daemon/job_output.h"
#include "daemon/log.h"
#include "daemon/outpool.h"
#include "daemon/shm.h"
#include "daemon/tensor.h"
#include "daemon/xmalloc.h"
#include "sim/sim.h"

void
job_output_init(struct job_output *o, struct shm_set *shm, int region,
    uint64_t offset, uint64_t size)
{
	memset(o, 0, sizeof *o);
	o->shm = shm;
	o->region = region;
	o->offset = offset;
	o->size = size;
}

/* Map each output's place in the region read-write; on any failure
 * nothing stays mapped for the executor (o->bufs NULL). */
static void
job_output_map(struct job_output *o)
{
	char	err[512];
	size_t	i;

	o->bufs = xcalloc(o->n + 1, sizeof *o->bufs);
	for (i = 0; i < o->n; i++) {
		if (o->sizes[i] == 0)
			continue;
		if (shm_set_map_rw(o->shm, o->region, o->offsets[i],
		    o->sizes[i], &o->bufs[i], err, sizeof err) != 0) {
			log_debug("%s; outputs are copied in", err);
			free(o->bufs);
			o->bufs = NULL;
			return;
		}
	}
}

/* Warm buffers from the pool (daemon/outpool.c) for the large outputs. */
static void
job_output_pool(struct job_output *o, const struct backend_program *p)
{
	const struct sim_sig	*sg;
	size_t			 i, len;
	int			 any = 0, k;

	o->bufs = xcalloc(o->n + 1, sizeof *o->bufs);
	o->pooled = xcalloc(o->n + 1, sizeof *o->pooled);
	for (i = 0; i < o->n; i++) {
		sg = p->output(p, i);
		len = sim_dtype_size(sg->dtype);
		for (k = 0; k < sg->rank; k++)
			len *= sg->shape[k];	/* tensor_outputs_size checked */
		if (len < OUTPOOL_MIN || (o->bufs[i] = outpool_get(len)) == NULL)
			continue;
		o->pooled[i] = len;
		any = 1;
	}
	if (!any) {
		free(o->bufs);
		free(o->pooled);
		o->bufs = NULL;
		o->pooled = NULL;
	}
}

void
job_output_plan(struct job_output *o, const struct backend_program *p,
    int in_place)
{
	uint64_t	end;

	o->n = p->noutputs;
	if (o->region >= 0) {
		o->offsets = xcalloc(o->n + 1, sizeof *o->offsets);
		o->sizes = xcalloc(o->n + 1, sizeof *o->sizes);
		/* end - offset cannot wrap: end >= offset. */
		if (tensor_outputs_layout(p, o->offset, o->offsets, o->sizes,
		    &end) != 0 || end - o->offset > o->size) {
			free(o->offsets);
			free(o->sizes);
			o->offsets = o->sizes = NULL;	/* inline */
		} else if (in_place)
			job_output_map(o);
	}
	if (in_place && o->bufs == NULL)
		job_output_pool(o, p);
}

/* Forget the outputs whose bytes are the region's or the pool's, so that
 * only the executor's own are ever freed. */
static void
job_output_disown(struct job_output *o, struct sim_tensor *outputs)
{
	size_t	i;

	for (i = 0; o->bufs != NULL && i < o->n; i++)
		if (outputs[i].data != NULL && outputs[i].data == o->bufs[i])
			outputs[i].data = NULL;
}

int
job_output_done(struct job_output *o, struct sim_tensor *outputs, int ok,
    char *err, size_t errlen)
{
	const char	*bad;
	size_t		 i;
	int		 in_place;

	o->filled = ok;
	if (o->shm == NULL)
		return (0);
	/* Written where they go: every output in its mapped place. */
	in_place = ok && o->bufs != NULL && o->pooled == NULL;
	for (i = 0; in_place && i < o->n; i++)
		if (o->sizes[i] != 0 && outputs[i].data != o->bufs[i])
			in_place = 0;
	if (!ok)
		return (0);
	if ((bad = shm_set_damaged(o->shm)) != NULL) {
		snprintf(err, errlen, "shared-memory region '%s' shrank while "
		    "nkid read it (truncated by the client during the job?)",
		    bad);
		return (-1);
	}
	if (in_place) {
		job_output_disown(o, outputs);
		o->filled = 0;
		o->in_shm = 1;
		return (0);
	}
	if (o->offsets == NULL)
		return (0);
	for (i = 0; i < o->n; i++)
		if (outputs[i].nbytes != o->sizes[i])
			return (0);
	for (i = 0; i < o->n; i++) {
		if (shm_set_write(o->shm, o->region, o->offsets[i],
		    outputs[i].data, outputs[i].nbytes, err, errlen) != 0) {
			log_warn("%s; the outputs go inline", err);
			err[0] = '\0';
			return (0);
		}
	}
	/* Only data goes: dtype, shape and size stay for the reply. */
	job_output_disown(o, outputs);
	sim_tensors_release(outputs, o->n);
	for (i = 0; i < o->n; i++)
		outputs[i].nbytes = o->sizes[i];
	o->filled = 0;
	o->in_shm = 1;
	return (0);
}

void
job_output_release(struct job_output *o, struct sim_tensor *outputs)
{
	size_t	i;

	if (outputs != NULL) {
		job_output_disown(o, outputs);
		if (o->filled)
			sim_tensors_release(outputs, o->n);
	}
	o->filled = 0;
	for (i = 0; o->pooled != NULL && i < o->n; i++)
		if (o->pooled[i] != 0)
			outpool_put(o->bufs[i], o->pooled[i]);
	free(o->pooled);
	free(o->bufs);
	free(o->offsets);
	free(o->sizes);
	o->pooled = NULL;
	o->bufs = NULL;
	o->offsets = o->sizes = NULL;
}
