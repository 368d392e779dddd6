/* model_cost.c: the model's cost rules: an access's static shape, then each instruction's engine, occupancy and latency from NKI's documents. */
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

/* ------------------------------------------------------------ accesses */

/* The partition dimension of tensor t (0 for HBM tensors). */
uint32_t
model_part_dim(const Nkir__V1__Tensor *t)
{
	if (t->space == NKIR__V1__SPACE__SPACE_SBUF ||
	    t->space == NKIR__V1__SPACE__SPACE_PSUM)
		return (t->partition_dim < t->n_shape ? t->partition_dim : 0);
	return (0);
}

/*
 * Contiguous runs per partition of access a whose free axes have the
 * element strides st[1 .. rank-1] in some layout.
 */
static uint64_t
model_runs(const Nkir__V1__Access *a, const int64_t *st, uint64_t n)
{
	uint64_t	run = 1;
	size_t		i;

	for (i = a->n_shape; i-- > 1;) {
		if (a->shape[i] == 1)
			continue;
		if (st[i] != (int64_t)run)
			break;
		run *= a->shape[i];
	}
	return (run ? (n + run - 1) / run : n);
}

/* Index function i of k (a TERM_FN target) is well formed. */
static int
model_fn_ok(const Nkir__V1__Kernel *k, uint32_t i)
{
	const Nkir__V1__IndexFn	*f = i < k->n_fns ? k->fns[i] : NULL;
	size_t			 j;

	if (f == NULL || f->expr == NULL || f->divisor < 1)
		return (0);
	for (j = 0; j < f->expr->n_terms; j++) {
		const Nkir__V1__Term *t = f->expr->terms[j];

		if (t == NULL || (t->kind == NKIR__V1__TERM_KIND__TERM_LOOP ?
		    t->index >= k->num_loop_vars : t->kind !=
		    NKIR__V1__TERM_KIND__TERM_PROGRAM || t->index >= k->n_grid))
			return (0);
	}
	return (1);
}

/* The value of index function i (checked by model_fn_ok) now: python's
 * % or // of its expression of loop variables and program ids. */
static int64_t
model_fn(const struct model_ctx *m, uint32_t i)
{
	const Nkir__V1__IndexFn	*f = m->k->fns[i];
	uint64_t		 u = (uint64_t)f->expr->constant;
	int64_t			 v, q, r;
	size_t			 j;

	for (j = 0; j < f->expr->n_terms; j++) {
		const Nkir__V1__Term *t = f->expr->terms[j];

		u += (uint64_t)t->coef * (uint64_t)(t->kind ==
		    NKIR__V1__TERM_KIND__TERM_LOOP ? m->vars[t->index] :
		    m->prog[t->index]);
	}
	v = (int64_t)u;
	q = v / f->divisor;
	r = v % f->divisor;
	if (r < 0) {
		r += f->divisor;
		q--;
	}
	return (f->kind == NKIR__V1__FN_KIND__FN_FLOORDIV ? q : r);
}

/* Every condition of an if holds for the current loop variables and
 * program ids (checked conditions: TERM_AXIS reads as 0). */
int
model_holds(const struct model_ctx *m, const Nkir__V1__Branch *br)
{
	size_t	i, j;

	for (i = 0; i < br->n_cond; i++) {
		const Nkir__V1__Affine	*a = br->cond[i];
		uint64_t		 u;

		if (a == NULL)
			continue;
		u = (uint64_t)a->constant;
		for (j = 0; j < a->n_terms; j++) {
			const Nkir__V1__Term *t = a->terms[j];

			if (t == NULL)
				continue;
			if (t->kind == NKIR__V1__TERM_KIND__TERM_LOOP &&
			    t->index < m->k->num_loop_vars)
				u += (uint64_t)t->coef * (uint64_t)m->vars[t->index];
			else if (t->kind == NKIR__V1__TERM_KIND__TERM_PROGRAM &&
			    t->index < MODEL_MAX_GRID)
				u += (uint64_t)t->coef * (uint64_t)m->prog[t->index];
			else if (t->kind == NKIR__V1__TERM_KIND__TERM_FN &&
			    model_fn_ok(m->k, t->index))
				u += (uint64_t)t->coef * (uint64_t)model_fn(m,
				    t->index);
		}
		if ((int64_t)u < 0)
			return (0);
	}
	return (1);
}

