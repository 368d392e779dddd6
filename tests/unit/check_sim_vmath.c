/*
 * check_sim_vmath.c: the executor's vectorized activation functions
 * (sim/sim_vmath.c) against glibc over the whole float range, NaN, Inf and
 * denormals included: the largest error in ULPs (printed; a result below
 * FLT_MIN counts by its absolute error, at most FLT_MIN), special values
 * as glibc has them, and the same bits for every vector width and row
 * position. The sample is every 4099th bit pattern, or every
 * SIM_VMATH_STEP-th (16 bytes of memory per input).
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim.h"
#include "sim/sim_impl.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("sim_vmath", NULL, NULL, NULL);
CHECK_TCASE(core, 600);

#define ACT(x) NKIR__V1__ACT_FUNC__ACT_##x

/* One function: the exact value in double, glibc's float formula (what
 * the executor computed before it was vectorized), and the ULPs allowed
 * against the exact value where the float formula is well conditioned. */
struct vm_fn {
	const char	*name;
	int		 act;
	double		(*exact)(double);
	float		(*glibc)(float);
	double		 max_ulp;
};

static double vm_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double vm_silu(double x) { return x / (1.0 + exp(-x)); }
static double vm_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double vm_gelu_tanh(double x)
{
	return 0.5 * x * (1.0 + tanh(0.79788456080286536 *
	    (x + 0.044715 * x * x * x)));
}
static double vm_softplus(double x) { return x > 20.0 ? x : log1p(exp(x)); }

static float vm_fexp(float t) { return expf(t); }
static float vm_flog(float t) { return logf(t); }
static float vm_ftanh(float t) { return tanhf(t); }
static float vm_fsigmoid(float t) { return 1.0f / (1.0f + expf(-t)); }
static float vm_fsilu(float t) { return t / (1.0f + expf(-t)); }
static float vm_fgelu(float t)
{
	return 0.5f * t * (1.0f + erff(t * 0.70710678118654752f));
}
static float vm_fgelu_tanh(float t)
{
	return 0.5f * t * (1.0f + tanhf(0.79788456080286536f *
	    (t + 0.044715f * t * t * t)));
}
static float vm_fsin(float t) { return sinf(t); }
static float vm_fcos(float t) { return cosf(t); }
static float vm_ferf(float t) { return erff(t); }
static float vm_fsoftplus(float t)
{
	return t > 20.0f ? t : log1pf(expf(t));
}

/* max_ulp < 0: compound formulas that lose precision somewhere in float
 * (1 + erf(x) for x < -2, x / (1 + exp(-x)) once exp overflows, ...), as
 * glibc's float formula does: each result within -max_ulp ULPs of the
 * exact value or within 2^-22 * max(1, |x|) of it (the rounding error of
 * the sum 1 + f(x), scaled by x). */
static const struct vm_fn vm_fns[] = {
	{ "exp", ACT(EXP), exp, vm_fexp, 1.5 },
	{ "log", ACT(LOG), log, vm_flog, 1.5 },
	{ "tanh", ACT(TANH), tanh, vm_ftanh, 1.5 },
	{ "sigmoid", ACT(SIGMOID), vm_sigmoid, vm_fsigmoid, 3.0 },
	{ "silu", ACT(SILU), vm_silu, vm_fsilu, -4.0 },
	{ "gelu", ACT(GELU), vm_gelu, vm_fgelu, -4.0 },
	{ "gelu_tanh", ACT(GELU_TANH), vm_gelu_tanh, vm_fgelu_tanh, -4.0 },
	{ "sin", ACT(SIN), sin, vm_fsin, 1.5 },
	{ "cos", ACT(COS), cos, vm_fcos, 1.5 },
	{ "erf", ACT(ERF), erf, vm_ferf, 2.5 },
	{ "softplus", ACT(SOFTPLUS), vm_softplus, vm_fsoftplus, 2.0 },
};

static float
vm_bits(uint32_t u)
{
	float	f;

	memcpy(&f, &u, 4);
	return f;
}

static uint32_t
vm_u32(float f)
{
	uint32_t	u;

	memcpy(&u, &f, 4);
	return u;
}

/* |got - want| in ULPs of want rounded to float (denormal spacing at
 * least); 0 when both are the same infinity or NaN, HUGE_VAL when one is
 * NaN or infinite and the other not. */
static double
vm_ulps(float got, double want)
{
	float	w = (float)want;
	double	ulp;

	if (isnan(got) || isnan(want))
		return (isnan(got) && isnan(want) ? 0.0 : HUGE_VAL);
	if (isinf(got) || isinf(w))
		return (got == w ? 0.0 : HUGE_VAL);
	ulp = fabs(w) < FLT_MIN ? ldexp(1.0, -149) :
	    (double)nextafterf(fabsf(w), INFINITY) - fabsf(w);
	if (isinf(ulp))
		ulp = ldexp(1.0, 104);
	return (fabs((double)got - want) / ulp);
}

/* The float inputs of a sweep: every step-th bit pattern, and the special
 * values: zeros, the smallest and largest denormals and normals, Inf,
 * NaNs, and the overflow and underflow edges of exp. */
static float *
vm_inputs(size_t *n)
{
	static const uint32_t special[] = {
		0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff,
		0x807fffff, 0x00800000, 0x80800000, 0x7f7fffff, 0xff7fffff,
		0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001,
		0x42b17218, 0x42b17217, 0xc2ce8ed0, 0xc2aeac50, 0x41a00000,
		0x41a00001, 0x3f800000, 0xbf800000,
	};
	const char	*env = getenv("SIM_VMATH_STEP");
	uint64_t	 step = env != NULL && atoi(env) > 0 ? atoi(env) : 4099;
	uint64_t	 u;
	float		*x;
	size_t		 k = 0, ns = sizeof(special) / sizeof(special[0]);

	x = malloc(((1ull << 32) / step + ns + 1) * sizeof(float));
	ck_assert_ptr_nonnull(x);
	for (u = 0; u < (1ull << 32); u += step)
		x[k++] = vm_bits((uint32_t)u);
	for (size_t i = 0; i < ns; i++)
		x[k++] = vm_bits(special[i]);
	*n = k;
	return x;
}

