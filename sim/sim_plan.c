/* sim_plan.c: validate an unpacked NKIR kernel against the IR contract, NKI's hardware rules and the executor's bounds, and build its program: the arena, the planners of the op kinds, tensors, signature and run layout (the views are sim_plan_view.c's). */
/* Floor 2: calls sim_plan_view.c, sim_opt.c, sim_print.c and floor 0. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/* The program's memory: blocks of 64 KiB or more, freed together. */
struct sim_arena_block {
	struct sim_arena_block	*next;
	size_t			 used;
	size_t			 cap;
	max_align_t		 data[];
};

/* ------------------------------------------------------------ arena */

void *
sim_plan_alloc(struct sim_build *b, size_t size)
{
	struct sim_arena_block	*blk = b->p->arena;
	size_t			 need = (size + 15) & ~(size_t)15, cap;

	if (size == 0)
		need = 16;
	if (blk == NULL || blk->cap - blk->used < need) {
		cap = need > 65536 ? need : 65536;
		blk = calloc(1, sizeof(*blk) + cap);
		if (blk == NULL)
			return (NULL);
		blk->cap = cap;
		blk->next = b->p->arena;
		b->p->arena = blk;
	}
	blk->used += need;
	return ((char *)blk->data + blk->used - need);
}

void *
sim_plan_table(struct sim_build *b, size_t n, size_t size, int max,
    const char *what, int *rc)
{
	void	*t;

	if (n > (size_t)max) {
		*rc = sim_plan_err(b, NULL, SIM_ELIMIT,
		    "kernel has %zu %s (executor limit %d)", n, what, max);
		return (NULL);
	}
	if ((t = sim_plan_alloc(b, n * size)) == NULL)
		*rc = SIM_ENOMEM;
	return (t);
}

static char *
sim_plan_strdup(struct sim_build *b, const char *s)
{
	size_t	 n;
	char	*d;

	if (s == NULL)
		s = "";
	n = strnlen(s, SIM_TEXT_MAX);
	d = sim_plan_alloc(b, n + 1);
	if (d != NULL) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return (d);
}

void
sim_plan_free(struct sim_program *p)
{
	struct sim_arena_block	*blk, *next;

	if (p == NULL)
		return;
	pthread_mutex_destroy(&p->run_mu);
	free(p->run_cache);
	for (blk = p->arena; blk != NULL; blk = next) {
		next = blk->next;
		free(blk);
	}
	free(p);
}

size_t
sim_program_footprint(const struct sim_program *p)
{
	const struct sim_arena_block	*blk;
	size_t				 n = sizeof(*p);

	for (blk = p->arena; blk != NULL; blk = blk->next)
		n += sizeof(*blk) + blk->cap;
	if (p->run_cache != NULL)
		n += p->run_bytes;
	n += p->par_nfree * p->par_block_bytes;
	return (n);
}

/* ------------------------------------------------------------ errors */

/* Nonzero if s is well-formed UTF-8: file names travel in diagnostics and
 * replies, which are protobuf strings. */
static int
sim_plan_utf8(const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	unsigned		 n, i;
	uint32_t		 cp;

	for (; *p != '\0'; p += n + 1) {
		n = 0;
		if (*p < 0x80)
			continue;
		if ((*p & 0xe0) == 0xc0)
			n = 1;
		else if ((*p & 0xf0) == 0xe0)
			n = 2;
		else if ((*p & 0xf8) == 0xf0)
			n = 3;
		else
			return (0);
		cp = *p & (0x3f >> n);
		for (i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return (0);
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
		    (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return (0);
	}
	return (1);
}

static const char *
sim_plan_file(struct sim_build *b, const Nkir__V1__Loc *loc)
{
	if (loc == NULL || loc->file >= b->k->n_files ||
	    b->k->files[loc->file] == NULL)
		return ("<unknown>");
	return (b->k->files[loc->file]);
}

int
sim_plan_err(struct sim_build *b, const Nkir__V1__Loc *loc, int code,
    const char *fmt, ...)
{
	va_list	ap;

	if (loc == NULL)
		loc = b->k->loc;
	va_start(ap, fmt);
	sim_diag_vset_at(b->diag, sim_plan_file(b, loc),
	    loc != NULL ? loc->line : 0, fmt, ap);
	va_end(ap);
	return (code);
}

/* ------------------------------------------------------------ ops */

static void
sim_plan_lin_swap01(struct sim_lin *l)
{
	int64_t	t = l->ax[0];

	l->ax[0] = l->ax[1];
	l->ax[1] = t;
}

/*
 * A masked op whose masks hold everywhere (over the full ranges of loop
 * variables, program ids and axes) and whose accesses all stay in bounds
 * there runs exactly as the unmasked op: every element is active and no
 * run-time bounds check could fail. Drop the masks so the op takes the
 * unmasked paths (and may fuse, skip launch fills, ...). The tutorials'
 * `mask=(row < n)` on a tiling that divides n is the common case.
 */
static void
sim_plan_unmask(struct sim_build *b, struct sim_op *op)
{
	struct sim_view	*v[1 + SIM_NITEMS(op->src)];
	sim_i128	 lo, hi;
	int		 nv = 0, i, k, m, d;

	if (!op->masked || b->dead)
		return;
	if (op->has_dst)
		v[nv++] = &op->dst;
	for (i = 0; i < op->nsrc; i++)
		if (!op->src[i].scalar)
			v[nv++] = &op->src[i].v;
	for (k = 0; k < nv; k++) {
		const struct sim_tinfo	*ti = &b->p->tensors[v[k]->tensor];

		for (m = 0; m < v[k]->nmask; m++) {
			sim_plan_lin_range(b, &v[k]->mask[m], v[k]->rank,
			    v[k]->shape, &lo, &hi);
			if (lo < 0)
				return;
		}
		for (d = 0; d < v[k]->ndim; d++) {
			sim_plan_lin_range(b, &v[k]->dim[d], v[k]->rank,
			    v[k]->shape, &lo, &hi);
			if (lo < 0 || hi >= (sim_i128)ti->shape[d])
				return;
		}
	}
	for (k = 0; k < nv; k++)
		v[k]->nmask = 0;
	op->masked = false;
}

static uint64_t
sim_plan_mul_sat(uint64_t a, uint64_t b)
{
	uint64_t	r;

	if (__builtin_mul_overflow(a, b, &r))
		return (UINT64_MAX);
	return (r);
}

static int
sim_plan_loop(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	const Nkir__V1__Loop	*l = o->loop;
	sim_i128		 trips;
	uint64_t		 outer;
	int64_t			 last;
	int			 rc;

	if (l == NULL)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "loop op has no loop"));
	if (l->var >= b->p->nloopvars)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "loop variable %u is out of range (%u variables)", l->var,
		    b->p->nloopvars));
	if (b->used[l->var])
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "loop variable %u is bound by two loops", l->var));
	if (l->kind < NKIR__V1__LOOP_KIND__LOOP_AFFINE ||
	    l->kind > NKIR__V1__LOOP_KIND__LOOP_STATIC)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "invalid loop kind %d", (int)l->kind));
	if (l->step == 0)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "range() arg 3 must not be zero"));
	if (l->start > SIM_COEF_MAX || l->start < -SIM_COEF_MAX ||
	    l->stop > SIM_COEF_MAX || l->stop < -SIM_COEF_MAX ||
	    l->step > SIM_COEF_MAX || l->step < -SIM_COEF_MAX)
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "loop bounds are out of the executor's range"));
	if (b->depth >= SIM_DEPTH_MAX)
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "loops nested deeper than %d", SIM_DEPTH_MAX));
	if (l->step > 0)
		trips = l->start < l->stop ?
		    ((sim_i128)l->stop - l->start + l->step - 1) / l->step : 0;
	else
		trips = l->start > l->stop ?
		    ((sim_i128)l->start - l->stop - l->step - 1) / -l->step : 0;
	op->var = l->var;
	op->start = l->start;
	op->step = l->step;
	op->trips = (uint64_t)trips;
	b->used[l->var] = 1;
	b->inscope[l->var] = 1;
	if (trips == 0) {
		b->vlo[l->var] = b->vhi[l->var] = l->start;
		b->dead++;
	} else {
		last = (int64_t)(l->start + (trips - 1) * l->step);
		b->vlo[l->var] = l->step > 0 ? l->start : last;
		b->vhi[l->var] = l->step > 0 ? last : l->start;
	}
	b->vstep[l->var] = l->step;
	if ((rc = sim_lang_plan_loop_fns(b, op)))
		return (rc);
	b->depth++;
	outer = b->trips;
	b->trips = sim_plan_mul_sat(b->trips, (uint64_t)trips);
	rc = sim_plan_body(b, l->body, l->n_body, &op->body);
	b->trips = outer;
	b->depth--;
	if (trips == 0)
		b->dead--;
	b->inscope[l->var] = 0;
	op->nbody = l->n_body;
	return (rc);
}

