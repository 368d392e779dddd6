/*
 * check_sim_ti.c: unit tests of Tensor Indirection in the executor
 * (sim/sim_op06_ti.c): OP_TI_GATHER and OP_TI_SCATTER kernels built with
 * the kernel builder, compiled, run and compared to the reference; their
 * limits refused at plan time and bad offsets at run time, with
 * file:line.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim.h"
#include "sim/sim_impl.h"
#include "tests/unit/check_main.h"
#include "tests/unit/sim_kb.h"

CHECK_SUITE("sim_ti", NULL, NULL, NULL);
CHECK_TCASE(core, 60);
CHECK_TCASE(errors, 60);

#define TP	32		/* partitions */
#define TF	24		/* the tensor's free elements */
#define TK	2		/* the index's columns */

/*
 * out [TP, N] <- x [TP, TF] gathered at the offsets of idx [TP, TK] (op
 * engine eng), or, when scatter, out [TP, TF] <- x with the columns at
 * those offsets set from y [TP, N].
 */
static void
ti_kernel(struct kb *b, bool scatter, uint64_t N, int eng, int idt)
{
	uint32_t	x, y = 0, idx, out, tx, ty = 0, ti, to;
	Nkir__V1__Op	*o;

	kb_init(b, "ti");
	x = kb_param(b, "x", F32, 2, SH(TP, TF));
	if (scatter)
		y = kb_param(b, "y", F32, 2, SH(TP, N));
	idx = kb_param(b, "idx", idt, 2, SH(TP, TK));
	out = kb_out(b, "out", F32, 2, scatter ? SH(TP, TF) : SH(TP, N));
	tx = kb_tile(b, "t", SBUF, F32, 2, SH(TP, TF));
	ti = kb_tile(b, "ix", SBUF, idt, 2, SH(TP, TK));
	kb_op1(b, OPK(LOAD), kb_full2(b, tx), kb_full2(b, x));
	kb_op1(b, OPK(LOAD), kb_full2(b, ti), kb_full2(b, idx));
	b->line = 20;
	if (scatter) {
		ty = kb_tile(b, "s", SBUF, F32, 2, SH(TP, N));
		kb_op1(b, OPK(LOAD), kb_full2(b, ty), kb_full2(b, y));
		o = kb_op1(b, OPK(TI_SCATTER), kb_full2(b, tx),
		    kb_full2(b, ty));
		kb_src(b, o, kb_full2(b, ti));
		o->engine = eng;
		b->line = 30;
		kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, tx));
		return;
	}
	to = kb_tile(b, "g", SBUF, F32, 2, SH(TP, N));
	o = kb_op1(b, OPK(TI_GATHER), kb_full2(b, to), kb_full2(b, tx));
	kb_src(b, o, kb_full2(b, ti));
	o->engine = eng;
	b->line = 30;
	kb_op1(b, OPK(STORE), kb_full2(b, out), kb_full2(b, to));
}

/* Run b on x [TP, TF], idx and y; the code, out in *o, diag in *d. */
static int
ti_run(struct kb *b, bool scatter, uint64_t N, const float *x,
    const int32_t *idx, const float *y, struct sim_tensor *o,
    struct sim_diag *d)
{
	struct sim_program	*p = kb_program(b);
	struct sim_tensor	 in[3];
	size_t			 n = 0;
	int			 rc;

	in[n++] = kb_host(F32, 2, SH(TP, TF), (void *)x);
	if (scatter)
		in[n++] = kb_host(F32, 2, SH(TP, N), (void *)y);
	in[n++] = kb_host(I32, 2, SH(TP, TK), (void *)idx);
	rc = sim_run(p, in, n, o, 1, NULL, d);
	sim_program_free(p);
	return (rc);
}

/* Offset i of idx in NKI's layout: idx[i % G, i / G]. */
static int32_t
ti_off(const int32_t *idx, uint64_t i, uint64_t G)
{
	return (idx[(i % G) * TK + i / G]);
}

static void
ti_fill(float *x, int32_t *idx, float *y, uint64_t N)
{
	uint64_t	i;

	for (i = 0; i < TP * TF; i++)
		x[i] = (float)i * 0.5f;
	for (i = 0; i < TP * TK; i++)
		idx[i] = (int32_t)((i * 7 + 3) % TF);
	for (i = 0; i < TP * N; i++)
		y[i] = -1.0f - (float)i;
}

