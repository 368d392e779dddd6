/* ctl_tensor.c: kernel inputs read from .npy files, placed on the kernel's parameters, and outputs written to .npy files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "ctl.h"
#include "ctl_kernel.h"
#include "ctl_tensor.h"

static int
ctl_tensor_is_ident(const char *s, size_t len)
{
	size_t	i;

	if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
		return (0);
	for (i = 0; i < len; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9')))
			return (0);
	return (1);
}

int
ctl_tensor_spec_split(const char *spec, char **name, char **file)
{
	const char	*eq = strchr(spec, '=');
	char		*copy = strdup(spec);

	if (copy == NULL)
		return (-1);
	if (eq != NULL && ctl_tensor_is_ident(spec, eq - spec)) {
		copy[eq - spec] = '\0';
		*name = copy;
		*file = copy + (eq - spec) + 1;
	} else {
		*name = NULL;
		*file = copy;
	}
	return (0);
}

void
ctl_tensor_shape_format(const uint64_t *shape, size_t rank, char *buf,
    size_t len)
{
	size_t	i, n = 0;

	n += snprintf(buf + n, len - n, "(");
	for (i = 0; i < rank && n < len; i++)
		n += snprintf(buf + n, len - n, "%s%llu", i ? ", " : "",
		    (unsigned long long)shape[i]);
	if (n < len)
		snprintf(buf + n, len - n, "%s)", rank == 1 ? "," : "");
}

void
ctl_tensor_inputs_release(struct ctl_tensor_inputs *in)
{
	size_t	i;

	for (i = 0; i < in->n; i++) {
		if (in->arrays != NULL)
			npy_array_release(&in->arrays[i]);
		if (in->names != NULL)
			free(in->names[i]);
	}
	free(in->arrays);
	free(in->names);
	free(in->tensors);
	free(in->ptrs);
	memset(in, 0, sizeof *in);
}

/* List the parameters for a message: "a, b, c". */
static void
ctl_tensor_param_list(const struct ctl_kernel_sig *sig, char *buf, size_t len)
{
	size_t	i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < sig->n_params && n < len; i++)
		n += snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
		    sig->params[i].name);
}

/*
 * Place the nspecs specs (names[i], NULL for an unnamed one) on the
 * parameters of sig: slot[j] gets the spec of parameter j. Returns
 * CTL_EXIT_OK, or CTL_EXIT_USAGE (printed).
 */
static int
ctl_tensor_place(struct ctl_ctx *ctx, const Nkid__V1__Kernel *k,
    const struct ctl_kernel_sig *sig, char *const *names, size_t nspecs,
    long *slot)
{
	const char	*pname;
	char		 plist[512];
	size_t		 i, j, n = sig->n_params;

	ctl_tensor_param_list(sig, plist, sizeof plist);
	for (j = 0; j < n; j++)
		slot[j] = -1;
	for (i = 0; i < nspecs; i++) {
		if (names[i] == NULL)
			continue;
		for (j = 0; j < n; j++)
			if (strcmp(sig->params[j].name, names[i]) == 0)
				break;
		if (j == n)
			return (ctl_usage_fail(ctx, "kernel '%s' has no "
			    "parameter '%s' (parameters: %s)", k->name,
			    names[i], *plist != '\0' ? plist : "none"));
		if (slot[j] >= 0)
			return (ctl_usage_fail(ctx, "input '%s' given twice",
			    names[i]));
		slot[j] = (long)i;
	}
	for (i = 0, j = 0; i < nspecs; i++) {
		if (names[i] != NULL)
			continue;
		while (j < n && slot[j] >= 0)
			j++;
		if (j == n)
			return (ctl_usage_fail(ctx, "kernel '%s' takes %zu "
			    "input%s (%s), got %zu", k->name, n,
			    n == 1 ? "" : "s", plist, nspecs));
		slot[j] = (long)i;
	}
	for (j = 0; j < n; j++) {
		pname = sig->params[j].name;
		if (slot[j] < 0)
			return (ctl_usage_fail(ctx, "missing input '%s' of "
			    "kernel '%s' (give -i %s=FILE.npy)", pname,
			    k->name, pname));
	}
	return (CTL_EXIT_OK);
}

