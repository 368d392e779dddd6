/* sim_exec_row.c: the row math of the interpreter: element-wise ALU operators and activation functions over one row, and a reduce operator folded along a row; no views, no run state. */
/* Floor 1: calls sim_vmath.c only. */
#ifdef __SSE__
#include <immintrin.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

static inline int64_t
sim_exec_f2i(float x)
{
	if (!(x == x))
		return (0);
	if (x >= 9.2e18f)
		return (INT64_MAX);
	if (x <= -9.2e18f)
		return (INT64_MIN);
	return ((int64_t)x);
}

static inline float
sim_exec_mod(float x, float y)
{
	float	m = fmodf(x, y);

	if (m != 0.0f && ((m < 0.0f) != (y < 0.0f)))
		m += y;
	return (m);
}

static inline float
sim_exec_shift(float x, float y, bool left)
{
	int32_t	a = (int32_t)(uint32_t)(sim_exec_f2i(x) & 0xffffffff);
	int	s = (int)(sim_exec_f2i(y) & 31);

	if (left)
		return ((float)(int32_t)((uint32_t)a << s));
	return ((float)(a >> s));
}

/* ~x for x an unsigned integer of the given width (1: bool, !x). */
static inline float
sim_exec_invert_u(float x, int bits)
{
	uint64_t	m = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;

	return ((float)(m - ((uint64_t)sim_exec_f2i(x) & m)));
}

