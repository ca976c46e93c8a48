/* compiler/vulkan/lib.c: the GLSL helper library of the Vulkan backend: number format
 * conversions written out with integer operations, the ops GLSL lacks or defines too
 * loosely, and the error-slot reporter. A shader gets only the helpers it needs (need bits
 * of vulkan.h), in the fixed order of the table below, so emitted text stays deterministic.
 *
 * Conversions round to nearest even whatever the device's conversion rounding is (Vulkan
 * leaves the rounding of OpFConvert and of integer-to-float conversions to the
 * implementation): every rounding here is done on the bits, and the only hardware
 * conversions used are exact (small integers to float, float to double). Subnormal results
 * are produced exactly; NaN stays NaN (quiet), overflow gives infinity.
 *
 * Functions:
 * - IEEE 754-2019 maximum/minimum (GLSL's max/min leave NaN undefined): NaN if either is
 *   NaN, -0 below +0.
 * - floor division and non-negative remainder of int64 (0 for a zero divisor), on unsigned
 *   magnitudes (GLSL leaves % of negative operands undefined).
 * - expm1: Taylor polynomial of degree 9 for |x| < 1/2 (truncation below 2^-30 relative),
 *   exp(x) - 1 beyond (no cancellation there).
 * - log1p: 2 atanh(s), s = x / (2 + x), by its odd series (|s| <= 1/3, 9 terms) for
 *   |x| < 1/2, log(1 + x) beyond (1 + x exact for x in (-1, -1/2]).
 * - tanh: expm1(2|x|) / (expm1(2|x|) + 2) with the sign of x (-0 kept), +-1 past |x| > 9
 *   (GLSL's tanh is only "inherited from" sinh/cosh, which cancels near 0 and overflows).
 * - erf: odd Taylor series (12 terms, truncation below 1e-10) for |x| < 1; on [1, 4) one
 *   minus a degree-9 polynomial fit of erfc per unit interval (fitted here in double
 *   against the C library's erfc, maximal error below 2e-10 before float rounding); 1 from
 *   4 on (erfc(4) < 2^-25). Measured on [0, 1] in float: within 2.6 ulp of erf.
 * - pow: IEEE 754 pow special cases (a negative base with an integer exponent, zeros,
 *   infinities, pow(x, 0) = pow(1, y) = 1), GLSL's pow on |x| for the rest.
 * - sigmoid: 1 / (1 + exp(-x)).
 * These are f32 helpers; GLSL has no 64-bit exp, log, sin... (GLSL.std.450 takes 16 and
 * 32-bit floats there), so f64 arithmetic of those functions is refused by the emitter.
 */
#include "vulkan.h"

typedef struct {
	unsigned need;     /* its VH_ bit */
	unsigned deps;     /* the VH_ bits of the helpers it calls (earlier in the table) */
	const char *text;
} Helper;

