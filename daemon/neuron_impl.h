/* neuron_impl.h: what the neuron backend's two files share (backend_neuron.c: open, compile, the ops table; neuron_run.c: load, execute, profile): its state and helpers; no other module includes it. */
#ifndef NKID_NEURON_IMPL_H
#define NKID_NEURON_IMPL_H

#include <sys/stat.h>
#include <sys/types.h>

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim/sim.h"

#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/neuron_cmd.h"
#include "daemon/neuron_nrt.h"
#include "daemon/neuron_proc.h"
#include "daemon/xmalloc.h"

/* The kernel format: the Penguin IR text NKI's tracer writes. */
#define NEURON_FORMAT		"penguin"
/* Largest NEFF or trace read back from the toolchain. */
#define NEURON_MAX_FILE		(2ULL << 30)
/* How long `neuronx-cc --version` may take at start. */
#define NEURON_VERSION_TIMEOUT	60000
/* How long `neuron-ls --json-output` may take at start. */
#define NEURON_LS_TIMEOUT	10000
/* The driver's sysfs tree (Neuron sysfs user guide): one neuron<N>
 * directory per device, its instance type under info/architecture. */
#define NEURON_SYSFS		"/sys/devices/virtual/neuron_device"
#define NEURON_SYSFS_INSTANCE	"info/architecture/instance_type"
/* The compile target when neither the config nor the host tells. */
#define NEURON_TARGET_DEFAULT	"trn1"

struct backend_neuron {
	char			*compiler;
	char			*profiler;
	char			*runtime;
	char			*target;
	const char		*target_from;	/* "neuron.target", "sysfs",
						   "neuron-ls", "default" */
	char			*workdir;	/* <state_dir>/neuron, 0700 */
	uint32_t		 timeout_ms;
	uint32_t		 grace_ms;
	uint32_t		 log_max;
	unsigned		 ndevices;
	unsigned		 total;		/* NeuronCores of the devices */
	const char		*cores_from;	/* "neuron-ls", "device_glob" */
	unsigned		*cores;		/* nkid core -> NeuronCore */
	size_t			 ncores;
	char			 visible[256];	/* NEURON_RT_VISIBLE_CORES */
	char			 compiler_version[256];
	char			 compiler_number[64];
	char			 runtime_version[192];
	struct neuron_nrt	 nrt;
	pthread_mutex_t		 lock;		/* guards inited */
	int			 inited;	/* nrt_init succeeded */
};

/* A loaded NEFF: its signature from the runtime, and one loaded model
 * per core, loaded on the core's first use. */
struct neuron_program {
	struct backend_program	 bp;
	void			*neff;
	size_t			 neff_len;
	size_t			 nin, nout;
	struct sim_sig		*in, *out;
	size_t			*in_bytes, *out_bytes;
	pthread_mutex_t		 lock;		/* guards models */
	neuron_nrt_model	**models;
	size_t			 nmodels;
};

/* The tensors of one execution. */
struct neuron_run {
	neuron_nrt_tensor	**tin, **tout;
	neuron_nrt_tensor_set	 *sin, *sout;
	size_t			  nin, nout;
};

enum neuron_call {
	NEURON_CALL_INIT,
	NEURON_CALL_LOAD,
	NEURON_CALL_EXEC,
	NEURON_CALL_OTHER,
};

/* ------------------------------------------------- backend_neuron.c */

/* The failure of runtime call st on core (-1: none) into diag; the
 * backend's error code. */
int	backend_neuron_nrt_fail(struct backend_neuron *b, int st, long core,
	    enum neuron_call call, const char *fn, char *diag);
/* The runtime initialized (once) for core; 0 or a BACKEND_E* with diag. */
int	backend_neuron_rt(struct backend_neuron *b, long core, char *diag);
/* diag = prefix and the tail of log, bounded. */
void	backend_neuron_diag_log(char *diag, const char *prefix, const char *log,
	    size_t len);
/* Read dir/name whole (at most NEURON_MAX_FILE) into *out (malloc'd). */
int	backend_neuron_file_read(const char *dir, const char *name, void **out,
	    size_t *len, char *err, size_t errlen);
/* Write dir/name from a (len bytes). */
int	backend_neuron_file_write(const char *dir, const char *name,
	    const void *a, size_t alen, const void *bb, size_t blen, char *err,
	    size_t errlen);
/* A fresh private directory under the workdir for what; its path. */
int	backend_neuron_tmpdir(struct backend_neuron *b, const char *what,
	    char *path, size_t len, char *diag);
/* Remove a directory made by backend_neuron_tmpdir and all in it. */
void	backend_neuron_tmpdir_remove(const char *path);

/* ----------------------------------------------------- neuron_run.c */

/* The load, execute, simulate, benchmark and profile operations of
 * struct backend_ops (daemon/backend.h), for the neuron backend. */
int	neuron_run_load(void *state, const void *image, size_t len,
	    struct backend_program **out, char *diag);
void	neuron_run_unload(void *state, struct backend_program *bp);
int	neuron_run_execute(void *state, const struct backend_program *bp,
	    unsigned core, const struct backend_exec *x, char *diag);
int	neuron_run_benchmark(void *state, const struct backend_program *bp,
	    unsigned core, const struct backend_exec *x, unsigned warmup,
	    unsigned iters, double *samples_us, char *diag);
int	neuron_run_simulate(void *state, const struct backend_program *bp,
	    const struct backend_exec *x, char *diag);
int	neuron_run_profile(void *state, const struct backend_program *bp,
	    unsigned core, const struct backend_exec *x, unsigned num_execs,
	    unsigned profile_nth, struct backend_trace **traces,
	    size_t *ntraces, char *diag);

#endif /* NKID_NEURON_IMPL_H */
