/* tests/test_mma.c: the matrix units' fused dot-add (interp/mma.c, docs/numerics.md 6, 6a).
 *
 * - cases: hand-worked blocks where the unit's arithmetic differs from IEEE 754's: a term
 *   truncated below the block's largest exponent (not below the sum's), truncation toward
 *   zero of a negative term (not floor), the result rounded toward zero (not to nearest), a
 *   product's significand in [2, 4) not normalised, subnormal operands, Ampere's split of
 *   k, NaN, inf, zero and overflow as the model reads them.
 * - second_model: the same model written a second way, in MPFR (each term truncated with
 *   mpfr_trunc at its quantum, the sum exact, the result rounded toward zero with
 *   mpfr_subnormalize), on 20000 random and adversarial blocks of every row: every bit equal.
 * - table: every row is well formed and the lookup takes the newest row at or below an arch.
 */
#include <math.h>
#include <mpfr.h>
#include "testutil.h"
#include "../compiler/compiler.h"
#include "../interp/interp.h"

static const MmaUnit *unit(int sm, Dtype ab)
{
	const MmaUnit *u = mma_unit(sm, ab, DT_F32);
	ck_assert_ptr_nonnull(u);
	return u;
}

static double f(const MmaUnit *u, const double *a, const double *b, int n, double c)
{
	return mma_fdpa(u, a, b, n, c);
}

START_TEST(cases)
{
	const MmaUnit *h = unit(90, DT_BF16);
	ck_assert_int_eq(h->block, 16);
	ck_assert_int_eq(h->frac, 25);
	/* exact sums stay exact */
	double a[16], b[16];
	for (int i = 0; i < 16; i++)
		a[i] = i + 1, b[i] = 1;
	ck_assert(f(h, a, b, 16, 0) == 136);
	ck_assert(f(h, a, b, 16, 0.5) == 136.5);
	/* 1 + 2^-24 + 2^-25 (+ 2^-25 truncated below 2^(0 - 25)? no: 2^-25 is kept): sum
	 * 1 + 3 * 2^-25, rounded toward zero to f32: 1 (to nearest it would be 1 + 2^-23) */
	double a1[3] = {1, 0x1p-24, 0x1p-25}, b1[3] = {1, 1, 1};
	ck_assert(f(h, a1, b1, 3, 0) == 1.0);
	/* 2^-26 is below the block's quantum 2^-25: dropped although 1 + 2^-26 ... the same 1,
	 * but beside -1 it shows: 1 - 1 + 2^-26 = 0 on the unit, 2^-26 exactly in IEEE */
	double a2[3] = {1, -1, 0x1p-26}, b2[3] = {1, 1, 1};
	ck_assert(f(h, a2, b2, 3, 0) == 0.0);
	ck_assert(!signbit(f(h, a2, b2, 3, 0)));
	double a2b[3] = {1, -1, 0x1p-25};
	ck_assert(f(h, a2b, b2, 3, 0) == 0x1p-25);
	/* truncation toward zero of a negative term: 4 - 2^-24 with the quantum 2^(2 - 25):
	 * -2^-24 truncates to 0, so 4 (floor would give 4 - 2^-23, then 4 - 2^-22 in f32) */
	double a3[2] = {2, -0x1p-24}, b3[2] = {2, 1};
	ck_assert(f(h, a3, b3, 2, 0) == 4.0);
	/* a product's significand in [2, 4) keeps the operands' exponent sum: 1.5 * 1.5 is
	 * 2.25 at exponent 0, so the quantum is 2^-25, not 2^-24: 2.25 - 2.25 + 2^-25 = 2^-25 */
	double a4[3] = {1.5, -1.5, 0x1p-25}, b4[3] = {1.5, 1.5, 1};
	ck_assert(f(h, a4, b4, 3, 0) == 0x1p-25);
	/* c takes part in the alignment: beside c = 2^10 (quantum 2^-15) and a product -2^10,
	 * 2^-16 vanishes (IEEE: 2^-16) and 2^-15 stays */
	double a5[2] = {-1024, 0x1p-16}, a6[2] = {-1024, 0x1p-15}, b5[2] = {1, 1};
	ck_assert(f(h, a5, b5, 2, 1024) == 0);
	ck_assert(f(h, a6, b5, 2, 1024) == 0x1p-15);
	/* subnormal bf16 operands: 2^-130 * 2^-10: exponent -140, kept (the f32 result is
	 * normal enough? 2^-140 is an f32 subnormal: RZ keeps it exactly) */
	double a7[1] = {0x1p-130}, b7[1] = {0x1p-10};
	ck_assert(f(h, a7, b7, 1, 0) == 0x1p-140);
	/* below f32's least subnormal: 2^-140 * 2^-20 = 2^-160 truncates to +0 */
	double b8[1] = {0x1p-20};
	ck_assert(f(h, a7, b8, 1, 0) == 0.0);
	/* f16: a subnormal operand (2^-20) times 1 */
	const MmaUnit *hf = unit(90, DT_F16);
	double a9[1] = {0x1p-20}, b9[1] = {1};
	ck_assert(f(hf, a9, b9, 1, 0) == 0x1p-20);
	/* special values */
	double an[2] = {NAN, 1}, bn[2] = {1, 1};
	double r = f(h, an, bn, 2, 0);
	ck_assert(isnan(r));
	float rf = (float)r;
	uint32_t bits;
	memcpy(&bits, &rf, 4);
	ck_assert_uint_eq(bits, 0x7fffffffu);
	double ai[2] = {INFINITY, 1}, ai2[2] = {INFINITY, -INFINITY};
	ck_assert(f(h, ai, bn, 2, 0) == INFINITY);
	ck_assert(isnan(f(h, ai2, bn, 2, 0)));
	double az[1] = {INFINITY}, bz[1] = {0};
	ck_assert(isnan(f(h, az, bz, 1, 0)));
	/* zeros: +0 even from -0 terms */
	double a0[2] = {-0.0, 0.0}, b0[2] = {1, -1};
	ck_assert(f(h, a0, b0, 2, -0.0) == 0 && !signbit(f(h, a0, b0, 2, -0.0)));
	/* a finite sum past f32's range: toward zero, the largest finite */
	double ao[2] = {0x1p127, 0x1p127}, bo[2] = {2, 2};
	ck_assert(f(h, ao, bo, 2, 0) == 0x1.fffffep127);
	/* Ampere splits k16 into two fused halves: the first half's f32 result (rounded toward
	 * zero) is the second's c */
	const MmaUnit *am = unit(80, DT_BF16);
	ck_assert_int_eq(am->block, 8);
	ck_assert_int_eq(am->frac, 24);
	ck_assert_ptr_eq(unit(86, DT_BF16), am);
	ck_assert_ptr_eq(unit(120, DT_BF16), unit(100, DT_BF16));
	ck_assert_ptr_null(mma_unit(60, DT_BF16, DT_F32));
	ck_assert_ptr_null(mma_unit(90, DT_F32, DT_F32));
}
END_TEST

