/* sim_isa_exec.c: run the nki.isa instructions of NKIR kinds 40-79 row by row through strided views, with the engines' accumulator registers and run-time indices. */
/* Floor 3, beside sim_exec.c: it dispatches here; this file uses its helpers and floor 0. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

#define SIM_ISA_QUADRANT	32
#define SIM_ISA_KEEP		255	/* nc_stream_shuffle: unchanged */

/* ------------------------------------------------------------ math */

/* x alu y for one pair (the common operators inline). */
static inline float
sim_isa_alu(int alu, float x, float y)
{
	float	o;

	switch (alu) {
	case NKIR__V1__ALU_OP__ALU_ADD:
		return (x + y);
	case NKIR__V1__ALU_OP__ALU_SUBTRACT:
		return (x - y);
	case NKIR__V1__ALU_OP__ALU_MULTIPLY:
		return (x * y);
	case NKIR__V1__ALU_OP__ALU_MAXIMUM:
		return ((x != x || x > y) ? x : y);
	case NKIR__V1__ALU_OP__ALU_MINIMUM:
		return ((x != x || x < y) ? x : y);
	default:
		sim_exec_alu_row(alu, &o, &x, 0, &y, 0, 1);
		return (o);
	}
}

/* acc alu x[i] over the active elements of a row (x contiguous);
 * subtract takes away the row's sum. */
static float
sim_isa_fold(int alu, float acc, const float *x, const uint8_t *act,
    size_t n)
{
	if (alu == NKIR__V1__ALU_OP__ALU_SUBTRACT)
		return (acc - sim_exec_fold(NKIR__V1__ALU_OP__ALU_ADD, 0.0f, x,
		    1, act, n, NULL));
	return (sim_exec_fold(alu, acc, x, 1, act, n, NULL));
}

/* o[i] = a[i * sa] alu b[i * sb], the operands swapped if reverse. */
static void
sim_isa_alu_row(int alu, bool reverse, float *o, const float *a, int64_t sa,
    const float *b, int64_t sb, size_t n)
{
	if (reverse)
		sim_exec_alu_row(alu, o, b, sb, a, sa, n);
	else
		sim_exec_alu_row(alu, o, a, sa, b, sb, n);
}



/* ------------------------------------------------------------ rows */

static int
sim_isa_engine_acc(const struct sim_op *op)
{
	if (op->kind == NKIR__V1__OP_KIND__OP_ACT_ACC ||
	    (op->kind == NKIR__V1__OP_KIND__OP_ACC_READ &&
	    op->engine == NKIR__V1__ENGINE__ENGINE_SCALAR))
		return (SIM_ACC_SCALAR);
	return (SIM_ACC_VECTOR);
}

/* The row's index among the rows of its partition (axes 1 .. rank-2). */
static uint64_t
sim_isa_row_in_part(const struct sim_rows *it)
{
	uint64_t	k = 0;
	int		a;

	for (a = 1; a < it->rank - 1; a++)
		k = k * it->shape[a] + it->idx[a];
	return (k);
}

/* A reset before an instruction that uses its engine's registers. */
static void
sim_isa_acc_begin(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_isa	*x = op->isa;
	float			*acc = r->acc[sim_isa_engine_acc(op)], id;
	uint64_t		 p, np = op->shape[0];

	if (x->reduce_cmd != NKIR__V1__REDUCE_CMD__RCMD_RESET &&
	    x->reduce_cmd != NKIR__V1__REDUCE_CMD__RCMD_RESET_REDUCE)
		return;
	id = sim_exec_reduce_init(x->reduce_alu);
	for (p = 0; p < np && p < SIM_PMAX; p++)
		acc[p] = id;
}

static bool
sim_isa_acc_folds(const struct sim_op *op)
{
	return (op->isa->reduce_cmd == NKIR__V1__REDUCE_CMD__RCMD_REDUCE ||
	    op->isa->reduce_cmd == NKIR__V1__REDUCE_CMD__RCMD_RESET_REDUCE);
}

