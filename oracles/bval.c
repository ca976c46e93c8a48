/* oracles/bval.c: the error rules of single operations for the budget analysis (bval.h
 * defines the values).
 *
 * Each rule bounds |computed - exact| of its result from its operands' enclosures and
 * bounds, as the sum of
 * - propagation: how far the exact operation can move between the exact operands and any
 *   computed ones within their bounds. Never first order: + and - add the bounds; * adds
 *   |a|eb + |b|ea + ea·eb; / takes (ea + |a/b|·eb) / min|computed b| (no bound when the
 *   computed divisor's range holds 0); a monotone function f is evaluated at the ends:
 *   max(f(xh + e) - f(xl), f(xh) - f(xl - e)) (mirrored when decreasing), which also
 *   covers the casts (rounding is monotone), floor and ceil; sin and cos are 1-Lipschitz;
 *   pow is monotone in each argument for a positive base, so its box's corners bound it.
 * - the local error of the operation in its format f: at most half an ulp of f in the
 *   binade of the largest magnitude the computed result can have (the standard model with
 *   underflow: half the smallest subnormal below the normal range; no bound where the
 *   result may overflow). When both operands are exact and the exact result is a double,
 *   a correctly rounded operation's error is computed exactly instead. A backend's
 *   allowance (allowances.def) replaces the half ulp for functions it does not round
 *   correctly.
 * - flushed subnormals, on a backend that may flush the format's subnormals to zero
 *   (BvCtx.ftz, budget.c's table): every operand of an operation first (bv_flush), so the
 *   propagation carries a flushed operand (a subnormal times a large value), then the
 *   result: where the computed value may be a nonzero magnitude below the smallest normal
 *   t, a zero may stand in its place, which errs by |exact| itself; the bound becomes
 *   max(e, the largest |exact| within t + e of zero) (ftz_reach), nothing where the
 *   computed range stays clear of (-t, t). A divisor or a log argument that may be
 *   flushed then holds 0 in its computed range: no bound, as for any such range.
 * - definite infinities (bval.h Bv.inf), on a backend whose facts keep infinities
 *   (BvCtx.inf_claims): an input or literal infinity, and an overflow that every allowed
 *   computation makes (the computed value before rounding beyond the format's overflow
 *   threshold, rounded to nearest: BvCtx.rn; an allowance's function is never taken to
 *   overflow certainly), is followed through + - * / fma, max/min, negation, abs, floor,
 *   ceil, the casts, comparisons and selections as IEEE 754 computes them, and through
 *   the functions of BvCtx.fn_inf as C Annex F does: a finite result (1/inf, exp(-inf),
 *   min(inf, x)) is bounded again, its bound the distance between the kernel's value and
 *   the exact enclosure; an infinite one stays definite; one that may be NaN (inf - inf,
 *   inf * a range holding 0, inf / inf) or whose operand is unbounded is unbounded.
 * Enclosures of exact values use directed rounding: TwoSum and fma residuals for + - * /,
 * MPFR at 53 bits with RNDD/RNDU for the other functions (the caller sets MPFR's widest
 * exponent range).
 */
#include <float.h>
#include <math.h>
#include <string.h>
#include "bval.h"

#define BIG 0x1p-900   /* below this, residuals of * and / may underflow: widen instead */

void bv_init(BvCtx *c, int be)
{
	c->be = be;
	c->nan_claims = c->inf_claims = false;
	c->fn_inf = 0;
	memset(c->rn, 0, sizeof c->rn);
	bv_set_ftz(c, 0);
	mpfr_inits2(53, c->x, c->y, c->z, (mpfr_ptr)0);
}

void bv_free(BvCtx *c)
{
	mpfr_clears(c->x, c->y, c->z, (mpfr_ptr)0);
}

/* ------------------------------------------------------------ formats */

static double min_sub(const DtypeInfo *fi)
{
	return ldexp(1.0, (int)fi->emin - 1);
}

static double min_norm(const DtypeInfo *fi)
{
	return ldexp(1.0, (int)fi->emin + fi->prec - 2);
}

/* Magnitudes at and above this round to infinity (maxfinite + half its ulp). */
static double ovf(const DtypeInfo *fi)
{
	return fi->maxfinite + ldexp(1.0, (int)fi->emax - 1 - fi->prec);
}

double bv_half_ulp(Dtype f, double m)
{
	const DtypeInfo *fi = dt_info(f);
	if (!(m < ovf(fi)))
		return INFINITY;
	if (m < min_norm(fi)) {
		double h = min_sub(fi) / 2;
		return h > 0 ? h : min_sub(fi);   /* f64: 2^-1075 is not a double */
	}
	/* f64's lowest normal binade: 2^-1075 is not a double either (ldexp gives 0) */
	double h = ldexp(1.0, ilogb(m) - fi->prec);
	return h > 0 ? h : min_sub(fi);
}

double bv_fmt_round(Dtype f, double x)
{
	if (f == DT_F64 || !isfinite(x) || x == 0)
		return x;
	const DtypeInfo *fi = dt_info(f);
	double ax = fabs(x);
	double q = ax < min_norm(fi) ? min_sub(fi) : ldexp(1.0, ilogb(ax) - fi->prec + 1);
	double r = q * nearbyint(x / q);   /* x / q is exact; nearbyint ties to even */
	return fabs(r) > fi->maxfinite ? copysign(INFINITY, x) : r;
}

bool bv_within(Dtype a, Dtype b)
{
	if (a == b)
		return true;
	if (a < 0 || b < 0 || a == DT_I32 || b == DT_I32)
		return false;
	const DtypeInfo *x = dt_info(a), *y = dt_info(b);
	return y->has_inf && x->prec <= y->prec && x->emin >= y->emin && x->emax <= y->emax;
}

/* The exact rounding error of z (a double) into f: |R(z) - z|, INFINITY on overflow. */
static double exact_local(Dtype f, double z)
{
	double r = bv_fmt_round(f, z);
	return isinf(r) ? INFINITY : fabs(r - z);
}

