/* bench/exp/mma/probes.h: the MMA-Sim-style probes as text (Xie et al., arXiv 2511.10909;
 * written from the paper's description, no code taken): for each probe tile of tiles.h,
 * what the unit gave beside what the model's row for the device says, by construction.
 * Shared by mma.cu (the unit's D) and synth.c (the model's own D, so that the text the
 * model predicts can be set beside the device's). Common C11 / C++17, like tiles.h.
 */
#ifndef MMA_PROBES_H
#define MMA_PROBES_H

#include "tiles.h"

/* the model's row (interp/mma.c's mma_units) for compute capability sm: block and fraction
 * bits (a copy of two columns of that table: the device has no access to the library) */
static inline void model_row(int sm, const MmIns *I, int *block, int *frac)
{
	*block = sm >= 90 ? 16 : 8;
	*frac = sm >= 90 ? 25 : 24;
	if (*block > I->k)
		*block = I->k;
}

static inline uint32_t pd(const Tile *t, int i, int n) { return t->d[i * mm_ins[t->ins].n + n]; }

/* every column alike, and rows 16.. repeating rows 0..15 (wgmma's m64), as built */
static inline void same_check(const Tile *t, int ncols_alike)
{
	const MmIns *I = &mm_ins[t->ins];
	int odd = 0;
	for (int i = 0; i < I->m; i++)
		for (int n = 0; n < I->n; n++)
			if ((n < ncols_alike && pd(t, i, n) != pd(t, i, 0)) || pd(t, i, n) != pd(t, i % 16, n))
				odd++;
	if (odd)
		printf("    note: %d elements differ from the ones they copy (columns alike, rows mod 16)\n", odd);
}

/* block size: row r holds 2^-20 at k = r; '1' where it came out (not fused with X*X) */
static inline void probe_block(const Tile *t, int last, int sm)
{
	const MmIns *I = &mm_ins[t->ins];
	int block, frac, kb = last ? I->k - 1 : 0, lo = last ? 0 : 1, hi = last ? I->k - 1 : I->k;
	char got[17] = {0}, want[17] = {0};
	model_row(sm, I, &block, &frac);
	for (int r = lo; r < hi; r++) {
		uint32_t d = pd(t, r, 0);
		got[r - lo] = d == enc(FMT_F32, 0x1p-20) ? '1' : d == 0 ? '0' : '?';
		/* the model: c and k = 0 open the first block; the small term survives where it
		 * starts a block of its own, after X*X - X*X was rounded to 0 */
		want[r - lo] = !last && r >= block ? '1' : '0';
	}
	printf("  %s: X*X at k=%d, c=-X*X, 2^-20 at k=r (r=%d..%d); 1 where it survives\n",
	       last ? "block, big term last" : "block", kb, lo, hi - 1);
	printf("    unit  %s\n    model %s  (block %d)\n", got, want, block);
	for (int r = lo; r < hi; r++)
		if (got[r - lo] == '?')
			printf("    row %d: %a (0x%08x)\n", r, dec(FMT_F32, pd(t, r, 0)), pd(t, r, 0));
	if (!last) {
		int first = 0;
		for (int r = lo; r < hi && !first; r++)
			if (got[r - lo] == '1')
				first = r;
		if (first)
			printf("    products fused with k=0: measured %d, model %d\n", first, block);
		else
			printf("    products fused with k=0: measured >= %d (all of k), model %d\n", I->k, block);
	}
	same_check(t, I->n);
}

