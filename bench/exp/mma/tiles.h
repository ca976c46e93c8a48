/* bench/exp/mma/tiles.h: what the matrix-unit experiment computes and how it is stored,
 * shared by the device harness (mma.cu, which nvcc compiles as C++) and the host tools
 * (compare.c, synth.c; C11), so that the host makes bit for bit the tiles the device ran and
 * reads the dump with the same definitions. Header only, in the common subset of C11 and
 * C++17: no designated initialisers, no compound literals, no implicit conversions from
 * void *, and never two draws of the generator in one expression (C and C++ leave the order
 * of a call's arguments unspecified). Every function is static inline, so that a tool that
 * uses a few of them draws no warning for the rest.
 *
 * A tile is one instruction's operands and result: A (m x k), B (k x n), C and D (m x n),
 * each row-major; A and B as the bits of their 16-bit format, C and D as f32 bits. Tile j of
 * an instruction depends only on (instruction, j, the number of random tiles): it has a
 * generator state of its own, so a host tool makes tile j without the tiles before it.
 * An instruction's tiles: MM_NLAYOUT layout tiles (small integers: exact under any
 * arithmetic, so a wrong fragment layout shows at once), nrand tiles of the ten random
 * families in turn, then one tile of each probe (FAM_PBLOCK0 ... FAM_PSPECIAL).
 *
 * The dump, little-endian throughout:
 *   header, 32 bytes: "ASSAYMMA", u32 version (1), u32 sm (the device's compute capability,
 *     90 for 9.0), u32 number of tiles, u32 seed (MM_SEED's low half), u32 flags (MD_*),
 *     u32 zero;
 *   then each tile: u8 instruction (an index of mm_ins), u8 family (FAM_*), u8 m, u8 n,
 *     u8 k, three zero bytes; A as m*k u16, B as k*n u16, C as m*n u32, D as m*n u32.
 */
#ifndef MMA_TILES_H
#define MMA_TILES_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { FMT_BF16, FMT_F16, FMT_F32 };
static const int fmt_mbits[3] = {7, 10, 23}, fmt_ebits[3] = {8, 5, 8}, fmt_bias[3] = {127, 15, 127};

typedef struct {
	const char *name;   /* the PTX instruction */
	int m, n, k;
	int fmt;            /* of A and B; C and D are f32 */
	int wg;             /* 1: a warpgroup's wgmma (sm_90a), 0: a warp's mma.sync */
} MmIns;

static const MmIns mm_ins[] = {
	{"mma.m16n8k16.row.col.f32.bf16.bf16.f32", 16, 8, 16, FMT_BF16, 0},
	{"mma.m16n8k16.row.col.f32.f16.f16.f32", 16, 8, 16, FMT_F16, 0},
	{"mma.m16n8k8.row.col.f32.bf16.bf16.f32", 16, 8, 8, FMT_BF16, 0},
	{"wgmma.mma_async.m64n8k16.f32.bf16.bf16", 64, 8, 16, FMT_BF16, 1},
	{"wgmma.mma_async.m64n8k16.f32.f16.f16", 64, 8, 16, FMT_F16, 1},
};
#define MM_NINS 5

enum {
	FAM_LAYOUT, FAM_RANDOM, FAM_WIDE, FAM_CANCEL, FAM_CBIG, FAM_CTINY, FAM_SUBN, FAM_BIGFIN,
	FAM_OVER, FAM_NANINF, FAM_ZERO,
	FAM_PBLOCK0, FAM_PBLOCKL, FAM_PFRAC, FAM_PROUND, FAM_PSPECIAL, FAM__COUNT
};
static const char *const fam_name[FAM__COUNT] = {
	"layout", "random", "wide", "cancel", "c-big", "c-tiny", "subnormal", "big-finite",
	"overflow", "nan-inf", "zeros", "p-block0", "p-blockL", "p-frac", "p-round", "p-special",
};
#define MM_NLAYOUT 4
#define MM_NRANDFAM 10
#define MM_NPROBE 5
#define MM_SEED 0x5eed6d6d61ull
#define MM_HEADER 32
#define MD_WGMMA 1u        /* the dump holds wgmma tiles */
#define MD_SWAPPED 2u      /* ... run with the descriptor's LBO and SBO swapped (mma.cu) */