/* ------------------------------------------------------------ directed arithmetic */

static double nup(double x)
{
	return nextafter(x, INFINITY);
}

static double ndn(double x)
{
	return nextafter(x, -INFINITY);
}

/* The rounding error t of s = fl(a + b), s + t = a + b exactly (TwoSum). */
static double two_sum_err(double a, double b, double s)
{
	double bb = s - a;
	return (a - (s - bb)) + (b - bb);
}

/* r, the result of a directed operation on finite operands x and y, rounded to nearest:
 * an overflow to the infinity the rounding direction leads away from becomes the largest
 * finite double (a real number beyond it is not that infinity: the enclosure stays sound). */
static double no_ovf(double r, double x, double y, bool up)
{
	if (isinf(r) && isfinite(x) && isfinite(y) && (r > 0) != up)
		return up ? -DBL_MAX : DBL_MAX;
	return r;
}

double bv_add_dn(double a, double b)
{
	double s = a + b;
	return isfinite(s) ? (two_sum_err(a, b, s) < 0 ? ndn(s) : s) : no_ovf(s, a, b, false);
}

double bv_add_up(double a, double b)
{
	double s = a + b;
	return isfinite(s) ? (two_sum_err(a, b, s) > 0 ? nup(s) : s) : no_ovf(s, a, b, true);
}

static double mul_dir(double a, double b, bool up)
{
	double p = a * b;
	if (!isfinite(p))
		return no_ovf(p, a, b, up);
	if (a == 0 || b == 0)
		return p;
	if (fabs(p) < BIG)   /* the residual may underflow (p == 0 included): widen */
		return up ? nup(p) : ndn(p);
	double t = fma(a, b, -p);
	return up ? (t > 0 ? nup(p) : p) : (t < 0 ? ndn(p) : p);
}

static double div_dir(double a, double b, bool up)
{
	double q = a / b;
	if (!isfinite(q))
		return b != 0 ? no_ovf(q, a, b, up) : q;
	if ((fabs(q) < BIG || fabs(a) < BIG) && a != 0)
		return up ? nup(q) : ndn(q);
	double r = fma(-q, b, a);   /* a - q*b exactly: the sign of a/b - q is r's times b's */
	double s = b > 0 ? r : -r;
	return up ? (s > 0 ? nup(q) : q) : (s < 0 ? ndn(q) : q);
}

/* Low and high ends of {a*b or a/b : a in [al, ah], b in [bl, bh]}. */
static void corners(bool div, double al, double ah, double bl, double bh, double *lo, double *hi)
{
	double x[2] = {al, ah}, y[2] = {bl, bh};
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			double l = div ? div_dir(x[i], y[j], false) : mul_dir(x[i], y[j], false);
			double h = div ? div_dir(x[i], y[j], true) : mul_dir(x[i], y[j], true);
			*lo = fmin(*lo, l);
			*hi = fmax(*hi, h);
		}
}

/* A function of ops.def at x rounded down or up to a double (MPFR at 53 bits): the MPFR
 * function of ops.def's mpfr column (interp.h mp_op_fn), but for sigmoid, floor, ceil and
 * casts. (rsqrt's: x > 0 here, in_domain.) */
static double fn(BvCtx *c, Op op, double x, bool up)
{
	mpfr_rnd_t r = up ? MPFR_RNDU : MPFR_RNDD, rr = up ? MPFR_RNDD : MPFR_RNDU;
	mpfr_set_d(c->x, x, MPFR_RNDN);
	switch (op) {
	case OP_SIGMOID:   /* 1 / (1 + exp(-x)): the denominator rounded the other way */
		mpfr_neg(c->x, c->x, MPFR_RNDN);
		mpfr_exp(c->y, c->x, rr);
		mpfr_add_ui(c->y, c->y, 1, rr);
		mpfr_ui_div(c->y, 1, c->y, r);
		break;
	case OP_FLOOR: return floor(x);   /* exact in double */
	case OP_CEIL: return ceil(x);
	case OP_CAST_F64: case OP_CAST_F32: case OP_CAST_F16: case OP_CAST_BF16:
		return bv_fmt_round(op_cast_dtype(op), x);
	default: {
		const MpOpFn *m = mp_op_fn(op);
		IR_ASSERT(op_info(op)->arity == 1 && m->f1 != NULL);
		m->f1(c->y, c->x, r);
	}
	}
	return mpfr_get_d(c->y, r);
}

static double pow_dir(BvCtx *c, double x, double y, bool up)
{
	mpfr_set_d(c->x, x, MPFR_RNDN);
	mpfr_set_d(c->z, y, MPFR_RNDN);
	mp_op_fn(OP_POW)->f2(c->y, c->x, c->z, up ? MPFR_RNDU : MPFR_RNDD);
	return mpfr_get_d(c->y, up ? MPFR_RNDU : MPFR_RNDD);
}

/* ------------------------------------------------------------ values */

Bv bv_unbounded(bool tie)
{
	return (Bv){-INFINITY, INFINITY, INFINITY, DT_NONE, tie, false, 0};
}

Bv bv_nan(bool tie)
{
	Bv r = bv_unbounded(tie);
	r.nan = true;
	return r;
}

Bv bv_inf(int sign, double lo, double hi, bool tie)
{
	return (Bv){lo, hi, INFINITY, DT_NONE, tie, false, (int8_t)(sign > 0 ? 1 : -1)};
}

Bv bv_exact(double x, Dtype f)
{
	if (isnan(x))
		return bv_nan(false);
	if (!isfinite(x))
		return bv_inf(x > 0 ? 1 : -1, x, x, false);
	return (Bv){x, x, 0, (int8_t)f, false, false, 0};
}

static bool point(const Bv *a)
{
	return a->e == 0 && a->lo == a->hi;
}

static double mag(const Bv *a)
{
	return fmax(fabs(a->lo), fabs(a->hi));
}

