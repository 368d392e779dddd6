/*
 * check_sim_op06.c: unit tests of NKI 0.6's op kinds in the executor
 * (sim/sim_op06_plan.c, sim/sim_op06_exec.c): OP_DYN_LOOP kernels built
 * with the kernel builder (sim_kb.h), compiled, loaded and run.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim.h"
#include "sim/sim_impl.h"
#include "tests/unit/check_main.h"
#include "tests/unit/sim_kb.h"

CHECK_SUITE("sim_op06", NULL, NULL, NULL);
CHECK_TCASE(core, 60);
CHECK_TCASE(errors, 60);

/* The access [0:n0, 0:1] of tensor t (its column index a constant 0). */
static Nkir__V1__Access *
op06_acc(struct kb *b, uint32_t t, uint64_t n0)
{
	return (kb_acc(b, t, 2, SH(n0, 1), AX(0, 0), kb_aff(b, 0, 0)));
}

/*
 * The kernel: n [1, 1] int32 -> out [1, 1] float32 = 2.5 * n, by a
 * dynamic loop on a counter tile (the shape nl.while_loop traces);
 * cond_rows > 1 or cond_hbm make the condition invalid, decrement 0 makes
 * the loop endless. Returns the loop op.
 */
static Nkir__V1__Op *
op06_kernel(struct kb *b, uint64_t cond_rows, bool cond_hbm,
    double decrement)
{
	Nkir__V1__Op	*o, *lp;
	uint32_t	 n, out, cnt, acc;

	kb_init(b, "dyn");
	b->line = 1;
	n = kb_param(b, "n", I32, 2, SH(1, 1));
	out = kb_out(b, "t", F32, 2, SH(1, 1));
	cnt = kb_tile(b, "t", SBUF, I32, 2, SH(cond_rows, 1));
	acc = kb_tile(b, "t", SBUF, F32, 2, SH(1, 1));
	b->line = 10;
	kb_op1(b, OPK(LOAD), op06_acc(b, cnt, 1), op06_acc(b, n, 1));
	b->line = 11;
	o = kb_op(b, OPK(ALLOC), op06_acc(b, acc, 1));
	o->fill = NKIR__V1__FILL__FILL_ZERO;
	b->line = 12;
	lp = kb_dyn_loop(b, cond_hbm ? op06_acc(b, n, 1) :
	    op06_acc(b, cnt, cond_rows));
	b->line = 13;
	o = kb_op1(b, OPK(TENSOR_TENSOR), op06_acc(b, acc, 1),
	    op06_acc(b, acc, 1));
	o->alu = NKIR__V1__ALU_OP__ALU_ADD;
	kb_scalar(b, o, 2.5);
	b->line = 14;
	o = kb_op1(b, OPK(TENSOR_TENSOR), op06_acc(b, cnt, 1),
	    op06_acc(b, cnt, 1));
	o->alu = NKIR__V1__ALU_OP__ALU_SUBTRACT;
	kb_scalar(b, o, decrement);
	kb_end(b);
	b->line = 15;
	kb_op1(b, OPK(STORE), op06_acc(b, out, 1), op06_acc(b, acc, 1));
	return (lp);
}

/* Run p on n; *out the result, or the sim code. */
static int
op06_run(struct sim_program *p, int32_t n, float *out, struct sim_diag *d)
{
	struct sim_tensor	 in, o;
	int			 rc;

	in = kb_host(SIM_DT_INT32, 2, SH(1, 1), &n);
	rc = sim_run(p, &in, 1, &o, 1, NULL, d);
	if (rc == 0) {
		*out = ((float *)o.data)[0];
		sim_tensors_release(&o, 1);
	}
	return (rc);
}

CHECK_TEST(core, test_sim_op06_dyn_loop_trips)
{
	struct kb		 b;
	struct sim_program	*p;
	struct sim_diag		 d;
	float			 v;
	int32_t			 n;

	op06_kernel(&b, 1, false, 1.0);
	ck_assert_msg(kb_build(&b, &p, &d) == 0, "%s", d.msg);
	for (n = 0; n < 8; n += 3) {
		ck_assert_msg(op06_run(p, n, &v, &d) == 0, "%s", d.msg);
		ck_assert_float_eq(v, 2.5f * (float)n);
	}
	sim_program_free(p);
	kb_release(&b);
}

CHECK_TEST(core, test_sim_op06_dyn_loop_condition_read_each_trip)
{
	struct kb		 b;
	struct sim_program	*p;
	struct sim_diag		 d;
	float			 v;

	/* decrement by 2: 6 -> 4 -> 2 -> 0 is three trips; 5 -> 3 -> 1 ->
	 * -1 ... never 0, so it runs into the executor's bound */
	op06_kernel(&b, 1, false, 2.0);
	ck_assert_msg(kb_build(&b, &p, &d) == 0, "%s", d.msg);
	ck_assert_msg(op06_run(p, 6, &v, &d) == 0, "%s", d.msg);
	ck_assert_float_eq(v, 7.5f);
	ck_assert_int_eq(op06_run(p, 5, &v, &d), SIM_ERUNTIME);
	ck_assert_msg(strstr(d.msg, "dynamic loop did not end after 1048576 "
	    "trips (its condition register is still") != NULL, "%s", d.msg);
	ck_assert_msg(strstr(d.msg, "kernel.py:12") != NULL, "%s", d.msg);
	sim_program_free(p);
	kb_release(&b);
}

CHECK_TEST(errors, test_sim_op06_dyn_loop_condition_one_element)
{
	struct kb		 b;
	struct sim_program	*p;
	struct sim_diag		 d;

	op06_kernel(&b, 2, false, 1.0);
	ck_assert_int_eq(kb_build(&b, &p, &d), SIM_EINVAL);
	ck_assert_msg(strstr(d.msg, "the condition register of a dynamic loop "
	    "must be one element, got 2 (kernel.py:12)") != NULL, "%s", d.msg);
	sim_program_free(p);
	kb_release(&b);
}

CHECK_TEST(errors, test_sim_op06_dyn_loop_condition_in_sbuf)
{
	struct kb		 b;
	struct sim_program	*p;
	struct sim_diag		 d;

	op06_kernel(&b, 1, true, 1.0);
	ck_assert_int_eq(kb_build(&b, &p, &d), SIM_EINVAL);
	ck_assert_msg(strstr(d.msg, "condition") != NULL &&
	    strstr(d.msg, "kernel.py:12") != NULL, "%s", d.msg);
	sim_program_free(p);
	kb_release(&b);
}

CHECK_TEST(errors, test_sim_op06_dyn_loop_needs_body)
{
	struct kb		 b;
	struct sim_program	*p;
	struct sim_diag		 d;
	Nkir__V1__Op		*lp;

	lp = op06_kernel(&b, 1, false, 1.0);
	lp->loop = NULL;
	ck_assert_int_eq(kb_build(&b, &p, &d), SIM_EPARSE);
	ck_assert_msg(strstr(d.msg, "dynamic loop op has no body") != NULL,
	    "%s", d.msg);
	sim_program_free(p);
	kb_release(&b);
}