/* the tile of largest shape (wgmma's m64n8k16) holds every instruction's */
#define MM_MAXM 64
#define MM_MAXK 16
#define MM_N 8
typedef struct {
	int ins, fam;
	uint16_t a[MM_MAXM * MM_MAXK], b[MM_MAXK * MM_N];
	uint32_t c[MM_MAXM * MM_N], d[MM_MAXM * MM_N];
} Tile;

static inline int tile_count(int nrand) { return MM_NLAYOUT + nrand + MM_NPROBE; }
static inline int tile_fam(int j, int nrand)
{
	if (j < MM_NLAYOUT)
		return FAM_LAYOUT;
	j -= MM_NLAYOUT;
	return j < nrand ? FAM_RANDOM + j % MM_NRANDFAM : FAM_PBLOCK0 + (j - nrand);
}

/* ---- values: bits of each format made from sign, exponent and fraction */

static inline uint32_t sign_bit(int f) { return 1u << (fmt_mbits[f] + fmt_ebits[f]); }
static inline uint32_t inf_bits(int f) { return ((1u << fmt_ebits[f]) - 1) << fmt_mbits[f]; }
static inline uint32_t quiet_bit(int f) { return 1u << (fmt_mbits[f] - 1); }
static inline uint32_t frac_mask(int f) { return (1u << fmt_mbits[f]) - 1; }

/* (-1)^s * 2^e * (1 + m / 2^mbits), e clamped into f's normal range */
static inline uint32_t mk_norm(int f, int s, int e, uint32_t m)
{
	int bias = fmt_bias[f];
	if (e < 1 - bias)
		e = 1 - bias;
	if (e > bias)
		e = bias;
	return (s ? sign_bit(f) : 0) | (uint32_t)(e + bias) << fmt_mbits[f] | (m & frac_mask(f));
}

/* a subnormal: fraction m (made nonzero) */
static inline uint32_t mk_sub(int f, int s, uint32_t m)
{
	m &= frac_mask(f);
	return (s ? sign_bit(f) : 0) | (m ? m : 1);
}

static inline double dec(int f, uint32_t x)
{
	int mb = fmt_mbits[f], eb = fmt_ebits[f], bias = fmt_bias[f];
	uint32_t m = x & frac_mask(f), e = x >> mb & ((1u << eb) - 1);
	double v;
	if (e == (1u << eb) - 1)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp((double)m, 1 - bias - mb);
	else
		v = ldexp((double)(m | 1u << mb), (int)e - bias - mb);
	return x >> (mb + eb) & 1 ? -v : v;
}

/* x as f's bits; x must be a value of f (the probes and layout tiles build only such) */
static inline uint32_t enc(int f, double x)
{
	uint32_t s = signbit(x) ? sign_bit(f) : 0;
	int mb = fmt_mbits[f], emin = 1 - fmt_bias[f], e;
	x = fabs(x);
	if (x == 0)
		return s;
	if (isinf(x))
		return s | inf_bits(f);
	frexp(x, &e);
	e -= 1;                                   /* x in [2^e, 2^(e+1)) */
	if (e < emin)
		return s | (uint32_t)ldexp(x, mb - emin);
	return s | (uint32_t)(e + fmt_bias[f]) << mb | ((uint32_t)ldexp(x, mb - e) & frac_mask(f));
}

/* ---- the generator: xorshift64, one state per tile */

static inline uint64_t rn(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	return *s = x;
}
static inline int ri(uint64_t *s, int lo, int hi) { return lo + (int)(rn(s) % (uint64_t)(hi - lo + 1)); }
static inline int one_in(uint64_t *s, int n) { return rn(s) % (uint64_t)n == 0; }

