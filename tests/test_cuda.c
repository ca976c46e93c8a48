/* tests/test_cuda.c: the cuda backend.
 *
 * Without a device (CI): every example's kernels, under its default schedule and sampled
 * ones, in both execution modes (ASSAY_CUDA_MODE=block forces a block per item wherever a
 * construct can be distributed), compile with NVRTC to PTX for compute_90 and `ptxas
 * -arch=sm_90` accepts the PTX. These tests are left out, saying SKIP once, only where
 * NVRTC itself is missing; ptxas is looked for in $CUDA_HOME/bin, /usr/local/cuda/bin and
 * on PATH.
 *
 * With a device (the H200): every example under the same schedules runs on cuda and on c
 * with the same inputs; integer outputs must be equal and real ones within a few ulps of
 * the output format (both run the kernel IR's own order; the math libraries differ), plus
 * hand-made graphs for split and pairwise reductions, tiles, topk, half storage and a
 * runtime error. Where no device is usable the device tests are left out, saying SKIP once
 * with the reason.
 */
#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"
#include "backendutil.h"
#include "../compiler/compiler.h"
#include "../interp/interp.h"

enum { NSCHED = 3 };   /* default, sampled 1, sampled 2 */

static glob_t examples;

static const char *cache_dir(void)
{
	static char buf[512];
	const char *t = getenv("TMPDIR");
	snprintf(buf, sizeof buf, "%s/assay-test-cuda", t && *t ? t : "/tmp");
	return buf;
}

