/* tests/test_opencl.c: the opencl backend, run on the same kernels and inputs as the c
 * backend and compared with it.
 *
 * Where a graph calls no library function (exp, log, rsqrt, ...) the two backends must
 * agree bit for bit: both round every + - * / sqrt once (no contraction on either side; PoCL
 * supports correctly rounded f32 divide and sqrt, which the backend then asks for) and the
 * kernel IR fixes the order of every reduction, split and pairwise ones included, however
 * the opencl backend spreads a split over a work-group. With library functions (OpenCL's
 * bounds are a few ulps, glibc's about one) the outputs must be close (see near()).
 * The examples run under the default schedule and two sampled ones; `assay check` judges
 * them against the oracle proper. Integer floor division and remainder by 2^k, which the
 * emitter writes as shifts and masks, are checked over long edge values on the host and
 * on the device, and tests/regress/pocl_split2_tail.tg (PoCL 3.1's miscompile of the
 * helper form) runs on the device. The NaN guards the emitter puts around exp, exp2, expm1,
 * tanh, floor and ceil change no value on the device (against the same program without
 * them), and tests/regress/pocl_nan_const.tg (PoCL 3.1's poison from a NaN constant,
 * which crashed the kernel) runs on the device.
 *
 * Without an OpenCL device (no ICD loader, no platform, no device) the tests that run
 * kernels print "SKIP: ..." once and pass nothing of substance; the emission tests, which
 * need no device, still run.
 */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>
#include "testutil.h"
#include "backendutil.h"
#include "../compiler/compiler.h"
#include "../interp/interp.h"

enum { CLOSE_ULPS = BT_CLOSE_ULPS };

/* The shared helpers (backendutil.h), bound to this suite's backend. */
static inline const char *cache_dir(void) { return tu_cache_dir("opencl"); }
static inline const Backend *ocl(void) { return bt_backend("opencl"); }
static inline Graph *parse(const char *src) { return tu_parse(src); }
static inline HostTensor *inputs(const Graph *g, uint64_t seed) { return bt_inputs(g, seed); }
static inline void free_all(HostTensor *t, int n) { tu_free_tensors(t, n); }
static inline void sched_of(Graph *g, const char *text, Schedule *s) { bt_sched_of(g, text, s); }
static inline bool same(double a, double b) { return tu_same(a, b); }
static inline char **examples(int *n) { return bt_examples(n); }
static inline void free_examples(char **v, int n) { bt_free_examples(v, n); }

static int run_on(const Backend *b, const Graph *g, const Schedule *s, const HostTensor *in,
		  HostTensor *out, Diag *d)
{
	return bt_run_on("opencl", b, g, s, in, out, d);
}

static char *emit_of(const Backend *b, const Graph *g, const Schedule *s)
{
	return bt_emit_of(b, g, s);
}

/* Runs g under s on opencl and on c and compares every output: bit for bit when exact;
 * after cancellation near zero within BT_CLOSE_ULPS * 0x1p-10 ulps of the tensor's largest magnitude. */
static void diff_vs_c(const Graph *g, const Schedule *s, const HostTensor *in, bool exact,
		      const char *what)
{
	bt_diff_vs_c("opencl", BT_CLOSE_ULPS * 0x1p-10, g, s, in, exact, what);
}

/* Example _i (of the sorted list): the default schedule and one sampled schedule (seeds
 * 1, 2 and 3 in turn across the examples). */
