/* neuron_cmd.c: build the toolchain's argument vectors; parse and format core lists; read neuron-ls's JSON. */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "daemon/neuron_cmd.h"
#include "daemon/neuron_proc.h"
#include "daemon/xmalloc.h"

/* A growing NULL-terminated argv. */
struct neuron_cmd_argv {
	char	**v;
	size_t	  n;
};

static void
neuron_cmd_add(struct neuron_cmd_argv *a, const char *s)
{
	a->v = xreallocarray(a->v, a->n + 2, sizeof *a->v);
	a->v[a->n++] = xstrdup(s);
	a->v[a->n] = NULL;
}

static void
neuron_cmd_addf(struct neuron_cmd_argv *a, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		abort();
	va_end(ap);
	a->v = xreallocarray(a->v, a->n + 2, sizeof *a->v);
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

/* The argv of a tool run with one flag: "prog flag". */
static char **
neuron_cmd_argv_flag(const char *prog, const char *flag)
{
	struct neuron_cmd_argv	a = { NULL, 0 };

	neuron_cmd_add(&a, prog);
	neuron_cmd_add(&a, flag);
	return (a.v);
}

static int
neuron_cmd_target_valid(const char *t)
{
	size_t	i;

	for (i = 0; t[i] != '\0'; i++) {
		if (!islower((unsigned char)t[i]) &&
		    !isdigit((unsigned char)t[i]))
			return (0);
	}
	return (i > 0 && i < 32);
}

int
neuron_cmd_compile_argv(const char *compiler, const char *target,
    const char *options, char ***argv, char *err, size_t errlen)
{
	struct neuron_cmd_argv	  a = { NULL, 0 };
	char			**opts = NULL;
	size_t			  nopts = 0, i;

	assert(compiler != NULL && target != NULL && argv != NULL);
	*argv = NULL;
	if (!neuron_cmd_target_valid(target)) {
		snprintf(err, errlen, "invalid compile target '%s': expected "
		    "a platform such as trn1, inf2 or trn2", target);
		return (-1);
	}
	if (options != NULL && neuron_proc_split(options,
	    NEURON_CMD_MAX_OPTS, &opts, &nopts, err, errlen) != 0)
		return (-1);
	neuron_cmd_add(&a, compiler);
	neuron_cmd_add(&a, "compile");
	neuron_cmd_add(&a, "--framework");
	neuron_cmd_add(&a, "XLA");
	neuron_cmd_add(&a, NEURON_CMD_PENGUIN);
	neuron_cmd_add(&a, "--internal-tensorizer-opt-level=nki");
	neuron_cmd_add(&a, "--pipeline");
	neuron_cmd_add(&a, "compile");
	neuron_cmd_add(&a, "SaveTemps");
	neuron_cmd_add(&a, "--target");
	neuron_cmd_add(&a, target);
	for (i = 0; i < nopts; i++)
		neuron_cmd_add(&a, opts[i]);
	neuron_proc_argv_free(opts);
	*argv = a.v;
	return (0);
}

char **
neuron_cmd_version_argv(const char *compiler)
{
	return (neuron_cmd_argv_flag(compiler, "--version"));
}

char **
neuron_cmd_capture_argv(const char *profiler, const char *neff,
    const char *ntff, unsigned nth, unsigned num_execs, char *const *inputs,
    size_t ninputs)
{
	struct neuron_cmd_argv	a = { NULL, 0 };
	size_t			i;

	neuron_cmd_add(&a, profiler);
	neuron_cmd_add(&a, "capture");
	neuron_cmd_add(&a, "-n");
	neuron_cmd_add(&a, neff);
	neuron_cmd_add(&a, "-s");
	neuron_cmd_add(&a, ntff);
	neuron_cmd_addf(&a, "--profile-nth-exec=%u", nth);
	neuron_cmd_addf(&a, "--num-exec=%u", num_execs);
	for (i = 0; i < 2 * ninputs; i++)
		neuron_cmd_add(&a, inputs[i]);
	return (a.v);
}

char **
neuron_cmd_view_argv(const char *profiler, const char *neff, const char *ntff,
    const char *json)
{
	struct neuron_cmd_argv	a = { NULL, 0 };

	neuron_cmd_add(&a, profiler);
	neuron_cmd_add(&a, "view");
	neuron_cmd_add(&a, "--output-format");
	neuron_cmd_add(&a, "summary-json");
	neuron_cmd_add(&a, "-n");
	neuron_cmd_add(&a, neff);
	neuron_cmd_add(&a, "-s");
	neuron_cmd_add(&a, ntff);
	neuron_cmd_add(&a, "--output-file");
	neuron_cmd_add(&a, json);
	return (a.v);
}

void
neuron_cmd_trace_name(const char *stem, unsigned first, unsigned exec,
    char *buf, size_t len)
{
	if (exec == first)
		snprintf(buf, len, "%s.ntff", stem);
	else
		snprintf(buf, len, "%s_exec_%u.ntff", stem, exec);
}

static int
neuron_cmd_index(const char **p, unsigned *out)
{
	unsigned long	v;
	char		*end;

	if (!isdigit((unsigned char)**p))
		return (-1);
	errno = 0;
	v = strtoul(*p, &end, 10);
	if (errno != 0 || v > 65535)
		return (-1);
	*out = (unsigned)v;
	*p = end;
	return (0);
}

int
neuron_cmd_cores_parse(const char *s, unsigned limit, unsigned **cores,
    size_t *n, char *err, size_t errlen)
{
	const char	*p = s;
	unsigned	*v = NULL, lo, hi, c;
	size_t		 k = 0;

	assert(s != NULL && cores != NULL && n != NULL);
	for (;;) {
		if (neuron_cmd_index(&p, &lo) != 0)
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			if (neuron_cmd_index(&p, &hi) != 0 || hi < lo)
				goto bad;
		}
		for (c = lo; c <= hi; c++) {
			if (limit != 0 && c >= limit) {
				snprintf(err, errlen, "core %u in '%s' does "
				    "not exist: the host has %u", c, s, limit);
				goto fail;
			}
			if (k > 0 && c <= v[k - 1]) {
				snprintf(err, errlen, "cores in '%s' must be "
				    "ascending and distinct", s);
				goto fail;
			}
			v = xreallocarray(v, k + 1, sizeof *v);
			v[k++] = c;
		}
		if (*p == '\0')
			break;
		if (*p++ != ',')
			goto bad;
	}
	*cores = v;
	*n = k;
	return (0);
bad:
	snprintf(err, errlen, "'%s' is not a core list such as 0, 0-3 or "
	    "0,2-3", s);
fail:
	free(v);
	*cores = NULL;
	*n = 0;
	return (-1);
}

