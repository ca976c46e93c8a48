/* compiler/wgsl/lib.c: the WGSL helper functions every generated module starts with (one
 * text, emitted verbatim by emit.c), and their reasons.
 *
 * - 16-bit storage: f16 and bf16 tensors live two to a u32 word (element 2w in the low
 *   half, as the host lays them out); h2f/b2f widen exactly, f2h/f2b round to nearest even
 *   with integer operations (NaN stays NaN, overflow goes to inf, f16 subnormals exact).
 *   WGSL's own conversions (pack2x16float, f16()) leave the rounding of inexact values to
 *   the implementation, so they are not used.
 * - Integers are i32 (WGSL has no i64): add_ck, sub_ck, mul_ck, neg_ck, abs_ck, fdiv_ck
 *   compute the exact result or report an overflow at the kernel's overflow site (the plan,
 *   compiler/map/owner.c, decides which operations need them); i2f, i2h, i2b round an integer to nearest even
 *   into f32, f16 and bf16 (WGSL's f32(i32) may round either way); cmp_if compares an
 *   integer with an f32 exactly (op 0..5: < <= > >= == !=), for the f64 comparisons the
 *   kernel IR makes in integer definitions (emit.c holds such f64 values as i32 or f32).
 * - Reals: NaN is tested on the bits (isnan_f): Dawn on lavapipe evaluates x != x as
 *   false for a NaN x (an ordered not-equal), so emit.c writes a != b as !(a == b) and no
 *   helper relies on a NaN comparing unequal. max_f and min_f are IEEE 754-2019 maximum
 *   and minimum (WGSL's max and min leave NaN open). rsqrt_f is inverseSqrt on positive
 *   finite x and 1/sqrt(x) at the edges (0 -> inf, -0 -> -inf, inf -> 0); sigmoid_f is
 *   1/(1+exp(-x)). exp_f, exp2_f, log_f and log2_f are the builtins made right at
 *   subnormals, where lavapipe's are not (exp(-89) gave 0, log(1e-40) -88.02): a subnormal
 *   result is exp(x + 24 ln2) * 2^-24, a subnormal argument is scaled by 2^24 first.
 *   tanh_f: WGSL's tanh is only as good as sinh/cosh from exp (lavapipe's gave 3e-8 for
 *   tanh(1e-40)): its Taylor series to x^19 on |x| < 0.5, 1 - 2/(exp(2|x|) + 1) up to
 *   |x| = 10 and +-1 beyond (tanh(10) rounds to 1 in f32), the sign restored. pow_f is
 *   pow(|x|, y) with C's special cases (lavapipe's pow(0, -2.5) gave 0), exp2(y*log2|x|)
 *   by the helpers above for a subnormal x, and the sign of a negative base for odd
 *   integer y (WGSL's pow is exp2(y*log2(x)), undefined for x < 0).
 *   WGSL has no expm1, log1p or erf: expm1_f is a degree-9 Taylor polynomial on
 *   |x| < ln2/2 and exp(x) - 1 beyond; log1p_f is 2*atanh(x/(2+x)) by its odd series for x
 *   in [-0.5, 1] and log(1+x) beyond; erf_f is its Taylor series on |x| < 0.5, Abramowitz
 *   and Stegun 7.1.26 (absolute error 1.5e-7) on [0.5, 4) and +-1 beyond. The allowance
 *   table has no rows for tanh, expm1, log1p, erf or pow on wgsl (no bound: the budget is
 *   infinite there); these forms keep them close to the correctly rounded value anyway.
 * - Errors: rep claims the error slot once (the first report wins, its value follows);
 *   chk passes an index inside [lo, hi] and otherwise reports (when g) and returns lo.
 * - fbits: a float from its bits at run time (WGSL rejects a constant expression that is
 *   infinite or NaN, and may flush a subnormal one); opq(x, z) is x with its bits xor z, z
 *   being 0 at run time but unknown to the compiler (emit.c's opaque operands).
 * - div_f: x / y, with a divisor below 2^-126 or above 2^126 scaled by 2^24 first (WGSL
 *   bounds x / y only for |y| in [2^-126, 2^126]; lavapipe's x / 1e-39 overflowed to inf,
 *   a reciprocal taken first).
 */
