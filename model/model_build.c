/* model_build.c: the model's build pass: the NKIR body turned into costed ops and loop nodes, loop-invariant ops hoisted, tiles given buffers. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nkir.pb-c.h"

#include "model/model.h"
#include "model/model_impl.h"
#include "sim/sim.h"

/* ------------------------------------------------------------ build */

/* An nki.isa op that leaves elements of its destination as they were
 * (a predicate, a run-time index, 255 in a shuffle mask, add-in). */
static int
model_keeps_dst(const Nkir__V1__Op *o)
{
	size_t	i;

	switch (o->kind) {
	case NKIR__V1__OP_KIND__OP_COPY_PREDICATED:
	case NKIR__V1__OP_KIND__OP_SHUFFLE:
	case NKIR__V1__OP_KIND__OP_TI_SCATTER:
		return (1);
	case NKIR__V1__OP_KIND__OP_DMA_COPY:
	case NKIR__V1__OP_KIND__OP_COPY_DYNAMIC:
		if (o->alu != NKIR__V1__ALU_OP__ALU_INVALID || o->oob_skip)
			return (1);
		for (i = 0; i < o->n_dyn; i++)
			if (o->dyn[i] != NULL && o->dyn[i]->operand == 0)
				return (1);
		return (0);
	default:
		return (0);
	}
}

/* An op with effects beyond its destination (an engine's accumulator
 * registers, the random stream): never hoisted out of a loop. */
static int
model_stateful(const Nkir__V1__Op *o)
{
	switch (o->kind) {
	case NKIR__V1__OP_KIND__OP_ACC_READ:
	case NKIR__V1__OP_KIND__OP_ISA_DROPOUT:
	case NKIR__V1__OP_KIND__OP_TENSOR_SCALAR_ACC:
	case NKIR__V1__OP_KIND__OP_RAND_GET_STATE:
		return (1);
	case NKIR__V1__OP_KIND__OP_ACT_ACC:
	case NKIR__V1__OP_KIND__OP_RANGE_SELECT:
	case NKIR__V1__OP_KIND__OP_SELECT_REDUCE:
		return (o->reduce_cmd != NKIR__V1__REDUCE_CMD__RCMD_IDLE);
	default:
		return (0);
	}
}

/* Does op o (or any op under it) write tensor tid? skip is excluded. */
static int
model_writes(const Nkir__V1__Op *const *body, size_t n, uint32_t tid,
    const Nkir__V1__Op *skip)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		const Nkir__V1__Op *o = body[i];

		if (o == NULL || o == skip)
			continue;
		if (o->kind == NKIR__V1__OP_KIND__OP_LOOP) {
			if (o->loop != NULL && model_writes((const Nkir__V1__Op
			    *const *)o->loop->body, o->loop->n_body, tid, skip))
				return (1);
			continue;
		}
		if (o->kind == NKIR__V1__OP_KIND__OP_IF) {
			if (o->branch != NULL && (model_writes((const
			    Nkir__V1__Op *const *)o->branch->then_body,
			    o->branch->n_then_body, tid, skip) || model_writes(
			    (const Nkir__V1__Op *const *)o->branch->else_body,
			    o->branch->n_else_body, tid, skip)))
				return (1);
			continue;
		}
		if (o->kind == NKIR__V1__OP_KIND__OP_ALLOC &&
		    o->fill == NKIR__V1__FILL__FILL_UNINIT)
			continue;
		if (o->kind == NKIR__V1__OP_KIND__OP_PRINT)
			continue;
		if (o->dst != NULL && o->dst->tensor == tid)
			return (1);
	}
	return (0);
}

/* Whether any of the n affine expressions e uses loop variable var. */
static int
model_affines_use_var(Nkir__V1__Affine *const *e, size_t n, uint32_t var)
{
	size_t	i, j;

	for (i = 0; i < n; i++)
		for (j = 0; e[i] != NULL && j < e[i]->n_terms; j++)
			if (e[i]->terms[j]->kind ==
			    NKIR__V1__TERM_KIND__TERM_LOOP &&
			    e[i]->terms[j]->index == var)
				return (1);
	return (0);
}

static int
model_uses_var(const Nkir__V1__Access *a, uint32_t var)
{
	if (a == NULL)
		return (0);
	return (model_affines_use_var(a->index, a->n_index, var) ||
	    model_affines_use_var(a->mask, a->n_mask, var));
}

