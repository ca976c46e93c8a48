/* tests/test_wgsl.c: the wgsl backend (WGSL on Dawn through the Node helper), run on the
 * same kernels and inputs as the c backend and compared with it.
 *
 * Where a graph calls no library function (exp, log, rsqrt, ...) and divides nothing, the
 * two backends must agree bit for bit: both round every + - * once (WGSL has no
 * contraction, gcc runs with -ffp-contract=off), the kernel IR fixes the order of every
 * reduction (split and pairwise ones included, whatever work-group shape the wgsl backend
 * gives them), and both convert f16/bf16 with round to nearest even. With library functions
 * and division (WGSL allows 2.5 ulp for x/y, 3 + 2|x| for exp, an absolute 2^-21 for log
 * near 1, 2^-11 for sin on [-pi, pi]) outputs must be close (near()). The examples run
 * under the default schedule and a sampled one (a sampled schedule in f64 must be refused
 * as unsupported: WGSL has no f64; it then runs with f32 for f64); `assay check` judges
 * them against the oracle proper.
 *
 * Without a WebGPU device (no Node, no npm package, no Vulkan driver Dawn accepts) the tests
 * that run kernels print "SKIP: ..." once and are left out; the emission tests, which need
 * no device, still run.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <unistd.h>
#include "testutil.h"
#include "backendutil.h"
#include "../compiler/compiler.h"
#include "../interp/interp.h"
#include "../oracles/oracles.h"

enum { CLOSE_ULPS = 64 };

static const char *cache_dir(void)
{
	static char buf[512];
	const char *t = getenv("TMPDIR");
	snprintf(buf, sizeof buf, "%s/assay-test-wgsl", t && *t ? t : "/tmp");
	return buf;
}

static const Backend *wgsl(void)
{
	const Backend *b = be_find("wgsl");
	ck_assert_msg(b != NULL, "no backend named wgsl");
	return b;
}

static Graph *parse(const char *src)
{
	Diag d = {0};
	Graph *g = ir_parse(src, strlen(src), "test.tg", NULL, 0, &d);
	ck_assert_msg(g != NULL, "parse: %s", d.msg ? d.msg : "?");
	return g;
}

static HostTensor *inputs(const Graph *g, Dist dist, uint64_t seed)
{
	Diag d = {0};
	HostTensor *in = calloc((size_t)ir_ninputs(g) + 1, sizeof *in);
	InputSpec spec = {dist, seed, false};
	ck_assert_msg(mp_make_inputs(g, &spec, NULL, in, &d) == 0, "inputs: %s", d.msg);
	return in;
}

static void free_all(HostTensor *t, int n)
{
	for (int i = 0; i < n; i++)
		ht_free(&t[i]);
	free(t);
}

/* g's schedule from directive text ("" for the default). */
static void sched_of(Graph *g, const char *text, Schedule *s)
{
	Diag d = {0};
	ck_assert_msg(ir_parse_schedule(g, text, strlen(text), "test.sched", &d) == 0, "%s", d.msg);
	ck_assert_msg(sched_build(g, s, &d) == 0, "%s", d.msg);
}

static Kernels *lower(const Graph *g, const Schedule *s)
{
	Diag d = {0};
	Kernels *k = kir_lower(g, s, NULL, &d);
	ck_assert_msg(k != NULL, "lower: %s", d.msg ? d.msg : "?");
	return k;
}

/* Runs k on backend b; 0, or -1 with d. */
static int run(const char *backend, const Kernels *k, const HostTensor *in, HostTensor *out,
	       Diag *d)
{
	BeOpts o = {2, cache_dir()};
	return be_run(be_find(backend), k, &o, in, out, NULL, d);
}