/*
 * The array a read from file against parameter p of kernel k: the same
 * dtype and shape, or a usage error (exit 2: the inputs do not fit the
 * kernel, as a wrong input name does).
 */
static int
ctl_tensor_input_check(struct ctl_ctx *ctx, const Nkid__V1__Kernel *k,
    const struct ctl_kernel_param *p, const char *file,
    const struct npy_array *a)
{
	char	got[256], want[256];
	size_t	i;
	int	same = p->rank == (size_t)a->rank;

	for (i = 0; same && i < p->rank; i++)
		same = p->shape[i] == a->shape[i];
	if (*p->dtype != '\0' && strcmp(p->dtype, a->dtype) != 0)
		return (ctl_usage_fail(ctx, "input '%s' of kernel '%s' from "
		    "'%s' has dtype %s, the parameter is %s", p->name, k->name,
		    file, a->dtype, p->dtype));
	if (p->rank > 0 && !same) {
		ctl_tensor_shape_format(a->shape, (size_t)a->rank, got,
		    sizeof got);
		ctl_tensor_shape_format(p->shape, p->rank, want, sizeof want);
		return (ctl_usage_fail(ctx, "input '%s' of kernel '%s' from "
		    "'%s' has shape %s, the parameter is %s", p->name, k->name,
		    file, got, want));
	}
	return (CTL_EXIT_OK);
}

/*
 * Read file into input j of in, named name; p is the parameter (NULL if
 * the kernel's format does not tell). Returns CTL_EXIT_OK, CTL_EXIT_FAIL
 * (the file) or CTL_EXIT_USAGE (it does not fit p), printed.
 */
static int
ctl_tensor_input_read(struct ctl_ctx *ctx, const Nkid__V1__Kernel *k,
    struct ctl_tensor_inputs *in, size_t j, const char *name,
    const char *file, const struct ctl_kernel_param *p)
{
	struct npy_array	*a = &in->arrays[j];
	Nkid__V1__Tensor	*t = &in->tensors[j];
	const char		*want = p != NULL ? p->dtype : "";
	char			 err[1024];
	int			 rc;

	if ((in->names[j] = strdup(name)) == NULL)
		abort();
	if (npy_array_read(file, a, err, sizeof err) < 0) {
		ctl_errorf(ctx, "%s: %s", ctx->cmd->name, err);
		return (CTL_EXIT_FAIL);
	}
	if (*a->dtype == '\0') {
		if (strncmp(want, "float8_", 7) != 0) {
			ctl_errorf(ctx, "%s: cannot read '%s': raw 1-byte "
			    "dtype '%s' (an ml_dtypes float8?) for parameter "
			    "'%s'%s%s", ctx->cmd->name, file, a->descr, name,
			    *want != '\0' ? " of dtype " : "", want);
			return (CTL_EXIT_FAIL);
		}
		snprintf(a->dtype, sizeof a->dtype, "%s", want);
	}
	if (p != NULL && (rc = ctl_tensor_input_check(ctx, k, p, file, a)) !=
	    CTL_EXIT_OK)
		return (rc);
	nkid__v1__tensor__init(t);
	t->name = in->names[j];
	t->dtype = a->dtype;
	t->n_shape = a->rank;
	t->shape = a->shape;
	t->data.data = a->data;
	t->data.len = a->nbytes;
	in->ptrs[j] = t;
	return (CTL_EXIT_OK);
}

