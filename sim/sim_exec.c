/* sim_exec.c: the interpreter's driver: runs every program of a kernel's SPMD grid over host memory, binds the arguments and outputs, and runs a body op by op, dispatching each kind to its executor. */
/* Floor 3: calls the executors beside it (sim_exec_*.c, sim_isa_exec.c,
 * sim_lang_exec.c), sim_print.c and floor 0; runs what sim_plan.c and
 * sim_par.c built. */
#include <sys/mman.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/* malloc for tensors: large ones on 2 MiB boundaries with transparent
 * huge pages (as numpy does), which halves the page-fault cost of a
 * fresh output. Freed with free(). */
void *
sim_exec_tensor_alloc(size_t n)
{
	void	*p;

	if (n < (4u << 20))
		return (malloc(n ? n : 1));
	if (posix_memalign(&p, 2u << 20, n) != 0)
		return (NULL);
#ifdef MADV_HUGEPAGE
	madvise(p, n, MADV_HUGEPAGE);
#endif
	return (p);
}

static int
sim_exec_print(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*v = &op->src[0].v;
	const struct sim_tinfo	*ti = r->t[v->tensor].ti;
	struct sim_print_buf	 pb = { 0 };
	float			*vals;
	uint8_t			*act;
	int			 rc;

	if (r->opts == NULL || r->opts->print_cb == NULL)
		return (0);
	vals = malloc(v->nelem * sizeof(float));
	act = malloc(v->nelem);
	if (vals == NULL || act == NULL) {
		free(vals);
		free(act);
		return (SIM_ENOMEM);
	}
	rc = sim_exec_gather(r, op, &op->src[0], vals, act, 0.0f);
	if (rc == 0)
		rc = sim_print_format(&pb, op->text, ti->name, ti->dtype,
		    v->rank, v->shape, vals, act);
	if (rc == 0)
		r->opts->print_cb(r->opts->print_arg, pb.s, pb.len);
	sim_print_buf_release(&pb);
	free(vals);
	free(act);
	return (rc);
}


static int sim_exec_body_one(struct sim_run *r, const struct sim_op *op);

static uint64_t
sim_exec_now_ns(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

/* Run one op (not a loop) alone and report it to opts->op_cb. */
static int
sim_exec_timed(struct sim_run *r, const struct sim_op *op)
{
	struct sim_op_event	ev;
	uint64_t		t0 = sim_exec_now_ns();
	int			rc;

	rc = sim_exec_body_one(r, op);
	memset(&ev, 0, sizeof ev);
	ev.op = sim_op_name(op->kind);
	ev.engine = sim_op_engine(op->kind, op->engine, op->alu);
	ev.file = op->file;
	ev.line = op->line;
	ev.program = r->prog;
	ev.start_ns = t0 - r->t0_ns;
	ev.dur_ns = sim_exec_now_ns() - t0;
	ev.elements = op->has_dst ? op->dst.nelem : op->nsrc > 0 ?
	    op->src[0].v.nelem : 0;
	r->opts->op_cb(r->opts->op_arg, &ev);
	return (rc);
}

int
sim_exec_body(struct sim_run *r, const struct sim_op *ops, size_t n)
{
	const volatile int	*cancel = r->opts ? r->opts->cancel : NULL;
	int			 rc = 0;
	size_t			 i;

	for (i = 0; i < n && rc == 0; i++) {
		const struct sim_op	*op = &ops[i];

		if (cancel != NULL && *cancel) {
			sim_diag_set(r->diag, "run cancelled");
			return (SIM_ECANCELED);
		}
		if (op->fuse > 1 && (r->opts == NULL ||
		    r->opts->op_cb == NULL)) {
			rc = sim_exec_fused(r, op, op->fuse);
			i += op->fuse - 1;
			continue;
		}
		if (r->opts != NULL && r->opts->op_cb != NULL &&
		    op->kind != NKIR__V1__OP_KIND__OP_LOOP &&
		    op->kind != NKIR__V1__OP_KIND__OP_IF) {
			rc = sim_exec_timed(r, op);
			continue;
		}
		rc = sim_exec_body_one(r, op);
	}
	return (rc);
}

/* Set r's program ids for SPMD program prog (row-major, the last grid
 * axis fastest). */
void
sim_exec_program_ids(struct sim_run *r, uint64_t prog)
{
	const struct sim_program	*p = r->p;
	uint64_t			 q = prog;
	int				 a;

	for (a = p->grid_rank - 1; a >= 0; a--) {
		r->pid[a] = (int64_t)(q % p->grid[a]);
		q /= p->grid[a];
	}
	r->prog = prog;
	/* nki.isa's accumulator registers start at 0 in every program. */
	memset(r->acc, 0, sizeof(r->acc));
	/* its random stream and the index functions of its ids */
	sim_lang_exec_program(r);
}


/* Run one op (a loop with its body). */
static int
sim_exec_body_one(struct sim_run *r, const struct sim_op *op)
{
	int		rc = 0;
	uint64_t	t;

	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_LOOP:
		if (op->gemm_at && (r->opts == NULL ||
		    r->opts->op_cb == NULL) &&
		    (rc = sim_exec_gemm_loop(r, op)) != 1)
			return (rc);
		rc = 0;
		if (op->par != NULL &&
		    sim_exec_spread(r, op->trips, op->par_work))
			return (sim_exec_region(r, op, op->par, op->trips));
		for (t = 0; t < op->trips && rc == 0; t++) {
			r->lv[op->var] = op->start + (int64_t)t * op->step;
			if (op->nfns)
				sim_lang_exec_fns(r, op->fns, op->nfns);
			rc = sim_exec_body(r, op->body, op->nbody);
		}
		return (rc);
	case NKIR__V1__OP_KIND__OP_REDUCE:
		return (sim_exec_reduce(r, op));
	case NKIR__V1__OP_KIND__OP_MATMUL:
		return (sim_exec_matmul(r, op));
	case NKIR__V1__OP_KIND__OP_BN_STATS:
	case NKIR__V1__OP_KIND__OP_BN_AGGR:
		return (sim_exec_bn(r, op));
	case NKIR__V1__OP_KIND__OP_PRINT:
		return (sim_exec_print(r, op));
	default:
		if (op->isa != NULL)	/* nki.isa kinds 40-79 */
			return (sim_isa_exec(r, op));
		if (op->kind >= 80)	/* nki.language kinds 80-119 */
			return (sim_lang_exec_op(r, op));
		if (op->skip)	/* dead alloc, elided load/store */
			return (0);
		return (sim_exec_elementwise(r, op));
	}
}

