/* tests/test_ulp.c: the per-backend ULP sweep (verify/ulp.c) and the allowance lookups it
 * reports (oracles/allowances.def, allowances.c).
 *
 * - sweep: the sweep's core on the c backend, a few thousand points per function and
 *   format (f32, f16, bf16, f64): every function's worst error must be within the budget
 *   the table gives (glibc's allowances: this fails when the c backend or the table is
 *   wrong). The same sweep against a backend that returns its results 3 ulps off must
 *   report EXCEEDS where the table promises correct rounding: the sweep can fail.
 * - allowances: wherever a backend's table has an f32 row, a bf16 computation (f32
 *   operations rounded to bf16) gets a finite budget at an argument of that row, and so
 *   does f16 where the result is an f16 number; Vulkan's and WGSL's pow are composed from
 *   exp2, * and log2 (no bound for a negative base, a bound growing with |y| inside
 *   [0.5, 2]); a result that may err past the largest finite value has no bound; f64's
 *   lowest normal binade is not given a zero half ulp; the rows in words.
 * Compiled programs are cached in $TMPDIR/assay-test-ulp.
 */
#include <math.h>
#include "testutil.h"
#include "../compiler/compiler.h"
#include "../interp/interp.h"
#include "../oracles/oracles.h"
#include "../verify/verify.h"

static const Backend *c_backend(void)
{
	const Backend *b = be_find("c");
	char why[256] = "";
	if (!b || b->available(why, sizeof why) != 0) {
		fprintf(stderr, "SKIP: the c backend is not available here (%s): the sweep is not "
			"run\n", why);
		return NULL;
	}
	return b;
}

static VfUlpOpts opts(int64_t points)
{
	VfUlpOpts o = {.points = points, .seed = 7, .threads = 1};
	o.w.timeout_s = 120;
	o.w.threads = 1;
	o.w.cache_dir = tu_cache_dir("ulp");
	return o;
}

/* ------------------------------------------------------------ the sweep */

static const Dtype sweep_fmts[] = {DT_F32, DT_F16, DT_BF16, DT_F64};

START_TEST(c_backend_within_its_allowances)
{
	const Backend *b = c_backend();
	if (!b)
		return;
	Dtype f = sweep_fmts[_i];
	VfUlpOpts o = opts(3000);
	VfUlpRow rows[VU__COUNT];
	int n = 0;
	Diag d = {0};
	ck_assert_msg(vf_ulp_sweep(&b, 1, f, &o, rows, &n, &d) == 0, "sweep: %s", d.msg);
	ck_assert_int_eq(n, VU__COUNT);
	for (int i = 0; i < n; i++) {
		const VfUlpRow *r = &rows[i];
		const char *name = vf_ulp_fn_name(r->fn);
		ck_assert_msg(r->status == WK_OK, "%s %s: %s", dt_name(f), name, r->reason);
		ck_assert_msg(r->n_checked >= r->points * 9 / 10 && r->points >= 1000,
			      "%s %s: %lld of %lld points compared", dt_name(f), name,
			      (long long)r->n_checked, (long long)r->points);
		ck_assert_msg(r->n_unbounded == 0, "%s %s: %lld points without a bound", dt_name(f),
			      name, (long long)r->n_unbounded);
		ck_assert_msg(r->n_over == 0 && strcmp(vf_ulp_verdict(r), "ok") == 0,
			      "%s %s: %lld points over budget, %lld special; worst %g ulp at %.9g "
			      "(allowed %g there), error/budget %g at %.9g (got %.9g, want %.9g)",
			      dt_name(f), name, (long long)r->n_over, (long long)r->n_special,
			      r->worst_ulp, r->worst_x, r->worst_allow, r->max_ratio, r->ratio_x,
			      r->ratio_got, r->ratio_want);
		ck_assert_msg(r->worst_ulp <= r->worst_allow + 1e-9, "%s %s: %g ulp, allowed %g",
			      dt_name(f), name, r->worst_ulp, r->worst_allow);
		/* glibc's figures: at most 2 ulp of the correctly rounded value */
		ck_assert_msg(r->worst_ulp <= 2, "%s %s: %g ulp", dt_name(f), name, r->worst_ulp);
	}
	/* x / y and sqrt round correctly (f16 and bf16: f32 operations, 24 >= 2p + 2) */
	ck_assert(rows[VU_DIV].worst_ulp == 0 && rows[VU_SQRT].worst_ulp == 0);
}
END_TEST

/* The c backend with every real result moved 3 ulps up after download. */
static int (*real_download)(BeModule *m, int tensor, Dtype dt, HostTensor *t, Diag *d);

