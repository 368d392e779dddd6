/* backend_cpu.c: the embedded cpu backend, NKIR executed on the host CPU by sim/. */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/sim.h"

#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/xmalloc.h"

struct backend_cpu {
	unsigned	ncores;
};

struct backend_cpu_program {
	struct backend_program	 bp;
	struct sim_program		*sp;
};

/* sim's codes have the same meaning and values as the backend's. */
static int
backend_cpu_err(int serr)
{
	switch (serr) {
	case SIM_OK:
		return (BACKEND_OK);
	case SIM_EPARSE:
		return (BACKEND_EPARSE);
	case SIM_EINVAL:
		return (BACKEND_EINVAL);
	case SIM_ELIMIT:
		return (BACKEND_ELIMIT);
	case SIM_EARG:
		return (BACKEND_EARG);
	case SIM_ECANCELED:
		return (BACKEND_ECANCELED);
	case SIM_ENOMEM:
		return (BACKEND_ENOMEM);
	default:
		return (BACKEND_ERUNTIME);
	}
}

static void
backend_cpu_diag(char *diag, const struct sim_diag *sd, int serr)
{
	if (sd->msg[0] != '\0')
		snprintf(diag, BACKEND_DIAG_LEN, "%s", sd->msg);
	else
		snprintf(diag, BACKEND_DIAG_LEN, "%s", sim_strerror(serr));
}