/*
 * The element-wise nki.isa kinds: one pass over the iteration space, a
 * row at a time (sources read through their views, the row computed in
 * fp32, written rounded to dst's dtype); with op->stage the rows go to
 * the scratch first and are written after the last is computed.
 */
static int
sim_isa_ew(struct sim_run *r, const struct sim_op *op)
{
	static const float	 zero = 0.0f;
	const struct sim_isa	*x = op->isa;
	const struct sim_view	*vs[4] = { &op->dst, NULL, NULL, NULL };
	size_t			 n = op->shape[op->rank - 1], i;
	float			*acc = r->acc[sim_isa_engine_acc(op)];
	float			*stage = NULL, *o, state = 0.0f;
	uint8_t			*sact = NULL, *wact = (uint8_t *)r->row[4];
	const float		*s[3] = { NULL, NULL, NULL };
	int64_t			 ss[3] = { 0, 0, 0 }, base, step;
	struct sim_rows		 it;
	bool			 folds = sim_isa_acc_folds(op);
	int			 k, rc;

	for (k = 0; k < op->nsrc; k++)
		if (!op->src[k].scalar)
			vs[k + 1] = &op->src[k].v;
	sim_isa_acc_begin(r, op);
	if (op->stage) {
		stage = r->scratch;
		sact = (uint8_t *)(r->scratch + op->dst.nelem);
	}
	sim_exec_rows_begin(&it, r, op->rank, op->shape, vs, 4);
	do {
		const uint8_t	*act;
		uint64_t	 p = op->rank > 1 ? it.idx[0] : 0;

		if ((rc = sim_exec_row_act(r, op, op->masked, &it, n, &act)))
			return (rc);
		for (k = 0; k < op->nsrc; k++)
			s[k] = sim_exec_read(r, &op->src[k], it.off[k + 1], n,
			    r->row[k], &ss[k], act);
		o = stage != NULL ? stage : r->row[3];
		switch (op->kind) {
		case NKIR__V1__OP_KIND__OP_ACT_ACC:
			sim_exec_act_row(op, o, s[0], ss[0],
			    op->nsrc > 1 ? s[1] : &zero,
			    op->nsrc > 1 ? ss[1] : 0, n);
			break;
		case NKIR__V1__OP_KIND__OP_TENSOR_SCALAR_ACC:
			sim_isa_alu_row(op->alu, x->reverse0, o, s[0], ss[0],
			    s[1], ss[1], n);
			break;
		case NKIR__V1__OP_KIND__OP_SCALAR_TENSOR_TENSOR:
			sim_isa_alu_row(op->alu, x->reverse0, o, s[0], ss[0],
			    s[1], ss[1], n);
			sim_isa_alu_row(x->alu1, x->reverse1, o, o, 1, s[2],
			    ss[2], n);
			break;
		case NKIR__V1__OP_KIND__OP_SCAN:
			if (sim_isa_row_in_part(&it) == 0)
				state = s[2][0];	/* initial */
			if (op->alu == NKIR__V1__ALU_OP__ALU_MULTIPLY &&
			    x->alu1 == NKIR__V1__ALU_OP__ALU_ADD &&
			    act == NULL && ss[0] == 1 && ss[1] == 1) {
				for (i = 0; i < n; i++) {
					state = s[0][i] * state + s[1][i];
					o[i] = state;
				}
				break;
			}
			for (i = 0; i < n; i++) {
				float	a = s[0][(int64_t)i * ss[0]];
				float	c = s[1][(int64_t)i * ss[1]], t;

				if (act != NULL && !act[i]) {
					o[i] = 0.0f;
					continue;
				}
				t = x->reverse0 ? sim_isa_alu(op->alu, state,
				    a) : sim_isa_alu(op->alu, a, state);
				state = x->reverse1 ? sim_isa_alu(x->alu1, c,
				    t) : sim_isa_alu(x->alu1, t, c);
				o[i] = state;
			}
			break;
		case NKIR__V1__OP_KIND__OP_COPY_PREDICATED:
			for (i = 0; i < n; i++) {
				bool	on = s[1][(int64_t)i * ss[1]] != 0.0f;

				o[i] = s[0][(int64_t)i * ss[0]];
				wact[i] = (act == NULL || act[i]) &&
				    on != x->reverse0;
			}
			act = wact;
			break;
		case NKIR__V1__OP_KIND__OP_ISA_DROPOUT:
			for (i = 0; i < n; i++) {
				float	u = sim_lang_exec_uniform(r);

				o[i] = u < s[1][(int64_t)i * ss[1]] ? 0.0f :
				    s[0][(int64_t)i * ss[0]];
			}
			break;
		case NKIR__V1__OP_KIND__OP_AFFINE_SELECT:
			base = sim_exec_lin_row(r, &op->expr, &it);
			step = op->expr.ax[op->rank - 1];
			for (i = 0; i < n; i++)
				o[i] = base + (int64_t)i * step >= 0 ?
				    s[0][(int64_t)i * ss[0]] : op->value;
			break;
		case NKIR__V1__OP_KIND__OP_RANGE_SELECT:
			base = x->range_start +
			    (int64_t)(sim_isa_row_in_part(&it) * n);
			for (i = 0; i < n; i++) {
				float	f = (float)(base + (int64_t)i);
				float	c0, c1;

				c0 = sim_isa_alu(op->alu, f,
				    s[1][(int64_t)i * ss[1]]);
				c1 = sim_isa_alu(x->alu1, f,
				    s[2][(int64_t)i * ss[2]]);
				o[i] = c0 != 0.0f && c1 != 0.0f ?
				    s[0][(int64_t)i * ss[0]] : op->value;
			}
			break;
		case NKIR__V1__OP_KIND__OP_SELECT_REDUCE:
			for (i = 0; i < n; i++) {
				bool	on = s[0][(int64_t)i * ss[0]] != 0.0f;

				o[i] = on != x->reverse0 ?
				    s[1][(int64_t)i * ss[1]] :
				    s[2][(int64_t)i * ss[2]];
			}
			break;
		default:	/* OP_DMA_TRANSPOSE: a copy */
			for (i = 0; i < n; i++)
				o[i] = s[0][(int64_t)i * ss[0]];
			break;
		}
		if (folds && p < SIM_PMAX)
			acc[p] = sim_isa_fold(x->reduce_alu, acc[p], o, act, n);
		if (stage != NULL) {
			sim_exec_act_save(sact, act, n);
			stage += n;
			sact += n;
		} else
			sim_exec_write(r, &op->dst, it.off[0], n, o, 1, act);
	} while (sim_exec_rows_next(&it));
	if (op->stage) {
		stage = r->scratch;
		sact = (uint8_t *)(r->scratch + op->dst.nelem);
		sim_exec_rows_begin(&it, r, op->rank, op->shape, vs, 1);
		do {
			sim_exec_write(r, &op->dst, it.off[0], n, stage, 1,
			    sact);
			stage += n;
			sact += n;
		} while (sim_exec_rows_next(&it));
	}
	return (0);
}

