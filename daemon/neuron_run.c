/* neuron_run.c: the neuron backend's loaded NEFFs: load through libnrt, execute, benchmark, and profile with neuron-profile. */
#include "daemon/neuron_impl.h"

/* ------------------------------------------------------------ load */

static const struct sim_sig *
neuron_run_param(const struct backend_program *bp, size_t i)
{
	const struct neuron_program	*p = bp->impl;

	return (i < p->nin ? &p->in[i] : NULL);
}

static const struct sim_sig *
neuron_run_output(const struct backend_program *bp, size_t i)
{
	const struct neuron_program	*p = bp->impl;

	return (i < p->nout ? &p->out[i] : NULL);
}

/* The sim dtype of each runtime dtype nkid runs; SIM_DT_INVALID (0) for
 * the others. */
static const enum sim_dtype neuron_run_dtypes[] = {
	[NEURON_NRT_DTYPE_FLOAT32] = SIM_DT_FLOAT32,
	[NEURON_NRT_DTYPE_FLOAT16] = SIM_DT_FLOAT16,
	[NEURON_NRT_DTYPE_BFLOAT16] = SIM_DT_BFLOAT16,
	[NEURON_NRT_DTYPE_INT8] = SIM_DT_INT8,
	[NEURON_NRT_DTYPE_INT16] = SIM_DT_INT16,
	[NEURON_NRT_DTYPE_INT32] = SIM_DT_INT32,
	[NEURON_NRT_DTYPE_UINT8] = SIM_DT_UINT8,
	[NEURON_NRT_DTYPE_UINT16] = SIM_DT_UINT16,
	[NEURON_NRT_DTYPE_UINT32] = SIM_DT_UINT32,
	[NEURON_NRT_DTYPE_FP8_E4] = SIM_DT_FP8_E4M3,
	[NEURON_NRT_DTYPE_FP8_E5] = SIM_DT_FP8_E5M2,
};
#define NEURON_RUN_NDTYPES \
	(sizeof neuron_run_dtypes / sizeof neuron_run_dtypes[0])

static int
neuron_run_dtype(int nrt_dtype)
{
	if (nrt_dtype < 0 || (size_t)nrt_dtype >= NEURON_RUN_NDTYPES)
		return (SIM_DT_INVALID);
	return (neuron_run_dtypes[nrt_dtype]);
}

/* Fill sig from one tensor of the model's tensor info. */
static int
neuron_run_sig(const struct neuron_nrt_tensor_info *ti, struct sim_sig *sig,
    char *diag)
{
	const char	*dn;
	uint64_t	 n = 1;
	uint32_t	 i;

	sig->name = strndup(ti->name, sizeof ti->name);
	if (sig->name == NULL)
		fatal("out of memory");
	sig->dtype = neuron_run_dtype(ti->dtype);
	if (sig->dtype == SIM_DT_INVALID) {
		dn = neuron_nrt_dtype_name(ti->dtype);
		snprintf(diag, BACKEND_DIAG_LEN, "NEFF tensor '%s' has dtype "
		    "%s (%d), which nkid cannot carry", sig->name,
		    dn != NULL ? dn : "unknown", ti->dtype);
		return (BACKEND_EINVAL);
	}
	if (ti->ndim > SIM_MAX_RANK || (ti->ndim > 0 && ti->shape == NULL)) {
		snprintf(diag, BACKEND_DIAG_LEN, "NEFF tensor '%s' has rank "
		    "%u; nkid carries at most %d", sig->name, ti->ndim,
		    SIM_MAX_RANK);
		return (BACKEND_EINVAL);
	}
	sig->rank = (int)ti->ndim;
	for (i = 0; i < ti->ndim; i++) {
		sig->shape[i] = ti->shape[i];
		n *= ti->shape[i];
	}
	if (n * sim_dtype_size(sig->dtype) != ti->size) {
		snprintf(diag, BACKEND_DIAG_LEN, "NEFF tensor '%s': %zu bytes "
		    "do not match its shape and dtype %s", sig->name, ti->size,
		    sim_dtype_name(sig->dtype));
		return (BACKEND_EINVAL);
	}
	return (0);
}