static int lying_download(BeModule *m, int tensor, Dtype dt, HostTensor *t, Diag *d)
{
	if (real_download(m, tensor, dt, t, d))
		return -1;
	for (int64_t k = 0; k < t->n; k++) {
		double v = ht_get(t, k);
		if (dt == DT_F32)
			for (int i = 0; i < 3; i++)
				v = nextafterf((float)v, INFINITY);
		else if (dt == DT_F64)
			for (int i = 0; i < 3; i++)
				v = nextafter(v, INFINITY);
		ht_set(t, k, v);
	}
	return 0;
}

START_TEST(a_wrong_backend_exceeds)
{
	const Backend *c = c_backend();
	if (!c)
		return;
	static Backend liar;
	liar = *c;   /* named "c": the c backend's allowances apply */
	real_download = c->download;
	liar.download = lying_download;
	const Backend *b = &liar;
	VfUlpOpts o = opts(500);
	o.fns = 1u << VU_DIV | 1u << VU_SQRT | 1u << VU_EXP | 1u << VU_TANH;
	VfUlpRow rows[VU__COUNT];
	int n = 0;
	Diag d = {0};
	ck_assert_msg(vf_ulp_sweep(&b, 1, DT_F32, &o, rows, &n, &d) == 0, "sweep: %s", d.msg);
	ck_assert_int_eq(n, 4);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(rows[i].status, WK_OK);
		ck_assert_msg(rows[i].worst_ulp >= 3, "%s: worst %g", vf_ulp_fn_name(rows[i].fn),
			      rows[i].worst_ulp);
		/* correctly rounded (div, sqrt), 1 ulp (exp), 2 ulp (tanh): 3 ulp is over */
		ck_assert_msg(strcmp(vf_ulp_verdict(&rows[i]), "EXCEEDS") == 0 && rows[i].n_over > 0 &&
				      rows[i].max_ratio > 1,
			      "%s: %s", vf_ulp_fn_name(rows[i].fn), vf_ulp_verdict(&rows[i]));
	}
	ck_assert_int_eq(rows[0].fn, VU_EXP);
	ck_assert_int_eq(rows[3].fn, VU_SQRT);
}
END_TEST

START_TEST(names_and_formats)
{
	for (int f = 0; f < VU__COUNT; f++) {
		const char *s = vf_ulp_fn_name((VfUlpFn)f);
		ck_assert_int_eq(vf_ulp_fn_parse(s, strlen(s)), f);
	}
	ck_assert_int_eq(vf_ulp_fn_parse("exp2", 4), -1);
	ck_assert_int_eq(vf_ulp_fn_parse("exp,log", 3), VU_EXP);
	const Backend *b = be_find("c");
	VfUlpOpts o = opts(100);
	VfUlpRow rows[VU__COUNT];
	int n = 0;
	Diag d = {0};
	ck_assert_int_eq(vf_ulp_sweep(&b, 1, DT_I32, &o, rows, &n, &d), -1);
	ck_assert(d.code == 2 && strstr(d.msg, "i32"));
	diag_clear(&d);
}
END_TEST

/* ------------------------------------------------------------ allowances */

/* The budget of y = sum(j:1) body, computed (accumulated) in fmt, for inputs x (and y
 * where body reads b), x in fmt; element 0. */
static double budget1(const char *backend, const char *body, Dtype fmt, double x, double yv,
		      double *exact)
{
	char src[512];
	const char *fm = dt_name(fmt);
	snprintf(src, sizeof src,
		 "input a : %s[1]\ninput b : %s[1]\ny[i:1] = sum(j:1) %s\noutput y : %s\n"
		 "schedule\naccum y : %s\nstore y : %s\n", fm, fm, body, fm, fm, fm);
	Graph *g = tu_parse(src);
	Schedule s;
	Diag d = {0};
	ck_assert_msg(sched_build(g, &s, &d) == 0, "%s", d.msg);
	HostTensor *in = tu_new_inputs(g);
	ht_set(&in[0], 0, x);
	ht_set(&in[1], 0, yv);
	ck_assert_msg(ht_get(&in[0], 0) == x && ht_get(&in[1], 0) == yv, "%g, %g are not %s", x, yv,
		      fm);
	HostTensor out[1], ex[1];
	ck_assert_msg(orc_budget(g, &s, backend, in, out, &d) == 0, "budget: %s", d.msg);
	double r = ht_get(&out[0], 0);
	if (exact) {
		MpOpts mo = {.threads = 1};
		ck_assert_msg(mp_exact(g, in, &mo, ex, NULL, NULL, &d) == 0, "exact: %s", d.msg);
		*exact = ht_get(&ex[0], 0);
		ht_free(&ex[0]);
	}
	ht_free(&out[0]);
	tu_free_tensors(in, 2);
	sched_free(&s);
	ir_free(g);
	return r;
}

