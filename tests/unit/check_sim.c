/*
 * check_sim.c: unit tests of the NKIR executor (sim/): kernels built with
 * protobuf-c structs (sim_kb.h), compiled, loaded and run, compared with
 * values computed here; the fast paths run as the slow ones would.
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

CHECK_SUITE("sim", NULL, NULL, NULL);
CHECK_TCASE(core, 60);
CHECK_TCASE(par, 120);

/* ------------------------------------------------------------ core */

static void
kb_check_add(struct kb *b, uint64_t R, uint64_t C)
{
	struct sim_program *p = kb_program(b);
	float *x = kb_randf(R * C, 1), *y = kb_randf(R * C, 2);
	struct sim_tensor in[2] = { kb_host(F32, 2, SH(R, C), x),
	    kb_host(F32, 2, SH(R, C), y) }, out[1];
	struct sim_diag d;
	int rc;

	ck_assert_uint_eq(sim_program_nparams(p), 2);
	ck_assert_str_eq(sim_program_param(p, 1)->name, "b");
	rc = sim_run(p, in, 2, out, 1, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_int_eq(out[0].dtype, SIM_DT_FLOAT32);
	ck_assert_uint_eq(out[0].nbytes, R * C * 4);
	for (size_t i = 0; i < R * C; i++)
		ck_assert_float_eq(((float *)out[0].data)[i], x[i] + y[i]);
	sim_tensors_release(out, 1);
	sim_program_free(p);
	free(x);
	free(y);
	kb_release(b);
}

CHECK_TEST(core, test_sim_tiled_add_loops)
{
	struct kb b;

	kb_tiled_add(&b, 256, 1024, 128, 512, false);
	kb_check_add(&b, 256, 1024);
}
END_TEST

CHECK_TEST(core, test_sim_spmd_grid)
{
	struct kb b;

	kb_tiled_add(&b, 384, 64, 128, 32, true);
	kb_check_add(&b, 384, 64);
}
END_TEST

/* Run p on random lhs ([M, K], or [K, M] with transpose_x) and rhs
 * [K, N] from seed, on 1 to 4 threads (the same bits), check its one
 * output against their product in double precision, and free p and b. */
static void
kb_matmul_run(struct kb *b, struct sim_program *p, int M, int K, int N,
    bool transpose_x, unsigned seed)
{
	float *x = kb_randf((size_t)M * K, seed);
	float *y = kb_randf((size_t)K * N, seed + 1);
	struct sim_tensor in[2], o[1];
	const float *got;

	in[0] = transpose_x ? kb_host(F32, 2, SH(K, M), x) :
	    kb_host(F32, 2, SH(M, K), x);
	in[1] = kb_host(F32, 2, SH(K, N), y);
	kb_same_bits(p, in, 2, o, 1);
	got = o[0].data;
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double s = 0;

			for (int k = 0; k < K; k++)
				s += (double)(transpose_x ? x[k * M + m] :
				    x[m * K + k]) * y[k * N + n];
			ck_assert_double_eq_tol(got[m * N + n], s,
			    1e-4 * (fabs(s) + 100));
		}
	sim_tensors_release(o, 1);
	sim_program_free(p);
	free(x);
	free(y);
	kb_release(b);
}

/* In the loop being built, ps += lhs . rhs (transpose_x as given); after
 * it, res = ps and out = res: the planned program. */
static struct sim_program *
kb_matmul_finish(struct kb *b, uint32_t ps, Nkir__V1__Access *lhs,
    Nkir__V1__Access *rhs, bool transpose_x, uint32_t res, uint32_t out)
{
	Nkir__V1__Op *op;

	op = kb_op1(b, OPK(MATMUL), kb_full2(b, ps), lhs);
	kb_src(b, op, rhs);
	op->accumulate = true;
	op->transpose_x = transpose_x;
	kb_end(b);
	kb_op1(b, OPK(COPY), kb_full2(b, res), kb_full2(b, ps));
	kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, res));
	return (kb_program(b));
}

/* out[M, N] = sum over K chunks of lhs . rhs, with transpose_x either way */
static void
kb_matmul_case(bool transpose_x)
{
	enum { M = 64, K = 256, N = 96, KT = 128 };
	struct kb kb, *b = &kb;
	uint32_t lhs, rhs, out, tl, tr, ps, res;
	struct sim_program *p;
	const struct sim_op *loop;
	size_t i;

	kb_init(b, "matmul");
	/* lhs is x [M, K] or its transpose [K, M] */
	lhs = transpose_x ? kb_param(b, "lhsT", F32, 2, SH(K, M)) :
	    kb_param(b, "lhs", F32, 2, SH(M, K));
	rhs = kb_param(b, "rhs", F32, 2, SH(K, N));
	out = kb_out(b, "out", F32, 2, SH(M, N));
	tl = transpose_x ? kb_tile(b, "lt", SBUF, F32, 2, SH(KT, M)) :
	    kb_tile(b, "lt", SBUF, F32, 2, SH(M, KT));
	tr = kb_tile(b, "rt", SBUF, F32, 2, SH(KT, N));
	ps = kb_tile(b, "ps", PSUM, F32, 2, SH(M, N));
	res = kb_tile(b, "res", SBUF, F32, 2, SH(M, N));
	kb_alloc_op(b, ps, NKIR__V1__FILL__FILL_ZERO, 0);
	kb_loop(b, 0, 0, K / KT, 1);
	if (transpose_x)
		kb_op1(b, OPK(LOAD), kb_full2(b, tl), kb_acc(b, lhs, 2,
		    SH(KT, M), kb_aff(b, 0, 2, L, 0, (int64_t)KT, X, 0,
		    (int64_t)1), AX(0, 1)));
	else
		kb_op1(b, OPK(LOAD), kb_full2(b, tl), kb_acc(b, lhs, 2,
		    SH(M, KT), AX(0, 0), kb_aff(b, 0, 2, L, 0, (int64_t)KT,
		    X, 1, (int64_t)1)));
	kb_op1(b, OPK(LOAD), kb_full2(b, tr), kb_acc(b, rhs, 2, SH(KT, N),
	    kb_aff(b, 0, 2, L, 0, (int64_t)KT, X, 0, (int64_t)1), AX(0, 1)));
	p = kb_matmul_finish(b, ps, kb_full2(b, tl), kb_full2(b, tr),
	    transpose_x, res, out);
	/*
	 * Loads that only the matmul reads are forwarded into it
	 * (sim_opt_forward_matmul): it reads lhs and rhs in place, the
	 * loads do nothing.
	 */
	for (loop = NULL, i = 0; i < p->nbody; i++)
		if (p->body[i].kind == NKIR__V1__OP_KIND__OP_LOOP)
			loop = &p->body[i];
	ck_assert_ptr_nonnull(loop);
	ck_assert_uint_eq(loop->nbody, 3);
	ck_assert_uint_eq(loop->body[2].kind, NKIR__V1__OP_KIND__OP_MATMUL);
	ck_assert_uint_eq(loop->body[2].src[0].v.tensor, lhs);
	ck_assert_uint_eq(loop->body[2].src[1].v.tensor, rhs);
	ck_assert(loop->body[0].skip);
	ck_assert(loop->body[1].skip);
	/*
	 * Then the loop is one matmul K deep (sim_opt_contract), k-major:
	 * lhsT and rhs at their own row pitch; lhs [M, K] along its rows.
	 */
	ck_assert_uint_eq(loop->gemm_at, 3);
	ck_assert_int_eq(loop->gemm_ld[0], transpose_x ? M : K);
	ck_assert_int_eq(loop->gemm_ld[1], N);
	kb_matmul_run(b, p, M, K, N, transpose_x, 3);
}

