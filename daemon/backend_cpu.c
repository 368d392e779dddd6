/* backend_cpu.c: the embedded cpu backend, NKIR executed on the host CPU by sim/ and timed on a modeled NeuronCore by model/. */
#include <assert.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "nkir.pb-c.h"

#include "model/model.h"
#include "sim/sim.h"

#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/xmalloc.h"

struct backend_cpu {
	unsigned	ncores;
	unsigned	threads;	/* per run (sim_run_opts.threads) */
};

struct backend_cpu_program {
	struct backend_program	 bp;
	struct sim_program		*sp;
	void			*ir;	/* the image's NKIR, for the model */
	size_t			 ir_len;
};

/* sim's codes have the same meaning and values as the backend's. */
_Static_assert((int)SIM_OK == BACKEND_OK &&
    (int)SIM_EPARSE == BACKEND_EPARSE && (int)SIM_EINVAL == BACKEND_EINVAL &&
    (int)SIM_ELIMIT == BACKEND_ELIMIT && (int)SIM_EARG == BACKEND_EARG &&
    (int)SIM_ECANCELED == BACKEND_ECANCELED &&
    (int)SIM_ERUNTIME == BACKEND_ERUNTIME && (int)SIM_ENOMEM == BACKEND_ENOMEM,
    "sim's error codes are the backend's");

static int
backend_cpu_err(int serr)
{
	return (serr <= SIM_OK && serr >= SIM_ENOMEM ? serr : BACKEND_ERUNTIME);
}

static void
backend_cpu_diag(char *diag, const struct sim_diag *sd, int serr)
{
	if (sd->msg[0] != '\0')
		snprintf(diag, BACKEND_DIAG_LEN, "%s", sd->msg);
	else
		snprintf(diag, BACKEND_DIAG_LEN, "%s", sim_strerror(serr));
}

/* The CPUs nkid may run on (its affinity mask), at least 1. */
static unsigned
backend_cpu_online(void)
{
	cpu_set_t	set;
	int		n;

	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return (1);
	n = CPU_COUNT(&set);
	return (n > 0 ? (unsigned)n : 1);
}

static int
backend_cpu_open(const struct config *cfg, void **state, char *err,
    size_t errlen)
{
	struct backend_cpu	*b;

	b = xcalloc(1, sizeof *b);
	b->ncores = cfg->cpu_cores;
	b->threads = cfg->cpu_executor_threads != 0 ?
	    cfg->cpu_executor_threads : backend_cpu_online();
	if (b->threads > 64)
		b->threads = 64;
	*state = b;
	return (0);
}

static void
backend_cpu_close(void *state)
{
	free(state);
}

static unsigned
backend_cpu_probe(void *state)
{
	struct backend_cpu	*b = state;

	return (b->ncores);
}

static const char *
backend_cpu_compiler_version(void *state)
{
	return ("sim " SIM_FORMAT);
}

static void
backend_cpu_versions(void *state, void (*add)(void *, const char *,
    const char *), void *arg)
{
	add(arg, "sim", SIM_FORMAT);
}

static int
backend_cpu_compile_ir(void *state, const void *ir, size_t len, void **image,
    size_t *image_len, char *diag)
{
	struct sim_diag	sd;
	int		serr;

	memset(&sd, 0, sizeof sd);
	*image = NULL;
	*image_len = 0;
	if ((serr = sim_compile(ir, len, image, image_len, &sd)) != SIM_OK) {
		backend_cpu_diag(diag, &sd, serr);
		return (backend_cpu_err(serr));
	}
	return (0);
}

/*
 * compile for target: a target NKI names (MODEL_TARGET_NAMES) is written
 * into the image's NKIR, so benchmark and profile model the NeuronCore
 * the request names, not the one the kernel was traced for; any other
 * is refused with the list. The cpu backend takes no compiler options.
 */
