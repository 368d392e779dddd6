/* sim_exec_ew.c: the interpreter's element-wise ops (copy, tensor-tensor, tensor-scalar, activation, ...) row by row, transposing copies in blocks, and fused groups run row by row together. */
/* Floor 3, beside sim_exec.c: calls sim_exec_view.c, sim_exec_row.c
 * and sim_exec_par.c. */
#ifdef __SSE__
#include <immintrin.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

static void
sim_exec_ew_begin(struct sim_rows *it, const struct sim_run *r,
    const struct sim_op *op)
{
	const struct sim_view	*vs[4] = { &op->dst, NULL, NULL, NULL };
	int			 k;

	for (k = 0; k < op->nsrc; k++)
		if (!op->src[k].scalar)
			vs[k + 1] = &op->src[k].v;
	sim_exec_rows_begin(it, r, op->rank, op->shape, vs, 4);
}

/* Prefetch a row of a load's HBM source SIM_PF_ROWS ahead: tiled loads
 * jump by a whole HBM row between tile rows, which hardware prefetchers
 * miss (a tile row is often shorter than a page). The first row of a
 * tile prefetches the rows up to the distance. */
#define SIM_PF_ROWS	4

static void
sim_exec_prefetch(const struct sim_run *r, const struct sim_op *op,
    const struct sim_rows *it, size_t n)
{
	const struct sim_view	*v = &op->src[0].v;
	const struct sim_bind	*bd = &r->t[v->tensor];
	const char		*p;
	uint64_t		 d0, d1, d;
	size_t			 i;
	int			 a = op->rank - 2;

	if (a < 0 || op->masked || v->off.ax[a + 1] != 1)
		return;
	d0 = it->idx[a] == 0 ? 1 : SIM_PF_ROWS;
	d1 = SIM_PF_ROWS;
	for (d = d0; d <= d1; d++) {
		if (it->idx[a] + d >= op->shape[a])
			break;
		p = bd->base + (it->off[1] + (uint64_t)v->off.ax[a] * d) *
		    bd->esize;
		for (i = 0; i < n * bd->esize; i += 64)
			__builtin_prefetch(p + i);
	}
}

/* One innermost row of an element-wise op at the iterator's position.
 * With stage set the row's values (and active flags) go to stage[]
 * instead of dst. In a fused group, fsrc[i] (if not NULL) is src[i]'s
 * row passed on in place and fdst (if not NULL) the row to compute in
 * instead of dst's (sim_opt_forward). */
static int
sim_exec_ew_row(struct sim_run *r, const struct sim_op *op,
    const struct sim_rows *it, float *stage, uint8_t *stage_act,
    const float *const *fsrc, float *fdst)
{
	static const float	 zero = 0.0f;
	const struct sim_bind	*db = &r->t[op->dst.tensor];
	size_t			 n = op->shape[op->rank - 1], i;
	const float		*s[3] = { NULL, NULL, NULL };
	int64_t			 ss[3] = { 0, 0, 0 }, base, step;
	const uint8_t		*act = NULL;
	bool			 direct;
	float			*o;
	int			 k, rc;

	direct = db->chip && db->dtype == SIM_DT_FLOAT32 &&
	    op->dst.off.ax[op->rank - 1] == 1 && !op->masked && !stage &&
	    fdst == NULL;
	if (op->masked) {
		if ((rc = sim_exec_active(r, op, it, r->act, n)))
			return (rc);
		act = r->act;
	}
	for (k = 0; k < op->nsrc; k++) {
		if (fsrc != NULL && fsrc[k] != NULL) {
			s[k] = fsrc[k];
			ss[k] = 1;
			continue;
		}
		s[k] = sim_exec_read(r, &op->src[k], it->off[k + 1], n,
		    r->row[k], &ss[k], act);
		/* in-place only when reading exactly what is written */
		if (direct && !op->src[k].scalar &&
		    op->src[k].v.tensor == op->dst.tensor &&
		    (it->off[k + 1] != it->off[0] || ss[k] != 1 ||
		    s[k] == r->row[k]))
			direct = false;
	}
	o = direct ? (float *)db->base + it->off[0] : stage ? stage :
	    fdst != NULL ? fdst : r->row[3];
	if (stage_act != NULL)
		memcpy(stage_act, act, n);
	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_ALLOC:
		for (i = 0; i < n; i++)
			o[i] = op->value;
		break;
	case NKIR__V1__OP_KIND__OP_LOAD:
		sim_exec_prefetch(r, op, it, n);
		/* fall through */
	case NKIR__V1__OP_KIND__OP_STORE:
	case NKIR__V1__OP_KIND__OP_COPY:
	case NKIR__V1__OP_KIND__OP_TRANSPOSE:
		if (stage == NULL && fdst == NULL) {
			sim_exec_write(r, &op->dst, it->off[0], n, s[0], ss[0],
			    act);
			return (0);
		}
		for (i = 0; i < n; i++)
			o[i] = s[0][(int64_t)i * ss[0]];
		return (0);
	case NKIR__V1__OP_KIND__OP_TENSOR_TENSOR:
		sim_exec_alu_row(op->alu, o, s[0], ss[0], s[1], ss[1], n);
		break;
	case NKIR__V1__OP_KIND__OP_ACTIVATION:
		sim_exec_act_row(op, o, s[0], ss[0],
		    op->nsrc > 1 ? s[1] : &zero, op->nsrc > 1 ? ss[1] : 0, n);
		break;
	case NKIR__V1__OP_KIND__OP_SELECT:
		for (i = 0; i < n; i++)
			o[i] = s[0][(int64_t)i * ss[0]] != 0.0f ?
			    s[1][(int64_t)i * ss[1]] : s[2][(int64_t)i * ss[2]];
		break;
	case NKIR__V1__OP_KIND__OP_IOTA:
		base = sim_exec_lin_row(r, &op->expr, it);
		step = op->expr.ax[op->rank - 1];
		for (i = 0; i < n; i++)
			o[i] = (float)(base + (int64_t)i * step);
		break;
	}
	if (!direct && stage == NULL && fdst == NULL)
		sim_exec_write(r, &op->dst, it->off[0], n, o, 1, act);
	return (0);
}

