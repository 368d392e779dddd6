/* model.c: the NeuronCore performance model: NKIR walked, each instruction costed on its engine or DMA queue and list-scheduled. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nkir.pb-c.h"

#include "model/model.h"
#include "sim/sim.h"

/*
 * Every constant below cites the document it comes from. "arch" is
 * aws-neuron-sdk@8a38e733 general/nki/arch/trainium_inferentia2_arch.rst,
 * "isa" its general/nki/api/nki/isa/__init__.py (the per-instruction
 * "Estimated instruction cost" sections), "perf" its
 * general/nki/nki_perf_guide.rst, "trn2 arch" aws-neuron-sdk@81ce03ae
 * nki/guides/architecture/trainium2_arch.rst, "dma intro" aws-neuron-sdk@
 * 81ce03ae nki/get-started/about/nki-dma-overview.rst. Values marked
 * GUESSED or READ OFF A GRAPH are listed in docs/model.md.
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
/* Each DMA buffer (a contiguous run) costs at least this many bytes of engine time. GUESSED. */
#define MODEL_DMA_BUF_MIN	64.0
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
	double		 dma_bw;	/* peak bytes/ns per DMA engine */
	double		 dma_eff_lo;	/* share of dma_bw sustained <= 1 KiB/p */
	double		 dma_eff_hi;	/* ... from 4 KiB per partition */
	double		 dma_lat;	/* ns to land, pipelined; 0: knee */
	double		 peak_flops;	/* bf16 FLOPs per ns */
	uint64_t	 sbuf_pp;	/* SBUF bytes per partition */
	int		 fp8_fast;	/* TensorE 4x128 fp8 input */
};

static const struct model_tgt model_targets[] = {
	/*
	 * arch table: Tensor 2.8 GHz, Vector 1.12, Scalar 1.4, GpSimd 1.4;
	 * 128 elements/cycle (one per partition); SBUF 192 KiB per
	 * partition; TensorE 92 TFLOPS bf16 (128x128 PEs x 2 x 2.8 GHz).
	 * dma intro table: Trainium1 17 B/ns per DMA engine (the peak).
	 *
	 * trn1 builds its DMA descriptors before the run and keeps them in
	 * HBM (dge, mode "none": no "on-device descriptor generation
	 * overhead"), so a queue does not wait out a transfer's fixed cost
	 * before starting the next: each transfer lands ~1300 ns after it
	 * starts at the earliest (dma-bandwidth: "descriptor setup,
	 * synchronization, and semaphore-to-start latency (~1300 ns
	 * cross-engine)") while the queue moves on. The share of the peak
	 * an engine sustains: transfers of 4 KiB per partition and more
	 * 70% (perf: "sufficiently large DMA transfers, achieving close
	 * 70% DMA throughput utilization"); of 1 KiB per partition and less
	 * 37.9%, CALIBRATED: the bytes NKI's matmul tutorial's hoisted
	 * kernel moves (1 KiB per partition) over its published time, 4.43
	 * GB in 42.96 ms over 16 engines, 6.44 B/ns; in between, in
	 * proportion (GUESSED; dma-bandwidth: "256 B -- 2 KiB per
	 * partition: Improving but still below peak"). docs/model.md, "DMA
	 * on trn1".
	 */
	{ "trn1", { 2.8, 1.12, 1.4, 1.4 }, 1.0, 1.0, 17.0, 0.379, 0.70, 1300.0,
	  128.0 * 128.0 * 2.0 * 2.8, 192 * 1024, 0 },
	/*
	 * trn2 arch table: Tensor 2.4 GHz, Vector 0.96 (256 elements/cycle,
	 * 512 for BF16/FP16), Scalar 1.2, GpSimd 1.2; Tensor 4x128 fp8
	 * input; SBUF 224 KiB per partition; 79 TFLOPS bf16. dma intro:
	 * Trainium2 23 B/ns per DMA engine. Its queues generate descriptors
	 * as they go (dge: "Each hardware-DGE DMA instruction takes
	 * approximately 600 ns"), so a queue holds each transfer for the
	 * knee of dma intro's trn2 graph (MODEL_DMA_KNEE_PP).
	 */
	{ "trn2", { 2.4, 0.96, 1.2, 1.2 }, 2.0, 4.0, 23.0, 1.0, 1.0, 0.0,
	  128.0 * 128.0 * 2.0 * 2.4, 224 * 1024, 1 },
};

struct model_term {
	uint32_t	 id;		/* loop var or grid axis */
	int		 prog;		/* 1: a grid axis, 2: an index fn */
	int64_t		 coef;		/* flat-offset coefficient */
};

/* An operand: the static part of an access. */
struct model_acc {
	uint32_t	 tensor;
	int64_t		 c;		/* flat offset, constant part */
	int64_t		 amin, amax;	/* range of the axis part */
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
};

