/* sim_dtype.c: dtype names and sizes, rounding to a dtype, and bulk conversion between a dtype's little-endian bytes and fp32. */
/* Floor 0: calls nothing else in sim/. */
#include <math.h>
#include <string.h>

#include "sim/sim_impl.h"

static const struct {
	const char	*name;
	size_t		 size;
} sim_dtype_table[] = {
	[SIM_DT_FLOAT32] = { "float32", 4 },
	[SIM_DT_FLOAT16] = { "float16", 2 },
	[SIM_DT_BFLOAT16] = { "bfloat16", 2 },
	[SIM_DT_INT8] = { "int8", 1 },
	[SIM_DT_INT16] = { "int16", 2 },
	[SIM_DT_INT32] = { "int32", 4 },
	[SIM_DT_UINT8] = { "uint8", 1 },
	[SIM_DT_UINT16] = { "uint16", 2 },
	[SIM_DT_UINT32] = { "uint32", 4 },
	[SIM_DT_FP8_E4M3] = { "float8_e4m3fn", 1 },
	[SIM_DT_FP8_E5M2] = { "float8_e5m2", 1 },
	[SIM_DT_TFLOAT32] = { "tfloat32", 4 },
	[SIM_DT_BOOL] = { "bool", 1 },
	[SIM_DT_FP8_E8M0] = { "float8_e8m0fnu", 1 },
	[SIM_DT_FP8_E5M2_X4] = { "float8_e5m2_x4", 4 },
	[SIM_DT_FP8_E4M3_X4] = { "float8_e4m3fn_x4", 4 },
	[SIM_DT_FP4_E2M1_X4] = { "float4_e2m1fn_x4", 2 },
};

/* A small IEEE-like float: e exponent bits, m mantissa bits. */
struct sim_mini {
	int	e;
	int	m;
	int	bias;
	bool	ieee;	/* all-ones exponent is inf/NaN (else: e4m3fn) */
	double	max;
};

static const struct sim_mini sim_dtype_f16 = { 5, 10, 15, true, 65504.0 };
static const struct sim_mini sim_dtype_e5m2 = { 5, 2, 15, true, 57344.0 };
static const struct sim_mini sim_dtype_e4m3 = { 4, 3, 7, false, 448.0 };

const char *
sim_dtype_name(int dt)
{
	if (dt <= 0 || dt > SIM_DT_MAX)
		return (NULL);
	return (sim_dtype_table[dt].name);
}

int
sim_dtype_from_name(const char *name)
{
	int	dt;

	if (name == NULL)
		return (SIM_DT_INVALID);
	for (dt = 1; dt <= SIM_DT_MAX; dt++)
		if (strcmp(name, sim_dtype_table[dt].name) == 0)
			return (dt);
	if (strcmp(name, "float8_e4m3") == 0)
		return (SIM_DT_FP8_E4M3);
	return (SIM_DT_INVALID);
}

size_t
sim_dtype_size(int dt)
{
	if (dt <= 0 || dt > SIM_DT_MAX)
		return (0);
	return (sim_dtype_table[dt].size);
}

bool
sim_dtype_is_int(int dt)
{
	return ((dt >= SIM_DT_INT8 && dt <= SIM_DT_UINT32) ||
	    dt == SIM_DT_BOOL);
}

bool
sim_dtype_is_lowp(int dt)
{
	return (dt == SIM_DT_BFLOAT16 || dt == SIM_DT_FLOAT16 ||
	    dt == SIM_DT_FP8_E4M3 || dt == SIM_DT_FP8_E5M2 ||
	    dt == SIM_DT_TFLOAT32);
}

bool
sim_dtype_is_packed(int dt)
{
	return (dt >= SIM_DT_FP8_E5M2_X4 && dt <= SIM_DT_FP4_E2M1_X4);
}

static uint32_t
sim_dtype_bits(float x)
{
	uint32_t	u;

	memcpy(&u, &x, 4);
	return (u);
}

