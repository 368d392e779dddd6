/* tensor.c: checks and conversions between wire tensors and sim_tensor. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/backend.h"
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

int
tensor_inputs_convert(Nkid__V1__Tensor *const *in, size_t n,
    size_t max_tensors, uint64_t max_bytes, sim_tensor **out, char *err,
    size_t errlen)
{
	const Nkid__V1__Tensor	*t;
	sim_tensor		*st;
	char			 name[320];
	uint64_t		 total = 0, nbytes;
	size_t			 i, j, esize;
	int			 dtype;

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
		if (nbytes != t->data.len) {
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
		for (j = 0; j < t->n_shape; j++)
			st[i].shape[j] = t->shape[j];
		st[i].data = t->data.data;
		st[i].nbytes = t->data.len;
	}
	*out = st;
	return (0);
}

int
tensor_outputs_size(const struct backend_program *p, uint64_t max_bytes,
    uint64_t *total, char *err, size_t errlen)
{
	const sim_sig	*s;
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
tensor_outputs_messages(const struct backend_program *p, const sim_tensor *t,
    size_t n)
{
	Nkid__V1__Tensor	**m;
	const sim_sig		 *s;
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
		free(m[i]);
	}
	free(m);
}