CHECK_TEST(core, test_sim_vmath_accuracy)
{
	size_t	 n, i;
	float	*x = vm_inputs(&n), *y = malloc(n * sizeof(float));

	ck_assert_ptr_nonnull(y);
	for (size_t f = 0; f < sizeof(vm_fns) / sizeof(vm_fns[0]); f++) {
		const struct vm_fn	*fn = &vm_fns[f];
		double			 worst = 0, worst_old = 0, e;
		float			 at = 0, at_old = 0;
		size_t			 special_bad = 0, worse = 0;

		memcpy(y, x, n * sizeof(float));
		ck_assert(sim_vmath_act(fn->act, y, n));
		for (i = 0; i < n; i++) {
			double	want = fn->exact(x[i]);
			float	old = fn->glibc(x[i]);

			/* NaN and Inf results as glibc has them, and zeros
			 * for the well-conditioned ones (but for results
			 * below FLT_MIN, flushed or not) */
			if (isnan(old) != isnan(y[i]) ||
			    (isinf(old) && old != y[i]) || (fn->max_ulp > 0 &&
			    (old == 0.0f) != (y[i] == 0.0f) &&
			    fabsf(old) + fabsf(y[i]) >= FLT_MIN))
				special_bad++;
			if ((e = vm_ulps(y[i], old)) > worst_old) {
				worst_old = e;
				at_old = x[i];
			}
			if (fn->max_ulp < 0 && !isnan(want) && !isinf(want) &&
			    vm_ulps(y[i], want) > -fn->max_ulp &&
			    fabs(y[i] - want) > ldexp(1.0, -22) *
			    fmax(1.0, fabs(x[i])))
				worse++;
			/* results below the normal range: absolute error */
			if (fabs(want) < FLT_MIN && want != 0.0 &&
			    fabs((double)y[i] - want) <= FLT_MIN)
				continue;
			if ((e = vm_ulps(y[i], want)) > worst) {
				worst = e;
				at = x[i];
			}
		}
		printf("vmath %-9s %zu inputs: max %.2f ulp vs exact (x = %a), "
		    "%.2f ulp vs glibc's float formula (x = %a)\n", fn->name,
		    n, worst, (double)at, worst_old, (double)at_old);
		fflush(stdout);
		ck_assert_msg(special_bad == 0, "%s: %zu NaN/Inf/zero results "
		    "differ from glibc's", fn->name, special_bad);
		if (fn->max_ulp > 0)
			ck_assert_msg(worst <= fn->max_ulp, "%s: %.3f ulp at %a",
			    fn->name, worst, (double)at);
		else
			ck_assert_msg(worse == 0, "%s: %zu results out of "
			    "tolerance", fn->name, worse);
	}
	free(x);
	free(y);
}
END_TEST

/* The same bits for every vector width the CPU has, for every row
 * length (tails) and position, and from run to run. */
CHECK_TEST(core, test_sim_vmath_same_bits)
{
	enum { N = 4099 };
	float	*x = malloc(N * sizeof(float)), *ref = malloc(N * sizeof(float));
	float	*y = malloc(N * sizeof(float));
	int	 isas = 0;

	ck_assert(x && ref && y);
	srand(3);
	for (size_t i = 0; i < N; i++)
		x[i] = vm_bits((uint32_t)rand() * 2654435761u ^ (uint32_t)i);
	for (size_t f = 0; f < sizeof(vm_fns) / sizeof(vm_fns[0]); f++) {
		int	act = vm_fns[f].act;

		memcpy(ref, x, N * sizeof(float));
		ck_assert(sim_vmath_act_isa(act, ref, N, SIM_VMATH_SSE4));
		for (int isa = SIM_VMATH_SSE4; isa <= SIM_VMATH_AVX512; isa++) {
			for (size_t len = 1; len <= 33; len += 4) {
				memcpy(y, x + 7, len * sizeof(float));
				if (!sim_vmath_act_isa(act, y, len, isa))
					break;
				ck_assert_msg(memcmp(y, ref + 7, len *
				    sizeof(float)) == 0, "%s isa %d len %zu",
				    vm_fns[f].name, isa, len);
			}
			memcpy(y, x, N * sizeof(float));
			if (!sim_vmath_act_isa(act, y, N, isa))
				continue;
			isas |= 1 << isa;
			for (size_t i = 0; i < N; i++)
				ck_assert_msg(vm_u32(y[i]) == vm_u32(ref[i]),
				    "%s isa %d x %a: %a vs %a", vm_fns[f].name,
				    isa, (double)x[i], (double)y[i],
				    (double)ref[i]);
		}
	}
	printf("vmath: widths compared: %s%s%s\n", isas & 1 ? "sse4 " : "",
	    isas & 2 ? "avx " : "", isas & 4 ? "avx512" : "");
	fflush(stdout);
	ck_assert(isas & 1);
	/* what it does not vectorize is left alone */
	memcpy(y, x, N * sizeof(float));
	ck_assert(!sim_vmath_act(ACT(RELU), y, N));
	ck_assert(memcmp(x, y, N * sizeof(float)) == 0);
	free(x);
	free(ref);
	free(y);
}
END_TEST
