/* sim_kb.c: the kernel builder of the sim/ unit suites (sim_kb.h). */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim.h"
#include "sim/sim_impl.h"
#include "tests/unit/sim_kb.h"

static void *
kb_alloc(struct kb *b, size_t n)
{
	void *p = calloc(1, n);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_lt(b->nmem, 4096);
	b->mem[b->nmem++] = p;
	return p;
}

static Nkir__V1__Loc *
kb_loc(struct kb *b, uint32_t line)
{
	Nkir__V1__Loc *l = kb_alloc(b, sizeof(*l));

	nkir__v1__loc__init(l);
	l->file = 0;
	l->line = line;
	return l;
}

void
kb_init(struct kb *b, const char *name)
{
	static char *files[] = { "kernel.py" };

	memset(b, 0, sizeof(*b));
	nkir__v1__kernel__init(&b->k);
	b->k.name = (char *)name;
	b->k.files = files;
	b->k.n_files = 1;
	b->k.loc = kb_loc(b, 1);
	b->k.tensors = kb_alloc(b, KB_MAX * sizeof(void *));
	b->k.params = kb_alloc(b, KB_MAX * sizeof(void *));
	b->k.outputs = kb_alloc(b, KB_MAX * sizeof(uint32_t));
	b->k.grid = kb_alloc(b, 8 * sizeof(uint32_t));
	b->k.body = kb_alloc(b, KB_MAX * sizeof(void *));
	b->body = &b->k.body;
	b->nbody = &b->k.n_body;
	b->line = 10;
}

void
kb_release(struct kb *b)
{
	for (size_t i = 0; i < b->nmem; i++)
		free(b->mem[i]);
}

void
kb_target(struct kb *b, const char *target)
{
	b->k.target = (char *)target;
}

uint32_t
kb_tensor(struct kb *b, const char *name, int kind, int space, int dtype,
    int rank, const uint64_t *shape)
{
	Nkir__V1__Tensor *t = kb_alloc(b, sizeof(*t));

	nkir__v1__tensor__init(t);
	t->name = (char *)name;
	t->kind = kind;
	t->space = space;
	t->dtype = dtype;
	t->n_shape = (size_t)rank;
	t->shape = kb_alloc(b, sizeof(uint64_t) * (size_t)rank);
	memcpy(t->shape, shape, sizeof(uint64_t) * (size_t)rank);
	t->loc = kb_loc(b, b->line);
	b->k.tensors[b->k.n_tensors] = t;
	return (uint32_t)b->k.n_tensors++;
}

uint32_t
kb_param(struct kb *b, const char *name, int dtype, int rank,
    const uint64_t *shape)
{
	uint32_t t = kb_tensor(b, name, NKIR__V1__TENSOR_KIND__TENSOR_PARAM,
	    NKIR__V1__SPACE__SPACE_HBM, dtype, rank, shape);
	Nkir__V1__Param *pa = kb_alloc(b, sizeof(*pa));

	nkir__v1__param__init(pa);
	pa->name = (char *)name;
	pa->tensor = t;
	b->k.params[b->k.n_params++] = pa;
	return t;
}

uint32_t
kb_out(struct kb *b, const char *name, int dtype, int rank,
    const uint64_t *shape)
{
	uint32_t t = kb_tensor(b, name, NKIR__V1__TENSOR_KIND__TENSOR_HBM,
	    NKIR__V1__SPACE__SPACE_SHARED_HBM, dtype, rank, shape);

	b->k.outputs[b->k.n_outputs++] = t;
	return t;
}

uint32_t
kb_tile(struct kb *b, const char *name, int space, int dtype, int rank,
    const uint64_t *shape)
{
	return kb_tensor(b, name, NKIR__V1__TENSOR_KIND__TENSOR_TILE, space,
	    dtype, rank, shape);
}

uint32_t
kb_view(struct kb *b, const char *name, uint32_t of, int dtype, int rank,
    const uint64_t *shape)
{
	uint32_t t = kb_tensor(b, name, NKIR__V1__TENSOR_KIND__TENSOR_HBM,
	    NKIR__V1__SPACE__SPACE_HBM, dtype, rank, shape);

	ck_assert_uint_lt(of, t);
	b->k.tensors[t]->view_of = of + 1;
	return t;
}

