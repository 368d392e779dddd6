/* sim_diag.c: the executor's error codes and the messages of a struct sim_diag. */
/* Floor 0: calls nothing else in sim/. */
#include <stdarg.h>
#include <stdio.h>

#include "sim/sim_impl.h"

static const char *const sim_errs[] = {
	"success",
	"malformed kernel or image",
	"invalid kernel",
	"kernel exceeds an executor limit",
	"argument does not match the kernel signature",
	"run cancelled",
	"kernel failed during execution",
	"out of memory",
};

const char *
sim_strerror(int err)
{
	if (err > 0 || -err >= (int)SIM_NITEMS(sim_errs))
		return ("unknown error");
	return (sim_errs[-err]);
}

void
sim_diag_set(struct sim_diag *d, const char *fmt, ...)
{
	va_list	ap;

	if (d == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
}

void
sim_diag_vset_at(struct sim_diag *d, const char *file, unsigned line,
    const char *fmt, va_list ap)
{
	char	msg[sizeof(d->msg)];

	if (d == NULL)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	sim_diag_set(d, "%s (%s:%u)", msg, file, line);
}
