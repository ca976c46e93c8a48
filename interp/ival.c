/* interp/ival.c: interval arithmetic for exact mode (see ival.h for the representation).
 *
 * Invariants kept by every operation here:
 * - soundness: the exact result of the operation applied to any values the operands admit
 *   lies in the result (in the order of the extended reals with -0 < +0), or the result is
 *   undecided;
 * - points stay points: an operation on points rounds once to nearest and derives the other
 *   end from the ternary value (one MPFR call instead of two); a directed-rounding pair
 *   whose ends coincide becomes a point;
 * - NaN is absorbing for arithmetic (a definite NaN operand, or a product inf * 0 of
 *   operands admitting only those values, gives a NaN point even when another operand is
 *   undecided: fma(-inf, 0, c) is NaN for any c); pow's special cases (pow(x, 0) = 1,
 *   pow(1, y) = 1) win over NaN and over undecided operands, and pow(+-0, y), pow(-inf, y)
 *   are decided from y's sign and whether it may be an odd integer;
 * - an operation that could yield NaN for some admitted operand values but not for others
 *   (inf - inf, 0 * inf, 0 / 0, log of a negative...) gives und.
 */
#include <stdlib.h>
#include <string.h>
#include "ival.h"
#include "mpfmt.h"

typedef int (*Fn1)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);
typedef int (*Fn2)(mpfr_ptr, mpfr_srcptr, mpfr_srcptr, mpfr_rnd_t);

#define RN MPFR_RNDN
#define RD MPFR_RNDD
#define RU MPFR_RNDU

/* ------------------------------------------------------------- storage */

void iv_init(Iv *v, mpfr_prec_t prec)
{
	mpfr_init2(v->lo, prec);
	mpfr_init2(v->hi, prec);
	v->pt = 1;
	v->und = 0;
	v->done = 0;
	mpfr_set_zero(v->lo, 1);
}

void iv_clear(Iv *v)
{
	mpfr_clear(v->lo);
	mpfr_clear(v->hi);
}

static size_t sig_bytes(mpfr_prec_t prec)
{
	size_t limbs = mpfr_custom_get_size(prec);
	return (limbs + sizeof(mp_limb_t) - 1) / sizeof(mp_limb_t) * sizeof(mp_limb_t);
}

size_t iv_block_bytes(size_t n, mpfr_prec_t prec)
{
	return (n * sizeof(Iv) + 63) / 64 * 64 + 2 * n * sig_bytes(prec);
}

Iv *iv_block(size_t n, mpfr_prec_t prec)
{
	size_t limbs = sig_bytes(prec);
	size_t head = (n * sizeof(Iv) + 63) / 64 * 64;
	char *mem = malloc(head + 2 * n * limbs);
	if (!mem)
		return NULL;
	Iv *v = (Iv *)mem;
	char *sig = mem + head;
	for (size_t i = 0; i < n; i++) {
		mpfr_custom_init(sig, prec);
		mpfr_custom_init_set(v[i].lo, MPFR_ZERO_KIND, 0, prec, sig);
		sig += limbs;
		mpfr_custom_init(sig, prec);
		mpfr_custom_init_set(v[i].hi, MPFR_ZERO_KIND, 0, prec, sig);
		sig += limbs;
		v[i].pt = 1;
		v[i].und = 0;
		v[i].done = 0;
	}
	return v;
}

void ivc_init(IvCtx *c, mpfr_prec_t prec)
{
	memset(c, 0, sizeof *c);
	c->prec = prec;
	for (size_t i = 0; i < ARRAY_LEN(c->t); i++)
		mpfr_init2(c->t[i], prec);
	iv_init(&c->acc[0], prec);
	iv_init(&c->acc[1], prec);
	iv_init(&c->wide, 2 * prec);
}

void ivc_free(IvCtx *c)
{
	for (size_t i = 0; i < ARRAY_LEN(c->t); i++)
		mpfr_clear(c->t[i]);
	iv_clear(&c->acc[0]);
	iv_clear(&c->acc[1]);
	iv_clear(&c->wide);
	for (size_t i = 0; i < c->nbig; i++)
		mpfr_clear(c->big[i]);
	free(c->big);
	free(c->los);
	free(c->his);
	free(c->sortbuf);
	memset(c, 0, sizeof *c);
}

