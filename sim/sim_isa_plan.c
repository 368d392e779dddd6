/* sim_isa_plan.c: validate the nki.isa instructions of NKIR kinds 40-79 against NKI's documented limits, in its words, and plan them for sim_isa_exec.c. */
/* Floor 2, beside sim_plan.c: its table names these planners; they use its helpers and floor 0. */
#include <stdio.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

#define SIM_ISA_MAX8_MIN	8	/* max8, nc_find_index8: elements */
#define SIM_ISA_MAX8_MAX	16384	/* per partition */
#define SIM_ISA_GATHER_MAX	4096	/* local_gather: indices per core */
#define SIM_ISA_QUADRANT	32	/* nc_stream_shuffle */
#define SIM_ISA_SHUFFLE_KEEP	255
#define SIM_ISA_RANGE_MAX	(1ll << 24)	/* range_select: exact fp32 */

/* ------------------------------------------------------------ helpers */

static const char *
sim_isa_name(const Nkir__V1__Op *o)
{
	return (sim_op_name(o->kind));
}

/* The NeuronCore generation of the kernel's target: 2 (trn1, inf2, the
 * default) or 3 (trn2 and later). */
static int
sim_isa_gen(const struct sim_build *b)
{
	return (sim_plan_nc_version(b) >= 3 ? 3 : 2);
}

static const struct sim_tinfo *
sim_isa_tensor(const struct sim_build *b, const struct sim_view *v)
{
	return (&b->p->tensors[v->tensor]);
}

static int
sim_isa_dtype(const struct sim_build *b, const struct sim_view *v)
{
	return (b->p->tensors[v->tensor].dtype);
}

static bool
sim_isa_is_float(int dt)
{
	return (!sim_dtype_is_int(dt));
}

/* Elements per partition of a view (every axis but the first). */
static uint64_t
sim_isa_free(const struct sim_view *v)
{
	return (v->shape[0] ? v->nelem / v->shape[0] : 0);
}

/* The op's nki.isa fields, copied from o into the program's arena. */
static int
sim_isa_new(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	struct sim_isa	*x;
	size_t		 i;
	int		 a;

	if ((x = sim_plan_alloc(b, sizeof(*x))) == NULL)
		return (SIM_ENOMEM);
	x->alu1 = o->alu1;
	x->reduce_alu = o->reduce_alu;
	x->reduce_cmd = o->reduce_cmd;
	x->reverse0 = o->reverse0;
	x->reverse1 = o->reverse1;
	x->oob_skip = o->oob_skip;
	x->index_out = o->index_out;
	x->dge_mode = o->dge_mode;
	x->range_start = o->range_start;
	x->elem_per_index = o->elem_per_index;
	x->valid_indices = o->valid_indices;
	memset(x->shuffle, SIM_ISA_SHUFFLE_KEEP, sizeof(x->shuffle));
	for (i = 0; i < o->n_shuffle && i < SIM_ISA_QUADRANT; i++)
		x->shuffle[i] = (uint8_t)(o->shuffle[i] > 255 ? 255 :
		    o->shuffle[i]);
	for (a = 0; a < SIM_MAX_RANK; a++)
		x->perm[a] = a;
	op->isa = x;
	if (x->reduce_cmd < NKIR__V1__REDUCE_CMD__RCMD_IDLE ||
	    x->reduce_cmd > NKIR__V1__REDUCE_CMD__RCMD_RESET_REDUCE)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "invalid reduce_cmd %d in '%s'", x->reduce_cmd,
		    sim_isa_name(o)));
	if (x->dge_mode < NKIR__V1__DGE_MODE__DGE_UNKNOWN ||
	    x->dge_mode > NKIR__V1__DGE_MODE__DGE_HWDGE)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "invalid dge_mode %d in '%s'", x->dge_mode,
		    sim_isa_name(o)));
	if (o->n_dyn > 0 && o->kind != NKIR__V1__OP_KIND__OP_COPY_DYNAMIC &&
	    o->kind != NKIR__V1__OP_KIND__OP_DMA_COPY)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "'%s' takes no run-time index", sim_isa_name(o)));
	return (0);
}

/* A masked op's views are bounds-checked at run time only where they have
 * masks of their own; check the others now, over their full ranges (they
 * are read or written whatever the masks say). */
static int
sim_isa_bounds_unmasked(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_op *op)
{
	int	i, rc;

	if (!op->masked || b->dead)
		return (0);
	if (op->has_dst && op->dst.nmask == 0 &&
	    (rc = sim_plan_bounds(b, o, &op->dst)))
		return (rc);
	for (i = 0; i < op->nsrc; i++)
		if (!op->src[i].scalar && op->src[i].v.nmask == 0 &&
		    (rc = sim_plan_bounds(b, o, &op->src[i].v)))
			return (rc);
	return (0);
}

/* The op reads its dst's tensor through another view: it computes all of
 * dst before writing any of it (op->stage, scratch of dst's elements and
 * active flags). */
static int
sim_isa_stage(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	int	i;

	for (i = 0; i < op->nsrc; i++)
		if (!op->src[i].scalar && op->src[i].v.tensor ==
		    op->dst.tensor && !sim_opt_view_same(&op->src[i].v,
		    &op->dst))
			op->stage = true;
	if (!op->stage)
		return (0);
	if (op->dst.nelem > (1ull << 27))
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "in-place '%s' of %llu elements exceeds the executor "
		    "limit", sim_isa_name(o),
		    (unsigned long long)op->dst.nelem));
	if (b->p->scratch_max < op->dst.nelem * 2)
		b->p->scratch_max = op->dst.nelem * 2;
	return (0);
}

