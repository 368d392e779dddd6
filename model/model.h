/*
 * model.h: a performance model of one NeuronCore (trn1, trn2): it walks a
 * kernel's NKIR, costs each instruction on its engine or DMA queue from
 * NKI's documented rules and list-schedules them, without executing.
 * docs/model.md describes the model, its sources and its blind spots.
 *
 * The model is deterministic: the same IR and target always give the
 * same figures. It keeps no state between calls and is thread-safe.
 */
#ifndef NKID_MODEL_H
#define NKID_MODEL_H

#include <stddef.h>
#include <stdint.h>

/*
 * The model's version: it changes whenever a rule or constant changes a
 * modeled figure, so a figure can say which model made it
 * (docs/model.md, "Versions").
 */
#define MODEL_VERSION		"7"

/* The targets NKI names (aws-neuron-sdk nki/api/nki/__init__.py,
 * NEURON_PLATFORM_TARGET_OVERRIDE), as the model takes them. */
#define MODEL_TARGET_NAMES	"trn1 (inf2, gen2), trn2 (gen3), trn3 (gen4)"

/* Error codes: 0 or one of these (negative). */
enum model_err {
	MODEL_OK = 0,
	MODEL_EPARSE = -1,	/* malformed NKIR */
	MODEL_EINVAL = -2,	/* a target the model has no data for */
	MODEL_ELIMIT = -3,	/* more instructions than max_instructions */
	MODEL_ECANCELED = -4,
};

/*
 * Tracks, the resources instructions run on: the four compute engines,
 * then the 16 DMA engines of the core (each with a load and a store queue,
 * docs/model.md).
 */
enum model_track {
	MODEL_TRACK_TENSOR = 0,
	MODEL_TRACK_VECTOR,
	MODEL_TRACK_SCALAR,
	MODEL_TRACK_GPSIMD,
	MODEL_TRACK_DMA0,
};
#define MODEL_DMA_QUEUES	16
#define MODEL_NTRACKS		(MODEL_TRACK_DMA0 + MODEL_DMA_QUEUES)

/* One modeled instruction (a DMA: one transfer on one engine). */
struct model_event {
	const char	*op;		/* "matmul", "load", ... (static) */
	int		 track;		/* enum model_track */
	int		 queue;		/* DMA: 0 the load queue, 1 stores */
	const char	*file;		/* kernel source (borrowed), or NULL */
	uint32_t	 line;
	uint64_t	 program;	/* SPMD program index */
	double		 start_ns;	/* since the kernel started */
	double		 dur_ns;
	uint64_t	 bytes;		/* DMA: bytes moved; else 0 */
};

struct model_opts {
	/* "trn1", "trn2", "trn3" or an alias (MODEL_TARGET_NAMES); NULL or
	 * "": the kernel's own target, else trn1. */
	const char	*target;
	/* Called for every modeled instruction in program order (not time
	 * order), the event borrowed for the call. May be NULL. */
	void		(*event_cb)(void *arg, const struct model_event *ev);
	void		*event_arg;
	/* Most instructions to model (0: 1e9); more is MODEL_ELIMIT. */
	uint64_t	 max_instructions;
	/* Checked every few thousand instructions; may be NULL. */
	const volatile int *cancel;
	/* Non-zero: the model without its one calibrated constant (trn1's
	 * DMA share for small transfers, docs/model.md): every rule from the
	 * documents alone, for the leave-one-family-out figure. */
	int		 unfitted;
};

struct model_result {
	char		 target[8];		/* the target modeled */
	double		 total_ns;		/* modeled latency */
	double		 overhead_ns;		/* ... of it the execution's
						 * start-up and tear-down */
	uint32_t	 cores;			/* physical NeuronCores the
						 * grid ran on; busy_ns and
						 * the critical path are the
						 * slowest one's */
	uint64_t	 instructions;		/* instructions modeled */
	double		 busy_ns[MODEL_NTRACKS];	/* time each track works */
	/* Time each track spends on the critical path (the chain of
	 * instructions that ends last); critical_track is its largest,
	 * -1 if the kernel has more instructions than the path is kept
	 * for (then see busy_ns). */
	double		 critical_ns[MODEL_NTRACKS];
	int		 critical_track;
	double		 flops;			/* matmul FLOPs */
	double		 peak_flops_per_ns;	/* TensorE peak (bf16) */
	uint64_t	 dma_bytes;		/* bytes moved by DMA */
	uint64_t	 spill_bytes;		/* ... of them SBUF spills
						 * and reloads */
	double		 dma_peak_bytes_per_ns;	/* all queues together */
	double		 host_seconds;		/* what modeling took */
};

/*
 * Model one execution of the kernel in NKIR bytes ir (format "nkir/1",
 * every program of its SPMD grid) on opts->target. On success fills *r
 * and returns 0; on failure returns a model_err with a message naming
 * the cause in diag (diaglen bytes, may be 0). opts may be NULL.
 */
int	 model_run(const void *ir, size_t len, const struct model_opts *opts,
	    struct model_result *r, char *diag, size_t diaglen);

/*
 * Model the kernel like model_run and write the timeline: *trace gets
 * Chrome trace-event JSON (one track per engine and DMA queue, one slice
 * per instruction with its file:line, at most max_events slices) and
 * *summary a JSON summary (total, per-track active %, HFU, DMA bytes and
 * bandwidth use, the critical-path engine). kernel names the kernel and
 * execution the execution in both. Both are malloc'd, NUL-terminated,
 * the caller frees them. opts->event_cb is ignored.
 */
int	 model_report(const void *ir, size_t len, const struct model_opts *opts,
	    const char *kernel, unsigned execution, size_t max_events,
	    char **trace, size_t *trace_len, char **summary,
	    size_t *summary_len, struct model_result *r, char *diag,
	    size_t diaglen);

/*
 * The NKIR inside an executable image of the cpu backend (sim_compile's
 * output, layout in docs/nkir.md): *ir points into image. Returns 0, or
 * MODEL_EPARSE if image is not such an image.
 */
int	 model_image_ir(const void *image, size_t len, const void **ir,
	    size_t *ir_len);

/*
 * The model's name of target name ("trn1", "trn2", "trn3"; "inf2" and
 * "gen2" are trn1, "gen3" trn2, "gen4" trn3), or NULL if NKI names no
 * such target (then MODEL_TARGET_NAMES lists those it does). NULL or ""
 * is "trn1", the default target.
 */
const char *model_target_canon(const char *name);

/* Short name of a track: "tensor", "vector", "scalar", "gpsimd",
 * "dma0" .. "dma15". */
const char *model_track_name(int track);
/* Static description of a model_err. */
const char *model_strerror(int err);

#endif /* NKID_MODEL_H */
