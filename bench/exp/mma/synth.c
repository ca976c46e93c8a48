/* bench/exp/mma/synth.c: writes the dump mma.cu would write, the tiles made by the same
 * generator (tiles.h), without a device: D is the model's own answer (model.h), or with
 * --ieee the correctly rounded (to nearest) value of the exact sum, as an ordinary fused
 * dot product would give it. It tests compare.c and the dump's format here: the model's
 * answers must compare with 0 mismatches, one --flip with exactly 1; --ieee shows which
 * families tell the model from IEEE 754 arithmetic at all. --probes prints the probe text as
 * mma.cu prints it, from the model's D: what the model predicts the device's probes.txt to
 * be, line for line (diff them).
 *
 * Usage: synth [--sm SM] [--ieee] [--probes] [--flip TILE:ELEM:BIT]... DUMP
 *        [NRAND_MMA [NRAND_WGMMA]]
 * (SM 90 by default: wgmma tiles only then, as on a device; TILE counts from 0 in the file,
 * ELEM is i * n + j; counts as mma.cu takes them). Exit 0, 2 bad arguments, 3 no model row
 * or a file not written.
 */
#include <stdlib.h>
#include "tiles.h"
#include "model.h"
#include "probes.h"

/* c + sum a b rounded to nearest f32 from its exact value; a NaN operand, inf - inf or
 * inf * 0 gives 0x7fc00000; an exact zero is -0 only when every term is -0 */
static uint32_t ieee_bits(const Tile *t, int i, int n)
{
	const MmIns *I = &mm_ins[t->ins];
	double c = dec(FMT_F32, t->c[i * I->n + n]), probe = c;
	int allneg0 = c == 0 && signbit(c);
	mpfr_t s, p;
	mpfr_inits2(1100, s, p, (mpfr_ptr)0);
	mpfr_set_d(s, c, MPFR_RNDN);
	for (int k = 0; k < I->k; k++) {
		double a = dec(I->fmt, t->a[i * I->k + k]), b = dec(I->fmt, t->b[k * I->n + n]);
		probe += a * b;
		allneg0 &= a * b == 0 && signbit(a * b);
		mpfr_set_d(p, a, MPFR_RNDN);
		mpfr_mul_d(p, p, b, MPFR_RNDN);   /* exact: 1100 bits hold any two 16-bit values' product */
		mpfr_add(s, s, p, MPFR_RNDN);     /* exact, likewise */
	}
	float f = isnan(probe) ? NAN : isinf(probe) ? (float)probe : mpfr_get_flt(s, MPFR_RNDN);
	mpfr_clears(s, p, (mpfr_ptr)0);
	if (f == 0)
		f = allneg0 ? -0.0f : 0.0f;
	uint32_t bits;
	memcpy(&bits, &f, sizeof bits);
	return isnan(f) ? 0x7fc00000u : bits;
}

static int num(const char *s, long lo, long hi, long *v)
{
	char *end;
	long x = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || x < lo || x > hi)
		return -1;
	*v = x;
	return 0;
}

int main(int argc, char **argv)
{
	long sm = 90, nr[2] = {2048, 256}, flip[16][3];
	int ieee = 0, text = 0, nflip = 0, npos = 0;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--sm") && i + 1 < argc && !num(argv[i + 1], 80, 200, &sm)) {
			i++;
		} else if (!strcmp(a, "--ieee")) {
			ieee = 1;
		} else if (!strcmp(a, "--probes")) {
			text = 1;
		} else if (!strcmp(a, "--flip") && i + 1 < argc && nflip < 16 &&
			   sscanf(argv[i + 1], "%ld:%ld:%ld", &flip[nflip][0], &flip[nflip][1], &flip[nflip][2]) == 3 &&
			   flip[nflip][0] >= 0 && flip[nflip][1] >= 0 && flip[nflip][2] >= 0 && flip[nflip][2] < 32) {
			nflip++, i++;
		} else if (a[0] != '-' && !path) {
			path = a;
		} else if (a[0] != '-' && npos < 2 && !num(a, 1, 100000, &nr[npos])) {
			npos++;
		} else {
			fprintf(stderr, "usage: synth [--sm SM] [--ieee] [--probes] [--flip TILE:ELEM:BIT]... DUMP [NRAND_MMA [NRAND_WGMMA]]\n");
			return 2;
		}
	}
	FILE *f = path ? fopen(path, "wb") : NULL;
	if (!f) {
		fprintf(stderr, "synth: %s\n", path ? "cannot write the dump" : "usage: synth ... DUMP");
		return path ? 3 : 2;
	}
	static Tile t;
	uint32_t ntiles = 0;
	dump_header(f, (uint32_t)sm, 0, 0);
	for (int ins = 0; ins < MM_NINS; ins++) {
		const MmIns *I = &mm_ins[ins];
		const MmaUnit *u = model_unit((uint32_t)sm, ins);
		int nrand = (int)nr[I->wg];
		if (I->wg && sm != 90)
			continue;
		if (!u) {
			fprintf(stderr, "synth: the model has no row for %s on sm_%ld\n", I->name, sm);
			return 3;
		}
		if (text) {   /* mma.cu's lines for an instruction whose layout check passed */
			int block, frac;
			model_row((int)sm, I, &block, &frac);
			printf("\n%s: %d tiles (model: block %d, frac %d, result toward zero)\n", I->name,
			       tile_count(nrand), block, frac);
			printf("  layout: ok (%d integer tiles exact)\n", MM_NLAYOUT);
		}
		for (int j = 0; j < tile_count(nrand); j++, ntiles++) {
			gen_tile(&t, ins, j, nrand);
			for (int i = 0; i < I->m; i++)
				for (int n = 0; n < I->n; n++)
					t.d[i * I->n + n] = ieee ? ieee_bits(&t, i, n) : model_bits(u, &t, i, n);
			for (int q = 0; q < nflip; q++)
				if (flip[q][0] == (long)ntiles && flip[q][1] < I->m * I->n)
					t.d[flip[q][1]] ^= 1u << flip[q][2];
			if (text)
				probes(&t, 1, (int)sm);
			if (dump_tile(f, &t)) {
				fprintf(stderr, "synth: cannot write the dump\n");
				return 3;
			}
		}
	}
	fseek(f, 0, SEEK_SET);
	dump_header(f, (uint32_t)sm, ntiles, sm == 90 ? MD_WGMMA : 0);
	if (fclose(f)) {
		fprintf(stderr, "synth: cannot write the dump\n");
		return 3;
	}
	printf("synth: %u tiles (sm_%ld, D %s) in %s\n", ntiles, sm, ieee ? "rounded to nearest" : "the model's", path);
	return 0;
}