static int
sim_isa_acc_read(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*vs[1] = { &op->dst };
	const float		*acc = r->acc[sim_isa_engine_acc(op)];
	size_t			 n = op->shape[op->rank - 1];
	struct sim_rows		 it;
	int			 rc;

	sim_exec_rows_begin(&it, r, op->rank, op->shape, vs, 1);
	do {
		uint64_t	 p = op->rank > 1 ? it.idx[0] : 0;
		const uint8_t	*act;

		if ((rc = sim_exec_row_act(r, op, op->masked, &it, n, &act)))
			return (rc);
		/* one element per partition: n is 1 */
		sim_exec_write(r, &op->dst, it.off[0], n,
		    &acc[p < SIM_PMAX ? p : 0], 0, act);
	} while (sim_exec_rows_next(&it));
	return (0);
}

/* ------------------------------------------------------------ copies */

/* The run-time index value at element offset off of index source s (an
 * SBUF tile: fp32), rounded; false if it is not a finite number. */
static bool
sim_isa_dyn_value(const struct sim_run *r, const struct sim_operand *s,
    uint64_t off, int64_t *v)
{
	float	f = ((const float *)r->t[s->v.tensor].base)[off];

	if (!isfinite(f) || fabsf(f) > 9.0e15f)
		return (false);
	*v = (int64_t)llrintf(f);
	return (true);
}