static const char *
sim_exec_dtype_name(int dtype)
{
	const char	*name = sim_dtype_name(dtype);

	return (name != NULL ? name : "invalid");
}

static int
sim_exec_check_args(const struct sim_program *p,
    const struct sim_tensor *in, size_t nin, size_t nout,
    struct sim_diag *diag)
{
	const struct sim_sig	*s;
	char			 want[256], got[256];
	uint64_t		 nelem;
	size_t			 i;
	bool			 same;
	int			 d;

	if (nin != p->nparams) {
		sim_diag_set(diag, "kernel '%s' takes %zu arguments, got %zu",
		    p->name, p->nparams, nin);
		return (SIM_EARG);
	}
	if (nout != p->noutputs) {
		sim_diag_set(diag, "kernel '%s' returns %zu outputs, %zu "
		    "requested", p->name, p->noutputs, nout);
		return (SIM_EARG);
	}
	for (i = 0; i < nin; i++) {
		s = &p->params[i];
		same = in[i].dtype == s->dtype && in[i].rank == s->rank;
		nelem = 1;
		for (d = 0; same && d < s->rank; d++) {
			same = in[i].shape[d] == s->shape[d];
			nelem *= s->shape[d];
		}
		if (!same) {
			sim_print_shape(want, sizeof(want),
			    sim_exec_dtype_name(s->dtype), s->rank, s->shape);
			sim_print_shape(got, sizeof(got),
			    sim_exec_dtype_name(in[i].dtype),
			    in[i].rank < 0 ? 0 : in[i].rank, in[i].shape);
			sim_diag_set(diag, "argument '%s': expected %s, got %s",
			    s->name, want, got);
			return (SIM_EARG);
		}
		if (in[i].data == NULL ||
		    in[i].nbytes != nelem * sim_dtype_size(s->dtype)) {
			sim_diag_set(diag, "argument '%s': expected %llu bytes "
			    "of data, got %zu", s->name, (unsigned long long)
			    (nelem * sim_dtype_size(s->dtype)),
			    in[i].data ? in[i].nbytes : 0);
			return (SIM_EARG);
		}
	}
	return (0);
}

/* The caller's buffer for tensor t if t is an output it gave one for (the
 * first such output: a tensor returned twice is copied to the other). */
