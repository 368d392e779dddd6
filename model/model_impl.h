/* model_impl.h: what the model's files share: its constants (each citing its source), targets, ops, tensors, the run's context, and the passes' entry points. */
#ifndef NKID_MODEL_IMPL_H
#define NKID_MODEL_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "nkir.pb-c.h"

#include "model/model.h"

/*
 * Every constant below cites the document it comes from. "arch" is
 * aws-neuron-sdk@8a38e733 general/nki/arch/trainium_inferentia2_arch.rst,
 * "isa" its general/nki/api/nki/isa/__init__.py (the per-instruction
 * "Estimated instruction cost" sections), "perf" its
 * general/nki/nki_perf_guide.rst, "trn2 arch" aws-neuron-sdk@81ce03ae
 * nki/guides/architecture/trainium2_arch.rst, "trn3 arch" its
 * trainium3_arch.rst, "dma intro" aws-neuron-sdk@81ce03ae
 * nki/get-started/about/nki-dma-overview.rst, "dma-bandwidth" its
 * nki/deep-dives/nki-dma-bandwidth-guide.rst, "dge" its
 * nki/deep-dives/nki-dge.rst. Values marked GUESSED, CALIBRATED or READ
 * OFF A GRAPH are listed in docs/model.md ("What is guessed"), and every
 * rule in its table "Costs and their sources".
 */

/* isa: "MIN_II is roughly 64 engine cycles" (Vector/Scalar/GpSimd). */
#define MODEL_MIN_II		64.0
/* isa (iota, affine_select): "GPSIMD_START ... roughly 150 engine cycles". */
#define MODEL_GPSIMD_START	150.0
/* isa (tensor_copy_dynamic_src/dst): "MIN_II_DYNAMIC is roughly 600 engine cycles". */
#define MODEL_MIN_II_DYNAMIC	600.0
/* isa (local_gather): C's "t is a constant 4". */
#define MODEL_GATHER_T		4.0
/* isa (nc_matmul): max(min(64, N_stationary), N_moving); arch: "MM_INIT_LATENCY is 64 TensorE cycles". */
#define MODEL_MM_INIT		64.0
/* The most sources an op reads (nc_matmul_mx: data and scales of
 * stationary and moving). */
#define MODEL_NSRC		4
/* isa (nc_matmul): "4 * max(...)" for float32 inputs. */
#define MODEL_MM_FP32_FACTOR	4.0
/*
 * Latency from an instruction's end to its result being usable by a
 * dependent instruction, in the engine's cycles. Vector: arch ("add a
 * static instruction overhead of 100 engine cycles" for dependent
 * back-to-back instructions). Scalar: perf (dependent one-element
 * activations initiate every "264 ScalarE cycles"; minus MIN_II).
 * Tensor: MM_INIT_LATENCY (arch), GUESSED as the pipeline latency.
 * GpSimd: GUESSED equal to Vector.
 */
#define MODEL_LAT_TENSOR	64.0
#define MODEL_LAT_VECTOR	100.0
#define MODEL_LAT_SCALAR	200.0
#define MODEL_LAT_GPSIMD	100.0
/* arch: a most-minor free stride over 16 bytes halves SBUF/PSUM bandwidth ("roughly 50% performance hit"). */
#define MODEL_STRIDE_BYTES	16
/* arch: 16 DMA engines per NeuronCore-v2; dma intro: 16 for v2-v4; 8 partitions each (128 / 16). */
#define MODEL_DMA_PARTS		8
/*
 * dma intro, figure "DMA Throughput varying Bytes per Partition for
 * p_dim = 128": throughput grows in proportion to the bytes per
 * partition up to about 2.5 KiB (2048 B reach ~81% of the plateau, 1024
 * B ~42%, 512 B ~21%) and is flat beyond 4 KiB. So one transfer (8
 * partitions on one engine) takes at least as long as moving 8 x 2500
 * bytes at the engine's peak. READ OFF A GRAPH; the graph is for trn2,
 * applying the same bytes to trn1 is GUESSED.
 *
 * That floor is a latency of the transfer's queue, not time the engine
 * spends moving bytes: the profile of dma intro's Example 2 shows a
 * 2 KiB transfer ([128,128] bf16, 8 partitions) occupying its engine for
 * 97 ns, and Example 1 32 KiB in 1416 ns, both at the engine's peak
 * rate; dma-bandwidth (aws-neuron-sdk@81ce03ae nki/deep-dives/
 * nki-dma-bandwidth-guide.rst) names the fixed cost "descriptor setup,
 * synchronization, and semaphore-to-start latency". A queue runs its
 * transfers in order (dma intro), so one queue's transfers still take
 * max(floor, bytes / bandwidth) each; another queue's transfer on the
 * same engine moves its bytes in between.
 */
