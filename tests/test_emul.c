/* tests/test_emul.c: the emulating interpreter (interp/emul.c).
 *
 * Single operations are checked bit for bit against the C compiler's own float and _Float16
 * arithmetic on random operands that include subnormals, infinities and NaN (NaN compared
 * by NaN-ness). The references are provably correctly rounded:
 * - float: + - * / and sqrtf are IEEE operations (SSE, no flush-to-zero without
 *   -ffast-math); glibc's fmaf is correctly rounded.
 * - _Float16: GCC 12 on x86-64 computes _Float16 operations in float and rounds back only
 *   at an assignment or a cast (excess precision; `a*b+a` is NOT rounded in between), so
 *   each reference is one operation cast to _Float16 at once. float has 24 >= 2*11 + 2
 *   bits, so rounding first to float and then to _Float16 is innocuous for + - * / sqrt
 *   (Figueroa 1995). It is NOT for fma: the f16 fma reference is the double fma (one
 *   rounding of the exact R = a*b + c) and, when that was inexact, R lies strictly between
 *   the double r and its neighbour towards R; every f16 value and midpoint is a double, so
 *   any point strictly between them rounds like R. The point r + (r' - r)/2 is exact in
 *   x87 long double and is converted to _Float16 by GCC. Exactness of the double fma is
 *   decided in exact integer arithmetic: f16 values are multiples of 2^-24 below 2^16, so
 *   R * 2^48 is an integer below 2^81 (__int128).
 * Then the format spot checks of numerics.md, reduction orders, and mp_emulate on graphs
 * built with the ir.c constructors.
 */
#include <math.h>
#include <mpfr.h>
#include <stdint.h>
#include "testutil.h"
#include "../interp/interp.h"

/* ------------------------------------------------------------ operands */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A float bit pattern: random bits, subnormals, exponents near 1 and near the ends of the
 * range, and specials. */
