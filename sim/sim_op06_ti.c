/* sim_op06_ti.c: NKI 0.6's Tensor Indirection (NkiTensor.indirect, NeuronCore-v4) planned and run: OP_TI_GATHER and OP_TI_SCATTER, columns of an on-chip view picked by an index tile. */

#include <stdint.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/*
 * aws-neuron-sdk@81ce03ae nki/api/nki/language/__init__.py,
 * NkiTensor.indirect: "TI allows reading or writing a column of data at
 * given free-dimension offsets across contiguous partition dimensions
 * ... Offsets are stored in a snake pattern across partition groups:
 * offset i comes from index[i % G, i // G] where G is the group size (16
 * for vector/scalar/gpsimd engines, 32 for tensor engine)."  The engine
 * is the instruction's that takes the view: Op.engine.
 */
#define SIM_TI_GROUP		16
#define SIM_TI_GROUP_TENSOR	32

static uint64_t
sim_op06_ti_group(int engine)
{
	return (engine == NKIR__V1__ENGINE__ENGINE_TENSOR ?
	    SIM_TI_GROUP_TENSOR : SIM_TI_GROUP);
}

/* ------------------------------------------------------------ plan */

static int
sim_op06_ti_nomask(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_view *v, const char *arg)
{
	if (v->nmask)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'%s': the %s of a tensor indirection cannot be masked",
		    sim_op_name(o->kind), arg));
	return (0);
}

/*
 * The operands of a gather (dst [P, N] <- base, src0) or a scatter (dst
 * base <- src0 [P, N]): base an on-chip view of P partitions, the index
 * src1 an integer SBUF tile [Pi, K] holding every offset i < N at
 * [i % G, i / G].
 */
static int
sim_op06_ti_plan(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op, bool scatter)
{
	const struct sim_view	*base, *cols, *idx;
	const struct sim_tinfo	*ti;
	uint64_t		 G, N, P, need;
	int			 rc;

	op->nsrc = 2;
	if ((rc = sim_plan_operand(b, o, op, 0, scatter ? "src" : "tensor",
	    false)) ||
	    (rc = sim_plan_space(b, o, &op->src[0].v, scatter ? "src" :
	    "tensor", SIM_PLAN_TILE)) ||
	    (rc = sim_plan_operand(b, o, op, 1, "index", false)) ||
	    (rc = sim_plan_space(b, o, &op->src[1].v, "index",
	    SIM_PLAN_SBUF)))
		return (rc);
	base = scatter ? &op->dst : &op->src[0].v;
	cols = scatter ? &op->src[0].v : &op->dst;
	idx = &op->src[1].v;
	if ((rc = sim_op06_ti_nomask(b, o, base, "tensor")) ||
	    (rc = sim_op06_ti_nomask(b, o, cols, "columns")) ||
	    (rc = sim_op06_ti_nomask(b, o, idx, "index")))
		return (rc);
	ti = &b->p->tensors[idx->tensor];
	if (!sim_dtype_is_int(ti->dtype) || ti->dtype == SIM_DT_BOOL)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'%s': the index `%s` must be an integer tile, got %s",
		    sim_op_name(o->kind), ti->name, sim_dtype_name(ti->dtype)));
	if (idx->rank != 2 || cols->rank != 2 || base->rank < 2)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'%s': the index and the columns must be [P, K] and "
		    "[P, N] and the tensor at least 2-dimensional, got rank "
		    "%d, %d and %d", sim_op_name(o->kind), idx->rank,
		    cols->rank, base->rank));
	P = base->shape[0];
	if (cols->shape[0] != P)
		return (sim_plan_shape_eq(b, o, "tensor", base->rank,
		    base->shape, scatter ? "src" : "dst", cols->rank,
		    cols->shape));
	G = sim_op06_ti_group(o->engine);
	N = cols->shape[1];
	if (N == 0 || (N - 1) / G >= idx->shape[1] ||
	    (N < G ? N : G) > idx->shape[0])
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'%s': %llu offsets at index[i %% %llu, i // %llu] need "
		    "an index of at least [%llu, %llu], got [%llu, %llu]",
		    sim_op_name(o->kind), (unsigned long long)N,
		    (unsigned long long)G, (unsigned long long)G,
		    (unsigned long long)(N < G ? N : G),
		    (unsigned long long)((N + G - 1) / G),
		    (unsigned long long)idx->shape[0],
		    (unsigned long long)idx->shape[1]));
	/* a scatter leaves the other columns as they were */
	op->opaque = scatter;
	/* the tensor, the columns, the index */
	need = base->nelem + cols->nelem + idx->nelem;
	if (need > (1ull << 28))
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "'%s' operands too large for the executor",
		    sim_op_name(o->kind)));
	if (b->p->scratch_max < need)
		b->p->scratch_max = need;
	return (0);
}

