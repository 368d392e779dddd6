/* sim_lang_plan.c: the planner of the nki.language op kinds 80-119 (the random stream, gather_flattened, all_reduce, if, view), of index functions, shared constants and block dimensions. */
/* Floor 2, beside sim_plan.c: uses its helpers (sim_impl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"


/* Programs of a kernel with all_reduce run side by side, one thread each. */
#define SIM_COLL_PROGRAMS_MAX	64

/* ------------------------------------------------------------ helpers */

/* Op o (NKI's name) runs in `need` floats of the executor's scratch. */
static int
sim_lang_plan_scratch(struct sim_build *b, const Nkir__V1__Op *o,
    uint64_t need, const char *name)
{
	if (need > (1ull << 28))
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "'%s' operands too large for the executor", name));
	if (b->p->scratch_max < need)
		b->p->scratch_max = need;
	return (0);
}

/* Operand i of o: an on-chip integer tile of dst's iteration space. */
static int
sim_lang_plan_index_tile(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op, int i, const char *arg)
{
	const struct sim_tinfo	*ti;
	int			 rc;

	if ((rc = sim_plan_operand(b, o, op, i, arg, false)) ||
	    (rc = sim_plan_space(b, o, &op->src[i].v, arg, SIM_PLAN_TILE)))
		return (rc);
	ti = &b->p->tensors[op->src[i].v.tensor];
	if (!sim_dtype_is_int(ti->dtype) || ti->dtype == SIM_DT_BOOL)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "%s `%s` of '%s' must be an integer tile, got %s", arg,
		    ti->name, sim_op_name(o->kind), sim_dtype_name(ti->dtype)));
	return (sim_plan_shape_eq(b, o, "dst", op->dst.rank, op->dst.shape,
	    arg, op->src[i].v.rank, op->src[i].v.shape));
}

/* ------------------------------------------------------------ RNG */

int
sim_lang_plan_rand(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	op->nsrc = 0;
	return (0);
}

int
sim_lang_plan_seed(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	int	rc;

	op->nsrc = 1;
	if ((rc = sim_plan_operand(b, o, op, 0, "seed", true)))
		return (rc);
	if (op->src[0].scalar) {
		/* exact: a 32-bit seed does not fit a float */
		double	s = o->src[0]->scalar;

		if (!(s >= -9.2e18 && s <= 9.2e18) || s != (double)(int64_t)s)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "random_seed: the seed %g is not an integer", s));
		op->start = (int64_t)s;
		return (0);
	}
	return (sim_plan_space(b, o, &op->src[0].v, "seed", SIM_PLAN_TILE));
}

/* ------------------------------------------------------------ gather */

/* dst [P, ...] <- data[p, flat(indices[p, ...])]: data and indices 2-4
 * dimensional, indices of dst's shape, the same partitions. */
int
sim_lang_plan_gather(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	const struct sim_view	*d;
	uint64_t		 need;
	int			 rc;

	op->nsrc = 2;
	if ((rc = sim_plan_operand(b, o, op, 0, "data", false)) ||
	    (rc = sim_plan_space(b, o, &op->src[0].v, "data", SIM_PLAN_TILE)) ||
	    (rc = sim_lang_plan_index_tile(b, o, op, 1, "indices")))
		return (rc);
	d = &op->src[0].v;
	if (d->rank < 2 || d->rank > 4 || op->dst.rank < 2 ||
	    op->dst.rank > 4)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'gather_flattened' needs 2-, 3- or 4-dimensional data and "
		    "indices, got rank %d and %d", d->rank, op->dst.rank));
	if (d->shape[0] != op->dst.shape[0])
		return (sim_plan_shape_eq(b, o, "data", d->rank, d->shape,
		    "indices", op->dst.rank, op->dst.shape));
	/* data, indices and the result, then data's active flags */
	need = d->nelem + 2 * op->dst.nelem + (d->nelem + 3) / 4;
	return (sim_lang_plan_scratch(b, o, need, "gather_flattened"));
}

/* ------------------------------------------------------------ view */

/*
 * tile.view(dtype): dst holds src's bytes read as dst's dtype, so the
 * two differ only in the last dimension, scaled by the dtypes' sizes.
 */