static bool
sim_plan_reduce_alu_ok(int alu)
{
	switch (alu) {
	case NKIR__V1__ALU_OP__ALU_ADD:
	case NKIR__V1__ALU_OP__ALU_MULTIPLY:
	case NKIR__V1__ALU_OP__ALU_MAXIMUM:
	case NKIR__V1__ALU_OP__ALU_MINIMUM:
	case NKIR__V1__ALU_OP__ALU_MEAN:
	case NKIR__V1__ALU_OP__ALU_VAR:
	case NKIR__V1__ALU_OP__ALU_LOGICAL_AND:
	case NKIR__V1__ALU_OP__ALU_LOGICAL_OR:
	case NKIR__V1__ALU_OP__ALU_LOGICAL_XOR:
	case NKIR__V1__ALU_OP__ALU_BITWISE_AND:
	case NKIR__V1__ALU_OP__ALU_BITWISE_OR:
	case NKIR__V1__ALU_OP__ALU_BITWISE_XOR:
		return (true);
	default:
		return (false);
	}
}

static int
sim_plan_reduce(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	struct sim_view	*s;
	uint64_t	 want[SIM_MAX_RANK];
	uint32_t	 ax;
	size_t		 i;
	int		 a, rc;

	if ((rc = sim_plan_src_tile(b, o, op, "data", &s)))
		return (rc);
	if (!sim_plan_reduce_alu_ok(o->alu))
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "unsupported reduce operator '%s' in 'tensor_reduce'",
		    sim_op_alu_name(o->alu)));
	if (o->n_axes == 0)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "'tensor_reduce' has no axes"));
	for (i = 0; i < o->n_axes; i++) {
		ax = o->axes[i];
		if (ax == 0)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "reduction along the partition dimension (axis "
			    "0) is not supported; reduce axes must be free "
			    "dimensions"));
		if (ax >= (uint32_t)s->rank)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "reduce axis %u is out of range for a tile of "
			    "rank %d", ax, s->rank));
		if (op->axes & (1u << ax))
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "reduce axis %u is repeated", ax));
		op->axes |= 1u << ax;
	}
	for (a = 0; a < s->rank; a++)
		want[a] = (op->axes & (1u << a)) ? 1 : s->shape[a];
	if ((rc = sim_plan_shape_eq(b, o, "dst", op->dst.rank, op->dst.shape,
	    "data", s->rank, want)))
		return (rc);
	op->rank = s->rank;
	memcpy(op->shape, s->shape, sizeof(op->shape));
	if (op->dst.nelem * 3 + 16 > (1ull << 28))
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "reduce result too large for the executor"));
	if (b->p->scratch_max < op->dst.nelem * 3)
		b->p->scratch_max = op->dst.nelem * 3;
	return (0);
}

int
sim_plan_nc_version(const struct sim_build *b)
{
	const char	*t = b->k->target;

	if (t != NULL && strcmp(t, "trn3") == 0)
		return (4);
	if (t != NULL && strcmp(t, "trn2") == 0)
		return (3);
	return (2);
}

static int
sim_plan_matmul(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	const struct sim_view	*x, *y, *d = &op->dst;
	const struct sim_tinfo	*dt = &b->p->tensors[d->tensor];
	uint64_t		 K, M, N, want[2];
	char			 sa[256], sb[256];
	int			 rc;

	/* nc_matmul, "Data types": "The dst tile must be a float32 tile in
	 * NeuronCore-v2 and NeuronCore-v3. Starting NeuronCore-v4, dst can
	 * either be a float32 or bfloat16 tile." */
	if (dt->dtype != SIM_DT_FLOAT32 && (dt->dtype != SIM_DT_BFLOAT16 ||
	    sim_plan_nc_version(b) < 4))
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "Expected operand 'dst' of 'matmul' to have dtype "
		    "float32%s, but got %s instead", sim_plan_nc_version(b) < 4 ?
		    "" : " or bfloat16", sim_dtype_name(dt->dtype)));
	if ((rc = sim_plan_src_sbuf2(b, o, op, "stationary", "moving")))
		return (rc);
	x = &op->src[0].v;
	y = &op->src[1].v;
	if (x->rank != 2 || y->rank != 2 || d->rank != 2)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'matmul' operands must be 2-D tiles"));
	K = o->transpose_x ? x->shape[0] : x->shape[1];
	M = o->transpose_x ? x->shape[1] : x->shape[0];
	N = y->shape[1];
	if (K != y->shape[0]) {
		sim_print_shape(sa, sizeof(sa), "stationary", 2, x->shape);
		sim_print_shape(sb, sizeof(sb), "moving", 2, y->shape);
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "contraction dimension mismatch in parameters (%s, %s) "
		    "of 'matmul'", sa, sb));
	}
	if (K > SIM_PMAX)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "Size of partition dimension %llu exceeds architecture "
		    "limitation of %d", (unsigned long long)K, SIM_PMAX));
	if (M > SIM_MM_STAT_FMAX)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "Size of stationary free dimension %llu exceeds "
		    "architecture limitation of %d (gemm_stationary_fmax)",
		    (unsigned long long)M, SIM_MM_STAT_FMAX));
	if (N > SIM_MM_MOVE_FMAX)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "Size of moving free dimension %llu exceeds architecture "
		    "limitation of %d (gemm_moving_fmax)",
		    (unsigned long long)N, SIM_MM_MOVE_FMAX));
	want[0] = M;
	want[1] = N;
	if ((rc = sim_plan_shape_eq(b, o, "dst", 2, d->shape, "result", 2,
	    want)))
		return (rc);
	if (op->masked || d->nmask)
		op->masked = true;
	if (b->p->scratch_max < K * M + K * N + M * N)
		b->p->scratch_max = K * M + K * N + M * N;
	return (0);
}

