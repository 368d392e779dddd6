/* sim_lang_exec.c: the interpreter of the nki.language op kinds 80-119: the random stream (rand, random_seed; nisa.dropout draws from it), gather_flattened, all_reduce over programs run side by side, if, index functions (its activation functions are row math: sim_exec_row.c). */
/* Floor 3, beside sim_exec.c: uses its row machinery (sim_impl.h). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/* Programs side by side (sim_lang_exec_grid): where they meet. */
struct sim_coll {
	pthread_mutex_t			 mu;
	pthread_cond_t			 cv;
	uint64_t			 nprog;
	uint64_t			 alive;		/* still running */
	uint64_t			 arrived;	/* at this meeting */
	uint64_t			 gen;		/* meetings so far */
	bool				 failed;	/* a program failed */
	const float			**bufs;		/* per program */
	const struct sim_run_opts	*opts;		/* the caller's */
	struct sim_run_opts		 topts;		/* ... serialized */
};

/* One program of a side-by-side run. */
struct sim_lang_prog {
	struct sim_run		 r;
	struct sim_diag		 diag;
	pthread_t		 tid;
	bool			 started;
	int			 rc;
};

/* ------------------------------------------------------------ fns */

static void
sim_lang_exec_fn(struct sim_run *r, const struct sim_fn *fn)
{
	int64_t	v = (int64_t)sim_exec_lin(r, &fn->expr);
	int64_t	q = v / fn->divisor, m = v % fn->divisor;

	if (m < 0) {
		m += fn->divisor;
		q--;
	}
	r->lv[fn->slot] = fn->kind == NKIR__V1__FN_KIND__FN_FLOORDIV ? q : m;
}

void
sim_lang_exec_fns(struct sim_run *r, const uint32_t *fns, uint32_t n)
{
	uint32_t	i;

	for (i = 0; i < n; i++)
		sim_lang_exec_fn(r, &r->p->fns[fns[i]]);
}

/* ------------------------------------------------------------ RNG */

uint64_t
sim_lang_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (z ^ (z >> 31));
}

void
sim_lang_exec_seed_set(struct sim_run *r, uint64_t seed)
{
	r->rng_key = sim_lang_mix(seed ^ 0x6e6b6964726e6721ull);
	r->rng_ctr = 0;
}

float
sim_lang_exec_uniform(struct sim_run *r)
{
	uint64_t	z;

	z = sim_lang_mix(r->rng_key + 0x9e3779b97f4a7c15ull * ++r->rng_ctr);
	return ((float)(z >> 40) * (1.0f / 16777216.0f));
}

void
sim_lang_exec_program(struct sim_run *r)
{
	uint32_t	i;

	/* as if the program began with nl.random_seed(its index) */
	sim_lang_exec_seed_set(r, r->prog);
	for (i = 0; i < r->p->nfns; i++)
		sim_lang_exec_fn(r, &r->p->fns[i]);
}

static int
sim_lang_exec_seed(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_operand	*s = &op->src[0];
	const struct sim_view		*vs[1] = { &s->v };
	struct sim_rows			 it;
	const float			*x;
	int64_t				 st;
	float				 v;
	int				 rc;

	if (s->scalar) {
		sim_lang_exec_seed_set(r, (uint64_t)op->start);
		return (0);
	} else {
		sim_exec_rows_begin(&it, r, s->v.rank, s->v.shape, vs, 1);
		if (s->v.nmask) {
			if ((rc = sim_exec_active(r, op, &it, r->act, 1)))
				return (rc);
			if (!r->act[0])
				return (0);
		}
		x = sim_exec_read(r, s, it.off[0], 1, r->row[0], &st, NULL);
		v = x[0];
	}
	if (!(v == v) || fabsf(v) >= 9.2e18f)
		return (sim_exec_fail(r, op, SIM_ERUNTIME,
		    "random_seed: the seed %g is not an integer", (double)v));
	sim_lang_exec_seed_set(r, (uint64_t)(int64_t)v);
	return (0);
}

/* ------------------------------------------------------------ rows */

/* Compute one row of op into out[0 .. n-1] (act: the active elements). */
typedef void	 sim_lang_row_fn(struct sim_run *, const struct sim_op *,
		    const struct sim_rows *, float *, const uint8_t *, size_t);

