/*
 * check_sim_errors.c: the NKIR executor (sim/) refusing what it must: NKI's
 * errors in its words, the executor's limits, damaged images.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim.h"
#include "sim/sim_impl.h"
#include "tests/unit/check_main.h"
#include "tests/unit/sim_kb.h"

CHECK_SUITE("sim_errors", NULL, NULL, NULL);
CHECK_TCASE(core, 60);
CHECK_TCASE(errors, 0);
CHECK_TCASE(limits, 0);
CHECK_TCASE(recovery, 60);

/* ------------------------------------------------------------ errors */

/* a one-load kernel: x [R, C] HBM -> tile [TP, TF] at line 14 */
static void
kb_one_load(struct kb *b, uint64_t R, uint64_t C, uint64_t TP, uint64_t TF)
{
	uint32_t x, t, y;

	kb_init(b, "k");
	x = kb_param(b, "x", F32, 2, SH(R, C));
	y = kb_out(b, "y", F32, 2, SH(TP, TF));
	b->line = 14;
	t = kb_tile(b, "t", SBUF, F32, 2, SH(TP, TF));
	kb_op1(b, OPK(LOAD), kb_full2(b, t), kb_acc(b, x, 2, SH(TP, TF),
	    AX(0, 0), AX(0, 1)));
	b->line = 15;
	kb_op1(b, OPK(STORE), kb_full2(b, y), kb_full2(b, t));
}

/*
 * Forwarding in fused groups (sim_opt_forward): in a tiled add whose
 * tiles nothing else touches, the add reads the HBM rows of both loads
 * and computes into the store's HBM row; the loads and the store do
 * nothing. With `extra`, narrower stores follow: the first reads the
 * left half of a_tile (it joins the group as a row of its own length:
 * a_tile is read through another view, so a's load may not forward),
 * the second the right half of c_tile (another offset: not in the group,
 * so the store of c may not forward either); b's load still does. Either
 * way c = a + b and d = the left half of each tile of a, then that of
 * a + b.
 */
static void
kb_forward(bool extra)
{
	const uint64_t R = 256, C = 128, TP = 128, TF = 64;
	struct kb kb, *b = &kb;
	struct sim_program *p;
	const struct sim_op *g;
	struct sim_tensor in[2], out[2];
	struct sim_diag d;
	float *x = kb_randf(R * C, 5), *y = kb_randf(R * C, 6), *c, *dd;
	uint32_t a, bb, co, dout = 0, ta, tb, tc;
	Nkir__V1__Op *o;
	int rc;

	kb_init(b, "forward");
	a = kb_param(b, "a", F32, 2, SH(R, C));
	bb = kb_param(b, "b", F32, 2, SH(R, C));
	co = kb_out(b, "c", F32, 2, SH(R, C));
	if (extra)
		dout = kb_out(b, "d", F32, 2, SH(R, C));
	ta = kb_tile(b, "a_tile", SBUF, F32, 2, SH(TP, TF));
	tb = kb_tile(b, "b_tile", SBUF, F32, 2, SH(TP, TF));
	tc = kb_tile(b, "c_tile", SBUF, F32, 2, SH(TP, TF));
	kb_loop(b, 0, 0, (int64_t)(R / TP), 1);
	kb_loop(b, 1, 0, (int64_t)(C / TF), 1);
#define RC(t, w) kb_acc(b, t, 2, SH(TP, w), \
	kb_aff(b, 0, 2, L, 0, (int64_t)TP, X, 0, (int64_t)1), \
	kb_aff(b, 0, 2, L, 1, (int64_t)TF, X, 1, (int64_t)1))
	kb_op1(b, OPK(LOAD), kb_full2(b, ta), RC(a, TF));
	kb_op1(b, OPK(LOAD), kb_full2(b, tb), RC(bb, TF));
	o = kb_op1(b, OPK(TENSOR_TENSOR), kb_full2(b, tc), kb_full2(b, ta));
	kb_src(b, o, kb_full2(b, tb));
	o->alu = NKIR__V1__ALU_OP__ALU_ADD;
	kb_op1(b, OPK(STORE), RC(co, TF), kb_full2(b, tc));
	if (extra) {
		/* d's tile: the left half from a_tile, the right from c_tile */
		kb_op1(b, OPK(STORE), RC(dout, TF / 2),
		    kb_acc(b, ta, 2, SH(TP, TF / 2),
		    kb_aff(b, 0, 1, X, 0, (int64_t)1),
		    kb_aff(b, 0, 1, X, 1, (int64_t)1)));
		kb_op1(b, OPK(STORE), kb_acc(b, dout, 2, SH(TP, TF / 2),
		    kb_aff(b, 0, 2, L, 0, (int64_t)TP, X, 0, (int64_t)1),
		    kb_aff(b, (int64_t)TF / 2, 2, L, 1, (int64_t)TF, X, 1,
		    (int64_t)1)),
		    kb_acc(b, tc, 2, SH(TP, TF / 2),
		    kb_aff(b, 0, 1, X, 0, (int64_t)1),
		    kb_aff(b, (int64_t)TF / 2, 1, X, 1, (int64_t)1)));
	}