/*
 * Loop-invariant compute instructions run once per entry of the loop
 * (GUESSED compiler behaviour, see docs/model.md): a Vector/Scalar/
 * GpSimd/Tensor op whose accesses do not use the loop's variable, whose
 * sources nothing in the loop writes, and whose destination nothing else
 * in the loop writes. DMAs are never hoisted.
 */
static uint32_t
model_invariant(const struct model_scope *sc, const Nkir__V1__Op *o,
    int track)
{
	uint32_t	mask = 0;
	size_t		i;
	int		d;

	if (track < 0 || o->dst == NULL ||
	    o->kind == NKIR__V1__OP_KIND__OP_ALLOC ||
	    ((o->kind == NKIR__V1__OP_KIND__OP_MATMUL ||
	    o->kind == NKIR__V1__OP_KIND__OP_MATMUL_MX) && o->accumulate) ||
	    model_stateful(o) || model_keeps_dst(o))
		return (0);
	for (d = 0; d < sc->depth; d++) {
		const Nkir__V1__Loop *l = sc->loop[d];
		const Nkir__V1__Op *const *body = (const Nkir__V1__Op *const *)
		    l->body;
		int	ok = 1;

		if (model_uses_var(o->dst, l->var))
			continue;
		for (i = 0; ok && i < o->n_src; i++) {
			const Nkir__V1__Operand *s = o->src[i];

			if (s == NULL || s->value_case !=
			    NKIR__V1__OPERAND__VALUE_ACCESS)
				continue;
			if (model_uses_var(s->access, l->var) ||
			    s->access->tensor == o->dst->tensor ||
			    model_writes(body, l->n_body, s->access->tensor, NULL))
				ok = 0;
		}
		if (ok && !model_writes(body, l->n_body, o->dst->tensor, o))
			mask |= 1u << d;
	}
	return (mask);
}


/* Sources of op that are whole tiles, not a scalar or [P, 1] operand. */
static int
model_full_srcs(const struct model_op *op)
{
	int	i, n = 0;

	for (i = 0; i < op->nsrc; i++)
		n += !op->src[i]->free_bcast;
	return (n);
}

/*
 * One NKI call the tracer writes as two ops on the call's line, the second
 * reading the whole fresh tile the first wrote, is costed as the one
 * instruction it is on the hardware; the op that is no instruction passes
 * its inputs' readiness through (ENG_FUSED):
 *
 * - nisa.activation(op, data, scale=tile): NKIR's Op.scale is a number,
 *   so a tile scale is a multiply before the activation (arch: ScalarE's
 *   "Pipelined Multiply-Add" before the function, "at no additional
 *   performance cost"): the multiply is free;
 * - nisa.tensor_scalar(data, op0, operand0, op1=, operand1=): op0 then
 *   op1, each a tensor_tensor with one operand a scalar or [P, 1] (isa
 *   tensor_scalar: one instruction, max(MIN_II, N)): op0 is free;
 * - nisa.tensor_reduce(..., negate=True): a reduce then a negation (isa
 *   tensor_reduce: negate is a field of the one instruction): the
 *   negation is free;
 * - t[i, j] = f(...) where the fresh tile's shape is not the view's (an
 *   integer index drops a dimension): f into a tile, then a copy into t;
 *   on the hardware the instruction writes t (isa: every instruction
 *   takes its dst): the copy is free.
 *
 * Returns 1 when x is the free op, 2 when y is, 0 for two instructions.
 */
static int
model_fusable(const struct model_op *x, const struct model_op *y)
{
	if (x->line != y->line || x->file != y->file || y->nsrc < 1 ||
	    y->src[0]->tensor != x->dst->tensor || !x->dst->covers)
		return (0);
	if (x->kind == NKIR__V1__OP_KIND__OP_TENSOR_TENSOR &&
	    (y->kind == NKIR__V1__OP_KIND__OP_ACTIVATION ||
	    y->kind == NKIR__V1__OP_KIND__OP_ACT_ACC))
		return (x->nsrc == 2 && model_full_srcs(x) == 1 ? 1 : 0);
	if (x->kind == NKIR__V1__OP_KIND__OP_TENSOR_TENSOR &&
	    y->kind == NKIR__V1__OP_KIND__OP_TENSOR_TENSOR &&
	    model_full_srcs(x) == 1 && model_full_srcs(y) == 1)
		return (1);
	if (x->kind == NKIR__V1__OP_KIND__OP_REDUCE &&
	    y->kind == NKIR__V1__OP_KIND__OP_ACTIVATION &&
	    y->act == NKIR__V1__ACT_FUNC__ACT_NEGATIVE && y->nsrc == 1)
		return (2);
	if (y->kind == NKIR__V1__OP_KIND__OP_COPY && y->nsrc == 1 &&
	    x->dst->space == y->dst->space && x->dst->parts == y->dst->parts &&
	    x->dst->n == y->dst->n)
		return (2);
	return (0);
}

