/*
 * sim_print.c: device_print's text: a header line naming the tensor, its
 * shape and dtype, then the values laid out like numpy prints an array.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_impl.h"

#define SIM_PRINT_THRESHOLD 1000    /* numpy's default summarization */
#define SIM_PRINT_EDGE      3

static int __attribute__((format(printf, 2, 3)))
sim_strbuf_printf(struct sim_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = sb->cap - sb->len;

		va_start(ap, fmt);
		n = vsnprintf(sb->s ? sb->s + sb->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return SIM_ERUNTIME;
		if ((size_t)n < room) {
			sb->len += (size_t)n;
			return 0;
		}
		size_t cap = sb->cap ? sb->cap * 2 : 256;
		while (cap - sb->len <= (size_t)n)
			cap *= 2;
		char *s = realloc(sb->s, cap);
		if (s == NULL)
			return SIM_ENOMEM;
		sb->s = s;
		sb->cap = cap;
	}
}

/* Free a string buffer's memory. */
void
sim_strbuf_release(struct sim_strbuf *sb)
{
	free(sb->s);
	sb->s = NULL;
	sb->len = sb->cap = 0;
}

static int
sim_print_value(struct sim_strbuf *sb, int dtype, float v, bool active)
{
	if (!active)
		return sim_strbuf_printf(sb, "--");
	if (sim_dtype_is_int(dtype))
		return sim_strbuf_printf(sb, "%lld", (long long)v);
	return sim_strbuf_printf(sb, "%g", (double)v);
}

static int
sim_print_rec(struct sim_strbuf *sb, int dtype, int rank,
    const uint64_t *shape, const uint64_t *stride, const float *vals,
    const uint8_t *act, int axis, uint64_t off, bool summary)
{
	uint64_t n = shape[axis];
	int rc;

	if ((rc = sim_strbuf_printf(sb, "[")))
		return rc;
	for (uint64_t i = 0; i < n; i++) {
		if (i > 0) {
			if (axis == rank - 1)
				rc = sim_strbuf_printf(sb, " ");
			else
				rc = sim_strbuf_printf(sb, "%.*s%*s",
				    rank - 1 - axis, "\n\n\n\n\n\n\n\n",
				    axis + 1, "");
			if (rc)
				return rc;
		}
		if (summary && n > 2 * SIM_PRINT_EDGE && i == SIM_PRINT_EDGE) {
			if ((rc = sim_strbuf_printf(sb, "...")))
				return rc;
			i = n - SIM_PRINT_EDGE - 1;
			continue;
		}
		if (axis == rank - 1)
			rc = sim_print_value(sb, dtype, vals[off + i],
			    act == NULL || act[off + i]);
		else
			rc = sim_print_rec(sb, dtype, rank, shape, stride, vals,
			    act, axis + 1, off + i * stride[axis], summary);
		if (rc)
			return rc;
	}
	return sim_strbuf_printf(sb, "]");
}

/*
 * Write "name[d0, d1, ...]" into buf (len bytes, always NUL-terminated,
 * truncated if short); at most SIM_MAX_RANK dimensions are shown.
 */
void
sim_print_shape(char *buf, size_t len, const char *name, int rank,
    const uint64_t *shape)
{
	size_t n = (size_t)snprintf(buf, len, "%s[", name);

	for (int i = 0; i < rank && i < SIM_MAX_RANK && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%llu",
		    i ? ", " : "", (unsigned long long)shape[i]);
	if (n < len)
		snprintf(buf + n, len - n, "]");
}

/*
 * Append device_print's text for a row-major array vals of the given
 * shape to sb: "prefix: name[d0, d1] dtype\n" then the values, numpy
 * style ("--" for elements a mask left inactive), then "\n".
 */
int
sim_print_format(struct sim_strbuf *sb, const char *prefix, const char *name,
    int dtype, int rank, const uint64_t *shape, const float *vals,
    const uint8_t *active)
{
	uint64_t stride[SIM_MAX_RANK], nelem = 1;
	int rc;

	rc = sim_strbuf_printf(sb, "%s: %s[", prefix, name);
	for (int i = 0; rc == 0 && i < rank; i++)
		rc = sim_strbuf_printf(sb, "%s%llu", i ? ", " : "",
		    (unsigned long long)shape[i]);
	if (rc == 0)
		rc = sim_strbuf_printf(sb, "] %s\n", sim_dtype_name(dtype));
	for (int i = rank - 1; i >= 0; i--) {
		stride[i] = nelem;
		nelem *= shape[i];
	}
	if (rc == 0)
		rc = sim_print_rec(sb, dtype, rank, shape, stride, vals, active,
		    0, 0, nelem > SIM_PRINT_THRESHOLD);
	if (rc == 0)
		rc = sim_strbuf_printf(sb, "\n");
	return rc;
}
