/* NKI 0.6's MX (OCP microscaling) op kinds run: OP_QUANTIZE_MX (nisa.quantize_mx) and OP_MATMUL_MX (nisa.nc_matmul_mx), as sim_op06_mx_plan.c checked them. */

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

static int
sim_mx_is_scale(int dt)
{
	return (dt == SIM_DT_FP8_E8M0 || dt == SIM_DT_UINT8);
}

/*
 * The biased float8_e8m0fnu exponent of the group of src ([P, F], row
 * major) starting at partition p, x4 column j: the API page's
 * floor(log2(amax)) - (E_max - 1), 0 (2^-127) for an all-zero group,
 * 255 (NaN) when it holds Inf or NaN.
 */
static int
sim_mx_group_scale(const float *src, uint64_t F, uint64_t p, uint64_t j,
    int emax)
{
	float	a, amax = 0.0f;
	int	q, k, e, sb;

	for (k = 0; k < SIM_MX_GROUP; k++)
		for (q = 0; q < 4; q++) {
			a = fabsf(src[(p + k) * F + j * 4 + q]);
			if (!isfinite(a))
				return (255);
			if (a > amax)
				amax = a;
		}
	if (amax == 0.0f)
		return (0);
	(void)frexpf(amax, &e);		/* amax = f * 2^e, f in [0.5, 1) */
	sb = (e - 1) - (emax - 1) + 127;
	return (sb < 0 ? 0 : sb > 254 ? 254 : sb);
}

/* dst's current values (what the scales leave, what a matmul adds to). */
static int
sim_mx_gather_dst(struct sim_run *r, const struct sim_op *op, float *out)
{
	struct sim_operand	dst;

	memset(&dst, 0, sizeof dst);
	dst.v = op->dst;
	return (sim_exec_gather(r, op, &dst, out, NULL, 0.0f));
}

int
sim_op06_mx_exec_quantize(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*s = &op->src[0].v, *d = &op->dst;
	int			 ddt = r->t[d->tensor].ti->dtype, emax, sb, q;
	float			*src = r->scratch, *out = src + s->nelem, v;
	uint64_t		 P = s->shape[0], F = s->shape[1], p, j, k;
	uint32_t		 u, byte;
	double			 x;
	int			 rc;

	if ((rc = sim_exec_gather(r, op, &op->src[0], src, NULL, 0.0f)))
		return (rc);
	if (sim_mx_is_scale(ddt)) {
		if ((rc = sim_mx_gather_dst(r, op, out)))
			return (rc);
		/* the data's element type: Op.acc_dtype */
		emax = (int)op->value;
		for (p = 0; p < P; p += SIM_MX_GROUP)
			for (j = 0; j < F / 4; j++) {
				sb = sim_mx_group_scale(src, F, p, j, emax);
				v = ddt == SIM_DT_UINT8 ? (float)sb :
				    sim_dtype_e8m0_decode((uint8_t)sb);
				out[sim_op06_mx_scale_row(p) * d->shape[1] + j] = v;
			}
		return (sim_exec_scatter(r, op, d, out));
	}
	emax = sim_op06_mx_emax(ddt);
	for (p = 0; p < P; p += SIM_MX_GROUP)
		for (j = 0; j < F / 4; j++) {
			sb = sim_mx_group_scale(src, F, p, j, emax);
			for (k = p; k < p + SIM_MX_GROUP; k++) {
				u = 0;
				for (q = 0; q < 4; q++) {
					x = (double)src[k * F + j * 4 + q];
					if (sb == 255)
						x = NAN;
					else
						x = ldexp(x, 127 - sb);
					byte = sim_dtype_mx_encode(ddt,
					    (float)x);
					u |= byte << (8 * q);
				}
				memcpy(&v, &u, sizeof v);
				out[k * (F / 4) + j] = v;
			}
		}
	return (sim_exec_scatter(r, op, d, out));
}

/* Unpack x4 view buf ([K, n] elements of dt) into out [K, n, 4] values
 * times their scales (sc, [rows, n] of scale dtype sdt). */
static void
sim_mx_unpack(int dt, const float *buf, uint64_t K, uint64_t n, int sdt,
    const float *sc, float *out)
{
	uint64_t	k, i;
	uint32_t	u;
	float		f, m;
	int		q;

	for (k = 0; k < K; k++)
		for (i = 0; i < n; i++) {
			f = buf[k * n + i];
			if (dt == SIM_DT_FP4_E2M1_X4)
				u = sim_dtype_fp4x4_bits(f);
			else
				memcpy(&u, &f, sizeof u);
			m = sc[sim_op06_mx_scale_row(k - k % SIM_MX_GROUP) * n + i];
			if (sdt == SIM_DT_UINT8)
				m = sim_dtype_e8m0_decode((uint8_t)m);
			for (q = 0; q < 4; q++)
				out[(k * n + i) * 4 + q] = m *
				    sim_dtype_mx_decode(dt, dt ==
				    SIM_DT_FP4_E2M1_X4 ? u >> (4 * q) :
				    u >> (8 * q));
		}
}

int
sim_op06_mx_exec_matmul(struct sim_run *r, const struct sim_op *op)
{
	const struct sim_view	*st = &op->src[0].v, *mv = &op->src[1].v;
	const struct sim_view	*d = &op->dst;
	uint64_t		 K = st->shape[0], M = st->shape[1];
	uint64_t		 N = mv->shape[1], k, i, j;
	float			*a = r->scratch, *bm = a + K * M * 4;
	float			*raw = bm + K * N * 4, *out, acc;
	float			*ss, *ms;
	int			 q, rc;

	/* raw x4 data first (then unpacked below it), scales, dst */
	ss = raw + st->nelem + mv->nelem;
	ms = ss + op->src[2].v.nelem;
	out = ms + op->src[3].v.nelem;
	if ((rc = sim_exec_gather(r, op, &op->src[0], raw, NULL, 0.0f)) ||
	    (rc = sim_exec_gather(r, op, &op->src[1], raw + st->nelem, NULL,
	    0.0f)) ||
	    (rc = sim_exec_gather(r, op, &op->src[2], ss, NULL, 0.0f)) ||
	    (rc = sim_exec_gather(r, op, &op->src[3], ms, NULL, 0.0f)))
		return (rc);
	sim_mx_unpack(r->t[st->tensor].ti->dtype, raw, K, M,
	    r->t[op->src[2].v.tensor].ti->dtype, ss, a);
	sim_mx_unpack(r->t[mv->tensor].ti->dtype, raw + st->nelem, K, N,
	    r->t[op->src[3].v.tensor].ti->dtype, ms, bm);
	if (op->accumulate) {
		if ((rc = sim_mx_gather_dst(r, op, out)))
			return (rc);
	}
	for (i = 0; i < M; i++)
		for (j = 0; j < N; j++) {
			acc = op->accumulate ? out[i * N + j] : 0.0f;
			for (k = 0; k < K; k++)
				for (q = 0; q < 4; q++)
					acc += a[(k * M + i) * 4 + q] *
					    bm[(k * N + j) * 4 + q];
			out[i * N + j] = acc;
		}
	return (sim_exec_scatter(r, op, d, out));
}
