/* ctl_benchmark.c: `nkictl benchmark KERNEL`: warm up, time ITERS executions on one core (Benchmark), print the latency percentiles and a text histogram, write the samples as CSV. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "model/model.h"
#include "ctl.h"
#include "ctl_kernel_call.h"

/* Bins and widest bar of the histogram. */
#define CTL_BENCHMARK_BINS	10
#define CTL_BENCHMARK_BAR	40
/* The widest bar (CTL_BENCHMARK_BAR of them). */
static const char ctl_benchmark_bar[] =
    "########################################";
_Static_assert(sizeof ctl_benchmark_bar == CTL_BENCHMARK_BAR + 1,
    "the bar is CTL_BENCHMARK_BAR long");
/* nkid's bound on warmup and iters. */
#define CTL_BENCHMARK_MAX	1000000

static const struct ctl_opt ctl_benchmark_opts[] = {
	CTL_KERNEL_CALL_OPTS_INPUT,
	{ 'w', "warmup", "N", "untimed executions first (default 10)" },
	{ 'n', "iters", "N", "timed executions (default 100)" },
	CTL_KERNEL_CALL_OPT_CORE,
	{ 0, "csv", "FILE", "write the samples to FILE as CSV (-: stdout, "
	    "instead of the report)" },
	CTL_KERNEL_CALL_OPTS_TARGET,
	CTL_KERNEL_CALL_OPTS_RETRY,
	CTL_KERNEL_CALL_OPTS_NEFF,
	CTL_OPT_END
};

/*
 * The histogram of the n samples v in CTL_BENCHMARK_BINS bins from the
 * smallest to the largest, a bar of '#' for each, on f. what names them.
 */
static void
ctl_benchmark_histogram(FILE *f, const char *what, const double *v, size_t n)
{
	size_t	count[CTL_BENCHMARK_BINS], i, b, most = 0;
	double	lo = INFINITY, hi = -INFINITY, w;
	char	a[32], z[32];
	int	bar;

	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	fprintf(f, "\n%s: %zu sample%s\n", what, n, n == 1 ? "" : "s");
	if (hi - lo <= 0) {
		fprintf(f, "  all %s\n", ctl_fmt_us(lo, a, sizeof a));
		return;
	}
	memset(count, 0, sizeof count);
	w = (hi - lo) / CTL_BENCHMARK_BINS;
	for (i = 0; i < n; i++) {
		b = (size_t)((v[i] - lo) / w);
		count[b < CTL_BENCHMARK_BINS ? b : CTL_BENCHMARK_BINS - 1]++;
	}
	for (b = 0; b < CTL_BENCHMARK_BINS; b++)
		most = count[b] > most ? count[b] : most;
	for (b = 0; b < CTL_BENCHMARK_BINS; b++) {
		ctl_fmt_us(lo + w * (double)b, a, sizeof a);
		ctl_fmt_us(lo + w * (double)(b + 1), z, sizeof z);
		bar = (int)((count[b] * CTL_BENCHMARK_BAR + most - 1) / most);
		fprintf(f, "  %10s - %-10s %-*.*s %zu\n", a, z,
		    CTL_BENCHMARK_BAR, bar, ctl_benchmark_bar, count[b]);
	}
}

/* The samples as CSV: iteration, latency, and the executor's time. */
static int
ctl_benchmark_csv(struct ctl_ctx *ctx, const char *path,
    const Nkid__V1__BenchmarkReply *r)
{
	FILE	*f = strcmp(path, "-") == 0 ? ctx->out : fopen(path, "we");
	size_t	 i;
	int	 bad;

	if (f == NULL)
		return (ctl_fail(ctx, CTL_CODE_LOCAL, "cannot write '%s': %s",
		    path, strerror(errno)));
	fprintf(f, "iteration,latency_us,cpu_us\n");
	for (i = 0; i < r->n_samples_us; i++) {
		fprintf(f, "%zu,%.3f,", i + 1, r->samples_us[i]);
		if (i < r->n_cpu_samples_us)
			fprintf(f, "%.3f", r->cpu_samples_us[i]);
		fputc('\n', f);
	}
	bad = ferror(f);
	if (f != ctx->out && fclose(f) != 0)
		bad = 1;
	if (bad)
		return (ctl_fail(ctx, CTL_CODE_LOCAL, "cannot write '%s': %s",
		    path, strerror(errno)));
	return (CTL_EXIT_OK);
}