struct model_acc *
model_acc_new(struct model_ctx *m, const Nkir__V1__Access *a)
{
	const Nkir__V1__Kernel	*k = m->k;
	const Nkir__V1__Tensor	*t;
	struct model_acc	*x;
	int64_t			 gst[9], lst[9], axg[9], axl[9], axp[9];
	uint64_t		 stride, lstride, cnt;
	uint32_t		 pd, d;
	size_t			 i, j, nt = 0;
	int			 part_uses_ax0 = 0, free_axes = 0, onchip;

	if (a == NULL || a->tensor >= k->n_tensors)
		return (model_fail(m, MODEL_EPARSE, "an access names no "
		    "tensor of the kernel"), NULL);
	t = k->tensors[a->tensor];
	if (a->n_index != t->n_shape || t->n_shape < 1 || t->n_shape > 8 ||
	    a->n_shape < 1 || a->n_shape > 8)
		return (model_fail(m, MODEL_EPARSE, "access of tensor '%s' "
		    "does not match its rank", t->name), NULL);
	pd = model_part_dim(t);
	onchip = t->space == NKIR__V1__SPACE__SPACE_SBUF ||
	    t->space == NKIR__V1__SPACE__SPACE_PSUM;
	/* Row-major element strides: global, and within a partition. */
	stride = lstride = 1;
	for (d = (uint32_t)t->n_shape; d-- > 0;) {
		gst[d] = (int64_t)stride;
		lst[d] = !onchip ? (int64_t)stride : d == pd ? 0 :
		    (int64_t)lstride;
		if (t->shape[d] == 0 || stride > (1ULL << 40) / t->shape[d])
			return (model_fail(m, MODEL_EPARSE, "tensor '%s' is "
			    "too large", t->name), NULL);
		stride *= t->shape[d];
		if (!onchip || d != pd)
			lstride *= t->shape[d];
	}
	/*
	 * Dependencies are tracked on intervals of offsets (model_acc_range).
	 * On chip the offsets put the partition innermost (p + P x offset in
	 * the partition), so that slices of a tile disjoint along its free
	 * dimensions, all partitions each, have disjoint intervals.
	 */
	if (onchip)
		for (d = 0; d < t->n_shape; d++)
			gst[d] = d == pd ? 1 : (int64_t)t->shape[pd] * lst[d];
	if ((x = calloc(1, sizeof *x)) == NULL)
		return (model_fail(m, MODEL_ELIMIT, "out of memory"), NULL);
	x->ir = a;
	x->tensor = a->tensor;
	x->dtype = t->dtype;
	x->space = t->space;
	x->parts = a->shape[0];
	for (x->n = 1, i = 1; i < a->n_shape; i++)
		x->n *= a->shape[i];
	memset(axg, 0, sizeof axg);
	memset(axl, 0, sizeof axl);
	memset(axp, 0, sizeof axp);
	for (d = 0; d < t->n_shape; d++) {
		const Nkir__V1__Affine *e = a->index[d];

		if (e == NULL)
			continue;
		x->c += e->constant * gst[d];
		if (onchip && d == pd)
			x->pc += e->constant;
		for (j = 0; j < e->n_terms; j++) {
			const Nkir__V1__Term *tm = e->terms[j];

			if (tm == NULL)
				continue;
			switch (tm->kind) {
			case NKIR__V1__TERM_KIND__TERM_AXIS:
				if (tm->index >= a->n_shape)
					goto bad;
				axg[tm->index] += tm->coef * gst[d];
				axl[tm->index] += tm->coef * lst[d];
				if (onchip && d == pd)
					axp[tm->index] += tm->coef;
				if (d == pd && tm->index == 0)
					part_uses_ax0 = 1;
				if (d != pd && tm->index > 0 &&
				    a->shape[tm->index] > 1)
					free_axes = 1;
				break;
			case NKIR__V1__TERM_KIND__TERM_LOOP:
				if (tm->index >= k->num_loop_vars)
					goto bad;
				/* FALLTHROUGH */
			case NKIR__V1__TERM_KIND__TERM_FN:
				if (tm->kind == NKIR__V1__TERM_KIND__TERM_FN &&
				    !model_fn_ok(k, tm->index))
					goto bad;
				/* FALLTHROUGH */
			case NKIR__V1__TERM_KIND__TERM_PROGRAM:
				if (tm->kind == NKIR__V1__TERM_KIND__TERM_PROGRAM &&
				    tm->index >= k->n_grid)
					goto bad;
				x->terms = realloc(x->terms, (nt + 1) *
				    sizeof *x->terms);
				if (x->terms == NULL)
					goto oom;
				x->terms[nt].id = tm->index;
				x->terms[nt].prog = tm->kind ==
				    NKIR__V1__TERM_KIND__TERM_PROGRAM ? 1 :
				    tm->kind == NKIR__V1__TERM_KIND__TERM_FN ? 2 : 0;
				x->terms[nt].part = onchip && d == pd;
				x->terms[nt++].coef = tm->coef * gst[d];
				break;
			default:
				goto bad;
			}
		}
	}
	x->nterms = nt;
	for (cnt = 1, i = 0; i < a->n_shape; i++) {
		int64_t	span = axg[i] * (int64_t)(a->shape[i] - 1);
		int64_t	pspan = axp[i] * (int64_t)(a->shape[i] - 1);

		if (span < 0)
			x->amin += span;
		else
			x->amax += span;
		if (pspan < 0)
			x->pmin += pspan;
		else
			x->pmax += pspan;
		cnt *= a->shape[i];
	}
	x->part_bcast = x->parts > 1 && !part_uses_ax0 && onchip;
	x->free_bcast = x->n > 1 && !free_axes;
	x->covers = cnt == stride && (uint64_t)(x->amax - x->amin) + 1 == stride;
	if (onchip) {
		for (i = a->n_shape; i-- > 1;)
			if (a->shape[i] > 1) {
				int64_t s = axl[i] < 0 ? -axl[i] : axl[i];

				x->slow_stride = (uint64_t)s *
				    model_esize(t->dtype) > MODEL_STRIDE_BYTES;
				break;
			}
		x->runs = model_runs(a, axl, x->n);
	} else
		x->runs = model_runs(a, axg, x->n);
	return (x);
bad:
	free(x->terms);
	free(x);
	return (model_fail(m, MODEL_EPARSE, "an access of tensor '%s' has a "
	    "malformed index", t->name), NULL);
oom:
	free(x);
	return (model_fail(m, MODEL_ELIMIT, "out of memory"), NULL);
}

void
model_acc_free(struct model_acc *x)
{
	if (x != NULL) {
		free(x->terms);
		free(x);
	}
}

/*
 * What access x touches at the current values: its offsets (HBM:
 * row-major; on chip: the partition innermost, see model_acc_new) and
 * its partitions (on chip).
 */