/* constant + nt terms given as (kind, index, coef) triples */
Nkir__V1__Affine *
kb_aff(struct kb *b, int64_t c, int nt, ...)
{
	Nkir__V1__Affine *a = kb_alloc(b, sizeof(*a));
	va_list ap;

	nkir__v1__affine__init(a);
	a->constant = c;
	a->n_terms = (size_t)nt;
	a->terms = kb_alloc(b, sizeof(void *) * (size_t)(nt + 1));
	va_start(ap, nt);
	for (int i = 0; i < nt; i++) {
		Nkir__V1__Term *t = kb_alloc(b, sizeof(*t));

		nkir__v1__term__init(t);
		t->kind = va_arg(ap, int);
		t->index = (uint32_t)va_arg(ap, int);
		t->coef = va_arg(ap, int64_t);
		a->terms[i] = t;
	}
	va_end(ap);
	return a;
}

/* access of tensor t: shape, then one Affine* per tensor dim */
Nkir__V1__Access *
kb_acc(struct kb *b, uint32_t t, int rank, const uint64_t *shape, ...)
{
	Nkir__V1__Access *a = kb_alloc(b, sizeof(*a));
	size_t trank = b->k.tensors[t]->n_shape;
	va_list ap;

	nkir__v1__access__init(a);
	a->tensor = t;
	a->n_shape = (size_t)rank;
	a->shape = kb_alloc(b, sizeof(uint64_t) * (size_t)rank);
	memcpy(a->shape, shape, sizeof(uint64_t) * (size_t)rank);
	a->n_index = trank;
	a->index = kb_alloc(b, sizeof(void *) * trank);
	a->mask = kb_alloc(b, sizeof(void *) * 4);
	va_start(ap, shape);
	for (size_t i = 0; i < trank; i++)
		a->index[i] = va_arg(ap, Nkir__V1__Affine *);
	va_end(ap);
	return a;
}

/* the whole of a rank-2 tensor, offset by (r0, c0) */
Nkir__V1__Access *
kb_full2(struct kb *b, uint32_t t)
{
	const uint64_t *s = b->k.tensors[t]->shape;

	return kb_acc(b, t, 2, s, AX(0, 0), AX(0, 1));
}

void
kb_mask(struct kb *b, Nkir__V1__Access *a, Nkir__V1__Affine *m)
{
	(void)b;
	a->mask[a->n_mask++] = m;
}

Nkir__V1__Op *
kb_op(struct kb *b, int kind, Nkir__V1__Access *dst)
{
	Nkir__V1__Op *o = kb_alloc(b, sizeof(*o));

	nkir__v1__op__init(o);
	o->kind = kind;
	o->loc = kb_loc(b, b->line);
	o->dst = dst;
	o->src = kb_alloc(b, sizeof(void *) * 4);
	o->axes = kb_alloc(b, sizeof(uint32_t) * 8);
	o->scale = 1.0;
	o->acc_dtype = NKIR__V1__DTYPE__DT_FLOAT32;
	ck_assert_uint_lt(*b->nbody, KB_MAX);
	(*b->body)[(*b->nbody)++] = o;
	return o;
}

void
kb_src(struct kb *b, Nkir__V1__Op *o, Nkir__V1__Access *a)
{
	Nkir__V1__Operand *s = kb_alloc(b, sizeof(*s));

	nkir__v1__operand__init(s);
	s->value_case = NKIR__V1__OPERAND__VALUE_ACCESS;
	s->access = a;
	o->src[o->n_src++] = s;
}

void
kb_scalar(struct kb *b, Nkir__V1__Op *o, double v)
{
	Nkir__V1__Operand *s = kb_alloc(b, sizeof(*s));

	nkir__v1__operand__init(s);
	s->value_case = NKIR__V1__OPERAND__VALUE_SCALAR;
	s->scalar = v;
	o->src[o->n_src++] = s;
}

Nkir__V1__Op *
kb_op1(struct kb *b, int kind, Nkir__V1__Access *dst, Nkir__V1__Access *s0)
{
	Nkir__V1__Op *o = kb_op(b, kind, dst);

	kb_src(b, o, s0);
	return o;
}

Nkir__V1__Op *
kb_alloc_op(struct kb *b, uint32_t t, int fill, double v)
{
	Nkir__V1__Op *o = kb_op(b, NKIR__V1__OP_KIND__OP_ALLOC,
	    kb_acc(b, t, (int)b->k.tensors[t]->n_shape,
	    b->k.tensors[t]->shape, AX(0, 0), AX(0, 1), AX(0, 2)));

	o->fill = fill;
	o->value = v;
	return o;
}

/* Give op o a loop of kind over [start, stop) by step, whose body the
 * next ops go to (up to kb_end). */
