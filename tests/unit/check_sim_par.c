/*
 * check_sim_par.c: the NKIR executor (sim/) running parts side by side:
 * the same bits on 1 to 4 threads, the pool under load.
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

CHECK_SUITE("sim_par", NULL, NULL, NULL);
CHECK_TCASE(par, 120);

/* ------------------------------------------------------------ side by side */

/* Tiled adds large enough to spread: programs of the grid and loop
 * iterations run side by side, proven independent, same bits. */
CHECK_TEST(par, test_sim_par_grid_and_loops)
{
	enum { R = 1024, C = 2048 };
	float *x = kb_randf(R * C, 5), *y = kb_randf(R * C, 6), *z;
	struct sim_tensor in[2] = { kb_host(F32, 2, SH(R, C), x),
	    kb_host(F32, 2, SH(R, C), y) }, o[1];
	struct sim_program *p;
	struct kb b;

	for (int spmd = 0; spmd < 2; spmd++) {
		kb_tiled_add(&b, R, C, 128, 512, spmd);
		p = kb_program(&b);
		if (spmd)
			ck_assert_ptr_nonnull(p->par);
		else
			ck_assert_ptr_nonnull(p->body[0].par);
		kb_same_bits(p, in, 2, o, 1);
		z = o[0].data;
		for (size_t i = 0; i < (size_t)R * C; i++)
			ck_assert_float_eq(z[i], x[i] + y[i]);
		sim_tensors_release(o, 1);
		sim_program_free(p);
		kb_release(&b);
	}
	free(x);
	free(y);
}
END_TEST

/* Every program stores the same elements: not independent, run in order
 * (the last program's values win) whatever the threads. */
CHECK_TEST(par, test_sim_par_grid_overlapping_stores)
{
	enum { G = 4, TP = 128, TF = 512 };
	struct kb kb, *b = &kb;
	float *x = kb_randf(G * TP * TF, 7), *z;
	struct sim_tensor in, o;
	struct sim_program *p;
	uint32_t a, out, t;

	kb_init(b, "overlap");
	a = kb_param(b, "a", F32, 2, SH(G * TP, TF));
	out = kb_out(b, "out", F32, 2, SH(TP, TF));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(TP, TF));
	b->k.n_grid = 1;
	b->k.grid[0] = G;
	kb_op1(b, OPK(LOAD), kb_full2(b, t), kb_acc(b, a, 2, SH(TP, TF),
	    kb_aff(b, 0, 2, P, 0, (int64_t)TP, X, 0, (int64_t)1), AX(0, 1)));
	kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, t));
	p = kb_program(b);
	ck_assert_ptr_null(p->par);
	in = kb_host(F32, 2, SH(G * TP, TF), x);
	kb_same_bits(p, &in, 1, &o, 1);
	z = o.data;
	for (size_t i = 0; i < TP * TF; i++)
		ck_assert_float_eq(z[i], x[(G - 1) * TP * TF + i]);
	sim_tensors_release(&o, 1);
	sim_program_free(p);
	free(x);
	kb_release(b);
}
END_TEST

/* A loop spread over threads leaves its tiles as the last iteration left
 * them: a store after the loop sees them. */
CHECK_TEST(par, test_sim_par_loop_tiles_after)
{
	enum { N = 8, TP = 128, TF = 512 };
	struct kb kb, *b = &kb;
	float *x = kb_randf(N * TP * TF, 8), *z;
	struct sim_tensor in, o[2];
	struct sim_program *p;
	uint32_t a, out, last, t, u, v;
	Nkir__V1__Op *op;

	kb_init(b, "tiles_after");
	a = kb_param(b, "a", F32, 2, SH(N * TP, TF));
	out = kb_out(b, "out", F32, 2, SH(N * TP, TF));
	last = kb_out(b, "last", F32, 2, SH(TP, TF));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(TP, TF));
	u = kb_tile(b, "u", SBUF, F32, 2, SH(TP, TF));
	v = kb_tile(b, "v", SBUF, F32, 2, SH(TP, TF));
	kb_loop(b, 0, 0, N, 1);
	kb_op1(b, OPK(LOAD), kb_full2(b, t), kb_acc(b, a, 2, SH(TP, TF),
	    kb_aff(b, 0, 2, L, 0, (int64_t)TP, X, 0, (int64_t)1), AX(0, 1)));
	op = kb_op1(b, OPK(TENSOR_TENSOR), kb_full2(b, u), kb_full2(b, t));
	kb_src(b, op, kb_full2(b, t));
	op->alu = NKIR__V1__ALU_OP__ALU_ADD;
	kb_op1(b, OPK(STORE), kb_acc(b, out, 2, SH(TP, TF),
	    kb_aff(b, 0, 2, L, 0, (int64_t)TP, X, 0, (int64_t)1), AX(0, 1)),
	    kb_full2(b, u));
	kb_end(b);
	/* (a store of t itself would put t in last's memory: shared) */
	op = kb_op1(b, OPK(TENSOR_TENSOR), kb_full2(b, v), kb_full2(b, t));
	kb_scalar(b, op, 1.0);
	op->alu = NKIR__V1__ALU_OP__ALU_MULTIPLY;
	kb_op1(b, OPK(STORE), kb_full2(b, last), kb_full2(b, v));
	p = kb_program(b);
	ck_assert_ptr_nonnull(p->body[0].par);
	in = kb_host(F32, 2, SH(N * TP, TF), x);
	kb_same_bits(p, &in, 1, o, 2);
	z = o[0].data;
	for (size_t i = 0; i < N * TP * TF; i++)
		ck_assert_float_eq(z[i], x[i] + x[i]);
	z = o[1].data;
	for (size_t i = 0; i < TP * TF; i++)
		ck_assert_float_eq(z[i], x[(N - 1) * TP * TF + i]);
	sim_tensors_release(o, 2);
	sim_program_free(p);
	free(x);
	kb_release(b);
}
END_TEST