/* Finishes a rule: its bound e (inflated for the bound's own roundings). */
static Bv fin(Bv r, double e)
{
	r.e = e * INFL;
	return bv_bounded(&r) ? r : bv_unbounded(r.tie);
}

/* ------------------------------------------------------------ definite infinities */

/* Whether the infinity rules know a: bounded or a definite infinity. */
static bool known(const Bv *a)
{
	return a->inf || bv_bounded(a);
}

/* The exact value is that infinity (not a finite value whose computation overflowed). */
static bool exact_inf(const Bv *a)
{
	return a->inf && isinf(a->lo) && a->lo == a->hi;
}

/* The range [*cl, *ch] of a's computed values (a known). */
static void computed(const Bv *a, double *cl, double *ch)
{
	if (a->inf) {
		*cl = *ch = a->inf > 0 ? INFINITY : -INFINITY;
		return;
	}
	*cl = bv_add_dn(a->lo, -a->e);
	*ch = bv_add_up(a->hi, a->e);
}

/* A value whose exact value lies in [xl, xh] and whose computed value in [kl, kh] (both
 * finite, else unbounded); sign_unknown: a computed zero's sign may differ from the
 * exact one's (the least nonzero bound, as bv_budget explains). */
static Bv between(double xl, double xh, double kl, double kh, bool tie, bool sign_unknown)
{
	Bv r = {xl, xh, 0, DT_NONE, tie, false, 0};
	double e = fmax(fmax(bv_add_up(kh, -xl), bv_add_up(xh, -kl)), 0);
	if (sign_unknown)
		e = fmax(e, 0x1p-1074);
	return fin(r, e);
}

/* Whether op rounds to nearest even in format f on this backend (BvCtx.rn). */
static bool rn(const BvCtx *c, Op op, Dtype f)
{
	return f >= 0 && f < DT__COUNT && (c->rn[f] & BE_OP(op));
}

/* The cast op into format f (conversions into f round as it does). */
static Op cast_into(Dtype f)
{
	for (int op = 0; op < OP__COUNT; op++)
		if (op_cast_dtype((Op)op) == f)
			return (Op)op;
	return OP__COUNT;
}

/* The result of op in format f whose computed value before rounding lies within prop of
 * r's enclosure, and which may overflow: a definite infinity where every such value rounds
 * to the same one (at or beyond the format's overflow threshold, rounded to nearest), else
 * unbounded (a value near the threshold, a rounding mode not known, no claims). */
static Bv overflow(const BvCtx *c, const Bv *r, double prop, Op op, Dtype f)
{
	if (c->inf_claims && op != OP__COUNT && rn(c, op, f) && isfinite(prop)) {
		double m = ovf(dt_info(f));
		if (bv_add_dn(r->lo, -prop) >= m)
			return bv_inf(1, r->lo, r->hi, r->tie);
		if (bv_add_up(r->hi, prop) <= -m)
			return bv_inf(-1, r->lo, r->hi, r->tie);
	}
	return bv_unbounded(r->tie);
}

/* ------------------------------------------------------------ flushed subnormals */

void bv_set_ftz(BvCtx *c, uint32_t formats)
{
	for (int f = 0; f < DT__COUNT; f++) {
		Dtype w = f == DT_I32 ? DT_I32 : al_via(c->be, (Dtype)f);
		c->ftz[f] = w != DT_I32 && (formats >> w & 1) ? min_norm(dt_info(w)) : 0;
	}
}

/* The smallest normal magnitude of the format f is computed in (al_via: f32 for f16 and
 * bf16) when the backend may flush that format's subnormals, else 0. */
static double ftz_min(const BvCtx *c, Dtype f)
{
	return f >= 0 && f < DT__COUNT ? c->ftz[f] : 0;
}

/* The largest |x| over exact values x in [lo, hi] whose computed value (within e of x) may
 * be a nonzero magnitude below t, or 0 where none can: a zero in place of such a computed
 * value errs by |x|. */
static double ftz_reach(double lo, double hi, double e, double t)
{
	double r = bv_add_up(t, e);
	if (lo >= r || hi <= -r)
		return 0;
	return fmax(fabs(fmax(lo, -r)), fabs(fmin(hi, r)));
}

Bv bv_flush(const BvCtx *c, Bv a, Dtype f)
{
	double t = ftz_min(c, f);
	if (t > 0 && bv_bounded(&a))
		a.e = fmax(a.e, ftz_reach(a.lo, a.hi, a.e, t));
	return a;
}

double bv_ftz_slack(const BvCtx *c, const Bv *a, Dtype f)
{
	double t = ftz_min(c, f);
	if (t == 0 || !bv_bounded(a))
		return 0;
	double cl = bv_add_dn(a->lo, -a->e), ch = bv_add_up(a->hi, a->e);
	if (cl >= t || ch <= -t || (cl == 0 && ch == 0))
		return 0;
	return fmin(t, fmax(fabs(cl), fabs(ch)));
}

/* fin for a result computed in format f, which the backend may flush. */
static Bv fin_f(const BvCtx *c, Bv r, double e, Dtype f)
{
	double t = ftz_min(c, f);
	if (t > 0 && e <= 1.7976931348623157e308)
		e = fmax(e, ftz_reach(r.lo, r.hi, e, t));
	return fin(r, e);
}

/* The local error of op in format f for arguments in [xlo, xhi] (DIV: the divisor's) and
 * a result of magnitude <= ymax, before the result is rounded: the backend's allowance, or
 * half an ulp where the operation rounds correctly. */
static double local(BvCtx *c, Op op, Dtype f, double xlo, double xhi, double ymax)
{
	double cr = bv_half_ulp(f, ymax);
	if (c->be == 0 || isinf(cr))
		return cr;
	bool found;
	double b = al_local(c->be, op, f, xlo, xhi, ymax, &found);
	if (found)
		return b;
	switch (op) {
	case OP_ADD: case OP_SUB: case OP_MUL: return cr;
	default: return INFINITY;   /* the backend promises nothing known */
	}
}