static void
model_fuse(struct model_ctx *m, uint32_t first, uint32_t n)
{
	uint32_t	i;

	for (i = 0; i + 1 < n; i++) {
		const struct model_node	*a = &m->nodes[first + i];
		const struct model_node	*b = &m->nodes[first + i + 1];
		struct model_op		*x, *y;

		if (a->loop || b->loop)
			continue;
		x = &m->ops[a->op];
		y = &m->ops[b->op];
		switch (model_fusable(x, y)) {
		case 1:
			x->track = ENG_FUSED;
			break;
		case 2:
			y->track = ENG_FUSED;
			break;
		}
	}
}

static int
model_build_op(struct model_ctx *m, const Nkir__V1__Op *o,
    struct model_scope *sc, uint32_t *opidx)
{
	const Nkir__V1__Kernel	*k = m->k;
	struct model_op		*op;
	size_t			 i;

	m->ops = model_grow(m->ops, &m->capops, m->nops + 1, sizeof *m->ops);
	if (m->ops == NULL)
		return (model_fail(m, MODEL_ELIMIT, "out of memory"));
	op = &m->ops[m->nops];
	*opidx = (uint32_t)m->nops++;
	op->kind = o->kind;
	op->act = o->act;
	op->name = model_op_name(o->kind);
	op->track = model_engine(o);
	op->depth = sc->depth;
	if (o->loc != NULL) {
		op->line = o->loc->line;
		if (o->loc->file < k->n_files)
			op->file = k->files[o->loc->file];
	}
	if (o->dst == NULL)
		return (model_fail(m, MODEL_EPARSE, "an op has no destination "
		    "(line %u)", op->line));
	if ((op->dst = model_acc_new(m, o->dst)) == NULL)
		return (m->error);
	for (i = 0; i < o->n_src; i++) {
		const Nkir__V1__Operand *s = o->src[i];

		if (s == NULL || s->value_case != NKIR__V1__OPERAND__VALUE_ACCESS)
			continue;
		if (op->nsrc == MODEL_NSRC)
			return (model_fail(m, MODEL_EPARSE, "an op has more "
			    "than %d operands (line %u)", MODEL_NSRC, op->line));
		if ((op->src[op->nsrc] = model_acc_new(m, s->access)) == NULL)
			return (m->error);
		if (s->access->tensor == o->dst->tensor)
			op->dst_read = 1;
		op->nsrc++;
	}
	if ((o->kind == NKIR__V1__OP_KIND__OP_MATMUL ||
	    o->kind == NKIR__V1__OP_KIND__OP_MATMUL_MX) && o->accumulate)
		op->dst_read = 1;
	if (model_keeps_dst(o))
		op->dst_read = 1;
	if ((o->kind == NKIR__V1__OP_KIND__OP_LOAD ||
	    o->kind == NKIR__V1__OP_KIND__OP_STORE) && op->nsrc < 1)
		return (model_fail(m, MODEL_EPARSE, "a %s has no source "
		    "(line %u)", op->name, op->line));
	for (i = 0; i < (size_t)op->nsrc; i++) {
		struct model_tensor *x = op->src[i]->tensor < m->ntensors ?
		    &m->tensors[op->src[i]->tensor] : NULL;

		if (x != NULL && !x->touched) {
			x->touched = 1;
			x->decl_depth = sc->depth;
		}
	}
	if (model_cost(m, op, o) != 0)
		return (model_fail(m, MODEL_EPARSE, "a %s is missing an "
		    "operand (line %u)", op->name, op->line));
	op->new_version = o->kind == NKIR__V1__OP_KIND__OP_ALLOC ||
	    (op->dst->covers && !op->dst_read);
	op->inv_mask = model_invariant(sc, o, op->track);
	/*
	 * Multi-buffering renames a tile declared in the loop that writes it
	 * afresh (each iteration's is a new tile); a tile declared outside
	 * (first touched at a shallower depth) is one buffer every
	 * iteration writes in turn.
	 */
	if (o->dst->tensor < m->ntensors) {
		struct model_tensor *x = &m->tensors[o->dst->tensor];

		if (!x->touched) {
			x->touched = 1;
			x->decl_depth = sc->depth;
		}
		if (op->new_version && sc->depth > 0 &&
		    x->decl_depth == sc->depth)
			x->in_loop = 1;
	}
	if (o->dst->tensor < m->ntensors)
		m->tensors[o->dst->tensor].written = 1;
	return (0);
}

