/* tests/test_sched.c: the default formats of schedules (graph-format.md section 7, version
 * 2; compiler/sched/sched.c says what reading an f64 value means): the formats the rule gives
 * each definition of hand-made graphs, with and without directives that stop or start it;
 * schedule texts that read back to the same schedule where the default depends on other
 * directives; and graphs written in f64 computed in f64 end to end: `log` of 1e-300 and a
 * sum of 1e300 terms on the c, opencl and vulkan backends and in the emulator, within their
 * budgets (in version 1's f32 default they gave -inf and inf), and wgsl declining them.
 * Compiled programs are cached in $TMPDIR/assay-test-sched.
 */
#include <math.h>
#include "testutil.h"
#include "../compiler/compiler.h"
#include "../interp/interp.h"
#include "../oracles/oracles.h"

static inline const char *cache_dir(void) { return tu_cache_dir("sched"); }

/* ------------------------------------------------------------ formats */

/* The expected formats of one definition: its op, accum and store (0: not checked). */
typedef struct {
	const char *def;
	Dtype op, accum, store;
} Want;

enum { MAXWANT = 8 };

typedef struct {
	const char *what, *src, *sched;
	Want want[MAXWANT];
} FormatCase;

#define F64 DT_F64
#define F32 DT_F32
#define F16 DT_F16
#define I32 DT_I32

static const FormatCase formats[] = {
	{"a graph written in f64 is computed in f64",
	 "size N = 4\ninput x : f64[N]\ny[i:N] = log(x[i])\ns[] = sum(i:N) y[i]\n"
	 "output y : f64, s : f64\n", "",
	 {{"y", F64, F64, F64}, {"s", F64, F64, F64}}},
	{"mixed: only what reads an f64 value, directly or through a definition, is f64",
	 "size N = 4\ninput x : f64[N]\ninput z : f32[N]\n"
	 "a[i:N] = x[i] * 2\nb[i:N] = z[i] + 1\nt[] = sum(i:N) b[i]\n"
	 "c[i:N] = a[i] + b[i]\nd[i:N] = b[i] / t[]\n"
	 "output c : f32, d : f32\n", "",
	 {{"a", F64, F64, F64}, {"b", F32, F32, F32}, {"t", F32, F32, F32},
	  {"c", F64, F64, F64}, {"d", F32, F32, F32}}},
	{"store a : f32 stops the propagation (a still computes in f64)",
	 "size N = 4\ninput x : f64[N]\ninput z : f32[N]\n"
	 "a[i:N] = x[i] * 2\nc[i:N] = a[i] + z[i]\ne[] = sum(i:N) c[i]\n"
	 "output e : f64\n", "store a : f32\n",
	 {{"a", F64, F64, F32}, {"c", F32, F32, F32}, {"e", F32, F32, F32}}},
	{"store a : f16 stops it too",
	 "size N = 4\ninput x : f64[N]\na[i:N] = x[i] * 2\nc[i:N] = a[i] + 1\n"
	 "output c : f32\n", "store a : f16\n",
	 {{"a", F64, F64, F16}, {"c", F32, F32, F32}}},
	{"store b : f64 of an f32 definition makes its readers f64",
	 "size N = 4\ninput z : f32[N]\nb[i:N] = z[i] + 1\nc[i:N] = b[i] * 3\n"
	 "output c : f32\n", "store b : f64\n",
	 {{"b", F64, F64, F64}, {"c", F64, F64, F64}}},
	{"an explicit accum on an f64 reduction leaves its store at the default",
	 "size N = 4\ninput x : f64[N]\ns[] = sum(i:N) x[i]\noutput s : f64\n", "accum s : f32\n",
	 {{"s", F32, F32, F64}}},
	{"16-bit tensors compute in f32",
	 "size N = 4\ninput h : f16[N]\ninput w : bf16[N]\n"
	 "a[i:N] = exp(h[i]) * w[i]\ns[] = sum(i:N) a[i]\noutput s : f16\n", "",
	 {{"a", F32, F32, F32}, {"s", F32, F32, F32}}},
	{"an f64(...) cast reads an f64 value; literals and indices do not",
	 "size N = 4\ninput z : f32[N]\na[i:N] = f64(z[i]) * 2\nb[i:N] = z[i] * 1e-300 + f32(i)\n"
	 "output a : f32, b : f32\n", "",
	 {{"a", F64, F64, F64}, {"b", F32, F32, F32}}},
	{"an f64 read under an f32(...) cast, as a condition or as a padding still counts",
	 "size N = 4\ninput x : f64[N]\ninput z : f32[N]\n"
	 "a[i:N] = f32(x[i]) * z[i]\nb[i:N] = x[i] > 0 ? z[i] : 1\nc[i:N] = z[i + 1] ?? x[0]\n"
	 "output a : f32, b : f32, c : f32\n", "",
	 {{"a", F64, F64, F64}, {"b", F64, F64, F64}, {"c", F64, F64, F64}}},
	{"an inlined definition has its op format, for itself and its readers",
	 "size N = 4\ninput x : f64[N]\ninput z : f32[N]\n"
	 "a[i:N] = x[i] * 2\nb[i:N] = z[i] * 2\nc[i:N] = a[i] + 1\nd[i:N] = b[i] + 1\n"
	 "output c : f32, d : f32\n", "inline a\ninline b\n",
	 {{"a", F64, F64, F64}, {"b", F32, F32, F32}, {"c", F64, F64, F64},
	  {"d", F32, F32, F32}}},
	{"integer results are not f64 values, whatever their bodies read",
	 "size N = 4, M = 3\ninput x : f64[N, M]\ninput w : f32[M]\ninput k : i32[N]\n"
	 "am[i:N] = argmax(j:M) x[i, j]\ng[i:N] = w[am[i]] * 2\n"
	 "n[i:N] = k[i] + 1\nh[i:N] = w[n[i]] * 2 + f32(n[i])\n"
	 "output g : f32, h : f32\n", "",
	 {{"am", F64, 0, I32}, {"g", F32, F32, F32}, {"h", F32, F32, F32}}},
	{"topk of f64 terms: its values are f64 values, its indices are not",
	 "size N = 2, M = 5, K = 2\ninput x : f64[N, M]\ninput w : f32[M]\n"
	 "v[i:N, r:K], ix[i:N, r:K] = topk(j:M) x[i, j]\n"
	 "a[i:N, r:K] = v[i, r] + 1\nb[i:N, r:K] = w[ix[i, r]] + 1\n"
	 "output a : f32, b : f32\n", "",
	 {{"v", F64, F64, F64}, {"a", F64, F64, F64}, {"b", F32, F32, F32}}},
};

