/* backend.c: the table of backends, opening the configured one, and the backend layer: the only callers of a backend's ops. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/errstr.h"
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
	return (ERRSTR(backend_errs, err));
}

/* Nonzero if s is well-formed UTF-8 (no overlongs, surrogates or code
 * points past U+10FFFF). */
static int
backend_utf8_valid(const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	unsigned		 n, i;
	uint32_t		 cp;

	while (*p != '\0') {
		if (*p < 0x80) {
			p++;
			continue;
		}
		if ((*p & 0xe0) == 0xc0) {
			n = 1;
			cp = *p & 0x1f;
		} else if ((*p & 0xf0) == 0xe0) {
			n = 2;
			cp = *p & 0x0f;
		} else if ((*p & 0xf8) == 0xf0) {
			n = 3;
			cp = *p & 0x07;
		} else
			return (0);
		for (i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return (0);
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
		    (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return (0);
		p += n + 1;
	}
	return (1);
}

int
backend_program_names_check(const struct backend_program *p, char *diag)
{
	const struct sim_sig	*sg;
	size_t		 i, n;
	int		 out;

	if (p->name != NULL && !backend_utf8_valid(p->name)) {
		snprintf(diag, BACKEND_DIAG_LEN, "the kernel's name is not "
		    "valid UTF-8");
		return (BACKEND_EINVAL);
	}
	for (out = 0; out < 2; out++) {
		n = out ? p->noutputs : p->nparams;
		for (i = 0; i < n; i++) {
			sg = out ? p->output(p, i) : p->param(p, i);
			if (sg->name == NULL || backend_utf8_valid(sg->name))
				continue;
			snprintf(diag, BACKEND_DIAG_LEN, "the name of %s tensor "
			    "%zu is not valid UTF-8", out ? "output" : "input",
			    i);
			return (BACKEND_EINVAL);
		}
	}
	return (0);
}

int
backend_name_valid(const char *s)
{
	return (backend_utf8_valid(s));
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
backend_config_check(const struct config *cfg, const char *name, char *err,
    size_t errlen)
{
	char	choices[128];
	size_t	i, n = 0;

	if (backend_find(cfg->backend) != NULL)
		return (0);
	choices[0] = '\0';
	for (i = 0; i < sizeof backends / sizeof backends[0]; i++)
		n += snprintf(choices + n, sizeof choices - n, "%s%s",
		    i > 0 ? " " : "", backends[i]->name);
	assert(n < sizeof choices);
	snprintf(err, errlen, "config '%s': 'backend' must be one of: %s; "
	    "not '%s'", name, choices, cfg->backend);
	return (BACKEND_EOPEN);
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

const char *
backend_name(const struct backend *b)
{
	return (b->ops->name);
}

const char *
backend_format(const struct backend *b)
{
	return (b->ops->format);
}

const char *
backend_compiler_version(const struct backend *b)
{
	return (b->ops->compiler_version(b->state));
}

void
backend_cache_key(const struct backend *b, const char *format,
    const char *ir_digest, const char *target, const char *options,
    char *key)
{
	struct cache_key_input	in;

	assert(cache_key_valid(ir_digest));
	memset(&in, 0, sizeof in);
	in.format = format;
	in.ir_digest = ir_digest;
	/* The effective target: a host-detected default is part of the key,
	 * so a changed host never gets another's NEFFs. */
	in.target = backend_target(b, target != NULL ? target : "");
	in.options = options != NULL ? options : "";
	in.backend = backend_name(b);
	in.compiler_version = backend_compiler_version(b);
	cache_key_compute(&in, key);
}

void
backend_versions(const struct backend *b,
    void (*add)(void *, const char *, const char *), void *arg)
{
	b->ops->versions(b->state, add, arg);
}

int
backend_runs_on_host(const struct backend *b)
{
	return (b->ops->on_host);
}

int
backend_can(const struct backend *b, enum backend_cap cap)
{
	switch (cap) {
	case BACKEND_CAN_BENCHMARK:
		return (b->ops->benchmark != NULL);
	case BACKEND_CAN_PROFILE:
		return (b->ops->profile != NULL);
	case BACKEND_CAN_MODEL:
		return (b->ops->model != NULL);
	}
	return (0);
}

int
backend_compile(struct backend *b, const void *ir, size_t len,
    const char *target, const char *options, void **image,
    size_t *image_len, char *diag)
{
	return (b->ops->compile(b->state, ir, len, target, options, image,
	    image_len, diag));
}

int
backend_load(struct backend *b, const void *image, size_t len,
    struct backend_program **out, char *diag)
{
	return (b->ops->load(b->state, image, len, out, diag));
}

void
backend_unload(struct backend *b, struct backend_program *p)
{
	b->ops->unload(b->state, p);
}

size_t
backend_footprint(struct backend *b, const struct backend_program *p)
{
	if (b->ops->footprint == NULL)
		return (0);
	return (b->ops->footprint(b->state, p));
}

int
backend_execute(struct backend *b, const struct backend_program *p,
    unsigned core, const struct backend_exec *x, char *diag)
{
	return (b->ops->execute(b->state, p, core, x, diag));
}

int
backend_simulate(struct backend *b, const struct backend_program *p,
    const struct backend_exec *x, char *diag)
{
	return (b->ops->simulate(b->state, p, x, diag));
}

int
backend_benchmark(struct backend *b, const struct backend_program *p,
    unsigned core, const struct backend_exec *x, unsigned warmup,
    unsigned iters, double *samples_us, char *diag)
{
	assert(b->ops->benchmark != NULL);
	return (b->ops->benchmark(b->state, p, core, x, warmup, iters,
	    samples_us, diag));
}

int
backend_profile(struct backend *b, const struct backend_program *p,
    unsigned core, const struct backend_exec *x, unsigned num_execs,
    unsigned profile_nth, struct backend_trace **traces, size_t *ntraces,
    char *diag)
{
	assert(b->ops->profile != NULL);
	return (b->ops->profile(b->state, p, core, x, num_execs, profile_nth,
	    traces, ntraces, diag));
}

int
backend_model(struct backend *b, const struct backend_program *p,
    double *us, char *target, char *diag)
{
	assert(b->ops->model != NULL);
	return (b->ops->model(b->state, p, us, target, diag));
}