int
sim_lang_plan_bitcast(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	const struct sim_view	*s;
	uint64_t		 want[SIM_MAX_RANK], need;
	size_t			 ss, ds;
	int			 sdt, ddt, rc;

	op->nsrc = 1;
	if ((rc = sim_plan_operand(b, o, op, 0, "tensor", false)) ||
	    (rc = sim_plan_space(b, o, &op->src[0].v, "tensor", SIM_PLAN_TILE)))
		return (rc);
	s = &op->src[0].v;
	sdt = b->p->tensors[s->tensor].dtype;
	ddt = b->p->tensors[op->dst.tensor].dtype;
	ss = sim_dtype_size(sdt);
	ds = sim_dtype_size(ddt);
	if (s->rank < 2 || s->rank != op->dst.rank)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'view' needs tiles of one rank (2 or more), got %d and %d",
		    s->rank, op->dst.rank));
	memcpy(want, s->shape, sizeof(want));
	if ((want[s->rank - 1] * ss) % ds != 0)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "cannot view a %s tile as %s: the last dimension's %llu "
		    "bytes are not a multiple of %zu", sim_dtype_name(sdt),
		    sim_dtype_name(ddt),
		    (unsigned long long)(want[s->rank - 1] * ss), ds));
	want[s->rank - 1] = want[s->rank - 1] * ss / ds;
	if ((rc = sim_plan_shape_eq(b, o, "dst", op->dst.rank, op->dst.shape,
	    "tensor", s->rank, want)))
		return (rc);
	/* src, its bytes, dst, src's active flags */
	need = s->nelem + s->nelem + op->dst.nelem + (s->nelem + 3) / 4;
	return (sim_lang_plan_scratch(b, o, need, "view"));
}

/* ------------------------------------------------------------ all_reduce */

int
sim_lang_plan_all_reduce(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	size_t	i;
	int	rc;

	op->nsrc = 1;
	if ((rc = sim_plan_operand(b, o, op, 0, "x", false)) ||
	    (rc = sim_plan_space(b, o, &op->src[0].v, "x", SIM_PLAN_TILE)) ||
	    (rc = sim_plan_shape_eq(b, o, "dst", op->dst.rank, op->dst.shape,
	    "x", op->src[0].v.rank, op->src[0].v.shape)))
		return (rc);
	if (o->alu != NKIR__V1__ALU_OP__ALU_ADD &&
	    o->alu != NKIR__V1__ALU_OP__ALU_MULTIPLY &&
	    o->alu != NKIR__V1__ALU_OP__ALU_MAXIMUM &&
	    o->alu != NKIR__V1__ALU_OP__ALU_MINIMUM)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "'all_reduce' "
		    "reduces with np.add, np.multiply, np.maximum or "
		    "np.minimum, not '%s'", sim_op_alu_name(o->alu)));
	if (o->n_axes == 0)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'all_reduce' needs at least one program axis"));
	for (i = 0; i < o->n_axes; i++) {
		if ((int)o->axes[i] >= b->p->grid_rank)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "program axis %u of 'all_reduce' is outside the "
			    "launch grid of %d dimension(s)", o->axes[i],
			    b->p->grid_rank));
		op->axes |= 1u << o->axes[i];
	}
	if (b->p->nprograms > SIM_COLL_PROGRAMS_MAX)
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "'all_reduce' on a launch grid of %llu programs exceeds "
		    "the executor limit of %d", (unsigned long long)
		    b->p->nprograms, SIM_COLL_PROGRAMS_MAX));
	if (b->p->scratch_max < op->dst.nelem * 2)
		b->p->scratch_max = op->dst.nelem * 2;
	b->p->collective = true;
	return (0);
}

/* ------------------------------------------------------------ activation */

bool
sim_lang_plan_act_ok(int act)
{
	switch (act) {
	case NKIR__V1__ACT_FUNC__ACT_TAN:
	case NKIR__V1__ACT_FUNC__ACT_ARCTAN:
	case NKIR__V1__ACT_FUNC__ACT_GELU_DX:
	case NKIR__V1__ACT_FUNC__ACT_GELU_SIGMOID:
	case NKIR__V1__ACT_FUNC__ACT_SILU_DX:
	case NKIR__V1__ACT_FUNC__ACT_ERF_DX:
	case NKIR__V1__ACT_FUNC__ACT_MISH:
		return (true);
	default:
		return (false);
	}
}

/* ------------------------------------------------------------ fns */