/* Large ops split by rows (load, exp, reduce, store) and a matmul split
 * by columns: the same bits as on one thread. */
CHECK_TEST(par, test_sim_par_op_splits)
{
	enum { TP = 128, F = 8192, K = 128, N = 512 };
	struct kb kb, *b = &kb;
	float *x = kb_randf(TP * F, 9), *l = kb_randf(K * TP, 10);
	float *r = kb_randf(K * N, 11);
	struct sim_tensor in[3], o[3];
	struct sim_program *p;
	uint32_t a, lt, rt, eo, so, mo, t, e, s, tl, tr, ps, res;
	Nkir__V1__Op *op;

	for (size_t i = 0; i < TP * F; i++)
		x[i] /= 64.0f;
	kb_init(b, "splits");
	a = kb_param(b, "a", F32, 2, SH(TP, F));
	lt = kb_param(b, "lhsT", F32, 2, SH(K, TP));
	rt = kb_param(b, "rhs", F32, 2, SH(K, N));
	eo = kb_out(b, "e", F32, 2, SH(TP, F));
	so = kb_out(b, "s", F32, 2, SH(TP, 1));
	mo = kb_out(b, "m", F32, 2, SH(TP, N));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(TP, F));
	e = kb_tile(b, "et", SBUF, F32, 2, SH(TP, F));
	s = kb_tile(b, "st", SBUF, F32, 2, SH(TP, 1));
	tl = kb_tile(b, "tl", SBUF, F32, 2, SH(K, TP));
	tr = kb_tile(b, "tr", SBUF, F32, 2, SH(K, N));
	ps = kb_tile(b, "ps", PSUM, F32, 2, SH(TP, N));
	res = kb_tile(b, "res", SBUF, F32, 2, SH(TP, N));
	kb_op1(b, OPK(LOAD), kb_full2(b, t), kb_acc(b, a, 2, SH(TP, F),
	    AX(0, 0), AX(0, 1)));
	op = kb_op1(b, OPK(ACTIVATION), kb_full2(b, e), kb_full2(b, t));
	op->act = NKIR__V1__ACT_FUNC__ACT_EXP;
	op = kb_op1(b, OPK(REDUCE), kb_full2(b, s), kb_full2(b, e));
	op->alu = NKIR__V1__ALU_OP__ALU_ADD;
	op->axes[op->n_axes++] = 1;
	kb_op1(b, OPK(STORE), kb_full2(b, eo), kb_full2(b, e));
	kb_op1(b, OPK(STORE), kb_full2(b, so), kb_full2(b, s));
	kb_op1(b, OPK(LOAD), kb_full2(b, tl), kb_full2(b, lt));
	kb_op1(b, OPK(LOAD), kb_full2(b, tr), kb_full2(b, rt));
	op = kb_op1(b, OPK(MATMUL), kb_full2(b, ps), kb_full2(b, tl));
	kb_src(b, op, kb_full2(b, tr));
	op->transpose_x = true;
	kb_op1(b, OPK(COPY), kb_full2(b, res), kb_full2(b, ps));
	kb_op1(b, OPK(STORE), kb_full2(b, mo), kb_full2(b, res));
	p = kb_program(b);
	ck_assert(p->body[1].par_split && p->body[2].par_split &&
	    p->body[7].par_split);
	in[0] = kb_host(F32, 2, SH(TP, F), x);
	in[1] = kb_host(F32, 2, SH(K, TP), l);
	in[2] = kb_host(F32, 2, SH(K, N), r);
	kb_same_bits(p, in, 3, o, 3);
	for (size_t i = 0; i < TP * F; i++)
		ck_assert_float_eq_tol(((float *)o[0].data)[i], expf(x[i]),
		    2e-7f * expf(x[i]));
	sim_tensors_release(o, 3);
	sim_program_free(p);
	free(x);
	free(l);
	free(r);
	kb_release(b);
}
END_TEST