struct model_op {
	int		 kind;
	const char	*name;
	int		 track;		/* ENG_*, ENG_DMA, ENG_NONE */
	double		 dur_ns;
	double		 lat_ns;
	struct model_acc *dst;
	struct model_acc *src[3];
	int		 nsrc;
	int		 dst_read;	/* the op reads its destination */
	int		 new_version;	/* starts a new buffer of dst */
	struct model_pre pre[3];
	int		 npre;
	uint32_t	 pieces;	/* DMA transfers */
	uint32_t	 first_q;	/* DMA: engine of piece 0 (set per run) */
	int		 dma_q;		/* DMA: queue class, 0 load, 1 store */
	double		 piece_ns, last_ns;	/* time on its queue */
	double		 piece_occ, last_occ;	/* time on its engine */
	uint64_t	 piece_bytes, last_bytes;
	double		 flops;
	const char	*file;
	uint32_t	 line;
	uint32_t	 inv_mask;	/* depths where it runs on iteration 0 only */
	int		 depth;
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

struct model_wrec {
	int64_t		 lo, hi;
	double		 ready;
	uint32_t	 id;
};

struct model_tbuf {
	double		 read_done;
	uint32_t	 read_id;
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
	uint32_t		 track_last[MODEL_NTRACKS];
	uint32_t		 dma_rr;
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

static const char *const model_errs[] = {
	"success", "malformed kernel IR", "unknown target",
	"too many instructions to model", "canceled",
};

const char *
model_strerror(int err)
{
	if (err > 0 || -err >= (int)(sizeof model_errs / sizeof model_errs[0]))
		return ("unknown error");
	return (model_errs[-err]);
}

const char *
model_track_name(int track)
{
	static const char *const names[] = { "tensor", "vector", "scalar",
	    "gpsimd", "dma0", "dma1", "dma2", "dma3", "dma4", "dma5", "dma6",
	    "dma7", "dma8", "dma9", "dma10", "dma11", "dma12", "dma13",
	    "dma14", "dma15" };

	if (track < 0 || track >= MODEL_NTRACKS)
		return ("?");
	return (names[track]);
}

static int
model_fail(struct model_ctx *m, int err, const char *fmt, ...)
{
	va_list	ap;

	if (m->error == 0 && m->diag != NULL && m->diaglen > 0) {
		va_start(ap, fmt);
		vsnprintf(m->diag, m->diaglen, fmt, ap);
		va_end(ap);
	}
	if (m->error == 0)
		m->error = err;
	return (m->error);
}

static void *
model_grow(void *p, size_t *cap, size_t need, size_t size)
{
	size_t	n;
	void	*q;

	if (need <= *cap)
		return (p);
	n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	if ((q = realloc(p, n * size)) == NULL)
		return (NULL);
	memset((char *)q + *cap * size, 0, (n - *cap) * size);
	*cap = n;
	return (q);
}

static size_t
model_esize(int dtype)
{
	switch (dtype) {
	case NKIR__V1__DTYPE__DT_FLOAT32:
	case NKIR__V1__DTYPE__DT_INT32:
	case NKIR__V1__DTYPE__DT_UINT32:
	case NKIR__V1__DTYPE__DT_TFLOAT32:
		return (4);
	case NKIR__V1__DTYPE__DT_FLOAT16:
	case NKIR__V1__DTYPE__DT_BFLOAT16:
	case NKIR__V1__DTYPE__DT_INT16:
	case NKIR__V1__DTYPE__DT_UINT16:
		return (2);
	default:
		return (1);
	}
}

static int
model_is16(int dtype)
{
	return (dtype == NKIR__V1__DTYPE__DT_BFLOAT16 ||
	    dtype == NKIR__V1__DTYPE__DT_FLOAT16);
}

static int
model_is_fp8(int dtype)
{
	return (dtype == NKIR__V1__DTYPE__DT_FP8_E4M3 ||
	    dtype == NKIR__V1__DTYPE__DT_FP8_E5M2);
}

/* ------------------------------------------------------------ accesses */

/* The partition dimension of tensor t (0 for HBM tensors). */
static uint32_t
model_part_dim(const Nkir__V1__Tensor *t)
{
	if (t->space == NKIR__V1__SPACE__SPACE_SBUF ||
	    t->space == NKIR__V1__SPACE__SPACE_PSUM)
		return (t->partition_dim < t->n_shape ? t->partition_dim : 0);
	return (0);
}

/*
 * Contiguous runs per partition of access a whose free axes have the
 * element strides st[1 .. rank-1] in some layout.
 */
static uint64_t
model_runs(const Nkir__V1__Access *a, const int64_t *st, uint64_t n)
{
	uint64_t	run = 1;
	size_t		i;

	for (i = a->n_shape; i-- > 1;) {
		if (a->shape[i] == 1)
			continue;
		if (st[i] != (int64_t)run)
			break;
		run *= a->shape[i];
	}
	return (run ? (n + run - 1) / run : n);
}

/* Index function i of k (a TERM_FN target) is well formed. */
static int
model_fn_ok(const Nkir__V1__Kernel *k, uint32_t i)
{
	const Nkir__V1__IndexFn	*f = i < k->n_fns ? k->fns[i] : NULL;
	size_t			 j;

	if (f == NULL || f->expr == NULL || f->divisor < 1)
		return (0);
	for (j = 0; j < f->expr->n_terms; j++) {
		const Nkir__V1__Term *t = f->expr->terms[j];

		if (t == NULL || (t->kind == NKIR__V1__TERM_KIND__TERM_LOOP ?
		    t->index >= k->num_loop_vars : t->kind !=
		    NKIR__V1__TERM_KIND__TERM_PROGRAM || t->index >= k->n_grid))
			return (0);
	}
	return (1);
}

/* The value of index function i (checked by model_fn_ok) now: python's
 * % or // of its expression of loop variables and program ids. */
static int64_t
model_fn(const struct model_ctx *m, uint32_t i)
{
	const Nkir__V1__IndexFn	*f = m->k->fns[i];
	uint64_t		 u = (uint64_t)f->expr->constant;
	int64_t			 v, q, r;
	size_t			 j;

	for (j = 0; j < f->expr->n_terms; j++) {
		const Nkir__V1__Term *t = f->expr->terms[j];

		u += (uint64_t)t->coef * (uint64_t)(t->kind ==
		    NKIR__V1__TERM_KIND__TERM_LOOP ? m->vars[t->index] :
		    m->prog[t->index]);
	}
	v = (int64_t)u;
	q = v / f->divisor;
	r = v % f->divisor;
	if (r < 0) {
		r += f->divisor;
		q--;
	}
	return (f->kind == NKIR__V1__FN_KIND__FN_FLOORDIV ? q : r);
}

/* Every condition of an if holds for the current loop variables and
 * program ids (checked conditions: TERM_AXIS reads as 0). */
static int
model_holds(const struct model_ctx *m, const Nkir__V1__Branch *br)
{
	size_t	i, j;

	for (i = 0; i < br->n_cond; i++) {
		const Nkir__V1__Affine	*a = br->cond[i];
		uint64_t		 u;

		if (a == NULL)
			continue;
		u = (uint64_t)a->constant;
		for (j = 0; j < a->n_terms; j++) {
			const Nkir__V1__Term *t = a->terms[j];

			if (t == NULL)
				continue;
			if (t->kind == NKIR__V1__TERM_KIND__TERM_LOOP &&
			    t->index < m->k->num_loop_vars)
				u += (uint64_t)t->coef * (uint64_t)m->vars[t->index];
			else if (t->kind == NKIR__V1__TERM_KIND__TERM_PROGRAM &&
			    t->index < MODEL_MAX_GRID)
				u += (uint64_t)t->coef * (uint64_t)m->prog[t->index];
			else if (t->kind == NKIR__V1__TERM_KIND__TERM_FN &&
			    model_fn_ok(m->k, t->index))
				u += (uint64_t)t->coef * (uint64_t)model_fn(m,
				    t->index);
		}
		if ((int64_t)u < 0)
			return (0);
	}
	return (1);
}

static struct model_acc *
model_acc_new(struct model_ctx *m, const Nkir__V1__Access *a)
{
	const Nkir__V1__Kernel	*k = m->k;
	const Nkir__V1__Tensor	*t;
	struct model_acc	*x;
	int64_t			 gst[9], lst[9], axg[9], axl[9];
	uint64_t		 stride, lstride, cnt;
	uint32_t		 pd, d;
	size_t			 i, j, nt = 0;
	int			 part_uses_ax0 = 0, free_axes = 0, onchip;

	if (a == NULL || a->tensor >= k->n_tensors)
		return (model_fail(m, MODEL_EPARSE, "an access names no "
		    "tensor of the kernel"), NULL);
	t = k->tensors[a->tensor];
	if (a->n_index != t->n_shape || t->n_shape < 1 || t->n_shape > 8 ||
	    a->n_shape < 1 || a->n_shape > 8)
		return (model_fail(m, MODEL_EPARSE, "access of tensor '%s' "
		    "does not match its rank", t->name), NULL);
	pd = model_part_dim(t);
	onchip = t->space == NKIR__V1__SPACE__SPACE_SBUF ||
	    t->space == NKIR__V1__SPACE__SPACE_PSUM;
	/* Row-major element strides: global, and within a partition. */
	stride = lstride = 1;
	for (d = (uint32_t)t->n_shape; d-- > 0;) {
		gst[d] = (int64_t)stride;
		lst[d] = !onchip ? (int64_t)stride : d == pd ? 0 :
		    (int64_t)lstride;
		if (t->shape[d] == 0 || stride > (1ULL << 40) / t->shape[d])
			return (model_fail(m, MODEL_EPARSE, "tensor '%s' is "
			    "too large", t->name), NULL);
		stride *= t->shape[d];
		if (!onchip || d != pd)
			lstride *= t->shape[d];
	}
	/*
	 * Dependencies are tracked on intervals of offsets (model_acc_range).
	 * On chip the offsets put the partition innermost (p + P x offset in
	 * the partition), so that slices of a tile disjoint along its free
	 * dimensions, all partitions each, have disjoint intervals.
	 */
	if (onchip)
		for (d = 0; d < t->n_shape; d++)
			gst[d] = d == pd ? 1 : (int64_t)t->shape[pd] * lst[d];
	if ((x = calloc(1, sizeof *x)) == NULL)
		return (model_fail(m, MODEL_ELIMIT, "out of memory"), NULL);
	x->tensor = a->tensor;
	x->dtype = t->dtype;
	x->space = t->space;
	x->parts = a->shape[0];
	for (x->n = 1, i = 1; i < a->n_shape; i++)
		x->n *= a->shape[i];
	memset(axg, 0, sizeof axg);
	memset(axl, 0, sizeof axl);
	for (d = 0; d < t->n_shape; d++) {
		const Nkir__V1__Affine *e = a->index[d];

		if (e == NULL)
			continue;
		x->c += e->constant * gst[d];
		for (j = 0; j < e->n_terms; j++) {
			const Nkir__V1__Term *tm = e->terms[j];

			if (tm == NULL)
				continue;
			switch (tm->kind) {
			case NKIR__V1__TERM_KIND__TERM_AXIS:
				if (tm->index >= a->n_shape)
					goto bad;
				axg[tm->index] += tm->coef * gst[d];
				axl[tm->index] += tm->coef * lst[d];
				if (d == pd && tm->index == 0)
					part_uses_ax0 = 1;
				if (d != pd && tm->index > 0 &&
				    a->shape[tm->index] > 1)
					free_axes = 1;
				break;
			case NKIR__V1__TERM_KIND__TERM_LOOP:
				if (tm->index >= k->num_loop_vars)
					goto bad;
				/* FALLTHROUGH */
			case NKIR__V1__TERM_KIND__TERM_FN:
				if (tm->kind == NKIR__V1__TERM_KIND__TERM_FN &&
				    !model_fn_ok(k, tm->index))
					goto bad;
				/* FALLTHROUGH */
			case NKIR__V1__TERM_KIND__TERM_PROGRAM:
				if (tm->kind == NKIR__V1__TERM_KIND__TERM_PROGRAM &&
				    tm->index >= k->n_grid)
					goto bad;
				x->terms = realloc(x->terms, (nt + 1) *
				    sizeof *x->terms);
				if (x->terms == NULL)
					goto oom;
				x->terms[nt].id = tm->index;
				x->terms[nt].prog = tm->kind ==
				    NKIR__V1__TERM_KIND__TERM_PROGRAM ? 1 :
				    tm->kind == NKIR__V1__TERM_KIND__TERM_FN ? 2 : 0;
				x->terms[nt++].coef = tm->coef * gst[d];
				break;
			default:
				goto bad;
			}
		}
	}
	x->nterms = nt;
	for (cnt = 1, i = 0; i < a->n_shape; i++) {
		int64_t	span = axg[i] * (int64_t)(a->shape[i] - 1);

		if (span < 0)
			x->amin += span;
		else
			x->amax += span;
		cnt *= a->shape[i];
	}
	x->part_bcast = x->parts > 1 && !part_uses_ax0 && onchip;
	x->free_bcast = x->n > 1 && !free_axes;
	x->covers = cnt == stride && (uint64_t)(x->amax - x->amin) + 1 == stride;
	if (onchip) {
		for (i = a->n_shape; i-- > 1;)
			if (a->shape[i] > 1) {
				int64_t s = axl[i] < 0 ? -axl[i] : axl[i];

				x->slow_stride = (uint64_t)s *
				    model_esize(t->dtype) > MODEL_STRIDE_BYTES;
				break;
			}
		x->runs = model_runs(a, axl, x->n);
	} else
		x->runs = model_runs(a, axg, x->n);
	return (x);
bad:
	free(x->terms);
	free(x);
	return (model_fail(m, MODEL_EPARSE, "an access of tensor '%s' has a "
	    "malformed index", t->name), NULL);
oom:
	free(x);
	return (model_fail(m, MODEL_ELIMIT, "out of memory"), NULL);
}

static void
model_acc_free(struct model_acc *x)
{
	if (x != NULL) {
		free(x->terms);
		free(x);
	}
}

/*
 * [lo, hi]: the offsets access x touches at the current values (HBM:
 * row-major; on chip: the partition innermost, see model_acc_new).
 */
static void
model_acc_range(const struct model_ctx *m, const struct model_acc *x,
    int64_t *lo, int64_t *hi)
{
	uint64_t	base = (uint64_t)x->c;
	size_t		i;

	for (i = 0; i < x->nterms; i++) {
		int64_t	v = x->terms[i].prog == 2 ? model_fn(m,
		    x->terms[i].id) : x->terms[i].prog ?
		    m->prog[x->terms[i].id] : m->vars[x->terms[i].id];

		base += (uint64_t)x->terms[i].coef * (uint64_t)v;
	}
	*lo = (int64_t)(base + (uint64_t)x->amin);
	*hi = (int64_t)(base + (uint64_t)x->amax);
}

/* ------------------------------------------------------------ costs */

static double
model_cyc(const struct model_ctx *m, int eng, double cycles)
{
	return (cycles / m->t->ghz[eng]);
}

static double
model_lat(const struct model_ctx *m, int eng)
{
	static const double lat[4] = { MODEL_LAT_TENSOR, MODEL_LAT_VECTOR,
	    MODEL_LAT_SCALAR, MODEL_LAT_GPSIMD };

	return (model_cyc(m, eng, lat[eng]));
}

/*
 * Cycles of an element-wise pass over n elements per partition on eng:
 * work cycles at one element per partition per cycle (arch: 128 lanes,
 * "roughly N cycles"), scaled by trn2's wider VectorE (trn2 arch),
 * doubled for a most-minor stride over 16 bytes (arch), at least
 * MIN_II (isa); GpSimd instead pays GPSIMD_START + N (isa, iota).
 */
static double
model_pass(const struct model_ctx *m, int eng, double work, int all16,
    int slow)
{
	if (eng == ENG_V)
		work /= all16 ? m->t->vec_per16 : m->t->vec_per32;
	if (slow)
		work *= 2.0;
	if (eng == ENG_G)
		return (model_cyc(m, eng, MODEL_GPSIMD_START + work));
	return (model_cyc(m, eng, work > MODEL_MIN_II ? work : MODEL_MIN_II));
}

/* The engine an op runs on when its engine field leaves it open. */
static int
model_engine(const Nkir__V1__Op *o)
{
	switch (o->engine) {
	case NKIR__V1__ENGINE__ENGINE_TENSOR:
		return (ENG_T);
	case NKIR__V1__ENGINE__ENGINE_VECTOR:
		return (ENG_V);
	case NKIR__V1__ENGINE__ENGINE_SCALAR:
		return (ENG_S);
	case NKIR__V1__ENGINE__ENGINE_GPSIMD:
		return (ENG_G);
	default:
		break;
	}
	switch (o->kind) {
	case NKIR__V1__OP_KIND__OP_LOAD:
	case NKIR__V1__OP_KIND__OP_STORE:
	case NKIR__V1__OP_KIND__OP_DMA_COPY:
	case NKIR__V1__OP_KIND__OP_DMA_TRANSPOSE:
	case NKIR__V1__OP_KIND__OP_ALL_REDUCE:
		return (ENG_DMA);
	case NKIR__V1__OP_KIND__OP_ACT_ACC:
		return (ENG_S);
	case NKIR__V1__OP_KIND__OP_PARTITION_REDUCE:
	case NKIR__V1__OP_KIND__OP_AFFINE_SELECT:
	case NKIR__V1__OP_KIND__OP_SEQUENCE_BOUNDS:
	case NKIR__V1__OP_KIND__OP_LOCAL_GATHER:
	case NKIR__V1__OP_KIND__OP_RAND:
	case NKIR__V1__OP_KIND__OP_GATHER_FLAT:
		/* isa: these run "using GpSimd Engine" */
		return (ENG_G);
	case NKIR__V1__OP_KIND__OP_MATMUL:
	case NKIR__V1__OP_KIND__OP_TRANSPOSE:
		return (ENG_T);
	case NKIR__V1__OP_KIND__OP_ACTIVATION:
	case NKIR__V1__OP_KIND__OP_COPY:
		return (ENG_S);
	case NKIR__V1__OP_KIND__OP_IOTA:
		return (ENG_G);
	case NKIR__V1__OP_KIND__OP_TENSOR_TENSOR:
		/* isa (tensor_tensor): power runs on the GpSimd engine;
		 * api.shared (ALU table, engine selection): rsqrt on
		 * GpSIMD/Scalar, tensor_scalar's on GpSIMD. */
		return (o->alu == NKIR__V1__ALU_OP__ALU_POWER ||
		    o->alu == NKIR__V1__ALU_OP__ALU_RSQRT ? ENG_G : ENG_V);
	case NKIR__V1__OP_KIND__OP_PRINT:
		return (ENG_NONE);
	default:
		return (ENG_V);
	}
}

/*
 * An instruction's name in the modeled timeline: NKI's (sim_op_name),
 * except a tile declared with a value, which the hardware fills with a
 * memset.
 */
static const char *
model_op_name(int kind)
{
	if (kind == NKIR__V1__OP_KIND__OP_ALLOC)
		return ("memset");
	return (sim_op_name(kind));
}

static void
model_pre_add(struct model_ctx *m, struct model_op *op, int track,
    double dur, const char *name)
{
	assert(op->npre < 3);
	op->pre[op->npre].track = track;
	op->pre[op->npre].dur_ns = dur;
	op->pre[op->npre].lat_ns = model_lat(m, track);
	op->pre[op->npre++].name = name;
}

/*
 * A DMA (load or store) between HBM access h and on-chip access s: one
 * transfer per 8 partitions on its own engine (arch: a 128-partition
 * load is 16 transfers, one per engine, of 8 partitions each). Each
 * keeps its engine busy for max(bytes, buffers x minimum buffer bytes) /
 * the rate the engine sustains, and lands at the earliest the target's
 * latency after it starts (trn1), or holds its queue for at least the
 * knee time (trn2). A DMA that writes HBM goes on the store queue, any
 * other on the load queue.
 */
static void
model_cost_dma(struct model_ctx *m, struct model_op *op,
    const struct model_acc *h, const struct model_acc *s)
{
	const struct model_tgt *t = m->t;
	double		 bw, eff, tmin, pp_bytes, runs;
	uint64_t	 parts = s->parts, lastp;
	size_t		 es = model_esize(h->dtype) > model_esize(s->dtype) ?
			    model_esize(h->dtype) : model_esize(s->dtype);

	tmin = t->dma_lat > 0 ? t->dma_lat :
	    MODEL_DMA_KNEE_PP * MODEL_DMA_PARTS / t->dma_bw;
	pp_bytes = (double)s->n * (double)es;
	eff = pp_bytes <= 1024 ? t->dma_eff_lo : pp_bytes >= 4096 ?
	    t->dma_eff_hi : t->dma_eff_lo + (t->dma_eff_hi - t->dma_eff_lo) *
	    (pp_bytes - 1024) / 3072;
	bw = t->dma_bw * eff;
	runs = (double)(h->runs > s->runs ? h->runs : s->runs);
	op->pieces = (uint32_t)((parts + MODEL_DMA_PARTS - 1) / MODEL_DMA_PARTS);
	if (op->pieces == 0)
		op->pieces = 1;
	lastp = parts - (uint64_t)(op->pieces - 1) * MODEL_DMA_PARTS;
#define DMA_OCC(p) fmax((double)(p) * pp_bytes / bw, \
	(double)(p) * runs * MODEL_DMA_BUF_MIN / bw)
	op->piece_occ = DMA_OCC(op->pieces > 1 ? MODEL_DMA_PARTS : parts);
	op->last_occ = DMA_OCC(lastp);
#undef DMA_OCC
	op->piece_ns = fmax(tmin, op->piece_occ);
	op->last_ns = fmax(tmin, op->last_occ);
	op->dma_q = op->dst->space == NKIR__V1__SPACE__SPACE_HBM ||
	    op->dst->space == NKIR__V1__SPACE__SPACE_SHARED_HBM;
	op->piece_bytes = (uint64_t)((double)(op->pieces > 1 ?
	    MODEL_DMA_PARTS : parts) * pp_bytes);
	op->last_bytes = (uint64_t)((double)lastp * pp_bytes);
	op->dur_ns = op->piece_ns;
}

/*
 * dma_copy and dma_transpose: a DMA between the HBM side and the other
 * (dst when both are HBM or both on chip), as load and store are. A DMA
 * transpose writes element by element (perf: "much lower DMA bandwidth
 * compared to nl.load"): each element a buffer of its own.
 */
static void
model_cost_isa_dma(struct model_ctx *m, struct model_op *op,
    const Nkir__V1__Op *o)
{
	struct model_acc	 h, s;
	const struct model_acc	*src = op->src[0], *dst = op->dst;
	int			 src_hbm, dst_hbm;

	src_hbm = src->space == NKIR__V1__SPACE__SPACE_HBM ||
	    src->space == NKIR__V1__SPACE__SPACE_SHARED_HBM;
	dst_hbm = dst->space == NKIR__V1__SPACE__SPACE_HBM ||
	    dst->space == NKIR__V1__SPACE__SPACE_SHARED_HBM;
	h = src_hbm && !dst_hbm ? *src : *dst;
	s = src_hbm && !dst_hbm ? *dst : *src;
	if (src_hbm == dst_hbm) {
		h = *src;
		s = *dst;
	}
	if (o->kind == NKIR__V1__OP_KIND__OP_DMA_TRANSPOSE)
		h.runs = s.runs = s.n;
	model_cost_dma(m, op, &h, &s);
}

/* Cost of a Vector/Scalar/GpSimd op reading srcs (tensor operands). */
static void
model_cost_elementwise(struct model_ctx *m, struct model_op *op,
    const Nkir__V1__Op *o, int nscalar)
{
	const struct model_acc	*d = op->dst;
	double			 n = (double)d->n, work;
	int			 eng = op->track, all16 = model_is16(d->dtype),
				 slow = d->slow_stride, npsum = 0, nfull = 0,
				 bf16 = d->dtype == NKIR__V1__DTYPE__DT_BFLOAT16;
	int			 i;

	for (i = 0; i < op->nsrc; i++) {
		const struct model_acc *s = op->src[i];

		all16 &= model_is16(s->dtype);
		bf16 &= s->dtype == NKIR__V1__DTYPE__DT_BFLOAT16;
		slow |= s->slow_stride;
		if (s->part_bcast && eng != ENG_T) {
			/* arch: a partition broadcast is a TensorE matmul
			 * with a ones stationary into PSUM (isa nc_matmul
			 * cost with N_stationary = 1). */
			model_pre_add(m, op, ENG_T, model_cyc(m, ENG_T,
			    fmax(1.0, (double)s->n)), "broadcast");
			npsum++;
			nfull++;
		} else if (s->free_bcast || s->n == 1)
			nscalar++;
		else {
			nfull++;
			npsum += s->space == NKIR__V1__SPACE__SPACE_PSUM;
		}
	}
	switch (o->kind) {
	case NKIR__V1__OP_KIND__OP_TENSOR_TENSOR:
		/*
		 * isa (tensor_tensor): max(MIN_II, N) with one input in PSUM
		 * and the other in SBUF, or all bf16 add/multiply/subtract
		 * contiguous; else max(MIN_II, 2N). isa (tensor_scalar): a
		 * scalar or [P, 1] operand is max(MIN_II, N).
		 */
		if (nfull >= 2 && !(npsum == 1) && !(bf16 && !slow &&
		    (o->alu == NKIR__V1__ALU_OP__ALU_ADD ||
		    o->alu == NKIR__V1__ALU_OP__ALU_MULTIPLY ||
		    o->alu == NKIR__V1__ALU_OP__ALU_SUBTRACT)))
			work = 2.0 * n;
		else
			work = n;
		break;
	case NKIR__V1__OP_KIND__OP_REDUCE:
		/* isa (tensor_reduce): N/2 for bf16 in and out with add or
		 * maximum, else N; N the input elements per partition. */
		n = op->nsrc ? (double)op->src[0]->n : n;
		work = bf16 && (o->alu == NKIR__V1__ALU_OP__ALU_ADD ||
		    o->alu == NKIR__V1__ALU_OP__ALU_MAXIMUM) ? n / 2.0 : n;
		break;
	case NKIR__V1__OP_KIND__OP_BN_STATS:
		/* isa (bn_stats): max(MIN_II, N). */
		work = op->nsrc ? (double)op->src[0]->n : n;
		break;
	case NKIR__V1__OP_KIND__OP_BN_AGGR:
		/* isa (bn_aggr): max(MIN_II, 13 * (N / 3)). */
		work = 13.0 * ((op->nsrc ? (double)op->src[0]->n : n) / 3.0);
		break;
	case NKIR__V1__OP_KIND__OP_GATHER_FLAT:
		/* One GpSimd pass over the result, as isa iota's
		 * GPSIMD_START + N (GUESSED for a gather). */
		work = n;
		break;
	case NKIR__V1__OP_KIND__OP_SELECT:
		/* Three inputs; costed like a two-input tensor_tensor
		 * (GUESSED). */
		work = nfull >= 2 ? 2.0 * n : n;
		break;
	case NKIR__V1__OP_KIND__OP_ALLOC:
		/* isa (memset): max(MIN_II, N/2) for a zero bf16/fp16 fill,
		 * else max(MIN_II, N). */
		work = o->fill == NKIR__V1__FILL__FILL_ZERO &&
		    model_is16(d->dtype) ? n / 2.0 : n;
		break;
	case NKIR__V1__OP_KIND__OP_TRANSPOSE:
		/* isa (nc_transpose, vector engine): max(MIN_II, N). */
		work = op->nsrc ? (double)op->src[0]->n : n;
		break;
	case NKIR__V1__OP_KIND__OP_SCAN:
		/* isa (tensor_tensor_scan): max(MIN_II, 2N). */
		work = 2.0 * n;
		break;
	case NKIR__V1__OP_KIND__OP_SCALAR_TENSOR_TENSOR:
		/* isa (scalar_tensor_tensor): N for bf16 data and operand1
		 * with subtract then multiply and N even, else 2N. */
		work = op->nsrc == 3 && op->src[0]->dtype ==
		    NKIR__V1__DTYPE__DT_BFLOAT16 && op->src[2]->dtype ==
		    NKIR__V1__DTYPE__DT_BFLOAT16 &&
		    o->alu == NKIR__V1__ALU_OP__ALU_SUBTRACT &&
		    o->alu1 == NKIR__V1__ALU_OP__ALU_MULTIPLY &&
		    ((uint64_t)n % 2) == 0 ? n : 2.0 * n;
		break;
	case NKIR__V1__OP_KIND__OP_COPY_DYNAMIC:
		/* isa (tensor_copy_dynamic_src/dst): max(MIN_II_DYNAMIC,
		 * N). */
		work = fmax(MODEL_MIN_II_DYNAMIC, n);
		break;
	case NKIR__V1__OP_KIND__OP_COPY_PREDICATED:
		/* isa (tensor_copy_predicated): max(MIN_II, N) with one of
		 * src and predicate in PSUM, max(MIN_II, 2N) in SBUF. */
		work = npsum == 1 ? n : 2.0 * n;
		break;
	case NKIR__V1__OP_KIND__OP_PARTITION_REDUCE:
	case NKIR__V1__OP_KIND__OP_MAX8:
	case NKIR__V1__OP_KIND__OP_FIND_INDEX8:
	case NKIR__V1__OP_KIND__OP_MATCH_REPLACE8:
	case NKIR__V1__OP_KIND__OP_SHUFFLE:
		/* isa (max8, nc_find_index8, nc_match_replace8,
		 * nc_stream_shuffle): N, the input's elements per
		 * partition (at least MIN_II); tensor_partition_reduce has
		 * no documented cost: GpSimd 150 + N (GUESSED). */
		work = op->nsrc ? (double)op->src[0]->n : n;
		break;
	case NKIR__V1__OP_KIND__OP_SEQUENCE_BOUNDS:
		/* No documented cost: a GpSimd pass per bound, 150 + 2N
		 * (GUESSED). */
		work = op->nsrc ? 2.0 * (double)op->src[0]->n : n;
		break;
	case NKIR__V1__OP_KIND__OP_LOCAL_GATHER: {
		/* isa (local_gather): 150 + V * E / C GpSimd cycles, C =
		 * ((28 + t E) / (t E)) / min(4 / dtype_size, E), t = 4. */
		double	E = o->elem_per_index ? o->elem_per_index : 1.0;
		double	V = o->valid_indices ? o->valid_indices : 1.0;
		double	sz = op->nsrc ? (double)model_esize(op->src[0]->dtype) :
			    4.0;
		double	C = ((28.0 + MODEL_GATHER_T * E) /
			    (MODEL_GATHER_T * E)) / fmin(4.0 / sz, E);

		work = V * E / C;
		break;
	}
	default:
		/* isa (activation, tensor_scalar_reduce, dropout,
		 * range_select, affine_select): max(MIN_II, N), GpSimd
		 * 150 + N; select_reduce has no documented cost: max(MIN_II,
		 * N) (GUESSED); reduce_res: activation_reduce's and
		 * tensor_scalar_reduce's "+ MIN_II" (N is 1). */
		work = n;
		break;
	}
	op->dur_ns = model_pass(m, eng, work, all16, slow);
}

static int
model_cost(struct model_ctx *m, struct model_op *op, const Nkir__V1__Op *o)
{
	const struct model_acc	*d = op->dst;
	int			 nscalar = 0;

	op->lat_ns = op->track >= 0 ? model_lat(m, op->track) : 0.0;
	switch (o->kind) {
	case NKIR__V1__OP_KIND__OP_LOAD:
		if (op->nsrc < 1)
			return (-1);
		model_cost_dma(m, op, op->src[0], d);
		return (0);
	case NKIR__V1__OP_KIND__OP_STORE:
		if (op->nsrc < 1)
			return (-1);
		model_cost_dma(m, op, d, op->src[0]);
		return (0);
	case NKIR__V1__OP_KIND__OP_DMA_COPY:
	case NKIR__V1__OP_KIND__OP_DMA_TRANSPOSE:
		if (op->nsrc < 1)
			return (-1);
		model_cost_isa_dma(m, op, o);
		return (0);
	case NKIR__V1__OP_KIND__OP_BITCAST:
		/* tile.view(dtype) is no instruction ("NO copy will
		 * occur"): its result is ready with its source. */
		op->track = ENG_FUSED;
		return (0);
	case NKIR__V1__OP_KIND__OP_MATCH_REPLACE8:
		/* The indices of nc_match_replace8 (dst_idx) come out of the
		 * same instruction as its data. */
		if (o->index_out) {
			op->track = ENG_FUSED;
			return (0);
		}
		break;
	case NKIR__V1__OP_KIND__OP_ALL_REDUCE:
		/* A collective over the programs' cores: costed as the tile
		 * leaving and coming back by DMA (GUESSED; NKI documents no
		 * cost for nl.all_reduce). */
		if (op->nsrc < 1)
			return (-1);
		model_cost_dma(m, op, op->src[0], d);
		op->piece_ns *= 2.0;
		op->last_ns *= 2.0;
		op->dur_ns *= 2.0;
		return (0);
	case NKIR__V1__OP_KIND__OP_MATMUL: {
		const struct model_acc *x, *y;
		double	M, N, K, cyc;
		int	fp32, fp8;

		if (op->nsrc < 2)
			return (-1);
		x = op->src[0];
		y = op->src[1];
		N = (double)y->n;
		K = (double)y->parts;
		M = (double)d->parts;
		fp32 = model_esize(x->dtype) == 4 &&
		    x->dtype != NKIR__V1__DTYPE__DT_TFLOAT32;
		fp8 = model_is_fp8(x->dtype) && model_is_fp8(y->dtype);
		if (!o->transpose_x) {
			/* arch: nl.matmul(x, y) is nc_transpose(x) then
			 * nc_matmul; isa nc_transpose (tensor engine):
			 * max(P, min(64, F)), then a copy of x.T [K, M]
			 * from PSUM to SBUF. */
			model_pre_add(m, op, ENG_T, model_cyc(m, ENG_T,
			    fmax(M, fmin(MODEL_MM_INIT, K))), "transpose");
			model_pre_add(m, op, ENG_S, model_pass(m, ENG_S, M, 0,
			    0), "tensor_copy");
		}
		/* isa (nc_matmul): max(min(64, N_stationary), N_moving),
		 * 4x for fp32; trn2 arch: 4x128 fp8 input (twice the bf16
		 * rate). */
		cyc = fmax(fmin(MODEL_MM_INIT, M), N);
		if (fp32)
			cyc *= MODEL_MM_FP32_FACTOR;
		else if (fp8 && m->t->fp8_fast)
			cyc = fmax(fmin(MODEL_MM_INIT, M), N / 2.0);
		op->dur_ns = model_cyc(m, ENG_T, cyc);
		op->flops = 2.0 * M * N * K;
		return (0);
	}
	case NKIR__V1__OP_KIND__OP_TRANSPOSE:
		if (op->nsrc < 1)
			return (-1);
		if (op->track == ENG_T) {
			/* isa (nc_transpose, tensor engine): max(P, min(64,
			 * F)). */
			op->dur_ns = model_cyc(m, ENG_T, fmax((double)
			    op->src[0]->parts, fmin(MODEL_MM_INIT,
			    (double)op->src[0]->n)));
			return (0);
		}
		break;
	case NKIR__V1__OP_KIND__OP_ALLOC:
		/* A fill without a value is no instruction; a PSUM zero
		 * fill starts a matmul accumulation group (arch: nl.zeros in
		 * PSUM then +=) and costs nothing. */
		if (o->fill == NKIR__V1__FILL__FILL_UNINIT ||
		    d->space == NKIR__V1__SPACE__SPACE_PSUM) {
			op->track = ENG_NONE;
			return (0);
		}
		if (op->track == ENG_T || op->track == ENG_S)
			op->track = ENG_V;
		op->lat_ns = model_lat(m, op->track);
		break;
	case NKIR__V1__OP_KIND__OP_PRINT:
		op->track = ENG_NONE;
		return (0);
	default:
		break;
	}
	if (op->track == ENG_T || op->track < 0) {
		op->track = ENG_V;
		op->lat_ns = model_lat(m, ENG_V);
	}
	for (size_t i = 0; i < o->n_src; i++)
		if (o->src[i] != NULL && o->src[i]->value_case ==
		    NKIR__V1__OPERAND__VALUE_SCALAR)
			nscalar++;
	model_cost_elementwise(m, op, o, nscalar);
	return (0);
}

/* ------------------------------------------------------------ build */

/* An nki.isa op that leaves elements of its destination as they were
 * (a predicate, a run-time index, 255 in a shuffle mask, add-in). */
static int
model_keeps_dst(const Nkir__V1__Op *o)
{
	size_t	i;

	switch (o->kind) {
	case NKIR__V1__OP_KIND__OP_COPY_PREDICATED:
	case NKIR__V1__OP_KIND__OP_SHUFFLE:
		return (1);
	case NKIR__V1__OP_KIND__OP_DMA_COPY:
	case NKIR__V1__OP_KIND__OP_COPY_DYNAMIC:
		if (o->alu != NKIR__V1__ALU_OP__ALU_INVALID || o->oob_skip)
			return (1);
		for (i = 0; i < o->n_dyn; i++)
			if (o->dyn[i] != NULL && o->dyn[i]->operand == 0)
				return (1);
		return (0);
	default:
		return (0);
	}
}

/* An op with effects beyond its destination (an engine's accumulator
 * registers, the random stream): never hoisted out of a loop. */
static int
model_stateful(const Nkir__V1__Op *o)
{
	switch (o->kind) {
	case NKIR__V1__OP_KIND__OP_ACC_READ:
	case NKIR__V1__OP_KIND__OP_ISA_DROPOUT:
	case NKIR__V1__OP_KIND__OP_TENSOR_SCALAR_ACC:
		return (1);
	case NKIR__V1__OP_KIND__OP_ACT_ACC:
	case NKIR__V1__OP_KIND__OP_RANGE_SELECT:
	case NKIR__V1__OP_KIND__OP_SELECT_REDUCE:
		return (o->reduce_cmd != NKIR__V1__REDUCE_CMD__RCMD_IDLE);
	default:
		return (0);
	}
}

/* Does op o (or any op under it) write tensor tid? skip is excluded. */
static int
model_writes(const Nkir__V1__Op *const *body, size_t n, uint32_t tid,
    const Nkir__V1__Op *skip)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		const Nkir__V1__Op *o = body[i];