void
model_acc_range(const struct model_ctx *m, const struct model_acc *x,
    struct model_rng *r)
{
	uint64_t	base = (uint64_t)x->c, pbase = (uint64_t)x->pc;
	size_t		i;

	for (i = 0; i < x->nterms; i++) {
		int64_t	v = x->terms[i].prog == 2 ? model_fn(m,
		    x->terms[i].id) : x->terms[i].prog ?
		    m->prog[x->terms[i].id] : m->vars[x->terms[i].id];

		base += (uint64_t)x->terms[i].coef * (uint64_t)v;
		if (x->terms[i].part)
			pbase += (uint64_t)x->terms[i].coef * (uint64_t)v;
	}
	r->lo = (int64_t)(base + (uint64_t)x->amin);
	r->hi = (int64_t)(base + (uint64_t)x->amax);
	r->plo = (int64_t)(pbase + (uint64_t)x->pmin);
	r->phi = (int64_t)(pbase + (uint64_t)x->pmax);
}

/* ------------------------------------------------------------ costs */

static double
model_cyc(const struct model_ctx *m, int eng, double cycles)
{
	return (cycles / m->t->ghz[eng]);
}

static double
model_lat(const struct model_ctx *m, int eng)
{
	static const double lat[4] = { MODEL_LAT_TENSOR, MODEL_LAT_VECTOR,
	    MODEL_LAT_SCALAR, MODEL_LAT_GPSIMD };

	return (model_cyc(m, eng, lat[eng]));
}

/*
 * Cycles of an element-wise pass over n elements per partition on eng:
 * work cycles at one element per partition per cycle (arch: 128 lanes,
 * "roughly N cycles"), scaled by trn2's wider VectorE (trn2 arch),
 * doubled for a most-minor stride over 16 bytes (arch), at least
 * MIN_II (isa); GpSimd instead pays GPSIMD_START + N (isa, iota).
 */
static double
model_pass(const struct model_ctx *m, int eng, double work, int all16,
    int slow)
{
	if (eng == ENG_V)
		work /= all16 ? m->t->vec_per16 : m->t->vec_per32;
	else if (eng == ENG_S && all16)
		work /= m->t->sca_per16;
	if (slow)
		work *= 2.0;
	if (eng == ENG_G)
		return (model_cyc(m, eng, MODEL_GPSIMD_START + work));
	return (model_cyc(m, eng, work > MODEL_MIN_II ? work : MODEL_MIN_II));
}

/* The engine an op runs on when its engine field leaves it open. */
int
model_engine(const Nkir__V1__Op *o)
{
	switch (sim_op_engine_id((int)o->kind, (int)o->engine, (int)o->alu)) {
	case SIM_ENGINE_DMA:
		return (ENG_DMA);
	case SIM_ENGINE_TENSOR:
		return (ENG_T);
	case SIM_ENGINE_SCALAR:
		return (ENG_S);
	case SIM_ENGINE_GPSIMD:
		return (ENG_G);
	default:
		return (ENG_V);
	}
}

/*
 * An instruction's name in the modeled timeline: NKI's (sim_op_name),
 * except a tile declared with a value, which the hardware fills with a
 * memset.
 */
const char *
model_op_name(int kind)
{
	if (kind == NKIR__V1__OP_KIND__OP_ALLOC)
		return ("memset");
	return (sim_op_name(kind));
}

static void
model_pre_add(struct model_ctx *m, struct model_op *op, int track,
    double dur, const char *name)
{
	assert(op->npre < (int)(sizeof op->pre / sizeof op->pre[0]));
	op->pre[op->npre].track = track;
	op->pre[op->npre].dur_ns = dur;
	op->pre[op->npre].lat_ns = model_lat(m, track);
	op->pre[op->npre++].name = name;
}

/*
 * A DMA (load or store) between HBM access h and on-chip access s: one
 * transfer per 8 partitions on its own engine (arch: a 128-partition
 * load is 16 transfers, one per engine, of 8 partitions each). Each
 * keeps its engine busy for max(bytes, buffers x minimum buffer bytes) /
 * the rate the engine sustains, and lands at the earliest the target's
 * latency after it starts (trn1), or holds its queue for at least the
 * knee time (trn2). A DMA that writes HBM goes on the store queue, any
 * other on the load queue.
 */
void
model_dma_split(struct model_op *op, uint64_t parts)
{
	uint64_t	lastp, fp;

	if (parts == 0)
		parts = 1;
	op->pieces = (uint32_t)((parts + MODEL_DMA_PARTS - 1) / MODEL_DMA_PARTS);
	lastp = parts - (uint64_t)(op->pieces - 1) * MODEL_DMA_PARTS;
	fp = op->pieces > 1 ? MODEL_DMA_PARTS : parts;
#define DMA_OCC(p) fmax((double)(p) * op->dma_pp / op->dma_bw, \
	(double)(p) * op->dma_runs * MODEL_DMA_BUF_MIN / op->dma_bw)
	op->piece_occ = DMA_OCC(fp);
	op->last_occ = DMA_OCC(lastp);
#undef DMA_OCC
	op->piece_ns = fmax(op->dma_tmin, op->piece_occ);
	op->last_ns = fmax(op->dma_tmin, op->last_occ);
	op->piece_bytes = (uint64_t)((double)fp * op->dma_pp);
	op->last_bytes = (uint64_t)((double)lastp * op->dma_pp);
	op->dur_ns = op->piece_ns;
}

