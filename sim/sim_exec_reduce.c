/* sim_exec_reduce.c: the interpreter's reductions along the innermost axes (in one or two passes, rows split over the pool) and bn_stats and bn_aggr. */
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

/* A pass of a reduction (sim_exec_reduce_pass). */
struct sim_exec_fold {
	int		 alu;
	float		*acc;
	float		*cnt;
	const float	*mean;
};

/* One pass over src0's rows with axis-0 index in [lo, hi), folding into
 * acc (dst-shaped, contiguous); for VAR's second pass mean holds the
 * means. cnt counts active elements. */
/*
 * The innermost axis reduced, the one before it kept (average pooling's
 * [.., ow, dw]): the rows of a block along those two axes in one go, the
 * same folds in the same order as row by row, without a row's overhead
 * for a few elements each.
 */
static int
sim_exec_reduce_short(struct sim_run *r, const struct sim_op *op,
    const struct sim_exec_fold *f, const uint64_t *astride, uint64_t lo,
    uint64_t hi)
{
	const struct sim_view	*v = &op->src[0].v, *vs[1] = { v };
	const float		*base = (const float *)r->t[v->tensor].base;
	int			 last = op->rank - 1, a;
	size_t			 n = op->shape[last], m = op->shape[last - 1];
	int64_t			 sx = v->off.ax[last], sj = v->off.ax[last - 1];
	uint64_t		 aj = astride[last - 1];
	struct sim_rows		 it;
	size_t			 j;

	sim_exec_rows_begin(&it, r, op->rank - 1, op->shape, vs, 1);
	sim_exec_rows_range(&it, lo, hi);
	do {
		uint64_t	ao = 0;

		for (a = 0; a < last - 1; a++)
			ao += astride[a] * it.idx[a];
		for (j = 0; j < m; j++, ao += aj) {
			f->acc[ao] = sim_exec_fold(f->alu, f->acc[ao],
			    base + it.off[0] + (int64_t)j * sj, sx, NULL, n,
			    f->mean ? &f->mean[ao] : NULL);
			f->cnt[ao] = sim_exec_count(f->cnt[ao], NULL, n);
		}
	} while (sim_exec_rows_next(&it));
	return (0);
}

static int
sim_exec_reduce_part(struct sim_run *r, const struct sim_op *op, size_t nop,
    uint64_t lo, uint64_t hi, void *ctx)
{
	const struct sim_exec_fold	*f = ctx;
	const float			*mean = f->mean;
	float				*acc = f->acc, *cnt = f->cnt;
	int				 alu = f->alu;
	const struct sim_view		*vs[1] = { &op->src[0].v };
	int				 last = op->rank - 1;
	size_t				 n = op->shape[last];
	uint64_t			 astride[SIM_MAX_RANK], s = 1;
	bool				 inner = op->axes & (1u << last);
	struct sim_rows			 it;
	size_t				 i;
	int				 a, rc;

	for (a = op->rank - 1; a >= 0; a--) {
		bool	red = op->axes & (1u << a);

		astride[a] = red ? 0 : s;
		s *= red ? 1 : op->shape[a];
	}
	if (inner && last >= 2 && !(op->axes & (1u << (last - 1))) &&
	    !op->src[0].v.nmask && r->t[op->src[0].v.tensor].f32)
		return (sim_exec_reduce_short(r, op, f, astride, lo, hi));
	sim_exec_rows_begin(&it, r, op->rank, op->shape, vs, 1);
	sim_exec_rows_range(&it, lo, hi);
	do {
		const uint8_t	*act;
		const float	*x;
		uint64_t	 ao = 0;
		int64_t		 sx;

		if ((rc = sim_exec_row_act(r, op, op->src[0].v.nmask, &it, n,
		    &act)))
			return (rc);
		for (a = 0; a < last; a++)
			ao += astride[a] * it.idx[a];
		x = sim_exec_read(r, &op->src[0], it.off[0], n, r->row[0], &sx,
		    act);
		if (inner) {
			acc[ao] = sim_exec_fold(alu, acc[ao], x, sx, act, n,
			    mean ? &mean[ao] : NULL);
			cnt[ao] = sim_exec_count(cnt[ao], act, n);
			continue;
		}
		for (i = 0; i < n; i++) {
			if (act && !act[i])
				continue;
			acc[ao + i] = sim_exec_fold(alu, acc[ao + i],
			    &x[(int64_t)i * sx], 0, NULL, 1,
			    mean ? &mean[ao + i] : NULL);
			cnt[ao + i] += 1.0f;
		}
	} while (sim_exec_rows_next(&it));
	return (0);
}

/* One pass of the reduction, its rows split over the pool when worth it
 * (axis 0 is never reduced: parts fold into disjoint outputs). */
