/* tests/backendutil.h: what the backends' suites share: running a graph on a backend and
 * on the c backend with the same kernels and inputs, and comparing the outputs (bit for
 * bit where the language fixes every rounding, else within a few ulps), the sorted list of
 * the examples, and the graphs and checks of the tests every backend passes (indirect
 * reads, a short topk range, f16/bf16 storage). Include after testutil.h. Each suite names
 * its backend and its tolerance for results of cancellation near zero (a fraction of the
 * tensor's largest magnitude, in ulps of the output format). */
#ifndef ASSAY_BACKENDUTIL_H
#define ASSAY_BACKENDUTIL_H

#include <dirent.h>
#include <math.h>
#include "../compiler/compiler.h"
#include "../interp/interp.h"
#include "../oracles/oracles.h"

enum { BT_CLOSE_ULPS = 64 };

static inline const Backend *bt_backend(const char *name)
{
	const Backend *b = be_find(name);
	ck_assert_msg(b != NULL, "no backend named %s", name);
	return b;
}

static inline HostTensor *bt_inputs(const Graph *g, uint64_t seed)
{
	Diag d = {0};
	HostTensor *in = calloc((size_t)ir_ninputs(g) + 1, sizeof *in);
	InputSpec spec = {DIST_NORMAL, seed, false};
	ck_assert_msg(mp_make_inputs(g, &spec, NULL, in, &d) == 0, "inputs: %s", d.msg);
	return in;
}

/* g's schedule from directive text ("" for the default). */
static inline void bt_sched_of(Graph *g, const char *text, Schedule *s)
{
	Diag d = {0};
	ck_assert_msg(ir_parse_schedule(g, text, strlen(text), "test.sched", &d) == 0, "%s", d.msg);
	ck_assert_msg(sched_build(g, s, &d) == 0, "%s", d.msg);
}

/* Lowers g under s and runs it on b (2 threads, the cache of the suite `name`). */
static inline int bt_run_on(const char *name, const Backend *b, const Graph *g,
			    const Schedule *s, const HostTensor *in, HostTensor *out, Diag *d)
{
	Kernels *k = kir_lower(g, s, NULL, d);
	if (!k)
		return -1;
	BeOpts o = {2, tu_cache_dir(name)};
	int rc = be_run(b, k, &o, in, out, NULL, d);
	kir_free(k);
	return rc;
}

/* The program text src with every plan left out of it: on a kernel's mark line
 * ("//// assay kernel I: NAME group=..."), everything after the name; every launch-manifest
 * line ("//! ...") dropped. The backends launch from the program's plan record
 * (compiler/map/map.h), never from these comments, so the text runs the same. malloc'ed. */
static inline char *bt_strip_plans(const char *src)
{
	size_t n = strlen(src);
	char *out = malloc(n + 1), *o = out;
	ck_assert_ptr_nonnull(out);
	for (const char *p = src; *p;) {
		const char *eol = strchr(p, '\n'), *end = eol ? eol + 1 : p + strlen(p);
		size_t len = (size_t)(end - p);
		const char *g = strstr(p, " group=");
		if (strncmp(p, "//! ", 4) == 0) {
			p = end;
			continue;
		}
		if (strncmp(p, "//// assay kernel ", 18) == 0 && g && g < end) {
			memcpy(o, p, (size_t)(g - p));
			o += g - p;
			*o++ = '\n';
			p = end;
			continue;
		}
		memcpy(o, p, len);
		o += len;
		p = end;
	}
	*o = 0;
	return out;
}

/* Runs g under s on b through the run driver with its text stripped of its plans
 * (bt_strip_plans) before the compile; *stripped: whether there was a plan to strip. */
static inline int bt_run_stripped(const char *name, const Backend *b, const Graph *g,
				  const Schedule *s, const HostTensor *in, HostTensor *out,
				  bool *stripped, Diag *d)
{
	Kernels *k = kir_lower(g, s, NULL, d);
	if (!k)
		return -1;
	BeOpts o = {2, tu_cache_dir(name)};
	BeRun r;
	be_run_open(&r, b, k);
	int rc = be_run_emit(&r, d);
	if (rc == 0) {
		char *t = bt_strip_plans(r.src);
		*stripped = strlen(t) < strlen(r.src);
		free(r.src);
		r.src = t;
	}
	if (rc == 0)
		rc = be_run_compile(&r, &o, d) || be_run_bind(&r, in, d) || be_run_launch(&r, 1, d) ||
		     be_run_guards(&r, d) || be_run_outputs(&r, out, d) ? -1 : 0;
	be_run_close(&r);
	kir_free(k);
	return rc;
}