static int
backend_cpu_compile(void *state, const void *ir, size_t len,
    const char *target, const char *options, void **image,
    size_t *image_len, char *diag)
{
	Nkir__V1__Kernel	*k;
	const char		*canon;
	const void		*pir;
	char			*old;
	uint8_t			*buf;
	size_t			 n, plen;
	int			 error;

	*image = NULL;
	*image_len = 0;
	if (target == NULL || *target == '\0')
		return (backend_cpu_compile_ir(state, ir, len, image, image_len,
		    diag));
	if ((canon = model_target_canon(target)) == NULL) {
		snprintf(diag, BACKEND_DIAG_LEN, "unknown target '%s': NKI "
		    "names %s", target, MODEL_TARGET_NAMES);
		return (BACKEND_EINVAL);
	}
	/*
	 * sim_compile parses the IR with its bounds first; the kernel it
	 * validated is then read back from the image to take the target.
	 */
	if ((error = backend_cpu_compile_ir(state, ir, len, image, image_len,
	    diag)) != 0)
		return (error);
	if (sim_image_ir(*image, *image_len, &pir, &plen, NULL) != 0 ||
	    (k = nkir__v1__kernel__unpack(NULL, plen, pir)) == NULL)
		return (0);
	if (strcmp(k->target, canon) == 0) {
		nkir__v1__kernel__free_unpacked(k, NULL);
		return (0);
	}
	free(*image);
	*image = NULL;
	*image_len = 0;
	/* Packed with the target, then the unpacked string put back for
	 * free_unpacked. */
	old = k->target;
	k->target = (char *)canon;
	n = nkir__v1__kernel__get_packed_size(k);
	buf = xmalloc(n ? n : 1);
	nkir__v1__kernel__pack(k, buf);
	k->target = old;
	nkir__v1__kernel__free_unpacked(k, NULL);
	error = backend_cpu_compile_ir(state, buf, n, image, image_len, diag);
	free(buf);
	return (error);
}

static const struct sim_sig *
backend_cpu_param(const struct backend_program *bp, size_t i)
{
	const struct backend_cpu_program *p = bp->impl;

	return (sim_program_param(p->sp, i));
}

static const struct sim_sig *
backend_cpu_output(const struct backend_program *bp, size_t i)
{
	const struct backend_cpu_program *p = bp->impl;

	return (sim_program_output(p->sp, i));
}

static int
backend_cpu_load(void *state, const void *image, size_t len,
    struct backend_program **out, char *diag)
{
	struct backend_cpu_program	*p;
	struct sim_program			*sp = NULL;
	struct sim_diag			 sd;
	const void			*ir;
	int				 serr;

	memset(&sd, 0, sizeof sd);
	if ((serr = sim_program_load(image, len, &sp, &sd)) != SIM_OK) {
		backend_cpu_diag(diag, &sd, serr);
		return (backend_cpu_err(serr));
	}
	p = xcalloc(1, sizeof *p);
	p->sp = sp;
	if (model_image_ir(image, len, &ir, &p->ir_len) == 0) {
		p->ir = xmalloc(p->ir_len ? p->ir_len : 1);
		memcpy(p->ir, ir, p->ir_len);
	}
	p->bp.name = sim_program_name(sp);
	p->bp.nparams = sim_program_nparams(sp);
	p->bp.noutputs = sim_program_noutputs(sp);
	p->bp.param = backend_cpu_param;
	p->bp.output = backend_cpu_output;
	p->bp.impl = p;
	*out = &p->bp;
	return (0);
}

static void
backend_cpu_unload(void *state, struct backend_program *bp)
{
	struct backend_cpu_program	*p;

	if (bp == NULL)
		return;
	p = bp->impl;
	sim_program_free(p->sp);
	free(p->ir);
	free(p);
}

static size_t
backend_cpu_footprint(void *state, const struct backend_program *bp)
{
	const struct backend_cpu_program *p = bp->impl;

	return (sizeof *p + p->ir_len + sim_program_footprint(p->sp));
}

static int
backend_cpu_run(const struct backend_cpu *b, const struct backend_program *bp,
    const struct backend_exec *x, int with_print, char *diag)
{
	const struct backend_cpu_program	*p = bp->impl;
	struct sim_run_opts				 opts;
	struct sim_diag				 sd;
	int					 serr;

	memset(&opts, 0, sizeof opts);
	memset(&sd, 0, sizeof sd);
	opts.cancel = x->cancel;
	opts.out_bufs = x->out_bufs;
	opts.threads = b->threads;
	if (with_print) {
		opts.print_cb = x->print_cb;
		opts.print_arg = x->print_arg;
	}
	serr = sim_run(p->sp, x->inputs, x->ninputs, x->outputs, x->noutputs,
	    &opts, &sd);
	if (serr != SIM_OK) {
		backend_cpu_diag(diag, &sd, serr);
		return (backend_cpu_err(serr));
	}
	return (0);
}