/*
 * An out-of-bounds run-time index: numpy's words for the flat element
 * (as NKI's simulator reports it), then the tensor, the dimension and its
 * index. idx[] holds the element's full index.
 */
static int
sim_isa_oob(struct sim_run *r, const struct sim_op *op,
    const struct sim_tinfo *ti, const int64_t *idx, int dim, bool finite)
{
	uint64_t	flat = 0;
	int		d;

	if (!finite)
		return (sim_exec_fail(r, op, SIM_ERUNTIME, "run-time index of "
		    "'%s' on dimension %d of tensor `%s` is not a finite "
		    "number", sim_op_name(op->kind), dim, ti->name));
	for (d = 0; d < ti->rank; d++)
		flat = flat * ti->shape[d] + (uint64_t)idx[d];
	return (sim_exec_fail(r, op, SIM_ERUNTIME, "index %lld is out of "
	    "bounds for axis 0 with size %llu: run-time index %lld on "
	    "dimension %d of tensor `%s` exceeds its size %llu",
	    (long long)flat, (unsigned long long)ti->nelem,
	    (long long)idx[dim], dim, ti->name,
	    (unsigned long long)ti->shape[dim]));
}

/*
 * Resolve the run-time indices of one element (or, when x->dyn_row, of a
 * whole row: element i of the row at it): adds them to off[0] (dst) and
 * off[1] (src0). Returns 0, 1 when an index is out of bounds and the op
 * skips it, or an error.
 */
static int
sim_isa_dyn_apply(struct sim_run *r, const struct sim_op *op,
    const struct sim_rows *it, size_t i, uint64_t *off)
{
	const struct sim_isa	*x = op->isa;
	int			 k, d, last = op->rank - 1;

	for (k = 0; k < x->ndyn; k++) {
		const struct sim_dyn	*dy = &x->dyn[k];
		const struct sim_view	*tv = dy->operand == 0 ? &op->dst :
					    &op->src[0].v;
		const struct sim_operand *is = &op->src[dy->src];
		const struct sim_tinfo	*ti = r->t[tv->tensor].ti;
		int64_t			 idx[SIM_MAX_RANK], v = 0, full;
		uint64_t		 ioff;
		bool			 ok;

		ioff = it->off[dy->src + 1] +
		    (uint64_t)is->v.off.ax[last] * i;
		ok = sim_isa_dyn_value(r, is, ioff, &v);
		full = sim_exec_lin_row(r, &tv->dim[dy->dim], it) +
		    tv->dim[dy->dim].ax[last] * (int64_t)i + dy->coef * v;
		if (ok && full >= 0 && (uint64_t)full < ti->shape[dy->dim]) {
			off[dy->operand] += (uint64_t)(dy->coef * v *
			    dy->stride);
			continue;
		}
		if (ok && x->oob_skip)
			return (1);
		for (d = 0; d < ti->rank; d++)
			idx[d] = sim_exec_lin_row(r, &tv->dim[d], it) +
			    tv->dim[d].ax[last] * (int64_t)i;
		idx[dy->dim] = full;
		return (sim_isa_oob(r, op, ti, idx, dy->dim, ok));
	}
	return (0);
}

/* dst (+)= src0 for n elements at offsets doff, soff (views' strides). */
static void
sim_isa_copy_run(struct sim_run *r, const struct sim_op *op, uint64_t doff,
    uint64_t soff, size_t n, const uint8_t *act)
{
	struct sim_operand	 d = { .v = op->dst };
	const float		*s, *cur;
	int64_t			 ss, cs;
	size_t			 i;

	s = sim_exec_read(r, &op->src[0], soff, n, r->row[0], &ss, act);
	if (op->alu == NKIR__V1__ALU_OP__ALU_ADD) {
		cur = sim_exec_read(r, &d, doff, n, r->row[1], &cs, act);
		for (i = 0; i < n; i++)
			r->row[3][i] = cur[(int64_t)i * cs] +
			    s[(int64_t)i * ss];
		s = r->row[3];
		ss = 1;
	}
	sim_exec_write(r, &op->dst, doff, n, s, ss, act);
}