static void
kb_open(struct kb *b, Nkir__V1__Op *o, int kind, int64_t start,
    int64_t stop, int64_t step)
{
	Nkir__V1__Loop *l = kb_alloc(b, sizeof(*l));

	nkir__v1__loop__init(l);
	l->kind = kind;
	l->start = start;
	l->stop = stop;
	l->step = step;
	l->body = kb_alloc(b, KB_MAX * sizeof(void *));
	o->loop = l;
	ck_assert_int_lt(b->depth, 32);
	b->stack[b->depth].body = b->body;
	b->stack[b->depth].nbody = b->nbody;
	b->depth++;
	b->body = &l->body;
	b->nbody = &l->n_body;
}

void
kb_loop(struct kb *b, uint32_t var, int64_t start, int64_t stop, int64_t step)
{
	Nkir__V1__Op *o = kb_op(b, NKIR__V1__OP_KIND__OP_LOOP, NULL);

	kb_open(b, o, NKIR__V1__LOOP_KIND__LOOP_AFFINE, start, stop, step);
	o->loop->var = var;
	if (var + 1 > b->k.num_loop_vars)
		b->k.num_loop_vars = var + 1;
}

/* The body travels as Op.loop.body, var 0 and one trip, as the tracer
 * writes it (nkid/nki06/isa.py). */
Nkir__V1__Op *
kb_dyn_loop(struct kb *b, Nkir__V1__Access *cond)
{
	Nkir__V1__Op *o = kb_op1(b, NKIR__V1__OP_KIND__OP_DYN_LOOP, NULL,
	    cond);

	kb_open(b, o, NKIR__V1__LOOP_KIND__LOOP_SEQUENTIAL, 0, 1, 1);
	return o;
}

void
kb_end(struct kb *b)
{
	b->depth--;
	b->body = b->stack[b->depth].body;
	b->nbody = b->stack[b->depth].nbody;
}

uint8_t *
kb_pack(struct kb *b, size_t *len)
{
	uint8_t *buf;

	*len = nkir__v1__kernel__get_packed_size(&b->k);
	buf = malloc(*len + 1);
	ck_assert_ptr_nonnull(buf);
	nkir__v1__kernel__pack(&b->k, buf);
	return buf;
}

int
kb_build(struct kb *b, struct sim_program **prog, struct sim_diag *diag)
{
	size_t len, ilen;
	uint8_t *ir = kb_pack(b, &len);
	void *img;
	int rc;

	*prog = NULL;
	memset(diag, 0, sizeof(*diag));
	rc = sim_compile(ir, len, &img, &ilen, diag);
	free(ir);
	if (rc)
		return rc;
	rc = sim_program_load(img, ilen, prog, diag);
	free(img);
	return rc;
}

/* With SIM_CORPUS_DIR set, save the kernel as a fuzz seed. */
static void
kb_seed(struct kb *b)
{
	const char *dir = getenv("SIM_CORPUS_DIR");
	static int n;
	char path[512];
	uint8_t *ir;
	size_t len;
	FILE *f;

	if (dir == NULL)
		return;
	ir = kb_pack(b, &len);
	snprintf(path, sizeof(path), "%s/%s-%d.nkir", dir, b->k.name, n++);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fwrite(ir, 1, len, f);
	fclose(f);
	free(ir);
}

struct sim_program *
kb_program(struct kb *b)
{
	struct sim_program *p;
	struct sim_diag d;
	int rc = kb_build(b, &p, &d);

	kb_seed(b);
	ck_assert_msg(rc == 0, "build failed: %d %s", rc, d.msg);
	return p;
}

void
kb_expect_error(struct kb *b, int code, const char *msg)
{
	struct sim_program *p;
	struct sim_diag d;
	int rc = kb_build(b, &p, &d);

	ck_assert_int_eq(rc, code);
	if (msg != NULL)
		ck_assert_str_eq(d.msg, msg);
	sim_program_free(p);
}

struct sim_tensor
kb_host(int dtype, int rank, const uint64_t *shape, void *data)
{
	struct sim_tensor t = { .dtype = dtype, .rank = rank, .data = data };
	size_t n = 1;

	for (int i = 0; i < rank; i++) {
		t.shape[i] = shape[i];
		n *= shape[i];
	}
	t.nbytes = n * sim_dtype_size(dtype);
	return t;
}