static void
neuron_run_program_free(struct backend_neuron *b, struct neuron_program *p)
{
	size_t	i;

	if (p == NULL)
		return;
	for (i = 0; i < p->nmodels; i++) {
		if (p->models[i] != NULL)
			b->nrt.unload(p->models[i]);
	}
	for (i = 0; i < p->nin; i++)
		free((char *)p->in[i].name);
	for (i = 0; i < p->nout; i++)
		free((char *)p->out[i].name);
	pthread_mutex_destroy(&p->lock);
	free(p->models);
	free(p->in);
	free(p->out);
	free(p->in_bytes);
	free(p->out_bytes);
	free(p->neff);
	free(p);
}

/* The model of p on core, loaded there on first use. */
static int
neuron_run_model(struct backend_neuron *b, struct neuron_program *p,
    unsigned core, neuron_nrt_model **m, char *diag)
{
	int	st = 0, error;

	assert(core < p->nmodels);
	if ((error = backend_neuron_rt(b, core, diag)) != 0)
		return (error);
	pthread_mutex_lock(&p->lock);
	if (p->models[core] == NULL)
		st = b->nrt.load(p->neff, p->neff_len, (int32_t)core, -1,
		    &p->models[core]);
	*m = p->models[core];
	pthread_mutex_unlock(&p->lock);
	if (st != NEURON_NRT_SUCCESS)
		return (backend_neuron_nrt_fail(b, st, core, NEURON_CALL_LOAD,
		    "nrt_load", diag));
	return (0);
}

/*
 * Load the NEFF on nkid core 0 to learn its tensors (the runtime is the
 * only reader of the NEFF format), and keep that model for core 0.
 * Inputs and outputs keep the order of the runtime's tensor info.
 */
int
neuron_run_load(void *state, const void *image, size_t len,
    struct backend_program **out, char *diag)
{
	struct backend_neuron			*b = state;
	struct neuron_program			*p;
	struct neuron_nrt_tensor_info_array	*info = NULL;
	neuron_nrt_model			*m;
	const struct neuron_nrt_tensor_info	*ti;
	uint64_t				 i;
	int					 st, error;

	p = xcalloc(1, sizeof *p);
	pthread_mutex_init(&p->lock, NULL);
	p->neff = xmalloc(len);
	memcpy(p->neff, image, len);
	p->neff_len = len;
	p->nmodels = b->ncores;
	p->models = xcalloc(b->ncores, sizeof *p->models);
	if ((error = neuron_run_model(b, p, 0, &m, diag)) != 0)
		goto fail;
	if ((st = b->nrt.get_model_tensor_info(m, &info)) !=
	    NEURON_NRT_SUCCESS) {
		error = backend_neuron_nrt_fail(b, st, 0, NEURON_CALL_OTHER,
		    "nrt_get_model_tensor_info", diag);
		goto fail;
	}
	p->in = xcalloc(info->count + 1, sizeof *p->in);
	p->out = xcalloc(info->count + 1, sizeof *p->out);
	p->in_bytes = xcalloc(info->count + 1, sizeof *p->in_bytes);
	p->out_bytes = xcalloc(info->count + 1, sizeof *p->out_bytes);
	for (i = 0; i < info->count; i++) {
		ti = &info->info[i];
		if (ti->usage == NEURON_NRT_USAGE_INPUT) {
			p->in_bytes[p->nin] = ti->size;
			error = neuron_run_sig(ti, &p->in[p->nin++], diag);
		} else if (ti->usage == NEURON_NRT_USAGE_OUTPUT) {
			p->out_bytes[p->nout] = ti->size;
			error = neuron_run_sig(ti, &p->out[p->nout++],
			    diag);
		}
		if (error != 0)
			goto fail;
	}
	b->nrt.free_model_tensor_info(info);
	info = NULL;
	if (p->nout == 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "the NEFF has no outputs");
		error = BACKEND_EINVAL;
		goto fail;
	}
	p->bp.name = "neff";
	p->bp.nparams = p->nin;
	p->bp.noutputs = p->nout;
	p->bp.param = neuron_run_param;
	p->bp.output = neuron_run_output;
	p->bp.impl = p;
	*out = &p->bp;
	return (0);