/* a normal value of f: random sign and fraction, exponent in [elo, ehi] */
static inline uint32_t rv(uint64_t *s, int f, int elo, int ehi)
{
	int sg = (int)(rn(s) & 1);
	int e = ri(s, elo, ehi);
	uint32_t m = (uint32_t)rn(s);
	return mk_norm(f, sg, e, m);
}

/* an inf or a NaN of f: +-inf, +-canonical quiet NaN, a quiet NaN with a payload, a
 * signalling NaN */
static inline uint32_t special(uint64_t *s, int f)
{
	int kind = ri(s, 0, 5);
	uint32_t sg = rn(s) & 1 ? sign_bit(f) : 0, m = (uint32_t)rn(s) & frac_mask(f);
	switch (kind) {
	case 0: return inf_bits(f);
	case 1: return sign_bit(f) | inf_bits(f);
	case 2: return inf_bits(f) | quiet_bit(f);
	case 3: return sign_bit(f) | inf_bits(f) | quiet_bit(f);
	case 4: return sg | inf_bits(f) | quiet_bit(f) | m;
	default: m &= ~quiet_bit(f); return sg | inf_bits(f) | (m ? m : 1);
	}
}

#define TA(i, kk) t->a[(i) * I->k + (kk)]
#define TB(kk, j) t->b[(kk) * I->n + (j)]
#define TC(i, j) t->c[(i) * I->n + (j)]

/* A and B normal with exponents in [elo, ehi], zero one time in pz (never if pz is 0) */
static inline void fill_ab(Tile *t, const MmIns *I, uint64_t *s, int elo, int ehi, int pz)
{
	for (int i = 0; i < I->m * I->k; i++)
		t->a[i] = (uint16_t)(pz && one_in(s, pz) ? 0 : rv(s, I->fmt, elo, ehi));
	for (int i = 0; i < I->k * I->n; i++)
		t->b[i] = (uint16_t)(pz && one_in(s, pz) ? 0 : rv(s, I->fmt, elo, ehi));
}

static inline void fill_c(Tile *t, const MmIns *I, uint64_t *s, int elo, int ehi, int pz)
{
	for (int i = 0; i < I->m * I->n; i++)
		t->c[i] = pz && one_in(s, pz) ? 0 : rv(s, FMT_F32, elo, ehi);
}

/* products k and k+1 cancel exactly in every element: a[k+1] = -a[k], b[k+1] = b[k] */
static inline void cancel_pairs(Tile *t, const MmIns *I, int kend)
{
	for (int kk = 0; kk + 1 < kend; kk += 2) {
		for (int i = 0; i < I->m; i++)
			TA(i, kk + 1) = (uint16_t)(TA(i, kk) ^ sign_bit(I->fmt));
		for (int j = 0; j < I->n; j++)
			TB(kk + 1, j) = TB(kk, j);
	}
}

/* ---- the ten random families */

static inline void gen_subn(Tile *t, const MmIns *I, uint64_t *s)
{
	/* even rows tiny (subnormal or least normal), odd rows near 1; columns 0-3 of B large
	 * (a subnormal times them lands in f32's normal range), 4-7 small or subnormal (the
	 * products fall into f32's subnormals, or below) */
	int f = I->fmt, bf = f == FMT_BF16;
	for (int i = 0; i < I->m; i++)
		for (int kk = 0; kk < I->k; kk++) {
			int sg = (int)(rn(s) & 1);
			uint32_t m = (uint32_t)rn(s);
			if (i % 2 == 0)
				TA(i, kk) = (uint16_t)(m & 1 ? mk_sub(f, sg, m >> 1) : rv(s, f, bf ? -126 : -14, bf ? -120 : -12));
			else
				TA(i, kk) = (uint16_t)rv(s, f, -3, 3);
		}
	for (int kk = 0; kk < I->k; kk++)
		for (int j = 0; j < I->n; j++) {
			int sg = (int)(rn(s) & 1);
			uint32_t m = (uint32_t)rn(s);
			if (j < 4)
				TB(kk, j) = (uint16_t)rv(s, f, bf ? 100 : 8, bf ? 120 : 15);
			else
				TB(kk, j) = (uint16_t)(m & 1 ? mk_sub(f, sg, m >> 1) : rv(s, f, bf ? -20 : -14, bf ? 0 : -5));
		}
	for (int i = 0; i < I->m * I->n; i++) {
		int kind = ri(s, 0, 3);
		uint32_t m = (uint32_t)rn(s);
		t->c[i] = kind < 2 ? 0 : kind == 2 ? mk_sub(FMT_F32, (int)(m >> 31), m) : rv(s, FMT_F32, -30, 0);
	}
}