float *
kb_randf(size_t n, unsigned seed)
{
	float *f = malloc(n * sizeof(float));

	srand(seed);
	for (size_t i = 0; i < n; i++)
		f[i] = (float)(rand() % 2001 - 1000) / 64.0f;
	return f;
}

/* c = a + b over [R, C] with [128, 512]-style tiles [TP, TF] in loops. */
void
kb_tiled_add(struct kb *b, uint64_t R, uint64_t C, uint64_t TP, uint64_t TF,
    bool spmd)
{
	uint32_t a, bb, c, ta, tb, tc;
	Nkir__V1__Affine *r0, *c0, *r1, *c1, *r2, *c2;
	Nkir__V1__Op *o;

	kb_init(b, "tensor_add");
	a = kb_param(b, "a", F32, 2, SH(R, C));
	bb = kb_param(b, "b", F32, 2, SH(R, C));
	c = kb_out(b, "c", F32, 2, SH(R, C));
	ta = kb_tile(b, "a_tile", SBUF, F32, 2, SH(TP, TF));
	tb = kb_tile(b, "b_tile", SBUF, F32, 2, SH(TP, TF));
	tc = kb_tile(b, "c_tile", SBUF, F32, 2, SH(TP, TF));
	if (spmd) {
		b->k.n_grid = 2;
		b->k.grid[0] = (uint32_t)(R / TP);
		b->k.grid[1] = (uint32_t)(C / TF);
	} else {
		kb_loop(b, 0, 0, (int64_t)(R / TP), 1);
		kb_loop(b, 1, 0, (int64_t)(C / TF), 1);
	}
#define IDX(r, c) do { \
	int kind = spmd ? P : L; \
	r = kb_aff(b, 0, 2, kind, 0, (int64_t)TP, X, 0, (int64_t)1); \
	c = kb_aff(b, 0, 2, kind, 1, (int64_t)TF, X, 1, (int64_t)1); \
} while (0)
	IDX(r0, c0);
	IDX(r1, c1);
	IDX(r2, c2);
	kb_op1(b, OPK(LOAD), kb_full2(b, ta), kb_acc(b, a, 2, SH(TP, TF), r0, c0));
	kb_op1(b, OPK(LOAD), kb_full2(b, tb), kb_acc(b, bb, 2, SH(TP, TF), r1, c1));
	o = kb_op1(b, OPK(TENSOR_TENSOR), kb_full2(b, tc), kb_full2(b, ta));
	kb_src(b, o, kb_full2(b, tb));
	o->alu = NKIR__V1__ALU_OP__ALU_ADD;
	kb_op1(b, OPK(STORE), kb_acc(b, c, 2, SH(TP, TF), r2, c2),
	    kb_full2(b, tc));
	if (!spmd) {
		kb_end(b);
		kb_end(b);
	}
#undef IDX
}

/* Run p with `threads` threads; its outputs in o. */
void
kb_run_threads(struct sim_program *p, struct sim_tensor *in, size_t nin,
    struct sim_tensor *o, size_t nout, unsigned threads)
{
	struct sim_run_opts opts;
	struct sim_diag d;
	int rc;

	memset(&opts, 0, sizeof(opts));
	opts.threads = threads;
	rc = sim_run(p, in, nin, o, nout, &opts, &d);
	ck_assert_msg(rc == 0, "threads %u: %s", threads, d.msg);
}

void
kb_cmp_release(struct sim_tensor *on, const struct sim_tensor *o1,
    size_t nout, unsigned threads)
{
	for (size_t i = 0; i < nout; i++) {
		ck_assert_uint_eq(on[i].nbytes, o1[i].nbytes);
		ck_assert_msg(memcmp(on[i].data, o1[i].data, o1[i].nbytes) ==
		    0, "output %zu differs with %u threads", i, threads);
	}
	sim_tensors_release(on, nout);
}

/* Outputs of runs with 4, 1, 2 and 4 threads are the same bytes (the
 * first on a fresh program: nothing left by an earlier run); o1 keeps the
 * single-threaded run's. */
void
kb_same_bits(struct sim_program *p, struct sim_tensor *in, size_t nin,
    struct sim_tensor *o1, size_t nout)
{
	struct sim_tensor on[4];

	kb_run_threads(p, in, nin, on, nout, 4);
	kb_run_threads(p, in, nin, o1, nout, 1);
	kb_cmp_release(on, o1, nout, 4);
	for (unsigned threads = 2; threads <= 4; threads += 2) {
		kb_run_threads(p, in, nin, on, nout, threads);
		kb_cmp_release(on, o1, nout, threads);
	}
}
