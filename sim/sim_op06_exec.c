/* NKI 0.6's op kinds 120-139 run: OP_DYN_LOOP, its body while its condition register is nonzero. */

#include <math.h>
#include <stdint.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/* The condition's value now: its one element, as an integer (NaN: 0;
 * beyond the int64 range: its sign's extreme). */
static int
sim_op06_cond(struct sim_run *r, const struct sim_op *op, int64_t *out)
{
	const struct sim_operand	*s = &op->src[0];
	const struct sim_view		*vs[1] = { &s->v };
	struct sim_rows			 it;
	const float			*x;
	float				 tmp[1];
	int64_t				 st;

	sim_exec_rows_begin(&it, r, s->v.rank, s->v.shape, vs, 1);
	x = sim_exec_read(r, s, it.off[0], 1, tmp, &st, NULL);
	if (!(x[0] == x[0]))
		*out = 0;
	else if (fabsf(x[0]) < 9.2e18f)
		*out = (int64_t)truncf(x[0]);
	else
		*out = x[0] > 0 ? INT64_MAX : INT64_MIN;
	return (0);
}

int
sim_op06_exec_dyn_loop(struct sim_run *r, const struct sim_op *op)
{
	const volatile int	*cancel = r->opts ? r->opts->cancel : NULL;
	uint64_t		 trips;
	int64_t			 v;
	int			 rc;

	for (trips = 0;; trips++) {
		if ((rc = sim_op06_cond(r, op, &v)))
			return (rc);
		if (v == 0)
			return (0);
		if (trips >= SIM_DYN_TRIPS_MAX)
			return (sim_exec_fail(r, op, SIM_ERUNTIME,
			    "dynamic loop did not end after %llu trips (its "
			    "condition register is still %lld; executor limit)",
			    (unsigned long long)SIM_DYN_TRIPS_MAX,
			    (long long)v));
		if (cancel != NULL && *cancel) {
			sim_diag_set(r->diag, "run cancelled");
			return (SIM_ECANCELED);
		}
		if ((rc = sim_exec_body(r, op->body, op->nbody)))
			return (rc);
	}
}