CHECK_TEST(core, test_sim_matmul_transpose_x)
{
	kb_matmul_case(true);
}
END_TEST

CHECK_TEST(core, test_sim_matmul_plain)
{
	kb_matmul_case(false);
}
END_TEST

/* The tensors of a matmul kernel: lhsT [K, M], rhs [K, N], the output
 * [M, N], and a PSUM tile and its SBUF copy [TM, TN]. */
struct kb_mm {
	uint32_t lhs, rhs, out, ps, res;
};

/* Start kernel `name` with the tensors of *t. */
static void
kb_matmul_io(struct kb *b, const char *name, uint64_t M, uint64_t K,
    uint64_t N, uint64_t TM, uint64_t TN, struct kb_mm *t)
{
	kb_init(b, name);
	t->lhs = kb_param(b, "lhsT", F32, 2, SH(K, M));
	t->rhs = kb_param(b, "rhs", F32, 2, SH(K, N));
	t->out = kb_out(b, "out", F32, 2, SH(M, N));
	t->ps = kb_tile(b, "ps", PSUM, F32, 2, SH(TM, TN));
	t->res = kb_tile(b, "res", SBUF, F32, 2, SH(TM, TN));
}

/* An uninitialized tile array t [n, KT, F] and a loop (variable var)
 * filling t[k] with rows k * KT .. k * KT + KT - 1 of src [n * KT, F]. */
static void
kb_load_array(struct kb *b, uint32_t t, uint32_t src, uint32_t var)
{
	const uint64_t *s = b->k.tensors[t]->shape;

	kb_alloc_op(b, t, NKIR__V1__FILL__FILL_UNINIT, 0);
	kb_loop(b, var, 0, (int64_t)s[0], 1);
	kb_op1(b, OPK(LOAD), kb_acc(b, t, 2, SH(s[1], s[2]),
	    kb_aff(b, 0, 1, L, (int)var, (int64_t)1), AX(0, 0), AX(0, 1)),
	    kb_acc(b, src, 2, SH(s[1], s[2]), kb_aff(b, 0, 2, L, (int)var,
	    (int64_t)s[1], X, 0, (int64_t)1), AX(0, 1)));
	kb_end(b);
}

/*
 * mm_hoisted's shape: tile arrays at[NK, KT, M] and bt[NK, KT, N] filled
 * by loops of loads, then a loop of matmuls over them. With `reversed`
 * the matmul loop walks the arrays backwards (at[NK - 1 - k]).
 */
static void
kb_matmul_arrays(bool reversed)
{
	enum { M = 64, K = 384, N = 96, KT = 128, NK = K / KT };
	struct kb kb, *b = &kb;
	const struct sim_op *ld0, *ld1, *mmloop;
	struct sim_program *p;
	Nkir__V1__Affine *k;
	struct kb_mm t;
	uint32_t at, bt;

	kb_matmul_io(b, "matmul_arrays", M, K, N, M, N, &t);
	at = kb_tile(b, "at", SBUF, F32, 3, SH(NK, KT, M));
	bt = kb_tile(b, "bt", SBUF, F32, 3, SH(NK, KT, N));
	kb_load_array(b, at, t.lhs, 0);
	kb_load_array(b, bt, t.rhs, 1);
	kb_alloc_op(b, t.ps, NKIR__V1__FILL__FILL_ZERO, 0);
	kb_loop(b, 2, 0, NK, 1);
	k = reversed ? kb_aff(b, NK - 1, 1, L, 2, (int64_t)-1) :
	    kb_aff(b, 0, 1, L, 2, (int64_t)1);
	p = kb_matmul_finish(b, t.ps, kb_acc(b, at, 2, SH(KT, M), k, AX(0, 0),
	    AX(0, 1)), kb_acc(b, bt, 2, SH(KT, N), k, AX(0, 0), AX(0, 1)),
	    true, t.res, t.out);
	ck_assert_uint_eq(p->nbody, 8);
	ld0 = &p->body[1].body[0];
	ld1 = &p->body[3].body[0];
	mmloop = &p->body[5];
	if (reversed) {
		/* iteration k reads what another iteration loaded: the
		 * loads stay, and the loop stays a loop */
		ck_assert(!ld0->skip && !ld1->skip);
		ck_assert_uint_eq(mmloop->body[0].src[0].v.tensor, at);
		ck_assert_uint_eq(mmloop->gemm_at, 0);
	} else {
		/* the matmul reads lhsT and rhs in place, the arrays are
		 * neither filled nor loaded, and the loop is one matmul */
		ck_assert(ld0->skip && ld1->skip);
		ck_assert(p->body[0].skip && p->body[2].skip);
		ck_assert_uint_eq(mmloop->body[0].src[0].v.tensor, t.lhs);
		ck_assert_uint_eq(mmloop->body[0].src[1].v.tensor, t.rhs);
		ck_assert_uint_eq(mmloop->gemm_at, 1);
		ck_assert_int_eq(mmloop->gemm_ld[0], M);
		ck_assert_int_eq(mmloop->gemm_ld[1], N);
	}
	kb_matmul_run(b, p, M, K, N, true, 5);
}

/*
 * mm_tiled's shape: for m, for n: a zeroed PSUM tile, a loop over k of
 * loads and an accumulating matmul, then a copy and a store of the tile.
 * The PSUM tile passes to the output (sim_opt_psum_hbm) and every loop
 * is one matmul (sim_opt_gemm): k along K, n along N, m along M, the
 * whole nest one [M, K] x [K, N] product overwriting the output.
 * Through SBUF (mm_blocked's shape), the tile is added to slice n of a
 * zeroed tile array res[N / TN, TM, TN] that the store writes out: the
 * add is a copy, and the same holds. With `shared`, every n adds to
 * res[0]: the slices are not written once each, so nothing folds. With
 * `bf16` the output is bf16 (not a tensor BLAS writes): nothing folds
 * either, and res keeps its fill.
 */