/* Iterations 5 to 7 of a spread loop fail: the error is iteration 5's,
 * the one the sequential order meets first. */
CHECK_TEST(par, test_sim_par_first_error_wins)
{
	enum { N = 8, TP = 128, TF = 1024, ROWS = 5 * TP };
	struct kb kb, *b = &kb;
	float *x = kb_randf(ROWS * TF, 12);
	struct sim_tensor in, o;
	struct sim_program *p;
	struct sim_run_opts opts;
	struct sim_diag d;
	Nkir__V1__Access *src;
	uint32_t a, out, t;

	kb_init(b, "first_error");
	a = kb_param(b, "a", F32, 2, SH(ROWS, TF));
	out = kb_out(b, "out", F32, 2, SH(N * TP, TF));
	t = kb_tile(b, "t", SBUF, F32, 2, SH(TP, TF));
	kb_loop(b, 0, 0, N, 1);
	kb_alloc_op(b, t, NKIR__V1__FILL__FILL_ZERO, 0);
	src = kb_acc(b, a, 2, SH(TP, TF), kb_aff(b, 0, 2, L, 0, (int64_t)TP,
	    X, 0, (int64_t)1), AX(0, 1));
	/* row < 1000: kept (fails on the last rows), lets 640.. through */
	kb_mask(b, src, kb_aff(b, 999, 2, L, 0, (int64_t)-TP, X, 0,
	    (int64_t)-1));
	b->line = 21;
	kb_op1(b, OPK(LOAD), kb_full2(b, t), src);
	b->line = 22;
	kb_op1(b, OPK(STORE), kb_acc(b, out, 2, SH(TP, TF),
	    kb_aff(b, 0, 2, L, 0, (int64_t)TP, X, 0, (int64_t)1), AX(0, 1)),
	    kb_full2(b, t));
	kb_end(b);
	p = kb_program(b);
	ck_assert_ptr_nonnull(p->body[0].par);
	in = kb_host(F32, 2, SH(ROWS, TF), x);
	for (unsigned threads = 1; threads <= 4; threads++) {
		memset(&opts, 0, sizeof(opts));
		opts.threads = threads;
		ck_assert_int_eq(sim_run(p, &in, 1, &o, 1, &opts, &d),
		    SIM_ERUNTIME);
		ck_assert_str_eq(d.msg, "Out-of-bound access for tensor `a` "
		    "on dimension 0: index 640 exceed dimension size of 640 "
		    "(kernel.py:21)");
	}
	sim_program_free(p);
	free(x);
	kb_release(b);
}
END_TEST

struct kb_pool_count {
	unsigned n;
	_Atomic unsigned hits[64];
	_Atomic unsigned slots;
};

static void
kb_pool_count_cb(void *arg, unsigned task, unsigned slot)
{
	struct kb_pool_count *c = arg;

	ck_assert_uint_lt(task, c->n);
	ck_assert_uint_lt(slot, SIM_POOL_MAX);
	c->hits[task]++;
	c->slots |= 1u << (slot % 32);
}

static void *
kb_pool_caller(void *arg)
{
	for (int i = 0; i < 200; i++)
		sim_pool_run(4, 64, kb_pool_count_cb, arg);
	return NULL;
}

/* Every task runs once per call, from several callers at once. */
CHECK_TEST(par, test_sim_par_pool_tasks_once)
{
	struct kb_pool_count c[3];
	pthread_t tid[3];

	for (int i = 0; i < 3; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].n = 64;
		ck_assert_int_eq(pthread_create(&tid[i], NULL, kb_pool_caller,
		    &c[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(tid[i], NULL);
		for (unsigned t = 0; t < 64; t++)
			ck_assert_uint_eq(c[i].hits[t], 200);
		ck_assert_uint_ne(c[i].slots & 1, 0);	/* the caller's */
	}
	memset(&c[0], 0, sizeof(c[0]));
	c[0].n = 1;
	sim_pool_run(1, 1, kb_pool_count_cb, &c[0]);
	ck_assert_uint_eq(c[0].hits[0], 1);
	ck_assert_uint_eq(c[0].slots, 1);
}
END_TEST
