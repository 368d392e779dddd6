/*
 * check_sim_op06.c: unit tests of NKI 0.6's op kinds in the executor
 * (sim/sim_op06_plan.c, sim/sim_op06_exec.c): OP_DYN_LOOP kernels built
 * with protobuf-c structs, compiled, loaded and run.
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

CHECK_SUITE("sim_op06", NULL, NULL, NULL);
CHECK_TCASE(core, 60);
CHECK_TCASE(errors, 60);

#define NMEM	256
#define F32	NKIR__V1__DTYPE__DT_FLOAT32
#define I32	NKIR__V1__DTYPE__DT_INT32
#define OPK(x)	NKIR__V1__OP_KIND__OP_##x

/* A kernel: n [1, 1] int32 -> out [1, 1] float32 = 2.5 * n, by a
 * dynamic loop on a counter tile (the shape nl.while_loop traces). */
struct k06 {
	Nkir__V1__Kernel	 k;
	void			*mem[NMEM];
	size_t			 nmem;
};

static void *
k06_alloc(struct k06 *b, size_t n)
{
	void	*p = calloc(1, n);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_lt(b->nmem, NMEM);
	b->mem[b->nmem++] = p;
	return (p);
}

static void
k06_release(struct k06 *b)
{
	size_t	i;

	for (i = 0; i < b->nmem; i++)
		free(b->mem[i]);
}

static Nkir__V1__Loc *
k06_loc(struct k06 *b, uint32_t line)
{
	Nkir__V1__Loc	*l = k06_alloc(b, sizeof(*l));

	nkir__v1__loc__init(l);
	l->line = line;
	return (l);
}

static uint32_t
k06_tensor(struct k06 *b, int kind, int space, int dtype, uint64_t n0)
{
	Nkir__V1__Tensor	*t = k06_alloc(b, sizeof(*t));

	nkir__v1__tensor__init(t);
	t->name = "t";
	t->kind = kind;
	t->space = space;
	t->dtype = dtype;
	t->n_shape = 2;
	t->shape = k06_alloc(b, 2 * sizeof(uint64_t));
	t->shape[0] = n0;
	t->shape[1] = 1;
	t->loc = k06_loc(b, 1);
	b->k.tensors[b->k.n_tensors] = t;
	return ((uint32_t)b->k.n_tensors++);
}

/* The access [0:n0, 0:1] of tensor t. */
static Nkir__V1__Access *
k06_acc(struct k06 *b, uint32_t t, uint64_t n0)
{
	Nkir__V1__Access	*a = k06_alloc(b, sizeof(*a));
	Nkir__V1__Term		*tm = k06_alloc(b, sizeof(*tm));
	int			 d;

	nkir__v1__access__init(a);
	a->tensor = t;
	a->n_shape = 2;
	a->shape = k06_alloc(b, 2 * sizeof(uint64_t));
	a->shape[0] = n0;
	a->shape[1] = 1;
	a->n_index = 2;
	a->index = k06_alloc(b, 2 * sizeof(void *));
	nkir__v1__term__init(tm);
	tm->kind = NKIR__V1__TERM_KIND__TERM_AXIS;
	tm->coef = 1;
	for (d = 0; d < 2; d++) {
		a->index[d] = k06_alloc(b, sizeof(Nkir__V1__Affine));
		nkir__v1__affine__init(a->index[d]);
	}
	a->index[0]->n_terms = 1;
	a->index[0]->terms = k06_alloc(b, sizeof(void *));
	a->index[0]->terms[0] = tm;
	return (a);
}

static Nkir__V1__Op *
k06_op(struct k06 *b, Nkir__V1__Op ***body, size_t *n, int kind,
    Nkir__V1__Access *dst, uint32_t line)
{
	Nkir__V1__Op	*o = k06_alloc(b, sizeof(*o));

	nkir__v1__op__init(o);
	o->kind = kind;
	o->loc = k06_loc(b, line);
	o->dst = dst;
	o->src = k06_alloc(b, 3 * sizeof(void *));
	o->scale = 1.0;
	o->acc_dtype = F32;
	(*body)[(*n)++] = o;
	return (o);
}

