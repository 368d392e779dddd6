/*
 * sim_impl.h: the executor's internal model: a validated kernel lowered to
 * precomputed strided views, shared by the planner, the image code and the
 * interpreter. Nothing here is part of the public API (sim.h).
 *
 * Floors: a file calls only into the files on the floors below it.
 *   0  sim_diag.c (error codes, messages), sim_dtype.c (dtypes),
 *      sim_op.c (op kinds: names, engines), sim_pool.c (worker threads),
 *      sim_vmath.c (vectorized math of rows), sim_blas.c (OpenBLAS)
 *   1  sim_print.c (shapes and device_print's text),
 *      sim_opt.c (fusion, dead fills, copy elision in a planned program),
 *      sim_par.c (which parts of a program may run side by side),
 *      sim_exec_row.c (the interpreter's row math: ALU operators,
 *      activation functions and reduce folds over one row; no views, no
 *      run state)
 *   2  sim_plan.c (validate NKIR, build a struct sim_program) and
 *      sim_plan_view.c (its strided views, operands, spaces), with
 *      sim_isa_plan.c beside it (the planners of the nki.isa kinds
 *      40-79, which sim_plan.c's table names; they use its helpers) and
 *      sim_lang_plan.c (the nki.language kinds 80-119, index functions,
 *      constants, ifs)
 *   3  sim_exec.c (run a program: sim_run, the dispatch of op kinds),
 *      with the executors beside it: sim_exec_view.c (offsets, row
 *      iterators, rows read and written, views gathered), sim_exec_par.c
 *      (parts side by side), sim_exec_ew.c (element-wise, fused groups),
 *      sim_exec_reduce.c (reductions, bn), sim_exec_matmul.c (BLAS),
 *      sim_isa_exec.c and sim_lang_exec.c (the nki.isa and nki.language
 *      kinds; they use the interpreter's helpers)
 *   4  sim.c (the front door: NKIR and images in, programs out)
 * The interpreter (sim_exec*.c) runs what sim_plan.c built but calls none
 * of its functions.
 */
#ifndef NKID_SIM_IMPL_H
#define NKID_SIM_IMPL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"

#define SIM_NITEMS(a)		(sizeof(a) / sizeof((a)[0]))

/* Executor bounds (SIM_ELIMIT beyond them). docs/nkir.md lists them. */
#define SIM_IR_MAX		(64u << 20)	/* bytes of NKIR or image */
#define SIM_OPS_MAX		65536		/* ops, loops included */
#define SIM_DEPTH_MAX		16		/* loop nesting */
#define SIM_DYN_TRIPS_MAX	(1ull << 20)	/* trips of an OP_DYN_LOOP */
#define SIM_LOOPVARS_MAX	4096
#define SIM_TENSORS_MAX		65536
#define SIM_FILES_MAX		4096
#define SIM_PARAMS_MAX		256
#define SIM_TERMS_MAX		16		/* per affine expression */
#define SIM_MASKS_MAX		16		/* mask expressions per access */
#define SIM_GRID_RANK_MAX	4
#define SIM_PROGRAMS_MAX	(1u << 20)
#define SIM_DIM_MAX		(1ull << 32)	/* one dimension */
#define SIM_ELEMS_MAX		(1ull << 34)	/* of one tensor or view */
#define SIM_TILE_BYTES_MAX	(2ull << 30)	/* all tiles, as fp32 */
#define SIM_HBM_BYTES_MAX	(16ull << 30)	/* all kernel-allocated HBM */
#define SIM_COEF_MAX		(1ll << 40)	/* |constant|, |coef|, bounds */
#define SIM_IDX_MAX		(1ll << 61)	/* any partial index sum */
#define SIM_TEXT_MAX		4096		/* names, print prefixes */
#define SIM_FUSE_MAX		16		/* ops in one fused group */
#define SIM_PRINT_MAX		(1ull << 24)	/* elements of a device_print */
#define SIM_RUN_CACHE_MAX	(32ull << 20)	/* run block kept between runs */
#define SIM_POOL_MAX		64		/* threads of one run */

/* Hardware limits (NKI, trn1/trn2). */
#define SIM_PMAX		128		/* partitions */
#define SIM_PSUM_PART_BYTES	2048		/* a PSUM tile per partition */

#define SIM_MM_STAT_FMAX	128
#define SIM_MM_MOVE_FMAX	512
#define SIM_BN_FMAX		512

/* Exact sums of products of 64-bit values (index ranges). */
typedef __int128 sim_i128;

/* A loop-variable or program-id term of an affine expression. */
struct sim_term {
	uint32_t	kind;	/* NKIR TERM_LOOP or TERM_PROGRAM */
	uint32_t	index;
	int64_t		coef;
};

/*
 * constant + sum(terms) + sum(ax[a] * axis a): an index, a mask, or a
 * linear element offset (then ax[] are the view's strides). Offsets are
 * computed modulo 2^64 (only in-bounds elements are ever dereferenced);
 * index and mask values are exact (bounded by SIM_IDX_MAX at load).
 */
struct sim_lin {
	int64_t		 c;
	uint32_t	 nt;
	struct sim_term	*t;
	int64_t		 ax[SIM_MAX_RANK];
};

/* A strided view of a tensor (nkir Access) in its op's iteration space. */
struct sim_view {
	uint32_t	 tensor;
	int		 rank;
	uint64_t	 shape[SIM_MAX_RANK];
	uint64_t	 nelem;
	struct sim_lin	 off;	/* element offset into the tensor */
	int		 ndim;	/* tensor rank: dim[] for run-time checks */
	struct sim_lin	*dim;
	int		 nmask;
	struct sim_lin	*mask;
};

struct sim_operand {
	bool		scalar;
	float		value;	/* a scalar, pre-rounded to fp32 */
	struct sim_view	v;
};

