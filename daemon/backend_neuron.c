/* backend_neuron.c: the neuron backend: neuronx-cc compiles, libnrt runs NEFFs on NeuronCores, neuron-profile captures. */
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
	struct sim_sig			*in, *out;
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

/* ------------------------------------------------------------ helpers */

/*
 * Map a runtime status of a call made for nkid core core to a backend
 * error with a message in diag; the busy statuses name the core (nkid's
 * index and the NeuronCore).
 */
static int
backend_neuron_nrt_fail(struct backend_neuron *b, int st, long core,
    enum neuron_call call, const char *fn, char *diag)
{
	char		 nbuf[32];
	const char	*name = neuron_nrt_status_name(st, nbuf, sizeof nbuf);

	if (st == NEURON_NRT_EXEC_NC_BUSY ||
	    st == NEURON_NRT_LOAD_NOT_ENOUGH_NC ||
	    (call == NEURON_CALL_INIT && st == NEURON_NRT_RESOURCE)) {
		/* nrt_init reserves every visible core at once. */
		if (call == NEURON_CALL_INIT)
			snprintf(diag, BACKEND_DIAG_LEN, "NeuronCore %u (nkid "
			    "core %ld) is not available: the runtime cannot "
			    "reserve NeuronCores %s, another process holds "
			    "one (%s: %s)", b->cores[core], core, b->visible,
			    fn, name);
		else
			snprintf(diag, BACKEND_DIAG_LEN, "NeuronCore %u (nkid "
			    "core %ld) is not available: another process "
			    "holds it (%s: %s)", b->cores[core], core, fn,
			    name);
		return (BACKEND_EBUSY);
	}
	switch (st) {
	case NEURON_NRT_INVALID:
	case NEURON_NRT_UNSUPPORTED_NEFF_VERSION:
		if (call == NEURON_CALL_LOAD) {
			snprintf(diag, BACKEND_DIAG_LEN, "the Neuron runtime "
			    "rejected the NEFF (%s: %s)", fn, name);
			return (BACKEND_EINVAL);
		}
		break;
	case NEURON_NRT_EXEC_BAD_INPUT:
		snprintf(diag, BACKEND_DIAG_LEN, "the Neuron runtime rejected "
		    "the inputs (%s: %s)", fn, name);
		return (BACKEND_EARG);
	case NEURON_NRT_FAIL_HOST_MEM_ALLOC:
		snprintf(diag, BACKEND_DIAG_LEN, "out of host memory (%s: %s)",
		    fn, name);
		return (BACKEND_ENOMEM);
	case NEURON_NRT_RESOURCE:
		snprintf(diag, BACKEND_DIAG_LEN, "out of device resources on "
		    "NeuronCore %u (%s: %s)", b->cores[core], fn, name);
		return (BACKEND_ELIMIT);
	}
	snprintf(diag, BACKEND_DIAG_LEN, "%s failed: %s", fn, name);
	return (BACKEND_ERUNTIME);
}

/* Initialize the runtime once; a failure is retried on the next call. */
static int
backend_neuron_rt(struct backend_neuron *b, long core, char *diag)
{
	int	st = 0;

	pthread_mutex_lock(&b->lock);
	if (!b->inited) {
		st = b->nrt.init(NEURON_NRT_FRAMEWORK_NO_FW, "", "");
		if (st == NEURON_NRT_SUCCESS) {
			b->inited = 1;
			log_info("neuron: runtime initialized on NeuronCores %s",
			    b->visible);
		}
	}
	pthread_mutex_unlock(&b->lock);
	if (st != NEURON_NRT_SUCCESS)
		return (backend_neuron_nrt_fail(b, st, core, NEURON_CALL_INIT,
		    "nrt_init", diag));
	return (0);
}

/* "<prefix>: <the end of log>", cut at a line start when it can be. */
static void
backend_neuron_diag_log(char *diag, const char *prefix, const char *log,
    size_t len)
{
	size_t		 room, plen;
	const char	*s, *nl;

	while (len > 0 && (log[len - 1] == '\n' || log[len - 1] == ' '))
		len--;
	plen = strlen(prefix);
	if (len == 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "%s (no output)", prefix);
		return;
	}
	room = BACKEND_DIAG_LEN - plen - 8;
	s = log;
	if (len > room) {
		s = log + len - room;
		if ((nl = memchr(s, '\n', len - (size_t)(s - log))) != NULL &&
		    nl + 1 < log + len && (size_t)(nl - s) < room / 2)
			s = nl + 1;
		snprintf(diag, BACKEND_DIAG_LEN, "%s: ...%.*s", prefix,
		    (int)(log + len - s), s);
	} else
		snprintf(diag, BACKEND_DIAG_LEN, "%s: %.*s", prefix, (int)len,
		    s);
}

