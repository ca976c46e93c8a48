/* tests/test_lower.c: schedules, lowering and the c backend, checked against plain
 * double-precision references written here (not the interpreter), under several schedules.
 *
 * Inputs are mostly "exact": multiples of 1/32 in [-4, 4], which f16 and bf16 hold, and
 * whose products and short sums f32 holds exactly; then every schedule must give exactly the
 * reference rounded into the store format, so a wrong index, a lost tile or term, or a
 * wrong combine shows as an inequality. Other tests use rough values with a tolerance sized
 * to the formats, and f32 re-enactments of the split and pairwise orders that must agree bit
 * for bit. Compiled programs are cached in $TMPDIR/assay-test-lower.
 */
#include <math.h>
#include <stdint.h>
#include <unistd.h>
#include "testutil.h"
#include "backendutil.h"
#include "../compiler/compiler.h"
#include "../interp/interp.h"

/* ------------------------------------------------------------ harness */

/* The shared helpers (testutil.h, backendutil.h), bound to this suite. */
static inline const char *cache_dir(void) { return tu_cache_dir("lower"); }
static inline Graph *parse(const char *src) { return tu_parse(src); }
static inline void free_all(HostTensor *t, int n) { tu_free_tensors(t, n); }
static inline bool same(double a, double b) { return tu_same(a, b); }

/* exact: k/32, |k| <= 128; rough: uniform in (-2, 2) */
static double exact_val(uint64_t i, uint64_t seed)
{
	return (double)((int)(tu_mix(i * 131 + seed) % 257) - 128) / 32.0;
}

static double rough_val(uint64_t i, uint64_t seed)
{
	return ((double)(tu_mix(i * 131 + seed) >> 11) * 0x1p-53 - 0.5) * 4.0;
}

/* Allocates the inputs of g (in input order) filled by f; i32 inputs get 0. */
static HostTensor *inputs(const Graph *g, double (*f)(uint64_t, uint64_t), uint64_t seed)
{
	HostTensor *in = tu_new_inputs(g);
	for (int k = 0; k < ir_ninputs(g); k++)
		for (int64_t i = 0; in[k].dtype != DT_I32 && i < in[k].n; i++)
			ht_set(&in[k], i, f((uint64_t)i, seed + (uint64_t)k * 7919));
	return in;
}

/* Replaces g's schedule with the directives in text, lowers and runs on the c backend. */
static int run_opts(Graph *g, const char *text, uint64_t faults, int threads,
		    const HostTensor *in, HostTensor *out, Diag *d)
{
	if (ir_parse_schedule(g, text, strlen(text), "test.sched", d))
		return -1;
	Schedule s;
	if (sched_build(g, &s, d))
		return -1;
	LowerOpts lo = {faults};
	Kernels *k = kir_lower(g, &s, &lo, d);
	sched_free(&s);
	if (!k)
		return -1;
	BeOpts o = {threads, cache_dir()};
	int rc = be_run(be_find("c"), k, &o, in, out, NULL, d);
	kir_free(k);
	return rc;
}

static void run_ok(Graph *g, const char *text, const HostTensor *in, HostTensor *out)
{
	Diag d = {0};
	int rc = run_opts(g, text, 0, 2, in, out, &d);
	ck_assert_msg(rc == 0, "schedule [%s]: %s", text, d.msg ? d.msg : "?");
}

static double round_store(double x, Dtype f)
{
	switch (f) {
	case DT_F32: return (double)(float)x;
	case DT_F16: return fmt_f16_to_double(fmt_double_to_f16(x));
	case DT_BF16: return fmt_bf16_to_double(fmt_double_to_bf16(x));
	default: return x;
	}
}

/* Every element of t equals ref[i] rounded into f, sign of zero included. */
static void expect_exact(const HostTensor *t, const double *ref, Dtype f, const char *what)
{
	for (int64_t i = 0; i < t->n; i++) {
		double want = round_store(ref[i], f), got = ht_get(t, i);
		ck_assert_msg(same(got, want), "%s[%lld]: got %.9g, want %.9g", what, (long long)i,
			      got, want);
	}
}

/* |got - ref| <= rel * |ref| + abs_tol, NaN and infinities exactly. */
static void expect_close(const HostTensor *t, const double *ref, double rel, double abs_tol,
			 const char *what)
{
	for (int64_t i = 0; i < t->n; i++) {
		double got = ht_get(t, i), want = ref[i];
		if (isnan(want) || isinf(want)) {
			ck_assert_msg(same(got, want), "%s[%lld]: got %g, want %g", what, (long long)i, got,
				      want);
			continue;
		}
		double tol = rel * fabs(want) + abs_tol;
		ck_assert_msg(fabs(got - want) <= tol, "%s[%lld]: got %.9g, want %.9g (tolerance %.3g)",
			      what, (long long)i, got, want, tol);
	}
}

/* ------------------------------------------------------------ matmul */

static const char matmul_src[] =
	"graph mm\n"
	"size M = 13, K = 17, N = 19\n"
	"input a : f32[M, K]\n"
	"input b : f32[K, N]\n"
	"c[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\n"
	"output c : f32\n";

static void matmul_ref(const HostTensor *in, double *ref, double *mag)
{
	for (int i = 0; i < 13; i++)
		for (int j = 0; j < 19; j++) {
			double s = 0, m = 0;
			for (int k = 0; k < 17; k++) {
				double p = ht_get(&in[0], i * 17 + k) * ht_get(&in[1], k * 19 + j);
				s += p;
				m += fabs(p);
			}
			ref[i * 19 + j] = s;
			if (mag)
				mag[i * 19 + j] = m;
		}
}

static const struct {
	const char *sched;
	Dtype store;
} matmul_scheds[] = {
	{"", DT_F32},
	{"tile c : i=4, j=8", DT_F32},              /* tails in both directions, hoisted */
	{"tile c : i=13, j=19", DT_F32},            /* one full tile */
	{"tile c : i=32", DT_F32},                  /* a tile larger than the extent */
	{"tile c : j=5\nsplit c : k=3", DT_F32},
	{"order c : pairwise", DT_F32},
	{"split c : k=4\norder c : pairwise\ntile c : i=3", DT_F32},
	{"store c : f16\ntile c : i=2, j=16", DT_F16},
	{"store c : bf16", DT_BF16},
	{"store c : f64\naccum c : f64\ntile c : i=5, j=7", DT_F64},
};

START_TEST(matmul_exact)
{
	Graph *g = parse(matmul_src);
	HostTensor *in = inputs(g, exact_val, 1), out[1];
	double ref[13 * 19];
	matmul_ref(in, ref, NULL);
	for (size_t s = 0; s < ARRAY_LEN(matmul_scheds); s++) {
		run_ok(g, matmul_scheds[s].sched, in, out);
		expect_exact(&out[0], ref, matmul_scheds[s].store, matmul_scheds[s].sched);
		ht_free(&out[0]);
	}
	free_all(in, 2);
	ir_free(g);
}
END_TEST

START_TEST(matmul_rough)
{
	Graph *g = parse(matmul_src);
	HostTensor *in = inputs(g, rough_val, 2), out[1];
	double ref[13 * 19], mag[13 * 19], abs_tol[13 * 19];
	matmul_ref(in, ref, mag);
	for (size_t s = 0; s < ARRAY_LEN(matmul_scheds); s++) {
		Dtype f = matmul_scheds[s].store;
		double u = f == DT_F16 ? 0x1p-11 : f == DT_BF16 ? 0x1p-8 : 0x1p-24;
		run_ok(g, matmul_scheds[s].sched, in, out);
		for (int i = 0; i < 13 * 19; i++)
			abs_tol[i] = 17 * 0x1p-24 * mag[i];
		for (int64_t i = 0; i < out[0].n; i++) {
			double got = ht_get(&out[0], i);
			ck_assert_msg(fabs(got - ref[i]) <= u * fabs(ref[i]) + abs_tol[i],
				      "[%s] c[%lld] = %.9g, want %.9g", matmul_scheds[s].sched,
				      (long long)i, got, ref[i]);
		}
		ht_free(&out[0]);
	}
	free_all(in, 2);
	ir_free(g);
}
END_TEST

/* The pairwise tree: the left half is the first floor(n/2) terms. */
static float tree(const float *v, int len)
{
	return len == 1 ? v[0] : tree(v, len / 2) + tree(v + len / 2, len - len / 2);
}

/* The split and pairwise orders, re-enacted in f32: bit-identical results. */
START_TEST(order_semantics)
{
	Graph *g = parse("size R = 3, N = 29\ninput x : f32[R, N]\n"
			 "s[r:R] = sum(j:N) x[r, j]\noutput s : f32\n");
	HostTensor *in = inputs(g, rough_val, 3), out[1];
	for (int mode = 0; mode < 4; mode++) {
		static const char *sch[] = {"", "split s : j=4", "order s : pairwise",
					    "split s : j=3\norder s : pairwise"};
		int S = mode == 1 ? 4 : mode == 3 ? 3 : 1;
		bool pw = mode >= 2;
		run_ok(g, sch[mode], in, out);
		for (int r = 0; r < 3; r++) {
			float part[4], t[4][29];
			int n[4] = {0, 0, 0, 0};
			for (int j = 0; j < 29; j++)
				t[j % S][n[j % S]++] = (float)ht_get(&in[0], r * 29 + j);
			for (int p = 0; p < S; p++) {
				float buf[29];
				memcpy(buf, t[p], sizeof buf);
				int m = n[p];
				if (!pw) {
					part[p] = -0.0f;
					for (int j = 0; j < m; j++)
						part[p] = part[p] + buf[j];
					continue;
				}
				part[p] = tree(buf, m);
			}
			float want;
			if (!pw) {
				want = part[0];
				for (int p = 1; p < S; p++)
					want = want + part[p];
			} else {
				want = tree(part, S);
			}
			double got = ht_get(&out[0], r);
			ck_assert_msg(got == (double)want, "mode %d row %d: got %.9g, want %.9g", mode, r,
				      got, (double)want);
		}
		ht_free(&out[0]);
	}
	free_all(in, 1);
	ir_free(g);
}
END_TEST


/* ------------------------------------------------------------ softmax, inlining */

static const char softmax_src[] =
	"size R = 3, V = 37\n"
	"input x : f32[R, V]\n"
	"m[r:R] = max(c:V) x[r, c]\n"
	"e[r:R, c:V] = exp(x[r, c] - m[r])\n"
	"s[r:R] = sum(c:V) e[r, c]\n"
	"y[r:R, c:V] = e[r, c] / s[r]\n"
	"output y : f32\n";

