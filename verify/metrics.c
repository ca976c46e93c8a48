/* verify/metrics.c: how far a kernel's output is from the oracle's (numerics.md section 3),
 * and the verdict that follows.
 *
 * Order of judgement, per element: an unsamplable oracle element is skipped; then special
 * values are compared as categories (NaN, +inf, -inf, and the sign of a zero where the
 * budget is 0), and only where both sides are ordinary numbers (or the same special value)
 * are the numeric measures taken. A NaN never reaches a tolerance: NaN against a number is
 * a mismatch whatever the budget. NaNs are canonicalised by testing isnan only (payload
 * and sign are never looked at).
 *
 * ULP distance is taken in the output's own format through the ordinal map
 * ord(x) = x < 0 ? -bits(-x) : bits(x) (so +0 and -0 are both 0, and the distance across
 * zero counts every representable value in between); for i32 outputs it is the integer
 * difference. The budget ratio is error / budget with 0/0 = 0, e/0 = inf for e > 0 and
 * e/inf = 0 (an infinite budget means no bound is known); a NaN budget counts as 0, so a
 * broken budget fails loudly instead of hiding an error. At an element the budget code
 * flags as a near tie (numerics.md 4a), a disagreement is counted apart, never as a
 * failure.
 */
#include <math.h>
#include <string.h>
#include "verify.h"

static const char *const verdict_names[V__COUNT] = {
	[V_PASS] = "pass",
	[V_OVER_BUDGET] = "over-budget",
	[V_SPECIAL_MISMATCH] = "special-mismatch",
	[V_CRASH] = "crash",
	[V_TIMEOUT] = "timeout",
	[V_OOB_WRITE] = "oob-write",
	[V_COMPILE_ERROR] = "compile-error",
	[V_UNSUPPORTED] = "unsupported",
	[V_FLAKY] = "flaky",
	[V_EMULATION_MISMATCH] = "emulation-mismatch",
	[V_VARIANT_MISMATCH] = "variant-mismatch",
	[V_BAD_OUTPUT] = "bad-output",
	[V_GRAD_MISMATCH] = "grad-mismatch",
	[V_TREE_MISMATCH] = "tree-mismatch",
};
_Static_assert(ARRAY_LEN(verdict_names) == V__COUNT, "one name per verdict");

const char *vf_verdict_name(Verdict v)
{
	return v >= 0 && v < V__COUNT ? verdict_names[v] : "?";
}

bool vf_verdict_whole(Verdict v)
{
	return v == V_CRASH || v == V_TIMEOUT || v == V_OOB_WRITE || v == V_COMPILE_ERROR ||
	       v == V_BAD_OUTPUT;
}

bool vf_verdict_fails(Verdict v)
{
	return v != V_PASS && v != V_UNSUPPORTED && v != V_FLAKY;
}

/* The sign-magnitude bit pattern of x in format f, split into sign and magnitude. */
static void bits_of(Dtype f, double x, bool *neg, uint64_t *mag)
{
	switch (f) {
	case DT_F64: {
		uint64_t u;
		memcpy(&u, &x, sizeof u);
		*neg = u >> 63;
		*mag = u & ~(1ull << 63);
		return;
	}
	case DT_F32: {
		float y = (float)x;
		uint32_t u;
		memcpy(&u, &y, sizeof u);
		*neg = u >> 31;
		*mag = u & 0x7fffffffu;
		return;
	}
	case DT_F16:
	case DT_BF16: {
		uint16_t u = f == DT_F16 ? fmt_double_to_f16(x) : fmt_double_to_bf16(x);
		*neg = u >> 15;
		*mag = u & 0x7fffu;
		return;
	}
	default:
		IR_ASSERT(!"bits_of: not a storage format with a sign bit");
	}
}

int64_t vf_ord(Dtype f, double x)
{
	if (f == DT_I32)
		return (int64_t)x;
	bool neg;
	uint64_t mag;
	bits_of(f, x, &neg, &mag);
	/* f64 magnitudes of non-NaN values are below 2^63: the negation cannot overflow */
	return neg ? -(int64_t)mag : (int64_t)mag;
}

double vf_ulp_dist(Dtype f, double a, double b)
{
	if (f == DT_I32)
		return fabs(a - b);
	bool na, nb;
	uint64_t ma, mb;
	bits_of(f, a, &na, &ma);
	bits_of(f, b, &nb, &mb);
	if (na == nb)
		return (double)(ma > mb ? ma - mb : mb - ma);
	/* across zero: both magnitudes (each < 2^63, so the sum fits in 64 bits) */
	return (double)(ma + mb);
}

void vf_metrics_init(VfMetrics *m)
{
	memset(m, 0, sizeof *m);
	m->worst = -1;
}

/* A special-value mismatch between got and want, or 0 when none. 1: NaN or inf, 2: the
 * sign of a zero. */
static int special(Dtype f, double got, double want, double budget)
{
	bool gn = isnan(got), wn = isnan(want);
	if (gn || wn)
		return gn != wn;
	if (isinf(got) || isinf(want))
		return got != want;
	if (f != DT_I32 && got == 0 && want == 0 && signbit(got) != signbit(want) && budget == 0)
		return 2;
	return 0;
}

