/* check_backend_neuron.c: the neuron backend against the test doubles of neuronx-cc, neuron-profile, neuron-ls and libnrt (tests/neuron/). */
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/neuron_cmd.h"
#include "daemon/neuron_proc.h"
#include "tests/unit/check_main.h"

/* Where the doubles are: the scripts under $TOP/tests/neuron (TOP: the
 * working directory by default, as scripts/check.sh runs the tests), the
 * library beside this test binary. */
static char	top[1024], fakelib[1200], fakecc[1200], fakeprof[1200];
static char	fakels[1200];
/* Per test: a private directory with devices, state and a busy file. */
static char	T[256], busy[300], argvlog[300], pids[300];

struct fake_nrt_counters {
	long	inits, closes, loads, unloads, executes, live_tensors,
		live_sets, live_models;
};

static const char penguin_ok[] =
    "# a stand-in for the Penguin IR NKI's tracer writes\n"
    "# fake-neff: input a float32 4 2\n"
    "# fake-neff: input b int32 3\n"
    "# fake-neff: output out float32 4 2\n"
    "# fake-neff: output out2 int32 3\n"
    "def kernel(a, b): pass\n";

static void
paths_init(const char *argv0)
{
	const char	*env = getenv("TOP");
	char		 self[1024], *slash;
	ssize_t		 n;

	if (env != NULL)
		snprintf(top, sizeof top, "%s", env);
	else if (getcwd(top, sizeof top) == NULL)
		abort();
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		snprintf(self, sizeof self, "%s", argv0);
	else
		self[n] = '\0';
	if ((slash = strrchr(self, '/')) != NULL)
		*slash = '\0';
	snprintf(fakelib, sizeof fakelib, "%s/libfake_nrt.so", self);
	snprintf(fakecc, sizeof fakecc, "%s/tests/neuron/fake-neuronx-cc", top);
	snprintf(fakeprof, sizeof fakeprof, "%s/tests/neuron/fake-neuron-profile",
	    top);
	snprintf(fakels, sizeof fakels, "%s/tests/neuron/fake-neuron-ls", top);
}