int
model_build_body(struct model_ctx *m, Nkir__V1__Op **body, size_t n,
    struct model_scope *sc, uint32_t *first, uint32_t *count)
{
	uint32_t	base;
	size_t		i;

	m->nodes = model_grow(m->nodes, &m->capnodes, m->nnodes + n,
	    sizeof *m->nodes);
	if (m->nodes == NULL)
		return (model_fail(m, MODEL_ELIMIT, "out of memory"));
	base = (uint32_t)m->nnodes;
	m->nnodes += n;
	*first = base;
	*count = (uint32_t)n;
	for (i = 0; i < n; i++) {
		const Nkir__V1__Op	*o = body[i];
		struct model_node	 nd;

		memset(&nd, 0, sizeof nd);
		if (o == NULL)
			return (model_fail(m, MODEL_EPARSE, "an empty op"));
		if (o->kind == NKIR__V1__OP_KIND__OP_LOOP) {
			const Nkir__V1__Loop *l = o->loop;
			uint32_t f, c;

			if (l == NULL || l->step == 0 ||
			    l->var >= m->k->num_loop_vars)
				return (model_fail(m, MODEL_EPARSE, "a malformed "
				    "loop"));
			if (sc->depth >= MODEL_MAX_DEPTH)
				return (model_fail(m, MODEL_ELIMIT, "loops "
				    "nested more than %d deep", MODEL_MAX_DEPTH));
			nd.loop = 1;
			nd.var = l->var;
			nd.start = l->start;
			nd.step = l->step;
			if (l->step > 0 && l->stop > l->start)
				nd.trip = ((uint64_t)l->stop - (uint64_t)
				    l->start + (uint64_t)l->step - 1) /
				    (uint64_t)l->step;
			else if (l->step < 0 && l->stop < l->start)
				nd.trip = ((uint64_t)l->start - (uint64_t)
				    l->stop + (uint64_t)(-l->step) - 1) /
				    (uint64_t)(-l->step);
			sc->loop[sc->depth++] = l;
			if (model_build_body(m, l->body, l->n_body, sc, &f,
			    &c) != 0)
				return (m->error);
			sc->depth--;
			nd.first = f;
			nd.n = c;
		} else if (o->kind == NKIR__V1__OP_KIND__OP_IF) {
			uint32_t f, c;

			if (o->branch == NULL || sc->depth >= MODEL_MAX_DEPTH)
				return (model_fail(m, MODEL_EPARSE, "a malformed "
				    "if"));
			nd.loop = 2;
			nd.br = o->branch;
			if (model_build_body(m, o->branch->then_body,
			    o->branch->n_then_body, sc, &f, &c) != 0)
				return (m->error);
			nd.first = f;
			nd.n = c;
			if (model_build_body(m, o->branch->else_body,
			    o->branch->n_else_body, sc, &f, &c) != 0)
				return (m->error);
			nd.efirst = f;
			nd.en = c;
		} else if (o->kind == NKIR__V1__OP_KIND__OP_DYN_LOOP) {
			/* NKI 0.6's loop on a register: its trips are known
			 * only when it runs; costed as one (an if that holds) */
			static const Nkir__V1__Branch once =
			    NKIR__V1__BRANCH__INIT;
			uint32_t f, c;

			if (o->loop == NULL || sc->depth >= MODEL_MAX_DEPTH)
				return (model_fail(m, MODEL_EPARSE, "a malformed "
				    "dynamic loop"));
			nd.loop = 2;
			nd.br = &once;
			if (model_build_body(m, o->loop->body, o->loop->n_body,
			    sc, &f, &c) != 0)
				return (m->error);
			nd.first = f;
			nd.n = c;
		} else if (o->kind == NKIR__V1__OP_KIND__OP_RANDOM_SEED ||
		    o->kind == NKIR__V1__OP_KIND__OP_RAND_SET_STATE) {
			/* no data to move or compute (rand_set_state's few
			 * words: GUESSED free): an empty node */
			nd.loop = 1;
		} else if (model_build_op(m, o, sc, &nd.op) != 0)
			return (m->error);
		m->nodes[base + i] = nd;
	}
	model_fuse(m, base, (uint32_t)n);
	return (0);
}