/*
 * tensor_copy_dynamic_src/dst and dma_copy: dst (+)= src0, either side
 * possibly indexed at run time. When every run-time index is one value
 * per row the row is resolved once and copied as a strided run; else
 * element by element.
 */
static int
sim_isa_copy(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_isa	*x = op->isa;
	const struct sim_view	*vs[4] = { &op->dst, NULL, NULL, NULL };
	size_t			 n = op->shape[op->rank - 1], i;
	int64_t			 dax = op->dst.off.ax[op->rank - 1];
	int64_t			 sax = op->src[0].v.off.ax[op->rank - 1];
	struct sim_rows		 it;
	uint64_t		 off[2];
	int			 k, rc;

	for (k = 0; k < op->nsrc; k++)
		vs[k + 1] = &op->src[k].v;
	sim_exec_rows_begin(&it, r, op->rank, op->shape, vs, 4);
	do {
		const uint8_t	*act = NULL;

		if (op->masked) {
			if ((rc = sim_exec_active(r, op, &it, r->act, n)))
				return (rc);
			act = r->act;
			for (i = 0; i < n && !act[i]; i++)
				;
			if (i == n)
				continue;
		}
		if (x->ndyn == 0 || x->dyn_row) {
			off[0] = it.off[0];
			off[1] = it.off[1];
			if (x->ndyn > 0 &&
			    (rc = sim_isa_dyn_apply(r, op, &it, 0, off)) != 0) {
				if (rc == 1)
					continue;
				return (rc);
			}
			sim_isa_copy_run(r, op, off[0], off[1], n, act);
			continue;
		}
		for (i = 0; i < n; i++) {
			if (act != NULL && !act[i])
				continue;
			off[0] = it.off[0] + (uint64_t)dax * i;
			off[1] = it.off[1] + (uint64_t)sax * i;
			if ((rc = sim_isa_dyn_apply(r, op, &it, i, off)) != 0) {
				if (rc == 1)
					continue;
				return (rc);
			}
			sim_isa_copy_run(r, op, off[0], off[1], 1, NULL);
		}
	} while (sim_exec_rows_next(&it));
	return (0);
}

/* ------------------------------------------------------------ gathered */

/* Rows of a view gathered: buf [P, F] and act [P, F] (when act is set). */
static int
sim_isa_load(struct sim_run *r, const struct sim_op *op, int i, float *buf,
    uint8_t *act)
{
	return (sim_exec_gather(r, op, &op->src[i], buf, act, 0.0f));
}

static int
sim_isa_partition_reduce(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*s = &op->src[0].v;
	uint64_t		 P = s->shape[0], F = s->nelem / P, p, f;
	float			*in = r->scratch, *out = in + s->nelem;
	uint8_t			*on = (uint8_t *)(out + op->dst.nelem);
	float			 id = sim_exec_reduce_init(op->alu);
	int			 rc;

	if ((rc = sim_isa_load(r, op, 0, in, on)))
		return (rc);
	for (f = 0; f < F; f++)
		out[f] = id;
	for (p = 0; p < P; p++)
		for (f = 0; f < F; f++)
			if (on[p * F + f])
				out[f] = sim_isa_alu(op->alu, out[f],
				    in[p * F + f]);
	return (sim_exec_scatter(r, op, &op->dst, out));
}

/* sequence_bounds of one partition's n segment ids (isa, its numpy
 * equivalent): [start, end) of each element's segment; padding (id 0)
 * gets start n and end -1. */
static void
sim_isa_bounds(const float *x, size_t n, float *lo, float *hi)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (x[i] == 0.0f)
			lo[i] = (float)n;
		else if (i > 0 && x[i] == x[i - 1])
			lo[i] = lo[i - 1];
		else
			lo[i] = (float)i;
	}
	for (i = n; i-- > 0;) {
		if (x[i] == 0.0f)
			hi[i] = -1.0f;
		else if (i + 1 < n && x[i] == x[i + 1])
			hi[i] = hi[i + 1];
		else
			hi[i] = (float)(i + 1);
	}
}