/* products past f32's range in pairs that nearly cancel (bf16); f16's products cannot pass
 * it, so there c sits just below FLT_MAX beside nearly cancelling large products */
static inline void gen_bigfin(Tile *t, const MmIns *I, uint64_t *s)
{
	int f = I->fmt, bf = f == FMT_BF16;
	fill_ab(t, I, s, -3, 3, 0);
	for (int kk = 0; kk < 4; kk += 2) {
		for (int j = 0; j < I->n; j++)
			TB(kk, j) = TB(kk + 1, j) = (uint16_t)rv(s, f, bf ? 62 : 10, bf ? 66 : 15);
		for (int i = 0; i < I->m; i++) {
			uint32_t a = rv(s, f, bf ? 62 : 10, bf ? 66 : 15);
			int m = (int)(a & frac_mask(f)) + ri(s, -1, 1);
			if (m < 0 || m > (int)frac_mask(f))
				m = (int)(a & frac_mask(f));
			TA(i, kk) = (uint16_t)a;
			TA(i, kk + 1) = (uint16_t)(((a & ~frac_mask(f)) | (uint32_t)m) ^ sign_bit(f));
		}
	}
	for (int i = 0; i < I->m * I->n; i++) {
		uint32_t sg = rn(s) & 1 ? 0x80000000u : 0;
		int d = ri(s, 0, 15);
		t->c[i] = bf ? (one_in(s, 4) ? 0 : rv(s, FMT_F32, -3, 100)) : sg | (0x7f7fffffu - (uint32_t)d);
	}
}

/* sums past FLT_MAX: four large products of one sign per row (bf16), now and then one far
 * past it; f16: c just below FLT_MAX and products of its sign */
static inline void gen_over(Tile *t, const MmIns *I, uint64_t *s)
{
	int f = I->fmt, bf = f == FMT_BF16;
	fill_ab(t, I, s, -3, 3, 0);
	for (int kk = 0; kk < 4; kk++)
		for (int j = 0; j < I->n; j++) {
			int e = ri(s, bf ? 63 : 10, bf ? 64 : 15);
			TB(kk, j) = (uint16_t)mk_norm(f, 0, e, (uint32_t)rn(s));
		}
	if (!bf)   /* every product of a row takes the row's sign */
		for (int i = 0; i < I->k * I->n; i++)
			t->b[i] &= (uint16_t)~sign_bit(f);
	for (int i = 0; i < I->m; i++) {
		int sg = (int)(rn(s) & 1);
		for (int kk = 0; kk < (bf ? 4 : I->k); kk++) {
			int e = ri(s, bf ? 63 : 10, bf ? 64 : 15);
			if (bf && i % 4 == 3 && kk == 0)
				e = ri(s, 64, 100);
			TA(i, kk) = (uint16_t)mk_norm(f, sg, e, (uint32_t)rn(s));
		}
		for (int j = 0; j < I->n; j++) {
			int d = ri(s, 0, 15);
			uint32_t big = (sg ? 0x80000000u : 0) | (0x7f7fffffu - (uint32_t)d);
			TC(i, j) = bf && !one_in(s, 4) ? rv(s, FMT_F32, -3, 3) : big;
		}
	}
}