Bv bv_round(BvCtx *c, Bv a, Dtype f)
{
	/* an infinity, NaN or unbounded value rounds to itself */
	if (!bv_bounded(&a) || (a.fmt != DT_NONE && bv_within((Dtype)a.fmt, f)))
		return a;
	double loc = bv_half_ulp(f, mag(&a) + a.e);
	if (isinf(loc))
		return overflow(c, &a, a.e, cast_into(f), f);
	if (a.e == 0) {
		/* computed = exact, so the result is R(exact): when both ends round alike, that
		 * is the value, and its error is known to the enclosure's width */
		double rl = bv_fmt_round(f, a.lo), rh = bv_fmt_round(f, a.hi);
		if (rl == rh && isfinite(rl))
			loc = fmax(fabs(rl - a.lo), fabs(rh - a.hi)) * INFL;
	}
	double e = a.e;
	a.fmt = (int8_t)f;
	return fin(a, e + loc);
}

/* a + b or a - b where one is a definite infinity: that infinity, or NaN from opposite
 * ones (certainly NaN only when both exact values are those infinities too). */
static Bv inf_add(BvCtx *c, const Bv *a0, const Bv *b0, Dtype f, bool sub, bool tie)
{
	if (!known(a0) || !known(b0))
		return bv_unbounded(tie);
	Bv a = bv_flush(c, *a0, f), b = bv_flush(c, *b0, f);
	int sb = sub ? -b.inf : b.inf;
	if (a.inf && sb && a.inf != sb)
		return exact_inf(&a) && exact_inf(&b) ? bv_nan(tie) : bv_unbounded(tie);
	double bl = sub ? -b.hi : b.lo, bh = sub ? -b.lo : b.hi;
	return bv_inf(a.inf ? a.inf : sb, bv_add_dn(a.lo, bl), bv_add_up(a.hi, bh), tie);
}

Bv bv_add(BvCtx *c, const Bv *a0, const Bv *b0, Dtype f, bool sub)
{
	bool tie = a0->tie || b0->tie;
	if (a0->nan || b0->nan)
		return bv_nan(tie);
	if (a0->inf || b0->inf)
		return inf_add(c, a0, b0, f, sub, tie);
	if (!bv_bounded(a0) || !bv_bounded(b0))
		return bv_unbounded(tie);
	Bv fa = bv_flush(c, *a0, f), fb = bv_flush(c, *b0, f);
	const Bv *a = &fa, *b = &fb;
	double bl = sub ? -b->hi : b->lo, bh = sub ? -b->lo : b->hi;
	Bv r = {bv_add_dn(a->lo, bl), bv_add_up(a->hi, bh), 0, (int8_t)f, tie, false, 0};
	double prop = a->e + b->e, loc;
	if (point(a) && point(b) && r.lo == r.hi)
		loc = exact_local(f, r.lo);
	else
		loc = local(c, sub ? OP_SUB : OP_ADD, f, 0, 0, mag(&r) + prop);
	if (isinf(loc))
		return overflow(c, &r, prop, sub ? OP_SUB : OP_ADD, f);
	return fin_f(c, r, prop + loc, f);
}

/* a * b where one is a definite infinity: an infinity, unless a factor's computed range
 * holds 0 (inf * 0 is NaN: unbounded). */
static Bv inf_mul(BvCtx *c, const Bv *a0, const Bv *b0, Dtype f, bool tie)
{
	if (!known(a0) || !known(b0))
		return bv_unbounded(tie);
	Bv a = bv_flush(c, *a0, f), b = bv_flush(c, *b0, f);
	double al, ah, bl, bh, lo, hi;
	computed(&a, &al, &ah);
	computed(&b, &bl, &bh);
	if ((al <= 0 && ah >= 0) || (bl <= 0 && bh >= 0))
		return bv_unbounded(tie);
	corners(false, a.lo, a.hi, b.lo, b.hi, &lo, &hi);
	return bv_inf((al > 0) == (bl > 0) ? 1 : -1, lo, hi, tie);
}

Bv bv_mul(BvCtx *c, const Bv *a0, const Bv *b0, Dtype f)
{
	bool tie = a0->tie || b0->tie;
	if (a0->nan || b0->nan)
		return bv_nan(tie);
	if (a0->inf || b0->inf)
		return inf_mul(c, a0, b0, f, tie);
	if (!bv_bounded(a0) || !bv_bounded(b0))
		return bv_unbounded(tie);
	Bv fa = bv_flush(c, *a0, f), fb = bv_flush(c, *b0, f);
	const Bv *a = &fa, *b = &fb;
	Bv r = {0, 0, 0, (int8_t)f, tie, false, 0};
	corners(false, a->lo, a->hi, b->lo, b->hi, &r.lo, &r.hi);
	double prop = mag(a) * b->e + mag(b) * a->e + a->e * b->e, loc;
	if (point(a) && point(b) && r.lo == r.hi)
		loc = exact_local(f, r.lo);
	else
		loc = local(c, OP_MUL, f, 0, 0, mag(&r) + prop);
	if (isinf(loc))
		return overflow(c, &r, prop, OP_MUL, f);
	return fin_f(c, r, prop + loc, f);
}

/* a / b where one is a definite infinity: finite / inf is a zero (its sign known where
 * the dividend's computed sign is), inf / finite an infinity unless the divisor's computed
 * range holds 0, inf / inf NaN. */