/* -------------------------------------------------------------- setters */

void iv_set_und(Iv *r)
{
	r->und = 1;
	r->pt = 0;
}

void iv_set_nan(Iv *r)
{
	mpfr_set_nan(r->lo);
	r->pt = 1;
	r->und = 0;
}

void iv_set_inf(Iv *r, int sign)
{
	mpfr_set_inf(r->lo, sign);
	r->pt = 1;
	r->und = 0;
}

void iv_set_zero(Iv *r, int sign)
{
	mpfr_set_zero(r->lo, sign < 0 ? -1 : 1);
	r->pt = 1;
	r->und = 0;
}

void iv_set_ui(Iv *r, unsigned long v)
{
	mpfr_set_ui(r->lo, v, RN);
	r->pt = 1;
	r->und = 0;
}

void iv_copy(Iv *r, const Iv *a)
{
	r->pt = a->pt;
	r->und = a->und;
	if (a->und)
		return;
	mpfr_set(r->lo, a->lo, RN);
	if (!a->pt)
		mpfr_set(r->hi, a->hi, RN);
}

/* Finishes a point operation rounded to nearest with ternary value t. */
static void fin(Iv *r, int t)
{
	r->und = 0;
	if (t == 0 || mpfr_nan_p(r->lo)) {
		r->pt = 1;
		return;
	}
	r->pt = 0;
	mpfr_set(r->hi, r->lo, RN);
	if (t > 0)
		mpfr_nextbelow(r->lo);
	else
		mpfr_nextabove(r->hi);
}

/* Finishes an interval computed with directed roundings. */
static void norm(Iv *r)
{
	r->und = 0;
	if (mpfr_nan_p(r->lo) || mpfr_nan_p(r->hi)) {
		iv_set_und(r);
		return;
	}
	r->pt = mpfr_equal_p(r->lo, r->hi) && mpfr_signbit(r->lo) == mpfr_signbit(r->hi);
}

void iv_fin(Iv *r, int t) { fin(r, t); }
void iv_norm(Iv *r) { norm(r); }

void iv_from_si(IvCtx *c, Iv *r, int64_t v)
{
	(void)c;
	fin(r, mpfr_set_sj(r->lo, (intmax_t)v, RN));
}

int iv_from_str(IvCtx *c, Iv *r, const char *s)
{
	(void)c;
	char *end;
	int t = mpfr_strtofr(r->lo, s, &end, 0, RN);
	if (end == s || *end)
		return -1;
	fin(r, t);
	return 0;
}

/* ------------------------------------------------------------- helpers */

int iv_lcmp(mpfr_srcptr x, mpfr_srcptr y)
{
	int k = mpfr_cmp(x, y);
	if (k == 0 && mpfr_zero_p(x))
		k = (int)!mpfr_signbit(x) - (int)!mpfr_signbit(y);
	return k;
}

static bool can0(const Iv *a)
{
	return mpfr_sgn(a->lo) <= 0 && mpfr_sgn(iv_hi(a)) >= 0;
}

static bool caninf(const Iv *a)
{
	return mpfr_inf_p(a->lo) || mpfr_inf_p(iv_hi(a));
}

static bool pinf(mpfr_srcptr x) { return mpfr_inf_p(x) && mpfr_sgn(x) > 0; }
static bool ninf(mpfr_srcptr x) { return mpfr_inf_p(x) && mpfr_sgn(x) < 0; }

/* Every value a admits is a zero (a zero point, or [-0, +0]). */
static bool zero_only(const Iv *a)
{
	return !a->und && mpfr_zero_p(a->lo) && mpfr_zero_p(iv_hi(a));
}

/* Every value a admits is one infinity. */
static bool inf_only(const Iv *a)
{
	return !a->und && mpfr_inf_p(a->lo) && mpfr_equal_p(a->lo, iv_hi(a));
}

/* a * b is NaN for every value the operands admit: a NaN, or an infinity times a zero
 * (then undecided operands elsewhere do not matter). */
static bool nan_product(const Iv *a, const Iv *b)
{
	return iv_isnan(a) || iv_isnan(b) || (zero_only(a) && inf_only(b)) ||
	       (inf_only(a) && zero_only(b));
}

