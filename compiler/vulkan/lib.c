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
 * GLSL has no 64-bit exp, log, sin... (GLSL.std.450 takes 16- and 32-bit floats there), so
 * the f64 functions are written out too, from the same textbook methods: exp by reduction
 * modulo ln2 (two-part ln2) and a degree-13 Taylor polynomial, scaled by 2^k in one rounding;
 * log by m in [sqrt(1/2), sqrt(2)) and the atanh series in the form
 * f - (f^2/2 - s (f^2/2 + R)); sin and cos by reduction modulo pi/2 (four-part pi/2, accurate
 * up to |x| ~ 1.6e6) and Taylor polynomials on [-pi/4, pi/4]; erf by its everywhere-positive
 * series times e^(-x^2); tanh, expm1, log1p, sigmoid and pow as in f32. Measured against
 * glibc they are within a few ulps (tests/test_vulkan.c, functions_f64); pow's error grows
 * with |y log x|. Vulkan requires f64 + - * / and sqrt only "at least as precise as f32";
 * lavapipe and NVIDIA do them in IEEE double.
 */
#include <string.h>
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
	 "}\n"
	 "float i2f(int x) { return i2f(int64_t(x)); }\n"},
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
	 "}\n"
	 "double i2d(int x) { return double(x); }   /* exact */\n"},
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
	 "/* floor division; magnitudes below 2^32 divide in 32 bits (NVIDIA's driver 580 was seen\n"
	 " * to get 64-bit division by constants wrong) */\n"
	 "int64_t fdiv_i(int64_t a, int64_t b)\n"
	 "{\n"
	 "\tif (b == 0l)\n"
	 "\t\treturn 0l;\n"
	 "\tuint64_t ua = a < 0l ? uint64_t(-a) : uint64_t(a), ub = b < 0l ? uint64_t(-b) : uint64_t(b), q;\n"
	 "\tif (((ua | ub) >> 32) == 0ul)\n"
	 "\t\tq = uint64_t(uint(ua) / uint(ub));\n"
	 "\telse\n"
	 "\t\tq = ua / ub;\n"
	 "\tuint64_t r = ua - q * ub;\n"
	 "\tif ((a < 0l) == (b < 0l))\n"
	 "\t\treturn int64_t(q);\n"
	 "\treturn r != 0ul ? -int64_t(q) - 1l : -int64_t(q);\n"
	 "}\n"
	 "/* the same on ints (kernels whose integers are ints: plan.c vk_kernel_i32) */\n"
	 "int fdiv_i(int a, int b)\n"
	 "{\n"
	 "\tif (b == 0)\n"
	 "\t\treturn 0;\n"
	 "\tuint ua = a < 0 ? uint(-a) : uint(a), ub = b < 0 ? uint(-b) : uint(b), q = ua / ub, r = ua - q * ub;\n"
	 "\tif ((a < 0) == (b < 0))\n"
	 "\t\treturn int(q);\n"
	 "\treturn r != 0u ? -int(q) - 1 : -int(q);\n"
	 "}\n"},
	{VH_IMOD, 0,
	 "int64_t fmod_i(int64_t a, int64_t b)\n"
	 "{\n"
	 "\tif (b == 0l)\n"
	 "\t\treturn 0l;\n"
	 "\tuint64_t ua = a < 0l ? uint64_t(-a) : uint64_t(a), ub = b < 0l ? uint64_t(-b) : uint64_t(b), r;\n"
	 "\tif (((ua | ub) >> 32) == 0ul)\n"
	 "\t\tr = uint64_t(uint(ua) % uint(ub));\n"
	 "\telse\n"
	 "\t\tr = ua - (ua / ub) * ub;\n"
	 "\treturn int64_t(a < 0l && r != 0ul ? ub - r : r);\n"
	 "}\n"
	 "int fmod_i(int a, int b)\n"
	 "{\n"
	 "\tif (b == 0)\n"
	 "\t\treturn 0;\n"
	 "\tuint ua = a < 0 ? uint(-a) : uint(a), ub = b < 0 ? uint(-b) : uint(b), r = ua % ub;\n"
	 "\treturn int(a < 0 && r != 0u ? ub - r : r);\n"
	 "}\n"},
	{VH_IMINMAX, 0,
	 "int64_t abs_i(int64_t a) { return a < 0l ? -a : a; }\n"
	 "int64_t max_i(int64_t a, int64_t b) { return a > b ? a : b; }\n"
	 "int64_t min_i(int64_t a, int64_t b) { return a < b ? a : b; }\n"
	 "int abs_i(int a) { return a < 0 ? -a : a; }\n"
	 "int max_i(int a, int b) { return a > b ? a : b; }\n"
	 "int min_i(int a, int b) { return a < b ? a : b; }\n"},
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
	 "\tif (x == 0.0)\n"
	 "\t\treturn x;   /* -0 stays -0 (x + x*x*p gives +0) */\n"
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
	/* ---- f64 functions (GLSL.std.450 has none): written out here ---- */
	{VH_EXP_D, 0,
	 "/* x * 2^k with one rounding, for x in [1/2, 2] and k in [-1076, 2046] */\n"
	 "double scale_d(double x, int k)\n"
	 "{\n"
	 "\tif (k > 1023) {\n"
	 "\t\tx *= uint64BitsToDouble(0x7fe0000000000000ul);   /* 2^1023 */\n"
	 "\t\tk -= 1023;\n"
	 "\t}\n"
	 "\tif (k >= -1022)\n"
	 "\t\treturn x * uint64BitsToDouble(uint64_t(k + 1023) << 52);\n"
	 "\t/* a subnormal result: scale exactly to 2^54 times it, round once in the last step */\n"
	 "\treturn (x * uint64BitsToDouble(uint64_t(k + 54 + 1023) << 52)) * 5.5511151231257827e-17lf;\n"
	 "}\n"
	 "/* e^r for |r| <= 0.35: Taylor polynomial of degree 13 (truncation below 2^-57) */\n"
	 "double exp_poly_d(double r)\n"
	 "{\n"
	 "\tprecise double p = 1.6059043836821613e-10lf;\n"
	 "\tp = p * r + 2.0876756987868100e-09lf;\n"
	 "\tp = p * r + 2.5052108385441720e-08lf;\n"
	 "\tp = p * r + 2.7557319223985893e-07lf;\n"
	 "\tp = p * r + 2.7557319223985888e-06lf;\n"
	 "\tp = p * r + 2.4801587301587302e-05lf;\n"
	 "\tp = p * r + 1.9841269841269841e-04lf;\n"
	 "\tp = p * r + 1.3888888888888889e-03lf;\n"
	 "\tp = p * r + 8.3333333333333332e-03lf;\n"
	 "\tp = p * r + 4.1666666666666664e-02lf;\n"
	 "\tp = p * r + 1.6666666666666666e-01lf;\n"
	 "\tp = p * r + 0.5lf;\n"
	 "\tp = p * r;\n"
	 "\treturn 1.0lf + (r + p * r);\n"
	 "}\n"
	 "/* k = nearest integer to x / ln2, r = x - k ln2 (ln2 in two parts: k * hi is exact) */\n"
	 "double exp_d(double x)\n"
	 "{\n"
	 "\tif (isnan(x))\n"
	 "\t\treturn x;\n"
	 "\tif (x > 709.782712893384lf)\n"
	 "\t\treturn uint64BitsToDouble(0x7ff0000000000000ul);\n"
	 "\tif (x < -745.1332191019412lf)\n"
	 "\t\treturn 0.0lf;\n"
	 "\tdouble k = floor(x * 1.4426950408889634lf + 0.5lf);\n"
	 "\tprecise double r = (x - k * 0.6931471803691238lf) - k * 1.9082149292705877e-10lf;\n"
	 "\treturn scale_d(exp_poly_d(r), int(k));\n"
	 "}\n"},
	{VH_EXP2_D, VH_EXP_D,
	 "double exp2_d(double x)\n"
	 "{\n"
	 "\tif (isnan(x))\n"
	 "\t\treturn x;\n"
	 "\tif (x >= 1024.0lf)\n"
	 "\t\treturn uint64BitsToDouble(0x7ff0000000000000ul);\n"
	 "\tif (x < -1075.0lf)\n"
	 "\t\treturn 0.0lf;\n"
	 "\tdouble k = floor(x + 0.5lf);\n"
	 "\tprecise double r = (x - k) * 0.6931471805599453lf;\n"
	 "\treturn scale_d(exp_poly_d(r), int(k));\n"
	 "}\n"},
	{VH_EXPM1_D, VH_EXP_D,
	 "/* Taylor polynomial of degree 16 for |x| < 1/2 (truncation below 2^-60), exp(x) - 1 beyond */\n"
	 "double expm1_d(double x)\n"
	 "{\n"
	 "\tif (x == 0.0lf)\n"
	 "\t\treturn x;   /* -0 stays -0 (x + x*x*p gives +0) */\n"
	 "\tif (!(abs(x) < 0.5lf))\n"
	 "\t\treturn isnan(x) ? x : exp_d(x) - 1.0lf;\n"
	 "\tprecise double p = 4.7794773323873853e-14lf;\n"
	 "\tp = p * x + 7.6471637318198164e-13lf;\n"
	 "\tp = p * x + 1.1470745597729725e-11lf;\n"
	 "\tp = p * x + 1.6059043836821613e-10lf;\n"
	 "\tp = p * x + 2.0876756987868100e-09lf;\n"
	 "\tp = p * x + 2.5052108385441720e-08lf;\n"
	 "\tp = p * x + 2.7557319223985893e-07lf;\n"
	 "\tp = p * x + 2.7557319223985888e-06lf;\n"
	 "\tp = p * x + 2.4801587301587302e-05lf;\n"
	 "\tp = p * x + 1.9841269841269841e-04lf;\n"
	 "\tp = p * x + 1.3888888888888889e-03lf;\n"
	 "\tp = p * x + 8.3333333333333332e-03lf;\n"
	 "\tp = p * x + 4.1666666666666664e-02lf;\n"
	 "\tp = p * x + 1.6666666666666666e-01lf;\n"
	 "\tp = p * x + 0.5lf;\n"
	 "\tp = p * x;\n"
	 "\treturn x + p * x;\n"
	 "}\n"},
	{VH_LOG_D, 0,
	 "/* log(1 + f) for f in [-1/2, 1/2]: with s = f / (2 + f), log(1 + f) = 2 atanh(s)\n"
	 " * = f - (f^2/2 - s (f^2/2 + R)), R = 2 (s^2/3 + s^4/5 + ...) (20 terms: |s| <= 1/3) */\n"
	 "double log1p_core_d(double f)\n"
	 "{\n"
	 "\tprecise double s = f / (2.0lf + f), z = s * s, hfsq = 0.5lf * f * f;\n"
	 "\tprecise double R = 2.0lf / 41.0lf;\n"
	 "\tfor (int i = 19; i >= 1; i--)\n"
	 "\t\tR = R * z + 2.0lf / double(2 * i + 1);\n"
	 "\tR = R * z;\n"
	 "\treturn f - (hfsq - s * (hfsq + R));\n"
	 "}\n"
	 "/* log x = e ln2 + log m, m in [sqrt(1/2), sqrt(2)); ln2 in two parts (e * hi exact) */\n"
	 "double log_d(double x)\n"
	 "{\n"
	 "\tif (isnan(x) || x < 0.0lf)\n"
	 "\t\treturn uint64BitsToDouble(0x7ff8000000000000ul);\n"
	 "\tif (x == 0.0lf)\n"
	 "\t\treturn uint64BitsToDouble(0xfff0000000000000ul);\n"
	 "\tif (isinf(x))\n"
	 "\t\treturn x;\n"
	 "\tint e = 0;\n"
	 "\tif (x < 2.2250738585072014e-308lf) {\n"
	 "\t\tx *= 18014398509481984.0lf;   /* 2^54 */\n"
	 "\t\te = -54;\n"
	 "\t}\n"
	 "\tuint64_t b = doubleBitsToUint64(x);\n"
	 "\te += int(b >> 52) - 1023;\n"
	 "\tdouble m = uint64BitsToDouble((b & 0xffffffffffffful) | 0x3ff0000000000000ul);\n"
	 "\tif (m > 1.4142135623730951lf) {\n"
	 "\t\tm *= 0.5lf;\n"
	 "\t\te += 1;\n"
	 "\t}\n"
	 "\tprecise double l = log1p_core_d(m - 1.0lf), de = double(e);\n"
	 "\treturn de * 0.6931471803691238lf + (de * 1.9082149292705877e-10lf + l);\n"
	 "}\n"},
	{VH_LOG2_D, VH_LOG_D,
	 "double log2_d(double x)\n"
	 "{\n"
	 "\tif (isnan(x) || x <= 0.0lf || isinf(x))\n"
	 "\t\treturn log_d(x);\n"
	 "\tint e = 0;\n"
	 "\tif (x < 2.2250738585072014e-308lf) {\n"
	 "\t\tx *= 18014398509481984.0lf;\n"
	 "\t\te = -54;\n"
	 "\t}\n"
	 "\tuint64_t b = doubleBitsToUint64(x);\n"
	 "\te += int(b >> 52) - 1023;\n"
	 "\tdouble m = uint64BitsToDouble((b & 0xffffffffffffful) | 0x3ff0000000000000ul);\n"
	 "\tif (m > 1.4142135623730951lf) {\n"
	 "\t\tm *= 0.5lf;\n"
	 "\t\te += 1;\n"
	 "\t}\n"
	 "\tprecise double l = log1p_core_d(m - 1.0lf) * 1.4426950408889634lf;\n"
	 "\treturn double(e) + l;\n"
	 "}\n"},
	{VH_LOG1P_D, VH_LOG_D,
	 "double log1p_d(double x)\n"
	 "{\n"
	 "\tif (isnan(x) || x < -1.0lf)\n"
	 "\t\treturn uint64BitsToDouble(0x7ff8000000000000ul);\n"
	 "\tif (abs(x) <= 0.5lf)\n"
	 "\t\treturn log1p_core_d(x);\n"
	 "\treturn log_d(1.0lf + x);\n"
	 "}\n"},
	{VH_SINCOS_D, 0,
	 "/* sin and cos: x = k pi/2 + r with pi/2 in four parts of 33 bits (k * part exact for\n"
	 " * |k| < 2^20: arguments beyond about 1.6e6 lose accuracy, there is no Payne-Hanek\n"
	 " * reduction), then Taylor polynomials on |r| <= pi/4 (truncation below 2^-60) */\n"
	 "double sin_poly_d(double r)\n"
	 "{\n"
	 "\tprecise double z = r * r, p = 2.8114572543455206e-15lf;\n"
	 "\tp = p * z + -7.6471637318198164e-13lf;\n"
	 "\tp = p * z + 1.6059043836821613e-10lf;\n"
	 "\tp = p * z + -2.5052108385441720e-08lf;\n"
	 "\tp = p * z + 2.7557319223985888e-06lf;\n"
	 "\tp = p * z + -1.9841269841269841e-04lf;\n"
	 "\tp = p * z + 8.3333333333333332e-03lf;\n"
	 "\tp = p * z + -1.6666666666666666e-01lf;\n"
	 "\tp = p * z;\n"
	 "\treturn r + r * p;\n"
	 "}\n"
	 "double cos_poly_d(double r)\n"
	 "{\n"
	 "\tprecise double z = r * r, p = 4.7794773323873853e-14lf;\n"
	 "\tp = p * z + -1.1470745597729725e-11lf;\n"
	 "\tp = p * z + 2.0876756987868100e-09lf;\n"
	 "\tp = p * z + -2.7557319223985893e-07lf;\n"
	 "\tp = p * z + 2.4801587301587302e-05lf;\n"
	 "\tp = p * z + -1.3888888888888889e-03lf;\n"
	 "\tp = p * z + 4.1666666666666664e-02lf;\n"
	 "\tp = p * z * z;\n"
	 "\tprecise double h = 0.5lf * z, w = 1.0lf - h;\n"
	 "\treturn w + (((1.0lf - w) - h) + p);\n"
	 "}\n"
	 "/* the quadrant (k mod 4) and the reduced argument */\n"
	 "double reduce_d(double x, out int q)\n"
	 "{\n"
	 "\tdouble k = floor(x * 0.6366197723675814lf + 0.5lf);\n"
	 "\tprecise double r = x - k * 1.5707963267341256lf;\n"
	 "\tr = r - k * 6.077100506303966e-11lf;\n"
	 "\tr = r - k * 2.0222662487111665e-21lf;\n"
	 "\tr = r - k * 8.478427660348229e-32lf;\n"
	 "\tq = int(k - 4.0lf * floor(k * 0.25lf));\n"
	 "\treturn r;\n"
	 "}\n"
	 "double sin_d(double x)\n"
	 "{\n"
	 "\tif (isnan(x) || isinf(x))\n"
	 "\t\treturn uint64BitsToDouble(0x7ff8000000000000ul);\n"
	 "\tif (abs(x) < 0.7853981633974483lf)\n"
	 "\t\treturn sin_poly_d(x);\n"
	 "\tint q;\n"
	 "\tdouble r = reduce_d(x, q);\n"
	 "\treturn q == 0 ? sin_poly_d(r) : q == 1 ? cos_poly_d(r) : q == 2 ? -sin_poly_d(r) : -cos_poly_d(r);\n"
	 "}\n"
	 "double cos_d(double x)\n"
	 "{\n"
	 "\tif (isnan(x) || isinf(x))\n"
	 "\t\treturn uint64BitsToDouble(0x7ff8000000000000ul);\n"
	 "\tint q;\n"
	 "\tdouble r = reduce_d(x, q);\n"
	 "\treturn q == 0 ? cos_poly_d(r) : q == 1 ? -sin_poly_d(r) : q == 2 ? -cos_poly_d(r) : sin_poly_d(r);\n"
	 "}\n"},
	{VH_TANH_D, VH_EXPM1_D,
	 "double tanh_d(double x)\n"
	 "{\n"
	 "\tdouble ax = abs(x), r;\n"
	 "\tif (isnan(x))\n"
	 "\t\treturn x;\n"
	 "\tif (ax > 22.0lf) {\n"
	 "\t\tr = 1.0lf;\n"
	 "\t} else {\n"
	 "\t\tprecise double t = expm1_d(2.0lf * ax);\n"
	 "\t\tr = t / (t + 2.0lf);\n"
	 "\t}\n"
	 "\treturn (doubleBitsToUint64(x) >> 63) != 0ul ? -r : r;\n"
	 "}\n"},
	{VH_SIGMOID_D, VH_EXP_D,
	 "double sigmoid_d(double x)\n"
	 "{\n"
	 "\tprecise double d = 1.0lf + exp_d(-x);\n"
	 "\treturn 1.0lf / d;\n"
	 "}\n"},
	{VH_ERF_D, VH_EXP_D,
	 "/* erf: its alternating Taylor series below 1.5; above, 1 - erfc with erfc's continued\n"
	 " * fraction e^(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))) (120 levels,\n"
	 " * evaluated from the bottom), x^2 split exactly (Dekker) so that e^(-x^2) stays\n"
	 " * accurate; +-1 from 6 on (erfc(6) < 2^-55). Within 8 ulps of glibc in a double model. */\n"
	 "double erf_d(double x)\n"
	 "{\n"
	 "\tdouble ax = abs(x);\n"
	 "\tprecise double r;\n"
	 "\tif (isnan(x))\n"
	 "\t\treturn x;\n"
	 "\tif (ax < 1.5lf) {\n"
	 "\t\tprecise double z = ax * ax, t = ax, s = ax;\n"
	 "\t\tfor (int n = 1; n < 100 && abs(t) > s * 1e-19lf; n++) {\n"
	 "\t\t\tt = -t * z / double(n);\n"
	 "\t\t\ts = s + t / double(2 * n + 1);\n"
	 "\t\t}\n"
	 "\t\tr = 1.1283791670955126lf * s;\n"
	 "\t} else if (ax < 6.0lf) {\n"
	 "\t\tprecise double c = 134217729.0lf * ax, xh = c - (c - ax), xl = ax - xh;\n"
	 "\t\tprecise double hi = ax * ax, lo = ((xh * xh - hi) + 2.0lf * xh * xl) + xl * xl;\n"
	 "\t\tprecise double f = ax;\n"
	 "\t\tfor (int n = 120; n >= 1; n--)\n"
	 "\t\t\tf = ax + (0.5lf * double(n)) / f;\n"
	 "\t\tr = 1.0lf - (exp_d(-hi) * (1.0lf - lo)) * 0.5641895835477563lf / f;\n"
	 "\t} else {\n"
	 "\t\tr = 1.0lf;\n"
	 "\t}\n"
	 "\treturn (doubleBitsToUint64(x) >> 63) != 0ul ? -r : r;\n"
	 "}\n"},
	{VH_POW_D, VH_EXP_D | VH_LOG_D,
	 "/* IEEE 754 pow: special cases as pow_f; exp(y log|x|) for the rest (its error grows\n"
	 " * with |y log x|: about that many ulps) */\n"
	 "double pow_d(double x, double y)\n"
	 "{\n"
	 "\tconst double inf = uint64BitsToDouble(0x7ff0000000000000ul);\n"
	 "\tif (y == 0.0lf || x == 1.0lf)\n"
	 "\t\treturn 1.0lf;\n"
	 "\tif (isnan(x) || isnan(y))\n"
	 "\t\treturn isnan(x) ? x : y;\n"
	 "\tdouble ax = abs(x), ay = abs(y);\n"
	 "\tbool yint = floor(y) == y, yodd = yint && ay < 9007199254740992.0lf && fract(ay * 0.5lf) != 0.0lf;\n"
	 "\tbool neg = (doubleBitsToUint64(x) >> 63) != 0ul;\n"
	 "\tif (isinf(y)) {\n"
	 "\t\tif (ax == 1.0lf)\n"
	 "\t\t\treturn 1.0lf;\n"
	 "\t\treturn (ax > 1.0lf) == (y > 0.0lf) ? inf : 0.0lf;\n"
	 "\t}\n"
	 "\tif (ax == 0.0lf || isinf(x)) {\n"
	 "\t\tdouble r = (ax == 0.0lf) == (y < 0.0lf) ? inf : 0.0lf;\n"
	 "\t\treturn neg && yodd ? -r : r;\n"
	 "\t}\n"
	 "\tif (neg && !yint)\n"
	 "\t\treturn uint64BitsToDouble(0x7ff8000000000000ul);\n"
	 "\tprecise double l = y * log_d(ax);\n"
	 "\tdouble r = exp_d(l);\n"
	 "\treturn neg && yodd ? -r : r;\n"
	 "}\n"},
};