/* Read the regular file dir/name (no symlinks) into a malloc'd buffer. */
static int
backend_neuron_file_read(const char *dir, const char *name, void **out,
    size_t *len, char *err, size_t errlen)
{
	struct stat	 st;
	char		*buf;
	size_t		 got = 0;
	ssize_t		 n;
	int		 dfd, fd;

	*out = NULL;
	*len = 0;
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "cannot open '%s': %s", dir,
		    strerror(errno));
		return (-1);
	}
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd == -1) {
		snprintf(err, errlen, "%s '%s'", errno == ENOENT ? "no file" :
		    strerror(errno), name);
		return (-1);
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (unsigned long long)st.st_size > NEURON_MAX_FILE) {
		snprintf(err, errlen, "'%s' is not a regular file of at most "
		    "%llu bytes", name, NEURON_MAX_FILE);
		close(fd);
		return (-1);
	}
	buf = xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		snprintf(err, errlen, "cannot read '%s'", name);
		free(buf);
		return (-1);
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return (0);
}

static int
backend_neuron_file_write(const char *dir, const char *name, const void *a,
    size_t alen, const void *bb, size_t blen, char *err, size_t errlen)
{
	char	path[PATH_MAX];
	int	fd, ok;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1) {
		snprintf(err, errlen, "cannot create '%.300s': %s", path,
		    strerror(errno));
		return (-1);
	}
	ok = (alen == 0 || write(fd, a, alen) == (ssize_t)alen) &&
	    (blen == 0 || write(fd, bb, blen) == (ssize_t)blen);
	if (close(fd) == -1)
		ok = 0;
	if (!ok) {
		snprintf(err, errlen, "cannot write '%.300s': %s", path,
		    strerror(errno));
		return (-1);
	}
	return (0);
}

/* A private directory <workdir>/<what>.XXXXXX (mode 0700). */
static int
backend_neuron_tmpdir(struct backend_neuron *b, const char *what, char *path,
    size_t len, char *diag)
{
	snprintf(path, len, "%s/%s.XXXXXX", b->workdir, what);
	if (mkdtemp(path) == NULL) {
		snprintf(diag, BACKEND_DIAG_LEN, "cannot create a directory "
		    "in '%s': %s", b->workdir, strerror(errno));
		return (BACKEND_ERUNTIME);
	}
	return (0);
}

static void
backend_neuron_tmpdir_remove(const char *path)
{
	if (neuron_proc_rmtree(path) != 0)
		log_warn("neuron: cannot remove '%s': %s", path,
		    strerror(errno));
}

/* ------------------------------------------------------------ open */

/* Remove what a crashed nkid left in the work directory. */
static void
backend_neuron_workdir_clean(const char *dir)
{
	DIR		*d;
	struct dirent	*e;
	char		 path[PATH_MAX];

	if ((d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "compile.", 8) != 0 &&
		    strncmp(e->d_name, "profile.", 8) != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		backend_neuron_tmpdir_remove(path);
	}
	closedir(d);
}