static void
model_cost_dma(struct model_ctx *m, struct model_op *op,
    const struct model_acc *h, const struct model_acc *s)
{
	const struct model_tgt *t = m->t;
	double		 eff, pp_bytes;
	size_t		 es = model_esize(h->dtype) > model_esize(s->dtype) ?
			    model_esize(h->dtype) : model_esize(s->dtype);

	op->dma_tmin = t->dma_lat > 0 ? t->dma_lat :
	    MODEL_DMA_KNEE_PP * MODEL_DMA_PARTS / t->dma_bw;
	pp_bytes = (double)s->n * (double)es;
	/*
	 * dma-bandwidth ("Bandwidth vs. Payload Size"): "256 B -- 2 KiB per
	 * partition: Improving but still below peak", "≥ 2 KiB per
	 * partition: Approaches peak bandwidth": the low share to 1 KiB,
	 * the high one from 2 KiB, in proportion between (the line GUESSED).
	 */
	eff = pp_bytes <= MODEL_DMA_EFF_LO_PP ? t->dma_eff_lo : pp_bytes >=
	    MODEL_DMA_EFF_HI_PP ? t->dma_eff_hi : t->dma_eff_lo +
	    (t->dma_eff_hi - t->dma_eff_lo) * (pp_bytes - MODEL_DMA_EFF_LO_PP) /
	    (MODEL_DMA_EFF_HI_PP - MODEL_DMA_EFF_LO_PP);
	op->dma_bw = t->dma_bw * eff;
	op->dma_pp = pp_bytes;
	op->dma_runs = (double)(h->runs > s->runs ? h->runs : s->runs);
	model_dma_split(op, s->parts);
	op->dma_q = op->dst->space == NKIR__V1__SPACE__SPACE_HBM ||
	    op->dst->space == NKIR__V1__SPACE__SPACE_SHARED_HBM;
	/* Masked partitions move nothing (model_acc_active_parts). */
	op->dma_side = op->dst->space == NKIR__V1__SPACE__SPACE_SBUF ||
	    op->dst->space == NKIR__V1__SPACE__SPACE_PSUM ? op->dst :
	    op->nsrc > 0 && (op->src[0]->space == NKIR__V1__SPACE__SPACE_SBUF ||
	    op->src[0]->space == NKIR__V1__SPACE__SPACE_PSUM) ? op->src[0] :
	    NULL;
	if (op->dma_side != NULL && (op->dma_side->ir == NULL ||
	    op->dma_side->ir->n_mask == 0))
		op->dma_side = NULL;
}

/*
 * A spill store of on-chip access a to the compiler's scratch in HBM, or
 * its reload: a DMA of a's bytes per partition, contiguous in HBM, on the
 * store or the load queue, at the rates of any load or store.
 */
struct model_op *
model_spill_op(struct model_ctx *m, const struct model_acc *a, int store)
{
	struct model_op	*sp;
	struct model_acc h = *a;

	if ((sp = calloc(1, sizeof *sp)) == NULL)
		return (NULL);
	h.space = NKIR__V1__SPACE__SPACE_HBM;
	h.runs = 1;
	h.ir = NULL;
	sp->kind = store ? NKIR__V1__OP_KIND__OP_STORE :
	    NKIR__V1__OP_KIND__OP_LOAD;
	sp->name = store ? "spill" : "reload";
	sp->track = ENG_DMA;
	sp->dst = store ? &h : (struct model_acc *)a;
	sp->src[0] = store ? (struct model_acc *)a : &h;
	sp->nsrc = 1;
	model_cost_dma(m, sp, &h, a);
	sp->dst = NULL;
	sp->src[0] = NULL;
	sp->nsrc = 0;
	sp->dma_side = NULL;
	return (sp);
}

uint64_t
model_acc_active_parts(const struct model_ctx *m, const struct model_acc *x)
{
	int64_t	lo = 0, hi = (int64_t)x->parts - 1, rest, c0, b;
	size_t	i, j;
	int	other;

	for (i = 0; x->ir != NULL && i < x->ir->n_mask; i++) {
		const Nkir__V1__Affine	*a = x->ir->mask[i];

		if (a == NULL)
			continue;
		rest = a->constant;
		c0 = 0;
		other = 0;
		for (j = 0; j < a->n_terms; j++) {
			const Nkir__V1__Term *t = a->terms[j];

			if (t == NULL)
				continue;
			switch (t->kind) {
			case NKIR__V1__TERM_KIND__TERM_AXIS:
				if (t->index == 0)
					c0 += t->coef;
				else if (t->index < x->ir->n_shape &&
				    x->ir->shape[t->index] > 1)
					other = 1;
				break;
			case NKIR__V1__TERM_KIND__TERM_LOOP:
				if (t->index < m->k->num_loop_vars)
					rest += t->coef * m->vars[t->index];
				break;
			case NKIR__V1__TERM_KIND__TERM_PROGRAM:
				if (t->index < MODEL_MAX_GRID)
					rest += t->coef * m->prog[t->index];
				break;
			default:
				other = 1;	/* a run-time value */
				break;
			}
		}
		/* active iff c0 * p + rest >= 0 (nkir.proto, Access.mask) */
		if (other)
			continue;
		if (c0 == 0) {
			if (rest < 0)
				return (0);
		} else if (c0 > 0) {
			b = rest >= 0 ? -(rest / c0) : (-rest + c0 - 1) / c0;
			if (b > lo)
				lo = b;
		} else {
			b = rest >= 0 ? rest / -c0 : -((-rest + -c0 - 1) / -c0);
			if (b < hi)
				hi = b;
		}
	}
	return (hi >= lo ? (uint64_t)(hi - lo + 1) : 0);
}

