/* sim_opt.c: the planner's analyses that make a program run faster without changing what it computes: fused groups, dead fills, copy elision. */
/* Floor 1: reads and marks a planned program; calls nothing else in sim/. */
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/* ------------------------------------------------------------ fusion */

bool
sim_opt_fusable(const struct sim_op *op)
{
	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_ALLOC:
	case NKIR__V1__OP_KIND__OP_LOAD:
	case NKIR__V1__OP_KIND__OP_STORE:
	case NKIR__V1__OP_KIND__OP_COPY:
	case NKIR__V1__OP_KIND__OP_TENSOR_TENSOR:
	case NKIR__V1__OP_KIND__OP_ACTIVATION:
	case NKIR__V1__OP_KIND__OP_SELECT:
	case NKIR__V1__OP_KIND__OP_IOTA:
	case NKIR__V1__OP_KIND__OP_TRANSPOSE:
		return (!op->masked && !op->stage && !op->skip);
	default:
		return (false);
	}
}

bool
sim_opt_view_same(const struct sim_view *a, const struct sim_view *b)
{
	uint32_t	k;
	int		i;

	if (a->tensor != b->tensor || a->rank != b->rank ||
	    a->off.c != b->off.c || a->off.nt != b->off.nt)
		return (false);
	for (i = 0; i < a->rank; i++)
		if (a->shape[i] != b->shape[i] || a->off.ax[i] != b->off.ax[i])
			return (false);
	for (k = 0; k < a->off.nt; k++)
		if (a->off.t[k].kind != b->off.t[k].kind ||
		    a->off.t[k].index != b->off.t[k].index ||
		    a->off.t[k].coef != b->off.t[k].coef)
			return (false);
	return (true);
}