/* Give each tile its buffers: one, more for tiles declared in loops while SBUF (PSUM banks) last. */
int
model_tensors_init(struct model_ctx *m)
{
	const Nkir__V1__Kernel	*k = m->k;
	size_t			 i;

	m->ntensors = k->n_tensors;
	if ((m->tensors = calloc(m->ntensors + 1, sizeof *m->tensors)) == NULL)
		return (model_fail(m, MODEL_ELIMIT, "out of memory"));
	for (i = 0; i < k->n_tensors; i++) {
		const Nkir__V1__Tensor	*t = k->tensors[i];
		struct model_tensor	*x = &m->tensors[i];
		uint64_t		 size = 1, parts;
		size_t			 d;

		if (t == NULL || t->n_shape < 1 || t->n_shape > 8)
			return (model_fail(m, MODEL_EPARSE, "tensor %zu is "
			    "malformed", i));
		for (d = 0; d < t->n_shape; d++) {
			if (t->shape[d] == 0 || size > (1ULL << 40) /
			    t->shape[d])
				return (model_fail(m, MODEL_EPARSE, "tensor "
				    "'%s' is too large", t->name));
			size *= t->shape[d];
		}
		x->space = t->space;
		x->dtype = t->dtype;
		x->size = size;
		x->nbuf = 1;
		parts = t->shape[model_part_dim(t)];
		x->pp_bytes = size / (parts ? parts : 1) * model_esize(t->dtype);
	}
	return (0);
}

static int
model_tiles_cmp(const void *a, const void *b)
{
	const struct model_tensor *x = *(struct model_tensor *const *)a;
	const struct model_tensor *y = *(struct model_tensor *const *)b;

	return (x->pp_bytes < y->pp_bytes ? -1 : x->pp_bytes > y->pp_bytes);
}

/* PSUM banks a tile of pp bytes per partition takes. */
static uint64_t
model_banks(uint64_t pp)
{
	return ((pp + MODEL_PSUM_BANK_BYTES - 1) / MODEL_PSUM_BANK_BYTES);
}

/*
 * Buffers per tile: one each; then, while SBUF (PSUM banks) last, one
 * more for tiles written afresh inside a loop, smallest first, up to
 * MODEL_MAX_NBUF: the compiler's multi-buffering (GUESSED policy).
 */
int
model_tensors_buffers(struct model_ctx *m)
{
	struct model_tensor	**v;
	uint64_t		 sbuf = 0, banks = 0;
	size_t			 i, n = 0;
	int			 round;

	if ((v = calloc(m->ntensors + 1, sizeof *v)) == NULL)
		return (model_fail(m, MODEL_ELIMIT, "out of memory"));
	for (i = 0; i < m->ntensors; i++) {
		struct model_tensor *x = &m->tensors[i];

		x->nbuf = 1;
		if (x->space == NKIR__V1__SPACE__SPACE_SBUF)
			sbuf += x->pp_bytes;
		else if (x->space == NKIR__V1__SPACE__SPACE_PSUM)
			banks += model_banks(x->pp_bytes);
		else
			continue;
		if (x->in_loop)
			v[n++] = x;
	}
	qsort(v, n, sizeof *v, model_tiles_cmp);
	for (round = 1; round < MODEL_MAX_NBUF; round++)
		for (i = 0; i < n; i++) {
			struct model_tensor *x = v[i];

			if (x->nbuf != round)
				continue;
			if (x->space == NKIR__V1__SPACE__SPACE_SBUF) {
				if (sbuf + x->pp_bytes > m->t->sbuf_pp)
					continue;
				sbuf += x->pp_bytes;
			} else {
				if (banks + model_banks(x->pp_bytes) >
				    MODEL_PSUM_BANKS)
					continue;
				banks += model_banks(x->pp_bytes);
			}
			x->nbuf++;
		}
	free(v);
	for (i = 0; i < m->ntensors; i++) {
		struct model_tensor *x = &m->tensors[i];

		if ((x->bufs = calloc((size_t)x->nbuf, sizeof *x->bufs)) == NULL)
			return (model_fail(m, MODEL_ELIMIT, "out of memory"));
	}
	return (0);
}

