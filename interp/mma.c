/* interp/mma.c: the matrix units' arithmetic, as data and one function (docs/numerics.md
 * sections 6 and 6a; the method of MMA-Sim, Xie et al., arXiv 2511.10909, and of Khattak and
 * Mikaitis, "Accurate models of NVIDIA tensor cores", 2025; written from their papers'
 * descriptions, no code taken).
 *
 * One instruction of a unit computes, for each element of its tile, d = c + sum a_k * b_k
 * over its k products as a fused dot-add (mma_fdpa):
 *   - every product is exact; a term's exponent is the sum of its operands' exponents (each
 *     operand's significand in [1, 2), a subnormal's below 1 at its format's least normal
 *     exponent), so a product's significand lies in [0, 4): the unit does not normalise it;
 *   - the block's terms (its products and c) are aligned to the largest exponent E among the
 *     nonzero ones, and each is truncated toward zero to `frac` fraction bits below 2^E;
 *   - the truncated terms are added exactly, and the sum is rounded toward zero into the
 *     result format (f32: 23 fraction bits, subnormals down to 2^-149; e8m13: 13).
 * Units that split k inside one instruction (Ampere and Ada for k16 16-bit operands) are
 * two blocks of k / 2 in a row: `block` is the products per fused dot-add.
 *
 * Special values are taken as the hardware is reported to take them: a NaN operand or an
 * inf - inf gives the canonical NaN 0x7fffffff, an inf the inf; a zero sum is +0; a finite
 * sum past f32's range rounds toward zero, to the largest finite value (IEEE 754's RZ).
 * The last three are the model's reading, to be checked by the probes on the device
 * (bench/exp/mma).
 */
#include "interp.h"

#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

const MmaUnit mma_units[] = {
	/* arch     instruction                         ab        acc     k   block frac out rz */
	{"sm_70", "mma.m8n8k4.f32.f16.f16.f32", DT_F16, DT_F32, 4, 4, 23, 23, true},
	{"sm_75", "mma.m16n8k8.f32.f16.f16.f32", DT_F16, DT_F32, 8, 8, 24, 23, true},
	{"sm_80", "mma.m16n8k16.f32.bf16.bf16.f32", DT_BF16, DT_F32, 16, 8, 24, 23, true},
	{"sm_80", "mma.m16n8k16.f32.f16.f16.f32", DT_F16, DT_F32, 16, 8, 24, 23, true},
	{"sm_89", "mma.m16n8k16.f32.bf16.bf16.f32", DT_BF16, DT_F32, 16, 8, 24, 23, true},
	{"sm_89", "mma.m16n8k16.f32.f16.f16.f32", DT_F16, DT_F32, 16, 8, 24, 23, true},
	{"sm_89", "mma.m16n8k32.f32.e4m3.e4m3.f32", DT_E4M3, DT_F32, 32, 16, 13, 13, true},
	{"sm_89", "mma.m16n8k32.f32.e5m2.e5m2.f32", DT_E5M2, DT_F32, 32, 16, 13, 13, true},
	{"sm_90", "mma.m16n8k16.f32.bf16.bf16.f32", DT_BF16, DT_F32, 16, 16, 25, 23, true},
	{"sm_90", "mma.m16n8k16.f32.f16.f16.f32", DT_F16, DT_F32, 16, 16, 25, 23, true},
	{"sm_90", "wgmma.m64nNk32.f32.e4m3.e4m3", DT_E4M3, DT_F32, 32, 32, 13, 13, true},
	{"sm_90", "wgmma.m64nNk32.f32.e5m2.e5m2", DT_E5M2, DT_F32, 32, 32, 13, 13, true},
	{"sm_100", "mma.m16n8k16.f32.bf16.bf16.f32", DT_BF16, DT_F32, 16, 16, 25, 23, true},
	{"sm_100", "mma.m16n8k16.f32.f16.f16.f32", DT_F16, DT_F32, 16, 16, 25, 23, true},
};
const int mma_nunits = (int)(sizeof mma_units / sizeof mma_units[0]);

/* sm_90's wgmma bf16/f16 k16 is the same fused dot-add as its mma.sync k16 (MMA-Sim's
 * Hopper models agree): one row serves both. An arch this table lacks takes the row of the
 * newest arch at or below it (sm_86 is sm_80's; sm_120 is sm_100's). */
const MmaUnit *mma_unit(int sm, Dtype ab, Dtype acc)
{
	const MmaUnit *best = NULL;
	int bsm = -1;
	for (int i = 0; i < mma_nunits; i++) {
		const MmaUnit *u = &mma_units[i];
		int usm = atoi(u->arch + 3);
		if (u->ab == ab && u->acc == acc && usm <= sm && usm > bsm)
			best = u, bsm = usm;
	}
	return best;
}

