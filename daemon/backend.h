/* backend.h: the interface every execution backend implements (cpu now, neuron later). */
#ifndef NKID_BACKEND_H
#define NKID_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"

struct config;

/* Error codes of the backend operations: 0 or one of these. */
enum backend_err {
	BACKEND_OK = 0,
	BACKEND_EPARSE = -1,	/* malformed kernel or image */
	BACKEND_EINVAL = -2,	/* a kernel that breaks a language/hardware rule */
	BACKEND_ELIMIT = -3,	/* over a bound of the backend */
	BACKEND_EARG = -4,	/* tensors that do not match the signature */
	BACKEND_ECANCELED = -5,	/* cancelled by the caller */
	BACKEND_ERUNTIME = -6,	/* failed while executing */
	BACKEND_ENOMEM = -7,
	BACKEND_EFORMAT = -8,	/* kernel format not supported */
	BACKEND_EOPEN = -9,	/* cannot open the backend */
	BACKEND_EBUSY = -10,	/* a core is held by another process */
};

/* A loaded, executable kernel. The signature fields are borrowed from
 * the backend's own representation and live as long as the program. */
struct backend_program {
	const char	*name;
	size_t		 nparams;
	size_t		 noutputs;
	const struct sim_sig	*(*param)(const struct backend_program *, size_t);
	const struct sim_sig	*(*output)(const struct backend_program *, size_t);
	void		*impl;
};

/* Host tensors are struct sim_tensor (sim/sim.h) for every backend. */
struct backend_exec {
	const struct sim_tensor	*inputs;
	size_t			 ninputs;
	struct sim_tensor		*outputs;	/* noutputs, filled on success */
	size_t			 noutputs;
	/* Where the outputs may be written in place (the caller's memory,
	 * e.g. a client's shared-memory region), entries NULL for "anywhere";
	 * execute only. May be NULL. See sim_run_opts.out_bufs. */
	void *const		*out_bufs;
	const volatile int	*cancel;	/* may be NULL */
	/* Simulate only: device_print text, in order. */
	void			(*print_cb)(void *arg, const char *text,
				    size_t len);
	void			*print_arg;
};

struct backend;
struct backend_trace;

/*
 * One backend, OpenSMTPD style: a const table of operations. compile,
 * load, execute and simulate run off the loop thread and may run
 * concurrently; the others run on the loop thread. diag (1024 bytes)
 * receives a message on failure.
 */
struct backend_ops {
	const char	*name;			/* "cpu" */
	const char	*format;		/* kernel format: "nkir/1" */
	/* Executes on the host CPU: a short execution may run on nkid's
	 * loop thread (docs/scheduling.md); a device call never does. */
	int		 on_host;

	int	(*open)(const struct config *cfg, void **state, char *err,
		    size_t errlen);
	void	(*close)(void *state);
	/* Number of cores this backend drives. */
	unsigned (*probe)(void *state);
	/* Compiler identity that goes into the NEFF key. */
	const char *(*compiler_version)(void *state);
	/* Component versions for Status: add(arg, key, value) per entry. */
	void	(*versions)(void *state, void (*add)(void *, const char *,
		    const char *), void *arg);

	/*
	 * IR -> image (malloc'd, the caller frees), for target ("": the
	 * backend's default) with the extra compiler options
	 * (additional_compile_opt: split into words like a shell would,
	 * never run by one). A backend without options refuses none it
	 * cannot use silently: see its page.
	 */
	int	(*compile)(void *state, const void *ir, size_t len,
		    const char *target, const char *options, void **image,
		    size_t *image_len, char *diag);
	/* image -> program (freed with unload). */
	int	(*load)(void *state, const void *image, size_t len,
		    struct backend_program **out, char *diag);
	void	(*unload)(void *state, struct backend_program *p);
	/* Execute p once on core. On success the caller frees the outputs
	 * with sim_tensors_release. */
	int	(*execute)(void *state, const struct backend_program *p,
		    unsigned core, const struct backend_exec *x, char *diag);
	/* Execute p on the simulator with device_print captured. */
	int	(*simulate)(void *state, const struct backend_program *p,
		    const struct backend_exec *x, char *diag);
	/*
	 * Execute p warmup + iters times on core, timing each of the iters
	 * executions alone into samples_us[0 .. iters-1]. Inputs may carry
	 * no data (shapes only): the backend then supplies its own values.
	 * x->outputs receive the last execution's outputs. NULL: the
	 * backend cannot benchmark.
	 */
	int	(*benchmark)(void *state, const struct backend_program *p,
		    unsigned core, const struct backend_exec *x,
		    unsigned warmup, unsigned iters, double *samples_us,
		    char *diag);
	/*
	 * Execute p num_execs times on core and capture a trace of
	 * executions profile_nth, 2*profile_nth, ... <= num_execs (just
	 * profile_nth's if num_execs < profile_nth). On success *traces is
	 * a malloc'd array of *ntraces entries the caller frees with
	 * backend_traces_free. NULL: the backend cannot profile.
	 */
	int	(*profile)(void *state, const struct backend_program *p,
		    unsigned core, const struct backend_exec *x,
		    unsigned num_execs, unsigned profile_nth,
		    struct backend_trace **traces, size_t *ntraces,
		    char *diag);
	/*
	 * The device's index of nkid core core, for NEURON_RT_VISIBLE_CORES
	 * in a lease. NULL: the same index.
	 */
	unsigned (*device_core)(void *state, unsigned core);
	/*
	 * The target a compile uses when the request names none (detected
	 * from the host or configured), so that it is part of the NEFF key.
	 * NULL: the backend has no notion of target ("").
	 */
	const char *(*default_target)(void *state);
	/*
	 * Bytes of host memory the loaded program p holds now (plans,
	 * buffers, pools; its image excluded), for the kernel cache's memory
	 * budget. Called on the loop thread while no execution of p runs.
	 * NULL: nothing beyond the image.
	 */
	size_t	(*footprint)(void *state, const struct backend_program *p);
	/*
	 * Model one execution of p on the NeuronCore its target names,
	 * without executing it: *us the latency, target (16 bytes) the
	 * target modeled. NULL: the backend has no model (its benchmark
	 * times a device).
	 */
	int	(*model)(void *state, const struct backend_program *p,
		    double *us, char *target, char *diag);
};