/* Scratch of n floats for one execution of the op. */
static int
sim_isa_scratch(struct sim_build *b, const Nkir__V1__Op *o, uint64_t n)
{
	if (n > (1ull << 30))
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "'%s' needs %llu elements of scratch (executor limit "
		    "%llu)", sim_isa_name(o), (unsigned long long)n,
		    1ull << 30));
	if (b->p->scratch_max < n)
		b->p->scratch_max = n;
	return (0);
}

/* Both tiles of an instruction that cannot read two PSUM tiles. */
static int
sim_isa_not_both_psum(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_operand *x, const char *xn, const struct sim_operand *y,
    const char *yn)
{
	if (x->scalar || y->scalar ||
	    sim_isa_tensor(b, &x->v)->space != NKIR__V1__SPACE__SPACE_PSUM ||
	    sim_isa_tensor(b, &y->v)->space != NKIR__V1__SPACE__SPACE_PSUM)
		return (0);
	return (sim_plan_err(b, o->loc, SIM_EINVAL,
	    "'%s' and '%s' of '%s' cannot both be in PSUM", xn, yn,
	    sim_isa_name(o)));
}

static bool
sim_isa_alu_arith(int alu)
{
	switch (alu) {
	case NKIR__V1__ALU_OP__ALU_ADD:
	case NKIR__V1__ALU_OP__ALU_SUBTRACT:
	case NKIR__V1__ALU_OP__ALU_MULTIPLY:
	case NKIR__V1__ALU_OP__ALU_DIVIDE:
	case NKIR__V1__ALU_OP__ALU_MAXIMUM:
	case NKIR__V1__ALU_OP__ALU_MINIMUM:
	case NKIR__V1__ALU_OP__ALU_POWER:
	case NKIR__V1__ALU_OP__ALU_MOD:
	case NKIR__V1__ALU_OP__ALU_BYPASS:
	case NKIR__V1__ALU_OP__ALU_GREATER:
	case NKIR__V1__ALU_OP__ALU_GREATER_EQUAL:
	case NKIR__V1__ALU_OP__ALU_LESS:
	case NKIR__V1__ALU_OP__ALU_LESS_EQUAL:
	case NKIR__V1__ALU_OP__ALU_EQUAL:
	case NKIR__V1__ALU_OP__ALU_NOT_EQUAL:
	case NKIR__V1__ALU_OP__ALU_LOGICAL_NOT:
	case NKIR__V1__ALU_OP__ALU_RSQRT:
	case NKIR__V1__ALU_OP__ALU_RECIPROCAL:
	case NKIR__V1__ALU_OP__ALU_ABS:
		return (true);
	default:
		return (false);
	}
}

static bool
sim_isa_alu_any(int alu)
{
	return (alu > NKIR__V1__ALU_OP__ALU_INVALID &&
	    alu <= NKIR__V1__ALU_OP__ALU_ABS &&
	    alu != NKIR__V1__ALU_OP__ALU_MEAN &&
	    alu != NKIR__V1__ALU_OP__ALU_VAR);
}

static bool
sim_isa_alu_compare(int alu)
{
	switch (alu) {
	case NKIR__V1__ALU_OP__ALU_EQUAL:
	case NKIR__V1__ALU_OP__ALU_LESS:
	case NKIR__V1__ALU_OP__ALU_LESS_EQUAL:
	case NKIR__V1__ALU_OP__ALU_GREATER:
	case NKIR__V1__ALU_OP__ALU_GREATER_EQUAL:
		return (true);
	default:
		return (false);
	}
}

static int
sim_isa_check_alu(struct sim_build *b, const Nkir__V1__Op *o, int alu,
    bool ok, const char *arg)
{
	if (ok)
		return (0);
	return (sim_plan_err(b, o->loc, SIM_EINVAL,
	    "unsupported operator '%s' for '%s' of '%s'",
	    sim_op_alu_name(alu), arg, sim_isa_name(o)));
}

/* The accumulator operator of an instruction that uses its engine's
 * registers: one of allowed[] (NKIR AluOp, 0-terminated). */
static int
sim_isa_check_reduce(struct sim_build *b, const Nkir__V1__Op *o,
    const int *allowed)
{
	int	i;

	if (o->reduce_cmd == NKIR__V1__REDUCE_CMD__RCMD_IDLE)
		return (0);
	for (i = 0; allowed[i] != 0; i++)
		if ((int)o->reduce_alu == allowed[i])
			return (0);
	return (sim_plan_err(b, o->loc, SIM_EINVAL,
	    "unsupported reduce_op '%s' in '%s'",
	    sim_op_alu_name(o->reduce_alu), sim_isa_name(o)));
}

/* The registers are one per partition (128). */
static int
sim_isa_check_acc_parts(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_op *op)
{
	if (op->rank < 2 && o->reduce_cmd != NKIR__V1__REDUCE_CMD__RCMD_IDLE)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "'%s' with a reduction needs a [partition, free] "
		    "iteration space", sim_isa_name(o)));
	return (0);
}

/* dtype of operand v is one of the 0-terminated list ok[]. */
static int
sim_isa_check_dtype(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_view *v, const char *arg, const int *ok,
    const char *what)
{
	int	dt = sim_isa_dtype(b, v), i;

	for (i = 0; ok[i] != 0; i++)
		if (dt == ok[i])
			return (0);
	return (sim_plan_err(b, o->loc, SIM_EINVAL,
	    "'%s' of '%s' must be %s, got %s", arg, sim_isa_name(o), what,
	    sim_dtype_name(dt)));
}

static const int sim_isa_uint_pred[] = { SIM_DT_UINT8, SIM_DT_UINT16,
	SIM_DT_UINT32, SIM_DT_BOOL, 0 };
static const int sim_isa_int_pred[] = { SIM_DT_INT8, SIM_DT_UINT8,
	SIM_DT_INT16, SIM_DT_UINT16, SIM_DT_BOOL, 0 };
