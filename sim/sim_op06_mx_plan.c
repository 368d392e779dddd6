/* NKI 0.6's MX (OCP microscaling) op kinds planned: OP_QUANTIZE_MX (nisa.quantize_mx), OP_MATMUL_MX (nisa.nc_matmul_mx), the MX dtypes' guards and HBM dtype views (run: sim_op06_mx_exec.c). */

#include <stdint.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/*
 * The words and limits are aws-neuron-sdk@81ce03ae's
 * nki/api/nki/isa/__init__.py (quantize_mx, nc_matmul_mx). A scaling
 * group is 8 partitions x 4 elements (one x4 element per partition); the
 * scale of the group whose first partition is p (and x4 column j) lives
 * at partition (p / 32) * 32 + (p % 32) / 8, column j, of the scale view:
 * the quadrant the group comes from (nki/deep-dives mxfp-matmul,
 * mx_kernel_utils.py's load_scales_scattered).
 */

static int
sim_mx_dtype(const struct sim_build *b, const struct sim_view *v)
{
	return (b->p->tensors[v->tensor].dtype);
}

uint64_t
sim_op06_mx_scale_row(uint64_t p)
{
	return ((p / 32) * 32 + (p % 32) / SIM_MX_GROUP);
}

/* The partitions a scale view needs for data of k partitions. */
static uint64_t
sim_mx_scale_rows(uint64_t k)
{
	return (sim_op06_mx_scale_row(k - SIM_MX_GROUP) + 1);
}

static int
sim_mx_target(struct sim_build *b, const Nkir__V1__Op *o)
{
	const char	*t = b->k->target;

	if (sim_plan_nc_version(b) >= 4)
		return (0);
	return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s' is available only "
	    "on NeuronCore-v4 and newer (platform_target='trn3'), not on "
	    "'%s'", sim_op_name(o->kind), t != NULL && *t ? t : "trn1"));
}

/* Operand arg of op: a 2D unmasked view. */
static int
sim_mx_2d(struct sim_build *b, const Nkir__V1__Op *o, const struct sim_view *v,
    const char *arg)
{
	if (v->rank != 2)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s' takes 2D "
		    "tiles: '%s' has %d dimensions", sim_op_name(o->kind), arg,
		    v->rank));
	if (v->nmask)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s' cannot mask "
		    "'%s'", sim_op_name(o->kind), arg));
	return (0);
}

static int
sim_mx_is_scale(int dt)
{
	return (dt == SIM_DT_FP8_E8M0 || dt == SIM_DT_UINT8);
}

/* A scale view of data with k partitions and f x4 columns. */
static int
sim_mx_plan_scale(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_view *s, const char *arg, uint64_t k, uint64_t f)
{
	int	rc;

	if ((rc = sim_mx_2d(b, o, s, arg)))
		return (rc);
	if (!sim_mx_is_scale(sim_mx_dtype(b, s)))
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "The %s tile "
		    "must be float8_e8m0fnu or uint8, got %s", arg,
		    sim_dtype_name(sim_mx_dtype(b, s))));
	if (s->shape[0] < sim_mx_scale_rows(k))
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "%s has %llu "
		    "partitions: data of %llu partitions needs %llu (one per "
		    "8 partitions, in the 32-partition quadrant each group "
		    "comes from)", arg, (unsigned long long)s->shape[0],
		    (unsigned long long)k,
		    (unsigned long long)sim_mx_scale_rows(k)));
	if (s->shape[1] != f)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "the free dimension "
		    "size of %s (%llu) must match its data's, %llu x4 "
		    "elements", arg, (unsigned long long)s->shape[1],
		    (unsigned long long)f));
	return (0);
}

int
sim_op06_mx_emax(int dt)
{
	return (dt == SIM_DT_FP8_E5M2_X4 ? 15 : 8);
}

/* The scratch (floats) the op's execution needs: n; 0. */
static int
sim_mx_need(struct sim_build *b, uint64_t n)
{
	if (b->p->scratch_max < n)
		b->p->scratch_max = n;
	return (0);
}

/*
 * OP_QUANTIZE_MX writes either the data (dst float8_e5m2_x4 or
 * float8_e4m3fn_x4) or the scales (dst float8_e8m0fnu or uint8) of one
 * nisa.quantize_mx: the tracer emits the scales' op, then the data's,
 * both reading src.
 */
