/*
 * fake_nrt.c: a TEST DOUBLE of the Neuron runtime library (libnrt.so.1),
 * for nkid's tests only; built as build/tests/libfake_nrt.so, never
 * installed. It runs nothing on a device. It implements the subset of
 * nrt/nrt.h, nrt_experimental.h and nrt_version.h that nkid uses, with
 * the documented semantics (docs/neuron.md, "Contracts"):
 *
 * - nrt_init reserves the NeuronCores named by NEURON_RT_VISIBLE_CORES
 *   (all FAKE_NRT_TOTAL_CORES, default 4, when unset). A core listed in
 *   the file $FAKE_NRT_BUSY_FILE ("1,3": held by another process) makes
 *   it print the runtime's "NeuronCore(s) not available" error and return
 *   NRT_RESOURCE. A second nrt_init without nrt_close is NRT_FAILURE.
 * - nrt_get_version works before nrt_init.
 * - nrt_load takes fake-neuronx-cc's NEFF ("FAKENEFF 1" text); anything
 *   else is NRT_INVALID ("Invalid NEFF"). vnc -1 means the first core; a
 *   vnc beyond the visible cores is NRT_INVALID. Calls before nrt_init
 *   are NRT_UNINITIALIZED.
 * - nrt_get_model_tensor_info lists the NEFF's tensors in file order.
 * - nrt_execute needs every tensor of the model in the sets by name with
 *   its exact size (an input missing: NRT_EXEC_BAD_INPUT; an output
 *   missing: NRT_INVALID); a core listed in $FAKE_NRT_BUSY_FILE at that
 *   moment gives NRT_EXEC_NC_BUSY. Its computation, documented so tests
 *   can check that data flowed: output k receives the bytes of input k
 *   (k below the number of inputs; truncated or zero-padded to the
 *   output's size), other outputs are zeros.
 * - Counters for tests: fake_nrt_counters() (dlsym it).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/neuron_nrt.h"

#define FAKE_MAX_CORES	256

struct neuron_nrt_model {
	int				 vnc;
	size_t				 n;
	struct neuron_nrt_tensor_info	*info;
};

struct neuron_nrt_tensor {
	size_t	 size;
	char	*data;
	char	 name[64];
};

struct fake_set {
	size_t			  n;
	char			**names;
	neuron_nrt_tensor	**t;
};

/* What the tests can read. */
struct fake_nrt_counters {
	long	inits, closes, loads, unloads, executes, live_tensors,
		live_sets, live_models;
};

static pthread_mutex_t		fake_lock = PTHREAD_MUTEX_INITIALIZER;
static int			fake_inited;
static unsigned			fake_cores[FAKE_MAX_CORES];
static size_t			fake_ncores;
static struct fake_nrt_counters	fake_count;

struct fake_nrt_counters *fake_nrt_counters(void);

struct fake_nrt_counters *
fake_nrt_counters(void)
{
	return (&fake_count);
}