static const int sim_isa_f32[] = { SIM_DT_FLOAT32, 0 };
static const int sim_isa_f32_i32[] = { SIM_DT_FLOAT32, SIM_DT_INT32, 0 };
static const int sim_isa_u16_u32[] = { SIM_DT_UINT16, SIM_DT_UINT32, 0 };
static const int sim_isa_u16[] = { SIM_DT_UINT16, 0 };
static const int sim_isa_max_only[] = { NKIR__V1__ALU_OP__ALU_MAXIMUM, 0 };

/* ------------------------------------------------------------ planners */

int
sim_isa_plan_act_acc(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const int	 reduce[] = { NKIR__V1__ALU_OP__ALU_ADD,
	    NKIR__V1__ALU_OP__ALU_MAXIMUM, NKIR__V1__ALU_OP__ALU_MINIMUM,
	    NKIR__V1__ALU_OP__ALU_MULTIPLY, 0 };
	static const int	 reduce_v2[] = { NKIR__V1__ALU_OP__ALU_ADD, 0 };
	int			 rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_plan_activation(b, o, op)))
		return (rc);
	if (op->src[0].scalar)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "operand 'data' of 'activation' must be a tile, not a "
		    "scalar"));
	/* isa (activation_reduce): "On NeuronCore-v2, the reduce_op can
	 * only be an addition" */
	if ((rc = sim_isa_check_reduce(b, o, sim_isa_gen(b) == 2 ?
	    reduce_v2 : reduce)))
		return (rc);
	if ((rc = sim_isa_check_acc_parts(b, o, op)))
		return (rc);
	if ((rc = sim_isa_stage(b, o, op)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_acc_read(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	int	rc;

	if ((rc = sim_isa_new(b, o, op)))
		return (rc);
	if (o->n_src != 0)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "'reduce_res' takes no operands"));
	if (o->engine != NKIR__V1__ENGINE__ENGINE_VECTOR &&
	    o->engine != NKIR__V1__ENGINE__ENGINE_SCALAR)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "'reduce_res' reads the registers of the vector or the "
		    "scalar engine, not engine %d", (int)o->engine));
	if (sim_isa_free(&op->dst) != 1)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'reduce_res' must have one element per partition, got "
		    "%llu", (unsigned long long)sim_isa_free(&op->dst)));
	return (0);
}