static bool same(double a, double b)
{
	return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

static double ulp_of(Dtype f, double x)
{
	int p = dt_info(f)->prec;
	int e = x == 0 ? -126 : ilogb(x);
	if (e < -126)
		e = -126;
	return ldexp(1.0, e - p + 1);
}

/* Close: the same special value, or within CLOSE_ULPS ulps of the output format, or within
 * 2^-18 of the output's largest magnitude (cancellation after a library function). */
static bool near(double a, double b, Dtype f, double scale)
{
	if (isnan(a) || isnan(b) || isinf(a) || isinf(b) || (a == 0 && b == 0))
		return same(a, b);   /* zeros too: tanh(-0) and expm1(-0) are -0 (a fuzz find: wgsl and vulkan gave +0) */
	double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
	return fabs(a - b) <= CLOSE_ULPS * ulp_of(f, m) || fabs(a - b) <= 0x1p-18 * scale;
}

/* Does the program compute anything but + - * (so that it may differ from c)? */
static bool inexact(const Graph *g)
{
	for (uint32_t r = 1; r < g->nnodes; r++) {
		const Node *n = ir_node(g, r);
		if (n->kind == NK_OP && n->ty == TY_REAL && (op_info((Op)n->op)->flags & OPF_CALL) &&
		    !(op_info((Op)n->op)->flags & OPF_CAST) && n->op != OP_MAX && n->op != OP_MIN &&
		    n->op != OP_ABS && n->op != OP_FLOOR && n->op != OP_CEIL)
			return true;
		if (n->kind == NK_OP && n->op == OP_DIV)
			return true;
	}
	for (int d = 0; d < g->ndefs; d++)
		if (g->defs[d].monoid != MO_NONE && g->defs[d].monoid != MO_SUM &&
		    g->defs[d].monoid != MO_PROD && g->defs[d].monoid != MO_MAX &&
		    g->defs[d].monoid != MO_MIN && g->defs[d].monoid != MO_ARGMAX &&
		    g->defs[d].monoid != MO_ARGMIN && g->defs[d].monoid != MO_TOPK)
			return true;
	return false;
}

/* WGSL may flush f32 subnormals (inputs and outputs of arithmetic) to zero, and Dawn on
 * NVIDIA's Vulkan driver does (lavapipe does not): a zero of either sign where c has a
 * nonzero value below `reach` in magnitude is a flush (2^-126 for a flushed result; more
 * only where the graph scales a flushed operand). orc_may_flush states the permission. */
static bool flushed(double a, double c, double reach)
{
	return a == 0 && c != 0 && fabs(c) < reach && orc_may_flush("wgsl", DT_F32, NULL);
}

/* WGSL cannot forbid contraction (no NoContraction, no `precise`): a driver may fuse
 * a * b + c, and NVIDIA's does (a matmul came out up to 6 ulps from c's). Its budgets hold
 * either way (a fused operation rounds once, within the unfused bound). Equality with c is
 * asserted on lavapipe (llvmpipe), which does not fuse; elsewhere exact programs must be
 * close as inexact ones are. */
static bool fuses(void)
{
	static int known = -1;
	if (known < 0) {
		char *dev = wgsl()->device();
		known = !(dev && strstr(dev, "llvmpipe"));
		free(dev);
	}
	return known;
}

/* The inputs with every f32, bf16 and f64 subnormal replaced by a zero of its sign: what a
 * device that flushes its operands computes on. */
static HostTensor *flush_inputs(const Graph *g, const HostTensor *in)
{
	int n = ir_ninputs(g);
	HostTensor *t = calloc((size_t)n + 1, sizeof *t);
	ck_assert_ptr_nonnull(t);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(ht_alloc(&t[i], in[i].dtype, in[i].rank, in[i].dims), 0);
		double lim = in[i].dtype == DT_F64 ? 0x1p-1022 : 0x1p-126;
		for (int64_t e = 0; e < in[i].n; e++) {
			double v = ht_get(&in[i], e);
			bool sub = in[i].dtype != DT_I32 && in[i].dtype != DT_F16 && v != 0 &&
				   fabs(v) < lim;
			ht_set(&t[i], e, sub ? copysign(0.0, v) : v);
		}
	}
	return t;
}

/* Runs k on c and wgsl and compares every output; with scaled, a difference within 2^-18
 * of the output's largest magnitude is close too; a flushed subnormal (flushed(), c values
 * below reach) passes, and so does what c computes from the inputs with their subnormals
 * flushed, on a device that may flush. Every mismatch is listed (up to 20). */
static void compare_reach(const Graph *g, const Kernels *k, const HostTensor *in,
			  const char *what, bool scaled, double reach)
{
	char msg[4096] = "";
	size_t len = 0;
	int bad = 0;
	HostTensor want[32], got[32], alt[32];
	Diag d = {0};
	ck_assert_msg(g->noutputs <= 32, "too many outputs");
	ck_assert_msg(run("c", k, in, want, &d) == 0, "%s: c: %s", what, d.msg);
	ck_assert_msg(run("wgsl", k, in, got, &d) == 0, "%s: wgsl: %s", what, d.msg);
	bool may_flush = orc_may_flush("wgsl", DT_F32, NULL);
	if (may_flush) {
		HostTensor *fl = flush_inputs(g, in);
		ck_assert_msg(run("c", k, fl, alt, &d) == 0, "%s: c (flushed inputs): %s", what, d.msg);
		free_all(fl, ir_ninputs(g));
	}
	bool exact = !inexact(g), strict = exact && !fuses();
	for (int o = 0; o < g->noutputs; o++) {
		Dtype f = g->outputs[o].dtype;
		double scale = 0;
		for (int64_t i = 0; i < want[o].n; i++)
			if (isfinite(ht_get(&want[o], i)) && fabs(ht_get(&want[o], i)) > scale)
				scale = fabs(ht_get(&want[o], i));
		for (int64_t i = 0; i < want[o].n; i++) {
			double a = ht_get(&want[o], i), b = ht_get(&got[o], i);
			bool ok = f == DT_I32 || strict ? same(a, b) : near(a, b, f, scaled ? scale : 0);
			ok = ok || (f != DT_I32 && flushed(b, a, reach));
			if (!ok && may_flush && f != DT_I32) {
				double a2 = ht_get(&alt[o], i);
				ok = exact && !fuses() ? same(a2, b) : near(a2, b, f, scaled ? scale : 0);
			}
			if (!ok && bad++ < 20 && len < sizeof msg - 200)
				len += (size_t)snprintf(msg + len, sizeof msg - len, "\n  %s[%lld]: c %.9g, wgsl %.9g",
							g->tensors[g->outputs[o].tensor].name,
							(long long)i, a, b);
		}
		ht_free(&want[o]);
		ht_free(&got[o]);
		if (may_flush)
			ht_free(&alt[o]);
	}
	ck_assert_msg(bad == 0, "%s: %d outputs differ (%s):%s", what, bad,
		      strict ? "they must be equal" : "they must be close", msg);
}

