/*
 * check_sim_mx.c: unit tests of NKI 0.6's MX types and ops and random state
 * in the executor (sim/sim_op06_mx_*.c, sim/sim_op06_rng_*.c, sim_dtype.c):
 * kernels built with protobuf-c structs, compiled, loaded and run.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim.h"
#include "sim/sim_impl.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("sim_mx", NULL, NULL, NULL);
CHECK_TCASE(core, 60);
CHECK_TCASE(errors, 60);

#define NMEM	512
#define DT(x)	NKIR__V1__DTYPE__DT_##x
#define OPK(x)	NKIR__V1__OP_KIND__OP_##x
#define SP(x)	NKIR__V1__SPACE__SPACE_##x
#define TK(x)	NKIR__V1__TENSOR_KIND__TENSOR_##x

struct kmx {
	Nkir__V1__Kernel	 k;
	void			*mem[NMEM];
	size_t			 nmem;
};

static void *
kmx_alloc(struct kmx *b, size_t n)
{
	void	*p = calloc(1, n);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_lt(b->nmem, NMEM);
	b->mem[b->nmem++] = p;
	return (p);
}

static void
kmx_release(struct kmx *b)
{
	size_t	i;

	for (i = 0; i < b->nmem; i++)
		free(b->mem[i]);
}

static Nkir__V1__Loc *
kmx_loc(struct kmx *b, uint32_t line)
{
	Nkir__V1__Loc	*l = kmx_alloc(b, sizeof(*l));

	nkir__v1__loc__init(l);
	l->line = line;
	return (l);
}

static void
kmx_init(struct kmx *b, const char *target)
{
	static char	*files[] = { "kernel.py" };

	memset(b, 0, sizeof(*b));
	nkir__v1__kernel__init(&b->k);
	b->k.name = "mx";
	b->k.files = files;
	b->k.n_files = 1;
	b->k.target = (char *)target;
	b->k.loc = kmx_loc(b, 1);
	b->k.tensors = kmx_alloc(b, 16 * sizeof(void *));
	b->k.params = kmx_alloc(b, 4 * sizeof(void *));
	b->k.outputs = kmx_alloc(b, 4 * sizeof(uint32_t));
	b->k.body = kmx_alloc(b, 16 * sizeof(void *));
}

/* A [n0, n1] tensor; a param (kind PARAM) is added to the signature, an
 * HBM tensor (kind HBM) to the outputs. */
static uint32_t
kmx_tensor(struct kmx *b, int kind, int space, int dtype, uint64_t n0,
    uint64_t n1)
{
	Nkir__V1__Tensor	*t = kmx_alloc(b, sizeof(*t));
	uint32_t		 id = (uint32_t)b->k.n_tensors;

	nkir__v1__tensor__init(t);
	t->name = "t";
	t->kind = kind;
	t->space = space;
	t->dtype = dtype;
	t->n_shape = 2;
	t->shape = kmx_alloc(b, 2 * sizeof(uint64_t));
	t->shape[0] = n0;
	t->shape[1] = n1;
	t->loc = kmx_loc(b, 2);
	b->k.tensors[b->k.n_tensors++] = t;
	if (kind == TK(PARAM)) {
		b->k.params[b->k.n_params] = kmx_alloc(b,
		    sizeof(Nkir__V1__Param));
		nkir__v1__param__init(b->k.params[b->k.n_params]);
		b->k.params[b->k.n_params]->name = "a";
		b->k.params[b->k.n_params++]->tensor = id;
	} else if (kind == TK(HBM))
		b->k.outputs[b->k.n_outputs++] = id;
	return (id);
}

/* The access [r0:r0+n0, 0:n1] of tensor t. */
static Nkir__V1__Access *
kmx_acc(struct kmx *b, uint32_t t, uint64_t r0, uint64_t n0, uint64_t n1)
{
	Nkir__V1__Access	*a = kmx_alloc(b, sizeof(*a));
	int			 d;

	nkir__v1__access__init(a);
	a->tensor = t;
	a->n_shape = 2;
	a->shape = kmx_alloc(b, 2 * sizeof(uint64_t));
	a->shape[0] = n0;
	a->shape[1] = n1;
	a->n_index = 2;
	a->index = kmx_alloc(b, 2 * sizeof(void *));
	for (d = 0; d < 2; d++) {
		Nkir__V1__Term	*tm = kmx_alloc(b, sizeof(*tm));

		a->index[d] = kmx_alloc(b, sizeof(Nkir__V1__Affine));
		nkir__v1__affine__init(a->index[d]);
		nkir__v1__term__init(tm);
		tm->kind = NKIR__V1__TERM_KIND__TERM_AXIS;
		tm->index = d;
		tm->coef = 1;
		a->index[d]->n_terms = 1;
		a->index[d]->terms = kmx_alloc(b, sizeof(void *));
		a->index[d]->terms[0] = tm;
	}
	a->index[0]->constant = (int64_t)r0;
	return (a);
}

