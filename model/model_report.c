/* model_report.c: the modeled timeline as Chrome trace-event JSON and its summary in JSON. */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/model_impl.h"

void
model_text_printf(struct model_buf_text *b, const char *fmt, ...)
{
	va_list	ap;
	int	n;
	char	*s;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s != NULL ? b->s + b->len : NULL,
		    b->s != NULL ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->s != NULL && (size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		if ((s = realloc(b->s, b->cap * 2 + (size_t)n + 256)) == NULL) {
			b->oom = 1;
			return;
		}
		b->s = s;
		b->cap = b->cap * 2 + (size_t)n + 256;
	}
}

void
model_text_json(struct model_buf_text *b, const char *s)
{
	for (; s != NULL && *s != '\0'; s++) {
		unsigned char	c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			model_text_printf(b, "\\%c", c);
		else if (c < 0x20)
			model_text_printf(b, "\\u%04x", c);
		else
			model_text_printf(b, "%c", c);
	}
}

/* Per-(op, line) totals for the summary. */
struct model_line {
	const char	*op;
	const char	*file;		/* the run's pointer, for lookups */
	char		*base;		/* a copy of its base name */
	uint32_t	 line;
	int		 track;		/* the first one seen */
	uint64_t	 count;
	double		 ns;
	uint64_t	 bytes;
};

struct model_rep {
	struct model_buf_text	 trace;
	size_t			 max_events;
	uint64_t		 events;
	uint64_t		 dropped;
	struct model_line	*lines;
	size_t			 nlines;
	size_t			 hit;		/* the line last counted */
	int			 oom;
};

/* Whether line l counts event ev (ops are static names, mostly shared). */
static int
model_line_is(const struct model_line *l, const struct model_event *ev)
{
	return (l->line == ev->line && l->file == ev->file &&
	    (l->op == ev->op || strcmp(l->op, ev->op) == 0));
}

static const char *
model_base(const char *file)
{
	const char	*b = file != NULL ? strrchr(file, '/') : NULL;

	return (b != NULL ? b + 1 : file);
}

static void
model_rep_cb(void *arg, const struct model_event *ev)
{
	struct model_rep	*rp = arg;
	struct model_line	*l = NULL;
	long long		 ts, end;
	size_t			 i;

	/* The last line first (a DMA's transfers come in a row), then the
	 * most recent ones: loops revisit the same few. */
	if (rp->hit < rp->nlines && model_line_is(&rp->lines[rp->hit], ev))
		l = &rp->lines[rp->hit];
	else
		for (i = rp->nlines; i-- > 0;) {
			l = &rp->lines[i];
			if (model_line_is(l, ev)) {
				rp->hit = i;
				break;
			}
			l = NULL;
		}
	if (l == NULL) {
		l = realloc(rp->lines, (rp->nlines + 1) * sizeof *rp->lines);
		if (l == NULL) {
			rp->oom = 1;
			return;
		}
		rp->lines = l;
		rp->hit = rp->nlines;
		l = &rp->lines[rp->nlines++];
		memset(l, 0, sizeof *l);
		l->op = ev->op;
		l->file = ev->file;
		if ((l->base = strdup(ev->file != NULL ? model_base(ev->file) :
		    "")) == NULL)
			rp->oom = 1;
		l->line = ev->line;
		l->track = ev->track;
	}
	l->count++;
	l->ns += ev->dur_ns;
	l->bytes += ev->bytes;
	if (rp->events >= rp->max_events) {
		rp->dropped++;
		return;
	}
	/*
	 * ts and dur in whole ns, the end rounded as the start is: a slice
	 * ends where it ended, so slices that follow each other on a track
	 * never overlap in the trace (rounding each alone could).
	 */
	ts = llround(ev->start_ns);
	end = llround(ev->start_ns + ev->dur_ns);
	if (end < ts)
		end = ts;
	model_text_printf(&rp->trace, ",\n{\"name\":\"%s\",\"cat\":\"%s\","
	    "\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%lld.%03lld,"
	    "\"dur\":%lld.%03lld,\"args\":{\"file\":\"", ev->op,
	    ev->track >= MODEL_TRACK_DMA0 ? "dma" : model_track_name(ev->track),
	    ev->track + 1 + (ev->queue ? MODEL_DMA_QUEUES : 0), ts / 1000,
	    ts % 1000, (end - ts) / 1000, (end - ts) % 1000);
	model_text_json(&rp->trace, model_base(ev->file));
	model_text_printf(&rp->trace, "\",\"line\":%" PRIu32 ",\"program\":%"
	    PRIu64, ev->line, ev->program);
	if (ev->bytes)
		model_text_printf(&rp->trace, ",\"bytes\":%" PRIu64, ev->bytes);
	model_text_printf(&rp->trace, "}}");
	rp->events++;
}