static int
sim_isa_sequence_bounds(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*s = &op->src[0].v;
	size_t			 n = s->shape[1];
	float			*in = r->scratch, *out = in + s->nelem;
	int			 rc;

	if ((rc = sim_isa_load(r, op, 0, in, NULL)))
		return (rc);
	sim_isa_bounds(in, n, out, out + n);
	return (sim_exec_scatter(r, op, &op->dst, out));
}

/*
 * local_gather: each 16-partition slice (one GpSimd core) flattens its
 * part of the index tile partition-first and gathers, in every one of
 * its partitions, elem_per_index contiguous elements at each of the
 * first valid_indices indices (element offsets in the partition).
 */
static int
sim_isa_local_gather(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_isa	*x = op->isa;
	const struct sim_view	*s = &op->src[0].v, *ix = &op->src[1].v;
	uint64_t		 P = s->shape[0], Fs = s->nelem / P;
	uint64_t		 Fi = ix->nelem / P, E = x->elem_per_index;
	uint64_t		 V = x->valid_indices, c, k, p, e, v;
	float			*src = r->scratch, *idx = src + s->nelem;
	float			*out = idx + ix->nelem;
	int			 rc;

	if ((rc = sim_isa_load(r, op, 0, src, NULL)) ||
	    (rc = sim_isa_load(r, op, 1, idx, NULL)))
		return (rc);
	for (c = 0; c < P / 16; c++)
		for (k = 0; k < V; k++) {
			float	f = idx[(c * 16 + k % 16) * Fi + k / 16];

			v = (uint64_t)f;
			if (!(f >= 0.0f) || v + E > Fs)
				return (sim_exec_fail(r, op, SIM_ERUNTIME,
				    "index %g + %llu elements of 'local_gather' "
				    "(index %llu of partitions %llu-%llu of `%s`) "
				    "exceeds the %llu elements per partition of "
				    "`%s`", (double)f, (unsigned long long)E,
				    (unsigned long long)k,
				    (unsigned long long)(c * 16),
				    (unsigned long long)(c * 16 + 15),
				    r->t[ix->tensor].ti->name,
				    (unsigned long long)Fs,
				    r->t[s->tensor].ti->name));
			for (p = c * 16; p < c * 16 + 16; p++)
				for (e = 0; e < E; e++)
					out[p * V * E + k * E + e] =
					    src[p * Fs + v + e];
		}
	return (sim_exec_scatter(r, op, &op->dst, out));
}

/* a before b in max8's descending order; NaN first (numpy sorts it
 * last, as the largest). */
static inline bool
sim_isa_before(float a, float b)
{
	if (a != a)
		return (b == b);
	return (a > b);
}

/* The 8 largest active values of x[0 .. n-1], descending, in top[]; the
 * places a short partition leaves get -inf. */
static void
sim_isa_top8(const float *x, const uint8_t *act, size_t n, float *top)
{
	size_t	i, m = 0;
	int	j;

	for (j = 0; j < 8; j++)
		top[j] = -INFINITY;
	for (i = 0; i < n; i++) {
		float	v = x[i];

		if (!act[i])
			continue;
		if (m == 8 && !sim_isa_before(v, top[7]))
			continue;
		j = m < 8 ? (int)m++ : 7;
		while (j > 0 && sim_isa_before(v, top[j - 1])) {
			top[j] = top[j - 1];
			j--;
		}
		top[j] = v;
	}
}

/*
 * max8, nc_find_index8, nc_match_replace8: per partition over the
 * flattened free elements of data (src0, masked-off elements take no
 * part), with vals (src1) 8 per partition.
 */