static Bv inf_div(BvCtx *c, const Bv *a0, const Bv *b0, Dtype f, bool tie)
{
	if (!known(a0) || !known(b0))
		return bv_unbounded(tie);
	Bv a = bv_flush(c, *a0, f), b = bv_flush(c, *b0, f);
	double al, ah, bl, bh, lo = 0, hi = 0;
	computed(&a, &al, &ah);
	computed(&b, &bl, &bh);
	if (a.inf && b.inf)
		return exact_inf(&a) && exact_inf(&b) ? bv_nan(tie) : bv_unbounded(tie);
	if (b.inf) {
		/* an exact infinite divisor makes the exact quotient exactly a zero */
		if (!exact_inf(&b))
			corners(true, a.lo, a.hi, b.lo, b.hi, &lo, &hi);
		Bv r = between(lo, hi, 0, 0, tie, !point(&a) && al <= 0 && ah >= 0);
		r.fmt = (int8_t)f;
		return r;
	}
	if (bl <= 0 && bh >= 0)
		return bv_unbounded(tie);
	corners(true, a.lo, a.hi, b.lo, b.hi, &lo, &hi);
	return bv_inf((a.inf > 0) == (bl > 0) ? 1 : -1, lo, hi, tie);
}

Bv bv_div(BvCtx *c, const Bv *a0, const Bv *b0, Dtype f)
{
	bool tie = a0->tie || b0->tie;
	if (a0->nan || b0->nan)
		return bv_nan(tie);
	if (a0->inf || b0->inf)
		return inf_div(c, a0, b0, f, tie);
	if (!bv_bounded(a0) || !bv_bounded(b0))
		return bv_unbounded(tie);
	Bv fa = bv_flush(c, *a0, f), fb = bv_flush(c, *b0, f);
	const Bv *a = &fa, *b = &fb;
	double bl = bv_add_dn(b->lo, -b->e), bh = bv_add_up(b->hi, b->e);
	if (bl <= 0 && bh >= 0)
		return bv_unbounded(tie);
	Bv r = {0, 0, 0, (int8_t)f, tie, false, 0};
	corners(true, a->lo, a->hi, b->lo, b->hi, &r.lo, &r.hi);
	double bmin = fmin(fabs(bl), fabs(bh));
	double prop = a->e == 0 && b->e == 0 ? 0 : (a->e + mag(&r) * b->e) / bmin, loc;
	if (point(a) && point(b) && r.lo == r.hi && al_is_cr(c->be, OP_DIV, f))
		loc = exact_local(f, r.lo);
	else
		loc = local(c, OP_DIV, f, bl, bh, mag(&r) + prop);
	if (isinf(loc))
		return overflow(c, &r, prop, OP_DIV, f);
	return fin_f(c, r, prop + loc, f);
}

/* fma with a definite infinity: the exact product (inf_mul's rule, or a finite one), then
 * inf_add's; the single rounding does not change an infinity. */
static Bv inf_fma(BvCtx *c, const Bv *a0, const Bv *b0, const Bv *d0, Dtype f, bool tie)
{
	if (!known(a0) || !known(b0) || !known(d0))
		return bv_unbounded(tie);
	Bv p;
	if (a0->inf || b0->inf) {
		p = inf_mul(c, a0, b0, f, tie);
	} else {
		Bv a = bv_flush(c, *a0, f), b = bv_flush(c, *b0, f);
		p = (Bv){0, 0, 0, DT_NONE, tie, false, 0};
		corners(false, a.lo, a.hi, b.lo, b.hi, &p.lo, &p.hi);
		p = fin(p, mag(&a) * b.e + mag(&b) * a.e + a.e * b.e);
	}
	if (!known(&p))
		return bv_unbounded(tie);
	return inf_add(c, &p, d0, f, false, tie);
}

Bv bv_fma(BvCtx *c, const Bv *a0, const Bv *b0, const Bv *d0, Dtype f)
{
	bool tie = a0->tie || b0->tie || d0->tie;
	if (a0->nan || b0->nan || d0->nan)
		return bv_nan(tie);
	if (a0->inf || b0->inf || d0->inf)
		return inf_fma(c, a0, b0, d0, f, tie);
	if (!bv_bounded(a0) || !bv_bounded(b0) || !bv_bounded(d0))
		return bv_unbounded(tie);
	Bv fa = bv_flush(c, *a0, f), fb = bv_flush(c, *b0, f), fd = bv_flush(c, *d0, f);
	const Bv *a = &fa, *b = &fb, *d = &fd;
	double pl, ph;
	corners(false, a->lo, a->hi, b->lo, b->hi, &pl, &ph);
	Bv r = {bv_add_dn(pl, d->lo), bv_add_up(ph, d->hi), 0, (int8_t)f, tie, false, 0};
	double prop = mag(a) * b->e + mag(b) * a->e + a->e * b->e + d->e, loc;
	if (point(a) && point(b) && point(d) && pl == ph && r.lo == r.hi &&
	    al_is_cr(c->be, OP_FMA, f))
		loc = exact_local(f, r.lo);
	else
		loc = local(c, OP_FMA, f, 0, 0, mag(&r) + prop);
	if (isinf(loc))
		return overflow(c, &r, prop, OP_FMA, f);
	return fin_f(c, r, prop + loc, f);
}