/* A non-decreasing function of one argument applied to a. */
static void inc1(IvCtx *c, Iv *r, const Iv *a, Fn1 f)
{
	if (a->pt) {
		fin(r, f(r->lo, a->lo, RN));
		c->ops++;
		return;
	}
	f(r->lo, a->lo, RD);
	f(r->hi, a->hi, RU);
	c->ops += 2;
	norm(r);
}

/* A non-increasing one. */
static void dec1(IvCtx *c, Iv *r, const Iv *a, Fn1 f)
{
	if (a->pt) {
		fin(r, f(r->lo, a->lo, RN));
		c->ops++;
		return;
	}
	f(r->lo, a->hi, RD);
	f(r->hi, a->lo, RU);
	c->ops += 2;
	norm(r);
}

/* ------------------------------------------------------ one argument */

/* The functions are ops.def's (interp.h mp_op_fn); each is monotone (increasing, or
 * decreasing) on its domain, or handled by a method of its own below. */

/* sigmoid(x) = 1 / (1 + exp(-x)) rounded in direction d (RD or RU) by rounding each step
 * the way that moves the result in direction d. Returns 0 when every step was exact. */
static int sigmoid_dir(IvCtx *c, mpfr_ptr r, mpfr_srcptr x, mpfr_rnd_t d)
{
	mpfr_rnd_t inv = d == RD ? RU : RD;
	mpfr_ptr e = c->t[3];
	mpfr_neg(e, x, RN);
	int t = mpfr_exp(e, e, inv) != 0;
	t |= mpfr_add_ui(e, e, 1, inv) != 0;
	t |= mpfr_ui_div(r, 1, e, d) != 0;
	c->ops += 3;
	return t;
}

static void sigmoid(IvCtx *c, Iv *r, const Iv *a)
{
	if (a->pt) {
		if (sigmoid_dir(c, r->lo, a->lo, RD) == 0) {
			fin(r, 0);
			return;
		}
		sigmoid_dir(c, r->hi, a->lo, RU);
	} else {
		sigmoid_dir(c, r->lo, a->lo, RD);
		sigmoid_dir(c, r->hi, a->hi, RU);
	}
	norm(r);
}

/* A function whose domain is [lo, inf] (lo = 0 for log and sqrt, -1 for log1p): NaN below. */
static void domain(IvCtx *c, Iv *r, const Iv *a, long lo, Fn1 f, bool increasing)
{
	if (a->pt || mpfr_cmp_si(a->lo, lo) >= 0)
		(increasing ? inc1 : dec1)(c, r, a, f);
	else if (mpfr_cmp_si(a->hi, lo) < 0)
		iv_set_nan(r);
	else
		iv_set_und(r);
}

/* rsqrt (f: mp_rsqrt, rsqrt(+-0) = +-inf): decreasing on [+0, inf]. */
static void rsqrt(IvCtx *c, Iv *r, const Iv *a, Fn1 f)
{
	if (a->pt)
		inc1(c, r, a, f);
	else if (mpfr_sgn(a->lo) > 0 || (mpfr_zero_p(a->lo) && !mpfr_signbit(a->lo)))
		dec1(c, r, a, f);
	else if (mpfr_sgn(a->hi) < 0)
		iv_set_nan(r);
	else
		iv_set_und(r);   /* admits -0 (-> -inf) and positive values, or negatives */
}

static void absval(Iv *r, const Iv *a)
{
	if (a->pt) {
		mpfr_abs(r->lo, a->lo, RN);
		fin(r, 0);
	} else if (mpfr_sgn(a->lo) > 0 || (mpfr_zero_p(a->lo) && !mpfr_signbit(a->lo))) {
		iv_copy(r, a);
	} else if (mpfr_sgn(a->hi) < 0 || (mpfr_zero_p(a->hi) && mpfr_signbit(a->hi))) {
		mpfr_neg(r->lo, a->hi, RN);
		mpfr_neg(r->hi, a->lo, RN);
		norm(r);
	} else {
		mpfr_set_zero(r->lo, 1);
		if (mpfr_cmpabs(a->lo, a->hi) > 0)
			mpfr_neg(r->hi, a->lo, RN);
		else
			mpfr_set(r->hi, a->hi, RN);
		norm(r);
	}
}