int
ctl_tensor_inputs_load(struct ctl_ctx *ctx, const Nkid__V1__Kernel *k,
    char *const *specs, size_t nspecs, struct ctl_tensor_inputs *in)
{
	struct ctl_kernel_sig	  sig;
	const char		 *name;
	char			  err[1024];
	char			**names, **files;
	long			 *slot;		/* parameter -> spec */
	size_t			  i, j, n;
	int			  rc = CTL_EXIT_OK;

	memset(in, 0, sizeof *in);
	if (ctl_kernel_sig_get(k, &sig, err, sizeof err) < 0) {
		ctl_errorf(ctx, "%s: %s", ctx->cmd->name, err);
		return (CTL_EXIT_FAIL);
	}
	n = sig.known ? sig.n_params : nspecs;
	names = calloc(nspecs + 1, sizeof *names);
	files = calloc(nspecs + 1, sizeof *files);
	slot = calloc(n + 1, sizeof *slot);
	in->arrays = calloc(n + 1, sizeof *in->arrays);
	in->names = calloc(n + 1, sizeof *in->names);
	in->tensors = calloc(n + 1, sizeof *in->tensors);
	in->ptrs = calloc(n + 1, sizeof *in->ptrs);
	if (names == NULL || files == NULL || slot == NULL ||
	    in->arrays == NULL || in->names == NULL || in->tensors == NULL ||
	    in->ptrs == NULL)
		abort();
	in->n = n;
	for (i = 0; i < nspecs; i++)
		if (ctl_tensor_spec_split(specs[i], &names[i], &files[i]) < 0)
			abort();

	if (sig.known)
		rc = ctl_tensor_place(ctx, k, &sig, names, nspecs, slot);
	else
		for (j = 0; j < n; j++)
			slot[j] = (long)j;
	for (j = 0; j < n && rc == CTL_EXIT_OK; j++) {
		i = (size_t)slot[j];
		name = sig.known ? sig.params[j].name : names[i] != NULL ?
		    names[i] : "";
		rc = ctl_tensor_input_read(ctx, k, in, j, name, files[i],
		    sig.known ? &sig.params[j] : NULL);
	}
	for (i = 0; i < nspecs; i++)
		free(names[i] != NULL ? names[i] : files[i]);
	free(names);
	free(files);
	free(slot);
	ctl_kernel_sig_release(&sig);
	return (rc);
}

int
ctl_tensor_inputs_shapes(struct ctl_ctx *ctx, const Nkid__V1__Kernel *k,
    struct ctl_tensor_inputs *in)
{
	struct ctl_kernel_sig	 sig;
	Nkid__V1__Tensor	*t;
	char			 err[1024];
	size_t			 j;

	memset(in, 0, sizeof *in);
	if (ctl_kernel_sig_get(k, &sig, err, sizeof err) < 0) {
		ctl_errorf(ctx, "%s: %s", ctx->cmd->name, err);
		return (CTL_EXIT_FAIL);
	}
	if (!sig.known) {
		ctl_kernel_sig_release(&sig);
		return (ctl_usage_fail(ctx, "kernel '%s' of format '%s' does "
		    "not tell its parameters: give each with -i", k->name,
		    k->format));
	}
	in->n = sig.n_params;
	in->arrays = calloc(in->n + 1, sizeof *in->arrays);
	in->names = calloc(in->n + 1, sizeof *in->names);
	in->tensors = calloc(in->n + 1, sizeof *in->tensors);
	in->ptrs = calloc(in->n + 1, sizeof *in->ptrs);
	if (in->arrays == NULL || in->names == NULL || in->tensors == NULL ||
	    in->ptrs == NULL)
		abort();
	for (j = 0; j < in->n; j++) {
		t = &in->tensors[j];
		nkid__v1__tensor__init(t);
		if ((in->names[j] = strdup(sig.params[j].name)) == NULL)
			abort();
		/* The shape lives in the array, as read inputs' do. */
		in->arrays[j].rank = (int)sig.params[j].rank;
		memcpy(in->arrays[j].shape, sig.params[j].shape,
		    sig.params[j].rank * sizeof sig.params[j].shape[0]);
		snprintf(in->arrays[j].dtype, sizeof in->arrays[j].dtype, "%s",
		    sig.params[j].dtype);
		t->name = in->names[j];
		t->dtype = in->arrays[j].dtype;
		t->n_shape = sig.params[j].rank;
		t->shape = in->arrays[j].shape;
		in->ptrs[j] = t;
	}
	ctl_kernel_sig_release(&sig);
	return (CTL_EXIT_OK);
}

/* A name usable as a file name in DIR: no '/', not hidden, not empty. */
static int
ctl_tensor_name_ok(const char *s)
{
	return (*s != '\0' && *s != '.' && strchr(s, '/') == NULL &&
	    strlen(s) < 200);
}

