/* sim_opt.c: the planner's analyses that make a program run faster without changing what it computes: fused groups, dead fills, copy elision, loads forwarded in place, loops of matmuls run as one. */
/* Floor 1: reads and marks a planned program; calls nothing else in sim/. */
#include <math.h>
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

/* Offsets a and b have the same constant and the same terms (their axis
 * steps are the callers' to compare). */
static bool
sim_opt_terms_same(const struct sim_lin *a, const struct sim_lin *b)
{
	uint32_t	k;

	if (a->c != b->c || a->nt != b->nt)
		return (false);
	for (k = 0; k < a->nt; k++)
		if (a->t[k].kind != b->t[k].kind ||
		    a->t[k].index != b->t[k].index ||
		    a->t[k].coef != b->t[k].coef)
			return (false);
	return (true);
}

bool
sim_opt_view_same(const struct sim_view *a, const struct sim_view *b)
{
	int	i;

	if (a->tensor != b->tensor || a->rank != b->rank ||
	    !sim_opt_terms_same(&a->off, &b->off))
		return (false);
	for (i = 0; i < a->rank; i++)
		if (a->shape[i] != b->shape[i] || a->off.ax[i] != b->off.ax[i])
			return (false);
	return (true);
}

/* Every access of ops[0 .. k-1] to a tensor that one of them writes
 * through view ref agrees with ref: agree(access, ref). */
static bool
sim_opt_group_agrees(const struct sim_op *ops, size_t k,
    bool (*agree)(const struct sim_view *, const struct sim_view *))
{
	size_t	i, j;
	int	s;

	for (i = 0; i < k; i++) {
		const struct sim_view	*ref = &ops[i].dst;

		for (j = 0; j < k; j++) {
			const struct sim_op	*c = &ops[j];

			if (c->dst.tensor == ref->tensor &&
			    !agree(&c->dst, ref))
				return (false);
			for (s = 0; s < c->nsrc; s++)
				if (!c->src[s].scalar &&
				    c->src[s].v.tensor == ref->tensor &&
				    !agree(&c->src[s].v, ref))
					return (false);
		}
	}
	return (true);
}

sim_i128
sim_opt_lin_coef(const struct sim_lin *l, uint32_t kind, uint32_t index)
{
	sim_i128	c = 0;
	uint32_t	i;

	for (i = 0; i < l->nt; i++)
		if (l->t[i].kind == kind && l->t[i].index == index)
			c += l->t[i].coef;
	return (c);
}

/* Axes of n steps st[] (any sign) and extents ext[] (last index) reach
 * distinct offsets from distinct points: sorted by |step|, each step
 * exceeds the span of the smaller ones. Sorts st[] and ext[]. */