int
sim_lang_plan_fns(struct sim_build *b)
{
	const Nkir__V1__Kernel	*k = b->k;
	struct sim_program	*p = b->p;
	size_t			 i, j;
	int			 rc;

	p->fns = sim_plan_table(b, k->n_fns, sizeof(*p->fns),
	    SIM_LOOPVARS_MAX, "index functions", &rc);
	if (p->fns == NULL)
		return (rc);
	p->nfns = (uint32_t)k->n_fns;
	for (i = 0; i < k->n_fns; i++) {
		const Nkir__V1__IndexFn	*f = k->fns[i];
		struct sim_fn		*fn = &p->fns[i];
		const Nkir__V1__Affine	*a;

		if (f == NULL || (a = f->expr) == NULL)
			return (sim_plan_err(b, NULL, SIM_EPARSE,
			    "index function %zu has no expression", i));
		if (f->kind != NKIR__V1__FN_KIND__FN_MOD &&
		    f->kind != NKIR__V1__FN_KIND__FN_FLOORDIV)
			return (sim_plan_err(b, NULL, SIM_EPARSE,
			    "index function %zu has invalid kind %d", i,
			    (int)f->kind));
		if (f->divisor < 1 || f->divisor > SIM_COEF_MAX)
			return (sim_plan_err(b, NULL, SIM_EPARSE,
			    "index function %zu divides by %lld", i,
			    (long long)f->divisor));
		if (a->n_terms > SIM_TERMS_MAX || a->constant > SIM_COEF_MAX ||
		    a->constant < -SIM_COEF_MAX)
			return (sim_plan_err(b, NULL, SIM_ELIMIT,
			    "index function %zu exceeds the executor's range",
			    i));
		fn->kind = f->kind;
		fn->divisor = f->divisor;
		fn->slot = p->nloopvars + (uint32_t)i;
		fn->expr.c = a->constant;
		fn->expr.t = sim_plan_alloc(b, a->n_terms * sizeof(*fn->expr.t));
		if (fn->expr.t == NULL)
			return (SIM_ENOMEM);
		for (j = 0; j < a->n_terms; j++) {
			const Nkir__V1__Term	*t = a->terms[j];

			if (t == NULL || (t->kind !=
			    NKIR__V1__TERM_KIND__TERM_LOOP && t->kind !=
			    NKIR__V1__TERM_KIND__TERM_PROGRAM))
				return (sim_plan_err(b, NULL, SIM_EPARSE,
				    "index function %zu may only use loop "
				    "variables and program ids", i));
			if ((t->kind == NKIR__V1__TERM_KIND__TERM_LOOP &&
			    t->index >= p->nloopvars) ||
			    (t->kind == NKIR__V1__TERM_KIND__TERM_PROGRAM &&
			    t->index >= (uint32_t)b->grid_rank))
				return (sim_plan_err(b, NULL, SIM_EPARSE,
				    "index function %zu names variable %u out "
				    "of range", i, t->index));
			if (t->coef > SIM_COEF_MAX || t->coef < -SIM_COEF_MAX)
				return (sim_plan_err(b, NULL, SIM_ELIMIT,
				    "index function %zu exceeds the executor's "
				    "range", i));
			fn->expr.t[j].kind = t->kind;
			fn->expr.t[j].index = t->index;
			fn->expr.t[j].coef = t->coef;
		}
		fn->expr.nt = (uint32_t)a->n_terms;
	}
	return (0);
}

static sim_i128
sim_lang_plan_floor(sim_i128 x, int64_t d)
{
	sim_i128	q = x / d;

	return (q * d > x ? q - 1 : q);
}

int
sim_lang_plan_fn_term(struct sim_build *b, const Nkir__V1__Op *o,
    uint32_t index, uint32_t *slot)
{
	const struct sim_fn	*fn;
	sim_i128		 lo, hi, x;
	uint32_t		 i;

	if (index >= b->p->nfns)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "index uses index function %u of %u", index, b->p->nfns));
	fn = &b->p->fns[index];
	for (i = 0; i < fn->expr.nt; i++)
		if (fn->expr.t[i].kind == NKIR__V1__TERM_KIND__TERM_LOOP &&
		    !b->inscope[fn->expr.t[i].index])
			return (sim_plan_err(b, o->loc, SIM_EPARSE,
			    "index uses loop variable %u outside its loop",
			    fn->expr.t[i].index));
	sim_plan_lin_range(b, &fn->expr, 0, NULL, &lo, &hi);
	if (fn->kind == NKIR__V1__FN_KIND__FN_FLOORDIV) {
		lo = sim_lang_plan_floor(lo, fn->divisor);
		hi = sim_lang_plan_floor(hi, fn->divisor);
	} else if (sim_lang_plan_floor(lo, fn->divisor) ==
	    sim_lang_plan_floor(hi, fn->divisor)) {
		/* within one period: the range itself, shifted */
		x = sim_lang_plan_floor(lo, fn->divisor) * fn->divisor;
		lo -= x;
		hi -= x;
	} else {
		lo = 0;
		hi = fn->divisor - 1;
	}
	*slot = fn->slot;
	b->vlo[fn->slot] = (int64_t)lo;
	b->vhi[fn->slot] = (int64_t)hi;
	return (0);
}

