/*
 * check_sim_mx.c: unit tests of NKI 0.6's MX types and ops and random state
 * in the executor (sim/sim_op06_mx_*.c, sim/sim_op06_rng_*.c, sim_dtype.c):
 * kernels built with the kernel builder (sim_kb.h), compiled, loaded and
 * run.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim.h"
#include "sim/sim_impl.h"
#include "tests/unit/check_main.h"
#include "tests/unit/sim_kb.h"

CHECK_SUITE("sim_mx", NULL, NULL, NULL);
CHECK_TCASE(core, 60);
CHECK_TCASE(errors, 60);

/* dst <- src, the whole of both, one op of kind at kernel.py:line. */
static Nkir__V1__Op *
mx_copy(struct kb *b, int kind, uint32_t dst, uint32_t src, uint32_t line)
{
	b->line = line;
	return (kb_op1(b, kind, kb_full2(b, dst), kb_full2(b, src)));
}

/* The expected error of b's compilation: code and text, at kernel.py:line;
 * frees b. */
static void
mx_fails(struct kb *b, int code, const char *text, uint32_t line)
{
	struct sim_program	*p;
	struct sim_diag		 d;
	char			 at[32];

	ck_assert_int_eq(kb_build(b, &p, &d), code);
	snprintf(at, sizeof at, "kernel.py:%u", line);
	ck_assert_msg(strstr(d.msg, text) != NULL && strstr(d.msg, at) != NULL,
	    "%s", d.msg);
	sim_program_free(p);
	kb_release(b);
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
mx_qmm_kernel(struct kb *b, const char *target, int src_dt)
{
	uint32_t	 x, t, d, s, ps, r, od, os, out;
	Nkir__V1__Op	*o;

	kb_init(b, "mx");
	kb_target(b, target);
	b->line = 2;
	x = kb_param(b, "t", src_dt, 2, SH(32, 16));
	out = kb_out(b, "t", F32, 2, SH(4, 4));
	od = kb_out(b, "t", DT(FP8_E4M3_X4), 2, SH(32, 4));
	os = kb_out(b, "t", DT(UINT8), 2, SH(4, 4));
	t = kb_tile(b, "t", SBUF, src_dt, 2, SH(32, 16));
	d = kb_tile(b, "t", SBUF, DT(FP8_E4M3_X4), 2, SH(32, 4));
	s = kb_tile(b, "t", SBUF, DT(UINT8), 2, SH(4, 4));
	ps = kb_tile(b, "t", PSUM, F32, 2, SH(4, 4));
	r = kb_tile(b, "t", SBUF, F32, 2, SH(4, 4));
	mx_copy(b, OPK(LOAD), t, x, 10);
	o = mx_copy(b, OPK(QUANTIZE_MX), s, t, 11);
	o->acc_dtype = DT(FP8_E4M3_X4);
	mx_copy(b, OPK(QUANTIZE_MX), d, t, 11);
	b->line = 12;
	o = kb_op(b, OPK(MATMUL_MX), kb_full2(b, ps));
	kb_src(b, o, kb_full2(b, d));
	kb_src(b, o, kb_full2(b, d));
	kb_src(b, o, kb_full2(b, s));
	kb_src(b, o, kb_full2(b, s));
	mx_copy(b, OPK(COPY), r, ps, 13);
	mx_copy(b, OPK(STORE), out, r, 14);
	mx_copy(b, OPK(STORE), od, d, 15);
	mx_copy(b, OPK(STORE), os, s, 16);
}

static uint16_t
mx_bf16(float f)
{
	uint32_t	u;

	memcpy(&u, &f, 4);
	return ((uint16_t)(u >> 16));
}

CHECK_TEST(core, test_sim_mx_quantize_then_matmul)
{
	static const float	 vals[] = { 1.0f, -2.0f, 0.5f, 3.0f, -1.5f,
	    0.25f, 2.0f, -0.75f };
	struct kb		 b;
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
		x[i] = mx_bf16(xf[i]);
	}
	mx_qmm_kernel(&b, "trn3", BF16);
	p = kb_program(&b);
	in = kb_host(SIM_DT_BFLOAT16, 2, SH(32, 16), x);
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
	kb_release(&b);
}

/* a [32, 4] uint32 param read as float8_e5m2_x4 (Tensor.view_of), copied
 * through SBUF to an output of that dtype. */