		if (o == NULL || o == skip)
			continue;
		if (o->kind == NKIR__V1__OP_KIND__OP_LOOP) {
			if (o->loop != NULL && model_writes((const Nkir__V1__Op
			    *const *)o->loop->body, o->loop->n_body, tid, skip))
				return (1);
			continue;
		}
		if (o->kind == NKIR__V1__OP_KIND__OP_IF) {
			if (o->branch != NULL && (model_writes((const
			    Nkir__V1__Op *const *)o->branch->then_body,
			    o->branch->n_then_body, tid, skip) || model_writes(
			    (const Nkir__V1__Op *const *)o->branch->else_body,
			    o->branch->n_else_body, tid, skip)))
				return (1);
			continue;
		}
		if (o->kind == NKIR__V1__OP_KIND__OP_ALLOC &&
		    o->fill == NKIR__V1__FILL__FILL_UNINIT)
			continue;
		if (o->kind == NKIR__V1__OP_KIND__OP_PRINT)
			continue;
		if (o->dst != NULL && o->dst->tensor == tid)
			return (1);
	}
	return (0);
}

/* Whether any of the n affine expressions e uses loop variable var. */
static int
model_affines_use_var(Nkir__V1__Affine *const *e, size_t n, uint32_t var)
{
	size_t	i, j;

	for (i = 0; i < n; i++)
		for (j = 0; e[i] != NULL && j < e[i]->n_terms; j++)
			if (e[i]->terms[j]->kind ==
			    NKIR__V1__TERM_KIND__TERM_LOOP &&
			    e[i]->terms[j]->index == var)
				return (1);
	return (0);
}