static void neg(Iv *r, const Iv *a)
{
	mpfr_neg(r->lo, iv_hi(a), RN);
	if (!a->pt)
		mpfr_neg(r->hi, a->lo, RN);
	r->pt = a->pt;
	r->und = 0;
}

/* Sign of the derivative of sin (cos) or cos (-sin) at x, exactly: neither vanishes at a
 * nonzero dyadic x, so the nearest rounding has the true sign. */
static int dsign(IvCtx *c, mpfr_srcptr x, bool is_cos)
{
	c->ops++;
	if (is_cos) {
		mpfr_sin(c->t[1], x, RN);
		return -mpfr_sgn(c->t[1]);
	}
	mpfr_cos(c->t[1], x, RN);
	return mpfr_sgn(c->t[1]);
}

/* sin or cos of an interval: the ends' values, widened to +-1 when an extremum may lie
 * inside. An interval narrower than 3 < pi holds at most one critical point; the
 * derivative's signs at the ends tell whether it has one and which kind. */
static void trig(IvCtx *c, Iv *r, const Iv *a, bool is_cos)
{
	Fn1 f = mp_op_fn(is_cos ? OP_COS : OP_SIN)->f1;
	if (a->pt) {
		inc1(c, r, a, f);
		return;
	}
	if (caninf(a)) {
		iv_set_und(r);
		return;
	}
	mpfr_sub(c->t[0], a->hi, a->lo, RU);
	c->ops++;
	if (mpfr_cmp_ui(c->t[0], 3) >= 0) {
		mpfr_set_si(r->lo, -1, RN);
		mpfr_set_si(r->hi, 1, RN);
		norm(r);
		return;
	}
	f(r->lo, a->lo, RD);
	f(c->t[0], a->hi, RD);
	if (iv_lcmp(c->t[0], r->lo) < 0)
		mpfr_set(r->lo, c->t[0], RN);
	f(r->hi, a->lo, RU);
	f(c->t[0], a->hi, RU);
	if (iv_lcmp(c->t[0], r->hi) > 0)
		mpfr_set(r->hi, c->t[0], RN);
	c->ops += 4;
	int dl = dsign(c, a->lo, is_cos), dh = dsign(c, a->hi, is_cos);
	if (dl > 0 && dh < 0)
		mpfr_set_si(r->hi, 1, RN);
	else if (dl < 0 && dh > 0)
		mpfr_set_si(r->lo, -1, RN);
	norm(r);
}

static void cast(IvCtx *c, Iv *r, const Iv *a, Dtype f)
{
	mpf_round(r->lo, a->lo, f, RN);
	c->ops++;
	if (a->pt) {
		fin(r, 0);
		return;
	}
	mpf_round(r->hi, a->hi, f, RN);
	c->ops++;
	norm(r);
}

void iv_unary(IvCtx *c, Op op, Iv *r, const Iv *a)
{
	if (a->und) {
		iv_set_und(r);
		return;
	}
	Fn1 f = mp_op_fn(op)->f1;   /* ops.def's mpfr column */
	switch (op) {
	case OP_NEG: neg(r, a); return;
	case OP_ABS: absval(r, a); return;
	case OP_EXP: case OP_EXP2: case OP_EXPM1: case OP_TANH: case OP_ERF: case OP_FLOOR:
	case OP_CEIL:
		inc1(c, r, a, f);   /* increasing everywhere */
		return;
	case OP_LOG: case OP_LOG2: case OP_SQRT: domain(c, r, a, 0, f, true); return;
	case OP_LOG1P: domain(c, r, a, -1, f, true); return;
	case OP_RSQRT: rsqrt(c, r, a, f); return;
	case OP_SIGMOID: sigmoid(c, r, a); return;
	case OP_SIN: trig(c, r, a, false); return;
	case OP_COS: trig(c, r, a, true); return;
	case OP_CAST_F64: case OP_CAST_F32: case OP_CAST_F16: case OP_CAST_BF16:
		cast(c, r, a, op_cast_dtype(op));
		return;
	default:
		IR_ASSERT(!"iv_unary: not a real function of one argument");
	}
}

/* ------------------------------------------------------ two arguments */