static int
sim_isa_top(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*s = &op->src[0].v;
	uint64_t		 P = s->shape[0], F = s->nelem / P, p, f;
	float			*in = r->scratch, *vals = in + s->nelem;
	float			*out = vals + 8 * P, *idx;
	uint8_t			*on = (uint8_t *)(out + op->dst.nelem);
	int			 j, rc;

	if ((rc = sim_isa_load(r, op, 0, in, on)))
		return (rc);
	if (op->nsrc > 1 && (rc = sim_isa_load(r, op, 1, vals, NULL)))
		return (rc);
	for (p = 0; p < P; p++) {
		float		*x = in + p * F, *v = vals + p * 8;
		const uint8_t	*a = on + p * F;

		if (op->kind == NKIR__V1__OP_KIND__OP_MAX8) {
			sim_isa_top8(x, a, F, out + p * 8);
			continue;
		}
		idx = out + p * 8;
		for (j = 0; j < 8; j++) {
			float	m = 0.0f;

			for (f = 0; f < F; f++)
				if (a[f] && x[f] == v[j])
					break;
			if (f < F) {
				m = (float)f;
				if (op->kind ==
				    NKIR__V1__OP_KIND__OP_MATCH_REPLACE8)
					x[f] = op->value;
			}
			if (op->kind == NKIR__V1__OP_KIND__OP_FIND_INDEX8 ||
			    op->isa->index_out)
				idx[j] = m;
		}
	}
	if (op->kind == NKIR__V1__OP_KIND__OP_MATCH_REPLACE8 &&
	    !op->isa->index_out)
		out = in;	/* the replaced data, data's shape */
	return (sim_exec_scatter(r, op, &op->dst, out));
}

/*
 * nc_stream_shuffle: partition p of dst (in quadrant q = p / 32) takes
 * partition 32 q + shuffle[p % 32] of src; 255 leaves it. src is read
 * whole first (in-place shuffles are allowed).
 */
static int
sim_isa_shuffle(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*s = &op->src[0].v, *vs[1] = { &op->dst };
	uint64_t		 F = s->nelem / s->shape[0], sp;
	size_t			 n = op->shape[op->rank - 1];
	float			*in = r->scratch;
	struct sim_rows		 it;
	int			 rc;

	if ((rc = sim_isa_load(r, op, 0, in, NULL)))
		return (rc);
	sim_exec_rows_begin(&it, r, op->rank, op->shape, vs, 1);
	do {
		uint64_t	 p = op->rank > 1 ? it.idx[0] : 0;
		uint8_t		 m = op->isa->shuffle[p % SIM_ISA_QUADRANT];
		const uint8_t	*act;

		if (m == SIM_ISA_KEEP)
			continue;
		if ((rc = sim_exec_row_act(r, op, op->masked, &it, n, &act)))
			return (rc);
		sp = p / SIM_ISA_QUADRANT * SIM_ISA_QUADRANT + m;
		sim_exec_write(r, &op->dst, it.off[0], n,
		    in + sp * F + sim_isa_row_in_part(&it) * n, 1, act);
	} while (sim_exec_rows_next(&it));
	return (0);
}

/* ------------------------------------------------------------ dispatch */

int
sim_isa_exec(struct sim_run *r, const struct sim_op *op)
{
	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_ACC_READ:
		return (sim_isa_acc_read(r, op));
	case NKIR__V1__OP_KIND__OP_PARTITION_REDUCE:
		return (sim_isa_partition_reduce(r, op));
	case NKIR__V1__OP_KIND__OP_COPY_DYNAMIC:
	case NKIR__V1__OP_KIND__OP_DMA_COPY:
		return (sim_isa_copy(r, op));
	case NKIR__V1__OP_KIND__OP_SEQUENCE_BOUNDS:
		return (sim_isa_sequence_bounds(r, op));
	case NKIR__V1__OP_KIND__OP_LOCAL_GATHER:
		return (sim_isa_local_gather(r, op));
	case NKIR__V1__OP_KIND__OP_MAX8:
	case NKIR__V1__OP_KIND__OP_FIND_INDEX8:
	case NKIR__V1__OP_KIND__OP_MATCH_REPLACE8:
		return (sim_isa_top(r, op));
	case NKIR__V1__OP_KIND__OP_SHUFFLE:
		return (sim_isa_shuffle(r, op));
	default:
		return (sim_isa_ew(r, op));
	}
}
