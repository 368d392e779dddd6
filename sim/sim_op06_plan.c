/* NKI 0.6's op kinds 120-139 planned: OP_DYN_LOOP, a loop whose trips depend on run-time values (nl.while_loop, nl.fori_loop on registers). */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/*
 * OP_DYN_LOOP is planned as an OP_IF without conditions whose dyn_loop
 * flag is set: the optimizer's walks and the parallel planner already
 * treat an OP_IF's body as code that may or may not run (what it touches
 * keeps its fill, nothing around it is forwarded or run side by side),
 * which is exactly what a loop of unknown trip count needs.  The
 * executor's OP_IF hands such an op to sim_op06_exec_dyn_loop.
 */
int
sim_op06_plan_dyn_loop(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	const struct sim_view	*c;
	uint64_t		 outer;
	int			 rc;

	if (o->loop == NULL)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "dynamic loop op has no body"));
	if (o->n_src != 1)
		return (sim_plan_err(b, o->loc, SIM_EPARSE,
		    "dynamic loop op has %zu operands, not 1 (its condition)",
		    o->n_src));
	if (b->depth >= SIM_DEPTH_MAX)
		return (sim_plan_err(b, o->loc, SIM_ELIMIT,
		    "loops and ifs nested deeper than %d", SIM_DEPTH_MAX));
	op->nsrc = 1;
	if ((rc = sim_plan_operand(b, o, op, 0, "condition", false)) ||
	    (rc = sim_plan_space(b, o, &op->src[0].v, "condition",
	    SIM_PLAN_SBUF)))
		return (rc);
	c = &op->src[0].v;
	if (c->nelem != 1)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "the condition register of a dynamic loop must be one "
		    "element, got %llu", (unsigned long long)c->nelem));
	if (c->nmask)
		return (sim_plan_err(b, o->loc, SIM_EINVAL,
		    "the condition register of a dynamic loop cannot be "
		    "masked"));
	if (!b->dead && (rc = sim_plan_bounds(b, o, c)))
		return (rc);
	b->p->tensors[c->tensor].read = true;
	/* the program's cost (sim_program_cost) counts the most trips the
	 * loop may run: a caller that bounds work by it stays safe */
	outer = b->trips;
	b->trips = b->trips > UINT64_MAX / SIM_DYN_TRIPS_MAX ? UINT64_MAX :
	    b->trips * SIM_DYN_TRIPS_MAX;
	b->guarded++;
	b->depth++;
	rc = sim_plan_body(b, o->loop->body, o->loop->n_body, &op->body);
	b->depth--;
	b->guarded--;
	b->trips = outer;
	if (rc)
		return (rc);
	op->nbody = o->loop->n_body;
	op->kind = NKIR__V1__OP_KIND__OP_IF;
	op->ncond = 0;
	op->nelse = 0;
	op->dyn_loop = true;
	return (0);
}