/* Run `neuronx-cc --version`; keep its version line. */
static int
backend_neuron_compiler_probe(struct backend_neuron *b, char *err,
    size_t errlen)
{
	struct neuron_proc		p;
	struct neuron_proc_result	r;
	char				**argv, how[128], *line, *save, *last;
	int				 ok;

	argv = neuron_cmd_version_argv(b->compiler);
	memset(&p, 0, sizeof p);
	p.argv = argv;
	p.timeout_ms = b->timeout_ms < NEURON_VERSION_TIMEOUT ?
	    b->timeout_ms : NEURON_VERSION_TIMEOUT;
	p.grace_ms = b->grace_ms;
	p.log_max = 4096;
	if (neuron_proc_run(&p, &r, err, errlen) != 0) {
		neuron_proc_argv_free(argv);
		return (-1);
	}
	neuron_proc_argv_free(argv);
	if (!(ok = neuron_proc_ok(&r))) {
		neuron_proc_describe(&r, p.timeout_ms, how, sizeof how);
		snprintf(err, errlen, "'%s --version' %s: %.300s", b->compiler,
		    how, r.log);
		neuron_proc_result_release(&r);
		return (-1);
	}
	/* The line that names the version, else the first one. */
	for (line = strtok_r(r.log, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		while (*line == ' ' || *line == '\t')
			line++;
		if (*line == '\0')
			continue;
		if (b->compiler_version[0] == '\0' ||
		    strstr(line, "version") != NULL)
			snprintf(b->compiler_version,
			    sizeof b->compiler_version, "%s", line);
		if (strstr(line, "version") != NULL)
			break;
	}
	neuron_proc_result_release(&r);
	if (b->compiler_version[0] == '\0') {
		snprintf(err, errlen, "'%s --version' printed nothing",
		    b->compiler);
		return (-1);
	}
	last = strrchr(b->compiler_version, ' ');
	snprintf(b->compiler_number, sizeof b->compiler_number, "%.63s",
	    last != NULL ? last + 1 : b->compiler_version);
	return (0);
}

/* Which NeuronCores nkid drives: NEURON_RT_VISIBLE_CORES in nkid's
 * environment, else neuron.visible_cores, else every core. */
static int
backend_neuron_cores(struct backend_neuron *b, const struct config *cfg,
    char *err, size_t errlen)
{
	const char	*env = getenv("NEURON_RT_VISIBLE_CORES");
	const char	*spec = NULL;
	char		 perr[256];
	unsigned	 total = b->total, i;

	if (env != NULL && *env != '\0') {
		if (cfg->neuron_visible_cores[0] != '\0' &&
		    strcmp(env, cfg->neuron_visible_cores) != 0) {
			snprintf(err, errlen, "NEURON_RT_VISIBLE_CORES='%s' in "
			    "nkid's environment disagrees with "
			    "neuron.visible_cores '%s'", env,
			    cfg->neuron_visible_cores);
			return (-1);
		}
		spec = env;
	} else if (cfg->neuron_visible_cores[0] != '\0')
		spec = cfg->neuron_visible_cores;
	if (spec != NULL) {
		if (neuron_cmd_cores_parse(spec, total, &b->cores, &b->ncores,
		    perr, sizeof perr) != 0) {
			if (strcmp(b->cores_from, "neuron-ls") == 0)
				snprintf(err, errlen, "visible cores: %s (%u "
				    "NeuronCores on %u device%s, from %s)",
				    perr, total, b->ndevices,
				    b->ndevices == 1 ? "" : "s",
				    cfg->neuron_ls);
			else
				snprintf(err, errlen, "visible cores: %s (%u "
				    "device%s x %u cores, "
				    "neuron.cores_per_device)", perr,
				    b->ndevices, b->ndevices == 1 ? "" : "s",
				    cfg->neuron_cores_per_device);
			return (-1);
		}
	} else {
		b->ncores = total;
		b->cores = xcalloc(total, sizeof *b->cores);
		for (i = 0; i < total; i++)
			b->cores[i] = i;
	}
	neuron_cmd_cores_format(b->cores, b->ncores, b->visible,
	    sizeof b->visible);
	return (0);
}

/*
 * Run `neuron-ls --json-output` (neuron.ls) and parse what it prints.
 * Returns 0 with *ls filled; 1 when neuron-ls cannot be run, fails or
 * times out (logged: the caller counts device files instead); -1 with a
 * message in err naming neuron-ls when it succeeds with output nkid
 * cannot read.
 */
static int
backend_neuron_ls(struct backend_neuron *b, const struct config *cfg,
    struct neuron_ls *ls, char *err, size_t errlen)
{
	struct neuron_proc		p;
	struct neuron_proc_result	r;
	char				**argv, perr[256], how[160];
	int				 rc;

	memset(ls, 0, sizeof *ls);
	argv = neuron_cmd_ls_argv(cfg->neuron_ls);
	memset(&p, 0, sizeof p);
	p.argv = argv;
	p.timeout_ms = NEURON_LS_TIMEOUT;
	p.grace_ms = b->grace_ms < 1000 ? b->grace_ms : 1000;
	p.log_max = NEURON_CMD_LS_MAX_OUTPUT;
	p.stderr_apart = 1;	/* the log is the JSON alone */
	if (neuron_proc_run(&p, &r, perr, sizeof perr) != 0) {
		log_info("neuron: %s (neuron.ls): counting the devices that "
		    "match '%s' instead, %u cores each "
		    "(neuron.cores_per_device)", perr, cfg->neuron_device_glob,
		    cfg->neuron_cores_per_device);
		neuron_proc_argv_free(argv);
		return (1);
	}
	neuron_proc_argv_free(argv);
	if (!neuron_proc_ok(&r)) {
		neuron_proc_describe(&r, p.timeout_ms, how, sizeof how);
		log_warn("neuron: '%s --json-output' (neuron.ls) %s%s%.*s: "
		    "counting the devices that match '%s' instead, %u cores "
		    "each (neuron.cores_per_device)", cfg->neuron_ls, how,
		    r.err_len > 0 ? ": " : "",
		    (int)strcspn(r.err != NULL ? r.err : "", "\n"),
		    r.err != NULL ? r.err : "", cfg->neuron_device_glob,
		    cfg->neuron_cores_per_device);
		rc = 1;
	} else if (r.log_total > NEURON_CMD_LS_MAX_OUTPUT) {
		snprintf(err, errlen, "'%s --json-output' (neuron.ls) printed "
		    "%zu bytes, more than the %d nkid reads", cfg->neuron_ls,
		    r.log_total, NEURON_CMD_LS_MAX_OUTPUT);
		rc = -1;
	} else if (neuron_cmd_ls_parse(r.log, r.log_len, ls, perr,
	    sizeof perr) != 0) {
		snprintf(err, errlen, "'%s --json-output' (neuron.ls) %s",
		    cfg->neuron_ls, perr);
		rc = -1;
	} else
		rc = 0;
	neuron_proc_result_release(&r);
	return (rc);
}

/* The instance type the driver reports for the first device under the
 * sysfs tree root, into buf; -1 when there is none. */
static int
backend_neuron_sysfs_instance(const char *root, char *buf, size_t len)
{
	glob_t	 g;
	char	 pat[PATH_MAX];
	FILE	*f = NULL;
	int	 rc = -1;

	snprintf(pat, sizeof pat, "%s/neuron*/%s", root, NEURON_SYSFS_INSTANCE);
	memset(&g, 0, sizeof g);
	if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0 &&
	    (f = fopen(g.gl_pathv[0], "re")) != NULL &&
	    fgets(buf, (int)len, f) != NULL) {
		buf[strcspn(buf, "\r\n")] = '\0';
		rc = buf[0] != '\0' ? 0 : -1;
	}
	if (f != NULL)
		fclose(f);
	globfree(&g);
	return (rc);
}