#define MODEL_DMA_KNEE_PP	2500.0
/*
 * Bytes per partition up to which a DMA engine sustains the target's low
 * share of its peak, and from which its high share (dma-bandwidth: "≥ 2
 * KiB per partition: Approaches peak bandwidth"; dma intro: "at 4096
 * free bytes, we are able to nearly saturate DMA bandwidth").
 */
#define MODEL_DMA_EFF_LO_PP	1024.0
#define MODEL_DMA_EFF_HI_PP	2048.0
/*
 * Each DMA buffer (a contiguous run) costs at least this many bytes of
 * engine time (dma-bandwidth: "< 256 B per partition: Severely
 * overhead-bound", no figure). GUESSED, bounded: 32 B is the largest
 * power of two at which nki-samples' SD attention kernel (a
 * load_transpose2d and a transposed store, every element a run) models
 * within its unit test's bound on the hardware (docs/model.md); 64 B put
 * it 1.41x over.
 */
#define MODEL_DMA_BUF_MIN	32.0
/*
 * DMA queues per engine the model uses: one for loads (into SBUF/PSUM),
 * one for stores (to HBM). dma intro: "16 DMA queues per DMA engine";
 * transfers of one queue run in order, "DMA transfers from different DMA
 * queues are scheduled in a round robin fashion"; the queue "is typically
 * tied to the trigger engine". In NKI's trn1 profile of mamba_v1
 * (fused_mamba.rst, figure mamba_v1_profile_4k_chan) the loads are on
 * qSyncIO0 and the stores on qGpSimdIO0, as is the store of perf's figure
 * 30 ("variable: output"). Which queue a dma_copy takes is ASSUMED.
 */
#define MODEL_DMA_QCLASSES	2
/*
 * dge: "Each TRN2 NeuronCore has two DGE instances" (hardware descriptor
 * generation, "triggered by the Scalar Engine or Sync Engine sequencer"):
 * one for the loads' trigger engine, one for the stores'.
 */
#define MODEL_DGE_UNITS		2
/*
 * trn2 arch ("DMA Transpose"; aws-neuron-sdk@81ce03ae nki/guides/
 * architecture/trainium2_arch.rst): the DMA engines transpose as they
 * move, "DMA transpose on Trainium2 can achieve up to 90% DMA throughput
 * utilization given hardware-friendly tensor access patterns" (HBM to
 * SBUF), and "SBUF2SBUF transpose can achieve up to 50% of DMA throughput
 * on Trainium2": the share of an engine's rate a dma_transpose of 2-byte
 * elements moves its bytes at (isa dma_transpose: the hardware-DGE
 * transpose takes "src.dtype is 2 bytes"). trn3 as trn2 (its arch guide
 * describes no other).
 */
#define MODEL_DMA_T_HBM		0.90
#define MODEL_DMA_T_SBUF	0.50
/* On-chip RAM ports engines share on trn1 (model_port, model_sched.c). */
#define MODEL_PORT_SBUF		0	/* VectorE, GpSimd */
#define MODEL_PORT_PSUM		1	/* VectorE, ScalarE */
#define MODEL_NPORTS		2
/* Busy intervals kept per DMA engine and queue for placing the other
 * queue's transfers in gaps: a modelling shortcut, not a hardware figure. */
#define MODEL_DMA_IVALS		16
/* arch: 8 PSUM banks of 2 KiB per partition; up to eight outstanding accumulation groups. */
#define MODEL_PSUM_BANKS	8
#define MODEL_PSUM_BANK_BYTES	2048
/* Most buffers the compiler gives one tile declared in a loop. GUESSED. */
#define MODEL_MAX_NBUF		4
/* Write records kept per tile buffer for dependencies. */
#define MODEL_NWREC		16
#define MODEL_MAX_DEPTH		16
#define MODEL_MAX_GRID		4
#define MODEL_MAX_VARS		4096
#define MODEL_MAX_INSTRUCTIONS	1000000000ULL
/* Instructions whose critical-path links are kept (12 bytes each). */
#define MODEL_CRIT_MAX		(4u << 20)

enum { ENG_T = MODEL_TRACK_TENSOR, ENG_V = MODEL_TRACK_VECTOR,
    ENG_S = MODEL_TRACK_SCALAR, ENG_G = MODEL_TRACK_GPSIMD, ENG_DMA = -1,
    ENG_NONE = -2, ENG_FUSED = -3 };