static int
model_uses_var(const Nkir__V1__Access *a, uint32_t var)
{
	if (a == NULL)
		return (0);
	return (model_affines_use_var(a->index, a->n_index, var) ||
	    model_affines_use_var(a->mask, a->n_mask, var));
}

/* The loops enclosing the op being built, outermost first. */
struct model_scope {
	const Nkir__V1__Loop	*loop[MODEL_MAX_DEPTH];
	int			 depth;
};

/*
 * Loop-invariant compute instructions run once per entry of the loop
 * (GUESSED compiler behaviour, see docs/model.md): a Vector/Scalar/
 * GpSimd/Tensor op whose accesses do not use the loop's variable, whose
 * sources nothing in the loop writes, and whose destination nothing else
 * in the loop writes. DMAs are never hoisted.
 */
static uint32_t
model_invariant(const struct model_scope *sc, const Nkir__V1__Op *o,
    int track)
{
	uint32_t	mask = 0;
	size_t		i;
	int		d;

	if (track < 0 || o->dst == NULL ||
	    o->kind == NKIR__V1__OP_KIND__OP_ALLOC ||
	    (o->kind == NKIR__V1__OP_KIND__OP_MATMUL && o->accumulate) ||
	    model_stateful(o) || model_keeps_dst(o))
		return (0);
	for (d = 0; d < sc->depth; d++) {
		const Nkir__V1__Loop *l = sc->loop[d];
		const Nkir__V1__Op *const *body = (const Nkir__V1__Op *const *)
		    l->body;
		int	ok = 1;

		if (model_uses_var(o->dst, l->var))
			continue;
		for (i = 0; ok && i < o->n_src; i++) {
			const Nkir__V1__Operand *s = o->src[i];

			if (s == NULL || s->value_case !=
			    NKIR__V1__OPERAND__VALUE_ACCESS)
				continue;
			if (model_uses_var(s->access, l->var) ||
			    s->access->tensor == o->dst->tensor ||
			    model_writes(body, l->n_body, s->access->tensor, NULL))
				ok = 0;
		}
		if (ok && !model_writes(body, l->n_body, o->dst->tensor, o))
			mask |= 1u << d;
	}
	return (mask);
}