#undef RC
	kb_end(b);
	kb_end(b);
	p = kb_program(b);
	g = p->body[0].body[0].body;
	ck_assert_uint_eq(g[0].fuse, extra ? 5 : 4);
	ck_assert(g[0].fwd == !extra);
	ck_assert(g[1].fwd);
	ck_assert_uint_eq(g[2].fwd_src[0], extra ? 0 : 1);
	ck_assert_uint_eq(g[2].fwd_src[1], 2);
	ck_assert_uint_eq(g[2].fwd_dst, extra ? 0 : 4);
	ck_assert(g[3].fwd == !extra);
	in[0] = kb_host(F32, 2, SH(R, C), x);
	in[1] = kb_host(F32, 2, SH(R, C), y);
	for (int run = 0; run < 2; run++) {
		rc = sim_run(p, in, 2, out, extra ? 2 : 1, NULL, &d);
		ck_assert_msg(rc == 0, "%s", d.msg);
		c = out[0].data;
		for (size_t i = 0; i < R * C; i++)
			ck_assert_float_eq(c[i], x[i] + y[i]);
		if (extra) {
			dd = out[1].data;
			for (size_t i = 0; i < R * C; i++)
				ck_assert_float_eq(dd[i], i % TF < TF / 2 ?
				    x[i] : x[i] + y[i]);
		}
		sim_tensors_release(out, extra ? 2 : 1);
	}
	sim_program_free(p);
	free(x);
	free(y);
	kb_release(b);
}

CHECK_TEST(core, test_sim_fast_forward)
{
	kb_forward(false);
	kb_forward(true);
}
END_TEST

/* A copy in a loop (tensor_copy out of PSUM, say) whose tile only a store
 * reads writes the store's HBM rows; the load before it and the store do
 * nothing. */