bool
sim_opt_view_injective(const struct sim_view *v)
{
	sim_i128	st[SIM_MAX_RANK], ext[SIM_MAX_RANK], span = 0;
	int		n = 0;
	int		a, i, j;

	for (a = 0; a < v->rank; a++) {
		if (v->shape[a] == 1)
			continue;
		st[n] = v->off.ax[a] < 0 ? -(sim_i128)v->off.ax[a] :
		    v->off.ax[a];
		ext[n++] = (sim_i128)v->shape[a] - 1;
	}
	for (i = 1; i < n; i++)		/* insertion sort by stride */
		for (j = i; j > 0 && st[j] < st[j - 1]; j--) {
			sim_i128	t = st[j];

			st[j] = st[j - 1];
			st[j - 1] = t;
			t = ext[j];
			ext[j] = ext[j - 1];
			ext[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (st[i] <= span)
			return (false);
		span += st[i] * ext[i];
	}
	return (true);
}

/* Running ops[0 .. k-1] row by row in lockstep equals running them in
 * order when every tensor any of them writes is accessed by all of them
 * through one and the same injective view (row i touches only row i). */
static bool
sim_opt_group_ok(const struct sim_op *ops, size_t k)
{
	size_t	i, j;
	int	s;

	for (i = 0; i < k; i++) {
		const struct sim_view	*ref = &ops[i].dst;

		if (!sim_opt_view_injective(ref))
			return (false);
		for (j = 0; j < k; j++) {
			const struct sim_op	*c = &ops[j];

			if (!sim_opt_view_same(&c->dst, ref) &&
			    c->dst.tensor == ref->tensor)
				return (false);
			for (s = 0; s < c->nsrc; s++)
				if (!c->src[s].scalar &&
				    c->src[s].v.tensor == ref->tensor &&
				    !sim_opt_view_same(&c->src[s].v, ref))
					return (false);
		}
	}
	return (true);
}

void
sim_opt_fuse(struct sim_op *ops, size_t n)
{
	size_t	i = 0, k;

	while (i < n) {
		if (!sim_opt_fusable(&ops[i])) {
			i++;
			continue;
		}
		for (k = 1; i + k < n && k < SIM_FUSE_MAX; k++) {
			const struct sim_op	*c = &ops[i + k];

			if (!sim_opt_fusable(c) || c->rank != ops[i].rank ||
			    memcmp(c->shape, ops[i].shape,
			    sizeof(c->shape)) != 0 ||
			    !sim_opt_group_ok(&ops[i], k + 1))
				break;
		}
		if (k > 1)
			ops[i].fuse = k;
		i += k;
	}
}

/* ------------------------------------------------------------ dead fills */

/* op reads tensor t (a source, or matmul's accumulated dst). */
static bool
sim_opt_reads(const struct sim_op *op, uint32_t t)
{
	int	i;

	for (i = 0; i < op->nsrc; i++)
		if (!op->src[i].scalar && op->src[i].v.tensor == t)
			return (true);
	return (op->kind == NKIR__V1__OP_KIND__OP_MATMUL && op->accumulate &&
	    op->dst.tensor == t);
}

/* One execution of op writes every element of its dst tensor (unmasked,
 * bounds-checked at plan time, injective over as many elements as the
 * tensor has). */
static bool
sim_opt_overwrites(const struct sim_program *p, const struct sim_op *op)
{
	if (!op->has_dst || op->masked || op->opaque ||
	    op->kind == NKIR__V1__OP_KIND__OP_LOOP)
		return (false);
	return (op->dst.nelem == p->tensors[op->dst.tensor].nelem &&
	    sim_opt_view_injective(&op->dst));
}

/* Some op of the loop (or op itself) names tensor t. */
static bool
sim_opt_mentions(const struct sim_op *op, uint32_t t)
{
	size_t	i;

	if (op->kind == NKIR__V1__OP_KIND__OP_LOOP ||
	    op->kind == NKIR__V1__OP_KIND__OP_IF) {
		for (i = 0; i < op->nbody; i++)
			if (sim_opt_mentions(&op->body[i], t))
				return (true);
		for (i = 0; i < op->nelse; i++)
			if (sim_opt_mentions(&op->else_body[i], t))
				return (true);
		return (false);
	}
	return ((op->has_dst && op->dst.tensor == t) ||
	    sim_opt_reads(op, t));
}

void
sim_opt_dead_allocs(const struct sim_program *p, struct sim_op *ops, size_t n)
{
	size_t	i, j;

	for (i = 0; i < n; i++) {
		uint32_t	t = ops[i].dst.tensor;

		if (ops[i].kind != NKIR__V1__OP_KIND__OP_ALLOC ||
		    ops[i].masked)
			continue;
		for (j = i + 1; j < n; j++) {
			if (!sim_opt_mentions(&ops[j], t))
				continue;
			if (ops[j].kind != NKIR__V1__OP_KIND__OP_LOOP &&
			    !sim_opt_reads(&ops[j], t) &&
			    ops[j].dst.tensor == t &&
			    sim_opt_overwrites(p, &ops[j]))
				ops[i].skip = true;
			break;
		}
	}
}

/* Walk the ops in execution order (loops that never run skipped, skipped
 * allocs ignored); the first op to touch a tensor decides whether its
 * launch fill can be seen. seen[t]: decided. */
static void
sim_opt_first_touch(struct sim_program *p, const struct sim_op *ops, size_t n,
    uint8_t *seen)
{
	size_t	i;
	int	k;

	for (i = 0; i < n; i++) {
		const struct sim_op	*op = &ops[i];
		uint32_t		 t;

		if (op->kind == NKIR__V1__OP_KIND__OP_LOOP) {
			if (op->trips > 0)
				sim_opt_first_touch(p, op->body, op->nbody,
				    seen);
			continue;
		}
		if (op->kind == NKIR__V1__OP_KIND__OP_IF) {
			/* may not run: what it touches first keeps its fill */
			for (t = 0; t < p->ntensors; t++)
				if (sim_opt_mentions(op, t))
					seen[t] = 1;
			continue;
		}
		if (op->skip)
			continue;
		for (k = 0; k < op->nsrc; k++)
			if (!op->src[k].scalar)
				seen[op->src[k].v.tensor] = 1;
		if (!op->has_dst)
			continue;
		t = op->dst.tensor;
		if (seen[t])
			continue;
		seen[t] = 1;
		if (!sim_opt_reads(op, t) && sim_opt_overwrites(p, op))
			p->tensors[t].nofill = true;
	}
}

/* ------------------------------------------------------------ copy elision */

/* Ops (not skipped) that write tensor t in ops[0 .. n-1], loops included. */
static uint64_t
sim_opt_nwrites(const struct sim_op *ops, size_t n, uint32_t t)
{
	uint64_t	c = 0;
	size_t		i;

	for (i = 0; i < n; i++) {
		if (ops[i].kind == NKIR__V1__OP_KIND__OP_LOOP ||
		    ops[i].kind == NKIR__V1__OP_KIND__OP_IF)
			c += sim_opt_nwrites(ops[i].body, ops[i].nbody, t) +
			    sim_opt_nwrites(ops[i].else_body, ops[i].nelse, t);
		else if (!ops[i].skip && ops[i].has_dst &&
		    ops[i].dst.tensor == t)
			c++;
	}
	return (c);
}

/* The load/store reads and writes the same linear element offsets, with
 * no loop-variable or program-id term. */
static bool
sim_opt_identity(const struct sim_op *op)
{
	const struct sim_lin	*d = &op->dst.off, *s = &op->src[0].v.off;
	int			 a;

	if (d->nt || s->nt || d->c != s->c ||
	    op->dst.rank != op->src[0].v.rank)
		return (false);
	for (a = 0; a < op->dst.rank; a++)
		if (d->ax[a] != s->ax[a])
			return (false);
	return (true);
}

/*
 * Copy elision, top-level body only (each op there runs exactly once per
 * program, in order):
 * - a load that is the only write of an fp32 tile, overwrites it whole as
 *   its first touch, element for element from an fp32 HBM tensor no op
 *   writes: the tile is that tensor's memory and the load does nothing;
 * - a store that is the only write of an fp32 HBM tensor no op reads,
 *   copying an fp32 tile of the same size element for element, with no
 *   write to the tile after it: the tile lives in the tensor's memory (so
 *   the tensor ends holding the tile's values at the store) and the store
 *   does nothing.
 */
static void
sim_opt_elide(struct sim_program *p, struct sim_op *ops, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		struct sim_op		*op = &ops[i];
		struct sim_tinfo	*tile, *hbm;
		uint32_t		 tt, ht;

		if ((op->kind != NKIR__V1__OP_KIND__OP_LOAD &&
		    op->kind != NKIR__V1__OP_KIND__OP_STORE) || op->masked ||
		    op->skip || op->src[0].scalar || !sim_opt_identity(op) ||
		    !sim_opt_overwrites(p, op))
			continue;
		if (op->kind == NKIR__V1__OP_KIND__OP_LOAD) {
			tt = op->dst.tensor;
			ht = op->src[0].v.tensor;
		} else {
			tt = op->src[0].v.tensor;
			ht = op->dst.tensor;
		}
		tile = &p->tensors[tt];
		hbm = &p->tensors[ht];
		if (!tile->chip || hbm->chip || tile->alias >= 0 ||
		    tile->dtype != SIM_DT_FLOAT32 ||
		    hbm->dtype != SIM_DT_FLOAT32)
			continue;
		if (op->kind == NKIR__V1__OP_KIND__OP_LOAD) {
			if (!tile->nofill || hbm->written ||
			    sim_opt_nwrites(p->body, p->nbody, tt) != 1)
				continue;
		} else {
			if (hbm->kind != NKIR__V1__TENSOR_KIND__TENSOR_HBM ||
			    hbm->read || tile->nelem != hbm->nelem ||
			    sim_opt_nwrites(p->body, p->nbody, ht) != 1 ||
			    sim_opt_nwrites(ops + i + 1, n - i - 1, tt) != 0)
				continue;
		}
		tile->alias = ht;
		op->skip = true;
	}
}

int
sim_opt_program(struct sim_program *p)
{
	uint8_t	*seen;

	if ((seen = calloc(p->ntensors + 1, 1)) == NULL)
		return (SIM_ENOMEM);
	sim_opt_first_touch(p, p->body, p->nbody, seen);
	free(seen);
	/* programs side by side each have their own tiles: none may live
	 * in an HBM tensor */
	if (!p->collective)
		sim_opt_elide(p, p->body, p->nbody);
	return (0);
}