static int model_build_body(struct model_ctx *, Nkir__V1__Op **, size_t,
    struct model_scope *, uint32_t *, uint32_t *);

/*
 * nisa.activation(op, data, scale=tile) is one ScalarE instruction (arch:
 * "Pipelined Multiply-Add" before the function, "at no additional
 * performance cost"), but NKIR's Op.scale is a number, so the tracer
 * writes a tile scale as a multiply followed by the activation, both on
 * the call's line. Such a pair is costed as the one instruction: the
 * multiply passes its inputs' readiness through (ENG_FUSED).
 */
static void
model_fuse(struct model_ctx *m, uint32_t first, uint32_t n)
{
	uint32_t	i;

	for (i = 0; i + 1 < n; i++) {
		const struct model_node	*a = &m->nodes[first + i];
		const struct model_node	*b = &m->nodes[first + i + 1];
		struct model_op		*x, *y;
		int			 j, scalar = 0;

		if (a->loop || b->loop)
			continue;
		x = &m->ops[a->op];
		y = &m->ops[b->op];
		if (x->kind != NKIR__V1__OP_KIND__OP_TENSOR_TENSOR ||
		    (y->kind != NKIR__V1__OP_KIND__OP_ACTIVATION &&
		    y->kind != NKIR__V1__OP_KIND__OP_ACT_ACC) ||
		    x->line != y->line || x->file != y->file || y->nsrc < 1 ||
		    y->src[0]->tensor != x->dst->tensor || !x->dst->covers)
			continue;
		for (j = 0; j < x->nsrc; j++)
			scalar += x->src[j]->free_bcast;
		if (scalar == 1 && x->nsrc == 2)
			x->track = ENG_FUSED;
	}
}

static int
model_build_op(struct model_ctx *m, const Nkir__V1__Op *o,
    struct model_scope *sc, uint32_t *opidx)
{
	const Nkir__V1__Kernel	*k = m->k;
	struct model_op		*op;
	size_t			 i;