/* fraction bits: a 2^t pair cancels (t = 15 + row) beside +-1 */
static inline void probe_frac(const Tile *t, int sm)
{
	static const int col[6] = {0, 1, 4, 5, 6, 7};
	static const char *what[6] = {"products, +1", "products, -1", "c vs product, +1",
				      "c vs product, -1", "2.25*2^t products, +1", "2.25*2^t products, -1"};
	const MmIns *I = &mm_ins[t->ins];
	int block, frac;
	model_row(sm, I, &block, &frac);
	char want[17] = {0};
	for (int r = 0; r < 16; r++)
		want[r] = 15 + r <= frac ? '1' : '0';
	printf("  fraction bits: 2^t - 2^t + (+-1), t = 15..30 by row; 1 where the 1 survives\n");
	printf("    model                  %s  (frac %d: survives while t <= %d)\n", want, frac, frac);
	for (int c = 0; c < 6; c++) {
		char got[17] = {0};
		int last = 0;
		double one = col[c] % 2 ? -1.0 : 1.0;
		for (int r = 0; r < 16; r++) {
			uint32_t d = pd(t, r, col[c]);
			got[r] = d == enc(FMT_F32, one) ? '1' : d == 0 ? '0' : d == 0x80000000u ? '-' : '?';
			if (got[r] == '1')
				last = 15 + r;
		}
		printf("    %-22s %s  (measured: kept while t <= %d)\n", what[c], got, last);
		for (int r = 0; r < 16; r++)
			if (got[r] == '?')
				printf("      t=%d: %a\n", 15 + r, dec(FMT_F32, pd(t, r, col[c])));
	}
	same_check(t, 1);
}

/* rounding: exact sums s (1.5 + f ulp); the result's offset from s 1.5, in ulps */
static inline void probe_round(const Tile *t, int sm)
{
	const MmIns *I = &mm_ins[t->ins];
	int block, frac, agree[5] = {0, 0, 0, 0, 0};
	static const char *mode[5] = {"RZ", "RN", "RU", "RD", "model"};
	model_row(sm, I, &block, &frac);
	printf("  rounding: exact sums s*(1.5 + f ulp); the result minus s*1.5, in ulps (of 1.5)\n");
	printf("    %-18s %8s %8s   %4s %4s %4s %4s %6s\n", "exact sum", "1.5 prod", "1.5 is c",
	       "RZ", "RN", "RU", "RD", "model");
	for (int r = 0; r < 16; r++) {
		double s = r < 8 ? 1 : -1, f = round_f[r % 8], o = s * f;
		double q = ldexp(1, 23 - frac), fm = copysign(floor(fabs(f) / q) * q, f);
		/* + 0.0: no -0 in the table */
		double m[5] = {s * floor(f) + 0.0, nearbyint(o) + 0.0, ceil(o) + 0.0, floor(o) + 0.0,
			       s * floor(fm) + 0.0};
		double g0 = (dec(FMT_F32, pd(t, r, 0)) - s * 1.5) / 0x1p-23 + 0.0;
		double g4 = (dec(FMT_F32, pd(t, r, 4)) - s * 1.5) / 0x1p-23 + 0.0;
		printf("    %c(1.5 %+5.2f ulp)    %+8g %+8g   %+4g %+4g %+4g %+4g %+6g\n", r < 8 ? '+' : '-',
		       f, g0, g4, m[0], m[1], m[2], m[3], m[4]);
		for (int k = 0; k < 5; k++)
			agree[k] += (g0 == m[k]) + (g4 == m[k]);
	}
	printf("    of 32 results:");
	for (int k = 0; k < 5; k++)
		printf(" %s %d", mode[k], agree[k]);
	printf("\n");
	same_check(t, 4);
}

static const char *special_case[16] = {
	"+0 products, c=-0", "-0 products, c=-0", "-0 products, c=+0", "1 - 1, c=-0",
	"HUGE + HUGE", "BIG*BIG", "BIG*BIG - BIG*BIG + 1", "c=FLT_MAX, + ULP",
	"c=-FLT_MAX, - ULP", "A qNaN payload", "A sNaN", "A -qNaN payload",
	"c NaN 0x7fc12345", "c sNaN 0xff800001", "inf - inf", "inf * 0",
};

