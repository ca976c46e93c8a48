/* compiler/emit/chelp.c: the helper functions that C, OpenCL C and CUDA programs carry, each
 * algorithm written once and spelled in each dialect (CHelp, cemit.h): floor division and
 * non-negative remainder, integer abs/max/min, IEEE 754-2019 maximum and minimum, the
 * bounds check of an index, and the double -> f16/bf16 conversions.
 *
 * The conversions round to nearest even with integer operations on the bits: NaN stays a
 * quiet NaN keeping the top payload bits, overflow goes to inf, a normal result rounds by
 * adding half an ulp minus one plus the kept lowest bit, and a subnormal one is rounded by
 * the FPU in one addition of a power of two (whose ulp is the format's smallest subnormal).
 * Every float is a double, so f32 values convert through them without double rounding.
 * Seeded fault (compiler.h KF_TIE_AWAY, marked "fault:"): the normal case adds half an ulp
 * alone, so an exact tie rounds away from zero instead of to even.
 */
#include <stdio.h>
#include "cemit.h"

void ce_help_int(CEmit *e, const CHelp *h)
{
	const char *I = h->i64;
	ce_emit(e, "%s%s fdiv_i(%s a, %s b)\n"
		"{\n"
		"\tif (b == 0)\n"
		"\t\treturn 0;\n"
		"\t%s%s q = a / b;\n"
		"\treturn (a %% b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
		"}\n%s", h->fn, I, I, I, h->let, I, h->gap);
	ce_emit(e, "%s%s fmod_i(%s a, %s b)\n"
		"{\n"
		"\tif (b == 0)\n"
		"\t\treturn 0;\n"
		"\t%s%s r = a %% b;\n"
		"\treturn r < 0 ? r + (b < 0 ? -b : b) : r;\n"
		"}\n%s", h->fn, I, I, I, h->let, I, h->gap);
	ce_emit(e, "%s%s abs_i(%s a) { return a < 0 ? -a : a; }\n", h->fn, I, I);
	ce_emit(e, "%s%s max_i(%s a, %s b) { return a > b ? a : b; }\n", h->fn, I, I, I);
	ce_emit(e, "%s%s min_i(%s a, %s b) { return a < b ? a : b; }\n%s", h->fn, I, I, I, h->gap);
}

void ce_help_minmax(CEmit *e, const CHelp *h, bool dbl)
{
	const char *T = dbl ? "double" : "float";
	if (!dbl)
		ce_emit(e, "/* IEEE 754-2019 maximum and minimum: NaN if either is NaN, -0 below +0 */\n");
	for (int max = 1; max >= 0; max--)
		ce_emit(e, "%s%s %s_%c(%s a, %s b)\n"
			"{\n"
			"\tif (a != a || b != b)\n"
			"\t\treturn a + b;\n"
			"\tif (a == b)\n"
			"\t\treturn %s ? %c : %c;\n"
			"\treturn a %c b ? a : b;\n"
			"}\n%s", h->fn, T, max ? "max" : "min", dbl ? 'd' : 'f', T, T, h->neg[dbl],
			max ? 'b' : 'a', max ? 'a' : 'b', max ? '>' : '<', h->gap);
}

void ce_help_chk(CEmit *e, const CHelp *h)
{
	const char *I = h->i64;
	ce_emit(e, "%s%s chk(%s, %s v, %s lo, %s hi, int g, %s site)\n"
		"{\n"
		"\tif (v >= lo && v < hi)\n"
		"\t\treturn v;\n"
		"\tif (g)\n"
		"\t\trep(err, site, v);\n"
		"\treturn lo;\n"
		"}\n%s", h->fn, I, h->err, I, I, I, h->site, h->gap);
}

void ce_help_d2x(CEmit *e, const CHelp *h, bool bf16)
{
	static const struct {
		const char *what, *nan, *payload, *inf_from, *inf_note, *inf, *normal_from, *normal;
		int drop, bias;           /* mantissa bits dropped; exponent bias difference */
		const char *add, *scale;  /* the subnormal rounding: ((ax + add) - add) * scale */
	} F[2] = {
		{"f16 bits, round to nearest even (every float is a double: no double rounding)",
		 "0x7e00u", "0x1ffu", "0x40effe0000000000ull", "   /* 65520 and up: inf */", "0x7c00u",
		 "0x3f10000000000000ull", "2^-14", 42, 1008, "0x1p28", "0x1p24"},
		{"bf16 bits, round to nearest even", "0x7fc0u", "0x3fu", "0x47eff00000000000ull", "",
		 "0x7f80u", "0x3810000000000000ull", "2^-126", 45, 896, "0x1p-81", "0x1p133"},
	};
	const char *U = h->u16;
	char even[40] = "";   /* fault: KF_TIE_AWAY leaves it out: ties away from zero */
	if (!(e->k->faults & KF_TIE_AWAY))
		snprintf(even, sizeof even, " - 1 + ((r >> %d) & 1)", F[bf16].drop);
	ce_emit(e, "/* double -> %s */\n"
		"%s%s d2%c(double x)\n"
		"{\n"
		"%s"
		"\tif (a > 0x7ff0000000000000ull)\n"
		"\t\treturn (%s)(s | %s | ((a >> %d) & %s));\n"
		"\tif (a >= %s)%s\n"
		"\t\treturn (%s)(s | %s);\n"
		"\tif (a >= %s) {   /* %s and up: normal */\n"
		"\t\t%s r = a - (%dull << 52);\n"
		"\t\tr += (1ull << %d)%s;\n"
		"\t\treturn (%s)(s | (r >> %d));\n"
		"\t}\n"
		"%s"
		"\treturn (%s)(s | (%s)(((ax + %s) - %s) * %s));\n"
		"}\n", F[bf16].what, h->dfn, U, bf16 ? 'b' : 'h', h->bits, U, F[bf16].nan, F[bf16].drop,
		F[bf16].payload, F[bf16].inf_from, F[bf16].inf_note, U, F[bf16].inf, F[bf16].normal_from,
		F[bf16].normal, h->u64, F[bf16].bias, F[bf16].drop - 1,
		even, U, F[bf16].drop,
		h->ax, U, U, F[bf16].add, F[bf16].add, F[bf16].scale);
}

void ce_help_all(CEmit *e, const CHelp *h, const char *widen, const char *own)
{
	ce_emit(e, "%s", widen);
	ce_help_d2x(e, h, false);
	ce_help_d2x(e, h, true);
	ce_help_int(e, h);
	ce_help_minmax(e, h, false);
	ce_help_minmax(e, h, true);
	ce_emit(e, "%s", own);
	ce_help_chk(e, h);
}
