/* NKI 0.6's random state ops run: OP_RAND_GET_STATE and OP_RAND_SET_STATE over the program's counter-based stream (layout: sim_op06_rng_plan.c). */

#include <stdint.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

#define SIM_RNG_MASK	((1u << SIM_RNG_BITS) - 1)

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