/* ---- the second model, in MPFR */

static int fmt_frac(Dtype d) { return dt_info(d)->prec - 1; }
static int fmt_emin(Dtype d) { return (int)dt_info(d)->emin + dt_info(d)->prec - 2; }

/* x's exponent as the unit takes it (floor(log2 |x|), at least the format's least normal) */
static int uexp(double x, Dtype d)
{
	int e;
	frexp(x, &e);
	e -= 1;
	return e < fmt_emin(d) ? fmt_emin(d) : e;
}

static double model2(const MmaUnit *u, const double *a, const double *b, int n, double c)
{
	double probe = c;
	for (int i = 0; i < n; i++)
		probe += a[i] * b[i];
	if (!isfinite(probe))
		return isnan(probe) ? NAN : probe;
	int E = INT32_MIN;
	for (int i = 0; i < n; i++)
		if (a[i] != 0 && b[i] != 0 && uexp(a[i], u->ab) + uexp(b[i], u->ab) > E)
			E = uexp(a[i], u->ab) + uexp(b[i], u->ab);
	if (c != 0 && uexp(c, u->acc) > E)
		E = uexp(c, u->acc);
	if (E == INT32_MIN)
		return 0.0;
	mpfr_t s, t;
	mpfr_inits2(400, s, t, (mpfr_ptr)0);
	mpfr_set_zero(s, 1);
	for (int i = 0; i <= n; i++) {
		if (i < n) {
			mpfr_set_d(t, a[i], MPFR_RNDN);
			mpfr_mul_d(t, t, b[i], MPFR_RNDN);   /* exact at 400 bits */
		} else {
			mpfr_set_d(t, c, MPFR_RNDN);
		}
		mpfr_mul_2si(t, t, u->frac - E, MPFR_RNDN);
		mpfr_trunc(t, t);
		mpfr_mul_2si(t, t, E - u->frac, MPFR_RNDN);
		mpfr_add(s, s, t, MPFR_RNDN);          /* exact */
	}
	double r;
	if (mpfr_zero_p(s)) {
		r = 0.0;
	} else {
		/* toward zero into out_frac + 1 bits, the exponent range of f32 */
		mpfr_t o;
		mpfr_init2(o, u->out_frac + 1);
		mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
		mpfr_set_emin(-126 - u->out_frac + 1);   /* subnormals: quantum 2^(-126 - out_frac) */
		mpfr_set_emax(128);
		mpfr_set_emin(mpfr_get_emin_min());
		mpfr_set_emax(mpfr_get_emax_max());
		int tv = mpfr_set(o, s, MPFR_RNDZ);
		mpfr_set_emin(-126 - u->out_frac + 1);
		mpfr_set_emax(128);
		tv = mpfr_check_range(o, tv, MPFR_RNDZ);
		tv = mpfr_subnormalize(o, tv, MPFR_RNDZ);
		(void)tv;
		r = mpfr_get_d(o, MPFR_RNDN);
		mpfr_set_emin(emin);
		mpfr_set_emax(emax);
		mpfr_clear(o);
		if (isinf(r))   /* MPFR's RZ overflow gives the largest finite: keep it so */
			r = copysign(0x1.fffffep127, r);
	}
	mpfr_clears(s, t, (mpfr_ptr)0);
	return r;
}

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void)
{
	rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
	return rs;
}