/* An argument inside the row's domain that f32, f16 and bf16 all hold, within the op's
 * own domain; NAN if none of the candidates is. */
static double arg_in(const OrcAllowance *a)
{
	static const double cand[] = {0.75, 1.5, 3, 0.375, -0.75, 6, 20, -3, -20, 100, -100};
	for (size_t i = 0; i < ARRAY_LEN(cand); i++) {
		double x = cand[i], v = a->dabs ? fabs(x) : x;
		if (v < a->dlo || v > a->dhi)
			continue;
		if ((a->op == OP_LOG || a->op == OP_LOG2 || a->op == OP_SQRT || a->op == OP_RSQRT ||
		     a->op == OP_POW) && x <= 0)
			continue;
		if (a->op == OP_LOG1P && x <= -1)
			continue;
		return x;
	}
	return NAN;
}

/* Every f32 row of every backend: where the f32 computation has a bound at an argument of
 * the row, so has bf16's, and f16's when the result is a normal f16 number. */
START_TEST(narrow_formats_have_bounds_where_f32_has)
{
	int checked = 0, f16_checked = 0;
	for (int i = 0; i < orc_nallowances(); i++) {
		const OrcAllowance *a = orc_allowance(i);
		if (a->fmt != DT_F32)
			continue;
		double x = arg_in(a);
		if (isnan(x))
			continue;
		char body[64];
		const char *fn = op_info(a->op)->spelling;
		double yv = 1;
		switch (a->op) {
		case OP_DIV: snprintf(body, sizeof body, "b[i] / a[i]"); break;
		case OP_POW: snprintf(body, sizeof body, "pow(a[i], b[i])"), yv = 1.5; break;
		case OP_FMA: snprintf(body, sizeof body, "fma(a[i], b[i], a[i])"); break;
		default: snprintf(body, sizeof body, "%s(a[i])", fn); break;
		}
		double b32 = budget1(a->backend, body, DT_F32, x, yv, NULL);
		if (!isfinite(b32))
			continue;
		double b16b = budget1(a->backend, body, DT_BF16, x, yv, NULL);
		ck_assert_msg(isfinite(b16b) && b16b > 0, "%s %s at %g: f32 budget %g, bf16 %g",
			      a->backend, body, x, b32, b16b);
		double e16;
		double b16 = budget1(a->backend, body, DT_F16, x, yv, &e16);
		if (isfinite(e16) && fabs(e16) >= 0x1p-14 && fabs(e16) <= 32768) {
			ck_assert_msg(isfinite(b16) && b16 > 0, "%s %s at %g: f32 budget %g, f16 %g",
				      a->backend, body, x, b32, b16);
			f16_checked++;
		}
		checked++;
	}
	ck_assert_msg(checked > 100 && f16_checked > 80, "%d rows checked, %d in f16", checked,
		      f16_checked);
}
END_TEST

/* Vulkan's and WGSL's pow: exp2(y * log2(x)) under the rows of its parts. */
START_TEST(inherited_pow)
{
	static const char *const be[] = {"vulkan", "wgsl"};
	for (int k = 0; k < 2; k++) {
		double e, b = budget1(be[k], "pow(a[i], b[i])", DT_F32, 3, 2.5, &e);
		/* outside [0.5, 2]: log2 3 ulp, exp2 3 + 2|t| ulp, t = 2.5 log2 3 = 3.96 */
		ck_assert_msg(isfinite(b) && b > 8 * 0x1p-24 * e && b < 40 * 0x1p-24 * e,
			      "%s pow(3, 2.5) = %g: budget %g", be[k], e, b);
		/* inside [0.5, 2]: log2's absolute 2^-21, times |y| = 1000 in the exponent */
		b = budget1(be[k], "pow(a[i], b[i])", DT_F32, 1.0009765625, 1000, &e);
		ck_assert_msg(isfinite(b) && b > 1000 * 0x1p-21 * 0.69 * e, "%s: budget %g of %g",
			      be[k], b, e);
		ck_assert(isinf(budget1(be[k], "pow(a[i], b[i])", DT_F32, -3, 2, NULL)));
		/* bf16: the f32 composition, then the rounding */
		ck_assert(isfinite(budget1(be[k], "pow(a[i], b[i])", DT_BF16, 3, 2.5, NULL)));
	}
	/* opencl's pow has a row of its own: 16 ulp */
	double e, b = budget1("opencl", "pow(a[i], b[i])", DT_F32, 3, 2.5, &e);
	ck_assert_msg(b >= 16 * 0x1p-24 * e && b < 40 * 0x1p-24 * e, "opencl: %g of %g", b, e);
}
END_TEST