/* An element-wise op of dst's iteration space, row by row; staged ops
 * (a source overlaps dst through another view) compute every row first. */
static int
sim_lang_exec_rows(struct sim_run *r, const struct sim_op *op,
    sim_lang_row_fn *fn)
{
	const struct sim_view	*vs[3] = { &op->dst, NULL, NULL }, *v1[1];
	size_t			 n = op->shape[op->rank - 1];
	float			*stage = NULL, *out;
	uint8_t			*sact = NULL;
	const uint8_t		*act;
	struct sim_rows		 it;
	int			 k, rc;

	for (k = 0; k < op->nsrc && k < 2; k++)
		if (!op->src[k].scalar)
			vs[k + 1] = &op->src[k].v;
	if (op->stage) {
		stage = r->scratch;
		sact = (uint8_t *)(r->scratch + op->dst.nelem);
	}
	sim_exec_rows_begin(&it, r, op->rank, op->shape, vs, 3);
	do {
		if ((rc = sim_exec_row_act(r, op, op->masked, &it, n, &act)))
			return (rc);
		out = stage != NULL ? stage : r->row[3];
		fn(r, op, &it, out, act, n);
		if (stage == NULL) {
			sim_exec_write(r, &op->dst, it.off[0], n, out, 1, act);
			continue;
		}
		sim_exec_act_save(sact, act, n);
		stage += n;
		sact += n;
	} while (sim_exec_rows_next(&it));
	if (!op->stage)
		return (0);
	stage = r->scratch;
	sact = (uint8_t *)(r->scratch + op->dst.nelem);
	v1[0] = &op->dst;
	sim_exec_rows_begin(&it, r, op->rank, op->shape, v1, 1);
	do {
		sim_exec_write(r, &op->dst, it.off[0], n, stage, 1, sact);
		stage += n;
		sact += n;
	} while (sim_exec_rows_next(&it));
	return (0);
}

static void
sim_lang_row_rand(struct sim_run *r, const struct sim_op *op,
    const struct sim_rows *it, float *out, const uint8_t *act, size_t n)
{
	size_t	i;

	/* every element draws, active or not: the numbers do not depend on
	 * the mask */
	for (i = 0; i < n; i++)
		out[i] = sim_lang_exec_uniform(r);
}

/* ------------------------------------------------------------ gather */

static int
sim_lang_exec_gather(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*dv = &op->src[0].v;
	const uint64_t		 P = dv->shape[0], Fd = dv->nelem / P;
	const uint64_t		 Fi = op->dst.nelem / P;
	float			*data = r->scratch, *idx = data + dv->nelem;
	float			*out = idx + op->dst.nelem, bad;
	uint8_t			*on = (uint8_t *)(out + op->dst.nelem);
	uint64_t		 p, j, e;
	float			 v;
	int			 rc;

	bad = sim_dtype_uninit(r->t[op->dst.tensor].ti->dtype);
	if ((rc = sim_exec_gather(r, op, &op->src[0], data, on, bad)) ||
	    (rc = sim_exec_gather(r, op, &op->src[1], idx, NULL, -1.0f)))
		return (rc);
	for (p = 0; p < P; p++)
		for (j = 0; j < Fi; j++) {
			v = idx[p * Fi + j];
			/* out of bounds: the uninitialized value ("garbage") */
			if (v >= 0.0f && v < (float)Fd) {
				e = p * Fd + (uint64_t)v;
				out[p * Fi + j] = on[e] ? data[e] : bad;
			} else
				out[p * Fi + j] = bad;
		}
	return (sim_exec_scatter(r, op, &op->dst, out));
}

/* ------------------------------------------------------------ view */

/* dst <- src's bytes (its dtype, little-endian, row-major) read as dst's
 * dtype (sim_lang_plan_bitcast). */