START_TEST(softmax_schedules)
{
	static const struct {
		const char *sched;
		double rel;
	} sch[] = {
		{"", 1e-6},
		{"inline e", 1e-6},                          /* read by two consumers */
		{"inline e\ntile y : r=2, c=8\ntile s : r=2", 1e-6},
		{"tile e : c=5\nsplit s : c=4\norder s : pairwise", 1e-6},
		{"store e : f16", 2e-3},
		{"store e : bf16\nstore y : bf16\naccum s : f64", 2e-2},
		/* the one-pass forms (docs/online.md) */
		{"online m, s", 1e-6},
		{"inline e\nonline s, m\nsplit m : c=4\nsplit s : c=4", 1e-6},
		{"online m, s\nsplit m : c=40\nsplit s : c=40\naccum s : f64", 1e-6},
		{"online m, s\naccum s : f16\ntile s : r=2", 3e-3},
	};
	Graph *g = parse(softmax_src);
	HostTensor *in = inputs(g, rough_val, 4), out[1];
	double ref[3 * 37];
	for (int r = 0; r < 3; r++) {
		double m = -INFINITY, s = 0;
		for (int c = 0; c < 37; c++)
			m = fmax(m, ht_get(&in[0], r * 37 + c));
		for (int c = 0; c < 37; c++)
			s += exp(ht_get(&in[0], r * 37 + c) - m);
		for (int c = 0; c < 37; c++)
			ref[r * 37 + c] = exp(ht_get(&in[0], r * 37 + c) - m) / s;
	}
	for (size_t k = 0; k < ARRAY_LEN(sch); k++) {
		run_ok(g, sch[k].sched, in, out);
		expect_close(&out[0], ref, sch[k].rel, 1e-9, sch[k].sched);
		ht_free(&out[0]);
	}
	free_all(in, 1);
	ir_free(g);
}
END_TEST

/* Causal grouped-query attention under `online m, l, o` (docs/online.md): three kernels
 * (m, l, o), no buffer for the scores s or the probabilities p (absorbed), and the values
 * of the graph; with split-KV pieces too; Welford's mean and variance in split pieces. */
static const char attn_src[] =
	"size T = 9, H = 4, KVH = 2, G = 2, D = 3\n"
	"input q : f32[T, H, D]\ninput k : f32[T, KVH, D]\ninput v : f32[T, KVH, D]\n"
	"s[h:H, i:T, j:T] = sum(d:D) q[i, h, d] * k[j, h / G, d] * 0.5\n"
	"m[h:H, i:T] = max(j: 0..i+1) s[h, i, j]\n"
	"p[h:H, i:T, j:T] = j <= i ? exp(s[h, i, j] - m[h, i]) : 0\n"
	"l[h:H, i:T] = sum(j: 0..i+1) p[h, i, j]\n"
	"o[i:T, h:H, d:D] = sum(j: 0..i+1) p[h, i, j] * v[j, h / G, d] / l[h, i]\n"
	"output o : f32\n";

START_TEST(online_attention)
{
	static const char *const sch[] = {"online m, l, o",
					  "online m, l, o\nsplit m : j=2\nsplit l : j=2\nsplit o : j=2\n"
					  "tile o : d=3"};
	Graph *g = parse(attn_src);
	HostTensor *in = inputs(g, rough_val, 9), out[1];
	double ref[9 * 4 * 3];
	for (int i = 0; i < 9; i++)
		for (int h = 0; h < 4; h++) {
			double sc[9], m = -INFINITY, l = 0;
			for (int j = 0; j <= i; j++) {
				sc[j] = 0;
				for (int d = 0; d < 3; d++)
					sc[j] += ht_get(&in[0], (i * 4 + h) * 3 + d) *
						 ht_get(&in[1], (j * 2 + h / 2) * 3 + d) * 0.5;
				m = fmax(m, sc[j]);
			}
			for (int j = 0; j <= i; j++)
				l += exp(sc[j] - m);
			for (int d = 0; d < 3; d++) {
				double o = 0;
				for (int j = 0; j <= i; j++)
					o += exp(sc[j] - m) * ht_get(&in[2], (j * 2 + h / 2) * 3 + d);
				ref[(i * 4 + h) * 3 + d] = o / l;
			}
		}
	for (size_t k = 0; k < ARRAY_LEN(sch); k++) {
		Diag d = {0};
		ck_assert_int_eq(ir_parse_schedule(g, sch[k], strlen(sch[k]), "t.sched", &d), 0);
		Schedule s;
		ck_assert_msg(sched_build(g, &s, &d) == 0, "%s", d.msg);
		Kernels *kp = kir_lower(g, &s, NULL, &d);
		ck_assert_msg(kp, "%s", d.msg);
		char *text = kir_print(kp);
		ck_assert_msg(strstr(text, "\nkernel 2: ") && !strstr(text, "\nkernel 3: ") &&
			      !strstr(text, ": s f32[") && !strstr(text, ": p f32[") &&
			      strstr(text, ": o f32["), "%s", text);
		free(text);
		kir_free(kp);
		sched_free(&s);
		run_ok(g, sch[k], in, out);
		expect_close(&out[0], ref, 1e-5, 1e-7, sch[k]);
		ht_free(&out[0]);
	}
	free_all(in, 3);
	ir_free(g);
}
END_TEST

/* A strictly causal range (j < i): row 0 has no terms, and its output is the empty sum +0,
 * not 0 / 0. */
START_TEST(online_empty_row)
{
	static const char src[] = "size T = 5, D = 2\ninput x : f32[T, T]\ninput v : f32[T, D]\n"
				  "m[i:T] = max(j: 0..i) x[i, j]\np[i:T, j:T] = exp(x[i, j] - m[i])\n"
				  "l[i:T] = sum(j: 0..i) p[i, j]\n"
				  "o[i:T, d:D] = sum(j: 0..i) p[i, j] * v[j, d] / l[i]\noutput o : f32\n";
	Graph *g = parse(src);
	HostTensor *in = inputs(g, rough_val, 3), out[1];
	double ref[5 * 2];
	for (int i = 0; i < 5; i++) {
		double m = -INFINITY, l = 0;
		for (int j = 0; j < i; j++)
			m = fmax(m, ht_get(&in[0], i * 5 + j));
		for (int j = 0; j < i; j++)
			l += exp(ht_get(&in[0], i * 5 + j) - m);
		for (int d = 0; d < 2; d++) {
			double o = 0;
			for (int j = 0; j < i; j++)
				o += exp(ht_get(&in[0], i * 5 + j) - m) * ht_get(&in[1], j * 2 + d);
			ref[i * 2 + d] = i ? o / l : 0.0;
		}
	}
	run_ok(g, "online m, l, o\nsplit m : j=2\nsplit l : j=2\nsplit o : j=2", in, out);
	expect_close(&out[0], ref, 1e-5, 1e-7, "online, j < i");
	ck_assert(!signbit(ht_get(&out[0], 0)));
	ht_free(&out[0]);
	free_all(in, 2);
	ir_free(g);
}
END_TEST

START_TEST(online_welford)
{
	static const char src[] = "size T = 3, N = 29\ninput x : f32[T, N]\n"
				  "mu[t:T] = sum(j:N) x[t, j] / N\n"
				  "var[t:T] = sum(j:N) (x[t, j] - mu[t]) * (x[t, j] - mu[t]) / N\n"
				  "output mu : f32, var : f32\n";
	static const char *const sch[] = {"online mu, var", "online mu, var\nsplit mu : j=4\n"
					  "split var : j=4", "online var, mu\nsplit mu : j=40\nsplit var : j=40"};
	Graph *g = parse(src);
	HostTensor *in = inputs(g, rough_val, 5), out[2];
	double rm[3], rv[3];
	for (int t = 0; t < 3; t++) {
		double a = 0, b = 0;
		for (int j = 0; j < 29; j++)
			a += ht_get(&in[0], t * 29 + j);
		a /= 29;
		for (int j = 0; j < 29; j++)
			b += (ht_get(&in[0], t * 29 + j) - a) * (ht_get(&in[0], t * 29 + j) - a);
		rm[t] = a;
		rv[t] = b / 29;
	}
	for (size_t k = 0; k < ARRAY_LEN(sch); k++) {
		run_ok(g, sch[k], in, out);
		expect_close(&out[0], rm, 1e-5, 1e-6, sch[k]);
		expect_close(&out[1], rv, 1e-5, 1e-6, sch[k]);
		ht_free(&out[0]);
		ht_free(&out[1]);
	}
	free_all(in, 1);
	ir_free(g);
}
END_TEST

/* An inlined producer read through a transposing view and a shifted one. */
START_TEST(inline_transpose)
{
	Graph *g = parse("size M = 5, N = 7\ninput x : f32[M, N]\n"
			 "t[j:N, i:M] = x[i, j] * 3 - 1\n"
			 "y[i:M, j:N] = t[j, i] + t[(j + 1) % N, i]\n"
			 "output y : f32\n");
	HostTensor *in = inputs(g, exact_val, 5), out[1];
	double ref[35];
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 7; j++)
			ref[i * 7 + j] = ht_get(&in[0], i * 7 + j) * 3 - 1 +
					 ht_get(&in[0], i * 7 + (j + 1) % 7) * 3 - 1;
	static const char *sch[] = {"", "inline t", "inline t\ntile y : i=2, j=3", "tile t : j=3, i=2"};
	for (size_t k = 0; k < ARRAY_LEN(sch); k++) {
		run_ok(g, sch[k], in, out);
		expect_exact(&out[0], ref, DT_F32, sch[k]);
		ht_free(&out[0]);
	}
	free_all(in, 1);
	ir_free(g);
}
END_TEST