static void
kb_matmul_nest(bool sbuf, bool shared, bool bf16, int M, int K, int N)
{
	enum { TM = 128, TK = 128, TN = 96 };
	struct kb kb, *b = &kb;
	const struct sim_op *lm, *ln, *lk;
	Nkir__V1__Access *slice;
	struct sim_program *p;
	Nkir__V1__Op *op;
	struct kb_mm t;
	uint32_t tl, tr, ra = 0;

	kb_matmul_io(b, "matmul_nest", M, K, N, TM, TN, &t);
	if (bf16)
		b->k.tensors[t.out]->dtype = BF16;
	tl = kb_tile(b, "lt", SBUF, F32, 2, SH(TK, TM));
	tr = kb_tile(b, "rt", SBUF, F32, 2, SH(TK, TN));
	if (sbuf)
		ra = kb_tile(b, "res", SBUF, F32, 3, SH(N / TN, TM, TN));
	kb_loop(b, 0, 0, M / TM, 1);
	if (sbuf)
		kb_alloc_op(b, ra, NKIR__V1__FILL__FILL_ZERO, 0);
	kb_loop(b, 1, 0, N / TN, 1);
	kb_alloc_op(b, t.ps, NKIR__V1__FILL__FILL_ZERO, 0);
	kb_loop(b, 2, 0, K / TK, 1);
	kb_op1(b, OPK(LOAD), kb_full2(b, tl), kb_acc(b, t.lhs, 2, SH(TK, TM),
	    kb_aff(b, 0, 2, L, 2, (int64_t)TK, X, 0, (int64_t)1),
	    kb_aff(b, 0, 2, L, 0, (int64_t)TM, X, 1, (int64_t)1)));
	kb_op1(b, OPK(LOAD), kb_full2(b, tr), kb_acc(b, t.rhs, 2, SH(TK, TN),
	    kb_aff(b, 0, 2, L, 2, (int64_t)TK, X, 0, (int64_t)1),
	    kb_aff(b, 0, 2, L, 1, (int64_t)TN, X, 1, (int64_t)1)));
	op = kb_op1(b, OPK(MATMUL), kb_full2(b, t.ps), kb_full2(b, tl));
	kb_src(b, op, kb_full2(b, tr));
	op->accumulate = true;
	op->transpose_x = true;
	kb_end(b);
	if (sbuf) {
		slice = kb_acc(b, ra, 2, SH(TM, TN), shared ? kb_aff(b, 0, 0) :
		    kb_aff(b, 0, 1, L, 1, (int64_t)1), AX(0, 0), AX(0, 1));
		op = kb_op1(b, OPK(TENSOR_TENSOR), slice, slice);
		kb_src(b, op, kb_full2(b, t.ps));
		op->alu = NKIR__V1__ALU_OP__ALU_ADD;
	} else {
		slice = kb_full2(b, t.res);
		kb_op1(b, OPK(COPY), slice, kb_full2(b, t.ps));
	}
	kb_op1(b, OPK(STORE), kb_acc(b, t.out, 2, SH(TM, TN),
	    kb_aff(b, 0, 2, L, 0, (int64_t)TM, X, 0, (int64_t)1),
	    kb_aff(b, 0, 2, L, 1, (int64_t)TN, X, 1, (int64_t)1)), slice);
	kb_end(b);
	kb_end(b);
	p = kb_program(b);
	lm = &p->body[0];
	ln = &lm->body[sbuf ? 1 : 0];
	lk = &ln->body[1];
	if (shared || bf16) {
		ck_assert_uint_eq(ln->body[0].dst.tensor, t.ps);
		ck_assert(!ln->body[2].skip && !ln->body[3].skip);
		ck_assert(!lm->body[0].skip);
		ck_assert_uint_eq(ln->gemm_at, 0);
		ck_assert_uint_eq(lm->gemm_at, 0);
		sim_program_free(p);
		kb_release(b);
		return;
	}
	/* the fill and the matmul write the output; the rest is idle */
	ck_assert_uint_eq(ln->body[0].dst.tensor, t.out);
	ck_assert_uint_eq(lk->body[2].dst.tensor, t.out);
	ck_assert(ln->body[2].skip && ln->body[3].skip);
	ck_assert(!sbuf || lm->body[0].skip);
	ck_assert_uint_eq(lk->gemm_at, 3);
	ck_assert(!lk->gemm_overwrite);
	ck_assert_int_eq(lk->gemm_mnk[2], K);
	ck_assert_uint_eq(ln->gemm_at, 2);
	ck_assert(ln->gemm_overwrite);
	ck_assert_int_eq(ln->gemm_mnk[1], N);
	ck_assert_uint_eq(lm->gemm_at, sbuf ? 2 : 1);
	ck_assert(lm->gemm_overwrite);
	ck_assert_int_eq(lm->gemm_mnk[0], M);
	ck_assert_int_eq(lm->gemm_mnk[1], N);
	ck_assert_int_eq(lm->gemm_mnk[2], K);
	ck_assert_int_eq(lm->gemm_ld[0], M);
	ck_assert_int_eq(lm->gemm_ld[1], N);
	ck_assert_int_eq(lm->gemm_ld[2], N);
	kb_matmul_run(b, p, M, K, N, true, 9);
}

CHECK_TEST(core, test_sim_matmul_nest)
{
	kb_matmul_nest(false, false, false, 256, 256, 192);
	kb_matmul_nest(true, false, false, 256, 256, 192);
	kb_matmul_nest(true, true, false, 256, 256, 192);
	kb_matmul_nest(true, false, true, 256, 256, 192);
}
END_TEST

/* A nest that is one product of 2^28 multiply-adds or more runs as one
 * call on OpenBLAS's threads when the run has more than one (the same
 * bits as on one thread, checked by kb_matmul_run). */
CHECK_TEST(par, test_sim_matmul_threaded)
{
	unsigned long before = sim_blas_threaded_calls();

	kb_matmul_nest(false, false, false, 1024, 512, 576);
	ck_assert_uint_eq(sim_blas_threaded_calls() - before, 3);
}
END_TEST

CHECK_TEST(core, test_sim_matmul_tile_arrays)
{
	kb_matmul_arrays(false);
	kb_matmul_arrays(true);
}
END_TEST