static void add(IvCtx *c, Iv *r, const Iv *a, const Iv *b, bool sub)
{
	Fn2 f = mp_op_fn(sub ? OP_SUB : OP_ADD)->f2;
	if (a->pt && b->pt) {
		fin(r, f(r->lo, a->lo, b->lo, RN));
		c->ops++;
		return;
	}
	/* the ends of b that pair with a's low and high ends */
	mpfr_srcptr bl = sub ? iv_hi(b) : b->lo, bh = sub ? b->lo : iv_hi(b);
	bool nan = sub ? (pinf(iv_hi(a)) && pinf(iv_hi(b))) || (ninf(a->lo) && ninf(b->lo))
		       : (pinf(iv_hi(a)) && ninf(b->lo)) || (ninf(a->lo) && pinf(iv_hi(b)));
	if (nan) {
		iv_set_und(r);
		return;
	}
	/* an exact zero at the low end is reached only by the ends themselves, and then has
	 * the sign rounding to nearest gives (RD would make 1 + (-1) = -0) */
	if (f(r->lo, a->lo, bl, RD) == 0 && mpfr_zero_p(r->lo))
		f(r->lo, a->lo, bl, RN);
	f(r->hi, iv_hi(a), bh, RU);
	c->ops += 2;
	norm(r);
}

/* The lattice hull of f over the corners of a x b (f monotone in each argument on the
 * box): lo = min of the RD values, hi = max of the RU values. */
static void corners(IvCtx *c, Iv *r, const Iv *a, const Iv *b, Fn2 f)
{
	mpfr_srcptr A[2] = {a->lo, iv_hi(a)}, B[2] = {b->lo, iv_hi(b)};
	int na = a->pt ? 1 : 2, nb = b->pt ? 1 : 2;
	bool first = true;
	for (int i = 0; i < na; i++)
		for (int j = 0; j < nb; j++) {
			mpfr_ptr lo = first ? r->lo : c->t[0], hi = first ? r->hi : c->t[1];
			f(lo, A[i], B[j], RD);
			f(hi, A[i], B[j], RU);
			c->ops += 2;
			if (!first && (mpfr_nan_p(lo) || iv_lcmp(lo, r->lo) < 0))
				mpfr_set(r->lo, lo, RN);
			if (!first && (mpfr_nan_p(hi) || iv_lcmp(hi, r->hi) > 0))
				mpfr_set(r->hi, hi, RN);
			first = false;
		}
	norm(r);
}

/* s * v or v / s for a point s and an interval v: monotone in v, the direction given by
 * s's sign bit (a zero s orders -0 and +0 products like the values). */
static void scaled(IvCtx *c, Iv *r, const Iv *v, mpfr_srcptr s, bool div)
{
	bool up = !mpfr_signbit(s);
	mpfr_srcptr lo = up ? v->lo : v->hi, hi = up ? v->hi : v->lo;
	if (div) {
		mpfr_div(r->lo, lo, s, RD);
		mpfr_div(r->hi, hi, s, RU);
	} else {
		mpfr_mul(r->lo, lo, s, RD);
		mpfr_mul(r->hi, hi, s, RU);
	}
	c->ops += 2;
	norm(r);
}

static void mul(IvCtx *c, Iv *r, const Iv *a, const Iv *b)
{
	if (a->pt && b->pt) {
		fin(r, mpfr_mul(r->lo, a->lo, b->lo, RN));
		c->ops++;
	} else if (nan_product(a, b)) {
		iv_set_nan(r);   /* inf * [-0, +0] */
	} else if ((can0(a) && caninf(b)) || (caninf(a) && can0(b))) {
		iv_set_und(r);
	} else if (a->pt || b->pt) {
		scaled(c, r, a->pt ? b : a, a->pt ? a->lo : b->lo, false);
	} else {
		corners(c, r, a, b, mpfr_mul);
	}
}

static void divide(IvCtx *c, Iv *r, const Iv *a, const Iv *b)
{
	if (a->pt && b->pt) {
		fin(r, mpfr_div(r->lo, a->lo, b->lo, RN));
		c->ops++;
	} else if ((zero_only(a) && zero_only(b)) || (inf_only(a) && inf_only(b))) {
		iv_set_nan(r);   /* 0 / 0 or inf / inf for every admitted value */
	} else if ((can0(a) && can0(b)) || (caninf(a) && caninf(b))) {
		iv_set_und(r);
	} else if (b->pt) {
		scaled(c, r, a, b->lo, true);
	} else if (can0(b)) {
		iv_set_und(r);   /* unbounded, and the sign of the pole is unknown */
	} else {
		corners(c, r, a, b, mpfr_div);
	}
}

