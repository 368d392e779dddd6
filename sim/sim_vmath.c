/* sim_vmath.c: the activation functions of a row, vectorized with SLEEF's deterministic (cinz) functions: the same bits on SSE4, AVX and AVX-512. */
/* Floor 0: calls nothing else in sim/. */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* sleef.h declares the AVX and AVX-512 variants only where the compiler
 * targets them; sim/ is built for x86-64-v2 and picks one at run time. */
#pragma GCC push_options
#pragma GCC target("avx512f")
#include <sleef.h>
#pragma GCC pop_options

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/*
 * One vector of each width, the same operations in the same order for
 * every lane: SLEEF's cinz functions (1.0 ULP, no FMA) give the same bits
 * on every ISA, and the arithmetic around them is IEEE add, multiply,
 * divide and compare, which every width rounds alike (sim/ is compiled
 * with -ffp-contract=off). The formulas are sim_exec.c's scalar ones.
 */
#define SIM_VMATH_BODY(V, SET1, ADD, MUL, DIV, NEG, GT20, EXP, LOG, TANH,	\
    ERF, SIN, COS, LOG1P)						\
	switch (act) {							\
	case NKIR__V1__ACT_FUNC__ACT_EXP:				\
		return (EXP(x));					\
	case NKIR__V1__ACT_FUNC__ACT_LOG:				\
		return (LOG(x));					\
	case NKIR__V1__ACT_FUNC__ACT_TANH:				\
		return (TANH(x));					\
	case NKIR__V1__ACT_FUNC__ACT_SIGMOID:				\
		return (DIV(SET1(1.0f), ADD(SET1(1.0f), EXP(NEG(x)))));	\
	case NKIR__V1__ACT_FUNC__ACT_SILU:				\
		return (DIV(x, ADD(SET1(1.0f), EXP(NEG(x)))));		\
	case NKIR__V1__ACT_FUNC__ACT_GELU:				\
		return (MUL(MUL(SET1(0.5f), x), ADD(SET1(1.0f),		\
		    ERF(MUL(x, SET1(0.70710678118654752f))))));		\
	case NKIR__V1__ACT_FUNC__ACT_GELU_TANH: {			\
		V	c = MUL(MUL(MUL(SET1(0.044715f), x), x), x);	\
									\
		return (MUL(MUL(SET1(0.5f), x), ADD(SET1(1.0f),		\
		    TANH(MUL(SET1(0.79788456080286536f), ADD(x, c))))));\
	}								\
	case NKIR__V1__ACT_FUNC__ACT_SIN:				\
		return (SIN(x));					\
	case NKIR__V1__ACT_FUNC__ACT_COS:				\
		return (COS(x));					\
	case NKIR__V1__ACT_FUNC__ACT_ERF:				\
		return (ERF(x));					\
	case NKIR__V1__ACT_FUNC__ACT_SOFTPLUS:				\
		return (GT20(x, LOG1P(EXP(x))));			\
	default:							\
		return (x);						\
	}

/* o[0 .. n-1] = act(o[...]) in vectors of W; the tail goes through a
 * zero-padded vector, so every element takes the same path. A NaN comes
 * out as the quiet NaN 0x7fc00000: the widths' NaNs differ in sign. */
#define SIM_VMATH_ROW(NAME, ATTR, W, V, LOAD, STORE, VFN, QNAN)	\
static ATTR void							\
NAME(int act, float *o, size_t n)					\
{									\
	float	buf[W];							\
	size_t	i;							\
									\
	for (i = 0; i + W <= n; i += W)					\
		STORE(o + i, QNAN(VFN(act, LOAD(o + i))));		\
	if (i < n) {							\
		memset(buf, 0, sizeof(buf));				\
		memcpy(buf, o + i, (n - i) * sizeof(float));		\
		STORE(buf, QNAN(VFN(act, LOAD(buf))));			\
		memcpy(o + i, buf, (n - i) * sizeof(float));		\
	}								\
}

/* ------------------------------------------------------------ sse4 */

#define SIM_NEG4(x)	_mm_xor_ps((x), _mm_set1_ps(-0.0f))
#define SIM_GT20_4(x, y) \
	_mm_blendv_ps((y), (x), _mm_cmpgt_ps((x), _mm_set1_ps(20.0f)))
#define SIM_QNAN4(x)	_mm_blendv_ps((x),				\
	_mm_castsi128_ps(_mm_set1_epi32(0x7fc00000)), _mm_cmpunord_ps((x), (x)))

static inline __attribute__((target("sse4.1"))) __m128
sim_vmath_v4(int act, __m128 x)
{
	SIM_VMATH_BODY(__m128, _mm_set1_ps, _mm_add_ps, _mm_mul_ps,
	    _mm_div_ps, SIM_NEG4, SIM_GT20_4, Sleef_cinz_expf4_u10sse4,
	    Sleef_cinz_logf4_u10sse4, Sleef_cinz_tanhf4_u10sse4,
	    Sleef_cinz_erff4_u10sse4, Sleef_cinz_sinf4_u10sse4,
	    Sleef_cinz_cosf4_u10sse4, Sleef_cinz_log1pf4_u10sse4)
}

SIM_VMATH_ROW(sim_vmath_row4, __attribute__((target("sse4.1"))), 4, __m128,
    _mm_loadu_ps, _mm_storeu_ps,
    sim_vmath_v4, SIM_QNAN4)

