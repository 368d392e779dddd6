/* backend.c: the table of backends and opening the configured one. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/xmalloc.h"

static const struct backend_ops *const backends[] = {
	&backend_cpu_ops,
	&backend_neuron_ops,
};

static const char *backend_errs[] = {
	"success", "malformed kernel", "invalid kernel", "over a limit",
	"arguments do not match the kernel", "cancelled", "execution failed",
	"out of memory", "unsupported kernel format", "cannot open backend",
	"core held by another process",
};

const char *
backend_strerror(int err)
{
	if (err > 0 || -err >= (int)(sizeof backend_errs /
	    sizeof backend_errs[0]))
		return ("unknown error");
	return (backend_errs[-err]);
}

const struct backend_ops *
backend_find(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof backends / sizeof backends[0]; i++) {
		if (strcmp(backends[i]->name, name) == 0)
			return (backends[i]);
	}
	return (NULL);
}

int
backend_open(const struct config *cfg, struct backend **out, char *err,
    size_t errlen)
{
	const struct backend_ops	*ops;
	struct backend			*b;
	void				*state = NULL;

	assert(cfg != NULL && out != NULL);
	*out = NULL;
	if ((ops = backend_find(cfg->backend)) == NULL) {
		snprintf(err, errlen, "unknown backend '%s'", cfg->backend);
		return (BACKEND_EOPEN);
	}
	if (ops->open(cfg, &state, err, errlen) != 0)
		return (BACKEND_EOPEN);
	b = xcalloc(1, sizeof *b);
	b->ops = ops;
	b->state = state;
	b->ncores = ops->probe(state);
	*out = b;
	return (0);
}

void
backend_close(struct backend *b)
{
	if (b == NULL)
		return;
	b->ops->close(b->state);
	free(b);
}

void
backend_traces_free(struct backend_trace *t, size_t n)
{
	size_t	i;

	if (t == NULL)
		return;
	for (i = 0; i < n; i++) {
		free(t[i].trace);
		free(t[i].summary_json);
	}
	free(t);
}

unsigned
backend_device_core(const struct backend *b, unsigned core)
{
	assert(b != NULL && core < b->ncores);
	if (b->ops->device_core == NULL)
		return (core);
	return (b->ops->device_core(b->state, core));
}

const char *
backend_target(const struct backend *b, const char *target)
{
	assert(b != NULL);
	if (target != NULL && target[0] != '\0')
		return (target);
	if (b->ops->default_target == NULL)
		return ("");
	return (b->ops->default_target(b->state));
}
