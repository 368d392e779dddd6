/* rpc_simulate.c: Simulate, execute on the cpu simulator with device_print output captured. */
#include "nkid.pb-c.h"

#include "daemon/backend.h"
#include "daemon/dispatch.h"
#include "daemon/job.h"
#include "daemon/kcache.h"
#include "daemon/tensor.h"
#include "daemon/textbuf.h"

struct rpc_simulate {
	struct job	j;
	struct textbuf	print;		/* device_print text: 16 MiB at most */
};

static int
rpc_simulate_exec(struct job *j, unsigned core, struct backend_exec *x)
{
	struct rpc_simulate	*s = (struct rpc_simulate *)j;

	textbuf_init(&s->print, 16 << 20, "\n[device_print output truncated]\n");
	x->print_cb = textbuf_append_cb;
	x->print_arg = &s->print;
	return (backend_simulate(j->b, kcache_entry_program(j->e), x, j->diag));
}

static void
rpc_simulate_reply(struct job *j)
{
	struct rpc_simulate	*s = (struct rpc_simulate *)j;
	Nkid__V1__SimulateReply	 r = NKID__V1__SIMULATE_REPLY__INIT;

	r.outputs = job_outputs_messages(j);
	r.n_outputs = j->noutputs;
	r.neff_key = (char *)kcache_entry_key(j->e);
	r.device_print = (char *)textbuf_text(&s->print);
	r.exec_us = (double)j->exec_ns / 1e3;
	rpc_reply(j->c, &r.base);
	tensor_messages_free(r.outputs, j->noutputs);
}

static void
rpc_simulate_release(struct job *j)
{
	textbuf_release(&((struct rpc_simulate *)j)->print);
}

static const struct job_kind rpc_simulate_kind = {
	.verb = "simulate",
	.where = JOB_ON_POOL,
	.size = sizeof(struct rpc_simulate),
	.exec = rpc_simulate_exec,
	.reply = rpc_simulate_reply,
	.release = rpc_simulate_release,
};

static void
rpc_simulate(struct rpc_call *c)
{
	const Nkid__V1__SimulateRequest	*req = (const void *)c->req;
	struct job_args			 a = {
		.ref = req->ref,
		.inputs = req->inputs,
		.ninputs = req->n_inputs,
		.output_shm = req->output_shm,
	};

	job_start(job_new(c, &rpc_simulate_kind), &a);
}

const struct rpc_method rpc_simulate_method = {
	DISPATCH_METHOD_NAME("Simulate"),
	.kind = RPC_UNARY,
	.cap = CONFIG_CAP_TENSOR,
	.handler = rpc_simulate,
};