CHECK_TEST(core, test_sim_ti_gather_vector_and_tensor_groups)
{
	static const int	 engs[] = { NKIR__V1__ENGINE__ENGINE_VECTOR,
				    NKIR__V1__ENGINE__ENGINE_TENSOR };
	static const uint64_t	 ns[] = { 1, 16, 20, 32, 40 };
	float			 x[TP * TF], y[TP * 64];
	int32_t			 idx[TP * TK];
	struct sim_tensor	 o;
	struct sim_diag		 d;
	struct kb		 b;
	uint64_t		 G, N, p, i;
	size_t			 e, k;

	for (e = 0; e < 2; e++)
		for (k = 0; k < sizeof ns / sizeof ns[0]; k++) {
			N = ns[k];
			G = e ? 32 : 16;
			if ((N - 1) / G >= TK)
				continue;
			ti_fill(x, idx, y, N);
			ti_kernel(&b, false, N, engs[e], I32);
			ck_assert_int_eq(ti_run(&b, false, N, x, idx, NULL, &o,
			    &d), 0);
			for (p = 0; p < TP; p++)
				for (i = 0; i < N; i++)
					ck_assert_float_eq(
					    ((float *)o.data)[p * N + i],
					    x[p * TF + ti_off(idx, i, G)]);
			sim_tensors_release(&o, 1);
			kb_release(&b);
		}
}

CHECK_TEST(core, test_sim_ti_scatter_keeps_other_columns)
{
	float			 x[TP * TF], y[TP * 20], want[TP * TF];
	int32_t			 idx[TP * TK];
	struct sim_tensor	 o;
	struct sim_diag		 d;
	struct kb		 b;
	uint64_t		 p, i;

	ti_fill(x, idx, y, 20);
	idx[2 * TK] = idx[0];		/* offsets 0 and 2: the same column */
	memcpy(want, x, sizeof want);
	for (i = 0; i < 20; i++)
		for (p = 0; p < TP; p++)
			want[p * TF + ti_off(idx, i, 16)] = y[p * 20 + i];
	ti_kernel(&b, true, 20, NKIR__V1__ENGINE__ENGINE_SCALAR, I32);
	ck_assert_int_eq(ti_run(&b, true, 20, x, idx, y, &o, &d), 0);
	for (i = 0; i < TP * TF; i++)
		ck_assert_float_eq(((float *)o.data)[i], want[i]);
	sim_tensors_release(&o, 1);
	kb_release(&b);
}

CHECK_TEST(errors, test_sim_ti_offset_out_of_bounds_fails_the_run)
{
	float			 x[TP * TF], y[TP * 16];
	int32_t			 idx[TP * TK];
	struct sim_tensor	 o;
	struct sim_diag		 d;
	struct kb		 b;

	ti_fill(x, idx, y, 16);
	idx[3 * TK + 0] = TF;		/* offset 3 */
	ti_kernel(&b, false, 16, 0, I32);
	ck_assert_int_eq(ti_run(&b, false, 16, x, idx, NULL, &o, &d),
	    SIM_ERUNTIME);
	ck_assert_str_eq(d.msg, "tensor indirection: offset 24 at index[3, 0] "
	    "(offset 3) is out of bounds for the 24 elements per partition of "
	    "`t` (kernel.py:20)");
	kb_release(&b);
	idx[3 * TK + 0] = -2;
	ti_kernel(&b, true, 16, 0, I32);
	ck_assert_int_eq(ti_run(&b, true, 16, x, idx, y, &o, &d),
	    SIM_ERUNTIME);
	ck_assert_ptr_nonnull(strstr(d.msg, "offset -2 at index[3, 0]"));
	kb_release(&b);
}

CHECK_TEST(errors, test_sim_ti_limits_at_plan_time)
{
	struct kb	b;

	/* 40 offsets of the vector group need index[16, 3] */
	ti_kernel(&b, false, 40, NKIR__V1__ENGINE__ENGINE_VECTOR, I32);
	kb_expect_error(&b, SIM_EINVAL, "'indirect': 40 offsets at index[i % "
	    "16, i // 16] need an index of at least [16, 3], got [32, 2] "
	    "(kernel.py:20)");
	kb_release(&b);
	ti_kernel(&b, false, 16, 0, F32);
	kb_expect_error(&b, SIM_EINVAL, "'indirect': the index `ix` must be an "
	    "integer tile, got float32 (kernel.py:20)");
	kb_release(&b);
}