static int def_of(const Graph *g, const char *name)
{
	int d = ir_find_def(g, name);
	ck_assert_msg(d >= 0, "no definition %s", name);
	return d;
}

/* g's schedule from directive text ("" for none). */
static void build(Graph *g, const char *text, Schedule *s)
{
	Diag d = {0};
	if (*text)
		ck_assert_msg(ir_parse_schedule(g, text, strlen(text), "t.sched", &d) == 0, "%s",
			      d.msg);
	ck_assert_msg(sched_build(g, s, &d) == 0, "%s", d.msg);
}

START_TEST(default_formats)
{
	const FormatCase *c = &formats[_i];
	Graph *g = tu_parse(c->src);
	Schedule s;
	build(g, c->sched, &s);
	for (int k = 0; k < MAXWANT && c->want[k].def; k++) {
		const Want *w = &c->want[k];
		const DefSched *x = &s.defs[def_of(g, w->def)];
		ck_assert_msg(x->op == w->op && (!w->accum || x->accum == w->accum) &&
			      x->store == w->store,
			      "%s: %s has op %s accum %s store %s, want %s %s %s", c->what, w->def,
			      dt_name(x->op), dt_name(x->accum), dt_name(x->store), dt_name(w->op),
			      w->accum ? dt_name(w->accum) : "-", dt_name(w->store));
	}
	/* the text states only the directives given, and reads back to the same formats */
	char *text = sched_text(g, &s);
	ck_assert_msg(strcmp(text, c->sched) == 0, "%s: text\n%s\nwant\n%s", c->what, text,
		      c->sched);
	free(text);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* sched_default is the schedule of no directive, and prints as none. */
START_TEST(default_is_no_directive)
{
	for (size_t i = 0; i < ARRAY_LEN(formats); i++) {
		Graph *g = tu_parse(formats[i].src);
		Schedule a, b;
		sched_default(g, &a);
		build(g, "", &b);
		for (int d = 0; d < g->ndefs; d++)
			ck_assert(a.defs[d].op == b.defs[d].op && a.defs[d].accum == b.defs[d].accum &&
				  a.defs[d].store == b.defs[d].store);
		char *t = sched_text(g, &a);
		ck_assert_str_eq(t, "");
		free(t);
		sched_free(&a);
		sched_free(&b);
		ir_free(g);
	}
}
END_TEST

/* ------------------------------------------------------------ texts */

static const char chain_src[] =
	"size N = 6, M = 5\ninput x : f64[N, M]\ninput z : f32[N, M]\ninput h : f16[M]\n"
	"a[i:N, j:M] = x[i, j] * z[i, j]\n"
	"b[i:N, j:M] = exp(z[i, j]) * h[j]\n"
	"m[i:N] = max(j:M) a[i, j]\n"
	"e[i:N, j:M] = exp(a[i, j] - m[i]) + b[i, j]\n"
	"s[i:N] = sum(j:M) e[i, j]\n"
	"y[i:N, j:M] = e[i, j] / s[i]\n"
	"t[i:N] = sum(j:M) b[i, j]\n"
	"output y : f32, t : f32\n";

/* A directive that cuts the propagation makes the readers' default f32: an f64 reader
 * then needs its own directive in the text, or the text would read back as f32. */
START_TEST(text_states_what_differs_from_the_propagated_default)
{
	Graph *g = tu_parse(chain_src);
	Schedule s, r;
	build(g, "store a : f32\nstore e : f64\n", &s);
	ck_assert_int_eq(s.defs[def_of(g, "m")].store, DT_F32);     /* reads a: f32 now */
	ck_assert_int_eq(s.defs[def_of(g, "e")].op, DT_F64);        /* stored f64: f64 */
	ck_assert_int_eq(s.defs[def_of(g, "s")].accum, DT_F64);     /* reads e: f64 */
	ck_assert_int_eq(s.defs[def_of(g, "y")].store, DT_F64);
	ck_assert_int_eq(s.defs[def_of(g, "t")].store, DT_F32);
	/* by hand on the default: a stored in f32, m left in f64. m's default is now f32 (it
	 * reads a), so m needs directives to read back as f64; e reads m (f64), so it needs
	 * none. A text against the directive-free default would say only `store a : f32`. */
	sched_default(g, &r);
	ck_assert_int_eq(r.defs[def_of(g, "m")].store, DT_F64);
	r.defs[def_of(g, "a")].store = DT_F32;
	char *t = sched_text(g, &r);
	ck_assert_str_eq(t, "store a : f32\nstore m : f64\naccum m : f64\n");
	Schedule r2;
	build(g, t, &r2);
	ck_assert(tu_sched_equal(g, &r, &r2));
	sched_free(&r2);
	free(t);
	/* and s's text reads back to s */
	t = sched_text(g, &s);
	ck_assert_str_eq(t, "store a : f32\nstore e : f64\n");
	Schedule s2;
	build(g, t, &s2);
	ck_assert(tu_sched_equal(g, &s, &s2));
	free(t);
	sched_free(&s);
	sched_free(&s2);
	sched_free(&r);
	ir_free(g);
}
END_TEST

/* Sampled schedules of a graph where f64 reaches some definitions and not others read
 * back to themselves; over many seeds the definitions f64 reaches only through other
 * definitions are seen in both formats, and f64 definitions get f32 stores and
 * accumulations (a drawn format is never the default). */
START_TEST(sampled_texts_read_back)
{
	Graph *g = tu_parse(chain_src);
	int f64s[16] = {0}, f32s[16] = {0}, a32 = 0, m32 = 0;
	int a = def_of(g, "a"), m = def_of(g, "m");
	for (uint64_t seed = 0; seed < 300; seed++) {
		Schedule s, s2;
		sched_sample(g, seed, &s);
		char *text = sched_text(g, &s);
		Diag d = {0};
		ck_assert_msg(ir_parse_schedule(g, text, strlen(text), "sampled", &d) == 0 &&
			      sched_build(g, &s2, &d) == 0, "seed %llu: %s\n%s",
			      (unsigned long long)seed, text, d.msg ? d.msg : "");
		ck_assert_msg(tu_sched_equal(g, &s, &s2), "seed %llu: text does not read back:\n%s",
			      (unsigned long long)seed, text);
		/* drawn formats are never the default: f64 definitions get f32 ones */
		a32 += s.defs[a].store == DT_F32;
		m32 += s.defs[m].accum == DT_F32 && s.defs[a].store == DT_F64;
		for (int k = 0; k < g->ndefs && k < 16; k++) {
			f64s[k] += s.defs[k].op == DT_F64;
			f32s[k] += s.defs[k].op == DT_F32;
		}
		free(text);
		sched_free(&s);
		sched_free(&s2);
	}
	/* a, a plain definition reading an f64 input, computes in f64 whatever its store
	 * (no directive sets a plain definition's arithmetic); every other one is seen in both */
	for (int k = 0; k < g->ndefs; k++)
		ck_assert_msg(f64s[k] > 0 && (k == a ? f32s[k] == 0 : f32s[k] > 0),
			      "%s: op f64 %d times, f32 %d times", g->tensors[g->defs[k].out[0]].name,
			      f64s[k], f32s[k]);
	ck_assert_msg(a32 > 0 && m32 > 0, "store a : f32 %d times, accum m : f32 under an f64 a "
		      "%d times", a32, m32);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ end to end */

static const char log_src[] =
	"size N = 4\ninput x : f64[N]\ny[i:N] = log(x[i])\noutput y : f64\n";
static const char sum_src[] =
	"size N = 8\ninput x : f64[N]\ns[] = sum(i:N) x[i]\noutput s : f64\n";

static HostTensor *inputs_of(const Graph *g, const double *v)
{
	HostTensor *in = tu_new_inputs(g);
	for (int64_t i = 0; i < in[0].n; i++)
		ht_set(&in[0], i, v[i]);
	return in;
}

/* Output 0 of g under its default schedule on backend name (NULL: in the emulator), and
 * its budget there; false when the backend cannot run here (said on stderr). */
static bool run_default(const char *name, const Graph *g, const HostTensor *in,
			HostTensor *out, HostTensor *bud)
{
	Schedule s;
	sched_default(g, &s);
	Diag d = {0};
	if (!name) {
		OrcEmu e;
		orc_emu_config(g, &s, &e);
		MpOpts o = {.threads = 1};
		ck_assert_msg(mp_emulate(g, in, &e.cfg, &o, out, NULL, &d) == 0, "%s", d.msg);
		orc_emu_free(&e);
	} else {
		const Backend *b = be_find(name);
		char why[512] = "";
		ck_assert(b != NULL);
		if (b->available(why, sizeof why) != 0) {
			/* the c backend is always there: its absence is a failure */
			ck_assert_msg(strcmp(name, "c") != 0, "the c backend is unavailable: %s", why);
			fprintf(stderr, "SKIP: the %s backend is unavailable here (%s)\n", name, why);
			sched_free(&s);
			return false;
		}
		Kernels *k = kir_lower(g, &s, NULL, &d);
		ck_assert_msg(k != NULL, "%s", d.msg);
		BeOpts o = {1, cache_dir()};
		ck_assert_msg(be_run(b, k, &o, in, out, NULL, &d) == 0, "%s: %s", name, d.msg);
		kir_free(k);
	}
	ck_assert_msg(orc_budget(g, &s, name ? name : "emul", in, bud, &d) == 0, "%s", d.msg);
	sched_free(&s);
	return true;
}

/* The exact values of output 0. */
static HostTensor exact0(const Graph *g, const HostTensor *in)
{
	HostTensor out[1];
	Diag d = {0};
	MpOpts o = {.threads = 1};
	ck_assert_msg(mp_exact(g, in, &o, out, NULL, NULL, &d) == 0, "%s", d.msg);
	return out[0];
}

static const char *const where[] = {NULL, "c", "opencl", "vulkan"};

/* Output 0 of g under its default schedule on inputs in, in the emulator and on each
 * backend of `where` that runs here: finite where the exact value is, within rel of it and
 * within the budget; the first nclaim of them must also have a finite budget (a claim). */
static void expect_everywhere(const Graph *g, const HostTensor *in, double rel, size_t nclaim)
{
	HostTensor want = exact0(g, in);
	for (size_t w = 0; w < ARRAY_LEN(where); w++) {
		HostTensor out[1], bud[1];
		if (!run_default(where[w], g, in, out, bud))
			continue;
		const char *n = where[w] ? where[w] : "emulator";
		for (int64_t i = 0; i < want.n; i++) {
			double a = ht_get(&out[0], i), x = ht_get(&want, i), b = ht_get(&bud[0], i);
			ck_assert_msg(isfinite(a), "%s: [%lld] = %g, want %.17g", n, (long long)i, a, x);
			ck_assert_msg(fabs(a - x) <= rel * fabs(x), "%s: [%lld] = %.17g, want %.17g", n,
				      (long long)i, a, x);
			ck_assert_msg(isinf(b) || fabs(a - x) <= b, "%s: [%lld] = %.17g, want %.17g, "
				      "budget %g", n, (long long)i, a, x, b);
			ck_assert_msg(w >= nclaim || isfinite(b), "%s: [%lld]: no claim", n,
				      (long long)i);
		}
		ht_free(&out[0]);
		ht_free(&bud[0]);
	}
	ht_free(&want);
}

/* log of f64 inputs below f32's range, which f32 arithmetic would read as 0 (-inf): the
 * emulator, c (glibc, 1 ulp) and opencl (3 ulps) claim a finite budget; vulkan's f64 log
 * is the backend's own routine, with no allowance row (its budget is +inf: no claim) */
START_TEST(f64_log_of_tiny)
{
	Graph *g = tu_parse(log_src);
	HostTensor *in = inputs_of(g, (double[]){1e-300, 0x1p-1074, 1e-40, 1e300});
	HostTensor want = exact0(g, in);
	ck_assert(fabs(ht_get(&want, 0) - -690.77552789821368) < 1e-12);
	ht_free(&want);
	expect_everywhere(g, in, 1e-14, 3);
	tu_free_tensors(in, 1);
	ir_free(g);
}
END_TEST

/* sums of 1e300-sized terms, whose partial sums leave f32's range: finite claims
 * everywhere */
START_TEST(f64_sum_of_large)
{
	Graph *g = tu_parse(sum_src);
	const double v[][8] = {
		{1e300, 1e300, 1e300, 1e300, 1e300, 1e300, 1e300, 1e300},
		{1e300, 3e300, -2e300, 1e-300, 5e299, -1e300, 7e300, 1},
	};
	for (size_t c = 0; c < ARRAY_LEN(v); c++) {
		HostTensor *in = inputs_of(g, v[c]);
		expect_everywhere(g, in, 1e-15, ARRAY_LEN(where));
		tu_free_tensors(in, 1);
	}
	ir_free(g);
}
END_TEST

/* wgsl has no f64: a graph whose default is f64 only through a cast is declined (code 2,
 * the reason naming f64), as an explicit f64 schedule is */
START_TEST(wgsl_declines_f64_defaults)
{
	Graph *g = tu_parse("size N = 4\ninput z : f32[N]\ny[i:N] = log(f64(z[i]) * 1e-300)\n"
			    "output y : f32\n");
	Schedule s;
	sched_default(g, &s);
	ck_assert_int_eq(s.defs[0].store, DT_F64);
	Diag d = {0};
	Kernels *k = kir_lower(g, &s, NULL, &d);
	ck_assert_msg(k != NULL, "%s", d.msg);
	const Backend *b = be_find("wgsl");
	ck_assert(b != NULL);
	char *src = b->emit(k, &d);
	ck_assert_msg(src == NULL && d.code == 2 && strstr(d.msg, "f64") &&
		      strstr(d.msg, "WGSL has no f64"), "%s", src ? src : d.msg);
	diag_clear(&d);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ online sets */

/* `online` sets of compiler/sched/online.c: the rule each recognised set gets, and the
 * error (its line and column, exit 2, the missing pattern) of each set with no one-pass
 * form. */
static const struct {
	const char *src, *want;   /* want: a rule's name, or the start of the error */
} onlines[] = {
	{"size N = 8\ninput x : f32[N]\nm[] = max(j:N) x[j]\ne[j:N] = exp(x[j] - m[])\n"
	 "l[] = sum(j:N) e[j]\ny[j:N] = e[j] / l[]\noutput y\nschedule\nonline m, l\n",
	 "online-softmax"},
	{"size N = 8\ninput x : f32[N]\nm[] = max(j:N) x[j]\n"
	 "l[] = sum(j:N) exp((x[j] - m[]) * rsqrt(N))\noutput l\nschedule\nonline l, m\n",
	 "online-softmax"},
	{"size N = 8, D = 4\ninput x : f32[N]\ninput v : f32[N, D]\nm[] = max(j:N) x[j]\n"
	 "p[j:N] = exp(x[j] - m[])\nl[] = sum(j:N) p[j]\no[d:D] = sum(j:N) p[j] * v[j, d] / l[]\n"
	 "output o\nschedule\nonline m, l, o\n", "online-attention"},
	{"size N = 8\ninput x : f32[N]\nz[] = logsumexp(j:N) x[j]\noutput z\nschedule\nonline z\n",
	 "online-logsumexp"},
	{"size T = 2, N = 8\ninput x : f32[T, N]\nmu[t:T] = sum(j:N) x[t, j] / N\n"
	 "var[t:T] = sum(j:N) (x[t, j] - mu[t]) * (x[t, j] - mu[t]) / N\noutput var\n"
	 "schedule\nonline mu, var\n", "welford"},
	/* the mean's / 2^k as rw_compile leaves it (x * 2^-k, the same value): the worker
	 * rewrites before it builds the schedule, so this form must match too */
	{"size T = 2, N = 8\ninput x : f32[T, N]\nmu[t:T] = sum(j:N) x[t, j] * 0x1p-3\n"
	 "var[t:T] = sum(j:N) (x[t, j] - mu[t]) * (x[t, j] - mu[t]) * 0x1p-3\noutput var\n"
	 "schedule\nonline mu, var\n", "welford"},
	/* written so by hand beyond the rewrite's 2^14: the same mean */
	{"size T = 2, N = 1048576\ninput x : f32[T, N]\nmu[t:T] = sum(j:N) x[t, j] * 0x1p-20\n"
	 "var[t:T] = sum(j:N) (x[t, j] - mu[t]) * (x[t, j] - mu[t]) / N\noutput var\n"
	 "schedule\nonline mu, var\n", "welford"},
	/* no one-pass form */
	{"size N = 8\ninput x : f32[N]\nm[] = max(j:N) x[j]\nl[] = sum(j:N) exp(x[j] - m[] + 1)\n"
	 "output l\nschedule\nonline m, l\n",
	 "t.tg:7:8: error: online m, ...: no one-pass form: the terms of 'l' are not exp(x - m)"},
	{"size N = 8\ninput x : f32[N]\nm[] = max(j:N) x[j]\n"
	 "l[] = sum(j:N) exp((x[j] - m[]) * -2)\noutput l\nschedule\nonline m, l\n",
	 "t.tg:7:8: error: online m, ...: no one-pass form: the terms of 'l'"},
	{"size N = 8\ninput x : f32[N]\nm[] = max(j:N) x[j]\nl[] = sum(j: 0..4) exp(x[j] - m[])\n"
	 "output l\nschedule\nonline m, l\n",
	 "t.tg:7:8: error: online m, ...: no one-pass form: 'm' and 'l' reduce over different ranges"},
	{"size N = 8, D = 4\ninput x : f32[N]\ninput v : f32[N, D]\nm[] = max(j:N) x[j]\n"
	 "p[j:N] = exp(x[j] - m[])\nl[] = sum(j:N) p[j]\no[d:D] = sum(j:N) p[j] * v[j, d] * m[] / l[]\n"
	 "output o\nschedule\nonline m, l, o\n",
	 "t.tg:10:8: error: online m, ...: no one-pass form: the numerator of 'o'"},
	{"size T = 2, N = 8\ninput x : f32[T, N]\nmu[t:T] = sum(j:N) x[t, j] / 7\n"
	 "var[t:T] = sum(j:N) (x[t, j] - mu[t]) * (x[t, j] - mu[t]) / N\noutput var\n"
	 "schedule\nonline mu, var\n",
	 "t.tg:7:8: error: online mu, ...: no one-pass form: 'mu' is not a mean"},
	/* a product by other than 1/N exactly: 2^-2 for N = 8, and 1/3 rounded (times 3 it
	 * rounds to 1 in double, but it is not a third) */
	{"size T = 2, N = 8\ninput x : f32[T, N]\nmu[t:T] = sum(j:N) x[t, j] * 0x1p-2\n"
	 "var[t:T] = sum(j:N) (x[t, j] - mu[t]) * (x[t, j] - mu[t]) * 0x1p-3\noutput var\n"
	 "schedule\nonline mu, var\n",
	 "t.tg:7:8: error: online mu, ...: no one-pass form: 'mu' is not a mean"},
	{"size T = 2, N = 3\ninput x : f32[T, N]\nmu[t:T] = sum(j:N) x[t, j] * 0x1.5555555555555p-2\n"
	 "var[t:T] = sum(j:N) (x[t, j] - mu[t]) * (x[t, j] - mu[t]) / N\noutput var\n"
	 "schedule\nonline mu, var\n",
	 "t.tg:7:8: error: online mu, ...: no one-pass form: 'mu' is not a mean"},
	{"size N = 8\ninput x : f32[N]\nm[] = max(j:N) x[j]\noutput m\nschedule\nonline m\n",
	 "t.tg:6:8: error: online m: no one-pass form: a set of one needs a logsumexp"},
	{"size N = 8\ninput x : f32[N]\nm[] = max(j:N) x[j]\nl[] = sum(j:N) exp(x[j] - m[])\n"
	 "output l\nschedule\nonline m, l\nsplit m : j=2\n",
	 "t.tg:8:7: error: split: the members of an online set are split alike ('m' and 'l' differ)"},
};

START_TEST(online_sets)
{
	Diag d = {0};
	Graph *g = ir_parse(onlines[_i].src, strlen(onlines[_i].src), "t.tg", NULL, 0, &d);
	ck_assert_msg(g, "case %d: %s", _i, d.msg);
	Schedule s;
	int rc = sched_build(g, &s, &d);
	const char *want = onlines[_i].want;
	if (strncmp(want, "t.tg", 4)) {
		ck_assert_msg(rc == 0, "case %d: %s", _i, d.msg);
		int last = -1;
		for (int k = 0; k < g->ndefs; k++)
			if (s.defs[k].online)
				last = k;
		OnPlan p;
		ck_assert_int_eq(on_plan(g, &s, last, &p), 0);
		ck_assert_str_eq(on_rules[p.rule].name, want);
		char *text = sched_text(g, &s);
		ck_assert_msg(strstr(text, "online "), "case %d: %s", _i, text);
		free(text);
		sched_free(&s);
	} else {
		ck_assert_msg(rc == -1 && d.code == 2 && strncmp(d.msg, want, strlen(want)) == 0,
			      "case %d:\n got: %s\nwant: %s", _i, d.msg, want);
		diag_clear(&d);
	}
	ir_free(g);
}
END_TEST

/* `mma y [: m=, n=, k=]` (graph-format.md 7a, docs/mma.md): what it takes, what it refuses
 * with the reason, and its text reading back. want: "" to build, else the error's start. */
static const struct {
	const char *src, *want;
} mmas[] = {
#define MM_HEAD "size M = 32, N = 16, K = 64\ninput a : bf16[M, K]\ninput b : bf16[K, N]\n" \
	"input h : f16[M, K]\ninput x : f32[K, N]\n"
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\noutput y : f32\nschedule\nmma y\n", ""},
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\noutput y : f32\nschedule\n"
	 "mma y : m=64, n=128, k=16\n", ""},
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] * bf16(x[k, j])\noutput y : f32\nschedule\nmma y\n", ""},
	{MM_HEAD "c[k:K, j:N] = x[k, j] * 2\ny[i:M, j:N] = sum(k:K) a[i, k] * c[k, j]\n"
	 "output y : f32\nschedule\nstore c : bf16\nmma y\n", ""},
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] * x[k, j]\noutput y : f32\nschedule\nmma y\n",
	 "t.tg:9:5: error: mma of 'y' does not apply: the second factor"},
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] * h[i, k]\noutput y : f32\nschedule\nmma y\n",
	 "t.tg:9:5: error: mma of 'y' does not apply: its factors are bf16 and f16"},
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] + b[k, j]\noutput y : f32\nschedule\nmma y\n",
	 "t.tg:9:5: error: mma of 'y' does not apply: its terms are not a product"},
	{MM_HEAD "y[i:M, j:N] = max(k:K) a[i, k] * b[k, j]\noutput y : f32\nschedule\nmma y\n",
	 "t.tg:9:5: error: mma of 'y' does not apply: the matrix unit computes a real sum"},
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\noutput y : f32\nschedule\nmma y\n"
	 "accum y : bf16\n", "t.tg:9:5: error: mma of 'y': the unit accumulates in f32"},
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\noutput y : f32\nschedule\nmma y\n"
	 "split y : k=2\n", "t.tg:9:5: error: mma of 'y' with a split: not supported yet"},
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\noutput y : f32\nschedule\nmma y\n"
	 "order y : pairwise\n", "t.tg:9:5: error: mma of 'y': the unit has its own order"},
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\noutput y : f32\nschedule\n"
	 "mma y : m=32, n=8\n", "t.tg:9:5: error: mma of 'y': no instruction has the tile m=32"},
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\noutput y : f32\nschedule\n"
	 "mma y : k=8\n", "t.tg:9:5: error: mma of 'y': k=8"},
	{MM_HEAD "y[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\noutput y : f32\nschedule\n"
	 "mma y : q=8\n", "t.tg:9:9: error: mma takes the instruction tile m, n, k, not 'q'"},
	{MM_HEAD "y[i:M, j:N] = a[i, 0] * b[0, j]\noutput y : f32\nschedule\nmma y\n",
	 "t.tg:9:5: error: mma of 'y', which is not a reduction"},