static double ratio_of(double err, double budget)
{
	if (err == 0)
		return 0;
	if (isnan(budget) || budget <= 0)
		return INFINITY;
	return err / budget;   /* err / inf = 0 */
}

static void set_worst(VfMetrics *m, int64_t k, double got, double want, double budget)
{
	m->worst = k;
	m->worst_got = got;
	m->worst_want = want;
	m->worst_budget = budget;
}

void vf_metrics_add(VfMetrics *m, Dtype f, int64_t k, double got, double want, double budget,
		    bool tie)
{
	m->n_checked++;
	m->n_ties += tie;
	int sp = special(f, got, want, budget);
	if (sp) {
		/* the first special mismatch is the worst element, whatever came before */
		if (m->n_special++ == 0)
			set_worst(m, k, got, want, budget);
		m->n_special_unbounded += isinf(budget) && budget > 0;
		m->n_zero_sign += sp == 2;
		return;
	}
	if (isnan(got) || isinf(got))
		return;  /* the same special value on both sides: an agreement, error 0 */
	m->n_unbounded += isinf(budget) && budget > 0;
	double err = fabs(got - want);
	double rel = want != 0 ? err / fabs(want) : (err == 0 ? 0 : INFINITY);
	double ulp = vf_ulp_dist(f, got, want);
	double r = ratio_of(err, budget);
	m->max_ulp = fmax(m->max_ulp, ulp);
	m->max_abs = fmax(m->max_abs, err);
	m->max_rel = fmax(m->max_rel, rel);
	m->sum_d2 += err * err;
	m->sum_w2 += want * want;
	if (budget > 0 && isfinite(budget)) {
		m->sum_signed += (got - want) / budget;
		m->n_signed++;
	}
	if (tie && r > 1) {
		m->n_tie_disagree++;
		return;
	}
	if (r > 1)
		m->n_over++;
	if (m->n_special == 0 && (m->worst < 0 || r > m->max_ratio))
		set_worst(m, k, got, want, budget);
	m->max_ratio = fmax(m->max_ratio, r);
}

void vf_metrics_done(VfMetrics *m)
{
	if (m->sum_w2 > 0)
		m->nmse = m->sum_d2 / m->sum_w2;
	else
		m->nmse = m->sum_d2 > 0 ? INFINITY : 0;
	m->mean_signed_ratio = m->n_signed ? m->sum_signed / (double)m->n_signed : 0;
	m->frac_within = m->n_checked ?
		(double)(m->n_checked - m->n_special - m->n_over - m->n_tie_disagree) /
		(double)m->n_checked : 1;
}

void vf_compare(const HostTensor *got, const HostTensor *want, const HostTensor *budget,
		const uint8_t *ties, const uint8_t *status, const int64_t *idx, int64_t n,
		VfMetrics *m)
{
	IR_ASSERT(want->n >= n && (idx || got->n == n));
	for (int64_t i = 0; i < n; i++) {
		if (status && status[i] == MP_UNSAMPLABLE) {
			m->n_unsamplable++;
			continue;
		}
		int64_t k = idx ? idx[i] : i;
		vf_metrics_add(m, got->dtype, k, ht_get(got, k), ht_get(want, i),
			       budget ? ht_get(budget, k) : 0, ties && ties[k]);
	}
}

Verdict vf_metrics_verdict(const VfMetrics *m)
{
	if (m->n_special)
		return V_SPECIAL_MISMATCH;
	if (m->n_over)
		return V_OVER_BUDGET;
	return V_PASS;
}

bool vf_compiler_suspect(Verdict v, const VfMetrics *m)
{
	if (!vf_verdict_fails(v))
		return false;
	return !(v == V_SPECIAL_MISMATCH && m->n_special > 0 &&
		 m->n_special == m->n_special_unbounded && m->n_over == 0);
}

VfClass vf_class(Verdict v, const VfMetrics *m, bool sampled, const VfMetrics *m64)
{
	switch (v) {
	case V_PASS: return VC_PASS;
	case V_FLAKY: return VC_FLAKY;
	case V_UNSUPPORTED: return VC_UNSUPPORTED;
	case V_OVER_BUDGET: case V_SPECIAL_MISMATCH: break;
	default: return VC_FAILURE;   /* crash, timeout, oob-write, compile-error */
	}
	/* either comparison may have failed the output: it points at the compiler when one
	 * that failed does (an over-budget f64 pass is not hidden by an unclaimed special) */
	Verdict e = vf_metrics_verdict(m), w = sampled ? vf_metrics_verdict(m64) : V_PASS;
	if (e == V_PASS && w == V_PASS)
		return VC_FAILURE;   /* metrics that do not explain the verdict: the verdict wins */
	return vf_compiler_suspect(e, m) || (sampled && vf_compiler_suspect(w, m64)) ?
	       VC_FAILURE : VC_UNCLAIMED;
}

const char *vf_class_name(VfClass c)
{
	static const char *const names[VC__COUNT] = {
		[VC_PASS] = "pass", [VC_FAILURE] = "failure",
		[VC_UNCLAIMED] = "unclaimed-special", [VC_FLAKY] = "flaky",
		[VC_UNSUPPORTED] = "unsupported", [VC_KNOWN] = "known",
	};
	return c >= 0 && c < VC__COUNT ? names[c] : "?";
}