static void *
sim_exec_out_buf(const struct sim_run *r, size_t t)
{
	const struct sim_program	*p = r->p;
	size_t				 o;

	if (r->opts == NULL || r->opts->out_bufs == NULL)
		return (NULL);
	for (o = 0; o < p->noutputs; o++)
		if (p->output_tensor[o] == t && r->opts->out_bufs[o] != NULL)
			return (r->opts->out_bufs[o]);
	return (NULL);
}

static int
sim_exec_bind(struct sim_run *r, const struct sim_tensor *in)
{
	const struct sim_program	*p = r->p;
	size_t				 i;
	uint64_t			 e;

	for (i = 0; i < p->ntensors; i++) {
		const struct sim_tinfo	*ti = &p->tensors[i];
		struct sim_bind		*bd = &r->t[i];

		bd->ti = ti;
		/* NKI_PRECISE_FP=0: low-precision tiles hold fp32 values */
		bd->dtype = ti->chip && p->fp32_tiles &&
		    sim_dtype_is_lowp(ti->dtype) ? SIM_DT_FLOAT32 : ti->dtype;
		bd->chip = ti->chip;
		bd->f32 = ti->chip || ti->dtype == SIM_DT_FLOAT32 ||
		    ti->dtype == SIM_DT_TFLOAT32;
		bd->esize = ti->chip ? 4 : sim_dtype_size(ti->dtype);
		if (ti->kind == NKIR__V1__TENSOR_KIND__TENSOR_PARAM)
			continue;
		if (ti->chip || ti->view_of >= 0)
			continue;	/* below: may alias an HBM tensor */
		if (ti->data != NULL && !ti->written) {
			/* a constant no op writes: the program's copy */
			bd->base = (char *)(uintptr_t)ti->data;
			continue;
		}
		if ((bd->base = sim_exec_out_buf(r, i)) != NULL) {
			bd->owned = false;	/* the caller's */
		} else {
			bd->base = sim_exec_tensor_alloc(ti->nelem * bd->esize);
			if (bd->base == NULL)
				return (SIM_ENOMEM);
			bd->owned = true;
		}
		if ((ti->covered && !ti->read) || ti->nofill) {
			/* fully stored before the kernel ends, never read;
			 * or overwritten entirely before anything reads it */
		} else if (ti->data != NULL) {
			memcpy(bd->base, ti->data, ti->nelem * bd->esize);
		} else if (ti->fill == NKIR__V1__FILL__FILL_ZERO) {
			memset(bd->base, 0, ti->nelem * bd->esize);
		} else {
			sim_dtype_fill(ti->dtype, bd->base, ti->nelem,
			    sim_dtype_uninit(ti->dtype));
		}
	}
	for (i = 0; i < p->nparams; i++) {
		struct sim_bind	*bd = &r->t[p->param_tensor[i]];

		if (!bd->ti->written) {
			bd->base = in[i].data;
			continue;
		}
		/* the kernel writes its argument: work on a copy */
		bd->base = sim_exec_tensor_alloc(in[i].nbytes);
		if (bd->base == NULL)
			return (SIM_ENOMEM);
		memcpy(bd->base, in[i].data, in[i].nbytes);
		bd->owned = true;
	}
	/* dtype views of HBM tensors: the viewed tensor's bytes */
	for (i = 0; i < p->ntensors; i++)
		if (p->tensors[i].view_of >= 0)
			r->t[i].base = r->t[p->tensors[i].view_of].base;
	for (i = 0; i < p->ntensors; i++) {
		const struct sim_tinfo	*ti = &p->tensors[i];
		struct sim_bind		*bd = &r->t[i];
		float			 u = sim_dtype_uninit(ti->dtype), *f;

		if (!ti->chip)
			continue;
		bd->base = ti->alias >= 0 ? r->t[ti->alias].base :
		    r->mem + ti->moff;
		f = (float *)bd->base;
		if (!ti->nofill)
			for (e = 0; e < ti->nelem; e++)
				f[e] = u;
	}
	return (0);
}