/* reduce [4, 3, 5] along `axis` with keepdims, for alu */
static void
kb_reduce_case(int alu, uint32_t axis)
{
	struct kb kb, *b = &kb;
	uint64_t ds[3] = { 4, 3, 5 };
	uint32_t in, out, t, r;
	float x[60], want[60], *got;
	struct sim_tensor ti, to;
	struct sim_program *p;
	struct sim_diag d;
	Nkir__V1__Op *o;
	int rc;

	ds[axis] = 1;
	kb_init(b, "reduce");
	in = kb_param(b, "x", F32, 3, SH(4, 3, 5));
	out = kb_out(b, "y", F32, 3, ds);
	t = kb_tile(b, "t", SBUF, F32, 3, SH(4, 3, 5));
	r = kb_tile(b, "r", SBUF, F32, 3, ds);
	kb_op1(b, OPK(LOAD), kb_acc(b, t, 3, SH(4, 3, 5), AX(0, 0), AX(0, 1),
	    AX(0, 2)), kb_acc(b, in, 3, SH(4, 3, 5), AX(0, 0), AX(0, 1),
	    AX(0, 2)));
	o = kb_op1(b, OPK(REDUCE), kb_acc(b, r, 3, ds, AX(0, 0), AX(0, 1),
	    AX(0, 2)), kb_acc(b, t, 3, SH(4, 3, 5), AX(0, 0), AX(0, 1),
	    AX(0, 2)));
	o->alu = alu;
	o->axes[o->n_axes++] = axis;
	kb_op1(b, OPK(STORE), kb_acc(b, out, 3, ds, AX(0, 0), AX(0, 1),
	    AX(0, 2)), kb_acc(b, r, 3, ds, AX(0, 0), AX(0, 1), AX(0, 2)));
	p = kb_program(b);
	for (int i = 0; i < 60; i++)
		x[i] = (float)((i * 7) % 11) - 3.0f;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < (int)ds[1]; j++)
			for (int k = 0; k < (int)ds[2]; k++) {
				int nr = axis == 1 ? 3 : 5;
				double s = 0, s2 = 0, mx = -INFINITY;

				for (int q = 0; q < nr; q++) {
					int jj = axis == 1 ? q : j;
					int kk = axis == 2 ? q : k;
					double v = x[i * 15 + jj * 5 + kk];

					s += v;
					mx = v > mx ? v : mx;
				}
				for (int q = 0; q < nr; q++) {
					int jj = axis == 1 ? q : j;
					int kk = axis == 2 ? q : k;
					double v = x[i * 15 + jj * 5 + kk];

					s2 += (v - s / nr) * (v - s / nr);
				}
				want[(i * ds[1] + j) * ds[2] + k] = (float)(
				    alu == NKIR__V1__ALU_OP__ALU_ADD ? s :
				    alu == NKIR__V1__ALU_OP__ALU_MEAN ? s / nr :
				    alu == NKIR__V1__ALU_OP__ALU_VAR ? s2 / nr :
				    mx);
			}
	ti = kb_host(F32, 3, SH(4, 3, 5), x);
	rc = sim_run(p, &ti, 1, &to, 1, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_int_eq(to.rank, 3);
	ck_assert_uint_eq(to.shape[axis], 1);
	got = to.data;
	for (size_t i = 0; i < 4 * ds[1] * ds[2]; i++)
		ck_assert_float_eq_tol(got[i], want[i], 1e-4);
	sim_tensors_release(&to, 1);
	sim_program_free(p);
	kb_release(b);
}

CHECK_TEST(core, test_sim_reduce_keepdims)
{
	kb_reduce_case(NKIR__V1__ALU_OP__ALU_ADD, 2);
	kb_reduce_case(NKIR__V1__ALU_OP__ALU_ADD, 1);
	kb_reduce_case(NKIR__V1__ALU_OP__ALU_MAXIMUM, 2);
	kb_reduce_case(NKIR__V1__ALU_OP__ALU_MEAN, 1);
	kb_reduce_case(NKIR__V1__ALU_OP__ALU_VAR, 2);
}
END_TEST

/* fp32 values through a bf16 tile and a bf16 output: round to even */
CHECK_TEST(core, test_sim_bf16_round_nearest_even)
{
	struct kb kb, *b = &kb;
	float x[8] = {
		1.0f + 0x1p-8f,             /* tie -> 1.0 (even) */
		1.0f + 3 * 0x1p-8f,         /* tie -> 1 + 2^-6 (even) */
		1.0f + 0x1p-8f + 0x1p-20f,  /* above tie -> up */
		-1.0f - 0x1p-8f,
		65504.0f, 3.0e38f, 1e-40f, 0.0f,
	};
	uint16_t want[8] = { 0x3f80, 0x3f82, 0x3f81, 0xbf80, 0x4780, 0x7f62,
	    0x0001, 0x0000 };
	uint32_t in, out, t;
	struct sim_tensor ti, to;
	struct sim_program *p;
	struct sim_diag d;
	int rc;

	kb_init(b, "round");
	in = kb_param(b, "x", F32, 2, SH(1, 8));
	out = kb_out(b, "y", BF16, 2, SH(1, 8));
	t = kb_tile(b, "t", SBUF, BF16, 2, SH(1, 8));
	kb_op1(b, OPK(LOAD), kb_full2(b, t), kb_full2(b, in));
	kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, t));
	p = kb_program(b);
	ti = kb_host(F32, 2, SH(1, 8), x);
	rc = sim_run(p, &ti, 1, &to, 1, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_int_eq(to.dtype, SIM_DT_BFLOAT16);
	ck_assert_uint_eq(to.nbytes, 16);
	for (int i = 0; i < 8; i++)
		ck_assert_msg(((uint16_t *)to.data)[i] == want[i],
		    "element %d: %04x != %04x", i, ((uint16_t *)to.data)[i],
		    want[i]);
	sim_tensors_release(&to, 1);
	sim_program_free(p);
	kb_release(b);
}
END_TEST

/* Uninitialized HBM and tiles read as NaN; int tiles as the minimum. */
CHECK_TEST(core, test_sim_nan_fill_visible)
{
	struct kb kb, *b = &kb;
	uint32_t out, out8, t, t8;
	struct sim_tensor to[2];
	struct sim_program *p;
	struct sim_diag d;
	int rc;

	kb_init(b, "uninit");
	out = kb_out(b, "y", F32, 2, SH(4, 8));
	out8 = kb_out(b, "z", NKIR__V1__DTYPE__DT_INT8, 2, SH(4, 8));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(4, 4));
	t8 = kb_tile(b, "t8", SBUF, NKIR__V1__DTYPE__DT_INT8, 2, SH(4, 8));
	kb_alloc_op(b, t, NKIR__V1__FILL__FILL_UNINIT, 0);
	kb_alloc_op(b, t8, NKIR__V1__FILL__FILL_UNINIT, 0);
	/* only the left half of y is stored, from an uninitialized tile */
	kb_op1(b, OPK(STORE), kb_acc(b, out, 2, SH(4, 4), AX(0, 0), AX(0, 1)),
	    kb_full2(b, t));
	kb_op1(b, OPK(STORE), kb_full2(b, out8), kb_full2(b, t8));
	p = kb_program(b);
	rc = sim_run(p, NULL, 0, to, 2, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	for (int i = 0; i < 32; i++) {
		ck_assert(isnan(((float *)to[0].data)[i]));
		ck_assert_int_eq(((int8_t *)to[1].data)[i], -128);
	}
	sim_tensors_release(to, 2);
	sim_program_free(p);
	kb_release(b);
}
END_TEST