/* The whole of tensor t. */
static Nkir__V1__Access *
kmx_all(struct kmx *b, uint32_t t)
{
	const Nkir__V1__Tensor	*x = b->k.tensors[t];

	return (kmx_acc(b, t, 0, x->shape[0], x->shape[1]));
}

static Nkir__V1__Op *
kmx_op(struct kmx *b, int kind, Nkir__V1__Access *dst, uint32_t line)
{
	Nkir__V1__Op	*o = kmx_alloc(b, sizeof(*o));

	nkir__v1__op__init(o);
	o->kind = kind;
	o->loc = kmx_loc(b, line);
	o->dst = dst;
	o->src = kmx_alloc(b, 4 * sizeof(void *));
	o->scale = 1.0;
	b->k.body[b->k.n_body++] = o;
	return (o);
}

static void
kmx_src(struct kmx *b, Nkir__V1__Op *o, Nkir__V1__Access *a)
{
	Nkir__V1__Operand	*s = kmx_alloc(b, sizeof(*s));

	nkir__v1__operand__init(s);
	s->value_case = NKIR__V1__OPERAND__VALUE_ACCESS;
	s->access = a;
	o->src[o->n_src++] = s;
}

/* dst <- src, one op of kind. */
static Nkir__V1__Op *
kmx_copy(struct kmx *b, int kind, uint32_t dst, uint32_t src, uint32_t line)
{
	Nkir__V1__Op	*o = kmx_op(b, kind, kmx_all(b, dst), line);

	kmx_src(b, o, kmx_all(b, src));
	return (o);
}

static int
kmx_program(struct kmx *b, struct sim_program **p, struct sim_diag *d)
{
	size_t		 len, ilen;
	uint8_t		*ir;
	void		*img;
	int		 rc;

	*p = NULL;
	memset(d, 0, sizeof(*d));
	len = nkir__v1__kernel__get_packed_size(&b->k);
	ir = malloc(len + 1);
	ck_assert_ptr_nonnull(ir);
	nkir__v1__kernel__pack(&b->k, ir);
	rc = sim_compile(ir, len, &img, &ilen, d);
	free(ir);
	if (rc)
		return (rc);
	rc = sim_program_load(img, ilen, p, d);
	free(img);
	return (rc);
}

/* The expected error of b's compilation: code and text, at kernel.py:line. */
static void
kmx_fails(struct kmx *b, int code, const char *text, uint32_t line)
{
	struct sim_program	*p;
	struct sim_diag		 d;
	char			 at[32];

	ck_assert_int_eq(kmx_program(b, &p, &d), code);
	snprintf(at, sizeof at, "kernel.py:%u", line);
	ck_assert_msg(strstr(d.msg, text) != NULL && strstr(d.msg, at) != NULL,
	    "%s", d.msg);
	sim_program_free(p);
	kmx_release(b);
}

static void
kmx_input(struct sim_tensor *t, int dtype, uint64_t n0, uint64_t n1,
    void *data)
{
	memset(t, 0, sizeof(*t));
	t->dtype = dtype;
	t->rank = 2;
	t->shape[0] = n0;
	t->shape[1] = n1;
	t->data = data;
	t->nbytes = n0 * n1 * sim_dtype_size(dtype);
}

/* ------------------------------------------------------------ dtypes */