Bv bv_pow(BvCtx *c, const Bv *a0, const Bv *b0, Dtype f)
{
	bool tie = a0->tie || b0->tie;
	if (!bv_bounded(a0) || !bv_bounded(b0))
		return bv_unbounded(tie);
	Bv fa = bv_flush(c, *a0, f), fb = bv_flush(c, *b0, f);
	const Bv *a = &fa, *b = &fb;
	double al = bv_add_dn(a->lo, -a->e), ah = bv_add_up(a->hi, a->e);
	double bl = bv_add_dn(b->lo, -b->e), bh = bv_add_up(b->hi, b->e);
	Dtype w = al_via(c->be, f);
	if (al_inherited(c->be, OP_POW, w)) {
		/* pow inherited from exp2(y * log2(x)) (Vulkan, WGSL): the formula's bound under
		 * the rows of log2, * and exp2, computed in w and rounded into f; the backend
		 * takes |x|, so a base that may be negative has no bound */
		if (!(al > 0))
			return bv_unbounded(tie);
		Bv l = bv_unary(c, OP_LOG2, a, w);
		Bv t = bv_mul(c, b, &l, w);
		Bv e = bv_unary(c, OP_EXP2, &t, w);
		if (w != f)
			e = bv_round(c, e, f);
		e.tie = e.tie || tie;
		return e;
	}
	Bv r = {INFINITY, -INFINITY, 0, (int8_t)f, tie, false, 0};
	double cl = INFINITY, ch = -INFINITY, prop = 0;
	if (point(a) && point(b)) {
		r.lo = cl = pow_dir(c, a->lo, b->lo, false);
		r.hi = ch = pow_dir(c, a->lo, b->lo, true);
	} else if (al > 0) {
		/* monotone in each argument for a positive base: the corners bound the box */
		double x[2] = {a->lo, a->hi}, y[2] = {b->lo, b->hi};
		double X[2] = {al, ah}, Y[2] = {bl, bh};
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++) {
				r.lo = fmin(r.lo, pow_dir(c, x[i], y[j], false));
				r.hi = fmax(r.hi, pow_dir(c, x[i], y[j], true));
				cl = fmin(cl, pow_dir(c, X[i], Y[j], false));
				ch = fmax(ch, pow_dir(c, X[i], Y[j], true));
			}
		prop = fmax(bv_add_up(ch, -r.lo), bv_add_up(r.hi, -cl));
	} else {
		return bv_unbounded(tie);
	}
	if (!isfinite(cl) || !isfinite(ch))
		return bv_unbounded(tie);
	double loc = local(c, OP_POW, f, al, ah, fmax(fabs(cl), fabs(ch)));
	return fin_f(c, r, prop + loc, f);
}

/* sin and cos: 1-Lipschitz, |f| <= 1. a is flushed already. */
static Bv trig(BvCtx *c, Op op, const Bv *a, Dtype f)
{
	double m = a->lo == a->hi ? a->lo : a->lo / 2 + a->hi / 2;
	double rad = fmax(bv_add_up(a->hi, -m), bv_add_up(m, -a->lo));
	Bv r = {fmax(-1, bv_add_dn(fn(c, op, m, false), -rad)), fmin(1, bv_add_up(fn(c, op, m, true), rad)),
		0, (int8_t)f, a->tie, false, 0};
	double prop = point(a) ? 0 : fmin(a->e, 2);
	double ymax = fmin(1, mag(&r) + prop);
	double loc = local(c, op, f, bv_add_dn(a->lo, -a->e), bv_add_up(a->hi, a->e), ymax);
	return fin_f(c, r, prop + loc, f);
}

/* f over the exact and the computed ranges of a, f monotone (increasing when inc);
 * [*ylo, *yhi] gets the range of f over the computed arguments. */
static Bv mono(BvCtx *c, Op op, const Bv *a, bool inc, double *ylo, double *yhi)
{
	double xl = bv_add_dn(a->lo, -a->e), xh = bv_add_up(a->hi, a->e);
	Bv r = {0, 0, 0, DT_NONE, a->tie, false, 0};
	if (inc) {
		r.lo = fn(c, op, a->lo, false);
		r.hi = fn(c, op, a->hi, true);
		*ylo = point(a) ? r.lo : fn(c, op, xl, false);
		*yhi = point(a) ? r.hi : fn(c, op, xh, true);
	} else {
		r.lo = fn(c, op, a->hi, false);
		r.hi = fn(c, op, a->lo, true);
		*ylo = point(a) ? r.lo : fn(c, op, xh, false);
		*yhi = point(a) ? r.hi : fn(c, op, xl, true);
	}
	r.e = point(a) ? 0 : fmax(bv_add_up(*yhi, -r.lo), bv_add_up(r.hi, -*ylo));
	return r;
}

/* Whether the computed argument range [xl, xh] lies in op's domain (no NaN, no infinity). */
static bool in_domain(Op op, double xl, double xh)
{
	switch (op) {
	case OP_LOG: case OP_LOG2: case OP_RSQRT: return xl > 0;
	case OP_LOG1P: return xl > -1;
	case OP_SQRT: return xl >= 0;
	default: return true;
	}
}

/* op of a definite infinity a: negation, abs, floor, ceil and the float casts keep an
 * infinity (the exact value follows through the same op); the functions of BvCtx.fn_inf
 * take C Annex F's values (exp(-inf) = +0, tanh(+inf) = 1, ...), which are bounded again;
 * everything else (sin, cos, a NaN such as log(-inf), a cast to i32, a function the
 * backend promises nothing for there) is unbounded. */
static Bv inf_unary(BvCtx *c, Op op, const Bv *a, Dtype f)
{
	int s = a->inf;
	bool tie = a->tie;
	Dtype cd = op_cast_dtype(op);
	switch (op) {
	case OP_NEG: return bv_inf(-s, -a->hi, -a->lo, tie);
	case OP_ABS: return bv_inf(1, fmin(fabs(a->lo), fabs(a->hi)), fmax(fabs(a->lo), fabs(a->hi)), tie);
	case OP_FLOOR: return bv_inf(s, floor(a->lo), floor(a->hi), tie);
	case OP_CEIL: return bv_inf(s, ceil(a->lo), ceil(a->hi), tie);
	default: break;
	}
	if (cd != DT_NONE)
		return cd == DT_I32 ? bv_unbounded(tie) :
		       bv_inf(s, bv_fmt_round(cd, a->lo), bv_fmt_round(cd, a->hi), tie);
	if (!(c->fn_inf & BE_OP(op)))
		return bv_unbounded(tie);
	double v;   /* the kernel's value */
	switch (op) {
	case OP_EXP: case OP_EXP2: v = s > 0 ? INFINITY : 0; break;
	case OP_EXPM1: v = s > 0 ? INFINITY : -1; break;
	case OP_LOG: case OP_LOG2: case OP_LOG1P: case OP_SQRT: v = INFINITY; break;
	case OP_RSQRT: v = 0; break;
	case OP_TANH: case OP_ERF: v = s; break;
	case OP_SIGMOID: v = s > 0 ? 1 : 0; break;
	default: return bv_unbounded(tie);
	}
	if (s < 0 && (op == OP_LOG || op == OP_LOG2 || op == OP_LOG1P || op == OP_SQRT ||
		      op == OP_RSQRT))
		return bv_unbounded(tie);   /* NaN */
	/* every one of them is increasing but rsqrt; fn at +-inf is MPFR's limit */
	bool inc = op != OP_RSQRT;
	double xl = fn(c, op, inc ? a->lo : a->hi, false), xh = fn(c, op, inc ? a->hi : a->lo, true);
	if (isinf(v))
		return bv_inf(v > 0 ? 1 : -1, xl, xh, tie);
	Bv r = between(xl, xh, v, v, tie, false);
	r.fmt = (int8_t)f;
	return r;
}