int
ctl_tensor_outputs_write(struct ctl_ctx *ctx, const char *dir,
    Nkid__V1__Tensor *const *outs, size_t n, cJSON *arr)
{
	char	err[1024], **paths;
	char	shape[256];
	size_t	i, j;
	int	rc = CTL_EXIT_OK, wn = 6, wd = 5, ws = 5;

	if (dir == NULL || *dir == '\0')
		dir = ".";
	if (n > 0 && mkdir(dir, 0777) < 0 && errno != EEXIST) {
		ctl_errorf(ctx, "%s: cannot create output directory '%s': %s",
		    ctx->cmd->name, dir, strerror(errno));
		return (CTL_EXIT_FAIL);
	}
	paths = calloc(n + 1, sizeof *paths);
	if (paths == NULL) {
		ctl_errorf(ctx, "%s: out of memory", ctx->cmd->name);
		return (CTL_EXIT_FAIL);
	}
	for (i = 0; i < n; i++) {
		const Nkid__V1__Tensor *t = outs[i];
		const char *name = t->name;
		char alt[32];
		int dup = 0, r;

		if (!ctl_tensor_name_ok(name)) {
			snprintf(alt, sizeof alt, "output%zu", i);
			name = alt;
		}
		for (j = 0; j < i; j++)
			if (outs[j] != NULL && strcmp(outs[j]->name, t->name) ==
			    0)
				dup = 1;
		/* "x.npy" rather than "./x.npy" in the current directory */
		r = asprintf(&paths[i], dup ? "%s%s%s_%zu.npy" : "%s%s%s.npy",
		    strcmp(dir, ".") == 0 ? "" : dir,
		    strcmp(dir, ".") == 0 ? "" : "/", name, i);
		if (r < 0) {
			paths[i] = NULL;
			rc = CTL_EXIT_FAIL;
			continue;
		}
		if (t->n_shape > NPY_MAX_RANK) {
			ctl_errorf(ctx, "%s: cannot write '%s': rank %zu over "
			    "%d", ctx->cmd->name, paths[i], t->n_shape,
			    NPY_MAX_RANK);
			free(paths[i]);
			paths[i] = NULL;
			rc = CTL_EXIT_FAIL;
			continue;
		}
		if (npy_array_write(paths[i], t->dtype, (int)t->n_shape,
		    t->shape, t->data.data, t->data.len, err,
		    sizeof err) < 0) {
			ctl_errorf(ctx, "%s: output '%s': %s", ctx->cmd->name,
			    t->name, err);
			free(paths[i]);
			paths[i] = NULL;
			rc = CTL_EXIT_FAIL;
			continue;
		}
		ctl_tensor_shape_format(t->shape, t->n_shape, shape,
		    sizeof shape);
		if ((int)strlen(t->name) > wn)
			wn = (int)strlen(t->name);
		if ((int)strlen(t->dtype) > wd)
			wd = (int)strlen(t->dtype);
		if ((int)strlen(shape) > ws)
			ws = (int)strlen(shape);
	}
	if (arr == NULL && n > 0)
		fprintf(ctx->out, "%-*s  %-*s  %-*s  %s\n", wn, "output", wd,
		    "dtype", ws, "shape", "file");
	for (i = 0; i < n; i++) {
		const Nkid__V1__Tensor *t = outs[i];

		if (paths[i] == NULL)
			continue;
		ctl_tensor_shape_format(t->shape, t->n_shape, shape,
		    sizeof shape);
		if (arr != NULL) {
			cJSON *o = cJSON_CreateObject(), *s;

			if (o == NULL || !cJSON_AddItemToArray(arr, o))
				continue;
			cJSON_AddStringToObject(o, "name", t->name);
			cJSON_AddStringToObject(o, "dtype", t->dtype);
			s = cJSON_AddArrayToObject(o, "shape");
			for (j = 0; s != NULL && j < t->n_shape; j++)
				cJSON_AddItemToArray(s,
				    cJSON_CreateNumber((double)t->shape[j]));
			cJSON_AddStringToObject(o, "path", paths[i]);
		} else {
			fprintf(ctx->out, "%-*s  %-*s  %-*s  %s\n", wn, t->name,
			    wd, t->dtype, ws, shape, paths[i]);
		}
	}
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return (rc);
}