static int
sim_plan_transpose(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	struct sim_view	*s;
	uint64_t	 want[2], t, lim;
	int		 d, m, rc;

	if ((rc = sim_plan_src_tile(b, o, op, "data", &s)))
		return (rc);
	if (s->rank != 2 || op->dst.rank != 2)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'transpose' expects 2-D tiles, got rank %d", s->rank));
	lim = o->engine == NKIR__V1__ENGINE__ENGINE_VECTOR ? 32 : SIM_PMAX;
	if (s->shape[0] > lim || s->shape[1] > lim)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'transpose' of a [%llu, %llu] tile exceeds the %s "
		    "engine limitation of %llux%llu",
		    (unsigned long long)s->shape[0],
		    (unsigned long long)s->shape[1],
		    lim == 32 ? "vector" : "tensor",
		    (unsigned long long)lim, (unsigned long long)lim));
	want[0] = s->shape[1];
	want[1] = s->shape[0];
	if ((rc = sim_plan_shape_eq(b, o, "dst", 2, op->dst.shape, "data.T",
	    2, want)))
		return (rc);
	/* express the source in dst's iteration space: swap its axes */
	t = s->shape[0];
	s->shape[0] = s->shape[1];
	s->shape[1] = t;
	sim_plan_lin_swap01(&s->off);
	for (d = 0; d < s->ndim; d++)
		sim_plan_lin_swap01(&s->dim[d]);
	for (m = 0; m < s->nmask; m++)
		sim_plan_lin_swap01(&s->mask[m]);
	return (0);
}

static int
sim_plan_bn(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	struct sim_view	*s;
	uint64_t	 want[2], need;
	int		 rc;

	if ((rc = sim_plan_src_tile(b, o, op, "data", &s)))
		return (rc);
	if (s->rank != 2 || op->dst.rank != 2)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "'%s' expects 2-D tiles [partition, free]",
		    sim_op_name(o->kind)));
	want[0] = s->shape[0];
	if (o->kind == NKIR__V1__OP_KIND__OP_BN_STATS) {
		want[1] = 6 * ((s->shape[1] + SIM_BN_FMAX - 1) / SIM_BN_FMAX);
	} else {
		if (s->shape[1] % 3)
			return (sim_plan_err(b, o->loc, SIM_EINVAL,
			    "the free size %llu of 'data' of 'bn_aggr' must "
			    "be a multiple of 3",
			    (unsigned long long)s->shape[1]));
		want[1] = 2;
	}
	if ((rc = sim_plan_shape_eq(b, o, "dst", 2, op->dst.shape, "stats",
	    2, want)))
		return (rc);
	if (op->dst.nmask)
		op->masked = true;
	/* in, out and one active byte per input element (in floats) */
	need = s->nelem + op->dst.nelem + (s->nelem + 3) / 4;
	if (b->p->scratch_max < need)
		b->p->scratch_max = need;
	return (0);
}

static int
sim_plan_ndarray(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	int	dt = b->p->tensors[op->dst.tensor].dtype;

	switch (o->fill) {
	case NKIR__V1__FILL__FILL_UNINIT:
		op->value = sim_dtype_uninit(dt);
		return (0);
	case NKIR__V1__FILL__FILL_ZERO:
		op->value = 0.0f;
		return (0);
	case NKIR__V1__FILL__FILL_VALUE:
		op->value = sim_dtype_round(b->p->fp32_tiles &&
		    sim_dtype_is_lowp(dt) ? SIM_DT_FLOAT32 : dt,
		    (float)o->value);
		return (0);
	default:
		return (sim_plan_err(b, o->loc, SIM_EPARSE, "invalid fill %d",
		    (int)o->fill));
	}
}

/* load, store, tensor_copy: src (named arg, in where) to dst, same shape. */
static int
sim_plan_move(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op,
    const char *arg, int where)
{
	int	rc;

	op->nsrc = 1;
	if ((rc = sim_plan_src_access(b, o, op, 0, arg)))
		return (rc);
	if ((rc = sim_plan_space(b, o, &op->src[0].v, arg, where)))
		return (rc);
	return (sim_plan_shape_eq(b, o, "dst", op->dst.rank, op->dst.shape,
	    arg, op->src[0].v.rank, op->src[0].v.shape));
}

static int
sim_plan_load(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	return (sim_plan_move(b, o, op, "src", SIM_PLAN_HBM));
}

static int
sim_plan_store(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	return (sim_plan_move(b, o, op, "value", SIM_PLAN_TILE));
}

static int
sim_plan_copy(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	return (sim_plan_move(b, o, op, "src", SIM_PLAN_TILE));
}

static int
sim_plan_tensor_tensor(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char	*const args[] = { "dst", "data1", "data2" };

	if (o->alu <= NKIR__V1__ALU_OP__ALU_INVALID ||
	    o->alu > NKIR__V1__ALU_OP__ALU_ABS ||
	    o->alu == NKIR__V1__ALU_OP__ALU_MEAN ||
	    o->alu == NKIR__V1__ALU_OP__ALU_VAR)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "unsupported operator '%s' in 'tensor_tensor'",
		    sim_op_alu_name(o->alu)));
	return (sim_plan_elementwise(b, o, op, 2, args));
}

int
sim_plan_activation(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char	*const args[] = { "dst", "data", "bias" };
	int			 rc;

	if ((o->act <= NKIR__V1__ACT_FUNC__ACT_INVALID ||
	    o->act > NKIR__V1__ACT_FUNC__ACT_LOGICAL_NOT) &&
	    !sim_lang_plan_act_ok(o->act))
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "unsupported activation function %d", (int)o->act));
	if ((rc = sim_plan_elementwise(b, o, op, o->n_src >= 2 ? 2 : 1,
	    args)))
		return (rc);
	op->scale = (float)o->scale;
	return (0);
}