/* ------------------------------------------------------------ spills */

/* Access j of op o: its sources (0 .. MODEL_NSRC - 1), its destination
 * (MODEL_NSRC); NULL
 * past them. */
static const struct model_acc *
model_op_acc(const struct model_op *o, int j)
{
	if (o->dst == NULL)
		return (NULL);
	return (j < MODEL_NSRC ? (j < o->nsrc ? o->src[j] : NULL) : o->dst);
}

/* Whether op o touches tensor t (reads: 1, writes: 2, both: 3). */
static int
model_op_touches(const struct model_op *o, uint32_t t)
{
	int	i, f = 0;

	if (o->dst == NULL)
		return (0);
	for (i = 0; i < o->nsrc; i++)
		if (o->src[i]->tensor == t)
			f |= 1;
	if (o->dst->tensor == t)
		f |= o->dst_read ? 3 : 2;
	return (f);
}

/* The loops of the body of nodes first .. first + n: their op ranges
 * [a, b] (program order) and depths, appended to lp. */
struct model_lrange {
	uint32_t	a, b;
	int		depth;
};

static uint32_t
model_loops_walk(const struct model_ctx *m, uint32_t first, uint32_t n,
    int depth, struct model_lrange *lp, size_t *nlp, uint32_t *lo,
    uint32_t *hi)
{
	uint32_t	i, a, b;

	for (i = 0; i < n; i++) {
		const struct model_node *nd = &m->nodes[first + i];

		a = UINT32_MAX;
		b = 0;
		if (!nd->loop) {
			a = b = nd->op;
		} else if (nd->loop == 2) {
			model_loops_walk(m, nd->first, nd->n, depth, lp, nlp,
			    &a, &b);
			model_loops_walk(m, nd->efirst, nd->en, depth, lp, nlp,
			    &a, &b);
		} else {
			size_t k = (*nlp)++;

			model_loops_walk(m, nd->first, nd->n, depth + 1, lp,
			    nlp, &a, &b);
			lp[k].a = a;
			lp[k].b = b;
			lp[k].depth = depth;
		}
		if (a < *lo)
			*lo = a;
		if (a != UINT32_MAX && b > *hi)
			*hi = b;
	}
	return (0);
}

/*
 * SBUF bytes per partition live at each op (press[0 .. nops)): a tile is
 * live from its first access to its last in program order, over the
 * whole of a loop it is used in but defined before, or written in by an
 * op hoisted out of it (lo, hi); a spilled tile only at the ops that
 * touch it; plus the op's partition broadcasts copied to SBUF.
 */
static void
model_spill_press(const struct model_ctx *m, const uint32_t *lo,
    const uint32_t *hi, const char *spilled, int64_t *press)
{
	size_t	t, p;
	int64_t	run = 0;

	memset(press, 0, (m->nops + 1) * sizeof *press);
	for (t = 0; t < m->ntensors; t++) {
		const struct model_tensor *x = &m->tensors[t];

		if (x->space != NKIR__V1__SPACE__SPACE_SBUF ||
		    lo[t] == UINT32_MAX || spilled[t])
			continue;
		press[lo[t]] += (int64_t)x->pp_bytes;
		press[hi[t] + 1] -= (int64_t)x->pp_bytes;
	}
	for (p = 0; p < m->nops; p++) {
		run += press[p];
		press[p] = run + (int64_t)m->ops[p].bcast_pp;
	}
	for (t = 0; t < m->ntensors; t++) {
		if (!spilled[t])
			continue;
		for (p = lo[t]; p <= hi[t] && p < m->nops; p++)
			if (model_op_touches(&m->ops[p], (uint32_t)t))
				press[p] += (int64_t)m->tensors[t].pp_bytes;
	}
}

/*
 * How far after op p tile t is next used: the next op that touches it,
 * else (live over a loop containing p) its first use in that loop's
 * next iteration.
 */