static inline void gen_random(Tile *t, const MmIns *I, uint64_t *s, int fam)
{
	int f = I->fmt, bf = f == FMT_BF16;
	switch (fam) {
	case FAM_RANDOM:
		fill_ab(t, I, s, -3, 3, 16);
		fill_c(t, I, s, -3, 5, 8);
		break;
	case FAM_WIDE:
		fill_ab(t, I, s, bf ? -20 : -14, bf ? 20 : 15, 16);
		fill_c(t, I, s, -30, 30, 8);
		break;
	case FAM_CANCEL:   /* all but the last four products cancel in pairs */
		fill_ab(t, I, s, -3, 3, 0);
		cancel_pairs(t, I, I->k - 4);
		for (int i = 0; i < I->m; i++)
			for (int kk = I->k - 4; kk < I->k; kk++)
				TA(i, kk) = (uint16_t)rv(s, f, -12, -6);
		if (rn(s) & 1)
			fill_c(t, I, s, -20, -8, 4);
		break;
	case FAM_CBIG:
		fill_ab(t, I, s, -3, 3, 16);
		fill_c(t, I, s, 12, 30, 0);
		break;
	case FAM_CTINY:    /* half the tiles: every product cancels, so the exact sum is c */
		fill_ab(t, I, s, -3, 3, 0);
		if (rn(s) & 1)
			cancel_pairs(t, I, I->k);
		for (int i = 0; i < I->m * I->n; i++) {
			uint32_t m = (uint32_t)rn(s);
			t->c[i] = one_in(s, 8) ? mk_sub(FMT_F32, (int)(m >> 31), m) : rv(s, FMT_F32, -45, -20);
		}
		break;
	case FAM_SUBN:
		gen_subn(t, I, s);
		break;
	case FAM_BIGFIN:
		gen_bigfin(t, I, s);
		break;
	case FAM_OVER:
		gen_over(t, I, s);
		break;
	case FAM_NANINF:   /* random, zeros (for inf * 0), then infs and NaNs sprinkled */
		fill_ab(t, I, s, -3, 3, 8);
		fill_c(t, I, s, -3, 5, 8);
		for (int i = 0; i < I->m * I->k; i++)
			if (one_in(s, 32))
				t->a[i] = (uint16_t)special(s, f);
		for (int i = 0; i < I->k * I->n; i++)
			if (one_in(s, 32))
				t->b[i] = (uint16_t)special(s, f);
		for (int i = 0; i < I->m * I->n; i++)
			if (one_in(s, 16))
				t->c[i] = special(s, FMT_F32);
		break;
	case FAM_ZERO: {   /* zero products, c = -0 three times in four; a zero's sign is its
			    * row's (A) or column's (B), so that a quarter of the elements have
			    * every product -0 (IEEE 754: -0 with c = -0), or random (kind 3) */
		int kind = ri(s, 0, 3);
		fill_ab(t, I, s, -3, 3, 0);
		for (int i = 0; i < I->m * I->k; i++) {
			uint32_t sg = kind == 3 ? (uint32_t)rn(s) & 1 : (uint32_t)(i / I->k) & 1;
			if (kind != 2)
				t->a[i] = (uint16_t)(sg ? sign_bit(f) : 0);
		}
		for (int i = 0; i < I->k * I->n; i++) {
			uint32_t sg = kind == 3 ? (uint32_t)rn(s) & 1 : (uint32_t)(i % I->n) & 1;
			if (kind != 1)
				t->b[i] = (uint16_t)(sg ? sign_bit(f) : 0);
		}
		for (int i = 0; i < I->m * I->n; i++)
			t->c[i] = one_in(s, 4) ? 0 : 0x80000000u;
		break;
	}
	}
}

/* ---- the probes (mma.cu prints what they show; the row's case is i % 16) */

/* block size: X*X at k = 0 (or k-1) against c = -X*X, a small term at k = row: it survives
 * only where it is not fused in one block with X*X */
static inline void gen_pblock(Tile *t, const MmIns *I, int last)
{
	int f = I->fmt, kb = last ? I->k - 1 : 0;
	for (int kk = 0; kk < I->k; kk++)
		for (int j = 0; j < I->n; j++)
			TB(kk, j) = (uint16_t)enc(f, kk == kb ? 0x1p7 : 0x1p-10);
	for (int i = 0; i < I->m; i++) {
		int r = i % 16;
		TA(i, kb) = (uint16_t)enc(f, 0x1p7);
		if (r < I->k && r != kb && (last || r > 0))
			TA(i, r) = (uint16_t)enc(f, 0x1p-10);
		for (int j = 0; j < I->n; j++)
			TC(i, j) = enc(FMT_F32, -0x1p14);
	}
}