struct sim_tinfo {
	char		*name;
	int		 kind;		/* NKIR TensorKind */
	int		 space;
	int		 dtype;
	int		 rank;
	uint64_t	 shape[SIM_MAX_RANK];
	uint64_t	 nelem;
	int		 fill;		/* TENSOR_HBM launch fill */
	bool		 written;	/* dst of some op */
	bool		 read;		/* source of some op */
	bool		 covered;	/* all stored by one unmasked op */
	bool		 nofill;	/* the first op to touch it (in
					 * execution order) overwrites every
					 * element and reads none: the launch
					 * fill is unobservable */
	bool		 chip;		/* SBUF/PSUM: stored as fp32 */
	size_t		 moff;		/* tiles: offset in the run block */
	int64_t			 view_of;	/* HBM: >= 0, the tensor whose
					 * bytes it reads as its dtype */
	bool			 viewed;	/* some tensor is its view_of */
	int64_t			 alias;		/* tiles: >= 0, an fp32 HBM tensor
					 * whose memory the tile uses (copy
					 * elision) */
	const void		*data;		/* FILL_DATA: nelem elements of
					 * dtype (in the program's arena) */
};

/* An index function (nkir IndexFn): its value lives in the run's loop
 * variable array at slot, refreshed when a variable of expr changes. */
struct sim_fn {
	int		 kind;		/* NKIR FnKind */
	int64_t		 divisor;	/* > 0 */
	struct sim_lin	 expr;		/* loop and program terms only */
	uint32_t	 slot;		/* nloopvars + its index */
};

/* A run-time index of an nki.isa op (NKIR DynIndex). */
struct sim_dyn {
	int		 operand;	/* 0: dst, 1 + i: src[i] */
	int		 dim;		/* of that operand's tensor */
	int		 src;		/* the index values: src[src] */
	int64_t		 coef;
	int64_t		 stride;	/* elements per step of dim */
};

/* The fields of the nki.isa kinds 40-79 (NKIR Op fields 40-79). */
struct sim_isa {
	int		 alu1;
	int		 reduce_alu;
	int		 reduce_cmd;
	bool		 reverse0;
	bool		 reverse1;
	bool		 oob_skip;
	bool		 index_out;
	int		 dge_mode;
	int64_t		 range_start;
	uint32_t	 elem_per_index;
	uint32_t	 valid_indices;
	uint8_t		 shuffle[32];
	int		 perm[SIM_MAX_RANK];	/* dma_transpose: dst axis a is
						 * src axis perm[a] */
	int		 ndyn;
	struct sim_dyn	 dyn[3];
	bool		 dyn_row;	/* every run-time index is one value
					 * per innermost row */
};

struct sim_op {
	int			 kind;		/* NKIR OpKind */
	const char		*file;		/* the program's */
	uint32_t		 line;
	bool			 has_dst;
	struct sim_view		 dst;
	int			 nsrc;
	struct sim_operand	 src[4];	/* 4: OP_MATMUL_MX only */
	int			 alu;
	int			 act;
	float			 scale;
	float			 value;		/* OP_ALLOC: the fill, rounded
						 * to dst's dtype */
	uint32_t		 axes;		/* OP_REDUCE: bit a set: axis a
						 * is reduced */
	bool			 accumulate;
	bool			 transpose_x;
	int			 engine;
	char			*text;
	struct sim_lin		 expr;		/* OP_IOTA */
	/* OP_LOOP */
	uint32_t		 var;
	int64_t			 start;		/* and OP_RANDOM_SEED's seed */
	int64_t			 step;
	uint64_t		 trips;
	size_t			 nbody;
	struct sim_op		*body;
	/* iteration space of element-wise kinds (dst's shape; src0's for
	 * reduce) */
	int			 rank;
	uint64_t		 shape[SIM_MAX_RANK];
	bool			 masked;	/* some view has a mask */
	size_t			 fuse;		/* > 1: first of a fused group
						 * of this size */
	bool			 stage;		/* reads its dst tensor through
						 * another view: compute it
						 * all, then write */
	bool			 skip;		/* OP_ALLOC whose values the
						 * next op touching the tile
						 * overwrites before any read,
						 * an elided load/store, or a
						 * load forwarded into a
						 * matmul */
	bool			 opaque;	/* may leave elements of dst
						 * unwritten or read them
						 * (run-time indices,
						 * predicates, read-modify-
						 * write): never assumed to
						 * overwrite dst */
	/* sim_opt_forward: rows passed on in place within a fused group
	 * (indices into the group, plus one; 0: none) */
	uint8_t			 fwd_src[4];	/* src[i] is read where the
						 * group's load fwd_src[i]
						 * reads its HBM row */
	uint8_t			 fwd_dst;	/* dst's row is computed where
						 * the group's store fwd_dst
						 * writes its HBM row */
	bool			 fwd;		/* a load or store that this
						 * forwarding made a no-op */
	/* sim_opt_gemm: OP_LOOP that runs as one matmul, body[gemm_at - 1]
	 * (a matmul, or a loop that is one; 0: not one): M, N, K of the
	 * whole, the leading dimensions of lhs, rhs and dst, and whether it
	 * overwrites dst (a zero fill folded) or accumulates */
	size_t			 gemm_at;
	int64_t			 gemm_mnk[3];
	int64_t			 gemm_ld[3];
	bool			 gemm_overwrite;
	struct sim_isa		*isa;		/* kinds 40-79, else NULL */
	uint32_t		 nfns;		/* OP_LOOP: the index functions
						 * of its variable */
	uint32_t		*fns;
	/* OP_IF: body (nbody) runs when every cond >= 0, else else_body */
	int			 ncond;
	struct sim_lin		*cond;
	size_t			 nelse;
	struct sim_op		*else_body;
	bool			 dyn_loop;	/* an OP_DYN_LOOP planned as
						 * this OP_IF (sim_op06_*.c) */
	/* sim_par.c: parallel execution */
	bool			 par_split;	/* its rows along axis 0 may
						 * run side by side */
	uint64_t		 par_work;	/* element operations of one
						 * execution (a loop: of one
						 * iteration) */
	struct sim_par_region	*par;		/* OP_LOOP: iterations are
						 * independent, NULL if not
						 * proven */
};

/* Iterations (of a loop, or the programs of the grid) proven independent:
 * each may run on its own thread with its own copy of the tiles in priv[]
 * (the tiles it writes, each overwritten whole before any read in every
 * iteration); HBM it writes is written nowhere else by other iterations
 * and read by none (sim_par.c). */
