/* backend_cpu.c: the embedded cpu backend, NKIR executed on the host CPU by sim/. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/xmalloc.h"

struct backend_cpu {
	unsigned	ncores;
};

struct backend_cpu_program {
	struct backend_program	 bp;
	sim_program		*sp;
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
backend_cpu_diag(char *diag, const sim_diag *sd, int serr)
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
	sim_diag	sd;
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

static const sim_sig *
backend_cpu_param(const struct backend_program *bp, size_t i)
{
	const struct backend_cpu_program *p = bp->impl;

	return (sim_program_param(p->sp, i));
}

static const sim_sig *
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
	sim_program			*sp = NULL;
	sim_diag			 sd;
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
	sim_run_opts				 opts;
	sim_diag				 sd;
	int					 serr;

	memset(&opts, 0, sizeof opts);
	memset(&sd, 0, sizeof sd);
	opts.cancel = x->cancel;
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
};