/* The number y is an odd integer (exactly, at any precision: y / 2 is exact). Uses t[0]. */
static bool odd_int(IvCtx *c, mpfr_srcptr y)
{
	if (!mpfr_integer_p(y))
		return false;
	mpfr_div_2ui(c->t[0], y, 1, RN);
	return !mpfr_integer_p(c->t[0]);
}

/* y (not undecided, not NaN) may be an odd integer. Uses t[0..2]. */
static bool can_odd(IvCtx *c, const Iv *y)
{
	if (y->pt)
		return odd_int(c, y->lo);
	if (!mpfr_number_p(y->lo) || !mpfr_number_p(y->hi))
		return true;   /* unbounded: holds odd integers */
	mpfr_ptr n = c->t[1], d = c->t[2];
	if (mpfr_rint_ceil(n, y->lo, RN) != 0)
		return true;   /* ceil(lo) not exact at this precision: cannot tell */
	if (mpfr_cmp(n, y->hi) > 0)
		return false;  /* no integer in y */
	if (odd_int(c, n))
		return true;
	mpfr_sub(d, y->hi, n, MPFR_RNDD);   /* >= 1 exactly when hi - n >= 1 */
	c->ops += 2;
	return mpfr_cmp_ui(d, 1) >= 0;
}

/* x^y for a point integer y and an interval x. */
static void powint(IvCtx *c, Iv *r, const Iv *x, const Iv *y)
{
	Fn2 pw = mp_op_fn(OP_POW)->f2;
	bool even = !odd_int(c, y->lo);
	bool neg_y = mpfr_sgn(y->lo) < 0;
	bool nonneg = mpfr_sgn(x->lo) >= 0, nonpos = mpfr_sgn(x->hi) <= 0;
	if (neg_y) {
		if (mpfr_sgn(x->hi) < 0)
			corners(c, r, x, y, pw);   /* monotone on the negative side */
		else
			iv_set_und(r);
		return;
	}
	if (nonneg || nonpos || !even) {
		corners(c, r, x, y, pw);
		return;
	}
	/* even power over an interval around zero */
	mpfr_set_zero(r->lo, 1);
	pw(r->hi, x->lo, y->lo, RU);
	pw(c->t[0], x->hi, y->lo, RU);
	c->ops += 2;
	if (mpfr_cmp(c->t[0], r->hi) > 0)
		mpfr_set(r->hi, c->t[0], RN);
	norm(r);
}

/* The (finite) interval y holds no integer. */
static bool noint(IvCtx *c, const Iv *y)
{
	mpfr_rint_ceil(c->t[0], y->lo, MPFR_RNDU);
	return mpfr_cmp(c->t[0], iv_hi(y)) > 0;
}

/* pow(x, y) for x in {-0, +0} (zero_only) or x = -inf (a point), and y of one strict sign:
 * IEEE 754's special cases depend only on the sign of y and on whether y is an odd integer.
 * With E the value for y not an odd integer and O the one for an odd integer (O = E for
 * x = +0; O = -E for -0 and -inf), the result is E, or the hull of O and E when y may be
 * odd. Returns false (r untouched) when y's sign is not decided. */
static bool pow_special(IvCtx *c, Iv *r, const Iv *x, const Iv *y)
{
	int sy = mpfr_sgn(y->lo) > 0 ? 1 : mpfr_sgn(iv_hi(y)) < 0 ? -1 : 0;
	if (!sy)
		return false;
	bool zero = mpfr_zero_p(x->lo);
	/* [-0, +0] admits -0, whose results (E and O) include +0's (E) */
	bool negx = mpfr_signbit(x->lo);
	bool big = zero ? sy < 0 : sy > 0;   /* |result| = inf */
	if (big)
		mpfr_set_inf(r->hi, 1);
	else
		mpfr_set_zero(r->hi, 1);
	if (negx && can_odd(c, y))
		mpfr_neg(r->lo, r->hi, RN);
	else
		mpfr_set(r->lo, r->hi, RN);
	norm(r);
	return true;
}