fail:
	if (info != NULL)
		b->nrt.free_model_tensor_info(info);
	neuron_run_program_free(b, p);
	return (error);
}

void
neuron_run_unload(void *state, struct backend_program *bp)
{
	if (bp == NULL)
		return;
	neuron_run_program_free(state, bp->impl);
}

/* ------------------------------------------------------------ execute */

/* x's inputs (and its outputs unless inputs_only) match p. */
static int
neuron_run_args_check(const struct neuron_program *p,
    const struct backend_exec *x, int inputs_only, char *diag)
{
	const struct sim_tensor	*t;
	const struct sim_sig		*s;
	size_t			 i;
	int			 d;

	if (x->ninputs != p->nin || (!inputs_only && x->noutputs != p->nout)) {
		snprintf(diag, BACKEND_DIAG_LEN, "the NEFF takes %zu inputs "
		    "and %zu outputs; %zu and %zu given", p->nin, p->nout,
		    x->ninputs, x->noutputs);
		return (BACKEND_EARG);
	}
	for (i = 0; i < p->nin; i++) {
		t = &x->inputs[i];
		s = &p->in[i];
		if (t->dtype != s->dtype || t->rank != s->rank)
			goto bad;
		for (d = 0; d < s->rank; d++) {
			if (t->shape[d] != s->shape[d])
				goto bad;
		}
		if (t->data != NULL && t->nbytes != p->in_bytes[i])
			goto bad;
	}
	return (0);
bad:
	snprintf(diag, BACKEND_DIAG_LEN, "argument %zu ('%s'): expected %s of "
	    "%zu bytes in the NEFF's shape", i, p->in[i].name,
	    sim_dtype_name(p->in[i].dtype) ? sim_dtype_name(p->in[i].dtype) :
	    "?", p->in_bytes[i]);
	return (BACKEND_EARG);
}

static void
neuron_run_run_release(struct backend_neuron *b, struct neuron_run *r)
{
	size_t	i;

	if (r->sin != NULL)
		b->nrt.destroy_tensor_set(&r->sin);
	if (r->sout != NULL)
		b->nrt.destroy_tensor_set(&r->sout);
	for (i = 0; r->tin != NULL && i < r->nin; i++) {
		if (r->tin[i] != NULL)
			b->nrt.tensor_free(&r->tin[i]);
	}
	for (i = 0; r->tout != NULL && i < r->nout; i++) {
		if (r->tout[i] != NULL)
			b->nrt.tensor_free(&r->tout[i]);
	}
	free(r->tin);
	free(r->tout);
	memset(r, 0, sizeof *r);
}

/* Allocate n tensors on core (sizes bytes, names those of sig) into t
 * and put them in set. Returns 0 or an NRT status. */
static int
neuron_run_tensors_add(struct backend_neuron *b, unsigned core,
    const struct sim_sig *sig, const size_t *bytes, size_t n,
    neuron_nrt_tensor **t, neuron_nrt_tensor_set *set)
{
	size_t	i;
	int	st;

	for (i = 0; i < n; i++) {
		if ((st = b->nrt.tensor_allocate(NEURON_NRT_PLACEMENT_DEVICE,
		    (int)core, bytes[i], sig[i].name, &t[i])) != 0 ||
		    (st = b->nrt.add_tensor_to_tensor_set(set, sig[i].name,
		    t[i])) != 0)
			return (st);
	}
	return (0);
}