/* fraction bits: a term of 2^t (t = 15 + row) cancelled exactly, beside +-1 (column parity):
 * the 1 survives only while t <= frac. Columns 0-3: the 2^t pair are products; 4-5: c and a
 * product; 6-7: products 2.25 * 2^t, of exponent sum t (the model: not normalised) */
static inline void gen_pfrac(Tile *t, const MmIns *I)
{
	int f = I->fmt;
	for (int j = 0; j < I->n; j++) {
		TB(0, j) = (uint16_t)enc(f, j < 4 ? 0x1p15 : 0);
		TB(1, j) = (uint16_t)enc(f, j < 6 ? 0x1p15 : 0);
		TB(2, j) = (uint16_t)enc(f, j % 2 ? -1.0 : 1.0);
		TB(3, j) = TB(4, j) = (uint16_t)enc(f, j >= 6 ? 0x1.8p15 : 0);
	}
	for (int i = 0; i < I->m; i++) {
		int r = i % 16;
		TA(i, 0) = (uint16_t)enc(f, ldexp(1, r));
		TA(i, 1) = (uint16_t)enc(f, -ldexp(1, r));
		TA(i, 2) = (uint16_t)enc(f, 1.0);
		TA(i, 3) = (uint16_t)enc(f, ldexp(1.5, r));
		TA(i, 4) = (uint16_t)enc(f, -ldexp(1.5, r));
		for (int j = 0; j < I->n; j++)
			TC(i, j) = j == 4 || j == 5 ? enc(FMT_F32, ldexp(1, 15 + r)) : 0;
	}
}

/* the result's rounding: exact sums s * (1.5 + f ulp), f from round_f, s = + in rows 0-7;
 * 1.5 a product in columns 0-3, c in 4-7 */
static const double round_f[8] = {0.25, 0.5, 0.75, 1.5, -0.25, -0.5, -0.75, -1.5};
static inline void gen_pround(Tile *t, const MmIns *I)
{
	int f = I->fmt;
	for (int j = 0; j < I->n; j++) {
		TB(0, j) = (uint16_t)enc(f, j < 4 ? 1.0 : 0);
		TB(1, j) = (uint16_t)enc(f, 0x1p-12);
	}
	for (int i = 0; i < I->m; i++) {
		int r = i % 16;
		double sg = r < 8 ? 1 : -1;
		TA(i, 0) = (uint16_t)enc(f, sg * 1.5);
		TA(i, 1) = (uint16_t)enc(f, sg * round_f[r % 8] * 0x1p-11);
		for (int j = 0; j < I->n; j++)
			TC(i, j) = j >= 4 ? enc(FMT_F32, sg * 1.5) : 0;
	}
}

/* special values, one case a row (mma.cu's special_case names them): signed zeros, sums
 * past FLT_MAX, NaN payloads in A and in C, inf - inf, inf * 0. B holds 1, 1, BIG, BIG, 1,
 * 0 in k = 0..5 of columns 0-5; its last k is 0 there, +inf in column 6, a NaN in column 7 */