/*
 * The compile target when a request names none: neuron.target when set;
 * else the instance type in the driver's sysfs (Trn1, Inf2, ...); else
 * what neuron-ls's devices imply (ls NULL: neuron-ls was not used); else
 * NEURON_TARGET_DEFAULT.
 */
static void
backend_neuron_target(struct backend_neuron *b, const struct config *cfg,
    const struct neuron_ls *ls)
{
	const char	*t;
	char		 it[64];

	if (cfg->neuron_target[0] != '\0') {
		b->target = xstrdup(cfg->neuron_target);
		b->target_from = "neuron.target";
	} else if (backend_neuron_sysfs_instance(NEURON_SYSFS, it,
	    sizeof it) == 0 && (t = neuron_cmd_target_of_instance(it)) !=
	    NULL) {
		b->target = xstrdup(t);
		b->target_from = "sysfs";
	} else if (ls != NULL && (t = neuron_cmd_target_of_ls(ls)) != NULL) {
		b->target = xstrdup(t);
		b->target_from = "neuron-ls";
	} else {
		b->target = xstrdup(NEURON_TARGET_DEFAULT);
		b->target_from = "default";
	}
}

static void
backend_neuron_free(struct backend_neuron *b)
{
	if (b == NULL)
		return;
	if (b->inited)
		b->nrt.close();
	neuron_nrt_close(&b->nrt);
	pthread_mutex_destroy(&b->lock);
	free(b->compiler);
	free(b->profiler);
	free(b->runtime);
	free(b->target);
	free(b->workdir);
	free(b->cores);
	free(b);
}