/* A matrix product, a double sum and a sum of 2000 squares per row under each schedule of
 * sch (n of them) on backend `name`: the text stripped of its plans (which must have held
 * one) gives the same outputs, bit for bit, as the text as emitted. */
static inline void bt_plan_record(const char *name, const char *const *sch, size_t n)
{
	static const char src[] = "size M = 5, N = 6, K = 37, C = 2000\n"
		"input a : f32[M, K]\ninput b : f32[K, N]\ninput x : f32[M, C]\n"
		"y[m:M, n:N] = sum(k:K) a[m, k] * b[k, n]\n"
		"z[m:M] = sum(k:K, n:N) a[m, k] * b[k, n]\n"
		"s[m:M] = sum(c:C) x[m, c] * x[m, c]\n"
		"output y : f32, z : f32, s : f32\n";
	Graph *g = tu_parse(src);
	HostTensor *in = bt_inputs(g, 7);
	for (size_t i = 0; i < n; i++) {
		Schedule s;
		Diag d = {0};
		bt_sched_of(g, sch[i], &s);
		HostTensor *o1 = calloc((size_t)g->noutputs + 1, sizeof *o1);
		HostTensor *o2 = calloc((size_t)g->noutputs + 1, sizeof *o2);
		bool stripped = false;
		ck_assert_msg(bt_run_on(name, bt_backend(name), g, &s, in, o1, &d) == 0, "[%s]: %s",
			      sch[i], d.msg);
		ck_assert_msg(bt_run_stripped(name, bt_backend(name), g, &s, in, o2, &stripped, &d) == 0,
			      "[%s] stripped: %s", sch[i], d.msg);
		ck_assert_msg(stripped, "[%s]: no plan in the text to strip", sch[i]);
		for (int k = 0; k < g->noutputs; k++) {
			ck_assert_int_eq(o1[k].n, o2[k].n);
			for (int64_t j = 0; j < o1[k].n; j++)
				ck_assert_msg(tu_same(ht_get(&o1[k], j), ht_get(&o2[k], j)),
					      "[%s]: output %d [%lld] differs once stripped", sch[i], k,
					      (long long)j);
			ht_free(&o1[k]);
			ht_free(&o2[k]);
		}
		free(o1);
		free(o2);
		sched_free(&s);
	}
	tu_free_tensors(in, ir_ninputs(g));
	ir_free(g);
}

static inline char *bt_emit_of(const Backend *b, const Graph *g, const Schedule *s)
{
	Diag d = {0};
	Kernels *k = kir_lower(g, s, NULL, &d);
	ck_assert_msg(k != NULL, "lower: %s", d.msg);
	char *src = b->emit(k, &d);
	ck_assert_msg(src != NULL, "emit: %s", d.msg);
	kir_free(k);
	return src;
}

/* a (the backend) and c (the c backend) in format f agree within BT_CLOSE_ULPS ulps of the
 * larger, or, after cancellation near zero, within `cancel` ulps of the tensor's largest
 * magnitude `scale`. The worst distance in ulps goes to *worst. */
static inline bool bt_near(double a, double c, Dtype f, double scale, double cancel,
			   double *worst)
{
	if (tu_same(a, c))
		return true;
	if (isnan(a) || isnan(c) || isinf(a) || isinf(c) || (a == 0 && c == 0))
		return false;   /* zeros of opposite signs too: expm1(-0) is -0 */
	double eps = ldexp(1.0, 1 - dt_info(f)->prec), m = fmax(fabs(a), fabs(c));
	double ulps = fabs(a - c) / (eps * fmax(m, ldexp(1.0, (int)dt_info(f)->emin)));
	*worst = fmax(*worst, ulps);
	return ulps <= BT_CLOSE_ULPS || fabs(a - c) <= cancel * eps * scale;
}