int
sim_op06_plan_ti_gather(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	return (sim_op06_ti_plan(b, o, op, false));
}

int
sim_op06_plan_ti_scatter(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	return (sim_op06_ti_plan(b, o, op, true));
}

/* ------------------------------------------------------------ run */

/* Offset i of op's index idx (row-major [Pi, K]): idx[i % G, i / G]. */
static uint64_t
sim_op06_ti_at(const struct sim_op *op, uint64_t i)
{
	uint64_t	G = sim_op06_ti_group(op->engine);

	return ((i % G) * op->src[1].v.shape[1] + i / G);
}

/* Every one of op's N offsets in idx lies in [0, F), else the run fails
 * saying which (NKI documents no out-of-bounds mode for it). */
static int
sim_op06_ti_check(struct sim_run *r, const struct sim_op *op,
    const float *idx, uint64_t N, uint64_t F)
{
	const struct sim_view	*base;
	uint64_t		 G = sim_op06_ti_group(op->engine), i;
	float			 v;

	for (i = 0; i < N; i++) {
		v = idx[sim_op06_ti_at(op, i)];
		if (v >= 0.0f && v < (float)F)
			continue;
		base = op->kind == NKIR__V1__OP_KIND__OP_TI_SCATTER ?
		    &op->dst : &op->src[0].v;
		return (sim_exec_fail(r, op, SIM_ERUNTIME,
		    "tensor indirection: offset %g at index[%llu, %llu] "
		    "(offset %llu) is out of bounds for the %llu elements "
		    "per partition of `%s`", (double)v,
		    (unsigned long long)(i % G), (unsigned long long)(i / G),
		    (unsigned long long)i, (unsigned long long)F,
		    r->t[base->tensor].ti->name));
	}
	return (0);
}

int
sim_op06_exec_ti(struct sim_run *r, const struct sim_op *op)
{
	bool			 scatter = op->kind ==
				    NKIR__V1__OP_KIND__OP_TI_SCATTER;
	const struct sim_view	*base = scatter ? &op->dst : &op->src[0].v;
	const struct sim_view	*cols = scatter ? &op->src[0].v : &op->dst;
	const uint64_t		 P = base->shape[0], F = base->nelem / P;
	const uint64_t		 N = cols->shape[1];
	float			*bbuf = r->scratch, *cbuf = bbuf + base->nelem;
	float			*ibuf = cbuf + cols->nelem;
	struct sim_operand	 d;
	uint64_t		 p, i, c;
	int			 rc;

	if ((rc = sim_exec_gather(r, op, &op->src[1], ibuf, NULL, -1.0f)) ||
	    (rc = sim_op06_ti_check(r, op, ibuf, N, F)))
		return (rc);
	if (!scatter) {
		if ((rc = sim_exec_gather(r, op, &op->src[0], bbuf, NULL,
		    0.0f)))
			return (rc);
		for (i = 0; i < N; i++) {
			c = (uint64_t)ibuf[sim_op06_ti_at(op, i)];
			for (p = 0; p < P; p++)
				cbuf[p * N + i] = bbuf[p * F + c];
		}
		return (sim_exec_scatter(r, op, &op->dst, cbuf));
	}
	/* read-modify-write: the columns not named keep their values; the
	 * offsets in order, so of two equal ones the later wins */
	memset(&d, 0, sizeof d);
	d.v = op->dst;
	if ((rc = sim_exec_gather(r, op, &d, bbuf, NULL, 0.0f)) ||
	    (rc = sim_exec_gather(r, op, &op->src[0], cbuf, NULL, 0.0f)))
		return (rc);
	for (i = 0; i < N; i++) {
		c = (uint64_t)ibuf[sim_op06_ti_at(op, i)];
		for (p = 0; p < P; p++)
			bbuf[p * F + c] = cbuf[p * N + i];
	}
	return (sim_exec_scatter(r, op, &op->dst, bbuf));
}