static int
sim_plan_iota(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	sim_i128	lo, hi;

	if (o->expr == NULL)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "'iota' has no expression"));
	return (sim_plan_lin(b, o, o->expr, op->dst.rank, op->dst.shape,
	    &op->expr, &lo, &hi));
}

static int
sim_plan_select(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char	*const args[] = { "dst", "predicate", "on_true",
	    "on_false" };

	return (sim_plan_elementwise(b, o, op, 3, args));
}

static int
sim_plan_print(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	int	rc;

	op->nsrc = 1;
	if ((rc = sim_plan_src_access(b, o, op, 0, "data")))
		return (rc);
	if ((op->text = sim_plan_strdup(b, o->text)) == NULL)
		return (SIM_ENOMEM);
	op->rank = op->src[0].v.rank;
	memcpy(op->shape, op->src[0].v.shape, sizeof(op->shape));
	return (0);
}

/*
 * The planners, indexed by NKIR OpKind. sim_plan_op plans an op's dst (if
 * where says it has one) and checks where it lives, then calls plan for
 * the rest (the operands, setting nsrc, and the fields), then
 * sim_plan_op_end. A loop (body) plans its body instead: plan does it all.
 */
static const struct sim_plan_kind {
	int	  where;	/* of dst; SIM_PLAN_NOWHERE: no dst */
	bool	  body;		/* a loop */
	int	(*plan)(struct sim_build *, const Nkir__V1__Op *,
		    struct sim_op *);
} sim_plan_kinds[] = {
	[NKIR__V1__OP_KIND__OP_ALLOC] =
	    { SIM_PLAN_TILE, false, sim_plan_ndarray },
	[NKIR__V1__OP_KIND__OP_LOAD] =
	    { SIM_PLAN_SBUF, false, sim_plan_load },
	[NKIR__V1__OP_KIND__OP_STORE] =
	    { SIM_PLAN_HBM, false, sim_plan_store },
	[NKIR__V1__OP_KIND__OP_COPY] =
	    { SIM_PLAN_TILE, false, sim_plan_copy },
	[NKIR__V1__OP_KIND__OP_TENSOR_TENSOR] =
	    { SIM_PLAN_TILE, false, sim_plan_tensor_tensor },
	[NKIR__V1__OP_KIND__OP_ACTIVATION] =
	    { SIM_PLAN_TILE, false, sim_plan_activation },
	[NKIR__V1__OP_KIND__OP_REDUCE] =
	    { SIM_PLAN_TILE, false, sim_plan_reduce },
	[NKIR__V1__OP_KIND__OP_MATMUL] =
	    { SIM_PLAN_PSUM, false, sim_plan_matmul },
	[NKIR__V1__OP_KIND__OP_TRANSPOSE] =
	    { SIM_PLAN_TILE, false, sim_plan_transpose },
	[NKIR__V1__OP_KIND__OP_IOTA] =
	    { SIM_PLAN_TILE, false, sim_plan_iota },
	[NKIR__V1__OP_KIND__OP_SELECT] =
	    { SIM_PLAN_TILE, false, sim_plan_select },
	[NKIR__V1__OP_KIND__OP_PRINT] =
	    { SIM_PLAN_NOWHERE, false, sim_plan_print },
	[NKIR__V1__OP_KIND__OP_LOOP] =
	    { SIM_PLAN_NOWHERE, true, sim_plan_loop },
	[NKIR__V1__OP_KIND__OP_BN_STATS] =
	    { SIM_PLAN_TILE, false, sim_plan_bn },
	[NKIR__V1__OP_KIND__OP_BN_AGGR] =
	    { SIM_PLAN_TILE, false, sim_plan_bn },
	/* nki.isa kinds 40-79: sim_isa_plan.c */
	[NKIR__V1__OP_KIND__OP_ACT_ACC] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_act_acc },
	[NKIR__V1__OP_KIND__OP_ACC_READ] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_acc_read },
	[NKIR__V1__OP_KIND__OP_PARTITION_REDUCE] =
	    { SIM_PLAN_SBUF, false, sim_isa_plan_partition_reduce },
	[NKIR__V1__OP_KIND__OP_SCAN] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_scan },
	[NKIR__V1__OP_KIND__OP_SCALAR_TENSOR_TENSOR] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_stt },
	[NKIR__V1__OP_KIND__OP_TENSOR_SCALAR_ACC] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_ts_acc },
	[NKIR__V1__OP_KIND__OP_COPY_DYNAMIC] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_copy_dynamic },
	[NKIR__V1__OP_KIND__OP_COPY_PREDICATED] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_copy_predicated },
	[NKIR__V1__OP_KIND__OP_ISA_DROPOUT] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_dropout },
	[NKIR__V1__OP_KIND__OP_AFFINE_SELECT] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_affine_select },
	[NKIR__V1__OP_KIND__OP_RANGE_SELECT] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_range_select },
	[NKIR__V1__OP_KIND__OP_SELECT_REDUCE] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_select_reduce },
	[NKIR__V1__OP_KIND__OP_SEQUENCE_BOUNDS] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_sequence_bounds },
	[NKIR__V1__OP_KIND__OP_LOCAL_GATHER] =
	    { SIM_PLAN_SBUF, false, sim_isa_plan_local_gather },
	[NKIR__V1__OP_KIND__OP_DMA_COPY] =
	    { SIM_PLAN_ANY, false, sim_isa_plan_dma_copy },
	[NKIR__V1__OP_KIND__OP_DMA_TRANSPOSE] =
	    { SIM_PLAN_ANY, false, sim_isa_plan_dma_transpose },
	[NKIR__V1__OP_KIND__OP_MAX8] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_max8 },
	[NKIR__V1__OP_KIND__OP_FIND_INDEX8] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_find_index8 },
	[NKIR__V1__OP_KIND__OP_MATCH_REPLACE8] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_match_replace8 },
	[NKIR__V1__OP_KIND__OP_SHUFFLE] =
	    { SIM_PLAN_TILE, false, sim_isa_plan_shuffle },
	/* nki.language kinds 80-119: sim_lang_plan.c */
	[NKIR__V1__OP_KIND__OP_RAND] =
	    { SIM_PLAN_TILE, false, sim_lang_plan_rand },
	[NKIR__V1__OP_KIND__OP_RANDOM_SEED] =
	    { SIM_PLAN_NOWHERE, false, sim_lang_plan_seed },
	[NKIR__V1__OP_KIND__OP_GATHER_FLAT] =
	    { SIM_PLAN_TILE, false, sim_lang_plan_gather },
	[NKIR__V1__OP_KIND__OP_ALL_REDUCE] =
	    { SIM_PLAN_TILE, false, sim_lang_plan_all_reduce },
	[NKIR__V1__OP_KIND__OP_IF] =
	    { SIM_PLAN_NOWHERE, true, sim_lang_plan_if },
	[NKIR__V1__OP_KIND__OP_BITCAST] =
	    { SIM_PLAN_TILE, false, sim_lang_plan_bitcast },
	[NKIR__V1__OP_KIND__OP_DYN_LOOP] =	/* sim_op06_plan.c */
	    { SIM_PLAN_NOWHERE, true, sim_op06_plan_dyn_loop },
	[NKIR__V1__OP_KIND__OP_QUANTIZE_MX] =	/* sim_op06_mx_*.c */
	    { SIM_PLAN_SBUF, false, sim_op06_mx_plan_quantize },
	[NKIR__V1__OP_KIND__OP_MATMUL_MX] =
	    { SIM_PLAN_PSUM, false, sim_op06_mx_plan_matmul },
	[NKIR__V1__OP_KIND__OP_RAND_GET_STATE] =	/* sim_op06_rng_*.c */
	    { SIM_PLAN_TILE, false, sim_op06_rng_plan_get },
	[NKIR__V1__OP_KIND__OP_RAND_SET_STATE] =
	    { SIM_PLAN_NOWHERE, false, sim_op06_rng_plan_set },
	[NKIR__V1__OP_KIND__OP_TI_GATHER] =	/* sim_op06_ti.c */
	    { SIM_PLAN_TILE, false, sim_op06_plan_ti_gather },
	[NKIR__V1__OP_KIND__OP_TI_SCATTER] =
	    { SIM_PLAN_TILE, false, sim_op06_plan_ti_scatter },
};

