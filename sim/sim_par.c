/* sim_par.c: the planner's proof of what may run side by side: independent programs of the grid and iterations of loops, ops whose rows split, and work estimates. */
/* Floor 1: reads and marks a planned program; calls sim_opt.c's view
 * predicates only. */
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/* Per-tensor state of a walk over a region's ops (sim_par_walk.st). */
#define SIM_PAR_READ	0x1
#define SIM_PAR_WRITTEN	0x2
#define SIM_PAR_SEEN	0x4	/* first touch decided */
#define SIM_PAR_FRESH	0x8	/* first touch overwrote it whole,
				 * reading nothing of it */

/*
 * One region: ops run for every value of a varying term (a loop variable,
 * or the program ids of the grid), each iteration in order. The walk
 * visits one iteration's ops in execution order.
 */
struct sim_par_walk {
	const struct sim_program	*p;
	uint8_t				*st;	/* per tensor */
	bool				 grid;	/* the region is the grid */
	uint32_t			 var;	/* else its loop variable */
	int64_t				 step;
	uint8_t				*inner;	/* loop variable bound in
						 * the region */
	int64_t				*vlo;	/* ... its range */
	int64_t				*vhi;
	const struct sim_view		**w;	/* writes of HBM, aliased
						 * tiles */
	size_t				 nw;
	size_t				 capw;
	bool				 ok;
};

static uint64_t
sim_par_add_sat(uint64_t a, uint64_t b)
{
	return (a + b < a ? UINT64_MAX : a + b);
}

static uint64_t
sim_par_mul_sat(uint64_t a, uint64_t b)
{
	if (a != 0 && b > UINT64_MAX / a)
		return (UINT64_MAX);
	return (a * b);
}

/* Element operations one execution of op costs, roughly (a loop: one
 * iteration of its body). */
static uint64_t
sim_par_op_work(const struct sim_op *op)
{
	uint64_t	w = 0;
	size_t		i;

	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_LOOP:
		for (i = 0; i < op->nbody; i++)
			w = sim_par_add_sat(w, sim_par_mul_sat(
			    op->body[i].kind == NKIR__V1__OP_KIND__OP_LOOP ?
			    op->body[i].trips : 1, op->body[i].par_work));
		return (w);
	case NKIR__V1__OP_KIND__OP_MATMUL:
		/* K * M * N multiply-adds, ~8 per element operation */
		return (sim_par_mul_sat(op->src[0].v.nelem,
		    op->src[1].v.shape[1]) / 8 + op->dst.nelem);
	default:
		if (op->skip)
			return (0);
		w = op->has_dst ? op->dst.nelem : 0;
		if (op->nsrc > 0 && !op->src[0].scalar &&
		    op->src[0].v.nelem > w)
			w = op->src[0].v.nelem;
		return (w);
	}
}

/* The kinds whose executors keep all their state in the run (its binds,
 * scratch and rows), so a copy of the run can execute them elsewhere: the
 * core kinds (1 .. 15) but device_print, whose text must come in
 * execution order, and loops (walked, not executed). Kinds added later
 * run in order until proven safe here. */
static bool
sim_par_kind_ok(int kind)
{
	return (kind >= NKIR__V1__OP_KIND__OP_ALLOC &&
	    kind <= NKIR__V1__OP_KIND__OP_BN_AGGR &&
	    kind != NKIR__V1__OP_KIND__OP_PRINT &&
	    kind != NKIR__V1__OP_KIND__OP_LOOP);
}

/* A tile with memory of its own in the run block (not an HBM tensor's
 * memory, see sim_tinfo.alias). */
static bool
sim_par_private(const struct sim_program *p, uint32_t t)
{
	return (p->tensors[t].chip && p->tensors[t].alias < 0);
}

static void
sim_par_push_write(struct sim_par_walk *w, const struct sim_view *v)
{
	const struct sim_view	**nw;
	size_t			  cap;

	if (w->nw == w->capw) {
		cap = w->capw ? 2 * w->capw : 16;
		nw = realloc(w->w, cap * sizeof(*nw));
		if (nw == NULL) {
			w->ok = false;
			return;
		}
		w->w = nw;
		w->capw = cap;
	}
	w->w[w->nw++] = v;
}

