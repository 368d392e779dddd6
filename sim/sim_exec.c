/* sim_exec.c: the interpreter: runs every program of a kernel's SPMD grid over host memory, row by row through strided views, matmul through cblas_sgemm, independent parts side by side on the pool's threads. */
/* Floor 3: calls sim_print.c and floor 0; runs what sim_plan.c and
 * sim_par.c built. */
#include <sys/mman.h>

#ifdef __SSE__
#include <immintrin.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/* ------------------------------------------------------------ helpers */

/* malloc for tensors: large ones on 2 MiB boundaries with transparent
 * huge pages (as numpy does), which halves the page-fault cost of a
 * fresh output. Freed with free(). */
static void *
sim_exec_tensor_alloc(size_t n)
{
	void	*p;

	if (n < (4u << 20))
		return (malloc(n ? n : 1));
	if (posix_memalign(&p, 2u << 20, n) != 0)
		return (NULL);
#ifdef MADV_HUGEPAGE
	madvise(p, n, MADV_HUGEPAGE);
#endif
	return (p);
}

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
static void
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

/* ------------------------------------------------------------ side by side */

/*
 * Work (element operations, sim_op.par_work) below which an op's rows are
 * not split, per part, and below which a loop's iterations or the grid's
 * programs are not spread over the pool. Handing out parts costs a few
 * microseconds; but a worker that took a part and is then preempted holds
 * the caller for the rest of its time slice (milliseconds on a loaded
 * machine), so only work of a millisecond or more is worth the risk
 * (docs/performance.md, "Thresholds").
 */
#ifndef SIM_EXEC_SPLIT_MIN
#define SIM_EXEC_SPLIT_MIN	(512u << 10)
#endif
#ifndef SIM_EXEC_REGION_MIN
#define SIM_EXEC_REGION_MIN	(1u << 20)
#endif
/* Parts per thread of a spread loop or grid or a split op, so that a
 * thread the machine runs slower (or not at all: a shared machine) takes
 * fewer and the others take the rest. */
#define SIM_EXEC_CHUNKS		4

/* A pool slot's memory for one run: this header, a run block (tiles,
 * scratch, rows, active flags), the slot's binds and loop variables. One
 * allocation, kept by the program between runs (sim_program.par_free). */
struct sim_exec_slot {
	char		*mem;
	struct sim_bind	*t;
	int64_t		*lv;
};

static size_t
sim_exec_slot_hdr(void)
{
	return ((sizeof(struct sim_exec_slot) + 63) & ~(size_t)63);
}

static size_t
sim_exec_slot_bytes(const struct sim_program *p)
{
	return (sim_exec_slot_hdr() + p->run_bytes +
	    (p->ntensors + 1) * sizeof(struct sim_bind) +
	    (p->nloopvars + p->nfns + 1) * sizeof(int64_t));
}

/* Point r's scratch, rows and active flags into run block mem. */
static void
sim_exec_run_rows(struct sim_run *r, char *mem, bool scratch)
{
	const struct sim_program	*p = r->p;
	size_t				 row = p->row_max ? p->row_max : 1, i;

	if (scratch) {
		r->mem = mem;
		r->scratch = (float *)(mem + p->scratch_off);
	}
	for (i = 0; i < 5; i++)
		r->row[i] = (float *)(mem + p->row_off) +
		    i * (((row * sizeof(float) + 63) & ~(size_t)63) /
		    sizeof(float));
	r->act = (uint8_t *)mem + p->act_off;
}

/* The memory of pool slot `slot` in run r, taken on first use (called
 * only by the thread of that slot); NULL if out of memory. */
static struct sim_exec_slot *
sim_exec_slot_get(struct sim_run *r, unsigned slot)
{
	struct sim_program	*p = (struct sim_program *)r->p;
	struct sim_exec_slot	*s;
	char			*blk = NULL;

	if ((s = r->slots[slot]) != NULL)
		return (s);
	pthread_mutex_lock(&p->run_mu);
	if (p->par_nfree > 0)
		blk = p->par_free[--p->par_nfree];
	pthread_mutex_unlock(&p->run_mu);
	if (blk == NULL &&
	    (blk = sim_exec_tensor_alloc(sim_exec_slot_bytes(p))) == NULL)
		return (NULL);
	s = (struct sim_exec_slot *)blk;
	s->mem = blk + sim_exec_slot_hdr();
	s->t = (struct sim_bind *)(s->mem + p->run_bytes);
	s->lv = (int64_t *)(s->t + p->ntensors + 1);
	r->slots[slot] = s;
	return (s);
}

/* Give the run's slot memory back to the program (or free it). */
static void
sim_exec_slots_release(struct sim_run *r)
{
	struct sim_program	*p = (struct sim_program *)r->p;
	unsigned		 i;

	if (r->slots == NULL)
		return;
	for (i = 0; i < SIM_POOL_MAX; i++) {
		if (r->slots[i] == NULL)
			continue;
		pthread_mutex_lock(&p->run_mu);
		if (p->par_nfree < SIM_POOL_MAX &&
		    sim_exec_slot_bytes(p) <= SIM_RUN_CACHE_MAX) {
			p->par_block_bytes = sim_exec_slot_bytes(p);
			p->par_free[p->par_nfree++] = r->slots[i];
			r->slots[i] = NULL;
		}
		pthread_mutex_unlock(&p->run_mu);
		free(r->slots[i]);
	}
	free(r->slots);
	r->slots = NULL;
}

/* The first failure of parts run side by side: the one the sequential
 * order meets first (the lowest part) wins. */
struct sim_exec_fails {
	pthread_mutex_t		 mu;
	atomic_uint		 first;		/* lowest failed part */
	int			 rc;
	struct sim_diag		 diag;
};

static void
sim_exec_fails_init(struct sim_exec_fails *f, unsigned parts)
{
	pthread_mutex_init(&f->mu, NULL);
	atomic_init(&f->first, parts);
	f->rc = 0;
	f->diag.msg[0] = '\0';
}

static void
sim_exec_fails_add(struct sim_exec_fails *f, unsigned part, int rc,
    const struct sim_diag *d)
{
	pthread_mutex_lock(&f->mu);
	if (part < atomic_load(&f->first)) {
		atomic_store(&f->first, part);
		f->rc = rc;
		f->diag = *d;
		if (rc == SIM_ENOMEM && f->diag.msg[0] == '\0')
			sim_diag_set(&f->diag, "out of memory");
	}
	pthread_mutex_unlock(&f->mu);
}

/* The result for the caller's run r: 0, or the first failure (its
 * message in r's diag). */
static int
sim_exec_fails_end(struct sim_exec_fails *f, struct sim_run *r)
{
	pthread_mutex_destroy(&f->mu);
	if (f->rc != 0 && r->diag != NULL)
		*r->diag = f->diag;
	return (f->rc);
}

/* Into how many parts to split `units` units of `work` element operations
 * (at least min of work each): 1 when not worth it or not allowed. */
static unsigned
sim_exec_parts(const struct sim_run *r, uint64_t units, uint64_t work,
    uint64_t min)
{
	uint64_t	n;

	if (r->inpar || r->threads <= 1 || r->slots == NULL)
		return (1);
	n = work / min;
	if (n > (uint64_t)r->threads * SIM_EXEC_CHUNKS)
		n = (uint64_t)r->threads * SIM_EXEC_CHUNKS;
	if (n > units)
		n = units;
	return (n < 2 ? 1 : (unsigned)n);
}

/* One op's rows split over the pool. */
struct sim_exec_split {
	struct sim_run		*r;
	const struct sim_op	*op;
	size_t			 k;
	uint64_t		 n;		/* units split */
	uint64_t		 grain;		/* parts start at multiples */
	unsigned		 parts;
	/* run op (k ops of a fused group) for axis-0 indices (matmul:
	 * columns) [lo, hi) in run w */
	int			(*fn)(struct sim_run *w,
				    const struct sim_op *op, size_t k,
				    uint64_t lo, uint64_t hi, void *ctx);
	void			*ctx;
	struct sim_exec_fails	 fails;
};

static uint64_t
sim_exec_split_at(const struct sim_exec_split *sp, unsigned i)
{
	if (i >= sp->parts)
		return (sp->n);
	return ((sp->n / sp->grain) * i / sp->parts * sp->grain);
}

static void
sim_exec_split_cb(void *arg, unsigned task, unsigned slot)
{
	struct sim_exec_split	*sp = arg;
	struct sim_run		 w = *sp->r;
	struct sim_exec_slot	*s;
	struct sim_diag		 d;
	int			 rc;

	d.msg[0] = '\0';
	w.diag = &d;
	w.inpar = true;
	if (slot != 0) {
		/* rows and flags of its own; tiles, scratch shared */
		if ((s = sim_exec_slot_get(sp->r, slot)) == NULL) {
			sim_exec_fails_add(&sp->fails, task, SIM_ENOMEM, &d);
			return;
		}
		sim_exec_run_rows(&w, s->mem, false);
	}
	rc = sp->fn(&w, sp->op, sp->k, sim_exec_split_at(sp, task),
	    sim_exec_split_at(sp, task + 1), sp->ctx);
	if (rc != 0)
		sim_exec_fails_add(&sp->fails, task, rc, &d);
}

/*
 * Run fn over [0, n) in parts side by side when the op's work is worth
 * it (each part a multiple of grain units but the last), else whole on
 * the caller's thread. Parts write disjoint elements (sim_op.par_split),
 * so the result is the same whichever way it runs.
 */
static int
sim_exec_split(struct sim_run *r, const struct sim_op *op, size_t k,
    uint64_t n, uint64_t grain, uint64_t work,
    int (*fn)(struct sim_run *, const struct sim_op *, size_t, uint64_t,
    uint64_t, void *), void *ctx)
{
	struct sim_exec_split	sp;

	memset(&sp, 0, sizeof(sp));
	sp.parts = sim_exec_parts(r, n / grain, work, SIM_EXEC_SPLIT_MIN);
	if (sp.parts <= 1)
		return (fn(r, op, k, 0, n, ctx));
	sp.r = r;
	sp.op = op;
	sp.k = k;
	sp.n = n;
	sp.grain = grain;
	sp.fn = fn;
	sp.ctx = ctx;
	sim_exec_fails_init(&sp.fails, sp.parts);
	sim_pool_run(r->threads, sp.parts, sim_exec_split_cb, &sp);
	return (sim_exec_fails_end(&sp.fails, r));
}