static Graph *load(const char *path)
{
	Diag d = {0};
	Graph *g = ir_parse_file(path, NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s: %s", path, d.msg ? d.msg : "?");
	return g;
}

static Graph *parse(const char *src)
{
	Diag d = {0};
	Graph *g = ir_parse(src, strlen(src), "test.tg", NULL, 0, &d);
	ck_assert_msg(g != NULL, "parse: %s", d.msg ? d.msg : "?");
	return g;
}

/* Schedule number s of g: 0 its own directives, else sampled from seed s. */
static void schedule(const Graph *g, int s, Schedule *out)
{
	Diag d = {0};
	if (s == 0)
		ck_assert_msg(sched_build(g, out, &d) == 0, "schedule: %s", d.msg ? d.msg : "?");
	else
		sched_sample(g, (uint64_t)s, out);
}

static Kernels *lower(const Graph *g, const Schedule *s)
{
	Diag d = {0};
	Kernels *k = kir_lower(g, s, NULL, &d);
	ck_assert_msg(k != NULL, "lower: %s", d.msg ? d.msg : "?");
	return k;
}

/* ------------------------------------------------------------ PTX without a device */

static const char *ptxas_path(void)
{
	static char buf[600];
	const char *h = getenv("CUDA_HOME");
	if (h && *h) {
		snprintf(buf, sizeof buf, "%s/bin/ptxas", h);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
		return "/usr/local/cuda/bin/ptxas";
	const char *path = getenv("PATH");
	for (const char *p = path; p && *p;) {
		const char *c = strchr(p, ':');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		snprintf(buf, sizeof buf, "%.*s/ptxas", (int)n, p);
		if (n && access(buf, X_OK) == 0)
			return buf;
		p = c ? c + 1 : p + n;
	}
	return NULL;
}

/* ptxas -arch=sm_90 on ptx; its exit status (its messages into log). */
static int ptxas(const char *ptx, char *log, size_t n)
{
	char in[600], out[600], err[600];
	snprintf(in, sizeof in, "%s/k-%ld.ptx", cache_dir(), (long)getpid());
	snprintf(out, sizeof out, "%s/k-%ld.cubin", cache_dir(), (long)getpid());
	snprintf(err, sizeof err, "%s/k-%ld.log", cache_dir(), (long)getpid());
	FILE *f = fopen(in, "w");
	ck_assert_msg(f != NULL, "cannot write %s", in);
	fputs(ptx, f);
	fclose(f);
	pid_t pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		if (!freopen(err, "w", stderr) || !freopen("/dev/null", "w", stdout))
			_exit(126);
		execl(ptxas_path(), "ptxas", "-arch=sm_90", in, "-o", out, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	char *text = tu_read_file(err, NULL);
	snprintf(log, n, "%s", text ? text : "");
	free(text);
	unlink(in);
	unlink(out);
	unlink(err);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Example i: NVRTC makes PTX of each schedule in both modes, ptxas accepts it; the source
 * is deterministic. */
START_TEST(example_ptx)
{
	const Backend *b = be_find("cuda");
	ck_assert(b && b->compile_only);
	Graph *g = load(examples.gl_pathv[_i]);
	bool have_ptxas = ptxas_path() != NULL;
	for (int mode = 0; mode < 2; mode++) {
		setenv("ASSAY_CUDA_MODE", mode ? "block" : "", 1);
		for (int s = 0; s < (mode ? 1 : NSCHED); s++) {
			Schedule sc;
			schedule(g, s, &sc);
			Kernels *k = lower(g, &sc);
			Diag d = {0};
			char *src = b->emit(k, &d), *again = b->emit(k, &d);
			ck_assert_msg(src && again && strcmp(src, again) == 0, "%s: emit not deterministic",
				      examples.gl_pathv[_i]);
			ck_assert_msg(strstr(src, "__global__") != NULL, "no kernel in the source");
			char *ptx = b->compile_only(k, "sm_90", &d);
			ck_assert_msg(ptx != NULL, "%s schedule %d mode %d: %s", examples.gl_pathv[_i], s,
				      mode, d.msg ? d.msg : "?");
			ck_assert_msg(strstr(ptx, ".target sm_90") != NULL, "PTX not for sm_90");
			if (have_ptxas) {
				char log[4096];
				int rc = ptxas(ptx, log, sizeof log);
				ck_assert_msg(rc == 0, "%s schedule %d mode %d: ptxas exit %d:\n%s",
					      examples.gl_pathv[_i], s, mode, rc, log);
			}
			free(ptx);
			free(src);
			free(again);
			kir_free(k);
			sched_free(&sc);
		}
	}
	ir_free(g);
}
END_TEST

/* compile_only refuses a target it does not know, with a message. */
START_TEST(bad_target)
{
	Graph *g = parse("size N = 4\ninput x : f32[N]\ny[i:N] = x[i] + 1\noutput y : f32\n");
	Schedule s;
	schedule(g, 0, &s);
	Kernels *k = lower(g, &s);
	Diag d = {0};
	char *ptx = be_find("cuda")->compile_only(k, "gfx90a", &d);
	ck_assert(ptx == NULL);
	ck_assert_msg(d.msg && strstr(d.msg, "sm_XY"), "message: %s", d.msg ? d.msg : "(none)");
	diag_clear(&d);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* Exact combines (cuda/emit.c, "exact combines"): a split's max, min and integer sum of 32
 * partials or more are folded by the block with warp shuffles; a float sum's combine
 * stays thread 0's, in the schedule's order; fewer than 32 partials stay serial. */
static const char combine_src[] =
	"size R = 6, K = 1000\n"
	"input a : f32[R, K]\ninput d : f64[R, K]\ninput n : i32[R, K]\n"
	"m[i:R] = max(k:K) a[i, k]\n"
	"w[i:R] = min(k:K) d[i, k]\n"
	"s[i:R] = sum(k:K) n[i, k]\n"
	"x[i:R] = max(k:K) n[i, k]\n"
	"f[i:R] = sum(k:K) a[i, k]\n"
	"output m : f32, w : f64, s : i32, x : i32, f : f32\n";

static const char *const combine_scheds[] = {
	"split m : k=32\nsplit w : k=1000\nsplit s : k=64\nsplit x : k=300\nsplit f : k=256",
	"split m : k=999\nsplit w : k=40\nsplit s : k=500\nsplit x : k=33\nsplit f : k=48",
	"split m : k=31\nsplit w : k=16\nsplit s : k=8\nsplit x : k=2\nsplit f : k=64",
};

static char *emit_under(const Graph *g, const char *sched, Schedule *s, Kernels **k)
{
	Diag d = {0};
	ck_assert_msg(ir_parse_schedule((Graph *)g, sched, strlen(sched), "test.sched", &d) == 0, "%s", d.msg);
	ck_assert_msg(sched_build(g, s, &d) == 0, "%s", d.msg);
	*k = lower(g, s);
	char *src = be_find("cuda")->emit(*k, &d);
	ck_assert_msg(src != NULL, "emit: %s", d.msg ? d.msg : "?");
	return src;
}

static int count_of(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Division by a constant power of two (cuda/emit.c op_text): a multiply by the exact
 * reciprocal where there is one (2^127: a subnormal reciprocal), a division otherwise
 * (by 3; by 2^-130, whose reciprocal overflows f32). */
static const char div_src[] =
	"size N = 64\ninput x : f32[N]\ninput d : f64[N]\n"
	"a[i:N] = x[i] / 8\nb[i:N] = x[i] / 0.25\nc[i:N] = x[i] / 0x1p127\n"
	"e[i:N] = x[i] / 3\nh[i:N] = x[i] / 0x1p-130\nk[i:N] = d[i] / 0x1p-1000\n"
	"output a : f32, b : f32, c : f32, e : f32, h : f32, k : f64\n";

START_TEST(div_text)
{
	Graph *g = parse(div_src);
	Schedule s;
	Kernels *k;
	char *src = emit_under(g, "", &s, &k);
	static const char *const has[] = {"* 0x1p-3f)", "* 0x1p+2f)", "* 0x1p-127f)", "/ 0x1.8p+1f)",
					  "/ 0x1p-130f)", "* 0x1p+1000)"};
	for (size_t i = 0; i < ARRAY_LEN(has); i++)
		ck_assert_msg(strstr(src, has[i]) != NULL, "no '%s' in:\n%s", has[i], src);
	free(src);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

START_TEST(combine_text)
{
	Graph *g = parse(combine_src);
	static const int want[] = {4, 4, 0};   /* shuffled combines: m, w, s, x; never f */
	for (size_t i = 0; i < ARRAY_LEN(combine_scheds); i++) {
		Schedule s;
		Kernels *k;
		char *src = emit_under(g, combine_scheds[i], &s, &k);
		ck_assert_msg(count_of(src, "exact in any order") == want[i], "[%s]: %d shuffled combines, "
			      "want %d", combine_scheds[i], count_of(src, "exact in any order"), want[i]);
		ck_assert_msg(!strstr(src, "combined by + ") || want[i], "%s", src);
		ck_assert_int_eq(count_of(src, "combined by +"), want[i] ? 1 : 0);   /* s, not f */
		free(src);
		kir_free(k);
		sched_free(&s);
	}
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ on a device */

static uint64_t bits_of(const HostTensor *t, int64_t i)
{
	switch (t->dtype) {
	case DT_F64: { uint64_t u; memcpy(&u, (const double *)t->data + i, 8); return u; }
	case DT_F32: { uint32_t u; memcpy(&u, (const float *)t->data + i, 4); return u; }
	default: return ((const uint16_t *)t->data)[i];
	}
}

/* Ordinal of a real's bit pattern in its format (numerics.md section 3): +-0 -> 0. */
static int64_t ord(const HostTensor *t, int64_t i)
{
	int w = t->dtype == DT_F64 ? 64 : t->dtype == DT_F32 ? 32 : 16;
	uint64_t u = bits_of(t, i), sign = (uint64_t)1 << (w - 1);
	int64_t mag = (int64_t)(u & (sign - 1));
	return (u & sign) ? -mag : mag;
}

/* Compares one output of cuda (a) with c's (b); returns the largest ulp distance. */
static int64_t compare(const HostTensor *a, const HostTensor *b, const char *what)
{
	ck_assert_int_eq(a->n, b->n);
	if (a->dtype == DT_I32) {
		ck_assert_msg(memcmp(a->data, b->data, (size_t)a->n * 4) == 0, "%s: integers differ", what);
		return 0;
	}
	double big = 0;
	for (int64_t i = 0; i < b->n; i++)
		if (isfinite(ht_get(b, i)))
			big = fmax(big, fabs(ht_get(b, i)));
	int64_t worst = 0;
	for (int64_t i = 0; i < a->n; i++) {
		double x = ht_get(a, i), y = ht_get(b, i);
		if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) {
			ck_assert_msg((isnan(x) && isnan(y)) || x == y, "%s[%lld]: cuda %g, c %g", what,
				      (long long)i, x, y);
			continue;
		}
		int64_t du = llabs(ord(a, i) - ord(b, i));
		worst = du > worst ? du : worst;
		ck_assert_msg(du <= 16 || fabs(x - y) <= 0x1p-20 * big,
			      "%s[%lld]: cuda %.9g, c %.9g (%lld ulps apart)", what, (long long)i, x, y,
			      (long long)du);
	}
	return worst;
}

/* Runs k on backend b; outputs into out. */
static int run(const char *name, const Kernels *k, const HostTensor *in, HostTensor *out, Diag *d)
{
	BeOpts o = {2, cache_dir()};
	return be_run(be_find(name), k, &o, in, out, NULL, d);
}

/* g under schedule s on cuda and c: the same results. */
static void agree(const Graph *g, const Schedule *s, const char *what)
{
	HostTensor *in = calloc((size_t)ir_ninputs(g) + 1, sizeof *in);
	HostTensor *oc = calloc((size_t)g->noutputs, sizeof *oc), *og = calloc((size_t)g->noutputs, sizeof *og);
	InputSpec spec = {DIST_NORMAL, 7, false};
	Diag d = {0};
	ck_assert_msg(mp_make_inputs(g, &spec, NULL, in, &d) == 0, "inputs: %s", d.msg ? d.msg : "?");
	Kernels *k = lower(g, s);
	ck_assert_msg(run("c", k, in, oc, &d) == 0, "%s on c: %s", what, d.msg ? d.msg : "?");
	ck_assert_msg(run("cuda", k, in, og, &d) == 0, "%s on cuda: %s", what, d.msg ? d.msg : "?");
	for (int o = 0; o < g->noutputs; o++) {
		char w[512];
		snprintf(w, sizeof w, "%s output %s", what, g->tensors[g->outputs[o].tensor].name);
		int64_t u = compare(&og[o], &oc[o], w);
		printf("%s: worst %lld ulps\n", w, (long long)u);
		ht_free(&oc[o]);
		ht_free(&og[o]);
	}
	for (int i = 0; i < ir_ninputs(g); i++)
		ht_free(&in[i]);
	free(in);
	free(oc);
	free(og);
	kir_free(k);
}

/* Example i on cuda and c, under each schedule, in both modes. */
START_TEST(example_runs)
{
	Graph *g = load(examples.gl_pathv[_i]);
	for (int mode = 0; mode < 2; mode++) {
		setenv("ASSAY_CUDA_MODE", mode ? "block" : "", 1);
		for (int s = 0; s < (mode ? 1 : NSCHED); s++) {
			Schedule sc;
			schedule(g, s, &sc);
			char what[600];
			snprintf(what, sizeof what, "%s schedule %d%s", examples.gl_pathv[_i], s,
				 mode ? " (block mode)" : "");
			agree(g, &sc, what);
			sched_free(&sc);
		}
	}
	ir_free(g);
}
END_TEST

/* Hand-made schedules that exercise the distributed constructs: split (also with more
 * partials than threads, and with a tail), pairwise order inside partials, tiles with
 * tails, topk, argmax, f16/bf16 storage and accumulation. */
static const char reduce_src[] =
	"size M = 5, K = 301, N = 70\n"
	"input a : f32[M, K]\n"
	"input b : bf16[K, N]\n"
	"c[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\n"
	"m[i:M] = max(k:K) a[i, k]\n"
	"l[i:M] = logsumexp(k:K) a[i, k]\n"
	"p[i:M] = prod(k:K) 1 + a[i, k] / 64\n"
	"x[i:M] = argmax(k:K) a[i, k]\n"
	"tv[i:M, r:3], ti[i:M, r:3] = topk(k:K) a[i, k]\n"
	"h[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\n"
	"output c : f32\noutput m : f32\noutput l : f32\noutput p : f32\noutput x : i32\n"
	"output tv : f32\noutput ti : i32\noutput h : f16\n";

static const char *const reduce_scheds[] = {
	"",
	"split c : k=4\nsplit l : k=7\nsplit p : k=3",
	"split c : k=300\ntile c : j=8",
	"split c : k=5\norder c : pairwise\nsplit l : k=2\norder p : pairwise",
	"tile c : i=2, j=64\ntile h : j=33\nstore h : bf16",
	"order c : pairwise\ntile c : j=16\naccum h : f16\nstore h : f16\nsplit h : k=6",
	"accum c : bf16\nsplit c : k=64\norder c : pairwise\naccum l : f64\nsplit l : k=9",
	"split c : k=1000",
};

START_TEST(reductions)
{
	Graph *g = parse(reduce_src);
	Diag d = {0};
	for (int mode = 0; mode < 2; mode++) {
		setenv("ASSAY_CUDA_MODE", mode ? "block" : "", 1);
		for (size_t i = 0; i < ARRAY_LEN(reduce_scheds); i++) {
			ck_assert_msg(ir_parse_schedule(g, reduce_scheds[i], strlen(reduce_scheds[i]),
							"test.sched", &d) == 0, "%s", d.msg ? d.msg : "?");
			Schedule s;
			if (sched_build(g, &s, &d)) {   /* a limit of the compiler: not this test's */
				printf("schedule [%s] refused: %s\n", reduce_scheds[i], d.msg);
				diag_clear(&d);
				continue;
			}
			char what[300];
			snprintf(what, sizeof what, "[%s]%s", reduce_scheds[i], mode ? " (block mode)" : "");
			agree(g, &s, what);
			sched_free(&s);
		}
	}
	ir_free(g);
}
END_TEST

/* The shuffled combines on the device: max and min over signed zeros and NaN, integer sums
 * and maxima, bit for bit c's serial fold (any NaN equals any NaN: its payload may differ);
 * the float sum, left serial, as agree() wants it. */
static bool same_bits(const HostTensor *a, const HostTensor *b, int64_t i)
{
	if (a->dtype == DT_I32)
		return ((const int32_t *)a->data)[i] == ((const int32_t *)b->data)[i];
	double x = ht_get(a, i), y = ht_get(b, i);
	return (isnan(x) && isnan(y)) || bits_of(a, i) == bits_of(b, i);
}

START_TEST(exact_combines)
{
	Graph *g = parse(combine_src);
	HostTensor in[3] = {{0}};
	InputSpec spec = {DIST_NORMAL, 11, false};
	Diag d = {0};
	ck_assert_msg(mp_make_inputs(g, &spec, NULL, in, &d) == 0, "inputs: %s", d.msg ? d.msg : "?");
	int64_t K = 1000;
	for (int64_t j = 0; j < K; j++) {   /* rows 0-2 of a and d: zeros of both signs, a NaN */
		ht_set(&in[0], j, j == 517 ? 0.0 : -0.0);   /* max: +0 */
		ht_set(&in[0], K + j, -0.0);                /* max: -0 */
		ht_set(&in[1], j, j == 999 ? -0.0 : 0.0);   /* min: -0 */
		ht_set(&in[1], K + j, 0.0);                 /* min: +0 */
	}
	ht_set(&in[0], 2 * K + 640, NAN);
	ht_set(&in[1], 2 * K + 3, NAN);
	for (size_t i = 0; i < ARRAY_LEN(combine_scheds); i++) {
		Schedule s;
		Kernels *k;
		free(emit_under(g, combine_scheds[i], &s, &k));
		HostTensor oc[5] = {{0}}, og[5] = {{0}};
		ck_assert_msg(run("c", k, in, oc, &d) == 0, "c: %s", d.msg ? d.msg : "?");
		ck_assert_msg(run("cuda", k, in, og, &d) == 0, "cuda: %s", d.msg ? d.msg : "?");
		for (int o = 0; o < 5; o++) {
			char w[300];
			snprintf(w, sizeof w, "[%s] output %d", combine_scheds[i], o);
			if (o == 4)
				compare(&og[o], &oc[o], w);
			else
				for (int64_t r = 0; r < og[o].n; r++)
					ck_assert_msg(same_bits(&og[o], &oc[o], r), "%s row %lld: cuda %a, c %a", w,
						      (long long)r, ht_get(&og[o], r), ht_get(&oc[o], r));
			ht_free(&oc[o]);
			ht_free(&og[o]);
		}
		kir_free(k);
		sched_free(&s);
	}
	for (int i = 0; i < 3; i++)
		ht_free(&in[i]);
	ir_free(g);
}
END_TEST

/* The multiplied divisions on the device: bit for bit c's correctly rounded division, over
 * zeros, infinities, NaN, subnormal inputs and results. */
START_TEST(pow2_division)
{
	Graph *g = parse(div_src);
	HostTensor in[2] = {{0}};
	InputSpec spec = {DIST_NORMAL, 5, false};
	Diag d = {0};
	ck_assert_msg(mp_make_inputs(g, &spec, NULL, in, &d) == 0, "inputs: %s", d.msg ? d.msg : "?");
	static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 0x1p-149, -0x1p-140,
					  0x1.fffffep127, 0x1p-126, 3.0, 0x1.000002p-120, 1e-45};
	for (size_t i = 0; i < ARRAY_LEN(special); i++) {
		ht_set(&in[0], (int64_t)i, special[i]);
		ht_set(&in[1], (int64_t)i, i == 5 ? 0x1p-1074 : i == 7 ? 0x1.fffffffffffffp1023 : special[i]);
	}
	Schedule s;
	Kernels *k;
	free(emit_under(g, "", &s, &k));
	HostTensor oc[6] = {{0}}, og[6] = {{0}};
	ck_assert_msg(run("c", k, in, oc, &d) == 0, "c: %s", d.msg ? d.msg : "?");
	ck_assert_msg(run("cuda", k, in, og, &d) == 0, "cuda: %s", d.msg ? d.msg : "?");
	for (int o = 0; o < 6; o++) {
		for (int64_t r = 0; r < og[o].n; r++)
			ck_assert_msg(same_bits(&og[o], &oc[o], r), "output %d element %lld: cuda %a, c %a", o,
				      (long long)r, ht_get(&og[o], r), ht_get(&oc[o], r));
		ht_free(&oc[o]);
		ht_free(&og[o]);
	}
	kir_free(k);
	sched_free(&s);
	for (int i = 0; i < 2; i++)
		ht_free(&in[i]);
	ir_free(g);
}
END_TEST

/* Locals too large for a thread's stack or for shared memory live in global scratch:
 * a pairwise term buffer of 6000 terms (private, per thread) and split partials' term
 * buffers of 4 x 1500 f64 (per block). */
START_TEST(large_locals)
{
	static const char src[] =
		"size M = 4, K = 6000\n"
		"input a : f32[M, K]\n"
		"s[i:M] = sum(k:K) a[i, k]\n"
		"t[i:M] = sum(k:K) a[i, k] * a[i, k]\n"
		"output s : f32\noutput t : f32\n"
		"schedule\n"
		"order s : pairwise\n"
		"order t : pairwise\nsplit t : k=4\naccum t : f64\n";
	Graph *g = parse(src);
	Schedule s;
	schedule(g, 0, &s);
	Kernels *k = lower(g, &s);
	Diag d = {0};
	char *text = be_find("cuda")->emit(k, &d);
	ck_assert_msg(text && strstr(text, "* nthr]") && strstr(text, "blockIdx.x);"),
		      "no scratch locals in the source");
	free(text);
	kir_free(k);
	agree(g, &s, "large locals");
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* A topk over fewer terms than K is a runtime error (code 2). The checker rejects a range
 * it can see is short: the range is shortened in memory (as test_lower does). */
START_TEST(topk_short_range)
{
	Graph *g = parse("size R = 2, C = 9, K = 4\ninput x : f32[R, C]\n"
			 "v[r:R, k:K], ix[r:R, k:K] = topk(c: 0..r+4) x[r, c]\n"
			 "output v : f32, ix : i32\n");
	g->defs[0].red[0].hi = ir_op(g, OP_ADD, TY_INT, ir_var(g, 0, TY_INT), ir_int(g, 3), 0);
	Schedule s;
	schedule(g, 0, &s);
	Kernels *k = lower(g, &s);
	HostTensor in[1], out[2];
	int64_t dims[2] = {2, 9};
	ht_alloc(&in[0], DT_F32, 2, dims);
	Diag d = {0};
	ck_assert_int_eq(run("cuda", k, in, out, &d), -1);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, "fewer than K = 4"), "%s", d.msg);
	diag_clear(&d);
	ht_free(&in[0]);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* An indirect read out of range is a runtime error of the graph (code 2) naming it. */
START_TEST(gather_out_of_range)
{
	Graph *g = parse("size N = 4, V = 8\ninput t : f32[V]\ninput ix : i32[N]\n"
			 "y[i:N] = t[ix[i]]\noutput y : f32\n");
	Schedule s;
	schedule(g, 0, &s);
	Kernels *k = lower(g, &s);
	HostTensor in[2];
	int64_t dv = 8, dn = 4;
	ht_alloc(&in[0], DT_F32, 1, &dv);
	ht_alloc(&in[1], DT_I32, 1, &dn);
	((int32_t *)in[1].data)[2] = 9;
	HostTensor out[1];
	Diag d = {0};
	ck_assert_int_eq(run("cuda", k, in, out, &d), -1);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, "out of range") && strstr(d.msg, "is 9"), "%s", d.msg);
	diag_clear(&d);
	ht_free(&in[0]);
	ht_free(&in[1]);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* A launch of 3 runs back to back (one synchronisation, one error-slot read) gives one
 * run's outputs; the first of two kernels' errors is the one reported (backendutil.h). */
START_TEST(row_fusion)
{
	bt_row_fusion("cuda");
}
END_TEST

START_TEST(back_to_back)
{
	bt_back_to_back("cuda");
}
END_TEST

/* ------------------------------------------------------------ suite */

/* Can NVRTC compile here? compile_only's message names a missing library. Asked in a
 * child process: the suite's own process stays clear of the CUDA libraries, so that the
 * children that Check forks for the device tests can initialise the driver. */
static bool have_nvrtc(char *why, size_t n)
{
	int fd[2];
	if (pipe(fd))
		return true;   /* let the tests fail loudly */
	pid_t pid = fork();
	if (pid == 0) {
		static const char src[] = "size N = 1\ninput x : f32[N]\ny[i:N] = x[i]\noutput y : f32\n";
		Diag d = {0};
		Schedule s;
		Graph *g = ir_parse(src, strlen(src), "probe.tg", NULL, 0, &d);
		Kernels *k = NULL;
		if (g) {
			sched_default(g, &s);
			k = kir_lower(g, &s, NULL, &d);
		}
		char *ptx = k ? be_find("cuda")->compile_only(k, "sm_90", &d) : NULL;
		bool missing = !ptx && d.msg && strstr(d.msg, "no NVRTC");
		if (missing && write(fd[1], d.msg, strlen(d.msg)) < 0)
			_exit(2);
		_exit(missing ? 1 : 0);
	}
	close(fd[1]);
	ssize_t got = pid > 0 ? read(fd[0], why, n - 1) : 0;
	why[got > 0 ? got : 0] = 0;
	close(fd[0]);
	int st = 0;
	if (pid > 0)
		waitpid(pid, &st, 0);
	return !(WIFEXITED(st) && WEXITSTATUS(st) == 1);
}

int main(void)
{
	char why[1024] = "", nv[1024] = "";
	if (glob("examples/*.tg", 0, NULL, &examples) != 0) {
		fprintf(stderr, "test_cuda: no examples/*.tg (run from the repository root)\n");
		return EXIT_FAILURE;
	}
	bool device = be_find("cuda")->available(why, sizeof why) == 0;
	Suite *s = suite_create("cuda");
	TCase *tc = tcase_create("compile");
	tcase_set_timeout(tc, 120);
	if (have_nvrtc(nv, sizeof nv)) {
		tcase_add_loop_test(tc, example_ptx, 0, (int)examples.gl_pathc);
		if (!ptxas_path())
			fprintf(stderr, "SKIP: test_cuda: ptxas not found ($CUDA_HOME/bin, /usr/local/cuda/bin, "
				"PATH): PTX is made but not assembled\n");
	} else {
		fprintf(stderr, "SKIP: test_cuda: PTX tests: %s\n", nv);
	}
	tcase_add_test(tc, bad_target);
	tcase_add_test(tc, combine_text);
	tcase_add_test(tc, div_text);
	suite_add_tcase(s, tc);
	if (device) {
		TCase *td = tcase_create("device");
		tcase_set_timeout(td, 300);
		tcase_add_loop_test(td, example_runs, 0, (int)examples.gl_pathc);
		tcase_add_test(td, reductions);
		tcase_add_test(td, large_locals);
		tcase_add_test(td, topk_short_range);
		tcase_add_test(td, gather_out_of_range);
		tcase_add_test(td, back_to_back);
		tcase_add_test(td, row_fusion);
		tcase_add_test(td, exact_combines);
		tcase_add_test(td, pow2_division);
		suite_add_tcase(s, td);
	} else {
		fprintf(stderr, "SKIP: test_cuda: device tests (running on cuda, compared with c): %s\n", why);
	}
	mkdir(cache_dir(), 0777);
	int rc = tu_run(s);
	globfree(&examples);
	return rc;
}