/* 200 rows in two 128-row tiles: the second tile is masked to 72 rows. */
CHECK_TEST(core, test_sim_masked_tail)
{
	struct kb kb, *b = &kb;
	uint32_t in, out, t;
	Nkir__V1__Access *src, *dst;
	float x[200 * 4];
	struct sim_tensor ti, to;
	struct sim_program *p;
	struct sim_diag d;
	Nkir__V1__Op *o;
	int rc;

	kb_init(b, "masked");
	in = kb_param(b, "x", F32, 2, SH(200, 4));
	out = kb_out(b, "y", F32, 2, SH(200, 4));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(128, 4));
	kb_loop(b, 0, 0, 2, 1);
	src = kb_acc(b, in, 2, SH(128, 4), kb_aff(b, 0, 2, L, 0,
	    (int64_t)128, X, 0, (int64_t)1), AX(0, 1));
	/* 199 - (128 i + p) >= 0 */
	kb_mask(b, src, kb_aff(b, 199, 2, L, 0, (int64_t)-128, X, 0,
	    (int64_t)-1));
	kb_op1(b, OPK(LOAD), kb_full2(b, t), src);
	o = kb_op1(b, OPK(TENSOR_TENSOR), kb_full2(b, t), kb_full2(b, t));
	kb_scalar(b, o, 2.0);
	o->alu = NKIR__V1__ALU_OP__ALU_MULTIPLY;
	dst = kb_acc(b, out, 2, SH(128, 4), kb_aff(b, 0, 2, L, 0,
	    (int64_t)128, X, 0, (int64_t)1), AX(0, 1));
	kb_mask(b, dst, kb_aff(b, 199, 2, L, 0, (int64_t)-128, X, 0,
	    (int64_t)-1));
	kb_op1(b, OPK(STORE), dst, kb_full2(b, t));
	kb_end(b);
	p = kb_program(b);
	for (int i = 0; i < 800; i++)
		x[i] = (float)i;
	ti = kb_host(F32, 2, SH(200, 4), x);
	rc = sim_run(p, &ti, 1, &to, 1, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	for (int i = 0; i < 800; i++)
		ck_assert_float_eq(((float *)to.data)[i], 2.0f * x[i]);
	sim_tensors_release(&to, 1);
	sim_program_free(p);
	kb_release(b);
}
END_TEST

static void
kb_print_cb(void *arg, const char *text, size_t len)
{
	char **s = arg;
	size_t old = *s ? strlen(*s) : 0;

	*s = realloc(*s, old + len + 1);
	memcpy(*s + old, text, len);
	(*s)[old + len] = '\0';
}

/* iota, activation with scale and bias, select, transpose, print */
CHECK_TEST(core, test_sim_iota_activation_print)
{
	struct kb kb, *b = &kb;
	uint32_t out, t, u, tt;
	Nkir__V1__Op *o;
	struct sim_program *p;
	struct sim_tensor to;
	struct sim_run_opts opts = { .print_cb = kb_print_cb };
	char *text = NULL;
	struct sim_diag d;
	int rc;

	opts.print_arg = &text;
	kb_init(b, "misc");
	out = kb_out(b, "y", F32, 2, SH(3, 2));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(2, 3));
	u = kb_tile(b, "u", SBUF, F32, 2, SH(2, 3));
	tt = kb_tile(b, "tt", PSUM, F32, 2, SH(3, 2));
	/* t[p, f] = 10 p + f */
	o = kb_op(b, OPK(IOTA), kb_full2(b, t));
	o->expr = kb_aff(b, 0, 2, X, 0, (int64_t)10, X, 1, (int64_t)1);
	o = kb_op1(b, OPK(PRINT), NULL, kb_full2(b, t));
	o->text = "t";
	/* u = relu(t * 2 + bias[p]) with bias = -t[:, 1] (broadcast) */
	o = kb_op1(b, OPK(ACTIVATION), kb_full2(b, u), kb_full2(b, t));
	kb_src(b, o, kb_acc(b, t, 2, SH(2, 3), AX(0, 0),
	    kb_aff(b, 1, 0)));
	o->act = NKIR__V1__ACT_FUNC__ACT_RELU;
	o->scale = 2.0;
	/* u = u > 15 ? u : -1 */
	o = kb_op1(b, OPK(TENSOR_TENSOR), kb_full2(b, t), kb_full2(b, u));
	kb_scalar(b, o, 15.0);
	o->alu = NKIR__V1__ALU_OP__ALU_GREATER;
	o = kb_op1(b, OPK(SELECT), kb_full2(b, u), kb_full2(b, t));
	kb_src(b, o, kb_full2(b, u));
	kb_scalar(b, o, -1.0);
	o = kb_op1(b, OPK(TRANSPOSE), kb_full2(b, tt), kb_full2(b, u));
	kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, tt));
	p = kb_program(b);
	rc = sim_run(p, NULL, 0, &to, 1, &opts, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_str_eq(text, "t: t[2, 3] float32\n[[0. 1. 2.]\n [10. 11. 12.]]\n");
	{
		/* u = relu(2 t + t[:, 1]): row 0 stays <= 15, row 1 above */
		float want[6];

		for (int pp = 0; pp < 2; pp++)
			for (int f = 0; f < 3; f++) {
				float tv = 10.0f * pp + f;
				float uv = fmaxf(tv * 2 + (10.0f * pp + 1), 0);

				want[f * 2 + pp] = uv > 15 ? uv : -1;
			}
		for (int i = 0; i < 6; i++)
			ck_assert_float_eq(((float *)to.data)[i], want[i]);
	}
	free(text);
	sim_tensors_release(&to, 1);
	sim_program_free(p);
	kb_release(b);
}
END_TEST

/* Profile events: one per executed op, in order, named as NKI names the
 * op, on the engine the op asks for or else where NKI places its kind. */
struct kb_events {
	int		 n;
	const char	*op[16];
	const char	*engine[16];
	uint32_t	 line[16];
	uint64_t	 elements[16];
};

static void
kb_event_cb(void *arg, const struct sim_op_event *ev)
{
	struct kb_events	*e = arg;

	ck_assert_int_lt(e->n, 16);
	e->op[e->n] = ev->op;
	e->engine[e->n] = ev->engine;
	e->line[e->n] = ev->line;
	e->elements[e->n] = ev->elements;
	e->n++;
}