static const Helper helpers[] = {
	{VH_RNE, 0,
	 "uint rne_shr(uint m, uint sh)\n"
	 "{\n"
	 "\tuint q = m >> sh, rem = m & ((1u << sh) - 1u), hf = 1u << (sh - 1u);\n"
	 "\treturn q + ((rem > hf || (rem == hf && (q & 1u) != 0u)) ? 1u : 0u);\n"
	 "}\n"},
	{VH_RNE64, 0,
	 "uint64_t rne_shr64(uint64_t m, uint sh)\n"
	 "{\n"
	 "\tuint64_t q = m >> sh, rem = m & ((1ul << sh) - 1ul), hf = 1ul << (sh - 1u);\n"
	 "\treturn q + ((rem > hf || (rem == hf && (q & 1ul) != 0ul)) ? 1ul : 0ul);\n"
	 "}\n"
	 "int msb64(uint64_t a)\n"
	 "{\n"
	 "\tuint hi = uint(a >> 32);\n"
	 "\treturn hi != 0u ? 32 + findMSB(hi) : findMSB(uint(a));\n"
	 "}\n"},
	{VH_F16, VH_RNE,
	 "float h2f(uint h)\n"
	 "{\n"
	 "\tuint s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
	 "\tif (e == 0u) {\n"
	 "\t\tprecise float f = float(m) * 5.9604644775390625e-8;\n"
	 "\t\treturn s != 0u ? -f : f;\n"
	 "\t}\n"
	 "\treturn uintBitsToFloat(e == 31u ? (s | 0x7f800000u | (m << 13)) : (s | ((e + 112u) << 23) | (m << 13)));\n"
	 "}\n"
	 "/* float -> f16 bits, round to nearest even */\n"
	 "uint f2h(float x)\n"
	 "{\n"
	 "\tuint b = floatBitsToUint(x), s = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;\n"
	 "\tif (a > 0x7f800000u)\n"
	 "\t\treturn s | 0x7e00u | ((a >> 13) & 0x1ffu);\n"
	 "\tif (a >= 0x477ff000u)   /* 65520 and up: inf */\n"
	 "\t\treturn s | 0x7c00u;\n"
	 "\tif (a >= 0x38800000u) {   /* 2^-14 and up: normal */\n"
	 "\t\tuint r = a - (112u << 23);\n"
	 "\t\tr += 0xfffu + ((r >> 13) & 1u);\n"
	 "\t\treturn s | (r >> 13);\n"
	 "\t}\n"
	 "\tuint e = a >> 23, m = (a & 0x7fffffu) | (e != 0u ? 0x800000u : 0u);\n"
	 "\tuint sh = 126u - max(e, 1u);   /* to units of 2^-24 */\n"
	 "\treturn sh > 24u ? s : (s | rne_shr(m, sh));\n"
	 "}\n"},
	{VH_BF16, 0,
	 "float b2f(uint h)\n"
	 "{\n"
	 "\treturn uintBitsToFloat(h << 16);\n"
	 "}\n"
	 "/* float -> bf16 bits, round to nearest even (subnormals too: same exponent range) */\n"
	 "uint f2b(float x)\n"
	 "{\n"
	 "\tuint b = floatBitsToUint(x), s = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;\n"
	 "\tif (a > 0x7f800000u)\n"
	 "\t\treturn s | 0x7fc0u | ((a >> 16) & 0x3fu);\n"
	 "\treturn s | ((a + 0x7fffu + ((a >> 16) & 1u)) >> 16);\n"
	 "}\n"},
	{VH_I2F, VH_RNE64,
	 "/* int64 -> float, round to nearest even */\n"
	 "float i2f(int64_t x)\n"
	 "{\n"
	 "\tuint64_t a = x < 0l ? uint64_t(-x) : uint64_t(x);\n"
	 "\tfloat f;\n"
	 "\tif (a <= 16777216ul) {\n"
	 "\t\tf = float(uint(a));\n"
	 "\t} else {\n"
	 "\t\tuint sh = uint(msb64(a) - 23);\n"
	 "\t\tf = float(uint(rne_shr64(a, sh))) * uintBitsToFloat((127u + sh) << 23);\n"
	 "\t}\n"
	 "\treturn x < 0l ? -f : f;\n"
	 "}\n"},
	{VH_I2D, VH_RNE64,
	 "/* int64 -> double, round to nearest even */\n"
	 "double i2d(int64_t x)\n"
	 "{\n"
	 "\tuint64_t a = x < 0l ? uint64_t(-x) : uint64_t(x);\n"
	 "\tdouble f;\n"
	 "\tif (a <= 9007199254740992ul) {\n"
	 "\t\tf = double(a);\n"
	 "\t} else {\n"
	 "\t\tuint sh = uint(msb64(a) - 52);\n"
	 "\t\tf = double(rne_shr64(a, sh)) * uint64BitsToDouble(uint64_t(1023u + sh) << 52);\n"
	 "\t}\n"
	 "\treturn x < 0l ? -f : f;\n"
	 "}\n"},
	{VH_D2F, VH_RNE64,
	 "/* double -> float, round to nearest even */\n"
	 "float d2f(double x)\n"
	 "{\n"
	 "\tuint64_t b = doubleBitsToUint64(x), a = b & 0x7ffffffffffffffful;\n"
	 "\tuint s = uint(b >> 32) & 0x80000000u;\n"
	 "\tif (a > 0x7ff0000000000000ul)\n"
	 "\t\treturn uintBitsToFloat(s | 0x7fc00000u | uint((a >> 29) & 0x3ffffful));\n"
	 "\tif (a >= 0x47effffff0000000ul)\n"
	 "\t\treturn uintBitsToFloat(s | 0x7f800000u);\n"
	 "\tif (a >= 0x3810000000000000ul) {\n"
	 "\t\tuint64_t r = a - (896ul << 52);\n"
	 "\t\tr += (1ul << 28) - 1ul + ((r >> 29) & 1ul);\n"
	 "\t\treturn uintBitsToFloat(s | uint(r >> 29));\n"
	 "\t}\n"
	 "\tuint e = uint(a >> 52);\n"
	 "\tuint64_t m = (a & 0xffffffffffffful) | (e != 0u ? (1ul << 52) : 0ul);\n"
	 "\tuint sh = 926u - max(e, 1u);   /* to units of 2^-149 */\n"
	 "\treturn uintBitsToFloat(sh > 53u ? s : (s | uint(rne_shr64(m, sh))));\n"
	 "}\n"},
	{VH_D2H, VH_RNE64,
	 "/* double -> f16 bits, round to nearest even */\n"
	 "uint d2h(double x)\n"
	 "{\n"
	 "\tuint64_t b = doubleBitsToUint64(x), a = b & 0x7ffffffffffffffful;\n"
	 "\tuint s = uint(b >> 48) & 0x8000u;\n"
	 "\tif (a > 0x7ff0000000000000ul)\n"
	 "\t\treturn s | 0x7e00u | uint((a >> 42) & 0x1fful);\n"
	 "\tif (a >= 0x40effe0000000000ul)\n"
	 "\t\treturn s | 0x7c00u;\n"
	 "\tif (a >= 0x3f10000000000000ul) {\n"
	 "\t\tuint64_t r = a - (1008ul << 52);\n"
	 "\t\tr += (1ul << 41) - 1ul + ((r >> 42) & 1ul);\n"
	 "\t\treturn s | uint(r >> 42);\n"
	 "\t}\n"
	 "\tuint e = uint(a >> 52);\n"
	 "\tuint64_t m = (a & 0xffffffffffffful) | (e != 0u ? (1ul << 52) : 0ul);\n"
	 "\tuint sh = 1051u - max(e, 1u);   /* to units of 2^-24 */\n"
	 "\treturn sh > 53u ? s : (s | uint(rne_shr64(m, sh)));\n"
	 "}\n"},
	{VH_D2B, VH_RNE64,
	 "/* double -> bf16 bits, round to nearest even */\n"
	 "uint d2b(double x)\n"
	 "{\n"
	 "\tuint64_t b = doubleBitsToUint64(x), a = b & 0x7ffffffffffffffful;\n"
	 "\tuint s = uint(b >> 48) & 0x8000u;\n"
	 "\tif (a > 0x7ff0000000000000ul)\n"
	 "\t\treturn s | 0x7fc0u | uint((a >> 45) & 0x3ful);\n"
	 "\tif (a >= 0x47eff00000000000ul)\n"
	 "\t\treturn s | 0x7f80u;\n"
	 "\tif (a >= 0x3810000000000000ul) {\n"
	 "\t\tuint64_t r = a - (896ul << 52);\n"
	 "\t\tr += (1ul << 44) - 1ul + ((r >> 45) & 1ul);\n"
	 "\t\treturn s | uint(r >> 45);\n"
	 "\t}\n"
	 "\tuint e = uint(a >> 52);\n"
	 "\tuint64_t m = (a & 0xffffffffffffful) | (e != 0u ? (1ul << 52) : 0ul);\n"
	 "\tuint sh = 942u - max(e, 1u);   /* to units of 2^-133 */\n"
	 "\treturn sh > 53u ? s : (s | uint(rne_shr64(m, sh)));\n"
	 "}\n"},
	{VH_IDIV, 0,
	 "int64_t fdiv_i(int64_t a, int64_t b)\n"
	 "{\n"
	 "\tif (b == 0l)\n"
	 "\t\treturn 0l;\n"
	 "\tuint64_t ua = a < 0l ? uint64_t(-a) : uint64_t(a), ub = b < 0l ? uint64_t(-b) : uint64_t(b);\n"
	 "\tuint64_t q = ua / ub, r = ua - q * ub;\n"
	 "\tif ((a < 0l) == (b < 0l))\n"
	 "\t\treturn int64_t(q);\n"
	 "\treturn r != 0ul ? -int64_t(q) - 1l : -int64_t(q);\n"
	 "}\n"},
	{VH_IMOD, 0,
	 "int64_t fmod_i(int64_t a, int64_t b)\n"
	 "{\n"
	 "\tif (b == 0l)\n"
	 "\t\treturn 0l;\n"
	 "\tuint64_t ua = a < 0l ? uint64_t(-a) : uint64_t(a), ub = b < 0l ? uint64_t(-b) : uint64_t(b);\n"
	 "\tuint64_t r = ua - (ua / ub) * ub;\n"
	 "\treturn int64_t(a < 0l && r != 0ul ? ub - r : r);\n"
	 "}\n"},
	{VH_IMINMAX, 0,
	 "int64_t abs_i(int64_t a) { return a < 0l ? -a : a; }\n"
	 "int64_t max_i(int64_t a, int64_t b) { return a > b ? a : b; }\n"
	 "int64_t min_i(int64_t a, int64_t b) { return a < b ? a : b; }\n"},
	{VH_FMINMAX, 0,
	 "/* IEEE 754-2019 maximum and minimum: NaN if either is NaN, -0 below +0 */\n"
	 "float max_f(float a, float b)\n"
	 "{\n"
	 "\tif (isnan(a) || isnan(b))\n"
	 "\t\treturn isnan(a) ? a : b;\n"
	 "\tif (a == b)\n"
	 "\t\treturn (floatBitsToUint(a) >> 31) != 0u ? b : a;\n"
	 "\treturn a > b ? a : b;\n"
	 "}\n"
	 "float min_f(float a, float b)\n"
	 "{\n"
	 "\tif (isnan(a) || isnan(b))\n"
	 "\t\treturn isnan(a) ? a : b;\n"
	 "\tif (a == b)\n"
	 "\t\treturn (floatBitsToUint(a) >> 31) != 0u ? a : b;\n"
	 "\treturn a < b ? a : b;\n"
	 "}\n"},
	{VH_DMINMAX, 0,
	 "double max_d(double a, double b)\n"
	 "{\n"
	 "\tif (isnan(a) || isnan(b))\n"
	 "\t\treturn isnan(a) ? a : b;\n"
	 "\tif (a == b)\n"
	 "\t\treturn (doubleBitsToUint64(a) >> 63) != 0ul ? b : a;\n"
	 "\treturn a > b ? a : b;\n"
	 "}\n"
	 "double min_d(double a, double b)\n"
	 "{\n"
	 "\tif (isnan(a) || isnan(b))\n"
	 "\t\treturn isnan(a) ? a : b;\n"
	 "\tif (a == b)\n"
	 "\t\treturn (doubleBitsToUint64(a) >> 63) != 0ul ? a : b;\n"
	 "\treturn a < b ? a : b;\n"
	 "}\n"},
	{VH_EXPM1, 0,
	 "float expm1_f(float x)\n"
	 "{\n"
	 "\tif (!(abs(x) < 0.5))\n"
	 "\t\treturn isnan(x) ? x : (x > 88.75 ? uintBitsToFloat(0x7f800000u) : exp(x) - 1.0);\n"
	 "\tprecise float p = 2.7557319223985893e-6;\n"
	 "\tp = p * x + 2.4801587301587302e-5;\n"
	 "\tp = p * x + 1.9841269841269841e-4;\n"
	 "\tp = p * x + 1.3888888888888889e-3;\n"
	 "\tp = p * x + 8.3333333333333333e-3;\n"
	 "\tp = p * x + 4.1666666666666667e-2;\n"
	 "\tp = p * x + 1.6666666666666667e-1;\n"
	 "\tp = p * x + 0.5;\n"
	 "\tp = p * x;\n"
	 "\treturn x + p * x;\n"
	 "}\n"},
	{VH_LOG1P, 0,
	 "float log1p_f(float x)\n"
	 "{\n"
	 "\tif (isnan(x) || x < -1.0)\n"
	 "\t\treturn uintBitsToFloat(0x7fc00000u);\n"
	 "\tif (x == -1.0)\n"
	 "\t\treturn uintBitsToFloat(0xff800000u);\n"
	 "\tif (isinf(x))\n"
	 "\t\treturn x;\n"
	 "\tif (!(abs(x) < 0.5))\n"
	 "\t\treturn log(1.0 + x);\n"
	 "\tprecise float s = x / (2.0 + x), z = s * s;\n"
	 "\tprecise float p = 1.0 / 17.0;\n"
	 "\tp = p * z + 1.0 / 15.0;\n"
	 "\tp = p * z + 1.0 / 13.0;\n"
	 "\tp = p * z + 1.0 / 11.0;\n"
	 "\tp = p * z + 1.0 / 9.0;\n"
	 "\tp = p * z + 1.0 / 7.0;\n"
	 "\tp = p * z + 1.0 / 5.0;\n"
	 "\tp = p * z + 1.0 / 3.0;\n"
	 "\tp = p * z;\n"
	 "\treturn 2.0 * s + (2.0 * s) * p;\n"
	 "}\n"},
	{VH_TANH, VH_EXPM1,
	 "float tanh_f(float x)\n"
	 "{\n"
	 "\tfloat ax = abs(x), r;\n"
	 "\tif (isnan(x))\n"
	 "\t\treturn x;\n"
	 "\tif (ax > 9.0) {\n"
	 "\t\tr = 1.0;\n"
	 "\t} else {\n"
	 "\t\tprecise float t = expm1_f(2.0 * ax);\n"
	 "\t\tr = t / (t + 2.0);\n"
	 "\t}\n"
	 "\treturn (floatBitsToUint(x) >> 31) != 0u ? -r : r;\n"
	 "}\n"},
	{VH_ERF, 0,
	 "float erf_f(float x)\n"
	 "{\n"
	 "\tfloat ax = abs(x);\n"
	 "\tprecise float r;\n"
	 "\tif (isnan(x))\n"
	 "\t\treturn x;\n"
	 "\tif (ax < 1.0) {\n"
	 "\t\tprecise float z = ax * ax, p = -1.2290555240213052e-09;\n"
	 "\t\tp = p * z + 1.4807192805221803e-08;\n"
	 "\t\tp = p * z + -1.6365844146548625e-07;\n"
	 "\t\tp = p * z + 1.6462114444948384e-06;\n"
	 "\t\tp = p * z + -1.4925650248187594e-05;\n"
	 "\t\tp = p * z + 0.00012055332626914605;\n"
	 "\t\tp = p * z + -0.0008548327023163438;\n"
	 "\t\tp = p * z + 0.005223977845162153;\n"
	 "\t\tp = p * z + -0.02686617150902748;\n"
	 "\t\tp = p * z + 0.11283791810274124;\n"
	 "\t\tp = p * z + -0.37612637877464294;\n"
	 "\t\tp = p * z + 1.128379225730896;\n"
	 "\t\tr = ax * p;\n"
	 "\t} else if (ax < 2.0) {\n"
	 "\t\tprecise float t = ax - 1.5, p = -0.0015404114965349436;\n"
	 "\t\tp = p * t + 0.0024019302800297737;\n"
	 "\t\tp = p * t + 0.004701163619756699;\n"
	 "\t\tp = p * t + -0.019333429634571075;\n"
	 "\t\tp = p * t + 0.014870842918753624;\n"
	 "\t\tp = p * t + 0.04459944739937782;\n"
	 "\t\tp = p * t + -0.13875220715999603;\n"
	 "\t\tp = p * t + 0.17839542031288147;\n"
	 "\t\tp = p * t + -0.11893028765916824;\n"
	 "\t\tp = p * t + 0.0338948518037796;\n"
	 "\t\tr = 1.0 - p;\n"
	 "\t} else if (ax < 3.0) {\n"
	 "\t\tprecise float t = ax - 2.5, p = 0.0002453949418850243;\n"
	 "\t\tp = p * t + -0.0003063119074795395;\n"
	 "\t\tp = p * t + -0.0005410771700553596;\n"
	 "\t\tp = p * t + 0.0028082120697945356;\n"
	 "\t\tp = p * t + -0.006117499899119139;\n"
	 "\t\tp = p * t + 0.00862151850014925;\n"
	 "\t\tp = p * t + -0.00835008267313242;\n"
	 "\t\tp = p * t + 0.005445736926048994;\n"
	 "\t\tp = p * t + -0.002178284339606762;\n"
	 "\t\tp = p * t + 0.00040695187635719776;\n"
	 "\t\tr = 1.0 - p;\n"
	 "\t} else if (ax < 4.0) {\n"
	 "\t\tprecise float t = ax - 3.5, p = 3.703743277583271e-05;\n"
	 "\t\tp = p * t + -6.689068686682731e-05;\n"
	 "\t\tp = p * t + 7.7145712566562e-05;\n"
	 "\t\tp = p * t + -8.04814335424453e-05;\n"
	 "\t\tp = p * t + 6.777083035558462e-05;\n"
	 "\t\tp = p * t + -4.240916678099893e-05;\n"
	 "\t\tp = p * t + 1.8896344045060687e-05;\n"
	 "\t\tp = p * t + -5.397294444264844e-06;\n"
	 "\t\tp = p * t + 7.431065682794724e-07;\n"
	 "\t\tr = 1.0 - p;\n"
	 "\t} else {\n"
	 "\t\tr = 1.0;\n"
	 "\t}\n"
	 "\treturn (floatBitsToUint(x) >> 31) != 0u ? -r : r;\n"
	 "}\n"},
	{VH_POW, 0,
	 "/* IEEE 754 pow: special cases here, GLSL's pow (exp2(y log2 x)) on |x| > 0 */\n"
	 "float pow_f(float x, float y)\n"
	 "{\n"
	 "\tconst float inf = uintBitsToFloat(0x7f800000u);\n"
	 "\tif (y == 0.0 || x == 1.0)\n"
	 "\t\treturn 1.0;\n"
	 "\tif (isnan(x) || isnan(y))\n"
	 "\t\treturn isnan(x) ? x : y;\n"
	 "\tfloat ax = abs(x), ay = abs(y);\n"
	 "\tbool yint = floor(y) == y, yodd = yint && ay < 16777216.0 && fract(ay * 0.5) != 0.0;\n"
	 "\tbool neg = (floatBitsToUint(x) >> 31) != 0u;\n"
	 "\tif (isinf(y)) {\n"
	 "\t\tif (ax == 1.0)\n"
	 "\t\t\treturn 1.0;\n"
	 "\t\treturn (ax > 1.0) == (y > 0.0) ? inf : 0.0;\n"
	 "\t}\n"
	 "\tif (ax == 0.0 || isinf(x)) {\n"
	 "\t\tfloat r = (ax == 0.0) == (y < 0.0) ? inf : 0.0;\n"
	 "\t\treturn neg && yodd ? -r : r;\n"
	 "\t}\n"
	 "\tif (neg && !yint)\n"
	 "\t\treturn uintBitsToFloat(0x7fc00000u);\n"
	 "\tfloat r = pow(ax, y);\n"
	 "\treturn neg && yodd ? -r : r;\n"
	 "}\n"},
	{VH_SIGMOID, 0,
	 "float sigmoid_f(float x)\n"
	 "{\n"
	 "\tprecise float e = exp(-x), d = 1.0 + e;\n"
	 "\treturn 1.0 / d;\n"
	 "}\n"},
};

void vk_lib(unsigned need, void (*put)(void *ctx, const char *text), void *ctx)
{
	/* dependencies come earlier in the table than their users: one backward pass */
	for (size_t i = ARRAY_LEN(helpers); i-- > 0;)
		if (need & helpers[i].need)
			need |= helpers[i].deps;
	for (size_t i = 0; i < ARRAY_LEN(helpers); i++)
		if (need & helpers[i].need)
			put(ctx, helpers[i].text);
}