/*
 * dma_copy and dma_transpose: a DMA between the HBM side and the other
 * (dst when both are HBM or both on chip), as load and store are. On
 * trn1 a DMA transpose writes element by element (perf: "much lower DMA
 * bandwidth compared to nl.load"): each element a buffer of its own.
 * From trn2 on the DMA engines transpose 2-byte elements as they move
 * them: its bytes at 90% of the engines' rate from HBM, 50% from SBUF
 * (trn2 arch, MODEL_DMA_T_HBM, MODEL_DMA_T_SBUF); other dtypes as on
 * trn1.
 */
static void
model_cost_isa_dma(struct model_ctx *m, struct model_op *op,
    const Nkir__V1__Op *o)
{
	struct model_acc	 h, s;
	const struct model_acc	*src = op->src[0], *dst = op->dst;
	int			 src_hbm, dst_hbm, hw;

	src_hbm = src->space == NKIR__V1__SPACE__SPACE_HBM ||
	    src->space == NKIR__V1__SPACE__SPACE_SHARED_HBM;
	dst_hbm = dst->space == NKIR__V1__SPACE__SPACE_HBM ||
	    dst->space == NKIR__V1__SPACE__SPACE_SHARED_HBM;
	h = src_hbm && !dst_hbm ? *src : *dst;
	s = src_hbm && !dst_hbm ? *dst : *src;
	if (src_hbm == dst_hbm) {
		h = *src;
		s = *dst;
	}
	hw = o->kind == NKIR__V1__OP_KIND__OP_DMA_TRANSPOSE &&
	    m->t->dge_ns > 0.0 && model_esize(src->dtype) == 2;
	if (o->kind == NKIR__V1__OP_KIND__OP_DMA_TRANSPOSE && !hw)
		h.runs = s.runs = s.n;
	model_cost_dma(m, op, &h, &s);
	if (hw) {
		op->dma_bw *= src_hbm ? MODEL_DMA_T_HBM : MODEL_DMA_T_SBUF;
		model_dma_split(op, s.parts);
	}
}

static int
model_is_hbm(int space)
{
	return (space == NKIR__V1__SPACE__SPACE_HBM ||
	    space == NKIR__V1__SPACE__SPACE_SHARED_HBM);
}

/*
 * A reshape of an HBM tensor that merges dimensions is a view in NKI (no
 * data moves); nkid's tracer writes it as a copy of the whole tensor into
 * a new HBM tensor of the same name, size and dtype, outside any loop,
 * and back at the end when the kernel wrote it (client/python/nkid/
 * tracer/merge.py). Such a copy is no instruction: its result is ready
 * with its source. (Until model 5 it was costed as a DMA of the whole
 * tensor, one transfer on one engine when it spans few partitions.)
 */
static int
model_reshape_copy(const struct model_ctx *m, const struct model_op *op,
    const Nkir__V1__Op *o)
{
	const struct model_acc	*d = op->dst, *s = op->src[0];
	const Nkir__V1__Tensor	*td, *ts;

	if (o->kind != NKIR__V1__OP_KIND__OP_DMA_COPY || op->nsrc != 1 ||
	    op->depth != 0 || o->n_dyn != 0 ||
	    o->alu != NKIR__V1__ALU_OP__ALU_INVALID ||
	    d->tensor >= m->k->n_tensors || s->tensor >= m->k->n_tensors ||
	    d->tensor == s->tensor)
		return (0);
	td = m->k->tensors[d->tensor];
	ts = m->k->tensors[s->tensor];
	return (model_is_hbm(td->space) && model_is_hbm(ts->space) &&
	    td->dtype == ts->dtype && d->covers && s->covers &&
	    m->tensors[d->tensor].size == m->tensors[s->tensor].size &&
	    td->name != NULL && ts->name != NULL && td->name[0] != '\0' &&
	    strcmp(td->name, ts->name) == 0);
}