void
neuron_cmd_cores_format(const unsigned *cores, size_t n, char *buf,
    size_t len)
{
	size_t	i, j, off = 0;

	assert(len > 0);
	buf[0] = '\0';
	for (i = 0; i < n && off < len; i = j + 1) {
		for (j = i; j + 1 < n && cores[j + 1] == cores[j] + 1; j++)
			;
		if (j == i)
			off += (size_t)snprintf(buf + off, len - off, "%s%u",
			    off ? "," : "", cores[i]);
		else
			off += (size_t)snprintf(buf + off, len - off,
			    "%s%u-%u", off ? "," : "", cores[i], cores[j]);
	}
}

/* ------------------------------------------------------------ neuron-ls */

char **
neuron_cmd_ls_argv(const char *ls)
{
	return (neuron_cmd_argv_flag(ls, "--json-output"));
}

/* The integer member name of o, in [min, max], into *v. Returns 0 when
 * read, 1 when absent and not required, -1 when absent and required, or
 * not such an integer. */
static int
neuron_cmd_ls_int(const cJSON *o, const char *name, int required, double min,
    double max, unsigned *v)
{
	const cJSON	*m = cJSON_GetObjectItemCaseSensitive(o, name);
	double		 d;

	if (m == NULL && !required)
		return (1);
	if (!cJSON_IsNumber(m))
		return (-1);
	d = m->valuedouble;
	if (!(d >= min && d <= max) || d != (double)(long long)d)
		return (-1);
	*v = (unsigned)d;
	return (0);
}