/* Allocate the tensors of p on core and put them in two sets. */
static int
neuron_run_run_prepare(struct backend_neuron *b,
    const struct neuron_program *p, unsigned core, struct neuron_run *r,
    char *diag)
{
	int	st;

	memset(r, 0, sizeof *r);
	r->nin = p->nin;
	r->nout = p->nout;
	r->tin = xcalloc(p->nin + 1, sizeof *r->tin);
	r->tout = xcalloc(p->nout, sizeof *r->tout);
	if ((st = b->nrt.allocate_tensor_set(&r->sin)) != 0 ||
	    (st = b->nrt.allocate_tensor_set(&r->sout)) != 0 ||
	    (st = neuron_run_tensors_add(b, core, p->in, p->in_bytes, p->nin,
	    r->tin, r->sin)) != 0 ||
	    (st = neuron_run_tensors_add(b, core, p->out, p->out_bytes,
	    p->nout, r->tout, r->sout)) != 0)
		goto fail;
	return (0);
fail:
	neuron_run_run_release(b, r);
	return (backend_neuron_nrt_fail(b, st, core, NEURON_CALL_OTHER,
	    "nrt_tensor_allocate", diag));
}

/* Write the inputs; inputs without data (benchmark) are zeros. */
static int
neuron_run_run_write(struct backend_neuron *b,
    const struct neuron_program *p, unsigned core, struct neuron_run *r,
    const struct backend_exec *x, void *zeros, char *diag)
{
	size_t	i;
	int	st;

	for (i = 0; i < p->nin; i++) {
		st = b->nrt.tensor_write(r->tin[i], x->inputs[i].data != NULL ?
		    x->inputs[i].data : zeros, 0, p->in_bytes[i]);
		if (st != 0)
			return (backend_neuron_nrt_fail(b, st, core,
			    NEURON_CALL_OTHER, "nrt_tensor_write", diag));
	}
	return (0);
}

/* Read the outputs into x->outputs, whose data are allocated already. */
static int
neuron_run_run_read(struct backend_neuron *b,
    const struct neuron_program *p, unsigned core, struct neuron_run *r,
    const struct backend_exec *x, char *diag)
{
	size_t	i;
	int	st;

	for (i = 0; i < p->nout; i++) {
		if ((st = b->nrt.tensor_read(r->tout[i], x->outputs[i].data, 0,
		    p->out_bytes[i])) != 0)
			return (backend_neuron_nrt_fail(b, st, core,
			    NEURON_CALL_OTHER, "nrt_tensor_read", diag));
	}
	return (0);
}

static void
neuron_run_outputs_alloc(const struct neuron_program *p,
    const struct backend_exec *x)
{
	size_t	i;

	for (i = 0; i < p->nout; i++) {
		x->outputs[i].dtype = p->out[i].dtype;
		x->outputs[i].rank = p->out[i].rank;
		memcpy(x->outputs[i].shape, p->out[i].shape,
		    sizeof x->outputs[i].shape);
		x->outputs[i].nbytes = p->out_bytes[i];
		x->outputs[i].data = xcalloc(1, p->out_bytes[i] + 1);
	}
}

static void *
neuron_run_zeros(const struct neuron_program *p)
{
	size_t	i, n = 1;

	for (i = 0; i < p->nin; i++) {
		if (p->in_bytes[i] > n)
			n = p->in_bytes[i];
	}
	return (xcalloc(1, n));
}

static double
neuron_run_us(const struct timespec *a, const struct timespec *b)
{
	return ((double)(b->tv_sec - a->tv_sec) * 1e6 +
	    (double)(b->tv_nsec - a->tv_nsec) / 1e3);
}

/*
 * The one execution path: warmup + iters executions of p on core, each
 * of the iters timed (inputs written, executed, outputs read) into
 * samples_us when it is not NULL. The last execution's outputs end in
 * x->outputs.
 */