	m->ops = model_grow(m->ops, &m->capops, m->nops + 1, sizeof *m->ops);
	if (m->ops == NULL)
		return (model_fail(m, MODEL_ELIMIT, "out of memory"));
	op = &m->ops[m->nops];
	*opidx = (uint32_t)m->nops++;
	op->kind = o->kind;
	op->name = model_op_name(o->kind);
	op->track = model_engine(o);
	op->depth = sc->depth;
	if (o->loc != NULL) {
		op->line = o->loc->line;
		if (o->loc->file < k->n_files)
			op->file = k->files[o->loc->file];
	}
	if (o->dst == NULL)
		return (model_fail(m, MODEL_EPARSE, "an op has no destination "
		    "(line %u)", op->line));
	if ((op->dst = model_acc_new(m, o->dst)) == NULL)
		return (m->error);
	for (i = 0; i < o->n_src; i++) {
		const Nkir__V1__Operand *s = o->src[i];

		if (s == NULL || s->value_case != NKIR__V1__OPERAND__VALUE_ACCESS)
			continue;
		if (op->nsrc == 3)
			return (model_fail(m, MODEL_EPARSE, "an op has more "
			    "than 3 operands (line %u)", op->line));
		if ((op->src[op->nsrc] = model_acc_new(m, s->access)) == NULL)
			return (m->error);
		if (s->access->tensor == o->dst->tensor)
			op->dst_read = 1;
		op->nsrc++;
	}
	if (o->kind == NKIR__V1__OP_KIND__OP_MATMUL && o->accumulate)
		op->dst_read = 1;
	if (model_keeps_dst(o))
		op->dst_read = 1;
	if ((o->kind == NKIR__V1__OP_KIND__OP_LOAD ||
	    o->kind == NKIR__V1__OP_KIND__OP_STORE) && op->nsrc < 1)
		return (model_fail(m, MODEL_EPARSE, "a %s has no source "
		    "(line %u)", op->name, op->line));
	if (model_cost(m, op, o) != 0)
		return (model_fail(m, MODEL_EPARSE, "a %s is missing an "
		    "operand (line %u)", op->name, op->line));
	op->new_version = o->kind == NKIR__V1__OP_KIND__OP_ALLOC ||
	    (op->dst->covers && !op->dst_read);
	op->inv_mask = model_invariant(sc, o, op->track);
	if (op->new_version && sc->depth > 0 && o->dst->tensor < m->ntensors)
		m->tensors[o->dst->tensor].in_loop = 1;
	if (o->dst->tensor < m->ntensors)
		m->tensors[o->dst->tensor].written = 1;
	return (0);
}

static int
model_build_body(struct model_ctx *m, Nkir__V1__Op **body, size_t n,
    struct model_scope *sc, uint32_t *first, uint32_t *count)
{
	uint32_t	base;
	size_t		i;

	m->nodes = model_grow(m->nodes, &m->capnodes, m->nnodes + n,
	    sizeof *m->nodes);
	if (m->nodes == NULL)
		return (model_fail(m, MODEL_ELIMIT, "out of memory"));
	base = (uint32_t)m->nnodes;
	m->nnodes += n;
	*first = base;
	*count = (uint32_t)n;
	for (i = 0; i < n; i++) {
		const Nkir__V1__Op	*o = body[i];
		struct model_node	 nd;

		memset(&nd, 0, sizeof nd);
		if (o == NULL)
			return (model_fail(m, MODEL_EPARSE, "an empty op"));
		if (o->kind == NKIR__V1__OP_KIND__OP_LOOP) {
			const Nkir__V1__Loop *l = o->loop;
			uint32_t f, c;

			if (l == NULL || l->step == 0 ||
			    l->var >= m->k->num_loop_vars)
				return (model_fail(m, MODEL_EPARSE, "a malformed "
				    "loop"));
			if (sc->depth >= MODEL_MAX_DEPTH)
				return (model_fail(m, MODEL_ELIMIT, "loops "
				    "nested more than %d deep", MODEL_MAX_DEPTH));
			nd.loop = 1;
			nd.var = l->var;
			nd.start = l->start;
			nd.step = l->step;
			if (l->step > 0 && l->stop > l->start)
				nd.trip = ((uint64_t)l->stop - (uint64_t)
				    l->start + (uint64_t)l->step - 1) /
				    (uint64_t)l->step;
			else if (l->step < 0 && l->stop < l->start)
				nd.trip = ((uint64_t)l->start - (uint64_t)
				    l->stop + (uint64_t)(-l->step) - 1) /
				    (uint64_t)(-l->step);
			sc->loop[sc->depth++] = l;
			if (model_build_body(m, l->body, l->n_body, sc, &f,
			    &c) != 0)
				return (m->error);
			sc->depth--;
			nd.first = f;
			nd.n = c;
		} else if (o->kind == NKIR__V1__OP_KIND__OP_IF) {
			uint32_t f, c;

			if (o->branch == NULL || sc->depth >= MODEL_MAX_DEPTH)
				return (model_fail(m, MODEL_EPARSE, "a malformed "
				    "if"));
			nd.loop = 2;
			nd.br = o->branch;
			if (model_build_body(m, o->branch->then_body,
			    o->branch->n_then_body, sc, &f, &c) != 0)
				return (m->error);
			nd.first = f;
			nd.n = c;
			if (model_build_body(m, o->branch->else_body,
			    o->branch->n_else_body, sc, &f, &c) != 0)
				return (m->error);
			nd.efirst = f;
			nd.en = c;
		} else if (o->kind == NKIR__V1__OP_KIND__OP_DYN_LOOP) {
			/* NKI 0.6's loop on a register: its trips are known
			 * only when it runs; costed as one (an if that holds) */
			static const Nkir__V1__Branch once =
			    NKIR__V1__BRANCH__INIT;
			uint32_t f, c;

			if (o->loop == NULL || sc->depth >= MODEL_MAX_DEPTH)
				return (model_fail(m, MODEL_EPARSE, "a malformed "
				    "dynamic loop"));
			nd.loop = 2;
			nd.br = &once;
			if (model_build_body(m, o->loop->body, o->loop->n_body,
			    sc, &f, &c) != 0)
				return (m->error);
			nd.first = f;
			nd.n = c;
		} else if (o->kind == NKIR__V1__OP_KIND__OP_RANDOM_SEED) {
			/* no data to move or compute: an empty node */
			nd.loop = 1;
		} else if (model_build_op(m, o, sc, &nd.op) != 0)
			return (m->error);
		m->nodes[base + i] = nd;
	}
	model_fuse(m, base, (uint32_t)n);
	return (0);
}

/* Give each tile its buffers: one, more for tiles declared in loops while SBUF (PSUM banks) last. */
static int
model_tensors_init(struct model_ctx *m)
{
	const Nkir__V1__Kernel	*k = m->k;
	size_t			 i;

	m->ntensors = k->n_tensors;
	if ((m->tensors = calloc(m->ntensors + 1, sizeof *m->tensors)) == NULL)
		return (model_fail(m, MODEL_ELIMIT, "out of memory"));
	for (i = 0; i < k->n_tensors; i++) {
		const Nkir__V1__Tensor	*t = k->tensors[i];
		struct model_tensor	*x = &m->tensors[i];
		uint64_t		 size = 1, parts;
		size_t			 d;

		if (t == NULL || t->n_shape < 1 || t->n_shape > 8)
			return (model_fail(m, MODEL_EPARSE, "tensor %zu is "
			    "malformed", i));
		for (d = 0; d < t->n_shape; d++) {
			if (t->shape[d] == 0 || size > (1ULL << 40) /
			    t->shape[d])
				return (model_fail(m, MODEL_EPARSE, "tensor "
				    "'%s' is too large", t->name));
			size *= t->shape[d];
		}
		x->space = t->space;
		x->dtype = t->dtype;
		x->size = size;
		x->nbuf = 1;
		parts = t->shape[model_part_dim(t)];
		x->pp_bytes = size / (parts ? parts : 1) * model_esize(t->dtype);
	}
	return (0);
}

static int
model_tiles_cmp(const void *a, const void *b)
{
	const struct model_tensor *x = *(struct model_tensor *const *)a;
	const struct model_tensor *y = *(struct model_tensor *const *)b;

	return (x->pp_bytes < y->pp_bytes ? -1 : x->pp_bytes > y->pp_bytes);
}

/* PSUM banks a tile of pp bytes per partition takes. */
static uint64_t
model_banks(uint64_t pp)
{
	return ((pp + MODEL_PSUM_BANK_BYTES - 1) / MODEL_PSUM_BANK_BYTES);
}

/*
 * Buffers per tile: one each; then, while SBUF (PSUM banks) last, one
 * more for tiles written afresh inside a loop, smallest first, up to
 * MODEL_MAX_NBUF: the compiler's multi-buffering (GUESSED policy).
 */
static int
model_tensors_buffers(struct model_ctx *m)
{
	struct model_tensor	**v;
	uint64_t		 sbuf = 0, banks = 0;
	size_t			 i, n = 0;
	int			 round;

	if ((v = calloc(m->ntensors + 1, sizeof *v)) == NULL)
		return (model_fail(m, MODEL_ELIMIT, "out of memory"));
	for (i = 0; i < m->ntensors; i++) {
		struct model_tensor *x = &m->tensors[i];

		x->nbuf = 1;
		if (x->space == NKIR__V1__SPACE__SPACE_SBUF)
			sbuf += x->pp_bytes;
		else if (x->space == NKIR__V1__SPACE__SPACE_PSUM)
			banks += model_banks(x->pp_bytes);
		else
			continue;
		if (x->in_loop)
			v[n++] = x;
	}
	qsort(v, n, sizeof *v, model_tiles_cmp);
	for (round = 1; round < MODEL_MAX_NBUF; round++)
		for (i = 0; i < n; i++) {
			struct model_tensor *x = v[i];

			if (x->nbuf != round)
				continue;
			if (x->space == NKIR__V1__SPACE__SPACE_SBUF) {
				if (sbuf + x->pp_bytes > m->t->sbuf_pp)
					continue;
				sbuf += x->pp_bytes;
			} else {
				if (banks + model_banks(x->pp_bytes) >
				    MODEL_PSUM_BANKS)
					continue;
				banks += model_banks(x->pp_bytes);
			}
			x->nbuf++;
		}
	free(v);
	for (i = 0; i < m->ntensors; i++) {
		struct model_tensor *x = &m->tensors[i];

		if ((x->bufs = calloc((size_t)x->nbuf, sizeof *x->bufs)) == NULL)
			return (model_fail(m, MODEL_ELIMIT, "out of memory"));
	}
	return (0);
}

/* ------------------------------------------------------------ schedule */

struct model_dep {
	double		 t;
	uint32_t	 id;
};

static void
model_dep_max(struct model_dep *d, double t, uint32_t id)
{
	if (t > d->t) {
		d->t = t;
		d->id = id;
	}
}

