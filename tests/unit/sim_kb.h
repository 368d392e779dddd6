/*
 * sim_kb.h: the kernel builder of the sim/ unit suites (check_sim*.c):
 * NKIR kernels made of protobuf-c structs, compiled, loaded and run, and
 * the runs on 1 to 4 threads compared bit for bit (sim_kb.c).
 */
#ifndef NKID_TESTS_SIM_KB_H
#define NKID_TESTS_SIM_KB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nkir.pb-c.h"
#include "sim/sim.h"

#define KB_MAX 64

/* Shorthands of the suites: dtypes (any by its NKIR name: DT(UINT8)),
 * spaces, op kinds, a shape, an axis term (of the kb named b). */
#define DT(x) NKIR__V1__DTYPE__DT_##x
#define F32 NKIR__V1__DTYPE__DT_FLOAT32
#define BF16 NKIR__V1__DTYPE__DT_BFLOAT16
#define I32 NKIR__V1__DTYPE__DT_INT32
#define SBUF NKIR__V1__SPACE__SPACE_SBUF
#define PSUM NKIR__V1__SPACE__SPACE_PSUM
#define OPK(x) NKIR__V1__OP_KIND__OP_##x
#define SH(...) ((const uint64_t[]){ __VA_ARGS__ })
#define AX(c, axis) kb_aff(b, (c), 1, X, (axis), (int64_t)1)

enum { L = NKIR__V1__TERM_KIND__TERM_LOOP, P = NKIR__V1__TERM_KIND__TERM_PROGRAM,
    X = NKIR__V1__TERM_KIND__TERM_AXIS };

struct kb {
	Nkir__V1__Kernel k;
	void *mem[4096];
	size_t nmem;
	Nkir__V1__Op ***body;       /* current body array */
	size_t *nbody;
	struct {
		Nkir__V1__Op ***body;
		size_t *nbody;
	} stack[32];
	int depth;
	uint32_t line;              /* line of the next op */
};

/* Start kernel `name` in b (no tensors, no ops; line 1). */
void kb_init(struct kb *b, const char *name);
/* Free all b allocated. */
void kb_release(struct kb *b);
/* Compile b for target (borrowed: "trn1", "trn2", "trn3"; NULL for the
 * default). */
void kb_target(struct kb *b, const char *target);
/* Add a tensor (NKIR kind, space, dtype, shape); its index. */
uint32_t kb_tensor(struct kb *b, const char *name, int kind, int space,
    int dtype, int rank, const uint64_t *shape);
/* A kernel argument in HBM; its tensor index. */
uint32_t kb_param(struct kb *b, const char *name, int dtype, int rank,
    const uint64_t *shape);
/* A kernel output in shared HBM; its tensor index. */
uint32_t kb_out(struct kb *b, const char *name, int dtype, int rank,
    const uint64_t *shape);
/* An on-chip tile (SBUF or PSUM); its tensor index. */
uint32_t kb_tile(struct kb *b, const char *name, int space, int dtype,
    int rank, const uint64_t *shape);
/* An HBM tensor reading the bytes of HBM tensor `of` as dtype (NKI's
 * dtype views, Tensor.view_of); its tensor index. */
uint32_t kb_view(struct kb *b, const char *name, uint32_t of, int dtype,
    int rank, const uint64_t *shape);
/* constant + nt terms given as (kind, index, coef) triples */
Nkir__V1__Affine *kb_aff(struct kb *b, int64_t c, int nt, ...);
/* access of tensor t: shape, then one Affine* per tensor dim */
Nkir__V1__Access *kb_acc(struct kb *b, uint32_t t, int rank,
    const uint64_t *shape, ...);
/* the whole of a rank-2 tensor, offset by (r0, c0) */
Nkir__V1__Access *kb_full2(struct kb *b, uint32_t t);
/* Add mask constraint m (>= 0) to access a. */
void kb_mask(struct kb *b, Nkir__V1__Access *a, Nkir__V1__Affine *m);
/* Append an op of kind writing dst to the current body (at b->line);
 * the op, to add sources and fields to. */
Nkir__V1__Op *kb_op(struct kb *b, int kind, Nkir__V1__Access *dst);
/* Add source access a to op o. */
void kb_src(struct kb *b, Nkir__V1__Op *o, Nkir__V1__Access *a);
/* Add a scalar source v to op o. */
void kb_scalar(struct kb *b, Nkir__V1__Op *o, double v);
/* kb_op with one source. */
Nkir__V1__Op *kb_op1(struct kb *b, int kind, Nkir__V1__Access *dst,
    Nkir__V1__Access *s0);
/* An OP_ALLOC of tensor t with fill (and value v). */
Nkir__V1__Op *kb_alloc_op(struct kb *b, uint32_t t, int fill, double v);
/* Open a loop of variable var over [start, stop) by step; the ops up
 * to kb_end are its body. */
void kb_loop(struct kb *b, uint32_t var, int64_t start, int64_t stop,
    int64_t step);
/* Open a dynamic loop (OP_DYN_LOOP, as nl.while_loop traces it) run
 * while the one element of cond is not 0; the ops up to kb_end are its
 * body. The op. */
Nkir__V1__Op *kb_dyn_loop(struct kb *b, Nkir__V1__Access *cond);
/* Close the innermost loop. */
void kb_end(struct kb *b);
/* The kernel as NKIR bytes (malloc'd). */
uint8_t *kb_pack(struct kb *b, size_t *len);
/* Compile and load b: 0 and the program in *prog (free with
 * sim_program_free), or the sim code, *prog NULL and the message in
 * diag. */
int kb_build(struct kb *b, struct sim_program **prog,
    struct sim_diag *diag);
/* Compile and load b (failing the test otherwise); free with
 * sim_program_free. */
struct sim_program *kb_program(struct kb *b);
/* Compiling b fails with code and, unless msg is NULL, exactly msg. */
void kb_expect_error(struct kb *b, int code, const char *msg);
/* A host tensor over data (borrowed). */
struct sim_tensor kb_host(int dtype, int rank, const uint64_t *shape,
    void *data);
/* n floats from seed, multiples of 1/64 in [-15.625, 15.625] (malloc'd). */
float *kb_randf(size_t n, unsigned seed);
/* c = a + b over [R, C] with [128, 512]-style tiles [TP, TF] in loops. */
void kb_tiled_add(struct kb *b, uint64_t R, uint64_t C, uint64_t TP,
    uint64_t TF, bool spmd);
/* Run p with `threads` threads; its outputs in o. */
void kb_run_threads(struct sim_program *p, struct sim_tensor *in, size_t nin,
    struct sim_tensor *o, size_t nout, unsigned threads);
/* on[] has o1[]'s bytes (else the test fails naming threads); frees
 * on[]. */
void kb_cmp_release(struct sim_tensor *on, const struct sim_tensor *o1,
    size_t nout, unsigned threads);
/* Outputs of runs with 4, 1, 2 and 4 threads are the same bytes (the
 * first on a fresh program: nothing left by an earlier run); o1 keeps the
 * single-threaded run's. */
void kb_same_bits(struct sim_program *p, struct sim_tensor *in, size_t nin,
    struct sim_tensor *o1, size_t nout);

#endif /* NKID_TESTS_SIM_KB_H */