CHECK_TEST(core, test_sim_op_events_name_engine)
{
	static const char	*want[][2] = {
		{ "ndarray", "gpsimd" }, { "iota", "gpsimd" },
		{ "device_print", "gpsimd" }, { "activation", "scalar" },
		{ "tensor_tensor", "vector" }, { "select", "vector" },
		{ "transpose", "vector" }, { "store", "dma" },
	};
	struct kb		 kb, *b = &kb;
	struct kb_events	 ev = { 0 };
	struct sim_run_opts		 opts = { .op_cb = kb_event_cb, .op_arg = &ev };
	uint32_t		 out, t, u, tt;
	Nkir__V1__Op		*o;
	struct sim_program		*p;
	struct sim_tensor		 to;
	struct sim_diag		 d;
	int			 i, rc;

	kb_init(b, "events");
	out = kb_out(b, "y", F32, 2, SH(3, 2));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(2, 3));
	u = kb_tile(b, "u", SBUF, F32, 2, SH(2, 3));
	tt = kb_tile(b, "tt", PSUM, F32, 2, SH(3, 2));
	kb_alloc_op(b, u, NKIR__V1__FILL__FILL_ZERO, 0);
	b->line++;
	o = kb_op(b, OPK(IOTA), kb_full2(b, t));
	o->expr = kb_aff(b, 0, 1, X, 1, (int64_t)1);
	b->line++;
	o = kb_op1(b, OPK(PRINT), NULL, kb_full2(b, t));
	o->text = "t";
	b->line++;
	o = kb_op1(b, OPK(ACTIVATION), kb_full2(b, u), kb_full2(b, t));
	o->act = NKIR__V1__ACT_FUNC__ACT_EXP;
	b->line++;
	o = kb_op1(b, OPK(TENSOR_TENSOR), kb_full2(b, t), kb_full2(b, u));
	kb_scalar(b, o, 2.0);
	o->alu = NKIR__V1__ALU_OP__ALU_GREATER;
	b->line++;
	o = kb_op1(b, OPK(SELECT), kb_full2(b, u), kb_full2(b, t));
	kb_src(b, o, kb_full2(b, u));
	kb_scalar(b, o, -1.0);
	b->line++;
	/* asks for the vector engine: NKI's default for transpose is the
	 * tensor engine */
	o = kb_op1(b, OPK(TRANSPOSE), kb_full2(b, tt), kb_full2(b, u));
	o->engine = NKIR__V1__ENGINE__ENGINE_VECTOR;
	b->line++;
	kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, tt));
	p = kb_program(b);
	rc = sim_run(p, NULL, 0, &to, 1, &opts, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_int_eq(ev.n, 8);
	for (i = 0; i < 8; i++) {
		ck_assert_str_eq(ev.op[i], want[i][0]);
		ck_assert_str_eq(ev.engine[i], want[i][1]);
		ck_assert_uint_eq(ev.line[i], 10 + (uint32_t)i);
		ck_assert_uint_eq(ev.elements[i], 6);
	}
	sim_tensors_release(&to, 1);
	sim_program_free(p);
	kb_release(b);
}
END_TEST

/* bn_stats + bn_aggr give the mean and population variance per row */
CHECK_TEST(core, test_sim_bn_stats_aggr)
{
	struct kb kb, *b = &kb;
	uint32_t in, out, t, st, ag;
	float x[2 * 10];
	struct sim_tensor ti, to;
	struct sim_program *p;
	struct sim_diag d;
	int rc;

	kb_init(b, "bn");
	in = kb_param(b, "x", F32, 2, SH(2, 10));
	out = kb_out(b, "y", F32, 2, SH(2, 2));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(2, 10));
	st = kb_tile(b, "st", SBUF, F32, 2, SH(2, 6));
	ag = kb_tile(b, "ag", SBUF, F32, 2, SH(2, 2));
	kb_op1(b, OPK(LOAD), kb_full2(b, t), kb_full2(b, in));
	kb_op1(b, OPK(BN_STATS), kb_full2(b, st), kb_full2(b, t));
	kb_op1(b, OPK(BN_AGGR), kb_full2(b, ag), kb_full2(b, st));
	kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, ag));
	p = kb_program(b);
	for (int i = 0; i < 20; i++)
		x[i] = (float)(i * i % 7);
	ti = kb_host(F32, 2, SH(2, 10), x);
	rc = sim_run(p, &ti, 1, &to, 1, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	for (int r = 0; r < 2; r++) {
		double m = 0, v = 0;

		for (int i = 0; i < 10; i++)
			m += x[r * 10 + i] / 10.0;
		for (int i = 0; i < 10; i++)
			v += (x[r * 10 + i] - m) * (x[r * 10 + i] - m) / 10.0;
		ck_assert_double_eq_tol(((float *)to.data)[r * 2], m, 1e-5);
		ck_assert_double_eq_tol(((float *)to.data)[r * 2 + 1], v, 1e-4);
	}
	sim_tensors_release(&to, 1);
	sim_program_free(p);
	kb_release(b);
}
END_TEST

/* in-place transpose and an overlapping shift read before they write */
CHECK_TEST(core, test_sim_inplace_overlap)
{
	struct kb kb, *b = &kb;
	uint32_t out, t;
	Nkir__V1__Op *o;
	struct sim_program *p;
	struct sim_tensor to;
	struct sim_diag d;
	int rc;

	kb_init(b, "inplace");
	out = kb_out(b, "y", F32, 2, SH(4, 4));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(4, 4));
	o = kb_op(b, OPK(IOTA), kb_full2(b, t));
	o->expr = kb_aff(b, 0, 2, X, 0, (int64_t)10, X, 1, (int64_t)1);
	kb_op1(b, OPK(TRANSPOSE), kb_full2(b, t), kb_full2(b, t));
	/* t[1:4, :] = t[0:3, :] */
	kb_op1(b, OPK(COPY), kb_acc(b, t, 2, SH(3, 4), AX(1, 0), AX(0, 1)),
	    kb_acc(b, t, 2, SH(3, 4), AX(0, 0), AX(0, 1)));
	kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, t));
	p = kb_program(b);
	ck_assert_uint_gt(sim_program_cost(p), 16);
	rc = sim_run(p, NULL, 0, &to, 1, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	for (int pp = 0; pp < 4; pp++)
		for (int f = 0; f < 4; f++) {
			int src = pp == 0 ? 0 : pp - 1;

			ck_assert_float_eq(((float *)to.data)[pp * 4 + f],
			    10.0f * f + src);
		}
	sim_tensors_release(&to, 1);
	sim_program_free(p);
	kb_release(b);
}
END_TEST

/* ------------------------------------------------------------ fast paths */

/* Run p twice (the second run reuses the cached run memory) on one f32
 * input; both runs must give the same bytes. Returns the first output. */
static float *
kb_run_twice(struct sim_program *p, struct sim_tensor *in, size_t nin, size_t nbytes)
{
	struct sim_tensor to[2];
	struct sim_diag d;
	float *keep;
	int rc;

	rc = sim_run(p, in, nin, &to[0], 1, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert_uint_eq(to[0].nbytes, nbytes);
	rc = sim_run(p, in, nin, &to[1], 1, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	ck_assert(memcmp(to[0].data, to[1].data, nbytes) == 0);
	keep = malloc(nbytes);
	memcpy(keep, to[0].data, nbytes);
	sim_tensors_release(to, 2);
	return keep;
}

/* The swap_blocks tutorial with odd sizes: a top-level load and store
 * (elided: the tile is the input, the other tile the output) around a
 * transposing copy (blocked, with tails on both axes); the alloc before
 * the copy is dead. */
CHECK_TEST(core, test_sim_fast_transpose_copy)
{
	struct kb kb, *b = &kb;
	enum { R = 5, A = 7, B = 9 };
	uint32_t in, out, t, m;
	float *x = kb_randf(R * A * B, 3), *y;
	struct sim_program *p;
	struct sim_tensor ti;

	kb_init(b, "swap_blocks");
	in = kb_param(b, "x", F32, 2, SH(R, A * B));
	out = kb_out(b, "y", F32, 2, SH(R, A * B));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(R, A * B));
	m = kb_tile(b, "m", SBUF, F32, 2, SH(R, A * B));
	kb_op1(b, OPK(LOAD), kb_full2(b, t), kb_full2(b, in));
	kb_alloc_op(b, m, NKIR__V1__FILL__FILL_VALUE, 5.0);
	/* m[p, v * A + u] = t[p, u * B + v] over [R, A, B] */
	kb_op1(b, OPK(COPY), kb_acc(b, m, 3, SH(R, A, B), AX(0, 0),
	    kb_aff(b, 0, 2, X, 1, (int64_t)1, X, 2, (int64_t)A)),
	    kb_acc(b, t, 3, SH(R, A, B), AX(0, 0),
	    kb_aff(b, 0, 2, X, 1, (int64_t)B, X, 2, (int64_t)1)));
	kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, m));
	p = kb_program(b);
	ti = kb_host(F32, 2, SH(R, A * B), x);
	y = kb_run_twice(p, &ti, 1, R * A * B * 4);
	for (int pp = 0; pp < R; pp++)
		for (int u = 0; u < A; u++)
			for (int v = 0; v < B; v++)
				ck_assert_float_eq(y[pp * A * B + v * A + u],
				    x[pp * A * B + u * B + v]);
	free(y);
	free(x);
	sim_program_free(p);
	kb_release(b);
}
END_TEST