/* Trace tracks: MODEL_NTRACKS, then each DMA engine's store queue. */
#define MODEL_TRACE_TRACKS	(MODEL_NTRACKS + MODEL_DMA_QUEUES)

static const char *
model_track_title(int track)
{
	static const char *const engines[] = {
		[MODEL_TRACK_TENSOR] =
		    "Tensor engine (matmul, transpose, broadcast)",
		[MODEL_TRACK_VECTOR] = "Vector engine",
		[MODEL_TRACK_SCALAR] = "Scalar engine (activation, copy)",
		[MODEL_TRACK_GPSIMD] = "GpSimd engine",
	};
	static char	buf[2 * MODEL_DMA_QUEUES][32];

	if (track >= 0 && track < MODEL_TRACK_DMA0)
		return (engines[track]);
	assert(track >= MODEL_TRACK_DMA0 && track < MODEL_TRACE_TRACKS);
	snprintf(buf[track - MODEL_TRACK_DMA0], sizeof buf[0], "DMA engine %d "
	    "%s", (track - MODEL_TRACK_DMA0) % MODEL_DMA_QUEUES, track <
	    MODEL_NTRACKS ? "loads" : "stores");
	return (buf[track - MODEL_TRACK_DMA0]);
}

static int
model_line_cmp(const void *a, const void *b)
{
	const struct model_line	*x = a, *y = b;

	return (x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0);
}

static void
model_summary(struct model_buf_text *s, const char *kernel,
    unsigned execution, const struct model_result *r, struct model_rep *rp)
{
	double		 total = r->total_ns > 0 ? r->total_ns : 1.0, dbusy = 0;
	size_t		 i;
	int		 t, dma_active = 0;

	model_text_printf(s, "{\"kernel\":\"");
	model_text_json(s, kernel);
	model_text_printf(s, "\",\"backend\":\"cpu\",\"source\":\"model\","
	    "\"deterministic\":true,\"target\":\"%s\",\"model_version\":\""
	    MODEL_VERSION "\",\"execution\":%u,"
	    "\"total_time_us\":%.3f,\"overhead_us\":%.3f,\"cores\":%u,"
	    "\"instructions\":%" PRIu64 ","
	    "\"op_count\":%" PRIu64 ",\"ops_in_trace\":%" PRIu64 ",",
	    r->target, execution, r->total_ns / 1e3, r->overhead_ns / 1e3,
	    r->cores ? r->cores : 1, r->instructions,
	    rp->events + rp->dropped, rp->events);
	model_text_printf(s, "\"engines\":{");
	for (t = 0; t < MODEL_TRACK_DMA0; t++)
		model_text_printf(s, "%s\"%s\":{\"busy_us\":%.3f,"
		    "\"active_percent\":%.2f}", t ? "," : "",
		    model_track_name(t), r->busy_ns[t] / 1e3,
		    100.0 * r->busy_ns[t] / total);
	model_text_printf(s, "},\"dma_queues\":{");
	for (t = MODEL_TRACK_DMA0; t < MODEL_NTRACKS; t++) {
		dbusy += r->busy_ns[t];
		dma_active += r->busy_ns[t] > 0;
		model_text_printf(s, "%s\"%s\":{\"busy_us\":%.3f,"
		    "\"active_percent\":%.2f}", t > MODEL_TRACK_DMA0 ? "," : "",
		    model_track_name(t), r->busy_ns[t] / 1e3,
		    100.0 * r->busy_ns[t] / total);
	}
	model_text_printf(s, "},\"dma_active_percent\":%.2f,", 100.0 * dbusy /
	    (total * MODEL_DMA_QUEUES));
	model_text_printf(s, "\"flops\":%.0f,\"hfu_percent\":%.2f,"
	    "\"dma_bytes\":%" PRIu64 ",\"spill_bytes\":%" PRIu64 ","
	    "\"dma_gbps\":%.2f,"
	    "\"dma_bandwidth_utilization_percent\":%.2f,", r->flops,
	    100.0 * r->flops / (total * r->peak_flops_per_ns), r->dma_bytes,
	    r->spill_bytes,
	    (double)r->dma_bytes / total,
	    100.0 * (double)r->dma_bytes / (total * r->dma_peak_bytes_per_ns));
	if (r->critical_track >= 0) {
		model_text_printf(s, "\"critical_path_engine\":\"%s\","
		    "\"critical_path_us\":{", r->critical_track >=
		    MODEL_TRACK_DMA0 ? "dma" : model_track_name(r->critical_track));
		for (t = 0; t < MODEL_NTRACKS; t++)
			model_text_printf(s, "%s\"%s\":%.3f", t ? "," : "",
			    model_track_name(t), r->critical_ns[t] / 1e3);
		model_text_printf(s, "},");
	} else
		model_text_printf(s, "\"critical_path_engine\":null,");
	model_text_printf(s, "\"model_seconds\":%.6f,\"ops\":[", r->host_seconds);
	qsort(rp->lines, rp->nlines, sizeof *rp->lines, model_line_cmp);
	for (i = 0; i < rp->nlines; i++) {
		const struct model_line *l = &rp->lines[i];

		model_text_printf(s, "%s\n{\"op\":\"%s\",\"engine\":\"%s\","
		    "\"file\":\"", i ? "," : "", l->op, l->track >=
		    MODEL_TRACK_DMA0 ? "dma" : model_track_name(l->track));
		model_text_json(s, l->base);
		model_text_printf(s, "\",\"line\":%" PRIu32 ",\"count\":%"
		    PRIu64 ",\"total_us\":%.3f,\"mean_us\":%.3f", l->line,
		    l->count, l->ns / 1e3, l->ns / 1e3 / (double)l->count);
		if (l->bytes)
			model_text_printf(s, ",\"bytes\":%" PRIu64, l->bytes);
		model_text_printf(s, "}");
	}
	model_text_printf(s, "\n]}\n");
}