static void compare_as(const Graph *g, const Kernels *k, const HostTensor *in, const char *what,
		       bool scaled)
{
	compare_reach(g, k, in, what, scaled, 0x1p-126);
}

static void compare(const Graph *g, const Kernels *k, const HostTensor *in, const char *what)
{
	compare_as(g, k, in, what, true);
}

static char *emit(const Kernels *k)
{
	Diag d = {0};
	char *src = wgsl()->emit(k, &d);
	ck_assert_msg(src != NULL, "emit: %s", d.msg ? d.msg : "?");
	return src;
}

/* ------------------------------------------------------------ emission (no device) */

static const char matmul_src[] =
	"graph mm\n"
	"size M = 13, K = 67, N = 19\n"
	"input a : bf16[M, K]\n"
	"input b : f32[K, N]\n"
	"c[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\n"
	"output c : f32\n";

/* Each schedule with the work-group shape the backend must give it. */
static const struct {
	const char *sched, *mode;
} matmul_scheds[] = {
	{"", "an invocation per item"},
	{"tile c : i=4, j=8", "its tile's points over the invocations"},   /* hoisted, tails */
	{"tile c : i=13, j=19", "its tile's points over the invocations"},
	{"tile c : j=5\nsplit c : k=3", "its tile's points over the invocations"},
	{"split c : k=4", "a split partial per invocation"},
	{"split c : k=64", "a split partial per invocation"},
	{"order c : pairwise", "an invocation per item"},
	{"split c : k=4\norder c : pairwise\ntile c : i=3", "its tile's points over the invocations"},
	{"store c : f16\ntile c : i=2, j=16", "its tile's points over the invocations"},
	{"store c : bf16\nsplit c : k=5", "a split partial per invocation"},
	{"accum c : f16\norder c : pairwise", "an invocation per item"},
	{"accum c : bf16\ntile c : j=3", "its tile's points over the invocations"},
};

START_TEST(emit_modes)
{
	Graph *g = parse(matmul_src);
	for (size_t i = 0; i < ARRAY_LEN(matmul_scheds); i++) {
		Schedule s;
		sched_of(g, matmul_scheds[i].sched, &s);
		Kernels *k = lower(g, &s);
		char *a = emit(k), *b = emit(k);
		ck_assert_msg(strcmp(a, b) == 0, "[%s] emission is not deterministic", matmul_scheds[i].sched);
		char *k0 = strstr(a, "\n// c: ");
		ck_assert_msg(k0 &&
			      strstr(k0, matmul_scheds[i].mode) != NULL, "[%s] wants \"%s\":\n%.3000s",
			      matmul_scheds[i].sched, matmul_scheds[i].mode, k0 ? k0 : a);
		ck_assert_msg(strstr(a, "\n//! kernel k0 groups=") != NULL, "no launch manifest");
		free(a);
		free(b);
		kir_free(k);
		sched_free(&s);
	}
	ir_free(g);
}
END_TEST

/* f64 is refused, as unsupported (code 2) naming the reason. */
START_TEST(emit_unsupported_f64)
{
	Graph *g = parse(matmul_src);
	static const char *sch[] = {"store c : f64\naccum c : f64", "accum c : f64"};
	for (size_t i = 0; i < ARRAY_LEN(sch); i++) {
		Schedule s;
		sched_of(g, sch[i], &s);
		Kernels *k = lower(g, &s);
		Diag d = {0};
		char *src = wgsl()->emit(k, &d);
		ck_assert_msg(src == NULL, "[%s] emitted f64", sch[i]);
		ck_assert_msg(d.code == 2 && strstr(d.msg, "unsupported") && strstr(d.msg, "f64"),
			      "[%s] %s", sch[i], d.msg);
		diag_clear(&d);
		kir_free(k);
		sched_free(&s);
	}
	ir_free(g);
}
END_TEST

/* Integer index arithmetic the intervals prove in range is plain i32; integers read from
 * a tensor and multiplied are checked. */