static void
sim_par_walk_ops(struct sim_par_walk *w, const struct sim_op *ops, size_t n)
{
	const struct sim_program	*p = w->p;
	size_t				 i;
	uint32_t			 t;
	int				 k;

	for (i = 0; i < n && w->ok; i++) {
		const struct sim_op	*op = &ops[i];

		if (op->kind == NKIR__V1__OP_KIND__OP_LOOP) {
			if (op->trips == 0)
				continue;	/* never runs */
			w->inner[op->var] = 1;
			w->vlo[op->var] = op->step > 0 ? op->start :
			    op->start + (int64_t)(op->trips - 1) * op->step;
			w->vhi[op->var] = op->step > 0 ? op->start +
			    (int64_t)(op->trips - 1) * op->step : op->start;
			sim_par_walk_ops(w, op->body, op->nbody);
			continue;
		}
		if (op->skip)
			continue;
		if (!sim_par_kind_ok(op->kind)) {
			w->ok = false;
			return;
		}
		for (k = 0; k < op->nsrc; k++) {
			if (op->src[k].scalar)
				continue;
			t = op->src[k].v.tensor;
			w->st[t] |= SIM_PAR_READ | SIM_PAR_SEEN;
		}
		if (!op->has_dst)
			continue;
		t = op->dst.tensor;
		if (op->kind == NKIR__V1__OP_KIND__OP_MATMUL && op->accumulate)
			w->st[t] |= SIM_PAR_READ | SIM_PAR_SEEN;
		if (!(w->st[t] & SIM_PAR_SEEN)) {
			w->st[t] |= SIM_PAR_SEEN;
			if (!op->masked &&
			    op->dst.nelem == p->tensors[t].nelem &&
			    sim_opt_view_injective(&op->dst))
				w->st[t] |= SIM_PAR_FRESH;
		}
		w->st[t] |= SIM_PAR_WRITTEN;
		if (!sim_par_private(p, t))
			sim_par_push_write(w, &op->dst);
	}
}

/* Term tm varies inside the region (an inner loop variable, or another
 * program id of the grid) rather than being fixed for all of it. */
static bool
sim_par_ranged(const struct sim_par_walk *w, const struct sim_term *tm)
{
	if (tm->kind == NKIR__V1__TERM_KIND__TERM_LOOP)
		return (w->inner[tm->index] != 0);
	return (w->grid);
}

/*
 * Dimension d separates the iterations of every write in w->w[0 .. n-1]
 * (all of one tensor): in each, index d is c + k * x + rest with the same
 * k for the varying term x (kind, index) of unit step `step`, terms fixed
 * for the whole region with the same coefficients in all, and the rest
 * (axes, terms varying inside the region) spanning less than |k * step|
 * over all of them. Then distinct iterations write disjoint slabs of d.
 */
static bool
sim_par_separates(const struct sim_par_walk *w, const struct sim_view **v,
    size_t n, int d, uint32_t kind, uint32_t index, int64_t step)
{
	const struct sim_program	*p = w->p;
	const struct sim_lin		*l0 = &v[0]->dim[d], *l;
	sim_i128			 k, lo = 0, hi = 0, x, y, vl, vh;
	size_t				 j;
	uint32_t			 i;
	int				 a;

	k = sim_opt_lin_coef(l0, kind, index);
	if (k == 0)
		return (false);
	for (j = 0; j < n; j++) {
		sim_i128	jlo, jhi;

		l = &v[j]->dim[d];
		if (sim_opt_lin_coef(l, kind, index) != k)
			return (false);
		jlo = jhi = l->c;
		for (i = 0; i < l->nt; i++) {
			const struct sim_term	*tm = &l->t[i];

			if (tm->kind == kind && tm->index == index)
				continue;
			if (tm->kind == NKIR__V1__TERM_KIND__TERM_LOOP &&
			    tm->index >= p->nloopvars)
				return (false);	/* an index function's
						 * slot, (i % 2): not proven */
			if (!sim_par_ranged(w, tm)) {
				/* fixed in the region: a common shift */
				if (sim_opt_lin_coef(l, tm->kind, tm->index) !=
				    sim_opt_lin_coef(l0, tm->kind, tm->index))
					return (false);
				continue;
			}
			if (tm->kind == NKIR__V1__TERM_KIND__TERM_LOOP) {
				vl = w->vlo[tm->index];
				vh = w->vhi[tm->index];
			} else {
				vl = 0;
				vh = (sim_i128)p->grid[tm->index] - 1;
			}
			x = vl * tm->coef;
			y = vh * tm->coef;
			jlo += x < y ? x : y;
			jhi += x < y ? y : x;
		}
		/* fixed terms of l0 must appear in l too */
		for (i = 0; i < l0->nt; i++) {
			const struct sim_term	*tm = &l0->t[i];

			if ((tm->kind != kind || tm->index != index) &&
			    !sim_par_ranged(w, tm) &&
			    sim_opt_lin_coef(l, tm->kind, tm->index) !=
			    sim_opt_lin_coef(l0, tm->kind, tm->index))
				return (false);
		}
		for (a = 0; a < v[j]->rank; a++) {
			y = ((sim_i128)v[j]->shape[a] - 1) * l->ax[a];
			jlo += y < 0 ? y : 0;
			jhi += y < 0 ? 0 : y;
		}
		if (j == 0 || jlo < lo)
			lo = jlo;
		if (j == 0 || jhi > hi)
			hi = jhi;
	}
	k *= step;
	if (k < 0)
		k = -k;
	return (hi - lo < k);
}