int
sim_isa_plan_partition_reduce(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	struct sim_view	*s;
	uint64_t	 want[SIM_MAX_RANK];
	int		 rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_plan_src_tile(b, o, op, "data", &s)) ||
	    (rc = sim_plan_space(b, o, s, "data", SIM_PLAN_SBUF)))
		return (rc);
	switch (o->alu) {
	case NKIR__V1__ALU_OP__ALU_ADD:
	case NKIR__V1__ALU_OP__ALU_MAXIMUM:
	case NKIR__V1__ALU_OP__ALU_BITWISE_OR:
	case NKIR__V1__ALU_OP__ALU_BITWISE_AND:
		break;
	default:
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "unsupported operator '%s' in 'tensor_partition_reduce' "
		    "(add, max, bitwise_or, bitwise_and)",
		    sim_op_alu_name(o->alu)));
	}
	memcpy(want, s->shape, sizeof(want));
	want[0] = 1;
	if ((rc = sim_plan_shape_eq(b, o, "dst", op->dst.rank, op->dst.shape,
	    "data", s->rank, want)))
		return (rc);
	if ((rc = sim_isa_scratch(b, o, s->nelem + (s->nelem + 3) / 4 +
	    op->dst.nelem)))
		return (rc);
	if (op->dst.nmask)
		op->masked = true;
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_scan(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char	*const args[] = { "dst", "data0", "data1",
	    "initial" };
	int			 rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_plan_elementwise(b, o, op, 3, args)))
		return (rc);
	if (op->src[0].scalar || op->src[1].scalar)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'data0' and 'data1' of 'tensor_tensor_scan' must be "
		    "tiles"));
	if ((rc = sim_isa_not_both_psum(b, o, &op->src[0], "data0",
	    &op->src[1], "data1")) ||
	    (rc = sim_isa_check_alu(b, o, o->alu, sim_isa_alu_arith(o->alu),
	    "op0")) ||
	    (rc = sim_isa_check_alu(b, o, o->alu1,
	    sim_isa_alu_arith(o->alu1), "op1")))
		return (rc);
	if (op->rank < 2)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "'tensor_tensor_scan' needs a [partition, free] iteration "
		    "space"));
	if ((rc = sim_isa_stage(b, o, op)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_stt(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char	*const args[] = { "dst", "data", "operand0",
	    "operand1" };
	int			 rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_plan_elementwise(b, o, op, 3, args)))
		return (rc);
	if (op->src[0].scalar || op->src[2].scalar)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'data' and 'operand1' of 'scalar_tensor_tensor' must be "
		    "tiles"));
	if ((rc = sim_isa_not_both_psum(b, o, &op->src[0], "data",
	    &op->src[2], "operand1")) ||
	    (rc = sim_isa_check_alu(b, o, o->alu, sim_isa_alu_any(o->alu),
	    "op0")) ||
	    (rc = sim_isa_check_alu(b, o, o->alu1, sim_isa_alu_any(o->alu1),
	    "op1")))
		return (rc);
	if ((rc = sim_isa_stage(b, o, op)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_ts_acc(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char	*const args[] = { "dst", "data", "operand0" };
	static const int	 reduce[] = { NKIR__V1__ALU_OP__ALU_ADD,
	    NKIR__V1__ALU_OP__ALU_SUBTRACT, NKIR__V1__ALU_OP__ALU_MULTIPLY,
	    NKIR__V1__ALU_OP__ALU_MAXIMUM, NKIR__V1__ALU_OP__ALU_MINIMUM, 0 };
	int			 rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_plan_elementwise(b, o, op, 2, args)))
		return (rc);
	if (op->src[0].scalar)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "operand 'data' of 'tensor_scalar_reduce' must be a "
		    "tile, not a scalar"));
	/* isa (tensor_scalar_reduce): "op0 can only be arithmetic
	 * operation"; reduce_op add, subtract, multiply, max or min */
	if ((rc = sim_isa_check_alu(b, o, o->alu, sim_isa_alu_arith(o->alu),
	    "op0")) || (rc = sim_isa_check_reduce(b, o, reduce)) ||
	    (rc = sim_isa_check_acc_parts(b, o, op)))
		return (rc);
	if ((rc = sim_isa_stage(b, o, op)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

/*
 * The run-time indices of a copy (Op.dyn): each names an operand (dst or
 * src0), one of its tensor's dimensions and an index source among
 * src[1..]: an SBUF access of the op's iteration space. A dimension is
 * indexed at run time at most once; every index source is used.
 */
static int
sim_isa_plan_dyn(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op, bool scalar_index)
{
	struct sim_isa		*x = op->isa;
	uint32_t		 used = 0, dims[2] = { 0, 0 };
	int			 i, a, d, last = op->rank - 1;

	if (o->n_dyn > 2)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "'%s' has %zu run-time indices (at most 2)",
		    sim_isa_name(o), o->n_dyn));
	x->ndyn = (int)o->n_dyn;
	x->dyn_row = true;
	for (i = 0; i < x->ndyn; i++) {
		const Nkir__V1__DynIndex	*dn = o->dyn[i];
		struct sim_dyn			*dy = &x->dyn[i];
		const struct sim_view		*tv, *iv;
		const struct sim_tinfo		*ti;

		if (dn == NULL || dn->operand > 1 || dn->src < 1 ||
		    dn->src >= (uint32_t)op->nsrc)
			return (sim_plan_err(b, o->loc, SIM_EPARSE,
			    "malformed run-time index %d of '%s'", i,
			    sim_isa_name(o)));
		dy->operand = (int)dn->operand;
		dy->src = (int)dn->src;
		dy->coef = dn->coef;
		if (dy->coef > SIM_COEF_MAX || dy->coef < -SIM_COEF_MAX)
			return (sim_plan_err(b, o->loc, SIM_ELIMIT,
			    "run-time index coefficient %lld is out of the "
			    "executor's range", (long long)dy->coef));
		tv = dy->operand == 0 ? &op->dst : &op->src[0].v;
		ti = sim_isa_tensor(b, tv);
		if (dn->dim >= (uint32_t)ti->rank ||
		    (dims[dy->operand] & (1u << dn->dim)))
			return (sim_plan_err(b, o->loc, SIM_EPARSE,
			    "run-time index %d of '%s' names dimension %u of "
			    "tensor `%s` of rank %d", i, sim_isa_name(o),
			    dn->dim, ti->name, ti->rank));
		dims[dy->operand] |= 1u << dn->dim;
		dy->dim = (int)dn->dim;
		dy->stride = 1;
		for (d = ti->rank - 1; d > dy->dim; d--)
			dy->stride *= (int64_t)ti->shape[d];
		used |= 1u << dy->src;
		if (op->src[dy->src].scalar)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "the index of '%s' must be a tile",
			    sim_isa_name(o)));
		iv = &op->src[dy->src].v;
		if (sim_isa_tensor(b, iv)->space !=
		    NKIR__V1__SPACE__SPACE_SBUF)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "the index tile of '%s' must be in SBUF, got a "
			    "tile in 'psum'", sim_isa_name(o)));
		if (scalar_index)
			for (a = 0; a < iv->rank; a++)
				if (iv->off.ax[a] != 0 && iv->shape[a] > 1)
					return (sim_plan_err(b, o->loc,
					    SIM_EINVAL, "the dynamic offset "
					    "of '%s' must be a scalar value "
					    "residing in SBUF",
					    sim_isa_name(o)));
		if (last >= 0 && (iv->off.ax[last] != 0 ||
		    tv->dim[dy->dim].ax[last] != 0) && op->shape[last] > 1)
			x->dyn_row = false;
	}
	for (i = 1; i < op->nsrc; i++)
		if (!(used & (1u << i)))
			return (sim_plan_err(b, o->loc, SIM_EPARSE,
			    "operand %d of '%s' is not a run-time index", i,
			    sim_isa_name(o)));
	if (dims[0] != 0)
		op->opaque = true;
	return (0);
}

/* The sources of a copy: src0 (of dst's shape) and its index tiles. */
static int
sim_isa_plan_copy_srcs(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op, int where)
{
	int	i, rc;

	if (o->n_src < 1)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "operand 'src' of '%s' is missing", sim_isa_name(o)));
	op->nsrc = (int)o->n_src;
	for (i = 0; i < op->nsrc; i++) {
		if ((rc = sim_plan_src_access(b, o, op, i,
		    i == 0 ? "src" : "index")))
			return (rc);
		if ((rc = sim_plan_shape_eq(b, o, "dst", op->dst.rank,
		    op->dst.shape, i == 0 ? "src" : "index",
		    op->src[i].v.rank, op->src[i].v.shape)))
			return (rc);
	}
	return (sim_plan_space(b, o, &op->src[0].v, "src", where));
}