static void power(IvCtx *c, Iv *r, const Iv *x, const Iv *y)
{
	Fn2 pw = mp_op_fn(OP_POW)->f2;
	if ((y->pt && mpfr_zero_p(y->lo)) ||
	    (x->pt && !mpfr_nan_p(x->lo) && mpfr_cmp_ui(x->lo, 1) == 0)) {
		iv_set_ui(r, 1);   /* pow(x, +-0) = 1 and pow(1, y) = 1, even for NaN */
		return;
	}
	if (x->und || y->und) {
		iv_set_und(r);
	} else if (x->pt && y->pt) {
		fin(r, pw(r->lo, x->lo, y->lo, RN));
		c->ops++;
	} else if (iv_isnan(x)) {
		if (can0(y))
			iv_set_und(r);
		else
			iv_set_nan(r);
	} else if (iv_isnan(y)) {
		if (mpfr_cmp_ui(x->lo, 1) <= 0 && mpfr_cmp_ui(x->hi, 1) >= 0)
			iv_set_und(r);
		else
			iv_set_nan(r);
	} else if ((zero_only(x) || (x->pt && ninf(x->lo))) && pow_special(c, r, x, y)) {
		return;
	} else if (mpfr_sgn(x->lo) > 0 || (mpfr_zero_p(x->lo) && !mpfr_signbit(x->lo))) {
		/* on [+0, inf] pow is monotone in x for each y and in y for each x (the IEEE
		 * values at +0 and +inf are the limits), so the corners bound it */
		corners(c, r, x, y, pw);
	} else if (y->pt && mpfr_integer_p(y->lo) && !mpfr_inf_p(y->lo)) {
		powint(c, r, x, y);
	} else if (mpfr_number_p(x->lo) && mpfr_sgn(iv_hi(x)) < 0 && mpfr_number_p(y->lo) &&
		   mpfr_number_p(iv_hi(y)) && noint(c, y)) {
		iv_set_nan(r);   /* a finite negative base, no integer exponent: pow(-8, 1/3) */
	} else {
		iv_set_und(r);
	}
}

/* IEEE 754-2019 maximum / minimum: NaN if either is NaN, -0 < +0. */
static void maxmin(Iv *r, const Iv *a, const Iv *b, bool max)
{
	if (iv_isnan(a) || iv_isnan(b)) {
		iv_set_nan(r);
		return;
	}
	if (a->und || b->und) {
		iv_set_und(r);
		return;
	}
	int s = max ? 1 : -1;
	mpfr_set(r->lo, s * iv_lcmp(a->lo, b->lo) >= 0 ? a->lo : b->lo, RN);
	mpfr_set(r->hi, s * iv_lcmp(iv_hi(a), iv_hi(b)) >= 0 ? iv_hi(a) : iv_hi(b), RN);
	norm(r);
}

void iv_hull(Iv *r, const Iv *a, const Iv *b)
{
	if (a->und || b->und || iv_isnan(a) != iv_isnan(b)) {
		iv_set_und(r);
	} else if (iv_isnan(a)) {
		iv_set_nan(r);
	} else {
		mpfr_set(r->lo, iv_lcmp(a->lo, b->lo) <= 0 ? a->lo : b->lo, RN);
		mpfr_set(r->hi, iv_lcmp(iv_hi(a), iv_hi(b)) >= 0 ? iv_hi(a) : iv_hi(b), RN);
		norm(r);
	}
}

void iv_binary(IvCtx *c, Op op, Iv *r, const Iv *a, const Iv *b)
{
	switch (op) {
	case OP_POW: power(c, r, a, b); return;
	case OP_MAX: maxmin(r, a, b, true); return;
	case OP_MIN: maxmin(r, a, b, false); return;
	default: break;
	}
	if (iv_isnan(a) || iv_isnan(b)) {
		iv_set_nan(r);
		return;
	}
	if (a->und || b->und) {
		iv_set_und(r);
		return;
	}
	switch (op) {
	case OP_ADD: add(c, r, a, b, false); return;
	case OP_SUB: add(c, r, a, b, true); return;
	case OP_MUL: mul(c, r, a, b); return;
	case OP_DIV: divide(c, r, a, b); return;
	default: IR_ASSERT(!"iv_binary: not a real function of two arguments");
	}
}