struct model_tgt {
	const char	*name;
	double		 ghz[4];	/* tensor, vector, scalar, gpsimd */
	double		 vec_per32;	/* VectorE elements/partition/cycle */
	double		 vec_per16;	/* ... all operands 16-bit */
	double		 sca_per16;	/* ScalarE, all operands 16-bit */
	double		 dma_bw;	/* peak bytes/ns per DMA engine */
	double		 dma_eff_lo;	/* share of dma_bw sustained <= 1 KiB/p */
	double		 dma_eff_hi;	/* ... from 4 KiB per partition */
	double		 dma_lat;	/* ns to land after the bytes moved,
					 * pipelined; 0: knee */
	double		 exec_ns;	/* an execution's start-up and
					 * tear-down */
	double		 dge_ns;	/* hardware DGE per DMA instruction */
	double		 peak_flops;	/* bf16 FLOPs per ns */
	uint64_t	 sbuf_pp;	/* SBUF bytes per partition */
	int		 fp8_fast;	/* TensorE 4x128 fp8 input */
	int		 shared_ports;	/* VectorE shares SBUF with GpSimd,
					 * PSUM with ScalarE */
	uint32_t	 cores;		/* physical NeuronCores of a logical
					 * one (LNC) */
};

struct model_term {
	uint32_t	 id;		/* loop var or grid axis */
	int		 prog;		/* 1: a grid axis, 2: an index fn */
	int64_t		 coef;		/* flat-offset coefficient */
	int		 part;		/* indexes the partition too */
};

/* An operand: the static part of an access. */
struct model_acc {
	const Nkir__V1__Access *ir;	/* the kernel's (masks) */
	uint32_t	 tensor;
	int64_t		 c;		/* flat offset, constant part */
	int64_t		 amin, amax;	/* range of the axis part */
	int64_t		 pc;		/* partition, constant part */
	int64_t		 pmin, pmax;	/* ... range of its axis part */
	struct model_term *terms;
	size_t		 nterms;
	uint64_t	 parts;		/* shape[0] */
	uint64_t	 n;		/* elements per partition */
	int		 part_bcast;	/* one partition read by all */
	int		 free_bcast;	/* one element per partition */
	int		 slow_stride;	/* most-minor stride > 16 bytes */
	uint64_t	 runs;		/* contiguous runs per partition */
	int		 covers;	/* touches every element once */
	int		 dtype;
	int		 space;
};

struct model_pre {
	int		 track;
	double		 dur_ns;
	double		 lat_ns;
	const char	*name;
	int		 chain;		/* waits for the pre before */
};

struct model_op {
	int		 kind;
	int		 act;		/* OP_ACTIVATION: its function */
	int		 flex;		/* the compiler picks track or alt_track */
	int		 alt_track;	/* flex: the other engine */
	double		 alt_dur_ns;	/* ... its duration there */
	double		 alt_lat_ns;	/* ... and latency */
	const char	*name;
	int		 track;		/* ENG_*, ENG_DMA, ENG_NONE */
	double		 dur_ns;
	double		 lat_ns;
	struct model_acc *dst;
	struct model_acc *src[MODEL_NSRC];
	int		 nsrc;
	int		 dst_read;	/* the op reads its destination */
	int		 new_version;	/* starts a new buffer of dst */
	struct model_pre pre[6];
	int		 npre;
	uint32_t	 pieces;	/* DMA transfers */
	uint32_t	 first_q;	/* DMA: engine of piece 0 (set per run) */
	int		 dma_q;		/* DMA: queue class, 0 load, 1 store */
	double		 piece_ns, last_ns;	/* time on its queue */
	double		 piece_occ, last_occ;	/* time on its engine */
	uint64_t	 piece_bytes, last_bytes;
	/* DMA per partition: bytes, contiguous runs, engine rate, floor;
	 * the on-chip side whose masks say which partitions move. */
	double		 dma_pp, dma_runs, dma_bw, dma_tmin;
	const struct model_acc *dma_side;
	double		 flops;
	const char	*file;
	uint32_t	 line;
	uint32_t	 inv_mask;	/* depths where it runs on iteration 0 only */
	int		 depth;
	/*
	 * SBUF spilling (model_tensors_spill): a reload DMA before the op
	 * for each source (MODEL_NSRC: its destination, read) whose tile was
	 * spilled,
	 * starting no sooner than op reload_after[i] last ended; a spill
	 * store of its destination after it.
	 */
	struct model_op	*reload[MODEL_NSRC + 1];
	uint32_t	 reload_after[MODEL_NSRC + 1];
	struct model_op	*spill;
	double		 done;		/* last execution's end */
	uint32_t	 done_id;
	uint64_t	 bcast_pp;	/* SBUF its broadcast copies take */
};