#include "wgsl.h"

const char *const wgsl_lib[] = {
	"fn fbits(u: u32) -> f32 {\n"
	"\treturn bitcast<f32>(u);\n"
	"}\n",
	"fn opq(x: f32, z: u32) -> f32 {\n"
	"\treturn bitcast<f32>(bitcast<u32>(x) ^ z);\n"
	"}\n",
	"fn div_f(a: f32, b: f32) -> f32 {\n"
	"\tlet ab = abs(b);\n"
	"\tif (ab > 0.0f && ab < 0x1p-126f) {\n"
	"\t\treturn (a / (b * 0x1p24f)) * 0x1p24f;\n"
	"\t}\n"
	"\tif (ab > 0x1p126f && ab <= 0x1.fffffep+127f) {\n"
	"\t\treturn (a / (b * 0x1p-24f)) * 0x1p-24f;\n"
	"\t}\n"
	"\treturn a / b;\n"
	"}\n",
	"fn half16(w: u32, i: u32) -> u32 {\n"
	"\treturn (w >> ((i & 1u) << 4u)) & 0xffffu;\n"
	"}\n",
	"fn h2f(h: u32) -> f32 {\n"
	"\tlet s = (h & 0x8000u) << 16u;\n"
	"\tlet e = (h >> 10u) & 0x1fu;\n"
	"\tlet m = h & 0x3ffu;\n"
	"\tif (e == 0u) {\n"
	"\t\treturn bitcast<f32>(bitcast<u32>(f32(m) * 0x1p-24f) | s);\n"
	"\t}\n"
	"\tif (e == 31u) {\n"
	"\t\treturn bitcast<f32>(s | 0x7f800000u | (m << 13u));\n"
	"\t}\n"
	"\treturn bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));\n"
	"}\n",
	"fn f2h(x: f32) -> u32 {\n"
	"\tlet b = bitcast<u32>(x);\n"
	"\tlet s = (b >> 16u) & 0x8000u;\n"
	"\tlet a = b & 0x7fffffffu;\n"
	"\tif (a > 0x7f800000u) {\n"
	"\t\treturn s | 0x7e00u | ((a >> 13u) & 0x1ffu);\n"
	"\t}\n"
	"\tif (a >= 0x477ff000u) {\n"
	"\t\treturn s | 0x7c00u;\n"
	"\t}\n"
	"\tif (a >= 0x38800000u) {\n"
	"\t\tlet r = a - 0x38000000u;\n"
	"\t\treturn s | ((r + 0xfffu + ((r >> 13u) & 1u)) >> 13u);\n"
	"\t}\n"
	"\tlet e = a >> 23u;\n"
	"\tif (e < 102u) {\n"
	"\t\treturn s;\n"
	"\t}\n"
	"\tlet m = (a & 0x7fffffu) | 0x800000u;\n"
	"\tlet sh = 126u - e;\n"
	"\tlet q = m >> sh;\n"
	"\tlet rem = m & ((1u << sh) - 1u);\n"
	"\tlet half = 1u << (sh - 1u);\n"
	"\treturn s | (q + select(0u, 1u, rem > half || (rem == half && (q & 1u) == 1u)));\n"
	"}\n",
	"fn b2f(h: u32) -> f32 {\n"
	"\treturn bitcast<f32>(h << 16u);\n"
	"}\n",
	"fn f2b(x: f32) -> u32 {\n"
	"\tlet b = bitcast<u32>(x);\n"
	"\tlet s = (b >> 16u) & 0x8000u;\n"
	"\tlet a = b & 0x7fffffffu;\n"
	"\tif (a > 0x7f800000u) {\n"
	"\t\treturn s | 0x7fc0u | ((a >> 16u) & 0x3fu);\n"
	"\t}\n"
	"\tif (a >= 0x7f7f8000u) {\n"
	"\t\treturn s | 0x7f80u;\n"
	"\t}\n"
	"\treturn s | ((a + 0x7fffu + ((a >> 16u) & 1u)) >> 16u);\n"
	"}\n",
	"fn rep(site: i32, v: i32) {\n"
	"\tloop {\n"
	"\t\tlet r = atomicCompareExchangeWeak(&err[0], 0i, site + 1i);\n"
	"\t\tif (r.exchanged) {\n"
	"\t\t\tatomicStore(&err[1], v);\n"
	"\t\t\treturn;\n"
	"\t\t}\n"
	"\t\tif (r.old_value != 0i) {\n"
	"\t\t\treturn;\n"
	"\t\t}\n"
	"\t}\n"
	"}\n",
	"fn chk(v: i32, lo: i32, hi: i32, g: bool, site: i32) -> i32 {\n"
	"\tif (v >= lo && v <= hi) {\n"
	"\t\treturn v;\n"
	"\t}\n"
	"\tif (g) {\n"
	"\t\trep(site, v);\n"
	"\t}\n"
	"\treturn lo;\n"
	"}\n",
	"fn add_ck(a: i32, b: i32, site: i32) -> i32 {\n"
	"\tlet r = a + b;\n"
	"\tif (((a ^ r) & (b ^ r)) < 0i) {\n"
	"\t\trep(site, 0i);\n"
	"\t}\n"
	"\treturn r;\n"
	"}\n",
	"fn sub_ck(a: i32, b: i32, site: i32) -> i32 {\n"
	"\tlet r = a - b;\n"
	"\tif (((a ^ b) & (a ^ r)) < 0i) {\n"
	"\t\trep(site, 0i);\n"
	"\t}\n"
	"\treturn r;\n"
	"}\n",
	"fn mul_ck(a: i32, b: i32, site: i32) -> i32 {\n"
	"\tlet r = a * b;\n"
	"\tif (a != 0i && (r / a != b || (a == -1i && b == i32(-2147483648)))) {\n"
	"\t\trep(site, 0i);\n"
	"\t}\n"
	"\treturn r;\n"
	"}\n",
	"fn neg_ck(a: i32, site: i32) -> i32 {\n"
	"\tif (a == i32(-2147483648)) {\n"
	"\t\trep(site, 0i);\n"
	"\t}\n"
	"\treturn -a;\n"
	"}\n",
	"fn abs_ck(a: i32, site: i32) -> i32 {\n"
	"\tif (a == i32(-2147483648)) {\n"
	"\t\trep(site, 0i);\n"
	"\t}\n"
	"\treturn abs(a);\n"
	"}\n",
	"fn fdiv_i(a: i32, b: i32) -> i32 {\n"
	"\tif (b == 0i) {\n"
	"\t\treturn 0i;\n"
	"\t}\n"
	"\tlet q = a / b;\n"
	"\tif ((a % b) != 0i && ((a < 0i) != (b < 0i))) {\n"
	"\t\treturn q - 1i;\n"
	"\t}\n"
	"\treturn q;\n"
	"}\n",
	"fn fdiv_ck(a: i32, b: i32, site: i32) -> i32 {\n"
	"\tif (a == i32(-2147483648) && b == -1i) {\n"
	"\t\trep(site, 0i);\n"
	"\t}\n"
	"\treturn fdiv_i(a, b);\n"
	"}\n",
	"fn fmod_i(a: i32, b: i32) -> i32 {\n"
	"\tif (b == 0i) {\n"
	"\t\treturn 0i;\n"
	"\t}\n"
	"\tlet r = a % b;\n"
	"\tif (r < 0i) {\n"
	"\t\treturn r + abs(b);\n"
	"\t}\n"
	"\treturn r;\n"
	"}\n",
	"fn cmp_if(i: i32, c: f32, op: i32) -> bool {\n"
	"\tif (isnan_f(c)) {\n"
	"\t\treturn op == 5i;\n"
	"\t}\n"
	"\tvar r = 0i;\n"
	"\tif (c >= 2147483648.0f) {\n"
	"\t\tr = -1i;\n"
	"\t} else if (c < -2147483648.0f) {\n"
	"\t\tr = 1i;\n"
	"\t} else {\n"
	"\t\tlet fc = floor(c);\n"
	"\t\tlet ic = i32(fc);\n"
	"\t\tr = select(select(select(-1i, 0i, fc == c), 1i, i > ic), -1i, i < ic);\n"
	"\t}\n"
	"\tswitch (op) {\n"
	"\t\tcase 0i: { return r < 0i; }\n"
	"\t\tcase 1i: { return r <= 0i; }\n"
	"\t\tcase 2i: { return r > 0i; }\n"
	"\t\tcase 3i: { return r >= 0i; }\n"
	"\t\tcase 4i: { return r == 0i; }\n"
	"\t\tdefault: { return r != 0i; }\n"
	"\t}\n"
	"}\n",
	"fn i2f(i: i32) -> f32 {\n"
	"\treturn f32(i & ~0xffi) + f32(i & 0xffi);\n"
	"}\n",
	"fn i2h(i: i32) -> f32 {\n"
	"\tif (i <= -65520i || i >= 65520i) {\n"
	"\t\treturn select(fbits(0x7f800000u), fbits(0xff800000u), i < 0i);\n"
	"\t}\n"
	"\treturn h2f(f2h(f32(i)));\n"
	"}\n",
	"fn i2b(i: i32) -> f32 {\n"
	"\tlet m = u32(abs(i));\n"
	"\tif (m < 256u) {\n"
	"\t\treturn f32(i);\n"
	"\t}\n"
	"\tlet sh = 24u - countLeadingZeros(m);\n"
	"\tlet q = m >> sh;\n"
	"\tlet rem = m & ((1u << sh) - 1u);\n"
	"\tlet half = 1u << (sh - 1u);\n"
	"\tlet f = f32((q + select(0u, 1u, rem > half || (rem == half && (q & 1u) == 1u))) << sh);\n"
	"\treturn select(f, -f, i < 0i);\n"
	"}\n",
	"fn isnan_f(a: f32) -> bool {\n"
	"\treturn (bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u;\n"
	"}\n"
	"fn signbit(a: f32) -> bool {\n"
	"\treturn (bitcast<u32>(a) & 0x80000000u) != 0u;\n"
	"}\n",
	"fn max_f(a: f32, b: f32) -> f32 {\n"
	"\tif (isnan_f(a) || isnan_f(b)) {\n"
	"\t\treturn a + b;\n"
	"\t}\n"
	"\tif (a == b) {\n"
	"\t\treturn select(a, b, signbit(a));\n"
	"\t}\n"
	"\treturn select(b, a, a > b);\n"
	"}\n",
	"fn min_f(a: f32, b: f32) -> f32 {\n"
	"\tif (isnan_f(a) || isnan_f(b)) {\n"
	"\t\treturn a + b;\n"
	"\t}\n"
	"\tif (a == b) {\n"
	"\t\treturn select(b, a, signbit(a));\n"
	"\t}\n"
	"\treturn select(b, a, a < b);\n"
	"}\n",
	"fn rsqrt_f(x: f32) -> f32 {\n"
	"\tif (x > 0.0f && x <= 0x1.fffffep+127f) {\n"
	"\t\treturn inverseSqrt(x);\n"
	"\t}\n"
	"\treturn 1.0f / sqrt(x);\n"
	"}\n",
	"fn exp_f(x: f32) -> f32 {\n"
	"\tif (x < -87.33654475f) {\n"
	"\t\treturn exp(x + 16.635532333438687f) * 0x1p-24f;\n"
	"\t}\n"
	"\treturn exp(x);\n"
	"}\n",
	"fn exp2_f(x: f32) -> f32 {\n"
	"\tif (x < -126.0f) {\n"
	"\t\treturn exp2(x + 24.0f) * 0x1p-24f;\n"
	"\t}\n"
	"\treturn exp2(x);\n"
	"}\n",
	"fn log_f(x: f32) -> f32 {\n"
	"\tif (x > 0.0f && x < 0x1p-126f) {\n"
	"\t\treturn log(x * 0x1p24f) - 16.635532333438687f;\n"
	"\t}\n"
	"\treturn log(x);\n"
	"}\n",
	"fn log2_f(x: f32) -> f32 {\n"
	"\tif (x > 0.0f && x < 0x1p-126f) {\n"
	"\t\treturn log2(x * 0x1p24f) - 24.0f;\n"
	"\t}\n"
	"\treturn log2(x);\n"
	"}\n",
	"fn sigmoid_f(x: f32) -> f32 {\n"
	"\treturn 1.0f / (1.0f + exp_f(-x));\n"
	"}\n",
	"fn tanh_f(x: f32) -> f32 {\n"
	"\tif (x == 0.0f) {\n"
	"\t\treturn x;   // the sign of zero: x + x * (x2 * p) gives +0 for -0\n"
	"\t}\n"
	"\tlet a = abs(x);\n"
	"\tif (a < 0.5f) {\n"
	"\t\tlet x2 = x * x;\n"
	"\t\tvar p = -443861162.0f / 1856156927625.0f;\n"
	"\t\tp = p * x2 + 6404582.0f / 10854718875.0f;\n"
	"\t\tp = p * x2 - 929569.0f / 638512875.0f;\n"
	"\t\tp = p * x2 + 21844.0f / 6081075.0f;\n"
	"\t\tp = p * x2 - 1382.0f / 155925.0f;\n"
	"\t\tp = p * x2 + 62.0f / 2835.0f;\n"
	"\t\tp = p * x2 - 17.0f / 315.0f;\n"
	"\t\tp = p * x2 + 2.0f / 15.0f;\n"
	"\t\tp = p * x2 - 1.0f / 3.0f;\n"
	"\t\treturn x + x * (x2 * p);\n"
	"\t}\n"
	"\tif (a > 10.0f) {\n"
	"\t\treturn select(1.0f, -1.0f, x < 0.0f);\n"
	"\t}\n"
	"\tlet r = 1.0f - 2.0f / (exp(2.0f * a) + 1.0f);\n"
	"\treturn select(r, -r, x < 0.0f);\n"
	"}\n",
	"fn pow_f(x: f32, y: f32) -> f32 {\n"
	"\tif (y == 0.0f || x == 1.0f) {\n"
	"\t\treturn 1.0f;\n"
	"\t}\n"
	"\tif (isnan_f(x) || isnan_f(y)) {\n"
	"\t\treturn x + y;\n"
	"\t}\n"
	"\tlet ay = abs(y);\n"
	"\tlet yint = floor(y) == y;\n"
	"\tlet yodd = yint && ay < 16777216.0f && (i32(ay) & 1i) == 1i;\n"
	"\tif (x == -1.0f && ay > 0x1.fffffep+127f) {\n"
	"\t\treturn 1.0f;\n"
	"\t}\n"
	"\tif (x < 0.0f && !yint) {\n"
	"\t\treturn fbits(0x7fc00000u);\n"
	"\t}\n"
	"\tif (x == 0.0f) {\n"
	"\t\tlet z = select(fbits(0x7f800000u), 0.0f, y > 0.0f);\n"
	"\t\treturn select(z, -z, yodd && signbit(x));\n"
	"\t}\n"
	"\tlet ax = abs(x);\n"
	"\tvar r = pow(ax, y);\n"
	"\tif (ax < 0x1p-126f) {\n"
	"\t\tr = exp2_f(y * log2_f(ax));\n"
	"\t}\n"
	"\treturn select(r, -r, yodd && signbit(x));\n"
	"}\n",
	"fn expm1_f(x: f32) -> f32 {\n"
	"\tif (x == 0.0f) {\n"
	"\t\treturn x;   // the sign of zero: x + x * (x2 * p) gives +0 for -0\n"
	"\t}\n"
	"\tif (abs(x) < 0.3465735902799727f) {\n"
	"\t\tvar p = 2.7557319223985893e-6f;\n"
	"\t\tp = p * x + 2.48015873015873e-5f;\n"
	"\t\tp = p * x + 1.984126984126984e-4f;\n"
	"\t\tp = p * x + 1.388888888888889e-3f;\n"
	"\t\tp = p * x + 8.333333333333333e-3f;\n"
	"\t\tp = p * x + 4.1666666666666664e-2f;\n"
	"\t\tp = p * x + 0.16666666666666666f;\n"
	"\t\tp = p * x + 0.5f;\n"
	"\t\treturn x + (x * x) * p;\n"
	"\t}\n"
	"\treturn exp(x) - 1.0f;\n"
	"}\n",
	"fn log1p_f(x: f32) -> f32 {\n"
	"\tif (x >= -0.5f && x <= 1.0f) {\n"
	"\t\tlet s = x / (2.0f + x);\n"
	"\t\tlet s2 = s * s;\n"
	"\t\tvar p = 1.0f / 19.0f;\n"
	"\t\tp = p * s2 + 1.0f / 17.0f;\n"
	"\t\tp = p * s2 + 1.0f / 15.0f;\n"
	"\t\tp = p * s2 + 1.0f / 13.0f;\n"
	"\t\tp = p * s2 + 1.0f / 11.0f;\n"
	"\t\tp = p * s2 + 1.0f / 9.0f;\n"
	"\t\tp = p * s2 + 1.0f / 7.0f;\n"
	"\t\tp = p * s2 + 1.0f / 5.0f;\n"
	"\t\tp = p * s2 + 1.0f / 3.0f;\n"
	"\t\treturn 2.0f * (s + s * (s2 * p));\n"
	"\t}\n"
	"\treturn log(1.0f + x);\n"
	"}\n",
	"fn erf_f(x: f32) -> f32 {\n"
	"\tif (x == 0.0f) {\n"
	"\t\t// a zero of x's sign (x + x * (x2 * p) gives +0 for -0); not x itself: a device\n"
	"\t\t// that flushes takes a subnormal x for 0 here, and erf(x) is 1.128 x, not x\n"
	"\t\treturn bitcast<f32>(bitcast<u32>(x) & 0x80000000u);\n"
	"\t}\n"
	"\tlet a = abs(x);\n"
	"\tif (a < 0.5f) {\n"
	"\t\tlet x2 = x * x;\n"
	"\t\tvar p = -1.0f / 75600.0f;\n"
	"\t\tp = p * x2 + 1.0f / 9360.0f;\n"
	"\t\tp = p * x2 - 1.0f / 1320.0f;\n"
	"\t\tp = p * x2 + 1.0f / 216.0f;\n"
	"\t\tp = p * x2 - 1.0f / 42.0f;\n"
	"\t\tp = p * x2 + 0.1f;\n"
	"\t\tp = p * x2 - 1.0f / 3.0f;\n"
	"\t\treturn 1.1283791670955126f * (x + x * (x2 * p));\n"
	"\t}\n"
	"\tif (a >= 4.0f) {\n"
	"\t\treturn select(1.0f, -1.0f, x < 0.0f);\n"
	"\t}\n"
	"\tlet t = 1.0f / (1.0f + 0.3275911f * a);\n"
	"\tlet q = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));\n"
	"\tlet r = 1.0f - q * exp(-a * a);\n"
	"\treturn select(r, -r, x < 0.0f);\n"
	"}\n",
};
const size_t wgsl_nlib = ARRAY_LEN(wgsl_lib);