CHECK_TEST(core, test_sim_fast_forward_copy)
{
	const uint64_t R = 256, C = 64, TP = 128;
	struct kb kb, *b = &kb;
	struct sim_program *p;
	const struct sim_op *g;
	struct sim_tensor in[1], out[1];
	struct sim_diag d;
	float *x = kb_randf(R * C, 7);
	uint32_t a, c, ta, tc;
	int rc;

	kb_init(b, "forward_copy");
	a = kb_param(b, "a", F32, 2, SH(R, C));
	c = kb_out(b, "c", F32, 2, SH(R, C));
	ta = kb_tile(b, "a_tile", SBUF, F32, 2, SH(TP, C));
	tc = kb_tile(b, "c_tile", SBUF, F32, 2, SH(TP, C));
	kb_loop(b, 0, 0, (int64_t)(R / TP), 1);
	kb_op1(b, OPK(LOAD), kb_full2(b, ta), kb_acc(b, a, 2, SH(TP, C),
	    kb_aff(b, 0, 2, L, 0, (int64_t)TP, X, 0, (int64_t)1), AX(0, 1)));
	kb_op1(b, OPK(COPY), kb_full2(b, tc), kb_full2(b, ta));
	kb_op1(b, OPK(STORE), kb_acc(b, c, 2, SH(TP, C),
	    kb_aff(b, 0, 2, L, 0, (int64_t)TP, X, 0, (int64_t)1), AX(0, 1)),
	    kb_full2(b, tc));
	kb_end(b);
	p = kb_program(b);
	g = p->body[0].body;
	ck_assert_uint_eq(g[0].fuse, 3);
	ck_assert(g[0].fwd && g[2].fwd);
	ck_assert_uint_eq(g[1].fwd_src[0], 1);
	ck_assert_uint_eq(g[1].fwd_dst, 3);
	in[0] = kb_host(F32, 2, SH(R, C), x);
	rc = sim_run(p, in, 1, out, 1, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_mem_eq(out[0].data, x, R * C * sizeof(float));
	sim_tensors_release(out, 1);
	sim_program_free(p);
	free(x);
	kb_release(b);
}
END_TEST

/*
 * 2 x 2 pooling as the tutorial writes it: reduce [C, OH, 2, OW, 2] over
 * axes 2 and 4 (the innermost reduced, the one before it kept: rows of
 * a block folded in one go), the result scattered into a [C, OH, OW]
 * tile through kept axes of one element. The sums must be fp32 added in
 * row-major order, exactly.
 */
static void
kb_pool_case(int alu)
{
	enum { C = 3, H = 4, W = 8, OH = H / 2, OW = W / 2 };
	struct kb kb, *b = &kb;
	uint32_t in, out, t, r;
	float x[C * H * W], want[C * OH * OW], *got;
	struct sim_tensor ti, to;
	struct sim_program *p;
	struct sim_diag d;
	Nkir__V1__Op *o;
	int rc;

	kb_init(b, "pool");
	in = kb_param(b, "x", F32, 3, SH(C, H, W));
	out = kb_out(b, "y", F32, 3, SH(C, OH, OW));
	t = kb_tile(b, "t", SBUF, F32, 3, SH(C, H, W));
	r = kb_tile(b, "r", SBUF, F32, 3, SH(C, OH, OW));
	kb_op1(b, OPK(LOAD), kb_acc(b, t, 3, SH(C, H, W), AX(0, 0), AX(0, 1),
	    AX(0, 2)), kb_acc(b, in, 3, SH(C, H, W), AX(0, 0), AX(0, 1),
	    AX(0, 2)));
	o = kb_op1(b, OPK(REDUCE), kb_acc(b, r, 5, SH(C, OH, 1, OW, 1),
	    AX(0, 0), AX(0, 1), AX(0, 3)), kb_acc(b, t, 5,
	    SH(C, OH, 2, OW, 2), AX(0, 0),
	    kb_aff(b, 0, 2, X, 1, (int64_t)2, X, 2, (int64_t)1),
	    kb_aff(b, 0, 2, X, 3, (int64_t)2, X, 4, (int64_t)1)));
	o->alu = alu;
	o->axes[o->n_axes++] = 2;
	o->axes[o->n_axes++] = 4;
	kb_op1(b, OPK(STORE), kb_acc(b, out, 3, SH(C, OH, OW), AX(0, 0),
	    AX(0, 1), AX(0, 2)), kb_acc(b, r, 3, SH(C, OH, OW), AX(0, 0),
	    AX(0, 1), AX(0, 2)));
	p = kb_program(b);
	for (int i = 0; i < C * H * W; i++)	/* sums that depend on order */
		x[i] = i % 3 == 0 ? 1e8f * (float)(i % 5 - 2) :
		    (float)i * 0.37f - 3.0f;
	for (int c = 0; c < C; c++)
		for (int oh = 0; oh < OH; oh++)
			for (int ow = 0; ow < OW; ow++) {
				float	acc = alu == NKIR__V1__ALU_OP__ALU_ADD ?
				    0.0f : -INFINITY;

				for (int dh = 0; dh < 2; dh++)
					for (int dw = 0; dw < 2; dw++) {
						float v = x[(c * H + oh * 2 +
						    dh) * W + ow * 2 + dw];

						acc = alu ==
						    NKIR__V1__ALU_OP__ALU_ADD ?
						    acc + v : v > acc ? v : acc;
					}
				want[(c * OH + oh) * OW + ow] = acc;
			}
	ti = kb_host(F32, 3, SH(C, H, W), x);
	rc = sim_run(p, &ti, 1, &to, 1, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	got = to.data;
	for (size_t i = 0; i < C * OH * OW; i++)
		ck_assert_msg(got[i] == want[i], "y[%zu] = %.9g, want %.9g",
		    i, got[i], want[i]);
	sim_tensors_release(&to, 1);
	sim_program_free(p);
	kb_release(b);
}

CHECK_TEST(core, test_sim_fast_pool_reduce)
{
	kb_pool_case(NKIR__V1__ALU_OP__ALU_ADD);
	kb_pool_case(NKIR__V1__ALU_OP__ALU_MAXIMUM);
}
END_TEST

static void
kb_count_cb(void *arg, const struct sim_op_event *ev)
{
	(*(int *)arg)++;
}

/*
 * Rows of a tile as one group (sim_opt_group_rows_ok): softmax and a
 * variance over the rows of [P, F] in a loop of two tiles, with [P, 1]
 * ops among them (rows of another length) and reductions along the
 * row. The group must give the bits of the ops run one by one (an op_cb
 * runs groups unfused), on 1 and 3 threads.
 */
CHECK_TEST(core, test_sim_fast_row_groups)
{
	enum { P = 64, F = 40, T = 2 };
	struct kb kb, *b = &kb;
	uint32_t in, out, t, m, e, e2, sm, v, v1, y, y2;
	struct sim_run_opts opts[3] = { { 0 }, { .threads = 3 }, { 0 } };
	struct sim_tensor ti, to[3];
	struct sim_program *p;
	struct sim_diag d;
	Nkir__V1__Op *o;
	float *x = kb_randf(T * P * F, 9);
	int events = 0, rc, k;

#define ROW(t_, w) kb_acc(b, t_, 2, SH(P, w), AX(0, 0), AX(0, 1))
#define BC(t_) kb_acc(b, t_, 2, SH(P, F), AX(0, 0), kb_aff(b, 0, 0))
#define RED(dst_, src_, alu_) do { \
	o = kb_op1(b, OPK(REDUCE), ROW(dst_, 1), ROW(src_, F)); \
	o->alu = (alu_); \
	o->axes[o->n_axes++] = 1; \
} while (0)
#define TT(dst_, a_, b_, alu_) do { \
	o = kb_op1(b, OPK(TENSOR_TENSOR), ROW(dst_, F), ROW(a_, F)); \
	kb_src(b, o, (b_)); \
	o->alu = (alu_); \
} while (0)
	kb_init(b, "rows");
	in = kb_param(b, "x", F32, 2, SH(T * P, F));
	out = kb_out(b, "y", F32, 2, SH(T * P, F));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(P, F));
	m = kb_tile(b, "m", SBUF, F32, 2, SH(P, 1));
	e = kb_tile(b, "e", SBUF, F32, 2, SH(P, F));
	e2 = kb_tile(b, "e2", SBUF, F32, 2, SH(P, F));
	sm = kb_tile(b, "s", SBUF, F32, 2, SH(P, 1));
	v = kb_tile(b, "v", SBUF, F32, 2, SH(P, 1));
	v1 = kb_tile(b, "v1", SBUF, F32, 2, SH(P, 1));
	y = kb_tile(b, "yt", SBUF, F32, 2, SH(P, F));
	y2 = kb_tile(b, "y2", SBUF, F32, 2, SH(P, F));
	kb_loop(b, 0, 0, T, 1);
	kb_op1(b, OPK(LOAD), ROW(t, F), kb_acc(b, in, 2, SH(P, F),
	    kb_aff(b, 0, 2, L, 0, (int64_t)P, X, 0, (int64_t)1), AX(0, 1)));
	RED(m, t, NKIR__V1__ALU_OP__ALU_MAXIMUM);
	TT(e, t, BC(m), NKIR__V1__ALU_OP__ALU_SUBTRACT);
	o = kb_op1(b, OPK(ACTIVATION), ROW(e2, F), ROW(e, F));
	o->act = NKIR__V1__ACT_FUNC__ACT_EXP;
	RED(sm, e2, NKIR__V1__ALU_OP__ALU_ADD);
	RED(v, t, NKIR__V1__ALU_OP__ALU_VAR);
	o = kb_op1(b, OPK(TENSOR_TENSOR), ROW(v1, 1), ROW(v, 1));
	kb_scalar(b, o, 0.5);
	o->alu = NKIR__V1__ALU_OP__ALU_ADD;
	TT(y, e2, BC(sm), NKIR__V1__ALU_OP__ALU_DIVIDE);
	TT(y2, y, BC(v1), NKIR__V1__ALU_OP__ALU_MULTIPLY);
	kb_op1(b, OPK(STORE), kb_acc(b, out, 2, SH(P, F),
	    kb_aff(b, 0, 2, L, 0, (int64_t)P, X, 0, (int64_t)1), AX(0, 1)),
	    ROW(y2, F));
	kb_end(b);