/* {"p50": us, ...} of a list of percentiles. */
static cJSON *
ctl_benchmark_pct_json(Nkid__V1__Percentile *const *p, size_t n)
{
	cJSON	*o = cJSON_CreateObject();
	char	 k[16];
	size_t	 i;

	for (i = 0; o != NULL && i < n; i++) {
		snprintf(k, sizeof k, "p%g", p[i]->p);
		cJSON_AddNumberToObject(o, k, p[i]->us);
	}
	return (o);
}

static cJSON *
ctl_benchmark_samples_json(const double *v, size_t n)
{
	return (cJSON_CreateDoubleArray(v, (int)n));
}

static void
ctl_benchmark_print(struct ctl_ctx *ctx, const Nkid__V1__BenchmarkReply *r,
    unsigned long long warmup, unsigned long long iters)
{
	static const struct ctl_table_col cols[] = {
		{ "PERCENTILE", CTL_TABLE_RIGHT },
		{ "LATENCY", CTL_TABLE_RIGHT },
		{ "HOST CPU", CTL_TABLE_RIGHT },
	};
	struct ctl_table	*t;
	char			 p[16], lat[32], cpu[32];
	size_t			 i, j;
	int			 flat;

	ctl_kv(ctx, "job", "%llu on core %u", (unsigned long long)r->job_id,
	    r->core);
	ctl_kv(ctx, "executions", "%llu timed after %llu warm-up", iters,
	    warmup);
	ctl_kv(ctx, "latency", "%s", *r->latency_source != '\0' ?
	    r->latency_source : "-");
	if (r->model_us > 0)
		ctl_kv(ctx, "model", "%s on %s (model %s)", ctl_fmt_us(
		    r->model_us, lat, sizeof lat), *r->model_target ?
		    r->model_target : "-", *r->model_version ?
		    r->model_version : "-");
	if (*r->latency_note != '\0')
		ctl_kv(ctx, "note", "%s", r->latency_note);
	if (r->n_percentiles > 0) {
		fputc('\n', ctx->out);
		t = ctl_table_new(cols, sizeof cols / sizeof cols[0]);
		for (i = 0; i < r->n_percentiles; i++) {
			snprintf(p, sizeof p, "p%g", r->percentiles[i]->p);
			cpu[0] = '\0';
			for (j = 0; j < r->n_cpu_percentiles; j++)
				if (r->cpu_percentiles[j]->p ==
				    r->percentiles[i]->p)
					ctl_fmt_us(r->cpu_percentiles[j]->us,
					    cpu, sizeof cpu);
			ctl_table_row(t, p, ctl_fmt_us(r->percentiles[i]->us,
			    lat, sizeof lat), cpu);
		}
		ctl_table_print(t, ctx->out);
	}
	/* A deterministic model's samples are one figure: then the host's
	 * time is what varies. */
	flat = 1;
	for (i = 1; i < r->n_samples_us; i++)
		flat = flat && r->samples_us[i] == r->samples_us[0];
	if (flat && r->n_cpu_samples_us > 0)
		ctl_benchmark_histogram(ctx->out, "host cpu time",
		    r->cpu_samples_us, r->n_cpu_samples_us);
	else
		ctl_benchmark_histogram(ctx->out, "latency", r->samples_us,
		    r->n_samples_us);
}

/* The figures of the reply in --json, before and after warmup and
 * iters. */
static const char *const ctl_benchmark_keys[] = { "job_id", "core", NULL };
static const char *const ctl_benchmark_latency_keys[] = {
	"latency_source", "latency_note", "model_us", "model_target",
	"model_version", NULL
};

/* What the command line asked of the report. */
struct ctl_benchmark_run {
	unsigned long long	 warmup;
	unsigned long long	 iters;
	const char		*csv;	/* --csv, or NULL */
};