static int
sim_lang_exec_bitcast(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*s = &op->src[0].v;
	float			*in = r->scratch, *bytes = in + s->nelem;
	float			*out = bytes + s->nelem;
	uint8_t			*on = (uint8_t *)(out + op->dst.nelem);
	int			 sdt = r->t[s->tensor].ti->dtype;
	int			 ddt = r->t[op->dst.tensor].ti->dtype;
	int			 rc;

	if ((rc = sim_exec_gather(r, op, &op->src[0], in, on,
	    sim_dtype_uninit(sdt))))
		return (rc);
	sim_dtype_encode(sdt, bytes, 1, s->nelem, in, 1);
	sim_dtype_decode(ddt, bytes, 1, op->dst.nelem, out);
	return (sim_exec_scatter(r, op, &op->dst, out));
}

/* ------------------------------------------------------------ all_reduce */

/* Wait until every running program arrives (or one failed). */
static int
sim_lang_exec_meet(struct sim_run *r, const struct sim_op *op)
{
	struct sim_coll	*c = r->coll;
	uint64_t	 gen;
	bool		 failed;

	pthread_mutex_lock(&c->mu);
	gen = c->gen;
	if (!c->failed && ++c->arrived == c->alive) {
		c->arrived = 0;
		c->gen++;
		pthread_cond_broadcast(&c->cv);
	}
	while (!c->failed && c->gen == gen)
		pthread_cond_wait(&c->cv, &c->mu);
	failed = c->failed;
	pthread_mutex_unlock(&c->mu);
	if (failed)
		return (sim_exec_fail(r, op, SIM_ERUNTIME, "all_reduce: another "
		    "program of the launch grid failed"));
	return (0);
}

static float
sim_lang_exec_ident(int alu)
{
	switch (alu) {
	case NKIR__V1__ALU_OP__ALU_MULTIPLY:
		return (1.0f);
	case NKIR__V1__ALU_OP__ALU_MAXIMUM:
		return (-INFINITY);
	case NKIR__V1__ALU_OP__ALU_MINIMUM:
		return (INFINITY);
	default:
		return (0.0f);
	}
}

/* Program m is in program q's group: equal ids on every axis not in the
 * reduced set. */
static bool
sim_lang_exec_peer(const struct sim_program *p, uint64_t q, uint64_t m,
    uint32_t axes)
{
	int	a;

	for (a = p->grid_rank - 1; a >= 0; a--) {
		if (!(axes & (1u << a)) && q % p->grid[a] != m % p->grid[a])
			return (false);
		q /= p->grid[a];
		m /= p->grid[a];
	}
	return (true);
}

static int
sim_lang_exec_all_reduce(struct sim_run *r, const struct sim_op *op)
{
	const uint64_t	 ne = op->dst.nelem;
	float		*mine = r->scratch, *out = mine + ne, x, y;
	struct sim_coll	*c = r->coll;
	uint64_t	 m, e;
	bool		 first = true;
	int		 rc;

	if (c == NULL)
		return (sim_exec_fail(r, op, SIM_ERUNTIME, "all_reduce outside "
		    "a side-by-side run"));
	if ((rc = sim_exec_gather(r, op, &op->src[0], mine, NULL,
	    sim_lang_exec_ident(op->alu))))
		return (rc);
	c->bufs[r->prog] = mine;
	if ((rc = sim_lang_exec_meet(r, op)))
		return (rc);
	/* every program folds its group in program order: the same result
	 * in each, whatever the threads' timing */
	for (m = 0; m < c->nprog; m++) {
		if (!sim_lang_exec_peer(r->p, r->prog, m, op->axes))
			continue;
		for (e = 0; e < ne; e++) {
			y = c->bufs[m][e];
			if (first) {
				out[e] = y;
				continue;
			}
			x = out[e];
			switch (op->alu) {
			case NKIR__V1__ALU_OP__ALU_MULTIPLY:
				out[e] = x * y;
				break;
			case NKIR__V1__ALU_OP__ALU_MAXIMUM:
				out[e] = (y != y || y > x) ? y : x;
				break;
			case NKIR__V1__ALU_OP__ALU_MINIMUM:
				out[e] = (y != y || y < x) ? y : x;
				break;
			default:
				out[e] = x + y;
				break;
			}
		}
		first = false;
	}
	if ((rc = sim_lang_exec_meet(r, op)))
		return (rc);
	return (sim_exec_scatter(r, op, &op->dst, out));
}

