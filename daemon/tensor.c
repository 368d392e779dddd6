/* tensor.c: checks and conversions between wire tensors and sim_tensor. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/backend.h"
#include "daemon/shm.h"
#include "daemon/tensor.h"
#include "daemon/xmalloc.h"

static const char *
tensor_name(const Nkid__V1__Tensor *t, size_t i, char *buf, size_t len)
{
	if (t->name != NULL && t->name[0] != '\0')
		snprintf(buf, len, "input '%s'", t->name);
	else
		snprintf(buf, len, "input %zu", i);
	return (buf);
}

/* The tensor_err of each shm_err; TENSOR_ESHM for the others. */
static const int tensor_shm_errs[] = {
	[-SHM_ENOENT] = TENSOR_ENOENT,
	[-SHM_EPERM] = TENSOR_EPERM,
	[-SHM_ELIMIT] = TENSOR_ELIMIT,
	[-SHM_ESYS] = TENSOR_ESYS,
};

static int
tensor_shm_err(int error)
{
	if (error >= 0 || (size_t)-(long)error >= sizeof tensor_shm_errs /
	    sizeof tensor_shm_errs[0] || tensor_shm_errs[-error] == 0)
		return (TENSOR_ESHM);
	return (tensor_shm_errs[-error]);
}

/* Map the shared-memory inputs of in[] into st[]; 0 or a tensor_err. */
static int
tensor_inputs_map(Nkid__V1__Tensor *const *in, size_t n, struct shm_set *shm,
    struct sim_tensor *st, char *err, size_t errlen)
{
	const Nkid__V1__ShmRegion	*r;
	const void			*p;
	char				 name[320], msg[512];
	size_t				 i;
	int				 ri, error;

	for (i = 0; i < n; i++) {
		if ((r = in[i]->shm) == NULL)
			continue;
		ri = shm_set_open(shm, r->name, 0, r->offset, r->size, msg,
		    sizeof msg);
		error = ri < 0 ? ri : shm_set_map(shm, ri, r->offset, r->size,
		    &p, msg, sizeof msg);
		if (error < 0) {
			snprintf(err, errlen, "%s: %s", tensor_name(in[i], i,
			    name, sizeof name), msg);
			return (tensor_shm_err(error));
		}
		st[i].data = (void *)p;
		st[i].nbytes = (size_t)r->size;
	}
	shm_set_close(shm);
	return (0);
}

int
tensor_inputs_convert(Nkid__V1__Tensor *const *in, size_t n,
    size_t max_tensors, uint64_t max_bytes, int flags, struct shm_set *shm,
    struct sim_tensor **out, char *err, size_t errlen)
{
	const Nkid__V1__Tensor	*t;
	struct sim_tensor		*st;
	char			 name[320], msg[256];
	uint64_t		 total = 0, nbytes;
	size_t			 i, j, esize, nshm = 0;
	int			 dtype, error;

	*out = NULL;
	if (n > max_tensors) {
		snprintf(err, errlen, "%zu input tensors exceed the limit of "
		    "%zu (limits.max_tensors)", n, max_tensors);
		return (TENSOR_ELIMIT);
	}
	for (i = 0; i < n; i++) {
		t = in[i];
		tensor_name(t, i, name, sizeof name);
		if ((dtype = sim_dtype_from_name(t->dtype)) == SIM_DT_INVALID) {
			snprintf(err, errlen, "%s: unknown dtype '%s'", name,
			    t->dtype);
			return (TENSOR_EDTYPE);
		}
		if (t->n_shape > SIM_MAX_RANK) {
			snprintf(err, errlen, "%s: rank %zu exceeds the maximum "
			    "of %d", name, t->n_shape, SIM_MAX_RANK);
			return (TENSOR_ERANK);
		}
		esize = sim_dtype_size(dtype);
		nbytes = esize;
		for (j = 0; j < t->n_shape; j++) {
			if (__builtin_mul_overflow(nbytes, t->shape[j],
			    &nbytes)) {
				snprintf(err, errlen, "%s: shape x %s size "
				    "overflows 64 bits", name, t->dtype);
				return (TENSOR_ESIZE);
			}
		}
		if (t->shm != NULL) {
			if (shm == NULL) {
				snprintf(err, errlen, "%s: this call takes no "
				    "shared-memory tensors", name);
				return (TENSOR_ESHM);
			}
			if (t->data.len != 0) {
				snprintf(err, errlen, "%s: both data and shm "
				    "are set", name);
				return (TENSOR_ESIZE);
			}
			if (shm_name_check(t->shm->name, msg, sizeof msg) != 0) {
				snprintf(err, errlen, "%s: %s", name, msg);
				return (TENSOR_ESHM);
			}
			if (t->shm->size != nbytes) {
				snprintf(err, errlen, "%s: shape and dtype '%s' "
				    "need %llu bytes, shared-memory region '%s' "
				    "gives %llu", name, t->dtype,
				    (unsigned long long)nbytes, t->shm->name,
				    (unsigned long long)t->shm->size);
				return (TENSOR_ESIZE);
			}
			nshm++;
		} else if (!(t->data.len == 0 && (flags &
		    TENSOR_TAKE_SHAPES)) && nbytes != t->data.len) {
			snprintf(err, errlen, "%s: shape and dtype '%s' need "
			    "%llu bytes, data has %zu", name, t->dtype,
			    (unsigned long long)nbytes, t->data.len);
			return (TENSOR_ESIZE);
		}
		if (__builtin_add_overflow(total, nbytes, &total) ||
		    total > max_bytes) {
			snprintf(err, errlen, "input tensors exceed the limit of "
			    "%llu bytes at %s (limits.max_tensor_bytes)",
			    (unsigned long long)max_bytes, name);
			return (TENSOR_ELIMIT);
		}
	}
	st = xcalloc(n, sizeof *st);
	for (i = 0; i < n; i++) {
		t = in[i];
		st[i].dtype = sim_dtype_from_name(t->dtype);
		st[i].rank = (int)t->n_shape;
		nbytes = sim_dtype_size(st[i].dtype);
		for (j = 0; j < t->n_shape; j++) {
			st[i].shape[j] = t->shape[j];
			nbytes *= t->shape[j];	/* checked above */
		}
		st[i].data = t->data.data;
		st[i].nbytes = (size_t)nbytes;
		if (t->shm == NULL && t->data.len == 0 && (flags &
		    TENSOR_TAKE_SHAPES))
			st[i].data = NULL;	/* shapes only */
	}
	if (nshm > 0 && (error = tensor_inputs_map(in, n, shm, st, err,
	    errlen)) != 0) {
		free(st);
		return (error);
	}
	*out = st;
	return (0);
}

