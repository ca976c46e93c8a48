/* compiler/tensor.c: dense host tensors and the exact 16-bit format conversions.
 *
 * f16 and bf16 travel as raw 16-bit patterns. Widening to double is exact; narrowing from
 * double rounds to nearest even with subnormals, overflows to infinity and keeps NaN a
 * (quiet) NaN with its sign. These conversions are done on integer bit patterns, so they do
 * not depend on the C compiler's _Float16 support or on the FPU's rounding mode.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "compiler.h"

double fmt_f16_to_double(uint16_t h)
{
	int sign = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v;
	if (e == 0)
		v = ldexp((double)m, -24);
	else if (e == 31)
		v = m ? NAN : INFINITY;
	else
		v = ldexp((double)(m | 0x400), e - 25);
	return sign ? -v : v;
}

double fmt_bf16_to_double(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, sizeof f);
	return (double)f;
}

/* Rounds a double to a binary format with p significand bits (hidden bit included), minimum
 * normal exponent emin_n (value 2^emin_n) and bias-encoded exponent field of ebits bits.
 * Returns the bit pattern of a 1 + ebits + (p - 1) bit format. */
static uint32_t round_bits(double x, int p, int ebits)
{
	uint32_t sign = signbit(x) ? 1u : 0u;
	int mbits = p - 1;
	int bias = (1 << (ebits - 1)) - 1;
	uint32_t expmax = (1u << ebits) - 1;
	uint32_t out_sign = sign << (ebits + mbits);
	if (isnan(x))
		return out_sign | (expmax << mbits) | (1u << (mbits - 1));
	double a = fabs(x);
	if (isinf(a))
		return out_sign | (expmax << mbits);
	if (a == 0)
		return out_sign;
	int e;
	frexp(a, &e);               /* a = f * 2^e, f in [0.5, 1) */
	int E = e - 1;              /* a = 1.xxx * 2^E */
	int emin_n = 1 - bias;
	if (E < emin_n)
		E = emin_n;             /* subnormal: quantum fixed at 2^(emin_n - mbits) */
	/* quantum q = 2^(E - mbits); scaled = a / q is exact in double (a has 53 bits) */
	double scaled = ldexp(a, mbits - E);
	double r = nearbyint(scaled);   /* round-half-even under the default rounding mode */
	if (fabs(r - scaled) == 0.5)
		r = 2.0 * nearbyint(scaled / 2.0);
	uint64_t q = (uint64_t)r;
	/* q in [2^mbits, 2^(mbits+1)] for normals, [0, 2^mbits] for subnormals */
	if (q >= (1ull << (mbits + 1))) {
		q >>= 1;
		E++;
	}
	uint32_t field;
	if (q < (1ull << mbits)) {
		field = 0;              /* stays subnormal */
	} else {
		field = (uint32_t)(E + bias);
		q -= 1ull << mbits;
	}
	if (field >= expmax)
		return out_sign | (expmax << mbits);  /* overflow to infinity */
	return out_sign | (field << mbits) | (uint32_t)q;
}

uint16_t fmt_double_to_f16(double x)
{
	return (uint16_t)round_bits(x, 11, 5);
}

uint16_t fmt_double_to_bf16(double x)
{
	return (uint16_t)round_bits(x, 8, 8);
}

int ht_alloc(HostTensor *t, Dtype dt, int rank, const int64_t *dims)
{
	IR_ASSERT(rank >= 0 && rank <= IR_MAXRANK);
	memset(t, 0, sizeof *t);
	t->dtype = dt;
	t->rank = rank;
	t->n = 1;
	for (int i = 0; i < rank; i++) {
		t->dims[i] = dims[i];
		t->n *= dims[i];
	}
	size_t bytes = (size_t)(t->n ? t->n : 1) * (size_t)dt_info(dt)->bytes;
	t->data = calloc(1, bytes);
	return t->data ? 0 : -1;
}

void ht_free(HostTensor *t)
{
	if (!t)
		return;
	free(t->data);
	t->data = NULL;
}

double ht_get(const HostTensor *t, int64_t k)
{
	switch (t->dtype) {
	case DT_F64: return ((const double *)t->data)[k];
	case DT_F32: return ((const float *)t->data)[k];
	case DT_TF32: return ((const float *)t->data)[k];
	case DT_F16: return fmt_f16_to_double(((const uint16_t *)t->data)[k]);
	case DT_BF16: return fmt_bf16_to_double(((const uint16_t *)t->data)[k]);
	case DT_I32: return ((const int32_t *)t->data)[k];
	default: IR_ASSERT(!"ht_get: no host storage for this format");
	}
}

void ht_set(HostTensor *t, int64_t k, double x)
{
	switch (t->dtype) {
	case DT_F64: ((double *)t->data)[k] = x; break;
	case DT_F32: case DT_TF32: ((float *)t->data)[k] = (float)x; break;
	case DT_F16: ((uint16_t *)t->data)[k] = fmt_double_to_f16(x); break;
	case DT_BF16: ((uint16_t *)t->data)[k] = fmt_double_to_bf16(x); break;
	case DT_I32: ((int32_t *)t->data)[k] = (int32_t)x; break;
	default: IR_ASSERT(!"ht_set: no host storage for this format");
	}
}