static float rand_f32(uint64_t *s)
{
	uint64_t r = rng_next(s);
	uint32_t sign = (uint32_t)(r >> 63) << 31, man = (uint32_t)r & 0x7fffff, e;
	switch ((r >> 32) % 10) {
	case 0: case 1: e = (uint32_t)(r >> 40) & 0xff; break;
	case 2: case 3: e = 0; break;
	case 4: case 5: e = 110 + (uint32_t)((r >> 40) % 36); break;
	case 6: e = 1 + (uint32_t)((r >> 40) % 30); break;
	case 7: e = 224 + (uint32_t)((r >> 40) % 31); break;
	case 8: e = 64 + (uint32_t)((r >> 40) % 128); break;
	default: e = 255; man = (r >> 40) & 1 ? man : 0; break;
	}
	uint32_t bits = sign | e << 23 | man;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static _Float16 rand_f16(uint64_t *s)
{
	uint64_t r = rng_next(s);
	uint16_t sign = (uint16_t)((r >> 63) << 15), man = (uint16_t)(r & 0x3ff), e;
	switch ((r >> 32) % 10) {
	case 0: case 1: case 2: e = (uint16_t)((r >> 40) & 0x1f); break;
	case 3: case 4: e = 0; break;
	case 5: case 6: e = 12 + (uint16_t)((r >> 40) % 7); break;
	case 7: e = 1 + (uint16_t)((r >> 40) % 6); break;
	case 8: e = 25 + (uint16_t)((r >> 40) % 6); break;
	default: e = 31; man = (r >> 40) & 1 ? man : 0; break;
	}
	uint16_t bits = (uint16_t)(sign | e << 10 | man);
	_Float16 h;
	memcpy(&h, &bits, 2);
	return h;
}

static bool same_f32(float a, double b)
{
	float fb = (float)b;   /* exact when b is the emulated f32 value */
	if (isnan(a) || isnan(fb))
		return isnan(a) && isnan(fb);
	return memcmp(&a, &fb, 4) == 0 && (double)fb == b;
}

static bool same_f16(_Float16 a, double b)
{
	_Float16 hb = (_Float16)b;
	if (isnan((float)a) || isnan((float)hb))
		return isnan((float)a) && isnan((float)hb);
	return memcmp(&a, &hb, 2) == 0 && (double)hb == b;
}

/* ------------------------------------------------------------ f32 and f16 ops */

static const Op binops[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV};
enum { NRAND = 40000 };

static float ref_f32(Op op, float a, float b)
{
	volatile float r;
	switch (op) {
	case OP_ADD: r = a + b; break;
	case OP_SUB: r = a - b; break;
	case OP_MUL: r = a * b; break;
	default: r = a / b; break;
	}
	return r;
}

START_TEST(f32_binops)
{
	Op op = binops[_i];
	uint64_t s = 1234 + (uint64_t)_i;
	for (int k = 0; k < NRAND; k++) {
		float a = rand_f32(&s), b = rand_f32(&s);
		float r = ref_f32(op, a, b);
		double e = mp_emul_op(op, DT_F32, a, b, 0);
		ck_assert_msg(same_f32(r, e), "%s f32: %a op %a: hardware %a, emulated %a",
			      op_info(op)->name, (double)a, (double)b, (double)r, e);
	}
}
END_TEST

START_TEST(f32_sqrt_fma)
{
	uint64_t s = 99;
	for (int k = 0; k < NRAND; k++) {
		float a = rand_f32(&s), b = rand_f32(&s), c = rand_f32(&s);
		if (k % 3 == 0)   /* make cancellation between a*b and c common */
			c = -(float)((double)a * b);
		volatile float q = sqrtf(a), f = fmaf(a, b, c);
		double eq = mp_emul_op(OP_SQRT, DT_F32, a, 0, 0);
		double ef = mp_emul_op(OP_FMA, DT_F32, a, b, c);
		ck_assert_msg(same_f32(q, eq), "sqrt %a: %a vs %a", (double)a, (double)q, eq);
		ck_assert_msg(same_f32(f, ef), "fma %a %a %a: %a vs %a", (double)a, (double)b,
			      (double)c, (double)f, ef);
	}
}
END_TEST

static _Float16 ref_f16(Op op, _Float16 a, _Float16 b)
{
	volatile _Float16 r;
	switch (op) {   /* one operation, rounded to _Float16 at the assignment */
	case OP_ADD: r = a + b; break;
	case OP_SUB: r = a - b; break;
	case OP_MUL: r = a * b; break;
	default: r = a / b; break;
	}
	return r;
}

START_TEST(f16_binops)
{
	Op op = binops[_i];
	uint64_t s = 777 + (uint64_t)_i;
	for (int k = 0; k < NRAND; k++) {
		_Float16 a = rand_f16(&s), b = rand_f16(&s);
		_Float16 r = ref_f16(op, a, b);
		double e = mp_emul_op(op, DT_F16, (double)a, (double)b, 0);
		ck_assert_msg(same_f16(r, e), "%s f16: %a op %a: hardware %a, emulated %a",
			      op_info(op)->name, (double)a, (double)b, (double)r, e);
	}
}
END_TEST

/* The correctly rounded f16 fma, see the file comment. */
static _Float16 fma_f16(_Float16 a, _Float16 b, _Float16 c)
{
	double da = a, db = b, dc = c;
	double r = fma(da, db, dc);
	if (!isfinite(da) || !isfinite(db) || !isfinite(dc) || !isfinite(r))
		return (_Float16)r;
	__extension__ typedef __int128 i128;
	i128 ka = (i128)ldexp(da, 24), kb = (i128)ldexp(db, 24), kc = (i128)ldexp(dc, 24);
	i128 N = ka * kb + kc * ((i128)1 << 24);   /* R * 2^48 */
	i128 n = (i128)ldexp(r, 48);               /* r is a multiple of 2^-48 too */
	if (N == n)
		return (_Float16)r;
	double r2 = nextafter(r, N > n ? INFINITY : -INFINITY);
	long double mid = (long double)r + ((long double)r2 - (long double)r) / 2;
	return (_Float16)mid;
}

START_TEST(f16_sqrt_fma)
{
	uint64_t s = 4242;
	for (int k = 0; k < 4 * NRAND; k++) {
		_Float16 a = rand_f16(&s), b = rand_f16(&s), c = rand_f16(&s);
		if (k % 3 == 0)
			c = (_Float16)(-(float)a * (float)b);
		volatile _Float16 q = (_Float16)sqrtf((float)a);
		_Float16 f = fma_f16(a, b, c);
		double eq = mp_emul_op(OP_SQRT, DT_F16, (double)a, 0, 0);
		double ef = mp_emul_op(OP_FMA, DT_F16, (double)a, (double)b, (double)c);
		ck_assert_msg(same_f16(q, eq), "sqrt %a: %a vs %a", (double)a, (double)q, eq);
		ck_assert_msg(same_f16(f, ef), "fma %a %a %a: %a vs %a", (double)a, (double)b,
			      (double)c, (double)f, ef);
	}
	/* 1.5 * 683 = 1024.5 is an f16 midpoint: fma must see the 2^-24 beyond it. Through
	 * float, 1024.5 + 2^-24 first rounds to 1024.5 and then ties to 1024: wrong, which is
	 * why fmaf cannot be the f16 reference. */
	ck_assert(mp_emul_op(OP_FMA, DT_F16, 1.5, 683, 0x1p-24) == 1025.0);
	ck_assert(mp_emul_op(OP_FMA, DT_F16, 1.5, 683, -0x1p-24) == 1024.0);
	ck_assert(mp_emul_op(OP_FMA, DT_F16, 1.5, 683, 0) == 1024.0);
	ck_assert(fma_f16((_Float16)1.5f, (_Float16)683.0f, (_Float16)0x1p-24f) == (_Float16)1025.0f);
	volatile float viaf = fmaf(1.5f, 683.0f, 0x1p-24f);
	ck_assert((_Float16)viaf == (_Float16)1024.0f);
}
END_TEST

/* ------------------------------------------------------------ formats */

typedef struct {
	Dtype f;
	double in, out;   /* out NaN: expect NaN */
} RoundCase;

static const RoundCase round_cases[] = {
	/* numerics.md section 1, f16 spot checks */
	{DT_F16, 65519, 65504}, {DT_F16, 65520, INFINITY}, {DT_F16, 0x1p-25, 0},
	{DT_F16, 1e-6, 17 * 0x1p-24}, {DT_F16, -0x1p-25, -0.0}, {DT_F16, 3 * 0x1p-25, 0x1p-23},
	{DT_F16, 2049, 2048}, {DT_F16, 2051, 2052}, {DT_F16, 0x1.8p-25, 0x1p-24},
	/* bf16: 8 bits, f32's range */
	{DT_BF16, 1 + 0x1p-8, 1}, {DT_BF16, 1 + 3 * 0x1p-8, 1 + 0x1p-6},
	{DT_BF16, 0x1.ffp127, INFINITY}, {DT_BF16, 0x1.fefffffp127, 0x1.fep127},
	{DT_BF16, 0x1.fdp127, 0x1.fcp127},
	{DT_BF16, 0x1p-134, 0}, {DT_BF16, 0x1.8p-134, 0x1p-133}, {DT_BF16, 0x1p-133, 0x1p-133},
	/* tf32: 11 bits, f32's range (no overflow at 65520, subnormals down to 2^-136) */
	{DT_TF32, 65520, 65536}, {DT_TF32, 0x1p-137, 0}, {DT_TF32, 3 * 0x1p-137, 0x1p-135},
	{DT_TF32, 1 + 0x1p-11, 1}, {DT_TF32, 1 + 3 * 0x1p-11, 1 + 0x1p-9},
	/* e4m3: 4 bits, max 448, no infinity */
	{DT_E4M3, 448, 448}, {DT_E4M3, 464, 448}, {DT_E4M3, 465, NAN}, {DT_E4M3, INFINITY, NAN},
	{DT_E4M3, 0x1p-9, 0x1p-9}, {DT_E4M3, 0x1p-10, 0}, {DT_E4M3, 3 * 0x1p-10, 0x1p-8},
	{DT_E4M3, 0.3, 0.3125}, {DT_E4M3, -17, -16},
	/* e5m2: 3 bits, max 57344, IEEE-like */
	{DT_E5M2, 57344, 57344}, {DT_E5M2, 61439, 57344}, {DT_E5M2, 61440, INFINITY},
	{DT_E5M2, 0x1p-16, 0x1p-16}, {DT_E5M2, 0x1p-17, 0}, {DT_E5M2, 0.3, 0.3125},
	{DT_E5M2, 5.5, 6},
	/* f32 and f64 */
	{DT_F32, 0x1p-150, 0}, {DT_F32, 0x1.8p-150, 0x1p-149}, {DT_F32, 0x1.ffffffp127, INFINITY},
	{DT_F64, 0x1p-1074, 0x1p-1074}, {DT_F64, -0.0, -0.0},
};

START_TEST(round_spot)
{
	const RoundCase *c = &round_cases[_i];
	double r = mp_round_to(c->f, c->in);
	if (isnan(c->out))
		ck_assert_msg(isnan(r), "%s(%a) = %a, expected NaN", dt_name(c->f), c->in, r);
	else
		ck_assert_msg(r == c->out && signbit(r) == signbit(c->out),
			      "%s(%a) = %a, expected %a", dt_name(c->f), c->in, r, c->out);
}
END_TEST

/* Random doubles rounded by mp_round_to against the compiler's conversions (float,
 * _Float16), the bf16 bit conversion of tensor.c, and tf32 against f16 where both are
 * normal. */
START_TEST(round_random)
{
	uint64_t s = 31337;
	for (int k = 0; k < NRAND; k++) {
		uint64_t r = rng_next(&s);
		double x = ldexp((double)(r >> 11) * 0x1p-53, (int)((r >> 3) % 320) - 170);
		x = (r & 1) ? -x : x;
		double f = mp_round_to(DT_F32, x);
		ck_assert_msg(same_f32((float)x, f), "f32(%a): %a vs %a", x, (double)(float)x, f);
		double y = ldexp((double)(r >> 11) * 0x1p-53, (int)((r >> 3) % 48) - 28);
		y = (r & 1) ? -y : y;
		double h = mp_round_to(DT_F16, y);
		ck_assert_msg(same_f16((_Float16)y, h), "f16(%a): %a vs %a", y,
			      (double)(_Float16)y, h);
		if (fabs(y) >= 0x1p-14 && fabs(h) <= 65504)
			ck_assert(mp_round_to(DT_TF32, y) == h);
		double b = mp_round_to(DT_BF16, x);
		ck_assert_msg(b == fmt_bf16_to_double(fmt_double_to_bf16(x)), "bf16(%a): %a", x, b);
	}
}
END_TEST

/* ------------------------------------------------------------ functions */

START_TEST(functions)
{
	/* correctly rounded against MPFR at 300 bits, rounded into float by mpfr_get_flt */
	static const Op ops[] = {OP_EXP, OP_LOG, OP_SIN, OP_TANH, OP_ERF, OP_SIGMOID, OP_RSQRT};
	mpfr_t x, y, t;
	mpfr_inits2(300, x, y, t, (mpfr_ptr)0);
	uint64_t s = 5;
	for (size_t o = 0; o < ARRAY_LEN(ops); o++)
		for (int k = 0; k < 300; k++) {
			double a = ldexp((double)(rng_next(&s) >> 11) * 0x1p-53, k % 12 - 6);
			a = (k & 1) ? -a : a;
			if (ops[o] == OP_LOG || ops[o] == OP_RSQRT)
				a = fabs(a);
			mpfr_set_d(x, a, MPFR_RNDN);
			switch (ops[o]) {
			case OP_EXP: mpfr_exp(y, x, MPFR_RNDN); break;
			case OP_LOG: mpfr_log(y, x, MPFR_RNDN); break;
			case OP_SIN: mpfr_sin(y, x, MPFR_RNDN); break;
			case OP_TANH: mpfr_tanh(y, x, MPFR_RNDN); break;
			case OP_ERF: mpfr_erf(y, x, MPFR_RNDN); break;
			case OP_RSQRT: mpfr_rec_sqrt(y, x, MPFR_RNDN); break;
			default:
				mpfr_neg(t, x, MPFR_RNDN);
				mpfr_exp(t, t, MPFR_RNDN);
				mpfr_add_ui(t, t, 1, MPFR_RNDN);
				mpfr_ui_div(y, 1, t, MPFR_RNDN);
			}
			float want = mpfr_get_flt(y, MPFR_RNDN);
			double got = mp_emul_op(ops[o], DT_F32, a, 0, 0);
			ck_assert_msg(same_f32(want, got), "%s(%a): %a vs %a", op_info(ops[o])->name,
				      a, (double)want, got);
		}
	mpfr_clears(x, y, t, (mpfr_ptr)0);
	/* IEEE special cases of the spec */
	ck_assert(mp_emul_op(OP_RSQRT, DT_F32, -0.0, 0, 0) == -INFINITY);
	ck_assert(mp_emul_op(OP_RSQRT, DT_F32, 0.0, 0, 0) == INFINITY);
	ck_assert(mp_emul_op(OP_POW, DT_F32, NAN, 0, 0) == 1);
	ck_assert(isnan(mp_emul_op(OP_POW, DT_F32, -8, 1.0 / 3, 0)));
	ck_assert(mp_emul_op(OP_SIGMOID, DT_F16, 0, 0, 0) == 0.5);
	ck_assert(mp_emul_op(OP_SIGMOID, DT_F16, -INFINITY, 0, 0) == 0);
	ck_assert(mp_emul_op(OP_SIGMOID, DT_F16, 20, 0, 0) == 1);
	ck_assert(isnan(mp_emul_op(OP_MAX, DT_F32, 1, NAN, 0)));
	ck_assert(signbit(mp_emul_op(OP_MIN, DT_F32, 0.0, -0.0, 0)));
	ck_assert(!signbit(mp_emul_op(OP_MAX, DT_F32, -0.0, 0.0, 0)));
	ck_assert(mp_emul_op(OP_CAST_F16, DT_F64, 65519, 0, 0) == 65504);
	ck_assert(mp_emul_op(OP_EXP, DT_F16, 12, 0, 0) == INFINITY);   /* e^12 > 65520 */
	ck_assert(isnan(mp_emul_op(OP_MUL, DT_E4M3, 30, 30, 0)));     /* no inf in e4m3 */
	ck_assert(mp_emul_op(OP_ADD, DT_F64, 1e16, 1, 0) == 1e16);
}
END_TEST

/* ------------------------------------------------------------ graphs */

/* A tiny graph builder over the ir.c constructors. */
typedef struct {
	Graph *g;
} B;

static int input(B *b, const char *name, Dtype dt, int rank, const int64_t *dims)
{
	Tensor t;
	memset(&t, 0, sizeof t);
	t.name = ir_strdup(b->g, name, strlen(name));
	t.kind = TK_INPUT;
	t.dtype = (int8_t)dt;
	t.rank = rank;
	for (int i = 0; i < rank; i++)
		t.dims[i] = (Extent){-1, dims[i]};
	t.def = -1;
	return ir_add_tensor(b->g, &t);
}

static Ref var(B *b, int k)
{
	return ir_var(b->g, (uint32_t)k, TY_INT);
}

static Ref rd(B *b, int t, Ref i0, Ref i1)
{
	Ref ix[2] = {i0, i1};
	int n = i1 ? 2 : i0 ? 1 : 0;
	Ty ty = b->g->tensors[t].dtype == DT_I32 ? TY_INT : TY_REAL;
	return ir_read(b->g, (uint32_t)t, ix, (uint32_t)n, REF_NONE, ty);
}

/* A definition NAME[i0:e0, ...] = MONOID(j:E) body; nred 0 or 1; returns the tensor. */
static int define(B *b, const char *name, int nlhs, const int64_t *ext, Monoid m, int64_t red,
		  Ref body, Ty ty, bool twice)
{
	Graph *g = b->g;
	Def d;
	memset(&d, 0, sizeof d);
	Tensor t;
	memset(&t, 0, sizeof t);
	t.name = ir_strdup(g, name, strlen(name));
	t.kind = TK_DEF;
	t.dtype = (int8_t)(ty == TY_INT || m == MO_ARGMAX || m == MO_ARGMIN ? DT_I32 : DT_F64);
	t.rank = nlhs;
	t.def = g->ndefs;
	for (int i = 0; i < nlhs; i++) {
		t.dims[i] = (Extent){-1, ext[i]};
		d.lhs[i].name = ir_strdup(g, "i", 1);
		d.lhs[i].ext = t.dims[i];
	}
	d.out[0] = ir_add_tensor(g, &t);
	d.nout = 1;
	if (twice) {   /* topk's index result */
		char nm[64];
		snprintf(nm, sizeof nm, "%s_ix", name);
		t.name = ir_strdup(g, nm, strlen(nm));
		t.dtype = DT_I32;
		t.result = 1;
		d.out[1] = ir_add_tensor(g, &t);
		d.nout = 2;
	}
	d.nlhs = nlhs;
	d.monoid = m;
	d.nred = m == MO_NONE ? 0 : 1;
	if (d.nred) {
		d.red[0].name = ir_strdup(g, "j", 1);
		d.red[0].lo = ir_int(g, 0);
		d.red[0].hi = ir_int(g, red);
		d.red[0].full = true;
	}
	d.body = body;
	d.ty = ty;
	ir_add_def(g, &d);
	return d.out[0];
}

static Ref num(B *b, const char *text)
{
	return ir_num(b->g, text, strlen(text));
}

static Ref op(B *b, Op o, Ref x, Ref y)
{
	return ir_op(b->g, o, TY_REAL, x, y, REF_NONE);
}

static void set_input(HostTensor *h, Dtype dt, int rank, const int64_t *dims, const double *v)
{
	ck_assert_int_eq(ht_alloc(h, dt, rank, dims), 0);
	for (int64_t i = 0; i < h->n; i++)
		ht_set(h, i, v[i]);
}

/* y[i] = sum(j:N) a[i,j] * x[j] + sqrt(b[i]) / 3, everything in f64, against plain C. */
START_TEST(graph_f64)
{
	enum { M = 7, N = 11 };
	B b = {ir_new("f64.tg")};
	int ta = input(&b, "a", DT_F64, 2, (int64_t[]){M, N});
	int tx = input(&b, "x", DT_F64, 1, (int64_t[]){N});
	int tb = input(&b, "b", DT_F64, 1, (int64_t[]){M});
	int s = define(&b, "s", 1, (int64_t[]){M}, MO_SUM, N,
		       op(&b, OP_MUL, rd(&b, ta, var(&b, 0), var(&b, 1)), rd(&b, tx, var(&b, 1), 0)),
		       TY_REAL, false);
	Ref body = op(&b, OP_ADD, rd(&b, s, var(&b, 0), 0),
		      op(&b, OP_DIV, ir_op(b.g, OP_SQRT, TY_REAL, rd(&b, tb, var(&b, 0), 0), 0, 0),
			 num(&b, "3")));
	int y = define(&b, "y", 1, (int64_t[]){M}, MO_NONE, 0, body, TY_REAL, false);
	ir_add_output(b.g, y, DT_F64, (SrcPos){0});
	double va[M * N], vx[N], vb[M];
	uint64_t r = 17;
	for (int i = 0; i < M * N; i++)
		va[i] = ((double)(rng_next(&r) >> 11) * 0x1p-53 - 0.5) * 1e3;
	for (int i = 0; i < N; i++)
		vx[i] = ((double)(rng_next(&r) >> 11) * 0x1p-53 - 0.5) * 1e-3;
	for (int i = 0; i < M; i++)
		vb[i] = (double)(rng_next(&r) >> 11) * 0x1p-53 * 10;
	HostTensor in[3], out[1];
	set_input(&in[0], DT_F64, 2, (int64_t[]){M, N}, va);
	set_input(&in[1], DT_F64, 1, (int64_t[]){N}, vx);
	set_input(&in[2], DT_F64, 1, (int64_t[]){M}, vb);
	EmuConfig cfg = {.dflt = DT_F64};
	Diag d = {0};
	MpStats st;
	for (int th = 1; th <= 3; th += 2) {
		MpOpts o = {.threads = th};
		ck_assert_msg(mp_emulate(b.g, in, &cfg, &o, out, &st, &d) == 0, "%s", d.msg);
		for (int i = 0; i < M; i++) {
			volatile double acc = va[i * N] * vx[0];
			for (int j = 1; j < N; j++) {
				volatile double p = va[i * N + j] * vx[j];
				acc = acc + p;
			}
			volatile double q = sqrt(vb[i]) / 3;
			double want = acc + q;
			ck_assert_msg(((double *)out[0].data)[i] == want, "y[%d] = %a, C says %a", i,
				      ((double *)out[0].data)[i], want);
		}
		ck_assert(st.mpfr_ops > 0 && st.elements == M);
		ht_free(&out[0]);
	}
	for (int k = 0; k < 3; k++)
		ht_free(&in[k]);
	ir_free(b.g);
}
END_TEST

/* s = sum(j:4) x[j] over (2048, 1, 1, 1): in f16, linear gives 2048 (each +1 is a tie
 * back to 2048), pairwise (2048+1) + (1+1) = 2048 + 2 = 2050; accumulated in f32 both
 * give the exact 2051, which the f16 output rounds to 2052. */
START_TEST(sum_orders)
{
	static const struct {
		Dtype accum;
		Order order;
		double want;
	} cases[] = {
		{DT_F16, ORDER_LINEAR, 2048}, {DT_F16, ORDER_PAIRWISE, 2050},
		{DT_F32, ORDER_LINEAR, 2052}, {DT_F32, ORDER_PAIRWISE, 2052},
	};
	B b = {ir_new("sum.tg")};
	int tx = input(&b, "x", DT_F16, 1, (int64_t[]){4});
	int s = define(&b, "s", 0, NULL, MO_SUM, 4, rd(&b, tx, var(&b, 0), 0), TY_REAL, false);
	ir_add_output(b.g, s, DT_F16, (SrcPos){0});
	HostTensor in[1], out[1];
	set_input(&in[0], DT_F16, 1, (int64_t[]){4}, (double[]){2048, 1, 1, 1});
	for (size_t k = 0; k < ARRAY_LEN(cases); k++) {
		Dtype acc[1] = {cases[k].accum}, opf[1] = {DT_F16}, store[1] = {DT_F32};
		Order ord[1] = {cases[k].order};
		EmuConfig cfg = {.dflt = DT_F32, .op = opf, .accum = acc, .store = store, .order = ord};
		Diag d = {0};
		ck_assert_msg(mp_emulate(b.g, in, &cfg, NULL, out, NULL, &d) == 0, "%s", d.msg);
		ck_assert_msg(ht_get(&out[0], 0) == cases[k].want, "case %zu: %g", k, ht_get(&out[0], 0));
		ht_free(&out[0]);
	}
	ht_free(&in[0]);
	ir_free(b.g);
}
END_TEST

/* Monoids on one row: max/min with NaN and signed zeros, argmax ties and NaN, topk order,
 * logsumexp of (1000, 1000). */
static double run1(Graph *g, HostTensor *in, int out, Dtype dflt, int64_t k)
{
	HostTensor outs[4];
	EmuConfig cfg = {.dflt = dflt};
	Diag d = {0};
	ck_assert_msg(mp_emulate(g, in, &cfg, NULL, outs, NULL, &d) == 0, "%s", d.msg);
	double v = ht_get(&outs[out], k);
	for (int i = 0; i < g->noutputs; i++)
		ht_free(&outs[i]);
	return v;
}

static Graph *row_graph(Monoid m, bool twice, int K)
{
	B b = {ir_new("row.tg")};
	int tx = input(&b, "x", DT_F32, 1, (int64_t[]){5});
	int nl = twice ? 1 : 0;
	int t = define(&b, "r", nl, (int64_t[]){K}, m, 5, rd(&b, tx, var(&b, nl), 0), TY_REAL,
		       twice);
	Dtype od = m == MO_ARGMAX || m == MO_ARGMIN ? DT_I32 : DT_F32;
	ir_add_output(b.g, t, od, (SrcPos){0});
	if (twice)
		ir_add_output(b.g, t + 1, DT_I32, (SrcPos){0});
	return b.g;
}

START_TEST(monoids)
{
	HostTensor in[1];
	Graph *g;
	set_input(&in[0], DT_F32, 1, (int64_t[]){5}, (double[]){-0.0, 3, 1, 3, 0.0});
	g = row_graph(MO_MAX, false, 1);
	ck_assert(run1(g, in, 0, DT_F32, 0) == 3);
	ir_free(g);
	g = row_graph(MO_ARGMAX, false, 1);
	ck_assert(run1(g, in, 0, DT_F32, 0) == 1);   /* tie: smaller index */
	ir_free(g);
	g = row_graph(MO_ARGMIN, false, 1);
	ck_assert(run1(g, in, 0, DT_F32, 0) == 0);   /* -0 and +0 tie */
	ir_free(g);
	g = row_graph(MO_MIN, false, 1);
	double mn = run1(g, in, 0, DT_F32, 0);
	ck_assert(mn == 0 && signbit(mn));           /* -0 below +0 */
	ir_free(g);
	g = row_graph(MO_TOPK, true, 3);
	ck_assert(run1(g, in, 0, DT_F32, 0) == 3 && run1(g, in, 0, DT_F32, 2) == 1);
	ck_assert(run1(g, in, 1, DT_F32, 0) == 1 && run1(g, in, 1, DT_F32, 1) == 3 &&
		  run1(g, in, 1, DT_F32, 2) == 2);
	ir_free(g);
	ht_free(&in[0]);

	set_input(&in[0], DT_F32, 1, (int64_t[]){5}, (double[]){1, NAN, 7, NAN, 2});
	g = row_graph(MO_ARGMAX, false, 1);
	ck_assert(run1(g, in, 0, DT_F32, 0) == 1);   /* first NaN wins */
	ir_free(g);
	g = row_graph(MO_ARGMIN, false, 1);
	ck_assert(run1(g, in, 0, DT_F32, 0) == 1);
	ir_free(g);
	g = row_graph(MO_MAX, false, 1);
	ck_assert(isnan(run1(g, in, 0, DT_F32, 0)));
	ir_free(g);
	g = row_graph(MO_TOPK, true, 3);
	ck_assert(run1(g, in, 1, DT_F32, 0) == 1 && run1(g, in, 1, DT_F32, 1) == 3 &&
		  run1(g, in, 1, DT_F32, 2) == 2);
	ir_free(g);
	ht_free(&in[0]);

	set_input(&in[0], DT_F32, 1, (int64_t[]){5}, (double[]){1000, 1000, -INFINITY, -INFINITY,
								 -INFINITY});
	g = row_graph(MO_LOGSUMEXP, false, 1);
	/* m + log(1 + 1 + 0 + 0 + 0) with log(2) rounded to f64, then the add */
	ck_assert(run1(g, in, 0, DT_F64, 0) == (double)(float)(1000 + 0.6931471805599453));
	ir_free(g);
	ht_free(&in[0]);
}
END_TEST

/* Indirect reads: in range they gather, out of range they are an error (code 2) naming
 * the tensor, the index position and the value; with `??` they take the default. */
START_TEST(indirect)
{
	for (int pad = 0; pad < 2; pad++) {
		B b = {ir_new("gather.tg")};
		int te = input(&b, "emb", DT_F32, 2, (int64_t[]){3, 2});
		int tt = input(&b, "tok", DT_I32, 1, (int64_t[]){4});
		Ref ix[2] = {rd(&b, tt, var(&b, 0), 0), var(&b, 1)};
		Ref body = ir_read(b.g, (uint32_t)te, ix, 2, pad ? num(&b, "-1.5") : REF_NONE,
				   TY_REAL);
		int y = define(&b, "y", 2, (int64_t[]){4, 2}, MO_NONE, 0, body, TY_REAL, false);
		ir_add_output(b.g, y, DT_F32, (SrcPos){0});
		HostTensor in[2], out[1];
		set_input(&in[0], DT_F32, 2, (int64_t[]){3, 2}, (double[]){0, 1, 10, 11, 20, 21});
		set_input(&in[1], DT_I32, 1, (int64_t[]){4}, (double[]){2, 0, 1, 2});
		Diag d = {0};
		ck_assert_msg(mp_emulate(b.g, in, NULL, NULL, out, NULL, &d) == 0, "%s", d.msg);
		ck_assert(ht_get(&out[0], 0) == 20 && ht_get(&out[0], 3) == 1 &&
			  ht_get(&out[0], 7) == 21);
		ht_free(&out[0]);
		ht_set(&in[1], 2, 7);
		int rc = mp_emulate(b.g, in, NULL, NULL, out, NULL, &d);
		if (pad) {
			ck_assert_int_eq(rc, 0);
			ck_assert(ht_get(&out[0], 4) == -1.5 && ht_get(&out[0], 5) == -1.5);
			ht_free(&out[0]);
		} else {
			ck_assert_int_eq(rc, -1);
			ck_assert_int_eq(d.code, 2);
			ck_assert_msg(strstr(d.msg, "'emb'") && strstr(d.msg, "is 7") &&
				      strstr(d.msg, "'tok'") && strstr(d.msg, "index 0") &&
				      strstr(d.msg, "y[2, 0]"), "%s", d.msg);
			diag_clear(&d);
		}
		ht_free(&in[0]);
		ht_free(&in[1]);
		ir_free(b.g);
	}
}
END_TEST

/* Integer definitions are exact int64 and must fit in 32 bits; a real output rounds them. */
START_TEST(integers)
{
	B b = {ir_new("int.tg")};
	int tn = input(&b, "n", DT_I32, 1, (int64_t[]){3});
	Ref body = ir_op(b.g, OP_MUL, TY_INT, rd(&b, tn, var(&b, 1), 0), ir_int(b.g, 1 << 20),
			 REF_NONE);
	int s = define(&b, "s", 1, (int64_t[]){1}, MO_SUM, 3, body, TY_INT, false);
	ir_add_output(b.g, s, DT_I32, (SrcPos){0});
	ir_add_output(b.g, s, DT_F16, (SrcPos){0});
	HostTensor in[1], out[2];
	set_input(&in[0], DT_I32, 1, (int64_t[]){3}, (double[]){100, 200, 300});
	Diag d = {0};
	ck_assert_msg(mp_emulate(b.g, in, NULL, NULL, out, NULL, &d) == 0, "%s", d.msg);
	ck_assert(ht_get(&out[0], 0) == 600.0 * (1 << 20));
	ck_assert(ht_get(&out[1], 0) == INFINITY);   /* 6.3e8 overflows f16 */
	ht_free(&out[0]);
	ht_free(&out[1]);
	ht_set(&in[0], 2, 2000);
	ck_assert_int_eq(mp_emulate(b.g, in, NULL, NULL, out, NULL, &d), -1);
	ck_assert_msg(d.code == 2 && strstr(d.msg, "32 bits"), "%s", d.msg);
	diag_clear(&d);
	ht_free(&in[0]);
	ir_free(b.g);
}
END_TEST

/* Determinism across thread counts with transcendental ops, casts and f16 storage. */
START_TEST(threads)
{
	enum { M = 97, N = 33 };
	B b = {ir_new("thr.tg")};
	int ta = input(&b, "a", DT_F16, 2, (int64_t[]){M, N});
	Ref x = rd(&b, ta, var(&b, 0), var(&b, 1));
	Ref body = op(&b, OP_MUL, ir_op(b.g, OP_SIGMOID, TY_REAL, x, 0, 0),
		      ir_op(b.g, OP_CAST_BF16, TY_REAL, op(&b, OP_ADD, x, num(&b, "0.1")), 0, 0));
	int e = define(&b, "e", 2, (int64_t[]){M, N}, MO_NONE, 0, body, TY_REAL, false);
	Ref sb = ir_op(b.g, OP_EXP, TY_REAL, rd(&b, e, var(&b, 0), var(&b, 1)), 0, 0);
	int s = define(&b, "s", 1, (int64_t[]){M}, MO_LOGSUMEXP, N, sb, TY_REAL, false);
	ir_add_output(b.g, s, DT_F32, (SrcPos){0});
	HostTensor in[1], out1[1], outk[1];
	double v[M * N];
	uint64_t r = 3;
	for (int i = 0; i < M * N; i++)
		v[i] = ((double)(rng_next(&r) >> 11) * 0x1p-53 - 0.5) * 8;
	set_input(&in[0], DT_F16, 2, (int64_t[]){M, N}, v);
	Dtype st[2] = {DT_F16, DT_F32};
	EmuConfig cfg = {.dflt = DT_F32, .store = st};
	Diag d = {0};
	MpOpts o1 = {.threads = 1}, o4 = {.threads = 4};
	ck_assert_msg(mp_emulate(b.g, in, &cfg, &o1, out1, NULL, &d) == 0, "%s", d.msg);
	ck_assert_msg(mp_emulate(b.g, in, &cfg, &o4, outk, NULL, &d) == 0, "%s", d.msg);
	ck_assert(memcmp(out1[0].data, outk[0].data, M * sizeof(float)) == 0);
	ck_assert(isfinite(ht_get(&out1[0], 0)));
	ht_free(&out1[0]);
	ht_free(&outk[0]);
	ht_free(&in[0]);
	ir_free(b.g);
}
END_TEST

/* A parsed graph (the parser's typing conventions: integer literals and indices in real
 * contexts, `??` defaults, integer definitions, topk/argmax results read back), with values
 * worked out by hand: x = 1..8, c = (3, 6, 9, 12, 15, 18, 21, -inf), k = (0, -1, 1, -3, 2,
 * -5, 3, -7), topk 3 = (21, 18, 15) at (6, 5, 4), argmax 6, z[i] = k[i] + v[i % 3] + 12. */
static const char parsed_src[] =
	"size N = 8\n"
	"input x : f32[N]\n"
	"c[i:N] = (x[i - 1] ?? 0) + x[i] + (x[i + 1] ?? -inf)\n"
	"k[i:N] = i % 2 == 0 ? i / 2 : -i\n"
	"v[r:3], ix[r:3] = topk(j:N) c[j]\n"
	"am[] = argmax(j:N) c[j]\n"
	"z[i:N] = f32(k[i]) + v[i % 3] + f32(ix[0]) + f32(am[])\n"
	"output z, c\n";

START_TEST(parsed)
{
	Diag d = {0};
	Graph *g = ir_parse(parsed_src, strlen(parsed_src), "parsed.tg", NULL, 0, &d);
	ck_assert_msg(g, "%s", d.msg);
	HostTensor in[1], out[2];
	set_input(&in[0], DT_F32, 1, (int64_t[]){8}, (double[]){1, 2, 3, 4, 5, 6, 7, 8});
	ck_assert_msg(mp_emulate(g, in, NULL, NULL, out, NULL, &d) == 0, "%s", d.msg);
	static const double z[8] = {33, 29, 28, 30, 32, 22, 36, 23};
	static const double c[8] = {3, 6, 9, 12, 15, 18, 21, -INFINITY};
	for (int i = 0; i < 8; i++) {
		ck_assert_msg(ht_get(&out[0], i) == z[i], "z[%d] = %g", i, ht_get(&out[0], i));
		ck_assert_msg(ht_get(&out[1], i) == c[i], "c[%d] = %g", i, ht_get(&out[1], i));
	}
	ht_free(&out[0]);
	ht_free(&out[1]);
	ht_free(&in[0]);
	ir_free(g);
}
END_TEST

/* MpStats.subnormal (the emulation check's test for flushing devices): set for the width an
 * operation computes in when an operand, a result, a loaded or a stored value is subnormal
 * there: f32 for f32, f16 and bf16 arithmetic (an f16 subnormal is a normal f32), f64. */
static const struct {
	const char *src;
	double x;        /* every input element */
	uint32_t want;
} sub_cases[] = {
	{"input x : f32[2]\ny[i:2] = x[i] * 3\noutput y : f32\n", 1.5, 0},
	{"input x : f32[2]\ny[i:2] = x[i] * 1e-30\noutput y : f32\n", 1e-9, 1u << DT_F32},
	{"input x : f32[2]\ny[i:2] = x[i] * 3\noutput y : f32\n", 1e-40, 1u << DT_F32},
	{"input x : f64[2]\ny[i:2] = x[i] * 1e-300\noutput y : f64\n", 1e-10, 1u << DT_F64},
	{"input x : f64[2]\ny[i:2] = x[i] * 1e-300\noutput y : f64\n", 1, 0},
	{"input x : f16[2]\ny[i:2] = x[i] * 0.5\noutput y : f16\n", 0x1p-20, 0},
	/* 1e-300 rounds to an f32 zero in a cast, which keeps its sign on a sign-losing device:
	 * no zero met, no subnormal (emul.c folds_zero) */
	{"input x : f32[2]\ny[i:2] = f32(f64(x[i]) * 1e-300)\noutput y : f32\n", 1, 0},
	/* x - x is a zero that arithmetic made: met (MP_MET_ZERO) */
	{"input x : f32[2]\ny[i:2] = x[i] - x[i]\noutput y : f32\n", 1.5, MP_MET_ZERO},
	/* a zero operand of *: met */
	{"input x : f32[2]\ny[i:2] = x[i] * 3\noutput y : f32\n", 0, MP_MET_ZERO},
	/* a zero through max only: not met */
	{"input x : f32[2, 3]\ns[i:2] = max(j:3) x[i, j]\noutput s : f32\n", 0, 0},
	/* a sum starts from -0 (the identity), which is no value computed: nothing met */
	{"input x : f32[2, 3]\ns[i:2] = sum(j:3) x[i, j]\noutput s : f32\n", 1.5, 0},
	{"input x : f32[2]\ny[i:2] = f32(f64(x[i]) * 1e-40)\noutput y : f32\n", 1,
	 1u << DT_F32},
	{"input x : f32[2, 3]\ns[i:2] = max(j:3) x[i, j]\noutput s : f32\n", 1e-40,
	 1u << DT_F32},
};

START_TEST(subnormals_noted)
{
	Diag d = {0};
	const char *src = sub_cases[_i].src;
	Graph *g = ir_parse(src, strlen(src), "sub.tg", NULL, 0, &d);
	ck_assert_msg(g, "%s", d.msg);
	HostTensor in[1], out[1];
	const Tensor *T = &g->tensors[ir_input_tensor(g, 0)];
	int64_t dims[IR_MAXRANK];
	for (int i = 0; i < T->rank; i++)
		dims[i] = T->dims[i].value;
	ck_assert_int_eq(ht_alloc(&in[0], (Dtype)T->dtype, T->rank, dims), 0);
	for (int64_t i = 0; i < in[0].n; i++)
		ht_set(&in[0], i, sub_cases[_i].x);
	Schedule s;
	sched_default(g, &s);
	Dtype f[3] = {0};
	Order ord;
	sched_formats(g, &s, f, f + 1, f + 2, &ord);
	EmuConfig cfg = {DT_F32, f, f + 1, f + 2, &ord, NULL, NULL, NULL, 0};
	MpStats st;
	ck_assert_msg(mp_emulate(g, in, &cfg, NULL, out, &st, &d) == 0, "%s", d.msg);
	ck_assert_msg(st.subnormal == sub_cases[_i].want, "case %d: %#x, want %#x", _i,
		      st.subnormal, sub_cases[_i].want);
	ht_free(&out[0]);
	ht_free(&in[0]);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* Reductions longer than a block stream (emul.c): with blocks of 1, 2, 3 and 7 terms every
 * monoid, order and split gives the bits of the buffered evaluation (one block holding
 * every term), on adversarial inputs with and without inf and NaN, and on normal ones.
 * The triangle's inner range depends on its outer index (its pairwise tree is counted
 * over both levels), and its split may cut the outer or the inner index. */
static const char stream_src[] =
	"size M = 5, N = 61\n"
	"input x : f32[M, N]\n"
	"input k : i32[N]\n"
	"s1[i:M] = sum(j:N) x[i, j]\n"
	"p1[i:M] = prod(j:N) (x[i, j] * 0.25 + 1)\n"
	"l1[i:M] = logsumexp(j:N) x[i, j]\n"
	"mx[i:M] = max(j:N) x[i, j]\n"
	"mn[i:M] = min(j:N) x[i, j]\n"
	"am[i:M] = argmax(j:N) x[i, j]\n"
	"an[i:M] = argmin(j:N) x[i, j]\n"
	"v[i:M, r:4], ix[i:M, r:4] = topk(j:N) x[i, j]\n"
	"is[i:M] = sum(j:N) k[j] * (i + 1)\n"
	"tri[i:M] = sum(j:N, l:0..j+1) x[i, l] * x[i, j]\n"
	"output s1, p1, l1, mx, mn, am, an, v, ix, is, tri\n";

START_TEST(stream_matches_buffer)
{
	Diag d = {0};
	Graph *g = ir_parse(stream_src, strlen(stream_src), "stream.tg", NULL, 0, &d);
	ck_assert_msg(g, "%s", d.msg);
	static const InputSpec specs[] = {
		{DIST_ADVERSARIAL, 3, false}, {DIST_ADVERSARIAL, 4, true}, {DIST_NORMAL, 5, false},
	};
	const InputSpec *sp = &specs[_i % 3];
	HostTensor in[2];
	ck_assert_int_eq(mp_make_inputs(g, sp, NULL, in, &d), 0);
	Order ord[16];
	int64_t split[16];
	int sred[16];
	Dtype dflt = _i / 3 % 2 ? DT_F16 : DT_F32;
	int tri = g->tensors[ir_find_tensor(g, "tri")].def;
	for (int cfgno = 0; cfgno < 8; cfgno++) {
		for (int k = 0; k < g->ndefs; k++) {
			ord[k] = cfgno & 1 ? ORDER_PAIRWISE : ORDER_LINEAR;
			split[k] = cfgno & 2 ? 3 + (cfgno & 4 ? 1 : 0) : 1;
			sred[k] = k == tri && cfgno & 4 ? 1 : 0;
		}
		EmuConfig cfg = {.dflt = dflt, .order = ord, .split = split, .split_red = sred};
		HostTensor want[16], got[16];
		MpOpts all = {.threads = 1, .red_block = 1 << 30};
		ck_assert_msg(mp_emulate(g, in, &cfg, &all, want, NULL, &d) == 0, "%s", d.msg);
		static const long blocks[] = {1, 2, 3, 7};
		for (size_t b = 0; b < ARRAY_LEN(blocks); b++) {
			MpOpts o = {.threads = 1 + (int)(b % 2), .red_block = blocks[b]};
			ck_assert_msg(mp_emulate(g, in, &cfg, &o, got, NULL, &d) == 0, "%s", d.msg);
			for (int k = 0; k < g->noutputs; k++) {
				const char *name = g->tensors[g->outputs[k].tensor].name;
				size_t bytes = (size_t)want[k].n * (size_t)dt_info(want[k].dtype)->bytes;
				ck_assert_msg(memcmp(want[k].data, got[k].data, bytes) == 0,
					      "%s differs with blocks of %ld (config %d, inputs %d): %g vs %g",
					      name, blocks[b], cfgno, _i, ht_get(&got[k], 0),
					      ht_get(&want[k], 0));
				ht_free(&got[k]);
			}
		}
		for (int k = 0; k < g->noutputs; k++)
			ht_free(&want[k]);
	}
	ht_free(&in[0]);
	ht_free(&in[1]);
	ir_free(g);
}
END_TEST

/* ops.def's mpfr column (mp_op_fn): every real operation that is one MPFR function has it,
 * in the member of its arity and no other, and the emulator computes the op through it
 * (here in f64, where that is the function at 53 bits rounded to nearest). */
START_TEST(mpfr_table)
{
	static const Op none[] = {
		OP_NOT, OP_IDIV, OP_MOD, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_AND, OP_OR,
		OP_SELECT, OP_SIGMOID, OP_MAX, OP_MIN, OP_CAST_F64, OP_CAST_F32, OP_CAST_F16, OP_CAST_BF16,
	};
	const double a[3] = {1.375, 0.625, -2.25};
	mpfr_t x[3], y;
	for (int i = 0; i < 3; i++) {
		mpfr_init2(x[i], 53);
		mpfr_set_d(x[i], a[i], MPFR_RNDN);
	}
	mpfr_init2(y, 53);
	int mapped = 0;
	for (int op = 0; op < OP__COUNT; op++) {
		const MpOpFn *m = mp_op_fn((Op)op);
		int n = op_info((Op)op)->arity;
		bool real = true;
		for (size_t i = 0; i < ARRAY_LEN(none); i++)
			real &= none[i] != (Op)op;
		const char *name = op_info((Op)op)->name;
		ck_assert_msg((m->f1 != NULL) == (real && n == 1), "%s: f1", name);
		ck_assert_msg((m->f2 != NULL) == (real && n == 2), "%s: f2", name);
		ck_assert_msg((m->f3 != NULL) == (real && n == 3), "%s: f3", name);
		if (!real)
			continue;
		mapped++;
		if (n == 1)
			m->f1(y, x[0], MPFR_RNDN);
		else if (n == 2)
			m->f2(y, x[0], x[1], MPFR_RNDN);
		else
			m->f3(y, x[0], x[1], x[2], MPFR_RNDN);
		double want = mpfr_get_d(y, MPFR_RNDN), got = mp_emul_op((Op)op, DT_F64, a[0], a[1], a[2]);
		ck_assert_msg(want == got, "%s: %a vs %a", name, want, got);
	}
	ck_assert_int_eq(mapped, OP__COUNT - (int)ARRAY_LEN(none));
	/* the spec's rsqrt, not MPFR's: rsqrt(-0) = -inf */
	mpfr_set_zero(x[0], -1);
	mp_op_fn(OP_RSQRT)->f1(y, x[0], MPFR_RNDN);
	ck_assert(mpfr_inf_p(y) && mpfr_signbit(y));
	for (int i = 0; i < 3; i++)
		mpfr_clear(x[i]);
	mpfr_clear(y);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("emul");
	TCase *t = tcase_create("ops");
	tcase_set_timeout(t, 60);
	tcase_add_loop_test(t, f32_binops, 0, ARRAY_LEN(binops));
	tcase_add_test(t, f32_sqrt_fma);
	tcase_add_loop_test(t, f16_binops, 0, ARRAY_LEN(binops));
	tcase_add_test(t, f16_sqrt_fma);
	tcase_add_loop_test(t, round_spot, 0, ARRAY_LEN(round_cases));
	tcase_add_test(t, round_random);
	tcase_add_test(t, functions);
	tcase_add_test(t, mpfr_table);
	suite_add_tcase(s, t);
	TCase *gr = tcase_create("graphs");
	tcase_set_timeout(gr, 30);
	tcase_add_test(gr, graph_f64);
	tcase_add_test(gr, sum_orders);
	tcase_add_test(gr, monoids);
	tcase_add_test(gr, indirect);
	tcase_add_test(gr, integers);
	tcase_add_test(gr, threads);
	tcase_add_test(gr, parsed);
	tcase_add_loop_test(gr, subnormals_noted, 0, ARRAY_LEN(sub_cases));
	tcase_add_loop_test(gr, stream_matches_buffer, 0, 6);
	suite_add_tcase(s, gr);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