/* a random value of format d: random sign and significand, the exponent near 0 mostly,
 * now and then anywhere in d's range (subnormals included) */
static double val(Dtype d)
{
	const DtypeInfo *fi = dt_info(d);
	int fb = fi->prec - 1, emin = fmt_emin(d), emax = (int)fi->emax - 1;
	if (rnd() % 16 == 0)
		return 0.0;
	int e = rnd() % 4 == 0 ? emin - fb + (int)(rnd() % (uint64_t)(emax - emin + fb + 1))
			       : (int)(rnd() % 12) - 6;
	double m = 1 + (double)(rnd() % (1ull << fb)) / (double)(1ull << fb);
	double v = ldexp(m, e);
	v = mp_round_to(d, v);
	if (!isfinite(v) || fabs(v) > fi->maxfinite)
		v = fi->maxfinite;
	return rnd() & 1 ? -v : v;
}

START_TEST(second_model)
{
	for (int row = 0; row < mma_nunits; row++) {
		const MmaUnit *u = &mma_units[row];
		for (int it = 0; it < 20000 / mma_nunits + 1; it++) {
			double a[64], b[64];
			int n = u->block;
			int kind = it % 4;
			for (int i = 0; i < n; i++) {
				a[i] = val(u->ab);
				b[i] = val(u->ab);
			}
			if (kind == 1 && n >= 2) {   /* cancellation: a pair that cancels, small rest */
				b[1] = b[0];
				a[1] = -a[0];
			}
			double c = kind == 2 ? mp_round_to(DT_F32, ldexp((double)(rnd() % 1000000), -(int)(rnd() % 40))) : 0.0;
			if (rnd() & 1)
				c = -c;
			double want = model2(u, a, b, n, c), got = mma_fdpa(u, a, b, n, c);
			ck_assert_msg(got == want || (isnan(got) && isnan(want)),
				      "%s %s: block %d: got %a, the MPFR model %a", u->arch, u->instr,
				      it, got, want);
			ck_assert_msg(signbit(got) == signbit(want) || isnan(got),
				      "%s: sign of %a", u->instr, got);
		}
	}
}
END_TEST

START_TEST(table)
{
	for (int i = 0; i < mma_nunits; i++) {
		const MmaUnit *u = &mma_units[i];
		ck_assert(strncmp(u->arch, "sm_", 3) == 0 && atoi(u->arch + 3) >= 70);
		ck_assert(u->k % u->block == 0 && u->block <= 64);
		ck_assert(u->frac >= u->out_frac && u->frac <= 30);
		ck_assert(u->acc == DT_F32 && u->rz);
		ck_assert(fmt_frac(u->ab) <= 10);
	}
}
END_TEST

/* ---- end to end: the emulator and the budget of an `mma` definition */

#include "../oracles/oracles.h"

/* y = a b over K = 40 (two full blocks of 16 and a tail of 8) on bf16 inputs drawn by
 * kind: 0 random, 1 wide exponents, 2 cancelling (b's column sums nearly cancel). */