static void
k06_src(struct k06 *b, Nkir__V1__Op *o, Nkir__V1__Access *a, double scalar)
{
	Nkir__V1__Operand	*s = k06_alloc(b, sizeof(*s));

	nkir__v1__operand__init(s);
	if (a != NULL) {
		s->value_case = NKIR__V1__OPERAND__VALUE_ACCESS;
		s->access = a;
	} else {
		s->value_case = NKIR__V1__OPERAND__VALUE_SCALAR;
		s->scalar = scalar;
	}
	o->src[o->n_src++] = s;
}

/* The kernel; cond_rows > 1 or cond_hbm make the condition invalid,
 * decrement 0 makes the loop endless. Returns the loop op. */
static Nkir__V1__Op *
k06_build(struct k06 *b, uint64_t cond_rows, int cond_hbm, double decrement)
{
	static char		*files[] = { "kernel.py" };
	Nkir__V1__Op		*o, *lp;
	Nkir__V1__Loop		*l;
	uint32_t		 n, out, cnt, acc;

	memset(b, 0, sizeof(*b));
	nkir__v1__kernel__init(&b->k);
	b->k.name = "dyn";
	b->k.files = files;
	b->k.n_files = 1;
	b->k.loc = k06_loc(b, 1);
	b->k.tensors = k06_alloc(b, 8 * sizeof(void *));
	b->k.params = k06_alloc(b, 2 * sizeof(void *));
	b->k.outputs = k06_alloc(b, 2 * sizeof(uint32_t));
	b->k.body = k06_alloc(b, 8 * sizeof(void *));
	n = k06_tensor(b, NKIR__V1__TENSOR_KIND__TENSOR_PARAM,
	    NKIR__V1__SPACE__SPACE_HBM, I32, 1);
	b->k.params[0] = k06_alloc(b, sizeof(Nkir__V1__Param));
	nkir__v1__param__init(b->k.params[0]);
	b->k.params[0]->name = "n";
	b->k.params[0]->tensor = n;
	b->k.n_params = 1;
	out = k06_tensor(b, NKIR__V1__TENSOR_KIND__TENSOR_HBM,
	    NKIR__V1__SPACE__SPACE_SHARED_HBM, F32, 1);
	b->k.outputs[b->k.n_outputs++] = out;
	cnt = k06_tensor(b, NKIR__V1__TENSOR_KIND__TENSOR_TILE,
	    NKIR__V1__SPACE__SPACE_SBUF, I32, cond_rows);
	acc = k06_tensor(b, NKIR__V1__TENSOR_KIND__TENSOR_TILE,
	    NKIR__V1__SPACE__SPACE_SBUF, F32, 1);

	o = k06_op(b, &b->k.body, &b->k.n_body, OPK(LOAD),
	    k06_acc(b, cnt, 1), 10);
	k06_src(b, o, k06_acc(b, n, 1), 0);
	o = k06_op(b, &b->k.body, &b->k.n_body, OPK(ALLOC),
	    k06_acc(b, acc, 1), 11);
	o->fill = NKIR__V1__FILL__FILL_ZERO;

	lp = k06_op(b, &b->k.body, &b->k.n_body, OPK(DYN_LOOP), NULL, 12);
	k06_src(b, lp, cond_hbm ? k06_acc(b, n, 1) :
	    k06_acc(b, cnt, cond_rows), 0);
	l = k06_alloc(b, sizeof(*l));
	nkir__v1__loop__init(l);
	l->kind = NKIR__V1__LOOP_KIND__LOOP_SEQUENTIAL;
	l->stop = 1;
	l->step = 1;
	l->body = k06_alloc(b, 4 * sizeof(void *));
	lp->loop = l;
	o = k06_op(b, &l->body, &l->n_body, OPK(TENSOR_TENSOR),
	    k06_acc(b, acc, 1), 13);
	o->alu = NKIR__V1__ALU_OP__ALU_ADD;
	k06_src(b, o, k06_acc(b, acc, 1), 0);
	k06_src(b, o, NULL, 2.5);
	o = k06_op(b, &l->body, &l->n_body, OPK(TENSOR_TENSOR),
	    k06_acc(b, cnt, 1), 14);
	o->alu = NKIR__V1__ALU_OP__ALU_SUBTRACT;
	k06_src(b, o, k06_acc(b, cnt, 1), 0);
	k06_src(b, o, NULL, decrement);

	o = k06_op(b, &b->k.body, &b->k.n_body, OPK(STORE),
	    k06_acc(b, out, 1), 15);
	k06_src(b, o, k06_acc(b, acc, 1), 0);
	return (lp);
}

