/* sim_exec_par.c: the interpreter's parts side by side on the pool's threads: the worker slots' memory, the first failure of parts, an op's rows split, a loop's iterations or the grid's programs spread (what sim_par.c proved may run so). */
/* Floor 3, beside sim_exec.c: calls sim_pool.c and sim_exec.c's
 * sim_exec_body (a spread region runs bodies). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

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
void
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
void
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
unsigned
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
int
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
bool
sim_exec_spread(const struct sim_run *r, uint64_t n, uint64_t work)
{
	if (r->inpar || r->threads <= 1 || r->slots == NULL || n < 2 ||
	    (r->opts != NULL && r->opts->op_cb != NULL))
		return (false);
	return (work >= SIM_EXEC_REGION_MIN / n + 1);
}

int
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