int
neuron_cmd_ls_parse(const char *out, size_t len, struct neuron_ls *ls,
    char *err, size_t errlen)
{
	const cJSON	*dev;
	const char	*end = NULL;
	cJSON		*root;
	size_t		 i = 0, k;
	unsigned	 idx, nc, lnc;

	memset(ls, 0, sizeof *ls);
	for (k = 0; k < len && isspace((unsigned char)out[k]); k++)
		;
	if (k == len) {
		snprintf(err, errlen, "printed nothing");
		return (-1);
	}
	root = cJSON_ParseWithLengthOpts(out, len, &end, 0);
	if (root == NULL) {
		snprintf(err, errlen, "printed something that is not JSON "
		    "(at byte %zu)", end != NULL && end >= out ?
		    (size_t)(end - out) : (size_t)0);
		return (-1);
	}
	for (k = (size_t)(end - out); k < len &&
	    isspace((unsigned char)out[k]); k++)
		;
	if (k != len) {
		snprintf(err, errlen, "printed more than one JSON value (at "
		    "byte %zu)", (size_t)(end - out));
		goto fail;
	}
	if (!cJSON_IsArray(root)) {
		snprintf(err, errlen, "printed JSON that is not an array of "
		    "devices");
		goto fail;
	}
	cJSON_ArrayForEach(dev, root) {
		if (i >= NEURON_CMD_LS_MAX_DEVICES) {
			snprintf(err, errlen, "lists more than %d devices",
			    NEURON_CMD_LS_MAX_DEVICES);
			goto fail;
		}
		if (!cJSON_IsObject(dev)) {
			snprintf(err, errlen, "device %zu is not a JSON object",
			    i);
			goto fail;
		}
		if (neuron_cmd_ls_int(dev, "neuron_device", 1, 0, 1e9,
		    &idx) != 0) {
			snprintf(err, errlen, "device %zu: \"neuron_device\" "
			    "must be a non-negative integer", i);
			goto fail;
		}
		if (neuron_cmd_ls_int(dev, "nc_count", 1, 1,
		    NEURON_CMD_LS_MAX_NC, &nc) != 0) {
			snprintf(err, errlen, "device %zu: \"nc_count\" must "
			    "be an integer from 1 to %d", i,
			    NEURON_CMD_LS_MAX_NC);
			goto fail;
		}
		switch (neuron_cmd_ls_int(dev, "logical_neuroncore_config", 0,
		    1, NEURON_CMD_LS_MAX_LNC, &lnc)) {
		case -1:
			snprintf(err, errlen, "device %zu: "
			    "\"logical_neuroncore_config\" must be an integer "
			    "from 1 to %d", i, NEURON_CMD_LS_MAX_LNC);
			goto fail;
		case 0:
			if (lnc > ls->lnc)
				ls->lnc = lnc;
			break;
		}
		if (ls->ncores + nc > NEURON_CMD_LS_MAX_CORES) {
			snprintf(err, errlen, "lists more than %d NeuronCores",
			    NEURON_CMD_LS_MAX_CORES);
			goto fail;
		}
		ls->ncores += nc;
		i++;
	}
	ls->ndevices = (unsigned)i;
	cJSON_Delete(root);
	return (0);
fail:
	cJSON_Delete(root);
	memset(ls, 0, sizeof *ls);
	return (-1);
}

const char *
neuron_cmd_target_of_instance(const char *instance_type)
{
	char	fam[16];
	size_t	n = 0;

	if (instance_type == NULL)
		return (NULL);
	while (isspace((unsigned char)*instance_type))
		instance_type++;
	for (; instance_type[n] != '\0' && instance_type[n] != '.' &&
	    !isspace((unsigned char)instance_type[n]); n++) {
		if (n + 1 >= sizeof fam)
			return (NULL);
		fam[n] = (char)tolower((unsigned char)instance_type[n]);
	}
	fam[n] = '\0';
	if (strcmp(fam, "trn1") == 0)
		return ("trn1");
	if (strcmp(fam, "trn1n") == 0)
		return ("trn1n");
	if (strncmp(fam, "trn2", 4) == 0)
		return ("trn2");
	if (strcmp(fam, "inf2") == 0)
		return ("inf2");
	return (NULL);
}

const char *
neuron_cmd_target_of_ls(const struct neuron_ls *ls)
{
	return (ls->lnc != 0 ? "trn2" : NULL);
}