CHECK_TEST(core, test_sim_mx_dtypes)
{
	static const float	 e8[] = { 1.0f, 1.4f, 1.5f, 3.0f, 0.75f, 0.0f,
	    -1.0f, 0x1p-130f, 0x1p127f };
	static const uint8_t	 e8b[] = { 127, 127, 128, 129, 127, 255, 255,
	    0, 254 };
	uint32_t		 u = 0x7fc01234u, back;
	float			 f;
	uint8_t			 b;
	size_t			 i;

	ck_assert_str_eq(sim_dtype_name(SIM_DT_FP8_E8M0), "float8_e8m0fnu");
	ck_assert_int_eq(sim_dtype_from_name("float4_e2m1fn_x4"),
	    SIM_DT_FP4_E2M1_X4);
	ck_assert_uint_eq(sim_dtype_size(SIM_DT_FP8_E5M2_X4), 4);
	ck_assert_uint_eq(sim_dtype_size(SIM_DT_FP4_E2M1_X4), 2);
	ck_assert_uint_eq(sim_dtype_size(SIM_DT_FP8_E8M0), 1);
	for (i = 0; i < sizeof e8 / sizeof e8[0]; i++) {
		sim_dtype_encode(SIM_DT_FP8_E8M0, &b, 1, 1, &e8[i], 1);
		ck_assert_msg(b == e8b[i], "%g -> %u", (double)e8[i], b);
	}
	b = 0;
	sim_dtype_decode(SIM_DT_FP8_E8M0, &b, 1, 1, &f);
	ck_assert(f == 0x1p-127f);
	/* an fp8 x4 element keeps its 32 bits, NaN payload and all */
	sim_dtype_decode(SIM_DT_FP8_E4M3_X4, &u, 1, 1, &f);
	sim_dtype_encode(SIM_DT_FP8_E4M3_X4, &back, 1, 1, &f, 1);
	ck_assert_uint_eq(back, u);
	ck_assert(sim_dtype_round(SIM_DT_FP8_E4M3_X4, f) != 0.0f);
	ck_assert(sim_dtype_is_packed(SIM_DT_FP4_E2M1_X4));
	ck_assert(!sim_dtype_is_packed(SIM_DT_FP8_E8M0));
	ck_assert(sim_dtype_mx_decode(SIM_DT_FP4_E2M1_X4, 0x7) == 6.0f);
	ck_assert(sim_dtype_mx_decode(SIM_DT_FP4_E2M1_X4, 0xd) == -3.0f);
	ck_assert(sim_dtype_mx_decode(SIM_DT_FP8_E5M2_X4, 0x3c) == 1.0f);
}

/* ------------------------------------------------------------ ops */

/*
 * x [32, 16] bfloat16 -> quantize_mx (e4m3 x4 [32, 4], uint8 scales
 * [4, 4]) -> nc_matmul_mx of the data with itself (stationary and moving)
 * -> out [4, 4] float32; the data and scales are outputs too.
 */
static void
kmx_build_qmm(struct kmx *b, const char *target, int src_dt)
{
	uint32_t	 x, t, d, s, ps, r, od, os, out;
	Nkir__V1__Op	*o;

	kmx_init(b, target);
	x = kmx_tensor(b, TK(PARAM), SP(HBM), src_dt, 32, 16);
	out = kmx_tensor(b, TK(HBM), SP(SHARED_HBM), DT(FLOAT32), 4, 4);
	od = kmx_tensor(b, TK(HBM), SP(SHARED_HBM), DT(FP8_E4M3_X4), 32, 4);
	os = kmx_tensor(b, TK(HBM), SP(SHARED_HBM), DT(UINT8), 4, 4);
	t = kmx_tensor(b, TK(TILE), SP(SBUF), src_dt, 32, 16);
	d = kmx_tensor(b, TK(TILE), SP(SBUF), DT(FP8_E4M3_X4), 32, 4);
	s = kmx_tensor(b, TK(TILE), SP(SBUF), DT(UINT8), 4, 4);
	ps = kmx_tensor(b, TK(TILE), SP(PSUM), DT(FLOAT32), 4, 4);
	r = kmx_tensor(b, TK(TILE), SP(SBUF), DT(FLOAT32), 4, 4);
	kmx_copy(b, OPK(LOAD), t, x, 10);
	o = kmx_copy(b, OPK(QUANTIZE_MX), s, t, 11);
	o->acc_dtype = DT(FP8_E4M3_X4);
	kmx_copy(b, OPK(QUANTIZE_MX), d, t, 11);
	o = kmx_op(b, OPK(MATMUL_MX), kmx_all(b, ps), 12);
	kmx_src(b, o, kmx_all(b, d));
	kmx_src(b, o, kmx_all(b, d));
	kmx_src(b, o, kmx_all(b, s));
	kmx_src(b, o, kmx_all(b, s));
	kmx_copy(b, OPK(COPY), r, ps, 13);
	kmx_copy(b, OPK(STORE), out, r, 14);
	kmx_copy(b, OPK(STORE), od, d, 15);
	kmx_copy(b, OPK(STORE), os, s, 16);
}