#undef ROW
#undef BC
#undef RED
#undef TT
	p = kb_program(b);
	ck_assert_uint_eq(p->body[0].body[0].fuse, 10);
	opts[2].op_cb = kb_count_cb;
	opts[2].op_arg = &events;
	ti = kb_host(F32, 2, SH(T * P, F), x);
	for (k = 0; k < 3; k++) {
		rc = sim_run(p, &ti, 1, &to[k], 1, &opts[k], &d);
		ck_assert_msg(rc == 0, "%s", d.msg);
	}
	ck_assert_int_eq(events, T * 10);	/* the op_cb run: op by op */
	for (k = 0; k < 2; k++)
		ck_assert(memcmp(to[k].data, to[2].data, to[2].nbytes) == 0);
	/* and near what it means: softmax * (variance + 0.5) */
	for (int r = 0; r < T * P; r++) {
		double mx = -INFINITY, se = 0, mu = 0, var = 0;

		for (int c = 0; c < F; c++) {
			mx = fmax(mx, x[r * F + c]);
			mu += x[r * F + c] / F;
		}
		for (int c = 0; c < F; c++) {
			se += exp(x[r * F + c] - mx);
			var += (x[r * F + c] - mu) * (x[r * F + c] - mu) / F;
		}
		for (int c = 0; c < F; c++) {
			double want = exp(x[r * F + c] - mx) / se * (var + 0.5);

			ck_assert_double_eq_tol(((float *)to[0].data)[r * F + c],
			    want, 1e-5 * fabs(want) + 1e-6);
		}
	}
	sim_tensors_release(to, 3);
	sim_program_free(p);
	free(x);
	kb_release(b);
}
END_TEST

