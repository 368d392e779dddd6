/* sim_print.c: the executor's text: shapes in its messages, and device_print's output laid out as numpy prints an array. */
/* Floor 1: calls sim_dtype.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_impl.h"

#define SIM_PRINT_THRESHOLD	1000	/* numpy's default summarization */
#define SIM_PRINT_EDGE		3

static int __attribute__((format(printf, 2, 3)))
sim_print_buf_printf(struct sim_print_buf *pb, const char *fmt, ...)
{
	va_list	 ap;
	size_t	 room, cap;
	char	*s;
	int	 n;

	for (;;) {
		room = pb->cap - pb->len;
		va_start(ap, fmt);
		n = vsnprintf(pb->s ? pb->s + pb->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return (SIM_ERUNTIME);
		if ((size_t)n < room) {
			pb->len += (size_t)n;
			return (0);
		}
		cap = pb->cap ? pb->cap * 2 : 256;
		while (cap - pb->len <= (size_t)n)
			cap *= 2;
		if ((s = realloc(pb->s, cap)) == NULL)
			return (SIM_ENOMEM);
		pb->s = s;
		pb->cap = cap;
	}
}

void
sim_print_buf_release(struct sim_print_buf *pb)
{
	free(pb->s);
	pb->s = NULL;
	pb->len = pb->cap = 0;
}

static int
sim_print_value(struct sim_print_buf *pb, int dtype, float v, bool active)
{
	char	buf[64];

	if (!active)
		return (sim_print_buf_printf(pb, "--"));
	if (sim_dtype_is_int(dtype))
		return (sim_print_buf_printf(pb, "%lld", (long long)v));
	/* A float reads as one, as numpy prints it: 1. and 0.5, not 1. */
	snprintf(buf, sizeof buf, "%g", (double)v);
	if (strpbrk(buf, ".eni") == NULL)
		return (sim_print_buf_printf(pb, "%s.", buf));
	return (sim_print_buf_printf(pb, "%s", buf));
}

static int
sim_print_rec(struct sim_print_buf *pb, int dtype, int rank,
    const uint64_t *shape, const uint64_t *stride, const float *vals,
    const uint8_t *act, int axis, uint64_t off, bool summary)
{
	uint64_t	n = shape[axis], i;
	int		rc;

	if ((rc = sim_print_buf_printf(pb, "[")))
		return (rc);
	for (i = 0; i < n; i++) {
		if (i > 0) {
			if (axis == rank - 1)
				rc = sim_print_buf_printf(pb, " ");
			else
				rc = sim_print_buf_printf(pb, "%.*s%*s",
				    rank - 1 - axis, "\n\n\n\n\n\n\n\n",
				    axis + 1, "");
			if (rc)
				return (rc);
		}
		if (summary && n > 2 * SIM_PRINT_EDGE && i == SIM_PRINT_EDGE) {
			if ((rc = sim_print_buf_printf(pb, "...")))
				return (rc);
			i = n - SIM_PRINT_EDGE - 1;
			continue;
		}
		if (axis == rank - 1)
			rc = sim_print_value(pb, dtype, vals[off + i],
			    act == NULL || act[off + i]);
		else
			rc = sim_print_rec(pb, dtype, rank, shape, stride, vals,
			    act, axis + 1, off + i * stride[axis], summary);
		if (rc)
			return (rc);
	}
	return (sim_print_buf_printf(pb, "]"));
}

void
sim_print_shape(char *buf, size_t len, const char *name, int rank,
    const uint64_t *shape)
{
	size_t	n = (size_t)snprintf(buf, len, "%s[", name);
	int	i;

	for (i = 0; i < rank && i < SIM_MAX_RANK && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%llu",
		    i ? ", " : "", (unsigned long long)shape[i]);
	if (n < len)
		snprintf(buf + n, len - n, "]");
}

int
sim_print_format(struct sim_print_buf *pb, const char *prefix,
    const char *name, int dtype, int rank, const uint64_t *shape,
    const float *vals, const uint8_t *active)
{
	char		head[SIM_TEXT_MAX + 256];
	uint64_t	stride[SIM_MAX_RANK], nelem = 1;
	size_t		plen;
	int		i, rc;

	sim_print_shape(head, sizeof(head), name, rank, shape);
	/* "tile t:" is a prefix that has its colon already. */
	plen = strlen(prefix);
	while (plen > 0 && prefix[plen - 1] == ' ')
		plen--;
	rc = sim_print_buf_printf(pb, "%.*s%s %s %s\n", (int)plen, prefix,
	    plen > 0 && prefix[plen - 1] == ':' ? "" : ":", head,
	    sim_dtype_name(dtype));
	for (i = rank - 1; i >= 0; i--) {
		stride[i] = nelem;
		nelem *= shape[i];
	}
	if (rc == 0)
		rc = sim_print_rec(pb, dtype, rank, shape, stride, vals, active,
		    0, 0, nelem > SIM_PRINT_THRESHOLD);
	if (rc == 0)
		rc = sim_print_buf_printf(pb, "\n");
	return (rc);
}