int
sim_isa_plan_copy_dynamic(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	int	rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_isa_plan_copy_srcs(b, o, op, SIM_PLAN_TILE)) ||
	    (rc = sim_isa_plan_dyn(b, o, op, true)))
		return (rc);
	if (op->isa->ndyn != 1)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'tensor_copy_dynamic' needs exactly one dynamically "
		    "indexed operand, got %d", op->isa->ndyn));
	if (op->isa->oob_skip)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'tensor_copy_dynamic' has no out-of-bounds mode"));
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_dma_copy(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	int	rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_isa_plan_copy_srcs(b, o, op, SIM_PLAN_ANY)) ||
	    (rc = sim_isa_plan_dyn(b, o, op, false)))
		return (rc);
	if (o->alu != NKIR__V1__ALU_OP__ALU_INVALID &&
	    o->alu != NKIR__V1__ALU_OP__ALU_ADD)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "unsupported dst_rmw_op %d in 'dma_copy': only np.add is "
		    "supported", (int)o->alu));
	if (o->alu == NKIR__V1__ALU_OP__ALU_ADD) {
		if (op->isa->oob_skip)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "If dst_rmw_op is specified, only "
			    "oob_mode=oob_mode.error is allowed"));
		op->opaque = true;
	}
	if (op->isa->oob_skip && op->isa->ndyn == 0)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "oob_mode=oob_mode.skip needs an indirect access (an "
		    "index tile in 'src' or 'dst') in 'dma_copy'"));
	if (op->isa->oob_skip)		/* skipped elements stay */
		op->opaque = true;
	/* isa (dma_copy): "HWDGE is only supported for NeuronCore-v3+" */
	if (op->isa->dge_mode == NKIR__V1__DGE_MODE__DGE_HWDGE &&
	    sim_isa_gen(b) < 3)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "dge_mode.hwdge of 'dma_copy' is only supported for "
		    "NeuronCore-v3+ (platform_target='trn2'), got target "
		    "'%s'", b->k->target && *b->k->target ? b->k->target :
		    "trn1"));
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_copy_predicated(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char	*const args[] = { "dst", "src", "predicate" };
	int			 rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_plan_elementwise(b, o, op, 2, args)))
		return (rc);
	if (op->src[1].scalar)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "operand 'predicate' of 'tensor_copy_predicated' must be "
		    "a tile"));
	/* isa: "predicate must be of type uint8, uint16, or uint32" (a
	 * bool tile is uint8 bytes); "src and dst must share the same data
	 * type"; "Either src or predicate may be in PSUM, but not both" */
	if ((rc = sim_isa_check_dtype(b, o, &op->src[1].v, "predicate",
	    sim_isa_uint_pred, "uint8, uint16 or uint32")))
		return (rc);
	if (!op->src[0].scalar &&
	    sim_isa_dtype(b, &op->src[0].v) != sim_isa_dtype(b, &op->dst))
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'src' (%s) and 'dst' (%s) of 'tensor_copy_predicated' "
		    "must share the same data type",
		    sim_dtype_name(sim_isa_dtype(b, &op->src[0].v)),
		    sim_dtype_name(sim_isa_dtype(b, &op->dst))));
	if ((rc = sim_isa_not_both_psum(b, o, &op->src[0], "src",
	    &op->src[1], "predicate")))
		return (rc);
	op->opaque = true;
	if ((rc = sim_isa_stage(b, o, op)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_dropout(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char	*const args[] = { "dst", "data", "prob" };
	int			 dt, rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_plan_elementwise(b, o, op, 2, args)))
		return (rc);
	if (op->src[0].scalar)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "operand 'data' of 'dropout' must be a tile"));
	/* isa (dropout): integer data needs a float32 prob and an output of
	 * the same dtype */
	dt = sim_isa_dtype(b, &op->src[0].v);
	if (sim_dtype_is_int(dt)) {
		if (!op->src[1].scalar && (rc = sim_isa_check_dtype(b, o,
		    &op->src[1].v, "prob", sim_isa_f32, "float32 for "
		    "integer data")))
			return (rc);
		if (sim_isa_dtype(b, &op->dst) != dt)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "the output dtype of 'dropout' must match the "
			    "integer input dtype %s, got %s",
			    sim_dtype_name(dt),
			    sim_dtype_name(sim_isa_dtype(b, &op->dst))));
	} else if (!op->src[1].scalar &&
	    !sim_isa_is_float(sim_isa_dtype(b, &op->src[1].v)))
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'prob' of 'dropout' must be a float tile, got %s",
		    sim_dtype_name(sim_isa_dtype(b, &op->src[1].v))));
	if ((rc = sim_isa_stage(b, o, op)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_affine_select(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char	*const args[] = { "dst", "on_true_tile" };
	sim_i128		 lo, hi;
	int			 dt, rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_plan_elementwise(b, o, op, 1, args)))
		return (rc);
	if (op->src[0].scalar)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'on_true_tile' of 'affine_select' must be a tile"));
	if (o->expr == NULL)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "'affine_select' has no predicate"));
	if ((rc = sim_plan_lin(b, o, o->expr, op->dst.rank, op->dst.shape,
	    &op->expr, &lo, &hi)))
		return (rc);
	/* isa (affine_select): "any float or 8-bit/16-bit integer data
	 * types" in and out */
	dt = sim_isa_dtype(b, &op->src[0].v);
	if (dt == SIM_DT_INT32 || dt == SIM_DT_UINT32)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'on_true_tile' of 'affine_select' must be a float or "
		    "8-bit/16-bit integer tile, got %s", sim_dtype_name(dt)));
	dt = sim_isa_dtype(b, &op->dst);
	if (dt == SIM_DT_INT32 || dt == SIM_DT_UINT32)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "the output of 'affine_select' must be a float or "
		    "8-bit/16-bit integer tile, got %s", sim_dtype_name(dt)));
	op->value = (float)o->value;
	if ((rc = sim_isa_stage(b, o, op)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_range_select(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char	*const args[] = { "dst", "on_true_tile",
	    "bound0", "bound1" };
	int			 i, rc;

	if ((rc = sim_isa_new(b, o, op)))
		return (rc);
	/* isa (range_select): "Available only on NeuronCore-v3 and
	 * beyond" */
	if (sim_isa_gen(b) < 3)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'range_select' is only available on NeuronCore-v3 and "
		    "beyond (platform_target='trn2'), got target '%s'",
		    b->k->target && *b->k->target ? b->k->target : "trn1"));
	if ((rc = sim_plan_elementwise(b, o, op, 3, args)))
		return (rc);
	for (i = 0; i < 3; i++)
		if (op->src[i].scalar)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "'%s' of 'range_select' must be a tile",
			    args[i + 1]));
	if (!sim_isa_is_float(sim_isa_dtype(b, &op->src[0].v)))
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'on_true_tile' of 'range_select' must be a float tile, "
		    "got %s", sim_dtype_name(sim_isa_dtype(b,
		    &op->src[0].v))));
	if ((rc = sim_isa_check_dtype(b, o, &op->src[1].v, "bound0",
	    sim_isa_f32, "float32")) ||
	    (rc = sim_isa_check_dtype(b, o, &op->src[2].v, "bound1",
	    sim_isa_f32, "float32")) ||
	    (rc = sim_isa_check_alu(b, o, o->alu, sim_isa_alu_compare(o->alu),
	    "comp_op0")) ||
	    (rc = sim_isa_check_alu(b, o, o->alu1,
	    sim_isa_alu_compare(o->alu1), "comp_op1")) ||
	    (rc = sim_isa_check_reduce(b, o, sim_isa_max_only)) ||
	    (rc = sim_isa_check_acc_parts(b, o, op)))
		return (rc);
	if (o->range_start <= -SIM_ISA_RANGE_MAX ||
	    o->range_start + (int64_t)sim_isa_free(&op->dst) >
	    SIM_ISA_RANGE_MAX)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "range_start %lld + free index of 'range_select' must "
		    "stay within the 2^24 range", (long long)o->range_start));
	op->value = (float)o->value;
	if ((rc = sim_isa_stage(b, o, op)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_select_reduce(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char	*const args[] = { "dst", "predicate",
	    "on_true", "on_false" };
	int			 dt, rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_plan_elementwise(b, o, op, 3, args)))
		return (rc);
	if (op->src[0].scalar || op->src[1].scalar)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'predicate' and 'on_true' of 'select_reduce' must be "
		    "tiles"));
	/* isa (select_reduce): integer predicate; on_true not tfloat32,
	 * int32 or uint32; not both of on_true and predicate in PSUM;
	 * reduce_op max only */
	if ((rc = sim_isa_check_dtype(b, o, &op->src[0].v, "predicate",
	    sim_isa_int_pred, "int8, uint8, int16 or uint16")))
		return (rc);
	dt = sim_isa_dtype(b, &op->src[1].v);
	if (dt == SIM_DT_TFLOAT32 || dt == SIM_DT_INT32 ||
	    dt == SIM_DT_UINT32)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'on_true' of 'select_reduce' cannot be %s",
		    sim_dtype_name(dt)));
	if ((rc = sim_isa_not_both_psum(b, o, &op->src[1], "on_true",
	    &op->src[0], "predicate")) ||
	    (rc = sim_isa_check_reduce(b, o, sim_isa_max_only)) ||
	    (rc = sim_isa_check_acc_parts(b, o, op)))
		return (rc);
	if ((rc = sim_isa_stage(b, o, op)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_sequence_bounds(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	struct sim_view	*s;
	uint64_t	 want[3];
	int		 rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_plan_src_tile(b, o, op, "segment_ids", &s)))
		return (rc);
	/* isa (sequence_bounds): "The partition dimension must always be
	 * 1"; float32 or int32 in and out */
	if (s->rank != 2 || s->shape[0] != 1)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'segment_ids' of 'sequence_bounds' must be a [1, n] "
		    "tile: the partition dimension must always be 1"));
	if ((rc = sim_isa_check_dtype(b, o, s, "segment_ids",
	    sim_isa_f32_i32, "float32 or int32")) ||
	    (rc = sim_isa_check_dtype(b, o, &op->dst, "dtype",
	    sim_isa_f32_i32, "float32 or int32")))
		return (rc);
	want[0] = 1;
	want[1] = 2;
	want[2] = s->shape[1];
	if ((rc = sim_plan_shape_eq(b, o, "dst", op->dst.rank, op->dst.shape,
	    "bounds", 3, want)))
		return (rc);
	if (op->dst.nmask)
		op->masked = true;
	if ((rc = sim_isa_scratch(b, o, s->nelem + op->dst.nelem)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_local_gather(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	const struct sim_view	*s, *ix;
	uint64_t		 P, per_core, valid, E = o->elem_per_index;
	int			 rc;

	if ((rc = sim_isa_new(b, o, op)))
		return (rc);
	if ((rc = sim_plan_src_sbuf2(b, o, op, "src_buffer", "index")))
		return (rc);
	s = &op->src[0].v;
	ix = &op->src[1].v;
	if ((rc = sim_isa_check_dtype(b, o, ix, "index", sim_isa_u16,
	    "uint16")))
		return (rc);
	/* isa (local_gather): the three tile size constraints */
	P = s->shape[0];
	if (P != ix->shape[0] || P % 16 != 0)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "the partition axis size of 'src_buffer' (%llu) must "
		    "match that of 'index' (%llu) and be a multiple of 16",
		    (unsigned long long)P, (unsigned long long)ix->shape[0]));
	if (E != 1 && E != 2 && E != 4 && E != 8 && E != 16 && E != 32)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "num_elem_per_idx of 'local_gather' must be one of 1, 2, "
		    "4, 8, 16, 32, got %llu", (unsigned long long)E));
	per_core = sim_isa_free(ix) * 16;
	valid = o->valid_indices ? o->valid_indices : per_core;
	if (valid > per_core)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "num_valid_indices %llu of 'local_gather' exceeds the "
		    "%llu indices of each 16-partition slice of 'index'",
		    (unsigned long long)valid, (unsigned long long)per_core));
	if (valid > SIM_ISA_GATHER_MAX)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "the number of indices for gather per core of "
		    "'local_gather' (%llu) must be less than or equal to %d",
		    (unsigned long long)valid, SIM_ISA_GATHER_MAX));
	if (op->dst.shape[0] != P || sim_isa_free(&op->dst) != valid * E)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "the output of 'local_gather' must be %llu partitions of "
		    "%llu elements, got %llu of %llu", (unsigned long long)P,
		    (unsigned long long)(valid * E),
		    (unsigned long long)op->dst.shape[0],
		    (unsigned long long)sim_isa_free(&op->dst)));
	if (sim_isa_dtype(b, &op->dst) != sim_isa_dtype(b, s))
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'local_gather' preserves the data type of 'src_buffer' "
		    "(%s); no cast to %s is allowed",
		    sim_dtype_name(sim_isa_dtype(b, s)),
		    sim_dtype_name(sim_isa_dtype(b, &op->dst))));
	op->isa->valid_indices = (uint32_t)valid;
	if (op->dst.nmask)
		op->masked = true;
	if ((rc = sim_isa_scratch(b, o, s->nelem + ix->nelem +
	    op->dst.nelem)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

int
sim_isa_plan_dma_transpose(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	struct sim_view	*s;
	struct sim_lin	 l;
	uint64_t	 shape[SIM_MAX_RANK];
	int		 perm[SIM_MAX_RANK], a, d, m, rc;

	if ((rc = sim_isa_new(b, o, op)))
		return (rc);
	op->nsrc = 1;
	if ((rc = sim_plan_src_access(b, o, op, 0, "src")))
		return (rc);
	s = &op->src[0].v;
	if ((rc = sim_plan_space(b, o, s, "src", SIM_PLAN_ANY)))
		return (rc);
	/* isa (dma_transpose): 2-d [1, 0], 3-d [2, 1, 0], 4-d [3, 1, 2, 0] */
	if ((int)o->n_axes != s->rank || s->rank < 2 || s->rank > 4)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'dma_transpose' supports 2-d, 3-d and 4-d tiles, got "
		    "rank %d", s->rank));
	for (a = 0; a < SIM_MAX_RANK; a++)
		perm[a] = a < s->rank ? (int)o->axes[a] : a;
	if (!((s->rank == 2 && perm[0] == 1 && perm[1] == 0) ||
	    (s->rank == 3 && perm[0] == 2 && perm[1] == 1 && perm[2] == 0) ||
	    (s->rank == 4 && perm[0] == 3 && perm[1] == 1 && perm[2] == 2 &&
	    perm[3] == 0)))
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "unsupported axes of 'dma_transpose': supported axes are "
		    "(1, 0), (2, 1, 0), and (3, 1, 2, 0)"));
	for (a = 0; a < s->rank; a++)
		shape[a] = s->shape[perm[a]];
	if ((rc = sim_plan_shape_eq(b, o, "dst", op->dst.rank, op->dst.shape,
	    "src.T", s->rank, shape)))
		return (rc);
	if (op->isa->dge_mode == NKIR__V1__DGE_MODE__DGE_HWDGE &&
	    sim_isa_gen(b) < 3)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "dge_mode.hwdge of 'dma_transpose' is only supported for "
		    "NeuronCore-v3+ (platform_target='trn2')"));
	/* express the source in dst's iteration space: dst axis a is
	 * source axis perm[a] */
	memcpy(s->shape, shape, sizeof(shape));
