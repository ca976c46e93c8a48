/* bench/exp/mma/model.h: a tile's D element as the project's model computes it
 * (interp/mma.c), shared by compare.c and synth.c. Host C11 only; needs tiles.h first and
 * the project's library (-I at the repository root, build/libassay.a).
 */
#ifndef MMA_MODEL_H
#define MMA_MODEL_H

#include "interp/interp.h"

/* the model's row for instruction ins on compute capability sm; NULL when it has none */
static inline const MmaUnit *model_unit(uint32_t sm, int ins)
{
	return mma_unit((int)sm, mm_ins[ins].fmt == FMT_BF16 ? DT_BF16 : DT_F16, DT_F32);
}

/* d[i][n] of tile t under row u, as f32 bits: one fused dot-add of u->block products after
 * another, each block's f32 result the next one's c (a row whose block is k or more is one
 * dot-add of the instruction's k) */
static inline uint32_t model_bits(const MmaUnit *u, const Tile *t, int i, int n)
{
	const MmIns *I = &mm_ins[t->ins];
	double a[MM_MAXK], b[MM_MAXK], c = dec(FMT_F32, t->c[i * I->n + n]);
	for (int k = 0; k < I->k; k++) {
		a[k] = dec(I->fmt, t->a[i * I->k + k]);
		b[k] = dec(I->fmt, t->b[k * I->n + n]);
	}
	for (int k0 = 0; k0 < I->k; k0 += u->block)
		c = mma_fdpa(u, a + k0, b + k0, I->k - k0 < u->block ? I->k - k0 : u->block, c);
	float f = (float)c;   /* exact: the model's value is one of f32 (its NaN keeps its bits) */
	uint32_t bits;
	memcpy(&bits, &f, sizeof bits);
	return bits;
}

#endif