static const uint32_t nan_a_bf16[3] = {0x7fa5, 0x7f81, 0xffc3}, nan_a_f16[3] = {0x7e55, 0x7c01, 0xfe03};
static inline void gen_pspecial(Tile *t, const MmIns *I)
{
	int f = I->fmt, bf = f == FMT_BF16, K = I->k;
	double big = bf ? 0x1p64 : 0x1p15, huge = bf ? 0x1.8p127 : 65504, ulp = bf ? 0x1p104 : 0x1p15;
	const double bk[6] = {1, 1, big, big, 1, 0};
	for (int kk = 0; kk < K; kk++)
		for (int j = 0; j < I->n; j++)
			TB(kk, j) = (uint16_t)(kk < 6 ? enc(f, bk[kk]) : 0);
	for (int j = 0; j < I->n; j++)
		TB(K - 1, j) = (uint16_t)(j < 6 ? 0 : j == 6 ? inf_bits(f) : bf ? 0x7fd1 : 0x7e11);
	for (int i = 0; i < I->m; i++) {
		int r = i % 16;
		uint32_t c = 0, neg0 = sign_bit(f);
		TA(i, K - 1) = (uint16_t)enc(f, 1.0);
		switch (r) {
		case 0: TA(i, K - 1) = 0; c = 0x80000000u; break;
		case 1: case 2:
			for (int kk = 0; kk < K; kk++)
				TA(i, kk) = (uint16_t)neg0;
			c = r == 1 ? 0x80000000u : 0;
			break;
		case 3: TA(i, 0) = (uint16_t)enc(f, 1.0); TA(i, 1) = (uint16_t)enc(f, -1.0); c = 0x80000000u; break;
		case 4: TA(i, 0) = TA(i, 1) = (uint16_t)enc(f, huge); break;
		case 5: TA(i, 2) = (uint16_t)enc(f, big); break;
		case 6: TA(i, 2) = (uint16_t)enc(f, big); TA(i, 3) = (uint16_t)enc(f, -big); TA(i, 0) = (uint16_t)enc(f, 1.0); break;
		case 7: TA(i, 0) = (uint16_t)enc(f, ulp); c = 0x7f7fffffu; break;
		case 8: TA(i, 0) = (uint16_t)enc(f, -ulp); c = 0xff7fffffu; break;
		case 9: case 10: case 11: TA(i, 0) = (uint16_t)(bf ? nan_a_bf16[r - 9] : nan_a_f16[r - 9]); break;
		case 12: TA(i, 0) = (uint16_t)enc(f, 1.0); c = 0x7fc12345u; break;
		case 13: TA(i, 0) = (uint16_t)enc(f, 1.0); c = 0xff800001u; break;
		case 14: TA(i, 0) = (uint16_t)inf_bits(f); TA(i, 1) = (uint16_t)(inf_bits(f) | sign_bit(f)); break;
		default: TA(i, 5) = (uint16_t)inf_bits(f); TA(i, 0) = (uint16_t)enc(f, 1.0); break;
		}
		for (int j = 0; j < I->n; j++)
			TC(i, j) = c;
	}
}

/* tile j of instruction ins, of an instruction list with nrand random tiles */
static inline void gen_tile(Tile *t, int ins, int j, int nrand)
{
	const MmIns *I = &mm_ins[ins];
	uint64_t s = MM_SEED ^ (uint64_t)ins << 56 ^ (uint64_t)(j + 1) * 0x9e3779b97f4a7c15ull;
	if (s == 0)
		s = 1;
	for (int w = 0; w < 4; w++)
		rn(&s);
	memset(t, 0, sizeof *t);
	t->ins = ins;
	t->fam = tile_fam(j, nrand);
	switch (t->fam) {
	case FAM_LAYOUT:   /* small integers: every sum exact in f32 */
		for (int i = 0; i < I->m * I->k; i++)
			t->a[i] = (uint16_t)enc(I->fmt, ri(&s, -8, 8));
		for (int i = 0; i < I->k * I->n; i++)
			t->b[i] = (uint16_t)enc(I->fmt, ri(&s, -8, 8));
		for (int i = 0; i < I->m * I->n; i++)
			t->c[i] = enc(FMT_F32, ri(&s, -1000, 1000));
		break;
	case FAM_PBLOCK0: gen_pblock(t, I, 0); break;
	case FAM_PBLOCKL: gen_pblock(t, I, 1); break;
	case FAM_PFRAC: gen_pfrac(t, I); break;
	case FAM_PROUND: gen_pround(t, I); break;
	case FAM_PSPECIAL: gen_pspecial(t, I); break;
	default: gen_random(t, I, &s, t->fam); break;
	}
}

