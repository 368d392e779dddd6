/*
 * sim.h: the NKIR executor (format "nkir/1"): parse and validate a kernel
 * against NKI's hardware limits, lower it to an executable image, execute
 * the image on the host CPU.
 *
 * Thread safety: a loaded struct sim_program is immutable (but for a cache
 * of runs' scratch memory, behind a lock) and may be executed by several
 * threads at once; each sim_run keeps its own state. A run may use the
 * executor's worker threads (sim_run_opts.threads), a pool shared by the
 * process and started on first use; OpenBLAS runs single-threaded under
 * it.
 */
#ifndef NKID_SIM_H
#define NKID_SIM_H

#include <stddef.h>
#include <stdint.h>

#define SIM_FORMAT	"nkir/1"
#define SIM_MAX_RANK	8

/* Error codes: 0 on success, one of these (negative) on failure. */
enum sim_err {
	SIM_OK = 0,
	SIM_EPARSE = -1,	/* malformed or truncated IR / image */
	SIM_EINVAL = -2,	/* valid IR that breaks a language or
				 * hardware rule */
	SIM_ELIMIT = -3,	/* over one of the executor's own bounds */
	SIM_EARG = -4,		/* a tensor does not match the signature */
	SIM_ECANCELED = -5,	/* cancelled (sim_run_opts.cancel) */
	SIM_ERUNTIME = -6,	/* failed during execution */
	SIM_ENOMEM = -7,
};

/* dtypes, numbered as nkir.v1.DType. */
enum sim_dtype {
	SIM_DT_INVALID = 0,
	SIM_DT_FLOAT32 = 1, SIM_DT_FLOAT16 = 2, SIM_DT_BFLOAT16 = 3,
	SIM_DT_INT8 = 4, SIM_DT_INT16 = 5, SIM_DT_INT32 = 6,
	SIM_DT_UINT8 = 7, SIM_DT_UINT16 = 8, SIM_DT_UINT32 = 9,
	SIM_DT_FP8_E4M3 = 10, SIM_DT_FP8_E5M2 = 11, SIM_DT_TFLOAT32 = 12,
	SIM_DT_BOOL = 13,
	/* NKI 0.6's MX types (sim_dtype_is_mx): on chip an x4 element is
	 * held as its bits (fp8 x4: the float32 of its 4 bytes; fp4 x4: its
	 * 16-bit pattern as an integer), which only copies, quantize_mx
	 * and nc_matmul_mx take */
	SIM_DT_FP8_E8M0 = 14, SIM_DT_FP8_E5M2_X4 = 15,
	SIM_DT_FP8_E4M3_X4 = 16, SIM_DT_FP4_E2M1_X4 = 17,
	SIM_DT_MAX = SIM_DT_FP4_E2M1_X4
};

/* Error detail: a message in NKI's words with the kernel's file and line,
 * e.g. "Size of partition dimension 256 exceeds architecture limitation
 * of 128 (kernel.py:14)". Always NUL-terminated. */
struct sim_diag {
	char	msg[1024];
};

/* A loaded kernel (opaque). */
struct sim_program;

/* A kernel parameter or output: borrowed from the program. */
struct sim_sig {
	const char	*name;
	int		 dtype;
	int		 rank;
	uint64_t	 shape[SIM_MAX_RANK];
};

/* A host tensor. For inputs, data is borrowed and must hold nbytes =
 * product(shape) * sim_dtype_size(dtype) little-endian bytes. For outputs,
 * sim_run fills every field and data is malloc'd: the caller frees it. */
struct sim_tensor {
	int		 dtype;
	int		 rank;
	uint64_t	 shape[SIM_MAX_RANK];
	void		*data;
	size_t		 nbytes;
};

/* One executed op, for profiling (sim_run_opts.op_cb). */
struct sim_op_event {
	const char	*op;		/* "load", "matmul", ... (static) */
	const char	*engine;	/* "dma", "tensor", "vector", "scalar",
					 * "gpsimd" (static) */
	const char	*file;		/* kernel source file (borrowed) or
					 * NULL */
	uint32_t	 line;
	uint64_t	 program;	/* SPMD program index */
	uint64_t	 start_ns;	/* since sim_run began */
	uint64_t	 dur_ns;
	uint64_t	 elements;	/* elements the op produced */
};

struct sim_run_opts {
	/* device_print output, called in execution order; may be NULL. */
	void			(*print_cb)(void *arg, const char *text,
				    size_t len);
	void			*print_arg;
	/* Checked between ops; when it becomes non-zero the run stops with
	 * SIM_ECANCELED. May be NULL. */
	const volatile int	*cancel;
	/* Called after every executed op (loops excluded; each op of a
	 * fused group separately, the group then runs unfused), in
	 * execution order, with the event borrowed for the call. May be
	 * NULL; when set, runs are slower. */
	void			(*op_cb)(void *arg,
				    const struct sim_op_event *ev);
	void			*op_arg;
	/* Where the outputs go: out_bufs[i] (of exactly output i's bytes,
	 * owned by the caller), or, if out_bufs or out_bufs[i] is NULL, new
	 * memory that sim_run allocates. The executor may write there
	 * during the run. May be NULL. */
	void *const		*out_bufs;
	/* Threads the run may use: the caller's and threads - 1 workers of
	 * the executor's pool (0 or 1: the caller's alone; at most 64).
	 * Independent programs of the grid, independent loop iterations
	 * and the rows of large ops then run side by side; the results are
	 * the same bits for every value. */
	unsigned		 threads;
};