/* One profiled execution: the trace (cpu: Chrome trace-event JSON; neuron:
 * NTFF) and a JSON summary, both malloc'd. */
struct backend_trace {
	unsigned	 execution;	/* 1-based */
	void		*trace;
	size_t		 trace_len;
	char		*summary_json;
	size_t		 summary_len;
};

/* target if not empty, else b's default target (see default_target). */
const char *backend_target(const struct backend *b, const char *target);

/* The device core index behind nkid core core of b (see device_core). */
unsigned backend_device_core(const struct backend *b, unsigned core);

/*
 * 0 if every name of p (the kernel's, its parameters' and outputs') is
 * valid UTF-8 and can travel in a reply; else BACKEND_EINVAL with a
 * message in diag (BACKEND_DIAG_LEN bytes) naming the tensor by position.
 */
int	backend_program_names_check(const struct backend_program *p,
	    char *diag);
/* Nonzero if the name s is valid UTF-8 (see above). */
int	backend_name_valid(const char *s);
/* Free n traces filled by a profile operation, and the array. */
void	backend_traces_free(struct backend_trace *t, size_t n);

/* An open backend: its ops and state. */
struct backend {
	const struct backend_ops	*ops;
	void				*state;
	unsigned			 ncores;
};

#define BACKEND_DIAG_LEN	1024

/*
 * The backend layer: the only callers of a backend's ops. Each takes the
 * open backend b and passes the op's arguments through; see struct
 * backend_ops for what each does and where it runs.
 */
const char *backend_name(const struct backend *b);
const char *backend_format(const struct backend *b);
const char *backend_compiler_version(const struct backend *b);
/*
 * The NEFF key into key (CACHE_KEY_LEN + 1 bytes) of the kernel whose IR
 * has the digest ir_digest (hex SHA-256 of the IR bytes: cache_key_valid
 * must hold) in format, for target (NULL or "": b's default) and options,
 * made by b and its compiler: the key names what made the image. A key
 * is only ever derived by nkid: from IR it received, or from a digest for
 * a lookup, which finds an entry only if nkid compiled IR with that digest.
 */
void	backend_cache_key(const struct backend *b, const char *format,
	    const char *ir_digest, const char *target, const char *options,
	    char *key);
void	backend_versions(const struct backend *b,
	    void (*add)(void *, const char *, const char *), void *arg);
/* Nonzero if b executes on the host CPU (struct backend_ops on_host). */
int	backend_runs_on_host(const struct backend *b);

/* What a backend may lack (backend_can). */
enum backend_cap {
	BACKEND_CAN_BENCHMARK,
	BACKEND_CAN_PROFILE,
	BACKEND_CAN_MODEL,
};
/* Nonzero if b has the operation cap names. */
int	backend_can(const struct backend *b, enum backend_cap cap);

/*
 * Compile ir for target ("": the backend's default) with the extra
 * compiler options (words split as a shell would, never run by one): the
 * one compile of every backend. A backend that takes neither target nor
 * options compiles for its only target.
 */
int	backend_compile(struct backend *b, const void *ir, size_t len,
	    const char *target, const char *options, void **image,
	    size_t *image_len, char *diag);
int	backend_load(struct backend *b, const void *image, size_t len,
	    struct backend_program **out, char *diag);
void	backend_unload(struct backend *b, struct backend_program *p);
size_t	backend_footprint(struct backend *b, const struct backend_program *p);
int	backend_execute(struct backend *b, const struct backend_program *p,
	    unsigned core, const struct backend_exec *x, char *diag);
int	backend_simulate(struct backend *b, const struct backend_program *p,
	    const struct backend_exec *x, char *diag);
/* As the op; b must be able to (backend_can). */
int	backend_benchmark(struct backend *b, const struct backend_program *p,
	    unsigned core, const struct backend_exec *x, unsigned warmup,
	    unsigned iters, double *samples_us, char *diag);
int	backend_profile(struct backend *b, const struct backend_program *p,
	    unsigned core, const struct backend_exec *x, unsigned num_execs,
	    unsigned profile_nth, struct backend_trace **traces,
	    size_t *ntraces, char *diag);
int	backend_model(struct backend *b, const struct backend_program *p,
	    double *us, char *target, char *diag);

/*
 * 0 if cfg's backend is one of the backend table's names; else
 * BACKEND_EOPEN with a message in err naming the config (name: its path)
 * and the choices. Whoever loads a config (start, nkid -n, reload) checks
 * it here: the names are the table's, not the config's.
 */
int	backend_config_check(const struct config *cfg, const char *name,
	    char *err, size_t errlen);
/* Open the backend named by cfg->backend. On failure returns
 * BACKEND_EOPEN with a message in err and *out stays NULL. The caller
 * frees *out with backend_close. */
int	backend_open(const struct config *cfg, struct backend **out,
	    char *err, size_t errlen);
void	backend_close(struct backend *b);
/* The backend called name, or NULL. */
const struct backend_ops *backend_find(const char *name);
const char *backend_strerror(int err);

extern const struct backend_ops backend_cpu_ops;
extern const struct backend_ops backend_neuron_ops;

#endif /* NKID_BACKEND_H */
