/* compiler/opencl/lib.c: the OpenCL C functions every generated program starts with
 * (emit.c writes them first): 16-bit storage conversions, integer floor division and
 * remainder, IEEE 754-2019 maximum/minimum, sigmoid, and error reporting; and the f64 ones,
 * written only into programs that enable cl_khr_fp64. sigmoid returns a NaN argument (as
 * x + x) before exp sees it: PoCL 3.1's exp of a NaN constant is poison (emit.c,
 * nan_guarded). Those every C-family program shares are compiler/emit/chelp.c's, in OpenCL's
 * dialect.
 *
 * Conversions to f16 and bf16 round to nearest even with integer operations on the bits
 * (the algorithm of chelp.c's d2h and d2b, for float and double inputs): NaN stays NaN
 * (quiet, the top payload bits kept), overflow goes to inf, subnormal results are exact
 * multiples of the format's smallest subnormal, and an f32 subnormal input still converts
 * right where the device keeps f32 denormals. Widening (h2f, b2f) is exact.
 */
#include "opencl.h"

/* h2f and b2f: f16 and bf16 bits to float, exactly; f2h and f2b: float to f16 and bf16 bits */
static const char convert[] =
	"float h2f(ushort h)\n"
	"{\n"
	"\tconst uint s = (uint)(h & 0x8000u) << 16, e = ((uint)h >> 10) & 0x1fu, m = (uint)h & 0x3ffu;\n"
	"\tif (e == 0u) {\n"
	"\t\tconst float f = (float)m * 0x1p-24f;\n"
	"\t\treturn s ? -f : f;\n"
	"\t}\n"
	"\treturn as_float(e == 31u ? (s | 0x7f800000u | (m << 13)) : (s | ((e + 112u) << 23) | (m << 13)));\n"
	"}\n\n"
	"float b2f(ushort h)\n"
	"{\n"
	"\treturn as_float((uint)h << 16);\n"
	"}\n\n"
	"/* float -> f16 bits, round to nearest even */\n"
	"ushort f2h(float x)\n"
	"{\n"
	"\tconst uint b = as_uint(x), a = b & 0x7fffffffu;\n"
	"\tconst ushort s = (ushort)((b >> 16) & 0x8000u);\n"
	"\tif (a > 0x7f800000u)\n"
	"\t\treturn (ushort)(s | 0x7e00u | ((a >> 13) & 0x1ffu));\n"
	"\tif (a >= 0x477ff000u)   /* 65520 and up: inf */\n"
	"\t\treturn (ushort)(s | 0x7c00u);\n"
	"\tif (a >= 0x38800000u) {   /* 2^-14 and up: normal */\n"
	"\t\tuint r = a - (112u << 23);\n"
	"\t\tr += 0xfffu + ((r >> 13) & 1u);\n"
	"\t\treturn (ushort)(s | (r >> 13));\n"
	"\t}\n"
	"\treturn (ushort)(s | convert_uint_rte(as_float(a) * 0x1p24f));\n"
	"}\n\n"
	"/* float -> bf16 bits, round to nearest even */\n"
	"ushort f2b(float x)\n"
	"{\n"
	"\tconst uint b = as_uint(x), a = b & 0x7fffffffu;\n"
	"\tconst ushort s = (ushort)((b >> 16) & 0x8000u);\n"
	"\tif (a > 0x7f800000u)\n"
	"\t\treturn (ushort)(s | 0x7fc0u | ((a >> 16) & 0x3fu));\n"
	"\treturn (ushort)(s | ((a + 0x7fffu + ((a >> 16) & 1u)) >> 16));\n"
	"}\n\n";

static const char report[] =
	"/* a NaN never reaches exp (emit.c, nan_guarded) */\n"
	"float sigmoid_f(float x) { return isnan(x) ? x + x : 1.0f / (1.0f + exp(-x)); }\n\n"
	"/* the first error wins; its value is written after the site is claimed */\n"
	"void rep(__global int *err, int site, long v)\n"
	"{\n"
	"\tif (atomic_cmpxchg((volatile __global int *)err, 0, site + 1) == 0)\n"
	"\t\t((__global long *)err)[1] = v;\n"
	"}\n\n";

/* d2h and d2b: double to f16 and bf16 bits (the subnormal case rounded by convert_uint_rte) */
static const char convert64[] =
	"/* double -> f16 bits, round to nearest even (every float is a double) */\n"
	"ushort d2h(double x)\n"
	"{\n"
	"\tconst ulong b = as_ulong(x), a = b & 0x7fffffffffffffffUL;\n"
	"\tconst ushort s = (ushort)((b >> 48) & 0x8000UL);\n"
	"\tif (a > 0x7ff0000000000000UL)\n"
	"\t\treturn (ushort)(s | 0x7e00u | (uint)((a >> 42) & 0x1ffUL));\n"
	"\tif (a >= 0x40effe0000000000UL)   /* 65520 and up: inf */\n"
	"\t\treturn (ushort)(s | 0x7c00u);\n"
	"\tif (a >= 0x3f10000000000000UL) {   /* 2^-14 and up: normal */\n"
	"\t\tulong r = a - (1008UL << 52);\n"
	"\t\tr += (1UL << 41) - 1UL + ((r >> 42) & 1UL);\n"
	"\t\treturn (ushort)(s | (uint)(r >> 42));\n"
	"\t}\n"
	"\treturn (ushort)(s | convert_uint_rte(as_double(a) * 0x1p24));\n"
	"}\n\n"
	"/* double -> bf16 bits, round to nearest even */\n"
	"ushort d2b(double x)\n"
	"{\n"
	"\tconst ulong b = as_ulong(x), a = b & 0x7fffffffffffffffUL;\n"
	"\tconst ushort s = (ushort)((b >> 48) & 0x8000UL);\n"
	"\tif (a > 0x7ff0000000000000UL)\n"
	"\t\treturn (ushort)(s | 0x7fc0u | (uint)((a >> 45) & 0x3fUL));\n"
	"\tif (a >= 0x47eff00000000000UL)\n"
	"\t\treturn (ushort)(s | 0x7f80u);\n"
	"\tif (a >= 0x3810000000000000UL) {   /* 2^-126 and up: normal */\n"
	"\t\tulong r = a - (896UL << 52);\n"
	"\t\tr += (1UL << 44) - 1UL + ((r >> 45) & 1UL);\n"
	"\t\treturn (ushort)(s | (uint)(r >> 45));\n"
	"\t}\n"
	"\treturn (ushort)(s | convert_uint_rte(as_double(a) * 0x1p133));\n"
	"}\n\n";

static const CHelp help = {
	.fn = "", .i64 = "long", .let = "const ", .gap = "\n",
	.neg = {"signbit(a)", "signbit(a)"},
	.err = "__global int *err", .site = "int",
};

void ocl_prelude(CEmit *e, bool f64)
{
	ce_emit(e, "%s", convert);
	ce_help_int(e, &help);
	ce_help_minmax(e, &help, false);
	ce_emit(e, "%s", report);
	ce_help_chk(e, &help);
	if (!f64)
		return;
	ce_emit(e, "%s", convert64);
	ce_help_minmax(e, &help, true);
	ce_emit(e, "%s", "double sigmoid_d(double x) "
		 "{ return isnan(x) ? x + x : 1.0 / (1.0 + exp(-x)); }\n\n");
}
