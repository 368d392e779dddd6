/* sim_plan_view.c: the planner's strided views: affine index expressions checked and folded, an access turned into a view with its masks, its bounds proved, where an operand lives, the operands of an op checked against its dst. */
/* Floor 2, beside sim_plan.c: calls floor 0 and sim_plan.c's arena and
 * errors (sim_plan_alloc, sim_plan_err). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/* NKIR Space names, as NKI writes them. */
const char *const sim_plan_spaces[] = {
	"invalid", "hbm", "shared_hbm", "sbuf", "psum",
};

int
sim_plan_lin(struct sim_build *b, const Nkir__V1__Op *o,
    const Nkir__V1__Affine *a, int rank, const uint64_t *shape,
    struct sim_lin *out, sim_i128 *plo, sim_i128 *phi)
{
	sim_i128	lo, hi, abs, vlo, vhi, x, y;
	uint32_t	nt = 0, slot = 0;
	size_t		i;
	int		rc;

	memset(out, 0, sizeof(*out));
	if (a == NULL) {
		*plo = *phi = 0;
		return (0);
	}
	if (a->n_terms > SIM_TERMS_MAX)
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "affine expression with %zu terms exceeds the executor "
		    "limit of %d", a->n_terms, SIM_TERMS_MAX));
	if (a->constant > SIM_COEF_MAX || a->constant < -SIM_COEF_MAX)
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "index constant %lld is out of the executor's range",
		    (long long)a->constant));
	out->c = a->constant;
	lo = hi = a->constant;
	abs = a->constant < 0 ? -(sim_i128)a->constant : a->constant;
	out->t = sim_plan_alloc(b, a->n_terms * sizeof(*out->t));
	if (out->t == NULL)
		return (SIM_ENOMEM);
	for (i = 0; i < a->n_terms; i++) {
		const Nkir__V1__Term	*t = a->terms[i];

		if (t == NULL)
			return (sim_plan_err(b, o->loc, SIM_EPARSE,
			    "missing index term"));
		if (t->coef > SIM_COEF_MAX || t->coef < -SIM_COEF_MAX)
			return (sim_plan_err(b, o->loc, SIM_ELIMIT,
			    "index coefficient %lld is out of the executor's "
			    "range", (long long)t->coef));
		switch (t->kind) {
		case NKIR__V1__TERM_KIND__TERM_LOOP:
			if (t->index >= b->p->nloopvars ||
			    !b->inscope[t->index])
				return (sim_plan_err(b, o->loc, SIM_EPARSE,
				    "index uses loop variable %u outside its "
				    "loop", t->index));
			vlo = b->vlo[t->index];
			vhi = b->vhi[t->index];
			break;
		case NKIR__V1__TERM_KIND__TERM_PROGRAM:
			if (t->index >= (uint32_t)b->grid_rank)
				return (sim_plan_err(b, o->loc, SIM_EPARSE,
				    "program_id(%u) is outside the launch grid",
				    t->index));
			vlo = 0;
			vhi = t->index < (uint32_t)b->grid_rank ?
			    (sim_i128)b->grid[t->index] - 1 : 0;
			break;
		case NKIR__V1__TERM_KIND__TERM_FN:
			if ((rc = sim_lang_plan_fn_term(b, o, t->index, &slot)))
				return (rc);
			vlo = b->vlo[slot];
			vhi = b->vhi[slot];
			break;
		case NKIR__V1__TERM_KIND__TERM_AXIS:
			if (t->index >= (uint32_t)rank)
				return (sim_plan_err(b, o->loc, SIM_EPARSE,
				    "index uses axis %u of a rank-%d access",
				    t->index, rank));
			vlo = 0;
			vhi = (sim_i128)shape[t->index] - 1;
			break;
		default:
			return (sim_plan_err(b, o->loc, SIM_EPARSE,
			    "invalid index term kind %d", (int)t->kind));
		}
		x = vlo * t->coef;
		y = vhi * t->coef;
		lo += x < y ? x : y;
		hi += x < y ? y : x;
		if (x < 0)
			x = -x;
		if (y < 0)
			y = -y;
		abs += x > y ? x : y;
		if (abs > SIM_IDX_MAX)
			return (sim_plan_err(b, o->loc, SIM_ELIMIT,
			    "index expression exceeds the executor's range"));
		if (t->kind == NKIR__V1__TERM_KIND__TERM_AXIS) {
			out->ax[t->index] += t->coef;
		} else if (t->kind == NKIR__V1__TERM_KIND__TERM_FN) {
			/* read from the fn's slot, as a loop variable */
			out->t[nt].kind = NKIR__V1__TERM_KIND__TERM_LOOP;
			out->t[nt].index = slot;
			out->t[nt].coef = t->coef;
			nt++;
		} else {
			out->t[nt].kind = t->kind;
			out->t[nt].index = t->index;
			out->t[nt].coef = t->coef;
			nt++;
		}
	}
	out->nt = nt;
	*plo = lo;
	*phi = hi;
	return (0);
}