/* A windowed read with `??` padding, of an input and of an (inlined) producer. */
START_TEST(pad_window)
{
	Graph *g = parse("size L = 10, KW = 3\ninput x : f32[L]\ninput w : f32[KW]\n"
			 "p[i:L] = x[i] * 2 + 1\n"
			 "c[i:L] = sum(k:KW) p[i + k - 1] ?? 0 * w[k]\n"
			 "q[i:L] = (p[i + 1] ?? -inf) + (x[i - 1] ?? 0.5)\n"
			 "output c : f32, q : f32\n");
	HostTensor *in = inputs(g, exact_val, 6), out[2];
	double rc[10], rq[10];
	for (int i = 0; i < 10; i++) {
		rc[i] = 0;
		for (int k = 0; k < 3; k++) {
			int j = i + k - 1;
			double p = j >= 0 && j < 10 ? ht_get(&in[0], j) * 2 + 1 : 0;
			rc[i] += p * ht_get(&in[1], k);
		}
		rq[i] = (i + 1 < 10 ? ht_get(&in[0], i + 1) * 2 + 1 : -INFINITY) +
			(i >= 1 ? ht_get(&in[0], i - 1) : 0.5);
	}
	static const char *sch[] = {"", "inline p", "inline p\ntile c : i=3\ntile q : i=4",
				    "split c : k=2\ntile p : i=3"};
	for (size_t k = 0; k < ARRAY_LEN(sch); k++) {
		run_ok(g, sch[k], in, out);
		expect_exact(&out[0], rc, DT_F32, sch[k]);
		expect_exact(&out[1], rq, DT_F32, sch[k]);
		ht_free(&out[0]);
		ht_free(&out[1]);
	}
	free_all(in, 2);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ reductions */

START_TEST(triangular)
{
	Graph *g = parse("size N = 11\ninput x : f32[N, N]\ninput z : f32[N, N]\n"
			 "t[i:N] = sum(j: 0..i+1) x[i, j]\n"
			 "u[i:N] = sum(j: i..N) x[i, j] * x[j, i]\n"
			 "l[i:N] = logsumexp(j: 0..i+1) x[i, j]\n"
			 "mx[i:N] = max(j: i..N) x[j, i]\n"
			 "e[i:N] = sum(j: 0..i) z[i, j]\n"
			 "output t : f32, u : f32, l : f32, mx : f32, e : f32\n");
	HostTensor *in = inputs(g, exact_val, 7), out[5];
	for (int64_t i = 0; i < in[1].n; i++)
		ht_set(&in[1], i, -0.0);
	double rt[11], ru[11], rl[11], rm[11], re[11];
	for (int i = 0; i < 11; i++) {
		double mm = -INFINITY, s = 0;
		rt[i] = ru[i] = 0;
		rm[i] = -INFINITY;
		for (int j = 0; j <= i; j++) {
			rt[i] += ht_get(&in[0], i * 11 + j);
			mm = fmax(mm, ht_get(&in[0], i * 11 + j));
		}
		for (int j = 0; j <= i; j++)
			s += exp(ht_get(&in[0], i * 11 + j) - mm);
		rl[i] = mm + log(s);
		for (int j = i; j < 11; j++) {
			ru[i] += ht_get(&in[0], i * 11 + j) * ht_get(&in[0], j * 11 + i);
			rm[i] = fmax(rm[i], ht_get(&in[0], j * 11 + i));
		}
		re[i] = i == 0 ? 0.0 : -0.0;   /* empty sum +0; a sum of -0 terms -0 */
	}
	static const char *sch[] = {
		"",
		"tile t : i=4\ntile u : i=3\ntile l : i=4\ntile mx : i=2\ntile e : i=5",
		"split t : j=3\nsplit l : j=2\norder u : pairwise\nsplit e : j=2\nsplit mx : j=4",
		"order t : pairwise\norder e : pairwise\naccum l : f64\norder l : pairwise",
	};
	for (size_t k = 0; k < ARRAY_LEN(sch); k++) {
		run_ok(g, sch[k], in, out);
		expect_exact(&out[0], rt, DT_F32, "t");
		expect_exact(&out[1], ru, DT_F32, "u");
		expect_close(&out[2], rl, 1e-6, 1e-6, "l");
		expect_exact(&out[3], rm, DT_F32, "mx");
		expect_exact(&out[4], re, DT_F32, "e");
		for (int i = 0; i < 5; i++)
			ht_free(&out[i]);
	}
	free_all(in, 2);
	ir_free(g);
}
END_TEST

static const char arg_src[] =
	"size R = 5, C = 23, K = 4\n"
	"input x : f32[R, C]\n"
	"am[r:R] = argmax(c:C) x[r, c]\n"
	"an[r:R] = argmin(c: 1..C) x[r, c]\n"
	"v[r:R, k:K], ix[r:R, k:K] = topk(c:C) x[r, c]\n"
	"output am : i32, an : i32, v : f32, ix : i32\n";

/* rank order: NaN first, larger first, smaller index first */
static bool before(double a, int i, double b, int j)
{
	if (isnan(a) != isnan(b))
		return isnan(a);
	if (!isnan(a) && a != b)
		return a > b;
	return i < j;
}

START_TEST(argmax_topk)
{
	Graph *g = parse(arg_src);
	HostTensor *in = inputs(g, exact_val, 8), out[4];
	for (int64_t i = 0; i < in[0].n; i++)   /* few distinct values: many ties */
		ht_set(&in[0], i, (double)((int)(tu_mix((uint64_t)i) % 7) - 3));
	ht_set(&in[0], 2 * 23 + 9, NAN);       /* row 2: a NaN wins */
	ht_set(&in[0], 3 * 23 + 4, -0.0);
	double ram[5], ran[5], rv[20], rix[20];
	for (int r = 0; r < 5; r++) {
		double x[23];
		for (int c = 0; c < 23; c++)
			x[c] = ht_get(&in[0], r * 23 + c);
		int am = 0, an = 1;
		for (int c = 1; c < 23; c++)
			if (before(x[c], c, x[am], am))
				am = c;
		for (int c = 2; c < 23; c++) {
			bool nan_c = isnan(x[c]), nan_b = isnan(x[an]);
			if ((nan_c && !nan_b) || (!nan_c && !nan_b && x[c] < x[an]))
				an = c;
		}
		ram[r] = am;
		ran[r] = an;
		int idx[23];
		for (int c = 0; c < 23; c++)
			idx[c] = c;
		for (int a = 0; a < 4; a++)   /* selection sort of the first K */
			for (int b = a + 1; b < 23; b++)
				if (before(x[idx[b]], idx[b], x[idx[a]], idx[a])) {
					int t = idx[a];
					idx[a] = idx[b];
					idx[b] = t;
				}
		for (int k = 0; k < 4; k++) {
			rv[r * 4 + k] = x[idx[k]];
			rix[r * 4 + k] = idx[k];
		}
	}
	static const struct {
		const char *sched;
		Dtype vf;
	} sch[] = {
		{"", DT_F32},
		{"tile am : r=2\ntile v : r=3\naccum v : f64\naccum am : f64", DT_F32},
		{"store v : f16\ntile an : r=4", DT_F16},
	};
	for (size_t k = 0; k < ARRAY_LEN(sch); k++) {
		run_ok(g, sch[k].sched, in, out);
		expect_exact(&out[0], ram, DT_F64, "am");
		expect_exact(&out[1], ran, DT_F64, "an");
		expect_exact(&out[2], rv, sch[k].vf, "v");
		expect_exact(&out[3], rix, DT_F64, "ix");
		for (int i = 0; i < 4; i++)
			ht_free(&out[i]);
	}
	free_all(in, 1);
	ir_free(g);
}
END_TEST

START_TEST(topk_short_range)
{
	Graph *g = bt_topk_short_graph();
	HostTensor *in = inputs(g, exact_val, 9), out[2];
	Diag d = {0};
	ck_assert_int_eq(run_opts(g, "", 0, 1, in, out, &d), -1);
	ck_assert_msg(d.msg && strstr(d.msg, "fewer than K = 4"), "message: %s", d.msg);
	ck_assert_int_eq(d.code, 2);
	diag_clear(&d);
	free_all(in, 1);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ indirect reads */

static void set_tokens(HostTensor *t, const int *v)
{
	for (int i = 0; i < 6; i++)
		((int32_t *)t->data)[i] = v[i];
}

START_TEST(gather)
{
	Graph *g = parse(bt_gather_src);
	HostTensor *in = inputs(g, exact_val, 10), out[3];
	static const int toks[6] = {3, 9, 0, 9, 5, 1};
	set_tokens(&in[0], toks);
	double rh[30], rp[6], rg[6];
	for (int t = 0; t < 6; t++) {
		rp[t] = toks[t] + 1;
		rg[t] = ht_get(&in[1], toks[t] * 5);
		for (int d = 0; d < 5; d++)
			rh[t * 5 + d] = ht_get(&in[1], toks[t] * 5 + d) * 2 +
					(toks[t] + 1 < 10 ? ht_get(&in[1], (toks[t] + 1) * 5 + d) : -1);
	}
	static const char *sch[] = {"", "tile h : t=4, d=2", "tile h : d=3\ntile g : t=4"};
	for (size_t k = 0; k < ARRAY_LEN(sch); k++) {
		run_ok(g, sch[k], in, out);
		expect_exact(&out[0], rh, DT_F32, "h");
		expect_exact(&out[1], rp, DT_F64, "p");
		expect_exact(&out[2], rg, DT_F32, "g");
		for (int i = 0; i < 3; i++)
			ht_free(&out[i]);
	}
	free_all(in, 2);
	ir_free(g);
}
END_TEST

/* An integer definition inlined into an index position. */
START_TEST(gather_inline_index)
{
	Graph *g = parse("size T = 6, V = 10, D = 5, P = 3\n"
			 "input tok : i32[T]\ninput w : f32[V, D]\n"
			 "pos[t:T] = t + P\n"
			 "h[t:T, d:D] = w[tok[t], d] + w[pos[t], d]\n"
			 "output h : f32\n");
	HostTensor *in = inputs(g, exact_val, 11), out[1];
	static const int toks[6] = {1, 2, 3, 9, 8, 0};
	set_tokens(&in[0], toks);
	double rh[30];
	for (int t = 0; t < 6; t++)
		for (int d = 0; d < 5; d++)
			rh[t * 5 + d] = ht_get(&in[1], toks[t] * 5 + d) + ht_get(&in[1], (t + 3) * 5 + d);
	static const char *sch[] = {"", "inline pos", "inline pos\ntile h : t=4"};
	for (size_t k = 0; k < ARRAY_LEN(sch); k++) {
		run_ok(g, sch[k], in, out);
		expect_exact(&out[0], rh, DT_F32, sch[k]);
		ht_free(&out[0]);
	}
	free_all(in, 2);
	ir_free(g);
}
END_TEST

START_TEST(gather_out_of_range)
{
	Graph *g = parse(bt_gather_src);
	HostTensor *in = inputs(g, exact_val, 12), out[3];
	static const int toks[6] = {3, 4, 0, 12, 5, 1};   /* 12: outside w's 10 rows */
	set_tokens(&in[0], toks);
	Diag d = {0};
	ck_assert_int_eq(run_opts(g, "", 0, 2, in, out, &d), -1);
	ck_assert_msg(d.msg && strstr(d.msg, "indirect read of 'w' out of range") &&
		      strstr(d.msg, "is 12"), "message: %s", d.msg);
	ck_assert_int_eq(d.code, 2);
	diag_clear(&d);
	free_all(in, 2);
	ir_free(g);
}
END_TEST

/* An out-of-range index on the branch a ?: does not take is not evaluated. */
START_TEST(gather_guarded)
{
	Graph *g = parse("size T = 4, V = 10\ninput tok : i32[T]\ninput w : f32[V]\n"
			 "g[t:T] = tok[t] < V ? w[tok[t]] : -2\noutput g : f32\n");
	HostTensor *in = inputs(g, exact_val, 13), out[1];
	static const int toks[4] = {3, 11, 0, 10};
	for (int i = 0; i < 4; i++)
		((int32_t *)in[0].data)[i] = toks[i];
	double rg[4] = {ht_get(&in[1], 3), -2, ht_get(&in[1], 0), -2};
	run_ok(g, "", in, out);
	expect_exact(&out[0], rg, DT_F32, "g");
	ht_free(&out[0]);
	free_all(in, 2);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ formats and ops */

/* f16 and bf16 storage from f32 and from f64 arithmetic: bit-identical to tensor.c's
 * round-to-nearest-even over random bit patterns and the classic edge cases. */
START_TEST(half_storage)
{
	Graph *g = parse(BT_HALF_SRC "output a : f16, b : bf16, c : f16, d : bf16\n");
	HostTensor *in = inputs(g, exact_val, 14), out[4];
	bt_half_inputs(in);
	run_ok(g, BT_HALF_SCHED, in, out);
	for (int64_t i = 0; i < 4096; i++)
		bt_expect_halves(out, i, ht_get(&in[0], i), ht_get(&in[1], i));
	free_all(in, 2);
	for (int k = 0; k < 4; k++)
		ht_free(&out[k]);
	ir_free(g);
}
END_TEST

static double max754(double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a == b)
		return signbit(a) ? b : a;
	return a > b ? a : b;
}

static double min754(double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a == b)
		return signbit(a) ? a : b;
	return a < b ? a : b;
}

/* IEEE maximum/minimum, casts, integer arithmetic, rsqrt, select: exact. */
START_TEST(scalar_ops)
{
	Graph *g = parse("size N = 12\ninput a : f32[N]\ninput b : f32[N]\n"
			 "mx[i:N] = max(a[i], b[i])\nmn[i:N] = min(a[i], b[i])\n"
			 "cs[i:N] = f16(a[i] * 3) + bf16(b[i] / 3)\n"
			 "k[i:N] = (i * 7 + 3) % 5 - abs(i - 8) + max(i, 3) * (i - 2) % 4\n"
			 "r[i:N] = i % 2 == 0 && a[i] > 0 ? rsqrt(a[i]) : (-i) % 3\n"
			 "output mx : f32, mn : f32, cs : f32, k : i32, r : f32\n");
	HostTensor *in = inputs(g, exact_val, 15), out[5];
	static const double sa[] = {NAN, 1, -0.0, 0.0, INFINITY, -3, 2};
	static const double sb[] = {1, NAN, 0.0, -0.0, -INFINITY, -3, NAN};
	for (int i = 0; i < 7; i++) {
		ht_set(&in[0], i, sa[i]);
		ht_set(&in[1], i, sb[i]);
	}
	double rmx[12], rmn[12], rcs[12], rk[12], rr[12];
	for (int i = 0; i < 12; i++) {
		double a = ht_get(&in[0], i), b = ht_get(&in[1], i);
		rmx[i] = max754(a, b);
		rmn[i] = min754(a, b);
		rcs[i] = (double)(float)(fmt_f16_to_double(fmt_double_to_f16((double)(float)(a * 3))) +
					 fmt_bf16_to_double(fmt_double_to_bf16((double)(float)(b / 3))));
		long long m = ((long long)(i > 3 ? i : 3) * (i - 2)) % 4;
		rk[i] = (i * 7 + 3) % 5 - llabs(i - 8) + (m < 0 ? m + 4 : m);
		long long q = (-i) % 3;
		rr[i] = i % 2 == 0 && a > 0 ? (double)(1.0f / sqrtf((float)a)) : (double)(q < 0 ? q + 3 : q);
	}
	static const char *sch[] = {"", "tile mx : i=5\ntile k : i=4\ntile r : i=3"};
	for (size_t s = 0; s < ARRAY_LEN(sch); s++) {
		run_ok(g, sch[s], in, out);
		expect_exact(&out[0], rmx, DT_F32, "mx");
		expect_exact(&out[1], rmn, DT_F32, "mn");
		expect_exact(&out[2], rcs, DT_F32, "cs");
		expect_exact(&out[3], rk, DT_F64, "k");
		expect_exact(&out[4], rr, DT_F32, "r");
		for (int i = 0; i < 5; i++)
			ht_free(&out[i]);
	}
	free_all(in, 2);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ properties */

START_TEST(threads_agree)
{
	Graph *g = parse(softmax_src);
	HostTensor *in = inputs(g, rough_val, 16), o1[1], o3[1];
	Diag d = {0};
	ck_assert_int_eq(run_opts(g, "tile y : c=4\nsplit s : c=2", 0, 1, in, o1, &d), 0);
	ck_assert_int_eq(run_opts(g, "tile y : c=4\nsplit s : c=2", 0, 3, in, o3, &d), 0);
	ck_assert_int_eq(memcmp(o1[0].data, o3[0].data, (size_t)o1[0].n * 4), 0);
	ht_free(&o1[0]);
	ht_free(&o3[0]);
	free_all(in, 1);
	ir_free(g);
}
END_TEST

static char *emit_of(const char *src, const char *sched)
{
	Graph *g = parse(src);
	Diag d = {0};
	ck_assert_int_eq(ir_parse_schedule(g, sched, strlen(sched), "test.sched", &d), 0);
	Schedule s;
	ck_assert_int_eq(sched_build(g, &s, &d), 0);
	Kernels *k = kir_lower(g, &s, NULL, &d);
	ck_assert_ptr_nonnull(k);
	char *text = be_find("c")->emit(k, &d);
	ck_assert_ptr_nonnull(text);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
	return text;
}

START_TEST(emit_deterministic)
{
	static const char *sch = "inline e\ntile y : r=2, c=8\nsplit s : c=4\norder s : pairwise";
	char *a = emit_of(softmax_src, sch), *b = emit_of(softmax_src, sch);
	ck_assert_str_eq(a, b);
	ck_assert_ptr_nonnull(strstr(a, "-ffp-contract=off"));
	free(a);
	free(b);
}
END_TEST

START_TEST(cache_hit)
{
	char dir[] = "/tmp/assay-test-cacheXXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	Graph *g = parse(matmul_src);
	Schedule s;
	sched_default(g, &s);
	Diag d = {0};
	Kernels *k = kir_lower(g, &s, NULL, &d);
	const Backend *c = be_find("c");
	char *src = c->emit(k, &d);
	BeOpts o = {1, dir};
	BeStats st1 = {0}, st2 = {0};
	BeModule *m1 = c->compile(k, src, &o, &st1, &d);
	ck_assert_msg(m1 != NULL, "%s", d.msg);
	BeModule *m2 = c->compile(k, src, &o, &st2, &d);
	ck_assert_ptr_nonnull(m2);
	ck_assert(!st1.cache_hit);
	ck_assert(st2.cache_hit);
	c->free(m1);
	c->free(m2);
	free(src);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Each seeded fault makes some result wrong: the tests above would see it. */
START_TEST(faults_are_visible)
{
	static const struct {
		unsigned fault;
		const char *sched;
	} f[] = {
		{KF_DROP_TAIL, "tile c : i=4, j=8"},
		{KF_SKIP_LAST, ""},
		{KF_NO_COMBINE, "split c : k=3"},
	};
	Graph *g = parse(matmul_src);
	HostTensor *in = inputs(g, exact_val, 17), out[1];
	double ref[13 * 19];
	matmul_ref(in, ref, NULL);
	for (size_t i = 0; i < ARRAY_LEN(f); i++) {
		Diag d = {0};
		ck_assert_int_eq(run_opts(g, f[i].sched, f[i].fault, 2, in, out, &d), 0);
		int64_t wrong = 0;
		for (int64_t j = 0; j < out[0].n; j++)
			wrong += ht_get(&out[0], j) != ref[j];
		ck_assert_msg(wrong > 0, "fault 0x%x changed nothing", f[i].fault);
		ht_free(&out[0]);
	}
	free_all(in, 2);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ schedules */

static const char rich_src[] =
	"size R = 6, C = 10, K = 3\n"
	"input x : f32[R, C]\n"
	"input tok : i32[R]\n"
	"p[r:R, c:C] = x[r, c] * 2\n"
	"s[r:R] = sum(c:C) p[r, c]\n"
	"am[r:R] = argmax(c:C) x[r, c]\n"
	"v[r:R, k:K], ix[r:R, k:K] = topk(c:C) x[r, c]\n"
	"q[r:R] = tok[r] + 1\n"
	"y[r:R, c:C] = p[r, c] / s[r] + v[r, 0] + f32(q[r] + am[r])\n"
	"output y : f32, ix : i32\n";

static Directive dir_(Graph *g, DirKind kind, const char *target, Dtype fmt, const char *arg,
		      int64_t val, int line)
{
	Directive x;
	memset(&x, 0, sizeof x);
	x.kind = (uint8_t)kind;
	x.target = ir_strdup(g, target, strlen(target));
	x.def = -1;
	x.fmt = fmt;
	x.order = ORDER_PAIRWISE;
	x.pos = (SrcPos){"test.sched", line, 1};
	if (arg) {
		x.nargs = 1;
		x.args = ir_alloc(g, sizeof *x.args);
		x.args[0] = (DirArg){ir_strdup(g, arg, strlen(arg)), val, x.pos};
	}
	return x;
}

/* Directives that name real things but do not apply: sched_build says why, with the line. */
START_TEST(bad_schedules)
{
	static const struct {
		DirKind kind;
		const char *target, *arg;
		Dtype fmt;
		const char *msg;
	} bad[] = {
		{SD_INLINE, "y", NULL, DT_F32, "it is an output"},
		{SD_INLINE, "s", NULL, DT_F32, "it is a reduction"},
		{SD_INLINE, "v", NULL, DT_F32, "a topk is always stored"},
		{SD_SPLIT, "am", "c", DT_F32, "argmax selects"},
		{SD_ORDER, "v", NULL, DT_F32, "topk selects"},
		{SD_SPLIT, "p", "c", DT_F32, "'p' is not a reduction"},
		{SD_SPLIT, "s", "r", DT_F32, "'r' is a left-hand index"},
		{SD_TILE, "s", "c", DT_F32, "'c' is a reduction index"},
		{SD_TILE, "v", "k", DT_F32, "the topk's selection index"},
		{SD_TILE, "p", "z", DT_F32, "'z' is not a left-hand index"},
		{SD_STORE, "am", NULL, DT_F16, "its values are integers"},
		{SD_STORE, "p", NULL, DT_E4M3, "must be f64, f32, f16 or bf16"},
		{SD_ACCUM, "p", NULL, DT_F64, "'p' is not a reduction"},
		{SD_ACCUM, "s", NULL, DT_E4M3, "must be f64, f32, f16 or bf16"},
		{SD_ACCUM, "q", NULL, DT_F64, "not a reduction"},
		{SD_STORE, "nope", NULL, DT_F16, "no definition named 'nope'"},
	};
	Graph *g = parse(rich_src);
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		Directive ds[2];
		ds[0] = dir_(g, SD_STORE, "y", DT_F32, NULL, 0, 1);   /* a harmless first line */
		ds[1] = dir_(g, bad[i].kind, bad[i].target, bad[i].fmt, bad[i].arg, 4, 2);
		g->dirs = ds;
		g->ndirs = 2;
		Schedule s;
		Diag d = {0};
		ck_assert_int_eq(sched_build(g, &s, &d), -1);
		ck_assert_msg(d.msg && strstr(d.msg, "test.sched:2:") && strstr(d.msg, bad[i].msg),
			      "case %zu: want '%s', got: %s", i, bad[i].msg, d.msg ? d.msg : "(none)");
		diag_clear(&d);
		g->dirs = NULL;
		g->ndirs = 0;
	}
	ir_free(g);
}
END_TEST

/* Conflicts and repeats, through the text of a schedule file. */
START_TEST(bad_schedule_text)
{
	static const struct {
		const char *text, *msg;
		int line;
	} bad[] = {
		{"inline p\ntile p : c=2\n", "'p' is inlined", 2},
		{"store s : f16\n\nstore s : bf16\n", "a second 'store' directive", 3},
		{"split s : c=2\norder am : pairwise\n", "argmax selects", 2},
		{"tile v : r=2\ninline q\nstore q : f16\n", "integers", 3},
	};
	Graph *g = parse(rich_src);
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		Diag d = {0};
		Schedule s;
		int rc = ir_parse_schedule(g, bad[i].text, strlen(bad[i].text), "bad.sched", &d);
		if (rc == 0)
			rc = sched_build(g, &s, &d);
		char where[32];
		snprintf(where, sizeof where, "bad.sched:%d:", bad[i].line);
		ck_assert_int_eq(rc, -1);
		ck_assert_msg(d.msg && strstr(d.msg, where) && strstr(d.msg, bad[i].msg),
			      "case %zu: want %s '%s', got: %s", i, where, bad[i].msg, d.msg);
		diag_clear(&d);
	}
	ir_free(g);
}
END_TEST

/* Sampled schedules: legal (their text reads back to the same schedule), deterministic,
 * and over many seeds every directive and format appears. */
START_TEST(sampler)
{
	Graph *g = parse(rich_src);
	int seen[8] = {0};
	for (uint64_t seed = 0; seed < 200; seed++) {
		Schedule s, s2, s3;
		sched_sample(g, seed, &s);
		sched_sample(g, seed, &s3);
		ck_assert(tu_sched_equal(g, &s, &s3));
		char *text = sched_text(g, &s);
		Diag d = {0};
		ck_assert_msg(ir_parse_schedule(g, text, strlen(text), "sampled", &d) == 0 &&
			      sched_build(g, &s2, &d) == 0, "seed %llu: %s\n%s",
			      (unsigned long long)seed, text, d.msg ? d.msg : "");
		ck_assert_msg(tu_sched_equal(g, &s, &s2), "seed %llu: text does not read back:\n%s",
			      (unsigned long long)seed, text);
		for (int k = 0; k < g->ndefs; k++) {
			const DefSched *x = &s.defs[k];
			seen[0] += x->inlined;
			seen[1] += x->store == DT_F16;
			seen[2] += x->store == DT_BF16;
			seen[3] += x->store == DT_F64;
			seen[4] += x->accum == DT_F64;
			seen[5] += x->order == ORDER_PAIRWISE;
			for (int i = 0; i < IR_MAXRANK; i++)
				seen[6] += x->tile[i] > 0;
			for (int i = 0; i < IR_MAXRED; i++)
				seen[7] += x->split[i] > 1;
		}
		free(text);
		sched_free(&s);
		sched_free(&s2);
		sched_free(&s3);
	}
	for (int i = 0; i < 8; i++)
		ck_assert_msg(seen[i] > 0, "choice %d never sampled", i);
	ir_free(g);
}
END_TEST

/* Sampled schedules of matmul and softmax run and agree with the references. */
START_TEST(sampled_run)
{
	Graph *g = parse(matmul_src), *h = parse(softmax_src);
	HostTensor *in = inputs(g, exact_val, 18), *in2 = inputs(h, rough_val, 19), out[1];
	double ref[13 * 19], mag[13 * 19], r2[3 * 37];
	matmul_ref(in, ref, mag);
	for (int r = 0; r < 3; r++) {
		double m = -INFINITY, s = 0;
		for (int c = 0; c < 37; c++)
			m = fmax(m, ht_get(&in2[0], r * 37 + c));
		for (int c = 0; c < 37; c++)
			s += exp(ht_get(&in2[0], r * 37 + c) - m);
		for (int c = 0; c < 37; c++)
			r2[r * 37 + c] = exp(ht_get(&in2[0], r * 37 + c) - m) / s;
	}
	for (uint64_t seed = 1; seed <= 6; seed++) {
		Schedule s;
		sched_sample(g, seed, &s);
		char *t = sched_text(g, &s);
		run_ok(g, t, in, out);
		Dtype acc = s.defs[0].accum;
		if (acc == DT_F16 || acc == DT_BF16) {   /* inexact: within 17 roundings */
			double u = acc == DT_F16 ? 0x1p-11 : 0x1p-8;
			for (int64_t i = 0; i < out[0].n; i++)
				ck_assert_msg(fabs(ht_get(&out[0], i) - ref[i]) <= 18 * u * mag[i], "%s", t);
		} else {
			expect_exact(&out[0], ref, s.defs[0].store, t);
		}
		ht_free(&out[0]);
		free(t);
		sched_free(&s);
		sched_sample(h, seed, &s);
		t = sched_text(h, &s);
		run_ok(h, t, in2, out);
		/* bf16 storage and accumulation may be sampled */
		bool lo = false;
		for (int k = 0; k < h->ndefs; k++)
			lo |= s.defs[k].accum == DT_F16 || s.defs[k].accum == DT_BF16;
		expect_close(&out[0], r2, lo ? 0.25 : 2e-2, 1e-6, t);
		ht_free(&out[0]);
		free(t);
		sched_free(&s);
	}
	free_all(in, 2);
	free_all(in2, 1);
	ir_free(g);
	ir_free(h);
}
END_TEST

/* ------------------------------------------------------------ rewrites */

static const char rewrite_src[] =
	"size N = 8\n"
	"input x : f32[N]\n"
	"input y : f16[N]\n"
	"a[i:N] = x[i] * 1 + (1 * y[i]) / 1 - 0 + x[i] / N + y[i] / 0.25\n"
	"b[i:N] = -(-(f32(f16(x[i])))) + f64(f32(y[i]))\n"
	"c[i:N] = i % 2 == 0 ? a[i] : a[i]\n"
	"d[i:N] = x[(i * 1 + 0) % N] * 0 + (x[i] - x[i])\n"
	"k[i:N] = (2 + 3) * i - i + 0\n"
	"o[i:N] = a[i] + b[i] + c[i] + d[i] + f32(k[i]) + 0\n"
	"output o : f32\n";

static void exact_eval(const Graph *g, const HostTensor *in, HostTensor *out)
{
	Diag d = {0};
	MpOpts o = {.threads = 1};
	int rc = mp_exact(g, in, &o, out, NULL, NULL, &d);
	ck_assert_msg(rc == 0, "mp_exact: %s", d.msg ? d.msg : "?");
}

/* Exact and integer rules keep the exact value bit for bit (special inputs included); the
 * real-only rules change it on special inputs, which is why they are marked real. */
START_TEST(rewrite_metamorphic)
{
	Graph *g = parse(rewrite_src);
	HostTensor *in = inputs(g, rough_val, 20), o1[1], o2[1], o3[1];
	static const double sp[] = {INFINITY, NAN, -0.0, -INFINITY};
	for (int i = 0; i < 4; i++)
		ht_set(&in[0], i, sp[i]);
	ht_set(&in[1], 5, -0.0);
	RwStats st;
	memset(&st, 0, sizeof st);
	Graph *h = rw_simplify(g, RW_EXACT | RW_INT, &st);
	Graph *r = rw_simplify(g, RW_EXACT | RW_INT | RW_REAL, &st);
	exact_eval(g, in, o1);
	exact_eval(h, in, o2);
	exact_eval(r, in, o3);
	for (int64_t i = 0; i < o1[0].n; i++)
		ck_assert_msg(same(ht_get(&o1[0], i), ht_get(&o2[0], i)), "o[%lld]: %g before, %g after",
			      (long long)i, ht_get(&o1[0], i), ht_get(&o2[0], i));
	int64_t differ = 0;
	for (int64_t i = 0; i < o1[0].n; i++)
		differ += !same(ht_get(&o1[0], i), ht_get(&o3[0], i));
	ck_assert_msg(differ > 0, "the real-only rules changed no exact value on special inputs");
	for (int i = 0; i < st.nrules; i++)
		ck_assert_msg(st.fired[i] > 0 && st.tried[i] >= st.fired[i], "rule '%s' never fired",
			      st.name[i]);
	/* and the simplified graph still compiles and runs the same on the c backend */
	HostTensor c1[1], c2[1];
	run_ok(g, "", in, c1);
	run_ok(h, "inline a\ninline c", in, c2);
	for (int64_t i = 0; i < c1[0].n; i++)
		ck_assert(same(ht_get(&c1[0], i), ht_get(&c2[0], i)));
	for (int k = 0; k < 1; k++) {
		ht_free(&o1[k]);
		ht_free(&o2[k]);
		ht_free(&o3[k]);
		ht_free(&c1[k]);
		ht_free(&c2[k]);
	}
	free_all(in, 2);
	ir_free(g);
	ir_free(h);
	ir_free(r);
}
END_TEST

/* On the examples (rough inputs), the exact rules change no exact value. */
START_TEST(rewrite_examples)
{
	static const char *ex[] = {"examples/softmax.tg", "examples/rope.tg",
				   "examples/embedding.tg", "examples/rmsnorm.tg"};
	for (size_t e = 0; e < ARRAY_LEN(ex); e++) {
		Diag d = {0};
		Graph *g = ir_parse_file(ex[e], NULL, 0, &d);
		ck_assert_msg(g != NULL, "%s: %s", ex[e], d.msg);
		RwStats st;
		memset(&st, 0, sizeof st);
		Graph *h = rw_compile(g, 0, &st);
		if (strstr(ex[e], "rmsnorm")) {   /* sum(c:C) x * x / C, C = 4096 */
			uint64_t n = 0;
			for (int i = 0; i < st.nrules; i++)
				n += strcmp(st.name[i], "x/2^k -> x*2^-k") == 0 ? st.fired[i] : 0;
			ck_assert_uint_eq(n, 1);
		}
		HostTensor *in = calloc((size_t)ir_ninputs(g) + 1, sizeof *in);
		InputSpec spec = {DIST_NORMAL, 7, false};
		ck_assert_int_eq(mp_make_inputs(g, &spec, NULL, in, &d), 0);
		HostTensor *o1 = calloc((size_t)g->noutputs, sizeof *o1);
		HostTensor *o2 = calloc((size_t)g->noutputs, sizeof *o2);
		exact_eval(g, in, o1);
		exact_eval(h, in, o2);
		for (int k = 0; k < g->noutputs; k++) {
			for (int64_t i = 0; i < o1[k].n; i++)
				ck_assert_msg(same(ht_get(&o1[k], i), ht_get(&o2[k], i)), "%s", ex[e]);
			ht_free(&o1[k]);
			ht_free(&o2[k]);
		}
		free(o1);
		free(o2);
		free_all(in, ir_ninputs(g));
		ir_free(g);
		ir_free(h);
	}
}
END_TEST

/* ------------------------------------------------------------ coverage points */

/* Whether lowering g under the schedule text (and emitting for backend, when not NULL)
 * reaches coverage point p. */
static bool reaches(const char *src, const char *text, const char *backend, CovPoint p)
{
	Graph *g = parse(src);
	Diag d = {0};
	ck_assert_msg(ir_parse_schedule(g, text, strlen(text), "test.sched", &d) == 0, "%s", d.msg);
	Schedule s;
	ck_assert_msg(sched_build(g, &s, &d) == 0, "%s", d.msg);
	cov_reset();
	Kernels *k = kir_lower(g, &s, NULL, &d);
	ck_assert_msg(k, "%s", d.msg);
	if (backend) {
		char *text_out = be_find(backend)->emit(k, &d);
		ck_assert_msg(text_out, "%s: %s", backend, d.msg);
		free(text_out);
	}
	bool hit = cov_hits[p] > 0;
	kir_free(k);
	sched_free(&s);
	ir_free(g);
	diag_clear(&d);
	return hit;
}

/* Each point fires where its branch runs, and not elsewhere (compiler/cov.def). */
START_TEST(coverage_points)
{
	static const char mm[] =
		"input a : f32[13, 10]\ninput b : f32[10, 10]\n"
		"y[i:13, j:10] = sum(k:10) a[i, k] * b[k, j]\noutput y : f32\n";
	static const char pad[] =
		"input x : f32[9]\nt[i:9] = x[i] * 2.0\ny[i:9] = t[i - 1] ?? 0.5\noutput y : f32\n";
	static const struct {
		const char *src, *sched, *backend;
		CovPoint p;
		bool hit;
	} t[] = {
		{mm, "", NULL, COV_lower_tile_partial, false},
		{mm, "tile y : i=13\n", NULL, COV_lower_tile, true},
		{mm, "tile y : i=13\n", NULL, COV_lower_tile_partial, false},   /* 13 = 1 x 13 */
		{mm, "tile y : i=4\n", NULL, COV_lower_tile_partial, true},     /* 13 = 3 x 4 + 1 */
		{mm, "tile y : i=4\n", NULL, COV_lower_tile_partial2, false},
		{mm, "tile y : i=4, j=5\n", NULL, COV_lower_tile_partial2, false},  /* 10 = 2 x 5 */
		{mm, "tile y : i=4, j=4\n", NULL, COV_lower_tile_partial2, true},
		{mm, "tile y : i=32\n", NULL, COV_lower_tile_clamped, true},
		{mm, "", NULL, COV_lower_split, false},
		{mm, "split y : k=3\n", NULL, COV_lower_split, true},
		{mm, "order y : pairwise\n", NULL, COV_lower_pairwise, true},
		{mm, "accum y : f16\n", NULL, COV_lower_accum_narrow, true},
		{mm, "store y : bf16\n", NULL, COV_lower_store_narrow, true},
		{mm, "", NULL, COV_lower_store_narrow, false},
		{pad, "", NULL, COV_lower_pad, true},
		{pad, "", NULL, COV_lower_inline_pad, false},
		{pad, "inline t\n", NULL, COV_lower_inline_pad, true},
		{mm, "split y : k=2\n", "vulkan", COV_vk_merge, true},
		{mm, "", "vulkan", COV_vk_merge, false},
		{mm, "order y : pairwise\n", "c", COV_c_tree, true},
		{mm, "order y : pairwise\n", "opencl", COV_ocl_tree, true},
		{mm, "order y : pairwise\n", "opencl", COV_c_tree, false},
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++)
		ck_assert_msg(reaches(t[i].src, t[i].sched, t[i].backend, t[i].p) == t[i].hit,
			      "case %zu: schedule [%s] on %s: %s %s", i, t[i].sched,
			      t[i].backend ? t[i].backend : "(lowering only)", cov_name(t[i].p),
			      t[i].hit ? "not reached" : "reached");
}
END_TEST

/* The table: names unique and found, areas known, backends reach their own. */
START_TEST(coverage_table)
{
	static const char *const areas[] = {"rewrite", "lower", "kivl", "cemit", "c", "opencl",
					     "vulkan", "wgsl", "cuda"};
	for (int p = 0; p < COV__COUNT; p++) {
		const char *n = cov_name((CovPoint)p);
		ck_assert_int_eq(cov_find(n, strlen(n)), p);
		ck_assert_msg(*cov_what((CovPoint)p), "%s has no description", n);
		bool known = false;
		for (size_t a = 0; a < ARRAY_LEN(areas); a++)
			known |= strcmp(cov_area((CovPoint)p), areas[a]) == 0;
		ck_assert_msg(known, "%s: unknown area %s", n, cov_area((CovPoint)p));
	}
	ck_assert_int_eq(cov_find("lower_tile_partia", 17), -1);
	ck_assert_int_eq(cov_find("no_such_point", 13), -1);
	ck_assert(cov_reaches(COV_lower_tile_partial, "c"));
	ck_assert(cov_reaches(COV_vk_merge, "vulkan"));
	ck_assert(!cov_reaches(COV_vk_merge, "c"));
	ck_assert(cov_reaches(COV_kivl_wide, "wgsl"));
	ck_assert(!cov_reaches(COV_kivl_wide, "opencl"));
}
END_TEST

/* The rewritten graph keeps the definitions a schedule names: the graph's own directives
 * build the same schedule on it, and every sampled schedule of the original lowers it. */
START_TEST(rewrite_keeps_schedules)
{
	static const char *ex[] = {"examples/rmsnorm.tg", "examples/attention.tg",
				   "examples/moe_topk.tg", "examples/conv1d.tg"};
	for (size_t e = 0; e <= ARRAY_LEN(ex); e++) {
		Diag d = {0};
		Graph *g = e < ARRAY_LEN(ex) ? ir_parse_file(ex[e], NULL, 0, &d) : NULL;
		if (e == ARRAY_LEN(ex)) {
			g = parse(rewrite_src);
			static const char sc[] = "inline c\ntile a : i=4\nstore k : i32\n";
			ck_assert_msg(ir_parse_schedule(g, sc, sizeof sc - 1, "t.sched", &d) == 0,
				      "%s", d.msg);
		}
		ck_assert_msg(g != NULL, "%s", d.msg);
		Graph *h = rw_compile(g, 0, NULL);
		ck_assert_int_eq(h->ndefs, g->ndefs);
		ck_assert_int_eq(h->ntensors, g->ntensors);
		for (int t = 0; t < g->ntensors; t++)
			ck_assert_str_eq(h->tensors[t].name, g->tensors[t].name);
		Schedule s1, s2;
		ck_assert_int_eq(sched_build(g, &s1, &d), 0);
		ck_assert_int_eq(sched_build(h, &s2, &d), 0);
		char *t1 = sched_text(g, &s1), *t2 = sched_text(h, &s2);
		ck_assert_str_eq(t1, t2);
		free(t1);
		free(t2);
		sched_free(&s1);
		sched_free(&s2);
		int lowered = 0;
		for (uint64_t seed = 1; seed <= 8; seed++) {
			Schedule s;
			sched_sample(g, seed, &s);
			Diag d1 = {0}, d2 = {0};
			Kernels *k1 = kir_lower(g, &s, NULL, &d1), *k2 = kir_lower(h, &s, NULL, &d2);
			ck_assert_msg((k1 != NULL) == (k2 != NULL), "seed %llu: %s | %s",
				      (unsigned long long)seed, d1.msg ? d1.msg : "lowered",
				      d2.msg ? d2.msg : "lowered");
			lowered += k2 != NULL;
			kir_free(k1);
			kir_free(k2);
			diag_clear(&d1);
			diag_clear(&d2);
			sched_free(&s);
		}
		ck_assert_int_gt(lowered, 0);
		ir_free(g);
		ir_free(h);
	}
}
END_TEST

/* Runs file under schedule text sched on the c backend and in the emulator, on normal inputs
 * from seed: the outputs must agree bit for bit. */
static void expect_emulator(const char *file, const char *sched, uint64_t seed)
{
	Diag d = {0};
	Graph *g = ir_parse_file(file, NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s", d.msg);
	HostTensor *in = calloc((size_t)ir_ninputs(g) + 1, sizeof *in);
	InputSpec spec = {DIST_NORMAL, seed, false};
	ck_assert_int_eq(mp_make_inputs(g, &spec, NULL, in, &d), 0);
	HostTensor *o1 = calloc((size_t)g->noutputs, sizeof *o1);
	HostTensor *o2 = calloc((size_t)g->noutputs, sizeof *o2);
	run_ok(g, sched, in, o1);
	Schedule s;
	ck_assert_int_eq(sched_build(g, &s, &d), 0);
	Dtype *f = calloc((size_t)g->ndefs * 3 + 1, sizeof *f);
	Order *ord = calloc((size_t)g->ndefs + 1, sizeof *ord);
	sched_formats(g, &s, f, f + g->ndefs, f + 2 * g->ndefs, ord);
	int64_t *split = calloc((size_t)g->ndefs + 1, sizeof *split);
	int *split_red = calloc((size_t)g->ndefs + 1, sizeof *split_red);
	sched_splits(g, &s, split, split_red);
	EmuConfig cfg = {DT_F32, f, f + g->ndefs, f + 2 * g->ndefs, ord, split, split_red, &s, 0};
	MpOpts mo = {.threads = 1};
	int rc = mp_emulate(g, in, &cfg, &mo, o2, NULL, &d);
	ck_assert_msg(rc == 0, "%s", d.msg);
	for (int k = 0; k < g->noutputs; k++) {
		for (int64_t i = 0; i < o1[k].n; i++)
			ck_assert_msg(same(ht_get(&o1[k], i), ht_get(&o2[k], i)),
				      "%s [%s] seed %llu output %d [%lld]: c %.9g, emulator %.9g", file,
				      sched, (unsigned long long)seed, k, (long long)i, ht_get(&o1[k], i),
				      ht_get(&o2[k], i));
		ht_free(&o1[k]);
		ht_free(&o2[k]);
	}
	free(o1);
	free(o2);
	free(f);
	free(ord);
	free(split);
	free(split_red);
	sched_free(&s);
	free_all(in, ir_ninputs(g));
	ir_free(g);
}

/* Where the graph calls no library function, the c backend computes exactly what the
 * emulator emulates: same formats (f16/bf16 arithmetic included), same order (split and
 * pairwise included), bit for bit. */
START_TEST(agrees_with_emulator)
{
	static const struct {
		const char *file, *sched;
	} cases[] = {
		{"examples/matmul.tg", ""},
		{"examples/matmul.tg", "tile y : m=3, n=64\nstore y : bf16"},
		{"examples/matmul.tg", "order y : pairwise\nstore y : f16"},
		{"examples/batched_matmul.tg", "tile c : i=5, j=8\naccum c : f64"},
		{"examples/batched_matmul.tg", "order c : pairwise\nstore c : f64"},
		{"examples/embedding.tg", "inline pos\ntile h : d=7"},
		{"examples/matmul.tg", "split y : k=3\ntile y : n=7"},
		{"examples/matmul.tg", "split y : k=4\norder y : pairwise\naccum y : f16"},
		{"examples/batched_matmul.tg", "split c : k=5\naccum c : bf16\nstore c : f32"},
		{"examples/batched_matmul.tg", "order c : pairwise\naccum c : bf16\ntile c : j=8"},
	};
	for (size_t c = 0; c < ARRAY_LEN(cases); c++)
		expect_emulator(cases[c].file, cases[c].sched, 11);
}
END_TEST

/* Graphs the fuzzer found failing (tests/regress/; each file's comment says how), under
 * their own schedule and others: the kernel IR is well formed, the c backend compiles and
 * runs it, and agrees with the emulator bit for bit. */
START_TEST(regress_files)
{
	static const struct {
		const char *file, *sched;
	} cases[] = {
		{"tests/regress/scalar_pad.tg", ""},
		{"tests/regress/scalar_pad.tg", "inline d4\nstore d3 : f16\nstore d7 : bf16"},
		{"tests/regress/scalar_pad.tg", "inline d3\ninline d4\ntile d7 : i=2\nstore d6 : f64"},
		{"tests/regress/fz27_store_inline.tg", "store d0 : f16\ninline d2\nstore d4 : f16\n"
						       "accum d4 : f64"},
		{"tests/regress/fz27_store_inline.tg", "inline d2\nstore d1 : bf16\ntile d1 : i=2"},
		{"tests/regress/fz27_store_inline.tg", ""},
		{"tests/regress/pocl_split2_tail.tg", "tile d4 : j=2\nsplit d4 : r=2\ntile e4 : j=2\n"
						      "split e4 : r=2\ntile m4 : j=2\nsplit m4 : r=2\n"
						      "tile l4 : j=2\nsplit l4 : r=2"},
		{"tests/regress/pocl_split2_tail.tg", "split d4 : r=3\ntile l4 : j=1\norder e4 : pairwise"},
	};
	for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
		Diag d = {0};
		Graph *g = ir_parse_file(cases[c].file, NULL, 0, &d);
		ck_assert_msg(g != NULL, "%s", d.msg);
		ck_assert_msg(ir_parse_schedule(g, cases[c].sched, strlen(cases[c].sched), "t.sched",
						&d) == 0, "%s", d.msg);
		Schedule s;
		ck_assert_int_eq(sched_build(g, &s, &d), 0);
		Kernels *k = kir_lower(g, &s, NULL, &d);
		ck_assert_msg(k != NULL, "%s", d.msg);
		ck_assert_msg(kir_validate(k, &d) == 0, "%s: %s", cases[c].file, d.msg);
		kir_free(k);
		sched_free(&s);
		ir_free(g);
		for (uint64_t seed = 1; seed <= 3; seed++)
			expect_emulator(cases[c].file, cases[c].sched, seed);
	}
}
END_TEST

/* ------------------------------------------------------------ the run driver */

/* A backend that logs what the run driver (compiler/backend.c) asks of it, and fails at
 * one stage with one diagnostic when told to. */
struct BeModule {
	int id;
};

static struct {
	char log[512];
	BeStage fail_at;   /* BE_ST_OPEN: never */
	int code;
	bool env, slow;
	int launches[64], nlaunch;
} mock;

static void mock_log(const char *what)
{
	size_t n = strlen(mock.log);
	snprintf(mock.log + n, sizeof mock.log - n, "%s%s", n ? " " : "", what);
}

static int mock_fails(BeStage s, Diag *d)
{
	if (mock.fail_at != s)
		return 0;
	if (mock.env)
		diag_env(d, "mock: the disk is full");
	else
		diag_set(d, mock.code, "mock: failed");
	return -1;
}

static char *mock_emit(const Kernels *k, Diag *d)
{
	mock_log("emit");
	return mock_fails(BE_ST_EMIT, d) ? NULL : strdup("mock source");
}

static BeModule *mock_compile(const Kernels *k, const char *src, const BeOpts *o, BeStats *st,
			      Diag *d)
{
	mock_log(strcmp(src, "mock source") == 0 ? "compile" : "compile-other");
	if (mock_fails(BE_ST_COMPILE, d))
		return NULL;
	BeModule *m = calloc(1, sizeof *m);
	ck_assert_ptr_nonnull(m);
	if (st)
		st->compile_s = 0.5;
	return m;
}

static int mock_alloc(BeModule *m, Diag *d)
{
	mock_log("alloc");
	return mock_fails(BE_ST_ALLOC, d);
}

static int mock_upload(BeModule *m, int tensor, const HostTensor *t, Diag *d)
{
	mock_log("upload");
	return mock_fails(BE_ST_UPLOAD, d);
}

static int mock_launch(BeModule *m, int n, Diag *d)
{
	mock_log("launch");
	if (mock.nlaunch < 64)
		mock.launches[mock.nlaunch++] = n;
	if (mock.slow)
		usleep(3000);   /* at least 3 ms: over BeTimeOpts.long_s of 10 us however loaded */
	return mock_fails(BE_ST_LAUNCH, d);
}

static int mock_guards(BeModule *m, Diag *d)
{
	mock_log("guards");
	return mock_fails(BE_ST_GUARDS, d);
}

static int mock_download(BeModule *m, int tensor, Dtype dt, HostTensor *t, Diag *d)
{
	mock_log("download");
	if (mock_fails(BE_ST_DOWNLOAD, d))
		return -1;
	int64_t dims[1] = {4};
	ck_assert_int_eq(ht_alloc(t, dt, 1, dims), 0);
	return 0;
}

static void mock_free(BeModule *m)
{
	mock_log("free");
	free(m);
}

static const Backend mock_backend = {
	.name = "mock", .emit = mock_emit, .compile = mock_compile, .alloc = mock_alloc,
	.upload = mock_upload, .launch = mock_launch, .download = mock_download,
	.guards = mock_guards, .free = mock_free,
};

static void mock_reset(BeStage fail_at, int code, bool env)
{
	memset(&mock, 0, sizeof mock);
	mock.fail_at = fail_at;
	mock.code = code;
	mock.env = env;
}

static const char mock_graph[] =
	"size N = 4\ninput x : f32[N]\ninput y : f32[N]\n"
	"a[i:N] = x[i] + y[i]\nb[i:N] = x[i] * y[i]\noutput a : f32, b : f64\n";

/* mock_graph lowered under its default schedule, with inputs. */
typedef struct {
	Graph *g;
	Schedule s;
	Kernels *k;
	HostTensor *in;
} MockProg;

static void mock_prog(MockProg *p)
{
	Diag d = {0};
	p->g = parse(mock_graph);
	sched_default(p->g, &p->s);
	p->k = kir_lower(p->g, &p->s, NULL, &d);
	ck_assert_msg(p->k != NULL, "%s", d.msg);
	p->in = tu_new_inputs(p->g);
}

static void mock_prog_free(MockProg *p)
{
	free_all(p->in, 2);
	kir_free(p->k);
	sched_free(&p->s);
	ir_free(p->g);
}

static void stage_seen(void *ctx, BeStage s)
{
	char *seen = ctx;
	size_t n = strlen(seen);
	snprintf(seen + n, 64 - n, "%d", (int)s);
}

/* The driver's sequence: every stage once, in order, inputs and outputs each, the stage
 * hook at each stage's start, the outputs in their dtypes, the compile time passed on. */
START_TEST(driver_sequence)
{
	MockProg p;
	mock_prog(&p);
	Diag d = {0};
	const Kernels *k = p.k;
	const HostTensor *in = p.in;
	HostTensor out[2];
	mock_reset(BE_ST_OPEN, 0, false);
	BeStats st;
	ck_assert_int_eq(be_run(&mock_backend, k, NULL, in, out, &st, &d), 0);
	ck_assert_str_eq(mock.log, "emit compile alloc upload upload launch guards download "
			 "download free");
	ck_assert_int_eq(mock.nlaunch, 1);
	ck_assert_int_eq(mock.launches[0], 1);
	ck_assert_int_eq(st.runs, 1);
	ck_assert(st.compile_s == 0.5);
	ck_assert_int_eq(out[0].dtype, DT_F32);
	ck_assert_int_eq(out[1].dtype, DT_F64);
	ht_free(&out[0]);
	ht_free(&out[1]);

	/* staged, with the hook and a source the caller put in place of the emitted one */
	char seen[64] = "";
	BeRun r;
	mock_reset(BE_ST_OPEN, 0, false);
	be_run_open(&r, &mock_backend, k);
	r.at = stage_seen;
	r.ctx = seen;
	ck_assert_int_eq(be_run_compile(&r, NULL, &d), -1);   /* before its emit */
	ck_assert_int_eq(d.code, 3);
	diag_clear(&d);
	be_run_open(&r, &mock_backend, k);
	r.at = stage_seen;
	r.ctx = seen;
	ck_assert_int_eq(be_run_emit(&r, &d), 0);
	free(r.src);
	r.src = strdup("replaced");
	ck_assert_int_eq(be_run_compile(&r, NULL, &d), 0);
	ck_assert_int_eq(be_run_bind(&r, in, &d), 0);
	ck_assert_int_eq(be_run_emit(&r, &d), -1);   /* a stage done already */
	ck_assert_ptr_nonnull(strstr(d.msg, "a second time"));
	diag_clear(&d);
	ck_assert_int_eq(be_run_launch(&r, 7, &d), 0);
	ck_assert_int_eq(r.st.runs, 7);
	ck_assert_int_eq(be_run_guards(&r, &d), 0);
	ck_assert_int_eq(be_run_outputs(&r, out, &d), 0);
	ck_assert_int_eq(r.stage, BE_ST_DONE);
	be_run_close(&r);
	ck_assert_str_eq(mock.log, "emit compile-other alloc upload upload launch guards download "
			 "download free");
	ck_assert_int_eq(mock.launches[0], 7);
	char want[64];
	snprintf(want, sizeof want, "%d%d%d%d%d%d%d%d%d", BE_ST_EMIT, BE_ST_COMPILE, BE_ST_ALLOC,
		 BE_ST_UPLOAD, BE_ST_LAUNCH, BE_ST_GUARDS, BE_ST_DOWNLOAD, BE_ST_DOWNLOAD, BE_ST_DONE);
	ck_assert_str_eq(seen, want);
	ht_free(&out[0]);
	ht_free(&out[1]);
	mock_prog_free(&p);
}
END_TEST

/* A failure at each stage: what be_run_fail calls it, where the run stopped (nothing
 * after the failing stage runs, the module is freed), and no output kept. */
START_TEST(driver_failures)
{
	static const struct {
		BeStage at;
		int code;
		bool env;
		BeFail want;
		const char *log;
	} t[] = {
		{BE_ST_EMIT, 2, false, BE_FAIL_UNSUPPORTED, "emit"},
		{BE_ST_EMIT, 3, false, BE_FAIL_COMPILE, "emit"},
		{BE_ST_COMPILE, 2, false, BE_FAIL_UNSUPPORTED, "emit compile"},
		{BE_ST_COMPILE, 3, false, BE_FAIL_COMPILE, "emit compile"},
		{BE_ST_COMPILE, 3, true, BE_FAIL_ENV, "emit compile"},
		{BE_ST_ALLOC, 2, false, BE_FAIL_UNSUPPORTED, "emit compile alloc free"},
		{BE_ST_ALLOC, 3, false, BE_FAIL_BACKEND, "emit compile alloc free"},
		{BE_ST_UPLOAD, 2, false, BE_FAIL_BACKEND, "emit compile alloc upload free"},
		{BE_ST_LAUNCH, 2, false, BE_FAIL_RUNTIME, "emit compile alloc upload upload launch free"},
		{BE_ST_LAUNCH, 3, false, BE_FAIL_BACKEND, "emit compile alloc upload upload launch free"},
		{BE_ST_LAUNCH, 3, true, BE_FAIL_ENV, "emit compile alloc upload upload launch free"},
		{BE_ST_GUARDS, 1, false, BE_FAIL_OOB,
		 "emit compile alloc upload upload launch guards free"},
		{BE_ST_GUARDS, 3, false, BE_FAIL_BACKEND,
		 "emit compile alloc upload upload launch guards free"},
		{BE_ST_DOWNLOAD, 3, false, BE_FAIL_BACKEND,
		 "emit compile alloc upload upload launch guards download free"},
	};
	MockProg p;
	mock_prog(&p);
	Diag d = {0};
	const Kernels *k = p.k;
	const HostTensor *in = p.in;
	for (size_t i = 0; i < ARRAY_LEN(t); i++) {
		HostTensor out[2];
		BeRun r;
		mock_reset(t[i].at, t[i].code, t[i].env);
		be_run_open(&r, &mock_backend, k);
		int rc = be_run_ready(&r, NULL, in, &d) || be_run_launch(&r, 1, &d) ||
			 be_run_guards(&r, &d) || be_run_outputs(&r, out, &d);
		ck_assert_int_eq(rc, 1);
		ck_assert_int_eq(r.stage, t[i].at);
		ck_assert_msg(be_run_fail(&r, &d) == t[i].want, "case %zu: %d", i,
			      (int)be_run_fail(&r, &d));
		ck_assert_ptr_nonnull(strstr(d.msg, t[i].env ? "mock: the disk is full" : "mock: failed"));
		diag_clear(&d);
		ck_assert_int_eq(be_run_launch(&r, 1, &d), -1);   /* refused after a failure */
		diag_clear(&d);
		be_run_close(&r);
		ck_assert_msg(strcmp(mock.log, t[i].log) == 0, "case %zu: %s", i, mock.log);
		/* be_run keeps no output of a run that failed */
		mock_reset(t[i].at, t[i].code, t[i].env);
		ck_assert_int_eq(be_run(&mock_backend, k, NULL, in, out, NULL, &d), -1);
		diag_clear(&d);
	}
	BeRun r;
	be_run_open(&r, &mock_backend, k);
	ck_assert_int_eq(be_run_fail(&r, &d), BE_FAIL_NONE);
	mock_prog_free(&p);
}
END_TEST

/* be_run_time's batches: a warm-up and a sizing run alone, then the batches; batches as
 * long as asked (a huge batch_s: BE_MAX_RUNS runs each); a slow run cuts them to one,
 * the sizing run itself. */
START_TEST(driver_timing)
{
	MockProg p;
	mock_prog(&p);
	Diag d = {0};
	const Kernels *k = p.k;
	const HostTensor *in = p.in;
	struct {
		BeTimeOpts o;
		bool slow;
		int batches, runs, nlaunch;
	} t[] = {
		{{4, 0, 0}, false, 4, 1, 6},
		{{3, 1e9, 0}, false, 3, BE_MAX_RUNS, 5},
		{{0, 0, 0}, false, 1, 1, 3},
		{{5, 1e9, 1e-5}, true, 1, 1, 2},
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++) {
		BeRun r;
		BeTimes bt;
		mock_reset(BE_ST_OPEN, 0, false);
		mock.slow = t[i].slow;
		be_run_open(&r, &mock_backend, k);
		ck_assert_int_eq(be_run_ready(&r, NULL, in, &d) || be_run_time(&r, &t[i].o, &bt, &d),
				 0);
		ck_assert_int_eq(bt.batches, t[i].batches);
		ck_assert_int_eq(bt.runs, t[i].runs);
		ck_assert_int_eq(mock.nlaunch, t[i].nlaunch);
		ck_assert_int_eq(mock.launches[0], 1);
		ck_assert_int_eq(mock.launches[1], 1);
		for (int j = 2; j < mock.nlaunch; j++)
			ck_assert_int_eq(mock.launches[j], t[i].runs);
		ck_assert(bt.run_s >= 0 && bt.one_s >= 0 && bt.warm_s >= 0);
		if (t[i].slow)
			ck_assert(bt.run_s >= 0.003);
		be_run_close(&r);
	}
	mock_prog_free(&p);
}
END_TEST

START_TEST(back_to_back)
{
	bt_back_to_back("c");
}
END_TEST

/* The text of tests/ops/FILE (every op of ops.def) as backend b emits it. */
static char *emit_ops(const char *b, const char *file)
{
	char path[256];
	snprintf(path, sizeof path, "tests/ops/%s", file);
	Diag d = {0};
	Graph *g = ir_parse_file(path, NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s: %s", path, d.msg);
	Schedule s;
	sched_default(g, &s);
	char *src = bt_emit_of(be_find(b), g, &s);
	sched_free(&s);
	ir_free(g);
	return src;
}

/* Every function a temporary of src calls whose name is a helper's (<stem>_f, _d, _i or
 * _ck) is defined in src: at the start of a line, after its return type. Returns the
 * number of helper calls seen. */
static int helpers_defined(const char *b, const char *src)
{
	int calls = 0;
	for (const char *p = src; (p = strstr(p, " = ")) != NULL; p += 3) {
		const char *n = p + 3, *e = n;
		while ((*e >= 'a' && *e <= 'z') || (*e >= '0' && *e <= '9') || *e == '_')
			e++;
		size_t len = (size_t)(e - n);
		if (*e != '(' || len < 3 || len > 40)
			continue;
		bool helper = (len > 2 && n[len - 2] == '_' && strchr("fdi", n[len - 1])) ||
			      (len > 3 && memcmp(n + len - 3, "_ck", 3) == 0);
		if (!helper)
			continue;
		calls++;
		char name[48];
		snprintf(name, sizeof name, " %.*s(", (int)len, n);
		bool found = false;
		for (const char *q = src; !found && (q = strstr(q, name)) != NULL; q++) {
			const char *l = q;
			while (l > src && l[-1] != '\n')
				l--;
			found = *l != '\t' && *l != ' ' && memchr(l, '=', (size_t)(q - l)) == NULL;
		}
		ck_assert_msg(found, "%s: %s is called but not defined", b, name);
	}
	return calls;
}

/* Each language's spelling of the ops (compiler/ops.def's C-family base, the overrides in
 * each emitter): the overrides show, and every helper a program calls is in it (for
 * vulkan: vk_lib_need finds the helper of every spelling). */
START_TEST(op_spellings)
{
	static const struct {
		const char *b, *file;
		const char *has[8], *lacks[3];
	} cases[] = {
		{"c", "all_f32.tg", {"expf(", "fabsf(", "rsqrt_f(", "sigmoid_f(", "max_f(", "abs_i(", " != t"}, {"rsqrtf("}},
		{"c", "all_f64.tg", {"= exp(", "fabs(", "rsqrt_d(", "sigmoid_d(", "min_d(", "fma("}, {"= expf("}},
		{"cuda", "all_f32.tg", {"expf(", "rsqrtf(", "sigmoid_f(", "max_f(", "erff("}, {"rsqrt_f("}},
		{"cuda", "all_f64.tg", {"= rsqrt(", "= exp(", "pow("}, {"rsqrt_d("}},
		{"opencl", "all_f32.tg", {"rsqrt(", "exp(", "fabs(", "sigmoid_f("}, {"expf(", "rsqrt_f("}},
		{"opencl", "all_f64.tg", {"rsqrt(", "log1p(", "max_d("}, {"rsqrt_d("}},
		{"vulkan", "all_f32.tg", {"inversesqrt(", "expm1_f(", "= exp(", "abs(", "(!(", "tanh_f(", "pow_f("}, {"fabs(", " != t"}},
		{"vulkan", "all_f64.tg", {"exp_d(", "sin_d(", "cos_d(", "erf_d(", "inversesqrt(", "= sqrt(", "= fma("}, {"= exp(", "= sin("}},
		{"wgsl", "all_f32_wgsl.tg", {"div_f(", "select(", "exp_f(", "rsqrt_f(", "(!(", "= abs(", "= max("}, {" / t", "= exp("}},
	};
	for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
		char *src = emit_ops(cases[c].b, cases[c].file);
		for (int i = 0; i < 8 && cases[c].has[i]; i++)
			ck_assert_msg(strstr(src, cases[c].has[i]), "%s %s: no %s", cases[c].b, cases[c].file,
				      cases[c].has[i]);
		for (int i = 0; i < 3 && cases[c].lacks[i]; i++)
			ck_assert_msg(!strstr(src, cases[c].lacks[i]), "%s %s: %s", cases[c].b, cases[c].file,
				      cases[c].lacks[i]);
		ck_assert_int_gt(helpers_defined(cases[c].b, src), 3);
		free(src);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lower");
	TCase *tc = tcase_create("c");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, matmul_exact);
	tcase_add_test(tc, matmul_rough);
	tcase_add_test(tc, order_semantics);
	tcase_add_test(tc, softmax_schedules);
	tcase_add_test(tc, online_attention);
	tcase_add_test(tc, online_welford);
	tcase_add_test(tc, online_empty_row);
	tcase_add_test(tc, inline_transpose);
	tcase_add_test(tc, pad_window);
	tcase_add_test(tc, triangular);
	tcase_add_test(tc, argmax_topk);
	tcase_add_test(tc, topk_short_range);
	tcase_add_test(tc, gather);
	tcase_add_test(tc, gather_inline_index);
	tcase_add_test(tc, gather_out_of_range);
	tcase_add_test(tc, gather_guarded);
	tcase_add_test(tc, half_storage);
	tcase_add_test(tc, scalar_ops);
	tcase_add_test(tc, threads_agree);
	tcase_add_test(tc, emit_deterministic);
	tcase_add_test(tc, cache_hit);
	tcase_add_test(tc, faults_are_visible);
	tcase_add_test(tc, bad_schedules);
	tcase_add_test(tc, bad_schedule_text);
	tcase_add_test(tc, sampler);
	tcase_add_test(tc, sampled_run);
	tcase_add_test(tc, rewrite_metamorphic);
	tcase_add_test(tc, rewrite_examples);
	tcase_add_test(tc, rewrite_keeps_schedules);
	tcase_add_test(tc, coverage_points);
	tcase_add_test(tc, coverage_table);
	tcase_add_test(tc, agrees_with_emulator);
	tcase_add_test(tc, regress_files);
	tcase_add_test(tc, driver_sequence);
	tcase_add_test(tc, driver_failures);
	tcase_add_test(tc, driver_timing);
	tcase_add_test(tc, back_to_back);
	tcase_add_test(tc, op_spellings);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
