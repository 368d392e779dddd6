/* NKI 0.6's random state ops planned and run: OP_RAND_GET_STATE (nisa.rand_get_state) and OP_RAND_SET_STATE (nisa.rand_set_state) over the program's counter-based stream. */

#include <math.h>
#include <stdint.h>
#include <string.h>

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

#define SIM_RNG_WORDS	6
#define SIM_RNG_BITS	24
#define SIM_RNG_MASK	((1u << SIM_RNG_BITS) - 1)

static int
sim_rng_target_gen(const struct sim_build *b)
{
	const char	*t = b->k->target;

	if (t != NULL && strcmp(t, "trn3") == 0)
		return (4);
	if (t != NULL && strcmp(t, "trn2") == 0)
		return (3);
	return (2);
}

/* The state tile v (operand arg) of op o: NKI's limits. */
static int
sim_rng_plan_tile(struct sim_build *b, const Nkir__V1__Op *o,
    const struct sim_view *v, const char *arg, bool get)
{
	const char	*what = sim_op_name(o->kind);
	int		 gen = sim_rng_target_gen(b), dt;
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
	    sim_rng_target_gen(b) < 4))
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

/* ------------------------------------------------------------ execution */

/* The stream's 128 bits (key, then draws so far) as six 24-bit words. */
static void
sim_rng_words(const struct sim_run *r, uint32_t w[SIM_RNG_WORDS])
{
	uint64_t	lo = r->rng_key, hi = r->rng_ctr;
	int		i;

	for (i = 0; i < SIM_RNG_WORDS; i++) {
		w[i] = (uint32_t)lo & SIM_RNG_MASK;
		lo = (lo >> SIM_RNG_BITS) | (hi << (64 - SIM_RNG_BITS));
		hi >>= SIM_RNG_BITS;
	}
}

int
sim_op06_rng_exec_get(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*d = &op->dst;
	float			*out = r->scratch;
	uint32_t		 w[SIM_RNG_WORDS];
	uint64_t		 p, i, F = d->shape[1];

	sim_rng_words(r, w);
	for (p = 0; p < d->shape[0]; p++)
		for (i = 0; i < F; i++)
			out[p * F + i] = (float)w[i % SIM_RNG_WORDS];
	return (sim_exec_scatter(r, op, d, out));
}

/* A uint32 tile's element (NaN, an unwritten one: 0). */
static uint32_t
sim_rng_u32(float x)
{
	return (x >= 0.0f && x < 4294967296.0f ? (uint32_t)x : 0);
}

int
sim_op06_rng_exec_set(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*s = &op->src[0].v;
	float			*in = r->scratch;
	uint64_t		 p, i, F = s->shape[1], key, ctr, h;
	uint32_t		 w[SIM_RNG_WORDS];
	bool			 state = true;
	int			 rc;

	if ((rc = sim_exec_gather(r, op, &op->src[0], in, NULL, 0.0f)))
		return (rc);
	/* a state rand_get_state wrote: every lane and slot alike, each
	 * word 24 bits, the 16 bits above the 128 zero */
	for (i = 0; i < SIM_RNG_WORDS; i++) {
		w[i] = sim_rng_u32(in[i]);
		state = state && in[i] == (float)w[i] && w[i] <= SIM_RNG_MASK;
	}
	state = state && (w[SIM_RNG_WORDS - 1] >> 8) == 0;
	for (p = 0; p < s->shape[0] && state; p++)
		for (i = 0; i < F && state; i++)
			state = in[p * F + i] == (float)w[i % SIM_RNG_WORDS];
	if (state) {
		key = ctr = 0;
		for (i = SIM_RNG_WORDS; i-- > 0;) {
			ctr = (ctr << SIM_RNG_BITS) | (key >> (64 -
			    SIM_RNG_BITS));
			key = (key << SIM_RNG_BITS) | w[i];
		}
		r->rng_key = key;
		r->rng_ctr = ctr;
		return (0);
	}
	/* other seeds: every word of every lane seeds the stream */
	h = 0x6e6b69647365656full;
	for (i = 0; i < s->nelem; i++)
		h = sim_lang_mix(h ^ sim_rng_u32(in[i]));
	sim_lang_exec_seed_set(r, h);
	return (0);
}
