/* backend_neuron.c: the neuron backend: neuronx-cc compiles, libnrt runs NEFFs on NeuronCores, neuron-profile captures. */
#include "daemon/neuron_impl.h"

/* ------------------------------------------------------------ helpers */

/*
 * Map a runtime status of a call made for nkid core core to a backend
 * error with a message in diag; the busy statuses name the core (nkid's
 * index and the NeuronCore).
 */
int
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
int
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
void
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
int
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

int
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
int
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

void
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
backend_neuron_compile(void *state, const void *ir, size_t len,
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
	.load = neuron_run_load,
	.unload = neuron_run_unload,
	.execute = neuron_run_execute,
	.simulate = neuron_run_simulate,
	.benchmark = neuron_run_benchmark,
	.profile = neuron_run_profile,
	.device_core = backend_neuron_device_core,
	.default_target = backend_neuron_default_target,
};