#undef MM_HEAD
};

START_TEST(mma_directive)
{
	Diag d = {0};
	Graph *g = ir_parse(mmas[_i].src, strlen(mmas[_i].src), "t.tg", NULL, 0, &d);
	const char *want = mmas[_i].want;
	if (!g) {
		ck_assert_msg(*want && strncmp(d.msg, want, strlen(want)) == 0,
			      "case %d:\n got: %s\nwant: %s", _i, d.msg, want);
		diag_clear(&d);
		return;
	}
	Schedule s;
	int rc = sched_build(g, &s, &d);
	if (!*want) {
		ck_assert_msg(rc == 0, "case %d: %s", _i, d.msg);
		int y = ir_find_def(g, "y");
		ck_assert(s.defs[y].mma);
		ck_assert_int_eq(s.defs[y].mma_ab, DT_BF16);
		char *text = sched_text(g, &s);
		ck_assert_msg(strstr(text, "mma y"), "case %d: %s", _i, text);
		/* the text reads back to the same choice */
		Schedule t;
		ck_assert_msg(ir_parse_schedule(g, text, strlen(text), "t.sched", &d) == 0 &&
			      sched_build(g, &t, &d) == 0, "case %d: %s", _i, d.msg);
		ck_assert(t.defs[y].mma && t.defs[y].mma_m == s.defs[y].mma_m &&
			  t.defs[y].mma_n == s.defs[y].mma_n && t.defs[y].mma_k == s.defs[y].mma_k);
		sched_free(&t);
		free(text);
		sched_free(&s);
	} else {
		ck_assert_msg(rc == -1 && d.code == 2 && strncmp(d.msg, want, strlen(want)) == 0,
			      "case %d:\n got: %s\nwant: %s", _i, d.msg, want);
		diag_clear(&d);
	}
	ir_free(g);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sched");
	TCase *f = tcase_create("formats");
	tcase_add_loop_test(f, default_formats, 0, (int)ARRAY_LEN(formats));
	tcase_add_test(f, default_is_no_directive);
	tcase_add_test(f, text_states_what_differs_from_the_propagated_default);
	tcase_add_test(f, sampled_texts_read_back);
	tcase_add_loop_test(f, online_sets, 0, (int)ARRAY_LEN(onlines));
	tcase_add_loop_test(f, mma_directive, 0, (int)ARRAY_LEN(mmas));
	suite_add_tcase(s, f);
	TCase *e = tcase_create("end to end");
	tcase_set_timeout(e, 120);
	tcase_add_test(e, f64_log_of_tiny);
	tcase_add_test(e, f64_sum_of_large);
	tcase_add_test(e, wgsl_declines_f64_defaults);
	suite_add_tcase(s, e);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