static void square(IvCtx *c, Iv *r, const Iv *a)
{
	if (a->pt || mpfr_sgn(a->lo) >= 0 || mpfr_sgn(a->hi) <= 0) {
		mul(c, r, a, a);
		return;
	}
	mpfr_set_zero(r->lo, 1);   /* x * x is +0 for either zero */
	mpfr_sqr(r->hi, a->lo, RU);
	mpfr_sqr(c->t[0], a->hi, RU);
	c->ops += 2;
	if (mpfr_cmp(c->t[0], r->hi) > 0)
		mpfr_set(r->hi, c->t[0], RN);
	norm(r);
}

void iv_self(IvCtx *c, Op op, Iv *r, const Iv *a)
{
	if (a->und || iv_isnan(a)) {
		iv_binary(c, op, r, a, a);
		return;
	}
	switch (op) {
	case OP_SUB:   /* x - x = +0 for finite x, NaN for infinite x */
		if (!caninf(a))
			iv_set_zero(r, 1);
		else if (inf_only(a))
			iv_set_nan(r);
		else
			iv_set_und(r);
		return;
	case OP_DIV:
		if (!caninf(a) && !can0(a))
			iv_set_ui(r, 1);
		else if (a->pt || zero_only(a))
			iv_set_nan(r);
		else
			iv_set_und(r);
		return;
	case OP_MUL:
		square(c, r, a);
		return;
	default:
		iv_binary(c, op, r, a, a);
	}
}

void iv_fma(IvCtx *c, Iv *r, const Iv *a, const Iv *b, const Iv *d)
{
	/* NaN whatever d is (even undecided): a definite NaN operand or product (inf * 0) */
	if (nan_product(a, b) || iv_isnan(d)) {
		iv_set_nan(r);
		return;
	}
	if (a->und || b->und || d->und) {
		iv_set_und(r);
		return;
	}
	if (a->pt && b->pt && d->pt) {
		fin(r, mp_op_fn(OP_FMA)->f3(r->lo, a->lo, b->lo, d->lo, RN));
		c->ops++;
		return;
	}
	mul(c, &c->wide, a, b);   /* exact for points: 2 * prec bits */
	if (c->wide.und)
		iv_set_und(r);
	else if (iv_isnan(&c->wide))
		iv_set_nan(r);   /* not reached (nan_product above); add() would give und */
	else
		add(c, r, &c->wide, d, false);
}

/* --------------------------------------------------------- comparisons */

static int less(const Iv *a, const Iv *b, bool orequal)
{
	int k = mpfr_cmp(iv_hi(a), b->lo);
	if (k < 0 || (orequal && k == 0))
		return IV_TRUE;
	k = mpfr_cmp(a->lo, iv_hi(b));
	if (k > 0 || (!orequal && k == 0))
		return IV_FALSE;
	return IV_UND;
}

int iv_compare(Op op, const Iv *a, const Iv *b)
{
	if (a->und || b->und)
		return IV_UND;
	if (iv_isnan(a) || iv_isnan(b))
		return op == OP_NE;
	int eq;
	switch (op) {
	case OP_LT: return less(a, b, false);
	case OP_LE: return less(a, b, true);
	case OP_GT: return less(b, a, false);
	case OP_GE: return less(b, a, true);
	case OP_EQ: case OP_NE:
		if (a->pt && b->pt)
			eq = mpfr_equal_p(a->lo, b->lo);
		else if (mpfr_cmp(iv_hi(a), b->lo) < 0 || mpfr_cmp(iv_hi(b), a->lo) < 0)
			eq = 0;
		else
			return IV_UND;
		return op == OP_EQ ? eq : !eq;
	default:
		IR_ASSERT(!"iv_compare: not a comparison");
	}
}

/* ---------------------------------------------------------- rounding */

bool iv_round(IvCtx *c, const Iv *a, Dtype f, mpfr_ptr out)
{
	if (a->und)
		return false;
	mpf_round(out, a->lo, f, RN);
	if (a->pt)
		return true;
	mpf_round(c->t[0], a->hi, f, RN);
	if (mpfr_nan_p(out) || mpfr_nan_p(c->t[0]))
		return mpfr_nan_p(out) && mpfr_nan_p(c->t[0]);
	return mpfr_equal_p(out, c->t[0]) && mpfr_signbit(out) == mpfr_signbit(c->t[0]);
}