/* Compile and load b; the sim code, diag's message on failure. */
static int
k06_program(struct k06 *b, struct sim_program **p, struct sim_diag *d)
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

/* Run p on n; *out the result, or the sim code. */
static int
k06_run(struct sim_program *p, int32_t n, float *out, struct sim_diag *d)
{
	struct sim_tensor	 in, o;
	int			 rc;

	memset(&in, 0, sizeof(in));
	in.dtype = SIM_DT_INT32;
	in.rank = 2;
	in.shape[0] = in.shape[1] = 1;
	in.data = &n;
	in.nbytes = 4;
	rc = sim_run(p, &in, 1, &o, 1, NULL, d);
	if (rc == 0) {
		*out = ((float *)o.data)[0];
		sim_tensors_release(&o, 1);
	}
	return (rc);
}

CHECK_TEST(core, test_sim_op06_dyn_loop_trips)
{
	struct k06		 b;
	struct sim_program	*p;
	struct sim_diag		 d;
	float			 v;
	int32_t			 n;

	k06_build(&b, 1, 0, 1.0);
	ck_assert_msg(k06_program(&b, &p, &d) == 0, "%s", d.msg);
	for (n = 0; n < 8; n += 3) {
		ck_assert_msg(k06_run(p, n, &v, &d) == 0, "%s", d.msg);
		ck_assert_float_eq(v, 2.5f * (float)n);
	}
	sim_program_free(p);
	k06_release(&b);
}

CHECK_TEST(core, test_sim_op06_dyn_loop_condition_read_each_trip)
{
	struct k06		 b;
	struct sim_program	*p;
	struct sim_diag		 d;
	float			 v;

	/* decrement by 2: 6 -> 4 -> 2 -> 0 is three trips; 5 -> 3 -> 1 ->
	 * -1 ... never 0, so it runs into the executor's bound */
	k06_build(&b, 1, 0, 2.0);
	ck_assert_msg(k06_program(&b, &p, &d) == 0, "%s", d.msg);
	ck_assert_msg(k06_run(p, 6, &v, &d) == 0, "%s", d.msg);
	ck_assert_float_eq(v, 7.5f);
	ck_assert_int_eq(k06_run(p, 5, &v, &d), SIM_ERUNTIME);
	ck_assert_msg(strstr(d.msg, "dynamic loop did not end after 1048576 "
	    "trips (its condition register is still") != NULL, "%s", d.msg);
	ck_assert_msg(strstr(d.msg, "kernel.py:12") != NULL, "%s", d.msg);
	sim_program_free(p);
	k06_release(&b);
}

CHECK_TEST(errors, test_sim_op06_dyn_loop_condition_one_element)
{
	struct k06		 b;
	struct sim_program	*p;
	struct sim_diag		 d;

	k06_build(&b, 2, 0, 1.0);
	ck_assert_int_eq(k06_program(&b, &p, &d), SIM_EINVAL);
	ck_assert_msg(strstr(d.msg, "the condition register of a dynamic loop "
	    "must be one element, got 2 (kernel.py:12)") != NULL, "%s", d.msg);
	sim_program_free(p);
	k06_release(&b);
}

CHECK_TEST(errors, test_sim_op06_dyn_loop_condition_in_sbuf)
{
	struct k06		 b;
	struct sim_program	*p;
	struct sim_diag		 d;

	k06_build(&b, 1, 1, 1.0);
	ck_assert_int_eq(k06_program(&b, &p, &d), SIM_EINVAL);
	ck_assert_msg(strstr(d.msg, "condition") != NULL &&
	    strstr(d.msg, "kernel.py:12") != NULL, "%s", d.msg);
	sim_program_free(p);
	k06_release(&b);
}

CHECK_TEST(errors, test_sim_op06_dyn_loop_needs_body)
{
	struct k06		 b;
	struct sim_program	*p;
	struct sim_diag		 d;
	Nkir__V1__Op		*lp;

	lp = k06_build(&b, 1, 0, 1.0);
	lp->loop = NULL;
	ck_assert_int_eq(k06_program(&b, &p, &d), SIM_EPARSE);
	ck_assert_msg(strstr(d.msg, "dynamic loop op has no body") != NULL,
	    "%s", d.msg);
	sim_program_free(p);
	k06_release(&b);
}