int
sim_op06_mx_plan_quantize(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	const struct sim_view	*s, *d = &op->dst;
	int			 sdt, ddt, rc;
	uint64_t		 P, F;

	op->nsrc = 1;
	if ((rc = sim_mx_target(b, o)) ||
	    (rc = sim_plan_operand(b, o, op, 0, "src", false)) ||
	    (rc = sim_plan_space(b, o, &op->src[0].v, "src", SIM_PLAN_SBUF)) ||
	    (rc = sim_mx_2d(b, o, &op->src[0].v, "src")))
		return (rc);
	s = &op->src[0].v;
	sdt = sim_mx_dtype(b, s);
	ddt = sim_mx_dtype(b, d);
	if (sdt != SIM_DT_FLOAT16 && sdt != SIM_DT_BFLOAT16)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "The input src tile "
		    "must be float16 or bfloat16, got %s", sim_dtype_name(sdt)));
	P = s->shape[0];
	F = s->shape[1];
	if (P % 32 != 0 || P > 128)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "The partition "
		    "dimension size of src must be a multiple of 32 and must "
		    "not exceed 128, got %llu", (unsigned long long)P));
	if (F % 4 != 0)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "The free dimension "
		    "size of src must be a multiple of 4, got %llu",
		    (unsigned long long)F));
	if (sim_mx_is_scale(ddt)) {
		if ((rc = sim_mx_plan_scale(b, o, d, "dst_scale", P, F / 4)))
			return (rc);
		if ((int)o->acc_dtype != SIM_DT_FP8_E5M2_X4 &&
		    (int)o->acc_dtype != SIM_DT_FP8_E4M3_X4)
			return (sim_plan_err(b, o->loc, SIM_EPARSE, "the scales "
			    "of 'quantize_mx' need the data's dtype "
			    "(acc_dtype), got %d", (int)o->acc_dtype));
		op->value = (float)sim_op06_mx_emax((int)o->acc_dtype);
		/* writes one partition in 8 of its view: never assumed to
		 * overwrite it */
		op->opaque = true;
		return (sim_mx_need(b, s->nelem + d->nelem));
	}
	if (ddt != SIM_DT_FP8_E5M2_X4 && ddt != SIM_DT_FP8_E4M3_X4)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "The output dst "
		    "tile must be float8_e5m2_x4 or float8_e4m3fn_x4, got %s",
		    sim_dtype_name(ddt)));
	if ((rc = sim_mx_2d(b, o, d, "dst")))
		return (rc);
	if (d->shape[0] != P || d->shape[1] != F / 4)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "The dst tile has "
		    "the same partition dimension size as src but a free "
		    "dimension size that is 1/4 of src free dimension size: "
		    "expected [%llu, %llu], got [%llu, %llu]",
		    (unsigned long long)P, (unsigned long long)(F / 4),
		    (unsigned long long)d->shape[0],
		    (unsigned long long)d->shape[1]));
	return (sim_mx_need(b, s->nelem + d->nelem));
}

int
sim_op06_mx_plan_matmul(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	static const char *const	 names[4] = { "stationary", "moving",
	    "stationary_scale", "moving_scale" };
	const struct sim_view		*st, *mv, *d = &op->dst;
	uint64_t			 K, M, N, nmax;
	int				 i, dt, rc;

	if (o->n_src != 4)
		return (sim_plan_err(b, o->loc, SIM_EPARSE, "'%s' has %zu "
		    "operands, not 4", sim_op_name(o->kind), o->n_src));
	op->nsrc = 4;
	if ((rc = sim_mx_target(b, o)))
		return (rc);
	for (i = 0; i < 4; i++)
		if ((rc = sim_plan_operand(b, o, op, i, names[i], false)) ||
		    (rc = sim_plan_space(b, o, &op->src[i].v, names[i],
		    SIM_PLAN_SBUF)) ||
		    (rc = sim_mx_2d(b, o, &op->src[i].v, names[i])))
			return (rc);
	if ((rc = sim_mx_2d(b, o, d, "dst")))
		return (rc);
	st = &op->src[0].v;
	mv = &op->src[1].v;
	for (i = 0; i < 2; i++) {
		dt = sim_mx_dtype(b, &op->src[i].v);
		if (!sim_dtype_is_packed(dt))
			return (sim_plan_err(b, o->loc, SIM_EINVAL, "The input "
			    "stationary and moving tiles must be float8_e5m2_x4,"
			    " float8_e4m3fn_x4, or float4_e2m1fn_x4, got %s for "
			    "%s", sim_dtype_name(dt), names[i]));
	}
	dt = sim_mx_dtype(b, d);
	if (dt != SIM_DT_FLOAT32 && dt != SIM_DT_BFLOAT16)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "The dst tile can "
		    "be float32 or bfloat16, got %s", sim_dtype_name(dt)));
	K = st->shape[0];
	M = st->shape[1];
	N = mv->shape[1];
	if (mv->shape[0] != K || K % 32 != 0 || K > 128)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "The partition "
		    "dimension size of stationary and moving must be identical "
		    "and be a multiple of 32, not exceeding 128, got %llu and "
		    "%llu", (unsigned long long)K,
		    (unsigned long long)mv->shape[0]));
	if (M % 2 != 0 || M > 128)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "The free dimension "
		    "size of stationary must be even and not exceed 128, got "
		    "%llu", (unsigned long long)M));
	nmax = dt == SIM_DT_FLOAT32 ? 4096 : 8192;
	if (N > nmax)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "The free dimension "
		    "size of moving must not exceed 4096 when dst is in float32"
		    " or 8192 when dst is in bfloat16, got %llu for %s",
		    (unsigned long long)N, sim_dtype_name(dt)));
	if (d->shape[0] != M || d->shape[1] != N)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "dst of '%s' must "
		    "be [%llu, %llu] (stationary's free size, moving's), got "
		    "[%llu, %llu]", sim_op_name(o->kind), (unsigned long long)M,
		    (unsigned long long)N, (unsigned long long)d->shape[0],
		    (unsigned long long)d->shape[1]));
	if ((rc = sim_mx_plan_scale(b, o, &op->src[2].v, names[2], K, M)) ||
	    (rc = sim_mx_plan_scale(b, o, &op->src[3].v, names[3], K, N)))
		return (rc);
	return (sim_mx_need(b, st->nelem * 5 + mv->nelem * 5 +
	    op->src[2].v.nelem + op->src[3].v.nelem + d->nelem));
}