static int
neuron_run_one(struct backend_neuron *b, struct neuron_program *p,
    unsigned core, const struct backend_exec *x, unsigned warmup,
    unsigned iters, double *samples_us, char *diag)
{
	struct neuron_run	 r;
	struct timespec		 t0, t1;
	neuron_nrt_model	*m;
	void			*zeros;
	unsigned		 i;
	int			 st, error;

	if (core >= b->ncores) {
		snprintf(diag, BACKEND_DIAG_LEN, "no core %u: the backend "
		    "drives %zu", core, b->ncores);
		return (BACKEND_EARG);
	}
	if ((error = neuron_run_args_check(p, x, 0, diag)) != 0)
		return (error);
	if ((error = neuron_run_model(b, p, core, &m, diag)) != 0)
		return (error);
	if ((error = neuron_run_run_prepare(b, p, core, &r, diag)) != 0)
		return (error);
	zeros = neuron_run_zeros(p);
	neuron_run_outputs_alloc(p, x);
	for (i = 0; i < warmup + iters; i++) {
		if (x->cancel != NULL && *x->cancel) {
			snprintf(diag, BACKEND_DIAG_LEN, "cancelled");
			error = BACKEND_ECANCELED;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if ((error = neuron_run_run_write(b, p, core, &r, x, zeros,
		    diag)) != 0)
			break;
		if ((st = b->nrt.execute(m, r.sin, r.sout)) != 0) {
			error = backend_neuron_nrt_fail(b, st, core,
			    NEURON_CALL_EXEC, "nrt_execute", diag);
			break;
		}
		if ((error = neuron_run_run_read(b, p, core, &r, x,
		    diag)) != 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (samples_us != NULL && i >= warmup)
			samples_us[i - warmup] = neuron_run_us(&t0, &t1);
	}
	free(zeros);
	neuron_run_run_release(b, &r);
	if (error != 0)
		sim_tensors_release(x->outputs, x->noutputs);
	return (error);
}

int
neuron_run_execute(void *state, const struct backend_program *bp,
    unsigned core, const struct backend_exec *x, char *diag)
{
	return (neuron_run_one(state, bp->impl, core, x, 0, 1, NULL,
	    diag));
}

int
neuron_run_benchmark(void *state, const struct backend_program *bp,
    unsigned core, const struct backend_exec *x, unsigned warmup,
    unsigned iters, double *samples_us, char *diag)
{
	if (iters == 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "iters must be at least 1");
		return (BACKEND_EARG);
	}
	return (neuron_run_one(state, bp->impl, core, x, warmup, iters,
	    samples_us, diag));
}

int
neuron_run_simulate(void *state, const struct backend_program *bp,
    const struct backend_exec *x, char *diag)
{
	snprintf(diag, BACKEND_DIAG_LEN, "the neuron backend does not "
	    "simulate: simulate format 'nkir/1' kernels with backend 'cpu'");
	return (BACKEND_EFORMAT);
}

/* ------------------------------------------------------------ profile */

/* numpy's descr of each dtype; the others (fp8) are "<V1", nkid's
 * convention, as bf16's "<V2" is. */
static const char *const neuron_run_npy_descrs[] = {
	[SIM_DT_FLOAT32] = "<f4",
	[SIM_DT_FLOAT16] = "<f2",
	[SIM_DT_BFLOAT16] = "<V2",
	[SIM_DT_INT8] = "|i1",
	[SIM_DT_INT16] = "<i2",
	[SIM_DT_INT32] = "<i4",
	[SIM_DT_UINT8] = "|u1",
	[SIM_DT_UINT16] = "<u2",
	[SIM_DT_UINT32] = "<u4",
	[SIM_DT_BOOL] = "|b1",
};
#define NEURON_RUN_NDESCRS \
	(sizeof neuron_run_npy_descrs / sizeof neuron_run_npy_descrs[0])

static const char *
neuron_run_npy_descr(int dtype)
{
	if (dtype < 0 || (size_t)dtype >= NEURON_RUN_NDESCRS ||
	    neuron_run_npy_descrs[dtype] == NULL)
		return ("<V1");
	return (neuron_run_npy_descrs[dtype]);
}

/* Write t as a version 1.0 .npy file dir/name. */
static int
neuron_run_npy_write(const char *dir, const char *name,
    const struct sim_tensor *t, char *err, size_t errlen)
{
	char	hdr[512], shape[256];
	size_t	off = 0, hlen, pad;
	int	i;

	shape[0] = '\0';
	for (i = 0; i < t->rank; i++)
		off += (size_t)snprintf(shape + off, sizeof shape - off,
		    "%llu%s", (unsigned long long)t->shape[i],
		    t->rank == 1 ? "," : i + 1 < t->rank ? ", " : "");
	hlen = (size_t)snprintf(hdr + 10, sizeof hdr - 10, "{'descr': '%s', "
	    "'fortran_order': False, 'shape': (%s), }",
	    neuron_run_npy_descr(t->dtype), shape);
	/* Pad with blanks so the data starts on a 64-byte boundary. */
	pad = 64 - (10 + hlen + 1) % 64;
	if (pad == 64)
		pad = 0;
	memset(hdr + 10 + hlen, ' ', pad);
	hlen += pad;
	hdr[10 + hlen] = '\n';
	hlen++;
	memcpy(hdr, "\x93NUMPY\x01\x00", 8);
	hdr[8] = (char)(hlen & 0xff);
	hdr[9] = (char)(hlen >> 8);
	return (backend_neuron_file_write(dir, name, hdr, 10 + hlen, t->data,
	    t->nbytes, err, errlen));
}

static int
neuron_run_tool(struct backend_neuron *b, char **argv, const char *cwd,
    char *const *envp, const char *what, char *diag)
{
	struct neuron_proc		p;
	struct neuron_proc_result	r;
	char				err[512], how[160], prefix[320];
	int				error = 0;

	memset(&p, 0, sizeof p);
	p.argv = argv;
	p.envp = envp;
	p.cwd = cwd;
	p.timeout_ms = b->timeout_ms;
	p.grace_ms = b->grace_ms;
	p.log_max = b->log_max;
	if (neuron_proc_run(&p, &r, err, sizeof err) != 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "%s", err);
		return (BACKEND_ERUNTIME);
	}
	if (!neuron_proc_ok(&r)) {
		neuron_proc_describe(&r, p.timeout_ms, how, sizeof how);
		snprintf(prefix, sizeof prefix, "%s %s %s", b->profiler, what,
		    how);
		backend_neuron_diag_log(diag, prefix, r.log, r.log_len);
		error = r.timed_out ? BACKEND_ELIMIT : BACKEND_ERUNTIME;
	}
	neuron_proc_result_release(&r);
	return (error);
}