/* Static string naming an error code ("invalid kernel", ...). */
const char	*sim_strerror(int err);
/* NKI's name of NKIR op kind ("load", "matmul", ...; "op" if unknown). */
const char	*sim_op_name(int kind);

/* The engines an instruction runs on (SIM_ENGINE_DMA: a DMA transfer). */
enum sim_engine {
	SIM_ENGINE_DMA = 1,
	SIM_ENGINE_TENSOR,
	SIM_ENGINE_VECTOR,
	SIM_ENGINE_SCALAR,
	SIM_ENGINE_GPSIMD,
};
/*
 * The engine (enum sim_engine) an op of NKIR kind with NKIR engine field
 * engine and ALU operator alu runs on: the engine it asks for, else where
 * NKI places it. The one table of it: the executor's profile events and
 * the performance model (model/) both read it.
 */
int		 sim_op_engine_id(int kind, int engine, int alu);

/* numpy's name of a dtype ("float32", "bfloat16", "float8_e4m3fn", ...),
 * or NULL if invalid. */
const char	*sim_dtype_name(int dtype);
/* The dtype named by numpy's name, or SIM_DT_INVALID. */
int		 sim_dtype_from_name(const char *name);
/* Bytes per element, 0 if invalid. */
size_t		 sim_dtype_size(int dtype);
/* Encode n floats as dtype into dst (n * sim_dtype_size bytes), rounded
 * the way the executor rounds (integers saturate). */
void		 sim_dtype_from_float(int dtype, void *dst, const float *src,
		    size_t n);

/*
 * Parse and validate NKIR bytes and lower them to an executable image.
 * On success *image is malloc'd (the caller frees it with free()) and
 * *image_len set. The image starts with a magic and a version; it is what
 * the cache stores as the cpu backend's NEFF.
 */
int		 sim_compile(const void *ir, size_t ir_len, void **image,
		    size_t *image_len, struct sim_diag *diag);

/* Bytes of an image's header; the packed NKIR follows it. */
#define SIM_IMAGE_HEADER	32u

/*
 * Seal the image of len bytes at image (len >= SIM_IMAGE_HEADER): write
 * its magic, the length of what follows the header and the checksum of
 * it, as sim_compile does. The version and the other header fields are
 * left as they are (a fuzz target seals random bytes with it).
 */
void		 sim_image_seal(void *image, size_t len);

/*
 * The packed NKIR inside an image made by sim_compile: checks its magic,
 * version, header and checksum, then points *ir into image (*ir_len
 * bytes). Returns 0, or SIM_EPARSE with the reason in diag (NULL: none).
 * The one parser of the image's layout (docs/nkir.md): the loader and the
 * performance model (model/) both read it through this.
 */
int		 sim_image_ir(const void *image, size_t len, const void **ir,
		    size_t *ir_len, struct sim_diag *diag);

/* Load an image made by sim_compile (checks magic, version, integrity).
 * The caller frees *out with sim_program_free. */
int		 sim_program_load(const void *image, size_t len,
		    struct sim_program **out, struct sim_diag *diag);
/* Free p and all it holds (NULL is fine). */
void		 sim_program_free(struct sim_program *p);
/* An estimate of the work one sim_run does: elements of the tensors it
 * allocates plus element operations summed over every op execution of
 * every program (saturating at UINT64_MAX).
 * Lets a caller refuse or budget a kernel before running it. */
uint64_t	 sim_program_cost(const struct sim_program *p);

/* Bytes of memory the loaded program p holds now: its plan and, once it
 * ran, the run memory it keeps for the next run. Not while p runs. */
size_t		 sim_program_footprint(const struct sim_program *p);
/* The kernel's name (borrowed from p). */
const char	*sim_program_name(const struct sim_program *p);
/* The kernel's parameters and outputs: i-th (borrowed from p), NULL if
 * i is out of range. */
size_t		 sim_program_nparams(const struct sim_program *p);
const struct sim_sig *sim_program_param(const struct sim_program *p,
		    size_t i);
size_t		 sim_program_noutputs(const struct sim_program *p);
const struct sim_sig *sim_program_output(const struct sim_program *p,
		    size_t i);

/*
 * Execute p once (every program of its SPMD grid). inputs are matched to
 * the parameters in order: count, dtype and shape must agree, else
 * SIM_EARG with a message naming the argument. On success outputs[0 ..
 * noutputs-1] hold the kernel's returned tensors (noutputs must equal
 * sim_program_noutputs); an output written into opts->out_bufs[i] has
 * that pointer as data (the caller's: sim_tensors_release must not see
 * it). opts may be NULL.
 */
int		 sim_run(const struct sim_program *p,
		    const struct sim_tensor *inputs, size_t ninputs,
		    struct sim_tensor *outputs, size_t noutputs,
		    const struct sim_run_opts *opts, struct sim_diag *diag);
/* Free the data of n tensors filled by sim_run. */
void		 sim_tensors_release(struct sim_tensor *t, size_t n);

#endif /* NKID_SIM_H */