/* On a backend that may flush f32 subnormals to zero (orc_may_flush: vulkan, wgsl; f16 and
 * bf16 are computed in f32), a zero of either sign where the c backend has a nonzero value
 * below `reach` in magnitude is a flush, not a difference: reach is 2^-126 (the smallest
 * f32 normal) for a flushed result; a suite passes more only where its graph scales a
 * flushed operand (x * 2 of a subnormal x). */
static inline bool bt_flushed(const char *name, double a, double c, double reach)
{
	return a == 0 && c != 0 && fabs(c) < reach && orc_may_flush(name, DT_F32, NULL);
}

/* Runs g under s on backend `name` and on c and compares every output: bit for bit when
 * exact, else bt_near in the coarser of the output's dtype and its store format; a flushed
 * subnormal (bt_flushed) passes either way. */
static inline void bt_diff_vs_c(const char *name, double cancel, const Graph *g,
				const Schedule *s, const HostTensor *in, bool exact, const char *what)
{
	Diag d = {0};
	HostTensor *o1 = calloc((size_t)g->noutputs + 1, sizeof *o1);
	HostTensor *o2 = calloc((size_t)g->noutputs + 1, sizeof *o2);
	ck_assert_msg(bt_run_on(name, bt_backend(name), g, s, in, o1, &d) == 0, "%s: %s: %s",
		      what, name, d.msg);
	ck_assert_msg(bt_run_on(name, be_find("c"), g, s, in, o2, &d) == 0, "%s: c: %s", what,
		      d.msg);
	for (int k = 0; k < g->noutputs; k++) {
		const Tensor *T = &g->tensors[g->outputs[k].tensor];
		Dtype f = o1[k].dtype, st = T->kind == TK_DEF ? s->defs[T->def].store : f;
		if (f != DT_I32 && st != DT_I32 && dt_info(st)->prec < dt_info(f)->prec)
			f = st;
		double scale = 0, worst = 0;
		for (int64_t i = 0; i < o2[k].n; i++)
			if (isfinite(ht_get(&o2[k], i)))
				scale = fmax(scale, fabs(ht_get(&o2[k], i)));
		for (int64_t i = 0; i < o1[k].n; i++) {
			double a = ht_get(&o1[k], i), c = ht_get(&o2[k], i);
			bool ok = exact || f == DT_I32 ? tu_same(a, c)
						       : bt_near(a, c, f, scale, cancel, &worst);
			ok = ok || (f != DT_I32 && bt_flushed(name, a, c, 0x1p-126));
			ck_assert_msg(ok, "%s: output %s [%lld]: %s %a, c %a", what, T->name,
				      (long long)i, name, a, c);
		}
		if (getenv("ASSAY_TEST_VERBOSE"))
			printf("%-44s %-6s worst %.3g ulps\n", what, T->name, worst);
		ht_free(&o1[k]);
		ht_free(&o2[k]);
	}
	free(o1);
	free(o2);
}