/* dst of op, in where: its view, which is op's iteration space. */
static int
sim_plan_dst(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op,
    int where)
{
	int	rc;

	if ((rc = sim_plan_view(b, o, o->dst, &op->dst, "dst")) ||
	    (rc = sim_op06_mx_plan_dst(b, o, &op->dst)))
		return (rc);
	op->has_dst = true;
	op->masked = op->dst.nmask > 0;
	op->rank = op->dst.rank;
	memcpy(op->shape, op->dst.shape, sizeof(op->shape));
	if ((rc = sim_plan_space(b, o, &op->dst, "dst", where)))
		return (rc);
	b->p->tensors[op->dst.tensor].written = true;
	return (0);
}

/* The element operations one execution of op does. */
static uint64_t
sim_plan_work(const struct sim_op *op)
{
	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_MATMUL:
		return (op->src[0].v.nelem * op->src[1].v.shape[1]);
	case NKIR__V1__OP_KIND__OP_MATMUL_MX:	/* 4 values an element */
		return (op->src[0].v.nelem * op->src[1].v.shape[1] * 4);
	case NKIR__V1__OP_KIND__OP_REDUCE:
		return (op->src[0].v.nelem * 2);
	default:
		if (op->has_dst)
			return (op->dst.nelem);
		return (op->nsrc > 0 ? op->src[0].v.nelem : 1);
	}
}

/* The longest innermost axis of op's iteration space and views. Rows are
 * gathered per view: a view may be longer than the iteration space
 * (bn_stats, matmul, transpose sources). */
static uint64_t
sim_plan_row(const struct sim_op *op)
{
	const struct sim_view	*v;
	uint64_t		 row = 0;
	int			 i;

	if (op->rank > 0)
		row = op->shape[op->rank - 1];
	for (i = 0; i < op->nsrc; i++) {
		v = &op->src[i].v;
		if (!op->src[i].scalar && v->rank > 0 &&
		    v->shape[v->rank - 1] > row)
			row = v->shape[v->rank - 1];
	}
	if (op->has_dst && op->dst.rank > 0 &&
	    op->dst.shape[op->dst.rank - 1] > row)
		row = op->dst.shape[op->dst.rank - 1];
	return (row);
}

/* An ALU_INVERT whose dst is unsigned (or bool) becomes the executor's
 * invert of that width: ~x is the bit pattern of dst's dtype. */
static int
sim_plan_alu_width(int alu, int dt)
{
	if (alu != NKIR__V1__ALU_OP__ALU_INVERT)
		return (alu);
	switch (dt) {
	case SIM_DT_BOOL:
		return (SIM_ALU_INVERT_U(1));
	case SIM_DT_UINT8:
		return (SIM_ALU_INVERT_U(8));
	case SIM_DT_UINT16:
		return (SIM_ALU_INVERT_U(16));
	case SIM_DT_UINT32:
		return (SIM_ALU_INVERT_U(32));
	default:
		return (alu);
	}
}

/*
 * What every planned data op goes through: masks that always hold are
 * dropped, reads and in-place updates noted, accesses bounds-checked,
 * the executor's limits checked, its cost and row length counted.
 */
static int
sim_plan_op_end(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	struct sim_program	*p = b->p;
	uint64_t		 work;
	int			 dt, i, rc;

	sim_plan_unmask(b, op);
	for (i = 0; i < op->nsrc; i++) {
		if (op->src[i].scalar)
			continue;
		p->tensors[op->src[i].v.tensor].read = true;
		if (op->has_dst && sim_opt_fusable(op) &&
		    op->src[i].v.tensor == op->dst.tensor &&
		    !sim_opt_view_same(&op->src[i].v, &op->dst))
			op->stage = true;
	}
	if (op->stage) {
		if (op->dst.nelem > (1ull << 27))
			return (sim_plan_err(b, o->loc, SIM_ELIMIT,
			    "in-place '%s' of %llu elements exceeds the "
			    "executor limit", sim_op_name(op->kind),
			    (unsigned long long)op->dst.nelem));
		if (p->scratch_max < op->dst.nelem * 2)
			p->scratch_max = op->dst.nelem * 2;
	}
	if (!op->masked && !b->dead) {
		if (op->has_dst && (rc = sim_plan_bounds(b, o, &op->dst)))
			return (rc);
		if (op->kind == NKIR__V1__OP_KIND__OP_STORE && !b->guarded &&
		    sim_plan_covers(b, o->dst, &p->tensors[op->dst.tensor]))
			p->tensors[op->dst.tensor].covered = true;
		for (i = 0; i < op->nsrc; i++)
			if (!op->src[i].scalar &&
			    (rc = sim_plan_bounds(b, o, &op->src[i].v)))
				return (rc);
	}
	if (op->kind == NKIR__V1__OP_KIND__OP_PRINT &&
	    op->src[0].v.nelem > SIM_PRINT_MAX)
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "'device_print' of %llu elements exceeds the executor "
		    "limit of %llu", (unsigned long long)op->src[0].v.nelem,
		    (unsigned long long)SIM_PRINT_MAX));
	work = sim_plan_mul_sat(sim_plan_work(op), b->trips);
	p->cost = p->cost + work < p->cost ? UINT64_MAX : p->cost + work;
	op->alu = o->alu;
	if (op->has_dst) {
		dt = p->tensors[op->dst.tensor].dtype;
		op->alu = sim_plan_alu_width(op->alu, dt);
		if (op->isa != NULL)
			op->isa->alu1 = sim_plan_alu_width(op->isa->alu1, dt);
	}
	op->act = o->act;
	op->accumulate = o->accumulate;
	op->transpose_x = o->transpose_x;
	op->engine = o->engine;
	if (sim_plan_row(op) > p->row_max)
		p->row_max = sim_plan_row(op);
	return (0);
}