struct sim_par_region {
	uint32_t		 npriv;
	uint32_t		*priv;
	struct sim_par_region	*next;		/* all of a program's */
};

struct sim_program {
	char			*name;
	size_t			 nfiles;
	char			**files;
	size_t			 ntensors;
	struct sim_tinfo	*tensors;
	size_t			 nparams;
	struct sim_sig		*params;
	uint32_t		*param_tensor;
	size_t			 noutputs;
	struct sim_sig		*outputs;
	uint32_t		*output_tensor;
	int			 grid_rank;
	uint32_t		 grid[SIM_GRID_RANK_MAX];
	uint64_t		 nprograms;
	uint32_t		 nloopvars;
	uint32_t		 nfns;		/* index functions, slots after
						 * the loop variables */
	struct sim_fn		*fns;
	bool			 fp32_tiles;	/* low-precision float tiles keep
						 * fp32 values (NKI_PRECISE_FP=0) */
	bool			 collective;	/* has an OP_ALL_REDUCE: programs
						 * run side by side */
	size_t			 nbody;
	struct sim_op		*body;
	void			*arena;		/* all the program's memory */
	uint64_t		 cost;		/* see sim_program_cost */
	size_t			 row_max;	/* longest innermost axis */
	size_t			 scratch_max;	/* floats of scratch an op
						 * needs, at most */
	/* Per-run memory (tiles, scratch, rows) in one block of run_bytes;
	 * one block is kept between runs (run_cache, under run_mu) so a
	 * warm run neither allocates nor page-faults. */
	size_t			 run_bytes;
	size_t			 scratch_off;	/* byte offsets in the block */
	size_t			 row_off;
	size_t			 act_off;
	pthread_mutex_t		 run_mu;
	void			*run_cache;
	/* sim_par.c */
	struct sim_par_region	*par;		/* the programs of the grid
						 * are independent, or NULL */
	uint64_t		 par_work;	/* element operations of one
						 * program */
	struct sim_par_region	*par_all;	/* every region, to free */
	/* Worker blocks (run_bytes, then the worker's binds and loop
	 * variables) kept between runs under run_mu. */
	size_t			 par_nfree;
	size_t			 par_block_bytes;	/* each */
	void			*par_free[SIM_POOL_MAX];
};

/* A growing string (sim_print.c). */
struct sim_print_buf {
	char	*s;
	size_t	 len;
	size_t	 cap;
};