static void fill(HostTensor *t, int kind, int col)
{
	for (int64_t i = 0; i < t->n; i++) {
		double v;
		if (kind == 0)
			v = ldexp((double)(int64_t)(rnd() % 2001) - 1000, -9);
		else if (kind == 1)
			v = ldexp(1 + (double)(rnd() % 128) / 128, (int)(rnd() % 40) - 20) * (rnd() & 1 ? 1 : -1);
		else
			v = (i / col) % 2 ? -ldexp(1, (int)(i % 7)) : ldexp(1, (int)(i % 7)) * (1 + ldexp(1, -7 - (int)(rnd() % 20)));
		ht_set(t, i, mp_round_to(DT_BF16, v));
	}
}

START_TEST(emulator_and_budget)
{
	static const char *const src =
		"size M = 4, N = 3, K = 40\ninput a : bf16[M, K]\ninput b : bf16[K, N]\n"
		"y[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\noutput y : f32\nschedule\nmma y\n";
	Graph *g = tu_parse(src);
	Schedule s;
	Diag d = {0};
	ck_assert_msg(sched_build(g, &s, &d) == 0, "%s", d.msg);
	const MmaUnit *u = mma_unit(90, DT_BF16, DT_F32);
	int differs = 0;
	double worst = 0;
	for (int kind = 0; kind < 3; kind++) {
		HostTensor in[2];
		int64_t da[2] = {4, 40}, db[2] = {40, 3};
		ck_assert_int_eq(ht_alloc(&in[0], DT_BF16, 2, da), 0);
		ck_assert_int_eq(ht_alloc(&in[1], DT_BF16, 2, db), 0);
		fill(&in[0], kind, 40);
		fill(&in[1], kind, 3);
		OrcEmu oe;
		orc_emu_config(g, &s, &oe);
		MpOpts mo = {0};
		HostTensor em, ex, bud, plain;
		ck_assert_msg(mp_emulate(g, in, &oe.cfg, &mo, &em, NULL, &d) == 0, "%s", d.msg);
		orc_emu_free(&oe);
		ck_assert_msg(mp_exact(g, in, &mo, &ex, NULL, NULL, &d) == 0, "%s", d.msg);
		ck_assert_msg(orc_budget(g, &s, "cuda", in, &bud, &d) == 0, "%s", d.msg);
		Schedule s0;
		sched_default(g, &s0);
		orc_emu_config(g, &s0, &oe);
		ck_assert_msg(mp_emulate(g, in, &oe.cfg, &mo, &plain, NULL, &d) == 0, "%s", d.msg);
		orc_emu_free(&oe);
		sched_free(&s0);
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 3; j++) {
				/* the chain by hand: blocks of 16 in k order from +0 */
				double acc = 0, av[16], bv[16];
				for (int k0 = 0; k0 < 40; k0 += 16) {
					int n = 40 - k0 < 16 ? 40 - k0 : 16;
					for (int q = 0; q < n; q++) {
						av[q] = ht_get(&in[0], i * 40 + k0 + q);
						bv[q] = ht_get(&in[1], (k0 + q) * 3 + j);
					}
					acc = mma_fdpa(u, av, bv, n, acc);
				}
				double got = ht_get(&em, i * 3 + j), x = ht_get(&ex, i * 3 + j);
				ck_assert_msg(got == acc, "kind %d y[%d, %d]: emulated %a, the chain %a",
					      kind, i, j, got, acc);
				differs += got != ht_get(&plain, i * 3 + j);
				double b = ht_get(&bud, i * 3 + j);
				ck_assert_msg(fabs(got - x) <= b, "kind %d y[%d, %d]: |%a - %a| over the "
					      "budget %a", kind, i, j, got, x, b);
				if (b > 0 && fabs(got - x) / b > worst)
					worst = fabs(got - x) / b;
			}
		ht_free(&in[0]), ht_free(&in[1]);
		ht_free(&em), ht_free(&ex), ht_free(&bud), ht_free(&plain);
	}
	/* the unit's arithmetic is not f32's: some elements differ from the plain schedule */
	fprintf(stderr, "mma emulation: %d of 36 elements differ from f32 accumulation; largest error/budget %.3g\n", differs, worst);
	ck_assert_msg(differs > 0, "the mma emulation equals f32 accumulation everywhere");
	/* and the budget is not vacuous */
	ck_assert_msg(worst > 1e-3, "largest error/budget %g", worst);
	sched_free(&s);
	ir_free(g);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mma");
	TCase *t = tcase_create("model");
	tcase_set_timeout(t, 120);
	tcase_add_test(t, cases);
	tcase_add_test(t, second_model);
	tcase_add_test(t, table);
	tcase_add_test(t, emulator_and_budget);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