static int
sim_exec_reduce_pass(struct sim_run *r, const struct sim_op *op, int alu,
    float *acc, float *cnt, const float *mean)
{
	struct sim_exec_fold	f = { alu, acc, cnt, mean };

	if (op->par_split)
		return (sim_exec_split(r, op, 1, op->shape[0], 1, op->par_work,
		    sim_exec_reduce_part, &f));
	return (sim_exec_reduce_part(r, op, 1, 0, op->shape[0], &f));
}

int
sim_exec_reduce(struct sim_run *r, const struct sim_op *op)
{
	size_t	 m = op->dst.nelem;
	float	*acc = r->scratch, *cnt = acc + m, *mean = cnt + m;
	int	 alu = op->alu, rc;
	size_t	 i;

	for (i = 0; i < m; i++) {
		acc[i] = sim_exec_reduce_init(alu);
		cnt[i] = 0.0f;
	}
	if (alu == NKIR__V1__ALU_OP__ALU_VAR)
		alu = NKIR__V1__ALU_OP__ALU_MEAN;
	if ((rc = sim_exec_reduce_pass(r, op, alu, acc, cnt, NULL)))
		return (rc);
	if (alu == NKIR__V1__ALU_OP__ALU_MEAN)
		for (i = 0; i < m; i++)
			acc[i] = cnt[i] > 0.0f ? acc[i] / cnt[i] : NAN;
	if (op->alu == NKIR__V1__ALU_OP__ALU_VAR) {
		memcpy(mean, acc, m * sizeof(float));
		for (i = 0; i < m; i++)
			acc[i] = cnt[i] = 0.0f;
		if ((rc = sim_exec_reduce_pass(r, op, op->alu, acc, cnt, mean)))
			return (rc);
		for (i = 0; i < m; i++)
			acc[i] = cnt[i] > 0.0f ? acc[i] / cnt[i] : NAN;
	}
	return (sim_exec_scatter(r, op, &op->dst, acc));
}


/* bn_stats of one partition's F values x (active where a[i]): per chunk
 * of SIM_BN_FMAX, for the even and the odd elements, count, mean and the
 * sum of squared deviations (masked-off elements count for nothing). */
static void
sim_exec_bn_stats(const float *x, const uint8_t *a, size_t F, float *o)
{
	float	cnt, sum, m2, mean;
	size_t	c0, c1, par, i, k = 0;

	for (c0 = 0; c0 < F; c0 += SIM_BN_FMAX) {
		c1 = c0 + SIM_BN_FMAX < F ? c0 + SIM_BN_FMAX : F;
		for (par = 0; par < 2; par++, k += 3) {
			cnt = sum = m2 = 0;
			for (i = c0 + par; i < c1; i += 2) {
				if (!a[i])
					continue;
				sum += x[i];
				cnt += 1.0f;
			}
			mean = cnt > 0 ? sum / cnt : 0.0f;
			for (i = c0 + par; i < c1; i += 2)
				if (a[i])
					m2 += (x[i] - mean) * (x[i] - mean);
			o[k] = cnt;
			o[k + 1] = mean;
			o[k + 2] = m2;
		}
	}
}

/* bn_aggr of one partition's F / 3 (count, mean, m2) triples x: the
 * mean and the variance of all. */
static void
sim_exec_bn_aggr(const float *x, size_t F, float *o)
{
	float	n = 0, sum = 0, m2 = 0, mean;
	size_t	i;

	for (i = 0; i < F; i += 3) {
		n += x[i];
		sum += x[i] * x[i + 1];
	}
	mean = n > 0 ? sum / n : 0.0f;
	for (i = 0; i < F; i += 3)
		m2 += x[i + 2] + x[i] * (x[i + 1] - mean) * (x[i + 1] - mean);
	o[0] = mean;
	o[1] = n > 0 ? m2 / n : 0.0f;
}

int
sim_exec_bn(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*s = &op->src[0].v;
	size_t			 F = s->shape[1], D = op->dst.shape[1], p;
	float			*in = r->scratch, *out = in + s->nelem;
	uint8_t			*on;
	bool			 stats;
	int			 rc;

	/* bn_stats: which source elements are active, after out in the
	 * scratch (see sim_plan_bn) */
	on = (uint8_t *)(out + op->dst.nelem);
	stats = op->kind == NKIR__V1__OP_KIND__OP_BN_STATS;
	if ((rc = sim_exec_gather(r, op, &op->src[0], in, stats ? on : NULL,
	    0.0f)))
		return (rc);
	for (p = 0; p < s->shape[0]; p++) {
		if (stats)
			sim_exec_bn_stats(in + p * F, on + p * F, F,
			    out + p * D);
		else
			sim_exec_bn_aggr(in + p * F, F, out + p * D);
	}
	return (sim_exec_scatter(r, op, &op->dst, out));
}