static uint32_t
mx_view_kernel(struct kb *b, uint64_t view_cols)
{
	uint32_t	a, v, t, out;

	kb_init(b, "mx");
	kb_target(b, "trn3");
	b->line = 2;
	a = kb_param(b, "t", DT(UINT32), 2, SH(32, 4));
	v = kb_view(b, "t", a, DT(FP8_E5M2_X4), 2, SH(32, view_cols));
	out = kb_out(b, "t", DT(FP8_E5M2_X4), 2, SH(32, 4));
	t = kb_tile(b, "t", SBUF, DT(FP8_E5M2_X4), 2, SH(32, 4));
	if (view_cols == 4)
		mx_copy(b, OPK(DMA_COPY), t, v, 20);
	mx_copy(b, OPK(DMA_COPY), out, t, 21);
	return (v);
}

CHECK_TEST(core, test_sim_mx_hbm_view_copies_bits)
{
	struct kb		 b;
	struct sim_program	*p;
	struct sim_diag		 d;
	struct sim_tensor	 in, o;
	uint32_t		 a[128];
	int			 i;

	for (i = 0; i < 128; i++)
		a[i] = 0x9e3779b9u * (uint32_t)(i + 1);
	a[0] = 0x7f800001u;	/* a signalling NaN's pattern */
	a[1] = 0x00000003u;	/* a float32 subnormal's */
	mx_view_kernel(&b, 4);
	p = kb_program(&b);
	in = kb_host(SIM_DT_UINT32, 2, SH(32, 4), a);
	ck_assert_msg(sim_run(p, &in, 1, &o, 1, NULL, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(o.dtype, SIM_DT_FP8_E5M2_X4);
	ck_assert_uint_eq(o.nbytes, sizeof a);
	ck_assert(memcmp(o.data, a, sizeof a) == 0);
	sim_tensors_release(&o, 1);
	sim_program_free(p);
	kb_release(&b);
}

CHECK_TEST(core, test_sim_mx_rand_state_roundtrip)
{
	struct kb		 b;
	struct sim_program	*p;
	struct sim_diag		 d;
	struct sim_tensor	 in, o[2];
	Nkir__V1__Op		*op;
	uint32_t		 st, r, o1, o2;
	float			 one = 1.0f;
	const float		*x, *y;
	int			 i;

	kb_init(&b, "mx");
	kb_target(&b, "trn2");
	b.line = 2;
	kb_param(&b, "t", F32, 2, SH(1, 1));
	o1 = kb_out(&b, "t", F32, 2, SH(2, 8));
	o2 = kb_out(&b, "t", F32, 2, SH(2, 8));
	st = kb_tile(&b, "t", SBUF, DT(UINT32), 2, SH(2, 6));
	r = kb_tile(&b, "t", SBUF, F32, 2, SH(2, 8));
	b.line = 30;
	op = kb_op(&b, OPK(RAND_GET_STATE), kb_full2(&b, st));
	op->engine = NKIR__V1__ENGINE__ENGINE_GPSIMD;
	b.line = 31;
	kb_op(&b, OPK(RAND), kb_full2(&b, r));
	mx_copy(&b, OPK(STORE), o1, r, 32);
	b.line = 33;
	op = kb_op(&b, OPK(RAND_SET_STATE), NULL);
	op->engine = NKIR__V1__ENGINE__ENGINE_GPSIMD;
	kb_src(&b, op, kb_full2(&b, st));
	b.line = 34;
	kb_op(&b, OPK(RAND), kb_full2(&b, r));
	mx_copy(&b, OPK(STORE), o2, r, 35);
	p = kb_program(&b);
	in = kb_host(SIM_DT_FLOAT32, 2, SH(1, 1), &one);
	ck_assert_msg(sim_run(p, &in, 1, o, 2, NULL, &d) == 0, "%s", d.msg);
	x = o[0].data;
	y = o[1].data;
	for (i = 0; i < 16; i++)
		ck_assert(x[i] == y[i] && x[i] >= 0.0f && x[i] < 1.0f);
	ck_assert(x[0] != x[1]);
	sim_tensors_release(o, 2);
	sim_program_free(p);
	kb_release(&b);
}

/* ------------------------------------------------------------ errors */

CHECK_TEST(errors, test_sim_mx_needs_trn3)
{
	struct kb	b;

	mx_qmm_kernel(&b, "trn2", BF16);
	mx_fails(&b, SIM_EINVAL, "'quantize_mx' is available only on "
	    "NeuronCore-v4 and newer", 11);
}

CHECK_TEST(errors, test_sim_mx_quantize_src_dtype)
{
	struct kb	b;

	mx_qmm_kernel(&b, "trn3", F32);
	mx_fails(&b, SIM_EINVAL, "The input src tile must be float16 or "
	    "bfloat16, got float32", 11);
}

CHECK_TEST(errors, test_sim_mx_matmul_partitions)
{
	struct kb	b;

	mx_qmm_kernel(&b, "trn3", BF16);
	/* moving: partitions 1..31 of the data */
	b.k.body[3]->src[1]->access->shape[0] = 31;
	b.k.body[3]->src[1]->access->index[0]->constant = 1;
	mx_fails(&b, SIM_EINVAL, "The partition dimension size of stationary "
	    "and moving must be identical and be a multiple of 32, not "
	    "exceeding 128, got 32 and 31", 12);
}

CHECK_TEST(errors, test_sim_mx_matmul_scale_rows)
{
	struct kb	b;

	mx_qmm_kernel(&b, "trn3", BF16);
	b.k.body[3]->src[2]->access->shape[0] = 3;
	mx_fails(&b, SIM_EINVAL, "stationary_scale has 3 partitions: data of "
	    "32 partitions needs 4", 12);
}

CHECK_TEST(errors, test_sim_mx_packed_no_arithmetic)
{
	struct kb	b;
	Nkir__V1__Op	*o;

	mx_qmm_kernel(&b, "trn3", BF16);
	o = b.k.body[3];
	o->kind = OPK(TENSOR_TENSOR);
	o->alu = NKIR__V1__ALU_OP__ALU_ADD;
	o->dst = o->src[0]->access;
	o->n_src = 2;
	mx_fails(&b, SIM_EINVAL, "'tensor_tensor' cannot compute on packed "
	    "MX data (float8_e4m3fn_x4)", 12);
}

CHECK_TEST(errors, test_sim_mx_view_size_and_read_only)
{
	struct kb	b;
	uint32_t	v;

	mx_view_kernel(&b, 5);
	mx_fails(&b, SIM_EINVAL, "cannot view HBM tensor `t` (512 bytes of "
	    "uint32) as `t`, 640 bytes of float8_e5m2_x4", 2);
	v = mx_view_kernel(&b, 4);
	b.k.body[1]->dst = kb_full2(&b, v);
	mx_fails(&b, SIM_EINVAL, "'dma_copy' cannot write HBM tensor `t`: it "
	    "is a dtype view", 21);
}

/* A kernel for target of a dummy param and a [2, cols] uint32 state
 * tile (its index); its next op at kernel.py:line. */
static uint32_t
mx_state_kernel(struct kb *b, const char *target, uint64_t cols,
    uint32_t line)
{
	uint32_t	st;

	kb_init(b, "mx");
	kb_target(b, target);
	b->line = 2;
	kb_param(b, "t", F32, 2, SH(1, 1));
	st = kb_tile(b, "t", SBUF, DT(UINT32), 2, SH(2, cols));
	b->line = line;
	return (st);
}

CHECK_TEST(errors, test_sim_mx_rand_state_limits)
{
	struct kb	b;
	Nkir__V1__Op	*op;
	uint32_t	st;

	st = mx_state_kernel(&b, "trn2", 5, 40);
	op = kb_op(&b, OPK(RAND_GET_STATE), kb_full2(&b, st));
	op->engine = NKIR__V1__ENGINE__ENGINE_GPSIMD;
	mx_fails(&b, SIM_EINVAL, "dst element count for XORWOW must be 6 "
	    "elements (GpSimd) or 24 elements (Vector), got 5", 40);

	st = mx_state_kernel(&b, "trn1", 6, 41);
	op = kb_op(&b, OPK(RAND_SET_STATE), NULL);
	op->engine = NKIR__V1__ENGINE__ENGINE_GPSIMD;
	kb_src(&b, op, kb_full2(&b, st));
	mx_fails(&b, SIM_EINVAL, "Supported arch versions: NeuronCore-v3+", 41);

	st = mx_state_kernel(&b, "trn2", 24, 42);
	op = kb_op(&b, OPK(RAND_GET_STATE), kb_full2(&b, st));
	op->engine = NKIR__V1__ENGINE__ENGINE_VECTOR;
	mx_fails(&b, SIM_EINVAL, "the Vector Engine needs NeuronCore-v4", 42);
}