/*
 * clang honours neither "#pragma GCC target" around sleef.h nor declares
 * its AVX variants without -mavx: a clang build (the fuzz targets) runs
 * the SSE4.1 rows, which give the same bits.
 */
#ifndef __clang__
/* ------------------------------------------------------------ avx */

#define SIM_NEG8(x)	_mm256_xor_ps((x), _mm256_set1_ps(-0.0f))
#define SIM_GT20_8(x, y) _mm256_blendv_ps((y), (x),			\
	_mm256_cmp_ps((x), _mm256_set1_ps(20.0f), _CMP_GT_OQ))
#define SIM_QNAN8(x)	_mm256_blendv_ps((x),				\
	_mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)),		\
	_mm256_cmp_ps((x), (x), _CMP_UNORD_Q))

static inline __attribute__((target("avx"))) __m256
sim_vmath_v8(int act, __m256 x)
{
	SIM_VMATH_BODY(__m256, _mm256_set1_ps, _mm256_add_ps, _mm256_mul_ps,
	    _mm256_div_ps, SIM_NEG8, SIM_GT20_8, Sleef_cinz_expf8_u10avx,
	    Sleef_cinz_logf8_u10avx, Sleef_cinz_tanhf8_u10avx,
	    Sleef_cinz_erff8_u10avx, Sleef_cinz_sinf8_u10avx,
	    Sleef_cinz_cosf8_u10avx, Sleef_cinz_log1pf8_u10avx)
}

SIM_VMATH_ROW(sim_vmath_row8, __attribute__((target("avx"))), 8, __m256,
    _mm256_loadu_ps, _mm256_storeu_ps, sim_vmath_v8, SIM_QNAN8)

/* ------------------------------------------------------------ avx-512 */

#define SIM_NEG16(x)	_mm512_castsi512_ps(_mm512_xor_si512(		\
	_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u)))
#define SIM_GT20_16(x, y) _mm512_mask_blend_ps(				\
	_mm512_cmp_ps_mask((x), _mm512_set1_ps(20.0f), _CMP_GT_OQ), (y), (x))
#define SIM_QNAN16(x)	_mm512_mask_blend_ps(				\
	_mm512_cmp_ps_mask((x), (x), _CMP_UNORD_Q), (x),		\
	_mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000)))

static inline __attribute__((target("avx512f"))) __m512
sim_vmath_v16(int act, __m512 x)
{
	SIM_VMATH_BODY(__m512, _mm512_set1_ps, _mm512_add_ps, _mm512_mul_ps,
	    _mm512_div_ps, SIM_NEG16, SIM_GT20_16,
	    Sleef_cinz_expf16_u10avx512fnofma,
	    Sleef_cinz_logf16_u10avx512fnofma,
	    Sleef_cinz_tanhf16_u10avx512fnofma,
	    Sleef_cinz_erff16_u10avx512fnofma,
	    Sleef_cinz_sinf16_u10avx512fnofma,
	    Sleef_cinz_cosf16_u10avx512fnofma,
	    Sleef_cinz_log1pf16_u10avx512fnofma)
}

SIM_VMATH_ROW(sim_vmath_row16, __attribute__((target("avx512f"))), 16,
    __m512, _mm512_loadu_ps, _mm512_storeu_ps, sim_vmath_v16, SIM_QNAN16)

#endif /* !__clang__ */

/* ------------------------------------------------------------ entry */

static bool
sim_vmath_has(int act)
{
	switch (act) {
	case NKIR__V1__ACT_FUNC__ACT_EXP:
	case NKIR__V1__ACT_FUNC__ACT_LOG:
	case NKIR__V1__ACT_FUNC__ACT_TANH:
	case NKIR__V1__ACT_FUNC__ACT_SIGMOID:
	case NKIR__V1__ACT_FUNC__ACT_SILU:
	case NKIR__V1__ACT_FUNC__ACT_GELU:
	case NKIR__V1__ACT_FUNC__ACT_GELU_TANH:
	case NKIR__V1__ACT_FUNC__ACT_SIN:
	case NKIR__V1__ACT_FUNC__ACT_COS:
	case NKIR__V1__ACT_FUNC__ACT_ERF:
	case NKIR__V1__ACT_FUNC__ACT_SOFTPLUS:
		return (true);
	default:
		return (false);
	}
}

/* The widest vectors this CPU runs (SIM_VMATH_*), -1 for none (before
 * SSE4.1: the scalar functions then). */
static int
sim_vmath_best(void)
{
#ifndef __clang__
	if (__builtin_cpu_supports("avx512f"))
		return (SIM_VMATH_AVX512);
	if (__builtin_cpu_supports("avx"))
		return (SIM_VMATH_AVX);
#endif
	if (__builtin_cpu_supports("sse4.1"))
		return (SIM_VMATH_SSE4);
	return (-1);
}

bool
sim_vmath_act_isa(int act, float *o, size_t n, int isa)
{
	if (!sim_vmath_has(act) || isa < 0 || isa > sim_vmath_best())
		return (false);
	switch (isa) {
#ifndef __clang__
	case SIM_VMATH_AVX512:
		sim_vmath_row16(act, o, n);
		break;
	case SIM_VMATH_AVX:
		sim_vmath_row8(act, o, n);
		break;
#endif
	default:
		sim_vmath_row4(act, o, n);
		break;
	}
	return (true);
}

bool
sim_vmath_act(int act, float *o, size_t n)
{
	return (sim_vmath_act_isa(act, o, n, sim_vmath_best()));
}