static uint64_t
model_spill_next(const struct model_ctx *m, const struct model_lrange *lp,
    size_t nlp, uint32_t t, uint32_t p, uint32_t hi)
{
	uint32_t	q;
	size_t		i;

	for (q = p + 1; q <= hi && q < m->nops; q++)
		if (model_op_touches(&m->ops[q], t))
			return (q - p);
	for (i = 0; i < nlp; i++) {
		if (lp[i].a > p || lp[i].b < p || lp[i].b != hi)
			continue;
		for (q = lp[i].a; q <= p; q++)
			if (model_op_touches(&m->ops[q], t))
				return ((uint64_t)(lp[i].b - p) +
				    (q - lp[i].a) + 1);
	}
	return ((uint64_t)m->nops);
}

/*
 * The op after which a reload of tile t before op q may start: the last
 * op since t's previous use (over the loop's back edge too) at which t
 * would not fit beside what is live there; UINT32_MAX when t need not be
 * reloaded (it fits all the way).
 */
static uint32_t
model_spill_after(const struct model_ctx *m, const struct model_lrange *lp,
    size_t nlp, uint32_t t, uint32_t q, uint32_t lo, const int64_t *press)
{
	int64_t		 cap = (int64_t)m->t->sbuf_pp;
	int64_t		 pp = (int64_t)m->tensors[t].pp_bytes;
	const struct model_lrange *in = NULL;
	uint32_t	 p, lim = lo;
	size_t		 i;

	for (i = 0; i < nlp; i++)
		if (lp[i].a <= q && q <= lp[i].b && (in == NULL ||
		    lp[i].b - lp[i].a < in->b - in->a))
			in = &lp[i];
	if (in != NULL && in->a > lim)
		lim = in->a;
	for (p = q; p-- > lim;) {
		if (model_op_touches(&m->ops[p], t))
			return (UINT32_MAX);
		if (press[p] + pp > cap)
			return (p);
	}
	if (in == NULL || in->a <= lo)
		return (UINT32_MAX);
	/* over the loop's back edge: the end of the last iteration */
	for (p = in->b + 1; p-- > q + 1;) {
		if (model_op_touches(&m->ops[p], t))
			return (UINT32_MAX);
		if (press[p] + pp > cap)
			return (p);
	}
	return (UINT32_MAX);
}

/*
 * SBUF capacity (programming model: "When the cumulative size of live
 * data defined by the NKI kernel overflows the capacity of any on-chip
 * memory, the Neuron compiler inserts the necessary spills or refills
 * between that memory and the next-tier memory"): at the first op where
 * the live tiles overflow the target's SBUF per partition, the live tile
 * the op does not touch whose next use is furthest is spilled (GUESSED
 * policy: the allocator is "heuristic-based", direct allocation guide),
 * until every op fits. A spilled tile is stored after each write ("spill
 * data from SBUF to HBM after S is computed, and load it back into SBUF
 * when we compute softmax", fused self-attention tutorial) and reloaded
 * before each read that follows an op where it did not fit, once that op
 * ended.
 */