static void
fake_log(const char *fmt, ...)
{
	va_list	ap;

	fprintf(stderr, "fake_nrt: ERROR NRT:");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Is NeuronCore c listed in $FAKE_NRT_BUSY_FILE? */
static int
fake_busy(unsigned c)
{
	const char	*path = getenv("FAKE_NRT_BUSY_FILE");
	char		 buf[1024], *p, *end;
	FILE		*f;
	size_t		 n;

	if (path == NULL || (f = fopen(path, "r")) == NULL)
		return (0);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (p = buf; *p != '\0'; p = end) {
		unsigned long v = strtoul(p, &end, 10);

		if (end == p) {
			end = p + 1;
			continue;
		}
		if (v == c)
			return (1);
	}
	return (0);
}

int
nrt_init(int framework, const char *fw_version, const char *fal_version)
{
	const char	*env = getenv("NEURON_RT_VISIBLE_CORES");
	const char	*tot = getenv("FAKE_NRT_TOTAL_CORES");
	char		*p, *end;
	unsigned long	 lo, hi, c;
	size_t		 i;
	int		 st = NEURON_NRT_SUCCESS;

	pthread_mutex_lock(&fake_lock);
	if (fake_inited) {
		st = NEURON_NRT_FAILURE;
		goto out;
	}
	fake_ncores = 0;
	if (env == NULL || *env == '\0') {
		hi = tot != NULL ? strtoul(tot, NULL, 10) : 4;
		for (c = 0; c < hi && c < FAKE_MAX_CORES; c++)
			fake_cores[fake_ncores++] = (unsigned)c;
	} else {
		for (p = (char *)env; *p != '\0';) {
			lo = hi = strtoul(p, &end, 10);
			if (end == p) {
				fake_log("nrt_init invalid "
				    "NEURON_RT_VISIBLE_CORES '%s'", env);
				st = NEURON_NRT_INVALID;
				goto out;
			}
			if (*end == '-')
				hi = strtoul(end + 1, &end, 10);
			for (c = lo; c <= hi && fake_ncores < FAKE_MAX_CORES;
			    c++)
				fake_cores[fake_ncores++] = (unsigned)c;
			p = *end == ',' ? end + 1 : end;
		}
	}
	for (i = 0; i < fake_ncores; i++) {
		if (fake_busy(fake_cores[i])) {
			fake_log("nrt_allocate_neuron_cores NeuronCore(s) not "
			    "available - Requested:nc%u-nc%u Available:0",
			    fake_cores[i], fake_cores[i]);
			st = NEURON_NRT_RESOURCE;
			goto out;
		}
	}
	fake_inited = 1;
	fake_count.inits++;
out:
	pthread_mutex_unlock(&fake_lock);
	return (st);
}

void
nrt_close(void)
{
	pthread_mutex_lock(&fake_lock);
	if (fake_inited)
		fake_count.closes++;
	fake_inited = 0;
	pthread_mutex_unlock(&fake_lock);
}

int
nrt_get_version(struct neuron_nrt_version *v, size_t size)
{
	struct neuron_nrt_version	mine;

	memset(&mine, 0, sizeof mine);
	mine.major = 2;
	mine.minor = 99;
	mine.patch = 7;
	mine.maintenance = 0;
	snprintf(mine.detail, sizeof mine.detail, "fake_nrt");
	snprintf(mine.git_hash, sizeof mine.git_hash, "0000000");
	memcpy(v, &mine, size < sizeof mine ? size : sizeof mine);
	return (NEURON_NRT_SUCCESS);
}

static int
fake_dtype(const char *s, size_t *size)
{
	static const struct {
		const char	*name;
		int		 dt;
		size_t		 size;
	} t[] = {
		{ "float32", NEURON_NRT_DTYPE_FLOAT32, 4 },
		{ "float16", NEURON_NRT_DTYPE_FLOAT16, 2 },
		{ "bfloat16", NEURON_NRT_DTYPE_BFLOAT16, 2 },
		{ "int8", NEURON_NRT_DTYPE_INT8, 1 },
		{ "int16", NEURON_NRT_DTYPE_INT16, 2 },
		{ "int32", NEURON_NRT_DTYPE_INT32, 4 },
		{ "int64", NEURON_NRT_DTYPE_INT64, 8 },
		{ "uint8", NEURON_NRT_DTYPE_UINT8, 1 },
		{ "uint16", NEURON_NRT_DTYPE_UINT16, 2 },
		{ "uint32", NEURON_NRT_DTYPE_UINT32, 4 },
	};
	size_t	i;

	for (i = 0; i < sizeof t / sizeof t[0]; i++) {
		if (strcmp(t[i].name, s) == 0) {
			*size = t[i].size;
			return (t[i].dt);
		}
	}
	return (-1);
}

static void
fake_model_free(struct neuron_nrt_model *m)
{
	size_t	i;

	for (i = 0; i < m->n; i++)
		free(m->info[i].shape);
	free(m->info);
	free(m);
}

/* Parse "input|output NAME DTYPE DIM..." lines after the header. */
static struct neuron_nrt_model *
fake_neff_parse(const char *neff, size_t size)
{
	struct neuron_nrt_model		*m;
	struct neuron_nrt_tensor_info	*ti;
	char				*text, *line, *save, *w, *s2;
	char				 kind[16], name[256], dt[32];
	size_t				 esize;
	int				 off;

	if (size < 11 || memcmp(neff, "FAKENEFF 1\n", 11) != 0)
		return (NULL);
	text = strndup(neff, size);
	m = calloc(1, sizeof *m);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%15s %255s %31s %n", kind, name, dt, &off) !=
		    3 || (strcmp(kind, "input") != 0 &&
		    strcmp(kind, "output") != 0))
			continue;
		m->info = realloc(m->info, (m->n + 1) * sizeof *m->info);
		ti = &m->info[m->n++];
		memset(ti, 0, sizeof *ti);
		snprintf(ti->name, sizeof ti->name, "%s", name);
		ti->usage = kind[0] == 'i' ? NEURON_NRT_USAGE_INPUT :
		    NEURON_NRT_USAGE_OUTPUT;
		if ((ti->dtype = fake_dtype(dt, &esize)) < 0)
			goto bad;
		ti->size = esize;
		for (w = strtok_r(line + off, " ", &s2); w != NULL;
		    w = strtok_r(NULL, " ", &s2)) {
			ti->shape = realloc(ti->shape, (ti->ndim + 1) *
			    sizeof *ti->shape);
			ti->shape[ti->ndim++] = (uint32_t)strtoul(w, NULL, 10);
			ti->size *= ti->shape[ti->ndim - 1];
		}
	}
	free(text);
	return (m);