static int
backend_cpu_open(const struct config *cfg, void **state, char *err,
    size_t errlen)
{
	struct backend_cpu	*b;

	b = xcalloc(1, sizeof *b);
	b->ncores = cfg->cpu_cores;
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
backend_cpu_compile(void *state, const void *ir, size_t len, void **image,
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
	int				 serr;

	memset(&sd, 0, sizeof sd);
	if ((serr = sim_program_load(image, len, &sp, &sd)) != SIM_OK) {
		backend_cpu_diag(diag, &sd, serr);
		return (backend_cpu_err(serr));
	}
	p = xcalloc(1, sizeof *p);
	p->sp = sp;
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
	free(p);
}

static int
backend_cpu_run(const struct backend_program *bp, const struct backend_exec *x,
    int with_print, char *diag)
{
	const struct backend_cpu_program	*p = bp->impl;
	struct sim_run_opts				 opts;
	struct sim_diag				 sd;
	int					 serr;

	memset(&opts, 0, sizeof opts);
	memset(&sd, 0, sizeof sd);
	opts.cancel = x->cancel;
	opts.out_bufs = x->out_bufs;
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
	return (backend_cpu_run(bp, x, 0, diag));
}

static int
backend_cpu_simulate(void *state, const struct backend_program *bp,
    const struct backend_exec *x, char *diag)
{
	return (backend_cpu_run(bp, x, 1, diag));
}

/* ------------------------------------------------------------ benchmark */

static uint64_t
backend_cpu_now_ns(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

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
		uint64_t	t0 = backend_cpu_now_ns();

		if ((error = backend_cpu_run(bp, &y, 0, diag)) != 0)
			goto out;
		if (i >= warmup)
			samples_us[i - warmup] = (double)(backend_cpu_now_ns() -
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

/* ------------------------------------------------------------ profile */

/* A growing text buffer; allocation failure is fatal (xmalloc). */
struct backend_cpu_buf {
	char	*s;
	size_t	 len;
	size_t	 cap;
};

static void
backend_cpu_buf_printf(struct backend_cpu_buf *b, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		assert(n >= 0);
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		b->cap = b->cap * 2 + (size_t)n + 256;
		b->s = xreallocarray(b->s, 1, b->cap);
	}
}

/* s as a JSON string body (quotes excluded). */
static void
backend_cpu_buf_json(struct backend_cpu_buf *b, const char *s)
{
	for (; s != NULL && *s != '\0'; s++) {
		unsigned char	c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			backend_cpu_buf_printf(b, "\\%c", c);
		else if (c < 0x20)
			backend_cpu_buf_printf(b, "\\u%04x", c);
		else
			backend_cpu_buf_printf(b, "%c", c);
	}
}

/* Profile tracks: one per engine, in this order (Chrome "tid"). */
static const char *const backend_cpu_engines[] = {
	"dma", "tensor", "vector", "scalar", "gpsimd",
};
static const char *const backend_cpu_track_names[] = {
	"DMA (load, store)", "Tensor engine (matmul, transpose)",
	"Vector engine", "Scalar engine (activation)", "GpSimd engine",
};
#define BACKEND_CPU_NENGINES	5

/* Most op slices kept in one trace; the summary counts every op. */
#define BACKEND_CPU_EVENTS_MAX	200000

/* Per-op totals of a profiled execution. */
struct backend_cpu_total {
	const char	*op;
	const char	*engine;
	const char	*file;
	uint32_t	 line;
	uint64_t	 count;
	uint64_t	 ns;
	uint64_t	 elements;
};

struct backend_cpu_prof {
	struct backend_cpu_buf	  trace;
	uint64_t		  nevents;
	uint64_t		  dropped;
	struct backend_cpu_total *totals;
	size_t			  ntotals;
	uint64_t		  engine_ns[BACKEND_CPU_NENGINES];
	const char		 *name;
};

static int
backend_cpu_engine_index(const char *engine)
{
	for (int i = 0; i < BACKEND_CPU_NENGINES; i++)
		if (strcmp(engine, backend_cpu_engines[i]) == 0)
			return (i);
	return (BACKEND_CPU_NENGINES - 1);
}

static void
backend_cpu_prof_op_cb(void *arg, const struct sim_op_event *ev)
{
	struct backend_cpu_prof		*pr = arg;
	struct backend_cpu_total	*t = NULL;
	int				 e = backend_cpu_engine_index(ev->engine);
	const char			*base;

	pr->engine_ns[e] += ev->dur_ns;
	for (size_t i = 0; i < pr->ntotals; i++) {
		t = &pr->totals[i];
		if (t->line == ev->line && strcmp(t->op, ev->op) == 0 &&
		    t->file == ev->file)
			break;
		t = NULL;
	}
	if (t == NULL) {
		pr->totals = xreallocarray(pr->totals, pr->ntotals + 1,
		    sizeof *pr->totals);
		t = &pr->totals[pr->ntotals++];
		memset(t, 0, sizeof *t);
		t->op = ev->op;
		t->engine = ev->engine;
		t->file = ev->file;
		t->line = ev->line;
	}
	t->count++;
	t->ns += ev->dur_ns;
	t->elements += ev->elements;
	if (pr->nevents >= BACKEND_CPU_EVENTS_MAX) {
		pr->dropped++;
		return;
	}
	base = ev->file != NULL ? strrchr(ev->file, '/') : NULL;
	base = base != NULL ? base + 1 : ev->file;
	backend_cpu_buf_printf(&pr->trace, ",\n{\"name\":\"%s\",\"cat\":\"%s\","
	    "\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
	    "\"args\":{\"file\":\"", ev->op, ev->engine, e + 1,
	    (double)ev->start_ns / 1e3, (double)ev->dur_ns / 1e3);
	backend_cpu_buf_json(&pr->trace, base);
	backend_cpu_buf_printf(&pr->trace, "\",\"line\":%" PRIu32 ","
	    "\"program\":%" PRIu64 ",\"elements\":%" PRIu64 "}}", ev->line,
	    ev->program, ev->elements);
	pr->nevents++;
}

static void
backend_cpu_prof_begin(struct backend_cpu_prof *pr, const char *name,
    unsigned execution)
{
	memset(pr, 0, sizeof *pr);
	pr->name = name;
	backend_cpu_buf_printf(&pr->trace, "{\"displayTimeUnit\":\"ns\","
	    "\"otherData\":{\"producer\":\"nkid cpu backend\",\"kernel\":\"");
	backend_cpu_buf_json(&pr->trace, name);
	backend_cpu_buf_printf(&pr->trace, "\",\"execution\":%u},\n"
	    "\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\","
	    "\"pid\":1,\"args\":{\"name\":\"", execution);
	backend_cpu_buf_json(&pr->trace, name);
	backend_cpu_buf_printf(&pr->trace, " (execution %u)\"}}", execution);
	for (int i = 0; i < BACKEND_CPU_NENGINES; i++)
		backend_cpu_buf_printf(&pr->trace, ",\n{\"name\":"
		    "\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
		    "\"args\":{\"name\":\"%s\"}},\n{\"name\":"
		    "\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
		    "\"args\":{\"sort_index\":%d}}", i + 1,
		    backend_cpu_track_names[i], i + 1, i + 1);
}

static int
backend_cpu_total_cmp(const void *a, const void *b)
{
	const struct backend_cpu_total	*x = a, *y = b;

	return (x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0);
}

/* Finish pr into t: the trace closed, the summary written. */
static void
backend_cpu_prof_end(struct backend_cpu_prof *pr, unsigned execution,
    uint64_t total_ns, struct backend_trace *t)
{
	struct backend_cpu_buf	 sum = { 0 };
	const char		*base;
	size_t			 i;

	backend_cpu_buf_printf(&pr->trace, "\n]}\n");
	qsort(pr->totals, pr->ntotals, sizeof *pr->totals,
	    backend_cpu_total_cmp);
	backend_cpu_buf_printf(&sum, "{\"kernel\":\"");
	backend_cpu_buf_json(&sum, pr->name);
	backend_cpu_buf_printf(&sum, "\",\"backend\":\"cpu\",\"execution\":%u,"
	    "\"total_time_us\":%.3f,\"op_count\":%" PRIu64 ",\"ops_in_trace\":"
	    "%" PRIu64 ",\"engines\":{", execution, (double)total_ns / 1e3,
	    pr->nevents + pr->dropped, pr->nevents);
	for (i = 0; i < BACKEND_CPU_NENGINES; i++)
		backend_cpu_buf_printf(&sum, "%s\"%s\":{\"time_us\":%.3f}",
		    i ? "," : "", backend_cpu_engines[i],
		    (double)pr->engine_ns[i] / 1e3);
	backend_cpu_buf_printf(&sum, "},\"ops\":[");
	for (i = 0; i < pr->ntotals; i++) {
		const struct backend_cpu_total *o = &pr->totals[i];

		base = o->file != NULL ? strrchr(o->file, '/') : NULL;
		base = base != NULL ? base + 1 : o->file;
		backend_cpu_buf_printf(&sum, "%s\n{\"op\":\"%s\",\"engine\":"
		    "\"%s\",\"file\":\"", i ? "," : "", o->op, o->engine);
		backend_cpu_buf_json(&sum, base);
		backend_cpu_buf_printf(&sum, "\",\"line\":%" PRIu32 ","
		    "\"count\":%" PRIu64 ",\"total_us\":%.3f,\"mean_us\":%.3f,"
		    "\"elements\":%" PRIu64 "}", o->line, o->count,
		    (double)o->ns / 1e3, (double)o->ns / 1e3 / (double)o->count,
		    o->elements);
	}
	backend_cpu_buf_printf(&sum, "\n]}\n");
	t->execution = execution;
	t->trace = pr->trace.s;
	t->trace_len = pr->trace.len;
	t->summary_json = sum.s;
	t->summary_len = sum.len;
	free(pr->totals);
	memset(pr, 0, sizeof *pr);
}

/*
 * Execute p max(num_execs, profile_nth) times on core; executions
 * profile_nth, 2 * profile_nth, ... run with per-op events and become
 * traces: Chrome trace-event JSON (one track per engine, one slice per
 * op) and a JSON summary with per-op totals. See docs/profile.md.
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
	struct backend_cpu_prof		 pr;
	struct sim_run_opts			 opts;
	struct sim_diag			 sd;
	unsigned			 n, i;
	size_t				 nt = 0;
	int				 serr, error = 0;

	assert(core < b->ncores);
	*traces = NULL;
	*ntraces = 0;
	if (profile_nth == 0 || num_execs == 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "num_execs and profile_nth "
		    "must be at least 1");
		return (BACKEND_EARG);
	}
	n = num_execs < profile_nth ? profile_nth : num_execs;
	t = xcalloc(n / profile_nth + 1, sizeof *t);
	for (i = 1; i <= n; i++) {
		uint64_t	t0;

		if (i % profile_nth != 0) {
			if ((error = backend_cpu_run(bp, x, 0, diag)) != 0)
				goto fail;
		} else {
			memset(&opts, 0, sizeof opts);
			memset(&sd, 0, sizeof sd);
			opts.cancel = x->cancel;
			opts.op_cb = backend_cpu_prof_op_cb;
			opts.op_arg = &pr;
			backend_cpu_prof_begin(&pr, bp->name, i);
			t0 = backend_cpu_now_ns();
			serr = sim_run(p->sp, x->inputs, x->ninputs,
			    x->outputs, x->noutputs, &opts, &sd);
			if (serr != SIM_OK) {
				free(pr.trace.s);
				free(pr.totals);
				backend_cpu_diag(diag, &sd, serr);
				error = backend_cpu_err(serr);
				goto fail;
			}
			backend_cpu_prof_end(&pr, i, backend_cpu_now_ns() - t0,
			    &t[nt++]);
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
};