static int
backend_neuron_open(const struct config *cfg, void **state, char *err,
    size_t errlen)
{
	struct backend_neuron		*b;
	struct neuron_nrt_version	 v;
	struct neuron_ls		 ls;
	glob_t				 g;
	char				 rterr[512] = "", deverr[512] = "";
	int				 rc, with_ls;

	b = xcalloc(1, sizeof *b);
	pthread_mutex_init(&b->lock, NULL);
	b->compiler = xstrdup(cfg->neuron_compiler);
	b->profiler = xstrdup(cfg->neuron_profiler);
	b->runtime = xstrdup(cfg->neuron_runtime);
	b->timeout_ms = cfg->neuron_compile_timeout_ms;
	b->grace_ms = cfg->neuron_kill_grace_ms;
	b->log_max = cfg->neuron_log_max_bytes;

	/* Devices and runtime first: name everything that is missing. The
	 * devices and their cores come from neuron-ls, else from counting
	 * device files. */
	if ((rc = backend_neuron_ls(b, cfg, &ls, err, errlen)) < 0)
		goto fail;
	if ((with_ls = rc == 0)) {
		b->ndevices = ls.ndevices;
		b->total = ls.ncores;
		b->cores_from = "neuron-ls";
		if (b->ndevices == 0)
			snprintf(deverr, sizeof deverr, "'%s --json-output' "
			    "(neuron.ls) lists no Neuron devices",
			    cfg->neuron_ls);
	} else {
		memset(&g, 0, sizeof g);
		rc = glob(cfg->neuron_device_glob, 0, NULL, &g);
		b->ndevices = rc == 0 ? (unsigned)g.gl_pathc : 0;
		globfree(&g);
		b->total = b->ndevices * cfg->neuron_cores_per_device;
		b->cores_from = "device_glob";
		if (b->ndevices == 0)
			snprintf(deverr, sizeof deverr, "no Neuron devices "
			    "match '%s' (is the aws-neuronx-dkms driver "
			    "loaded?)", cfg->neuron_device_glob);
	}
	backend_neuron_target(b, cfg, with_ls ? &ls : NULL);
	if (neuron_nrt_open(&b->nrt, b->runtime, rterr, sizeof rterr) != 0 ||
	    deverr[0] != '\0') {
		snprintf(err, errlen, "%s%s%s", rterr, rterr[0] != '\0' &&
		    deverr[0] != '\0' ? "; " : "", deverr);
		goto fail;
	}
	if (backend_neuron_cores(b, cfg, err, errlen) != 0)
		goto fail;
	memset(&v, 0, sizeof v);
	if (b->nrt.get_version(&v, sizeof v) == NEURON_NRT_SUCCESS)
		snprintf(b->runtime_version, sizeof b->runtime_version,
		    "%llu.%llu.%llu.%llu%s%s", (unsigned long long)v.major,
		    (unsigned long long)v.minor, (unsigned long long)v.patch,
		    (unsigned long long)v.maintenance, v.detail[0] ? " " : "",
		    v.detail[0] ? v.detail : "");
	else
		snprintf(b->runtime_version, sizeof b->runtime_version,
		    "unknown");
	if (backend_neuron_compiler_probe(b, rterr, sizeof rterr) != 0) {
		snprintf(err, errlen, "cannot use the compiler (neuron.compiler)"
		    ": %s", rterr);
		goto fail;
	}
	b->workdir = xasprintf("%s/neuron", cfg->state_dir);
	if (mkdir(b->workdir, 0700) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create '%s': %s", b->workdir,
		    strerror(errno));
		goto fail;
	}
	backend_neuron_workdir_clean(b->workdir);
	/* The runtime reads it at nrt_init: set it while nkid starts, once
	 * nothing can fail any more. */
	setenv("NEURON_RT_VISIBLE_CORES", b->visible, 1);
	log_info("neuron: %u device%s with %u NeuronCores (from %s), "
	    "NeuronCores %s, compile target %s (from %s), compiler '%s' (%s), "
	    "runtime '%s' %s", b->ndevices, b->ndevices == 1 ? "" : "s",
	    b->total, b->cores_from, b->visible, b->target, b->target_from,
	    b->compiler, b->compiler_version, b->runtime, b->runtime_version);
	*state = b;
	return (0);
fail:
	backend_neuron_free(b);
	return (BACKEND_EOPEN);
}

static void
backend_neuron_close(void *state)
{
	backend_neuron_free(state);
}

static unsigned
backend_neuron_probe(void *state)
{
	struct backend_neuron	*b = state;

	return ((unsigned)b->ncores);
}

static const char *
backend_neuron_compiler_version(void *state)
{
	struct backend_neuron	*b = state;

	return (b->compiler_version);
}

static void
backend_neuron_versions(void *state, void (*add)(void *, const char *,
    const char *), void *arg)
{
	struct backend_neuron	*b = state;
	char			 n[32];

	add(arg, "neuronx-cc", b->compiler_number);
	add(arg, "runtime", b->runtime_version);
	add(arg, "cores", b->visible);
	snprintf(n, sizeof n, "%u", b->ndevices);
	add(arg, "devices", n);
	add(arg, "cores_from", b->cores_from);
	add(arg, "target", b->target);
	add(arg, "target_from", b->target_from);
}

/* ------------------------------------------------------------ compile */