bool
sim_plan_is_chip(int space)
{
	return (space == NKIR__V1__SPACE__SPACE_SBUF ||
	    space == NKIR__V1__SPACE__SPACE_PSUM);
}

int
sim_plan_view(struct sim_build *b, const Nkir__V1__Op *o,
    const Nkir__V1__Access *acc, struct sim_view *v, const char *arg)
{
	const struct sim_tinfo	*ti;
	uint64_t		 stride[SIM_MAX_RANK];
	sim_i128		 lo, hi;
	uint32_t		 k;
	int			 i, d, a, m, rc;

	memset(v, 0, sizeof(*v));
	if (acc == NULL)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "operand '%s' of '%s' is missing", arg,
		    sim_op_name(o->kind)));
	if (acc->tensor >= b->p->ntensors)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "operand '%s' names tensor %u of %zu", arg, acc->tensor,
		    b->p->ntensors));
	ti = &b->p->tensors[acc->tensor];
	v->tensor = acc->tensor;
	if (acc->n_shape < 1 || acc->n_shape > SIM_MAX_RANK)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "operand '%s' has rank %zu (1 to %d)", arg, acc->n_shape,
		    SIM_MAX_RANK));
	v->rank = (int)acc->n_shape;
	v->nelem = 1;
	for (i = 0; i < v->rank; i++) {
		if (acc->shape[i] < 1 || acc->shape[i] > SIM_DIM_MAX)
			return (sim_plan_err(b, o->loc, SIM_EPARSE,
			    "operand '%s' has dimension %d of size %llu", arg,
			    i, (unsigned long long)acc->shape[i]));
		v->shape[i] = acc->shape[i];
		if (v->nelem > SIM_ELEMS_MAX / acc->shape[i])
			return (sim_plan_err(b, o->loc, SIM_ELIMIT,
			    "operand '%s' has too many elements", arg));
		v->nelem *= acc->shape[i];
	}
	if (ti->chip && v->shape[0] > SIM_PMAX)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "Size of partition dimension %llu exceeds architecture "
		    "limitation of %d", (unsigned long long)v->shape[0],
		    SIM_PMAX));
	if ((int)acc->n_index != ti->rank)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "operand '%s' indexes tensor `%s` of rank %d with %zu "
		    "indices", arg, ti->name, ti->rank, acc->n_index));
	if (acc->n_mask > SIM_MASKS_MAX)
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "operand '%s' has %zu masks (executor limit %d)", arg,
		    acc->n_mask, SIM_MASKS_MAX));
	stride[ti->rank - 1] = 1;
	for (d = ti->rank - 1; d > 0; d--)
		stride[d - 1] = stride[d] * ti->shape[d];
	v->ndim = ti->rank;
	v->dim = sim_plan_alloc(b, (size_t)ti->rank * sizeof(*v->dim));
	v->nmask = (int)acc->n_mask;
	v->mask = sim_plan_alloc(b, acc->n_mask * sizeof(*v->mask) + 1);
	if (v->dim == NULL || v->mask == NULL)
		return (SIM_ENOMEM);
	for (d = 0; d < ti->rank; d++) {
		struct sim_lin	*l = &v->dim[d];

		rc = sim_plan_lin(b, o, acc->index[d], v->rank, v->shape, l,
		    &lo, &hi);
		if (rc)
			return (rc);
		/* offset = sum stride[d] * index[d], modulo 2^64 */
		v->off.c = (int64_t)((uint64_t)v->off.c +
		    stride[d] * (uint64_t)l->c);
		for (a = 0; a < v->rank; a++)
			v->off.ax[a] = (int64_t)((uint64_t)v->off.ax[a] +
			    stride[d] * (uint64_t)l->ax[a]);
		v->off.nt += l->nt;
	}
	v->off.t = sim_plan_alloc(b, v->off.nt * sizeof(*v->off.t));
	if (v->off.t == NULL)
		return (SIM_ENOMEM);
	v->off.nt = 0;
	for (d = 0; d < ti->rank; d++)
		for (k = 0; k < v->dim[d].nt; k++) {
			struct sim_term	t = v->dim[d].t[k];

			t.coef = (int64_t)((uint64_t)t.coef * stride[d]);
			v->off.t[v->off.nt++] = t;
		}
	for (m = 0; m < v->nmask; m++) {
		rc = sim_plan_lin(b, o, acc->mask[m], v->rank, v->shape,
		    &v->mask[m], &lo, &hi);
		if (rc)
			return (rc);
	}
	return (0);
}