CHECK_TEST(errors, test_sim_error_partition_256)
{
	struct kb b;

	kb_one_load(&b, 256, 64, 256, 64);
	kb_expect_error(&b, SIM_EINVAL, "Size of partition dimension 256 "
	    "exceeds architecture limitation of 128 (kernel.py:14)");
	kb_release(&b);
}
END_TEST

CHECK_TEST(errors, test_sim_error_load_from_sbuf)
{
	struct kb kb, *b = &kb;
	uint32_t t, u, y;

	kb_init(b, "k");
	y = kb_out(b, "y", F32, 2, SH(4, 4));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(4, 4));
	u = kb_tile(b, "u", SBUF, F32, 2, SH(4, 4));
	kb_alloc_op(b, t, NKIR__V1__FILL__FILL_ZERO, 0);
	b->line = 14;
	kb_op1(b, OPK(LOAD), kb_full2(b, u), kb_full2(b, t));
	kb_op1(b, OPK(STORE), kb_full2(b, y), kb_full2(b, u));
	kb_expect_error(b, SIM_EINVAL, "Expected operand 'src' of 'load' to "
	    "be in address space 'hbm', but got a tile in 'sbuf' instead "
	    "(kernel.py:14)");
	kb_release(b);
}
END_TEST

CHECK_TEST(errors, test_sim_error_out_of_bounds)
{
	struct kb kb, *b = &kb;
	uint32_t x, t, y;

	kb_init(b, "k");
	x = kb_param(b, "x", F32, 2, SH(128, 4000));
	y = kb_out(b, "y", F32, 2, SH(128, 512));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(128, 512));
	kb_loop(b, 0, 0, 8, 1);
	b->line = 14;
	kb_op1(b, OPK(LOAD), kb_full2(b, t), kb_acc(b, x, 2, SH(128, 512),
	    AX(0, 0), kb_aff(b, 0, 2, L, 0, (int64_t)512, X, 1, (int64_t)1)));
	kb_end(b);
	b->line = 20;
	kb_op1(b, OPK(STORE), kb_full2(b, y), kb_full2(b, t));
	kb_expect_error(b, SIM_EINVAL, "Out-of-bound access for tensor `x` on "
	    "dimension 1: index range [0, 4095] exceed dimension size of "
	    "4000 (kernel.py:14)");
	kb_release(b);
}
END_TEST

CHECK_TEST(errors, test_sim_error_psum_too_large)
{
	struct kb kb, *b = &kb;

	kb_init(b, "k");
	b->line = 14;
	kb_tile(b, "acc", PSUM, F32, 2, SH(128, 1024));
	kb_expect_error(b, SIM_EINVAL, "PSUM tile `acc` needs 4096 bytes per "
	    "partition, which exceeds architecture limitation of 2048 (2KiB "
	    "per partition) (kernel.py:14)");
	kb_release(b);
}
END_TEST