static struct model_tbuf *
model_buf_cur(struct model_tensor *x)
{
	return (&x->bufs[x->version % (uint64_t)x->nbuf]);
}

/* RAW: when [lo, hi] of x's current buffer was last written. */
static void
model_dep_read(struct model_tensor *x, int64_t lo, int64_t hi,
    struct model_dep *d)
{
	struct model_tbuf	*b = model_buf_cur(x);
	int			 i;

	for (i = 0; i < b->nw; i++)
		if (b->w[i].lo <= hi && lo <= b->w[i].hi)
			model_dep_max(d, b->w[i].ready, b->w[i].id);
}

/* WAR and WAW for a write of [lo, hi] (after a version change if new). */
static void
model_dep_write(struct model_tensor *x, int64_t lo, int64_t hi, int newv,
    struct model_dep *d)
{
	struct model_tbuf	*b;
	int			 i;

	if (newv && x->space != NKIR__V1__SPACE__SPACE_HBM &&
	    x->space != NKIR__V1__SPACE__SPACE_SHARED_HBM) {
		x->version++;
		b = model_buf_cur(x);
		model_dep_max(d, b->read_done, b->read_id);
		for (i = 0; i < b->nw; i++)
			model_dep_max(d, b->w[i].ready, b->w[i].id);
		b->nw = 0;
		b->read_done = 0.0;
		return;
	}
	b = model_buf_cur(x);
	model_dep_max(d, b->read_done, b->read_id);
	for (i = 0; i < b->nw; i++)
		if (b->w[i].lo <= hi && lo <= b->w[i].hi)
			model_dep_max(d, b->w[i].ready, b->w[i].id);
}

static void
model_note_write(struct model_tensor *x, int64_t lo, int64_t hi,
    double ready, uint32_t id)
{
	struct model_tbuf	*b = model_buf_cur(x);
	int			 i, j;

	/* Records the new write covers are superseded (it waited on them). */
	for (i = j = 0; i < b->nw; i++)
		if (!(lo <= b->w[i].lo && b->w[i].hi <= hi))
			b->w[j++] = b->w[i];
	b->nw = j;
	if (b->nw == MODEL_NWREC) {
		/* Merge the two oldest: conservative. */
		b->w[0].lo = b->w[0].lo < b->w[1].lo ? b->w[0].lo : b->w[1].lo;
		b->w[0].hi = b->w[0].hi > b->w[1].hi ? b->w[0].hi : b->w[1].hi;
		if (b->w[1].ready > b->w[0].ready) {
			b->w[0].ready = b->w[1].ready;
			b->w[0].id = b->w[1].id;
		}
		memmove(&b->w[1], &b->w[2], (size_t)(MODEL_NWREC - 2) *
		    sizeof b->w[0]);
		b->nw--;
	}
	b->w[b->nw].lo = lo;
	b->w[b->nw].hi = hi;
	b->w[b->nw].ready = ready;
	b->w[b->nw++].id = id;
}

static void
model_note_read(struct model_tensor *x, double done, uint32_t id)
{
	struct model_tbuf	*b = model_buf_cur(x);

	if (done > b->read_done) {
		b->read_done = done;
		b->read_id = id;
	}
}

/* A new instruction id with its critical-path link; UINT32_MAX: none. */
static uint32_t
model_inst(struct model_ctx *m, int track, double start, double end,
    uint32_t pred, int busy)
{
	struct model_result	*r = m->r;
	uint32_t		 id = (uint32_t)r->instructions;

	if (busy)
		r->busy_ns[track] += end - start;
	if (m->crit != NULL && r->instructions < MODEL_CRIT_MAX) {
		m->crit[id].pred = pred;
		m->crit[id].track = (uint8_t)track;
		m->crit[id].dur = (float)(end - start);
	}
	if (end > m->last_end) {
		m->last_end = end;
		m->last_id = id;
	}
	r->instructions++;
	return (r->instructions <= MODEL_CRIT_MAX ? id : UINT32_MAX);
}

static void
model_event(struct model_ctx *m, const struct model_op *op, const char *name,
    int track, double start, double dur, uint64_t bytes)
{
	struct model_event	ev;

	if (m->opts == NULL || m->opts->event_cb == NULL)
		return;
	ev.op = name;
	ev.track = track;
	ev.queue = track >= MODEL_TRACK_DMA0 ? op->dma_q : 0;
	ev.file = op->file;
	ev.line = op->line;
	ev.program = m->program;
	ev.start_ns = start;
	ev.dur_ns = dur;
	ev.bytes = bytes;
	m->opts->event_cb(m->opts->event_arg, &ev);
}

/*
 * Issue an instruction of dur ns on engine track once dep is met and the
 * engine has finished its previous one: its end; *id its instruction.
 */
static double
model_issue(struct model_ctx *m, const struct model_op *op, const char *name,
    int track, struct model_dep dep, double dur, uint32_t *id)
{
	double	end;

	model_dep_max(&dep, m->track_free[track], m->track_last[track]);
	end = dep.t + dur;
	*id = model_inst(m, track, dep.t, end, dep.id, 1);
	m->track_free[track] = end;
	m->track_last[track] = *id;
	model_event(m, op, name, track, dep.t, dur, 0);
	return (end);
}

/*
 * When engine e can move occ ns of bytes for queue class c from t on:
 * the earliest gap that long between the other queue's transfers (one
 * queue's own transfers never overlap: it runs them in order). Records
 * the interval.
 */
static double
model_dma_place(struct model_dmaeng *e, int c, double t, double occ)
{
	unsigned	o = !c, i, k;

	if (t < e->last_e[o])
		for (i = e->pos[o] > MODEL_DMA_IVALS ? e->pos[o] -
		    MODEL_DMA_IVALS : 0; i < e->pos[o]; i++) {
			k = i % MODEL_DMA_IVALS;
			if (t + occ <= e->s[o][k])
				break;
			if (e->e[o][k] > t)
				t = e->e[o][k];
		}
	k = e->pos[c]++ % MODEL_DMA_IVALS;
	e->s[c][k] = t;
	e->e[c][k] = e->last_e[c] = t + occ;
	return (t);
}

/* How much of [a, b) the kept transfers of queue class c overlap. */
static double
model_dma_overlap(const struct model_dmaeng *e, int c, double a, double b)
{
	double		ov = 0.0, x;
	unsigned	i, k, n;

	if (e->last_e[c] <= a)
		return (0.0);
	n = e->pos[c] > MODEL_DMA_IVALS ? MODEL_DMA_IVALS : e->pos[c];
	for (i = 0; i < n; i++) {
		k = (e->pos[c] - 1 - i) % MODEL_DMA_IVALS;
		if (e->e[c][k] <= a)
			break;
		x = (b < e->e[c][k] ? b : e->e[c][k]) -
		    (a > e->s[c][k] ? a : e->s[c][k]);
		if (x > 0)
			ov += x;
	}
	return (ov);
}

static int
model_exec_op(struct model_ctx *m, struct model_op *op)
{
	struct model_result	*r = m->r;
	struct model_dep	 dep = { 0.0, UINT32_MAX }, pdep;
	int64_t			 lo[3], hi[3], dlo, dhi;
	double			 end, ready;
	uint32_t		 id = UINT32_MAX, p;
	int			 d, i;

	for (d = 0; d < op->depth; d++)
		if ((op->inv_mask >> d & 1) && m->iter[d] != 0)
			return (0);
	if (r->instructions >= m->max_inst)
		return (model_fail(m, MODEL_ELIMIT, "the kernel has more than "
		    "%llu instructions to model", (unsigned long long)
		    m->max_inst));
	if ((r->instructions & 4095) == 0 && m->opts != NULL &&
	    m->opts->cancel != NULL && *m->opts->cancel)
		return (model_fail(m, MODEL_ECANCELED, "canceled"));
	model_acc_range(m, op->dst, &dlo, &dhi);
	if (op->track == ENG_FUSED) {
		for (i = 0; i < op->nsrc; i++) {
			model_acc_range(m, op->src[i], &lo[i], &hi[i]);
			model_dep_read(&m->tensors[op->src[i]->tensor], lo[i],
			    hi[i], &dep);
		}
		model_dep_write(&m->tensors[op->dst->tensor], dlo, dhi,
		    op->new_version, &dep);
		model_note_write(&m->tensors[op->dst->tensor], dlo, dhi, dep.t,
		    dep.id);
		return (0);
	}
	if (op->track == ENG_NONE) {
		/* No instruction: a buffer declaration at most. */
		if (op->new_version)
			model_dep_write(&m->tensors[op->dst->tensor], dlo, dhi,
			    1, &dep);
		return (0);
	}
	for (i = 0; i < op->nsrc; i++) {
		model_acc_range(m, op->src[i], &lo[i], &hi[i]);
		model_dep_read(&m->tensors[op->src[i]->tensor], lo[i], hi[i],
		    &dep);
	}
	/* Implicit instructions (broadcasts, a transpose) feed the op. */
	pdep = dep;
	for (i = 0; i < op->npre; i++) {
		const struct model_pre	*pr = &op->pre[i];

		end = model_issue(m, op, pr->name, pr->track, pdep, pr->dur_ns,
		    &p);
		model_dep_max(&dep, end + pr->lat_ns, p);
		if (op->kind == NKIR__V1__OP_KIND__OP_MATMUL)
			pdep = dep;	/* the copy waits for the transpose */
	}
	if (op->dst_read)
		model_dep_read(&m->tensors[op->dst->tensor], dlo, dhi, &dep);
	model_dep_write(&m->tensors[op->dst->tensor], dlo, dhi,
	    op->new_version, &dep);
	if (op->track == ENG_DMA) {
		uint32_t q0 = m->dma_rr, j;
		double	 bstart = 0.0;
		int	 bq = MODEL_TRACK_DMA0, c = op->dma_q;
		struct model_dep best = { -1.0, UINT32_MAX };

		for (j = 0; j < op->pieces; j++) {
			int	 e = (int)((q0 + j) % MODEL_DMA_QUEUES);
			int	 q = MODEL_TRACK_DMA0 + e;
			int	 lastp = j + 1 == op->pieces;
			double	 t = lastp ? op->last_ns : op->piece_ns;
			double	 occ = lastp ? op->last_occ : op->piece_occ;
			uint64_t by = lastp ? op->last_bytes : op->piece_bytes;
			struct model_dmaeng *de = &m->dmaeng[e];
			struct model_dep s = dep;
			double	 mv, fin, qend;

			/* In order on its queue; bytes in the engine's gaps. */
			model_dep_max(&s, m->dmaq_free[c][e],
			    m->dmaq_last[c][e]);
			mv = model_dma_place(de, c, s.t, occ);
			fin = s.t + t > mv + occ ? s.t + t : mv + occ;
			/* A pipelining queue is free once the bytes moved. */
			qend = m->t->dma_lat > 0 ? mv + occ : fin;
			m->dmaq_free[c][e] = qend;
			if (qend > m->track_free[q])
				m->track_free[q] = qend;
			/*
			 * busy_ns: time the engine moves bytes or a queue waits
			 * out its floor; the other queue's moves count once.
			 */
			r->busy_ns[q] += qend - s.t - model_dma_overlap(de, !c,
			    s.t, qend);
			r->dma_bytes += by;
			model_event(m, op, op->name, q, s.t, qend - s.t, by);
			if (fin > best.t) {
				best.t = fin;
				best.id = s.id;
				bstart = s.t;
				bq = q;
			}
		}
		id = model_inst(m, bq, bstart, best.t, best.id, 0);
		for (j = 0; j < op->pieces && j < MODEL_DMA_QUEUES; j++)
			m->dmaq_last[c][(q0 + j) % MODEL_DMA_QUEUES] = id;
		m->dma_rr = (q0 + op->pieces) % MODEL_DMA_QUEUES;
		end = ready = best.t;
	} else {
		end = model_issue(m, op, op->name, op->track, dep, op->dur_ns,
		    &id);
		ready = end + op->lat_ns;
		r->flops += op->flops;
	}
	for (i = 0; i < op->nsrc; i++)
		model_note_read(&m->tensors[op->src[i]->tensor], end, id);
	model_note_write(&m->tensors[op->dst->tensor], dlo, dhi, ready, id);
	return (0);
}