/* Cost of a Vector/Scalar/GpSimd op reading srcs (tensor operands). */
static void
model_cost_elementwise(struct model_ctx *m, struct model_op *op,
    const Nkir__V1__Op *o, int nscalar)
{
	const struct model_acc	*d = op->dst;
	double			 n = (double)d->n, work;
	int			 eng = op->track, all16 = model_is16(d->dtype),
				 slow = d->slow_stride, npsum = 0, nfull = 0,
				 bf16 = d->dtype == NKIR__V1__DTYPE__DT_BFLOAT16;
	int			 i;

	for (i = 0; i < op->nsrc; i++) {
		const struct model_acc *s = op->src[i];

		all16 &= model_is16(s->dtype);
		bf16 &= s->dtype == NKIR__V1__DTYPE__DT_BFLOAT16;
		slow |= s->slow_stride;
		if (s->part_bcast && eng != ENG_T) {
			/* arch: a partition broadcast is a TensorE matmul
			 * with a ones stationary into PSUM (isa nc_matmul
			 * cost with N_stationary = 1). */
			model_pre_add(m, op, ENG_T, model_cyc(m, ENG_T,
			    fmax(1.0, (double)s->n)), "broadcast");
			nfull++;
			/*
			 * A matmul writes fp32 into one 2 KiB PSUM bank per
			 * partition (arch); a broadcast wider than a bank is
			 * no PSUM operand: each bank is copied to SBUF (a
			 * tensor_copy on ScalarE, the copies' engine,
			 * max(MIN_II, N)) and the op reads it there.
			 */
			if ((double)s->n * 4.0 > MODEL_PSUM_BANK_BYTES) {
				model_pre_add(m, op, ENG_S, model_pass(m,
				    ENG_S, (double)s->n, 0, 0),
				    "broadcast copy");
				op->pre[op->npre - 1].chain = 1;
				op->bcast_pp += s->n * model_esize(s->dtype);
			} else
				npsum++;
		} else if (s->free_bcast || s->n == 1)
			nscalar++;
		else {
			nfull++;
			npsum += s->space == NKIR__V1__SPACE__SPACE_PSUM;
		}
	}
	switch (o->kind) {
	case NKIR__V1__OP_KIND__OP_TENSOR_TENSOR:
		/*
		 * isa (tensor_tensor): max(MIN_II, N) with one input in PSUM
		 * and the other in SBUF, or all bf16 add/multiply/subtract
		 * contiguous; else max(MIN_II, 2N). isa (tensor_scalar): a
		 * scalar or [P, 1] operand is max(MIN_II, N).
		 */
		if (nfull >= 2 && !(npsum == 1) && !(bf16 && !slow &&
		    (o->alu == NKIR__V1__ALU_OP__ALU_ADD ||
		    o->alu == NKIR__V1__ALU_OP__ALU_MULTIPLY ||
		    o->alu == NKIR__V1__ALU_OP__ALU_SUBTRACT)))
			work = 2.0 * n;
		else
			work = n;
		break;
	case NKIR__V1__OP_KIND__OP_REDUCE:
		/* isa (tensor_reduce): N/2 for bf16 in and out with add or
		 * maximum, else N; N the input elements per partition. */
		n = op->nsrc ? (double)op->src[0]->n : n;
		work = bf16 && (o->alu == NKIR__V1__ALU_OP__ALU_ADD ||
		    o->alu == NKIR__V1__ALU_OP__ALU_MAXIMUM) ? n / 2.0 : n;
		break;
	case NKIR__V1__OP_KIND__OP_BN_STATS:
		/* isa (bn_stats): max(MIN_II, N). */
		work = op->nsrc ? (double)op->src[0]->n : n;
		break;
	case NKIR__V1__OP_KIND__OP_BN_AGGR:
		/* isa (bn_aggr): max(MIN_II, 13 * (N / 3)). */
		work = 13.0 * ((op->nsrc ? (double)op->src[0]->n : n) / 3.0);
		break;
	case NKIR__V1__OP_KIND__OP_GATHER_FLAT:
		/* One GpSimd pass over the result, as isa iota's
		 * GPSIMD_START + N (GUESSED for a gather). */
		work = n;
		break;
	case NKIR__V1__OP_KIND__OP_SELECT:
		/* Three inputs; costed like a two-input tensor_tensor
		 * (GUESSED). */
		work = nfull >= 2 ? 2.0 * n : n;
		break;
	case NKIR__V1__OP_KIND__OP_ALLOC:
		/* isa (memset): max(MIN_II, N/2) for a zero bf16/fp16 fill,
		 * else max(MIN_II, N). */
		work = o->fill == NKIR__V1__FILL__FILL_ZERO &&
		    model_is16(d->dtype) ? n / 2.0 : n;
		break;
	case NKIR__V1__OP_KIND__OP_TRANSPOSE:
		/* isa (nc_transpose, vector engine): max(MIN_II, N). */
		work = op->nsrc ? (double)op->src[0]->n : n;
		break;
	case NKIR__V1__OP_KIND__OP_SCAN:
		/* isa (tensor_tensor_scan): max(MIN_II, 2N). */
		work = 2.0 * n;
		break;
	case NKIR__V1__OP_KIND__OP_SCALAR_TENSOR_TENSOR:
		/* isa (scalar_tensor_tensor): N for bf16 data and operand1
		 * with subtract then multiply and N even, else 2N. */
		work = op->nsrc == 3 && op->src[0]->dtype ==
		    NKIR__V1__DTYPE__DT_BFLOAT16 && op->src[2]->dtype ==
		    NKIR__V1__DTYPE__DT_BFLOAT16 &&
		    o->alu == NKIR__V1__ALU_OP__ALU_SUBTRACT &&
		    o->alu1 == NKIR__V1__ALU_OP__ALU_MULTIPLY &&
		    ((uint64_t)n % 2) == 0 ? n : 2.0 * n;
		break;
	case NKIR__V1__OP_KIND__OP_COPY_DYNAMIC:
		/* isa (tensor_copy_dynamic_src/dst): max(MIN_II_DYNAMIC,
		 * N). */
		work = fmax(MODEL_MIN_II_DYNAMIC, n);
		break;
	case NKIR__V1__OP_KIND__OP_COPY_PREDICATED:
		/* isa (tensor_copy_predicated): max(MIN_II, N) with one of
		 * src and predicate in PSUM, max(MIN_II, 2N) in SBUF. */
		work = npsum == 1 ? n : 2.0 * n;
		break;
	case NKIR__V1__OP_KIND__OP_PARTITION_REDUCE:
	case NKIR__V1__OP_KIND__OP_MAX8:
	case NKIR__V1__OP_KIND__OP_FIND_INDEX8:
	case NKIR__V1__OP_KIND__OP_MATCH_REPLACE8:
	case NKIR__V1__OP_KIND__OP_SHUFFLE:
		/* isa (max8, nc_find_index8, nc_match_replace8,
		 * nc_stream_shuffle): N, the input's elements per
		 * partition (at least MIN_II); tensor_partition_reduce has
		 * no documented cost: GpSimd 150 + N (GUESSED). */
		work = op->nsrc ? (double)op->src[0]->n : n;
		break;
	case NKIR__V1__OP_KIND__OP_SEQUENCE_BOUNDS:
		/* No documented cost: a GpSimd pass per bound, 150 + 2N
		 * (GUESSED). */
		work = op->nsrc ? 2.0 * (double)op->src[0]->n : n;
		break;
	case NKIR__V1__OP_KIND__OP_LOCAL_GATHER: {
		/* isa (local_gather): 150 + V * E / C GpSimd cycles, C =
		 * ((28 + t E) / (t E)) / min(4 / dtype_size, E), t = 4. */
		double	E = o->elem_per_index ? o->elem_per_index : 1.0;
		double	V = o->valid_indices ? o->valid_indices : 1.0;
		double	sz = op->nsrc ? (double)model_esize(op->src[0]->dtype) :
			    4.0;
		double	C = ((28.0 + MODEL_GATHER_T * E) /
			    (MODEL_GATHER_T * E)) / fmin(4.0 / sz, E);

		work = V * E / C;
		break;
	}
	default:
		/* isa (activation, tensor_scalar_reduce, dropout,
		 * range_select, affine_select): max(MIN_II, N), GpSimd
		 * 150 + N; select_reduce has no documented cost: max(MIN_II,
		 * N) (GUESSED); reduce_res: activation_reduce's and
		 * tensor_scalar_reduce's "+ MIN_II" (N is 1). */
		work = n;
		break;
	}
	op->dur_ns = model_pass(m, eng, work, all16, slow);
}