void
sim_plan_lin_range(struct sim_build *b, const struct sim_lin *l, int rank,
    const uint64_t *shape, sim_i128 *plo, sim_i128 *phi)
{
	sim_i128	lo = l->c, hi = l->c, x, y;
	uint32_t	i;
	int		a;

	for (i = 0; i < l->nt; i++) {
		const struct sim_term	*t = &l->t[i];

		if (t->kind == NKIR__V1__TERM_KIND__TERM_LOOP) {
			x = (sim_i128)b->vlo[t->index] * t->coef;
			y = (sim_i128)b->vhi[t->index] * t->coef;
		} else {
			x = 0;
			y = ((sim_i128)b->grid[t->index] - 1) * t->coef;
		}
		lo += x < y ? x : y;
		hi += x < y ? y : x;
	}
	for (a = 0; a < rank; a++) {
		y = ((sim_i128)shape[a] - 1) * l->ax[a];
		lo += y < 0 ? y : 0;
		hi += y < 0 ? 0 : y;
	}
	*plo = lo;
	*phi = hi;
}

/* Unmasked accesses must stay in bounds over the full ranges of loop
 * variables, program ids and axes; masked ones are checked per element
 * at run time (a mask on any access of an op masks the whole op). */
int
sim_plan_bounds(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_view *v)
{
	const struct sim_tinfo	*ti = &b->p->tensors[v->tensor];
	sim_i128		 lo, hi;
	int			 d;

	for (d = 0; d < v->ndim; d++) {
		sim_plan_lin_range(b, &v->dim[d], v->rank, v->shape, &lo, &hi);
		if (lo < 0 || hi >= (sim_i128)ti->shape[d])
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "Out-of-bound access for tensor `%s` on dimension "
			    "%d: index range [%lld, %lld] exceed dimension "
			    "size of %llu", ti->name, d, (long long)lo,
			    (long long)hi, (unsigned long long)ti->shape[d]));
	}
	return (0);
}