/* Validate op o and build op from it (see sim_plan_kinds). */
static int
sim_plan_op(struct sim_build *b, const Nkir__V1__Op *o, struct sim_op *op)
{
	const struct sim_plan_kind	*pk;
	int				 kind = o->kind, rc;

	if (kind <= 0 || kind >= (int)SIM_NITEMS(sim_plan_kinds) ||
	    sim_plan_kinds[kind].plan == NULL)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "unknown op kind %d", kind));
	pk = &sim_plan_kinds[kind];
	if (o->loc != NULL && o->loc->file >= b->k->n_files &&
	    b->k->n_files > 0)
		return (sim_plan_err(b, NULL, SIM_EPARSE,
		    "op location names file %u of %zu", o->loc->file,
		    b->k->n_files));
	if (++b->nops > SIM_OPS_MAX)
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "kernel has more than %d ops", SIM_OPS_MAX));
	op->kind = kind;
	op->line = o->loc != NULL ? o->loc->line : 0;
	if ((op->file = sim_plan_strdup(b, sim_plan_file(b, o->loc))) == NULL)
		return (SIM_ENOMEM);
	if (o->n_src > 3 && !(o->n_src == 4 &&
	    kind == NKIR__V1__OP_KIND__OP_MATMUL_MX))
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "'%s' has %zu operands", sim_op_name(kind), o->n_src));
	if (pk->body)
		return (pk->plan(b, o, op));
	if (pk->where != SIM_PLAN_NOWHERE &&
	    (rc = sim_plan_dst(b, o, op, pk->where)))
		return (rc);
	if ((rc = pk->plan(b, o, op)) ||
	    (rc = sim_op06_mx_plan_packed(b, o, op)))
		return (rc);
	return (sim_plan_op_end(b, o, op));
}

int
sim_plan_body(struct sim_build *b, Nkir__V1__Op *const *ops, size_t n,
    struct sim_op **out)
{
	struct sim_op	*body;
	int		 rc;
	size_t		 i;

	if (n > SIM_OPS_MAX)
		return (sim_plan_err(b, NULL, SIM_ELIMIT,
		    "kernel has more than %d ops", SIM_OPS_MAX));
	body = sim_plan_alloc(b, n * sizeof(*body));
	if (body == NULL)
		return (SIM_ENOMEM);
	*out = body;
	for (i = 0; i < n; i++) {
		if (ops[i] == NULL)
			return (sim_plan_err(b, NULL, SIM_EPARSE,
			    "missing op"));
		rc = sim_plan_op(b, ops[i], &body[i]);
		if (rc)
			return (rc);
	}
	if (!b->dead)
		sim_opt_dead_allocs(b->p, body, n);
	if (b->depth == 0) {
		/* the whole program is planned: whole-program analyses
		 * before the top level fuses */
		b->p->body = body;
		b->p->nbody = n;
		if ((rc = sim_opt_program(b->p)))
			return (rc);
	}
	sim_opt_fuse(body, n);
	if (b->depth == 0)
		return (sim_opt_forward(b->p));
	return (0);
}

/* ------------------------------------------------------------ kernel */

static uint64_t
sim_plan_sbuf_limit(const char *target)
{
	if (target != NULL && strcmp(target, "trn2") == 0)
		return (224 * 1024);
	if (target != NULL && strcmp(target, "trn3") == 0)
		return (256 * 1024);
	return (192 * 1024);
}

/* Add bytes to *used, what the kernel's tensors of one kind (what) need
 * in all; more than max is SIM_ELIMIT at loc. */
static int
sim_plan_budget(struct sim_build *b, const Nkir__V1__Loc *loc,
    uint64_t *used, uint64_t bytes, uint64_t max, const char *what)
{
	*used += bytes;
	if (*used <= max)
		return (0);
	return (sim_plan_err(b, loc, SIM_ELIMIT, "%s of the kernel need more "
	    "than %llu bytes", what, (unsigned long long)max));
}