static uint16_t
kmx_bf16(float f)
{
	uint32_t	u;

	memcpy(&u, &f, 4);
	return ((uint16_t)(u >> 16));
}

CHECK_TEST(core, test_sim_mx_quantize_then_matmul)
{
	static const float	 vals[] = { 1.0f, -2.0f, 0.5f, 3.0f, -1.5f,
	    0.25f, 2.0f, -0.75f };
	struct kmx		 b;
	struct sim_program	*p;
	struct sim_diag		 d;
	struct sim_tensor	 in, o[3];
	uint16_t		 x[32 * 16];
	float			 xf[32 * 16], want;
	const float		*res;
	const uint8_t		*sc;
	const uint32_t		*q;
	int			 i, j, k, e;

	for (i = 0; i < 32 * 16; i++) {
		xf[i] = vals[(i * 7 + i / 16) % 8];
		if (i / 16 >= 24 && (i % 16) / 4 == 3)
			xf[i] = 0.0f;	/* the last group of column 3 */
		x[i] = kmx_bf16(xf[i]);
	}
	kmx_build_qmm(&b, "trn3", DT(BFLOAT16));
	ck_assert_msg(kmx_program(&b, &p, &d) == 0, "%s", d.msg);
	kmx_input(&in, SIM_DT_BFLOAT16, 32, 16, x);
	ck_assert_msg(sim_run(p, &in, 1, o, 3, NULL, &d) == 0, "%s", d.msg);
	res = o[0].data;
	q = o[1].data;
	sc = o[2].data;
	/* scales: floor(log2 amax) - (8 - 1) + 127, amax 3 (exponent 1) in
	 * every group but the all-zero one (2^-127: 0) */
	for (i = 0; i < 4; i++)
		for (j = 0; j < 4; j++)
			ck_assert_uint_eq(sc[i * 4 + j], i == 3 && j == 3 ? 0 :
			    1 - 7 + 127);
	/* x[0] = 1.0: 1.0 / 2^-6 = 64, e4m3 0x68 (exponent 13, no
	 * mantissa), in byte 0 of element (0, 0) */
	ck_assert(xf[0] == 1.0f);
	ck_assert_uint_eq(q[0] & 0xff, 0x68);
	/* lossless quantization: the product is exact */
	for (i = 0; i < 4; i++)
		for (j = 0; j < 4; j++) {
			want = 0.0f;
			for (k = 0; k < 32; k++)
				for (e = 0; e < 4; e++)
					want += xf[k * 16 + i * 4 + e] *
					    xf[k * 16 + j * 4 + e];
			ck_assert_msg(res[i * 4 + j] == want, "[%d, %d] %g %g",
			    i, j, (double)res[i * 4 + j], (double)want);
		}
	sim_tensors_release(o, 3);
	sim_program_free(p);
	kmx_release(&b);
}

/* a [32, 4] uint32 param read as float8_e5m2_x4 (Tensor.view_of), copied
 * through SBUF to an output of that dtype. */
static uint32_t
kmx_build_view(struct kmx *b, uint64_t view_cols)
{
	uint32_t	a, v, t, out;

	kmx_init(b, "trn3");
	a = kmx_tensor(b, TK(PARAM), SP(HBM), DT(UINT32), 32, 4);
	v = kmx_tensor(b, TK(HBM), SP(HBM), DT(FP8_E5M2_X4), 32, view_cols);
	b->k.n_outputs = 0;
	b->k.tensors[v]->view_of = a + 1;
	out = kmx_tensor(b, TK(HBM), SP(SHARED_HBM), DT(FP8_E5M2_X4), 32, 4);
	t = kmx_tensor(b, TK(TILE), SP(SBUF), DT(FP8_E5M2_X4), 32, 4);
	if (view_cols == 4)
		kmx_copy(b, OPK(DMA_COPY), t, v, 20);
	kmx_copy(b, OPK(DMA_COPY), out, t, 21);
	return (v);
}