static int
sim_exec_outputs(struct sim_run *r, struct sim_tensor *out)
{
	const struct sim_program	*p = r->p;
	void *const			*bufs;
	size_t				 i;

	bufs = r->opts != NULL ? r->opts->out_bufs : NULL;
	for (i = 0; i < p->noutputs; i++) {
		struct sim_bind		*bd = &r->t[p->output_tensor[i]];
		const struct sim_tinfo	*ti = bd->ti;
		size_t			 nbytes = ti->nelem * bd->esize;

		out[i].dtype = ti->dtype;
		out[i].rank = ti->rank;
		memset(out[i].shape, 0, sizeof(out[i].shape));
		memcpy(out[i].shape, ti->shape, sizeof(uint64_t) * ti->rank);
		out[i].nbytes = nbytes;
		if (bufs != NULL && bufs[i] != NULL) {
			/* the caller's buffer: written in place, or copied
			 * there (a returned argument) */
			if (bd->base != bufs[i])
				memcpy(bufs[i], bd->base, nbytes);
			out[i].data = bufs[i];
			continue;
		}
		if (bd->owned) {
			out[i].data = bd->base;
			bd->owned = false;
			continue;
		}
		out[i].data = sim_exec_tensor_alloc(nbytes);
		if (out[i].data == NULL) {
			sim_tensors_release(out, i);
			return (SIM_ENOMEM);
		}
		memcpy(out[i].data, bd->base, nbytes);
	}
	return (0);
}

int
sim_run(const struct sim_program *p, const struct sim_tensor *inputs,
    size_t ninputs, struct sim_tensor *outputs, size_t noutputs,
    const struct sim_run_opts *opts, struct sim_diag *diag)
{
	struct sim_run		 r = { .p = p, .opts = opts, .diag = diag };
	size_t			 i;
	uint64_t		 prog;
	int			 rc;

	if (diag != NULL)
		diag->msg[0] = '\0';
	r.threads = opts != NULL && opts->threads > 1 ? opts->threads : 1;
	if (r.threads > SIM_POOL_MAX)
		r.threads = SIM_POOL_MAX;
	if (opts != NULL && opts->op_cb != NULL)
		r.t0_ns = sim_exec_now_ns();
	if ((rc = sim_exec_check_args(p, inputs, ninputs, noutputs, diag)))
		return (rc);
	rc = SIM_ENOMEM;
	r.t = calloc(p->ntensors + 1, sizeof(*r.t));
	r.lv = calloc(p->nloopvars + p->nfns + 1, sizeof(int64_t));
	if (r.t == NULL || r.lv == NULL)
		goto out;
	if (r.threads > 1 &&
	    (r.slots = calloc(SIM_POOL_MAX, sizeof(*r.slots))) == NULL)
		goto out;
	pthread_mutex_lock(&((struct sim_program *)p)->run_mu);
	r.mem = p->run_cache;
	((struct sim_program *)p)->run_cache = NULL;
	pthread_mutex_unlock(&((struct sim_program *)p)->run_mu);
	if (r.mem == NULL &&
	    (r.mem = sim_exec_tensor_alloc(p->run_bytes)) == NULL)
		goto out;
	sim_exec_run_rows(&r, r.mem, true);
	if ((rc = sim_exec_bind(&r, inputs)))
		goto out;
	if (p->collective)
		rc = sim_lang_exec_grid(&r);
	else if (p->par != NULL &&
	    sim_exec_spread(&r, p->nprograms, p->par_work))
		rc = sim_exec_region(&r, NULL, p->par, p->nprograms);
	else
		for (prog = 0; prog < p->nprograms && rc == 0; prog++) {
			sim_exec_program_ids(&r, prog);
			rc = sim_exec_body(&r, p->body, p->nbody);
		}
	if (rc == 0)
		rc = sim_exec_outputs(&r, outputs);
out:
	if (rc == SIM_ENOMEM)
		sim_diag_set(diag, "out of memory");
	sim_exec_slots_release(&r);
	for (i = 0; r.t != NULL && i < p->ntensors; i++)
		if (r.t[i].owned)
			free(r.t[i].base);
	if (r.mem != NULL && p->run_bytes <= SIM_RUN_CACHE_MAX) {
		pthread_mutex_lock(&((struct sim_program *)p)->run_mu);
		if (p->run_cache == NULL) {
			((struct sim_program *)p)->run_cache = r.mem;
			r.mem = NULL;
		}
		pthread_mutex_unlock(&((struct sim_program *)p)->run_mu);
	}
	free(r.mem);
	free(r.t);
	free(r.lv);
	return (rc);
}

void
sim_tensors_release(struct sim_tensor *t, size_t n)
{
	size_t	i;

	for (i = 0; t != NULL && i < n; i++) {
		free(t[i].data);
		t[i].data = NULL;
		t[i].nbytes = 0;
	}
}