static int
backend_neuron_compile_opts(void *state, const void *ir, size_t len,
    const char *target, const char *options, void **image, size_t *image_len,
    char *diag)
{
	struct backend_neuron		*b = state;
	struct neuron_proc		 p;
	struct neuron_proc_result	 r;
	char				 dir[PATH_MAX], how[160], prefix[256];
	char				 err[512], **argv = NULL;
	int				 error;

	*image = NULL;
	*image_len = 0;
	if (target == NULL || *target == '\0')
		target = b->target;
	if (neuron_cmd_compile_argv(b->compiler, target, options, &argv, err,
	    sizeof err) != 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "%s", err);
		return (BACKEND_EINVAL);
	}
	if ((error = backend_neuron_tmpdir(b, "compile", dir, sizeof dir,
	    diag)) != 0) {
		neuron_proc_argv_free(argv);
		return (error);
	}
	if (backend_neuron_file_write(dir, NEURON_CMD_PENGUIN, ir, len, NULL,
	    0, err, sizeof err) != 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "%s", err);
		error = BACKEND_ERUNTIME;
		goto out;
	}
	memset(&p, 0, sizeof p);
	p.argv = argv;
	p.cwd = dir;
	p.timeout_ms = b->timeout_ms;
	p.grace_ms = b->grace_ms;
	p.log_max = b->log_max;
	if (neuron_proc_run(&p, &r, err, sizeof err) != 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "%s", err);
		error = BACKEND_ERUNTIME;
		goto out;
	}
	log_debug("neuron: %s compile for %s: %zu bytes of log",
	    b->compiler, target, r.log_total);
	neuron_proc_describe(&r, p.timeout_ms, how, sizeof how);
	if (r.timed_out) {
		snprintf(prefix, sizeof prefix, "%s %s (neuron."
		    "compile_timeout_ms)", b->compiler, how);
		backend_neuron_diag_log(diag, prefix, r.log, r.log_len);
		error = BACKEND_ELIMIT;
	} else if (!neuron_proc_ok(&r)) {
		snprintf(prefix, sizeof prefix, "%s %s", b->compiler, how);
		backend_neuron_diag_log(diag, prefix, r.log, r.log_len);
		/* A compiler that reports an error judged the kernel; one
		 * that crashed did not. */
		error = WIFEXITED(r.status) ? BACKEND_EINVAL : BACKEND_ERUNTIME;
		log_debug("neuron: compiler log:\n%s", r.log);
	} else if (backend_neuron_file_read(dir, NEURON_CMD_NEFF, image,
	    image_len, err, sizeof err) != 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "%s exited with status 0 but "
		    "left no usable NEFF: %s", b->compiler, err);
		error = BACKEND_ERUNTIME;
	} else if (*image_len == 0) {
		free(*image);
		*image = NULL;
		snprintf(diag, BACKEND_DIAG_LEN, "%s wrote an empty %s",
		    b->compiler, NEURON_CMD_NEFF);
		error = BACKEND_ERUNTIME;
	} else
		error = 0;
	neuron_proc_result_release(&r);
out:
	backend_neuron_tmpdir_remove(dir);
	neuron_proc_argv_free(argv);
	return (error);
}

static int
backend_neuron_compile(void *state, const void *ir, size_t len, void **image,
    size_t *image_len, char *diag)
{
	return (backend_neuron_compile_opts(state, ir, len, "", "", image,
	    image_len, diag));
}

/* ------------------------------------------------------------ load */

static const struct sim_sig *
backend_neuron_param(const struct backend_program *bp, size_t i)
{
	const struct neuron_program	*p = bp->impl;

	return (i < p->nin ? &p->in[i] : NULL);
}

static const struct sim_sig *
backend_neuron_output(const struct backend_program *bp, size_t i)
{
	const struct neuron_program	*p = bp->impl;

	return (i < p->nout ? &p->out[i] : NULL);
}

static int
backend_neuron_dtype(int nrt_dtype)
{
	switch (nrt_dtype) {
	case NEURON_NRT_DTYPE_FLOAT32:
		return (SIM_DT_FLOAT32);
	case NEURON_NRT_DTYPE_FLOAT16:
		return (SIM_DT_FLOAT16);
	case NEURON_NRT_DTYPE_BFLOAT16:
		return (SIM_DT_BFLOAT16);
	case NEURON_NRT_DTYPE_INT8:
		return (SIM_DT_INT8);
	case NEURON_NRT_DTYPE_INT16:
		return (SIM_DT_INT16);
	case NEURON_NRT_DTYPE_INT32:
		return (SIM_DT_INT32);
	case NEURON_NRT_DTYPE_UINT8:
		return (SIM_DT_UINT8);
	case NEURON_NRT_DTYPE_UINT16:
		return (SIM_DT_UINT16);
	case NEURON_NRT_DTYPE_UINT32:
		return (SIM_DT_UINT32);
	case NEURON_NRT_DTYPE_FP8_E4:
		return (SIM_DT_FP8_E4M3);
	case NEURON_NRT_DTYPE_FP8_E5:
		return (SIM_DT_FP8_E5M2);
	}
	return (SIM_DT_INVALID);
}