#define SIM_ISA_PERMUTE(lp) do {					\
	l = *(lp);							\
	for (a = 0; a < s->rank; a++)					\
		(lp)->ax[a] = l.ax[perm[a]];				\
} while (0)
	SIM_ISA_PERMUTE(&s->off);
	for (d = 0; d < s->ndim; d++)
		SIM_ISA_PERMUTE(&s->dim[d]);
	for (m = 0; m < s->nmask; m++)
		SIM_ISA_PERMUTE(&s->mask[m]);
#undef SIM_ISA_PERMUTE
	memcpy(op->isa->perm, perm, sizeof(perm));
	if ((rc = sim_isa_stage(b, o, op)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

/* max8, nc_find_index8, nc_match_replace8: data (src0) of 8 to 16384
 * (min_elems to 16384) elements per partition and vals (src1, when nvals)
 * of exactly 8. */
static int
sim_isa_plan_top8(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op, uint64_t min_elems, bool vals)
{
	const struct sim_view	*s, *v;
	uint64_t		 F;
	int			 rc;

	op->nsrc = vals ? 2 : 1;
	if ((rc = sim_plan_src_access(b, o, op, 0, "data")) ||
	    (rc = sim_plan_space(b, o, &op->src[0].v, "data",
	    SIM_PLAN_TILE)))
		return (rc);
	s = &op->src[0].v;
	F = sim_isa_free(s);
	if (s->rank > 5)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'data' of '%s' can be up to 5-dimensional, got rank %d",
		    sim_isa_name(o), s->rank));
	if (F < min_elems || F > SIM_ISA_MAX8_MAX)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "the number of elements per partition of '%s' must be "
		    "between %llu and %d, got %llu", sim_isa_name(o),
		    (unsigned long long)min_elems, SIM_ISA_MAX8_MAX,
		    (unsigned long long)F));
	if (vals) {
		if ((rc = sim_plan_src_access(b, o, op, 1, "vals")) ||
		    (rc = sim_plan_space(b, o, &op->src[1].v, "vals",
		    SIM_PLAN_TILE)))
			return (rc);
		v = &op->src[1].v;
		if (v->rank > 3 || sim_isa_free(v) != 8 ||
		    v->shape[0] != s->shape[0])
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "'vals' of '%s' must be up to 3-dimensional with "
			    "%llu partitions of exactly 8 elements",
			    sim_isa_name(o),
			    (unsigned long long)s->shape[0]));
	}
	if (op->src[0].v.nmask || op->dst.nmask)
		op->masked = true;
	if ((rc = sim_isa_scratch(b, o, s->nelem + (s->nelem + 3) / 4 +
	    op->dst.nelem + 16 * s->shape[0] + 16)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}

/* dst is [P, 8] (8 elements per partition). */
static int
sim_isa_plan_dst8(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_op *op)
{
	if (op->dst.shape[0] != op->src[0].v.shape[0] ||
	    sim_isa_free(&op->dst) != 8)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "the output of '%s' must be [%llu, 8], got %llu "
		    "partitions of %llu elements", sim_isa_name(o),
		    (unsigned long long)op->src[0].v.shape[0],
		    (unsigned long long)op->dst.shape[0],
		    (unsigned long long)sim_isa_free(&op->dst)));
	return (0);
}