int
sim_plan_space(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_view *v, const char *arg, int where)
{
	const struct sim_tinfo	*ti = &b->p->tensors[v->tensor];
	const char		*want;
	bool			 ok;

	switch (where) {
	case SIM_PLAN_TILE:
		ok = ti->chip;
		want = "sbuf";
		break;
	case SIM_PLAN_SBUF:
		ok = ti->space == NKIR__V1__SPACE__SPACE_SBUF;
		want = "sbuf";
		break;
	case SIM_PLAN_PSUM:
		ok = ti->space == NKIR__V1__SPACE__SPACE_PSUM;
		want = "psum";
		break;
	case SIM_PLAN_ANY:
		ok = true;
		want = "any";
		break;
	default:
		ok = !ti->chip;
		want = "hbm";
		break;
	}
	if (ok)
		return (0);
	return (sim_plan_err(b, o->loc, SIM_EINVAL,
	    "Expected operand '%s' of '%s' to be in address space '%s', but "
	    "got a %s in '%s' instead", arg, sim_op_name(o->kind), want,
	    ti->chip ? "tile" : "tensor", sim_plan_spaces[ti->space]));
}

int
sim_plan_shape_eq(struct sim_build *b, const Nkir__V1__Op *o,
    const char *an, int ar, const uint64_t *as, const char *bn, int br,
    const uint64_t *bs)
{
	char	sa[256], sb[256];
	bool	same = ar == br;
	int	i;

	for (i = 0; same && i < ar; i++)
		same = as[i] == bs[i];
	if (same)
		return (0);
	sim_print_shape(sa, sizeof(sa), an, ar, as);
	sim_print_shape(sb, sizeof(sb), bn, br, bs);
	if (as[0] != bs[0])
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "number of partitions (dimension 0 size of a tile) "
		    "mismatch in parameters (%s, %s) of '%s'", sa, sb,
		    sim_op_name(o->kind)));
	return (sim_plan_err(b, o->loc, SIM_EINVAL,
	    "shape mismatch in parameters (%s, %s) of '%s'", sa, sb,
	    sim_op_name(o->kind)));
}

/* An element-wise operand: an on-chip access of dst's shape, or a scalar
 * where allowed. */
int
sim_plan_operand(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op, int i, const char *arg, bool scalar_ok)
{
	const Nkir__V1__Operand	*s = (size_t)i < o->n_src ? o->src[i] : NULL;
	struct sim_operand	*d = &op->src[i];
	int			 rc;

	if (s == NULL || s->value_case == NKIR__V1__OPERAND__VALUE__NOT_SET)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "operand '%s' of '%s' is missing", arg,
		    sim_op_name(o->kind)));
	if (s->value_case == NKIR__V1__OPERAND__VALUE_SCALAR) {
		if (!scalar_ok)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "operand '%s' of '%s' must be a tile, not a "
			    "scalar", arg, sim_op_name(o->kind)));
		d->scalar = true;
		d->value = (float)s->scalar;
		return (0);
	}
	if (s->value_case != NKIR__V1__OPERAND__VALUE_ACCESS)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "operand '%s' of '%s' is malformed", arg,
		    sim_op_name(o->kind)));
	rc = sim_plan_view(b, o, s->access, &d->v, arg);
	if (rc)
		return (rc);
	if (d->v.nmask)
		op->masked = true;
	return (0);
}

/* Operand i of op: an access (not a scalar) named arg. */
int
sim_plan_src_access(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op, int i, const char *arg)
{
	return (sim_plan_operand(b, o, op, i, arg, false));
}

/* Operand 0 of op: an on-chip tile named arg; *vp is its view. */
int
sim_plan_src_tile(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op, const char *arg, struct sim_view **vp)
{
	int	rc;

	op->nsrc = 1;
	if ((rc = sim_plan_src_access(b, o, op, 0, arg)))
		return (rc);
	*vp = &op->src[0].v;
	return (sim_plan_space(b, o, *vp, arg, SIM_PLAN_TILE));
}