CHECK_TEST(errors, test_sim_error_matmul_limits)
{
	struct kb kb, *b = &kb;
	uint32_t s, m, ps, pb;
	Nkir__V1__Op *o;

	kb_init(b, "k");
	s = kb_tile(b, "s", SBUF, F32, 2, SH(128, 128));
	m = kb_tile(b, "m", SBUF, F32, 2, SH(128, 1024));
	ps = kb_tile(b, "ps", PSUM, F32, 2, SH(128, 512));
	pb = kb_tile(b, "pb", PSUM, BF16, 2, SH(128, 512));
	kb_alloc_op(b, s, NKIR__V1__FILL__FILL_ZERO, 0);
	kb_alloc_op(b, m, NKIR__V1__FILL__FILL_ZERO, 0);
	b->line = 14;
	o = kb_op1(b, OPK(MATMUL), kb_full2(b, ps), kb_full2(b, s));
	kb_src(b, o, kb_acc(b, m, 2, SH(128, 1024), AX(0, 0), AX(0, 1)));
	o->transpose_x = true;
	kb_expect_error(b, SIM_EINVAL, "Size of moving free dimension 1024 "
	    "exceeds architecture limitation of 512 (gemm_moving_fmax) "
	    "(kernel.py:14)");
	/* bf16 PSUM output */
	o->dst = kb_full2(b, pb);
	o->src[1]->access = kb_acc(b, m, 2, SH(128, 512), AX(0, 0), AX(0, 1));
	kb_expect_error(b, SIM_EINVAL, "Expected operand 'dst' of 'matmul' "
	    "to have dtype float32, but got bfloat16 instead (kernel.py:14)");
	/* output in SBUF */
	o->dst = kb_acc(b, m, 2, SH(128, 512), AX(0, 0), AX(0, 1));
	kb_expect_error(b, SIM_EINVAL, "Expected operand 'dst' of 'matmul' "
	    "to be in address space 'psum', but got a tile in 'sbuf' instead "
	    "(kernel.py:14)");
	/* K mismatch */
	o->dst = kb_full2(b, ps);
	o->src[1]->access = kb_acc(b, m, 2, SH(64, 512), AX(0, 0), AX(0, 1));
	kb_expect_error(b, SIM_EINVAL, "contraction dimension mismatch in "
	    "parameters (stationary[128, 128], moving[64, 512]) of 'matmul' "
	    "(kernel.py:14)");
	kb_release(b);
}
END_TEST

CHECK_TEST(errors, test_sim_error_reduce_axis0_and_partitions)
{
	struct kb kb, *b = &kb;
	uint32_t t, u, r;
	Nkir__V1__Op *o;

	kb_init(b, "k");
	t = kb_tile(b, "t", SBUF, F32, 2, SH(128, 512));
	u = kb_tile(b, "u", SBUF, F32, 2, SH(1, 512));
	r = kb_tile(b, "r", SBUF, F32, 2, SH(1, 512));
	kb_alloc_op(b, t, NKIR__V1__FILL__FILL_ZERO, 0);
	kb_alloc_op(b, u, NKIR__V1__FILL__FILL_ZERO, 0);
	b->line = 14;
	o = kb_op1(b, OPK(REDUCE), kb_full2(b, r), kb_full2(b, t));
	o->alu = NKIR__V1__ALU_OP__ALU_ADD;
	o->axes[o->n_axes++] = 0;
	kb_expect_error(b, SIM_EINVAL, "reduction along the partition "
	    "dimension (axis 0) is not supported; reduce axes must be free "
	    "dimensions (kernel.py:14)");
	o->kind = OPK(TENSOR_TENSOR);
	o->n_axes = 0;
	o->dst = kb_full2(b, t);
	kb_src(b, o, kb_full2(b, u));
	kb_expect_error(b, SIM_EINVAL, "number of partitions (dimension 0 "
	    "size of a tile) mismatch in parameters (dst[128, 512], "
	    "data2[1, 512]) of 'tensor_tensor' (kernel.py:14)");
	kb_release(b);
}
END_TEST

CHECK_TEST(errors, test_sim_error_output_never_written)
{
	struct kb kb, *b = &kb;

	kb_init(b, "k");
	b->line = 14;
	kb_out(b, "y", F32, 2, SH(4, 4));
	kb_expect_error(b, SIM_EINVAL, "output tensor `y` of kernel 'k' is "
	    "never written (kernel.py:14)");
	kb_release(b);
}
END_TEST