/* The caller's callbacks, one program at a time. */
static void
sim_lang_print_cb(void *arg, const char *text, size_t len)
{
	struct sim_coll	*c = arg;

	pthread_mutex_lock(&c->mu);
	c->opts->print_cb(c->opts->print_arg, text, len);
	pthread_mutex_unlock(&c->mu);
}

static void
sim_lang_op_cb(void *arg, const struct sim_op_event *ev)
{
	struct sim_coll	*c = arg;

	pthread_mutex_lock(&c->mu);
	c->opts->op_cb(c->opts->op_arg, ev);
	pthread_mutex_unlock(&c->mu);
}

static void *
sim_lang_exec_thread(void *arg)
{
	struct sim_lang_prog	*g = arg;
	struct sim_run		*r = &g->r;
	struct sim_coll		*c = r->coll;

	sim_lang_exec_program(r);
	g->rc = sim_exec_body(r, r->p->body, r->p->nbody);
	pthread_mutex_lock(&c->mu);
	c->alive--;
	if (g->rc != 0)
		c->failed = true;
	if (g->rc != 0 || (c->arrived > 0 && c->arrived == c->alive)) {
		c->arrived = 0;
		c->gen++;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	return (NULL);
}

/* Program q's run: r's HBM bindings, its own tiles and run block. */
static int
sim_lang_exec_prog_init(struct sim_lang_prog *g, const struct sim_run *r,
    struct sim_coll *c, uint64_t q)
{
	const struct sim_program	*p = r->p;
	struct sim_run			*pr = &g->r;
	size_t				 row = p->row_max ? p->row_max : 1, i;
	uint64_t			 e, x = q;
	int				 a;

	*pr = *r;
	pr->diag = &g->diag;
	pr->coll = c;
	pr->opts = &c->topts;
	pr->prog = q;
	pr->inpar = true;	/* one thread per program: nothing more */
	pr->slots = NULL;
	for (a = p->grid_rank - 1; a >= 0; a--) {
		pr->pid[a] = (int64_t)(x % p->grid[a]);
		x /= p->grid[a];
	}
	pr->t = calloc(p->ntensors + 1, sizeof(*pr->t));
	pr->lv = calloc(p->nloopvars + p->nfns + 1, sizeof(int64_t));
	pr->mem = malloc(p->run_bytes ? p->run_bytes : 1);
	if (pr->t == NULL || pr->lv == NULL || pr->mem == NULL)
		return (SIM_ENOMEM);
	memcpy(pr->t, r->t, p->ntensors * sizeof(*pr->t));
	for (i = 0; i < p->ntensors; i++) {
		struct sim_bind	*bd = &pr->t[i];
		float		 u;

		bd->owned = false;
		if (!bd->ti->chip)
			continue;
		bd->base = pr->mem + bd->ti->moff;
		if (bd->ti->nofill)
			continue;
		u = sim_dtype_uninit(bd->ti->dtype);
		for (e = 0; e < bd->ti->nelem; e++)
			((float *)bd->base)[e] = u;
	}
	pr->scratch = (float *)(pr->mem + p->scratch_off);
	for (i = 0; i < 5; i++)
		pr->row[i] = (float *)(pr->mem + p->row_off) +
		    i * (((row * sizeof(float) + 63) & ~(size_t)63) /
		    sizeof(float));
	pr->act = (uint8_t *)pr->mem + p->act_off;
	return (0);
}

int
sim_lang_exec_grid(struct sim_run *r)
{
	const struct sim_program	*p = r->p;
	struct sim_lang_prog		*g;
	struct sim_coll			 c;
	uint64_t			 q, n = p->nprograms;
	int				 rc = 0;

	memset(&c, 0, sizeof(c));
	g = calloc(n, sizeof(*g));
	c.bufs = calloc(n, sizeof(*c.bufs));
	if (g == NULL || c.bufs == NULL) {
		free(g);
		free(c.bufs);
		return (SIM_ENOMEM);
	}
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	c.nprog = n;
	c.opts = r->opts;
	if (r->opts != NULL) {
		c.topts = *r->opts;
		if (r->opts->print_cb != NULL) {
			c.topts.print_cb = sim_lang_print_cb;
			c.topts.print_arg = &c;
		}
		if (r->opts->op_cb != NULL) {
			c.topts.op_cb = sim_lang_op_cb;
			c.topts.op_arg = &c;
		}
	}
	for (q = 0; q < n && rc == 0; q++)
		rc = sim_lang_exec_prog_init(&g[q], r, &c, q);
	c.alive = n;
	for (q = 0; q < n && rc == 0; q++) {
		if (pthread_create(&g[q].tid, NULL, sim_lang_exec_thread,
		    &g[q]) != 0) {
			rc = SIM_ENOMEM;
			break;
		}
		g[q].started = true;
	}
	if (rc != 0) {
		/* the started ones stop at their next meeting */
		pthread_mutex_lock(&c.mu);
		c.failed = true;
		c.alive -= n - q;
		pthread_cond_broadcast(&c.cv);
		pthread_mutex_unlock(&c.mu);
	}
	for (q = 0; q < n; q++)
		if (g[q].started)
			pthread_join(g[q].tid, NULL);
	/* the first failure that is not a program stopping for another */
	for (q = 0; q < n && rc == 0; q++)
		if (g[q].rc != 0 && strstr(g[q].diag.msg, "another program") ==
		    NULL) {
			rc = g[q].rc;
			if (r->diag != NULL)
				*r->diag = g[q].diag;
		}
	for (q = 0; q < n && rc == 0; q++)
		if (g[q].rc != 0) {
			rc = g[q].rc;
			if (r->diag != NULL)
				*r->diag = g[q].diag;
		}
	for (q = 0; q < n; q++) {
		free(g[q].r.t);
		free(g[q].r.lv);
		free(g[q].r.mem);
	}
	pthread_cond_destroy(&c.cv);
	pthread_mutex_destroy(&c.mu);
	free(c.bufs);
	free(g);
	return (rc);
}

/* ------------------------------------------------------------ if */

static int
sim_lang_exec_if(struct sim_run *r, const struct sim_op *op)
{
	int	i;

	if (op->dyn_loop)		/* OP_DYN_LOOP: sim_op06_exec.c */
		return (sim_op06_exec_dyn_loop(r, op));
	for (i = 0; i < op->ncond; i++)
		if ((int64_t)sim_exec_lin(r, &op->cond[i]) < 0)
			return (sim_exec_body(r, op->else_body, op->nelse));
	return (sim_exec_body(r, op->body, op->nbody));
}

/* ------------------------------------------------------------ dispatch */

int
sim_lang_exec_op(struct sim_run *r, const struct sim_op *op)
{
	switch (op->kind) {
	case NKIR__V1__OP_KIND__OP_RAND:
		return (sim_lang_exec_rows(r, op, sim_lang_row_rand));
	case NKIR__V1__OP_KIND__OP_RANDOM_SEED:
		return (sim_lang_exec_seed(r, op));
	case NKIR__V1__OP_KIND__OP_GATHER_FLAT:
		return (sim_lang_exec_gather(r, op));
	case NKIR__V1__OP_KIND__OP_ALL_REDUCE:
		return (sim_lang_exec_all_reduce(r, op));
	case NKIR__V1__OP_KIND__OP_IF:
		return (sim_lang_exec_if(r, op));
	case NKIR__V1__OP_KIND__OP_BITCAST:
		return (sim_lang_exec_bitcast(r, op));
	case NKIR__V1__OP_KIND__OP_QUANTIZE_MX:	/* sim_op06_mx_*.c */
		return (sim_op06_mx_exec_quantize(r, op));
	case NKIR__V1__OP_KIND__OP_MATMUL_MX:
		return (sim_op06_mx_exec_matmul(r, op));
	case NKIR__V1__OP_KIND__OP_RAND_GET_STATE:	/* sim_op06_rng_*.c */
		return (sim_op06_rng_exec_get(r, op));
	case NKIR__V1__OP_KIND__OP_RAND_SET_STATE:
		return (sim_op06_rng_exec_set(r, op));
	case NKIR__V1__OP_KIND__OP_TI_GATHER:	/* sim_op06_ti.c */
	case NKIR__V1__OP_KIND__OP_TI_SCATTER:
		return (sim_op06_exec_ti(r, op));
	default:
		return (sim_exec_fail(r, op, SIM_ERUNTIME, "unknown op kind %d",
		    op->kind));
	}
}