/* The row loops of element-wise arithmetic, built for the widest vectors
 * the CPU runs: IEEE add, multiply, divide and compare round alike at
 * every width (sim/ is built with -ffp-contract=off), so the bits do not
 * depend on the clone. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SIM_EXEC_WIDE __attribute__((target_clones("avx512f", "avx2", \
	"default")))
#else
#define SIM_EXEC_WIDE
#endif

SIM_EXEC_WIDE void
sim_exec_alu_row(int alu, float *o, const float *a, int64_t sa,
    const float *b, int64_t sb, size_t n)
{
	float	x, y, z;
	size_t	i;

/* o[i] = EXPR of x = a[i * sa] and y = b[i * sb] (strides 0 or 1). */
#define SIM_ALU(EXPR) do {						\
	if (sa == 1 && sb == 1) {					\
		for (i = 0; i < n; i++) {				\
			x = a[i];					\
			y = b[i];					\
			o[i] = (EXPR);					\
		}							\
	} else if (sa == 1) {						\
		y = b[0];						\
		for (i = 0; i < n; i++) {				\
			x = a[i];					\
			o[i] = (EXPR);					\
		}							\
	} else if (sb == 1) {						\
		x = a[0];						\
		for (i = 0; i < n; i++) {				\
			y = b[i];					\
			o[i] = (EXPR);					\
		}							\
	} else {							\
		x = a[0];						\
		y = b[0];						\
		z = (EXPR);						\
		for (i = 0; i < n; i++)					\
			o[i] = z;					\
	}								\
} while (0)
	switch (alu) {
	case NKIR__V1__ALU_OP__ALU_ADD:
		SIM_ALU(x + y);
		break;
	case NKIR__V1__ALU_OP__ALU_SUBTRACT:
		SIM_ALU(x - y);
		break;
	case NKIR__V1__ALU_OP__ALU_MULTIPLY:
		SIM_ALU(x * y);
		break;
	case NKIR__V1__ALU_OP__ALU_DIVIDE:
		SIM_ALU(x / y);
		break;
	case NKIR__V1__ALU_OP__ALU_MAXIMUM:
		SIM_ALU((x != x || x > y) ? x : y);
		break;
	case NKIR__V1__ALU_OP__ALU_MINIMUM:
		SIM_ALU((x != x || x < y) ? x : y);
		break;
	case NKIR__V1__ALU_OP__ALU_POWER:
		SIM_ALU(powf(x, y));
		break;
	case NKIR__V1__ALU_OP__ALU_GREATER:
		SIM_ALU(x > y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_GREATER_EQUAL:
		SIM_ALU(x >= y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_LESS:
		SIM_ALU(x < y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_LESS_EQUAL:
		SIM_ALU(x <= y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_EQUAL:
		SIM_ALU(x == y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_NOT_EQUAL:
		SIM_ALU(x != y ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_LOGICAL_AND:
		SIM_ALU((x != 0.0f && y != 0.0f) ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_LOGICAL_OR:
		SIM_ALU((x != 0.0f || y != 0.0f) ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_LOGICAL_XOR:
		SIM_ALU(((x != 0.0f) != (y != 0.0f)) ? 1.0f : 0.0f);
		break;
	case NKIR__V1__ALU_OP__ALU_BITWISE_AND:
		SIM_ALU((float)(sim_exec_f2i(x) & sim_exec_f2i(y)));
		break;
	case NKIR__V1__ALU_OP__ALU_BITWISE_OR:
		SIM_ALU((float)(sim_exec_f2i(x) | sim_exec_f2i(y)));
		break;
	case NKIR__V1__ALU_OP__ALU_BITWISE_XOR:
		SIM_ALU((float)(sim_exec_f2i(x) ^ sim_exec_f2i(y)));
		break;
	case NKIR__V1__ALU_OP__ALU_MOD:
		SIM_ALU(sim_exec_mod(x, y));
		break;
	case NKIR__V1__ALU_OP__ALU_LEFT_SHIFT:
		SIM_ALU(sim_exec_shift(x, y, true));
		break;
	case NKIR__V1__ALU_OP__ALU_RIGHT_SHIFT:
		SIM_ALU(sim_exec_shift(x, y, false));
		break;
	case NKIR__V1__ALU_OP__ALU_INVERT:
		SIM_ALU(((void)y, (float)~sim_exec_f2i(x)));
		break;
	case SIM_ALU_INVERT_U(1):
	case SIM_ALU_INVERT_U(8):
	case SIM_ALU_INVERT_U(16):
	case SIM_ALU_INVERT_U(32):
		SIM_ALU(((void)y, sim_exec_invert_u(x,
		    alu - SIM_ALU_INVERT_U(0))));
		break;
	case NKIR__V1__ALU_OP__ALU_LOGICAL_NOT:
		SIM_ALU(((void)y, x == 0.0f ? 1.0f : 0.0f));
		break;
	case NKIR__V1__ALU_OP__ALU_RSQRT:
		SIM_ALU(((void)y, 1.0f / sqrtf(x)));
		break;
	case NKIR__V1__ALU_OP__ALU_RECIPROCAL:
		SIM_ALU(((void)y, 1.0f / x));
		break;
	case NKIR__V1__ALU_OP__ALU_ABS:
		SIM_ALU(((void)y, fabsf(x)));
		break;
	default: /* ALU_BYPASS */
		SIM_ALU(((void)y, x));
		break;
	}
#undef SIM_ALU
}

/* The activation functions of the nki.language kinds (80-119). */
static float
sim_exec_act_lang(int act, float t)
{
	float	s;

	switch (act) {
	case NKIR__V1__ACT_FUNC__ACT_TAN:
		return (tanf(t));
	case NKIR__V1__ACT_FUNC__ACT_ARCTAN:
		return (atanf(t));
	case NKIR__V1__ACT_FUNC__ACT_GELU_DX:
		/* d/dx x * Phi(x) = Phi(x) + x * phi(x) */
		return (0.5f * (1.0f + erff(t * 0.70710678118654752f)) +
		    t * 0.39894228040143268f * expf(-0.5f * t * t));
	case NKIR__V1__ACT_FUNC__ACT_GELU_SIGMOID:
		return (t / (1.0f + expf(-1.702f * t)));
	case NKIR__V1__ACT_FUNC__ACT_SILU_DX:
		s = 1.0f / (1.0f + expf(-t));
		return (s * (1.0f + t * (1.0f - s)));
	case NKIR__V1__ACT_FUNC__ACT_ERF_DX:
		return (1.12837916709551257f * expf(-t * t));
	case NKIR__V1__ACT_FUNC__ACT_MISH:
		return (t * tanhf(t > 20.0f ? t : log1pf(expf(t))));
	default:
		return (t);
	}
}

static float
sim_exec_act1(int act, float t)
{
	switch (act) {
	case NKIR__V1__ACT_FUNC__ACT_EXP:
		return (expf(t));
	case NKIR__V1__ACT_FUNC__ACT_LOG:
		return (logf(t));
	case NKIR__V1__ACT_FUNC__ACT_SQUARE:
		return (t * t);
	case NKIR__V1__ACT_FUNC__ACT_SQRT:
		return (sqrtf(t));
	case NKIR__V1__ACT_FUNC__ACT_RSQRT:
		return (1.0f / sqrtf(t));
	case NKIR__V1__ACT_FUNC__ACT_RECIPROCAL:
		return (1.0f / t);
	case NKIR__V1__ACT_FUNC__ACT_TANH:
		return (tanhf(t));
	case NKIR__V1__ACT_FUNC__ACT_SIGMOID:
		return (1.0f / (1.0f + expf(-t)));
	case NKIR__V1__ACT_FUNC__ACT_RELU:
		return (t > 0.0f || t != t ? t : 0.0f);
	case NKIR__V1__ACT_FUNC__ACT_GELU:
		return (0.5f * t * (1.0f + erff(t * 0.70710678118654752f)));
	case NKIR__V1__ACT_FUNC__ACT_GELU_TANH:
		return (0.5f * t * (1.0f + tanhf(0.79788456080286536f *
		    (t + 0.044715f * t * t * t))));
	case NKIR__V1__ACT_FUNC__ACT_SILU:
		return (t / (1.0f + expf(-t)));
	case NKIR__V1__ACT_FUNC__ACT_NEGATIVE:
		return (-t);
	case NKIR__V1__ACT_FUNC__ACT_ABS:
		return (fabsf(t));
	case NKIR__V1__ACT_FUNC__ACT_SIGN:
		return (t > 0.0f ? 1.0f : t < 0.0f ? -1.0f : t);
	case NKIR__V1__ACT_FUNC__ACT_SIN:
		return (sinf(t));
	case NKIR__V1__ACT_FUNC__ACT_COS:
		return (cosf(t));
	case NKIR__V1__ACT_FUNC__ACT_ERF:
		return (erff(t));
	case NKIR__V1__ACT_FUNC__ACT_SOFTPLUS:
		return (t > 20.0f ? t : log1pf(expf(t)));
	case NKIR__V1__ACT_FUNC__ACT_CEIL:
		return (ceilf(t));
	case NKIR__V1__ACT_FUNC__ACT_FLOOR:
		return (floorf(t));
	case NKIR__V1__ACT_FUNC__ACT_TRUNC:
		return (truncf(t));
	case NKIR__V1__ACT_FUNC__ACT_LOGICAL_NOT:
		return (t == 0.0f ? 1.0f : 0.0f);
	default:
		return (act >= 80 ? sim_exec_act_lang(act, t) : t);
	}
}

SIM_EXEC_WIDE void
sim_exec_act_row(const struct sim_op *op, float *o, const float *a,
    int64_t sa, const float *b, int64_t sb, size_t n)
{
	float	s = op->scale;
	size_t	i;

	if (sa == 1 && sb == 0) {
		float	y = b[0];

		for (i = 0; i < n; i++)
			o[i] = a[i] * s + y;
	} else if (sa == 1 && sb == 1) {
		for (i = 0; i < n; i++)
			o[i] = a[i] * s + b[i];
	} else {
		for (i = 0; i < n; i++)
			o[i] = a[(int64_t)i * sa] * s + b[(int64_t)i * sb];
	}
	switch (op->act) {
	case NKIR__V1__ACT_FUNC__ACT_IDENTITY:
		break;
	case NKIR__V1__ACT_FUNC__ACT_SQUARE:
		for (i = 0; i < n; i++)
			o[i] = o[i] * o[i];
		break;
	case NKIR__V1__ACT_FUNC__ACT_NEGATIVE:
		for (i = 0; i < n; i++)
			o[i] = -o[i];
		break;
	default:
		if (sim_vmath_act(op->act, o, n))	/* exp, tanh, ... */
			break;
		for (i = 0; i < n; i++)
			o[i] = sim_exec_act1(op->act, o[i]);
		break;
	}
}


float
sim_exec_reduce_init(int alu)
{
	switch (alu) {
	case NKIR__V1__ALU_OP__ALU_MULTIPLY:
	case NKIR__V1__ALU_OP__ALU_LOGICAL_AND:
		return (1.0f);
	case NKIR__V1__ALU_OP__ALU_MAXIMUM:
		return (-INFINITY);
	case NKIR__V1__ALU_OP__ALU_MINIMUM:
		return (INFINITY);
	case NKIR__V1__ALU_OP__ALU_BITWISE_AND:
		return (-1.0f);
	default:
		return (0.0f);
	}
}

float
sim_exec_fold(int alu, float acc, const float *x, int64_t sx,
    const uint8_t *act, size_t n, const float *mean)
{
	float	p[8] = { 0 }, m, d, y;
	size_t	i = 0;
	int	j;

	if (alu == NKIR__V1__ALU_OP__ALU_VAR) {
		m = *mean;
		for (i = 0; i < n; i++)
			if (!act || act[i]) {
				d = x[(int64_t)i * sx] - m;
				acc += d * d;
			}
		return (acc);
	}
	if ((alu == NKIR__V1__ALU_OP__ALU_ADD ||
	    alu == NKIR__V1__ALU_OP__ALU_MEAN) && !act && sx == 1) {
		for (; i + 8 <= n; i += 8)
			for (j = 0; j < 8; j++)
				p[j] += x[i + j];
		for (; i < n; i++)
			acc += x[i];
		return (acc + (((p[0] + p[1]) + (p[2] + p[3])) +
		    ((p[4] + p[5]) + (p[6] + p[7]))));
	}
	if ((alu == NKIR__V1__ALU_OP__ALU_MAXIMUM ||
	    alu == NKIR__V1__ALU_OP__ALU_MINIMUM) && !act && sx == 1 &&
	    n >= 16 && acc == acc) {
		/* 8 lanes, exact: max and min of distinct values do not
		 * depend on the order; a NaN or a zero result (which of
		 * +0 and -0 comes first) takes the loop below */
		bool	mx = alu == NKIR__V1__ALU_OP__ALU_MAXIMUM;

		for (j = 0; j < 8; j++)
			p[j] = acc;
#ifdef __SSE4_1__
		{
			__m128	a0 = _mm_loadu_ps(p), a1 = a0, y0, y1;

			for (; i + 8 <= n; i += 8) {
				y0 = _mm_loadu_ps(x + i);
				y1 = _mm_loadu_ps(x + i + 4);
				a0 = _mm_blendv_ps(a0, y0, _mm_or_ps(mx ?
				    _mm_cmpgt_ps(y0, a0) : _mm_cmplt_ps(y0, a0),
				    _mm_cmpunord_ps(y0, y0)));
				a1 = _mm_blendv_ps(a1, y1, _mm_or_ps(mx ?
				    _mm_cmpgt_ps(y1, a1) : _mm_cmplt_ps(y1, a1),
				    _mm_cmpunord_ps(y1, y1)));
			}
			_mm_storeu_ps(p, a0);
			_mm_storeu_ps(p + 4, a1);
		}
#endif
		for (; i + 8 <= n; i += 8)
			for (j = 0; j < 8; j++)
				p[j] = (mx ? x[i + j] > p[j] :
				    x[i + j] < p[j]) || x[i + j] != x[i + j] ?
				    x[i + j] : p[j];
		m = p[0];
		for (j = 1; j < 8; j++)
			m = (mx ? p[j] > m : p[j] < m) || p[j] != p[j] ?
			    p[j] : m;
		for (; i < n; i++)
			m = (mx ? x[i] > m : x[i] < m) || x[i] != x[i] ?
			    x[i] : m;
		if (m == m && m != 0.0f)
			return (m);
		i = 0;
	}
	for (i = 0; i < n; i++) {
		if (act && !act[i])
			continue;
		y = x[(int64_t)i * sx];
		switch (alu) {
		case NKIR__V1__ALU_OP__ALU_MULTIPLY:
			acc *= y;
			break;
		case NKIR__V1__ALU_OP__ALU_MAXIMUM:
			acc = (y != y || y > acc) ? y : acc;
			break;
		case NKIR__V1__ALU_OP__ALU_MINIMUM:
			acc = (y != y || y < acc) ? y : acc;
			break;
		case NKIR__V1__ALU_OP__ALU_LOGICAL_AND:
			acc = (acc != 0.0f && y != 0.0f);
			break;
		case NKIR__V1__ALU_OP__ALU_LOGICAL_OR:
			acc = (acc != 0.0f || y != 0.0f);
			break;
		case NKIR__V1__ALU_OP__ALU_LOGICAL_XOR:
			acc = ((acc != 0.0f) != (y != 0.0f));
			break;
		case NKIR__V1__ALU_OP__ALU_BITWISE_AND:
			acc = (float)(sim_exec_f2i(acc) & sim_exec_f2i(y));
			break;
		case NKIR__V1__ALU_OP__ALU_BITWISE_OR:
			acc = (float)(sim_exec_f2i(acc) | sim_exec_f2i(y));
			break;
		case NKIR__V1__ALU_OP__ALU_BITWISE_XOR:
			acc = (float)(sim_exec_f2i(acc) ^ sim_exec_f2i(y));
			break;
		default:
			acc += y;
			break;
		}
	}
	return (acc);
}

/* c plus one for each of the n elements active in act (all if NULL),
 * added one by one in fp32: exact until 2^24, where it sticks. */
float
sim_exec_count(float c, const uint8_t *act, size_t n)
{
	size_t	k = n, i;

	if (act != NULL)
		for (i = 0, k = 0; i < n; i++)
			k += act[i] != 0;
	if (k <= (1u << 24) && c + (float)k <= 16777216.0f)
		return (c + (float)k);	/* every partial sum exact */
	for (i = 0; i < n; i++)
		c += !act || act[i];
	return (c);
}