static void
file_put(const char *path, const char *text)
{
	FILE	*f = fopen(path, "w");

	ck_assert_msg(f != NULL, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

static char *
file_get(const char *path)
{
	static char	buf[65536];
	FILE		*f = fopen(path, "r");
	size_t		 n;

	if (f == NULL)
		return (NULL);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (buf);
}

static void
setup(void)
{
	char	p[PATH_MAX + 32];

	snprintf(T, sizeof T, "/tmp/check-neuron.XXXXXX");
	ck_assert(mkdtemp(T) != NULL);
	snprintf(p, sizeof p, "%s/dev", T);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/dev/neuron0", T);
	file_put(p, "");
	snprintf(p, sizeof p, "%s/dev/neuron1", T);
	file_put(p, "");
	snprintf(p, sizeof p, "%s/state", T);
	mkdir(p, 0750);
	snprintf(busy, sizeof busy, "%s/busy", T);
	snprintf(argvlog, sizeof argvlog, "%s/argv", T);
	snprintf(pids, sizeof pids, "%s/pids", T);
	unsetenv("NEURON_RT_VISIBLE_CORES");
	setenv("FAKE_NRT_BUSY_FILE", busy, 1);
	setenv("FAKE_NEURONX_CC_ARGV", argvlog, 1);
	setenv("FAKE_NEURONX_CC_PIDS", pids, 1);
	unsetenv("FAKE_NEURON_PROFILE_ARGV");
	unsetenv("FAKE_NEURON_LS_DEVICES");
	unsetenv("FAKE_NEURON_LS_NC");
	unsetenv("FAKE_NEURON_LS_LNC");
	unsetenv("FAKE_NEURON_LS_MODE");
	unsetenv("FAKE_NEURON_LS_ARGV");
}

static void
teardown(void)
{
	neuron_proc_rmtree(T);
}

/* Find the test doubles; stop with a clear message when they are missing. */
static int
suite_begin(int argc, char **argv)
{
	paths_init(argv[0]);
	if (access(fakelib, R_OK) != 0 || access(fakecc, X_OK) != 0) {
		fprintf(stderr, "check_backend_neuron: missing test doubles "
		    "'%s' or '%s' (run from the top of the tree after make "
		    "unit)\n", fakelib, fakecc);
		return (EXIT_FAILURE);
	}
	return (0);
}

CHECK_SUITE("backend_neuron", setup, teardown, suite_begin);
CHECK_TCASE(core, 30);
CHECK_TCASE_NAMED(neuron_ls, "neuron-ls", 60);
CHECK_TCASE(limits, 30);
CHECK_TCASE(errors, 30);
CHECK_TCASE(recovery, 30);

/* Load a config for the doubles; extra is JSON members inside "neuron". */
static void
cfg_make(struct config *cfg, const char *extra)
{
	char	json[16384], err[1024];

	char	cc[1300] = "", rt[1300] = "", dev[400] = "", ls[400] = "";

	/* The doubles, unless extra names something else. */
	if (extra == NULL || strstr(extra, "\"compiler\"") == NULL)
		snprintf(cc, sizeof cc, "\"compiler\": \"%s\", ", fakecc);
	if (extra == NULL || strstr(extra, "\"runtime_library\"") == NULL)
		snprintf(rt, sizeof rt, "\"runtime_library\": \"%s\", ",
		    fakelib);
	if (extra == NULL || strstr(extra, "\"device_glob\"") == NULL)
		snprintf(dev, sizeof dev, "\"device_glob\": "
		    "\"%s/dev/neuron*\", ", T);
	/* No neuron-ls unless extra names one: the device files count. */
	if (extra == NULL || strstr(extra, "\"ls\"") == NULL)
		snprintf(ls, sizeof ls, "\"ls\": \"%s/no-neuron-ls\", ", T);
	snprintf(json, sizeof json,
	    "{ \"backend\": \"neuron\", \"state_dir\": \"%s/state\", "
	    "\"neuron\": { %s%s%s%s\"profiler\": \"%s\"%s%s } }", T, cc,
	    rt, dev, ls, fakeprof, extra != NULL ? ", " : "",
	    extra != NULL ? extra : "");
	ck_assert_msg(config_load_string(cfg, "test", json, strlen(json), NULL,
	    err, sizeof err) == 0, "config: %s", err);
}

static struct backend *
open_ok(const char *extra)
{
	struct config	 cfg;
	struct backend	*b = NULL;
	char		 err[1024];
	int		 rc;

	cfg_make(&cfg, extra);
	rc = backend_open(&cfg, &b, err, sizeof err);
	config_release(&cfg);
	ck_assert_msg(rc == 0, "open: %s", err);
	return (b);
}

static int
open_fail(const char *extra, char *err, size_t errlen)
{
	struct config	 cfg;
	struct backend	*b = NULL;
	int		 rc;

	cfg_make(&cfg, extra);
	rc = backend_open(&cfg, &b, err, errlen);
	config_release(&cfg);
	ck_assert(b == NULL);
	return (rc);
}

/* The work directory holds no compile.* or profile.* directory. */
static void
workdir_empty(void)
{
	char		 p[PATH_MAX + 16];
	DIR		*d;
	struct dirent	*e;

	snprintf(p, sizeof p, "%s/state/neuron", T);
	d = opendir(p);
	ck_assert_msg(d != NULL, "no work directory %s", p);
	while ((e = readdir(d)) != NULL)
		ck_assert_msg(e->d_name[0] == '.', "left behind: %s/%s", p,
		    e->d_name);
	closedir(d);
}

/*
 * penguin_ok's inputs, a [4, 2] float32 and b [3] int32, with the data a and
 * bb (both NULL: shapes only, the backend supplies zeros), executed into its
 * two outputs.
 */
struct penguin_exec {
	struct sim_tensor	in[2], out[2];
	struct backend_exec	x;
};

static void
penguin_exec_init(struct penguin_exec *e, float *a, int32_t *bb)
{
	memset(e, 0, sizeof *e);
	e->in[0].dtype = SIM_DT_FLOAT32;
	e->in[0].rank = 2;
	e->in[0].shape[0] = 4;
	e->in[0].shape[1] = 2;
	e->in[1].dtype = SIM_DT_INT32;
	e->in[1].rank = 1;
	e->in[1].shape[0] = 3;
	if (a != NULL) {
		e->in[0].data = a;
		e->in[0].nbytes = 8 * sizeof *a;
		e->in[1].data = bb;
		e->in[1].nbytes = 3 * sizeof *bb;
	}
	e->x.inputs = e->in;
	e->x.ninputs = 2;
	e->x.outputs = e->out;
	e->x.noutputs = 2;
}

static struct fake_nrt_counters *
counters(void)
{
	void	*h = dlopen(fakelib, RTLD_NOW | RTLD_NOLOAD);
	struct fake_nrt_counters *(*fn)(void);

	ck_assert_msg(h != NULL, "libfake_nrt.so is not loaded");
	*(void **)&fn = dlsym(h, "fake_nrt_counters");
	ck_assert(fn != NULL);
	dlclose(h);
	return (fn());
}

static int
compile_src(struct backend *b, const char *src, void **img, size_t *len,
    char *diag)
{
	return (backend_compile(b, src, strlen(src), "", "", img, len, diag));
}

/* Compile penguin_ok on b and load it: the program, to unload when done. */
static struct backend_program *
penguin_load(struct backend *b)
{
	struct backend_program	*p = NULL;
	char			 diag[BACKEND_DIAG_LEN];
	void			*img;
	size_t			 len;

	ck_assert_int_eq(compile_src(b, penguin_ok, &img, &len, diag), 0);
	ck_assert_msg(b->ops->load(b->state, img, len, &p, diag) == 0,
	    "load: %s", diag);
	free(img);		/* the program holds a copy */
	return (p);
}

/* Is pid gone (or a zombie waiting for its reaper)? */
static int
pid_dead(long pid)
{
	char	 p[64], *s, *rp;

	snprintf(p, sizeof p, "/proc/%ld/stat", pid);
	if ((s = file_get(p)) == NULL)
		return (1);
	rp = strrchr(s, ')');
	return (rp != NULL && (rp[2] == 'Z' || rp[2] == 'X'));
}

/* The pids the fake compiler left of a hang or an orphan: its shell's and
 * its child's. */
static void
compiler_pids(long *sh, long *child)
{
	const char	*s = file_get(pids);

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(sscanf(s, "%ld %ld", sh, child), 2);
}

/* ------------------------------------------------------------ core */

CHECK_TEST(core, test_backend_neuron_compile_argv)
{
	static const char *want[] = { "neuronx-cc", "compile", "--framework",
	    "XLA", "penguin.py", "--internal-tensorizer-opt-level=nki",
	    "--pipeline", "compile", "SaveTemps", "--target", "trn2", "-O1",
	    "--auto-cast", "none", "--tensorizer-options=a b", NULL };
	char	**argv, err[256];
	size_t	  i;

	ck_assert_int_eq(neuron_cmd_compile_argv("neuronx-cc", "trn2",
	    "  -O1\t--auto-cast none '--tensorizer-options=a b' ", &argv, err,
	    sizeof err), 0);
	for (i = 0; want[i] != NULL; i++) {
		ck_assert_ptr_nonnull(argv[i]);
		ck_assert_str_eq(argv[i], want[i]);
	}
	ck_assert_ptr_null(argv[i]);
	neuron_proc_argv_free(argv);

	/* No options: NKI's command line and nothing else. */
	ck_assert_int_eq(neuron_cmd_compile_argv("/opt/nx/neuronx-cc", "inf2",
	    "", &argv, err, sizeof err), 0);
	for (i = 0; argv[i] != NULL; i++)
		;
	ck_assert_uint_eq(i, 11);
	ck_assert_str_eq(argv[0], "/opt/nx/neuronx-cc");
	ck_assert_str_eq(argv[10], "inf2");
	neuron_proc_argv_free(argv);

	/* A target is a platform name, never an option or a path. */
	ck_assert_int_eq(neuron_cmd_compile_argv("neuronx-cc", "--output=x",
	    "", &argv, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "invalid compile target"));
	ck_assert_int_eq(neuron_cmd_compile_argv("neuronx-cc", "../trn1",
	    "", &argv, err, sizeof err), -1);
	ck_assert_int_eq(neuron_cmd_compile_argv("neuronx-cc", "TRN1", "",
	    &argv, err, sizeof err), -1);
}
END_TEST

/* A string a parser of the neuron backend must refuse, with its message. */
struct refusal {
	const char	*s;
	size_t		 max;		/* the parser's bound */
	const char	*want;		/* in the message; NULL: any */
};

/* err is what refusing r said. */
static void
refusal_check(const struct refusal *r, int rc, const char *err)
{
	ck_assert_msg(rc == -1, "'%s' was accepted", r->s);
	if (r->want != NULL)
		ck_assert_msg(strstr(err, r->want) != NULL,
		    "'%s': '%s' lacks '%s'", r->s, err, r->want);
}

CHECK_TEST(core, test_backend_neuron_options_split)
{
	static const char *want[] = { "--a", "b c", "d \"e\" $x", "f g", "",
	    "h'i", NULL };
	static const char *inj[] = { ";", "rm", "-rf", "/;", "$(id)", "`id`",
	    "|", "&&", ">x", "${HOME}", NULL };
	static const struct refusal bad[] = {
		{ "-O1 'open", 16, "unterminated" },
		{ "-O1 \"open", 16, NULL },
		{ "-O1 \\", 16, NULL },
		{ "a b c d", 3, "more than 3" },
	};
	char	**v, err[256];
	size_t	  n, i;

	ck_assert_int_eq(neuron_proc_split("--a 'b c' \"d \\\"e\\\" \\$x\" "
	    "f\\ g '' h\"'\"i", 16, &v, &n, err, sizeof err), 0);
	ck_assert_uint_eq(n, 6);
	for (i = 0; want[i] != NULL; i++)
		ck_assert_str_eq(v[i], want[i]);
	ck_assert_ptr_null(v[n]);
	neuron_proc_argv_free(v);

	/* Shell syntax is plain text: nothing is run or expanded. */
	ck_assert_int_eq(neuron_proc_split("; rm -rf /; $(id) `id` | && >x "
	    "${HOME}", 16, &v, &n, err, sizeof err), 0);
	ck_assert_uint_eq(n, 10);
	for (i = 0; inj[i] != NULL; i++)
		ck_assert_str_eq(v[i], inj[i]);
	neuron_proc_argv_free(v);

	ck_assert_int_eq(neuron_proc_split("", 16, &v, &n, err, sizeof err),
	    0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(v[0]);
	neuron_proc_argv_free(v);

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		refusal_check(&bad[i], neuron_proc_split(bad[i].s, bad[i].max,
		    &v, &n, err, sizeof err), err);
}
END_TEST

CHECK_TEST(core, test_backend_neuron_cores_parse)
{
	static const struct refusal bad[] = {
		{ "3-1", 8, NULL },
		{ "1,1", 8, NULL },
		{ "a", 8, NULL },
		{ "1,", 8, NULL },
		{ "0-8", 8, "core 8" },
	};
	unsigned	*c;
	size_t		 n, i;
	char		 err[256], buf[64];

	ck_assert_int_eq(neuron_cmd_cores_parse("0-3,6", 8, &c, &n, err,
	    sizeof err), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(c[4], 6);
	neuron_cmd_cores_format(c, n, buf, sizeof buf);
	ck_assert_str_eq(buf, "0-3,6");
	free(c);
	ck_assert_int_eq(neuron_cmd_cores_parse("5", 0, &c, &n, err,
	    sizeof err), 0);
	ck_assert_uint_eq(n, 1);
	free(c);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		refusal_check(&bad[i], neuron_cmd_cores_parse(bad[i].s,
		    bad[i].max, &c, &n, err, sizeof err), err);
}
END_TEST

/* The key/value pairs a backend reports through its versions op. */
struct versions {
	char	key[16][32];
	char	value[16][128];
	size_t	n;
};

static void
versions_add(void *arg, const char *k, const char *v)
{
	struct versions	*vs = arg;

	ck_assert_uint_lt(vs->n, 16);
	snprintf(vs->key[vs->n], sizeof vs->key[0], "%s", k);
	snprintf(vs->value[vs->n], sizeof vs->value[0], "%s", v);
	vs->n++;
}

/* The value vs holds for key; "" for a key it does not hold. */
static const char *
version_of(const struct versions *vs, const char *key)
{
	size_t	i;

	for (i = 0; i < vs->n; i++)
		if (strcmp(vs->key[i], key) == 0)
			return (vs->value[i]);
	return ("");
}

/* The versions backend b reports. */
static void
versions_get(struct backend *b, struct versions *vs)
{
	memset(vs, 0, sizeof *vs);
	b->ops->versions(b->state, versions_add, vs);
}

/*
 * vs names these cores (which the runtime is told to reserve), devices and
 * target, and where it found the cores and the target.
 */
static void
versions_expect(const struct versions *vs, const char *cores,
    const char *devices, const char *cores_from, const char *target,
    const char *target_from)
{
	ck_assert_str_eq(version_of(vs, "cores"), cores);
	ck_assert_str_eq(version_of(vs, "devices"), devices);
	ck_assert_str_eq(version_of(vs, "cores_from"), cores_from);
	ck_assert_str_eq(version_of(vs, "target"), target);
	ck_assert_str_eq(version_of(vs, "target_from"), target_from);
	ck_assert_str_eq(getenv("NEURON_RT_VISIBLE_CORES"), cores);
}

CHECK_TEST(core, test_backend_neuron_open_versions)
{
	struct backend	*b;
	struct versions	 vs;

	setenv("FAKE_NEURONX_CC_VERSION", "2.99.1.0+cafe", 1);
	b = open_ok(NULL);
	ck_assert_str_eq(b->ops->name, "neuron");
	ck_assert_str_eq(b->ops->format, "penguin");
	/* 2 devices x 2 cores per device. */
	ck_assert_uint_eq(b->ncores, 4);
	ck_assert_str_eq(b->ops->compiler_version(b->state),
	    "NeuronX Compiler version 2.99.1.0+cafe");
	versions_get(b, &vs);
	ck_assert_str_eq(version_of(&vs, "neuronx-cc"), "2.99.1.0+cafe");
	ck_assert_str_eq(version_of(&vs, "runtime"), "2.99.7.0 fake_nrt");
	/* No neuron-ls: the device files counted; no target anywhere. */
	versions_expect(&vs, "0-3", "2", "device_glob", "trn1", "default");
	backend_close(b);
}
END_TEST

CHECK_TEST(core, test_backend_neuron_round_trip)
{
	struct backend			*b;
	struct backend_program		*p = NULL;
	struct fake_nrt_counters	*fc;
	struct penguin_exec		 e;
	float				 a[8];
	int32_t				 bb[3] = { 7, -8, 9 };
	char				 diag[BACKEND_DIAG_LEN];
	void				*img;
	size_t				 len;
	int				 i;

	b = open_ok(NULL);
	ck_assert_int_eq(compile_src(b, penguin_ok, &img, &len, diag), 0);
	ck_assert_int_eq(memcmp(img, "FAKENEFF 1\ntarget trn1\n", 23), 0);
	workdir_empty();
	ck_assert_int_eq(b->ops->load(b->state, img, len, &p, diag), 0);
	ck_assert_uint_eq(p->nparams, 2);
	ck_assert_uint_eq(p->noutputs, 2);
	ck_assert_str_eq(p->param(p, 0)->name, "a");
	ck_assert_int_eq(p->param(p, 1)->dtype, SIM_DT_INT32);
	ck_assert_int_eq(p->output(p, 0)->rank, 2);
	ck_assert_uint_eq(p->output(p, 0)->shape[0], 4);

	for (i = 0; i < 8; i++)
		a[i] = (float)i * 1.5f;
	penguin_exec_init(&e, a, bb);
	/* nkid core 3: loaded there on first use. */
	ck_assert_int_eq(b->ops->execute(b->state, p, 3, &e.x, diag), 0);
	ck_assert_uint_eq(e.out[0].nbytes, sizeof a);
	ck_assert_int_eq(memcmp(e.out[0].data, a, sizeof a), 0);
	ck_assert_int_eq(memcmp(e.out[1].data, bb, sizeof bb), 0);
	ck_assert_int_eq(e.out[1].dtype, SIM_DT_INT32);
	sim_tensors_release(e.out, 2);

	fc = counters();
	ck_assert_int_eq(fc->inits, 1);
	ck_assert_int_eq(fc->executes, 1);
	ck_assert_int_eq(fc->live_models, 2);	/* cores 0 and 3 */
	ck_assert_int_eq(fc->live_tensors, 0);
	ck_assert_int_eq(fc->live_sets, 0);

	/* Wrong shapes never reach the runtime. */
	e.in[0].shape[1] = 3;
	ck_assert_int_eq(b->ops->execute(b->state, p, 0, &e.x, diag),
	    BACKEND_EARG);
	ck_assert_ptr_nonnull(strstr(diag, "'a'"));
	ck_assert_int_eq(fc->executes, 1);

	b->ops->unload(b->state, p);
	ck_assert_int_eq(fc->live_models, 0);
	free(img);
	backend_close(b);
}
END_TEST

CHECK_TEST(core, test_backend_neuron_compile_target_options)
{
	struct backend	*b;
	char		 diag[BACKEND_DIAG_LEN], *log, *cwd, want[2048];
	void		*img;
	size_t		 len;
	struct stat	 st;

	b = open_ok("\"target\": \"trn2\"");
	ck_assert_int_eq(backend_compile(b, penguin_ok,
	    strlen(penguin_ok), "inf2", "-O1 '--x=a; rm -rf /'", &img, &len,
	    diag), 0);
	free(img);
	log = file_get(argvlog);
	snprintf(want, sizeof want, "%s\ncompile\n--framework\nXLA\n"
	    "penguin.py\n--internal-tensorizer-opt-level=nki\n--pipeline\n"
	    "compile\nSaveTemps\n--target\ninf2\n-O1\n--x=a; rm -rf /\n",
	    fakecc);
	ck_assert_str_eq(log, want);
	/* It ran in a private directory, gone now. */
	snprintf(want, sizeof want, "%s.cwd", argvlog);
	cwd = file_get(want);
	ck_assert_ptr_nonnull(strstr(cwd, "/state/neuron/compile."));
	cwd[strcspn(cwd, "\n")] = '\0';
	ck_assert_int_eq(stat(cwd, &st), -1);

	/* No target in the request: the configured one. */
	ck_assert_int_eq(compile_src(b, penguin_ok, &img, &len, diag), 0);
	free(img);
	ck_assert_ptr_nonnull(strstr(file_get(argvlog), "--target\ntrn2\n"));
	ck_assert_int_eq(backend_compile(b, penguin_ok,
	    strlen(penguin_ok), "", "--bogus-flag", &img, &len, diag),
	    BACKEND_EINVAL);
	ck_assert_ptr_nonnull(strstr(diag, "unrecognized arguments"));
	ck_assert_int_eq(backend_compile(b, penguin_ok,
	    strlen(penguin_ok), "", "'unterminated", &img, &len, diag),
	    BACKEND_EINVAL);
	ck_assert_int_eq(backend_compile(b, penguin_ok,
	    strlen(penguin_ok), "x/../y", "", &img, &len, diag),
	    BACKEND_EINVAL);
	workdir_empty();
	backend_close(b);
}
END_TEST

CHECK_TEST(core, test_backend_neuron_benchmark)
{
	struct backend			*b;
	struct backend_program		*p;
	struct fake_nrt_counters	*fc;
	struct penguin_exec		 e;
	double				 samples[5];
	char				 diag[BACKEND_DIAG_LEN];
	int				 i;

	b = open_ok(NULL);
	p = penguin_load(b);
	/* Shapes only: the backend supplies zeros. */
	penguin_exec_init(&e, NULL, NULL);
	fc = counters();
	for (i = 0; i < 5; i++)
		samples[i] = -1;
	ck_assert_int_eq(b->ops->benchmark(b->state, p, 1, &e.x, 3, 5, samples,
	    diag), 0);
	ck_assert_int_eq(fc->executes, 8);
	for (i = 0; i < 5; i++)
		ck_assert(samples[i] >= 0);
	ck_assert_uint_eq(e.out[0].nbytes, 32);
	sim_tensors_release(e.out, 2);
	ck_assert_int_eq(fc->live_tensors, 0);
	b->ops->unload(b->state, p);
	backend_close(b);
}
END_TEST

CHECK_TEST(core, test_backend_neuron_profile)
{
	struct backend		*b;
	struct backend_program	*p;
	struct backend_trace	*t = NULL;
	struct penguin_exec	 e;
	float			 a[8] = { 0 };
	int32_t			 bb[3] = { 0 };
	char			 diag[BACKEND_DIAG_LEN], plog[PATH_MAX + 16];
	char			*log;
	size_t			 n = 0;

	snprintf(plog, sizeof plog, "%s/profile-argv", T);
	setenv("FAKE_NEURON_PROFILE_ARGV", plog, 1);
	b = open_ok("\"visible_cores\": \"1,3\"");
	ck_assert_uint_eq(b->ncores, 2);
	p = penguin_load(b);
	penguin_exec_init(&e, a, bb);
	e.x.outputs = NULL;		/* profile() keeps no outputs */
	e.x.noutputs = 0;
	/* nkid core 1 is NeuronCore 3; executions 2 and 4 of 5. */
	ck_assert_msg(b->ops->profile(b->state, p, 1, &e.x, 5, 2, &t, &n,
	    diag) == 0, "profile: %s", diag);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(t[0].execution, 2);
	ck_assert_uint_eq(t[1].execution, 4);
	ck_assert_ptr_nonnull(strstr(t[0].trace, "exec=2 core=3 inputs=a,b,"));
	ck_assert_ptr_nonnull(strstr(t[1].trace, "exec=4 core=3"));
	ck_assert_ptr_nonnull(strstr(t[1].summary_json, "\"nc_idx\": 3"));
	ck_assert_ptr_nonnull(strstr(t[1].summary_json,
	    "profile_exec_4.ntff"));
	backend_traces_free(t, n);
	log = file_get(plog);
	ck_assert_ptr_nonnull(strstr(log, "\ncapture\n-n\nfile.neff\n-s\n"
	    "profile.ntff\n--profile-nth-exec=2\n--num-exec=5\na\n"
	    "input0.npy\nb\ninput1.npy\n-- NEURON_RT_VISIBLE_CORES=3\n"));
	ck_assert_ptr_nonnull(strstr(log, "\nview\n--output-format\n"
	    "summary-json\n-n\nfile.neff\n-s\nprofile.ntff\n--output-file\n"
	    "profile.ntff.json\n"));

	/* num_execs below profile_nth: that one execution alone. */
	ck_assert_int_eq(b->ops->profile(b->state, p, 0, &e.x, 1, 3, &t, &n,
	    diag), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(t[0].execution, 3);
	backend_traces_free(t, n);

	/* A failing capture is an error with its log; nothing is left. */
	setenv("FAKE_NEURON_PROFILE_FAIL", "1", 1);
	ck_assert_int_eq(b->ops->profile(b->state, p, 0, &e.x, 1, 1, &t, &n,
	    diag), BACKEND_ERUNTIME);
	ck_assert_ptr_nonnull(strstr(diag, "not available"));
	ck_assert_ptr_null(t);
	unsetenv("FAKE_NEURON_PROFILE_FAIL");
	workdir_empty();
	b->ops->unload(b->state, p);
	backend_close(b);
}
END_TEST

/* ------------------------------------------------------------ limits */

CHECK_TEST(limits, test_backend_neuron_timeout_kills_group)
{
	struct backend	*b;
	char		 diag[BACKEND_DIAG_LEN];
	void		*img;
	size_t		 len;
	long		 sh, child;
	double		 t0;

	b = open_ok("\"compile_timeout_ms\": 400, \"kill_grace_ms\": 300");
	t0 = check_now_s();
	ck_assert_int_eq(compile_src(b, "FAKE_CC_HANG\n", &img, &len, diag),
	    BACKEND_ELIMIT);
	ck_assert(check_now_s() - t0 < 5);
	ck_assert_ptr_nonnull(strstr(diag, "did not finish within 400 ms"));
	ck_assert_ptr_nonnull(strstr(diag, "compile_timeout_ms"));
	ck_assert_ptr_nonnull(strstr(diag, "compiling forever"));
	compiler_pids(&sh, &child);
	/* The compiler and the child it started are both gone. */
	ck_assert(pid_dead(sh));
	ck_assert(pid_dead(child));
	workdir_empty();

	/* One that ignores SIGTERM gets SIGKILL after the grace. */
	t0 = check_now_s();
	ck_assert_int_eq(compile_src(b, "FAKE_CC_HANG FAKE_CC_HANG_TERM_PROOF",
	    &img, &len, diag), BACKEND_ELIMIT);
	ck_assert(check_now_s() - t0 >= 0.6);
	ck_assert(check_now_s() - t0 < 5);
	compiler_pids(&sh, &child);
	ck_assert(pid_dead(sh));
	ck_assert(pid_dead(child));
	workdir_empty();
	backend_close(b);
}
END_TEST

CHECK_TEST(limits, test_backend_neuron_orphan_killed)
{
	struct backend	*b;
	char		 diag[BACKEND_DIAG_LEN], src[512];
	void		*img;
	size_t		 len;
	long		 sh, child;
	double		 t0;

	b = open_ok(NULL);
	snprintf(src, sizeof src, "%sFAKE_CC_ORPHAN\n", penguin_ok);
	t0 = check_now_s();
	/* Done when the compiler exits, not when its leftover child does. */
	ck_assert_int_eq(compile_src(b, src, &img, &len, diag), 0);
	ck_assert(check_now_s() - t0 < 5);
	free(img);
	compiler_pids(&sh, &child);
	ck_assert(pid_dead(child));
	backend_close(b);
}
END_TEST

CHECK_TEST(limits, test_backend_neuron_log_cap)
{
	struct neuron_proc		p;
	struct neuron_proc_result	r;
	char				*argv[] = { "sh", "-c", "i=0; while [ $i "
					    "-lt 5000 ]; do echo line $i; "
					    "i=$((i+1)); done; echo last >&2; "
					    "exit 3", NULL };
	char				 err[256], how[128];
	struct backend			*b;
	char				 diag[BACKEND_DIAG_LEN];
	void				*img;
	size_t				 len;

	memset(&p, 0, sizeof p);
	p.argv = argv;
	p.timeout_ms = 20000;
	p.log_max = 1000;
	ck_assert_int_eq(neuron_proc_run(&p, &r, err, sizeof err), 0);
	ck_assert(!neuron_proc_ok(&r));
	neuron_proc_describe(&r, 0, how, sizeof how);
	ck_assert_str_eq(how, "exited with status 3");
	ck_assert(r.log_total > 40000);
	ck_assert(r.log_len <= 1000 + 64);
	ck_assert_int_eq(strncmp(r.log, "line 0\nline 1\n", 14), 0);
	ck_assert_ptr_nonnull(strstr(r.log, "bytes omitted"));
	ck_assert_ptr_nonnull(strstr(r.log, "line 4999\nlast\n"));
	ck_assert_str_eq(r.log + r.log_len - 5, "last\n");
	neuron_proc_result_release(&r);

	/* Through the backend: the diag keeps the end, where the error is. */
	b = open_ok("\"log_max_bytes\": 4096");
	ck_assert_int_eq(compile_src(b, "FAKE_CC_CHATTY", &img, &len, diag),
	    BACKEND_EINVAL);
	ck_assert(strlen(diag) < BACKEND_DIAG_LEN);
	ck_assert_ptr_nonnull(strstr(diag, "exited with status 1"));
	ck_assert_ptr_nonnull(strstr(diag, "NCC_FAKE001"));
	workdir_empty();
	backend_close(b);
}
END_TEST

/* ------------------------------------------------------------ errors */

CHECK_TEST(errors, test_backend_neuron_compile_failures)
{
	struct backend		*b;
	struct backend_program	*p = NULL;
	char			 diag[BACKEND_DIAG_LEN];
	void			*img = NULL;
	size_t			 len;

	b = open_ok(NULL);
	/* The compiler's error comes back with its log. */
	ck_assert_int_eq(compile_src(b, "FAKE_CC_FAIL", &img, &len, diag),
	    BACKEND_EINVAL);
	ck_assert_ptr_nonnull(strstr(diag, "exited with status 1"));
	ck_assert_ptr_nonnull(strstr(diag, "Size of partition dimension 256"));
	ck_assert_ptr_null(img);
	workdir_empty();
	/* A crash is not the kernel's fault. */
	ck_assert_int_eq(compile_src(b, "FAKE_CC_CRASH", &img, &len, diag),
	    BACKEND_ERUNTIME);
	ck_assert_ptr_nonnull(strstr(diag, "signal 11"));
	workdir_empty();
	/* Success without a NEFF. */
	ck_assert_int_eq(compile_src(b, "FAKE_CC_NONEFF", &img, &len, diag),
	    BACKEND_ERUNTIME);
	ck_assert_ptr_nonnull(strstr(diag, "no usable NEFF"));
	ck_assert_ptr_nonnull(strstr(diag, "file.neff"));
	workdir_empty();
	/* Garbage: compiled, then the runtime rejects it at load. */
	ck_assert_int_eq(compile_src(b, "FAKE_CC_GARBAGE", &img, &len, diag),
	    0);
	ck_assert_int_eq(b->ops->load(b->state, img, len, &p, diag),
	    BACKEND_EINVAL);
	ck_assert_ptr_nonnull(strstr(diag, "rejected the NEFF"));
	ck_assert_ptr_nonnull(strstr(diag, "NRT_INVALID"));
	ck_assert_ptr_null(p);
	free(img);
	ck_assert_int_eq(counters()->live_models, 0);
	/* Simulation is the cpu backend's. */
	ck_assert_int_eq(b->ops->simulate(b->state, NULL, NULL, diag),
	    BACKEND_EFORMAT);
	backend_close(b);
}
END_TEST

CHECK_TEST(errors, test_backend_neuron_missing_runtime)
{
	char	err[1024], extra[PATH_MAX + 64];

	/* dlopen fails: the library is named. */
	ck_assert_int_eq(open_fail("\"runtime_library\": "
	    "\"/nonexistent/libnrt.so.1\"", err, sizeof err), BACKEND_EOPEN);
	ck_assert_ptr_nonnull(strstr(err, "cannot load the Neuron runtime "
	    "'/nonexistent/libnrt.so.1'"));
	/* A library that is not the runtime: the missing symbol is named. */
	ck_assert_int_eq(open_fail("\"runtime_library\": \"libm.so.6\"", err,
	    sizeof err), BACKEND_EOPEN);
	ck_assert_ptr_nonnull(strstr(err, "lacks the symbol 'nrt_init'"));
	/* No devices, no runtime: both named. */
	snprintf(extra, sizeof extra, "\"runtime_library\": \"libnope.so.1\", "
	    "\"device_glob\": \"%s/none/neuron*\"", T);
	ck_assert_int_eq(open_fail(extra, err, sizeof err), BACKEND_EOPEN);
	ck_assert_ptr_nonnull(strstr(err, "libnope.so.1"));
	ck_assert_ptr_nonnull(strstr(err, "no Neuron devices match"));
	/* No compiler. */
	ck_assert_int_eq(open_fail("\"compiler\": \"/nonexistent/neuronx-cc\"",
	    err, sizeof err), BACKEND_EOPEN);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/neuronx-cc"));
	/* Cores that do not exist, or disagree with the environment. */
	ck_assert_int_eq(open_fail("\"visible_cores\": \"2-4\"", err,
	    sizeof err), BACKEND_EOPEN);
	ck_assert_msg(strstr(err, "core 4") != NULL, "%s", err);
	setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
	ck_assert_int_eq(open_fail("\"visible_cores\": \"1\"", err,
	    sizeof err), BACKEND_EOPEN);
	ck_assert_ptr_nonnull(strstr(err, "disagrees"));
}
END_TEST

CHECK_TEST(errors, test_backend_neuron_busy_core)
{
	struct backend		*b;
	struct backend_program	*p = NULL;
	struct penguin_exec	 e;
	char			 diag[BACKEND_DIAG_LEN];
	void			*img;
	size_t			 len;

	b = open_ok(NULL);
	ck_assert_int_eq(compile_src(b, penguin_ok, &img, &len, diag), 0);
	/* Another process holds NeuronCore 2: the runtime cannot start. */
	file_put(busy, "2\n");
	ck_assert_int_eq(b->ops->load(b->state, img, len, &p, diag),
	    BACKEND_EBUSY);
	ck_assert_ptr_nonnull(strstr(diag, "NeuronCores 0-3"));
	ck_assert_ptr_nonnull(strstr(diag, "NRT_RESOURCE"));
	/* Released: the next request starts it. */
	file_put(busy, "");
	ck_assert_int_eq(b->ops->load(b->state, img, len, &p, diag), 0);

	/* Taken while nkid runs: the execution names the core. */
	file_put(busy, "1\n");
	penguin_exec_init(&e, NULL, NULL);
	ck_assert_int_eq(b->ops->execute(b->state, p, 1, &e.x, diag),
	    BACKEND_EBUSY);
	ck_assert_ptr_nonnull(strstr(diag, "NeuronCore 1 (nkid core 1) is "
	    "not available"));
	ck_assert_ptr_nonnull(strstr(diag, "NRT_EXEC_NC_BUSY"));
	ck_assert_str_eq(backend_strerror(BACKEND_EBUSY),
	    "core held by another process");
	ck_assert_int_eq(counters()->live_tensors, 0);
	/* Other cores keep working. */
	ck_assert_int_eq(b->ops->execute(b->state, p, 0, &e.x, diag), 0);
	sim_tensors_release(e.out, 2);
	b->ops->unload(b->state, p);
	free(img);
	backend_close(b);
}
END_TEST

/* ------------------------------------------------------------ recovery */

CHECK_TEST(recovery, test_backend_neuron_stale_workdir_cleaned)
{
	struct backend	*b;
	char		 p[PATH_MAX + 64];

	snprintf(p, sizeof p, "%s/state/neuron", T);
	mkdir(p, 0700);
	snprintf(p, sizeof p, "%s/state/neuron/compile.dead01", T);
	mkdir(p, 0700);
	snprintf(p, sizeof p, "%s/state/neuron/compile.dead01/sub", T);
	mkdir(p, 0700);
	snprintf(p, sizeof p, "%s/state/neuron/compile.dead01/sub/file.neff",
	    T);
	file_put(p, "x");
	snprintf(p, sizeof p, "%s/state/neuron/profile.dead02", T);
	mkdir(p, 0700);
	b = open_ok(NULL);
	workdir_empty();
	backend_close(b);
}
END_TEST

CHECK_TEST(recovery, test_backend_neuron_serves_after_failures)
{
	struct backend		*b;
	struct backend_program	*p = NULL;
	char			 diag[BACKEND_DIAG_LEN];
	void			*img;
	size_t			 len;

	b = open_ok("\"compile_timeout_ms\": 300, \"kill_grace_ms\": 100");
	ck_assert_int_eq(compile_src(b, "FAKE_CC_FAIL", &img, &len, diag),
	    BACKEND_EINVAL);
	ck_assert_int_eq(compile_src(b, "FAKE_CC_HANG", &img, &len, diag),
	    BACKEND_ELIMIT);
	ck_assert_int_eq(compile_src(b, penguin_ok, &img, &len, diag), 0);
	ck_assert_int_eq(b->ops->load(b->state, img, len, &p, diag), 0);
	b->ops->unload(b->state, p);
	free(img);
	workdir_empty();
	backend_close(b);
}
END_TEST

/* ------------------------------------------------------------ neuron-ls */

/* The shape of the Neuron LS User Guide's --json-output example (trn2,
 * abridged to two devices). */
static const char ls_trn2[] =
    "[\n"
    "  { \"neuron_device\": 0, \"bdf\": \"cc:00.0\", \"cpu_affinity\": "
    "\"48-95,144-191\", \"numa_node\": \"1\", \"connected_to\": [12, 3, 4, 1],"
    " \"nc_count\": 4, \"logical_neuroncore_config\": 2, \"memory_size\": "
    "103079215104, \"neuroncore_ids\": [0, 1, 2, 3], \"neuron_processes\": "
    "[ { \"pid\": 113985, \"command\": \"neuron-bench exec\", "
    "\"neuron_runtime_version\": \"2.0.0\" } ] },\n"
    "  { \"neuron_device\": 1, \"bdf\": \"b5:00.0\", \"cpu_affinity\": "
    "\"48-95,144-191\", \"numa_node\": \"1\", \"connected_to\": [13, 0, 5, 2],"
    " \"nc_count\": 4, \"logical_neuroncore_config\": 2, \"memory_size\": "
    "103079215104, \"neuroncore_ids\": [4, 5, 6, 7], \"neuron_processes\": "
    "[] }\n"
    "]\n";

/* One trn1 device: connected_to null, no logical_neuroncore_config. */
static const char ls_trn1[] =
    "[{\"neuron_device\": 0, \"bdf\": \"0000:00:1e.0\", \"cpu_affinity\": "
    "\"0-7\", \"numa_node\": \"-1\", \"connected_to\": null, \"nc_count\": 2, "
    "\"memory_size\": 34359738368, \"neuroncore_ids\": [0, 1], "
    "\"neuron_processes\": []}]";

static int
ls_parse(const char *s, struct neuron_ls *ls, char *err, size_t errlen)
{
	return (neuron_cmd_ls_parse(s, strlen(s), ls, err, errlen));
}

/* Write to buf (len bytes) neuron-ls's list of ndev devices of ncores each. */
static void
ls_devices(char *buf, size_t len, size_t ndev, int ncores)
{
	size_t	i, off;

	off = (size_t)snprintf(buf, len, "[");
	for (i = 0; i < ndev; i++)
		off += (size_t)snprintf(buf + off, len - off,
		    "%s{\"neuron_device\": %zu, \"nc_count\": %d}",
		    i > 0 ? "," : "", i, ncores);
	snprintf(buf + off, len - off, "]");
}

/* s is refused with a message holding want. */
static void
ls_bad(const char *s, const char *want)
{
	struct neuron_ls	ls;
	char			err[256] = "";

	ck_assert_msg(ls_parse(s, &ls, err, sizeof err) == -1, "accepted %s",
	    s);
	ck_assert_msg(strstr(err, want) != NULL, "'%s': '%s' lacks '%s'", s,
	    err, want);
	ck_assert_uint_eq(ls.ncores, 0);
}

CHECK_TEST(neuron_ls, test_backend_neuron_ls_parse)
{
	struct neuron_ls	 ls;
	char			 err[256], *big, **argv;

	argv = neuron_cmd_ls_argv("/opt/aws/neuron/bin/neuron-ls");
	ck_assert_str_eq(argv[0], "/opt/aws/neuron/bin/neuron-ls");
	ck_assert_str_eq(argv[1], "--json-output");
	ck_assert_ptr_null(argv[2]);
	neuron_proc_argv_free(argv);

	/* Good output: the cores of the devices are summed. */
	ck_assert_int_eq(ls_parse(ls_trn2, &ls, err, sizeof err), 0);
	ck_assert_uint_eq(ls.ndevices, 2);
	ck_assert_uint_eq(ls.ncores, 8);
	ck_assert_uint_eq(ls.lnc, 2);
	ck_assert_str_eq(neuron_cmd_target_of_ls(&ls), "trn2");
	ck_assert_int_eq(ls_parse(ls_trn1, &ls, err, sizeof err), 0);
	ck_assert_uint_eq(ls.ndevices, 1);
	ck_assert_uint_eq(ls.ncores, 2);
	ck_assert_uint_eq(ls.lnc, 0);
	ck_assert_ptr_null(neuron_cmd_target_of_ls(&ls));
	/* No devices is an answer, not an error. */
	ck_assert_int_eq(ls_parse(" [ ]\n", &ls, err, sizeof err), 0);
	ck_assert_uint_eq(ls.ndevices, 0);
	ck_assert_uint_eq(ls.ncores, 0);

	/* Empty. */
	ls_bad("", "printed nothing");
	ls_bad(" \n\t\n", "printed nothing");
	/* Malformed. */
	ls_bad("not json", "not JSON (at byte 0)");
	ls_bad("[{\"neuron_device\": 0, \"nc_count\": 2}", "not JSON");
	ls_bad("[] []", "more than one JSON value");
	ls_bad("[]\nwarning: something", "more than one JSON value");
	ls_bad("{\"neuron_device\": 0, \"nc_count\": 2}", "not an array");
	ls_bad("\"trn1\"", "not an array");
	ls_bad("[{\"neuron_device\": 0, \"nc_count\": 2}, 7]",
	    "device 1 is not a JSON object");
	ls_bad("[{\"neuron_device\": 0}]", "device 0: \"nc_count\" must be");
	ls_bad("[{\"neuron_device\": 0, \"nc_count\": \"2\"}]", "\"nc_count\"");
	ls_bad("[{\"neuron_device\": 0, \"nc_count\": 0}]", "from 1 to 64");
	ls_bad("[{\"neuron_device\": 0, \"nc_count\": 1.5}]", "\"nc_count\"");
	ls_bad("[{\"neuron_device\": 0, \"nc_count\": null}]", "\"nc_count\"");
	ls_bad("[{\"nc_count\": 2}]", "\"neuron_device\" must be");
	ls_bad("[{\"neuron_device\": -1, \"nc_count\": 2}]",
	    "\"neuron_device\"");
	ls_bad("[{\"neuron_device\": 0, \"nc_count\": 2, "
	    "\"logical_neuroncore_config\": 0}]", "logical_neuroncore_config");
	ls_bad("[{\"neuron_device\": 0, \"nc_count\": 2, "
	    "\"logical_neuroncore_config\": \"2\"}]",
	    "logical_neuroncore_config");

	/* Huge counts are bounded, never overflow. */
	ls_bad("[{\"neuron_device\": 0, \"nc_count\": 65}]", "from 1 to 64");
	ls_bad("[{\"neuron_device\": 0, \"nc_count\": 1e300}]", "from 1 to 64");
	ls_bad("[{\"neuron_device\": 0, \"nc_count\": 4294967298}]",
	    "from 1 to 64");
	ls_bad("[{\"neuron_device\": 1e300, \"nc_count\": 2}]",
	    "\"neuron_device\"");
	big = malloc(64 * 1024);
	ck_assert_ptr_nonnull(big);
	/* 17 devices of 64 cores: 1088 > 1024 in all. */
	ls_devices(big, 64 * 1024, 17, 64);
	ls_bad(big, "more than 1024 NeuronCores");
	/* 257 devices of 1 core. */
	ls_devices(big, 64 * 1024, 257, 1);
	ls_bad(big, "more than 256 devices");
	/* 256 devices of 4 cores: exactly at both bounds. */
	ls_devices(big, 64 * 1024, 256, 4);
	ck_assert_int_eq(ls_parse(big, &ls, err, sizeof err), 0);
	ck_assert_uint_eq(ls.ndevices, 256);
	ck_assert_uint_eq(ls.ncores, 1024);
	free(big);
}
END_TEST

CHECK_TEST(neuron_ls, test_backend_neuron_target_of_instance)
{
	static const struct {
		const char	*instance, *target;
	} cases[] = {
		/* The driver's sysfs spelling and EC2's. */
		{ "Trn1", "trn1" },
		{ "Inf2\n", "inf2" },
		{ "trn1.32xlarge", "trn1" },
		{ "trn1n.32xlarge", "trn1n" },
		{ "trn2n.48xlarge", "trn2" },
		{ "Trn2", "trn2" },
		{ "inf2.xlarge", "inf2" },
		/* Not neuronx-cc targets, or not instance types. */
		{ "Inf1", NULL },
		{ "inf1.6xlarge", NULL },
		{ "", NULL },
		{ NULL, NULL },
		{ "trn1xxxxxxxxxxxxxxxxxx", NULL },
		{ "m5.large", NULL },
	};
	const char	*got;
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		got = neuron_cmd_target_of_instance(cases[i].instance);
		if (cases[i].target == NULL)
			ck_assert_msg(got == NULL, "'%s': '%s', not none",
			    cases[i].instance, got);
		else
			ck_assert_msg(got != NULL &&
			    strcmp(got, cases[i].target) == 0,
			    "'%s': '%s', not '%s'", cases[i].instance, got,
			    cases[i].target);
	}
}
END_TEST

/* A config member naming the neuron-ls double. */
static const char *
ls_extra(const char *more)
{
	static char	buf[2048];

	snprintf(buf, sizeof buf, "\"ls\": \"%s\"%s%s", fakels,
	    more != NULL ? ", " : "", more != NULL ? more : "");
	return (buf);
}

CHECK_TEST(neuron_ls, test_backend_neuron_ls_cores)
{
	struct backend	*b;
	struct versions	 vs;
	char		*argv;
	void		*img;
	size_t		 len;
	char		 diag[BACKEND_DIAG_LEN], p[PATH_MAX + 16];

	/* 3 devices of 2 cores on neuron-ls; 2 device files, 4 cores each
	 * by neuron.cores_per_device: neuron-ls wins. */
	setenv("FAKE_NEURON_LS_DEVICES", "3", 1);
	snprintf(p, sizeof p, "%s/ls-argv", T);
	setenv("FAKE_NEURON_LS_ARGV", p, 1);
	b = open_ok(ls_extra("\"cores_per_device\": 4"));
	ck_assert_uint_eq(b->ncores, 6);
	versions_get(b, &vs);
	/* trn1 and inf2 look alike to neuron-ls: the default target. */
	versions_expect(&vs, "0-5", "3", "neuron-ls", "trn1", "default");
	backend_close(b);
	/* Exactly `neuron-ls --json-output`. */
	argv = file_get(p);
	ck_assert_ptr_nonnull(argv);
	ck_assert_msg(strncmp(argv, fakels, strlen(fakels)) == 0 &&
	    strcmp(argv + strlen(fakels), "\n--json-output\n") == 0,
	    "neuron-ls argv: %s", argv);

	/* The visible cores select among neuron-ls's. */
	unsetenv("NEURON_RT_VISIBLE_CORES");
	b = open_ok(ls_extra("\"visible_cores\": \"3-5\""));
	ck_assert_uint_eq(b->ncores, 3);
	ck_assert_uint_eq(b->ops->device_core(b->state, 0), 3);
	backend_close(b);
	setenv("NEURON_RT_VISIBLE_CORES", "1,4", 1);
	b = open_ok(ls_extra(NULL));
	ck_assert_uint_eq(b->ncores, 2);
	ck_assert_uint_eq(b->ops->device_core(b->state, 1), 4);
	backend_close(b);
	unsetenv("NEURON_RT_VISIBLE_CORES");
	ck_assert_int_eq(open_fail(ls_extra("\"visible_cores\": \"6\""), diag,
	    sizeof diag), BACKEND_EOPEN);
	ck_assert_msg(strstr(diag, "core 6") != NULL &&
	    strstr(diag, "6 NeuronCores on 3 devices, from") != NULL, "%s",
	    diag);

	/* A trn2 host (logical NeuronCores): trn2 is the default target,
	 * which the compiler is given; neuron.target still wins. */
	setenv("FAKE_NEURON_LS_DEVICES", "2", 1);
	setenv("FAKE_NEURON_LS_NC", "4", 1);
	setenv("FAKE_NEURON_LS_LNC", "2", 1);
	b = open_ok(ls_extra(NULL));
	ck_assert_uint_eq(b->ncores, 8);
	versions_get(b, &vs);
	ck_assert_str_eq(version_of(&vs, "target"), "trn2");
	ck_assert_str_eq(version_of(&vs, "target_from"), "neuron-ls");
	ck_assert_int_eq(compile_src(b, penguin_ok, &img, &len, diag), 0);
	ck_assert_int_eq(memcmp(img, "FAKENEFF 1\ntarget trn2\n", 23), 0);
	free(img);
	backend_close(b);
	b = open_ok(ls_extra("\"target\": \"inf2\""));
	versions_get(b, &vs);
	ck_assert_str_eq(version_of(&vs, "target"), "inf2");
	ck_assert_str_eq(version_of(&vs, "target_from"), "neuron.target");
	backend_close(b);

	/* A warning on stderr does not spoil the JSON on stdout. */
	setenv("FAKE_NEURON_LS_MODE", "warn", 1);
	b = open_ok(ls_extra(NULL));
	ck_assert_uint_eq(b->ncores, 8);
	backend_close(b);
}
END_TEST

CHECK_TEST(neuron_ls, test_backend_neuron_ls_fallback)
{
	struct backend	*b;
	struct versions	 vs;
	char		 err[1024], extra[PATH_MAX + 128];

	/* neuron-ls missing: the device files count (2 x 2). */
	b = open_ok("\"ls\": \"/nonexistent/neuron-ls\"");
	ck_assert_uint_eq(b->ncores, 4);
	versions_get(b, &vs);
	ck_assert_str_eq(version_of(&vs, "cores_from"), "device_glob");
	backend_close(b);
	unsetenv("NEURON_RT_VISIBLE_CORES");
	/* neuron-ls failing (no devices, no driver, exit 1): the same. */
	unsetenv("FAKE_NEURON_LS_DEVICES");
	b = open_ok(ls_extra("\"cores_per_device\": 8"));
	ck_assert_uint_eq(b->ncores, 16);
	backend_close(b);
	/* ... and with no device files either, both are named. */
	snprintf(extra, sizeof extra, "\"ls\": \"/nonexistent/neuron-ls\", "
	    "\"device_glob\": \"%s/none/neuron*\"", T);
	ck_assert_int_eq(open_fail(extra, err, sizeof err), BACKEND_EOPEN);
	ck_assert_ptr_nonnull(strstr(err, "no Neuron devices match"));
	/* neuron-ls succeeding with no devices: refused, naming it. */
	setenv("FAKE_NEURON_LS_MODE", "empty", 1);
	ck_assert_int_eq(open_fail(ls_extra(NULL), err, sizeof err),
	    BACKEND_EOPEN);
	ck_assert_msg(strstr(err, "--json-output' (neuron.ls) lists no "
	    "Neuron devices") != NULL && strstr(err, fakels) != NULL, "%s",
	    err);
	/* Malformed output: a clear error naming neuron-ls, no fallback. */
	setenv("FAKE_NEURON_LS_MODE", "garbage", 1);
	ck_assert_int_eq(open_fail(ls_extra(NULL), err, sizeof err),
	    BACKEND_EOPEN);
	ck_assert_msg(strstr(err, fakels) != NULL && strstr(err,
	    "--json-output' (neuron.ls) printed something that is not JSON") !=
	    NULL, "%s", err);
}
END_TEST

CHECK_TEST(neuron_ls, test_backend_neuron_ls_timeout)
{
	struct backend	*b;
	time_t		 t0 = time(NULL);

	/* A neuron-ls that never ends is killed, and the device files
	 * count. */
	setenv("FAKE_NEURON_LS_DEVICES", "3", 1);
	setenv("FAKE_NEURON_LS_MODE", "hang", 1);
	b = open_ok(ls_extra("\"kill_grace_ms\": 100"));
	ck_assert_uint_eq(b->ncores, 4);
	ck_assert_int_le(time(NULL) - t0, 20);
	backend_close(b);
}
END_TEST