struct model_node {
	int		 loop;		/* 1: a loop, 2: an if */
	uint32_t	 op;
	uint32_t	 var;
	int64_t		 start;
	int64_t		 step;
	uint64_t	 trip;
	uint32_t	 first;		/* children: nodes[first .. first+n) */
	uint32_t	 n;
	const Nkir__V1__Branch *br;	/* an if: its conditions, and the */
	uint32_t	 efirst;	/* else children */
	uint32_t	 en;
};

/*
 * What an access touches now: flat offsets [lo, hi] (model_acc_new) and,
 * on chip, partitions [plo, phi] (0 for HBM): two accesses overlap only
 * if both ranges do, so writes to disjoint partitions of a tile are not
 * ordered.
 */
struct model_rng {
	int64_t		 lo, hi;
	int64_t		 plo, phi;
};

struct model_wrec {
	struct model_rng r;
	double		 ready;
	uint32_t	 id;
};

struct model_tbuf {
	double		 read_done;	/* the last read of any region */
	uint32_t	 read_id;
	int		 nr;		/* reads by region, as writes */
	struct model_wrec r[MODEL_NWREC];
	int		 nw;
	struct model_wrec w[MODEL_NWREC];
};

struct model_tensor {
	int		 space;
	int		 dtype;
	uint64_t	 size;
	uint64_t	 pp_bytes;	/* bytes per partition (tiles) */
	int		 written;
	int		 in_loop;	/* allocated inside a loop */
	int		 touched;	/* an op touched it (build) */
	int		 decl_depth;	/* loop depth of the first */
	int		 nbuf;
	uint64_t	 version;
	struct model_tbuf *bufs;
};

struct model_crit {
	uint32_t	 pred;
	uint8_t		 track;
	float		 dur;
};

/*
 * A DMA engine: when each of its queues last moved bytes (a ring of
 * intervals per queue class, in time order, the oldest forgotten).
 */
struct model_dmaeng {
	double		 s[MODEL_DMA_QCLASSES][MODEL_DMA_IVALS];
	double		 e[MODEL_DMA_QCLASSES][MODEL_DMA_IVALS];
	double		 last_e[MODEL_DMA_QCLASSES];	/* newest's end */
	unsigned	 pos[MODEL_DMA_QCLASSES];	/* intervals put */
};

/*
 * A compute engine's busy intervals (the newest MODEL_ENG_IVALS, by
 * start), so that an instruction whose inputs are ready early can run in
 * an earlier gap (model_issue); floor: no instruction starts before it
 * (the end of the intervals forgotten).
 */
#define MODEL_ENG_IVALS		32
struct model_busy {
	double		 s[MODEL_ENG_IVALS];
	double		 e[MODEL_ENG_IVALS];
	uint32_t	 id[MODEL_ENG_IVALS];
	int		 n;
	double		 floor;
	uint32_t	 floor_id;
};

struct model_ctx {
	const struct model_tgt	*t;
	const Nkir__V1__Kernel	*k;
	struct model_op		*ops;
	size_t			 nops, capops;
	struct model_node	*nodes;
	size_t			 nnodes, capnodes;
	uint32_t		 root_first, root_n;
	struct model_tensor	*tensors;
	size_t			 ntensors;
	int64_t			*vars;
	int64_t			 prog[MODEL_MAX_GRID];
	uint64_t		 program;
	uint64_t		 iter[MODEL_MAX_DEPTH + 1];
	double			 track_free[MODEL_NTRACKS];
	struct model_busy	 busy[4];	/* tensor, vector, scalar,
						 * gpsimd */
	uint32_t		 track_last[MODEL_NTRACKS];
	uint32_t		 dma_rr;
	/* RAM ports two engines share (model_port): when free, by whom. */
	double			 port_free[MODEL_NPORTS];
	uint32_t		 port_last[MODEL_NPORTS];
	/* Hardware DGE instances (loads', stores'): when each is free. */
	double			 dge_free[MODEL_DGE_UNITS];
	/* Per queue class and engine: when its last transfer ends. */
	double			 dmaq_free[MODEL_DMA_QCLASSES][MODEL_DMA_QUEUES];
	uint32_t		 dmaq_last[MODEL_DMA_QCLASSES][MODEL_DMA_QUEUES];
	struct model_dmaeng	 dmaeng[MODEL_DMA_QUEUES];
	uint64_t		 max_inst;
	struct model_crit	*crit;
	uint32_t		 last_id;	/* instruction that ends last */
	double			 last_end;
	const struct model_opts	*opts;
	struct model_result	*r;
	char			*diag;
	size_t			 diaglen;
	int			 error;
};