static int
sim_plan_tensors(struct sim_build *b)
{
	const Nkir__V1__Kernel	*k = b->k;
	struct sim_program	*p = b->p;
	uint64_t		 tile_bytes = 0, hbm_bytes = 0;
	size_t			 i;
	int			 d, rc;

	p->tensors = sim_plan_table(b, k->n_tensors, sizeof(*p->tensors),
	    SIM_TENSORS_MAX, "tensors", &rc);
	if (p->tensors == NULL)
		return (rc);
	p->ntensors = k->n_tensors;
	for (i = 0; i < k->n_tensors; i++) {
		const Nkir__V1__Tensor	*t = k->tensors[i];
		struct sim_tinfo	*ti = &p->tensors[i];
		const Nkir__V1__Loc	*loc;
		uint64_t		 free_elems = 1, sz, pb;

		if (t == NULL)
			return (sim_plan_err(b, NULL, SIM_EPARSE,
			    "missing tensor %zu", i));
		loc = t->loc;
		if (loc != NULL && loc->file >= k->n_files && k->n_files > 0)
			return (sim_plan_err(b, NULL, SIM_EPARSE,
			    "tensor %zu location names file %u of %zu", i,
			    loc->file, k->n_files));
		ti->name = sim_plan_strdup(b, t->name);
		if (ti->name == NULL)
			return (SIM_ENOMEM);
		ti->alias = -1;
		ti->view_of = -1;
		ti->kind = t->kind;
		ti->space = t->space;
		ti->dtype = t->dtype;
		ti->fill = t->fill;
		if (sim_dtype_name(t->dtype) == NULL)
			return (sim_plan_err(b, loc, SIM_EPARSE,
			    "tensor `%s` has invalid dtype %d", ti->name,
			    (int)t->dtype));
		if (t->space < NKIR__V1__SPACE__SPACE_HBM ||
		    t->space > NKIR__V1__SPACE__SPACE_PSUM)
			return (sim_plan_err(b, loc, SIM_EPARSE,
			    "tensor `%s` has invalid space %d", ti->name,
			    (int)t->space));
		ti->chip = sim_plan_is_chip(t->space);
		switch (t->kind) {
		case NKIR__V1__TENSOR_KIND__TENSOR_PARAM:
		case NKIR__V1__TENSOR_KIND__TENSOR_HBM:
			if (ti->chip)
				return (sim_plan_err(b, loc, SIM_EINVAL,
				    "kernel argument or HBM tensor `%s` must "
				    "be in address space 'hbm', not '%s'",
				    ti->name, sim_plan_spaces[t->space]));
			if (t->fill > NKIR__V1__FILL__FILL_ZERO &&
			    t->fill != NKIR__V1__FILL__FILL_DATA)
				return (sim_plan_err(b, loc, SIM_EPARSE,
				    "tensor `%s` has invalid fill %d",
				    ti->name, (int)t->fill));
			break;
		case NKIR__V1__TENSOR_KIND__TENSOR_TILE:
			if (!ti->chip)
				return (sim_plan_err(b, loc, SIM_EINVAL,
				    "tile `%s` must be in 'sbuf' or 'psum', "
				    "not '%s'", ti->name,
				    sim_plan_spaces[t->space]));
			break;
		default:
			return (sim_plan_err(b, loc, SIM_EPARSE,
			    "tensor `%s` has invalid kind %d", ti->name,
			    (int)t->kind));
		}
		if (t->n_shape < 1 || t->n_shape > SIM_MAX_RANK)
			return (sim_plan_err(b, loc, SIM_EPARSE,
			    "tensor `%s` has rank %zu (1 to %d)", ti->name,
			    t->n_shape, SIM_MAX_RANK));
		ti->rank = (int)t->n_shape;
		ti->nelem = 1;
		for (d = 0; d < ti->rank; d++) {
			if (t->shape[d] < 1 || t->shape[d] > SIM_DIM_MAX)
				return (sim_plan_err(b, loc, SIM_EPARSE,
				    "tensor `%s` has dimension %d of size "
				    "%llu", ti->name, d,
				    (unsigned long long)t->shape[d]));
			ti->shape[d] = t->shape[d];
			if (ti->nelem > SIM_ELEMS_MAX / t->shape[d])
				return (sim_plan_err(b, loc, SIM_ELIMIT,
				    "tensor `%s` has too many elements",
				    ti->name));
			ti->nelem *= t->shape[d];
			if (d > 0)
				free_elems *= t->shape[d];
		}
		sz = sim_dtype_size(ti->dtype);
		if (t->view_of != 0 &&
		    (rc = sim_op06_mx_plan_view_of(b, t, i)))
			return (rc);
		if (t->fill == NKIR__V1__FILL__FILL_DATA && !ti->chip &&
		    (rc = sim_lang_plan_data(b, t, ti)))
			return (rc);
		if (ti->chip) {
			if (ti->shape[0] > SIM_PMAX)
				return (sim_plan_err(b, loc, SIM_EINVAL,
				    "Size of partition dimension %llu exceeds "
				    "architecture limitation of %d",
				    (unsigned long long)ti->shape[0],
				    SIM_PMAX));
			if ((rc = sim_lang_plan_block_bytes(b, t, ti,
			    free_elems * sz, &pb)))
				return (rc);
			if (t->space == NKIR__V1__SPACE__SPACE_PSUM &&
			    pb > SIM_PSUM_PART_BYTES)
				return (sim_plan_err(b, loc, SIM_EINVAL,
				    "PSUM tile `%s` needs %llu bytes per "
				    "partition, which exceeds architecture "
				    "limitation of %d (2KiB per partition)",
				    ti->name, (unsigned long long)pb,
				    SIM_PSUM_PART_BYTES));
			if (t->space == NKIR__V1__SPACE__SPACE_SBUF &&
			    pb > sim_plan_sbuf_limit(k->target))
				return (sim_plan_err(b, loc, SIM_EINVAL,
				    "SBUF tile `%s` needs %llu bytes per "
				    "partition, which exceeds architecture "
				    "limitation of %llu", ti->name,
				    (unsigned long long)pb,
				    (unsigned long long)
				    sim_plan_sbuf_limit(k->target)));
			p->cost += ti->nelem;
			if ((rc = sim_plan_budget(b, loc, &tile_bytes,
			    ti->nelem * 4, SIM_TILE_BYTES_MAX, "tiles")))
				return (rc);
		} else if (t->kind == NKIR__V1__TENSOR_KIND__TENSOR_HBM &&
		    ti->view_of < 0) {
			p->cost += ti->nelem;
			if ((rc = sim_plan_budget(b, loc, &hbm_bytes,
			    ti->nelem * sz, SIM_HBM_BYTES_MAX, "HBM tensors")))
				return (rc);
		}
	}
	return (0);
}

static void
sim_plan_sig(struct sim_sig *s, const char *name, const struct sim_tinfo *ti)
{
	s->name = name;
	s->dtype = ti->dtype;
	s->rank = ti->rank;
	memcpy(s->shape, ti->shape, sizeof(s->shape));
}

static int
sim_plan_signature(struct sim_build *b)
{
	const Nkir__V1__Kernel	*k = b->k;
	struct sim_program	*p = b->p;
	size_t			 i, j;

	if (k->n_params > SIM_PARAMS_MAX || k->n_outputs > SIM_PARAMS_MAX)
		return (sim_plan_err(b, NULL, SIM_ELIMIT,
		    "kernel has too many parameters or outputs"));
	p->nparams = k->n_params;
	p->params = sim_plan_alloc(b, k->n_params * sizeof(*p->params));
	p->param_tensor = sim_plan_alloc(b, k->n_params * sizeof(uint32_t));
	p->noutputs = k->n_outputs;
	p->outputs = sim_plan_alloc(b, k->n_outputs * sizeof(*p->outputs));
	p->output_tensor = sim_plan_alloc(b, k->n_outputs * sizeof(uint32_t));
	if (!p->params || !p->param_tensor || !p->outputs || !p->output_tensor)
		return (SIM_ENOMEM);
	for (i = 0; i < k->n_params; i++) {
		const Nkir__V1__Param	*pa = k->params[i];
		char			*name;

		if (pa == NULL || pa->tensor >= p->ntensors ||
		    p->tensors[pa->tensor].kind !=
		    NKIR__V1__TENSOR_KIND__TENSOR_PARAM)
			return (sim_plan_err(b, NULL, SIM_EPARSE,
			    "parameter %zu does not name a kernel argument "
			    "tensor", i));
		for (j = 0; j < i; j++)
			if (p->param_tensor[j] == pa->tensor)
				return (sim_plan_err(b, NULL, SIM_EPARSE,
				    "parameters %zu and %zu name the same "
				    "tensor", j, i));
		name = sim_plan_strdup(b, pa->name);
		if (name == NULL)
			return (SIM_ENOMEM);
		p->param_tensor[i] = pa->tensor;
		sim_plan_sig(&p->params[i], name, &p->tensors[pa->tensor]);
	}
	for (i = 0; i < p->ntensors; i++) {
		bool	found = false;

		if (p->tensors[i].kind != NKIR__V1__TENSOR_KIND__TENSOR_PARAM)
			continue;
		for (j = 0; j < p->nparams; j++)
			found = found || p->param_tensor[j] == i;
		if (!found)
			return (sim_plan_err(b, NULL, SIM_EPARSE,
			    "kernel argument tensor `%s` is not a parameter",
			    p->tensors[i].name));
	}
	for (i = 0; i < k->n_outputs; i++) {
		uint32_t	t = k->outputs[i];

		if (t >= p->ntensors || p->tensors[t].chip)
			return (sim_plan_err(b, NULL, SIM_EPARSE,
			    "output %zu does not name an HBM tensor", i));
		p->output_tensor[i] = t;
		sim_plan_sig(&p->outputs[i], p->tensors[t].name,
		    &p->tensors[t]);
	}
	return (0);
}

