/* sim_exec_view.c: the interpreter's access to memory: affine offsets at the run's loop variables, row iterators over strided views, active flags of masked rows, rows read and written in a tensor's dtype, whole views gathered and scattered. */
/* Floor 3, under the interpreter (sim_exec*.c): calls floor 0 only. */
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

uint64_t
sim_exec_lin(const struct sim_run *r, const struct sim_lin *l)
{
	const struct sim_term	*t;
	uint64_t		 v = (uint64_t)l->c;
	int64_t			 x;
	uint32_t		 i;

	for (i = 0; i < l->nt; i++) {
		t = &l->t[i];
		x = t->kind == NKIR__V1__TERM_KIND__TERM_LOOP ?
		    r->lv[t->index] : r->pid[t->index];
		v += (uint64_t)t->coef * (uint64_t)x;
	}
	return (v);
}

/* l at the start of the iterator's current row (axes 0 .. rank-2). */
int64_t
sim_exec_lin_row(const struct sim_run *r, const struct sim_lin *l,
    const struct sim_rows *it)
{
	uint64_t	v = sim_exec_lin(r, l);
	int		a;

	for (a = 0; a < it->rank - 1; a++)
		v += (uint64_t)l->ax[a] * it->idx[a];
	return ((int64_t)v);
}

void
sim_exec_rows_begin(struct sim_rows *it, const struct sim_run *r, int rank,
    const uint64_t *shape, const struct sim_view **v, int nv)
{
	int	k;

	memset(it, 0, sizeof(*it));
	it->rank = rank;
	it->shape = shape;
	it->end0 = shape[0];
	it->nv = nv;
	for (k = 0; k < nv; k++) {
		it->v[k] = v[k];
		it->off[k] = v[k] != NULL ? sim_exec_lin(r, &v[k]->off) : 0;
	}
}

/* Iterate only the rows whose axis-0 index is in [lo, hi) (rank >= 2;
 * a rank-1 space is one row and stays whole). */
void
sim_exec_rows_range(struct sim_rows *it, uint64_t lo, uint64_t hi)
{
	int	k;

	if (it->rank < 2)
		return;
	it->idx[0] = lo;
	it->end0 = hi;
	for (k = 0; k < it->nv; k++)
		if (it->v[k] != NULL)
			it->off[k] += (uint64_t)it->v[k]->off.ax[0] * lo;
}

bool
sim_exec_rows_next(struct sim_rows *it)
{
	int	a, k;

	for (a = it->rank - 2; a >= 0; a--) {
		it->idx[a]++;
		for (k = 0; k < it->nv; k++)
			if (it->v[k] != NULL)
				it->off[k] += (uint64_t)it->v[k]->off.ax[a];
		if (it->idx[a] < (a == 0 ? it->end0 : it->shape[a]))
			return (true);
		for (k = 0; k < it->nv; k++)
			if (it->v[k] != NULL)
				it->off[k] -= (uint64_t)it->v[k]->off.ax[a] *
				    it->shape[a];
		it->idx[a] = 0;
	}
	return (false);
}

int
sim_exec_fail(struct sim_run *r, const struct sim_op *op, int code,
    const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	sim_diag_vset_at(r->diag, op->file, op->line, fmt, ap);
	va_end(ap);
	return (code);
}

/*
 * Active flags of the current row: every mask of every view must hold.
 * Active elements of masked views are bounds-checked here.
 */