static float
sim_dtype_from_bits(uint32_t u)
{
	float	x;

	memcpy(&x, &u, 4);
	return (x);
}

static uint16_t
sim_dtype_bf16_encode(float x)
{
	uint32_t	u = sim_dtype_bits(x);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return ((uint16_t)((u >> 16) | 0x40));	/* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1);
	return ((uint16_t)(u >> 16));
}

static float
sim_dtype_tf32_round(float x)
{
	uint32_t	u = sim_dtype_bits(x);

	if ((u & 0x7f800000u) == 0x7f800000u)
		return (x);
	u += 0xfffu + ((u >> 13) & 1);
	return (sim_dtype_from_bits(u & ~0x1fffu));
}

static uint32_t
sim_dtype_mini_encode(const struct sim_mini *f, float x)
{
	uint32_t	sign = signbit(x) ? 1u << (f->e + f->m) : 0;
	uint32_t	emax = (1u << f->e) - 1;
	uint32_t	nan = f->ieee ? (emax << f->m) | (1u << (f->m - 1)) :
	    (emax << f->m) | ((1u << f->m) - 1);
	double		a, q, r;
	int		e, ue;

	if (isnan(x))
		return (sign | nan);
	a = fabs((double)x);
	if (a == 0.0)
		return (sign);
	if (isinf(a))
		return (sign | (f->ieee ? emax << f->m : nan));
	frexp(a, &e);
	ue = e - 1;
	if (ue < 1 - f->bias)
		ue = 1 - f->bias;
	q = ldexp(1.0, ue - f->m);
	r = nearbyint(a / q) * q;
	if (r > f->max)
		return (sign | (f->ieee ? emax << f->m : nan));
	if (r == 0.0)
		return (sign);
	frexp(r, &e);
	ue = e - 1;
	if (ue < 1 - f->bias)
		return (sign | (uint32_t)(r / ldexp(1.0, 1 - f->bias - f->m)));
	return (sign | ((uint32_t)(ue + f->bias) << f->m) |
	    ((uint32_t)((r / ldexp(1.0, ue) - 1.0) * (double)(1u << f->m))));
}

static float
sim_dtype_mini_decode(const struct sim_mini *f, uint32_t b)
{
	uint32_t	emax = (1u << f->e) - 1;
	uint32_t	ex = (b >> f->m) & emax, m = b & ((1u << f->m) - 1);
	bool		neg = (b >> (f->e + f->m)) & 1;
	double		v;

	if (f->ieee && ex == emax)
		v = m ? NAN : INFINITY;
	else if (!f->ieee && ex == emax && m == (1u << f->m) - 1)
		v = NAN;
	else if (ex == 0)
		v = ldexp((double)m, 1 - f->bias - f->m);
	else
		v = ldexp(1.0 + (double)m / (double)(1u << f->m),
		    (int)ex - f->bias);
	return ((float)(neg ? -v : v));
}

/* float8_e8m0fnu as ml_dtypes converts: the nearest power of two (1.5
 * times one rounds up), below 2^-127 to 2^-127; zero, negatives, Inf,
 * NaN and 2^128 up to 0xff (NaN). */
uint8_t
sim_dtype_e8m0_encode(float x)
{
	int	e, ue;
	double	f;

	if (!(x > 0.0f) || isinf(x))
		return (0xff);
	f = frexp((double)x, &e) * 2.0;
	ue = e - 1 + (f >= 1.5);
	if (ue < -127)
		return (0);
	if (ue > 127)
		return (0xff);
	return ((uint8_t)(ue + 127));
}

float
sim_dtype_e8m0_decode(uint8_t b)
{
	return (b == 0xff ? NAN : ldexpf(1.0f, (int)b - 127));
}

float
sim_dtype_mx_decode(int dt, uint32_t b)
{
	static const float	fp4[8] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6 };

	switch (dt) {
	case SIM_DT_FP8_E5M2_X4:
		return (sim_dtype_mini_decode(&sim_dtype_e5m2, b & 0xff));
	case SIM_DT_FP8_E4M3_X4:
		return (sim_dtype_mini_decode(&sim_dtype_e4m3, b & 0xff));
	default:
		return ((b & 8) ? -fp4[b & 7] : fp4[b & 7]);
	}
}

