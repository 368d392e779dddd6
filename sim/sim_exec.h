/*
 * sim_exec.h: the interpreter's run state and the row machinery shared by
 * sim_exec.c (the core kinds, the driver) and sim_lang_exec.c (the
 * nki.language kinds 80-119, index functions, the RNG, collectives).
 * Internal to sim/.
 */
#ifndef NKID_SIM_EXEC_H
#define NKID_SIM_EXEC_H

#include "sim/sim_impl.h"

/* A tensor's memory during one run. */
struct sim_bind {
	char			*base;
	int			 dtype;	/* what writes round to */
	bool			 chip;	/* fp32 copy of an on-chip tile */
	bool			 f32;	/* holds float (chip or fp32 HBM) */
	bool			 owned;
	size_t			 esize;	/* bytes per stored element */
	const struct sim_tinfo	*ti;
};

struct sim_coll;

/* The state of one sim_run (of one program, when programs run side by
 * side: see sim_lang_exec_grid). */
struct sim_run {
	const struct sim_program	*p;
	const struct sim_run_opts	*opts;
	struct sim_diag			*diag;
	struct sim_bind			*t;
	int64_t				*lv;	/* loop variables, then the
						 * index functions' slots */
	int64_t				 pid[SIM_GRID_RANK_MAX];
	float				*row[5];
	uint8_t				*act;
	float				*scratch;
	char				*mem;	/* the run block */
	uint64_t			 prog;	/* SPMD program being run */
	uint64_t			 t0_ns;	/* when sim_run began */
	uint64_t			 rng_key;	/* the RNG: seed */
	uint64_t			 rng_ctr;	/* ... draws so far */
	struct sim_coll			*coll;	/* programs side by side */
};

/* Row iterator over an iteration space: offsets of up to 4 views at the
 * start of each innermost row. */
struct sim_rows {
	int			 rank;
	const uint64_t		*shape;
	uint64_t		 idx[SIM_MAX_RANK];
	int			 nv;
	const struct sim_view	*v[4];
	uint64_t		 off[4];
};

/* sim_exec.c */
/* l's value (its axis part excluded) for the run's loop variables and
 * program ids, modulo 2^64. */
uint64_t	 sim_exec_lin(const struct sim_run *r, const struct sim_lin *l);
/* l at the start of the iterator's current row. */
int64_t		 sim_exec_lin_row(const struct sim_run *r,
		    const struct sim_lin *l, const struct sim_rows *it);
/* Start iterating the rows of shape with views v[0 .. nv-1] (NULLs ok). */
void		 sim_exec_rows_begin(struct sim_rows *it,
		    const struct sim_run *r, int rank, const uint64_t *shape,
		    const struct sim_view **v, int nv);
/* Advance to the next row; false after the last. */
bool		 sim_exec_rows_next(struct sim_rows *it);
/* Set r's diag to the message and " (file:line)" of op; returns code. */
int		 sim_exec_fail(struct sim_run *r, const struct sim_op *op,
		    int code, const char *fmt, ...)
		    __attribute__((format(printf, 4, 5)));
/* act[0 .. n-1]: the elements of the current row every mask holds for;
 * active elements of masked views are bounds-checked (SIM_ERUNTIME). */
int		 sim_exec_active(struct sim_run *r, const struct sim_op *op,
		    const struct sim_rows *it, uint8_t *act, size_t n);
/* A row of n elements of s at offset off as fp32 (stride *st, 0 or 1);
 * tmp has room for n; inactive elements (act) read as 0. */
const float	*sim_exec_read(const struct sim_run *r,
		    const struct sim_operand *s, uint64_t off, size_t n,
		    float *tmp, int64_t *st, const uint8_t *act);
/* Write n values src[i * sst] through v at offset off, rounded to the
 * tensor's dtype; only active elements when act is set. */
void		 sim_exec_write(const struct sim_run *r,
		    const struct sim_view *v, uint64_t off, size_t n,
		    const float *src, int64_t sst, const uint8_t *act);
/* Copy view s into buf, row-major in its shape (inactive elements get
 * `inactive` and, if act_out is set, a 0 flag there). */
int		 sim_exec_gather(struct sim_run *r, const struct sim_op *op,
		    const struct sim_operand *s, float *buf, uint8_t *act_out,
		    float inactive);
/* Write buf (row-major in v's shape) through view v. */
int		 sim_exec_scatter(struct sim_run *r, const struct sim_op *op,
		    const struct sim_view *v, const float *buf);
/* Run ops[0 .. n-1] of program r->prog. */
int		 sim_exec_body(struct sim_run *r, const struct sim_op *ops,
		    size_t n);

/* sim_lang_exec.c */
/* Run op, of a kind 80-119. */
int		 sim_lang_exec_op(struct sim_run *r, const struct sim_op *op);
/* Activation function act (80-119) of t. */
float		 sim_lang_exec_act(int act, float t);
/* Refresh the index functions fns[0 .. n-1] (indices into p->fns). */
void		 sim_lang_exec_fns(struct sim_run *r, const uint32_t *fns,
		    uint32_t n);
/* Start program r->prog: the RNG's default seed, every index function. */
void		 sim_lang_exec_program(struct sim_run *r);
/* Run every program of a collective kernel side by side (one thread per
 * program, each with its own tiles; all_reduce meets there). r is the
 * bound run of sim_run; returns 0 or the first program's error. */
int		 sim_lang_exec_grid(struct sim_run *r);

#endif /* NKID_SIM_EXEC_H */