static int
backend_cpu_execute(void *state, const struct backend_program *bp,
    unsigned core, const struct backend_exec *x, char *diag)
{
	struct backend_cpu	*b = state;

	assert(core < b->ncores);
	return (backend_cpu_run(b, bp, x, 0, diag));
}

static int
backend_cpu_simulate(void *state, const struct backend_program *bp,
    const struct backend_exec *x, char *diag)
{
	return (backend_cpu_run(state, bp, x, 1, diag));
}

/* ------------------------------------------------------------ benchmark */

/*
 * Deterministic stand-in values for an input given by shape only: a
 * fixed pseudo-random sequence in [-1, 1) (integers: 0 to 15, bool: 0
 * or 1), the same for every run and every daemon.
 */
static void
backend_cpu_fill(struct sim_tensor *t)
{
	float		 v[256];
	unsigned char	*out = t->data;
	size_t		 esize = sim_dtype_size(t->dtype), n, i, k;
	uint32_t	 x = 2463534242u;

	n = esize ? t->nbytes / esize : 0;
	for (i = 0; i < n; i += k) {
		k = n - i < 256 ? n - i : 256;
		for (size_t j = 0; j < k; j++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			v[j] = (float)(x >> 8) / 8388608.0f - 1.0f;
			if (t->dtype >= SIM_DT_INT8 && t->dtype <= SIM_DT_UINT32)
				v[j] = (float)(int)((v[j] + 1.0f) * 8.0f);
			else if (t->dtype == SIM_DT_BOOL)
				v[j] = v[j] >= 0.0f;
		}
		sim_dtype_from_float(t->dtype, out + i * esize, v, k);
	}
}

/*
 * Execute p warmup + iters times on core; samples_us[i] is the time of
 * timed execution i. Inputs with data == NULL get backend_cpu_fill
 * values (the same for every execution).
 */
static int
backend_cpu_benchmark(void *state, const struct backend_program *bp,
    unsigned core, const struct backend_exec *x, unsigned warmup,
    unsigned iters, double *samples_us, char *diag)
{
	struct backend_cpu	*b = state;
	struct backend_exec	 y = *x;
	struct sim_tensor		*in;
	unsigned		 i;
	int			 error = 0;

	assert(core < b->ncores);
	in = xcalloc(x->ninputs + 1, sizeof *in);
	for (i = 0; i < x->ninputs; i++) {
		in[i] = x->inputs[i];
		if (in[i].data == NULL && in[i].nbytes > 0) {
			if ((in[i].data = malloc(in[i].nbytes)) == NULL) {
				snprintf(diag, BACKEND_DIAG_LEN, "cannot "
				    "allocate %zu bytes for input %u",
				    in[i].nbytes, i);
				error = BACKEND_ENOMEM;
				goto out;
			}
			backend_cpu_fill(&in[i]);
		}
	}
	y.inputs = in;
	for (i = 0; i < warmup + iters; i++) {
		uint64_t	t0 = uv_hrtime();

		if ((error = backend_cpu_run(b, bp, &y, 0, diag)) != 0)
			goto out;
		if (i >= warmup)
			samples_us[i - warmup] = (double)(uv_hrtime() -
			    t0) / 1e3;
		if (i + 1 < warmup + iters)
			sim_tensors_release(x->outputs, x->noutputs);
	}
out:
	for (i = 0; i < x->ninputs; i++)
		if (x->inputs[i].data == NULL)
			free(in[i].data);
	free(in);
	return (error);
}

/* ------------------------------------------------------------ model */

/* Most instruction slices kept in one trace; the summary counts all. */
#define BACKEND_CPU_EVENTS_MAX	200000

static int
backend_cpu_model_err(const struct backend_cpu_program *p, int merr,
    const char *mdiag, char *diag)
{
	snprintf(diag, BACKEND_DIAG_LEN, "cannot model '%s' on a NeuronCore: "
	    "%s", p->bp.name, mdiag[0] ? mdiag : model_strerror(merr));
	return (merr == MODEL_ECANCELED ? BACKEND_ECANCELED :
	    merr == MODEL_ELIMIT ? BACKEND_ELIMIT : BACKEND_EINVAL);
}

/*
 * The modeled latency of one execution of p on the NeuronCore its
 * target names (docs/model.md): deterministic, nothing executed.
 */