/*
 * Copies that transpose (load, store, tensor_copy or transpose of fp32
 * to fp32, unmasked, where one side is contiguous along the next-to-last
 * axis and not along the last): the last two axes run as a blocked 2-D
 * copy, so both sides stay in L1 instead of one side striding through a
 * row per element.
 */
#define SIM_TBLOCK	16

static bool
sim_exec_transposing(const struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*d = &op->dst, *s = &op->src[0].v;
	int			 l = op->rank - 1;

	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_LOAD:
	case NKIR__V1__OP_KIND__OP_STORE:
	case NKIR__V1__OP_KIND__OP_COPY:
	case NKIR__V1__OP_KIND__OP_TRANSPOSE:
		break;
	default:
		return (false);
	}
	if (op->masked || op->stage || op->rank < 2 || op->src[0].scalar ||
	    r->t[d->tensor].dtype != SIM_DT_FLOAT32 || !r->t[d->tensor].f32 ||
	    !r->t[s->tensor].f32 || d->tensor == s->tensor)
		return (false);
	if (d->off.ax[l] == 1 && s->off.ax[l] == 1)
		return (false);
	return ((d->off.ax[l - 1] == 1 || s->off.ax[l - 1] == 1) &&
	    op->shape[l] > 1 && op->shape[l - 1] > 1);
}

/* d[j*dj + i] = s[i*si + j] for an [nj, ni] block: both sides contiguous
 * on different axes (a transpose), in 4x4 register transposes. */
static void
sim_exec_transpose_block(float *d, int64_t dj, const float *s, int64_t si,
    size_t nj, size_t ni)
{
	size_t	j = 0, i;
#ifdef __SSE__
	size_t	k;
	__m128	r0, r1, r2, r3;

	for (; j + 4 <= nj; j += 4) {
		for (i = 0; i + 4 <= ni; i += 4) {
			r0 = _mm_loadu_ps(s + (int64_t)i * si + j);
			r1 = _mm_loadu_ps(s + (int64_t)(i + 1) * si + j);
			r2 = _mm_loadu_ps(s + (int64_t)(i + 2) * si + j);
			r3 = _mm_loadu_ps(s + (int64_t)(i + 3) * si + j);
			_MM_TRANSPOSE4_PS(r0, r1, r2, r3);
			_mm_storeu_ps(d + (int64_t)j * dj + i, r0);
			_mm_storeu_ps(d + (int64_t)(j + 1) * dj + i, r1);
			_mm_storeu_ps(d + (int64_t)(j + 2) * dj + i, r2);
			_mm_storeu_ps(d + (int64_t)(j + 3) * dj + i, r3);
		}
		for (; i < ni; i++)
			for (k = j; k < j + 4; k++)
				d[(int64_t)k * dj + i] = s[(int64_t)i * si + k];
	}
#endif
	for (; j < nj; j++)
		for (i = 0; i < ni; i++)
			d[(int64_t)j * dj + i] = s[(int64_t)i * si + j];
}