/* Every pair of iterations writes disjoint elements of tensor t. */
static bool
sim_par_disjoint(struct sim_par_walk *w, uint32_t t)
{
	const struct sim_program	 *p = w->p;
	const struct sim_view		**v;
	size_t				  n = 0, j;
	bool				  ok = true, axis;
	int				  d, a;

	v = malloc(w->nw * sizeof(*v));
	if (v == NULL)
		return (false);
	for (j = 0; j < w->nw; j++)
		if (w->w[j]->tensor == t)
			v[n++] = w->w[j];
	if (!w->grid) {
		for (d = 0, ok = false; d < v[0]->ndim && !ok; d++)
			ok = sim_par_separates(w, v, n, d,
			    NKIR__V1__TERM_KIND__TERM_LOOP, w->var, w->step);
		free(v);
		return (ok);
	}
	/* programs differ in some grid axis: each axis must separate */
	for (a = 0; a < p->grid_rank && ok; a++) {
		if (p->grid[a] < 2)
			continue;
		for (d = 0, axis = false; d < v[0]->ndim && !axis; d++)
			axis = sim_par_separates(w, v, n, d,
			    NKIR__V1__TERM_KIND__TERM_PROGRAM, (uint32_t)a, 1);
		ok = axis;
	}
	free(v);
	return (ok);
}

/* Record the region's private tiles: those it writes. */
static struct sim_par_region *
sim_par_region_new(struct sim_program *p, const uint8_t *st)
{
	struct sim_par_region	*rg;
	uint32_t		 n = 0;
	size_t			 t;

	for (t = 0; t < p->ntensors; t++)
		if ((st[t] & SIM_PAR_WRITTEN) && sim_par_private(p, t))
			n++;
	rg = calloc(1, sizeof(*rg) + (n + 1) * sizeof(uint32_t));
	if (rg == NULL)
		return (NULL);
	rg->priv = (uint32_t *)(rg + 1);
	for (t = 0; t < p->ntensors; t++)
		if ((st[t] & SIM_PAR_WRITTEN) && sim_par_private(p, t))
			rg->priv[rg->npriv++] = (uint32_t)t;
	rg->next = p->par_all;
	p->par_all = rg;
	return (rg);
}

/*
 * Are the iterations of ops[0 .. n-1] independent (for every value of
 * loop variable var, or of the program ids when grid)? Each tile they
 * write is overwritten whole before any read in every iteration, and
 * each HBM tensor (or tile in HBM memory) they write is read by none of
 * them and written in disjoint elements by distinct iterations. Returns
 * the region, NULL if not proven; *nomem on allocation failure.
 */