static int
backend_cpu_model(void *state, const struct backend_program *bp, double *us,
    char *target, char *diag)
{
	const struct backend_cpu_program *p = bp->impl;
	struct model_result		 r;
	char				 mdiag[512];
	int				 merr;

	*us = 0.0;
	target[0] = '\0';
	if (p->ir == NULL) {
		snprintf(diag, BACKEND_DIAG_LEN, "cannot model '%s': the image "
		    "holds no NKIR", bp->name);
		return (BACKEND_EFORMAT);
	}
	if ((merr = model_run(p->ir, p->ir_len, NULL, &r, mdiag,
	    sizeof mdiag)) != 0)
		return (backend_cpu_model_err(p, merr, mdiag, diag));
	*us = r.total_ns / 1e3;
	snprintf(target, 16, "%s", r.target);
	return (0);
}

/* ------------------------------------------------------------ profile */

/*
 * Execute p max(num_execs, profile_nth) times on core; executions
 * profile_nth, 2 * profile_nth, ... get a trace: the modeled NeuronCore
 * timeline of the kernel (Chrome trace-event JSON, one track per engine
 * and DMA queue, one slice per instruction) and its JSON summary, from
 * model/. See docs/profile.md and docs/model.md.
 */
static int
backend_cpu_profile(void *state, const struct backend_program *bp,
    unsigned core, const struct backend_exec *x, unsigned num_execs,
    unsigned profile_nth, struct backend_trace **traces, size_t *ntraces,
    char *diag)
{
	struct backend_cpu		*b = state;
	const struct backend_cpu_program *p = bp->impl;
	struct backend_trace		*t = NULL;
	struct model_opts		 mo;
	struct model_result		 r;
	char				 mdiag[512], *tr, *sum;
	size_t				 tlen, slen, nt = 0;
	unsigned			 n, i;
	int				 merr, error = 0;

	assert(core < b->ncores);
	*traces = NULL;
	*ntraces = 0;
	if (profile_nth == 0 || num_execs == 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "num_execs and profile_nth "
		    "must be at least 1");
		return (BACKEND_EARG);
	}
	if (p->ir == NULL) {
		snprintf(diag, BACKEND_DIAG_LEN, "cannot profile '%s': the "
		    "image holds no NKIR", bp->name);
		return (BACKEND_EFORMAT);
	}
	n = num_execs < profile_nth ? profile_nth : num_execs;
	t = xcalloc(n / profile_nth + 1, sizeof *t);
	memset(&mo, 0, sizeof mo);
	mo.cancel = x->cancel;
	for (i = 1; i <= n; i++) {
		if ((error = backend_cpu_run(b, bp, x, 0, diag)) != 0)
			goto fail;
		if (i % profile_nth == 0) {
			merr = model_report(p->ir, p->ir_len, &mo, bp->name, i,
			    BACKEND_CPU_EVENTS_MAX, &tr, &tlen, &sum, &slen, &r,
			    mdiag, sizeof mdiag);
			if (merr != 0) {
				sim_tensors_release(x->outputs, x->noutputs);
				error = backend_cpu_model_err(p, merr, mdiag,
				    diag);
				goto fail;
			}
			t[nt].execution = i;
			t[nt].trace = tr;
			t[nt].trace_len = tlen;
			t[nt].summary_json = sum;
			t[nt++].summary_len = slen;
		}
		if (i < n)
			sim_tensors_release(x->outputs, x->noutputs);
	}
	*traces = t;
	*ntraces = nt;
	return (0);
fail:
	backend_traces_free(t, nt);
	return (error);
}

const struct backend_ops backend_cpu_ops = {
	.name = "cpu",
	.format = SIM_FORMAT,
	.on_host = 1,
	.open = backend_cpu_open,
	.close = backend_cpu_close,
	.probe = backend_cpu_probe,
	.compiler_version = backend_cpu_compiler_version,
	.versions = backend_cpu_versions,
	.compile = backend_cpu_compile,
	.load = backend_cpu_load,
	.unload = backend_cpu_unload,
	.execute = backend_cpu_execute,
	.simulate = backend_cpu_simulate,
	.benchmark = backend_cpu_benchmark,
	.profile = backend_cpu_profile,
	.footprint = backend_cpu_footprint,
	.model = backend_cpu_model,
};