/* ------------------------------------------------------------ views, guards */

int
sim_op06_mx_plan_view_of(struct sim_build *b, const Nkir__V1__Tensor *t,
    size_t i)
{
	struct sim_tinfo	*ti = &b->p->tensors[i], *v;
	uint64_t		 vi = t->view_of - 1, have, want;

	if (t->kind != NKIR__V1__TENSOR_KIND__TENSOR_HBM || vi >= i ||
	    b->p->tensors[vi].chip)
		return (sim_plan_err(b, t->loc, SIM_EPARSE, "tensor `%s` is a "
		    "view of tensor %llu, not an HBM tensor before it",
		    ti->name, (unsigned long long)vi));
	if (b->p->tensors[vi].view_of >= 0)
		vi = (uint64_t)b->p->tensors[vi].view_of;
	v = &b->p->tensors[vi];
	have = v->nelem * sim_dtype_size(v->dtype);
	want = ti->nelem * sim_dtype_size(ti->dtype);
	if (have != want)
		return (sim_plan_err(b, t->loc, SIM_EINVAL, "cannot view HBM "
		    "tensor `%s` (%llu bytes of %s) as `%s`, %llu bytes of %s",
		    v->name, (unsigned long long)have, sim_dtype_name(v->dtype),
		    ti->name, (unsigned long long)want,
		    sim_dtype_name(ti->dtype)));
	ti->view_of = (int64_t)vi;
	v->viewed = true;
	v->read = true;		/* through the view, conservatively */
	return (0);
}

int
sim_op06_mx_plan_dst(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_view *v)
{
	const struct sim_tinfo	*ti = &b->p->tensors[v->tensor];

	if (ti->view_of < 0 && !ti->viewed)
		return (0);
	return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s' cannot write HBM "
	    "tensor `%s`: it %s a dtype view (tensor.ap(dtype=...)), which "
	    "nkid keeps read-only", sim_op_name(o->kind), ti->name,
	    ti->view_of >= 0 ? "is" : "has"));
}

int
sim_op06_mx_plan_packed(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_op *op)
{
	int	dt, ddt = op->has_dst ? sim_mx_dtype(b, &op->dst) : 0, i;
	bool	packed = sim_dtype_is_packed(ddt), same = true;

	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_QUANTIZE_MX:
	case NKIR__V1__OP_KIND__OP_MATMUL_MX:
	case NKIR__V1__OP_KIND__OP_BITCAST:
	case NKIR__V1__OP_KIND__OP_ALLOC:
		return (0);
	default:
		break;
	}
	for (i = 0; i < op->nsrc; i++) {
		if (op->src[i].scalar)
			continue;
		dt = sim_mx_dtype(b, &op->src[i].v);
		packed = packed || sim_dtype_is_packed(dt);
		same = same && dt == ddt;
	}
	if (!packed)
		return (0);
	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_LOAD:
	case NKIR__V1__OP_KIND__OP_STORE:
	case NKIR__V1__OP_KIND__OP_COPY:
	case NKIR__V1__OP_KIND__OP_DMA_COPY:
	case NKIR__V1__OP_KIND__OP_DMA_TRANSPOSE:
		if (same && o->alu == NKIR__V1__ALU_OP__ALU_INVALID &&
		    op->nsrc == 1)
			return (0);
		break;
	case NKIR__V1__OP_KIND__OP_TI_GATHER:
	case NKIR__V1__OP_KIND__OP_TI_SCATTER:
		/* columns moved as they are (src1 is the index) */
		if (sim_mx_dtype(b, &op->src[0].v) == ddt)
			return (0);
		break;
	default:
		break;
	}
	return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s' cannot compute on "
	    "packed MX data (%s): float8_e5m2_x4, float8_e4m3fn_x4 and "
	    "float4_e2m1fn_x4 tiles are copied as they are (to the same "
	    "dtype) and read by nc_matmul_mx", sim_op_name(o->kind),
	    sim_dtype_name(packed && sim_dtype_is_packed(ddt) ? ddt :
	    sim_mx_dtype(b, &op->src[0].v))));
}