CHECK_TEST(errors, test_sim_error_transpose_vector_limit)
{
	struct kb kb, *b = &kb;
	uint32_t t, u;
	Nkir__V1__Op *o;

	kb_init(b, "k");
	t = kb_tile(b, "t", SBUF, F32, 2, SH(64, 64));
	u = kb_tile(b, "u", SBUF, F32, 2, SH(64, 64));
	kb_alloc_op(b, t, NKIR__V1__FILL__FILL_ZERO, 0);
	b->line = 14;
	o = kb_op1(b, OPK(TRANSPOSE), kb_full2(b, u), kb_full2(b, t));
	o->engine = NKIR__V1__ENGINE__ENGINE_VECTOR;
	kb_expect_error(b, SIM_EINVAL, "'transpose' of a [64, 64] tile "
	    "exceeds the vector engine limitation of 32x32 (kernel.py:14)");
	kb_release(b);
}
END_TEST

CHECK_TEST(errors, test_sim_error_bad_ids)
{
	struct kb kb, *b = &kb;

	kb_one_load(b, 128, 64, 128, 64);
	b->k.body[0]->dst->tensor = 99;
	kb_expect_error(b, SIM_EPARSE, NULL);
	b->k.body[0]->dst->tensor = 2;
	b->k.tensors[0]->dtype = 77;
	kb_expect_error(b, SIM_EPARSE, NULL);
	b->k.tensors[0]->dtype = F32;
	b->k.body[0]->src[0]->access->index[1] = kb_aff(b, 0, 1, L, 3,
	    (int64_t)1);
	kb_expect_error(b, SIM_EPARSE, NULL);
	kb_release(b);
}
END_TEST

CHECK_TEST(errors, test_sim_error_argument_mismatch)
{
	struct kb b;
	struct sim_program *p;
	float x[64 * 64];
	uint16_t h[64 * 64];
	struct sim_tensor in, out;
	struct sim_diag d;

	kb_one_load(&b, 64, 64, 64, 64);
	p = kb_program(&b);
	in = kb_host(SIM_DT_FLOAT16, 2, SH(64, 64), h);
	ck_assert_int_eq(sim_run(p, &in, 1, &out, 1, NULL, &d), SIM_EARG);
	ck_assert_str_eq(d.msg, "argument 'x': expected float32[64, 64], "
	    "got float16[64, 64]");
	in = kb_host(SIM_DT_FLOAT32, 2, SH(64, 32), x);
	ck_assert_int_eq(sim_run(p, &in, 1, &out, 1, NULL, &d), SIM_EARG);
	in = kb_host(SIM_DT_FLOAT32, 2, SH(64, 64), x);
	in.nbytes = 10;
	ck_assert_int_eq(sim_run(p, &in, 1, &out, 1, NULL, &d), SIM_EARG);
	ck_assert_int_eq(sim_run(p, NULL, 0, &out, 1, NULL, &d), SIM_EARG);
	sim_program_free(p);
	kb_release(&b);
}
END_TEST

/* ------------------------------------------------------------ limits */

CHECK_TEST(limits, test_sim_limits_ir_size_constant_in_trips)
{
	struct kb b1, b4;
	size_t n1, n4;
	uint8_t *p1, *p4;

	kb_tiled_add(&b1, 128 * 1024, 512, 128, 512, false);
	kb_tiled_add(&b4, 128 * 4, 512, 128, 512, false);
	p1 = kb_pack(&b1, &n1);
	p4 = kb_pack(&b4, &n4);
	ck_assert_uint_le(n1, n4 + 8);
	free(p1);
	free(p4);
	kb_release(&b1);
	kb_release(&b4);
}
END_TEST

CHECK_TEST(limits, test_sim_limits_nesting_and_rank)
{
	struct kb kb, *b = &kb;

	kb_init(b, "deep");
	for (int i = 0; i < 20; i++)
		kb_loop(b, (uint32_t)i, 0, 1, 1);
	kb_expect_error(b, SIM_ELIMIT, NULL);
	kb_release(b);

	kb_init(b, "rank");
	kb_tile(b, "t", SBUF, F32, 9, SH(1, 1, 1, 1, 1, 1, 1, 1, 1));
	kb_expect_error(b, SIM_EPARSE, NULL);
	kb_release(b);

	kb_init(b, "huge");
	kb_tensor(b, "h", NKIR__V1__TENSOR_KIND__TENSOR_HBM,
	    NKIR__V1__SPACE__SPACE_HBM, F32, 3,
	    SH(1ull << 31, 1ull << 31, 1ull << 31));
	kb_expect_error(b, SIM_ELIMIT, NULL);
	kb_release(b);
}
END_TEST

/* ------------------------------------------------------------ recovery */