/* ------------------------------------------------------------ math */

static inline int64_t
sim_exec_f2i(float x)
{
	if (!(x == x))
		return (0);
	if (x >= 9.2e18f)
		return (INT64_MAX);
	if (x <= -9.2e18f)
		return (INT64_MIN);
	return ((int64_t)x);
}

static inline float
sim_exec_mod(float x, float y)
{
	float	m = fmodf(x, y);

	if (m != 0.0f && ((m < 0.0f) != (y < 0.0f)))
		m += y;
	return (m);
}

static inline float
sim_exec_shift(float x, float y, bool left)
{
	int32_t	a = (int32_t)(uint32_t)(sim_exec_f2i(x) & 0xffffffff);
	int	s = (int)(sim_exec_f2i(y) & 31);

	if (left)
		return ((float)(int32_t)((uint32_t)a << s));
	return ((float)(a >> s));
}

/* ~x for x an unsigned integer of the given width (1: bool, !x). */
static inline float
sim_exec_invert_u(float x, int bits)
{
	uint64_t	m = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;

	return ((float)(m - ((uint64_t)sim_exec_f2i(x) & m)));
}

/* The row loops of element-wise arithmetic, built for the widest vectors
 * the CPU runs: IEEE add, multiply, divide and compare round alike at
 * every width (sim/ is built with -ffp-contract=off), so the bits do not
 * depend on the clone. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SIM_EXEC_WIDE __attribute__((target_clones("avx512f", "avx2", \
	"default")))
#else
#define SIM_EXEC_WIDE
#endif

SIM_EXEC_WIDE void
sim_exec_alu_row(int alu, float *o, const float *a, int64_t sa,
    const float *b, int64_t sb, size_t n)
{
	float	x, y, z;
	size_t	i;

/* o[i] = EXPR of x = a[i * sa] and y = b[i * sb] (strides 0 or 1). */
#define SIM_ALU(EXPR) do {						\
	if (sa == 1 && sb == 1) {					\
		for (i = 0; i < n; i++) {				\
			x = a[i];					\
			y = b[i];					\
			o[i] = (EXPR);					\
		}							\
	} else if (sa == 1) {						\
		y = b[0];						\
		for (i = 0; i < n; i++) {				\
			x = a[i];					\
			o[i] = (EXPR);					\
		}							\
	} else if (sb == 1) {						\
		x = a[0];						\
		for (i = 0; i < n; i++) {				\
			y = b[i];					\
			o[i] = (EXPR);					\
		}							\
	} else {							\
		x = a[0];						\
		y = b[0];						\
		z = (EXPR);						\
		for (i = 0; i < n; i++)					\
			o[i] = z;					\
	}								\
} while (0)
	switch (alu) {
	case NKIR__V1__ALU_OP__ALU_ADD:
		SIM_ALU(x + y);
		break;
	case NKIR__V1__ALU_OP__ALU_SUBTRACT:
		SIM_ALU(x - y);
		break;
	case NKIR__V1__ALU_OP__ALU_MULTIPLY:
		SIM_ALU(x * y);
		break;
	case NKIR__V1__ALU_OP__ALU_DIVIDE:
		SIM_ALU(x / y);
		break;
	case NKIR__V1__ALU_OP__ALU_MAXIMUM:
		SIM_ALU((x != x || x > y) ? x : y);
		break;
	case NKIR__V1__ALU_OP__ALU_MINIMUM:
		SIM_ALU((x != x || x < y) ? x : y);
		break;
	case NKIR__V1__ALU_OP__ALU_POWER:
		SIM_ALU(powf(x, y));
		break;
	case NKIR__V1__ALU_OP__ALU_GREATER:
		SIM_ALU(x > y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_GREATER_EQUAL:
		SIM_ALU(x >= y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_LESS:
		SIM_ALU(x < y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_LESS_EQUAL:
		SIM_ALU(x <= y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_EQUAL:
		SIM_ALU(x == y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_NOT_EQUAL:
		SIM_ALU(x != y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_LOGICAL_AND:
		SIM_ALU((x != 0.0f && y != 0.0f) ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_LOGICAL_OR:
		SIM_ALU((x != 0.0f || y != 0.0f) ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_LOGICAL_XOR:
		SIM_ALU(((x != 0.0f) != (y != 0.0f)) ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_BITWISE_AND:
		SIM_ALU((float)(sim_exec_f2i(x) & sim_exec_f2i(y)));
		break;
	case NKIR__V1__ALU_OP__ALU_BITWISE_OR:
		SIM_ALU((float)(sim_exec_f2i(x) | sim_exec_f2i(y)));
		break;
	case NKIR__V1__ALU_OP__ALU_BITWISE_XOR:
		SIM_ALU((float)(sim_exec_f2i(x) ^ sim_exec_f2i(y)));
		break;
	case NKIR__V1__ALU_OP__ALU_MOD:
		SIM_ALU(sim_exec_mod(x, y));
		break;
	case NKIR__V1__ALU_OP__ALU_LEFT_SHIFT:
		SIM_ALU(sim_exec_shift(x, y, true));
		break;
	case NKIR__V1__ALU_OP__ALU_RIGHT_SHIFT:
		SIM_ALU(sim_exec_shift(x, y, false));
		break;
	case NKIR__V1__ALU_OP__ALU_INVERT:
		SIM_ALU(((void)y, (float)~sim_exec_f2i(x)));
		break;
	case SIM_ALU_INVERT_U(1):
	case SIM_ALU_INVERT_U(8):
	case SIM_ALU_INVERT_U(16):
	case SIM_ALU_INVERT_U(32):
		SIM_ALU(((void)y, sim_exec_invert_u(x,
		    alu - SIM_ALU_INVERT_U(0))));
		break;
	case NKIR__V1__ALU_OP__ALU_LOGICAL_NOT:
		SIM_ALU(((void)y, x == 0.0f ? 1.0f : 0.0f));
		break;
	case NKIR__V1__ALU_OP__ALU_RSQRT:
		SIM_ALU(((void)y, 1.0f / sqrtf(x)));
		break;
	case NKIR__V1__ALU_OP__ALU_RECIPROCAL:
		SIM_ALU(((void)y, 1.0f / x));
		break;
	case NKIR__V1__ALU_OP__ALU_ABS:
		SIM_ALU(((void)y, fabsf(x)));
		break;
	default: /* ALU_BYPASS */
		SIM_ALU(((void)y, x));
		break;
	}
#undef SIM_ALU
}

static float
sim_exec_act1(int act, float t)
{
	switch (act) {
	case NKIR__V1__ACT_FUNC__ACT_EXP:
		return (expf(t));
	case NKIR__V1__ACT_FUNC__ACT_LOG:
		return (logf(t));
	case NKIR__V1__ACT_FUNC__ACT_SQUARE:
		return (t * t);
	case NKIR__V1__ACT_FUNC__ACT_SQRT:
		return (sqrtf(t));
	case NKIR__V1__ACT_FUNC__ACT_RSQRT:
		return (1.0f / sqrtf(t));
	case NKIR__V1__ACT_FUNC__ACT_RECIPROCAL:
		return (1.0f / t);
	case NKIR__V1__ACT_FUNC__ACT_TANH:
		return (tanhf(t));
	case NKIR__V1__ACT_FUNC__ACT_SIGMOID:
		return (1.0f / (1.0f + expf(-t)));
	case NKIR__V1__ACT_FUNC__ACT_RELU:
		return (t > 0.0f || t != t ? t : 0.0f);
	case NKIR__V1__ACT_FUNC__ACT_GELU:
		return (0.5f * t * (1.0f + erff(t * 0.70710678118654752f)));
	case NKIR__V1__ACT_FUNC__ACT_GELU_TANH:
		return (0.5f * t * (1.0f + tanhf(0.79788456080286536f *
		    (t + 0.044715f * t * t * t))));
	case NKIR__V1__ACT_FUNC__ACT_SILU:
		return (t / (1.0f + expf(-t)));
	case NKIR__V1__ACT_FUNC__ACT_NEGATIVE:
		return (-t);
	case NKIR__V1__ACT_FUNC__ACT_ABS:
		return (fabsf(t));
	case NKIR__V1__ACT_FUNC__ACT_SIGN:
		return (t > 0.0f ? 1.0f : t < 0.0f ? -1.0f : t);
	case NKIR__V1__ACT_FUNC__ACT_SIN:
		return (sinf(t));
	case NKIR__V1__ACT_FUNC__ACT_COS:
		return (cosf(t));
	case NKIR__V1__ACT_FUNC__ACT_ERF:
		return (erff(t));
	case NKIR__V1__ACT_FUNC__ACT_SOFTPLUS:
		return (t > 20.0f ? t : log1pf(expf(t)));
	case NKIR__V1__ACT_FUNC__ACT_CEIL:
		return (ceilf(t));
	case NKIR__V1__ACT_FUNC__ACT_FLOOR:
		return (floorf(t));
	case NKIR__V1__ACT_FUNC__ACT_TRUNC:
		return (truncf(t));
	case NKIR__V1__ACT_FUNC__ACT_LOGICAL_NOT:
		return (t == 0.0f ? 1.0f : 0.0f);
	default:
		return (act >= 80 ? sim_lang_exec_act(act, t) : t);
	}
}

SIM_EXEC_WIDE void
sim_exec_act_row(const struct sim_op *op, float *o, const float *a,
    int64_t sa, const float *b, int64_t sb, size_t n)
{
	float	s = op->scale;
	size_t	i;

	if (sa == 1 && sb == 0) {
		float	y = b[0];

		for (i = 0; i < n; i++)
			o[i] = a[i] * s + y;
	} else if (sa == 1 && sb == 1) {
		for (i = 0; i < n; i++)
			o[i] = a[i] * s + b[i];
	} else {
		for (i = 0; i < n; i++)
			o[i] = a[(int64_t)i * sa] * s + b[(int64_t)i * sb];
	}
	switch (op->act) {
	case NKIR__V1__ACT_FUNC__ACT_IDENTITY:
		break;
	case NKIR__V1__ACT_FUNC__ACT_SQUARE:
		for (i = 0; i < n; i++)
			o[i] = o[i] * o[i];
		break;
	case NKIR__V1__ACT_FUNC__ACT_NEGATIVE:
		for (i = 0; i < n; i++)
			o[i] = -o[i];
		break;
	default:
		if (sim_vmath_act(op->act, o, n))	/* exp, tanh, ... */
			break;
		for (i = 0; i < n; i++)
			o[i] = sim_exec_act1(op->act, o[i]);
		break;
	}
}

/* ------------------------------------------------------------ element-wise */

static void
sim_exec_ew_begin(struct sim_rows *it, const struct sim_run *r,
    const struct sim_op *op)
{
	const struct sim_view	*vs[4] = { &op->dst, NULL, NULL, NULL };
	int			 k;

	for (k = 0; k < op->nsrc; k++)
		if (!op->src[k].scalar)
			vs[k + 1] = &op->src[k].v;
	sim_exec_rows_begin(it, r, op->rank, op->shape, vs, 4);
}

/* Prefetch a row of a load's HBM source SIM_PF_ROWS ahead: tiled loads
 * jump by a whole HBM row between tile rows, which hardware prefetchers
 * miss (a tile row is often shorter than a page). The first row of a
 * tile prefetches the rows up to the distance. */
#define SIM_PF_ROWS	4

static void
sim_exec_prefetch(const struct sim_run *r, const struct sim_op *op,
    const struct sim_rows *it, size_t n)
{
	const struct sim_view	*v = &op->src[0].v;
	const struct sim_bind	*bd = &r->t[v->tensor];
	const char		*p;
	uint64_t		 d0, d1, d;
	size_t			 i;
	int			 a = op->rank - 2;

	if (a < 0 || op->masked || v->off.ax[a + 1] != 1)
		return;
	d0 = it->idx[a] == 0 ? 1 : SIM_PF_ROWS;
	d1 = SIM_PF_ROWS;
	for (d = d0; d <= d1; d++) {
		if (it->idx[a] + d >= op->shape[a])
			break;
		p = bd->base + (it->off[1] + (uint64_t)v->off.ax[a] * d) *
		    bd->esize;
		for (i = 0; i < n * bd->esize; i += 64)
			__builtin_prefetch(p + i);
	}
}

/* One innermost row of an element-wise op at the iterator's position.
 * With stage set the row's values (and active flags) go to stage[]
 * instead of dst. In a fused group, fsrc[i] (if not NULL) is src[i]'s
 * row passed on in place and fdst (if not NULL) the row to compute in
 * instead of dst's (sim_opt_forward). */
static int
sim_exec_ew_row(struct sim_run *r, const struct sim_op *op,
    const struct sim_rows *it, float *stage, uint8_t *stage_act,
    const float *const *fsrc, float *fdst)
{
	static const float	 zero = 0.0f;
	const struct sim_bind	*db = &r->t[op->dst.tensor];
	size_t			 n = op->shape[op->rank - 1], i;
	const float		*s[3] = { NULL, NULL, NULL };
	int64_t			 ss[3] = { 0, 0, 0 }, base, step;
	const uint8_t		*act = NULL;
	bool			 direct;
	float			*o;
	int			 k, rc;

	direct = db->chip && db->dtype == SIM_DT_FLOAT32 &&
	    op->dst.off.ax[op->rank - 1] == 1 && !op->masked && !stage &&
	    fdst == NULL;
	if (op->masked) {
		if ((rc = sim_exec_active(r, op, it, r->act, n)))
			return (rc);
		act = r->act;
	}
	for (k = 0; k < op->nsrc; k++) {
		if (fsrc != NULL && fsrc[k] != NULL) {
			s[k] = fsrc[k];
			ss[k] = 1;
			continue;
		}
		s[k] = sim_exec_read(r, &op->src[k], it->off[k + 1], n,
		    r->row[k], &ss[k], act);
		/* in-place only when reading exactly what is written */
		if (direct && !op->src[k].scalar &&
		    op->src[k].v.tensor == op->dst.tensor &&
		    (it->off[k + 1] != it->off[0] || ss[k] != 1 ||
		    s[k] == r->row[k]))
			direct = false;
	}
	o = direct ? (float *)db->base + it->off[0] : stage ? stage :
	    fdst != NULL ? fdst : r->row[3];
	if (stage_act != NULL)
		memcpy(stage_act, act, n);
	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_ALLOC:
		for (i = 0; i < n; i++)
			o[i] = op->value;
		break;
	case NKIR__V1__OP_KIND__OP_LOAD:
		sim_exec_prefetch(r, op, it, n);
		/* fall through */
	case NKIR__V1__OP_KIND__OP_STORE:
	case NKIR__V1__OP_KIND__OP_COPY:
	case NKIR__V1__OP_KIND__OP_TRANSPOSE:
		if (stage == NULL && fdst == NULL) {
			sim_exec_write(r, &op->dst, it->off[0], n, s[0], ss[0],
			    act);
			return (0);
		}
		for (i = 0; i < n; i++)
			o[i] = s[0][(int64_t)i * ss[0]];
		return (0);
	case NKIR__V1__OP_KIND__OP_TENSOR_TENSOR:
		sim_exec_alu_row(op->alu, o, s[0], ss[0], s[1], ss[1], n);
		break;
	case NKIR__V1__OP_KIND__OP_ACTIVATION:
		sim_exec_act_row(op, o, s[0], ss[0],
		    op->nsrc > 1 ? s[1] : &zero, op->nsrc > 1 ? ss[1] : 0, n);
		break;
	case NKIR__V1__OP_KIND__OP_SELECT:
		for (i = 0; i < n; i++)
			o[i] = s[0][(int64_t)i * ss[0]] != 0.0f ?
			    s[1][(int64_t)i * ss[1]] : s[2][(int64_t)i * ss[2]];
		break;
	case NKIR__V1__OP_KIND__OP_IOTA:
		base = sim_exec_lin_row(r, &op->expr, it);
		step = op->expr.ax[op->rank - 1];
		for (i = 0; i < n; i++)
			o[i] = (float)(base + (int64_t)i * step);
		break;
	}
	if (!direct && stage == NULL && fdst == NULL)
		sim_exec_write(r, &op->dst, it->off[0], n, o, 1, act);
	return (0);
}

/*
 * Copies that transpose (load, store, tensor_copy or transpose of fp32
 * to fp32, unmasked, where one side is contiguous along the next-to-last
 * axis and not along the last): the last two axes run as a blocked 2-D
 * copy, so both sides stay in L1 instead of one side striding through a
 * row per element.
 */
#define SIM_TBLOCK	16

static bool
sim_exec_transposing(const struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*d = &op->dst, *s = &op->src[0].v;
	int			 l = op->rank - 1;

	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_LOAD:
	case NKIR__V1__OP_KIND__OP_STORE:
	case NKIR__V1__OP_KIND__OP_COPY:
	case NKIR__V1__OP_KIND__OP_TRANSPOSE:
		break;
	default:
		return (false);
	}
	if (op->masked || op->stage || op->rank < 2 || op->src[0].scalar ||
	    r->t[d->tensor].dtype != SIM_DT_FLOAT32 || !r->t[d->tensor].f32 ||
	    !r->t[s->tensor].f32 || d->tensor == s->tensor)
		return (false);
	if (d->off.ax[l] == 1 && s->off.ax[l] == 1)
		return (false);
	return ((d->off.ax[l - 1] == 1 || s->off.ax[l - 1] == 1) &&
	    op->shape[l] > 1 && op->shape[l - 1] > 1);
}

/* d[j*dj + i] = s[i*si + j] for an [nj, ni] block: both sides contiguous
 * on different axes (a transpose), in 4x4 register transposes. */
static void
sim_exec_transpose_block(float *d, int64_t dj, const float *s, int64_t si,
    size_t nj, size_t ni)
{
	size_t	j = 0, i;
#ifdef __SSE__
	size_t	k;
	__m128	r0, r1, r2, r3;

	for (; j + 4 <= nj; j += 4) {
		for (i = 0; i + 4 <= ni; i += 4) {
			r0 = _mm_loadu_ps(s + (int64_t)i * si + j);
			r1 = _mm_loadu_ps(s + (int64_t)(i + 1) * si + j);
			r2 = _mm_loadu_ps(s + (int64_t)(i + 2) * si + j);
			r3 = _mm_loadu_ps(s + (int64_t)(i + 3) * si + j);
			_MM_TRANSPOSE4_PS(r0, r1, r2, r3);
			_mm_storeu_ps(d + (int64_t)j * dj + i, r0);
			_mm_storeu_ps(d + (int64_t)(j + 1) * dj + i, r1);
			_mm_storeu_ps(d + (int64_t)(j + 2) * dj + i, r2);
			_mm_storeu_ps(d + (int64_t)(j + 3) * dj + i, r3);
		}
		for (; i < ni; i++)
			for (k = j; k < j + 4; k++)
				d[(int64_t)k * dj + i] = s[(int64_t)i * si + k];
	}
#endif
	for (; j < nj; j++)
		for (i = 0; i < ni; i++)
			d[(int64_t)j * dj + i] = s[(int64_t)i * si + j];
}

/* The transposing copy of op for axis-0 indices [lo, hi). */
static void
sim_exec_transpose_copy(struct sim_run *r, const struct sim_op *op,
    uint64_t lo, uint64_t hi)
{
	const struct sim_view	*vs[2] = { &op->dst, &op->src[0].v };
	const float		*sbase, *s, *sp;
	float			*dbase, *d, *dp;
	struct sim_rows		 it;
	int64_t			 di, dj, si, sj, t;
	size_t			 ni, nj, n, jb, ib, je, ie, j, i;
	int			 l = op->rank - 1;

	di = op->dst.off.ax[l];
	dj = op->dst.off.ax[l - 1];
	si = op->src[0].v.off.ax[l];
	sj = op->src[0].v.off.ax[l - 1];
	ni = op->shape[l];
	nj = op->shape[l - 1];
	dbase = (float *)r->t[op->dst.tensor].base;
	sbase = (const float *)r->t[op->src[0].v.tensor].base;
	if (l == 1) {	/* axis 0 is the block's: take rows lo .. hi */
		dbase += dj * (int64_t)lo;
		sbase += sj * (int64_t)lo;
		nj = hi - lo;
	}
	if (dj == 1 && si == 1) {	/* name the axes so di == 1 */
		t = di;
		n = ni;
		di = dj, dj = t;
		t = si, si = sj, sj = t;
		ni = nj, nj = n;
	}
	/* iterate axes 0 .. rank-3; each step is one 2-D [nj, ni] block */
	sim_exec_rows_begin(&it, r, op->rank - 1, op->shape, vs, 2);
	if (l >= 2)
		sim_exec_rows_range(&it, lo, hi);
	do {
		d = dbase + it.off[0];
		s = sbase + it.off[1];
		if (di == 1 && sj == 1) {
			for (jb = 0; jb < nj; jb += SIM_TBLOCK)
				for (ib = 0; ib < ni; ib += SIM_TBLOCK)
					sim_exec_transpose_block(
					    d + (int64_t)jb * dj + ib, dj,
					    s + (int64_t)ib * si + jb, si,
					    nj - jb < SIM_TBLOCK ? nj - jb :
					    SIM_TBLOCK, ni - ib < SIM_TBLOCK ?
					    ni - ib : SIM_TBLOCK);
			continue;
		}
		for (jb = 0; jb < nj; jb += SIM_TBLOCK) {
			je = jb + SIM_TBLOCK < nj ? jb + SIM_TBLOCK : nj;
			for (ib = 0; ib < ni; ib += SIM_TBLOCK) {
				ie = ib + SIM_TBLOCK < ni ? ib + SIM_TBLOCK :
				    ni;
				for (j = jb; j < je; j++) {
					dp = d + (int64_t)j * dj +
					    (int64_t)ib * di;
					sp = s + (int64_t)j * sj +
					    (int64_t)ib * si;
					for (i = ib; i < ie; i++) {
						*dp = *sp;
						dp += di;
						sp += si;
					}
				}
			}
		}
	} while (sim_exec_rows_next(&it));
}

/* An element-wise op (not staged) for axis-0 indices [lo, hi). */
static int
sim_exec_ew_part(struct sim_run *r, const struct sim_op *op, size_t k,
    uint64_t lo, uint64_t hi, void *ctx)
{
	struct sim_rows	it;
	int		rc;

	if (sim_exec_transposing(r, op)) {
		sim_exec_transpose_copy(r, op, lo, hi);
		return (0);
	}
	sim_exec_ew_begin(&it, r, op);
	sim_exec_rows_range(&it, lo, hi);
	do {
		if ((rc = sim_exec_ew_row(r, op, &it, NULL, NULL, NULL,
		    NULL)))
			return (rc);
	} while (sim_exec_rows_next(&it));
	return (0);
}

static int
sim_exec_elementwise(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*vs[1] = { &op->dst };
	struct sim_rows		 it;
	size_t			 n = op->shape[op->rank - 1];
	float			*stage;
	uint8_t			*sact;
	int			 rc;

	if (!op->stage) {
		if (op->par_split)
			return (sim_exec_split(r, op, 1, op->shape[0], 1,
			    op->par_work, sim_exec_ew_part, NULL));
		return (sim_exec_ew_part(r, op, 1, 0, op->shape[0], NULL));
	}
	sim_exec_ew_begin(&it, r, op);
	{
		/* dst overlaps a source: read everything before writing */
		stage = r->scratch;
		sact = (uint8_t *)(r->scratch + op->dst.nelem);
		do {
			if ((rc = sim_exec_ew_row(r, op, &it, stage,
			    op->masked ? sact : NULL, NULL, NULL)))
				return (rc);
			stage += n;
			sact += n;
		} while (sim_exec_rows_next(&it));
		stage = r->scratch;
		sact = (uint8_t *)(r->scratch + op->dst.nelem);
		sim_exec_rows_begin(&it, r, op->rank, op->shape, vs, 1);
		do {
			sim_exec_write(r, &op->dst, it.off[0], n, stage, 1,
			    op->masked ? sact : NULL);
			stage += n;
			sact += n;
		} while (sim_exec_rows_next(&it));
		return (0);
	}
}

static float	sim_exec_count(float c, const uint8_t *act, size_t n);

/* A row reduction in a fused group (sim_opt_row_reduce): the row at the
 * iterator folded into dst's element, the arithmetic of sim_exec_reduce
 * for one row. x (if not NULL) is the row passed on in place. */
static void
sim_exec_reduce_row(struct sim_run *r, const struct sim_op *op,
    const struct sim_rows *it, const float *x)
{
	size_t	n = op->shape[1];
	int64_t	sx = 1;
	int	alu = op->alu;
	float	acc, cnt, mean;

	if (x == NULL)
		x = sim_exec_read(r, &op->src[0], it->off[1], n, r->row[0],
		    &sx, NULL);
	if (alu == NKIR__V1__ALU_OP__ALU_VAR)
		alu = NKIR__V1__ALU_OP__ALU_MEAN;
	acc = sim_exec_fold(alu, sim_exec_reduce_init(op->alu), x, sx, NULL,
	    n, NULL);
	cnt = sim_exec_count(0.0f, NULL, n);
	if (alu == NKIR__V1__ALU_OP__ALU_MEAN)
		acc = cnt > 0.0f ? acc / cnt : NAN;
	if (op->alu == NKIR__V1__ALU_OP__ALU_VAR) {
		mean = acc;
		acc = sim_exec_fold(op->alu, 0.0f, x, sx, NULL, n, &mean);
		cnt = sim_exec_count(0.0f, NULL, n);
		acc = cnt > 0.0f ? acc / cnt : NAN;
	}
	sim_exec_write(r, &op->dst, it->off[0], 1, &acc, 1, NULL);
}

/* Row j of group op's forwarded source i, or NULL. */
static const float *
sim_exec_fwd_src(const struct sim_run *r, const struct sim_op *ops,
    const struct sim_rows *it, const struct sim_op *op, int i)
{
	size_t	l = op->fwd_src[i];

	if (l == 0)
		return (NULL);
	return ((const float *)r->t[ops[l - 1].src[0].v.tensor].base +
	    it[l - 1].off[1]);
}

/* A fused group (sim_op.fuse): the ops run row by row in lockstep, so a
 * row stays in cache from load to store. The planner proved this equal
 * to running them one after the other. Forwarded loads and stores
 * (sim_opt_forward) do nothing: their HBM rows are read and written in
 * place by the ops around them; a member skipped after the group was
 * formed (a load forwarded into a matmul) does nothing either. */
static int
sim_exec_fused_part(struct sim_run *r, const struct sim_op *ops, size_t k,
    uint64_t lo, uint64_t hi, void *ctx)
{
	struct sim_rows	 it[SIM_FUSE_MAX];
	const float	*fs[3];
	float		*fd;
	bool		 more;
	int		 rc, i;
	size_t		 j;

	for (j = 0; j < k; j++) {
		sim_exec_ew_begin(&it[j], r, &ops[j]);
		sim_exec_rows_range(&it[j], lo, hi);
	}
	do {
		for (j = 0; j < k; j++) {
			const struct sim_op	*op = &ops[j];

			if (op->skip)	/* a load forwarded into a matmul */
				continue;
			if (op->fwd) {
				if (op->kind == NKIR__V1__OP_KIND__OP_LOAD)
					sim_exec_prefetch(r, op, &it[j],
					    op->shape[op->rank - 1]);
				continue;
			}
			for (i = 0; i < 3; i++)
				fs[i] = i < op->nsrc ?
				    sim_exec_fwd_src(r, ops, it, op, i) : NULL;
			if (op->kind == NKIR__V1__OP_KIND__OP_REDUCE) {
				sim_exec_reduce_row(r, op, &it[j], fs[0]);
				continue;
			}
			fd = op->fwd_dst == 0 ? NULL :
			    (float *)r->t[ops[op->fwd_dst - 1].dst.tensor].base +
			    it[op->fwd_dst - 1].off[0];
			if ((rc = sim_exec_ew_row(r, op, &it[j], NULL, NULL,
			    fs, fd)))
				return (rc);
		}
		more = false;
		for (j = 0; j < k; j++)
			more = sim_exec_rows_next(&it[j]);
	} while (more);
	return (0);
}

static int
sim_exec_fused(struct sim_run *r, const struct sim_op *ops, size_t k)
{
	uint64_t	work = 0;
	bool		split = true;
	size_t		j;

	for (j = 0; j < k; j++) {
		split = split && ops[j].par_split;
		work += ops[j].par_work;
	}
	if (split)
		return (sim_exec_split(r, ops, k, ops[0].shape[0], 1, work,
		    sim_exec_fused_part, NULL));
	return (sim_exec_fused_part(r, ops, k, 0, ops[0].shape[0], NULL));
}

/* ------------------------------------------------------------ reduce */

float
sim_exec_reduce_init(int alu)
{
	switch (alu) {
	case NKIR__V1__ALU_OP__ALU_MULTIPLY:
	case NKIR__V1__ALU_OP__ALU_LOGICAL_AND:
		return (1.0f);
	case NKIR__V1__ALU_OP__ALU_MAXIMUM:
		return (-INFINITY);
	case NKIR__V1__ALU_OP__ALU_MINIMUM:
		return (INFINITY);
	case NKIR__V1__ALU_OP__ALU_BITWISE_AND:
		return (-1.0f);
	default:
		return (0.0f);
	}
}

float
sim_exec_fold(int alu, float acc, const float *x, int64_t sx,
    const uint8_t *act, size_t n, const float *mean)
{
	float	p[8] = { 0 }, m, d, y;
	size_t	i = 0;
	int	j;

	if (alu == NKIR__V1__ALU_OP__ALU_VAR) {
		m = *mean;
		for (i = 0; i < n; i++)
			if (!act || act[i]) {
				d = x[(int64_t)i * sx] - m;
				acc += d * d;
			}
		return (acc);
	}
	if ((alu == NKIR__V1__ALU_OP__ALU_ADD ||
	    alu == NKIR__V1__ALU_OP__ALU_MEAN) && !act && sx == 1) {
		for (; i + 8 <= n; i += 8)
			for (j = 0; j < 8; j++)
				p[j] += x[i + j];
		for (; i < n; i++)
			acc += x[i];
		return (acc + (((p[0] + p[1]) + (p[2] + p[3])) +
		    ((p[4] + p[5]) + (p[6] + p[7]))));
	}
	if ((alu == NKIR__V1__ALU_OP__ALU_MAXIMUM ||
	    alu == NKIR__V1__ALU_OP__ALU_MINIMUM) && !act && sx == 1 &&
	    n >= 16 && acc == acc) {
		/* 8 lanes, exact: max and min of distinct values do not
		 * depend on the order; a NaN or a zero result (which of
		 * +0 and -0 comes first) takes the loop below */
		bool	mx = alu == NKIR__V1__ALU_OP__ALU_MAXIMUM;

		for (j = 0; j < 8; j++)
			p[j] = acc;
#ifdef __SSE4_1__
		{
			__m128	a0 = _mm_loadu_ps(p), a1 = a0, y0, y1;

			for (; i + 8 <= n; i += 8) {
				y0 = _mm_loadu_ps(x + i);
				y1 = _mm_loadu_ps(x + i + 4);
				a0 = _mm_blendv_ps(a0, y0, _mm_or_ps(mx ?
				    _mm_cmpgt_ps(y0, a0) : _mm_cmplt_ps(y0, a0),
				    _mm_cmpunord_ps(y0, y0)));
				a1 = _mm_blendv_ps(a1, y1, _mm_or_ps(mx ?
				    _mm_cmpgt_ps(y1, a1) : _mm_cmplt_ps(y1, a1),
				    _mm_cmpunord_ps(y1, y1)));
			}
			_mm_storeu_ps(p, a0);
			_mm_storeu_ps(p + 4, a1);
		}
#endif
		for (; i + 8 <= n; i += 8)
			for (j = 0; j < 8; j++)
				p[j] = (mx ? x[i + j] > p[j] :
				    x[i + j] < p[j]) || x[i + j] != x[i + j] ?
				    x[i + j] : p[j];
		m = p[0];
		for (j = 1; j < 8; j++)
			m = (mx ? p[j] > m : p[j] < m) || p[j] != p[j] ?
			    p[j] : m;
		for (; i < n; i++)
			m = (mx ? x[i] > m : x[i] < m) || x[i] != x[i] ?
			    x[i] : m;
		if (m == m && m != 0.0f)
			return (m);
		i = 0;
	}
	for (i = 0; i < n; i++) {
		if (act && !act[i])
			continue;
		y = x[(int64_t)i * sx];
		switch (alu) {
		case NKIR__V1__ALU_OP__ALU_MULTIPLY:
			acc *= y;
			break;
		case NKIR__V1__ALU_OP__ALU_MAXIMUM:
			acc = (y != y || y > acc) ? y : acc;
			break;
		case NKIR__V1__ALU_OP__ALU_MINIMUM:
			acc = (y != y || y < acc) ? y : acc;
			break;
		case NKIR__V1__ALU_OP__ALU_LOGICAL_AND:
			acc = (acc != 0.0f && y != 0.0f);
			break;
		case NKIR__V1__ALU_OP__ALU_LOGICAL_OR:
			acc = (acc != 0.0f || y != 0.0f);
			break;
		case NKIR__V1__ALU_OP__ALU_LOGICAL_XOR:
			acc = ((acc != 0.0f) != (y != 0.0f));
			break;
		case NKIR__V1__ALU_OP__ALU_BITWISE_AND:
			acc = (float)(sim_exec_f2i(acc) & sim_exec_f2i(y));
			break;
		case NKIR__V1__ALU_OP__ALU_BITWISE_OR:
			acc = (float)(sim_exec_f2i(acc) | sim_exec_f2i(y));
			break;
		case NKIR__V1__ALU_OP__ALU_BITWISE_XOR:
			acc = (float)(sim_exec_f2i(acc) ^ sim_exec_f2i(y));
			break;
		default:
			acc += y;
			break;
		}
	}
	return (acc);
}

/* A pass of a reduction (sim_exec_reduce_pass). */
struct sim_exec_fold {
	int		 alu;
	float		*acc;
	float		*cnt;
	const float	*mean;
};

/* c plus one for each of the n elements active in act (all if NULL),
 * added one by one in fp32: exact until 2^24, where it sticks. */
static float
sim_exec_count(float c, const uint8_t *act, size_t n)
{
	size_t	k = n, i;

	if (act != NULL)
		for (i = 0, k = 0; i < n; i++)
			k += act[i] != 0;
	if (k <= (1u << 24) && c + (float)k <= 16777216.0f)
		return (c + (float)k);	/* every partial sum exact */
	for (i = 0; i < n; i++)
		c += !act || act[i];
	return (c);
}

/* One pass over src0's rows with axis-0 index in [lo, hi), folding into
 * acc (dst-shaped, contiguous); for VAR's second pass mean holds the
 * means. cnt counts active elements. */
/*
 * The innermost axis reduced, the one before it kept (average pooling's
 * [.., ow, dw]): the rows of a block along those two axes in one go, the
 * same folds in the same order as row by row, without a row's overhead
 * for a few elements each.
 */
static int
sim_exec_reduce_short(struct sim_run *r, const struct sim_op *op,
    const struct sim_exec_fold *f, const uint64_t *astride, uint64_t lo,
    uint64_t hi)
{
	const struct sim_view	*v = &op->src[0].v, *vs[1] = { v };
	const float		*base = (const float *)r->t[v->tensor].base;
	int			 last = op->rank - 1, a;
	size_t			 n = op->shape[last], m = op->shape[last - 1];
	int64_t			 sx = v->off.ax[last], sj = v->off.ax[last - 1];
	uint64_t		 aj = astride[last - 1];
	struct sim_rows		 it;
	size_t			 j;

	sim_exec_rows_begin(&it, r, op->rank - 1, op->shape, vs, 1);
	sim_exec_rows_range(&it, lo, hi);
	do {
		uint64_t	ao = 0;

		for (a = 0; a < last - 1; a++)
			ao += astride[a] * it.idx[a];
		for (j = 0; j < m; j++, ao += aj) {
			f->acc[ao] = sim_exec_fold(f->alu, f->acc[ao],
			    base + it.off[0] + (int64_t)j * sj, sx, NULL, n,
			    f->mean ? &f->mean[ao] : NULL);
			f->cnt[ao] = sim_exec_count(f->cnt[ao], NULL, n);
		}
	} while (sim_exec_rows_next(&it));
	return (0);
}

static int
sim_exec_reduce_part(struct sim_run *r, const struct sim_op *op, size_t nop,
    uint64_t lo, uint64_t hi, void *ctx)
{
	const struct sim_exec_fold	*f = ctx;
	const float			*mean = f->mean;
	float				*acc = f->acc, *cnt = f->cnt;
	int				 alu = f->alu;
	const struct sim_view		*vs[1] = { &op->src[0].v };
	int				 last = op->rank - 1;
	size_t				 n = op->shape[last];
	uint64_t			 astride[SIM_MAX_RANK], s = 1;
	bool				 inner = op->axes & (1u << last);
	struct sim_rows			 it;
	size_t				 i;
	int				 a, rc;

	for (a = op->rank - 1; a >= 0; a--) {
		bool	red = op->axes & (1u << a);

		astride[a] = red ? 0 : s;
		s *= red ? 1 : op->shape[a];
	}
	if (inner && last >= 2 && !(op->axes & (1u << (last - 1))) &&
	    !op->src[0].v.nmask && r->t[op->src[0].v.tensor].f32)
		return (sim_exec_reduce_short(r, op, f, astride, lo, hi));
	sim_exec_rows_begin(&it, r, op->rank, op->shape, vs, 1);
	sim_exec_rows_range(&it, lo, hi);
	do {
		const uint8_t	*act;
		const float	*x;
		uint64_t	 ao = 0;
		int64_t		 sx;

		if ((rc = sim_exec_row_act(r, op, op->src[0].v.nmask, &it, n,
		    &act)))
			return (rc);
		for (a = 0; a < last; a++)
			ao += astride[a] * it.idx[a];
		x = sim_exec_read(r, &op->src[0], it.off[0], n, r->row[0], &sx,
		    act);
		if (inner) {
			acc[ao] = sim_exec_fold(alu, acc[ao], x, sx, act, n,
			    mean ? &mean[ao] : NULL);
			cnt[ao] = sim_exec_count(cnt[ao], act, n);
			continue;
		}
		for (i = 0; i < n; i++) {
			if (act && !act[i])
				continue;
			acc[ao + i] = sim_exec_fold(alu, acc[ao + i],
			    &x[(int64_t)i * sx], 0, NULL, 1,
			    mean ? &mean[ao + i] : NULL);
			cnt[ao + i] += 1.0f;
		}
	} while (sim_exec_rows_next(&it));
	return (0);
}

/* One pass of the reduction, its rows split over the pool when worth it
 * (axis 0 is never reduced: parts fold into disjoint outputs). */
static int
sim_exec_reduce_pass(struct sim_run *r, const struct sim_op *op, int alu,
    float *acc, float *cnt, const float *mean)
{
	struct sim_exec_fold	f = { alu, acc, cnt, mean };

	if (op->par_split)
		return (sim_exec_split(r, op, 1, op->shape[0], 1, op->par_work,
		    sim_exec_reduce_part, &f));
	return (sim_exec_reduce_part(r, op, 1, 0, op->shape[0], &f));
}

static int
sim_exec_reduce(struct sim_run *r, const struct sim_op *op)
{
	size_t	 m = op->dst.nelem;
	float	*acc = r->scratch, *cnt = acc + m, *mean = cnt + m;
	int	 alu = op->alu, rc;
	size_t	 i;

	for (i = 0; i < m; i++) {
		acc[i] = sim_exec_reduce_init(alu);
		cnt[i] = 0.0f;
	}
	if (alu == NKIR__V1__ALU_OP__ALU_VAR)
		alu = NKIR__V1__ALU_OP__ALU_MEAN;
	if ((rc = sim_exec_reduce_pass(r, op, alu, acc, cnt, NULL)))
		return (rc);
	if (alu == NKIR__V1__ALU_OP__ALU_MEAN)
		for (i = 0; i < m; i++)
			acc[i] = cnt[i] > 0.0f ? acc[i] / cnt[i] : NAN;
	if (op->alu == NKIR__V1__ALU_OP__ALU_VAR) {
		memcpy(mean, acc, m * sizeof(float));
		for (i = 0; i < m; i++)
			acc[i] = cnt[i] = 0.0f;
		if ((rc = sim_exec_reduce_pass(r, op, op->alu, acc, cnt, mean)))
			return (rc);
		for (i = 0; i < m; i++)
			acc[i] = cnt[i] > 0.0f ? acc[i] / cnt[i] : NAN;
	}
	return (sim_exec_scatter(r, op, &op->dst, acc));
}

/* ------------------------------------------------------------ matmul */

/* A 2-D unmasked fp32 view with a contiguous inner axis, usable by BLAS
 * in place: returns its address and leading dimension. */
static float *
sim_exec_blas_view(const struct sim_run *r, const struct sim_view *v,
    int *ld)
{
	const struct sim_bind	*bd = &r->t[v->tensor];

	if (!bd->f32 || v->nmask || v->rank != 2 || v->off.ax[1] != 1 ||
	    v->off.ax[0] < (int64_t)v->shape[1] || v->off.ax[0] > INT32_MAX)
		return (NULL);
	*ld = (int)v->off.ax[0];
	return ((float *)bd->base + sim_exec_lin(r, &v->off));
}

/* One sgemm, its columns split over the pool when worth it. */
struct sim_exec_gemm {
	bool		 trans;
	int		 M, K, lda, ldb, ldc;
	float		 beta;
	const float	*A;
	const float	*B;
	float		*C;
};

/* Columns [lo, hi) of the product: each element of C is the same dot
 * product over K whichever columns a call covers. */
static int
sim_exec_gemm_part(struct sim_run *r, const struct sim_op *op, size_t k,
    uint64_t lo, uint64_t hi, void *ctx)
{
	const struct sim_exec_gemm	*g = ctx;

	sim_blas_sgemm(1, g->trans, g->M, (int)(hi - lo), g->K, g->A, g->lda,
	    g->B + lo, g->ldb, g->beta, g->C + lo, g->ldc);
	return (0);
}

/* Columns per part of a split sgemm are multiples of this: OpenBLAS's
 * kernels block N in 4s, 8s or 16s. */
#define SIM_EXEC_GEMM_GRAIN	64

/* A product of at least this many multiply-adds (~5 ms on one thread
 * here) that may use the run's threads is one call on OpenBLAS's own. */
#define SIM_EXEC_GEMM_THREADED	(1ull << 28)

/*
 * g's N columns, on the run's threads when op's rows split and the work
 * (element operations) is worth it. The largest products are one call on
 * OpenBLAS's threads, which share the operands they pack (two halves on
 * the pool each pack all of A again, and took 1.2-1.5x as long); smaller
 * ones are split into a part per pool thread, whose workers are awake.
 */
static int
sim_exec_gemm(struct sim_run *r, const struct sim_op *op,
    struct sim_exec_gemm *g, int N, uint64_t work)
{
	uint64_t	madds = (uint64_t)g->M * (uint64_t)g->K * (uint64_t)N;
	int		grain;

	if (op->par_split && madds >= SIM_EXEC_GEMM_THREADED &&
	    sim_exec_parts(r, 2, work, SIM_EXEC_SPLIT_MIN) > 1) {
		sim_blas_sgemm(r->threads, g->trans, g->M, N, g->K, g->A,
		    g->lda, g->B, g->ldb, g->beta, g->C, g->ldc);
		return (0);
	}
	grain = ((N + (int)r->threads - 1) / (int)r->threads +
	    SIM_EXEC_GEMM_GRAIN - 1) & ~(SIM_EXEC_GEMM_GRAIN - 1);
	if (!op->par_split || N < 2 * grain)
		return (sim_exec_gemm_part(r, op, 1, 0, (uint64_t)N, g));
	return (sim_exec_split(r, op, 1, (uint64_t)N, (uint64_t)grain, work,
	    sim_exec_gemm_part, g));
}

static int
sim_exec_matmul(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*x = &op->src[0].v, *y = &op->src[1].v;
	struct sim_operand	 d;
	struct sim_exec_gemm	 g;
	const char		*msg;
	float			*A, *B, *C, *tmp = r->scratch;
	float			 beta = op->accumulate ? 1.0f : 0.0f;
	bool			 direct_c;
	int			 K, M, N, lda, ldb, ldc, rc;

	if ((msg = sim_blas_open()) != NULL)
		return (sim_exec_fail(r, op, SIM_ERUNTIME, "matmul needs "
		    "OpenBLAS: %s", msg));
	K = (int)(op->transpose_x ? x->shape[0] : x->shape[1]);
	M = (int)(op->transpose_x ? x->shape[1] : x->shape[0]);
	N = (int)y->shape[1];
	if ((A = sim_exec_blas_view(r, x, &lda)) == NULL) {
		A = tmp;
		tmp += (size_t)K * M;
		lda = (int)x->shape[1];
		if ((rc = sim_exec_gather(r, op, &op->src[0], A, NULL, 0.0f)))
			return (rc);
	}
	if ((B = sim_exec_blas_view(r, y, &ldb)) == NULL) {
		B = tmp;
		tmp += (size_t)K * N;
		ldb = N;
		if ((rc = sim_exec_gather(r, op, &op->src[1], B, NULL, 0.0f)))
			return (rc);
	}
	C = sim_exec_blas_view(r, &op->dst, &ldc);
	direct_c = C != NULL;
	if (!direct_c) {
		d = (struct sim_operand){ .v = op->dst };
		C = tmp;
		ldc = N;
		if (op->accumulate &&
		    (rc = sim_exec_gather(r, op, &d, C, NULL, 0.0f)))
			return (rc);
	}
	g = (struct sim_exec_gemm){ op->transpose_x, M, K, lda, ldb, ldc,
	    beta, A, B, C };
	if ((rc = sim_exec_gemm(r, op, &g, N, op->par_work)) != 0)
		return (rc);
	if (!direct_c)
		return (sim_exec_scatter(r, op, &op->dst, C));
	return (0);
}

/* A loop that is one matmul runs its columns in blocks of about this many
 * multiply-adds (10-20 ms here), the run's cancel flag checked between. */
#define SIM_EXEC_GEMM_BLOCK	(1ull << 30)

/*
 * Loop op that is one matmul (sim_opt_gemm): that matmul, as large as the
 * loops make it, at the leading dimensions the planner found, with every
 * loop of the nest at its first iteration; in blocks of columns, so that
 * a cancel or a deadline stops it as it stopped the loop's small matmuls
 * (each column is the same dot products whichever block holds it). 1 when
 * a view is not one BLAS takes in place at run time: run the loop.
 */
static int
sim_exec_gemm_loop(struct sim_run *r, const struct sim_op *op)
{
	const volatile int	*cancel = r->opts ? r->opts->cancel : NULL;
	const struct sim_op	*mm = op;
	struct sim_exec_gemm	 g, blk;
	uint64_t		 mk, cols, lo, hi;
	uint64_t		 N = (uint64_t)op->gemm_mnk[1];
	int			 ld, rc;

	while (mm->kind == NKIR__V1__OP_KIND__OP_LOOP) {
		r->lv[mm->var] = mm->start;
		mm = &mm->body[mm->gemm_at - 1];
	}
	g.trans = mm->transpose_x;
	g.M = (int)op->gemm_mnk[0];
	g.K = (int)op->gemm_mnk[2];
	g.lda = (int)op->gemm_ld[0];
	g.ldb = (int)op->gemm_ld[1];
	g.ldc = (int)op->gemm_ld[2];
	g.beta = op->gemm_overwrite ? 0.0f : 1.0f;
	if ((g.A = sim_exec_blas_view(r, &mm->src[0].v, &ld)) == NULL ||
	    (g.B = sim_exec_blas_view(r, &mm->src[1].v, &ld)) == NULL ||
	    (g.C = sim_exec_blas_view(r, &mm->dst, &ld)) == NULL ||
	    sim_blas_open() != NULL)
		return (1);
	mk = (uint64_t)g.M * (uint64_t)g.K;
	cols = mk >= SIM_EXEC_GEMM_BLOCK ? 1 : SIM_EXEC_GEMM_BLOCK / mk;
	cols = (cols + SIM_EXEC_GEMM_GRAIN - 1) &
	    ~(uint64_t)(SIM_EXEC_GEMM_GRAIN - 1);
	for (lo = 0; lo < N; lo = hi) {
		if (cancel != NULL && *cancel) {
			sim_diag_set(r->diag, "run cancelled");
			return (SIM_ECANCELED);
		}
		hi = N - lo > cols ? lo + cols : N;
		blk = g;
		blk.B = g.B + lo;
		blk.C = g.C + lo;
		if ((rc = sim_exec_gemm(r, mm, &blk, (int)(hi - lo),
		    mk * (hi - lo) / 8)) != 0)
			return (rc);
	}
	return (0);
}

/* ------------------------------------------------------------ bn */

/* bn_stats of one partition's F values x (active where a[i]): per chunk
 * of SIM_BN_FMAX, for the even and the odd elements, count, mean and the
 * sum of squared deviations (masked-off elements count for nothing). */
static void
sim_exec_bn_stats(const float *x, const uint8_t *a, size_t F, float *o)
{
	float	cnt, sum, m2, mean;
	size_t	c0, c1, par, i, k = 0;

	for (c0 = 0; c0 < F; c0 += SIM_BN_FMAX) {
		c1 = c0 + SIM_BN_FMAX < F ? c0 + SIM_BN_FMAX : F;
		for (par = 0; par < 2; par++, k += 3) {
			cnt = sum = m2 = 0;
			for (i = c0 + par; i < c1; i += 2) {
				if (!a[i])
					continue;
				sum += x[i];
				cnt += 1.0f;
			}
			mean = cnt > 0 ? sum / cnt : 0.0f;
			for (i = c0 + par; i < c1; i += 2)
				if (a[i])
					m2 += (x[i] - mean) * (x[i] - mean);
			o[k] = cnt;
			o[k + 1] = mean;
			o[k + 2] = m2;
		}
	}
}

/* bn_aggr of one partition's F / 3 (count, mean, m2) triples x: the
 * mean and the variance of all. */
static void
sim_exec_bn_aggr(const float *x, size_t F, float *o)
{
	float	n = 0, sum = 0, m2 = 0, mean;
	size_t	i;

	for (i = 0; i < F; i += 3) {
		n += x[i];
		sum += x[i] * x[i + 1];
	}
	mean = n > 0 ? sum / n : 0.0f;
	for (i = 0; i < F; i += 3)
		m2 += x[i + 2] + x[i] * (x[i + 1] - mean) * (x[i + 1] - mean);
	o[0] = mean;
	o[1] = n > 0 ? m2 / n : 0.0f;
}

static int
sim_exec_bn(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*s = &op->src[0].v;
	size_t			 F = s->shape[1], D = op->dst.shape[1], p;
	float			*in = r->scratch, *out = in + s->nelem;
	uint8_t			*on;
	bool			 stats;
	int			 rc;

	/* bn_stats: which source elements are active, after out in the
	 * scratch (see sim_plan_bn) */
	on = (uint8_t *)(out + op->dst.nelem);
	stats = op->kind == NKIR__V1__OP_KIND__OP_BN_STATS;
	if ((rc = sim_exec_gather(r, op, &op->src[0], in, stats ? on : NULL,
	    0.0f)))
		return (rc);
	for (p = 0; p < s->shape[0]; p++) {
		if (stats)
			sim_exec_bn_stats(in + p * F, on + p * F, F,
			    out + p * D);
		else
			sim_exec_bn_aggr(in + p * F, F, out + p * D);
	}
	return (sim_exec_scatter(r, op, &op->dst, out));
}

/* ------------------------------------------------------------ print */

static int
sim_exec_print(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*v = &op->src[0].v;
	const struct sim_tinfo	*ti = r->t[v->tensor].ti;
	struct sim_print_buf	 pb = { 0 };
	float			*vals;
	uint8_t			*act;
	int			 rc;

	if (r->opts == NULL || r->opts->print_cb == NULL)
		return (0);
	vals = malloc(v->nelem * sizeof(float));
	act = malloc(v->nelem);
	if (vals == NULL || act == NULL) {
		free(vals);
		free(act);
		return (SIM_ENOMEM);
	}
	rc = sim_exec_gather(r, op, &op->src[0], vals, act, 0.0f);
	if (rc == 0)
		rc = sim_print_format(&pb, op->text, ti->name, ti->dtype,
		    v->rank, v->shape, vals, act);
	if (rc == 0)
		r->opts->print_cb(r->opts->print_arg, pb.s, pb.len);
	sim_print_buf_release(&pb);
	free(vals);
	free(act);
	return (rc);
}

/* ------------------------------------------------------------ driver */

static int sim_exec_body_one(struct sim_run *r, const struct sim_op *op);

static uint64_t
sim_exec_now_ns(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

/* Run one op (not a loop) alone and report it to opts->op_cb. */
static int
sim_exec_timed(struct sim_run *r, const struct sim_op *op)
{
	struct sim_op_event	ev;
	uint64_t		t0 = sim_exec_now_ns();
	int			rc;

	rc = sim_exec_body_one(r, op);
	memset(&ev, 0, sizeof ev);
	ev.op = sim_op_name(op->kind);
	ev.engine = sim_op_engine(op->kind, op->engine, op->alu);
	ev.file = op->file;
	ev.line = op->line;
	ev.program = r->prog;
	ev.start_ns = t0 - r->t0_ns;
	ev.dur_ns = sim_exec_now_ns() - t0;
	ev.elements = op->has_dst ? op->dst.nelem : op->nsrc > 0 ?
	    op->src[0].v.nelem : 0;
	r->opts->op_cb(r->opts->op_arg, &ev);
	return (rc);
}

int
sim_exec_body(struct sim_run *r, const struct sim_op *ops, size_t n)
{
	const volatile int	*cancel = r->opts ? r->opts->cancel : NULL;
	int			 rc = 0;
	size_t			 i;

	for (i = 0; i < n && rc == 0; i++) {
		const struct sim_op	*op = &ops[i];

		if (cancel != NULL && *cancel) {
			sim_diag_set(r->diag, "run cancelled");
			return (SIM_ECANCELED);
		}
		if (op->fuse > 1 && (r->opts == NULL ||
		    r->opts->op_cb == NULL)) {
			rc = sim_exec_fused(r, op, op->fuse);
			i += op->fuse - 1;
			continue;
		}
		if (r->opts != NULL && r->opts->op_cb != NULL &&
		    op->kind != NKIR__V1__OP_KIND__OP_LOOP &&
		    op->kind != NKIR__V1__OP_KIND__OP_IF) {
			rc = sim_exec_timed(r, op);
			continue;
		}
		rc = sim_exec_body_one(r, op);
	}
	return (rc);
}

/* Set r's program ids for SPMD program prog (row-major, the last grid
 * axis fastest). */
static void
sim_exec_program_ids(struct sim_run *r, uint64_t prog)
{
	const struct sim_program	*p = r->p;
	uint64_t			 q = prog;
	int				 a;

	for (a = p->grid_rank - 1; a >= 0; a--) {
		r->pid[a] = (int64_t)(q % p->grid[a]);
		q /= p->grid[a];
	}
	r->prog = prog;
	/* nki.isa's accumulator registers start at 0 in every program. */
	memset(r->acc, 0, sizeof(r->acc));
	/* its random stream and the index functions of its ids */
	sim_lang_exec_program(r);
}

/* Iterations of a loop, or programs of the grid, spread over the pool. */
struct sim_exec_region {
	struct sim_run			*r;
	const struct sim_op		*loop;	/* NULL: the grid */
	const struct sim_par_region	*rg;
	uint64_t			 n;	/* iterations */
	unsigned			 chunks;
	const int64_t			*lv;	/* loop variables at the
						 * start (the caller's change
						 * as its chunk runs) */
	struct sim_exec_fails		 fails;
};

/*
 * Chunk `task` of a region: its iterations in order. The last chunk runs
 * in the caller's own run (its tiles then end as the sequential run would
 * leave them); any other on a copy whose private tiles (sim_par_region)
 * live in the slot's memory. A chunk after one that failed stops: the
 * sequential run would not have got there.
 */
static void
sim_exec_region_cb(void *arg, unsigned task, unsigned slot)
{
	struct sim_exec_region		*rr = arg;
	struct sim_run			*r = rr->r, w = *r;
	const struct sim_program	*p = r->p;
	const struct sim_op		*loop = rr->loop;
	struct sim_exec_slot		*s;
	struct sim_diag			 d;
	uint64_t			 i, lo, hi;
	uint32_t			 k;
	int				 rc = 0;

	d.msg[0] = '\0';
	w.diag = &d;
	w.inpar = true;
	if (task + 1 < rr->chunks) {
		if ((s = sim_exec_slot_get(r, slot)) == NULL) {
			sim_exec_fails_add(&rr->fails, task, SIM_ENOMEM, &d);
			return;
		}
		memcpy(s->t, r->t, p->ntensors * sizeof(*s->t));
		for (k = 0; k < rr->rg->npriv; k++)
			s->t[rr->rg->priv[k]].base = s->mem +
			    p->tensors[rr->rg->priv[k]].moff;
		memcpy(s->lv, rr->lv,
		    (p->nloopvars + p->nfns + 1) * sizeof(*s->lv));
		w.t = s->t;
		w.lv = s->lv;
		sim_exec_run_rows(&w, s->mem, true);
	}
	lo = rr->n * task / rr->chunks;
	hi = rr->n * (task + 1) / rr->chunks;
	for (i = lo; i < hi && rc == 0; i++) {
		if (atomic_load_explicit(&rr->fails.first,
		    memory_order_relaxed) < task)
			return;
		if (loop != NULL) {
			w.lv[loop->var] = loop->start + (int64_t)i * loop->step;
			if (loop->nfns)
				sim_lang_exec_fns(&w, loop->fns, loop->nfns);
			rc = sim_exec_body(&w, loop->body, loop->nbody);
		} else {
			sim_exec_program_ids(&w, i);
			rc = sim_exec_body(&w, p->body, p->nbody);
		}
	}
	if (rc != 0)
		sim_exec_fails_add(&rr->fails, task, rc, &d);
}

/* Spread n iterations of work `work` each over the pool? */
static bool
sim_exec_spread(const struct sim_run *r, uint64_t n, uint64_t work)
{
	if (r->inpar || r->threads <= 1 || r->slots == NULL || n < 2 ||
	    (r->opts != NULL && r->opts->op_cb != NULL))
		return (false);
	return (work >= SIM_EXEC_REGION_MIN / n + 1);
}

static int
sim_exec_region(struct sim_run *r, const struct sim_op *loop,
    const struct sim_par_region *rg, uint64_t n)
{
	struct sim_exec_region	 rr;
	uint64_t		 chunks = (uint64_t)r->threads * SIM_EXEC_CHUNKS;
	int64_t			*lv;
	size_t			 nlv = r->p->nloopvars + r->p->nfns + 1;

	if ((lv = malloc(nlv * sizeof(*lv))) == NULL)
		return (SIM_ENOMEM);
	memcpy(lv, r->lv, nlv * sizeof(*lv));
	memset(&rr, 0, sizeof(rr));
	rr.r = r;
	rr.loop = loop;
	rr.rg = rg;
	rr.n = n;
	rr.chunks = (unsigned)(n < chunks ? n : chunks);
	rr.lv = lv;
	sim_exec_fails_init(&rr.fails, rr.chunks);
	sim_pool_run(r->threads, rr.chunks, sim_exec_region_cb, &rr);
	free(lv);
	return (sim_exec_fails_end(&rr.fails, r));
}

/* Run one op (a loop with its body). */
static int
sim_exec_body_one(struct sim_run *r, const struct sim_op *op)
{
	int		rc = 0;
	uint64_t	t;

	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_LOOP:
		if (op->gemm_at && (r->opts == NULL ||
		    r->opts->op_cb == NULL) &&
		    (rc = sim_exec_gemm_loop(r, op)) != 1)
			return (rc);
		rc = 0;
		if (op->par != NULL &&
		    sim_exec_spread(r, op->trips, op->par_work))
			return (sim_exec_region(r, op, op->par, op->trips));
		for (t = 0; t < op->trips && rc == 0; t++) {
			r->lv[op->var] = op->start + (int64_t)t * op->step;
			if (op->nfns)
				sim_lang_exec_fns(r, op->fns, op->nfns);
			rc = sim_exec_body(r, op->body, op->nbody);
		}
		return (rc);
	case NKIR__V1__OP_KIND__OP_REDUCE:
		return (sim_exec_reduce(r, op));
	case NKIR__V1__OP_KIND__OP_MATMUL:
		return (sim_exec_matmul(r, op));
	case NKIR__V1__OP_KIND__OP_BN_STATS:
	case NKIR__V1__OP_KIND__OP_BN_AGGR:
		return (sim_exec_bn(r, op));
	case NKIR__V1__OP_KIND__OP_PRINT:
		return (sim_exec_print(r, op));
	default:
		if (op->isa != NULL)	/* nki.isa kinds 40-79 */
			return (sim_isa_exec(r, op));
		if (op->kind >= 80)	/* nki.language kinds 80-119 */
			return (sim_lang_exec_op(r, op));
		if (op->skip)	/* dead alloc, elided load/store */
			return (0);
		return (sim_exec_elementwise(r, op));
	}
}

static const char *
sim_exec_dtype_name(int dtype)
{
	const char	*name = sim_dtype_name(dtype);

	return (name != NULL ? name : "invalid");
}

static int
sim_exec_check_args(const struct sim_program *p,
    const struct sim_tensor *in, size_t nin, size_t nout,
    struct sim_diag *diag)
{
	const struct sim_sig	*s;
	char			 want[256], got[256];
	uint64_t		 nelem;
	size_t			 i;
	bool			 same;
	int			 d;

	if (nin != p->nparams) {
		sim_diag_set(diag, "kernel '%s' takes %zu arguments, got %zu",
		    p->name, p->nparams, nin);
		return (SIM_EARG);
	}
	if (nout != p->noutputs) {
		sim_diag_set(diag, "kernel '%s' returns %zu outputs, %zu "
		    "requested", p->name, p->noutputs, nout);
		return (SIM_EARG);
	}
	for (i = 0; i < nin; i++) {
		s = &p->params[i];
		same = in[i].dtype == s->dtype && in[i].rank == s->rank;
		nelem = 1;
		for (d = 0; same && d < s->rank; d++) {
			same = in[i].shape[d] == s->shape[d];
			nelem *= s->shape[d];
		}
		if (!same) {
			sim_print_shape(want, sizeof(want),
			    sim_exec_dtype_name(s->dtype), s->rank, s->shape);
			sim_print_shape(got, sizeof(got),
			    sim_exec_dtype_name(in[i].dtype),
			    in[i].rank < 0 ? 0 : in[i].rank, in[i].shape);
			sim_diag_set(diag, "argument '%s': expected %s, got %s",
			    s->name, want, got);
			return (SIM_EARG);
		}
		if (in[i].data == NULL ||
		    in[i].nbytes != nelem * sim_dtype_size(s->dtype)) {
			sim_diag_set(diag, "argument '%s': expected %llu bytes "
			    "of data, got %zu", s->name, (unsigned long long)
			    (nelem * sim_dtype_size(s->dtype)),
			    in[i].data ? in[i].nbytes : 0);
			return (SIM_EARG);
		}
	}
	return (0);
}

/* The caller's buffer for tensor t if t is an output it gave one for (the
 * first such output: a tensor returned twice is copied to the other). */
static void *
sim_exec_out_buf(const struct sim_run *r, size_t t)
{
	const struct sim_program	*p = r->p;
	size_t				 o;

	if (r->opts == NULL || r->opts->out_bufs == NULL)
		return (NULL);
	for (o = 0; o < p->noutputs; o++)
		if (p->output_tensor[o] == t && r->opts->out_bufs[o] != NULL)
			return (r->opts->out_bufs[o]);
	return (NULL);
}

static int
sim_exec_bind(struct sim_run *r, const struct sim_tensor *in)
{
	const struct sim_program	*p = r->p;
	size_t				 i;
	uint64_t			 e;

	for (i = 0; i < p->ntensors; i++) {
		const struct sim_tinfo	*ti = &p->tensors[i];
		struct sim_bind		*bd = &r->t[i];

		bd->ti = ti;
		/* NKI_PRECISE_FP=0: low-precision tiles hold fp32 values */
		bd->dtype = ti->chip && p->fp32_tiles &&
		    sim_dtype_is_lowp(ti->dtype) ? SIM_DT_FLOAT32 : ti->dtype;
		bd->chip = ti->chip;
		bd->f32 = ti->chip || ti->dtype == SIM_DT_FLOAT32 ||
		    ti->dtype == SIM_DT_TFLOAT32;
		bd->esize = ti->chip ? 4 : sim_dtype_size(ti->dtype);
		if (ti->kind == NKIR__V1__TENSOR_KIND__TENSOR_PARAM)
			continue;
		if (ti->chip)
			continue;	/* below: may alias an HBM tensor */
		if (ti->data != NULL && !ti->written) {
			/* a constant no op writes: the program's copy */
			bd->base = (char *)(uintptr_t)ti->data;
			continue;
		}
		if ((bd->base = sim_exec_out_buf(r, i)) != NULL) {
			bd->owned = false;	/* the caller's */
		} else {
			bd->base = sim_exec_tensor_alloc(ti->nelem * bd->esize);
			if (bd->base == NULL)
				return (SIM_ENOMEM);
			bd->owned = true;
		}
		if ((ti->covered && !ti->read) || ti->nofill) {
			/* fully stored before the kernel ends, never read;
			 * or overwritten entirely before anything reads it */
		} else if (ti->data != NULL) {
			memcpy(bd->base, ti->data, ti->nelem * bd->esize);
		} else if (ti->fill == NKIR__V1__FILL__FILL_ZERO) {
			memset(bd->base, 0, ti->nelem * bd->esize);
		} else {
			sim_dtype_fill(ti->dtype, bd->base, ti->nelem,
			    sim_dtype_uninit(ti->dtype));
		}
	}
	for (i = 0; i < p->nparams; i++) {
		struct sim_bind	*bd = &r->t[p->param_tensor[i]];

		if (!bd->ti->written) {
			bd->base = in[i].data;
			continue;
		}
		/* the kernel writes its argument: work on a copy */
		bd->base = sim_exec_tensor_alloc(in[i].nbytes);
		if (bd->base == NULL)
			return (SIM_ENOMEM);
		memcpy(bd->base, in[i].data, in[i].nbytes);
		bd->owned = true;
	}
	for (i = 0; i < p->ntensors; i++) {
		const struct sim_tinfo	*ti = &p->tensors[i];
		struct sim_bind		*bd = &r->t[i];
		float			 u = sim_dtype_uninit(ti->dtype), *f;

		if (!ti->chip)
			continue;
		bd->base = ti->alias >= 0 ? r->t[ti->alias].base :
		    r->mem + ti->moff;
		f = (float *)bd->base;
		if (!ti->nofill)
			for (e = 0; e < ti->nelem; e++)
				f[e] = u;
	}
	return (0);
}

static int
sim_exec_outputs(struct sim_run *r, struct sim_tensor *out)
{
	const struct sim_program	*p = r->p;
	void *const			*bufs;
	size_t				 i;

	bufs = r->opts != NULL ? r->opts->out_bufs : NULL;
	for (i = 0; i < p->noutputs; i++) {
		struct sim_bind		*bd = &r->t[p->output_tensor[i]];
		const struct sim_tinfo	*ti = bd->ti;
		size_t			 nbytes = ti->nelem * bd->esize;

		out[i].dtype = ti->dtype;
		out[i].rank = ti->rank;
		memset(out[i].shape, 0, sizeof(out[i].shape));
		memcpy(out[i].shape, ti->shape, sizeof(uint64_t) * ti->rank);
		out[i].nbytes = nbytes;
		if (bufs != NULL && bufs[i] != NULL) {
			/* the caller's buffer: written in place, or copied
			 * there (a returned argument) */
			if (bd->base != bufs[i])
				memcpy(bufs[i], bd->base, nbytes);
			out[i].data = bufs[i];
			continue;
		}
		if (bd->owned) {
			out[i].data = bd->base;
			bd->owned = false;
			continue;
		}
		out[i].data = sim_exec_tensor_alloc(nbytes);
		if (out[i].data == NULL) {
			sim_tensors_release(out, i);
			return (SIM_ENOMEM);
		}
		memcpy(out[i].data, bd->base, nbytes);
	}
	return (0);
}

int
sim_run(const struct sim_program *p, const struct sim_tensor *inputs,
    size_t ninputs, struct sim_tensor *outputs, size_t noutputs,
    const struct sim_run_opts *opts, struct sim_diag *diag)
{
	struct sim_run		 r = { .p = p, .opts = opts, .diag = diag };
	size_t			 i;
	uint64_t		 prog;
	int			 rc;

	if (diag != NULL)
		diag->msg[0] = '\0';
	r.threads = opts != NULL && opts->threads > 1 ? opts->threads : 1;
	if (r.threads > SIM_POOL_MAX)
		r.threads = SIM_POOL_MAX;
	if (opts != NULL && opts->op_cb != NULL)
		r.t0_ns = sim_exec_now_ns();
	if ((rc = sim_exec_check_args(p, inputs, ninputs, noutputs, diag)))
		return (rc);
	rc = SIM_ENOMEM;
	r.t = calloc(p->ntensors + 1, sizeof(*r.t));
	r.lv = calloc(p->nloopvars + p->nfns + 1, sizeof(int64_t));
	if (r.t == NULL || r.lv == NULL)
		goto out;
	if (r.threads > 1 &&
	    (r.slots = calloc(SIM_POOL_MAX, sizeof(*r.slots))) == NULL)
		goto out;
	pthread_mutex_lock(&((struct sim_program *)p)->run_mu);
	r.mem = p->run_cache;
	((struct sim_program *)p)->run_cache = NULL;
	pthread_mutex_unlock(&((struct sim_program *)p)->run_mu);
	if (r.mem == NULL &&
	    (r.mem = sim_exec_tensor_alloc(p->run_bytes)) == NULL)
		goto out;
	sim_exec_run_rows(&r, r.mem, true);
	if ((rc = sim_exec_bind(&r, inputs)))
		goto out;
	if (p->collective)
		rc = sim_lang_exec_grid(&r);
	else if (p->par != NULL &&
	    sim_exec_spread(&r, p->nprograms, p->par_work))
		rc = sim_exec_region(&r, NULL, p->par, p->nprograms);
	else
		for (prog = 0; prog < p->nprograms && rc == 0; prog++) {
			sim_exec_program_ids(&r, prog);
			rc = sim_exec_body(&r, p->body, p->nbody);
		}
	if (rc == 0)
		rc = sim_exec_outputs(&r, outputs);
out:
	if (rc == SIM_ENOMEM)
		sim_diag_set(diag, "out of memory");
	sim_exec_slots_release(&r);
	for (i = 0; r.t != NULL && i < p->ntensors; i++)
		if (r.t[i].owned)
			free(r.t[i].base);
	if (r.mem != NULL && p->run_bytes <= SIM_RUN_CACHE_MAX) {
		pthread_mutex_lock(&((struct sim_program *)p)->run_mu);
		if (p->run_cache == NULL) {
			((struct sim_program *)p)->run_cache = r.mem;
			r.mem = NULL;
		}
		pthread_mutex_unlock(&((struct sim_program *)p)->run_mu);
	}
	free(r.mem);
	free(r.t);
	free(r.lv);
	return (rc);
}

void
sim_tensors_release(struct sim_tensor *t, size_t n)
{
	size_t	i;

	for (i = 0; t != NULL && i < n; i++) {
		free(t[i].data);
		t[i].data = NULL;
		t[i].nbytes = 0;
	}
}