/* Transposes on the blocked path and off it: nc_transpose of a [37, 21]
 * tile (4x4 register blocks plus tails), a copy strided on both sides
 * (no contiguous pair), and a transpose into a bf16 tile (must round). */
CHECK_TEST(core, test_sim_fast_transpose_strides_dtype)
{
	struct kb kb, *b = &kb;
	enum { P0 = 37, F0 = 21 };
	uint32_t in, o1, o2, o3, t, tt, u, w, tb;
	float *x = kb_randf(P0 * 64, 4);
	struct sim_tensor ti, to[3];
	struct sim_program *p;
	struct sim_diag d;
	int rc;

	for (int i = 0; i < P0 * 64; i++)
		x[i] = x[i] * 1.00390625f + 1.0f / 3.0f;  /* not bf16-exact */
	kb_init(b, "transposes");
	in = kb_param(b, "x", F32, 2, SH(P0, 64));
	o1 = kb_out(b, "y1", F32, 2, SH(F0, P0));
	o2 = kb_out(b, "y2", F32, 2, SH(4, 32));
	o3 = kb_out(b, "y3", F32, 2, SH(F0, P0));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(P0, 64));
	tt = kb_tile(b, "tt", PSUM, F32, 2, SH(F0, P0));
	u = kb_tile(b, "u", SBUF, F32, 2, SH(4, 64));
	w = kb_tile(b, "w", SBUF, F32, 2, SH(4, 32));
	tb = kb_tile(b, "tb", SBUF, BF16, 2, SH(F0, P0));
	kb_op1(b, OPK(LOAD), kb_full2(b, t), kb_full2(b, in));
	/* tt = t[:, 0:21].T */
	kb_op1(b, OPK(TRANSPOSE), kb_full2(b, tt),
	    kb_acc(b, t, 2, SH(P0, F0), AX(0, 0), AX(0, 1)));
	kb_op1(b, OPK(STORE), kb_full2(b, o1), kb_full2(b, tt));
	/* u = t[0:4, :]; w[p, j + 8 i] = u[p, 2 j + 16 i], [4, 8, 4] */
	kb_op1(b, OPK(COPY), kb_full2(b, u),
	    kb_acc(b, t, 2, SH(4, 64), AX(0, 0), AX(0, 1)));
	kb_op1(b, OPK(COPY), kb_acc(b, w, 3, SH(4, 8, 4), AX(0, 0),
	    kb_aff(b, 0, 2, X, 1, (int64_t)1, X, 2, (int64_t)8)),
	    kb_acc(b, u, 3, SH(4, 8, 4), AX(0, 0),
	    kb_aff(b, 0, 2, X, 1, (int64_t)2, X, 2, (int64_t)16)));
	kb_op1(b, OPK(STORE), kb_full2(b, o2), kb_full2(b, w));
	/* tb = t[:, 0:21].T rounded to bf16 */
	kb_op1(b, OPK(TRANSPOSE), kb_full2(b, tb),
	    kb_acc(b, t, 2, SH(P0, F0), AX(0, 0), AX(0, 1)));
	kb_op1(b, OPK(STORE), kb_full2(b, o3), kb_full2(b, tb));
	p = kb_program(b);
	ti = kb_host(F32, 2, SH(P0, 64), x);
	for (int run = 0; run < 2; run++) {
		rc = sim_run(p, &ti, 1, to, 3, NULL, &d);
		ck_assert_msg(rc == 0, "%s", d.msg);
		for (int f = 0; f < F0; f++)
			for (int q = 0; q < P0; q++) {
				float v = x[q * 64 + f], r;
				uint16_t h;

				ck_assert_float_eq(((float *)to[0].data)[f * P0 + q],
				    v);
				sim_dtype_from_float(SIM_DT_BFLOAT16, &h, &v, 1);
				memcpy(&r, (uint32_t[]){ (uint32_t)h << 16 }, 4);
				ck_assert_float_eq(((float *)to[2].data)[f * P0 + q],
				    r);
			}
		for (int q = 0; q < 4; q++)
			for (int j = 0; j < 8; j++)
				for (int i = 0; i < 4; i++)
					ck_assert_float_eq(((float *)to[1].data)
					    [q * 32 + j + 8 * i],
					    x[q * 64 + 2 * j + 16 * i]);
		sim_tensors_release(to, 3);
	}
	free(x);
	sim_program_free(p);
	kb_release(b);
}
END_TEST

/* rms_norm's pattern: masks (row < N) that hold everywhere because the
 * tiling divides N run unmasked; the mean, the broadcast and the stores
 * must agree with the masked semantics. A mask that fails somewhere
 * (N = 200 below) stays, and masked-off rows stay untouched. */
static void
kb_rows_scaled(uint64_t N, uint64_t T)
{
	struct kb kb, *b = &kb;
	uint32_t in, out, t, ms, y;
	Nkir__V1__Access *a;
	Nkir__V1__Op *o;
	float *x = kb_randf(N * 8, 5), *got;
	struct sim_program *p;
	struct sim_tensor ti;

	kb_init(b, "rows");
	in = kb_param(b, "x", F32, 2, SH(N, 8));
	out = kb_out(b, "y", F32, 2, SH(N, 8));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(128, 8));
	ms = kb_tile(b, "ms", SBUF, F32, 2, SH(128, 1));
	y = kb_tile(b, "yt", SBUF, F32, 2, SH(128, 8));