int
sim_isa_plan_max8(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	int	rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_isa_plan_top8(b, o, op, SIM_ISA_MAX8_MIN, false)))
		return (rc);
	return (sim_isa_plan_dst8(b, o, op));
}

int
sim_isa_plan_find_index8(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	int	rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_isa_plan_top8(b, o, op, SIM_ISA_MAX8_MIN, true)) ||
	    (rc = sim_isa_plan_dst8(b, o, op)))
		return (rc);
	return (sim_isa_check_dtype(b, o, &op->dst, "dtype",
	    sim_isa_u16_u32, "uint16 or uint32"));
}

int
sim_isa_plan_match_replace8(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	int	rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_isa_plan_top8(b, o, op, 1, true)))
		return (rc);
	/* the replacement, as data holds it (also when the op writes only
	 * the indices: later searches must see it) */
	op->value = sim_dtype_round(sim_isa_dtype(b, &op->src[0].v),
	    (float)o->value);
	if (op->isa->index_out)
		return (sim_isa_plan_dst8(b, o, op));
	if (sim_isa_free(&op->dst) != sim_isa_free(&op->src[0].v) ||
	    op->dst.shape[0] != op->src[0].v.shape[0])
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "the output of 'nc_match_replace8' must have the shape "
		    "of 'data'"));
	return (0);
}