Bv bv_unary(BvCtx *c, Op op, const Bv *a0, Dtype f)
{
	Dtype cd = op_cast_dtype(op);
	if (a0->nan && (op == OP_NEG || op == OP_ABS || (cd != DT_NONE && cd != DT_I32)))
		return bv_nan(a0->tie);
	if (a0->inf)
		return inf_unary(c, op, a0, f);
	if (!bv_bounded(a0))
		return bv_unbounded(a0->tie);
	/* every one of these may flush its operand (negation and abs too: SPIR-V's OpFNegate
	 * and FAbs are arithmetic); a cast's result is exact, computed by the emitters with
	 * integer operations on the bits (vulkan/lib.c, wgsl/lib.c), so only its operand is */
	Bv fa = bv_flush(c, *a0, f);
	const Bv *a = &fa;
	Bv r = *a;
	switch (op) {
	case OP_NEG:
		r.lo = -a->hi;
		r.hi = -a->lo;
		return r;
	case OP_ABS:
		r.lo = a->lo >= 0 ? a->lo : a->hi <= 0 ? -a->hi : 0;
		r.hi = mag(a);
		return r;
	case OP_SIN: case OP_COS:
		return trig(c, op, a, f);
	default:
		break;
	}
	double xl = bv_add_dn(a->lo, -a->e), xh = bv_add_up(a->hi, a->e), yl, yh;
	if (!in_domain(op, xl, xh))
		return bv_unbounded(a->tie);
	r = mono(c, op, a, op != OP_RSQRT, &yl, &yh);
	Dtype g = op_cast_dtype(op);
	if (g != DT_NONE && g != DT_I32 && isinf(yl) && yl == yh && c->inf_claims &&
	    rn(c, op, g))
		/* a cast whose every computed argument overflows g (rounded to nearest): the
		 * exact value is the cast's too (a rounding), which may itself be finite */
		return bv_inf(yl > 0 ? 1 : -1, r.lo, r.hi, a->tie);
	if (!isfinite(yl) || !isfinite(yh))
		return bv_unbounded(a->tie);
	if (g != DT_NONE || op == OP_FLOOR || op == OP_CEIL) {
		/* exact operations: a cast is the rounding itself, floor and ceil of a value of
		 * f are values of f */
		r.fmt = (int8_t)(g != DT_NONE ? g : f);
		/* rounding may take a computed argument of either sign to a zero (bf16(±2^-156)):
		 * its sign is not known, so the bound stays nonzero (see bv_budget) */
		if (r.e == 0 && !point(a) && xl <= 0 && xh >= 0)
			r.e = 0x1p-1074;
		return fin(r, r.e);
	}
	r.fmt = (int8_t)f;
	return fin_f(c, r, r.e + local(c, op, f, xl, xh, fmax(fabs(yl), fabs(yh))), f);
}

/* max/min with a definite infinity: the infinity, or the other operand (max(-inf, x)),
 * whose computed value is then the result's, its bound kept where the infinity's exact
 * value is beyond the other's too. */
static Bv inf_maxmin(BvCtx *c, const Bv *a0, const Bv *b0, bool max, Dtype f, bool tie)
{
	if (!known(a0) || !known(b0))
		return bv_unbounded(tie);
	Bv a = bv_flush(c, *a0, f), b = bv_flush(c, *b0, f);
	double al, ah, bl, bh;
	computed(&a, &al, &ah);
	computed(&b, &bl, &bh);
	double kl = max ? fmax(al, bl) : fmin(al, bl), kh = max ? fmax(ah, bh) : fmin(ah, bh);
	double xl = max ? fmax(a.lo, b.lo) : fmin(a.lo, b.lo);
	double xh = max ? fmax(a.hi, b.hi) : fmin(a.hi, b.hi);
	if (isinf(kl) && kl == kh)
		return bv_inf(kl > 0 ? 1 : -1, xl, xh, tie);
	/* the finite operand x is delivered; the infinity i lost */
	const Bv *x = a.inf ? &b : &a, *i = a.inf ? &a : &b;
	Bv r = (max ? i->hi <= x->lo : i->lo >= x->hi) ? *x : between(xl, xh, kl, kh, tie, false);
	r.tie = tie;
	double sl = bv_ftz_slack(c, &r, f);
	if (sl > 0)
		r.e = (r.e + sl) * INFL;
	return bv_bounded(&r) ? r : bv_unbounded(tie);
}

Bv bv_maxmin(BvCtx *c, const Bv *a0, const Bv *b0, bool max, Dtype f)
{
	bool tie = a0->tie || b0->tie;
	if (a0->nan || b0->nan)
		return bv_nan(tie);
	if (a0->inf || b0->inf)
		return inf_maxmin(c, a0, b0, max, f, tie);
	if (!bv_bounded(a0) || !bv_bounded(b0))
		return bv_unbounded(tie);
	Bv fa = bv_flush(c, *a0, f), fb = bv_flush(c, *b0, f);
	const Bv *a = &fa, *b = &fb;
	Bv r = {max ? fmax(a->lo, b->lo) : fmin(a->lo, b->lo),
		max ? fmax(a->hi, b->hi) : fmin(a->hi, b->hi), fmax(a->e, b->e), DT_NONE, tie, false, 0};
	if (a->fmt != DT_NONE && b->fmt != DT_NONE)
		r.fmt = bv_within((Dtype)a->fmt, (Dtype)b->fmt) ? b->fmt :
			bv_within((Dtype)b->fmt, (Dtype)a->fmt) ? a->fmt : DT_NONE;
	/* max of the flushed operands is 1-Lipschitz; a kernel that compares flushed values
	 * but delivers the unflushed one (x > y ? x : y), or flushes the result, moves it by
	 * at most its own subnormal magnitude */
	double s = bv_ftz_slack(c, &r, f);
	if (s > 0)
		r.e = (r.e + s) * INFL;
	return bv_bounded(&r) ? r : bv_unbounded(tie);
}

