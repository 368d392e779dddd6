/* sim_exec_matmul.c: the interpreter's matmul through cblas_sgemm, on views in place or gathered, columns split over the pool, and loops of matmuls run as one product. */
/* Floor 3, beside sim_exec.c: calls sim_blas.c, sim_exec_view.c and
 * sim_exec_par.c. */
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

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

int
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
int
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
