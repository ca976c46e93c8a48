/* bench/exp/mma/compare.c: holds a dump of mma.cu (the format of tiles.h) to the project's
 * model of the matrix units, interp/mma.c, bit for bit.
 *
 * Every D element is recomputed by model.h (mma_fdpa of the model's row for the dump's
 * device, chained over k / block blocks where a block is shorter than k) and compared as
 * bits. For each instruction and family it prints the elements, those whose bits differ
 * (a NaN compared by its bits too), and those that differ beyond "both are NaNs"; then the
 * first mismatches in full (N of values, 2 of NaNs that differ only in their bits): where,
 * both results, c, the row of A and the column of B as hex floats (infs and NaNs as bits).
 *
 * Usage: compare [-n N] DUMP (N: mismatches shown per instruction, default 6).
 * Exit: 0 every element matches; 1 a mismatch; 2 bad arguments or a file that is not a
 * whole dump (one whose header counts no tiles, left by a writer that stopped early, is
 * compared as far as its whole tiles go, with a warning); 3 the model has no row for an
 * instruction of the dump.
 */
#include <stdlib.h>
#include "tiles.h"
#include "model.h"

typedef struct {
	long el, bits, nan;   /* elements; bits differ; differ, not counting NaN against NaN */
} Count;

static int is_nan32(uint32_t x) { return (x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu); }

/* an operand: its value as a hex float, or its bits when it is no number */
static void operand(int f, uint32_t x)
{
	double v = dec(f, x);
	if (isnan(v) || isinf(v))
		printf(" %s(0x%0*x)", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf", f == FMT_F32 ? 8 : 4, x);
	else
		printf(" %a", v);
}

/* the distance in f32 units in the last place between two finite values, as ordered ints */
static long ulps(uint32_t x, uint32_t y)
{
	long a = x >> 31 ? -(long)(x & 0x7fffffffu) : (long)x, b = y >> 31 ? -(long)(y & 0x7fffffffu) : (long)y;
	return a - b;
}

static void show(const Tile *t, long tileno, int i, int n, uint32_t got, uint32_t want)
{
	const MmIns *I = &mm_ins[t->ins];
	printf("    %s, tile %ld, row %d, col %d: unit 0x%08x", fam_name[t->fam], tileno, i, n, got);
	operand(FMT_F32, got);
	printf(", model 0x%08x", want);
	operand(FMT_F32, want);
	if (!is_nan32(got) && !is_nan32(want) && (got & 0x7f800000u) != 0x7f800000u &&
	    (want & 0x7f800000u) != 0x7f800000u)
		printf(" (unit - model: %ld ulp)", ulps(got, want));
	printf("\n      c");
	operand(FMT_F32, t->c[i * I->n + n]);
	printf("\n      a");
	for (int k = 0; k < I->k; k++)
		operand(I->fmt, t->a[i * I->k + k]);
	printf("\n      b");
	for (int k = 0; k < I->k; k++)
		operand(I->fmt, t->b[k * I->n + n]);
	printf("\n");
}

static void table(int ins, Count c[FAM__COUNT])
{
	Count all = {0, 0, 0};
	printf("  %-12s %10s %12s %14s\n", "family", "elements", "bits differ", "not both NaN");
	for (int f = 0; f < FAM__COUNT; f++) {
		if (!c[f].el)
			continue;
		printf("  %-12s %10ld %12ld %14ld\n", fam_name[f], c[f].el, c[f].bits, c[f].nan);
		all.el += c[f].el, all.bits += c[f].bits, all.nan += c[f].nan;
	}
	printf("  %-12s %10ld %12ld %14ld\n", "all", all.el, all.bits, all.nan);
	if (c[FAM_LAYOUT].bits)
		printf("  (the layout tiles differ: %s's fragment layout is wrong in mma.cu, not its arithmetic)\n",
		       mm_ins[ins].name);
}

int main(int argc, char **argv)
{
	int nshow = 6, rc = 0;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			nshow = atoi(argv[++i]);
		else if (!path && argv[i][0] != '-')
			path = argv[i];
		else
			path = NULL, i = argc;
	}
	if (!path || nshow < 0) {
		fprintf(stderr, "usage: compare [-n N] DUMP\n");
		return 2;
	}
	FILE *f = fopen(path, "rb");
	uint32_t sm, ntiles, flags;
	if (!f || read_header(f, &sm, &ntiles, &flags)) {
		fprintf(stderr, "compare: %s: %s\n", path, f ? "not an mma.cu dump (version 1)" : "cannot open");
		return 2;
	}
	printf("%s: sm_%u, %u tiles%s%s\n", path, sm, ntiles, flags & MD_WGMMA ? ", wgmma included" : "",
	       flags & MD_SWAPPED ? " (run with wgmma's LBO and SBO swapped)" : "");
	static Count cnt[MM_NINS][FAM__COUNT];
	static Tile t;
	int shown[MM_NINS] = {0}, nanshown[MM_NINS] = {0}, heading[MM_NINS] = {0}, seen[MM_NINS] = {0};
	const MmaUnit *unit[MM_NINS] = {NULL};
	long tileno = 0;
	int r;
	while ((r = read_tile(f, &t)) == 1) {
		const MmIns *I = &mm_ins[t.ins];
		if (!seen[t.ins]) {
			seen[t.ins] = 1;
			if (!(unit[t.ins] = model_unit(sm, t.ins))) {
				fprintf(stderr, "compare: the model has no row for %s on sm_%u\n", I->name, sm);
				return 3;
			}
		}
		Count *c = &cnt[t.ins][t.fam];
		for (int i = 0; i < I->m; i++)
			for (int n = 0; n < I->n; n++) {
				uint32_t got = t.d[i * I->n + n], want = model_bits(unit[t.ins], &t, i, n);
				c->el++;
				if (got == want)
					continue;
				c->bits++;
				/* the first few of each kind: values, and NaNs of other bits (2) */
				int both = is_nan32(got) && is_nan32(want);
				c->nan += !both;
				if (both ? nanshown[t.ins]++ < 2 : shown[t.ins]++ < nshow) {
					if (!heading[t.ins]++)
						printf("%s: first mismatches\n", I->name);
					show(&t, tileno, i, n, got, want);
				}
			}
		tileno++;
	}
	/* a writer that stopped early (killed, out of time) left 0 in the header: the whole
	 * tiles before the cut are still worth comparing */
	if (ntiles == 0 && tileno > 0)
		fprintf(stderr, "compare: %s: the header counts no tiles (its writer stopped early): "
			"comparing the %ld whole tiles there\n", path, tileno);
	else if (r < 0 || tileno != (long)ntiles) {
		fprintf(stderr, "compare: %s: %s after %ld tiles (the header says %u)\n", path,
			r < 0 ? "a malformed or cut-off tile" : "the file ends", tileno, ntiles);
		return 2;
	}
	fclose(f);
	for (int ins = 0; ins < MM_NINS; ins++) {
		if (!seen[ins])
			continue;
		const MmaUnit *u = unit[ins];
		printf("\n%s against the model's %s %s (block %d, frac %d%s)\n", mm_ins[ins].name, u->arch,
		       u->instr, u->block, u->frac, u->block < mm_ins[ins].k ? ", chained" : "");
		table(ins, cnt[ins]);
		for (int fam = 0; fam < FAM__COUNT; fam++)
			if (cnt[ins][fam].bits)
				rc = 1;
	}
	printf("\n%s\n", rc ? "MISMATCH: the unit and the model differ (above)" : "every element matches the model bit for bit");
	return rc;
}