CHECK_TEST(recovery, test_sim_recovery_truncated_ir)
{
	struct kb b;
	size_t len, ilen;
	uint8_t *ir;
	void *img;
	struct sim_diag d;

	kb_tiled_add(&b, 256, 1024, 128, 512, false);
	ir = kb_pack(&b, &len);
	/* a prefix may still be a valid kernel; it must never crash and a
	 * failure must leave no image */
	for (size_t cut = 1; cut < len; cut++) {
		int rc = sim_compile(ir, cut, &img, &ilen, &d);

		if (rc != 0)
			ck_assert_ptr_null(img);
		free(img);
	}
	ck_assert_int_ne(sim_compile(ir, len / 2, &img, &ilen, &d), 0);
	ck_assert_int_eq(sim_compile("\xff\xff\xff", 3, &img, &ilen, &d),
	    SIM_EPARSE);
	free(ir);
	kb_release(&b);
}
END_TEST

CHECK_TEST(recovery, test_sim_recovery_corrupted_image)
{
	struct kb b;
	size_t len, ilen;
	uint8_t *ir, *img;
	void *vimg;
	struct sim_program *p;
	struct sim_diag d;

	kb_tiled_add(&b, 256, 1024, 128, 512, false);
	ir = kb_pack(&b, &len);
	ck_assert_int_eq(sim_compile(ir, len, &vimg, &ilen, &d), 0);
	img = vimg;
	ck_assert_mem_eq(img, "NKIX", 4);
	for (size_t cut = 0; cut < ilen; cut++)
		ck_assert_int_eq(sim_program_load(img, cut, &p, &d),
		    SIM_EPARSE);
	for (size_t i = 0; i < ilen; i++) {
		img[i] ^= 0x20;
		ck_assert_int_eq(sim_program_load(img, ilen, &p, &d),
		    SIM_EPARSE);
		img[i] ^= 0x20;
	}
	ck_assert_int_eq(sim_program_load(img, ilen, &p, &d), 0);
	ck_assert_str_eq(sim_program_name(p), "tensor_add");
	sim_program_free(p);
	free(img);
	free(ir);
	kb_release(&b);
}
END_TEST

static volatile int kb_cancel_flag;

CHECK_TEST(recovery, test_sim_recovery_cancel)
{
	struct kb b;
	struct sim_program *p;
	float *x = kb_randf(256 * 1024, 1);
	struct sim_tensor in[2], out[1];
	struct sim_run_opts o = { .cancel = &kb_cancel_flag };
	struct sim_diag d;

	kb_tiled_add(&b, 256, 1024, 128, 512, false);
	p = kb_program(&b);
	in[0] = in[1] = kb_host(F32, 2, SH(256, 1024), x);
	kb_cancel_flag = 1;
	ck_assert_int_eq(sim_run(p, in, 2, out, 1, &o, &d), SIM_ECANCELED);
	kb_cancel_flag = 0;
	ck_assert_int_eq(sim_run(p, in, 2, out, 1, &o, &d), 0);
	sim_tensors_release(out, 1);
	sim_program_free(p);
	free(x);
	kb_release(&b);
}
END_TEST

/* masked access that goes out of bounds on an active element */
CHECK_TEST(recovery, test_sim_recovery_masked_oob_at_runtime)
{
	struct kb kb, *b = &kb;
	uint32_t in, out, t;
	Nkir__V1__Access *src;
	float x[100 * 4] = { 0 };
	struct sim_tensor ti, to;
	struct sim_program *p;
	struct sim_diag d;

	kb_init(b, "k");
	in = kb_param(b, "x", F32, 2, SH(100, 4));
	out = kb_out(b, "y", F32, 2, SH(128, 4));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(128, 4));
	src = kb_acc(b, in, 2, SH(128, 4), AX(0, 0), AX(0, 1));
	kb_mask(b, src, kb_aff(b, 119, 1, X, 0, (int64_t)-1)); /* p < 120 */
	b->line = 14;
	kb_op1(b, OPK(LOAD), kb_full2(b, t), src);
	kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, t));
	p = kb_program(b);
	ti = kb_host(F32, 2, SH(100, 4), x);
	ck_assert_int_eq(sim_run(p, &ti, 1, &to, 1, NULL, &d), SIM_ERUNTIME);
	ck_assert_str_eq(d.msg, "Out-of-bound access for tensor `x` on "
	    "dimension 0: index 100 exceed dimension size of 100 "
	    "(kernel.py:14)");
	sim_program_free(p);
	kb_release(b);
}
END_TEST