/* The loops enclosing the op being built, outermost first. */
struct model_scope {
	const Nkir__V1__Loop	*loop[MODEL_MAX_DEPTH];
	int			 depth;
};

/* A growing NUL-terminated text buffer; s is malloc'd. */
struct model_buf_text {
	char	*s;
	size_t	 len;
	size_t	 cap;
	int	 oom;		/* an allocation failed: s is incomplete */
};

/* Append printf-style text to b. */
void	model_text_printf(struct model_buf_text *b, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* Append s as the body of a JSON string (quotes excluded). */
void	model_text_json(struct model_buf_text *b, const char *s);

/* model.c */
/* Record the run's first error err with a printf-style message in its
 * diag; returns the run's error. */
int	 model_fail(struct model_ctx *m, int err, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* Grow array p of *cap elements of size bytes to hold need, zeroing the
 * new tail; returns the array (NULL when out of memory, p kept). */
void	*model_grow(void *p, size_t *cap, size_t need, size_t size);
/* Bytes per element of NKIR dtype (1 for 8-bit and unknown). */
size_t	 model_esize(int dtype);
/* Whether dtype is bfloat16 or float16. */
int	 model_is16(int dtype);
/* Whether dtype is one of the fp8 formats. */
int	 model_is_fp8(int dtype);

/* model_cost.c */
/* The partition dimension of tensor t (0 for HBM tensors). */
uint32_t model_part_dim(const Nkir__V1__Tensor *t);
/* Whether the conditions of branch br hold for the current loop
 * variables and program. */
int	 model_holds(const struct model_ctx *m, const Nkir__V1__Branch *br);
/* The static part of access a (malloc'd, model_acc_free); NULL when
 * out of memory (m's error set). */
struct model_acc *model_acc_new(struct model_ctx *m,
	    const Nkir__V1__Access *a);
/* A spill store (store) or reload of on-chip access a as a DMA op
 * (malloc'd; free with free()); NULL when out of memory. */
struct model_op *model_spill_op(struct model_ctx *m,
	    const struct model_acc *a, int store);
/* Free an access made by model_acc_new (NULL is fine). */
void	 model_acc_free(struct model_acc *x);
/* What access x touches now (struct model_rng). */
void	 model_acc_range(const struct model_ctx *m,
	    const struct model_acc *x, struct model_rng *r);
/* Split DMA op into its transfers for parts partitions (pieces, their
 * time on the queue and the engine, bytes) from its per-partition
 * figures (model_cost). */
void	 model_dma_split(struct model_op *op, uint64_t parts);
/* The partitions of on-chip access x its masks leave active now (x->parts
 * when none bounds them). */
uint64_t model_acc_active_parts(const struct model_ctx *m,
	    const struct model_acc *x);
/* The track (ENG_*) op o runs on: sim/'s engine table
 * (sim_op_engine_id), ENG_DMA for a transfer. */
int	 model_engine(const Nkir__V1__Op *o);
/* An instruction's name in the modeled timeline. */
const char *model_op_name(int kind);
/* Cost op (o's instruction) on m's target: its track, occupancy and
 * latency, DMA pieces; returns 0, or -1 if o is malformed. */
int	 model_cost(struct model_ctx *m, struct model_op *op,
	    const Nkir__V1__Op *o);

/* model_build.c */
/* Build the ops and loop nodes of body (n ops) in scope sc; the
 * nodes made are *first .. *first + *n. Returns 0 or m's error. */
int	 model_build_body(struct model_ctx *m, Nkir__V1__Op **body,
	    size_t n, struct model_scope *sc, uint32_t *first, uint32_t *count);
/* Describe the kernel's tensors (space, dtype, sizes). Returns 0 or
 * m's error. */
int	 model_tensors_init(struct model_ctx *m);
/* Give each tile its buffers (multi-buffering in loops, while SBUF and
 * PSUM last). Returns 0 or m's error. */
int	 model_tensors_buffers(struct model_ctx *m);
/* Spill tiles while the SBUF tiles live at an op overflow the target's
 * SBUF per partition, and give the ops that touch them their spill
 * stores and reloads. Returns 0 or m's error. */
int	 model_tensors_spill(struct model_ctx *m);

/* model_sched.c */
/* Schedule the nodes first .. first + n at loop depth depth, every
 * iteration, onto the tracks. Returns 0 or m's error. */
int	 model_exec_body(struct model_ctx *m, uint32_t first, uint32_t n,
	    int depth);

#endif /* NKID_MODEL_IMPL_H */
