/* ctl_progress.c: one progress line (done, total, rate, ETA) redrawn in place on a terminal, at most ten times a second, and nothing at all when stderr is not a terminal. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

/* Seconds between two redraws. */
#define CTL_PROGRESS_EVERY	0.1

void
ctl_progress_init(struct ctl_progress *p, struct ctl_ctx *ctx,
    const char *what, const char *unit, uint64_t total)
{
	memset(p, 0, sizeof *p);
	p->f = ctx->err;
	p->on = isatty(fileno(ctx->err));
	p->what = what;
	p->unit = unit;
	p->total = total;
	p->start = ctl_fmt_mono();
}

/* "7s", "2m 05s", "1h 02m". */
static void
ctl_progress_eta(double s, char *buf, size_t len)
{
	unsigned long long	t = (unsigned long long)(s + 0.5);

	if (t < 60)
		snprintf(buf, len, "%llus", t);
	else if (t < 3600)
		snprintf(buf, len, "%llum %02llus", t / 60, t % 60);
	else
		snprintf(buf, len, "%lluh %02llum", t / 3600, t / 60 % 60);
}

/* An amount in p's unit: "12.3 MiB", "12 kernels". */
static void
ctl_progress_amount(const struct ctl_progress *p, double v, int unit,
    char *buf, size_t len)
{
	if (p->unit == NULL)
		ctl_fmt_bytes((uint64_t)v, buf, len);
	else if (v == (double)(uint64_t)v)
		snprintf(buf, len, "%llu%s%s", (unsigned long long)v,
		    unit ? " " : "", unit ? p->unit : "");
	else
		snprintf(buf, len, "%.1f%s%s", v, unit ? " " : "",
		    unit ? p->unit : "");
}

const char *
ctl_progress_line(const struct ctl_progress *p, double elapsed, char *buf,
    size_t len)
{
	char	done[32], total[32], rate[32], eta[32];
	double	r = elapsed > 0 ? (double)p->done / elapsed : 0;
	size_t	n;
	/* An estimate that was short is no total. */
	int	known = p->total > 0 && p->done <= p->total;

	ctl_progress_amount(p, (double)p->done, !known, done, sizeof done);
	if (known) {
		ctl_progress_amount(p, (double)p->total, 1, total,
		    sizeof total);
		n = (size_t)snprintf(buf, len, "%s: %s of %s (%.0f%%)",
		    p->what, done, total, 100.0 * (double)p->done /
		    (double)p->total);
	} else
		n = (size_t)snprintf(buf, len, "%s: %s", p->what, done);
	if (n >= len || elapsed < 0.5 || r <= 0)
		return (buf);
	ctl_progress_amount(p, r, 1, rate, sizeof rate);
	n += (size_t)snprintf(buf + n, len - n, ", %s/s", rate);
	if (known && p->total > p->done && n < len) {
		ctl_progress_eta((double)(p->total - p->done) / r, eta,
		    sizeof eta);
		snprintf(buf + n, len - n, ", ETA %s", eta);
	}
	return (buf);
}

void
ctl_progress_set(struct ctl_progress *p, uint64_t done)
{
	char	line[256];
	double	now;

	p->done = done;
	if (!p->on)
		return;
	now = ctl_fmt_mono();
	if (p->drawn && now - p->last < CTL_PROGRESS_EVERY &&
	    done != p->total)
		return;
	p->last = now;
	p->drawn = 1;
	fprintf(p->f, "\r\033[K%s", ctl_progress_line(p, now - p->start, line,
	    sizeof line));
	fflush(p->f);
}

void
ctl_progress_end(struct ctl_progress *p)
{
	if (p->on && p->drawn) {
		fputs("\r\033[K", p->f);
		fflush(p->f);
	}
	p->drawn = 0;
}
