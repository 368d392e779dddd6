/* ctl_fmt.c: numbers as a person reads them: bytes in IEC units, durations, ages, rates and percentages (--json keeps the exact numbers). */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "ctl.h"

const char *
ctl_fmt_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB",
	    "PiB", "EiB" };
	double	v = (double)n;
	size_t	u = 0;

	if (n < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)n);
		return (buf);
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024;
		u++;
	}
	/* Three figures: 1.50 KiB, 15.2 MiB, 152 GiB. */
	if (v < 9.995)
		snprintf(buf, len, "%.2f %s", v, units[u]);
	else if (v < 99.95)
		snprintf(buf, len, "%.1f %s", v, units[u]);
	else
		snprintf(buf, len, "%.0f %s", v, units[u]);
	return (buf);
}

const char *
ctl_fmt_us(double us, char *buf, size_t len)
{
	unsigned long long	s;

	if (!isfinite(us) || us < 0)
		snprintf(buf, len, "-");
	else if (us == 0)
		snprintf(buf, len, "0 s");
	else if (us < 9.995)
		snprintf(buf, len, "%.2f us", us);
	else if (us < 999.5)
		snprintf(buf, len, "%.0f us", us);
	else if (us < 9995)
		snprintf(buf, len, "%.2f ms", us / 1e3);
	else if (us < 99950)
		snprintf(buf, len, "%.1f ms", us / 1e3);
	else if (us < 999500)
		snprintf(buf, len, "%.0f ms", us / 1e3);
	else if (us < 59.995e6)
		snprintf(buf, len, "%.2f s", us / 1e6);
	else {
		s = (unsigned long long)(us / 1e6 + 0.5);
		if (s < 3600)
			snprintf(buf, len, "%llum %02llus", s / 60, s % 60);
		else if (s < 86400)
			snprintf(buf, len, "%lluh %02llum", s / 3600,
			    s / 60 % 60);
		else
			snprintf(buf, len, "%llud %02lluh", s / 86400,
			    s / 3600 % 24);
	}
	return (buf);
}

const char *
ctl_fmt_seconds(double s, char *buf, size_t len)
{
	return (ctl_fmt_us(s * 1e6, buf, len));
}

const char *
ctl_fmt_age(double t, double now, char *buf, size_t len)
{
	double	d = now - t;

	if (t <= 0)
		snprintf(buf, len, "never");
	else if (d < 1)
		snprintf(buf, len, "just now");
	else if (d < 60)
		snprintf(buf, len, "%.0fs ago", floor(d));
	else if (d < 3600)
		snprintf(buf, len, "%.0fm ago", floor(d / 60));
	else if (d < 86400)
		snprintf(buf, len, "%.0fh ago", floor(d / 3600));
	else
		snprintf(buf, len, "%.0fd ago", floor(d / 86400));
	return (buf);
}

const char *
ctl_fmt_time(double t, char *buf, size_t len)
{
	struct tm	tm;
	time_t		s = (time_t)t;

	if (t <= 0 || localtime_r(&s, &tm) == NULL)
		snprintf(buf, len, "-");
	else
		strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	return (buf);
}

const char *
ctl_fmt_percent(uint64_t part, uint64_t whole, char *buf, size_t len)
{
	double	p;

	if (whole == 0) {
		snprintf(buf, len, "-");
		return (buf);
	}
	p = 100.0 * (double)part / (double)whole;
	/* Never round a part that is not all of it up to 100%. */
	if (part < whole && p > 99.9)
		p = 99.9;
	snprintf(buf, len, "%.1f%%", p);
	return (buf);
}

double
ctl_fmt_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

double
ctl_fmt_mono(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}