uint8_t
sim_dtype_mx_encode(int dt, float x)
{
	if (dt == SIM_DT_FP8_E5M2_X4)
		return ((uint8_t)sim_dtype_mini_encode(&sim_dtype_e5m2, x));
	return ((uint8_t)sim_dtype_mini_encode(&sim_dtype_e4m3, x));
}

static float
sim_dtype_half_decode(uint16_t h)
{
	uint32_t	s = (uint32_t)(h & 0x8000u) << 16;
	uint32_t	e = (h >> 10) & 0x1f, m = h & 0x3ffu;
	float		v;

	if (e == 0) {
		v = (float)m * 0x1p-24f;
		return (s ? -v : v);
	}
	if (e == 31)
		return (sim_dtype_from_bits(s | 0x7f800000u | (m << 13)));
	return (sim_dtype_from_bits(s | ((e + 112) << 23) | (m << 13)));
}

static double
sim_dtype_int_clamp(int dt, float x)
{
	double	v, lo, hi;

	if (isnan(x))
		return (0.0);
	v = trunc((double)x);
	switch (dt) {
	case SIM_DT_INT8:
		lo = -128;
		hi = 127;
		break;
	case SIM_DT_INT16:
		lo = -32768;
		hi = 32767;
		break;
	case SIM_DT_INT32:
		lo = -2147483648.0;
		hi = 2147483647.0;
		break;
	case SIM_DT_UINT8:
		lo = 0;
		hi = 255;
		break;
	case SIM_DT_UINT16:
		lo = 0;
		hi = 65535;
		break;
	default:
		lo = 0;
		hi = 4294967295.0;
		break;
	}
	return (v < lo ? lo : v > hi ? hi : v);
}

uint16_t
sim_dtype_fp4x4_bits(float x)
{
	if (!(x > -65536.0f && x < 65536.0f))
		return (0);
	return ((uint16_t)((uint32_t)(int32_t)x & 0xffffu));
}

float
sim_dtype_round(int dt, float x)
{
	switch (dt) {
	case SIM_DT_FLOAT32:
		return (x);
	case SIM_DT_BFLOAT16:
		return (sim_dtype_from_bits(
		    (uint32_t)sim_dtype_bf16_encode(x) << 16));
	case SIM_DT_FLOAT16:
		return (sim_dtype_half_decode(
		    (uint16_t)sim_dtype_mini_encode(&sim_dtype_f16, x)));
	case SIM_DT_FP8_E4M3:
		return (sim_dtype_mini_decode(&sim_dtype_e4m3,
		    sim_dtype_mini_encode(&sim_dtype_e4m3, x)));
	case SIM_DT_FP8_E5M2:
		return (sim_dtype_mini_decode(&sim_dtype_e5m2,
		    sim_dtype_mini_encode(&sim_dtype_e5m2, x)));
	case SIM_DT_TFLOAT32:
		return (sim_dtype_tf32_round(x));
	case SIM_DT_BOOL:
		return (x != 0.0f ? 1.0f : 0.0f);
	case SIM_DT_FP8_E8M0:
		return (sim_dtype_e8m0_decode(sim_dtype_e8m0_encode(x)));
	case SIM_DT_FP8_E5M2_X4:
	case SIM_DT_FP8_E4M3_X4:
		return (x);		/* its bits */
	case SIM_DT_FP4_E2M1_X4:
		return ((float)sim_dtype_fp4x4_bits(x));
	default:
		return ((float)sim_dtype_int_clamp(dt, x));
	}
}

float
sim_dtype_uninit(int dt)
{
	switch (dt) {
	case SIM_DT_INT8:
		return (-128.0f);
	case SIM_DT_INT16:
		return (-32768.0f);
	case SIM_DT_INT32:
		return (-2147483648.0f);
	case SIM_DT_UINT8:
	case SIM_DT_UINT16:
	case SIM_DT_UINT32:
	case SIM_DT_BOOL:
	case SIM_DT_FP4_E2M1_X4:
		return (0.0f);
	default:
		return (NAN);
	}
}