/* Cost op on engine alt too, the other engine the compiler may pick. */
static void
model_cost_alt(struct model_ctx *m, struct model_op *op,
    const Nkir__V1__Op *o, int nscalar, int alt)
{
	double	dur = op->dur_ns;
	int	track = op->track;

	op->track = alt;
	model_cost_elementwise(m, op, o, nscalar);
	op->alt_track = alt;
	op->alt_dur_ns = op->dur_ns;
	op->alt_lat_ns = model_lat(m, alt);
	op->track = track;
	op->dur_ns = dur;
	op->flex = 1;
}

int
model_cost(struct model_ctx *m, struct model_op *op, const Nkir__V1__Op *o)
{
	const struct model_acc	*d = op->dst;
	int			 nscalar = 0;

	op->lat_ns = op->track >= 0 ? model_lat(m, op->track) : 0.0;
	switch (o->kind) {
	case NKIR__V1__OP_KIND__OP_LOAD:
		if (op->nsrc < 1)
			return (-1);
		model_cost_dma(m, op, op->src[0], d);
		return (0);
	case NKIR__V1__OP_KIND__OP_STORE:
		if (op->nsrc < 1)
			return (-1);
		model_cost_dma(m, op, d, op->src[0]);
		return (0);
	case NKIR__V1__OP_KIND__OP_DMA_COPY:
	case NKIR__V1__OP_KIND__OP_DMA_TRANSPOSE:
		if (op->nsrc < 1)
			return (-1);
		if (model_reshape_copy(m, op, o)) {
			op->track = ENG_FUSED;
			return (0);
		}
		model_cost_isa_dma(m, op, o);
		return (0);
	case NKIR__V1__OP_KIND__OP_TI_GATHER:
	case NKIR__V1__OP_KIND__OP_TI_SCATTER:
		/*
		 * Tensor Indirection is an addressing mode of the compute
		 * engines, no instruction of its own (trainium3_arch.rst,
		 * "SBUF/PSUM indirect access": "all compute engines can
		 * perform a gather access pattern to directly access those
		 * three vectors in a single instruction"): the instruction
		 * that takes the view is costed on its [P, num_elem]
		 * columns, on its engine (Op.engine); the gather is ready
		 * with the tensor and its index, the scatter with the
		 * instruction's result.
		 */
		op->track = ENG_FUSED;
		return (0);
	case NKIR__V1__OP_KIND__OP_BITCAST:
		/* tile.view(dtype) is no instruction ("NO copy will
		 * occur"): its result is ready with its source. */
		op->track = ENG_FUSED;
		return (0);
	case NKIR__V1__OP_KIND__OP_MATCH_REPLACE8:
		/* The indices of nc_match_replace8 (dst_idx) come out of the
		 * same instruction as its data. */
		if (o->index_out) {
			op->track = ENG_FUSED;
			return (0);
		}
		break;
	case NKIR__V1__OP_KIND__OP_ALL_REDUCE:
		/* A collective over the programs' cores: costed as the tile
		 * leaving and coming back by DMA (GUESSED; NKI documents no
		 * cost for nl.all_reduce). */
		if (op->nsrc < 1)
			return (-1);
		model_cost_dma(m, op, op->src[0], d);
		op->piece_ns *= 2.0;
		op->last_ns *= 2.0;
		op->dur_ns *= 2.0;
		return (0);
	case NKIR__V1__OP_KIND__OP_MATMUL: {
		const struct model_acc *x, *y;
		double	M, N, K, cyc;
		int	fp32, fp8;

		if (op->nsrc < 2)
			return (-1);
		x = op->src[0];
		y = op->src[1];
		N = (double)y->n;
		K = (double)y->parts;
		M = (double)d->parts;
		fp32 = model_esize(x->dtype) == 4 &&
		    x->dtype != NKIR__V1__DTYPE__DT_TFLOAT32;
		fp8 = model_is_fp8(x->dtype) && model_is_fp8(y->dtype);
		if (!o->transpose_x) {
			/* arch: nl.matmul(x, y) is nc_transpose(x) then
			 * nc_matmul; isa nc_transpose (tensor engine):
			 * max(P, min(64, F)), then a copy of x.T [K, M]
			 * from PSUM to SBUF. */
			model_pre_add(m, op, ENG_T, model_cyc(m, ENG_T,
			    fmax(M, fmin(MODEL_MM_INIT, K))), "transpose");
			model_pre_add(m, op, ENG_S, model_pass(m, ENG_S, M, 0,
			    0), "tensor_copy");
		}
		/* isa (nc_matmul): max(min(64, N_stationary), N_moving),
		 * 4x for fp32; trn2 arch: 4x128 fp8 input (twice the bf16
		 * rate). */
		cyc = fmax(fmin(MODEL_MM_INIT, M), N);
		if (fp32)
			cyc *= MODEL_MM_FP32_FACTOR;
		else if (fp8 && m->t->fp8_fast)
			cyc = fmax(fmin(MODEL_MM_INIT, M), N / 2.0);
		op->dur_ns = model_cyc(m, ENG_T, cyc);
		op->flops = 2.0 * M * N * K;
		return (0);
	}
	case NKIR__V1__OP_KIND__OP_MATMUL_MX: {
		double	M, N, K;

		/*
		 * trn3 arch ("Quad-MXFP8/MXFP4 Matmul Performance"): each PE
		 * multiplies and accumulates the four values of an x4 element
		 * per cycle, 4x BF16's throughput: nc_matmul's cycles counted
		 * in x4 elements, max(min(64, M), N).
		 */
		if (op->nsrc < 2)
			return (-1);
		N = (double)op->src[1]->n;
		K = (double)op->src[1]->parts;
		M = (double)d->parts;
		op->dur_ns = model_cyc(m, ENG_T, fmax(fmin(MODEL_MM_INIT, M),
		    N));
		op->flops = 2.0 * M * N * K * 4.0;
		return (0);
	}
	case NKIR__V1__OP_KIND__OP_QUANTIZE_MX:
		/*
		 * trn3 arch ("MX data-type Quantization"): QuantizeMX takes
		 * "four input elements per partition, per cycle (i.e., 4x
		 * Vector performance mode)". The scales' op is the same
		 * instruction's second output.
		 */
		if (op->nsrc < 1)
			return (-1);
		if (d->dtype == NKIR__V1__DTYPE__DT_UINT8 ||
		    d->dtype == NKIR__V1__DTYPE__DT_FP8_E8M0) {
			op->track = ENG_FUSED;
			return (0);
		}
		op->track = ENG_V;
		op->lat_ns = model_lat(m, ENG_V);
		op->dur_ns = model_cyc(m, ENG_V, fmax(MODEL_MIN_II,
		    (double)op->src[0]->n / 4.0));
		return (0);
	case NKIR__V1__OP_KIND__OP_TRANSPOSE:
		if (op->nsrc < 1)
			return (-1);
		if (op->track == ENG_T) {
			/* isa (nc_transpose, tensor engine): max(P, min(64,
			 * F)). */
			op->dur_ns = model_cyc(m, ENG_T, fmax((double)
			    op->src[0]->parts, fmin(MODEL_MM_INIT,
			    (double)op->src[0]->n)));
			return (0);
		}
		break;
	case NKIR__V1__OP_KIND__OP_ALLOC:
		/* A fill without a value is no instruction; a PSUM zero
		 * fill starts a matmul accumulation group (arch: nl.zeros in
		 * PSUM then +=) and costs nothing. */
		if (o->fill == NKIR__V1__FILL__FILL_UNINIT ||
		    d->space == NKIR__V1__SPACE__SPACE_PSUM) {
			op->track = ENG_NONE;
			return (0);
		}
		/* isa memset: "using Vector or GpSimd Engine"; a fill
		 * that names no engine is costed on VectorE. */
		if (op->track == ENG_T || op->track == ENG_S ||
		    o->engine == NKIR__V1__ENGINE__ENGINE_DEFAULT)
			op->track = ENG_V;
		op->lat_ns = model_lat(m, op->track);
		break;
	case NKIR__V1__OP_KIND__OP_PRINT:
		op->track = ENG_NONE;
		return (0);
	default:
		break;
	}
	if (op->track == ENG_T || op->track < 0) {
		op->track = ENG_V;
		op->lat_ns = model_lat(m, ENG_V);
	}
	for (size_t i = 0; i < o->n_src; i++)
		if (o->src[i] != NULL && o->src[i]->value_case ==
		    NKIR__V1__OPERAND__VALUE_SCALAR)
			nscalar++;
	model_cost_elementwise(m, op, o, nscalar);
	/*
	 * An instruction that names no engine runs where the compiler puts
	 * it, on one of two, whichever would end it first (model_exec_op):
	 * a copy (nl.copy, nisa.tensor_copy's default unknown_engine; isa
	 * tensor_copy: "let compiler select best engine") on ScalarE (sim/'s
	 * table) or VectorE; a fill (nl.zeros, nisa.memset: "using Vector or
	 * GpSimd Engine") on VectorE or GpSimd.
	 */
	if (o->engine == NKIR__V1__ENGINE__ENGINE_DEFAULT && op->npre == 0) {
		if (o->kind == NKIR__V1__OP_KIND__OP_COPY && op->track == ENG_S)
			model_cost_alt(m, op, o, nscalar, ENG_V);
		else if (o->kind == NKIR__V1__OP_KIND__OP_ALLOC &&
		    op->track == ENG_V)
			model_cost_alt(m, op, o, nscalar, ENG_G);
	}
	return (0);
}