/* the model's d (interp/mma.c: canonical NaN 0x7fffffff, a zero sum +0, past FLT_MAX the
 * largest finite); HUGE, BIG, ULP are 1.5*2^127, 2^64, 2^104 for bf16, 65504, 2^15, 2^15
 * for f16 (gen_pspecial) */
static inline uint32_t special_model(int r, int bf)
{
	switch (r) {
	case 0: case 1: case 2: case 3: case 6: return 0;
	case 4: return bf ? 0x7f7fffffu : enc(FMT_F32, 131008);
	case 5: return bf ? 0x7f7fffffu : enc(FMT_F32, 0x1p30);
	case 7: return 0x7f7fffffu;
	case 8: return 0xff7fffffu;
	default: return 0x7fffffffu;
	}
}

/* what a correctly rounded (to nearest) fused sum would give; a NaN operand's payload
 * widened and quieted (IEEE 754's recommendation), 0x7fc00000 for inf - inf and inf * 0 */
static inline uint32_t special_ieee(int r, int bf, uint32_t a0)
{
	uint32_t nan = bf ? a0 << 16 | 0x400000u
			  : (a0 & 0x8000u) << 16 | 0x7fc00000u | (a0 & 0x3ffu) << 13;
	switch (r) {
	case 0: case 2: case 3: return 0;
	case 1: return 0x80000000u;
	case 4: return bf ? 0x7f800000u : enc(FMT_F32, 131008);
	case 5: return bf ? 0x7f800000u : enc(FMT_F32, 0x1p30);
	case 6: return 0x3f800000u;
	case 7: return bf ? 0x7f800000u : 0x7f7fffffu;
	case 8: return bf ? 0xff800000u : 0xff7fffffu;
	case 9: case 10: case 11: return nan;
	case 12: return 0x7fc12345u;
	case 13: return 0xffc00001u;
	default: return 0x7fc00000u;
	}
}

static inline void probe_special(const Tile *t)
{
	const MmIns *I = &mm_ins[t->ins];
	int bf = I->fmt == FMT_BF16;
	printf("  special values (col 0; col 6 adds +inf * A's last k, col 7 a NaN of B %s):\n",
	       bf ? "0x7fd1" : "0x7e11");
	printf("    %-24s %10s %10s %10s   %10s %10s\n", "case", "unit", "model", "IEEE RN",
	       "col 6", "col 7");
	for (int r = 0; r < 16; r++) {
		uint32_t m = special_model(r, bf), e = special_ieee(r, bf, t->a[r * I->k]);
		uint32_t c6 = r < 3 || r > 8 ? 0x7fffffffu : 0x7f800000u;
		printf("    %-24s 0x%08x 0x%08x 0x%08x   0x%08x 0x%08x%s\n", special_case[r], pd(t, r, 0), m,
		       e, pd(t, r, 6), pd(t, r, 7),
		       pd(t, r, 0) != m || pd(t, r, 6) != c6 || pd(t, r, 7) != 0x7fffffffu ? "  <- not the model" : "");
	}
	printf("    (model: col 6 0x%08x in rows 0-2 and 9-15, 0x7f800000 in 3-8; col 7 0x7fffffff)\n",
	       0x7fffffffu);
	if (!bf)
		printf("    (f16 cannot pass FLT_MAX with its products: rows 4-8 test c near FLT_MAX)\n");
	same_check(t, 6);
}

static inline void probes(const Tile *h, int nt, int sm)
{
	for (int j = 0; j < nt; j++)
		switch (h[j].fam) {
		case FAM_PBLOCK0: probe_block(&h[j], 0, sm); break;
		case FAM_PBLOCKL: probe_block(&h[j], 1, sm); break;
		case FAM_PFRAC: probe_frac(&h[j], sm); break;
		case FAM_PROUND: probe_round(&h[j], sm); break;
		case FAM_PSPECIAL: probe_special(&h[j]); break;
		}
}


#endif