static struct sim_par_region *
sim_par_region(struct sim_program *p, const struct sim_op *ops, size_t n,
    bool grid, uint32_t var, int64_t step, bool *nomem)
{
	struct sim_par_walk	 w;
	struct sim_par_region	*rg = NULL;
	size_t			 nv = p->nloopvars + 1, t;

	memset(&w, 0, sizeof(w));
	w.p = p;
	w.grid = grid;
	w.var = var;
	w.step = step;
	w.ok = true;
	w.st = calloc(p->ntensors + 1, 1);
	w.inner = calloc(nv, 1);
	w.vlo = calloc(nv, sizeof(int64_t));
	w.vhi = calloc(nv, sizeof(int64_t));
	if (w.st == NULL || w.inner == NULL || w.vlo == NULL ||
	    w.vhi == NULL) {
		*nomem = true;
		goto out;
	}
	sim_par_walk_ops(&w, ops, n);
	for (t = 0; t < p->ntensors && w.ok; t++) {
		if (!(w.st[t] & SIM_PAR_WRITTEN))
			continue;
		if (sim_par_private(p, t))
			w.ok = (w.st[t] & SIM_PAR_FRESH) != 0;
		else
			w.ok = !(w.st[t] & SIM_PAR_READ) &&
			    sim_par_disjoint(&w, (uint32_t)t);
	}
	if (w.ok && (rg = sim_par_region_new(p, w.st)) == NULL)
		*nomem = true;
out:
	free(w.st);
	free(w.inner);
	free(w.vlo);
	free(w.vhi);
	free(w.w);
	return (rg);
}

/* An op whose rows may run side by side split along axis 0: its
 * executor writes each element of dst from one row's sources only. */
static bool
sim_par_splits(const struct sim_op *op)
{
	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_REDUCE:
		/* never reduces axis 0: rows fold into disjoint outputs */
		return (op->shape[0] > 1);
	case NKIR__V1__OP_KIND__OP_MATMUL:
		return (true);		/* split along N */
	case NKIR__V1__OP_KIND__OP_BN_STATS:
	case NKIR__V1__OP_KIND__OP_BN_AGGR:
		return (false);
	default:
		/* element-wise, not staged: a source naming dst's tensor
		 * reads it through dst's own view, element by element */
		return (sim_par_kind_ok(op->kind) && !op->stage &&
		    op->rank >= 2 && op->shape[0] > 1 &&
		    sim_opt_view_injective(&op->dst));
	}
}

static int
sim_par_body(struct sim_program *p, struct sim_op *ops, size_t n)
{
	bool	nomem = false;
	size_t	i;
	int	rc;

	for (i = 0; i < n; i++) {
		struct sim_op	*op = &ops[i];

		if (op->kind == NKIR__V1__OP_KIND__OP_LOOP) {
			if ((rc = sim_par_body(p, op->body, op->nbody)))
				return (rc);
			op->par_work = sim_par_op_work(op);
			if (op->trips >= 2)
				op->par = sim_par_region(p, op->body,
				    op->nbody, false, op->var, op->step,
				    &nomem);
			if (nomem)
				return (SIM_ENOMEM);
			continue;
		}
		op->par_work = sim_par_op_work(op);
		op->par_split = sim_par_splits(op);
	}
	return (0);
}

int
sim_par_program(struct sim_program *p)
{
	bool		nomem = false;
	uint64_t	w = 0;
	size_t		i;
	int		rc;

	if ((rc = sim_par_body(p, p->body, p->nbody)))
		return (rc);
	for (i = 0; i < p->nbody; i++)
		w = sim_par_add_sat(w, sim_par_mul_sat(
		    p->body[i].kind == NKIR__V1__OP_KIND__OP_LOOP ?
		    p->body[i].trips : 1, p->body[i].par_work));
	p->par_work = w;
	if (p->nprograms >= 2)
		p->par = sim_par_region(p, p->body, p->nbody, true, 0, 1,
		    &nomem);
	return (nomem ? SIM_ENOMEM : 0);
}

void
sim_par_free(struct sim_program *p)
{
	struct sim_par_region	*rg, *next;
	size_t			 i;

	for (rg = p->par_all; rg != NULL; rg = next) {
		next = rg->next;
		free(rg);
	}
	p->par_all = NULL;
	for (i = 0; i < p->par_nfree; i++)
		free(p->par_free[i]);
	p->par_nfree = 0;
}