int
sim_lang_plan_loop_fns(struct sim_build *b, struct sim_op *op)
{
	const struct sim_program	*p = b->p;
	uint32_t			 i, j, n = 0;

	for (i = 0; i < p->nfns; i++)
		for (j = 0; j < p->fns[i].expr.nt; j++)
			if (p->fns[i].expr.t[j].kind ==
			    NKIR__V1__TERM_KIND__TERM_LOOP &&
			    p->fns[i].expr.t[j].index == op->var) {
				n++;
				break;
			}
	if (n == 0)
		return (0);
	if ((op->fns = sim_plan_alloc(b, n * sizeof(*op->fns))) == NULL)
		return (SIM_ENOMEM);
	for (i = 0; i < p->nfns; i++)
		for (j = 0; j < p->fns[i].expr.nt; j++)
			if (p->fns[i].expr.t[j].kind ==
			    NKIR__V1__TERM_KIND__TERM_LOOP &&
			    p->fns[i].expr.t[j].index == op->var) {
				op->fns[op->nfns++] = i;
				break;
			}
	return (0);
}

/* ------------------------------------------------------------ constants */

int
sim_lang_plan_data(struct sim_build *b, const Nkir__V1__Tensor *t,
    struct sim_tinfo *ti)
{
	size_t	n = ti->nelem * sim_dtype_size(ti->dtype);
	void	*d;

	if (ti->kind != NKIR__V1__TENSOR_KIND__TENSOR_HBM)
		return (sim_plan_err(b, t->loc, SIM_EPARSE,
		    "only an HBM tensor may have data, not `%s`", ti->name));
	if (t->data.len != n)
		return (sim_plan_err(b, t->loc, SIM_EPARSE,
		    "constant `%s` has %zu bytes of data, its shape and dtype "
		    "need %zu", ti->name, t->data.len, n));
	if ((d = sim_plan_alloc(b, n)) == NULL)
		return (SIM_ENOMEM);
	memcpy(d, t->data.data, n);
	ti->data = d;
	return (0);
}

/* ------------------------------------------------------------ blocks */

int
sim_lang_plan_block_bytes(struct sim_build *b, const Nkir__V1__Tensor *t,
    const struct sim_tinfo *ti, uint64_t bytes, uint64_t *per_block)
{
	uint64_t	blocks = 1;
	uint32_t	d;

	if (t->block_dims >= (uint32_t)ti->rank)
		return (sim_plan_err(b, t->loc, SIM_EPARSE,
		    "tile `%s` of rank %d has %u block dimensions", ti->name,
		    ti->rank, t->block_dims));
	for (d = 1; d <= t->block_dims; d++)
		blocks *= ti->shape[d];
	*per_block = bytes / blocks;
	return (0);
}

/* ------------------------------------------------------------ if */

/*
 * Narrow the loop variables' ranges to the values where l >= 0 can hold
 * (sound: a value left out makes l negative whatever the other variables
 * are), on each variable's grid. False if some variable has none left.
 */