/* The first partition of view v, if it does not depend on loop variables
 * or program ids (else -1). */
static int64_t
sim_isa_start_partition(struct sim_build *b, const struct sim_view *v)
{
	sim_i128	lo, hi;

	sim_plan_lin_range(b, &v->dim[0], 0, v->shape, &lo, &hi);
	return (lo == hi ? (int64_t)lo : -1);
}

int
sim_isa_plan_shuffle(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	struct sim_view		*s;
	uint64_t		 act, sp, dp, ps, pd;
	int64_t			 ss, ds;
	size_t			 i;
	int			 rc;

	if ((rc = sim_isa_new(b, o, op)) ||
	    (rc = sim_plan_src_tile(b, o, op, "src", &s)))
		return (rc);
	/* isa (nc_stream_shuffle): same dtype, same elements per
	 * partition, a 32-element shuffle_mask, start partitions by the
	 * number of active partitions */
	if (o->n_shuffle != SIM_ISA_QUADRANT)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "shuffle_mask of 'nc_stream_shuffle' must have 32 "
		    "elements, got %zu", o->n_shuffle));
	if (sim_isa_dtype(b, s) != sim_isa_dtype(b, &op->dst))
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'dst' (%s) of 'nc_stream_shuffle' must have the same "
		    "data type as 'src' (%s)",
		    sim_dtype_name(sim_isa_dtype(b, &op->dst)),
		    sim_dtype_name(sim_isa_dtype(b, s))));
	if (sim_isa_free(s) != sim_isa_free(&op->dst))
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'dst' of 'nc_stream_shuffle' must have the same number "
		    "of elements per partition as 'src' (%llu), got %llu",
		    (unsigned long long)sim_isa_free(s),
		    (unsigned long long)sim_isa_free(&op->dst)));
	ps = s->shape[0];
	pd = op->dst.shape[0];
	act = ((ps > pd ? ps : pd) + 31) / 32 * 32;
	ss = sim_isa_start_partition(b, s);
	ds = sim_isa_start_partition(b, &op->dst);
	for (i = 0; i < 2; i++) {
		int64_t	st = i == 0 ? ss : ds;
		bool	ok;

		if (st < 0)
			continue;
		ok = act >= 96 ? st == 0 : act == 64 ? st % 64 == 0 :
		    st % 32 == 0;
		if (!ok)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "the start partition %lld of '%s' of "
			    "'nc_stream_shuffle' is not allowed with %llu "
			    "active partitions", (long long)st,
			    i == 0 ? "src" : "dst", (unsigned long long)act));
	}
	for (dp = 0; dp < pd; dp++) {
		uint32_t	m = o->shuffle[dp % SIM_ISA_QUADRANT];

		if (m == SIM_ISA_SHUFFLE_KEEP)
			continue;
		if (m >= SIM_ISA_QUADRANT)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "shuffle_mask[%llu] of 'nc_stream_shuffle' is "
			    "%u: it must name a partition of the quadrant "
			    "(0 to 31) or be 255",
			    (unsigned long long)(dp % SIM_ISA_QUADRANT), m));
		sp = dp / SIM_ISA_QUADRANT * SIM_ISA_QUADRANT + m;
		if (sp >= ps)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "shuffle_mask[%llu] of 'nc_stream_shuffle' names "
			    "partition %llu of 'src', which has %llu",
			    (unsigned long long)(dp % SIM_ISA_QUADRANT),
			    (unsigned long long)sp, (unsigned long long)ps));
	}
	op->opaque = true;
	if (op->dst.nmask)
		op->masked = true;
	if ((rc = sim_isa_scratch(b, o, s->nelem + (s->nelem + 3) / 4)))
		return (rc);
	return (sim_isa_bounds_unmasked(b, o, op));
}