/* x = sig * 2^e with sig in [1, 2) for a normal x of format f, sig below 1 at f's least
 * normal exponent for a subnormal; sig as an integer m of f's fraction bits: x = m * 2^(e -
 * fb). Zero: m = 0. */
static void split(double x, Dtype f, int64_t *m, int *e)
{
	const DtypeInfo *fi = dt_info(f);
	int fb = fi->prec - 1;                       /* fraction bits */
	int emin = (int)fi->emin + fi->prec - 2;     /* least normal exponent */
	if (x == 0) {
		*m = 0, *e = INT32_MIN / 2;
		return;
	}
	int ex;
	double s = frexp(fabs(x), &ex);   /* [1/2, 1) */
	ex -= 1;                          /* sig = 2s in [1, 2) */
	if (ex < emin)
		ex = emin;
	double mm = ldexp(fabs(x), fb - ex);   /* exact: x is in f */
	(void)s;
	*m = (int64_t)mm * (x < 0 ? -1 : 1);
	*e = ex;
}

/* trunc(m * 2^sh) toward zero, sh <= 0 or small and positive */
static int64_t shift_trunc(int64_t m, int sh)
{
	if (sh >= 0)
		return sh >= 62 ? 0 : m * ((int64_t)1 << sh);   /* the caller keeps it in range */
	if (sh <= -63)
		return 0;
	int64_t a = m < 0 ? -m : m;
	a >>= -sh;
	return m < 0 ? -a : a;
}

/* v = S * 2^q (S an integer, exact) rounded toward zero into the result format: out_frac
 * fraction bits, f32's exponent range (subnormals to 2^-149, overflow to the largest finite). */
static double round_out(const MmaUnit *u, int64_t S, int q)
{
	if (S == 0)
		return 0.0;
	int neg = S < 0;
	uint64_t a = neg ? (uint64_t)(-S) : (uint64_t)S;
	int nb = 64 - __builtin_clzll(a);              /* a in [2^(nb-1), 2^nb) */
	int e = q + nb - 1;                            /* v's exponent */
	if (e < -126)
		e = -126;                                  /* subnormal: the least normal quantum */
	int keep = e - u->out_frac;                    /* the result's quantum is 2^keep */
	if (keep > q) {
		int sh = keep - q;
		a = sh >= 64 ? 0 : a >> sh;
		q = keep;
	}
	double v = ldexp((double)a, q);                /* exact: a has at most out_frac + 1 bits */
	if (v > 3.4028234663852886e38)
		v = 3.4028234663852886e38;
	return neg ? -v : v;
}

double mma_fdpa(const MmaUnit *u, const double *a, const double *b, int n, double c)
{
	/* special values: what the exact sum in double says (a finite product of two 16-bit
	 * or fp8 values is exact and finite in double) */
	double probe = c;
	for (int i = 0; i < n; i++)
		probe += a[i] * b[i];
	if (isnan(probe)) {
		uint32_t q = 0x7fffffffu;
		float f;
		memcpy(&f, &q, sizeof f);
		return f;
	}
	if (isinf(probe))
		return probe;
	int64_t m[65];
	int e[65];
	int nt = 0, E = INT32_MIN;
	int fa = dt_info(u->ab)->prec - 1;
	for (int i = 0; i < n; i++) {
		int64_t ma, mb;
		int ea, eb;
		split(a[i], u->ab, &ma, &ea);
		split(b[i], u->ab, &mb, &eb);
		if (ma == 0 || mb == 0)
			continue;
		m[nt] = ma * mb;          /* significand product, 2 * fa fraction bits */
		e[nt] = ea + eb;
		if (e[nt] > E)
			E = e[nt];
		nt++;
	}
	int64_t mc = 0;
	int ec = 0;
	if (c != 0) {
		split(c, u->acc, &mc, &ec);
		if (ec > E)
			E = ec;
	}
	if (nt == 0 && mc == 0)
		return 0.0;
	/* each term truncated to frac bits below 2^E: T = trunc(sig * 2^(frac + e - E)) */
	int fc = dt_info(u->acc)->prec - 1;
	int64_t S = 0;
	for (int i = 0; i < nt; i++)
		S += shift_trunc(m[i], u->frac + e[i] - E - 2 * fa);
	if (mc)
		S += shift_trunc(mc, u->frac + ec - E - fc);
	return round_out(u, S, E - u->frac);
}