/* Fill sig from one tensor of the model's tensor info. */
static int
backend_neuron_sig(const struct neuron_nrt_tensor_info *ti, struct sim_sig *sig,
    char *diag)
{
	const char	*dn;
	uint64_t	 n = 1;
	uint32_t	 i;

	sig->name = strndup(ti->name, sizeof ti->name);
	if (sig->name == NULL)
		fatal("out of memory");
	sig->dtype = backend_neuron_dtype(ti->dtype);
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
backend_neuron_program_free(struct backend_neuron *b, struct neuron_program *p)
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
backend_neuron_model(struct backend_neuron *b, struct neuron_program *p,
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
static int
backend_neuron_load(void *state, const void *image, size_t len,
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
	if ((error = backend_neuron_model(b, p, 0, &m, diag)) != 0)
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
			error = backend_neuron_sig(ti, &p->in[p->nin++], diag);
		} else if (ti->usage == NEURON_NRT_USAGE_OUTPUT) {
			p->out_bytes[p->nout] = ti->size;
			error = backend_neuron_sig(ti, &p->out[p->nout++],
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
	p->bp.param = backend_neuron_param;
	p->bp.output = backend_neuron_output;
	p->bp.impl = p;
	*out = &p->bp;
	return (0);
fail:
	if (info != NULL)
		b->nrt.free_model_tensor_info(info);
	backend_neuron_program_free(b, p);
	return (error);
}

static void
backend_neuron_unload(void *state, struct backend_program *bp)
{
	if (bp == NULL)
		return;
	backend_neuron_program_free(state, bp->impl);
}

/* ------------------------------------------------------------ execute */

/* x's inputs (and its outputs unless inputs_only) match p. */
static int
backend_neuron_args_check(const struct neuron_program *p,
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
backend_neuron_run_release(struct backend_neuron *b, struct neuron_run *r)
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

/* Allocate the tensors of p on core and put them in two sets. */
static int
backend_neuron_run_prepare(struct backend_neuron *b,
    const struct neuron_program *p, unsigned core, struct neuron_run *r,
    char *diag)
{
	size_t	i;
	int	st;

	memset(r, 0, sizeof *r);
	r->nin = p->nin;
	r->nout = p->nout;
	r->tin = xcalloc(p->nin + 1, sizeof *r->tin);
	r->tout = xcalloc(p->nout, sizeof *r->tout);
	if ((st = b->nrt.allocate_tensor_set(&r->sin)) != 0 ||
	    (st = b->nrt.allocate_tensor_set(&r->sout)) != 0)
		goto fail;
	for (i = 0; i < p->nin; i++) {
		if ((st = b->nrt.tensor_allocate(NEURON_NRT_PLACEMENT_DEVICE,
		    (int)core, p->in_bytes[i], p->in[i].name, &r->tin[i])) !=
		    0 || (st = b->nrt.add_tensor_to_tensor_set(r->sin,
		    p->in[i].name, r->tin[i])) != 0)
			goto fail;
	}
	for (i = 0; i < p->nout; i++) {
		if ((st = b->nrt.tensor_allocate(NEURON_NRT_PLACEMENT_DEVICE,
		    (int)core, p->out_bytes[i], p->out[i].name, &r->tout[i])) !=
		    0 || (st = b->nrt.add_tensor_to_tensor_set(r->sout,
		    p->out[i].name, r->tout[i])) != 0)
			goto fail;
	}
	return (0);
fail:
	backend_neuron_run_release(b, r);
	return (backend_neuron_nrt_fail(b, st, core, NEURON_CALL_OTHER,
	    "nrt_tensor_allocate", diag));
}

/* Write the inputs; inputs without data (benchmark) are zeros. */
static int
backend_neuron_run_write(struct backend_neuron *b,
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
backend_neuron_run_read(struct backend_neuron *b,
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
backend_neuron_outputs_alloc(const struct neuron_program *p,
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
backend_neuron_zeros(const struct neuron_program *p)
{
	size_t	i, n = 1;

	for (i = 0; i < p->nin; i++) {
		if (p->in_bytes[i] > n)
			n = p->in_bytes[i];
	}
	return (xcalloc(1, n));
}

static double
backend_neuron_us(const struct timespec *a, const struct timespec *b)
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
backend_neuron_run(struct backend_neuron *b, struct neuron_program *p,
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
	if ((error = backend_neuron_args_check(p, x, 0, diag)) != 0)
		return (error);
	if ((error = backend_neuron_model(b, p, core, &m, diag)) != 0)
		return (error);
	if ((error = backend_neuron_run_prepare(b, p, core, &r, diag)) != 0)
		return (error);
	zeros = backend_neuron_zeros(p);
	backend_neuron_outputs_alloc(p, x);
	for (i = 0; i < warmup + iters; i++) {
		if (x->cancel != NULL && *x->cancel) {
			snprintf(diag, BACKEND_DIAG_LEN, "cancelled");
			error = BACKEND_ECANCELED;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if ((error = backend_neuron_run_write(b, p, core, &r, x, zeros,
		    diag)) != 0)
			break;
		if ((st = b->nrt.execute(m, r.sin, r.sout)) != 0) {
			error = backend_neuron_nrt_fail(b, st, core,
			    NEURON_CALL_EXEC, "nrt_execute", diag);
			break;
		}
		if ((error = backend_neuron_run_read(b, p, core, &r, x,
		    diag)) != 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (samples_us != NULL && i >= warmup)
			samples_us[i - warmup] = backend_neuron_us(&t0, &t1);
	}
	free(zeros);
	backend_neuron_run_release(b, &r);
	if (error != 0)
		sim_tensors_release(x->outputs, x->noutputs);
	return (error);
}

static int
backend_neuron_execute(void *state, const struct backend_program *bp,
    unsigned core, const struct backend_exec *x, char *diag)
{
	return (backend_neuron_run(state, bp->impl, core, x, 0, 1, NULL,
	    diag));
}

static int
backend_neuron_benchmark(void *state, const struct backend_program *bp,
    unsigned core, const struct backend_exec *x, unsigned warmup,
    unsigned iters, double *samples_us, char *diag)
{
	if (iters == 0) {
		snprintf(diag, BACKEND_DIAG_LEN, "iters must be at least 1");
		return (BACKEND_EARG);
	}
	return (backend_neuron_run(state, bp->impl, core, x, warmup, iters,
	    samples_us, diag));
}

static int
backend_neuron_simulate(void *state, const struct backend_program *bp,
    const struct backend_exec *x, char *diag)
{
	snprintf(diag, BACKEND_DIAG_LEN, "the neuron backend does not "
	    "simulate: simulate format 'nkir/1' kernels with backend 'cpu'");
	return (BACKEND_EFORMAT);
}

/* ------------------------------------------------------------ profile */

/* numpy's descr of a dtype, nkid's convention for bf16 and fp8. */
static const char *
backend_neuron_npy_descr(int dtype)
{
	switch (dtype) {
	case SIM_DT_FLOAT32:
		return ("<f4");
	case SIM_DT_FLOAT16:
		return ("<f2");
	case SIM_DT_BFLOAT16:
		return ("<V2");
	case SIM_DT_INT8:
		return ("|i1");
	case SIM_DT_INT16:
		return ("<i2");
	case SIM_DT_INT32:
		return ("<i4");
	case SIM_DT_UINT8:
		return ("|u1");
	case SIM_DT_UINT16:
		return ("<u2");
	case SIM_DT_UINT32:
		return ("<u4");
	case SIM_DT_BOOL:
		return ("|b1");
	}
	return ("<V1");
}

/* Write t as a version 1.0 .npy file dir/name. */
static int
backend_neuron_npy_write(const char *dir, const char *name,
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
	    backend_neuron_npy_descr(t->dtype), shape);
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
backend_neuron_tool(struct backend_neuron *b, char **argv, const char *cwd,
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
backend_neuron_env_core(unsigned neuron_core)
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
static int
backend_neuron_profile(void *state, const struct backend_program *bp,
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
	if ((error = backend_neuron_args_check(p, x, 1, diag)) != 0)
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
			if (backend_neuron_npy_write(dir, pairs[2 * i + 1],
			    &x->inputs[i], err, sizeof err) != 0) {
				npairs = i + 1;
				goto ioerr;
			}
		}
		npairs = x->ninputs;
	}
	argv = neuron_cmd_capture_argv(b->profiler, NEURON_CMD_NEFF,
	    "profile.ntff", profile_nth, num_execs, pairs, npairs);
	env = backend_neuron_env_core(b->cores[core]);
	if ((error = backend_neuron_tool(b, argv, dir, env, "capture",
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
		if ((error = backend_neuron_tool(b, argv, dir, env, "view",
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
static const char *
backend_neuron_default_target(void *state)
{
	struct backend_neuron	*b = state;

	return (b->target);
}

/* The NeuronCore behind nkid core core. */
static unsigned
backend_neuron_device_core(void *state, unsigned core)
{
	struct backend_neuron	*b = state;

	return (b->cores[core]);
}

const struct backend_ops backend_neuron_ops = {
	.name = "neuron",
	.format = NEURON_FORMAT,
	.open = backend_neuron_open,
	.close = backend_neuron_close,
	.probe = backend_neuron_probe,
	.compiler_version = backend_neuron_compiler_version,
	.versions = backend_neuron_versions,
	.compile = backend_neuron_compile,
	.compile_opts = backend_neuron_compile_opts,
	.load = backend_neuron_load,
	.unload = backend_neuron_unload,
	.execute = backend_neuron_execute,
	.simulate = backend_neuron_simulate,
	.benchmark = backend_neuron_benchmark,
	.profile = backend_neuron_profile,
	.device_core = backend_neuron_device_core,
	.default_target = backend_neuron_default_target,
};