START_TEST(emit_int_checks)
{
	Graph *g = parse("size N = 10\ninput x : i32[N]\n"
			 "y[i:N] = (x[i] * 65536) % 7 + i * 3\n"
			 "output y : i32\n");
	Schedule s;
	sched_of(g, "", &s);
	Kernels *k = lower(g, &s);
	char *src = emit(k), *k0 = strstr(src, "fn k0(");
	ck_assert_ptr_nonnull(k0);
	ck_assert_msg(strstr(k0, "mul_ck(") != NULL, "x*65536 is not checked:\n%.2000s", k0);
	ck_assert_msg(strstr(k0, "add_ck(") == NULL, "the sum is provably in i32:\n%.2000s", k0);
	free(src);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
	/* a pairwise sum's term counter counts at most its terms (compiler/kir/kivl.c, counters),
	 * and a top-k's insertion position walks down to 0 at least: neither is checked */
	g = parse("size T = 3, C = 1031, K = 2\ninput x : f32[T, C]\ns[t:T] = sum(c:C) x[t, c]\n"
		  "v[t:T, r:K], i[t:T, r:K] = topk(c:C) x[t, c]\noutput s : f32, v : f32, i : i32\n");
	sched_of(g, "order s : pairwise\nsplit s : c=4", &s);
	k = lower(g, &s);
	src = emit(k);
	k0 = strstr(src, "fn k0(");
	ck_assert_ptr_nonnull(k0);
	ck_assert_msg(strstr(k0, "_ck(") == NULL, "a counter is checked:\n%.3000s", k0);
	free(src);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* The schedule `sched_sample(rmsnorm, 1)` gave: 4096 pairwise terms per row in one local
 * array (16 KiB, which NVIDIA's Vulkan driver refuses as private memory). */
static const char rms_sched[] = "accum ms : bf16\ntile ms : t=1\nsplit ms : c=4\n"
				"order ms : pairwise\ninline r\ntile y : c=4\n";

static int count(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

/* A local array over WGSL_PRIVATE_MAX bytes lives in the scratch buffer, indexed by the
 * invocation's column; a kernel's pairwise trees share one set of stacks sized by their
 * depth (1 + ceil(log2 4096) = 13 frames). */
START_TEST(emit_scratch)
{
	Diag d = {0};
	Graph *g = ir_parse_file("examples/rmsnorm.tg", NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s", d.msg);
	Schedule s;
	sched_of(g, rms_sched, &s);
	Kernels *k = lower(g, &s);
	char *src = emit(k), *k0 = strstr(src, "fn k0("), *k1 = strstr(src, "fn k1(");
	ck_assert_msg(k0 && k1, "two kernels expected:\n%s", src);
	ck_assert_msg(strstr(src, "array<f32, 4096>") == NULL, "a 16 KiB private array:\n%.6000s", k0);
	ck_assert_msg(strstr(k0, "f32[4096] in scratch at word 0") && strstr(k0, "* sst + slot] = bitcast<u32>("),
		      "the terms are not in scratch:\n%.6000s", k0);
	ck_assert_msg(strstr(src, "var<storage, read_write> scr: array<u32>;") &&
		      strstr(src, "var<uniform> chunk: vec4<u32>;"), "no scratch bindings");
	/* no binding 0 (the error words): nothing in k0 can fail, its term counter included */
	ck_assert_msg(strstr(src, "\n//! kernel k0 groups=1 bindings=1,3 scratch=16384 wg=64 slots=16\n"),
		      "manifest: %s", strstr(src, "\n//! kernel"));
	/* k1 has no big local: no scratch, one dispatch */
	ck_assert_msg(strstr(src, "\n//! kernel k1 groups=16384 bindings=1,2,3,4\n"), "manifest: %s",
		      strstr(src, "\n//! kernel"));
	ck_assert_msg(strstr(k1, "chunk.") == NULL, "k1 reads the chunk");
	ck_assert_int_eq(count(src, "var tr_lo: array<i32, 13>;"), 1);
	ck_assert_int_eq(count(src, "var tr_lo:"), 1);
	ck_assert_int_eq(count(src, "var tr_sp: i32 = 1i;"), 4);
	free(src);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ against the c backend */

START_TEST(matmul_schedules)
{
	Graph *g = parse(matmul_src);
	HostTensor *in = inputs(g, DIST_NORMAL, 3);
	for (size_t i = 0; i < ARRAY_LEN(matmul_scheds); i++) {
		Schedule s;
		sched_of(g, matmul_scheds[i].sched, &s);
		Kernels *k = lower(g, &s);
		compare(g, k, in, matmul_scheds[i].sched);
		kir_free(k);
		sched_free(&s);
	}
	free_all(in, ir_ninputs(g));
	ir_free(g);
}
END_TEST

/* Reductions of every monoid, under splits and tiles, with tails. */
START_TEST(monoids)
{
	Graph *g = parse("size R = 5, N = 37\ninput x : f16[R, N]\n"
			 "s[r:R] = sum(j:N) x[r, j]\n"
			 "p[r:R] = prod(j:N) 1 + x[r, j] / 16\n"
			 "mx[r:R] = max(j:N) x[r, j]\n"
			 "mn[r:R] = min(j:N) x[r, j]\n"
			 "am[r:R] = argmax(j:N) x[r, j]\n"
			 "tv[r:R, q:3], ti[r:R, q:3] = topk(j:N) x[r, j]\n"
			 "output s : f32\noutput p : f32\noutput mx : f16\noutput mn : f32\n"
			 "output am : i32\noutput tv : f32\noutput ti : i32\n");
	HostTensor *in = inputs(g, DIST_NORMAL, 5);
	static const char *sch[] = {
		"", "split s : j=4\nsplit mx : j=3\nsplit p : j=2", "tile s : r=2\ntile mn : r=3",
		"order s : pairwise\norder p : pairwise", "split s : j=6\norder s : pairwise",
		"accum s : bf16\nsplit s : j=8",
	};
	for (size_t i = 0; i < ARRAY_LEN(sch); i++) {
		Schedule s;
		sched_of(g, sch[i], &s);
		Kernels *k = lower(g, &s);
		compare(g, k, in, sch[i]);
		kir_free(k);
		sched_free(&s);
	}
	free_all(in, ir_ninputs(g));
	ir_free(g);
}
END_TEST

/* Special values through every function and the IEEE 754-2019 max/min: NaN, infinities
 * and signed zeros as c gives them. */
START_TEST(specials)
{
	static const double xs[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 2.0, 0.5,
				    -0.5, 1e-40, -1e-40, 100.0, -100.0, 3.5, -3.5, 0x1p-20, 89.0,
				    -89.0, 1e30, -1e30, 0.25, 7.0, -7.0, 1e-10, -1e-10, -95.0,
				    -140.0, 0.3, -0.45, 0.7, -2.5};
	enum { N = ARRAY_LEN(xs) };
	char src[4096];
	snprintf(src, sizeof src, "size N = %d\ninput x : f32[N]\ninput z : f32[N]\n"
		 "mx[i:N] = max(x[i], z[i])\nmn[i:N] = min(x[i], z[i])\n"
		 "ex[i:N] = exp(x[i])\nlg[i:N] = log(x[i])\nsq[i:N] = sqrt(x[i])\n"
		 "rs[i:N] = rsqrt(x[i])\nth[i:N] = tanh(x[i])\nsg[i:N] = sigmoid(x[i])\n"
		 "ab[i:N] = abs(x[i])\nfl[i:N] = floor(x[i])\nce[i:N] = ceil(x[i])\n"
		 "pw[i:N] = pow(x[i], z[i])\nem[i:N] = expm1(x[i])\nl1[i:N] = log1p(x[i])\n"
		 "ef[i:N] = erf(x[i])\ndv[i:N] = x[i] / z[i]\nh[i:N] = f16(x[i] * 3)\n"
		 "b[i:N] = bf16(x[i] * 3)\ne2[i:N] = exp2(x[i])\nl2[i:N] = log2(x[i])\n"
		 "output mx : f32\noutput mn : f32\noutput ex : f32\noutput lg : f32\n"
		 "output sq : f32\noutput rs : f32\noutput th : f32\noutput sg : f32\n"
		 "output ab : f32\noutput fl : f32\noutput ce : f32\noutput pw : f32\n"
		 "output em : f32\noutput l1 : f32\noutput ef : f32\noutput dv : f32\n"
		 "output h : f16\noutput b : bf16\noutput e2 : f32\noutput l2 : f32\n", N);
	Graph *g = parse(src);
	HostTensor in[2];
	int64_t dims[1] = {N};
	ht_alloc(&in[0], DT_F32, 1, dims);
	ht_alloc(&in[1], DT_F32, 1, dims);
	for (int i = 0; i < N; i++) {
		ht_set(&in[0], i, xs[i]);
		ht_set(&in[1], i, xs[(i * 7 + 3) % N]);
	}
	Schedule s;
	sched_of(g, "", &s);
	Kernels *k = lower(g, &s);
	compare_as(g, k, in, "specials", false);
	kir_free(k);
	sched_free(&s);
	ht_free(&in[0]);
	ht_free(&in[1]);
	ir_free(g);
}
END_TEST

static float f32_of_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* f16 and bf16 conversions bit for bit: every 16-bit pattern widened, and f32 values at,
 * beside and between neighbouring f16 and bf16 values rounded (ties, subnormals, the
 * overflow threshold, NaN), by a cast and by a store in the narrow format. */
START_TEST(conversions)
{
	enum { P = 65536, M = 3 * 31744 + 3 * 32640 + 8 };
	char src[1024];
	snprintf(src, sizeof src, "size P = %d, M = %d\ninput h : f16[P]\ninput b : bf16[P]\n"
		 "input x : f32[M]\nwh[i:P] = h[i]\nwb[i:P] = b[i]\n"
		 "ch[i:M] = f16(x[i])\ncb[i:M] = bf16(x[i])\nsh[i:M] = -x[i]\nsb[i:M] = x[i] * 2\n"
		 "output wh : f32\noutput wb : f32\noutput ch : f16\noutput cb : bf16\n"
		 "output sh : f16\noutput sb : bf16\n", P, M);
	Graph *g = parse(src);
	HostTensor in[3];
	int64_t dp[1] = {P}, dm[1] = {M};
	ht_alloc(&in[0], DT_F16, 1, dp);
	ht_alloc(&in[1], DT_BF16, 1, dp);
	ht_alloc(&in[2], DT_F32, 1, dm);
	for (int i = 0; i < P; i++) {
		((uint16_t *)in[0].data)[i] = (uint16_t)i;
		((uint16_t *)in[1].data)[i] = (uint16_t)i;
	}
	float *x = in[2].data;
	int n = 0;
	for (uint32_t h = 0; h < 31744; h++) {   /* f16: the midpoint to the next, and beside it */
		float mid = (float)((fmt_f16_to_double((uint16_t)h) + fmt_f16_to_double((uint16_t)(h + 1))) / 2);
		uint32_t u;
		memcpy(&u, &mid, sizeof u);
		x[n++] = (h & 1) ? mid : -mid;
		x[n++] = f32_of_bits(u + 1);
		x[n++] = -f32_of_bits(u - (h > 0));
	}
	for (uint32_t h = 0; h < 32640; h++) {   /* bf16 likewise (f32 bits: the low half) */
		uint32_t u = (h << 16) | 0x8000u;
		x[n++] = (h & 1) ? f32_of_bits(u) : -f32_of_bits(u);
		x[n++] = f32_of_bits(u + 1);
		x[n++] = -f32_of_bits(u - 1);
	}
	static const float tail[] = {65504.0f, 65519.99f, 65520.0f, 1e30f, INFINITY, -INFINITY, NAN, -0.0f};
	for (size_t i = 0; i < ARRAY_LEN(tail); i++)
		x[n++] = tail[i];
	ck_assert_int_eq(n, M);
	Schedule s;
	sched_of(g, "store sh : f16\nstore sb : bf16", &s);
	Kernels *k = lower(g, &s);
	/* sb = x * 2 of an f32 subnormal x: a flushed x gives a zero where c has up to 2^-125 */
	compare_reach(g, k, in, "conversions", true, 0x1p-125);
	kir_free(k);
	sched_free(&s);
	for (int i = 0; i < 3; i++)
		ht_free(&in[i]);
	ir_free(g);
}
END_TEST

/* An out-of-range indirect read is the graph's error, named as the c backend names it. */
START_TEST(back_to_back)
{
	bt_back_to_back("wgsl");
}
END_TEST

START_TEST(index_error)
{
	Graph *g = parse("size N = 6, V = 4\ninput t : i32[N]\ninput e : f32[V]\n"
			 "y[i:N] = e[t[i]]\noutput y : f32\n");
	HostTensor *in = inputs(g, DIST_NORMAL, 1);
	int32_t *t = in[0].data;
	for (int i = 0; i < 6; i++)
		t[i] = i == 4 ? 9 : i % 4;
	Schedule s;
	sched_of(g, "", &s);
	Kernels *k = lower(g, &s);
	HostTensor out[1];
	Diag dc = {0}, dw = {0};
	ck_assert_int_eq(run("c", k, in, out, &dc), -1);
	ck_assert_int_eq(run("wgsl", k, in, out, &dw), -1);
	ck_assert_msg(dw.code == 2 && strcmp(dc.msg, dw.msg) == 0, "c: %s\nwgsl: %s", dc.msg, dw.msg);
	diag_clear(&dc);
	diag_clear(&dw);
	t[4] = 3;
	compare(g, k, in, "indices in range");
	kir_free(k);
	sched_free(&s);
	free_all(in, 2);
	ir_free(g);
}
END_TEST

/* i32 intermediates: exact where they fit; an overflow is reported, never wrapped. */
START_TEST(int_overflow)
{
	Graph *g = parse("size N = 10\ninput x : i32[N]\n"
			 "y[i:N] = (x[i] * 65536) % 7 + i * 3\noutput y : i32\n");
	HostTensor *in = inputs(g, DIST_NORMAL, 1);
	int32_t *x = in[0].data;
	for (int i = 0; i < 10; i++)
		x[i] = (i - 5) * 3000;
	Schedule s;
	sched_of(g, "", &s);
	Kernels *k = lower(g, &s);
	compare(g, k, in, "no overflow");
	x[7] = 40000;   /* 40000 * 65536 needs 32 bits and a sign */
	HostTensor out[1];
	Diag d = {0};
	ck_assert_int_eq(run("wgsl", k, in, out, &d), -1);
	ck_assert_msg(d.code == 2 && strstr(d.msg, "32 bits"), "%s", d.msg);
	diag_clear(&d);
	kir_free(k);
	sched_free(&s);
	free_all(in, 1);
	ir_free(g);
}
END_TEST

/* Integer definitions with real subexpressions compute them in f64 by default; the
 * backend holds such values as i32 or f32 and compares across the two exactly. */
START_TEST(int_real_compare)
{
	Graph *g = parse("size N = 12\ninput x : i32[N]\n"
			 "y[i:N] = (x[i] < 2.5 ? 1 : 0) + (x[i] == 3.0 ? 10 : 0) + (1e10 > x[i] ? 100 : 0)"
			 " + (0.5 != x[i] ? 1000 : 0) + (x[i] >= -16777216.0 ? 10000 : 0)\n"
			 "output y : i32\n");
	HostTensor *in = inputs(g, DIST_NORMAL, 1);
	static const int32_t xs[] = {0, 2, 3, 4, -3, 16777216, -16777217, -16777218, INT32_MAX,
				     INT32_MIN, 1, -1};
	memcpy(in[0].data, xs, sizeof xs);
	Schedule s;
	sched_of(g, "", &s);
	Kernels *k = lower(g, &s);
	compare(g, k, in, "integer against real");
	kir_free(k);
	sched_free(&s);
	free_all(in, 1);
	ir_free(g);
}
END_TEST

/* A write past a buffer's end lands in its guard region and is caught. */
START_TEST(guards)
{
	Graph *g = parse("size N = 40\ninput x : f32[N]\ny[i:N] = x[i] * 2\noutput y : f32\n");
	HostTensor *in = inputs(g, DIST_NORMAL, 1);
	Schedule s;
	sched_of(g, "", &s);
	Kernels *k = lower(g, &s);
	char *src = emit(k);
	/* the store of element i goes to i + 1: the last one lands past the end */
	char *at = strstr(src, "b1w[u32(");
	ck_assert_msg(at != NULL, "no store to b1 in:\n%s", src);
	char *plus = strstr(at, ") + 64u]");
	ck_assert_msg(plus != NULL, "unexpected store form");
	memcpy(plus, ") + 65u]", 8);
	Diag d = {0};
	BeOpts o = {1, cache_dir()};
	BeModule *m = wgsl()->compile(k, src, &o, NULL, &d);
	ck_assert_msg(m != NULL, "compile: %s", d.msg);
	ck_assert_int_eq(wgsl()->alloc(m, &d), 0);
	ck_assert_int_eq(wgsl()->upload(m, ir_input_tensor(g, 0), &in[0], &d), 0);
	ck_assert_msg(wgsl()->launch(m, 1, &d) == 0, "launch: %s", d.msg);
	ck_assert_int_eq(wgsl()->guards(m, &d), -1);
	ck_assert_msg(strstr(d.msg, "past its end") && strstr(d.msg, "y"), "%s", d.msg);
	diag_clear(&d);
	wgsl()->free(m);
	free(src);
	kir_free(k);
	sched_free(&s);
	free_all(in, 1);
	ir_free(g);
}
END_TEST

/* The launch comes from the program's plan record (compiler/map/map.h), not from the text:
 * with its launch manifest (the //! lines: work-groups, bindings, scratch) dropped, the
 * program runs the same, for an invocation per item, a split partial per invocation, a
 * tile's points over the invocations, and scratch. */
START_TEST(plan_record)
{
	static const char *const sch[] = {
		"",
		"split y : k=4\nsplit s : c=8",
		"tile y : m=2, n=4\ntile z : m=3",
		"split s : c=4\norder s : pairwise",
	};
	bt_plan_record("wgsl", sch, ARRAY_LEN(sch));
}
END_TEST

/* A module Tint rejects is a compile error carrying Tint's message. */
START_TEST(compile_error)
{
	Graph *g = parse("size N = 4\ninput x : f32[N]\ny[i:N] = x[i] * 2\noutput y : f32\n");
	Schedule s;
	sched_of(g, "", &s);
	Kernels *k = lower(g, &s);
	char *src = emit(k), *bad = malloc(strlen(src) + 64);
	char *at = strstr(src, "fn k0(");
	ck_assert_ptr_nonnull(at);
	snprintf(bad, strlen(src) + 64, "%.*sfn k0(no_such_type: zzz, %s", (int)(at - src), src,
		 at + strlen("fn k0("));
	Diag d = {0};
	BeOpts o = {1, cache_dir()};
	BeModule *m = wgsl()->compile(k, bad, &o, NULL, &d);
	ck_assert_msg(m == NULL, "a broken module compiled");
	ck_assert_msg(d.code == 3 && strstr(d.msg, "zzz"), "%s", d.msg);
	diag_clear(&d);
	free(src);
	free(bad);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* Locals in scratch agree with c: rmsnorm's 4096 terms per row, and 300 pairwise terms (and
 * 300 top-k values and indices) per item in every work-group shape, in one dispatch and,
 * with the scratch budget lowered (ASSAY_WGSL_SCRATCH_MAX), in chunks of one to four
 * work-groups; a work-group needing more than the budget is unsupported. */
START_TEST(scratch_locals)
{
	Diag d = {0};
	Graph *g = ir_parse_file("examples/rmsnorm.tg", NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s", d.msg);
	HostTensor *in = inputs(g, DIST_NORMAL, 7);
	Schedule s;
	sched_of(g, rms_sched, &s);
	Kernels *k = lower(g, &s);
	compare(g, k, in, "rmsnorm, the seed 1 schedule");
	kir_free(k);
	sched_free(&s);
	free_all(in, ir_ninputs(g));
	ir_free(g);

	g = parse("size R = 70, K = 300, N = 3\ninput a : f32[R, K]\ninput b : f32[K, N]\n"
		  "c[i:R, j:N] = sum(k:K) a[i, k] * b[k, j]\n"
		  "tv[i:R, q:300], ti[i:R, q:300] = topk(k:K) a[i, k]\n"
		  "output c : f32\noutput tv : f32\noutput ti : i32\n");
	in = inputs(g, DIST_NORMAL, 9);
	static const char *sch[] = {
		"order c : pairwise",                            /* an invocation per item */
		"order c : pairwise\ntile c : i=3",              /* its tile's points */
		"split c : k=4\norder c : pairwise",
		"split c : k=2\norder c : pairwise\ntile c : j=3",
	};
	/* scratch bytes per work-group: c 76800 (64 invocations, 1200 bytes each), 38400 or
	 * 76800 (32, 1200 or 2400 bytes); the top-k 153600 (64, 2400): chunks of one to four
	 * work-groups */
	static const char *budget[] = {NULL, "160000"};
	for (size_t i = 0; i < ARRAY_LEN(sch); i++) {
		sched_of(g, sch[i], &s);
		k = lower(g, &s);
		char *src = emit(k);
		ck_assert_msg(strstr(src, "\n//! kernel k0 groups=") && strstr(src, "bindings=1,2,3 scratch="),
			      "[%s] c has no scratch: %s", sch[i], strstr(src, "\n//! kernel"));
		free(src);
		for (size_t b = 0; b < ARRAY_LEN(budget); b++) {
			char what[256];
			snprintf(what, sizeof what, "%s, scratch budget %s", sch[i], budget[b] ? budget[b] : "default");
			if (budget[b])
				setenv("ASSAY_WGSL_SCRATCH_MAX", budget[b], 1);
			compare(g, k, in, what);
			unsetenv("ASSAY_WGSL_SCRATCH_MAX");
		}
		kir_free(k);
		sched_free(&s);
	}
	sched_of(g, sch[0], &s);
	k = lower(g, &s);
	HostTensor out[3];
	setenv("ASSAY_WGSL_SCRATCH_MAX", "60000", 1);
	ck_assert_int_eq(run("wgsl", k, in, out, &d), -1);
	unsetenv("ASSAY_WGSL_SCRATCH_MAX");
	ck_assert_msg(d.code == 2 && strstr(d.msg, "unsupported") && strstr(d.msg, "76800 bytes of scratch"),
		      "%s", d.msg);
	diag_clear(&d);
	kir_free(k);
	sched_free(&s);
	free_all(in, ir_ninputs(g));
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ the examples */

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **example_paths(int *n)
{
	DIR *dir = opendir("examples");
	ck_assert_msg(dir != NULL, "no examples/ folder (run from the repository root)");
	char **paths = NULL;
	*n = 0;
	for (struct dirent *e; (e = readdir(dir));) {
		size_t len = strlen(e->d_name);
		if (len < 4 || strcmp(e->d_name + len - 3, ".tg") != 0)
			continue;
		paths = realloc(paths, (size_t)(*n + 1) * sizeof *paths);
		paths[*n] = malloc(len + 16);
		snprintf(paths[*n], len + 16, "examples/%s", e->d_name);
		(*n)++;
	}
	closedir(dir);
	qsort(paths, (size_t)*n, sizeof *paths, cmp_names);
	return paths;
}

/* s with f32 wherever it says f64 (WGSL has no f64). */
static void no_f64(Schedule *s)
{
	for (int d = 0; d < s->ndefs; d++) {
		DefSched *x = &s->defs[d];
		if (x->op == DT_F64)
			x->op = DT_F32;
		if (x->accum == DT_F64)
			x->accum = DT_F32;
		if (x->store == DT_F64)
			x->store = DT_F32;
	}
}

/* Every example under its default schedule and a sampled one (`assay check --schedules`
 * runs more); a sampled schedule in f64 must be refused as unsupported, and then runs with
 * f32 in place of f64. */
START_TEST(examples)
{
	int n;
	char **paths = example_paths(&n);
	ck_assert_msg(n >= 10, "only %d examples", n);
	for (int i = 0; i < n; i++) {
		Diag d = {0};
		Graph *g = ir_parse_file(paths[i], NULL, 0, &d);
		ck_assert_msg(g != NULL, "%s: %s", paths[i], d.msg);
		HostTensor *in = inputs(g, DIST_NORMAL, 11);
		int ran = 0, refused = 0;
		for (uint64_t seed = 0; ran < 2; seed++) {
			Schedule s;
			if (seed == 0)
				ck_assert_int_eq(sched_build(g, &s, &d), 0);
			else
				sched_sample(g, seed, &s);
			Kernels *k = lower(g, &s);
			char what[256];
			snprintf(what, sizeof what, "%s, schedule %s", paths[i],
				 seed ? "sampled" : "default");
			char *src = wgsl()->emit(k, &d);
			if (!src) {
				/* refused for f64: run the same schedule with f32 for f64 */
				ck_assert_msg(seed > 0 && d.code == 2 && strstr(d.msg, "f64"),
					      "%s seed %llu: %s", what, (unsigned long long)seed, d.msg);
				diag_clear(&d);
				refused++;
				kir_free(k);
				no_f64(&s);
				k = lower(g, &s);
				snprintf(what, sizeof what, "%s, schedule sampled from seed %llu in f32",
					 paths[i], (unsigned long long)seed);
			} else {
				free(src);
			}
			compare(g, k, in, what);
			ran++;
			kir_free(k);
			sched_free(&s);
		}
		printf("%s: the default and a sampled schedule agree with c%s\n", paths[i],
		       refused ? " (the sampled one refused for f64, run in f32)" : "");
		free_all(in, ir_ninputs(g));
		ir_free(g);
		free(paths[i]);
	}
	free(paths);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wgsl");
	TCase *e = tcase_create("emit");
	tcase_add_test(e, emit_modes);
	tcase_add_test(e, emit_unsupported_f64);
	tcase_add_test(e, emit_int_checks);
	tcase_add_test(e, emit_scratch);
	suite_add_tcase(s, e);
	char why[1024];
	const Backend *b = be_find("wgsl");
	if (b && b->available(why, sizeof why) == 0) {
		TCase *r = tcase_create("run");
		tcase_set_timeout(r, 600);
		tcase_add_test(r, matmul_schedules);
		tcase_add_test(r, monoids);
		tcase_add_test(r, specials);
		tcase_add_test(r, conversions);
		tcase_add_test(r, index_error);
		tcase_add_test(r, back_to_back);
		tcase_add_test(r, int_overflow);
		tcase_add_test(r, int_real_compare);
		tcase_add_test(r, guards);
		tcase_add_test(r, compile_error);
		tcase_add_test(r, plan_record);
		tcase_add_test(r, scratch_locals);
		tcase_add_test(r, examples);
		suite_add_tcase(s, r);
	} else {
		printf("SKIP: the wgsl backend cannot run here (%s): its kernels are not tested\n",
		       b ? why : "no backend named wgsl");
	}
	return tu_run(s);
}