int
model_tensors_spill(struct model_ctx *m)
{
	struct model_lrange	*lp = NULL;
	uint32_t		*lo = NULL, *hi = NULL, a, b, p, t;
	int64_t			*press = NULL;
	int64_t			 cap = (int64_t)m->t->sbuf_pp;
	char			*spilled = NULL;
	size_t			 nlp = 0, i, nt = m->ntensors;
	int			 changed, j, any = 0;

	if (m->nops == 0 || nt == 0)
		return (0);
	lp = calloc(m->nnodes + 1, sizeof *lp);
	lo = calloc(nt, sizeof *lo);
	hi = calloc(nt, sizeof *hi);
	press = calloc(m->nops + 2, sizeof *press);
	spilled = calloc(nt, 1);
	if (lp == NULL || lo == NULL || hi == NULL || press == NULL ||
	    spilled == NULL) {
		model_fail(m, MODEL_ELIMIT, "out of memory");
		goto out;
	}
	a = UINT32_MAX;
	b = 0;
	model_loops_walk(m, m->root_first, m->root_n, 0, lp, &nlp, &a, &b);
	for (t = 0; t < nt; t++)
		lo[t] = UINT32_MAX;
	for (p = 0; p < m->nops; p++)
		for (j = 0; j < MODEL_NSRC + 1; j++) {
			const struct model_acc *x = model_op_acc(&m->ops[p], j);

			if (x == NULL || x->tensor >= nt ||
			    m->tensors[x->tensor].space !=
			    NKIR__V1__SPACE__SPACE_SBUF)
				continue;
			if (lo[x->tensor] == UINT32_MAX)
				lo[x->tensor] = p;
			hi[x->tensor] = p;
		}
	/* live over a loop it is used in but defined before, or written
	 * in by an op hoisted out of it */
	do {
		changed = 0;
		for (i = 0; i < nlp; i++)
			for (p = lp[i].a; p <= lp[i].b && p < m->nops; p++)
				for (j = 0; j < MODEL_NSRC + 1; j++) {
					const struct model_op *o = &m->ops[p];
					const struct model_acc *x =
					    model_op_acc(o, j);

					if (x == NULL || x->tensor >= nt ||
					    lo[x->tensor] == UINT32_MAX)
						continue;
					t = x->tensor;
					if ((lo[t] < lp[i].a ||
					    (o->inv_mask >> lp[i].depth & 1)) &&
					    hi[t] < lp[i].b) {
						hi[t] = lp[i].b;
						changed = 1;
					}
					if ((o->inv_mask >> lp[i].depth & 1) &&
					    lo[t] > lp[i].a) {
						lo[t] = lp[i].a;
						changed = 1;
					}
				}
	} while (changed);
	for (;;) {
		uint64_t best = 0, d;
		uint32_t victim = UINT32_MAX;

		model_spill_press(m, lo, hi, spilled, press);
		for (p = 0; p < m->nops && press[p] <= cap; p++)
			;
		if (p == m->nops)
			break;
		for (t = 0; t < nt; t++) {
			if (spilled[t] || lo[t] == UINT32_MAX || lo[t] > p ||
			    hi[t] < p || m->tensors[t].space !=
			    NKIR__V1__SPACE__SPACE_SBUF ||
			    model_op_touches(&m->ops[p], t))
				continue;
			d = model_spill_next(m, lp, nlp, t, p, hi[t]);
			if (victim == UINT32_MAX || d > best || (d == best &&
			    m->tensors[t].pp_bytes >
			    m->tensors[victim].pp_bytes)) {
				best = d;
				victim = t;
			}
		}
		if (victim == UINT32_MAX)
			break;	/* the op's own tiles do not fit */
		spilled[victim] = 1;
		any = 1;
	}
	if (!any)
		goto out;
	model_spill_press(m, lo, hi, spilled, press);
	for (t = 0; t < nt; t++) {
		int reloads = 0;

		if (!spilled[t])
			continue;
		for (p = lo[t]; p <= hi[t] && p < m->nops; p++) {
			struct model_op *o = &m->ops[p];
			uint32_t after;

			if (!(model_op_touches(o, t) & 1) ||
			    o->track == ENG_NONE)
				continue;
			after = model_spill_after(m, lp, nlp, t, p, lo[t],
			    press);
			if (after == UINT32_MAX)
				continue;
			for (j = 0; j < MODEL_NSRC + 1; j++) {
				const struct model_acc *x = j < MODEL_NSRC ?
				    (j < o->nsrc ? o->src[j] : NULL) :
				    (o->dst_read ? o->dst : NULL);

				if (x == NULL || x->tensor != t ||
				    o->reload[j] != NULL)
					continue;
				if ((o->reload[j] = model_spill_op(m, x, 0)) ==
				    NULL) {
					model_fail(m, MODEL_ELIMIT, "out of "
					    "memory");
					goto out;
				}
				o->reload_after[j] = after;
				reloads++;
			}
		}
		if (reloads == 0)
			continue;
		for (p = lo[t]; p <= hi[t] && p < m->nops; p++) {
			struct model_op *o = &m->ops[p];

			if (!(model_op_touches(o, t) & 2) || o->spill != NULL ||
			    o->track == ENG_NONE)
				continue;
			if ((o->spill = model_spill_op(m, o->dst, 1)) == NULL) {
				model_fail(m, MODEL_ELIMIT, "out of memory");
				goto out;
			}
		}
	}
out:
	free(lp);
	free(lo);
	free(hi);
	free(press);
	free(spilled);
	return (m->error);
}