static int
ctl_benchmark_report(struct ctl_ctx *ctx, const struct ctl_kernel_call *kc,
    void *arg)
{
	const struct ctl_benchmark_run	*b = arg;
	const Nkid__V1__BenchmarkReply	*r = (const void *)kc->reply;
	cJSON				*o;
	int				 rc;

	if (b->csv != NULL && (rc = ctl_benchmark_csv(ctx, b->csv, r)) !=
	    CTL_EXIT_OK)
		return (rc);
	if (b->csv != NULL && strcmp(b->csv, "-") == 0)
		return (CTL_EXIT_OK);
	o = ctl_kernel_call_head_print(ctx, kc, NULL, r->neff_key);
	if (!ctx->json) {
		ctl_benchmark_print(ctx, r, b->warmup, b->iters);
		return (CTL_EXIT_OK);
	}
	if (o != NULL) {
		ctl_json_fields(o, &r->base, ctl_benchmark_keys);
		cJSON_AddNumberToObject(o, "warmup", (double)b->warmup);
		cJSON_AddNumberToObject(o, "iters", (double)b->iters);
		ctl_json_fields(o, &r->base, ctl_benchmark_latency_keys);
		cJSON_AddItemToObject(o, "percentiles",
		    ctl_benchmark_pct_json(r->percentiles, r->n_percentiles));
		cJSON_AddItemToObject(o, "cpu_percentiles",
		    ctl_benchmark_pct_json(r->cpu_percentiles,
		    r->n_cpu_percentiles));
		cJSON_AddItemToObject(o, "samples_us",
		    ctl_benchmark_samples_json(r->samples_us,
		    r->n_samples_us));
		cJSON_AddItemToObject(o, "cpu_samples_us",
		    ctl_benchmark_samples_json(r->cpu_samples_us,
		    r->n_cpu_samples_us));
	}
	return (ctl_json_print(ctx, o));
}

static int
ctl_benchmark_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__BenchmarkRequest req = NKID__V1__BENCHMARK_REQUEST__INIT;
	struct ctl_benchmark_run	 b = { 10, 100, NULL };
	const char			*target;
	int				 rc;

	if ((rc = ctl_args_uint(ctx, a, "warmup", 0, CTL_BENCHMARK_MAX,
	    &b.warmup)) != 0 || (rc = ctl_args_uint(ctx, a, "iters", 1,
	    CTL_BENCHMARK_MAX, &b.iters)) != 0)
		return (rc);
	/* The model takes the targets NKI names; refuse others here. */
	target = ctl_args_get(a, "target");
	if (target != NULL && *target != '\0' &&
	    model_target_canon(target) == NULL)
		return (ctl_usage_fail(ctx, "unknown target '%s': NKI names %s",
		    target, MODEL_TARGET_NAMES));
	b.csv = ctl_args_get(a, "csv");
	if (b.csv != NULL && *b.csv == '\0')
		return (ctl_usage_fail(ctx, "empty --csv path"));
	req.warmup = (uint32_t)b.warmup;
	req.iters = (uint32_t)b.iters;
	return (ctl_kernel_call_exec(ctx, a, "Benchmark", &req.base,
	    &nkid__v1__benchmark_reply__descriptor, ctl_benchmark_report, &b));
}

const struct ctl_cmd ctl_benchmark_cmd = {
	.name = "benchmark",
	.usage = "KERNEL [-i [NAME=]FILE.npy]... [-w N] [-n N] [-c CORE] "
	    "[--csv FILE] [--target T] [--options OPTS] [--retry-failed] "
	    "[--neff FILE]",
	.help = "time a traced kernel on one core: latency percentiles and a "
	    "histogram",
	.about =
	    "Without -i the inputs are the kernel's parameters' shapes and\n"
	    "dtypes (nkir/1; Benchmark needs no data). LATENCY is what nkid\n"
	    "reports (on the cpu backend the modeled NeuronCore latency,\n"
	    "see docs/model.md), HOST CPU the executor's own time. The\n"
	    "histogram is of the latency samples, or of the host's when the\n"
	    "latency is one modeled figure. --csv writes\n"
	    "iteration,latency_us,cpu_us rows.\n",
	.opts = ctl_benchmark_opts,
	.args = CTL_KERNEL_CALL_ARGS,
	.flags = CTL_CMD_SHAPES,
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_benchmark_exec,
};