bad:
	free(text);
	fake_model_free(m);
	return (NULL);
}

int
nrt_load(const void *neff, size_t size, int32_t vnc, int32_t vnc_count,
    struct neuron_nrt_model **model)
{
	struct neuron_nrt_model	*m;

	*model = NULL;
	pthread_mutex_lock(&fake_lock);
	if (!fake_inited) {
		pthread_mutex_unlock(&fake_lock);
		return (NEURON_NRT_UNINITIALIZED);
	}
	if (vnc < -1 || vnc >= (int32_t)fake_ncores) {
		pthread_mutex_unlock(&fake_lock);
		fake_log("nrt_load invalid vnc %d (%zu visible)", vnc,
		    fake_ncores);
		return (NEURON_NRT_INVALID);
	}
	pthread_mutex_unlock(&fake_lock);
	if ((m = fake_neff_parse(neff, size)) == NULL) {
		fake_log("nrt_load Invalid NEFF: bad header or tensor table");
		return (NEURON_NRT_INVALID);
	}
	m->vnc = vnc < 0 ? 0 : vnc;
	pthread_mutex_lock(&fake_lock);
	fake_count.loads++;
	fake_count.live_models++;
	pthread_mutex_unlock(&fake_lock);
	*model = m;
	return (NEURON_NRT_SUCCESS);
}

int
nrt_unload(struct neuron_nrt_model *m)
{
	if (m == NULL)
		return (NEURON_NRT_INVALID_HANDLE);
	fake_model_free(m);
	pthread_mutex_lock(&fake_lock);
	fake_count.unloads++;
	fake_count.live_models--;
	pthread_mutex_unlock(&fake_lock);
	return (NEURON_NRT_SUCCESS);
}

int
nrt_get_model_tensor_info(struct neuron_nrt_model *m,
    struct neuron_nrt_tensor_info_array **out)
{
	struct neuron_nrt_tensor_info_array	*a;
	size_t					 i;

	a = calloc(1, sizeof *a + m->n * sizeof a->info[0]);
	a->count = m->n;
	for (i = 0; i < m->n; i++) {
		a->info[i] = m->info[i];
		a->info[i].shape = calloc(m->info[i].ndim + 1,
		    sizeof(uint32_t));
		memcpy(a->info[i].shape, m->info[i].shape,
		    m->info[i].ndim * sizeof(uint32_t));
	}
	*out = a;
	return (NEURON_NRT_SUCCESS);
}

int
nrt_free_model_tensor_info(struct neuron_nrt_tensor_info_array *a)
{
	uint64_t	i;

	for (i = 0; a != NULL && i < a->count; i++)
		free(a->info[i].shape);
	free(a);
	return (NEURON_NRT_SUCCESS);
}

int
nrt_tensor_allocate(int placement, int vnc, size_t size, const char *name,
    neuron_nrt_tensor **t)
{
	if (vnc < -1 || vnc >= (int)fake_ncores || size == 0)
		return (NEURON_NRT_INVALID);
	*t = calloc(1, sizeof **t);
	(*t)->size = size;
	(*t)->data = calloc(1, size);
	snprintf((*t)->name, sizeof (*t)->name, "%s", name ? name : "");
	pthread_mutex_lock(&fake_lock);
	fake_count.live_tensors++;
	pthread_mutex_unlock(&fake_lock);
	return (NEURON_NRT_SUCCESS);
}

void
nrt_tensor_free(neuron_nrt_tensor **t)
{
	if (t == NULL || *t == NULL)
		return;
	free((*t)->data);
	free(*t);
	*t = NULL;
	pthread_mutex_lock(&fake_lock);
	fake_count.live_tensors--;
	pthread_mutex_unlock(&fake_lock);
}

