/* job.c: input checks, kernel binding, output allocation and error mapping shared by Run and Simulate. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/job.h"
#include "daemon/kcache.h"
#include "daemon/tensor.h"
#include "daemon/xmalloc.h"

static void
job_release_cb(void *arg)
{
	job_free(arg);
}

struct job *
job_new(struct rpc_call *c, Nkid__V1__Tensor *const *inputs, size_t ninputs)
{
	struct daemon	*d = c->d;
	struct job	*j;
	sim_tensor	*st;
	char		 err[512];
	int		 error;

	error = tensor_inputs_convert(inputs, ninputs, d->cfg.max_tensors,
	    d->cfg.max_tensor_bytes, &st, err, sizeof err);
	if (error != 0) {
		rpc_fail(c, error == TENSOR_ELIMIT ?
		    GRPC_STATUS_RESOURCE_EXHAUSTED :
		    GRPC_STATUS_INVALID_ARGUMENT, "%s", err);
		return (NULL);
	}
	j = xcalloc(1, sizeof *j);
	j->c = c;
	j->b = d->backend;
	j->inputs = st;
	j->ninputs = ninputs;
	c->job = j;
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
	return (0);
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
	if (j->outputs != NULL && j->outputs_filled)
		sim_tensors_release(j->outputs, j->noutputs);
	free(j->outputs);
	free(j->inputs);
	free(j->print);
	if (j->e != NULL)
		kcache_entry_unref(j->c->d->kcache, j->e);
	if (j->c->job == j)
		j->c->job = NULL;
	free(j);
}