void
sim_dtype_decode(int dt, const void *src, int64_t stride, size_t n,
    float *dst)
{
	const uint8_t	*b = src;
	size_t		 i;

/* dst[i] = EXPR of v, the i-th element of type T at src. */
#define SIM_DEC(T, EXPR) do {						\
	const T	*p = (const T *)src;					\
	T	 v;							\
									\
	if (stride == 1) {						\
		for (i = 0; i < n; i++) {				\
			v = p[i];					\
			dst[i] = (EXPR);				\
		}							\
	} else {							\
		for (i = 0; i < n; i++) {				\
			v = p[(int64_t)i * stride];			\
			dst[i] = (EXPR);				\
		}							\
	}								\
} while (0)
	switch (dt) {
	case SIM_DT_FLOAT32:
	case SIM_DT_TFLOAT32:
		SIM_DEC(float, v);
		break;
	case SIM_DT_BFLOAT16:
		SIM_DEC(uint16_t, sim_dtype_from_bits((uint32_t)v << 16));
		break;
	case SIM_DT_FLOAT16:
		SIM_DEC(uint16_t, sim_dtype_half_decode(v));
		break;
	case SIM_DT_INT8:
		SIM_DEC(int8_t, (float)v);
		break;
	case SIM_DT_INT16:
		SIM_DEC(int16_t, (float)v);
		break;
	case SIM_DT_INT32:
		SIM_DEC(int32_t, (float)v);
		break;
	case SIM_DT_UINT8:
		SIM_DEC(uint8_t, (float)v);
		break;
	case SIM_DT_UINT16:
		SIM_DEC(uint16_t, (float)v);
		break;
	case SIM_DT_UINT32:
		SIM_DEC(uint32_t, (float)v);
		break;
	case SIM_DT_BOOL:
		SIM_DEC(uint8_t, v ? 1.0f : 0.0f);
		break;
	case SIM_DT_FP8_E4M3:
		for (i = 0; i < n; i++)
			dst[i] = sim_dtype_mini_decode(&sim_dtype_e4m3,
			    b[(int64_t)i * stride]);
		break;
	case SIM_DT_FP8_E5M2:
		for (i = 0; i < n; i++)
			dst[i] = sim_dtype_mini_decode(&sim_dtype_e5m2,
			    b[(int64_t)i * stride]);
		break;
	case SIM_DT_FP8_E8M0:
		SIM_DEC(uint8_t, sim_dtype_e8m0_decode(v));
		break;
	case SIM_DT_FP8_E5M2_X4:
	case SIM_DT_FP8_E4M3_X4:
		SIM_DEC(uint32_t, sim_dtype_from_bits(v));
		break;
	case SIM_DT_FP4_E2M1_X4:
		SIM_DEC(uint16_t, (float)v);
		break;
	default:
		break;
	}
#undef SIM_DEC
}