static int
model_exec_body(struct model_ctx *m, uint32_t first, uint32_t n, int depth)
{
	uint32_t	i;
	uint64_t	it;

	for (i = 0; i < n; i++) {
		const struct model_node *nd = &m->nodes[first + i];

		if (!nd->loop) {
			if (model_exec_op(m, &m->ops[nd->op]) != 0)
				return (m->error);
			continue;
		}
		if (nd->loop == 2) {		/* an if: the side it takes */
			if (model_exec_body(m, model_holds(m, nd->br) ?
			    nd->first : nd->efirst, model_holds(m, nd->br) ?
			    nd->n : nd->en, depth) != 0)
				return (m->error);
			continue;
		}
		for (it = 0; it < nd->trip; it++) {
			m->vars[nd->var] = nd->start + (int64_t)it * nd->step;
			m->iter[depth] = it;
			if (model_exec_body(m, nd->first, nd->n, depth + 1) != 0)
				return (m->error);
		}
		m->iter[depth] = 0;
	}
	return (0);
}

int
model_image_ir(const void *image, size_t len, const void **ir,
    size_t *ir_len)
{
	const unsigned char	*p = image;
	uint64_t		 hlen = 0, plen = 0;
	int			 i;

	*ir = NULL;
	*ir_len = 0;
	/* docs/nkir.md: "NKIX", version, flags, header length (32),
	 * payload length at 16, checksum at 24, payload at 32. */
	if (p == NULL || len < 32 || memcmp(p, "NKIX", 4) != 0)
		return (MODEL_EPARSE);
	for (i = 3; i >= 0; i--)
		hlen = hlen << 8 | p[12 + i];
	for (i = 7; i >= 0; i--)
		plen = plen << 8 | p[16 + i];
	if (hlen < 32 || hlen > len || plen > len - hlen)
		return (MODEL_EPARSE);
	*ir = p + hlen;
	*ir_len = (size_t)plen;
	return (0);
}

static const struct model_tgt *
model_target_find(const char *name)
{
	size_t	i;

	if (name == NULL || *name == '\0')
		return (&model_targets[0]);
	if (strcmp(name, "inf2") == 0)
		name = "trn1";
	for (i = 0; i < sizeof model_targets / sizeof model_targets[0]; i++)
		if (strcmp(model_targets[i].name, name) == 0)
			return (&model_targets[i]);
	return (NULL);
}

static void
model_critical(struct model_ctx *m)
{
	struct model_result	*r = m->r;
	uint32_t		 id = m->last_id, steps = 0;
	int			 i, best = -1;

	r->critical_track = -1;
	if (m->crit == NULL || r->instructions == 0 ||
	    r->instructions > MODEL_CRIT_MAX)
		return;
	while (id != UINT32_MAX && steps++ <= MODEL_CRIT_MAX) {
		r->critical_ns[m->crit[id].track] += m->crit[id].dur;
		if (m->crit[id].pred >= id)
			break;
		id = m->crit[id].pred;
	}
	for (i = 0; i < MODEL_NTRACKS; i++)
		if (best < 0 || r->critical_ns[i] > r->critical_ns[best])
			best = i;
	r->critical_track = best;
}

static void
model_ctx_free(struct model_ctx *m)
{
	size_t	i;

	for (i = 0; i < m->nops; i++) {
		model_acc_free(m->ops[i].dst);
		for (int j = 0; j < m->ops[i].nsrc; j++)
			model_acc_free(m->ops[i].src[j]);
	}
	free(m->ops);
	free(m->nodes);
	if (m->tensors != NULL)
		for (i = 0; i < m->ntensors; i++)
			free(m->tensors[i].bufs);
	free(m->tensors);
	free(m->vars);
	free(m->crit);
}

int
model_run(const void *ir, size_t len, const struct model_opts *opts,
    struct model_result *r, char *diag, size_t diaglen)
{
	struct model_ctx	 m;
	struct model_scope	 sc;
	Nkir__V1__Kernel	*k;
	struct timespec		 t0, t1;
	uint64_t		 nprog = 1, pi, rest;
	size_t			 g;
	const char		*tname;

	assert(r != NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(r, 0, sizeof *r);
	memset(&m, 0, sizeof m);
	memset(&sc, 0, sizeof sc);
	r->critical_track = -1;
	if (diag != NULL && diaglen > 0)
		diag[0] = '\0';
	m.r = r;
	m.opts = opts;
	m.diag = diag;
	m.diaglen = diaglen;
	m.max_inst = opts != NULL && opts->max_instructions ?
	    opts->max_instructions : MODEL_MAX_INSTRUCTIONS;
	if ((k = nkir__v1__kernel__unpack(NULL, len, ir)) == NULL)
		return (model_fail(&m, MODEL_EPARSE, "cannot parse the kernel "
		    "IR (%zu bytes)", len));
	m.k = k;
	tname = opts != NULL && opts->target != NULL && *opts->target ?
	    opts->target : k->target;
	if ((m.t = model_target_find(tname)) == NULL) {
		model_fail(&m, MODEL_EINVAL, "cannot model '%s' on target "
		    "'%s': the model knows trn1 (inf2) and trn2", k->name,
		    tname);
		goto out;
	}
	snprintf(r->target, sizeof r->target, "%s", m.t->name);
	r->peak_flops_per_ns = m.t->peak_flops;
	r->dma_peak_bytes_per_ns = m.t->dma_bw * MODEL_DMA_QUEUES;
	if (k->n_grid > MODEL_MAX_GRID || k->num_loop_vars > MODEL_MAX_VARS) {
		model_fail(&m, MODEL_ELIMIT, "kernel '%s' has a grid or loops "
		    "the model does not take", k->name);
		goto out;
	}
	for (g = 0; g < k->n_grid; g++) {
		if (k->grid[g] == 0 || nprog > (1ULL << 20) / k->grid[g]) {
			model_fail(&m, MODEL_ELIMIT, "kernel '%s': launch grid "
			    "too large", k->name);
			goto out;
		}
		nprog *= k->grid[g];
	}
	if ((m.vars = calloc(k->num_loop_vars + 1, sizeof *m.vars)) == NULL ||
	    (m.crit = calloc(MODEL_CRIT_MAX, sizeof *m.crit)) == NULL) {
		model_fail(&m, MODEL_ELIMIT, "out of memory");
		goto out;
	}
	for (g = 0; g < MODEL_NTRACKS; g++)
		m.track_last[g] = UINT32_MAX;
	for (g = 0; g < MODEL_DMA_QCLASSES * MODEL_DMA_QUEUES; g++)
		m.dmaq_last[g / MODEL_DMA_QUEUES][g % MODEL_DMA_QUEUES] =
		    UINT32_MAX;
	m.last_id = UINT32_MAX;
	if (model_tensors_init(&m) != 0 ||
	    model_build_body(&m, k->body, k->n_body, &sc, &m.root_first,
	    &m.root_n) != 0 || model_tensors_buffers(&m) != 0)
		goto out;
	/* Every program in row-major order, on the one core. */
	for (pi = 0; pi < nprog; pi++) {
		rest = pi;
		for (g = k->n_grid; g-- > 0;) {
			m.prog[g] = (int64_t)(rest % k->grid[g]);
			rest /= k->grid[g];
		}
		m.program = pi;
		if (model_exec_body(&m, m.root_first, m.root_n, 0) != 0)
			goto out;
	}
	for (g = 0; g < MODEL_NTRACKS; g++)
		if (m.track_free[g] > r->total_ns)
			r->total_ns = m.track_free[g];
	/* A DMA engine's two queues overlap: busy_ns counts it once. */
	for (g = MODEL_TRACK_DMA0; g < MODEL_NTRACKS; g++)
		if (r->busy_ns[g] > r->total_ns)
			r->busy_ns[g] = r->total_ns;
	model_critical(&m);
out:
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r->host_seconds = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	model_ctx_free(&m);
	nkir__v1__kernel__free_unpacked(k, NULL);
	return (m.error);
}