static bool
sim_lang_plan_narrow(struct sim_build *b, const struct sim_lin *l)
{
	sim_i128	lo, hi, x, y, rest, bound, st, k;
	uint32_t	i;

	for (i = 0; i < l->nt; i++) {
		const struct sim_term	*t = &l->t[i];
		uint32_t		 v = t->index;

		if (t->kind != NKIR__V1__TERM_KIND__TERM_LOOP ||
		    v >= b->p->nloopvars || t->coef == 0)
			continue;
		sim_plan_lin_range(b, l, 0, NULL, &lo, &hi);
		x = (sim_i128)b->vlo[v] * t->coef;
		y = (sim_i128)b->vhi[v] * t->coef;
		rest = hi - (x > y ? x : y);	/* the others' largest sum */
		st = b->vstep[v] < 0 ? -(sim_i128)b->vstep[v] : b->vstep[v];
		if (st == 0)
			st = 1;
		if (t->coef > 0) {		/* v >= ceil(-rest / coef) */
			bound = -rest >= 0 ? (-rest + t->coef - 1) / t->coef :
			    -(rest / t->coef);
			if (bound > b->vlo[v]) {
				k = (bound - b->vlo[v] + st - 1) / st;
				if (b->vlo[v] + k * st > b->vhi[v])
					return (false);
				b->vlo[v] = (int64_t)(b->vlo[v] + k * st);
			}
		} else {			/* v <= floor(rest / -coef) */
			bound = rest >= 0 ? rest / -t->coef :
			    -((-rest + -t->coef - 1) / -t->coef);
			if (bound < b->vhi[v]) {
				k = (b->vhi[v] - bound + st - 1) / st;
				if (b->vhi[v] - k * st < b->vlo[v])
					return (false);
				b->vhi[v] = (int64_t)(b->vhi[v] - k * st);
			}
		}
	}
	sim_plan_lin_range(b, l, 0, NULL, &lo, &hi);
	return (hi >= 0);
}

/* Plan one side of an OP_IF: under conditions conds (all >= 0, or with
 * neg the one condition negated), loop ranges narrowed to them. */
static int
sim_lang_plan_side(struct sim_build *b, const struct sim_op *op, bool neg,
    Nkir__V1__Op *const *ops, size_t n, struct sim_op **out)
{
	uint32_t	nv = b->p->nloopvars;
	int64_t		*save;
	bool		 live = true;
	struct sim_lin	 l;
	int		 i, rc;

	if ((save = malloc(2 * (nv + 1) * sizeof(*save))) == NULL)
		return (SIM_ENOMEM);
	memcpy(save, b->vlo, nv * sizeof(*save));
	memcpy(save + nv + 1, b->vhi, nv * sizeof(*save));
	for (i = 0; live && i < op->ncond && !neg; i++)
		live = sim_lang_plan_narrow(b, &op->cond[i]);
	if (neg && op->ncond == 1) {
		/* not (l >= 0): -l - 1 >= 0 */
		l = op->cond[0];
		l.t = malloc(l.nt * sizeof(*l.t) + 1);
		if (l.t == NULL) {
			free(save);
			return (SIM_ENOMEM);
		}
		l.c = -op->cond[0].c - 1;
		for (i = 0; i < (int)l.nt; i++) {
			l.t[i] = op->cond[0].t[i];
			l.t[i].coef = -l.t[i].coef;
		}
		live = sim_lang_plan_narrow(b, &l);
		free(l.t);
	}
	if (!live)
		b->dead++;
	rc = sim_plan_body(b, ops, n, out);
	if (!live)
		b->dead--;
	memcpy(b->vlo, save, nv * sizeof(*save));
	memcpy(b->vhi, save + nv + 1, nv * sizeof(*save));
	free(save);
	return (rc);
}

int
sim_lang_plan_if(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	const Nkir__V1__Branch	*br = o->branch;
	sim_i128		 lo, hi;
	size_t			 i;
	int			 rc;

	if (br == NULL)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "if op has no branch"));
	if (b->depth >= SIM_DEPTH_MAX)
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "loops and ifs nested deeper than %d", SIM_DEPTH_MAX));
	if (br->n_cond > SIM_MASKS_MAX)
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "if with %zu conditions (executor limit %d)", br->n_cond,
		    SIM_MASKS_MAX));
	op->ncond = (int)br->n_cond;
	op->cond = sim_plan_alloc(b, br->n_cond * sizeof(*op->cond) + 1);
	if (op->cond == NULL)
		return (SIM_ENOMEM);
	for (i = 0; i < br->n_cond; i++) {
		/* rank 0: a condition has one value per execution */
		if ((rc = sim_plan_lin(b, o, br->cond[i], 0, NULL, &op->cond[i],
		    &lo, &hi)))
			return (rc);
	}
	b->guarded++;
	b->depth++;
	rc = sim_lang_plan_side(b, op, false, br->then_body, br->n_then_body,
	    &op->body);
	if (rc == 0)
		rc = sim_lang_plan_side(b, op, true, br->else_body,
		    br->n_else_body, &op->else_body);
	b->depth--;
	b->guarded--;
	op->nbody = br->n_then_body;
	op->nelse = br->n_else_body;
	return (rc);
}