int
nrt_tensor_write(neuron_nrt_tensor *t, const void *buf, size_t off,
    size_t size)
{
	if (t == NULL || off > t->size || size > t->size - off)
		return (NEURON_NRT_INVALID);
	memcpy(t->data + off, buf, size);
	return (NEURON_NRT_SUCCESS);
}

int
nrt_tensor_read(const neuron_nrt_tensor *t, void *buf, size_t off,
    size_t size)
{
	if (t == NULL || off > t->size || size > t->size - off)
		return (NEURON_NRT_INVALID);
	memcpy(buf, t->data + off, size);
	return (NEURON_NRT_SUCCESS);
}

int
nrt_allocate_tensor_set(neuron_nrt_tensor_set **set)
{
	*set = calloc(1, sizeof(struct fake_set));
	pthread_mutex_lock(&fake_lock);
	fake_count.live_sets++;
	pthread_mutex_unlock(&fake_lock);
	return (NEURON_NRT_SUCCESS);
}

void
nrt_destroy_tensor_set(neuron_nrt_tensor_set **set)
{
	struct fake_set	*s;
	size_t		 i;

	if (set == NULL || *set == NULL)
		return;
	s = *set;
	for (i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	free(s->t);
	free(s);
	*set = NULL;
	pthread_mutex_lock(&fake_lock);
	fake_count.live_sets--;
	pthread_mutex_unlock(&fake_lock);
}

int
nrt_add_tensor_to_tensor_set(neuron_nrt_tensor_set *set, const char *name,
    neuron_nrt_tensor *t)
{
	struct fake_set	*s = set;
	size_t		 i;

	for (i = 0; i < s->n; i++) {
		if (strcmp(s->names[i], name) == 0) {
			s->t[i] = t;
			return (NEURON_NRT_SUCCESS);
		}
	}
	s->names = realloc(s->names, (s->n + 1) * sizeof *s->names);
	s->t = realloc(s->t, (s->n + 1) * sizeof *s->t);
	s->names[s->n] = strdup(name);
	s->t[s->n++] = t;
	return (NEURON_NRT_SUCCESS);
}

static neuron_nrt_tensor *
fake_set_find(const struct fake_set *s, const char *name)
{
	size_t	i;

	for (i = 0; i < s->n; i++) {
		if (strcmp(s->names[i], name) == 0)
			return (s->t[i]);
	}
	return (NULL);
}

int
nrt_execute(struct neuron_nrt_model *m, const neuron_nrt_tensor_set *in,
    neuron_nrt_tensor_set *out)
{
	neuron_nrt_tensor	*src[64], *dst;
	size_t			 i, nin = 0, k = 0, n;

	if (!fake_inited)
		return (NEURON_NRT_UNINITIALIZED);
	if (fake_busy(fake_cores[m->vnc])) {
		fake_log("nrt_execute NeuronCore nc%u is in use by another "
		    "process", fake_cores[m->vnc]);
		return (NEURON_NRT_EXEC_NC_BUSY);
	}
	for (i = 0; i < m->n; i++) {
		if (m->info[i].usage != NEURON_NRT_USAGE_INPUT)
			continue;
		src[nin] = fake_set_find(in, m->info[i].name);
		if (src[nin] == NULL || src[nin]->size != m->info[i].size) {
			fake_log("nrt_execute input '%s' missing or of the "
			    "wrong size", m->info[i].name);
			return (NEURON_NRT_EXEC_BAD_INPUT);
		}
		if (++nin == 64)
			break;
	}
	for (i = 0; i < m->n; i++) {
		if (m->info[i].usage != NEURON_NRT_USAGE_OUTPUT)
			continue;
		dst = fake_set_find(out, m->info[i].name);
		if (dst == NULL || dst->size != m->info[i].size) {
			fake_log("nrt_execute output '%s' missing or of the "
			    "wrong size", m->info[i].name);
			return (NEURON_NRT_INVALID);
		}
		memset(dst->data, 0, dst->size);
		if (k < nin) {
			n = src[k]->size < dst->size ? src[k]->size : dst->size;
			memcpy(dst->data, src[k]->data, n);
		}
		k++;
	}
	pthread_mutex_lock(&fake_lock);
	fake_count.executes++;
	pthread_mutex_unlock(&fake_lock);
	return (NEURON_NRT_SUCCESS);
}