CHECK_TEST(core, test_sim_mx_hbm_view_copies_bits)
{
	struct kmx		 b;
	struct sim_program	*p;
	struct sim_diag		 d;
	struct sim_tensor	 in, o;
	uint32_t		 a[128];
	int			 i;

	for (i = 0; i < 128; i++)
		a[i] = 0x9e3779b9u * (uint32_t)(i + 1);
	a[0] = 0x7f800001u;	/* a signalling NaN's pattern */
	a[1] = 0x00000003u;	/* a float32 subnormal's */
	kmx_build_view(&b, 4);
	ck_assert_msg(kmx_program(&b, &p, &d) == 0, "%s", d.msg);
	kmx_input(&in, SIM_DT_UINT32, 32, 4, a);
	ck_assert_msg(sim_run(p, &in, 1, &o, 1, NULL, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(o.dtype, SIM_DT_FP8_E5M2_X4);
	ck_assert_uint_eq(o.nbytes, sizeof a);
	ck_assert(memcmp(o.data, a, sizeof a) == 0);
	sim_tensors_release(&o, 1);
	sim_program_free(p);
	kmx_release(&b);
}

CHECK_TEST(core, test_sim_mx_rand_state_roundtrip)
{
	struct kmx		 b;
	struct sim_program	*p;
	struct sim_diag		 d;
	struct sim_tensor	 in, o[2];
	Nkir__V1__Op		*op;
	uint32_t		 a, st, r, o1, o2;
	float			 one = 1.0f;
	const float		*x, *y;
	int			 i;

	kmx_init(&b, "trn2");
	a = kmx_tensor(&b, TK(PARAM), SP(HBM), DT(FLOAT32), 1, 1);
	(void)a;
	o1 = kmx_tensor(&b, TK(HBM), SP(SHARED_HBM), DT(FLOAT32), 2, 8);
	o2 = kmx_tensor(&b, TK(HBM), SP(SHARED_HBM), DT(FLOAT32), 2, 8);
	st = kmx_tensor(&b, TK(TILE), SP(SBUF), DT(UINT32), 2, 6);
	r = kmx_tensor(&b, TK(TILE), SP(SBUF), DT(FLOAT32), 2, 8);
	op = kmx_op(&b, OPK(RAND_GET_STATE), kmx_all(&b, st), 30);
	op->engine = NKIR__V1__ENGINE__ENGINE_GPSIMD;
	kmx_op(&b, OPK(RAND), kmx_all(&b, r), 31);
	kmx_copy(&b, OPK(STORE), o1, r, 32);
	op = kmx_op(&b, OPK(RAND_SET_STATE), NULL, 33);
	op->engine = NKIR__V1__ENGINE__ENGINE_GPSIMD;
	kmx_src(&b, op, kmx_all(&b, st));
	kmx_op(&b, OPK(RAND), kmx_all(&b, r), 34);
	kmx_copy(&b, OPK(STORE), o2, r, 35);
	ck_assert_msg(kmx_program(&b, &p, &d) == 0, "%s", d.msg);
	kmx_input(&in, SIM_DT_FLOAT32, 1, 1, &one);
	ck_assert_msg(sim_run(p, &in, 1, o, 2, NULL, &d) == 0, "%s", d.msg);
	x = o[0].data;
	y = o[1].data;
	for (i = 0; i < 16; i++)
		ck_assert(x[i] == y[i] && x[i] >= 0.0f && x[i] < 1.0f);
	ck_assert(x[0] != x[1]);
	sim_tensors_release(o, 2);
	sim_program_free(p);
	kmx_release(&b);
}

/* ------------------------------------------------------------ errors */

CHECK_TEST(errors, test_sim_mx_needs_trn3)
{
	struct kmx	b;

	kmx_build_qmm(&b, "trn2", DT(BFLOAT16));
	kmx_fails(&b, SIM_EINVAL, "'quantize_mx' is available only on "
	    "NeuronCore-v4 and newer", 11);
}

CHECK_TEST(errors, test_sim_mx_quantize_src_dtype)
{
	struct kmx	b;

	kmx_build_qmm(&b, "trn3", DT(FLOAT32));
	kmx_fails(&b, SIM_EINVAL, "The input src tile must be float16 or "
	    "bfloat16, got float32", 11);
}

CHECK_TEST(errors, test_sim_mx_matmul_partitions)
{
	struct kmx	b;

	kmx_build_qmm(&b, "trn3", DT(BFLOAT16));
	/* moving: partitions 1..31 of the data */
	b.k.body[3]->src[1]->access->shape[0] = 31;
	b.k.body[3]->src[1]->access->index[0]->constant = 1;
	kmx_fails(&b, SIM_EINVAL, "The partition dimension size of stationary "
	    "and moving must be identical and be a multiple of 32, not "
	    "exceeding 128, got 32 and 31", 12);
}

CHECK_TEST(errors, test_sim_mx_matmul_scale_rows)
{
	struct kmx	b;

	kmx_build_qmm(&b, "trn3", DT(BFLOAT16));
	b.k.body[3]->src[2]->access->shape[0] = 3;
	kmx_fails(&b, SIM_EINVAL, "stationary_scale has 3 partitions: data of "
	    "32 partitions needs 4", 12);
}

CHECK_TEST(errors, test_sim_mx_packed_no_arithmetic)
{
	struct kmx	b;
	Nkir__V1__Op	*o;

	kmx_build_qmm(&b, "trn3", DT(BFLOAT16));
	o = b.k.body[3];
	o->kind = OPK(TENSOR_TENSOR);
	o->alu = NKIR__V1__ALU_OP__ALU_ADD;
	o->dst = o->src[0]->access;
	o->n_src = 2;
	kmx_fails(&b, SIM_EINVAL, "'tensor_tensor' cannot compute on packed "
	    "MX data (float8_e4m3fn_x4)", 12);
}

CHECK_TEST(errors, test_sim_mx_view_size_and_read_only)
{
	struct kmx	b;
	uint32_t	v;

	kmx_build_view(&b, 5);
	kmx_fails(&b, SIM_EINVAL, "cannot view HBM tensor `t` (512 bytes of "
	    "uint32) as `t`, 640 bytes of float8_e5m2_x4", 2);
	v = kmx_build_view(&b, 4);
	b.k.body[1]->dst = kmx_all(&b, v);
	kmx_fails(&b, SIM_EINVAL, "'dma_copy' cannot write HBM tensor `t`: it "
	    "is a dtype view", 21);
}

CHECK_TEST(errors, test_sim_mx_rand_state_limits)
{
	struct kmx	b;
	Nkir__V1__Op	*op;
	uint32_t	st;

	kmx_init(&b, "trn2");
	kmx_tensor(&b, TK(PARAM), SP(HBM), DT(FLOAT32), 1, 1);
	st = kmx_tensor(&b, TK(TILE), SP(SBUF), DT(UINT32), 2, 5);
	op = kmx_op(&b, OPK(RAND_GET_STATE), kmx_all(&b, st), 40);
	op->engine = NKIR__V1__ENGINE__ENGINE_GPSIMD;
	kmx_fails(&b, SIM_EINVAL, "dst element count for XORWOW must be 6 "
	    "elements (GpSimd) or 24 elements (Vector), got 5", 40);

	kmx_init(&b, "trn1");
	kmx_tensor(&b, TK(PARAM), SP(HBM), DT(FLOAT32), 1, 1);
	st = kmx_tensor(&b, TK(TILE), SP(SBUF), DT(UINT32), 2, 6);
	op = kmx_op(&b, OPK(RAND_SET_STATE), NULL, 41);
	op->engine = NKIR__V1__ENGINE__ENGINE_GPSIMD;
	kmx_src(&b, op, kmx_all(&b, st));
	kmx_fails(&b, SIM_EINVAL, "Supported arch versions: NeuronCore-v3+", 41);

	kmx_init(&b, "trn2");
	kmx_tensor(&b, TK(PARAM), SP(HBM), DT(FLOAT32), 1, 1);
	st = kmx_tensor(&b, TK(TILE), SP(SBUF), DT(UINT32), 2, 24);
	op = kmx_op(&b, OPK(RAND_GET_STATE), kmx_all(&b, st), 42);
	op->engine = NKIR__V1__ENGINE__ENGINE_VECTOR;
	kmx_fails(&b, SIM_EINVAL, "the Vector Engine needs NeuronCore-v4", 42);
}