/* The transposing copy of op for axis-0 indices [lo, hi). */
static void
sim_exec_transpose_copy(struct sim_run *r, const struct sim_op *op,
    uint64_t lo, uint64_t hi)
{
	const struct sim_view	*vs[2] = { &op->dst, &op->src[0].v };
	const float		*sbase, *s, *sp;
	float			*dbase, *d, *dp;
	struct sim_rows		 it;
	int64_t			 di, dj, si, sj, t;
	size_t			 ni, nj, n, jb, ib, je, ie, j, i;
	int			 l = op->rank - 1;

	di = op->dst.off.ax[l];
	dj = op->dst.off.ax[l - 1];
	si = op->src[0].v.off.ax[l];
	sj = op->src[0].v.off.ax[l - 1];
	ni = op->shape[l];
	nj = op->shape[l - 1];
	dbase = (float *)r->t[op->dst.tensor].base;
	sbase = (const float *)r->t[op->src[0].v.tensor].base;
	if (l == 1) {	/* axis 0 is the block's: take rows lo .. hi */
		dbase += dj * (int64_t)lo;
		sbase += sj * (int64_t)lo;
		nj = hi - lo;
	}
	if (dj == 1 && si == 1) {	/* name the axes so di == 1 */
		t = di;
		n = ni;
		di = dj, dj = t;
		t = si, si = sj, sj = t;
		ni = nj, nj = n;
	}
	/* iterate axes 0 .. rank-3; each step is one 2-D [nj, ni] block */
	sim_exec_rows_begin(&it, r, op->rank - 1, op->shape, vs, 2);
	if (l >= 2)
		sim_exec_rows_range(&it, lo, hi);
	do {
		d = dbase + it.off[0];
		s = sbase + it.off[1];
		if (di == 1 && sj == 1) {
			for (jb = 0; jb < nj; jb += SIM_TBLOCK)
				for (ib = 0; ib < ni; ib += SIM_TBLOCK)
					sim_exec_transpose_block(
					    d + (int64_t)jb * dj + ib, dj,
					    s + (int64_t)ib * si + jb, si,
					    nj - jb < SIM_TBLOCK ? nj - jb :
					    SIM_TBLOCK, ni - ib < SIM_TBLOCK ?
					    ni - ib : SIM_TBLOCK);
			continue;
		}
		for (jb = 0; jb < nj; jb += SIM_TBLOCK) {
			je = jb + SIM_TBLOCK < nj ? jb + SIM_TBLOCK : nj;
			for (ib = 0; ib < ni; ib += SIM_TBLOCK) {
				ie = ib + SIM_TBLOCK < ni ? ib + SIM_TBLOCK :
				    ni;
				for (j = jb; j < je; j++) {
					dp = d + (int64_t)j * dj +
					    (int64_t)ib * di;
					sp = s + (int64_t)j * sj +
					    (int64_t)ib * si;
					for (i = ib; i < ie; i++) {
						*dp = *sp;
						dp += di;
						sp += si;
					}
				}
			}
		}
	} while (sim_exec_rows_next(&it));
}

/* An element-wise op (not staged) for axis-0 indices [lo, hi). */
static int
sim_exec_ew_part(struct sim_run *r, const struct sim_op *op, size_t k,
    uint64_t lo, uint64_t hi, void *ctx)
{
	struct sim_rows	it;
	int		rc;

	if (sim_exec_transposing(r, op)) {
		sim_exec_transpose_copy(r, op, lo, hi);
		return (0);
	}
	sim_exec_ew_begin(&it, r, op);
	sim_exec_rows_range(&it, lo, hi);
	do {
		if ((rc = sim_exec_ew_row(r, op, &it, NULL, NULL, NULL,
		    NULL)))
			return (rc);
	} while (sim_exec_rows_next(&it));
	return (0);
}

int
sim_exec_elementwise(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*vs[1] = { &op->dst };
	struct sim_rows		 it;
	size_t			 n = op->shape[op->rank - 1];
	float			*stage;
	uint8_t			*sact;
	int			 rc;

	if (!op->stage) {
		if (op->par_split)
			return (sim_exec_split(r, op, 1, op->shape[0], 1,
			    op->par_work, sim_exec_ew_part, NULL));
		return (sim_exec_ew_part(r, op, 1, 0, op->shape[0], NULL));
	}
	sim_exec_ew_begin(&it, r, op);
	{
		/* dst overlaps a source: read everything before writing */
		stage = r->scratch;
		sact = (uint8_t *)(r->scratch + op->dst.nelem);
		do {
			if ((rc = sim_exec_ew_row(r, op, &it, stage,
			    op->masked ? sact : NULL, NULL, NULL)))
				return (rc);
			stage += n;
			sact += n;
		} while (sim_exec_rows_next(&it));
		stage = r->scratch;
		sact = (uint8_t *)(r->scratch + op->dst.nelem);
		sim_exec_rows_begin(&it, r, op->rank, op->shape, vs, 1);
		do {
			sim_exec_write(r, &op->dst, it.off[0], n, stage, 1,
			    op->masked ? sact : NULL);
			stage += n;
			sact += n;
		} while (sim_exec_rows_next(&it));
		return (0);
	}
}