#define ROW() kb_aff(b, 0, 2, L, 0, (int64_t)128, X, 0, (int64_t)1)
#define ROWMASK(acc) kb_mask(b, acc, kb_aff(b, (int64_t)N - 1, 2, L, 0, \
	(int64_t)-128, X, 0, (int64_t)-1))
	kb_loop(b, 0, 0, (int64_t)T, 1);
	a = kb_acc(b, in, 2, SH(128, 8), ROW(), AX(0, 1));
	ROWMASK(a);
	kb_op1(b, OPK(LOAD), kb_full2(b, t), a);
	a = kb_full2(b, t);
	ROWMASK(a);
	o = kb_op1(b, OPK(REDUCE), kb_full2(b, ms), a);
	o->alu = NKIR__V1__ALU_OP__ALU_MEAN;
	o->axes[o->n_axes++] = 1;
	o = kb_op1(b, OPK(TENSOR_TENSOR), kb_full2(b, y), kb_full2(b, t));
	a = kb_acc(b, ms, 2, SH(128, 8), AX(0, 0), kb_aff(b, 0, 0));
	ROWMASK(a);
	kb_src(b, o, a);
	o->alu = NKIR__V1__ALU_OP__ALU_SUBTRACT;
	a = kb_acc(b, out, 2, SH(128, 8), ROW(), AX(0, 1));
	ROWMASK(a);
	kb_op1(b, OPK(STORE), a, kb_full2(b, y));
	kb_end(b);
#undef ROW
#undef ROWMASK
	p = kb_program(b);
	ti = kb_host(F32, 2, SH(N, 8), x);
	got = kb_run_twice(p, &ti, 1, N * 8 * 4);
	for (uint64_t r = 0; r < N; r++) {
		float m = 0;

		for (int f = 0; f < 8; f++)
			m += x[r * 8 + f];
		m /= 8;
		for (int f = 0; f < 8; f++)
			ck_assert_float_eq_tol(got[r * 8 + f], x[r * 8 + f] - m,
			    1e-4);
	}
	free(got);
	free(x);
	sim_program_free(p);
	kb_release(b);
}

CHECK_TEST(core, test_sim_fast_masks_always_true)
{
	kb_rows_scaled(256, 2);         /* masks proven true: dropped */
	kb_rows_scaled(200, 2);         /* a real tail: masks stay */
}
END_TEST

/* An in-bounds mask that fails somewhere stays: u = 7; u[p < 2] = t. */
CHECK_TEST(core, test_sim_fast_mask_in_bounds_kept)
{
	struct kb kb, *b = &kb;
	uint32_t out, t, u;
	Nkir__V1__Access *a;
	Nkir__V1__Op *o;
	struct sim_program *p;
	struct sim_tensor to;
	struct sim_diag d;

	kb_init(b, "mask");
	out = kb_out(b, "y", F32, 2, SH(4, 3));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(4, 3));
	u = kb_tile(b, "u", SBUF, F32, 2, SH(4, 3));
	o = kb_op(b, OPK(IOTA), kb_full2(b, t));
	o->expr = kb_aff(b, 0, 2, X, 0, (int64_t)10, X, 1, (int64_t)1);
	kb_alloc_op(b, u, NKIR__V1__FILL__FILL_VALUE, 7.0);
	a = kb_full2(b, u);
	kb_mask(b, a, kb_aff(b, 1, 1, X, 0, (int64_t)-1));
	kb_op1(b, OPK(COPY), a, kb_full2(b, t));
	kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, u));
	p = kb_program(b);
	ck_assert_int_eq(sim_run(p, NULL, 0, &to, 1, NULL, &d), 0);
	for (int i = 0; i < 12; i++)
		ck_assert_float_eq(((float *)to.data)[i],
		    i < 6 ? 10.0f * (i / 3) + i % 3 : 7.0f);
	sim_tensors_release(&to, 1);
	sim_program_free(p);
	kb_release(b);
}
END_TEST

/* Launch fills and allocs that look dead but are not: a tile read by a
 * program before that program writes it (SPMD: program 0 sees NaN,
 * program 1 what program 0 loaded, on every run although the run memory
 * is reused); an alloc followed by a partial write; a store whose tile
 * is written after it (no store elision). */
CHECK_TEST(core, test_sim_fast_fills_kept)
{
	struct kb kb, *b = &kb;
	uint32_t in, out, o2, o3, t, u, v;
	float x[2 * 4] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct sim_tensor ti, to[3];
	struct sim_program *p;
	struct sim_diag d;
	Nkir__V1__Op *o;
	int rc;

	kb_init(b, "fills");
	in = kb_param(b, "x", F32, 2, SH(2, 4));
	out = kb_out(b, "y", F32, 2, SH(2, 4));
	o2 = kb_out(b, "z", F32, 2, SH(2, 4));
	o3 = kb_out(b, "w", F32, 2, SH(2, 4));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(1, 4));
	u = kb_tile(b, "u", SBUF, F32, 2, SH(2, 4));
	v = kb_tile(b, "v", SBUF, F32, 2, SH(2, 4));
	b->k.n_grid = 1;
	b->k.grid[0] = 2;
	/* y[pid] = t (before this program loads it); t = x[pid] */
	kb_op1(b, OPK(STORE), kb_acc(b, out, 2, SH(1, 4),
	    kb_aff(b, 0, 2, P, 0, (int64_t)1, X, 0, (int64_t)1), AX(0, 1)),
	    kb_full2(b, t));
	kb_op1(b, OPK(LOAD), kb_full2(b, t), kb_acc(b, in, 2, SH(1, 4),
	    kb_aff(b, 0, 2, P, 0, (int64_t)1, X, 0, (int64_t)1), AX(0, 1)));
	/* u = 5; u[:, 0:2] = x[:, 0:2]; z = u */
	kb_alloc_op(b, u, NKIR__V1__FILL__FILL_VALUE, 5.0);
	kb_op1(b, OPK(LOAD), kb_acc(b, u, 2, SH(2, 2), AX(0, 0), AX(0, 1)),
	    kb_acc(b, in, 2, SH(2, 2), AX(0, 0), AX(0, 1)));
	kb_op1(b, OPK(STORE), kb_full2(b, o2), kb_full2(b, u));
	/* v = x; w = v; v = v * 0 */
	kb_op1(b, OPK(LOAD), kb_full2(b, v), kb_full2(b, in));
	kb_op1(b, OPK(STORE), kb_full2(b, o3), kb_full2(b, v));
	o = kb_op1(b, OPK(TENSOR_TENSOR), kb_full2(b, v), kb_full2(b, v));
	kb_scalar(b, o, 0.0);
	o->alu = NKIR__V1__ALU_OP__ALU_MULTIPLY;
	p = kb_program(b);
	ti = kb_host(F32, 2, SH(2, 4), x);
	for (int run = 0; run < 3; run++) {
		rc = sim_run(p, &ti, 1, to, 3, NULL, &d);
		ck_assert_msg(rc == 0, "%s", d.msg);
		for (int f = 0; f < 4; f++) {
			ck_assert(isnan(((float *)to[0].data)[f]));
			ck_assert_float_eq(((float *)to[0].data)[4 + f], x[f]);
		}
		for (int i = 0; i < 8; i++) {
			ck_assert_float_eq(((float *)to[1].data)[i],
			    i % 4 < 2 ? x[i] : 5.0f);
			ck_assert_float_eq(((float *)to[2].data)[i], x[i]);
		}
		sim_tensors_release(to, 3);
	}
	sim_program_free(p);
	kb_release(b);
}
END_TEST