/* The examples' paths, sorted; n gets their number. */
static inline char **bt_examples(int *n)
{
	DIR *dir = opendir("examples");
	char **v = calloc(256, sizeof *v);
	*n = 0;
	for (struct dirent *e; dir && (e = readdir(dir)) && *n < 255;) {
		size_t l = strlen(e->d_name);
		if (l > 3 && strcmp(e->d_name + l - 3, ".tg") == 0) {
			v[*n] = malloc(l + 10);
			snprintf(v[(*n)++], l + 10, "examples/%s", e->d_name);
		}
	}
	if (dir)
		closedir(dir);
	for (int i = 1; i < *n; i++)
		for (int j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			char *t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v;
}

static inline void bt_free_examples(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* ------------------------------------------------------------ tests every backend passes */

/* Indirect reads: tok indexes w's rows in h and g; p = tok + 1 does in h, guarded by ??
 * (out of range: -1), and g's read by a ?: whose untaken branch is never evaluated. */
static const char bt_gather_src[] =
	"size T = 6, V = 10, D = 5\n"
	"input tok : i32[T]\n"
	"input w : f32[V, D]\n"
	"p[t:T] = tok[t] + 1\n"
	"h[t:T, d:D] = w[tok[t], d] * 2 + w[p[t], d] ?? -1\n"
	"g[t:T] = tok[t] < V ? w[tok[t], 0] : 0\n"
	"output h : f32, p : i32, g : f32\n";

/* A topk whose range (c in [0, r + 3)) is shorter than K = 4 in row 0: the checker rejects
 * a range it can see is short, so the range is shortened after parsing, as a graph built
 * in memory (or a range the checker cannot bound) would be; the kernel must report it. */
static inline Graph *bt_topk_short_graph(void)
{
	Graph *g = tu_parse("size R = 2, C = 9, K = 4\ninput x : f32[R, C]\n"
			    "v[r:R, k:K], ix[r:R, k:K] = topk(c: 0..r+4) x[r, c]\n"
			    "output v : f32, ix : i32\n");
	g->defs[0].red[0].hi = ir_op(g, OP_ADD, TY_INT, ir_var(g, 0, TY_INT), ir_int(g, 3), 0);
	return g;
}

/* bt_gather_src on backend `name` under each schedule of sch: within range the results
 * agree with c bit for bit (cancel as in bt_diff_vs_c); an index out of range is the c
 * backend's error, message and code (2). */
static inline void bt_gather_errors(const char *name, double cancel, const char *const *sch,
				    size_t nsch)
{
	Graph *g = tu_parse(bt_gather_src);
	HostTensor *in = bt_inputs(g, 12), out[3];
	static const int ok[6] = {3, 4, 0, 9, 5, 1}, bad[6] = {3, 4, 0, 12, 5, 1};
	for (size_t i = 0; i < nsch; i++) {
		Schedule s;
		bt_sched_of(g, sch[i], &s);
		memcpy(in[0].data, ok, sizeof ok);
		bt_diff_vs_c(name, cancel, g, &s, in, true, sch[i]);
		memcpy(in[0].data, bad, sizeof bad);
		Diag d1 = {0}, d2 = {0};
		ck_assert_int_eq(bt_run_on(name, be_find(name), g, &s, in, out, &d1), -1);
		ck_assert_int_eq(bt_run_on(name, be_find("c"), g, &s, in, out, &d2), -1);
		ck_assert_msg(d1.msg && strstr(d1.msg, "indirect read of 'w' out of range") &&
			      strstr(d1.msg, "is 12"), "message: %s", d1.msg);
		ck_assert_int_eq(d1.code, 2);
		ck_assert_str_eq(d1.msg, d2.msg);
		diag_clear(&d1);
		diag_clear(&d2);
		sched_free(&s);
	}
	tu_free_tensors(in, 2);
	ir_free(g);
}

/* bt_topk_short_graph on backend `name` under the default schedule: the graph's error
 * (code 2), as the c backend reports it. */
static inline void bt_expect_topk_short(const char *name)
{
	Graph *g = bt_topk_short_graph();
	HostTensor *in = bt_inputs(g, 9), out[2];
	Schedule s;
	sched_default(g, &s);
	Diag d = {0};
	ck_assert_int_eq(bt_run_on(name, bt_backend(name), g, &s, in, out, &d), -1);
	ck_assert_msg(d.msg && strstr(d.msg, "fewer than K = 4"), "message: %s", d.msg);
	ck_assert_int_eq(d.code, 2);
	diag_clear(&d);
	sched_free(&s);
	tu_free_tensors(in, 1);
	ir_free(g);
}

/* Two kernels in order (b reads every element of a, an output) and both with an indirect
 * read; ix[1] = 7 is out of range of w (a's kernel) and of u (b's). */
static const char bt_two_kernels_src[] =
	"size N = 4, V = 5, U = 6\n"
	"input ix : i32[N]\ninput w : f32[V]\ninput u : f32[U]\n"
	"a[n:N] = w[ix[n]] * 2\n"
	"b[n:N] = sum(j:N) a[j] * u[ix[n]]\n"
	"output a : f32, b : f32\n";

/* The run driver's launches on backend `name` (compiler.h, be_run_launch): a launch of 3
 * runs back to back gives what one run gives, bit for bit, and says it made 3 runs; with
 * an index out of range in both kernels, one launch of 1 or of 3 runs (one error-slot read
 * at its end) reports the first kernel's error, as the c backend does, and code 2. */
static inline void bt_back_to_back(const char *name)
{
	Graph *g = tu_parse(bt_two_kernels_src);
	HostTensor *in = bt_inputs(g, 5), one[2], three[2];
	Schedule s;
	sched_default(g, &s);
	Diag d = {0};
	Kernels *k = kir_lower(g, &s, NULL, &d);
	ck_assert_msg(k != NULL, "lower: %s", d.msg);
	BeOpts o = {2, tu_cache_dir(name)};
	static const int ok[4] = {4, 0, 3, 1}, bad[4] = {4, 7, 3, 1};
	memcpy(in[0].data, ok, sizeof ok);
	ck_assert_msg(be_run(bt_backend(name), k, &o, in, one, NULL, &d) == 0, "%s", d.msg);
	for (int runs = 1; runs <= 3; runs += 2) {
		BeRun r;
		be_run_open(&r, bt_backend(name), k);
		memcpy(in[0].data, ok, sizeof ok);
		ck_assert_msg(be_run_ready(&r, &o, in, &d) == 0, "%s: %s", name, d.msg);
		ck_assert_msg(be_run_launch(&r, runs, &d) == 0, "%s: launch: %s", name, d.msg);
		ck_assert_int_eq(r.st.runs, runs);
		ck_assert_msg(be_run_guards(&r, &d) == 0 && be_run_outputs(&r, three, &d) == 0, "%s",
			      d.msg);
		ck_assert_int_eq(r.stage, BE_ST_DONE);
		for (int o2 = 0; o2 < 2; o2++) {
			for (int64_t i = 0; i < one[o2].n; i++)
				ck_assert_msg(tu_same(ht_get(&one[o2], i), ht_get(&three[o2], i)),
					      "%s: %d runs: output %d [%lld]", name, runs, o2, (long long)i);
			ht_free(&three[o2]);
		}
		be_run_close(&r);
		/* the bad index: the first kernel's error, after one launch of `runs` runs */
		be_run_open(&r, bt_backend(name), k);
		memcpy(in[0].data, bad, sizeof bad);
		ck_assert_msg(be_run_ready(&r, &o, in, &d) == 0, "%s: %s", name, d.msg);
		ck_assert_int_eq(be_run_launch(&r, runs, &d), -1);
		ck_assert_msg(d.msg && strstr(d.msg, "indirect read of 'w' out of range") &&
			      strstr(d.msg, "in 'a'"), "%s: %d runs: %s", name, runs, d.msg);
		ck_assert_int_eq(d.code, 2);
		ck_assert_int_eq(be_run_fail(&r, &d), BE_FAIL_RUNTIME);
		diag_clear(&d);
		ck_assert_int_eq(be_run_guards(&r, &d), -1);   /* nothing runs after a failure */
		ck_assert_int_eq(d.code, 3);
		diag_clear(&d);
		be_run_close(&r);
	}
	ht_free(&one[0]);
	ht_free(&one[1]);
	kir_free(k);
	sched_free(&s);
	tu_free_tensors(in, 3);
	ir_free(g);
}

/* The f16/bf16 storage tests: x : f32[N] stored as f16 (a) and bf16 (b), and y : f64[N]
 * computed in f64 and stored as f16 (c) and bf16 (d); a suite adds its own definitions and
 * the output line. */
#define BT_HALF_SRC \
	"size N = 4096\ninput x : f32[N]\ninput y : f64[N]\n" \
	"a[i:N] = x[i]\nb[i:N] = x[i]\n" \
	"c[i:N] = sum(j:1) y[i]\nd[i:N] = sum(j:1) y[i]\n"
#define BT_HALF_SCHED \
	"store a : f16\nstore b : bf16\nstore c : f16\naccum c : f64\nstore d : bf16\naccum d : f64"

/* BT_HALF_SRC's inputs x (in[0]) and y (in[1]): the classic edges first (ties, overflow,
 * subnormals, infinities, NaN, -0), then random bit patterns, a quarter of them with
 * exponents near the 16-bit formats' ranges. */
/* Launch fusion (compiler/map/fuse.c) on backend `name`: rows of a mean, a variance and
 * the normalised row (fully specified arithmetic, so the same order gives the same bits)
 * under 32-way splits run as one launch (a second schedule where the plan allows), and
 * every output equals the c
 * backend's bit for bit; a schedule where the consumer reads another row's variance keeps
 * its own launch and is exact too. */
static inline void bt_row_fusion(const char *name)
{
	static const char *const src[2] = {
		"size T = 24, C = 301\ninput x : f32[T, C]\n"
		"mu[t:T] = sum(c:C) x[t, c] / C\n"
		"v[t:T] = sum(c:C) (x[t, c] - mu[t]) * (x[t, c] - mu[t]) / C\n"
		"y[t:T, c:C] = (x[t, c] - mu[t]) / (v[t] + 1)\noutput y : f32, v : f32\n",
		"size T = 24, C = 301\ninput x : f32[T, C]\n"
		"mu[t:T] = sum(c:C) x[t, c] / C\n"
		"v[t:T] = sum(c:C) (x[t, c] - mu[t]) * (x[t, c] - mu[t]) / C\n"
		"y[t:T, c:C] = (x[t, c] - mu[t]) / (v[(t + 5) % T] + 1)\noutput y : f32, v : f32\n",
	};
	static const char *const sch[] = {"split mu : c=32\nsplit v : c=32",
					  "split mu : c=7\nsplit v : c=64\norder v : pairwise"};
	for (int g0 = 0; g0 < 2; g0++) {
		Graph *g = tu_parse(src[g0]);
		HostTensor *in = bt_inputs(g, 9);
		for (size_t i = 0; i < sizeof sch / sizeof *sch; i++) {
			Schedule s;
			bt_sched_of(g, sch[i], &s);
			char *text = bt_emit_of(bt_backend(name), g, &s);
			bool fused = strstr(text, "kernels fused") != NULL;
			if (g0 == 0 && i == 0)   /* the second may keep v apart (vulkan: v's pairwise
						    terms in scratch) */
				ck_assert_msg(fused, "%s [%s]: mu and v not in one launch", name, sch[i]);
			if (g0 == 1)
				ck_assert_msg(!strstr(text, "3 kernels fused"), "%s [%s]: y fused though it "
					      "reads another row", name, sch[i]);
			free(text);
			bt_diff_vs_c(name, 0, g, &s, in, true, sch[i]);
			sched_free(&s);
		}
		tu_free_tensors(in, ir_ninputs(g));
		ir_free(g);
	}
}

static inline void bt_half_inputs(HostTensor *in)
{
	static const double edge[] = {65504, 65519, 65520, 0x1p-25, 0x1.8p-25, 1e-6, 0x1p-24,
				      -0.0, INFINITY, -INFINITY, NAN, 0x1.ffep-15, 3.3895313892515355e38,
				      0x1p-133, 0x1p-134, 0x1.8p-134, 1e-40, 0x1.fffp127, 0x1.002p0,
				      0x1.006p0, 0x1.0101p0, 0x1.0103p0};
	for (int64_t i = 0; i < in[0].n; i++) {
		uint64_t h = tu_mix((uint64_t)i + 99);
		double vx = tu_bits_f((uint32_t)h), vy = tu_bits_d(h);
		if (i % 4 == 1)
			vy = ldexp((double)(h >> 11) * 0x1p-53, (int)(h % 300) - 150);
		if (i % 4 == 2)
			vx = ldexp((double)(uint32_t)h * 0x1p-32, (int)(h % 170) - 150);
		if (i < (int64_t)ARRAY_LEN(edge))
			vx = vy = edge[i];
		ht_set(&in[0], i, vx);
		ht_set(&in[1], i, vy);
	}
}

/* Outputs 0 to 3 of the f16/bf16 storage tests at element i: x stored as f16 and as bf16,
 * then y stored as f16 and as bf16, bit for bit with tensor.c's rounding (a NaN for a NaN,
 * whatever its payload). */
static inline void bt_expect_halves(const HostTensor *out, int64_t i, double x, double y)
{
	uint16_t want[4] = {fmt_double_to_f16(x), fmt_double_to_bf16(x), fmt_double_to_f16(y),
			    fmt_double_to_bf16(y)};
	for (int k = 0; k < 4; k++) {
		uint16_t got = ((const uint16_t *)out[k].data)[i];
		bool nan = (want[k] & 0x7fff) > (k % 2 ? 0x7f80 : 0x7c00);
		bool gnan = (got & 0x7fff) > (k % 2 ? 0x7f80 : 0x7c00);
		ck_assert_msg(nan ? gnan : got == want[k], "out %d [%lld] of %a / %a: got 0x%04x, "
			      "want 0x%04x", k, (long long)i, x, y, got, want[k]);
	}
}

#endif