/* The relation op between intervals [al, ah] and [bl, bh]: 0, 1, or 2 when it depends. */
static uint8_t rel(Op op, double al, double ah, double bl, double bh)
{
	switch (op) {
	case OP_LT: return ah < bl ? 1 : al >= bh ? 0 : 2;
	case OP_LE: return ah <= bl ? 1 : al > bh ? 0 : 2;
	case OP_GT: return al > bh ? 1 : ah <= bl ? 0 : 2;
	case OP_GE: return al >= bh ? 1 : ah < bl ? 0 : 2;
	case OP_EQ: return al == ah && bl == bh && al == bl ? 1 : (ah < bl || bh < al) ? 0 : 2;
	default: {   /* NE */
		uint8_t eq = rel(OP_EQ, al, ah, bl, bh);
		return eq == 2 ? 2 : !eq;
	}
	}
}

B3 bv_cmp(Op op, const Bv *a, const Bv *b)
{
	B3 r = {2, 3, a->tie || b->tie};
	if (!known(a) || !known(b))
		return r;
	r.ex = rel(op, a->lo, a->hi, b->lo, b->hi);
	double al, ah, bl, bh;
	computed(a, &al, &ah);
	computed(b, &bl, &bh);
	uint8_t cp = rel(op, al, ah, bl, bh);
	r.cp = cp == 2 ? 3 : cp ? 2 : 1;
	return r;
}

Bv bv_select(const B3 *c, const Bv *a, const Bv *b)
{
	bool tie = c->tie || a->tie || b->tie;
	if (a->inf && a->inf == b->inf)   /* the same infinity either way */
		return bv_inf(a->inf, fmin(a->lo, b->lo), fmax(a->hi, b->hi), tie);
	if (!bv_bounded(a) || !bv_bounded(b))
		return bv_unbounded(tie);
	Bv r = *a;   /* every field set below; nan and inf are 0 (a is bounded) */
	if (c->ex != 2) {
		/* the exact value takes one branch; the computed one may take the other */
		const Bv *x = c->ex ? a : b, *y = c->ex ? b : a;
		double d = fmax(bv_add_up(y->hi, -x->lo), bv_add_up(x->hi, -y->lo));
		r = *x;
		r.e = fmax(x->e, y->e + d) * INFL;
	} else {
		r.lo = fmin(a->lo, b->lo);
		r.hi = fmax(a->hi, b->hi);
		r.e = (fmax(a->e, b->e) + bv_add_up(r.hi, -r.lo)) * INFL;
	}
	r.fmt = a->fmt == b->fmt ? a->fmt : DT_NONE;
	r.tie = tie;
	return bv_bounded(&r) ? r : bv_unbounded(tie);
}

double bv_budget(const BvCtx *c, const Bv *a, Dtype out)
{
	if (a->nan)
		return 0;
	if (a->inf) {
		double v = a->inf > 0 ? INFINITY : -INFINITY;
		return bv_fmt_round(out, a->lo) == v && bv_fmt_round(out, a->hi) == v ? 0 : INFINITY;
	}
	if (!bv_bounded(a))
		return INFINITY;
	double cl = bv_add_dn(a->lo, -a->e), ch = bv_add_up(a->hi, a->e);
	double rcl = bv_fmt_round(out, cl), rch = bv_fmt_round(out, ch);
	double rxl = bv_fmt_round(out, a->lo), rxh = bv_fmt_round(out, a->hi);
	/* every computed value and the exact one round to the same infinity in out (the
	 * delivery's rounding to nearest: 80000 stored in f32, delivered in f16) */
	if (isinf(rcl) && rcl == rch && rcl == rxl && rcl == rxh)
		return c->inf_claims ? 0 : INFINITY;
	if (!isfinite(rcl) || !isfinite(rch) || !isfinite(rxl) || !isfinite(rxh))
		return INFINITY;
	double b = fmax(fmax(bv_add_up(rch, -rxl), bv_add_up(rxh, -rcl)),
			fmax(bv_add_up(rch, -a->lo), bv_add_up(a->hi, -rcl)));
	/* A bound of 0 claims the bits, a zero's sign included (verify's judge). The rules
	 * bound values, not the signs of zeros: where the computed value is not exact and may
	 * be zero (bf16(0 - 2^-156): the exact -2^-156 gives -0, a computed +0 rounds to +0),
	 * the bound is the least nonzero one, which claims the value but not the sign. */
	if (b <= 0 && a->e > 0 && cl <= 0 && ch >= 0)
		return 0x1p-1074;
	return fmax(b, 0);
}

void bv_lse(BvCtx *c, const Bv *t, size_t n, double *lo, double *hi)
{
	double m0 = -INFINITY, slo = 0, shi = 0;
	for (size_t i = 0; i < n; i++)
		m0 = fmax(m0, t[i].lo);
	for (size_t i = 0; i < n; i++) {
		slo = bv_add_dn(slo, fn(c, OP_EXP, bv_add_dn(t[i].lo, -m0), false));
		shi = bv_add_up(shi, fn(c, OP_EXP, bv_add_up(t[i].hi, -m0), true));
	}
	*lo = bv_add_dn(m0, fn(c, OP_LOG, slo, false));
	*hi = bv_add_up(m0, fn(c, OP_LOG, shi, true));
}