/* Operands 0 and 1 of op: accesses in SBUF named arg0 and arg1. */
int
sim_plan_src_sbuf2(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op, const char *arg0, const char *arg1)
{
	int	rc;

	op->nsrc = 2;
	if ((rc = sim_plan_src_access(b, o, op, 0, arg0)) ||
	    (rc = sim_plan_src_access(b, o, op, 1, arg1)) ||
	    (rc = sim_plan_space(b, o, &op->src[0].v, arg0, SIM_PLAN_SBUF)))
		return (rc);
	return (sim_plan_space(b, o, &op->src[1].v, arg1, SIM_PLAN_SBUF));
}

/* The nsrc operands of an element-wise op, named args[1 ..] (args[0] is
 * "dst"): scalars, or tiles of dst's shape. */
int
sim_plan_elementwise(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op, int nsrc, const char *const *args)
{
	int	i, rc;

	op->nsrc = nsrc;
	for (i = 0; i < nsrc; i++) {
		if ((rc = sim_plan_operand(b, o, op, i, args[i + 1], true)))
			return (rc);
		if (op->src[i].scalar)
			continue;
		if ((rc = sim_plan_space(b, o, &op->src[i].v, args[i + 1],
		    SIM_PLAN_TILE)))
			return (rc);
		if ((rc = sim_plan_shape_eq(b, o, args[0], op->dst.rank,
		    op->dst.shape, args[i + 1], op->src[i].v.rank,
		    op->src[i].v.shape)))
			return (rc);
	}
	return (0);
}

/*
 * True if an unmasked store through acc writes every element of its
 * tensor: each dimension is `tile * var + axis` with var a step-1 loop
 * from 0 or a program id, tile * trips == dim, every axis and var used
 * once (the tiling of the tutorials). Such a tensor, if never read, needs
 * no launch fill.
 */
static bool
sim_plan_covers_dims(struct sim_build *b, const Nkir__V1__Access *acc,
    const struct sim_tinfo *ti)
{
	uint32_t	 axes = 0, progs = 0;
	uint8_t		*seen = b->used;	/* bit 1: a tiling var */
	bool		 ok = acc->n_shape == (size_t)ti->rank;
	int		 d;
	size_t		 i;

	for (d = 0; ok && d < ti->rank; d++) {
		const Nkir__V1__Affine	*a = acc->index[d];
		const Nkir__V1__Term	*ax = NULL, *v = NULL;
		uint64_t		 tile, trips;

		ok = a != NULL && a->constant == 0 && a->n_terms <= 2;
		for (i = 0; ok && i < a->n_terms; i++) {
			const Nkir__V1__Term	*t = a->terms[i];

			if (t->kind == NKIR__V1__TERM_KIND__TERM_AXIS && !ax)
				ax = t;
			else if (t->kind != NKIR__V1__TERM_KIND__TERM_AXIS &&
			    !v)
				v = t;
			else
				ok = false;
		}
		if (!ok || ax == NULL || ax->coef != 1 ||
		    (axes & (1u << ax->index)))
			return (false);
		axes |= 1u << ax->index;
		tile = acc->shape[ax->index];
		if (v == NULL) {
			ok = tile == ti->shape[d];
			continue;
		}
		if (v->coef != (int64_t)tile ||
		    v->kind == NKIR__V1__TERM_KIND__TERM_FN)
			return (false);
		if (v->kind == NKIR__V1__TERM_KIND__TERM_PROGRAM) {
			if (progs & (1u << v->index))
				return (false);
			progs |= 1u << v->index;
			trips = b->grid[v->index];
		} else {
			if (b->vstep[v->index] != 1 || b->vlo[v->index] != 0 ||
			    (seen[v->index] & 2))
				return (false);
			seen[v->index] |= 2;
			trips = (uint64_t)b->vhi[v->index] + 1;
		}
		ok = tile * trips == ti->shape[d];
	}
	return (ok);
}

bool
sim_plan_covers(struct sim_build *b, const Nkir__V1__Access *acc,
    const struct sim_tinfo *ti)
{
	bool		ok = sim_plan_covers_dims(b, acc, ti);
	uint32_t	i;

	for (i = 0; i < b->p->nloopvars; i++)
		b->used[i] &= 1;
	return (ok);
}