int
model_report(const void *ir, size_t len, const struct model_opts *opts,
    const char *kernel, unsigned execution, size_t max_events, char **trace,
    size_t *trace_len, char **summary, size_t *summary_len,
    struct model_result *r, char *diag, size_t diaglen)
{
	struct model_opts	 o;
	struct model_rep	 rp;
	struct model_buf_text	 sum;
	int			 error, t;

	*trace = *summary = NULL;
	*trace_len = *summary_len = 0;
	memset(&o, 0, sizeof o);
	if (opts != NULL)
		o = *opts;
	memset(&rp, 0, sizeof rp);
	memset(&sum, 0, sizeof sum);
	rp.max_events = max_events;
	o.event_cb = model_rep_cb;
	o.event_arg = &rp;
	model_text_printf(&rp.trace, "{\"displayTimeUnit\":\"ns\","
	    "\"otherData\":{\"producer\":\"nkid NeuronCore model\","
	    "\"model_version\":\"" MODEL_VERSION "\","
	    "\"kernel\":\"");
	model_text_json(&rp.trace, kernel);
	model_text_printf(&rp.trace, "\",\"execution\":%u},\n\"traceEvents\":[\n"
	    "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":"
	    "{\"name\":\"", execution);
	model_text_json(&rp.trace, kernel);
	model_text_printf(&rp.trace, " (modeled NeuronCore, execution %u)\"}}",
	    execution);
	/* An engine's store queue sorts right after its load queue. */
	for (t = 0; t < MODEL_TRACE_TRACKS; t++)
		model_text_printf(&rp.trace, ",\n{\"name\":\"thread_name\","
		    "\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":"
		    "\"%s\"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\","
		    "\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":%d}}", t + 1,
		    model_track_title(t), t + 1, t < MODEL_TRACK_DMA0 ? t + 1 :
		    MODEL_TRACK_DMA0 + 1 + 2 * ((t - MODEL_TRACK_DMA0) %
		    MODEL_DMA_QUEUES) + (t >= MODEL_NTRACKS));
	error = model_run(ir, len, &o, r, diag, diaglen);
	if (error == 0 && rp.oom)
		error = MODEL_ELIMIT;
	if (error == 0) {
		model_text_printf(&rp.trace, "\n]}\n");
		model_summary(&sum, kernel, execution, r, &rp);
		if (rp.trace.oom || sum.oom) {
			error = MODEL_ELIMIT;
			if (diag != NULL && diaglen > 0)
				snprintf(diag, diaglen, "out of memory writing "
				    "the modeled trace");
		}
	}
	for (size_t i = 0; i < rp.nlines; i++)
		free(rp.lines[i].base);
	free(rp.lines);
	if (error != 0) {
		free(rp.trace.s);
		free(sum.s);
		return (error);
	}
	*trace = rp.trace.s;
	*trace_len = rp.trace.len;
	*summary = sum.s;
	*summary_len = sum.len;
	return (0);
}