int
sim_exec_active(struct sim_run *r, const struct sim_op *op,
    const struct sim_rows *it, uint8_t *act, size_t n)
{
	int	last = it->rank - 1, k, m, d;
	size_t	i;

	memset(act, 1, n);
	for (k = 0; k < it->nv; k++) {
		const struct sim_view	*v = it->v[k];

		if (v == NULL)
			continue;
		for (m = 0; m < v->nmask; m++) {
			int64_t	base = sim_exec_lin_row(r, &v->mask[m], it);
			int64_t	step = v->mask[m].ax[last];

			for (i = 0; i < n; i++)
				if (base + (int64_t)i * step < 0)
					act[i] = 0;
		}
	}
	for (k = 0; k < it->nv; k++) {
		const struct sim_view	*v = it->v[k];
		const struct sim_tinfo	*ti;

		if (v == NULL)
			continue;
		ti = r->t[v->tensor].ti;
		for (d = 0; d < v->ndim; d++) {
			int64_t	base = sim_exec_lin_row(r, &v->dim[d], it);
			int64_t	step = v->dim[d].ax[last];

			for (i = 0; i < n; i++) {
				int64_t	x = base + (int64_t)i * step;

				if (act[i] && (x < 0 ||
				    (uint64_t)x >= ti->shape[d]))
					return (sim_exec_fail(r, op,
					    SIM_ERUNTIME, "Out-of-bound access "
					    "for tensor `%s` on dimension %d: "
					    "index %lld exceed dimension size "
					    "of %llu", ti->name, d,
					    (long long)x, (unsigned long long)
					    ti->shape[d]));
			}
		}
	}
	return (0);
}

int
sim_exec_row_act(struct sim_run *r, const struct sim_op *op, bool masked,
    const struct sim_rows *it, size_t n, const uint8_t **act)
{
	int	rc;

	*act = NULL;
	if (!masked)
		return (0);
	if ((rc = sim_exec_active(r, op, it, r->act, n)))
		return (rc);
	*act = r->act;
	return (0);
}

void
sim_exec_act_save(uint8_t *save, const uint8_t *act, size_t n)
{
	if (act != NULL)
		memcpy(save, act, n);
	else
		memset(save, 1, n);
}

/* Read a row of n elements of operand s at offset off. Returns fp32
 * values and their stride (0 or 1) in *st; tmp has room for n. */
const float *
sim_exec_read(const struct sim_run *r, const struct sim_operand *s,
    uint64_t off, size_t n, float *tmp, int64_t *st, const uint8_t *act)
{
	const struct sim_bind	*bd;
	int64_t			 ax;
	size_t			 i;

	if (s->scalar) {
		*st = 0;
		return (&s->value);
	}
	bd = &r->t[s->v.tensor];
	ax = s->v.off.ax[s->v.rank - 1];
	if (act != NULL) {
		for (i = 0; i < n; i++) {
			uint64_t	e = off + (uint64_t)ax * i;

			if (!act[i])
				tmp[i] = 0.0f;
			else if (bd->f32)
				tmp[i] = ((const float *)bd->base)[e];
			else
				sim_dtype_decode(bd->dtype,
				    bd->base + e * bd->esize, 1, 1, &tmp[i]);
		}
		*st = 1;
		return (tmp);
	}
	if (bd->f32) {
		const float	*p = (const float *)bd->base + off;

		if (ax == 0 || ax == 1) {
			*st = ax;
			return (p);
		}
		for (i = 0; i < n; i++)
			tmp[i] = p[(int64_t)i * ax];
		*st = 1;
		return (tmp);
	}
	if (ax == 0) {
		sim_dtype_decode(bd->dtype, bd->base + off * bd->esize, 1, 1,
		    tmp);
		*st = 0;
		return (tmp);
	}
	sim_dtype_decode(bd->dtype, bd->base + off * bd->esize, ax, n, tmp);
	*st = 1;
	return (tmp);
}

/* Write n values src[i * sst] to a tile at element offset off, ax apart,
 * rounded to the tile's dtype. */
static void
sim_exec_write_chip(const struct sim_bind *bd, uint64_t off, int64_t ax,
    size_t n, const float *src, int64_t sst)
{
	float	*d = (float *)bd->base + off;

	if (bd->dtype == SIM_DT_FLOAT32 && ax == 1 && sst == 1) {
		if (d != src)
			memmove(d, src, n * sizeof(float));
		return;
	}
	sim_dtype_round_row(bd->dtype, d, ax, src, sst, n);
}