/* The run block: tiles (64-byte aligned), then the scratch, the five row
 * buffers and the active flags. */
static void
sim_plan_run_layout(struct sim_program *p)
{
	size_t	off = 0, row = p->row_max ? p->row_max : 1;
	size_t	i;

	for (i = 0; i < p->ntensors; i++) {
		struct sim_tinfo	*ti = &p->tensors[i];

		if (!ti->chip)
			continue;
		ti->moff = off;
		off += (ti->nelem * 4 + 63) & ~(size_t)63;
	}
	p->scratch_off = off;
	off += ((p->scratch_max + 1) * sizeof(float) + 63) & ~(size_t)63;
	p->row_off = off;
	off += 5 * ((row * sizeof(float) + 63) & ~(size_t)63);
	p->act_off = off;
	off += (row + 63) & ~(size_t)63;
	p->run_bytes = off;
}

int
sim_plan_build(const Nkir__V1__Kernel *k, struct sim_program **out,
    struct sim_diag *diag)
{
	struct sim_build	 b = { .k = k, .diag = diag };
	struct sim_program	*p;
	const struct sim_tinfo	*ti;
	size_t			 nv, i;
	int			 rc;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return (SIM_ENOMEM);
	pthread_mutex_init(&p->run_mu, NULL);
	b.p = p;
	rc = SIM_ENOMEM;
	p->name = sim_plan_strdup(&b, k->name);
	if (p->name == NULL)
		goto out;
	if (k->n_files > SIM_FILES_MAX) {
		rc = sim_plan_err(&b, NULL, SIM_ELIMIT, "too many files");
		goto out;
	}
	if (k->loc != NULL && k->loc->file >= k->n_files && k->n_files > 0) {
		rc = sim_plan_err(&b, NULL, SIM_EPARSE,
		    "kernel location names a missing file");
		goto out;
	}
	p->nfiles = k->n_files;
	p->files = sim_plan_alloc(&b, k->n_files * sizeof(char *));
	if (p->files == NULL)
		goto out;
	for (i = 0; i < k->n_files; i++) {
		if (k->files[i] != NULL && !sim_plan_utf8(k->files[i])) {
			/* No location: it would quote the name. */
			sim_diag_set(diag, "the name of source file %zu is "
			    "not valid UTF-8", i);
			rc = SIM_EPARSE;
			goto out;
		}
		if ((p->files[i] = sim_plan_strdup(&b, k->files[i])) == NULL)
			goto out;
	}
	if (k->n_grid > SIM_GRID_RANK_MAX) {
		rc = sim_plan_err(&b, NULL, SIM_ELIMIT,
		    "launch grid of rank %zu (executor limit %d)", k->n_grid,
		    SIM_GRID_RANK_MAX);
		goto out;
	}
	p->grid_rank = (int)k->n_grid;
	p->nprograms = 1;
	b.grid_rank = 1;
	b.grid[0] = 1;
	for (i = 0; i < k->n_grid; i++) {
		if (k->grid[i] < 1) {
			rc = sim_plan_err(&b, NULL, SIM_EPARSE,
			    "launch grid dimension %zu is 0", i);
			goto out;
		}
		p->grid[i] = k->grid[i];
		b.grid[i] = k->grid[i];
		p->nprograms *= k->grid[i];
		if (p->nprograms > SIM_PROGRAMS_MAX) {
			rc = sim_plan_err(&b, NULL, SIM_ELIMIT,
			    "launch grid has more than %u programs",
			    SIM_PROGRAMS_MAX);
			goto out;
		}
	}
	if (k->n_grid > 0)
		b.grid_rank = (int)k->n_grid;
	if (k->num_loop_vars > SIM_LOOPVARS_MAX) {
		rc = sim_plan_err(&b, NULL, SIM_ELIMIT,
		    "kernel has %u loop variables (executor limit %d)",
		    k->num_loop_vars, SIM_LOOPVARS_MAX);
		goto out;
	}
	p->nloopvars = k->num_loop_vars;
	p->fp32_tiles = k->fp32_tiles;
	nv = p->nloopvars + k->n_fns + 1;
	b.used = calloc(nv, 1);
	b.inscope = calloc(nv, 1);
	b.vlo = calloc(nv, sizeof(int64_t));
	b.vhi = calloc(nv, sizeof(int64_t));
	b.vstep = calloc(nv, sizeof(int64_t));
	if (!b.used || !b.inscope || !b.vlo || !b.vhi || !b.vstep)
		goto out;
	if ((rc = sim_plan_tensors(&b)) || (rc = sim_plan_signature(&b)) ||
	    (rc = sim_lang_plan_fns(&b)))
		goto out;
	p->nbody = k->n_body;
	b.trips = p->nprograms;
	if ((rc = sim_plan_body(&b, k->body, k->n_body, &p->body)))
		goto out;
	for (i = 0; i < p->noutputs; i++) {
		ti = &p->tensors[p->output_tensor[i]];
		if (!ti->written &&
		    ti->kind == NKIR__V1__TENSOR_KIND__TENSOR_HBM) {
			rc = sim_plan_err(&b,
			    k->tensors[p->output_tensor[i]]->loc, SIM_EINVAL,
			    "output tensor `%s` of kernel '%s' is never "
			    "written", ti->name, p->name);
			goto out;
		}
	}
	sim_plan_run_layout(p);
	*out = p;
	p = NULL;
	rc = 0;
out:
	if (rc == SIM_ENOMEM)
		sim_diag_set(diag, "out of memory");
	free(b.used);
	free(b.inscope);
	free(b.vlo);
	free(b.vhi);
	free(b.vstep);
	sim_plan_free(p);
	return (rc);
}
