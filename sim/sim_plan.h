/*
 * sim_plan.h: the planner's state and the helpers its op planners share:
 * sim_plan.c (the core kinds, the driver) and sim_lang_plan.c (the
 * nki.language kinds 80-119, index functions, shared constants).
 * Internal to sim/: sim_impl.h holds what the rest of the executor sees.
 */
#ifndef NKID_SIM_PLAN_H
#define NKID_SIM_PLAN_H

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/* The state of one sim_plan_build. Per loop variable (and, after them,
 * per index function slot, see sim_lang_plan_fns): used, inscope and the
 * range [vlo, vhi] it takes, by vstep. */
struct sim_build {
	const Nkir__V1__Kernel	*k;
	struct sim_program	*p;
	struct sim_diag		*diag;
	uint8_t			*used;		/* bound by some loop */
	uint8_t			*inscope;
	int64_t			*vlo;
	int64_t			*vhi;
	int64_t			*vstep;
	int			 dead;		/* > 0: in a dead loop */
	uint64_t		 trips;		/* of the outer loops (sat.) */
	int			 depth;
	size_t			 nops;
	int			 grid_rank;	/* at least 1 */
	uint32_t		 grid[SIM_GRID_RANK_MAX];
	int			 guarded;	/* > 0: in an OP_IF body */
};

/* Where an operand must live (sim_plan_space). */
enum sim_plan_where {
	SIM_PLAN_NOWHERE,	/* the op has no such operand */
	SIM_PLAN_TILE,		/* on chip: SBUF or PSUM */
	SIM_PLAN_SBUF,
	SIM_PLAN_PSUM,
	SIM_PLAN_HBM,		/* hbm or shared_hbm */
};

/* sim_plan.c */
/* size bytes of the program's arena (zeroed, 16-byte aligned), freed with
 * the program; NULL when out of memory. */
void	*sim_plan_alloc(struct sim_build *b, size_t size);
/* Set b's diag to the message and " (file:line)" of loc (the kernel's
 * def line when NULL); returns code. */
int	 sim_plan_err(struct sim_build *b, const Nkir__V1__Loc *loc, int code,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* a as a linear form over an access of the given rank and shape, with
 * its exact range over loop variables, program ids and axes. */
int	 sim_plan_lin(struct sim_build *b, const Nkir__V1__Op *o,
	    const Nkir__V1__Affine *a, int rank, const uint64_t *shape,
	    struct sim_lin *out, sim_i128 *plo, sim_i128 *phi);
/* The range of l over the current loop ranges, program ids and axes. */
void	 sim_plan_lin_range(struct sim_build *b, const struct sim_lin *l,
	    int rank, const uint64_t *shape, sim_i128 *plo, sim_i128 *phi);
/* acc, operand arg of o, as a strided view (checked against the IR
 * contract and the partition limit). */
int	 sim_plan_view(struct sim_build *b, const Nkir__V1__Op *o,
	    const Nkir__V1__Access *acc, struct sim_view *v, const char *arg);
/* The view lives where `where` (enum sim_plan_where) says, else NKI's
 * "Expected operand ..." error. */
int	 sim_plan_space(struct sim_build *b, const Nkir__V1__Op *o,
	    const struct sim_view *v, const char *arg, int where);
/* Shapes a and b agree, else NKI's partition or shape mismatch error. */
int	 sim_plan_shape_eq(struct sim_build *b, const Nkir__V1__Op *o,
	    const char *an, int ar, const uint64_t *as, const char *bn, int br,
	    const uint64_t *bs);
/* Operand i of o into op->src[i]: an access, or a scalar if scalar_ok. */
int	 sim_plan_operand(struct sim_build *b, const Nkir__V1__Op *o,
	    struct sim_op *op, int i, const char *arg, bool scalar_ok);
/* Plan the n ops of a body into *out (arena memory): each op, then the
 * body's optimizations (and the whole program's at depth 0). */
int	 sim_plan_body(struct sim_build *b, Nkir__V1__Op *const *ops, size_t n,
	    struct sim_op **out);

/* sim_lang_plan.c: the planners of kinds 80-119 (sim_plan_kinds) */
int	 sim_lang_plan_indirect(struct sim_build *b, const Nkir__V1__Op *o,
	    struct sim_op *op);
int	 sim_lang_plan_rand(struct sim_build *b, const Nkir__V1__Op *o,
	    struct sim_op *op);
int	 sim_lang_plan_seed(struct sim_build *b, const Nkir__V1__Op *o,
	    struct sim_op *op);
int	 sim_lang_plan_dropout(struct sim_build *b, const Nkir__V1__Op *o,
	    struct sim_op *op);
int	 sim_lang_plan_gather(struct sim_build *b, const Nkir__V1__Op *o,
	    struct sim_op *op);
int	 sim_lang_plan_all_reduce(struct sim_build *b, const Nkir__V1__Op *o,
	    struct sim_op *op);
int	 sim_lang_plan_if(struct sim_build *b, const Nkir__V1__Op *o,
	    struct sim_op *op);
/* act is one of the activation functions kinds 80-119 add. */
bool	 sim_lang_plan_act_ok(int act);
/* Validate Kernel.fns into p->fns: each gets the slot after the loop
 * variables (p->nloopvars + i) that its TERM_FN terms read. */
int	 sim_lang_plan_fns(struct sim_build *b);
/* A TERM_FN term of o naming fn index: its slot, and its range over the
 * current loop ranges (set into b->vlo/vhi[slot]); the fn's loop
 * variables must be in scope. */
int	 sim_lang_plan_fn_term(struct sim_build *b, const Nkir__V1__Op *o,
	    uint32_t index, uint32_t *slot);
/* The fns a loop over variable var must refresh each trip (op->fns). */
int	 sim_lang_plan_loop_fns(struct sim_build *b, struct sim_op *op);
/* Tile t's bytes per partition of one block (*per_block) from its bytes
 * per partition: block dimensions are logical, the memory limits hold
 * per block. */
int	 sim_lang_plan_block_bytes(struct sim_build *b,
	    const Nkir__V1__Tensor *t, const struct sim_tinfo *ti,
	    uint64_t bytes, uint64_t *per_block);
/* A FILL_DATA tensor t: its bytes copied into ti->data. */
int	 sim_lang_plan_data(struct sim_build *b, const Nkir__V1__Tensor *t,
	    struct sim_tinfo *ti);

#endif /* NKID_SIM_PLAN_H */