#undef TA
#undef TB
#undef TC

/* ---- the dump */

static inline void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
}
static inline uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline int dump_header(FILE *f, uint32_t sm, uint32_t ntiles, uint32_t flags)
{
	unsigned char h[MM_HEADER] = {0};
	memcpy(h, "ASSAYMMA", 8);
	put32(h + 8, 1), put32(h + 12, sm), put32(h + 16, ntiles);
	put32(h + 20, (uint32_t)MM_SEED), put32(h + 24, flags);
	return fwrite(h, 1, sizeof h, f) == sizeof h ? 0 : -1;
}

/* -1 for a file that is not a version-1 dump */
static inline int read_header(FILE *f, uint32_t *sm, uint32_t *ntiles, uint32_t *flags)
{
	unsigned char h[MM_HEADER];
	if (fread(h, 1, sizeof h, f) != sizeof h || memcmp(h, "ASSAYMMA", 8) || get32(h + 8) != 1)
		return -1;
	*sm = get32(h + 12), *ntiles = get32(h + 16), *flags = get32(h + 24);
	return 0;
}

static inline size_t tile_bytes(const MmIns *I)
{
	return 8 + 2 * (size_t)(I->m * I->k + I->k * I->n) + 8 * (size_t)(I->m * I->n);
}

static inline int dump_tile(FILE *f, const Tile *t)
{
	const MmIns *I = &mm_ins[t->ins];
	unsigned char buf[8 + 2 * (MM_MAXM * MM_MAXK + MM_MAXK * MM_N) + 8 * MM_MAXM * MM_N], *p = buf + 8;
	memset(buf, 0, 8);
	buf[0] = (unsigned char)t->ins, buf[1] = (unsigned char)t->fam;
	buf[2] = (unsigned char)I->m, buf[3] = (unsigned char)I->n, buf[4] = (unsigned char)I->k;
	for (int i = 0; i < I->m * I->k; i++, p += 2)
		p[0] = (unsigned char)t->a[i], p[1] = (unsigned char)(t->a[i] >> 8);
	for (int i = 0; i < I->k * I->n; i++, p += 2)
		p[0] = (unsigned char)t->b[i], p[1] = (unsigned char)(t->b[i] >> 8);
	for (int i = 0; i < I->m * I->n; i++, p += 4)
		put32(p, t->c[i]);
	for (int i = 0; i < I->m * I->n; i++, p += 4)
		put32(p, t->d[i]);
	return fwrite(buf, 1, (size_t)(p - buf), f) == (size_t)(p - buf) ? 0 : -1;
}

/* 1: a tile read; 0: the end of the file; -1: a malformed or cut-off record */
static inline int read_tile(FILE *f, Tile *t)
{
	unsigned char buf[8 + 2 * (MM_MAXM * MM_MAXK + MM_MAXK * MM_N) + 8 * MM_MAXM * MM_N];
	size_t got = fread(buf, 1, 8, f);
	if (got == 0)
		return 0;
	if (got != 8 || buf[0] >= MM_NINS || buf[1] >= FAM__COUNT)
		return -1;
	const MmIns *I = &mm_ins[buf[0]];
	if (buf[2] != I->m || buf[3] != I->n || buf[4] != I->k)
		return -1;
	size_t rest = tile_bytes(I) - 8;
	if (fread(buf + 8, 1, rest, f) != rest)
		return -1;
	memset(t, 0, sizeof *t);
	t->ins = buf[0], t->fam = buf[1];
	const unsigned char *p = buf + 8;
	for (int i = 0; i < I->m * I->k; i++, p += 2)
		t->a[i] = (uint16_t)(p[0] | p[1] << 8);
	for (int i = 0; i < I->k * I->n; i++, p += 2)
		t->b[i] = (uint16_t)(p[0] | p[1] << 8);
	for (int i = 0; i < I->m * I->n; i++, p += 4)
		t->c[i] = get32(p);
	for (int i = 0; i < I->m * I->n; i++, p += 4)
		t->d[i] = get32(p);
	return 1;
}

#endif