static bool
sim_opt_axes_injective(sim_i128 *st, sim_i128 *ext, int n)
{
	sim_i128	span = 0, t;
	int		i, j;

	for (i = 0; i < n; i++)
		if (st[i] < 0)
			st[i] = -st[i];
	for (i = 1; i < n; i++)		/* insertion sort by step */
		for (j = i; j > 0 && st[j] < st[j - 1]; j--) {
			t = st[j];
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

/* Append the axes of v that move (more than one index) to st[] and ext[]
 * at *n: each one's step and last index. */
static void
sim_opt_view_axes(const struct sim_view *v, sim_i128 *st, sim_i128 *ext,
    int *n)
{
	int	a;

	for (a = 0; a < v->rank; a++)
		if (v->shape[a] > 1) {
			st[*n] = v->off.ax[a];
			ext[(*n)++] = (sim_i128)v->shape[a] - 1;
		}
}

bool
sim_opt_view_injective(const struct sim_view *v)
{
	sim_i128	st[SIM_MAX_RANK], ext[SIM_MAX_RANK];
	int		n = 0;

	sim_opt_view_axes(v, st, ext, &n);
	return (sim_opt_axes_injective(st, ext, n));
}

/* Running ops[0 .. k-1] row by row in lockstep equals running them in
 * order when every tensor any of them writes is accessed by all of them
 * through one and the same injective view (row i touches only row i). */
static bool
sim_opt_group_ok(const struct sim_op *ops, size_t k)
{
	size_t	i;

	for (i = 0; i < k; i++)
		if (!sim_opt_view_injective(&ops[i].dst))
			return (false);
	return (sim_opt_group_agrees(ops, k, sim_opt_view_same));
}

/* A reduction along the last of two axes (a row's max, sum, mean, ...),
 * which may join a group of rows (sim_opt_group_rows_ok). */
static bool
sim_opt_row_reduce(const struct sim_op *op)
{
	return (op->kind == NKIR__V1__OP_KIND__OP_REDUCE && op->rank == 2 &&
	    op->axes == 2u && !op->masked && !op->skip && !op->opaque &&
	    op->nsrc == 1 && !op->src[0].scalar &&
	    op->src[0].v.tensor != op->dst.tensor && op->dst.rank <= 2);
}

/* View v's row i (axis-0 index i) lies in [c + A0 * i, c + A0 * i + A0)
 * of its tensor, A0 = ref's axis-0 step, with ref's offset terms. */
static bool
sim_opt_view_rows(const struct sim_view *v, const struct sim_view *ref)
{
	int64_t		a0 = ref->off.ax[0];
	sim_i128	ext = 0;
	int		a;

	if (v->tensor != ref->tensor || v->rank < 1 || v->rank > 2 ||
	    !sim_opt_terms_same(&v->off, &ref->off) ||
	    v->off.ax[0] != a0 || a0 <= 0)
		return (false);
	for (a = 1; a < v->rank; a++) {
		if (v->off.ax[a] < 0)
			return (false);
		ext += (sim_i128)v->off.ax[a] * (sim_i128)(v->shape[a] - 1);
	}
	return (ext < a0);
}

/* Running ops[0 .. k-1] (rank 2, one axis-0 extent, row lengths that may
 * differ, row reductions among them) row by row in lockstep equals
 * running them in order when every tensor any of them writes is accessed
 * by all of them in rows that do not overlap, row i of every access in
 * the same place (row i touches only what row i of the others does). */
static bool
sim_opt_group_rows_ok(const struct sim_op *ops, size_t k)
{
	size_t	i;

	for (i = 0; i < k; i++)
		if (ops[i].rank != 2 || ops[i].shape[0] != ops[0].shape[0])
			return (false);
	return (sim_opt_group_agrees(ops, k, sim_opt_view_rows));
}

/* ops[0 .. k-1] may run as a group: one iteration space and one view of
 * each tensor written, or rows of rank 2 (sim_opt_group_rows_ok). */
static bool
sim_opt_group_fits(const struct sim_op *ops, size_t k)
{
	bool	same = true, reduce = false;
	size_t	i;

	for (i = 0; i < k; i++) {
		if (!sim_opt_fusable(&ops[i]) && !sim_opt_row_reduce(&ops[i]))
			return (false);
		reduce = reduce || ops[i].kind == NKIR__V1__OP_KIND__OP_REDUCE;
		same = same && ops[i].rank == ops[0].rank &&
		    memcmp(ops[i].shape, ops[0].shape,
		    sizeof(ops[0].shape)) == 0;
	}
	if (same && !reduce && sim_opt_group_ok(ops, k))
		return (true);
	return (sim_opt_group_rows_ok(ops, k));
}

void
sim_opt_fuse(struct sim_op *ops, size_t n)
{
	size_t	i = 0, k;

	while (i < n) {
		if (!sim_opt_fusable(&ops[i]) &&
		    !sim_opt_row_reduce(&ops[i])) {
			i++;
			continue;
		}
		for (k = 1; i + k < n && k < SIM_FUSE_MAX; k++)
			if (!sim_opt_group_fits(&ops[i], k + 1))
				break;
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
	return ((op->kind == NKIR__V1__OP_KIND__OP_MATMUL ||
	    op->kind == NKIR__V1__OP_KIND__OP_MATMUL_MX) && op->accumulate &&
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

/* ------------------------------------------------------------ forwarding */

/* Ops of ops[0 .. n-1] (loops and branches included) that read tensor t
 * (*rd) and that write it (*wr). */
static void
sim_opt_count(const struct sim_op *ops, size_t n, uint32_t t, uint64_t *rd,
    uint64_t *wr)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (ops[i].kind == NKIR__V1__OP_KIND__OP_LOOP ||
		    ops[i].kind == NKIR__V1__OP_KIND__OP_IF) {
			sim_opt_count(ops[i].body, ops[i].nbody, t, rd, wr);
			sim_opt_count(ops[i].else_body, ops[i].nelse, t, rd,
			    wr);
			continue;
		}
		if (sim_opt_reads(&ops[i], t))
			(*rd)++;
		if (ops[i].has_dst && ops[i].dst.tensor == t)
			(*wr)++;
	}
}

/* An fp32 tile of its own memory (not elided into an HBM tensor). */
static bool
sim_opt_plain_tile(const struct sim_program *p, uint32_t t)
{
	const struct sim_tinfo	*ti = &p->tensors[t];

	return (ti->chip && ti->alias < 0 && ti->dtype == SIM_DT_FLOAT32);
}

/* An fp32 HBM tensor, accessed by v with a unit stride along its last
 * axis (so a row of it is a row of floats in place). */
static bool
sim_opt_plain_hbm(const struct sim_program *p, const struct sim_view *v)
{
	const struct sim_tinfo	*ti = &p->tensors[v->tensor];

	return (!ti->chip && ti->dtype == SIM_DT_FLOAT32 &&
	    v->off.ax[v->rank - 1] == 1);
}

/* Some op of the group writes (wr) or reads tensor t. */
static bool
sim_opt_group_has(const struct sim_op *g, size_t k, uint32_t t, bool wr)
{
	size_t	i;

	for (i = 0; i < k; i++)
		if (wr ? (g[i].has_dst && g[i].dst.tensor == t) :
		    sim_opt_reads(&g[i], t))
			return (true);
	return (false);
}

/*
 * In a fused group g[0 .. k-1], a load into a tile that no op outside
 * the group touches, which only later ops of the group read: they read
 * its fp32 HBM row in place and the load does nothing (the tile is never
 * written; nothing could see it).
 */
static void
sim_opt_forward_loads(const struct sim_program *p, struct sim_op *g,
    size_t k)
{
	uint64_t	rd, wr, later;
	uint32_t	t;
	size_t		j, m;
	bool		other;
	int		s;

	for (j = 0; j < k; j++) {
		if (g[j].kind != NKIR__V1__OP_KIND__OP_LOAD ||
		    g[j].src[0].scalar || g[j].fwd)
			continue;
		t = g[j].dst.tensor;
		if (!sim_opt_plain_tile(p, t) ||
		    !sim_opt_plain_hbm(p, &g[j].src[0].v) ||
		    sim_opt_group_has(g, k, g[j].src[0].v.tensor, true))
			continue;
		rd = wr = later = 0;
		other = false;
		sim_opt_count(p->body, p->nbody, t, &rd, &wr);
		for (m = j + 1; m < k; m++) {
			if (!sim_opt_reads(&g[m], t))
				continue;
			later++;
			for (s = 0; s < g[m].nsrc; s++)
				other = other || (!g[m].src[s].scalar &&
				    g[m].src[s].v.tensor == t &&
				    !sim_opt_view_same(&g[m].src[s].v,
				    &g[j].dst));
		}
		if (wr != 1 || rd != later || later == 0 || other)
			continue;
		g[j].fwd = true;
		for (m = j + 1; m < k; m++)
			for (s = 0; s < g[m].nsrc; s++)
				if (!g[m].src[s].scalar &&
				    g[m].src[s].v.tensor == t)
					g[m].fwd_src[s] = (uint8_t)(j + 1);
	}
}

/*
 * In a fused group, a store of a tile that one earlier op of the group
 * computes (element-wise arithmetic) and nothing else reads or writes,
 * into an fp32 HBM tensor no op of the group reads or otherwise writes:
 * that op computes its row in the HBM row and the store does nothing.
 */
static void
sim_opt_forward_stores(const struct sim_program *p, struct sim_op *g,
    size_t k)
{
	uint64_t	rd, wr;
	uint32_t	t, h;
	size_t		j, m;

	for (j = 0; j < k; j++) {
		if (g[j].kind != NKIR__V1__OP_KIND__OP_STORE ||
		    g[j].src[0].scalar || g[j].src[0].v.off.ax[
		    g[j].src[0].v.rank - 1] == 0)
			continue;
		t = g[j].src[0].v.tensor;
		h = g[j].dst.tensor;
		if (!sim_opt_plain_tile(p, t) ||
		    !sim_opt_plain_hbm(p, &g[j].dst) ||
		    sim_opt_group_has(g, k, h, false))
			continue;
		rd = wr = 0;
		sim_opt_count(p->body, p->nbody, t, &rd, &wr);
		if (rd != 1 || wr != 1)
			continue;
		for (m = 0; m < j; m++)
			if (g[m].has_dst && g[m].dst.tensor == t)
				break;
		if (m == j || g[m].fwd_dst != 0 ||
		    !sim_opt_view_same(&g[m].dst, &g[j].src[0].v) ||
		    g[m].shape[g[m].rank - 1] != g[j].shape[g[j].rank - 1])
			continue;
		switch (g[m].kind) {
		case NKIR__V1__OP_KIND__OP_COPY:
		case NKIR__V1__OP_KIND__OP_TENSOR_TENSOR:
		case NKIR__V1__OP_KIND__OP_ACTIVATION:
		case NKIR__V1__OP_KIND__OP_SELECT:
			break;
		default:
			continue;
		}
		rd = wr = 0;
		sim_opt_count(g, k, h, &rd, &wr);
		if (wr != 1)
			continue;
		g[m].fwd_dst = (uint8_t)(j + 1);
		g[j].fwd = true;
	}
}

/* ------------------------------------------------------------ matmul */

/* Where an op sits: the loops around it, outermost first, and its index
 * in each body from the program's down (i[depth]: in the innermost). */
struct sim_opt_at {
	const struct sim_op	*loop[SIM_DEPTH_MAX];
	size_t			 i[SIM_DEPTH_MAX + 1];
	int			 depth;
};

/* OP_ALLOCs of tensor t in ops[0 .. n-1], loops and branches included:
 * how many, each marked skip when mark is set. */
static uint64_t
sim_opt_fills(struct sim_op *ops, size_t n, uint32_t t, bool mark)
{
	uint64_t	k = 0;
	size_t		i;

	for (i = 0; i < n; i++) {
		k += sim_opt_fills(ops[i].body, ops[i].nbody, t, mark);
		k += sim_opt_fills(ops[i].else_body, ops[i].nelse, t, mark);
		if (ops[i].kind != NKIR__V1__OP_KIND__OP_ALLOC ||
		    ops[i].dst.tensor != t)
			continue;
		k++;
		if (mark)
			ops[i].skip = true;
	}
	return (k);
}

/* Call fn on each op of ops[0 .. n-1] other than a loop or a branch, in
 * order, descending into loops (not branches), with where it sits in *at,
 * until fn returns true: that op (*at left where it sits), or NULL. */
static struct sim_op *
sim_opt_walk(struct sim_op *ops, size_t n, struct sim_opt_at *at,
    bool (*fn)(struct sim_op *, const struct sim_opt_at *, void *),
    void *arg)
{
	struct sim_op	*o;
	size_t		 i;

	for (i = 0; i < n; i++) {
		at->i[at->depth] = i;
		if (ops[i].kind == NKIR__V1__OP_KIND__OP_LOOP) {
			if (at->depth == SIM_DEPTH_MAX)
				continue;
			at->loop[at->depth++] = &ops[i];
			o = sim_opt_walk(ops[i].body, ops[i].nbody, at, fn,
			    arg);
			if (o != NULL)
				return (o);
			at->depth--;
		} else if (ops[i].kind != NKIR__V1__OP_KIND__OP_IF &&
		    fn(&ops[i], at, arg))
			return (&ops[i]);
	}
	return (NULL);
}

/* sim_opt_walk: op writes tensor *arg, and is not an OP_ALLOC. */
static bool
sim_opt_writes_cb(struct sim_op *op, const struct sim_opt_at *at, void *arg)
{
	return (op->kind != NKIR__V1__OP_KIND__OP_ALLOC && op->has_dst &&
	    op->dst.tensor == *(const uint32_t *)arg);
}

/* l has a term of an index function's slot (i % 2), which no rule here
 * reasons about. */
static bool
sim_opt_lin_slots(const struct sim_program *p, const struct sim_lin *l)
{
	uint32_t	k;

	for (k = 0; k < l->nt; k++)
		if (l->t[k].kind == NKIR__V1__TERM_KIND__TERM_LOOP &&
		    l->t[k].index >= p->nloopvars)
			return (true);
	return (false);
}

/*
 * Load ld (below *la) writes a tile that matmul source view v (below
 * *ma) reads. Match the loops of ld that are not the matmul's (its nest)
 * with loops of the matmul of the same range (map[u] = w + 1 for their
 * variables) such that v, with each w read as its u, is the view ld
 * writes, injective over the nest: then each iteration of the matmul's
 * loops reads just what one iteration of the nest wrote, nothing else
 * writing it in between.
 */
static bool
sim_opt_array_maps(const struct sim_program *p, const struct sim_op *ld,
    const struct sim_opt_at *la, const struct sim_view *v,
    const struct sim_opt_at *ma, uint32_t *map)
{
	const struct sim_view	*dst = &ld->dst;
	const struct sim_op	*L, *M;
	sim_i128		 st[SIM_MAX_RANK + SIM_DEPTH_MAX];
	sim_i128		 ext[SIM_MAX_RANK + SIM_DEPTH_MAX], cu;
	uint32_t		 k, w;
	bool			 used[SIM_DEPTH_MAX] = { false };
	int			 c, j, m, n = 0;

	for (c = 0; c < la->depth && c < ma->depth &&
	    la->loop[c] == ma->loop[c]; c++)
		;
	if (la->i[c] >= ma->i[c] || dst->rank != v->rank ||
	    dst->off.c != v->off.c || sim_opt_lin_slots(p, &dst->off) ||
	    sim_opt_lin_slots(p, &v->off))
		return (false);
	for (j = 0; j < dst->rank; j++)
		if (dst->shape[j] != v->shape[j] ||
		    dst->off.ax[j] != v->off.ax[j])
			return (false);
	sim_opt_view_axes(dst, st, ext, &n);
	for (j = c; j < la->depth; j++) {
		L = la->loop[j];
		cu = sim_opt_lin_coef(&dst->off, NKIR__V1__TERM_KIND__TERM_LOOP,
		    L->var);
		for (m = c; m < ma->depth; m++) {
			M = ma->loop[m];
			if (!used[m] && M->start == L->start &&
			    M->step == L->step && M->trips == L->trips &&
			    sim_opt_lin_coef(&v->off,
			    NKIR__V1__TERM_KIND__TERM_LOOP, M->var) == cu)
				break;
		}
		if (cu == 0 || m == ma->depth)
			return (false);
		used[m] = true;
		map[L->var] = ma->loop[m]->var + 1;
		if (L->trips > 1) {
			st[n] = cu * L->step;
			ext[n++] = (sim_i128)L->trips - 1;
		}
	}
	/* every other term the same in both */
	for (k = 0; k < v->off.nt; k++) {
		const struct sim_term	*tm = &v->off.t[k];

		for (j = c; j < ma->depth && !(used[j] &&
		    tm->kind == NKIR__V1__TERM_KIND__TERM_LOOP &&
		    tm->index == ma->loop[j]->var); j++)
			;
		if (j == ma->depth && sim_opt_lin_coef(&v->off, tm->kind,
		    tm->index) != sim_opt_lin_coef(&dst->off, tm->kind,
		    tm->index))
			return (false);
	}
	for (k = 0; k < dst->off.nt; k++) {
		const struct sim_term	*tm = &dst->off.t[k];

		w = tm->kind == NKIR__V1__TERM_KIND__TERM_LOOP ?
		    map[tm->index] : 0;
		if (w == 0 && sim_opt_lin_coef(&v->off, tm->kind,
		    tm->index) != sim_opt_lin_coef(&dst->off, tm->kind,
		    tm->index))
			return (false);
	}
	return (sim_opt_axes_injective(st, ext, n));
}

/* Read loop variable u as map[u] - 1 wherever map[u] is set, in l. */
static void
sim_opt_lin_rename(struct sim_lin *l, const uint32_t *map)
{
	uint32_t	k;

	for (k = 0; k < l->nt; k++)
		if (l->t[k].kind == NKIR__V1__TERM_KIND__TERM_LOOP &&
		    map[l->t[k].index] != 0)
			l->t[k].index = map[l->t[k].index] - 1;
}

/*
 * A source of matmul mm (below *ma) that is an fp32 tile, or tile array,
 * which one load alone fills, in loops or not, from an fp32 HBM tensor
 * nothing writes, and which mm alone reads, each element as the load
 * wrote it (sim_opt_array_maps): mm reads the HBM rows in place, as BLAS
 * can through a strided view, and the load (and any fill of the tile)
 * does nothing. A tiled matmul's loads were a third of its time, copying
 * every tile once more than numpy does. The load's view becomes mm's,
 * its loop variables renamed to mm's.
 */
static void
sim_opt_forward_matmul(struct sim_program *p, struct sim_op *mm,
    const struct sim_opt_at *ma, uint32_t *map)
{
	struct sim_opt_at	 la;
	struct sim_op		*ld;
	struct sim_view		*hv;
	uint64_t		 rd, wr;
	uint32_t		 t;
	int			 s, d;

	if (mm->masked || (!mm->src[0].scalar && !mm->src[1].scalar &&
	    mm->src[0].v.tensor == mm->src[1].v.tensor))
		return;
	for (s = 0; s < 2; s++) {
		if (mm->src[s].scalar || mm->src[s].v.nmask ||
		    !sim_opt_plain_tile(p, t = mm->src[s].v.tensor))
			continue;
		rd = wr = 0;
		sim_opt_count(p->body, p->nbody, t, &rd, &wr);
		if (rd != 1 || wr != 1 + sim_opt_fills(p->body, p->nbody, t,
		    false))
			continue;
		la.depth = 0;
		ld = sim_opt_walk(p->body, p->nbody, &la, sim_opt_writes_cb,
		    &t);
		if (ld == NULL)
			continue;
		hv = &ld->src[0].v;
		if (ld->kind != NKIR__V1__OP_KIND__OP_LOAD || ld->masked ||
		    ld->skip || ld->fwd || ld->src[0].scalar || hv->nmask ||
		    !sim_opt_plain_hbm(p, hv) || hv->rank != ld->dst.rank ||
		    memcmp(hv->shape, ld->dst.shape, sizeof hv->shape) != 0 ||
		    sim_opt_lin_slots(p, &hv->off))
			continue;
		rd = wr = 0;
		sim_opt_count(p->body, p->nbody, hv->tensor, &rd, &wr);
		memset(map, 0, p->nloopvars * sizeof *map);
		if (wr != 0 ||
		    !sim_opt_array_maps(p, ld, &la, &mm->src[s].v, ma, map))
			continue;
		sim_opt_lin_rename(&hv->off, map);
		for (d = 0; d < hv->ndim; d++)
			sim_opt_lin_rename(&hv->dim[d], map);
		mm->src[s].v = *hv;
		ld->skip = true;
		(void)sim_opt_fills(p->body, p->nbody, t, true);
	}
}

/* ops[i] has no effect: skipped, or a loop or branch of such ops. */
static bool
sim_opt_noop(const struct sim_op *op)
{
	size_t	i;

	if (op->kind != NKIR__V1__OP_KIND__OP_LOOP &&
	    op->kind != NKIR__V1__OP_KIND__OP_IF)
		return (op->skip);
	for (i = 0; i < op->nbody; i++)
		if (!sim_opt_noop(&op->body[i]))
			return (false);
	for (i = 0; i < op->nelse; i++)
		if (!sim_opt_noop(&op->else_body[i]))
			return (false);
	return (true);
}

/* The first of the fused group of ops[0 .. n-1] that holds ops[i], or n
 * if none does. */
static size_t
sim_opt_group_of(const struct sim_op *ops, size_t n, size_t i)
{
	size_t	g;

	for (g = 0; g <= i; g++)
		if (ops[g].fuse > 1 && g + ops[g].fuse > i)
			return (g);
	return (n);
}

/* The ops of a loop's body that do something: up to two, at w[0] and
 * w[1] (indices plus one, 0: none); false if more. */
static bool
sim_opt_working(const struct sim_op *loop, size_t w[2])
{
	size_t	i, k = 0;

	w[0] = w[1] = 0;
	for (i = 0; i < loop->nbody; i++) {
		if (sim_opt_noop(&loop->body[i]))
			continue;
		if (k == 2)
			return (false);
		w[k++] = i + 1;
	}
	return (k > 0);
}

/* op is an unmasked fill of +0.0. */
static bool
sim_opt_fills_zero(const struct sim_op *op)
{
	return (op->kind == NKIR__V1__OP_KIND__OP_ALLOC && !op->masked &&
	    op->value == 0.0f && !signbit(op->value));
}

/* ops[i] is an unmasked fill of +0.0 of its own (in no fused group). */
static bool
sim_opt_zero_fill(const struct sim_op *ops, size_t n, size_t i)
{
	return (sim_opt_fills_zero(&ops[i]) &&
	    sim_opt_group_of(ops, n, i) == n);
}

/* op is a matmul BLAS can run on its views in place: unmasked, fp32-rank-2
 * views of unit inner stride, no source its dst. */
static bool
sim_opt_gemm_views(const struct sim_program *p, const struct sim_op *op)
{
	const struct sim_view	*v;
	int			 s;

	if (op->kind != NKIR__V1__OP_KIND__OP_MATMUL || op->masked)
		return (false);
	for (s = 0; s < 3; s++) {
		if (s < 2 && op->src[s].scalar)
			return (false);
		v = s < 2 ? &op->src[s].v : &op->dst;
		if (v->nmask || v->rank != 2 || v->off.ax[1] != 1 ||
		    v->off.ax[0] > INT32_MAX || sim_opt_lin_slots(p, &v->off) ||
		    (s < 2 && v->tensor == op->dst.tensor))
			return (false);
	}
	return (true);
}

/* The matmul a loop that is one (sim_opt_gemm) runs. */
static const struct sim_op *
sim_opt_gemm_mm(const struct sim_op *op)
{
	while (op->kind == NKIR__V1__OP_KIND__OP_LOOP && op->gemm_at != 0)
		op = &op->body[op->gemm_at - 1];
	return (op);
}

/* sim_opt_walk: op is an OP_ALLOC of tensor *arg. */
static bool
sim_opt_fills_cb(struct sim_op *op, const struct sim_opt_at *at, void *arg)
{
	return (op->kind == NKIR__V1__OP_KIND__OP_ALLOC &&
	    op->dst.tensor == *(const uint32_t *)arg);
}

/*
 * ops[c] (in the body *at holds, inside the loops at->loop[]) adds a
 * tile t whole to slice R of a tile r and writes R (`res[i, j] += acc`),
 * r's only other write a fill of +0.0 of all of it that runs before, in
 * a body around this one, and R is injective over the loops between: R
 * is zero when the add reads it, and the add is a copy of t. Then the
 * store of R at ops[s] (the next op naming r) passes t on as a copy
 * would; returns s (*fill: r's fill, which nothing needs once the add
 * and the store are gone), or n if this is not so.
 */
static size_t
sim_opt_add_copy(struct sim_program *p, struct sim_op *ops, size_t n,
    size_t c, const struct sim_view *tv, const struct sim_opt_at *at,
    struct sim_op **fill)
{
	const struct sim_op	*add = &ops[c];
	const struct sim_view	*R = &add->dst;
	struct sim_opt_at	 fa;
	struct sim_op		*rf;
	sim_i128		 st[SIM_MAX_RANK + SIM_DEPTH_MAX];
	sim_i128		 ext[SIM_MAX_RANK + SIM_DEPTH_MAX];
	uint64_t		 rd = 0, wr = 0;
	uint32_t		 r = R->tensor;
	size_t			 s;
	int			 d, k = 0;

	if (add->kind != NKIR__V1__OP_KIND__OP_TENSOR_TENSOR ||
	    add->alu != NKIR__V1__ALU_OP__ALU_ADD || add->nsrc != 2 ||
	    add->masked || add->src[0].scalar || add->src[1].scalar ||
	    !sim_opt_plain_tile(p, r) || r == tv->tensor ||
	    !((sim_opt_view_same(&add->src[0].v, R) &&
	    sim_opt_view_same(&add->src[1].v, tv)) ||
	    (sim_opt_view_same(&add->src[1].v, R) &&
	    sim_opt_view_same(&add->src[0].v, tv))) ||
	    memcmp(R->shape, tv->shape, sizeof R->shape) != 0 ||
	    sim_opt_lin_slots(p, &R->off))
		return (n);
	for (s = c + 1; s < n && !sim_opt_mentions(&ops[s], r); s++)
		;
	sim_opt_count(p->body, p->nbody, r, &rd, &wr);
	fa.depth = 0;
	rf = sim_opt_walk(p->body, p->nbody, &fa, sim_opt_fills_cb, &r);
	if (s == n || ops[s].kind != NKIR__V1__OP_KIND__OP_STORE ||
	    ops[s].src[0].scalar || !sim_opt_view_same(&ops[s].src[0].v, R) ||
	    rd != 2 || wr != 2 || rf == NULL || fa.depth > at->depth ||
	    !sim_opt_fills_zero(rf) || !sim_opt_overwrites(p, rf))
		return (n);
	/* the fill's body holds the add's, the fill first */
	for (d = 0; d < fa.depth; d++)
		if (fa.loop[d] != at->loop[d])
			return (n);
	if (fa.i[d] >= (d == at->depth ? c : at->i[d]))
		return (n);
	sim_opt_view_axes(R, st, ext, &k);
	for (; d < at->depth; d++)
		if (at->loop[d]->trips > 1) {
			st[k] = sim_opt_lin_coef(&R->off,
			    NKIR__V1__TERM_KIND__TERM_LOOP, at->loop[d]->var) *
			    at->loop[d]->step;
			ext[k++] = (sim_i128)at->loop[d]->trips - 1;
		}
	if (!sim_opt_axes_injective(st, ext, k))
		return (n);
	*fill = rf;
	return (s);
}

/*
 * In a body: a zeroed fp32 tile t (ops[a], a fill of +0.0 of all of it)
 * that a matmul accumulates into (the next op naming t: the matmul, or a
 * loop of it), then passed whole to a store of an fp32 HBM block: by a
 * copy writing the block's rows (sim_opt_forward_stores), or by an add to
 * a zeroed slice that the store then writes (sim_opt_add_copy); nothing
 * else reading t or naming that HBM tensor in between. The fill and the
 * matmul write the HBM block instead; the copy (or add) and the store do
 * nothing. Every tiled matmul ends so (PSUM, tensor_copy, store).
 */
static void
sim_opt_psum_hbm(struct sim_program *p, struct sim_op *ops, size_t n,
    const struct sim_opt_at *at)
{
	struct sim_op		*fill, *w, *mm, *cp, *st, *rf;
	const struct sim_view	*h;
	uint64_t		 rd, wr;
	size_t			 a, m, c, g, j, k[2];
	uint32_t		 t;

	for (a = 0; a < n; a++) {
		fill = &ops[a];
		rf = NULL;
		t = fill->dst.tensor;
		if (!sim_opt_zero_fill(ops, n, a) ||
		    !sim_opt_plain_tile(p, t) || !sim_opt_overwrites(p, fill))
			continue;
		for (m = a + 1; m < n && !sim_opt_mentions(&ops[m], t); m++)
			;
		for (c = m + 1; c < n && !sim_opt_mentions(&ops[c], t); c++)
			;
		if (c >= n)
			continue;
		w = &ops[m];
		mm = w;
		if (w->kind == NKIR__V1__OP_KIND__OP_LOOP) {
			if (!sim_opt_working(w, k) || k[1] != 0)
				continue;
			mm = &w->body[k[0] - 1];
		}
		cp = &ops[c];
		if (!sim_opt_gemm_views(p, mm) || !mm->accumulate ||
		    !sim_opt_view_same(&mm->dst, &fill->dst))
			continue;
		rd = wr = 0;
		sim_opt_count(p->body, p->nbody, t, &rd, &wr);
		if (rd != 2 || wr != 2)
			continue;
		if (cp->kind == NKIR__V1__OP_KIND__OP_COPY) {
			g = sim_opt_group_of(ops, n, c);
			if (cp->src[0].scalar || cp->fwd_dst == 0 || g == n ||
			    !sim_opt_view_same(&cp->src[0].v, &fill->dst))
				continue;
			st = &ops[g + cp->fwd_dst - 1];
			if (st->kind != NKIR__V1__OP_KIND__OP_STORE || !st->fwd)
				continue;
		} else {
			if ((j = sim_opt_add_copy(p, ops, n, c, &fill->dst,
			    at, &rf)) == n)
				continue;
			st = &ops[j];
		}
		h = &st->dst;
		if (h->rank != 2 || h->nmask || !sim_opt_plain_hbm(p, h) ||
		    memcmp(h->shape, fill->dst.shape, sizeof h->shape) != 0 ||
		    h->off.ax[0] < (int64_t)h->shape[1])
			continue;
		for (j = a + 1; j < (size_t)(st - ops); j++)
			if (sim_opt_mentions(&ops[j], h->tensor))
				break;
		if (j < (size_t)(st - ops))
			continue;
		fill->dst = *h;
		mm->dst = *h;
		cp->skip = true;
		cp->fwd_dst = 0;
		st->skip = true;
		st->fwd = false;
		if (rf != NULL)
			rf->skip = true;	/* read by nothing now */
	}
}

/*
 * A loop that is one matmul: every iteration runs one (the body's other
 * ops do nothing), or a loop that is one, alone or after a fill of +0.0
 * of just its dst; and the loop runs once, or walks one axis of the
 * product:
 * - K: dst fixed, sources along their contraction axis, iteration i
 *   reading rows i*K .. i*K + K-1 of a longer one (k-major: the loop
 *   steps K rows; p-major: row p of iteration i is row p*trips + i), the
 *   matmul accumulating (no fill): one matmul trips times as deep, its
 *   result kept in registers instead of written back trips times;
 * - N: lhs fixed, rhs and dst along their columns by one tile's N;
 * - M: rhs fixed, dst along its rows and lhs along its M axis by M.
 * Then the loop is that one matmul (sim_op.gemm_*), as numpy would call
 * it. Sums over K run in another order than tile by tile: the same values
 * to fp32 rounding, the same bits on every run and thread count.
 */
static void
sim_opt_gemm(const struct sim_program *p, struct sim_op *loop)
{
	const struct sim_op	*w, *mm, *fill = NULL;
	const struct sim_view	*v;
	int64_t			 T = (int64_t)loop->trips, d[3], mnk[3], ld[3];
	int64_t			 kld[2], pld[2], K;
	size_t			 k[2];
	bool			 acc;
	int			 s, a;
	int			 mode = 3;	/* 1 k-major, 2 p-major */

	if (loop->nfns != 0 || T < 1 || T > INT32_MAX || loop->step <= 0 ||
	    !sim_opt_working(loop, k))
		return;
	w = &loop->body[k[1] != 0 ? k[1] - 1 : k[0] - 1];
	if (k[1] != 0)
		fill = &loop->body[k[0] - 1];
	mm = sim_opt_gemm_mm(w);
	if (!sim_opt_gemm_views(p, mm))
		return;
	if (w == mm) {
		mnk[0] = (int64_t)mm->src[0].v.shape[mm->transpose_x ? 1 : 0];
		mnk[1] = (int64_t)mm->src[1].v.shape[1];
		mnk[2] = (int64_t)mm->src[1].v.shape[0];
		ld[0] = mm->src[0].v.off.ax[0];
		ld[1] = mm->src[1].v.off.ax[0];
		ld[2] = mm->dst.off.ax[0];
		acc = mm->accumulate;
	} else {
		memcpy(mnk, w->gemm_mnk, sizeof mnk);
		memcpy(ld, w->gemm_ld, sizeof ld);
		acc = !w->gemm_overwrite;
	}
	if (fill != NULL) {
		/* the fill zeroes just what the matmul accumulates into */
		if (!sim_opt_zero_fill(loop->body, loop->nbody, k[0] - 1) ||
		    !acc || !sim_opt_view_same(&fill->dst, &mm->dst) ||
		    mnk[0] != (int64_t)mm->dst.shape[0] ||
		    mnk[1] != (int64_t)mm->dst.shape[1])
			return;
		acc = false;
	}
	for (s = 0; s < 3; s++) {
		v = s < 2 ? &mm->src[s].v : &mm->dst;
		d[s] = (int64_t)sim_opt_lin_coef(&v->off,
		    NKIR__V1__TERM_KIND__TERM_LOOP, loop->var) * loop->step;
	}
	if (T == 1)
		;	/* one iteration: the matmul inside as it is */
	else if (d[2] == 0 && d[0] > 0 && d[1] > 0) {
		/* K */
		if (w != mm || !acc)
			return;
		for (s = 0; s < 2; s++) {
			v = &mm->src[s].v;
			a = s == 0 && !mm->transpose_x;	/* [M, K] */
			K = (int64_t)v->shape[a];
			if (K > INT32_MAX / T)
				return;
			kld[s] = v->off.ax[0];
			pld[s] = d[s];
			if (a) {
				/* along a row, unit stride */
				if (d[s] != K || v->off.ax[0] < K * T)
					return;
				mode &= 1;
				continue;
			}
			if (d[s] != K * v->off.ax[0])
				mode &= ~1;
			if (v->off.ax[0] != d[s] * T ||
			    d[s] < (int64_t)v->shape[1])
				mode &= ~2;
		}
		if (mode == 0)
			return;
		for (s = 0; s < 2; s++)
			ld[s] = mode & 1 ? kld[s] : pld[s];
		mnk[2] *= T;
	} else if (d[0] == 0 && d[1] == mnk[1] && d[2] == mnk[1]) {
		/* N */
		if (mnk[1] > INT32_MAX / T || ld[1] < mnk[1] * T ||
		    ld[2] < mnk[1] * T)
			return;
		mnk[1] *= T;
	} else if (d[1] == 0 && d[2] == mnk[0] * ld[2] &&
	    d[0] == (mm->transpose_x ? mnk[0] : mnk[0] * ld[0])) {
		/* M */
		if (mnk[0] > INT32_MAX / T ||
		    (mm->transpose_x && ld[0] < mnk[0] * T))
			return;
		mnk[0] *= T;
	} else
		return;
	if (ld[0] > INT32_MAX || ld[1] > INT32_MAX)
		return;
	loop->gemm_at = (size_t)(w - loop->body) + 1;
	memcpy(loop->gemm_mnk, mnk, sizeof mnk);
	memcpy(loop->gemm_ld, ld, sizeof ld);
	loop->gemm_overwrite = !acc;
}

struct sim_opt_matmul_arg {
	struct sim_program	*p;
	uint32_t		*map;	/* per loop variable */
};

/* sim_opt_walk: forward the loads of each matmul. */
static bool
sim_opt_matmul_cb(struct sim_op *op, const struct sim_opt_at *at, void *arg)
{
	struct sim_opt_matmul_arg	*a = arg;

	if (op->kind == NKIR__V1__OP_KIND__OP_MATMUL)
		sim_opt_forward_matmul(a->p, op, at, a->map);
	return (false);
}

/* The matmul rules of ops[0 .. n-1], inner bodies first: PSUM tiles
 * passed to HBM (sim_opt_psum_hbm), then loops that are one matmul
 * (sim_opt_gemm). */
static void
sim_opt_gemms(struct sim_program *p, struct sim_op *ops, size_t n,
    struct sim_opt_at *at)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		at->i[at->depth] = i;
		if (ops[i].kind == NKIR__V1__OP_KIND__OP_LOOP &&
		    at->depth < SIM_DEPTH_MAX) {
			at->loop[at->depth++] = &ops[i];
			sim_opt_gemms(p, ops[i].body, ops[i].nbody, at);
			at->depth--;
		}
	}
	sim_opt_psum_hbm(p, ops, n, at);
	for (i = 0; i < n; i++)
		if (ops[i].kind == NKIR__V1__OP_KIND__OP_LOOP)
			sim_opt_gemm(p, &ops[i]);
}

static void
sim_opt_forward_body(const struct sim_program *p, struct sim_op *ops,
    size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (ops[i].kind == NKIR__V1__OP_KIND__OP_LOOP ||
		    ops[i].kind == NKIR__V1__OP_KIND__OP_IF) {
			sim_opt_forward_body(p, ops[i].body, ops[i].nbody);
			sim_opt_forward_body(p, ops[i].else_body,
			    ops[i].nelse);
			continue;
		}
		if (ops[i].fuse > 1 && ops[i].fuse < 256) {
			sim_opt_forward_loads(p, &ops[i], ops[i].fuse);
			sim_opt_forward_stores(p, &ops[i], ops[i].fuse);
			i += ops[i].fuse - 1;
		}
	}
}

int
sim_opt_forward(struct sim_program *p)
{
	struct sim_opt_at	 at;
	uint32_t		*map;

	if (p->collective)
		return (0);
	if ((map = calloc(p->nloopvars + 1, sizeof *map)) == NULL)
		return (SIM_ENOMEM);
	at.depth = 0;
	(void)sim_opt_walk(p->body, p->nbody, &at, sim_opt_matmul_cb,
	    &(struct sim_opt_matmul_arg){ p, map });
	free(map);
	sim_opt_forward_body(p, p->body, p->nbody);
	at.depth = 0;
	sim_opt_gemms(p, p->body, p->nbody, &at);
	return (0);
}