/* Edges the sweep found: a result within its allowance of the largest finite value may
 * overflow, and f64's lowest normal binade has a half ulp of 2^-1075, which is not a
 * double (the budget there was 0 plus the final rounding). Denormals may be flushed on
 * vulkan and wgsl: log of a subnormal has no bound, exp below ln 2^-126 gets an absolute
 * 2^-126. */
START_TEST(edges)
{
	double e;
	/* exp(88.7228317) is 61 ulp below FLT_MAX: within vulkan's 3 + 2|x| = 180 ulp of it */
	ck_assert(isinf(budget1("vulkan", "exp(a[i])", DT_F32, 88.72283172607421875, 1, &e)));
	ck_assert(isfinite(e) && e < 0x1p128 * (1 - 60 * 0x1p-24));
	ck_assert(isfinite(budget1("opencl", "exp(a[i])", DT_F32, 88.72283172607421875, 1, NULL)));
	double b = budget1("opencl", "exp(a[i])", DT_F64, -708, 1, &e);
	ck_assert_msg(e > 0x1p-1022 && e < 0x1p-1021 && b >= 3 * 0x1p-1074, "exp(-708) = %g: %g", e,
		      b);
	ck_assert(isinf(budget1("vulkan", "log(a[i])", DT_F32, 0x1p-130, 1, NULL)));
	ck_assert(isinf(budget1("wgsl", "log(a[i])", DT_BF16, 0x1p-130, 1, NULL)));
	ck_assert(isfinite(budget1("opencl", "log(a[i])", DT_F32, 0x1p-130, 1, NULL)));
	b = budget1("vulkan", "exp(a[i])", DT_F32, -100, 1, &e);
	ck_assert_msg(b >= 0x1p-126 && b < 0x1p-125, "vulkan exp(-100): %g", b);
	b = budget1("vulkan", "exp(a[i])", DT_F32, -80, 1, &e);
	ck_assert_msg(b < 200 * 0x1p-23 * e, "vulkan exp(-80) = %g: %g", e, b);
}
END_TEST

START_TEST(rows_in_words)
{
	char buf[256];
	ck_assert_str_eq(orc_allowance_text("c", OP_DIV, DT_F32, buf, sizeof buf), "cr");
	ck_assert_str_eq(orc_allowance_text("c", OP_EXP, DT_F32, buf, sizeof buf), "1 ulp of cr");
	ck_assert_str_eq(orc_allowance_text("c", OP_DIV, DT_BF16, buf, sizeof buf),
			 "cr (f32 operation)");
	ck_assert_str_eq(orc_allowance_text("opencl", OP_EXP, DT_F16, buf, sizeof buf),
			 "via f32: 3 ulp + rounding");
	ck_assert_str_eq(orc_allowance_text("wgsl", OP_EXP, DT_F64, buf, sizeof buf), "none");
	ck_assert_str_eq(orc_allowance_text("emul", OP_TANH, DT_F16, buf, sizeof buf), "cr");
	ck_assert_str_eq(orc_allowance_text("vulkan", OP_MUL, DT_F32, buf, sizeof buf), "cr");
	ck_assert_str_eq(orc_allowance_text("nosuch", OP_MUL, DT_F32, buf, sizeof buf),
			 "unknown backend");
	orc_allowance_text("vulkan", OP_SIN, DT_F32, buf, sizeof buf);
	ck_assert_str_eq(buf, "abs 2^-11 on [-3.14159,3.14159]");
	orc_allowance_text("vulkan", OP_EXP, DT_F32, buf, sizeof buf);
	ck_assert_msg(strstr(buf, "3+2|x| ulp") == buf, "%s", buf);
	orc_allowance_text("wgsl", OP_POW, DT_BF16, buf, sizeof buf);
	ck_assert_str_eq(buf, "via f32: exp2(y*log2(x)) under their rows + rounding");
	/* truncated, still terminated */
	ck_assert_str_eq(orc_allowance_text("c", OP_EXP, DT_F32, buf, 5), "1 ul");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ulp");
	TCase *t = tcase_create("allowances");
	tcase_set_timeout(t, 120);
	tcase_add_test(t, narrow_formats_have_bounds_where_f32_has);
	tcase_add_test(t, inherited_pow);
	tcase_add_test(t, edges);
	tcase_add_test(t, rows_in_words);
	suite_add_tcase(s, t);
	t = tcase_create("sweep");
	tcase_set_timeout(t, 300);
	tcase_add_loop_test(t, c_backend_within_its_allowances, 0, (int)ARRAY_LEN(sweep_fmts));
	tcase_add_test(t, a_wrong_backend_exceeds);
	tcase_add_test(t, names_and_formats);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