/* nkid's environment with NEURON_RT_VISIBLE_CORES set to one core. */
static char **
neuron_run_env_core(unsigned neuron_core)
{
	extern char	**environ;
	char		**env;
	size_t		  n, i, k = 0;

	for (n = 0; environ[n] != NULL; n++)
		;
	env = xcalloc(n + 2, sizeof *env);
	for (i = 0; i < n; i++) {
		if (strncmp(environ[i], "NEURON_RT_VISIBLE_CORES=", 24) != 0)
			env[k++] = xstrdup(environ[i]);
	}
	env[k++] = xasprintf("NEURON_RT_VISIBLE_CORES=%u", neuron_core);
	env[k] = NULL;
	return (env);
}

/*
 * neuron-profile capture runs the NEFF num_execs times on the core
 * (NEURON_RT_VISIBLE_CORES names it) and writes a trace per profiled
 * execution in NKI's layout; neuron-profile view turns each into a JSON
 * summary. Inputs with data travel as NAME file.npy pairs.
 */
int
neuron_run_profile(void *state, const struct backend_program *bp,
    unsigned core, const struct backend_exec *x, unsigned num_execs,
    unsigned profile_nth, struct backend_trace **traces, size_t *ntraces,
    char *diag)
{
	struct backend_neuron	*b = state;
	struct neuron_program	*p = bp->impl;
	struct backend_trace	*t = NULL;
	char			 dir[PATH_MAX], err[512], ntff[64], json[80];
	char			**argv = NULL, **env = NULL, **pairs = NULL;
	void			*buf;
	size_t			 len, n = 0, i, npairs = 0;
	unsigned		 e, first;
	int			 error, with_inputs = 1;

	*traces = NULL;
	*ntraces = 0;
	if (core >= b->ncores || profile_nth == 0 || num_execs == 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "profile needs a core below "
		    "%zu and num_execs, profile_nth of at least 1",
		    b->ncores);
		return (BACKEND_EARG);
	}
	if ((error = neuron_run_args_check(p, x, 1, diag)) != 0)
		return (error);
	if ((error = backend_neuron_tmpdir(b, "profile", dir, sizeof dir,
	    diag)) != 0)
		return (error);
	if (backend_neuron_file_write(dir, NEURON_CMD_NEFF, p->neff,
	    p->neff_len, NULL, 0, err, sizeof err) != 0)
		goto ioerr;
	for (i = 0; i < x->ninputs; i++) {
		if (x->inputs[i].data == NULL)
			with_inputs = 0;
	}
	if (with_inputs && x->ninputs > 0) {
		pairs = xcalloc(2 * x->ninputs + 1, sizeof *pairs);
		for (i = 0; i < x->ninputs; i++) {
			pairs[2 * i] = xstrdup(p->in[i].name);
			pairs[2 * i + 1] = xasprintf("input%zu.npy", i);
			if (neuron_run_npy_write(dir, pairs[2 * i + 1],
			    &x->inputs[i], err, sizeof err) != 0) {
				npairs = i + 1;
				goto ioerr;
			}
		}
		npairs = x->ninputs;
	}
	argv = neuron_cmd_capture_argv(b->profiler, NEURON_CMD_NEFF,
	    "profile.ntff", profile_nth, num_execs, pairs, npairs);
	env = neuron_run_env_core(b->cores[core]);
	if ((error = neuron_run_tool(b, argv, dir, env, "capture",
	    diag)) != 0)
		goto out;
	/* Executions nth, 2 nth, ... <= num_execs; nth alone if beyond. */
	first = profile_nth;
	for (e = first; e == first || e <= num_execs; e += profile_nth) {
		neuron_cmd_trace_name("profile", first, e, ntff, sizeof ntff);
		snprintf(json, sizeof json, "%s.json", ntff);
		t = xreallocarray(t, n + 1, sizeof *t);
		memset(&t[n], 0, sizeof t[n]);
		t[n].execution = e;
		n++;
		if (backend_neuron_file_read(dir, ntff, &buf, &len, err,
		    sizeof err) != 0) {
			snprintf(diag, BACKEND_DIAG_LEN, "%s capture left no "
			    "trace for execution %u: %s", b->profiler, e, err);
			error = BACKEND_ERUNTIME;
			goto out;
		}
		t[n - 1].trace = buf;
		t[n - 1].trace_len = len;
		neuron_proc_argv_free(argv);
		argv = neuron_cmd_view_argv(b->profiler, NEURON_CMD_NEFF, ntff,
		    json);
		if ((error = neuron_run_tool(b, argv, dir, env, "view",
		    diag)) != 0)
			goto out;
		if (backend_neuron_file_read(dir, json, &buf, &len, err,
		    sizeof err) != 0) {
			snprintf(diag, BACKEND_DIAG_LEN, "%s view wrote no "
			    "summary for execution %u: %s", b->profiler, e,
			    err);
			error = BACKEND_ERUNTIME;
			goto out;
		}
		t[n - 1].summary_json = buf;
		t[n - 1].summary_len = len;
	}
	*traces = t;
	*ntraces = n;
	t = NULL;
	error = 0;
	goto out;
ioerr:
	snprintf(diag, BACKEND_DIAG_LEN, "%s", err);
	error = BACKEND_ERUNTIME;
out:
	backend_traces_free(t, n);
	for (i = 0; pairs != NULL && i < 2 * npairs; i++)
		free(pairs[i]);
	free(pairs);
	neuron_proc_argv_free(argv);
	neuron_proc_argv_free(env);
	backend_neuron_tmpdir_remove(dir);
	return (error);
}

/* The compile target when a request names none. */