/* sim_diag.c */
/* Format a message into d (NULL is fine). */
void	 sim_diag_set(struct sim_diag *d, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* Format a message into d (NULL is fine) followed by " (file:line)". */
void	 sim_diag_vset_at(struct sim_diag *d, const char *file,
	    unsigned line, const char *fmt, va_list ap)
	    __attribute__((format(printf, 4, 0)));

/* sim_op.c */
/* sim_op_name is in sim.h. */
/* NKI's name of ALU operator alu (NKIR AluOp), "unknown" if none. */
const char *sim_op_alu_name(int alu);
/* sim_op_engine_id's engine by name ("dma", "tensor", "vector",
 * "scalar", "gpsimd"). */
const char *sim_op_engine(int kind, int engine, int alu);

/* sim_dtype.c (and sim.h) */
/* True for the packed MX dtypes (float8_e5m2_x4, float8_e4m3fn_x4,
 * float4_e2m1fn_x4): an element is bits, no number. */
bool	 sim_dtype_is_packed(int dt);
/* float8_e8m0fnu's byte of x (ml_dtypes' rounding) and its value. */
uint8_t	 sim_dtype_e8m0_encode(float x);
float	 sim_dtype_e8m0_decode(uint8_t b);
/* The 16 bits of a float4_e2m1fn_x4 element, held as an integer value x
 * (another value, a fill of -1, wraps as an integer would; NaN is 0). */
uint16_t sim_dtype_fp4x4_bits(float x);
/* One value of a packed MX dtype dt: its low 8 (fp8) or 4 (fp4) bits b
 * decoded; x encoded as one fp8 byte of dt (round to nearest even, Inf
 * and NaN as float8_e5m2 / float8_e4m3fn have them). */
float	 sim_dtype_mx_decode(int dt, uint32_t b);
uint8_t	 sim_dtype_mx_encode(int dt, float x);
/* True for the integer dtypes and bool. */
bool	 sim_dtype_is_int(int dt);
/* True for the float dtypes narrower than float32 (bfloat16, float16,
 * fp8, tfloat32): what fp32 tiles (NKI_PRECISE_FP=0) keep unrounded. */
bool	 sim_dtype_is_lowp(int dt);
/* x rounded to the nearest value of dt (as the on-chip fp32 copy). */
float	 sim_dtype_round(int dt, float x);
/* The fill of an uninitialized element of dt: NaN, or the integer
 * minimum. */
float	 sim_dtype_uninit(int dt);
/* Convert n elements of dt at src (element stride `stride`, may be 0 or
 * negative) to fp32 at dst[0 .. n-1]. */
void	 sim_dtype_decode(int dt, const void *src, int64_t stride, size_t n,
	    float *dst);
/* Round n fp32 values src[i * sstride] to dt and store their bytes at
 * dst (element stride `stride`). */
void	 sim_dtype_encode(int dt, void *dst, int64_t stride, size_t n,
	    const float *src, int64_t sstride);
/* Fill n contiguous elements of dt at dst with v (rounded). */
void	 sim_dtype_fill(int dt, void *dst, size_t n, float v);
/* dst[i * dstride] = src[i * sstride] rounded to dt, for the fp32 copy of
 * an on-chip tile. */
void	 sim_dtype_round_row(int dt, float *dst, int64_t dstride,
	    const float *src, int64_t sstride, size_t n);

/* sim_pool.c */
/*
 * Run fn(arg, task, slot) for every task in [0, n) on up to `threads`
 * threads: the caller and threads - 1 of the process's pool workers
 * (started on first use, never more than SIM_POOL_MAX - 1). The caller
 * runs task n - 1 first, then takes tasks in order with the workers; it
 * returns when all are done. slot names the thread running a task: 0 for
 * the caller, 1 .. SIM_POOL_MAX - 1 for a worker, so a task can keep
 * per-thread state in an array; a slot runs one task at a time. May be
 * called from several threads at once, but not from inside a task.
 */
void	 sim_pool_run(unsigned threads, unsigned n,
	    void (*fn)(void *arg, unsigned task, unsigned slot), void *arg);

/* sim_blas.c */
/* Load OpenBLAS (once; single-threaded, kernels for this CPU): NULL, or
 * why it cannot be used (static). */
const char *sim_blas_open(void);
/* C = A @ B + beta * C, row-major, A transposed if trans_a (A is then
 * [K, M]), on OpenBLAS's own threads if threads > 1 (one such call at a
 * time in the process, none beside other calls); after sim_blas_open
 * succeeded. */
void	 sim_blas_sgemm(unsigned threads, bool trans_a, int M, int N, int K,
	    const float *A, int lda, const float *B, int ldb, float beta,
	    float *C, int ldc);
/* Calls so far that ran on OpenBLAS's threads. */
unsigned long sim_blas_threaded_calls(void);

/* sim_vmath.c */
/* Vector widths of sim_vmath_act_isa. */
enum { SIM_VMATH_SSE4, SIM_VMATH_AVX, SIM_VMATH_AVX512 };
/* o[i] = act(o[i]) for the activation functions it vectorizes (exp,
 * log, tanh, sigmoid, gelu, gelu_tanh, silu, softplus, sin, cos, erf),
 * with the widest vectors the CPU has; false, o untouched, for any other
 * act. The results are the same bits on every x86-64-v2 CPU, for every n
 * and every position in o (SLEEF's deterministic functions). */
bool	 sim_vmath_act(int act, float *o, size_t n);
/* The same with vectors of width isa (SIM_VMATH_*); false if the CPU
 * lacks them (for tests). */
bool	 sim_vmath_act_isa(int act, float *o, size_t n, int isa);

/* sim_print.c */
/* Write "name[d0, d1, ...]" into buf (len bytes, always NUL-terminated,
 * truncated if short); at most SIM_MAX_RANK dimensions are shown. */
void	 sim_print_shape(char *buf, size_t len, const char *name, int rank,
	    const uint64_t *shape);
/*
 * Append device_print's text for a row-major array vals of the given
 * shape to pb: "prefix: name[d0, d1] dtype\n" then the values, numpy
 * style ("--" for elements a mask left inactive), then "\n". name is at
 * most SIM_TEXT_MAX bytes. Returns 0, SIM_ENOMEM or SIM_ERUNTIME.
 */
int	 sim_print_format(struct sim_print_buf *pb, const char *prefix,
	    const char *name, int dtype, int rank, const uint64_t *shape,
	    const float *vals, const uint8_t *active);
/* Free pb's memory; pb is empty again. */
void	 sim_print_buf_release(struct sim_print_buf *pb);

/* sim_opt.c */
/* op may run in a fused group: an element-wise kind, unmasked, not staged
 * and not skipped. */
bool	 sim_opt_fusable(const struct sim_op *op);
/* a and b are one view: same tensor, shape and element offsets. */
bool	 sim_opt_view_same(const struct sim_view *a,
	    const struct sim_view *b);
/* Distinct points of view v's iteration space are distinct elements. */
bool	 sim_opt_view_injective(const struct sim_view *v);
/* The sum of the coefficients of term (kind, index) in l. */
sim_i128 sim_opt_lin_coef(const struct sim_lin *l, uint32_t kind,
	    uint32_t index);
/* Mark the dead OP_ALLOCs of a body (sim_op.skip): an unmasked fill is
 * dead when the next op of the body that names the tile (a loop names it
 * if any op inside does) overwrites the whole tile without reading it. */
void	 sim_opt_dead_allocs(const struct sim_program *p, struct sim_op *ops,
	    size_t n);
/* Mark the fused groups of a body (sim_op.fuse): runs of up to
 * SIM_FUSE_MAX fusable ops of one iteration space that give the same
 * result run row by row in lockstep. */
void	 sim_opt_fuse(struct sim_op *ops, size_t n);
/* The whole-program analyses, once p->body is planned (inner bodies
 * already fused, the top level not yet): the launch fills no op can see
 * (sim_tinfo.nofill) and copy elision (sim_tinfo.alias, sim_op.skip).
 * Returns 0 or SIM_ENOMEM. */
int	 sim_opt_program(struct sim_program *p);
/* Once every body is fused: in each fused group, pass rows on in place
 * (sim_op.fwd_src, fwd_dst, fwd) where the tiles between a load or a
 * store and the group's arithmetic are touched by nothing else; let
 * matmuls read in place the HBM that loads only they read would copy (a
 * tile, or a tile array filled by a loop); mark the loops that are one
 * matmul (sim_op.gemm_at). Returns 0 or SIM_ENOMEM. */
int	 sim_opt_forward(struct sim_program *p);

/* sim_par.c */
/* Find what may run side by side in a planned program: independent
 * programs of the grid (p->par) and loops (sim_op.par), ops whose rows
 * may be split (sim_op.par_split), and the work estimates that decide
 * whether it pays. Returns 0 or SIM_ENOMEM. */
int	 sim_par_program(struct sim_program *p);
/* Free what sim_par_program allocated and the kept worker blocks. */
void	 sim_par_free(struct sim_program *p);

/* sim_plan.c */
struct Nkir__V1__Kernel;
struct Nkir__V1__Op;
struct Nkir__V1__Loc;
struct Nkir__V1__Access;
struct Nkir__V1__Affine;
struct Nkir__V1__Tensor;

/* The state of one sim_plan_build. Per loop variable: used, inscope and
 * the range [vlo, vhi] it takes, by vstep. */
struct sim_build {
	const struct Nkir__V1__Kernel *k;
	struct sim_program	*p;
	struct sim_diag		*diag;
	uint8_t			*used;		/* bound by some loop */
	uint8_t			*inscope;
	int64_t			*vlo;
	int64_t			*vhi;
	int64_t			*vstep;
	int			 dead;		/* > 0: in a dead loop */
	uint64_t		 trips;		/* of the outer loops (sat.) */
	int			 depth;
	size_t			 nops;
	int			 grid_rank;	/* at least 1 */
	uint32_t		 grid[SIM_GRID_RANK_MAX];
	int			 guarded;	/* > 0: in an OP_IF body */
};

/* Where an operand must live (sim_plan_space). */
enum sim_plan_where {
	SIM_PLAN_NOWHERE,	/* the op has no such operand */
	SIM_PLAN_TILE,		/* on chip: SBUF or PSUM */
	SIM_PLAN_SBUF,
	SIM_PLAN_PSUM,
	SIM_PLAN_HBM,		/* hbm or shared_hbm */
	SIM_PLAN_ANY,		/* any space */
};

/* The planner's helpers, for the planners of sim_isa_plan.c. */
/* The planner of OP_ACTIVATION (operands data and bias, act, scale). */
int	 sim_plan_activation(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
/* size bytes of the program's arena (zeroed, 16-aligned; freed with the
 * program), or NULL when out of memory. */
void	*sim_plan_alloc(struct sim_build *b, size_t size);
/* Room in the arena for the kernel's table of n entries of size bytes,
 * at most max of them (what names them: "tensors"). NULL with *rc set
 * (SIM_ELIMIT, SIM_ENOMEM) when it cannot be had. */
void	*sim_plan_table(struct sim_build *b, size_t n, size_t size, int max,
	    const char *what, int *rc);
/* The NeuronCore version of b's kernel target: 2 (trn1, inf2, the
 * default), 3 (trn2) or 4 (trn3). */
int	 sim_plan_nc_version(const struct sim_build *b);
/* Set b's diag to the message and " (file:line)" of loc (the kernel's
 * when NULL); returns code. */
int	 sim_plan_err(struct sim_build *b, const struct Nkir__V1__Loc *loc,
	    int code, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));
/* Lower affine a over an iteration space of rank and shape into *out;
 * *lo, *hi its range over every loop variable, program id and axis. */
int	 sim_plan_lin(struct sim_build *b, const struct Nkir__V1__Op *o,
	    const struct Nkir__V1__Affine *a, int rank, const uint64_t *shape,
	    struct sim_lin *out, sim_i128 *lo, sim_i128 *hi);
/* The range of l over its loop variables, program ids and rank axes. */
void	 sim_plan_lin_range(struct sim_build *b, const struct sim_lin *l,
	    int rank, const uint64_t *shape, sim_i128 *lo, sim_i128 *hi);
/* Lower access acc (operand named arg of op o) into view *v. */
int	 sim_plan_view(struct sim_build *b, const struct Nkir__V1__Op *o,
	    const struct Nkir__V1__Access *acc, struct sim_view *v,
	    const char *arg);
/* v stays in bounds over the full ranges of its terms, else NKI's
 * out-of-bound error. */
int	 sim_plan_bounds(struct sim_build *b, const struct Nkir__V1__Op *o,
	    const struct sim_view *v);
/* v (operand arg) lives where (enum sim_plan_where), else NKI's address
 * space error. */
int	 sim_plan_space(struct sim_build *b, const struct Nkir__V1__Op *o,
	    const struct sim_view *v, const char *arg, int where);
/* Shapes as (an, ar, as) and (bn, br, bs) are equal, else NKI's
 * partition or shape mismatch error naming both. */
int	 sim_plan_shape_eq(struct sim_build *b, const struct Nkir__V1__Op *o,
	    const char *an, int ar, const uint64_t *as, const char *bn, int br,
	    const uint64_t *bs);
/* Operand i of op (named arg): an access, or a scalar if scalar_ok. */
int	 sim_plan_operand(struct sim_build *b, const struct Nkir__V1__Op *o,
	    struct sim_op *op, int i, const char *arg, bool scalar_ok);
/* Operand i of op: an access (not a scalar) named arg. */
int	 sim_plan_src_access(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op, int i,
	    const char *arg);
/* Operand 0 of op: an on-chip tile named arg (nsrc = 1); *vp its view. */
int	 sim_plan_src_tile(struct sim_build *b, const struct Nkir__V1__Op *o,
	    struct sim_op *op, const char *arg, struct sim_view **vp);
/* Operands 0 and 1 of op (nsrc = 2): accesses in SBUF named arg0, arg1. */
int	 sim_plan_src_sbuf2(struct sim_build *b, const struct Nkir__V1__Op *o,
	    struct sim_op *op, const char *arg0, const char *arg1);
/* The nsrc operands of an element-wise op named args[1 ..] (args[0] is
 * "dst"): scalars or on-chip tiles of dst's shape. */
int	 sim_plan_elementwise(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op, int nsrc,
	    const char *const *args);
/* sim_plan_view.c: NKIR Space names (SPACE_*), as NKI writes them. */
extern const char *const sim_plan_spaces[];
/* Is NKIR space `space` on chip (sbuf, psum)? */
bool	 sim_plan_is_chip(int space);
/* True if an unmasked store through acc writes every element of tensor
 * ti (the tiling of the tutorials; the tensor then needs no launch fill
 * if never read). */
bool	 sim_plan_covers(struct sim_build *b,
	    const struct Nkir__V1__Access *acc, const struct sim_tinfo *ti);

/*
 * Validate kernel k and build its program. On success *out is the
 * program (free with sim_plan_free); on failure diag says why and the
 * code is SIM_EPARSE, SIM_EINVAL, SIM_ELIMIT or SIM_ENOMEM.
 */
int	 sim_plan_build(const struct Nkir__V1__Kernel *k,
	    struct sim_program **out, struct sim_diag *diag);
/* Release a program built by sim_plan_build (NULL is fine). */
void	 sim_plan_free(struct sim_program *p);

/* sim_exec.c */
/* A tensor's memory during one run. */
struct sim_bind {
	char			*base;
	int			 dtype;
	bool			 chip;	/* fp32 copy of an on-chip tile */
	bool			 f32;	/* holds float (chip or fp32 HBM) */
	bool			 owned;
	size_t			 esize;	/* bytes per stored element */
	const struct sim_tinfo	*ti;
};

struct sim_coll;

/* The state of one sim_run (of one program, when programs run side by
 * side: see sim_lang_exec_grid). */
struct sim_run {
	const struct sim_program	*p;
	const struct sim_run_opts	*opts;
	struct sim_diag			*diag;
	struct sim_bind			*t;
	int64_t				*lv;	/* loop variables, then the
						 * index functions' slots */
	int64_t				 pid[SIM_GRID_RANK_MAX];
	float				*row[5];
	uint8_t				*act;
	float				*scratch;
	char				*mem;	/* the run block */
	uint64_t			 prog;	/* SPMD program being run */
	uint64_t			 t0_ns;	/* when sim_run began */
	/* nki.isa: the accumulator registers of the Vector and Scalar
	 * engines (SIM_ACC_*), zeroed at the start of every program */
	float				 acc[2][SIM_PMAX];
	/* the program's random stream (rand, dropout): a counter-based
	 * generator, seed and draws so far (sim_lang_exec_uniform) */
	uint64_t			 rng_key;
	uint64_t			 rng_ctr;
	struct sim_coll			*coll;	/* programs side by side */
	unsigned			 threads; /* sim_run_opts.threads */
	bool				 inpar;	/* a part run side by side:
						 * nothing more is split */
	struct sim_exec_slot		**slots; /* worker blocks by pool
						 * slot (threads > 1) */
};

/* Row iterator over an iteration space: offsets of up to 4 views at the
 * start of each innermost row. */
struct sim_rows {
	int			 rank;
	const uint64_t		*shape;
	uint64_t		 end0;	/* axis 0 stops there */
	uint64_t		 idx[SIM_MAX_RANK];
	int			 nv;
	const struct sim_view	*v[4];
	uint64_t		 off[4];
};

/* The interpreter's helpers, for the executors of sim_isa_exec.c. */
/* l at the run's loop variables and program ids (axes at 0). */
uint64_t sim_exec_lin(const struct sim_run *r, const struct sim_lin *l);
/* l at the start of the iterator's current row. */
int64_t	 sim_exec_lin_row(const struct sim_run *r, const struct sim_lin *l,
	    const struct sim_rows *it);
/* Start iterating the rows of (rank, shape) for views v[0 .. nv-1] (NULL
 * entries allowed): it->off[k] is view k's offset at the row's start. */
void	 sim_exec_rows_begin(struct sim_rows *it, const struct sim_run *r,
	    int rank, const uint64_t *shape, const struct sim_view **v, int nv);
/* Iterate only the rows whose axis-0 index is in [lo, hi) (rank >= 2;
 * a rank-1 space is one row and stays whole). */
void	 sim_exec_rows_range(struct sim_rows *it, uint64_t lo, uint64_t hi);
/* Step to the next row; false after the last. */
bool	 sim_exec_rows_next(struct sim_rows *it);
/* Set r's diag to the message and op's " (file:line)"; returns code. */
int	 sim_exec_fail(struct sim_run *r, const struct sim_op *op, int code,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* act[0 .. n-1]: which elements of the iterator's row every mask of its
 * views holds at; active elements of masked views are bounds-checked
 * (SIM_ERUNTIME naming the tensor). */
int	 sim_exec_active(struct sim_run *r, const struct sim_op *op,
	    const struct sim_rows *it, uint8_t *act, size_t n);
/* *act: the iterator's row's active flags, sim_exec_active's in r->act
 * when masked, else NULL (all active). Returns 0 or its error. */
int	 sim_exec_row_act(struct sim_run *r, const struct sim_op *op,
	    bool masked, const struct sim_rows *it, size_t n,
	    const uint8_t **act);
/* Keep a staged row's active flags: act's n (all 1 if act is NULL) at
 * save. */
void	 sim_exec_act_save(uint8_t *save, const uint8_t *act, size_t n);
/* A row of n fp32 values of operand s at element offset off: returns
 * them with their stride (0 or 1) in *st; tmp has room for n. With act,
 * inactive elements read as 0. */
const float *sim_exec_read(const struct sim_run *r,
	    const struct sim_operand *s, uint64_t off, size_t n, float *tmp,
	    int64_t *st, const uint8_t *act);
/* Write src[i * sst] (i < n) through view v at offset off, rounded to the
 * tensor's dtype; only active elements when act is set. */
void	 sim_exec_write(const struct sim_run *r, const struct sim_view *v,
	    uint64_t off, size_t n, const float *src, int64_t sst,
	    const uint8_t *act);
/* View s into buf, row-major; inactive elements get `inactive` (and a 0
 * in act_out when set). */
int	 sim_exec_gather(struct sim_run *r, const struct sim_op *op,
	    const struct sim_operand *s, float *buf, uint8_t *act_out,
	    float inactive);
/* buf (row-major in v's shape) through view v. */
int	 sim_exec_scatter(struct sim_run *r, const struct sim_op *op,
	    const struct sim_view *v, const float *buf);
/* The executor's ALU_INVERT for a dst of an unsigned dtype of that many
 * bits (1 for bool): sim_plan_alu_width picks it. */
#define SIM_ALU_INVERT_U(bits)	(256 + (bits))
/* o[i] = a[i * sa] alu b[i * sb], strides 0 or 1 (NKIR AluOp or
 * SIM_ALU_INVERT_U); unary operators take a and ignore b. */
void	 sim_exec_alu_row(int alu, float *o, const float *a, int64_t sa,
	    const float *b, int64_t sb, size_t n);
/* The identity of reduce operator alu (NKIR AluOp): 0, 1, -inf, ... */
float	 sim_exec_reduce_init(int alu);
/* acc alu x[i * sx] over the active elements (act NULL: all) of n; for
 * ALU_VAR the squared deviations from *mean. Subtract folds as add. */
float	 sim_exec_fold(int alu, float acc, const float *x, int64_t sx,
	    const uint8_t *act, size_t n, const float *mean);
/* Run ops[0 .. n-1] of program r->prog (for the bodies of sim_lang_exec.c:
 * ifs, programs side by side). */
int	 sim_exec_body(struct sim_run *r, const struct sim_op *ops, size_t n);
/* o[i] = act(a[i * sa] * op->scale + b[i * sb]) (op->act). */
void	 sim_exec_act_row(const struct sim_op *op, float *o, const float *a,
	    int64_t sa, const float *b, int64_t sb, size_t n);
/* c plus one for each of the n elements active in act (all if NULL),
 * added one by one in fp32 (sim_exec_row.c). */
float	 sim_exec_count(float c, const uint8_t *act, size_t n);

/* The interpreter's files (sim_exec*.c) among themselves. */
/*
 * Work (element operations, sim_op.par_work) below which an op's rows are
 * not split, per part, and below which a loop's iterations or the grid's
 * programs are not spread over the pool. Handing out parts costs a few
 * microseconds; but a worker that took a part and is then preempted holds
 * the caller for the rest of its time slice (milliseconds on a loaded
 * machine), so only work of a millisecond or more is worth the risk
 * (docs/performance.md, "Thresholds").
 */
#ifndef SIM_EXEC_SPLIT_MIN
#define SIM_EXEC_SPLIT_MIN	(512u << 10)
#endif
#ifndef SIM_EXEC_REGION_MIN
#define SIM_EXEC_REGION_MIN	(1u << 20)
#endif
/* Parts per thread of a spread loop or grid or a split op, so that a
 * thread the machine runs slower (or not at all: a shared machine) takes
 * fewer and the others take the rest. */
#define SIM_EXEC_CHUNKS		4
/* malloc for a tensor or a run block (large ones on huge pages); freed
 * with free(). */
void	*sim_exec_tensor_alloc(size_t n);
/* Set r's program ids, accumulators and random stream for SPMD program
 * prog (sim_exec.c). */
void	 sim_exec_program_ids(struct sim_run *r, uint64_t prog);
/* The executors of sim_exec_ew.c, sim_exec_reduce.c and
 * sim_exec_matmul.c, called by sim_exec.c's dispatch: each runs op
 * (sim_exec_fused: the k ops of a fused group) in run r; 0 or an error
 * with r's diag set. sim_exec_gemm_loop returns 1 when the loop must run
 * as a loop after all. */
int	 sim_exec_elementwise(struct sim_run *r, const struct sim_op *op);
int	 sim_exec_fused(struct sim_run *r, const struct sim_op *ops,
	    size_t k);
int	 sim_exec_reduce(struct sim_run *r, const struct sim_op *op);
int	 sim_exec_bn(struct sim_run *r, const struct sim_op *op);
int	 sim_exec_matmul(struct sim_run *r, const struct sim_op *op);
int	 sim_exec_gemm_loop(struct sim_run *r, const struct sim_op *op);
/* sim_exec_par.c: point r's scratch, rows and active flags into run block
 * mem (scratch: and r->mem). */
void	 sim_exec_run_rows(struct sim_run *r, char *mem, bool scratch);
/* Give r's pool slots' memory back to its program (or free it). */
void	 sim_exec_slots_release(struct sim_run *r);
/* Into how many parts to split `units` units of `work` element operations
 * (at least min of work each): 1 when not worth it or not allowed. */
unsigned sim_exec_parts(const struct sim_run *r, uint64_t units,
	    uint64_t work, uint64_t min);
/* Run fn(w, op, k, lo, hi, ctx) over [0, n) in parts side by side when
 * op's work is worth it (each part a multiple of grain units but the
 * last), else whole on the caller's thread; parts must write disjoint
 * elements. 0 or the first failure in sequential order. */
int	 sim_exec_split(struct sim_run *r, const struct sim_op *op, size_t k,
	    uint64_t n, uint64_t grain, uint64_t work,
	    int (*fn)(struct sim_run *, const struct sim_op *, size_t,
	    uint64_t, uint64_t, void *), void *ctx);
/* Spread n iterations of work `work` each over the pool? */
bool	 sim_exec_spread(const struct sim_run *r, uint64_t n,
	    uint64_t work);
/* Run the n iterations of loop (NULL: the n programs of the grid) in
 * chunks side by side, with rg's tiles private to each chunk; 0 or the
 * first failure in sequential order. */
int	 sim_exec_region(struct sim_run *r, const struct sim_op *loop,
	    const struct sim_par_region *rg, uint64_t n);

/* sim_isa_plan.c: the planners of the nki.isa kinds, named by
 * sim_plan.c's table: each validates op o (its dst already planned when
 * the table says where it lives) and fills op, as sim_plan_kinds[].plan
 * does (see there). */
int	 sim_isa_plan_act_acc(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_acc_read(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_partition_reduce(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_scan(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_stt(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_ts_acc(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_copy_dynamic(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_copy_predicated(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_dropout(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_affine_select(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_range_select(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_select_reduce(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_sequence_bounds(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_local_gather(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_dma_copy(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_dma_transpose(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_max8(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_find_index8(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_match_replace8(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_isa_plan_shuffle(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);

/* sim_isa_exec.c */
/* The accumulator register files of struct sim_run. */
#define SIM_ACC_VECTOR	0
#define SIM_ACC_SCALAR	1
/* Run op, one of the nki.isa kinds 40-79 (op->isa set), once. */
int	 sim_isa_exec(struct sim_run *r, const struct sim_op *op);

/* sim_plan.c, for sim_lang_plan.c */
/* Plan the n ops of a body into *out (arena memory): each op, then the
 * body's optimizations (and the whole program's at depth 0). */
int	 sim_plan_body(struct sim_build *b,
	    struct Nkir__V1__Op *const *ops, size_t n, struct sim_op **out);

/* sim_lang_plan.c: the planners of the nki.language kinds 80-119, named
 * by sim_plan.c's table, as sim_isa_plan.c's are; and what the language
 * adds to the kernel (index functions, constants, block dimensions). */
int	 sim_lang_plan_rand(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_lang_plan_seed(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_lang_plan_gather(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_lang_plan_all_reduce(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_lang_plan_if(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_lang_plan_bitcast(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
/* act is one of the activation functions 80-119 add. */
bool	 sim_lang_plan_act_ok(int act);
/* Validate Kernel.fns into p->fns: each gets the slot after the loop
 * variables (p->nloopvars + i) that its TERM_FN terms read. */
int	 sim_lang_plan_fns(struct sim_build *b);
/* A TERM_FN term of o naming fn index: its slot, and its range over the
 * current loop ranges (set into b->vlo/vhi[slot]); the fn's loop
 * variables must be in scope. */
int	 sim_lang_plan_fn_term(struct sim_build *b,
	    const struct Nkir__V1__Op *o, uint32_t index, uint32_t *slot);
/* The fns a loop over op->var must refresh each trip (op->fns). */
int	 sim_lang_plan_loop_fns(struct sim_build *b, struct sim_op *op);
/* Tile t's bytes per partition of one block (*per_block) from its bytes
 * per partition: block dimensions are logical, the memory limits hold
 * per block. */
int	 sim_lang_plan_block_bytes(struct sim_build *b,
	    const struct Nkir__V1__Tensor *t, const struct sim_tinfo *ti,
	    uint64_t bytes, uint64_t *per_block);
/* A FILL_DATA tensor t: its bytes copied into ti->data. */
int	 sim_lang_plan_data(struct sim_build *b,
	    const struct Nkir__V1__Tensor *t, struct sim_tinfo *ti);

/* sim_lang_exec.c */
/* Run op, one of the nki.language kinds 80-119. */
int	 sim_lang_exec_op(struct sim_run *r, const struct sim_op *op);
/* The next draw of the program's random stream: uniform in [0, 1). */
float	 sim_lang_exec_uniform(struct sim_run *r);
/* splitmix64's finalizer: a bijective mix of 64 bits. */
uint64_t sim_lang_mix(uint64_t z);
/* Seed r's random stream (nl.random_seed): its key from seed, no draws. */
void	 sim_lang_exec_seed_set(struct sim_run *r, uint64_t seed);
/* Refresh the index functions fns[0 .. n-1] (indices into p->fns). */
void	 sim_lang_exec_fns(struct sim_run *r, const uint32_t *fns,
	    uint32_t n);
/* Start program r->prog: the random stream's default seed, every index
 * function. */
void	 sim_lang_exec_program(struct sim_run *r);
/* Run every program of a collective kernel side by side (one thread per
 * program, each with its own tiles; all_reduce meets there). r is the
 * bound run of sim_run; returns 0 or the first program's error. */
int	 sim_lang_exec_grid(struct sim_run *r);

/* sim_op06_plan.c, sim_op06_exec.c: NKI 0.6's kinds 120-139 */
/* Plan OP_DYN_LOOP o (condition src0, one SBUF element; body Op.loop.body)
 * into op: an OP_IF without conditions, dyn_loop set. */
int	 sim_op06_plan_dyn_loop(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
/* Run a planned OP_DYN_LOOP: its body while the condition is nonzero
 * (read before each trip), at most SIM_DYN_TRIPS_MAX trips (then
 * SIM_ERUNTIME); the run's cancel flag checked each trip. */
int	 sim_op06_exec_dyn_loop(struct sim_run *r, const struct sim_op *op);
/* Tensor t (index i) of the kernel, a Tensor.view_of: check and record
 * it (the tensors before it are planned). */
int	 sim_op06_mx_plan_view_of(struct sim_build *b,
	    const struct Nkir__V1__Tensor *t, size_t i);
/* dst v of op o: not an HBM dtype view nor a tensor that has one. */
int	 sim_op06_mx_plan_dst(struct sim_build *b,
	    const struct Nkir__V1__Op *o, const struct sim_view *v);
/* op (planned from o) touches packed MX tiles only as a copy of the same
 * dtype or an MX op, else NKI-worded SIM_EINVAL. */
int	 sim_op06_mx_plan_packed(struct sim_build *b,
	    const struct Nkir__V1__Op *o, const struct sim_op *op);
/* sim_op06_mx_plan.c, sim_op06_mx_exec.c: OP_QUANTIZE_MX and OP_MATMUL_MX
 * (NKI 0.6's MX ops): NKI's limits checked (platform_target trn3), then
 * run. A scaling group is SIM_MX_GROUP partitions x one x4 element. */
#define SIM_MX_GROUP	8
/* The scale view's partition of the group starting at data partition p:
 * the quadrant the group comes from. */
uint64_t sim_op06_mx_scale_row(uint64_t p);
/* The largest unbiased exponent (quantize_mx's E_max) of packed fp8 dt. */
int	 sim_op06_mx_emax(int dt);
int	 sim_op06_mx_plan_quantize(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_op06_mx_plan_matmul(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_op06_mx_exec_quantize(struct sim_run *r, const struct sim_op *op);
int	 sim_op06_mx_exec_matmul(struct sim_run *r, const struct sim_op *op);
/* sim_op06_rng_plan.c, sim_op06_rng_exec.c: OP_RAND_GET_STATE and
 * OP_RAND_SET_STATE; the state is SIM_RNG_WORDS words of SIM_RNG_BITS
 * bits. */
#define SIM_RNG_WORDS	6
#define SIM_RNG_BITS	24
int	 sim_op06_rng_plan_get(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_op06_rng_plan_set(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_op06_rng_exec_get(struct sim_run *r, const struct sim_op *op);
int	 sim_op06_rng_exec_set(struct sim_run *r, const struct sim_op *op);
/* sim_op06_ti.c: Tensor Indirection. Plan OP_TI_GATHER o (dst [P, N] <-
 * the columns of on-chip src0 [P, ..] at the offsets of the integer SBUF
 * index src1) and OP_TI_SCATTER o (on-chip dst [P, ..] <- src0 [P, N] at
 * them; op->opaque), NKI's limits checked. */
int	 sim_op06_plan_ti_gather(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
int	 sim_op06_plan_ti_scatter(struct sim_build *b,
	    const struct Nkir__V1__Op *o, struct sim_op *op);
/* Run a planned OP_TI_GATHER or OP_TI_SCATTER; an offset out of bounds
 * fails the run (SIM_ERUNTIME, naming it). */
int	 sim_op06_exec_ti(struct sim_run *r, const struct sim_op *op);

#endif /* NKID_SIM_IMPL_H */