void
sim_dtype_encode(int dt, void *dst, int64_t stride, size_t n,
    const float *src, int64_t sstride)
{
	size_t	i;

/* The i-th element of type T at dst = EXPR of x, the i-th value at src. */
#define SIM_ENC(T, EXPR) do {						\
	T	*p = (T *)dst;						\
	float	 x;							\
									\
	if (stride == 1 && sstride == 1) {				\
		for (i = 0; i < n; i++) {				\
			x = src[i];					\
			p[i] = (EXPR);					\
		}							\
	} else {							\
		for (i = 0; i < n; i++) {				\
			x = src[(int64_t)i * sstride];			\
			p[(int64_t)i * stride] = (EXPR);		\
		}							\
	}								\
} while (0)
	switch (dt) {
	case SIM_DT_FLOAT32:
		SIM_ENC(float, x);
		break;
	case SIM_DT_TFLOAT32:
		SIM_ENC(float, sim_dtype_tf32_round(x));
		break;
	case SIM_DT_BFLOAT16:
		SIM_ENC(uint16_t, sim_dtype_bf16_encode(x));
		break;
	case SIM_DT_FLOAT16:
		SIM_ENC(uint16_t,
		    (uint16_t)sim_dtype_mini_encode(&sim_dtype_f16, x));
		break;
	case SIM_DT_FP8_E4M3:
		SIM_ENC(uint8_t,
		    (uint8_t)sim_dtype_mini_encode(&sim_dtype_e4m3, x));
		break;
	case SIM_DT_FP8_E5M2:
		SIM_ENC(uint8_t,
		    (uint8_t)sim_dtype_mini_encode(&sim_dtype_e5m2, x));
		break;
	case SIM_DT_INT8:
		SIM_ENC(int8_t, (int8_t)sim_dtype_int_clamp(dt, x));
		break;
	case SIM_DT_INT16:
		SIM_ENC(int16_t, (int16_t)sim_dtype_int_clamp(dt, x));
		break;
	case SIM_DT_INT32:
		SIM_ENC(int32_t, (int32_t)sim_dtype_int_clamp(dt, x));
		break;
	case SIM_DT_UINT8:
		SIM_ENC(uint8_t, (uint8_t)sim_dtype_int_clamp(dt, x));
		break;
	case SIM_DT_UINT16:
		SIM_ENC(uint16_t, (uint16_t)sim_dtype_int_clamp(dt, x));
		break;
	case SIM_DT_UINT32:
		SIM_ENC(uint32_t, (uint32_t)sim_dtype_int_clamp(dt, x));
		break;
	case SIM_DT_BOOL:
		SIM_ENC(uint8_t, x != 0.0f);
		break;
	case SIM_DT_FP8_E8M0:
		SIM_ENC(uint8_t, sim_dtype_e8m0_encode(x));
		break;
	case SIM_DT_FP8_E5M2_X4:
	case SIM_DT_FP8_E4M3_X4:
		SIM_ENC(uint32_t, sim_dtype_bits(x));
		break;
	case SIM_DT_FP4_E2M1_X4:
		SIM_ENC(uint16_t, sim_dtype_fp4x4_bits(x));
		break;
	default:
		break;
	}
#undef SIM_ENC
}

void
sim_dtype_fill(int dt, void *dst, size_t n, float v)
{
	size_t	sz = sim_dtype_size(dt), i;
	uint8_t	one[4];

	if (n == 0 || sz == 0)
		return;
	sim_dtype_encode(dt, one, 1, 1, &v, 1);
	if (sz == 1) {
		memset(dst, one[0], n);
	} else if (sz == 2) {
		uint16_t	v16, *d = dst;

		memcpy(&v16, one, 2);
		for (i = 0; i < n; i++)
			d[i] = v16;
	} else {
		uint32_t	v32, *d = dst;

		memcpy(&v32, one, 4);
		for (i = 0; i < n; i++)
			d[i] = v32;
	}
}

void
sim_dtype_round_row(int dt, float *dst, int64_t dstride, const float *src,
    int64_t sstride, size_t n)
{
	size_t	i;

	switch (dt) {
	case SIM_DT_FLOAT32:
		for (i = 0; i < n; i++)
			dst[(int64_t)i * dstride] = src[(int64_t)i * sstride];
		break;
	case SIM_DT_BFLOAT16:
		for (i = 0; i < n; i++) {
			float	x = src[(int64_t)i * sstride];

			dst[(int64_t)i * dstride] = sim_dtype_from_bits(
			    (uint32_t)sim_dtype_bf16_encode(x) << 16);
		}
		break;
	default:
		for (i = 0; i < n; i++)
			dst[(int64_t)i * dstride] =
			    sim_dtype_round(dt, src[(int64_t)i * sstride]);
		break;
	}
}

void
sim_dtype_from_float(int dt, void *dst, const float *src, size_t n)
{
	sim_dtype_encode(dt, dst, 1, n, src, 1);
}