/* Write n values src[i * sst] to view v at offset off, rounded to the
 * tensor's dtype; only active elements when act is set. */
void
sim_exec_write(const struct sim_run *r, const struct sim_view *v,
    uint64_t off, size_t n, const float *src, int64_t sst,
    const uint8_t *act)
{
	const struct sim_bind	*bd = &r->t[v->tensor];
	int64_t			 ax = v->off.ax[v->rank - 1];
	size_t			 i;

	if (act != NULL) {
		for (i = 0; i < n; i++) {
			uint64_t	e = off + (uint64_t)ax * i;
			float		x = src[(int64_t)i * sst];

			if (!act[i])
				continue;
			if (bd->chip)
				((float *)bd->base)[e] =
				    sim_dtype_round(bd->dtype, x);
			else
				sim_dtype_encode(bd->dtype,
				    bd->base + e * bd->esize, 1, 1, &x, 1);
		}
		return;
	}
	if (bd->chip) {
		sim_exec_write_chip(bd, off, ax, n, src, sst);
		return;
	}
	if (bd->dtype == SIM_DT_FLOAT32 && ax == 1 && sst == 1) {
		memmove(bd->base + off * 4, src, n * sizeof(float));
		return;
	}
	sim_dtype_encode(bd->dtype, bd->base + off * bd->esize, ax, n, src,
	    sst);
}

/* Copy view v into buf (row-major in v's shape); inactive elements get
 * `inactive` and, if act_out is set, a 0 flag there. */
int
sim_exec_gather(struct sim_run *r, const struct sim_op *op,
    const struct sim_operand *s, float *buf, uint8_t *act_out,
    float inactive)
{
	const struct sim_view	*v = &s->v, *vs[1] = { v };
	size_t			 n = v->shape[v->rank - 1];
	struct sim_rows		 it;
	int64_t			 st;
	int			 rc;
	size_t			 i;

	sim_exec_rows_begin(&it, r, v->rank, v->shape, vs, 1);
	do {
		const uint8_t	*act;
		const float	*p;

		if ((rc = sim_exec_row_act(r, op, v->nmask, &it, n, &act)))
			return (rc);
		p = sim_exec_read(r, s, it.off[0], n, r->row[0], &st, act);
		for (i = 0; i < n; i++)
			buf[i] = act && !act[i] ? inactive : p[(int64_t)i * st];
		if (act_out != NULL) {
			sim_exec_act_save(act_out, act, n);
			act_out += n;
		}
		buf += n;
	} while (sim_exec_rows_next(&it));
	return (0);
}

/* Write buf (row-major in v's shape) through view v. */
int
sim_exec_scatter(struct sim_run *r, const struct sim_op *op,
    const struct sim_view *v, const float *buf)
{
	const struct sim_view	*vs[1] = { v };
	const struct sim_bind	*bd = &r->t[v->tensor];
	size_t			 n = v->shape[v->rank - 1];
	struct sim_rows		 it;
	int			 rc, rank = v->rank;

	if (!v->nmask && bd->chip) {
		/* trailing axes of one element (a reduction's kept axes):
		 * rows along the last longer axis */
		while (rank > 2 && v->shape[rank - 1] == 1)
			rank--;
		n = v->shape[rank - 1];
		sim_exec_rows_begin(&it, r, rank, v->shape, vs, 1);
		do {
			sim_exec_write_chip(bd, it.off[0],
			    v->off.ax[rank - 1], n, buf, 1);
			buf += n;
		} while (sim_exec_rows_next(&it));
		return (0);
	}
	sim_exec_rows_begin(&it, r, v->rank, v->shape, vs, 1);
	do {
		const uint8_t	*act;

		if ((rc = sim_exec_row_act(r, op, v->nmask, &it, n, &act)))
			return (rc);
		sim_exec_write(r, v, it.off[0], n, buf, 1, act);
		buf += n;
	} while (sim_exec_rows_next(&it));
	return (0);
}