START_TEST(example)
{
	int n;
	char **v = examples(&n);
	ck_assert_int_lt(_i, n);
	Diag d = {0};
	Graph *g = ir_parse_file(v[_i], NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s: %s", v[_i], d.msg);
	HostTensor *in = inputs(g, 7);
	for (uint64_t seed = 0; seed <= 1 + (uint64_t)_i % 3; seed += 1 + (uint64_t)_i % 3) {
		Schedule s;
		if (seed)
			sched_sample(g, seed, &s);
		else
			sched_default(g, &s);
		char what[256];
		snprintf(what, sizeof what, "%s %s%llu", v[_i], seed ? "s" : "default",
			 (unsigned long long)seed);
		diff_vs_c(g, &s, in, false, what);
		sched_free(&s);
	}
	free_all(in, ir_ninputs(g));
	ir_free(g);
	free_examples(v, n);
}
END_TEST

/* ------------------------------------------------------------ reductions */

static const char red_src[] =
	"size M = 5, N = 6, K = 37\n"
	"input a : f32[M, K]\n"
	"input b : f32[K, N]\n"
	"y[m:M, n:N] = sum(k:K) a[m, k] * b[k, n]\n"
	"z[m:M] = sum(k:K, n:N) a[m, k] * b[k, n]\n"
	"p[m:M] = prod(k:K) (1 + a[m, k] / 8)\n"
	"x[n:N] = max(k:K) b[k, n]\n"
	"q[m:M] = sum(k: m..K) a[m, k] / (b[k, 0] + 5)\n"
	"output y : f32, z : f32, p : f32, x : f32, q : f32\n";

/* Splits, pairwise orders, tiles (reductions hoisted out of the point loops), triangular
 * ranges, f16/bf16/f64 accumulation: bit for bit with the c backend. The split ones must
 * have become parallel reductions (local memory and barriers). */
START_TEST(reductions_exact)
{
	static const struct {
		const char *sched;
		bool parallel;   /* a split: the source must use __local memory and barriers */
	} sch[] = {
		{"split y : k=8\nsplit z : k=4\nsplit p : k=3\nsplit x : k=8\nsplit q : k=4", true},
		{"split z : n=3\nsplit y : k=5\norder y : pairwise\norder p : pairwise\n"
		 "tile x : n=5\ntile q : m=2", true},
		{"split y : k=4\norder y : pairwise\naccum y : f16\nsplit z : k=2\norder z : pairwise\n"
		 "accum z : bf16\ntile p : m=4\naccum p : bf16\norder q : pairwise", true},
		{"tile y : m=2, n=4\ntile z : m=3\naccum z : f64\nstore z : f64\nsplit q : k=8\n"
		 "order q : pairwise\naccum q : f64\nstore x : f16", true},
		{"split y : k=3\ntile y : n=4\nstore y : f16\nstore z : bf16\naccum z : f16\n"
		 "split z : k=8\nstore q : bf16\ntile p : m=5", true},
	};
	Graph *g = parse(red_src);
	HostTensor *in = inputs(g, 3);
	for (size_t i = 0; i < ARRAY_LEN(sch); i++) {
		Schedule s;
		sched_of(g, sch[i].sched, &s);
		diff_vs_c(g, &s, in, true, sch[i].sched);
		char *src = emit_of(ocl(), g, &s);
		if (sch[i].parallel)
			ck_assert_msg(strstr(src, "__local ") && strstr(src, "barrier("),
				      "[%s]: no parallel reduction in the source", sch[i].sched);
		free(src);
		sched_free(&s);
	}
	free_all(in, 2);
	ir_free(g);
}
END_TEST

/* Pairwise partials too large for local memory live in the scratch buffer (shared by a
 * work-group, or per work-item); logsumexp's split sum; topk's lists. */
START_TEST(large_locals)
{
	static const char *sch[] = {
		"split s : c=4\norder s : pairwise\nsplit l : c=3",
		"order s : pairwise\ntile s : r=3\nsplit l : c=8\norder l : pairwise\ntile v : r=2",
	};
	Graph *g = parse("size R = 3, C = 5000, K = 5\ninput x : f32[R, C]\n"
			 "s[r:R] = sum(c:C) x[r, c] * x[r, c]\n"
			 "l[r:R] = logsumexp(c:C) x[r, c] / 4\n"
			 "v[r:R, k:K], ix[r:R, k:K] = topk(c:C) x[r, c]\n"
			 "output s : f32, l : f32, v : f32, ix : i32\n");
	HostTensor *in = inputs(g, 5);
	for (size_t i = 0; i < ARRAY_LEN(sch); i++) {
		Schedule s;
		sched_of(g, sch[i], &s);
		diff_vs_c(g, &s, in, false, sch[i]);
		char *src = emit_of(ocl(), g, &s);
		if (i == 0)
			ck_assert_msg(strstr(src, "(__global float *)(sg + "), "[%s]: pairwise partials "
				      "not in shared scratch", sch[i]);
		if (i == 1)
			ck_assert_msg(strstr(src, "(__global float *)(sp + "), "[%s]: pairwise terms "
				      "not in private scratch", sch[i]);
		free(src);
		sched_free(&s);
	}
	free_all(in, 1);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ formats and ops */

/* f16 and bf16 storage from f32 and from f64 arithmetic, and f16/bf16 casts: bit-identical
 * to tensor.c's round-to-nearest-even over random bit patterns and the classic edges. */
START_TEST(half_storage)
{
	Graph *g = parse(BT_HALF_SRC "e[i:N] = f16(x[i])\nf[i:N] = bf16(x[i])\n"
			 "output a : f16, b : bf16, c : f16, d : bf16, e : f32, f : f32\n");
	HostTensor *in = inputs(g, 14), out[6];
	bt_half_inputs(in);
	Schedule s;
	sched_of(g, BT_HALF_SCHED, &s);
	Diag d = {0};
	ck_assert_msg(run_on(ocl(), g, &s, in, out, &d) == 0, "%s", d.msg);
	for (int64_t i = 0; i < 4096; i++) {
		double x = ht_get(&in[0], i), y = ht_get(&in[1], i);
		bt_expect_halves(out, i, x, y);
		double we = fmt_f16_to_double(fmt_double_to_f16(x));
		double wf = fmt_bf16_to_double(fmt_double_to_bf16(x));
		ck_assert_msg(same(ht_get(&out[4], i), we), "f16(%a): got %a, want %a", x,
			      ht_get(&out[4], i), we);
		ck_assert_msg(same(ht_get(&out[5], i), wf), "bf16(%a): got %a, want %a", x,
			      ht_get(&out[5], i), wf);
	}
	sched_free(&s);
	free_all(in, 2);
	for (int k = 0; k < 6; k++)
		ht_free(&out[k]);
	ir_free(g);
}
END_TEST

/* IEEE maximum/minimum on NaN and signed zeros, casts, integer division and remainder of
 * negative numbers, select, comparisons: bit for bit with the c backend. */
START_TEST(scalar_ops)
{
	Graph *g = parse("size N = 40\ninput a : f32[N]\ninput b : f32[N]\n"
			 "mx[i:N] = max(a[i], b[i])\nmn[i:N] = min(a[i], b[i])\n"
			 "cs[i:N] = f16(a[i] * 3) + bf16(b[i] / 3) + f64(a[i]) / 7\n"
			 "k[i:N] = (i * 7 - 50) % 5 - abs(i - 8) + max(i - 20, 3) * (i - 2) % 4 - min(i, 9)\n"
			 "d[i:N] = (a[(i - 20) / 3] ?? -1) + b[(i * 3 - 7) % 11] * 2\n"
			 "r[i:N] = i % 2 == 0 && a[i] > 0 ? sqrt(a[i]) : (-i) % 3\n"
			 "f[i:N] = floor(a[i] * 2.5) + ceil(b[i] - 0.5) + abs(a[i] - b[i])\n"
			 "output mx : f32, mn : f32, cs : f32, k : i32, r : f32, f : f32, d : f32\n");
	HostTensor *in = inputs(g, 15);
	static const double sa[] = {NAN, 1, -0.0, 0.0, INFINITY, -3, 2, -INFINITY, 0x1p-140};
	static const double sb[] = {1, NAN, 0.0, -0.0, -INFINITY, -3, NAN, -INFINITY, -0x1p-149};
	for (int i = 0; i < (int)ARRAY_LEN(sa); i++) {
		ht_set(&in[0], i, sa[i]);
		ht_set(&in[1], i, sb[i]);
	}
	static const char *sch[] = {"", "tile mx : i=5\ntile k : i=4\ntile r : i=3\nstore cs : f64\n"
				    "store f : bf16\nstore mn : f16\ntile d : i=7"};
	for (size_t i = 0; i < ARRAY_LEN(sch); i++) {
		Schedule s;
		sched_of(g, sch[i], &s);
		diff_vs_c(g, &s, in, true, sch[i]);
		sched_free(&s);
	}
	free_all(in, 2);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ integer division by 2^k */

/* Floor division and remainder of index expressions by powers of two and by other
 * constants, of negative numerators too (the emitter writes the first as shifts and masks,
 * the others with the program's fdiv_i and fmod_i). */
static const char pow2_src[] =
	"size N = 40\ninput a : f32[N]\n"
	"q[i:N] = (a[(i - 20) / 4 + 5] ?? -1) + (a[(i - 17) / 16 + 2] ?? -2) + "
	"(a[(i - 20) / 3 + 7] ?? -3) + a[(i * 7 - 50) % 8] + a[(i - 21) % 6] * a[(5 - i) % 2]\n"
	"k[i:N] = (i * 7 - 50) % 8 + (i - 30) % 5\n"
	"output q : f32, k : i32\n";

/* The divisors of the identity tests: every 2^k a long holds (k = 0..62), then others. */
static int divisors(int64_t *c)
{
	static const int64_t other[] = {3, 5, 6, 7, 10, 12, 1000, 3486784401LL, 2147483649LL,
					(INT64_C(1) << 62) + 1, INT64_MAX - 1, INT64_MAX};
	int n = 0;
	for (int k = 0; k < 63; k++)
		c[n++] = INT64_C(1) << k;
	for (size_t i = 0; i < ARRAY_LEN(other); i++)
		c[n++] = other[i];
	return n;
}

enum { DIVISORS = 63 + 12, EDGES = 32 };

/* EDGES numerators for divisor c > 0: the extremes, zero, c, 2c and the multiples of c
 * nearest the extremes, with the negatives of the small ones, each with its neighbours
 * (those a long holds), then pseudo-random ones of every magnitude and both signs. */
static void edges(int64_t c, uint64_t seed, int64_t *v)
{
	int64_t c2, x;
	if (__builtin_mul_overflow(c, 2, &c2))
		c2 = c;
	const int64_t base[] = {INT64_MIN, 0, INT64_MAX, c, -c, c2, -c2, INT64_MAX / c * c,
				INT64_MIN / c * c};
	int n = 0;
	for (size_t i = 0; i < ARRAY_LEN(base); i++)
		for (int64_t d = -1; d <= 1; d++)
			v[n++] = __builtin_add_overflow(base[i], d, &x) ? base[i] : x;
	while (n < EDGES) {
		seed += 0x9e3779b97f4a7c15ULL;   /* splitmix64 */
		uint64_t z = seed;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		z ^= z >> 31;
		int shift = (n * 7) % 60;
		v[n++] = (int64_t)z >> shift;
	}
}

/* floor(a / c) and a - c * floor(a / c) for c > 0, from C's truncating / and %. */
static void floor_ref(int64_t a, int64_t c, int64_t *q, int64_t *r)
{
	int64_t t = a % c;
	*q = a / c - (t < 0);
	*r = t < 0 ? t + c : t;
}

/* The forms the emitter writes for c = 2^k, (a >> k) and (a & (2^k - 1)), are floor
 * division and the non-negative remainder for every long a. GCC's >> of a negative value
 * fills with ones (its documented implementation-defined behaviour), as OpenCL C's >> does
 * by the specification ("Shift Operators"), and both have two's complement integers: this
 * proves the identity; pow2_device runs the same forms on the device. */
START_TEST(pow2_identities)
{
	int64_t c[DIVISORS], v[EDGES];
	ck_assert_int_eq(divisors(c), DIVISORS);
	for (int k = 0; k < 63; k++) {
		edges(c[k], (uint64_t)k, v);
		for (int i = 0; i < EDGES; i++) {
			int64_t q, r;
			floor_ref(v[i], c[k], &q, &r);
			ck_assert_msg(r >= 0 && r < c[k] && (uint64_t)q * (uint64_t)c[k] + (uint64_t)r ==
				      (uint64_t)v[i], "reference at %lld / 2^%d", (long long)v[i], k);
			ck_assert_msg((v[i] >> k) == q, "%lld >> %d: %lld, floor %lld", (long long)v[i], k,
				      (long long)(v[i] >> k), (long long)q);
			ck_assert_msg((v[i] & (c[k] - 1)) == r, "%lld & (2^%d - 1): %lld, remainder %lld",
				      (long long)v[i], k, (long long)(v[i] & (c[k] - 1)), (long long)r);
		}
	}
}
END_TEST

/* The opencl text: floor division and remainder by a constant 2^k are shifts and masks,
 * by other constants the helpers; the c backend's text keeps its helpers for all. */
START_TEST(pow2_text)
{
	Graph *g = parse(pow2_src);
	Schedule s;
	sched_default(g, &s);
	char *src = emit_of(ocl(), g, &s);
	const char *body = strstr(src, "__kernel");
	ck_assert_ptr_nonnull(body);
	static const char *const want[] = {" >> 2);", " >> 4);", " & 7L);", " & 1L);", ", 3L);",
					   ", 6L);", ", 5L);"};
	for (size_t i = 0; i < ARRAY_LEN(want); i++)
		ck_assert_msg(strstr(body, want[i]), "no '%s' in:\n%s", want[i], body);
	ck_assert_ptr_nonnull(strstr(body, "fdiv_i("));   /* / 3 */
	ck_assert_ptr_nonnull(strstr(body, "fmod_i("));   /* % 6, % 5 */
	static const char *const never[] = {", 2L)", ", 4L)", ", 8L)", ", 16L)"};
	for (size_t i = 0; i < ARRAY_LEN(never); i++)
		ck_assert_msg(!strstr(body, never[i]), "a helper call by 2^k ('%s') in:\n%s", never[i],
			      body);
	free(src);
	src = emit_of(be_find("c"), g, &s);
	ck_assert_ptr_nonnull(strstr(src, ", INT64_C(4));"));    /* fdiv_i(.., 4) */
	ck_assert_ptr_nonnull(strstr(src, ", INT64_C(16));"));   /* fdiv_i(.., 16) */
	ck_assert_ptr_nonnull(strstr(src, ", INT64_C(8));"));    /* fmod_i(.., 8) */
	free(src);
	sched_free(&s);
	ir_free(g);
}
END_TEST

static void add_text(char **buf, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_text(char **buf, size_t *len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	*buf = realloc(*buf, *len + (size_t)n + 1);
	ck_assert_ptr_nonnull(*buf);
	va_start(ap, fmt);
	vsnprintf(*buf + *len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	*len += (size_t)n;
}

/* On the device, over long numerators of every magnitude: the emitter's forms for 2^k (a
 * shift and a mask by literal constants, as it writes them) and the program's fdiv_i and
 * fmod_i for other divisors give floor division and the non-negative remainder. The
 * program is the emitted prelude of a graph with an f64 output and a kernel written here,
 * which stores each result as its two 32-bit halves (exact in a double). */
START_TEST(pow2_device)
{
	int64_t c[DIVISORS], v[DIVISORS][EDGES];
	ck_assert_int_eq(divisors(c), DIVISORS);
	for (int d = 0; d < DIVISORS; d++)
		edges(c[d], (uint64_t)d, v[d]);
	enum { CASES = DIVISORS * EDGES };
	char graph[160];
	snprintf(graph, sizeof graph, "size N = %d\ninput x : f32[N]\ny[i:N] = x[i] * 2\n"
		 "output y : f64\n", 4 * CASES);
	Graph *g = parse(graph);
	Schedule s;
	sched_of(g, "store y : f64", &s);
	Diag dg = {0};
	Kernels *k = kir_lower(g, &s, NULL, &dg);
	ck_assert_msg(k != NULL, "%s", dg.msg);
	char *emitted = ocl()->emit(k, &dg);
	ck_assert_ptr_nonnull(emitted);
	const char *kern = strstr(emitted, "/* y: ");
	ck_assert_ptr_nonnull(kern);
	char *p = NULL;
	size_t n = 0;
	/* constants in hex: -2^63 has no decimal literal in OpenCL C */
	add_text(&p, &n, "%.*s__constant long A[%d] = {", (int)(kern - emitted), emitted, CASES);
	for (int i = 0; i < CASES; i++)
		add_text(&p, &n, "%s(long)0x%016llxUL", i ? ", " : "",
			 (unsigned long long)v[i / EDGES][i % EDGES]);
	add_text(&p, &n, "};\n__constant long C[%d] = {", DIVISORS);
	for (int d = 0; d < DIVISORS; d++)
		add_text(&p, &n, "%s%lldL", d ? ", " : "", (long long)c[d]);
	add_text(&p, &n, "};\n__kernel void k0(__global const float *restrict b0, __global double *"
		 "restrict b1,\n\t__global int *restrict err, __global uchar *restrict scr, const long "
		 "t0, const long t1)\n{\n\tif (t0 + (long)get_global_id(0) != 0)\n\t\treturn;\n"
		 "\tfor (int i = 0; i < %d; i++) {\n"
		 "\t\tconst long a = A[i], c = C[i / %d];\n\t\tlong q, r;\n"
		 "\t\tswitch (c) {\n", CASES, EDGES);
	for (int d = 0; d < 63; d++)
		add_text(&p, &n, "\t\tcase %lldL: q = (a >> %d); r = (a & %lldL); break;\n",
			 (long long)c[d], d, (long long)(c[d] - 1));
	add_text(&p, &n, "\t\tdefault: q = fdiv_i(a, c); r = fmod_i(a, c); break;\n\t\t}\n"
		 "\t\tb1[4 * i] = (double)(q >> 32);\n\t\tb1[4 * i + 1] = (double)(q & 0xffffffffL);\n"
		 "\t\tb1[4 * i + 2] = (double)(r >> 32);\n\t\tb1[4 * i + 3] = (double)(r & 0xffffffffL);\n"
		 "\t}\n}\n");
	BeModule *m = ocl()->compile(k, p, NULL, NULL, &dg);
	ck_assert_msg(m != NULL, "%s", dg.msg);
	ck_assert_int_eq(ocl()->alloc(m, &dg), 0);
	ck_assert_msg(ocl()->launch(m, 1, &dg) == 0, "%s", dg.msg);
	HostTensor out;
	ck_assert_msg(ocl()->download(m, g->outputs[0].tensor, DT_F64, &out, &dg) == 0, "%s", dg.msg);
	for (int i = 0; i < CASES; i++) {
		int64_t a = v[i / EDGES][i % EDGES], q, r;
		floor_ref(a, c[i / EDGES], &q, &r);
		int64_t got[2];
		for (int j = 0; j < 2; j++)
			got[j] = (int64_t)(((uint64_t)(int64_t)ht_get(&out, 4 * i + 2 * j) << 32) |
					   (uint64_t)ht_get(&out, 4 * i + 2 * j + 1));
		ck_assert_msg(got[0] == q && got[1] == r, "%lld by %lld: (%lld, %lld), want (%lld, %lld)",
			      (long long)a, (long long)c[i / EDGES], (long long)got[0],
			      (long long)got[1], (long long)q, (long long)r);
	}
	ht_free(&out);
	ocl()->free(m);
	free(p);
	free(emitted);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* The same divisions in a graph's index expressions and values, negative numerators
 * included: bit for bit with the c backend. */
START_TEST(pow2_values)
{
	Graph *g = parse(pow2_src);
	HostTensor *in = inputs(g, 21);
	static const char *sch[] = {"", "tile q : i=4\ntile k : i=8"};
	for (size_t i = 0; i < ARRAY_LEN(sch); i++) {
		Schedule s;
		sched_of(g, sch[i], &s);
		diff_vs_c(g, &s, in, true, sch[i]);
		sched_free(&s);
	}
	free_all(in, 1);
	ir_free(g);
}
END_TEST

/* The graph of regression file `file`, for test `test`, after a note when the device is
 * not PoCL: the test then cannot show the PoCL 3.1 bug (`bug`) the file records. */
static Graph *pocl_regress(const char *test, const char *file, const char *bug)
{
	char *dev = ocl()->device();
	if (!strstr(dev, "PoCL"))
		printf("NOTE: %s runs on %s, not PoCL: it cannot show PoCL 3.1's %s (%s) here\n",
		       test, dev, bug, file);
	free(dev);
	Diag d = {0};
	Graph *g = ir_parse_file(file, NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s", d.msg);
	return g;
}

/* A regress graph g (file) under its own schedule, on the opencl device, held to the c
 * backend with the inputs of seed; frees g. */
static void regress_vs_c(Graph *g, const char *file, uint64_t seed)
{
	Diag d = {0};
	Schedule s;
	ck_assert_msg(sched_build(g, &s, &d) == 0, "%s", d.msg);
	HostTensor *in = inputs(g, seed);
	diff_vs_c(g, &s, in, false, file);
	sched_free(&s);
	free_all(in, ir_ninputs(g));
	ir_free(g);
}

/* tests/regress/pocl_split2_tail.tg: PoCL 3.1 (LLVM 15) miscompiled these split causal
 * reductions into -inf and -0 while the emitter wrote a split's tail count with fdiv_i
 * (the file's header). Run on the opencl device and held to the c backend. On a device
 * other than PoCL this cannot show PoCL's miscompile, and says so. */
START_TEST(regress_pocl)
{
	static const char file[] = "tests/regress/pocl_split2_tail.tg";
	regress_vs_c(pocl_regress("regress_pocl", file, "miscompile"), file, 3077344113643199394ULL);
}
END_TEST

/* tests/regress/pocl_empty_loop.tg: PoCL 3.1's work-group compiler aborted (an assertion
 * in ParallelRegion::Create) on a dead loop of no iteration between barriers, which a split
 * larger than its extent left in the kernel (the file's header). Run on the opencl device
 * and held to the c backend: without the emitter's leaving out of such loops (dead_loop),
 * PoCL kills the test with SIGABRT. */
START_TEST(regress_pocl_empty_loop)
{
	static const char file[] = "tests/regress/pocl_empty_loop.tg";
	regress_vs_c(pocl_regress("regress_pocl_empty_loop", file, "ParallelRegion assertion"), file, 1);
}
END_TEST

/* ------------------------------------------------------------ NaN guards */

/* The functions the emitter guards against a NaN (emit.c nan_guarded), f32 then f64. */
static const char nan_src[] =
	"size N = 256\ninput a : f32[N]\ninput b : f64[N]\n"
	"ea[i:N] = exp(a[i])\nwa[i:N] = exp2(a[i])\nma[i:N] = expm1(a[i])\n"
	"ta[i:N] = tanh(a[i])\nfa[i:N] = floor(a[i])\nca[i:N] = ceil(a[i])\nsa[i:N] = sigmoid(a[i])\n"
	"eb[i:N] = exp(b[i])\nwb[i:N] = exp2(b[i])\nmb[i:N] = expm1(b[i])\n"
	"tb[i:N] = tanh(b[i])\nfb[i:N] = floor(b[i])\ncb[i:N] = ceil(b[i])\nsb[i:N] = sigmoid(b[i])\n"
	"lg[i:N] = log(a[i]) + sin(a[i]) + cos(a[i]) + sqrt(a[i]) + erf(a[i]) + pow(a[i], 2)\n"
	"output ea : f32, wa : f32, ma : f32, ta : f32, fa : f32, ca : f32, sa : f32,\n"
	"       eb : f64, wb : f64, mb : f64, tb : f64, fb : f64, cb : f64, sb : f64, lg : f32\n";

/* src with every NaN guard the emitter writes taken out: `(isnan(A) ? (A + A) : F(A))`
 * becomes `F(A)` (tanh's `isinf(A) ? copysign(1, A) : ` goes with it) and sigmoid's
 * `isnan(x) ? x + x : ` goes; *n counts the first kind. The
 * result computes what the program did before the guards (it keeps their comment). */
static char *unguard(const char *src, int *n)
{
	size_t len = strlen(src);
	char *out = malloc(len + 1), *o = out;
	ck_assert_ptr_nonnull(out);
	*n = 0;
	static const char sg[] = "isnan(x) ? x + x : ";
	for (const char *p = src; *p;) {
		if (strncmp(p, sg, sizeof sg - 1) == 0) {
			p += sizeof sg - 1;
			continue;
		}
		if (strncmp(p, "(isnan(", 7) != 0) {
			*o++ = *p++;
			continue;
		}
		const char *a = p + 7, *e = a;   /* A: up to its balancing ')' */
		for (int depth = 0; *e && (depth || *e != ')'); e++)
			depth += *e == '(' ? 1 : *e == ')' ? -1 : 0;
		int al = (int)(e - a);
		char head[512];
		snprintf(head, sizeof head, ") ? (%.*s + %.*s) : ", al, a, al, a);
		ck_assert_msg(strncmp(e, head, strlen(head)) == 0, "not a guard: %.80s", p);
		const char *f = e + strlen(head), *call;
		char inf[512];   /* tanh's own answer at the infinities goes too */
		snprintf(inf, sizeof inf, "isinf(%.*s) ? copysign(", al, a);
		if (strncmp(f, inf, strlen(inf)) == 0) {
			const char *q = strstr(f, ") : ");
			ck_assert_ptr_nonnull(q);
			f = q + 4;
		}
		call = strchr(f, '(');
		ck_assert_msg(call && strncmp(call + 1, a, (size_t)al) == 0 &&
			      strncmp(call + 1 + al, "))", 2) == 0, "a guard of another call: %.80s", p);
		o += sprintf(o, "%.*s(%.*s)", (int)(call - f), f, al, a);
		p = call + 1 + al + 2;
		++*n;
	}
	*o = 0;
	return out;
}

/* The text: exp, exp2, expm1, tanh, floor and ceil of f32 and f64, and nothing else, come
 * guarded (one guard per call: 12), sigmoid's helpers test for a NaN before exp, the
 * unguarded other functions stay as they were; the c backend's text has no guard. */
START_TEST(nan_guard_text)
{
	Graph *g = parse(nan_src);
	Schedule s;
	sched_default(g, &s);
	char *src = emit_of(ocl(), g, &s);
	int n;
	char *plain = unguard(src, &n);
	ck_assert_int_eq(n, 12);
	const char *body = strstr(plain, "__kernel");
	ck_assert_ptr_nonnull(body);
	ck_assert_msg(!strstr(body, "isnan("), "a guard left in:\n%s", body);
	/* in the kernels, each of these calls is a guard's third operand */
	static const char *const fns[] = {"exp(", "exp2(", "expm1(", "tanh(", "floor(", "ceil("};
	const char *kern = strstr(src, "__kernel");
	for (size_t i = 0; i < ARRAY_LEN(fns); i++)
		for (const char *p = strstr(kern, fns[i]); p; p = strstr(p + 1, fns[i]))
			ck_assert_msg(strncmp(p - 3, " : ", 3) == 0, "an unguarded %.40s in:\n%s", p, src);
	ck_assert_ptr_nonnull(strstr(src, "float sigmoid_f(float x) { return isnan(x) ? x + x : "));
	ck_assert_ptr_nonnull(strstr(src, "double sigmoid_d(double x) { return isnan(x) ? x + x : "));
	static const char *const plainfns[] = {"= log(t", "= sin(t", "= cos(t", "= sqrt(t", "= erf(t",
					       "= pow(t"};
	for (size_t i = 0; i < ARRAY_LEN(plainfns); i++)
		ck_assert_msg(strstr(kern, plainfns[i]), "no '%s' in:\n%s", plainfns[i], src);
	free(plain);
	free(src);
	src = emit_of(be_find("c"), g, &s);
	ck_assert_msg(!strstr(src, "isnan("), "the c backend's text has a guard:\n%s", src);
	free(src);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* Runs program src (for k, lowered from g) on the device: inputs in, outputs (in their
 * dtypes) to out. */
static void run_src(const Graph *g, const Kernels *k, const char *src, const HostTensor *in,
		    HostTensor *out)
{
	Diag d = {0};
	BeModule *m = ocl()->compile(k, src, NULL, NULL, &d);
	ck_assert_msg(m != NULL, "%s", d.msg);
	ck_assert_int_eq(ocl()->alloc(m, &d), 0);
	for (int i = 0; i < ir_ninputs(g); i++)
		ck_assert_msg(ocl()->upload(m, ir_input_tensor(g, i), &in[i], &d) == 0, "%s", d.msg);
	ck_assert_msg(ocl()->launch(m, 1, &d) == 0, "%s", d.msg);
	ck_assert_msg(ocl()->guards(m, &d) == 0, "%s", d.msg);
	for (int i = 0; i < g->noutputs; i++)
		ck_assert_msg(ocl()->download(m, g->outputs[i].tensor, g->outputs[i].dtype, &out[i], &d) == 0,
			      "%s", d.msg);
	ocl()->free(m);
}

/* The guards change no value: on the device, over inputs read from buffers (values the
 * compiler cannot fold) with the edges of every guarded function first (NaNs of both signs,
 * zeros, infinities, the extremes, the subnormals, the thresholds where exp and expm1
 * saturate, 2^23 and 2^52 where floor and ceil stop rounding), the emitted program and the
 * same program with its guards taken out agree bit for bit, a NaN for a NaN; but tanh at
 * the infinities, which the guard answers itself (±1 exactly: PoCL 3.1's f32 tanh(+inf) is
 * 0.99999994). */
START_TEST(nan_guard_device)
{
	static const double ea[] = {NAN, -NAN, 0.0, -0.0, INFINITY, -INFINITY, 0x1.fffffep127,
				    -0x1.fffffep127, 0x1p-149, -0x1p-149, 0x1p-126, 1, -1, 0.5, -0.5, 1.5,
				    -2.5, 88.72283172607421875, 0x1.62e43p+6, 89, -16.635532333438687,
				    -17, -87.33654, -103.97, -104, -104.5, -150, 0x1p23, -0x1p23,
				    0x1p23 + 1, 0x1.fffffep22, -0x1.fffffep22, 1e30, -1e30, 9, -9};
	static const double eb[] = {NAN, -NAN, 0.0, -0.0, INFINITY, -INFINITY, 0x1.fffffffffffffp1023,
				    -0x1.fffffffffffffp1023, 0x1p-1074, -0x1p-1074, 0x1p-1022, 1, -1, 0.5,
				    -0.5, 709.782712893384, 709.79, 710, -745.1332191019411, -746, -37.5,
				    -36.7, 0x1p52, -0x1p52, 0x1.fffffffffffffp51, -0x1.fffffffffffffp51,
				    1e300, -1e300, 19, -19};
	Graph *g = parse(nan_src);
	HostTensor *in = inputs(g, 31);
	for (size_t i = 0; i < ARRAY_LEN(ea); i++)
		ht_set(&in[0], (int64_t)i, ea[i]);
	for (size_t i = 0; i < ARRAY_LEN(eb); i++)
		ht_set(&in[1], (int64_t)i, eb[i]);
	for (int64_t i = 0; i < 32; i++) {   /* large magnitudes of both signs, then normal ones */
		ht_set(&in[0], 64 + i, ht_get(&in[0], 64 + i) * 0x1p24);
		ht_set(&in[1], 64 + i, ht_get(&in[1], 64 + i) * 0x1p60);
	}
	Schedule s;
	sched_default(g, &s);
	Diag d = {0};
	Kernels *k = kir_lower(g, &s, NULL, &d);
	ck_assert_msg(k != NULL, "%s", d.msg);
	char *src = ocl()->emit(k, &d);
	ck_assert_ptr_nonnull(src);
	int n;
	char *plain = unguard(src, &n);
	ck_assert_int_eq(n, 12);
	HostTensor o1[16], o2[16];
	ck_assert_int_le(g->noutputs, 16);
	run_src(g, k, src, in, o1);
	run_src(g, k, plain, in, o2);
	for (int j = 0; j < g->noutputs; j++) {
		const char *name = g->tensors[g->outputs[j].tensor].name;
		for (int64_t i = 0; i < o1[j].n; i++) {
			double x = ht_get(&in[name[1] == 'b' ? 1 : 0], i);   /* eb..sb read b */
			if (name[0] == 't' && isinf(x)) {   /* tanh's own answer: PoCL's may be off */
				ck_assert_msg(ht_get(&o1[j], i) == copysign(1, x), "%s(%a): %a", name, x,
					      ht_get(&o1[j], i));
				continue;
			}
			ck_assert_msg(same(ht_get(&o1[j], i), ht_get(&o2[j], i)), "%s(%a): guarded %a, "
				      "unguarded %a", name, x, ht_get(&o1[j], i), ht_get(&o2[j], i));
			if (isnan(x))
				ck_assert_msg(isnan(ht_get(&o1[j], i)), "%s(%a): %a", name, x, ht_get(&o1[j], i));
		}
		ht_free(&o1[j]);
		ht_free(&o2[j]);
	}
	free(plain);
	free(src);
	kir_free(k);
	sched_free(&s);
	free_all(in, 2);
	ir_free(g);
}
END_TEST

/* tests/regress/pocl_nan_const.tg: PoCL 3.1 (LLVM 15) made these functions of a NaN the
 * optimizer can see into poison, then a kernel that crashed at launch or lost its stores
 * (the file's header). Run on the opencl device and held to the c backend: without the
 * guards this test dies of SIGSEGV on PoCL 3.1. On another device it cannot show that, and
 * says so. */
START_TEST(regress_pocl_nan)
{
	Graph *g = pocl_regress("regress_pocl_nan", "tests/regress/pocl_nan_const.tg",
				"poison from a NaN constant");
	HostTensor *in = inputs(g, 1795);
	static const char *sch[] = {"", "tile d2 : j=2\ntile sx : i=2, j=2\nstore fd : f16\n"
				    "tile lj : j=1"};
	for (size_t i = 0; i < ARRAY_LEN(sch); i++) {
		Schedule s;
		sched_of(g, sch[i], &s);
		diff_vs_c(g, &s, in, false, sch[i]);
		sched_free(&s);
	}
	free_all(in, ir_ninputs(g));
	ir_free(g);
}
END_TEST

/* tanh at the infinities is exactly ±1 (OpenCL C's edge cases), f32 and f64: PoCL 3.1's
 * tanh(+inf) in f32 was 0.99999994 until the emitter answered the infinities itself. */
START_TEST(tanh_at_infinities)
{
	Graph *g = parse("input a : f32[2]\ninput b : f64[2]\n"
			 "ta[i:2] = tanh(a[i])\ntb[i:2] = tanh(b[i])\nti[] = tanh(inf)\n"
			 "output ta : f32, tb : f64, ti : f32\n");
	HostTensor *in = inputs(g, 1);
	for (int t = 0; t < 2; t++) {
		ht_set(&in[t], 0, INFINITY);
		ht_set(&in[t], 1, -INFINITY);
	}
	Schedule s;
	sched_of(g, "", &s);
	diff_vs_c(g, &s, in, true, "tanh(+-inf)");
	sched_free(&s);
	free_all(in, ir_ninputs(g));
	ir_free(g);
}
END_TEST

/* Library functions: close to the c backend's (OpenCL allows a few ulps more than glibc). */
START_TEST(functions_close)
{
	Graph *g = parse("size N = 512\ninput a : f32[N]\n"
			 "y[i:N] = exp(a[i]) + log(abs(a[i]) + 1) * sin(a[i]) - cos(a[i]) * tanh(a[i])\n"
			 "z[i:N] = sigmoid(a[i]) + erf(a[i]) + rsqrt(abs(a[i]) + 1) + pow(abs(a[i]), 1.5)\n"
			 "w[i:N] = expm1(a[i] / 4) + log1p(abs(a[i])) + exp2(a[i]) + log2(abs(a[i]) + 2) + fma(a[i], a[i], 1)\n"
			 "output y : f32, z : f32, w : f32\n");
	HostTensor *in = inputs(g, 21);
	static const char *sch[] = {"", "store y : f64\nstore z : bf16\nstore w : f16"};
	for (size_t i = 0; i < ARRAY_LEN(sch); i++) {
		Schedule s;
		sched_of(g, sch[i], &s);
		diff_vs_c(g, &s, in, false, sch[i]);
		sched_free(&s);
	}
	free_all(in, 1);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ errors and guards */

/* An indirect read out of range is the c backend's error, message and code; an index on
 * the branch a ?: does not take is no error; within range, the results agree. */
START_TEST(row_fusion)
{
	bt_row_fusion("opencl");
}
END_TEST

START_TEST(back_to_back)
{
	bt_back_to_back("opencl");
}
END_TEST

START_TEST(gather_errors)
{
	static const char *const sch[] = {"", "tile h : t=4, d=2\nstore h : f16\ntile g : t=4"};
	bt_gather_errors("opencl", BT_CLOSE_ULPS * 0x1p-10, sch, ARRAY_LEN(sch));
}
END_TEST

START_TEST(topk_short_range)
{
	bt_expect_topk_short("opencl");
}
END_TEST

/* A kernel writing one element before or past its buffer is caught by the guard check. */
START_TEST(guard_regions)
{
	static const struct {
		const char *store, *expect;
	} bad[] = {
		{"b1[-1L] = 1.0f;", "before it, 4 bytes"},
		{"b1[100L] = 1.0f;", "past its end, 0 bytes"},
	};
	Graph *g = parse("size N = 100\ninput x : f32[N]\ny[i:N] = x[i] * 2\noutput y : f32\n");
	HostTensor *in = inputs(g, 1);
	Schedule s;
	sched_default(g, &s);
	Diag d = {0};
	Kernels *k = kir_lower(g, &s, NULL, &d);
	ck_assert_ptr_nonnull(k);
	char *src = ocl()->emit(k, &d);
	ck_assert_ptr_nonnull(src);
	const char *at = strstr(src, "get_local_size(0);\n");
	ck_assert_msg(at != NULL, "expected a kernel with lanes:\n%s", src);
	at += strlen("get_local_size(0);\n");
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		size_t n = strlen(src) + 200;
		char *p = malloc(n);
		snprintf(p, n, "%.*s\tif (it == 0 && lid == 0)\n\t\t%s\n%s", (int)(at - src), src,
			 bad[i].store, at);
		BeModule *m = ocl()->compile(k, p, NULL, NULL, &d);
		ck_assert_msg(m != NULL, "%s", d.msg);
		ck_assert_int_eq(ocl()->alloc(m, &d), 0);
		ck_assert_int_eq(ocl()->upload(m, ir_input_tensor(g, 0), &in[0], &d), 0);
		ck_assert_int_eq(ocl()->launch(m, 1, &d), 0);
		ck_assert_int_eq(ocl()->guards(m, &d), -1);
		ck_assert_msg(strstr(d.msg, "a write outside buffer y") && strstr(d.msg, bad[i].expect),
			      "message: %s", d.msg);
		ck_assert_int_eq(d.code, 1);
		diag_clear(&d);
		ocl()->free(m);
		free(p);
	}
	/* and the unpatched program leaves its guards alone */
	BeModule *m = ocl()->compile(k, src, NULL, NULL, &d);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(ocl()->alloc(m, &d), 0);
	ck_assert_int_eq(ocl()->launch(m, 1, &d), 0);
	ck_assert_int_eq(ocl()->guards(m, &d), 0);
	ocl()->free(m);
	free(src);
	kir_free(k);
	sched_free(&s);
	free_all(in, 1);
	ir_free(g);
}
END_TEST

/* A program that does not compile keeps the build log in its diagnostic. */
START_TEST(build_log)
{
	Graph *g = parse("size N = 4\ninput x : f32[N]\ny[i:N] = x[i] * 2\noutput y : f32\n");
	Schedule s;
	sched_default(g, &s);
	Diag d = {0};
	Kernels *k = kir_lower(g, &s, NULL, &d);
	BeModule *m = ocl()->compile(k, "__kernel void k0(__global float *b0) { undeclared_x = 1; }",
				     NULL, NULL, &d);
	ck_assert_ptr_null(m);
	ck_assert_msg(d.msg && strstr(d.msg, "clBuildProgram failed") &&
		      strstr(d.msg, "undeclared_x"), "message: %s", d.msg);
	diag_clear(&d);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* ASSAY_OPENCL_DEVICE picks a device by a part of its name, and a name matching none
 * makes the backend unavailable, saying which devices there are. */
START_TEST(device_choice)
{
	char why[1024] = "";
	setenv("ASSAY_OPENCL_DEVICE", "no-such-device-anywhere", 1);
	ck_assert_int_eq(ocl()->available(why, sizeof why), -1);
	ck_assert_msg(strstr(why, "no OpenCL device matches ASSAY_OPENCL_DEVICE='no-such-device"),
		      "why: %s", why);
	unsetenv("ASSAY_OPENCL_DEVICE");
	char *dev = ocl()->device();
	char name[64];
	snprintf(name, sizeof name, "%.6s", dev);   /* a part of the chosen device's name */
	setenv("ASSAY_OPENCL_DEVICE", name, 1);
	ck_assert_int_eq(ocl()->available(why, sizeof why), 0);
	char *dev2 = ocl()->device();
	ck_assert_str_eq(dev, dev2);
	unsetenv("ASSAY_OPENCL_DEVICE");
	free(dev);
	free(dev2);
}
END_TEST

/* ------------------------------------------------------------ emission (no device) */

/* Deterministic text; no contraction; f64 support asked for only where f64 is used; an
 * elementwise row spread over lanes, a plain reduction a work-item per element. */
START_TEST(emit_shape)
{
	Graph *g = parse("size R = 4, C = 300\ninput x : f32[R, C]\n"
			 "m[r:R] = max(c:C) x[r, c]\ny[r:R, c:C] = x[r, c] - m[r]\n"
			 "output y : f32\n");
	Schedule s;
	sched_default(g, &s);
	char *a = emit_of(ocl(), g, &s), *b = emit_of(ocl(), g, &s);
	ck_assert_str_eq(a, b);
	ck_assert_ptr_nonnull(strstr(a, "#pragma OPENCL FP_CONTRACT OFF"));
	ck_assert_ptr_null(strstr(a, "double"));
	ck_assert_ptr_null(strstr(a, "cl_khr_fp64"));
	ck_assert_ptr_nonnull(strstr(a, "/* m: a work-item per item */"));
	ck_assert_ptr_nonnull(strstr(a, "/* y: a work-group per item, up to 256 lanes */"));
	ck_assert_ptr_null(strstr(a, "barrier("));   /* independent point loops: no barrier */
	free(a);
	free(b);
	sched_free(&s);
	sched_of(g, "store m : f64\naccum m : f64\nsplit m : c=8", &s);
	a = emit_of(ocl(), g, &s);
	ck_assert_ptr_nonnull(strstr(a, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable"));
	/* split, m is a work-group per row, and y (its rows read m at their own row) joins it */
	ck_assert_ptr_nonnull(strstr(a, "/* m, y: one launch, a work-group per row (2 kernels fused, map/fuse.c) */"));
	ck_assert_ptr_nonnull(strstr(a, "__local double v"));
	ck_assert_ptr_nonnull(strstr(a, "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"));
	free(a);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* Under LeakSanitizer (make san): the OpenCL implementation (PoCL, the LLVM inside it,
 * NVIDIA's library) keeps allocations it never frees; only leaks allocated inside those
 * libraries are suppressed, never the backend's or this file's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libpocl\nleak:libLLVM\nleak:libclang\nleak:libOpenCL\nleak:libnvidia\n";
}

static Suite *suite(bool device)
{
	Suite *s = suite_create("opencl");
	TCase *tc = tcase_create("opencl");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, emit_shape);
	tcase_add_test(tc, pow2_identities);
	tcase_add_test(tc, pow2_text);
	tcase_add_test(tc, nan_guard_text);
	if (device) {
		int n;
		char **v = examples(&n);
		free_examples(v, n);
		tcase_add_test(tc, reductions_exact);
		tcase_add_test(tc, large_locals);
		tcase_add_test(tc, half_storage);
		tcase_add_test(tc, scalar_ops);
		tcase_add_test(tc, pow2_device);
		tcase_add_test(tc, pow2_values);
		tcase_add_test(tc, regress_pocl);
		tcase_add_test(tc, regress_pocl_empty_loop);
		tcase_add_test(tc, tanh_at_infinities);
		tcase_add_test(tc, regress_pocl_nan);
		tcase_add_test(tc, nan_guard_device);
		tcase_add_test(tc, functions_close);
		tcase_add_test(tc, gather_errors);
		tcase_add_test(tc, back_to_back);
		tcase_add_test(tc, row_fusion);
		tcase_add_test(tc, topk_short_range);
		tcase_add_test(tc, guard_regions);
		tcase_add_test(tc, build_log);
		tcase_add_test(tc, device_choice);
		tcase_add_loop_test(tc, example, 0, n > 0 ? n : 1);
	}
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* available() probes in a child process: this one never starts an OpenCL driver */
	char why[1024] = "";
	const Backend *b = be_find("opencl");
	bool device = b && b->available(why, sizeof why) == 0;
	if (!device)
		printf("SKIP: the opencl backend is unavailable here (%s): only the emission tests "
		       "run; no kernel is run or checked, regress_pocl (PoCL 3.1's miscompile, "
		       "tests/regress/pocl_split2_tail.tg) included\n", b ? why : "not registered");
	return tu_run(suite(device));
}