/* A row reduction in a fused group (sim_opt_row_reduce): the row at the
 * iterator folded into dst's element, the arithmetic of sim_exec_reduce
 * for one row. x (if not NULL) is the row passed on in place. */
static void
sim_exec_reduce_row(struct sim_run *r, const struct sim_op *op,
    const struct sim_rows *it, const float *x)
{
	size_t	n = op->shape[1];
	int64_t	sx = 1;
	int	alu = op->alu;
	float	acc, cnt, mean;

	if (x == NULL)
		x = sim_exec_read(r, &op->src[0], it->off[1], n, r->row[0],
		    &sx, NULL);
	if (alu == NKIR__V1__ALU_OP__ALU_VAR)
		alu = NKIR__V1__ALU_OP__ALU_MEAN;
	acc = sim_exec_fold(alu, sim_exec_reduce_init(op->alu), x, sx, NULL,
	    n, NULL);
	cnt = sim_exec_count(0.0f, NULL, n);
	if (alu == NKIR__V1__ALU_OP__ALU_MEAN)
		acc = cnt > 0.0f ? acc / cnt : NAN;
	if (op->alu == NKIR__V1__ALU_OP__ALU_VAR) {
		mean = acc;
		acc = sim_exec_fold(op->alu, 0.0f, x, sx, NULL, n, &mean);
		cnt = sim_exec_count(0.0f, NULL, n);
		acc = cnt > 0.0f ? acc / cnt : NAN;
	}
	sim_exec_write(r, &op->dst, it->off[0], 1, &acc, 1, NULL);
}

/* Row j of group op's forwarded source i, or NULL. */
static const float *
sim_exec_fwd_src(const struct sim_run *r, const struct sim_op *ops,
    const struct sim_rows *it, const struct sim_op *op, int i)
{
	size_t	l = op->fwd_src[i];

	if (l == 0)
		return (NULL);
	return ((const float *)r->t[ops[l - 1].src[0].v.tensor].base +
	    it[l - 1].off[1]);
}

/* A fused group (sim_op.fuse): the ops run row by row in lockstep, so a
 * row stays in cache from load to store. The planner proved this equal
 * to running them one after the other. Forwarded loads and stores
 * (sim_opt_forward) do nothing: their HBM rows are read and written in
 * place by the ops around them; a member skipped after the group was
 * formed (a load forwarded into a matmul) does nothing either. */
static int
sim_exec_fused_part(struct sim_run *r, const struct sim_op *ops, size_t k,
    uint64_t lo, uint64_t hi, void *ctx)
{
	struct sim_rows	 it[SIM_FUSE_MAX];
	const float	*fs[3];
	float		*fd;
	bool		 more;
	int		 rc, i;
	size_t		 j;

	for (j = 0; j < k; j++) {
		sim_exec_ew_begin(&it[j], r, &ops[j]);
		sim_exec_rows_range(&it[j], lo, hi);
	}
	do {
		for (j = 0; j < k; j++) {
			const struct sim_op	*op = &ops[j];

			if (op->skip)	/* a load forwarded into a matmul */
				continue;
			if (op->fwd) {
				if (op->kind == NKIR__V1__OP_KIND__OP_LOAD)
					sim_exec_prefetch(r, op, &it[j],
					    op->shape[op->rank - 1]);
				continue;
			}
			for (i = 0; i < 3; i++)
				fs[i] = i < op->nsrc ?
				    sim_exec_fwd_src(r, ops, it, op, i) : NULL;
			if (op->kind == NKIR__V1__OP_KIND__OP_REDUCE) {
				sim_exec_reduce_row(r, op, &it[j], fs[0]);
				continue;
			}
			fd = op->fwd_dst == 0 ? NULL :
			    (float *)r->t[ops[op->fwd_dst - 1].dst.tensor].base +
			    it[op->fwd_dst - 1].off[0];
			if ((rc = sim_exec_ew_row(r, op, &it[j], NULL, NULL,
			    fs, fd)))
				return (rc);
		}
		more = false;
		for (j = 0; j < k; j++)
			more = sim_exec_rows_next(&it[j]);
	} while (more);
	return (0);
}

int
sim_exec_fused(struct sim_run *r, const struct sim_op *ops, size_t k)
{
	uint64_t	work = 0;
	bool		split = true;
	size_t		j;

	for (j = 0; j < k; j++) {
		split = split && ops[j].par_split;
		work += ops[j].par_work;
	}
	if (split)
		return (sim_exec_split(r, ops, k, ops[0].shape[0], 1, work,
		    sim_exec_fused_part, NULL));
	return (sim_exec_fused_part(r, ops, k, 0, ops[0].shape[0], NULL));
}
