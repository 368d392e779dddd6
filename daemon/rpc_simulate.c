/* rpc_simulate.c: Simulate, execute on the cpu simulator with device_print output captured. */
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/job.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/tensor.h"
#include "daemon/xmalloc.h"

/* device_print text, appended on the thread-pool thread. */
static void
rpc_simulate_print_cb(void *arg, const char *text, size_t len)
{
	struct job	*j = arg;
	size_t		 want;

	if (j->print_truncated)
		return;
	if (len > JOB_PRINT_MAX - j->print_len) {
		j->print_truncated = 1;
		return;
	}
	want = j->print_len + len + 1;
	if (want > j->print_cap) {
		j->print_cap = want < 4096 ? 4096 : want * 2;
		if (j->print_cap > JOB_PRINT_MAX + 1)
			j->print_cap = JOB_PRINT_MAX + 1;
		j->print = xreallocarray(j->print, 1, j->print_cap);
	}
	memcpy(j->print + j->print_len, text, len);
	j->print_len += len;
	j->print[j->print_len] = '\0';
}

static void
rpc_simulate_work_cb(uv_work_t *w)
{
	struct job		*j = w->data;
	struct backend_exec	 x = { 0 };
	uint64_t		 t0 = uv_hrtime();

	x.inputs = j->inputs;
	x.ninputs = j->ninputs;
	x.outputs = j->outputs;
	x.noutputs = j->noutputs;
	x.cancel = &j->c->cancelled;
	x.print_cb = rpc_simulate_print_cb;
	x.print_arg = j;
	j->error = j->b->ops->simulate(j->b->state, kcache_entry_program(j->e),
	    &x, j->diag);
	j->outputs_filled = j->error == 0;
	j->exec_ns = uv_hrtime() - t0;
	job_outputs_place(j);
}

static void
rpc_simulate_after_cb(uv_work_t *w, int status)
{
	struct job			*j = w->data;
	struct rpc_call			*c = j->c;
	Nkid__V1__SimulateReply		 r = NKID__V1__SIMULATE_REPLY__INIT;
	Nkid__V1__Tensor		**out;
	static const char		 trunc[] =
	    "\n[device_print output truncated]\n";

	if (status != 0 && j->error == 0)
		j->error = BACKEND_ECANCELED;
	if (j->error != 0) {
		job_fail(j, "simulate");
		job_free(j);
		return;
	}
	if (j->print_truncated) {
		j->print = xreallocarray(j->print, 1, j->print_len +
		    sizeof trunc);
		memcpy(j->print + j->print_len, trunc, sizeof trunc);
	}
	out = job_outputs_messages(j);
	r.n_outputs = j->noutputs;
	r.outputs = out;
	r.neff_key = (char *)kcache_entry_key(j->e);
	r.device_print = j->print != NULL ? j->print : (char *)"";
	r.exec_us = (double)j->exec_ns / 1e3;
	rpc_reply(c, &r.base);
	tensor_messages_free(out, j->noutputs);
	job_free(j);
}

static void
rpc_simulate_kernel_cb(struct rpc_call *c, struct kcache_entry *e,
    int cache_hit, double compile_ms)
{
	struct job	*j = c->job;
	int		 error;

	if (job_kernel_set(j, e, cache_hit) != 0) {
		job_free(j);
		return;
	}
	j->work.data = j;
	if ((error = uv_queue_work(c->d->loop, &j->work, rpc_simulate_work_cb,
	    rpc_simulate_after_cb)) != 0) {
		rpc_fail(c, GRPC_STATUS_INTERNAL, "cannot queue simulation: %s",
		    uv_strerror(error));
		job_free(j);
	}
}

static void
rpc_simulate(struct rpc_call *c)
{
	const Nkid__V1__SimulateRequest	*req = (const void *)c->req;

	if (job_new(c, req->inputs, req->n_inputs, req->output_shm) == NULL)
		return;
	kernel_resolve(c, req->ref, rpc_simulate_kernel_cb);
}

const struct rpc_method rpc_simulate_method = {
	.name = "Simulate",
	.path = DISPATCH_SERVICE "Simulate",
	.kind = RPC_UNARY,
	.request = &nkid__v1__simulate_request__descriptor,
	.cap = CONFIG_CAP_TENSOR,
	.flags = RPC_F_ASYNC,
	.handler = rpc_simulate,
};