/* The helpers an op's spelling calls (compiler/vulkan/emit.c's glsl_ops and ops.def's
 * helper column), by name. */
static const struct {
	const char *fn;
	unsigned need;
} calls[] = {
	{"fdiv_i", VH_IDIV}, {"fmod_i", VH_IMOD},
	{"abs_i", VH_IMINMAX}, {"max_i", VH_IMINMAX}, {"min_i", VH_IMINMAX},
	{"max_f", VH_FMINMAX}, {"min_f", VH_FMINMAX}, {"max_d", VH_DMINMAX}, {"min_d", VH_DMINMAX},
	{"expm1_f", VH_EXPM1}, {"log1p_f", VH_LOG1P}, {"tanh_f", VH_TANH}, {"erf_f", VH_ERF},
	{"pow_f", VH_POW}, {"sigmoid_f", VH_SIGMOID},
	{"exp_d", VH_EXP_D}, {"exp2_d", VH_EXP2_D}, {"expm1_d", VH_EXPM1_D}, {"log_d", VH_LOG_D},
	{"log2_d", VH_LOG2_D}, {"log1p_d", VH_LOG1P_D}, {"sin_d", VH_SINCOS_D},
	{"cos_d", VH_SINCOS_D}, {"tanh_d", VH_TANH_D}, {"sigmoid_d", VH_SIGMOID_D},
	{"erf_d", VH_ERF_D}, {"pow_d", VH_POW_D},
};

unsigned vk_lib_need(const char *fn)
{
	for (size_t i = 0; i < ARRAY_LEN(calls); i++)
		if (strcmp(calls[i].fn, fn) == 0)
			return calls[i].need;
	return 0;
}

void vk_lib(unsigned need, void (*put)(void *ctx, const char *text), void *ctx)
{
	/* dependencies come earlier in the table than their users: one backward pass */
	for (size_t i = ARRAY_LEN(helpers); i-- > 0;)
		if (need & helpers[i].need)
			need |= helpers[i].deps;
	for (size_t i = ARRAY_LEN(helpers); i-- > 0;)   /* dependencies of dependencies */
		if (need & helpers[i].need)
			need |= helpers[i].deps;
	for (size_t i = 0; i < ARRAY_LEN(helpers); i++)
		if (need & helpers[i].need)
			put(ctx, helpers[i].text);
}