int
tensor_outputs_layout(const struct backend_program *p, uint64_t base,
    uint64_t *offsets, uint64_t *sizes, uint64_t *end)
{
	const struct sim_sig	*s;
	uint64_t	 at = base, nbytes;
	size_t		 i;
	int		 j;

	for (i = 0; i < p->noutputs; i++) {
		s = p->output(p, i);
		nbytes = sim_dtype_size(s->dtype);
		for (j = 0; j < s->rank && j < SIM_MAX_RANK; j++)
			if (__builtin_mul_overflow(nbytes, s->shape[j], &nbytes))
				return (-1);
		if (at % SHM_ALIGN != 0 && __builtin_add_overflow(at,
		    SHM_ALIGN - at % SHM_ALIGN, &at))
			return (-1);
		offsets[i] = at;
		sizes[i] = nbytes;
		if (__builtin_add_overflow(at, nbytes, &at))
			return (-1);
	}
	*end = at;
	return (0);
}

int
tensor_outputs_size(const struct backend_program *p, uint64_t max_bytes,
    uint64_t *total, char *err, size_t errlen)
{
	const struct sim_sig	*s;
	uint64_t	 sum = 0, nbytes;
	size_t		 i;
	int		 j;

	for (i = 0; i < p->noutputs; i++) {
		s = p->output(p, i);
		nbytes = sim_dtype_size(s->dtype);
		for (j = 0; j < s->rank && j < SIM_MAX_RANK; j++) {
			if (__builtin_mul_overflow(nbytes, s->shape[j], &nbytes))
				goto over;
		}
		if (__builtin_add_overflow(sum, nbytes, &sum))
			goto over;
	}
	if (sum > max_bytes) {
		snprintf(err, errlen, "kernel '%s' returns %llu bytes, over the "
		    "limit of %llu bytes (limits.max_tensor_bytes)", p->name,
		    (unsigned long long)sum, (unsigned long long)max_bytes);
		return (TENSOR_ELIMIT);
	}
	*total = sum;
	return (0);
over:
	snprintf(err, errlen, "kernel '%s': output sizes overflow 64 bits",
	    p->name);
	return (TENSOR_ESIZE);
}

Nkid__V1__Tensor **
tensor_outputs_messages(const struct backend_program *p, const struct sim_tensor *t,
    size_t n, const char *shm_name, const uint64_t *offsets)
{
	Nkid__V1__Tensor	**m;
	const struct sim_sig		 *s;
	const char		 *dn;
	size_t			  i;
	int			  j;

	m = xcalloc(n, sizeof *m);
	for (i = 0; i < n; i++) {
		m[i] = xmalloc(sizeof *m[i]);
		nkid__v1__tensor__init(m[i]);
		s = i < p->noutputs ? p->output(p, i) : NULL;
		if (s != NULL && s->name != NULL)
			m[i]->name = (char *)s->name;
		if ((dn = sim_dtype_name(t[i].dtype)) != NULL)
			m[i]->dtype = (char *)dn;
		m[i]->n_shape = (size_t)t[i].rank;
		m[i]->shape = xcalloc(SIM_MAX_RANK, sizeof(uint64_t));
		for (j = 0; j < t[i].rank && j < SIM_MAX_RANK; j++)
			m[i]->shape[j] = t[i].shape[j];
		if (shm_name != NULL) {
			m[i]->shm = xmalloc(sizeof *m[i]->shm);
			nkid__v1__shm_region__init(m[i]->shm);
			m[i]->shm->name = (char *)shm_name;
			m[i]->shm->offset = offsets[i];
			m[i]->shm->size = t[i].nbytes;
			continue;
		}
		m[i]->data.data = t[i].data;
		m[i]->data.len = t[i].nbytes;
	}
	return (m);
}

void
tensor_messages_free(Nkid__V1__Tensor **m, size_t n)
{
	size_t	i;

	if (m == NULL)
		return;
	for (i = 0; i < n; i++) {
		free(m[i]->shape);
		free(m[i]->shm);
		free(m[i]);
	}
	free(m);
}
