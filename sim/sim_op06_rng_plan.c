/* NKI 0.6's random state ops planned: OP_RAND_GET_STATE (nisa.rand_get_state) and OP_RAND_SET_STATE (nisa.rand_set_state) (run: sim_op06_rng_exec.c). */

#include <stdint.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/*
 * The words and limits are aws-neuron-sdk@81ce03ae's
 * nki/api/nki/isa/__init__.py (rand_get_state, rand_set_state). The
 * hardware keeps an XORWOW state of 6 uint32 per compute lane (GpSimd),
 * four of them on NeuronCore-v4's Vector Engine (24); nkid's stream is one
 * per program (sim_lang_exec_uniform: a 64-bit key and a 64-bit count of
 * draws), so every lane holds the same state: the 128 bits in six 24-bit
 * words, low bits first (a uint32 tile holds up to 2^24 exactly), repeated
 * for each of the Vector Engine's four slots.
 */

/* The state tile v (operand arg) of op o: NKI's limits. */
static int
sim_rng_plan_tile(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_view *v, const char *arg, bool get)
{
	const char	*what = sim_op_name(o->kind);
	int		 gen = sim_plan_nc_version(b), dt;
	bool		 vec = o->engine == NKIR__V1__ENGINE__ENGINE_VECTOR;
	uint64_t	 want = vec ? 4 * SIM_RNG_WORDS : SIM_RNG_WORDS;

	if (gen < 3)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s': Supported "
		    "arch versions: NeuronCore-v3+ (platform_target trn2 or "
		    "trn3)", what));
	if (o->engine != NKIR__V1__ENGINE__ENGINE_GPSIMD && !vec)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s': Supported "
		    "engines: NeuronCore-v3: GpSimd. NeuronCore-v4+: GpSimd, "
		    "Vector", what));
	if (vec && gen < 4)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s': Supported "
		    "engines: NeuronCore-v3: GpSimd (the Vector Engine needs "
		    "NeuronCore-v4)", what));
	dt = b->p->tensors[v->tensor].dtype;
	if (v->rank != 2)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s': %s must be a "
		    "2D uint32 tensor, got %d dimensions", what, arg, v->rank));
	if (dt != SIM_DT_UINT32)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s': The %s %s "
		    "tile must be uint32, got %s", what,
		    get ? "output" : "input", arg, sim_dtype_name(dt)));
	if (v->shape[1] != want)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s': %s element "
		    "count for XORWOW must be 6 elements (GpSimd) or 24 "
		    "elements (Vector), got %llu for the %s Engine", what, arg,
		    (unsigned long long)v->shape[1], vec ? "Vector" : "GpSimd"));
	if (v->nmask)
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s' cannot mask "
		    "%s", what, arg));
	if (b->p->scratch_max < v->nelem)
		b->p->scratch_max = v->nelem;
	return (0);
}

int
sim_op06_rng_plan_get(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	const struct sim_tinfo	*ti = &b->p->tensors[op->dst.tensor];
	int			 rc;

	op->nsrc = 0;
	if ((rc = sim_rng_plan_tile(b, o, &op->dst, "dst", true)))
		return (rc);
	if (ti->space == NKIR__V1__SPACE__SPACE_PSUM &&
	    (o->engine != NKIR__V1__ENGINE__ENGINE_VECTOR ||
	    sim_plan_nc_version(b) < 4))
		return (sim_plan_err(b, o->loc, SIM_EINVAL, "'%s': Since GpSimd "
		    "Engine cannot access PSUM, dst must be in SBUF when using "
		    "GpSimd Engine (PSUM: the Vector Engine of NeuronCore-v4)",
		    sim_op_name(o->kind)));
	return (0);
}

int
sim_op06_rng_plan_set(struct sim_build *b, const Nkir__V1__Op *o,
    struct sim_op *op)
{
	int	rc;

	op->nsrc = 1;
	if ((rc = sim_plan_operand(b, o, op, 0, "src_seeds", false)) ||
	    (rc = sim_plan_space(b, o, &op->src[0].v, "src_seeds",
	    SIM_PLAN_SBUF)))
		return (rc);
	return (sim_rng_plan_tile(b, o, &op->src[0].v, "src_seeds", false));
}
