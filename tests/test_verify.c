/* tests/test_verify.c: verify/: the error measures on hand-made values, every failure kind
 * caught as its verdict by the worker pipeline on the real c backend, sampled checking,
 * the record format and the files of -o, and (acceptance, a subset) every example passing
 * on the c backend under its own schedule and two sampled ones.
 *
 * The failure-kind tests judge against a budget of this file (VfOpts.budget: four units
 * of f32 roundoff relative to each exact value, plus 2^-60), so that they fail only for
 * verify's own reasons; the clean-run and acceptance tests use the real orc_budget.
 * Compiled programs are cached in $TMPDIR/assay-test-verify.
 */
#include <float.h>
#include <math.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testutil.h"
#include "../compiler/compiler.h"
#include "../interp/interp.h"
#include "../oracles/oracles.h"
#include "../verify/verify.h"

/* ------------------------------------------------------------ metrics */

typedef struct {
	Dtype f;
	double a, b;
	double dist;
} UlpCase;

START_TEST(ulp_distance)
{
	const double sub32 = 0x1p-149, min32 = 0x1p-126;
	const UlpCase t[] = {
		{DT_F32, 1.0, nextafterf(1.0f, 2.0f), 1},
		{DT_F32, 0.0, -0.0, 0},                       /* +-0 -> ord 0 */
		{DT_F32, -sub32, sub32, 2},                   /* across zero */
		{DT_F32, 0.0, sub32, 1},                      /* subnormals */
		{DT_F32, min32, min32 - sub32, 1},            /* min normal / max subnormal */
		{DT_F32, FLT_MAX, INFINITY, 1},               /* inf is the next ordinal */
		{DT_F32, -1.0, 1.0, 2.0 * 0x3f800000},
		{DT_F16, 1.0, 1.0 + 0x1p-10, 1},
		{DT_F16, 65504, INFINITY, 1},
		{DT_F16, -0x1p-24, 0x1p-24, 2},
		{DT_BF16, 1.0, 1.0 + 0x1p-7, 1},
		{DT_BF16, -0.0, 0x1p-133, 1},
		{DT_F64, 1.0, nextafter(1.0, 2.0), 1},
		{DT_F64, -DBL_MAX, DBL_MAX, 2.0 * (double)0x7fefffffffffffffull},
		{DT_I32, 3, 5, 2},
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++) {
		double got = vf_ulp_dist(t[i].f, t[i].a, t[i].b);
		ck_assert_msg(got == t[i].dist, "case %zu (%s %g %g): %.17g, want %.17g", i,
			      dt_name(t[i].f), t[i].a, t[i].b, got, t[i].dist);
		ck_assert(vf_ulp_dist(t[i].f, t[i].b, t[i].a) == got);
	}
	ck_assert_int_eq(vf_ord(DT_F32, -0.0), 0);
	ck_assert_int_eq(vf_ord(DT_F32, -sub32), -1);
	ck_assert_int_eq(vf_ord(DT_F16, -1.0), -0x3c00);
}
END_TEST

/* One element judged alone. */
typedef struct {
	Dtype f;
	double got, want, budget;
	Verdict v;
	double ratio;   /* expected max_ratio (NAN: do not check) */
} ElemCase;

START_TEST(special_values)
{
	const ElemCase t[] = {
		{DT_F32, NAN, 1.0, INFINITY, V_SPECIAL_MISMATCH, NAN},  /* NaN never passes */
		{DT_F32, 1.0, NAN, INFINITY, V_SPECIAL_MISMATCH, NAN},
		{DT_F32, NAN, -NAN, 0, V_PASS, 0},                      /* canonical NaN */
		{DT_F32, INFINITY, -INFINITY, INFINITY, V_SPECIAL_MISMATCH, NAN},
		{DT_F32, FLT_MAX, INFINITY, INFINITY, V_SPECIAL_MISMATCH, NAN},
		{DT_F32, INFINITY, FLT_MAX, INFINITY, V_SPECIAL_MISMATCH, NAN},
		{DT_F16, -INFINITY, -INFINITY, 0, V_PASS, 0},
		{DT_F32, 0.0, -0.0, 0, V_SPECIAL_MISMATCH, NAN},        /* exact zero, wrong sign */
		{DT_F32, 0.0, -0.0, 1e-30, V_PASS, 0},                  /* budget: sign not decided */
		{DT_F32, 1.0, 1.5, 1.0, V_PASS, 0.5},
		{DT_F32, 1.0, 1.5, 0.25, V_OVER_BUDGET, 2},
		{DT_F32, 1.0, 1.0, 0, V_PASS, 0},                       /* 0/0 = 0 */
		{DT_F32, 1.0, 1.5, 0, V_OVER_BUDGET, INFINITY},         /* e/0 = inf */
		{DT_F32, 1.0, 7.0, INFINITY, V_PASS, 0},                /* no bound known */
		{DT_F32, 1.0, 1.5, NAN, V_OVER_BUDGET, INFINITY},       /* broken budget fails */
		{DT_I32, 3, 5, 0, V_OVER_BUDGET, INFINITY},             /* indices must match */
		{DT_I32, 4, 4, 0, V_PASS, 0},
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++) {
		VfMetrics m;
		vf_metrics_init(&m);
		vf_metrics_add(&m, t[i].f, 0, t[i].got, t[i].want, t[i].budget, false);
		vf_metrics_done(&m);
		Verdict v = vf_metrics_verdict(&m);
		ck_assert_msg(v == t[i].v, "case %zu: %s, want %s", i, vf_verdict_name(v),
			      vf_verdict_name(t[i].v));
		ck_assert_msg(isnan(t[i].ratio) || m.max_ratio == t[i].ratio,
			      "case %zu: ratio %g, want %g", i, m.max_ratio, t[i].ratio);
		ck_assert(m.frac_within == (v == V_PASS ? 1.0 : 0.0));
		ck_assert_int_eq(m.n_unbounded, isinf(t[i].budget) && v == V_PASS && !isnan(t[i].got));
	}
}
END_TEST

/* The bias figure: the mean of (got - want) / budget over the bounded numeric elements. A
 * kernel that errs one way by half its budget everywhere is within budget everywhere but has
 * bias 0.5; one whose errors cancel has none. */
START_TEST(mean_signed_ratio)
{
	VfMetrics m;
	vf_metrics_init(&m);
	for (int k = 0; k < 4; k++)
		vf_metrics_add(&m, DT_F32, k, 1.0 + 0.25, 1.0, 0.5, false);
	vf_metrics_add(&m, DT_F32, 4, 7.0, 1.0, INFINITY, false);   /* no bound: left out */
	vf_metrics_done(&m);
	ck_assert_int_eq(vf_metrics_verdict(&m), V_PASS);
	ck_assert_double_eq(m.mean_signed_ratio, 0.5);
	vf_metrics_init(&m);
	vf_metrics_add(&m, DT_F32, 0, 1.25, 1.0, 0.5, false);
	vf_metrics_add(&m, DT_F32, 1, 0.75, 1.0, 0.5, false);
	vf_metrics_done(&m);
	ck_assert_double_eq(m.mean_signed_ratio, 0);
}
END_TEST

START_TEST(near_ties)
{
	VfMetrics m;
	vf_metrics_init(&m);
	vf_metrics_add(&m, DT_I32, 0, 3, 5, 0, true);       /* a near tie: counted, not failed */
	vf_metrics_add(&m, DT_I32, 1, 4, 4, 0, true);
	vf_metrics_add(&m, DT_F32, 2, 1.0, 2.0, 0.5, true);  /* downstream real value */
	vf_metrics_done(&m);
	ck_assert_int_eq(vf_metrics_verdict(&m), V_PASS);
	ck_assert_int_eq(m.n_ties, 3);
	ck_assert_int_eq(m.n_tie_disagree, 2);
	ck_assert_double_eq(m.max_ratio, 0);
	ck_assert_double_eq(m.frac_within, 1.0 / 3);
	vf_metrics_add(&m, DT_I32, 3, 3, 5, 0, false);      /* a clear margin fails */
	vf_metrics_add(&m, DT_F32, 4, NAN, 5, INFINITY, true);  /* specials stay categorical */
	vf_metrics_done(&m);
	ck_assert_int_eq(m.n_over, 1);
	ck_assert_int_eq(vf_metrics_verdict(&m), V_SPECIAL_MISMATCH);
}
END_TEST

/* A special value where the budget is +inf (the schedule's formats overflowed) is still a
 * special-mismatch verdict, but not a compiler suspect for the fuzzer; anywhere else it is. */
START_TEST(unbounded_specials)
{
	VfMetrics m;
	vf_metrics_init(&m);
	vf_metrics_add(&m, DT_F32, 0, INFINITY, 70000.0, INFINITY, false);
	vf_metrics_add(&m, DT_F32, 1, 1.0, 1.0, 1e-7, false);
	vf_metrics_done(&m);
	ck_assert_int_eq(vf_metrics_verdict(&m), V_SPECIAL_MISMATCH);
	ck_assert_int_eq(m.n_special_unbounded, 1);
	ck_assert(!vf_compiler_suspect(vf_metrics_verdict(&m), &m));
	vf_metrics_add(&m, DT_F32, 2, NAN, 1.0, 1e-7, false);   /* a bounded element: suspect */
	vf_metrics_done(&m);
	ck_assert_int_eq(m.n_special, 2);
	ck_assert(vf_compiler_suspect(vf_metrics_verdict(&m), &m));
	VfMetrics o;
	vf_metrics_init(&o);
	vf_metrics_add(&o, DT_F32, 0, 1.0, 2.0, 0.5, false);     /* over budget: suspect */
	vf_metrics_done(&o);
	ck_assert(vf_compiler_suspect(vf_metrics_verdict(&o), &o));
}
END_TEST

/* A kernel on a backend that flushes f32 subnormals (orc_may_flush: vulkan, wgsl) gives a
 * zero where the oracle has a subnormal: within the wgsl budget (a pass), over the c one;
 * the log of the flushed value is -inf: a special mismatch where the wgsl budget makes no
 * claim (+inf), so not a compiler suspect, and a suspect on c. */
START_TEST(flushed_subnormals)
{
	Graph *g = tu_parse("input x : f32[3]\ny[i:3] = x[i] * 1e-30\n"
			    "l[i:3] = log(abs(x[i]) * 1e-30)\noutput y : f32, l : f32\n");
	Schedule s;
	sched_default(g, &s);
	HostTensor *in = tu_new_inputs(g);
	const float xs[3] = {1.19386145e-9f, -2e-10f, 1.0f};
	for (int i = 0; i < 3; i++)
		ht_set(&in[0], i, xs[i]);
	HostTensor want[2], got[2], bw[2], bc[2];
	Diag d = {0};
	MpOpts mo = {.threads = 1};
	ck_assert_msg(mp_exact(g, in, &mo, want, NULL, NULL, &d) == 0, "%s", d.msg);
	ck_assert_msg(orc_budget(g, &s, "wgsl", in, bw, &d) == 0, "%s", d.msg);
	ck_assert_msg(orc_budget(g, &s, "c", in, bc, &d) == 0, "%s", d.msg);
	for (int k = 0; k < 2; k++) {
		int64_t n = 3;
		ck_assert_int_eq(ht_alloc(&got[k], DT_F32, 1, &n), 0);
	}
	for (int i = 0; i < 3; i++) {
		double y = ht_get(&want[0], i);
		bool sub = fabs(y) < 0x1p-126;
		ck_assert(sub == (i < 2) && y != 0);
		ht_set(&got[0], i, sub ? copysign(0.0, y) : y);
		ht_set(&got[1], i, sub ? -INFINITY : ht_get(&want[1], i));
	}
	VfMetrics m[2][2];
	for (int b = 0; b < 2; b++)
		for (int k = 0; k < 2; k++) {
			vf_metrics_init(&m[b][k]);
			vf_compare(&got[k], &want[k], b ? &bc[k] : &bw[k], NULL, NULL, NULL, 3, &m[b][k]);
			vf_metrics_done(&m[b][k]);
		}
	ck_assert_int_eq(vf_metrics_verdict(&m[0][0]), V_PASS);
	ck_assert(m[0][0].max_ratio <= 1 && m[0][0].max_ratio > 0.5);
	ck_assert_int_eq(vf_metrics_verdict(&m[1][0]), V_OVER_BUDGET);
	ck_assert_int_eq(m[1][0].n_over, 2);
	ck_assert_int_eq(vf_metrics_verdict(&m[0][1]), V_SPECIAL_MISMATCH);
	ck_assert(m[0][1].n_special == 2 && m[0][1].n_special_unbounded == 2);
	ck_assert(!vf_compiler_suspect(V_SPECIAL_MISMATCH, &m[0][1]));
	ck_assert_int_eq(m[1][1].n_special_unbounded, 0);
	ck_assert(vf_compiler_suspect(vf_metrics_verdict(&m[1][1]), &m[1][1]));
	for (int k = 0; k < 2; k++) {
		ht_free(&want[k]);
		ht_free(&got[k]);
		ht_free(&bw[k]);
		ht_free(&bc[k]);
	}
	tu_free_tensors(in, 1);
	sched_free(&s);
	ir_free(g);
}
END_TEST

static HostTensor vec(Dtype f, const double *v, int64_t n)
{
	HostTensor t;
	ck_assert_int_eq(ht_alloc(&t, f, 1, &n), 0);
	for (int64_t i = 0; i < n; i++)
		ht_set(&t, i, v[i]);
	return t;
}

START_TEST(array_metrics)
{
	const double got[] = {1, 2, 3, 4, 100}, want[] = {1, 2, 4, 4, 100},
		     bud[] = {0.5, 0.5, 0.5, 2, 0};
	HostTensor g = vec(DT_F32, got, 5), w = vec(DT_F32, want, 5), b = vec(DT_F64, bud, 5);
	uint8_t status[5] = {0, 0, 0, 0, MP_UNSAMPLABLE};
	VfMetrics m;
	vf_metrics_init(&m);
	vf_compare(&g, &w, &b, NULL, status, NULL, 5, &m);
	vf_metrics_done(&m);
	ck_assert_int_eq(m.n_checked, 4);
	ck_assert_int_eq(m.n_unsamplable, 1);
	ck_assert_int_eq(m.n_over, 1);
	ck_assert_double_eq(m.nmse, 1.0 / (1 + 4 + 16 + 16));
	ck_assert_double_eq(m.max_abs, 1);
	ck_assert_double_eq(m.max_rel, 0.25);
	ck_assert_double_eq(m.max_ratio, 2);
	ck_assert_double_eq(m.max_ulp, vf_ulp_dist(DT_F32, 3, 4));
	ck_assert_double_eq(m.frac_within, 0.75);
	ck_assert_int_eq(m.worst, 2);
	ck_assert_int_eq(m.n_unbounded, 0);
	ck_assert_int_eq(vf_metrics_verdict(&m), V_OVER_BUDGET);
	/* a sampled comparison: want is dense over the sampled indices */
	const int64_t idx[2] = {0, 3};
	const double wsub[] = {1, 4};
	HostTensor ws = vec(DT_F32, wsub, 2);
	vf_metrics_init(&m);
	vf_compare(&g, &ws, &b, NULL, NULL, idx, 2, &m);
	vf_metrics_done(&m);
	ck_assert_int_eq(m.n_checked, 2);
	ck_assert_int_eq(vf_metrics_verdict(&m), V_PASS);
	/* a NaN among passing elements still fails, and is the worst element */
	const double gn[] = {1, 2, NAN, 4, 100};
	HostTensor g2 = vec(DT_F32, gn, 5);
	vf_metrics_init(&m);
	vf_compare(&g2, &w, NULL, NULL, NULL, NULL, 5, &m);
	vf_metrics_done(&m);
	ck_assert_int_eq(vf_metrics_verdict(&m), V_SPECIAL_MISMATCH);
	ck_assert_int_eq(m.worst, 2);
	ht_free(&g);
	ht_free(&g2);
	ht_free(&w);
	ht_free(&ws);
	ht_free(&b);
}
END_TEST

START_TEST(fault_names)
{
	uint64_t f;
	Diag d = {0};
	char buf[128];
	ck_assert_int_eq(vf_faults_parse("drop_tail,no_combine", &f, &d), 0);
	ck_assert_uint_eq(f, KF_DROP_TAIL | KF_NO_COMBINE);
	ck_assert_str_eq(vf_faults_name(f, buf, sizeof buf), "drop_tail,no_combine");
	ck_assert_int_eq(vf_faults_parse("", &f, &d), 0);
	ck_assert_uint_eq(f, 0);
	ck_assert_int_eq(vf_faults_parse("skip_last,bogus", &f, &d), -1);
	ck_assert_ptr_nonnull(strstr(d.msg, "bogus"));
	diag_clear(&d);
	VfOpts o = {0};
	setenv("ASSAY_FAULT", "pad_zero", 1);
	setenv("ASSAY_TEST_HANG", "1", 1);
	setenv("ASSAY_TEST_NAN", "0", 1);
	ck_assert_int_eq(vf_opts_env(&o, &d), 0);
	ck_assert_uint_eq(o.w.faults, KF_PAD_ZERO);
	ck_assert_uint_eq(o.w.hooks, VF_HOOK_HANG);
	setenv("ASSAY_FAULT", "nope", 1);
	ck_assert_int_eq(vf_opts_env(&o, &d), -1);
	ck_assert_int_eq(d.code, 2);
	diag_clear(&d);
}
END_TEST

/* ------------------------------------------------------------ the pipeline */

static inline const char *cache_dir(void) { return tu_cache_dir("verify"); }

static const char affine_src[] =
	"graph affine\n"
	"size N = 37\n"
	"input x : f32[N]\n"
	"y[i:N] = x[i] * 2 + 0.1\n"
	"output y : f32\n";

static const char argmax_src[] =
	"graph amax\n"
	"size M = 2, N = 16\n"
	"input x : f32[M, N]\n"
	"a[m:M] = argmax(j:N) x[m, j]\n"
	"output a : i32\n";

/* Records collected by the sink (copies of what the tests look at). */
typedef struct {
	int n;
	Verdict v[64];
	char reason[64][512];
	bool sampled[64];
	int64_t n_checked[64], n64[64];
	char by[64][32];
	bool has_rules[64];             /* the record carries the rewrite's counters */
	uint64_t x1[64], ident[64];     /* firings of "x*1 -> x", "i+0, i*1, i*0, i-i" */
	bool has_cov[64];               /* the record carries the compiler's coverage */
	bool partial[64];               /* which reached lower_tile_partial */
	VfClass cls[64];                /* the record's class (vf_class) */
} Got;

static uint64_t fired(const RwStats *st, const char *rule)
{
	for (int i = 0; st && i < st->nrules; i++)
		if (strcmp(st->name[i], rule) == 0)
			return st->fired[i];
	return 0;
}

static void collect(void *ctx, const VfRecord *r)
{
	Got *g = ctx;
	ck_assert_int_lt(g->n, 64);
	g->v[g->n] = r->verdict;
	snprintf(g->reason[g->n], sizeof g->reason[0], "%s", r->reason);
	g->sampled[g->n] = r->sampled;
	g->n_checked[g->n] = r->m.n_checked;
	g->n64[g->n] = r->m64.n_checked;
	snprintf(g->by[g->n], sizeof g->by[0], "%s", r->ref64_by ? r->ref64_by : "");
	g->has_rules[g->n] = r->rules != NULL;
	g->x1[g->n] = fired(r->rules, "x*1 -> x");
	g->ident[g->n] = fired(r->rules, "i+0, i*1, i*0, i-i");
	g->has_cov[g->n] = r->cov != NULL;
	g->partial[g->n] = r->cov && r->cov[COV_lower_tile_partial] > 0;
	g->cls[g->n] = vf_class(r->verdict, &r->m, r->sampled, &r->m64);
	g->n++;
}

/* The test's own budget: 2^-22 relative to each exact value, plus 2^-60. */
static int local_budget(const Graph *g, const Schedule *s, const char *backend,
			const HostTensor *inputs, HostTensor *budgets, Diag *d)
{
	HostTensor *ex = calloc((size_t)g->noutputs + 1, sizeof *ex);
	MpOpts mo = {.threads = 1};
	if (mp_exact(g, inputs, &mo, ex, NULL, NULL, d))
		return -1;
	for (int k = 0; k < g->noutputs; k++) {
		ck_assert_int_eq(ht_alloc(&budgets[k], DT_F64, ex[k].rank, ex[k].dims), 0);
		for (int64_t i = 0; i < ex[k].n; i++)
			ht_set(&budgets[k], i, g->outputs[k].dtype == DT_I32 ? 0 :
				    fabs(ht_get(&ex[k], i)) * 0x1p-22 + 0x1p-60);
		ht_free(&ex[k]);
	}
	free(ex);
	return 0;
}

typedef struct {
	const char *src;
	const char *sched;      /* directives of the first schedule ("" for the default) */
	int nsampled;
	uint64_t faults;
	unsigned hooks;
	double timeout;
	bool real_budget;
	int64_t max_exact, nsample;
	const char *out_dir;
} Run;

/* What a test sets beside its Run (each test runs in a process of its own). */
static struct {
	double compile_timeout;
	VfPool *pool;
	bool no_confirm;
	const char *cache;      /* the backends' cache (NULL: cache_dir()) */
	int (*budget)(const Graph *g, const Schedule *s, const char *backend,
		      const HostTensor *inputs, HostTensor *budgets, Diag *d);   /* or NULL */
} extra;

/* Checks a graph on the c backend; fills got and returns vf_check's value. */
static int run(const Run *r, Got *got)
{
	Diag d = {0};
	Graph *g = tu_parse(r->src);
	if (r->sched && *r->sched)
		ck_assert_int_eq(ir_parse_schedule(g, r->sched, strlen(r->sched), "t.sched", &d), 0);
	VfSched *sc;
	int ns, failed;
	ck_assert_int_eq(vf_sched_list(g, "default", 1, r->nsampled, &sc, &ns, &d), 0);
	HostTensor *in = calloc((size_t)ir_ninputs(g) + 1, sizeof *in);
	InputSpec spec = {DIST_NORMAL, 1, false};
	ck_assert_int_eq(mp_make_inputs(g, &spec, NULL, in, &d), 0);
	if (strstr(r->src, "argmax"))   /* the maximum is the last term of every row */
		for (int64_t i = 0; i < in[0].n; i++)
			ht_set(&in[0], i, (double)(i % 16));
	const Backend *b = be_find("c");
	memset(got, 0, sizeof *got);
	VfOpts o = {
		.w = {r->timeout, 1, extra.cache ? extra.cache : cache_dir(), r->faults, r->hooks,
		      extra.compile_timeout, extra.pool, extra.no_confirm},
		.threads = 1, .max_exact = r->max_exact, .nsample = r->nsample, .seed = 1,
		.dist = "normal", .out_dir = r->out_dir,
		.budget = extra.budget ? extra.budget : r->real_budget ? NULL : local_budget,
		.sink = collect, .ctx = got,
	};
	int rc = vf_check(g, in, &b, 1, sc, ns, &o, &failed, &d);
	ck_assert_msg(rc == 0, "vf_check: %s", d.msg ? d.msg : "?");
	int fails = 0;
	for (int i = 0; i < got->n; i++)
		fails += vf_verdict_fails(got->v[i]);
	ck_assert_int_eq(failed, fails);
	for (int k = 0; k < ir_ninputs(g); k++)
		ht_free(&in[k]);
	free(in);
	vf_sched_list_free(sc, ns);
	ir_free(g);
	return rc;
}

static void expect_all(const Got *got, int n, Verdict v, const char *in_reason)
{
	ck_assert_int_eq(got->n, n);
	for (int i = 0; i < got->n; i++) {
		ck_assert_msg(got->v[i] == v, "record %d: %s (%s), want %s", i,
			      vf_verdict_name(got->v[i]), got->reason[i], vf_verdict_name(v));
		ck_assert_msg(!in_reason || strstr(got->reason[i], in_reason),
			      "record %d: reason '%s' lacks '%s'", i, got->reason[i], in_reason);
	}
}

START_TEST(clean_run_passes)
{
	Got got;
	Run r = {affine_src, "tile y : i=8\n", 2, 0, 0, 0, false, 0, 0, NULL};
	run(&r, &got);
	expect_all(&got, 3, V_PASS, NULL);
	r.real_budget = true;
	run(&r, &got);
	expect_all(&got, 3, V_PASS, NULL);
	Run a = {argmax_src, "", 1, 0, 0, 0, true, 0, 0, NULL};
	run(&a, &got);
	expect_all(&got, 2, V_PASS, NULL);
}
END_TEST

/* Every failure kind caught as its verdict: a run with a seeded compiler fault or a
 * worker hook (set through the environment variable env where there is one, as a user
 * sets it), and the records it must give. */
static const struct {
	Run r;
	const char *env;
	int n;
	Verdict v;
	const char *reason;   /* in every record's reason (NULL: not checked) */
} kinds[] = {
	/* 37 = 4 * 8 + 5: the last partial tile is not computed; without the fault, a pass */
	{{affine_src, "tile y : i=8\n", 0, KF_DROP_TAIL, 0, 0, false, 0, 0, NULL}, NULL, 1,
	 V_OVER_BUDGET, "y[3"},
	{{affine_src, "tile y : i=8\n", 0, 0, 0, 0, false, 0, 0, NULL}, NULL, 1, V_PASS, NULL},
	{{argmax_src, "", 0, KF_SKIP_LAST, 0, 0, true, 0, 0, NULL}, NULL, 1, V_OVER_BUDGET,
	 "no near tie"},
	/* two schedules: the run goes on after the first crash (or hang) */
	{{affine_src, "", 1, 0, VF_HOOK_CRASH, 0, false, 0, 0, NULL}, NULL, 2, V_CRASH, "SIGSEGV"},
	{{affine_src, "", 0, 0, 0, 0, false, 0, 0, NULL}, "ASSAY_TEST_OOB", 1, V_OOB_WRITE,
	 "past its end"},
	{{affine_src, "", 1, 0, VF_HOOK_HANG, 1.0, false, 0, 0, NULL}, NULL, 2, V_TIMEOUT,
	 "past the run limit of 4 s"},
	{{affine_src, "", 0, 0, VF_HOOK_NAN, 0, false, 0, 0, NULL}, NULL, 1, V_SPECIAL_MISMATCH,
	 "nan against the oracle's"},
};

START_TEST(failure_kinds)
{
	Run r = kinds[_i].r;
	if (kinds[_i].env) {
		setenv(kinds[_i].env, "1", 1);
		VfOpts o = {0};
		Diag d = {0};
		ck_assert_int_eq(vf_opts_env(&o, &d), 0);
		r.hooks = o.w.hooks;
	}
	Got got;
	run(&r, &got);
	expect_all(&got, kinds[_i].n, kinds[_i].v, kinds[_i].reason);
}
END_TEST

/* A compiler that answers --version but fails on every program. */
static void fake_cc(const char *path, const char *body)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	ck_assert_int_eq(chmod(path, 0755), 0);
}

/* ASSAY_SOURCE_<BACKEND>: a file compiled in place of the emitted program (a variant that
 * stores 7 where y belongs fails; an unreadable file is a compile error naming it). */
START_TEST(source_override)
{
	Got got;
	Run r = {affine_src, "", 0, 0, 0, 0, false, 0, 0, NULL};
	char path[600];
	snprintf(path, sizeof path, "%s/override-%ld.c", cache_dir(), (long)getpid());
	mkdir(cache_dir(), 0777);
	setenv("ASSAY_SOURCE_C", path, 1);
	unlink(path);
	run(&r, &got);
	expect_all(&got, 1, V_COMPILE_ERROR, "ASSAY_SOURCE_C=");
	unsetenv("ASSAY_SOURCE_C");
	Graph *g = tu_parse(affine_src);
	Schedule s;
	Diag d = {0};
	ck_assert_int_eq(sched_build(g, &s, &d), 0);
	Kernels *k = kir_lower(g, &s, NULL, &d);
	ck_assert_ptr_nonnull(k);
	char *src = be_find("c")->emit(k, &d);
	ck_assert_ptr_nonnull(src);
	/* the stores of y: `= t...;` into its buffer becomes 7 */
	char *at = strstr(src, "b1[");
	ck_assert_ptr_nonnull(at);
	char *eq = strstr(at, "= "), *semi = eq ? strchr(eq, ';') : NULL;
	ck_assert_ptr_nonnull(semi);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%.*s= 7%s", (int)(eq - src), src, semi);
	fclose(f);
	free(src);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
	setenv("ASSAY_SOURCE_C", path, 1);
	run(&r, &got);
	unsetenv("ASSAY_SOURCE_C");
	unlink(path);
	expect_all(&got, 1, V_OVER_BUDGET, NULL);
	run(&r, &got);
	expect_all(&got, 1, V_PASS, NULL);
}
END_TEST

/* A program that stores `value` into the first store of buffer b<buf> of graph src under
 * schedule sched, written to path (ASSAY_SOURCE_C's file). */
static void store_override(const char *src, const char *sched, int buf, const char *value,
			   const char *path)
{
	Graph *g = tu_parse(src);
	Schedule s;
	Diag d = {0};
	if (*sched)
		ck_assert_int_eq(ir_parse_schedule(g, sched, strlen(sched), "t.sched", &d), 0);
	ck_assert_int_eq(sched_build(g, &s, &d), 0);
	Kernels *k = kir_lower(g, &s, NULL, &d);
	ck_assert_ptr_nonnull(k);
	char *text = be_find("c")->emit(k, &d), name[16];
	ck_assert_ptr_nonnull(text);
	snprintf(name, sizeof name, "b%d[", buf);
	char *at = strstr(text, name);
	ck_assert_ptr_nonnull(at);
	char *eq = strstr(at, "= "), *semi = eq ? strchr(eq, ';') : NULL;
	ck_assert_ptr_nonnull(semi);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%.*s= %s%s", (int)(eq - text), text, value, semi);
	fclose(f);
	free(text);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}

/* Budgets for a backend whose facts keep no infinities (wgsl's), the c backend's rows. */
static int no_inf_budget(const Graph *g, const Schedule *s, const char *backend,
			 const HostTensor *inputs, HostTensor *budgets, Diag *d)
{
	return orc_budget_facts(g, s, backend, &be_find("wgsl")->facts, inputs, budgets, NULL, d);
}

/* Wrong infinities are failures (issue 13). y = x + 1e5 delivered in f16 is +inf at every
 * element (a definite infinity: budget 0): a kernel storing 7 is a special-mismatch of
 * class failure, where before the budget made no claim (+inf: unclaimed-special), as it
 * still does for facts that keep no infinities. y = 1 / t with t = x + 1e5 stored in f16
 * (an overflow of the schedule's format: t is +inf) is 0 as computed, 1e-5 exactly: within
 * its finite budget, so a kernel storing 7 is over budget and one storing inf a special
 * mismatch, both failures; before, the budget there was +inf, and 7 passed every budget
 * (on c the emulation check still saw it; on a backend without bit-exact facts nothing). */
START_TEST(wrong_infinities_fail)
{
	static const char inf_src[] = "graph infs\nsize N = 5\ninput x : f32[N]\n"
				      "y[i:N] = x[i] + 1e5\noutput y : f16\n";
	static const char thru_src[] = "graph thru\nsize N = 5\ninput x : f32[N]\n"
				       "t[i:N] = x[i] + 1e5\ny[i:N] = 1 / t[i]\noutput y : f32\n";
	char path[600];
	snprintf(path, sizeof path, "%s/override-inf-%ld.c", cache_dir(), (long)getpid());
	mkdir(cache_dir(), 0777);
	Got got;
	Run r = {inf_src, "", 0, 0, 0, 0, true, 0, 0, NULL};
	run(&r, &got);
	expect_all(&got, 1, V_PASS, NULL);
	store_override(inf_src, "", 1, "7", path);
	setenv("ASSAY_SOURCE_C", path, 1);
	run(&r, &got);
	expect_all(&got, 1, V_SPECIAL_MISMATCH, "special-value mismatches");
	ck_assert_msg(got.cls[0] == VC_FAILURE && !strstr(got.reason[0], "no claim"), "%s: %s",
		      vf_class_name(got.cls[0]), got.reason[0]);
	extra.budget = no_inf_budget;
	run(&r, &got);
	expect_all(&got, 1, V_SPECIAL_MISMATCH, "no claim");
	ck_assert_int_eq(got.cls[0], VC_UNCLAIMED);
	ck_assert(!strstr(got.reason[0], "keep no infinities"));   /* c's device keeps them */
	extra.budget = NULL;
	unsetenv("ASSAY_SOURCE_C");

	Run t = {thru_src, "store t : f16\n", 0, 0, 0, 0, true, 0, 0, NULL};
	run(&t, &got);
	expect_all(&got, 1, V_PASS, NULL);
	store_override(thru_src, t.sched, 2, "7", path);
	setenv("ASSAY_SOURCE_C", path, 1);
	run(&t, &got);
	expect_all(&got, 1, V_OVER_BUDGET, NULL);
	ck_assert_int_eq(got.cls[0], VC_FAILURE);
	extra.budget = no_inf_budget;   /* only the emulation check, where it applies, sees it */
	run(&t, &got);
	expect_all(&got, 1, V_EMULATION_MISMATCH, "every budget holds");
	extra.budget = NULL;
	store_override(thru_src, t.sched, 2, "INFINITY", path);
	run(&t, &got);
	expect_all(&got, 1, V_SPECIAL_MISMATCH, NULL);
	ck_assert_int_eq(got.cls[0], VC_FAILURE);
	unsetenv("ASSAY_SOURCE_C");
	unlink(path);
}
END_TEST

/* A crash or a hang is re-run alone, in a fresh worker, with 4x the limits: one that does
 * not come back is flaky (not a failure), one that does is confirmed; no_confirm reports
 * the first run as it is. */
START_TEST(crash_and_timeout_confirmed)
{
	Got got;
	char once[600];
	snprintf(once, sizeof once, "%s/once-%ld", cache_dir(), (long)getpid());
	mkdir(cache_dir(), 0777);
	setenv("ASSAY_TEST_ONCE", once, 1);
	unlink(once);
	Run r = {affine_src, "", 0, 0, VF_HOOK_CRASH, 0, false, 0, 0, NULL};
	run(&r, &got);
	expect_all(&got, 1, V_FLAKY, "the first run crashed (killed by SIGSEGV");
	ck_assert(!vf_verdict_fails(V_FLAKY));
	unlink(once);
	Run h = {affine_src, "", 0, 0, VF_HOOK_HANG, 0.5, false, 0, 0, NULL};
	run(&h, &got);
	expect_all(&got, 1, V_FLAKY, "the first run timed out (the kernel ran past the run limit "
		   "of 0.5 s");
	unlink(once);
	unsetenv("ASSAY_TEST_ONCE");
	run(&r, &got);
	expect_all(&got, 1, V_CRASH, "confirmed: a re-run alone with 4x the limits did the same");
	/* on a machine twice as busy as its processors, a timeout's re-run gets twice as long;
	 * a crash's does not */
	char load[32];
	snprintf(load, sizeof load, "%ld", 2 * sysconf(_SC_NPROCESSORS_ONLN));
	setenv("ASSAY_TEST_LOADAVG", load, 1);
	run(&h, &got);
	expect_all(&got, 1, V_TIMEOUT, "confirmed: a re-run alone with 8x the limits did the same");
	run(&r, &got);
	expect_all(&got, 1, V_CRASH, "confirmed: a re-run alone with 4x the limits did the same");
	setenv("ASSAY_TEST_LOADAVG", "0", 1);
	extra.no_confirm = true;
	run(&r, &got);
	expect_all(&got, 1, V_CRASH, "SIGSEGV");
	ck_assert_msg(!strstr(got.reason[0], "confirmed"), "%s", got.reason[0]);
}
END_TEST

/* The compile limit and the run limit are apart: a compiler that takes 1.5 s passes under
 * a 0.5 s run limit, and times out under a 0.5 s compile limit, which says so. */
START_TEST(compile_and_run_limits)
{
	Got got;
	char path[600], cache[600], cmd[700];
	snprintf(path, sizeof path, "%s/slow-cc-%ld", cache_dir(), (long)getpid());
	snprintf(cache, sizeof cache, "%s/slow-cache-%ld", cache_dir(), (long)getpid());
	mkdir(cache_dir(), 0777);
	mkdir(cache, 0777);
	fake_cc(path, "[ \"$1\" = --version ] && exec cc \"$@\"\nsleep 1.5\nexec cc \"$@\"");
	setenv("CC", path, 1);
	extra.cache = cache;
	extra.no_confirm = true;
	extra.compile_timeout = 30;
	Run r = {affine_src, "", 0, 0, 0, 0.5, false, 0, 0, NULL};
	run(&r, &got);
	expect_all(&got, 1, V_PASS, NULL);
	snprintf(cmd, sizeof cmd, "rm -f %s/c-*", cache);
	ck_assert_int_eq(system(cmd), 0);
	extra.compile_timeout = 0.5;
	Run c = {affine_src, "", 0, 0, 0, 30, false, 0, 0, NULL};
	run(&c, &got);
	expect_all(&got, 1, V_TIMEOUT, "no result after 0.5 s of compiling (the compile limit");
	unsetenv("CC");
	unlink(path);
}
END_TEST

/* A pool keeps one worker per backend across runs; a run whose kernel crashed leaves no
 * damage behind (the next run, in a new worker, passes). */
START_TEST(persistent_workers)
{
	Got got;
	VfPool *p = vf_pool_new();
	extra.pool = p;
	Run r = {affine_src, "", 2, 0, 0, 0, false, 0, 0, NULL};
	for (int i = 0; i < 3; i++) {
		run(&r, &got);
		expect_all(&got, 3, V_PASS, NULL);
	}
	VfPoolStats st = vf_pool_stats(p);
	ck_assert_int_eq(st.runs, 9);
	ck_assert_int_eq(st.started, 1);
	Run c = r;
	c.nsampled = 0;
	c.hooks = VF_HOOK_CRASH;
	extra.no_confirm = true;
	run(&c, &got);
	extra.no_confirm = false;
	expect_all(&got, 1, V_CRASH, "SIGSEGV");
	run(&r, &got);
	expect_all(&got, 3, V_PASS, NULL);
	st = vf_pool_stats(p);
	ck_assert_int_eq(st.runs, 13);
	ck_assert_int_eq(st.started, 2);
	vf_pool_free(p);
}
END_TEST

/* A cached shared object that does not match its seal (here: truncated) is rebuilt, never
 * loaded. */
START_TEST(corrupt_cache_rebuilt)
{
	Got got;
	char cache[600], cmd[1400];
	snprintf(cache, sizeof cache, "%s/trunc-cache-%ld", cache_dir(), (long)getpid());
	mkdir(cache_dir(), 0777);
	snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", cache, cache);
	ck_assert_int_eq(system(cmd), 0);
	extra.cache = cache;
	Run r = {affine_src, "", 0, 0, 0, 0, false, 0, 0, NULL};
	run(&r, &got);
	expect_all(&got, 1, V_PASS, NULL);
	snprintf(cmd, sizeof cmd, "for f in %s/c-*.so; do truncate -s 100 \"$f\"; done", cache);
	ck_assert_int_eq(system(cmd), 0);
	run(&r, &got);
	expect_all(&got, 1, V_PASS, NULL);
	snprintf(cmd, sizeof cmd, "for f in %s/c-*.so; do [ $(stat -c %%s \"$f\") -gt 100 ] || "
		 "exit 1; done", cache);
	ck_assert_msg(system(cmd) == 0, "the truncated object was not rebuilt");
	snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A full disk under the cache is the environment failing: vf_check stops with an env
 * Diag (exit 3), and no record says anything about the kernel. Needs a tmpfs of its own
 * (a private mount namespace); without the privilege the test says so and fails. */
START_TEST(full_disk_is_environment)
{
	char dir[600];
	snprintf(dir, sizeof dir, "%s/full-%ld", cache_dir(), (long)getpid());
	mkdir(cache_dir(), 0777);
	mkdir(dir, 0777);
	if (unshare(CLONE_NEWNS) || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", dir, "tmpfs", 0, "size=256k")) {
		ck_abort_msg("full_disk_is_environment needs a tmpfs of its own (mount namespaces, "
			     "root): %s", strerror(errno));
	}
	char fill[700];
	snprintf(fill, sizeof fill, "%s/fill", dir);
	FILE *f = fopen(fill, "w");
	ck_assert_ptr_nonnull(f);
	static char block[4096];
	while (fwrite(block, 1, sizeof block, f) == sizeof block && fflush(f) == 0)
		;
	fclose(f);
	Diag d = {0};
	Graph *g = tu_parse(affine_src);
	VfSched *sc;
	int ns, failed;
	ck_assert_int_eq(vf_sched_list(g, "default", 1, 0, &sc, &ns, &d), 0);
	HostTensor *in = calloc((size_t)ir_ninputs(g) + 1, sizeof *in);
	InputSpec spec = {DIST_NORMAL, 1, false};
	ck_assert_int_eq(mp_make_inputs(g, &spec, NULL, in, &d), 0);
	const Backend *b = be_find("c");
	Got got = {0};
	VfOpts o = {.w = {20, 1, dir, 0, 0}, .threads = 1, .seed = 1, .dist = "normal",
		    .budget = local_budget, .sink = collect, .ctx = &got};
	ck_assert_int_eq(vf_check(g, in, &b, 1, sc, ns, &o, &failed, &d), -1);
	ck_assert_msg(d.env && d.code == 3, "code %d env %d: %s", d.code, d.env, d.msg);
	ck_assert_msg(strstr(d.msg, "No space left on device") && strstr(d.msg, dir), "%s", d.msg);
	ck_assert_int_eq(got.n, 0);
	diag_clear(&d);
	/* space again: the same check passes */
	unlink(fill);
	ck_assert_int_eq(vf_check(g, in, &b, 1, sc, ns, &o, &failed, &d), 0);
	ck_assert_int_eq(got.n, 1);
	ck_assert_int_eq(got.v[0], V_PASS);
	vf_sched_list_free(sc, ns);
	for (int k = 0; k < ir_ninputs(g); k++)
		ht_free(&in[k]);
	free(in);
	ir_free(g);
}
END_TEST

START_TEST(compile_failure_and_unavailable)
{
	Got got;
	char path[600];
	snprintf(path, sizeof path, "%s/fake-cc-%ld", cache_dir(), (long)getpid());
	mkdir(cache_dir(), 0777);
	fake_cc(path, "[ \"$1\" = --version ] && exit 0\necho 'kernel.c:1: error: boom' >&2\nexit 1");
	setenv("CC", path, 1);
	Run r = {affine_src, "", 0, 0, 0, 0, false, 0, 0, NULL};
	run(&r, &got);
	expect_all(&got, 1, V_COMPILE_ERROR, "boom");
	fake_cc(path, "exit 1");
	run(&r, &got);
	expect_all(&got, 1, V_UNSUPPORTED, "no working C compiler");
	unlink(path);
}
END_TEST

START_TEST(sampled_outputs)
{
	Got got;
	/* 37 elements > max_exact 16: 8 sampled exactly, all 37 against f64 */
	Run r = {affine_src, "tile y : i=8\n", 0, 0, 0, 0, false, 16, 8, NULL};
	run(&r, &got);
	expect_all(&got, 1, V_PASS, NULL);
	ck_assert(got.sampled[0]);
	ck_assert_int_eq(got.n_checked[0], 8);
	ck_assert_int_eq(got.n64[0], 37);
	ck_assert_str_eq(got.by[0], "c backend");   /* the compiled all-f64 program */
	r.faults = KF_DROP_TAIL;
	run(&r, &got);
	expect_all(&got, 1, V_OVER_BUDGET, NULL);
	r.real_budget = true;
	r.faults = 0;
	run(&r, &got);
	expect_all(&got, 1, V_PASS, NULL);
}
END_TEST

static bool exists(const char *dir, const char *rel)
{
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", dir, rel);
	return access(p, R_OK) == 0;
}

START_TEST(records_and_files)
{
	char dir[] = "/tmp/assay-test-verify-out-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	Got got;
	Run r = {affine_src, "tile y : i=8\n", 1, 0, 0, 0, false, 0, 0, dir};
	run(&r, &got);
	expect_all(&got, 2, V_PASS, NULL);
	const char *files[] = {"inputs/x.npy", "oracle/y.npy", "affine/c-default/kernel.c",
			       "affine/c-default/schedule.txt", "affine/c-default/y.npy",
			       "affine/c-default/y.budget.npy", "affine/c-s1/kernel.c"};
	for (size_t i = 0; i < ARRAY_LEN(files); i++) {
		char rel[256];
		snprintf(rel, sizeof rel, "%s%s", i < 2 ? "affine/" : "", files[i]);
		ck_assert_msg(exists(dir, rel), "%s/%s missing", dir, rel);
	}
	char p[1024];
	snprintf(p, sizeof p, "%s/results.jsonl", dir);
	char *text = tu_read_file(p, NULL);
	ck_assert_ptr_nonnull(text);
	int lines = 0;
	for (char *q = text; (q = strchr(q, '\n')); q++)
		lines++;
	ck_assert_int_eq(lines, 2);
	const char *keys[] = {"\"graph\":\"affine\"", "\"backend\":\"c\"", "\"schedule\":\"default\"",
			      "\"schedule_text\":\"tile y : i=8\\n\"", "\"output\":\"y\"",
			      "\"dtype\":\"f32\"", "\"verdict\":\"pass\"", "\"max_ulp\":",
			      "\"nmse\":", "\"max_ratio\":", "\"frac_within\":1", "\"n_checked\":37",
			      "\"exact\":\"all\"", "\"seed\":1", "\"inputs\":\"normal\"",
			      "\"timings\":{\"oracle_s\":", "\"schedule\":\"s1\""};
	for (size_t i = 0; i < ARRAY_LEN(keys); i++)
		ck_assert_msg(strstr(text, keys[i]), "no %s in %s", keys[i], text);
	free(text);
	/* a non-finite number is a string: JSON has no inf */
	VfRecord rec = {.graph = "g", .backend = "c", .sched = "default", .output = "y",
			.dtype = DT_F32, .verdict = V_OVER_BUDGET, .reason = "a \"quoted\"\nline"};
	vf_metrics_init(&rec.m);
	rec.m.max_ratio = INFINITY;
	char *buf;
	size_t n;
	FILE *f = open_memstream(&buf, &n);
	vf_record_json(f, &rec);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "\"max_ratio\":\"inf\""));
	ck_assert_ptr_nonnull(strstr(buf, "\"reason\":\"a \\\"quoted\\\"\\nline\""));
	ck_assert_ptr_nonnull(strstr(buf, "\"verdict\":\"over-budget\""));
	free(buf);
}
END_TEST

/* The compiler's rewrite runs in the worker, before lowering, and its firings are
 * recorded: x * 1.0 and i + 0 fire once per (backend, schedule); the results still pass
 * (the oracle evaluates the graph as written, the kernel the rewritten one); the schedule
 * names the rewritten graph's definitions. With ASSAY_NO_REWRITE=1 no rule is recorded. */
static const char rewrite_src[] =
	"graph rw\n"
	"size N = 37\n"
	"input x : f32[N]\n"
	"p[i:N] = x[i] * 1.0 + 0.1\n"
	"y[i:N] = p[i + 0] * 3\n"
	"output y : f32\n";

START_TEST(rewrite_recorded)
{
	char dir[] = "/tmp/assay-test-verify-rw-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	Got got;
	Run r = {rewrite_src, "tile p : i=8\nstore p : f16\n", 1, 0, 0, 0, true, 0, 0, dir};
	run(&r, &got);
	expect_all(&got, 2, V_PASS, NULL);
	for (int i = 0; i < got.n; i++) {
		ck_assert(got.has_rules[i]);
		ck_assert_uint_eq(got.x1[i], 1);
		ck_assert_uint_ge(got.ident[i], 1);
	}
	char p[1024];
	snprintf(p, sizeof p, "%s/results.jsonl", dir);
	char *text = tu_read_file(p, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "\"rules\":{\"x*1 -> x\":1,"), "%s", text);
	free(text);
	/* the rewrite changes the kernel: the same case without it compiles another one */
	snprintf(p, sizeof p, "%s/rw/c-default/kernel.c", dir);
	char *src = tu_read_file(p, NULL);
	ck_assert_ptr_nonnull(src);
	setenv("ASSAY_NO_REWRITE", "1", 1);
	VfOpts o = {0};
	Diag d = {0};
	ck_assert_int_eq(vf_opts_env(&o, &d), 0);
	unsetenv("ASSAY_NO_REWRITE");
	ck_assert_uint_eq(o.w.hooks, VF_HOOK_NO_REWRITE);
	Run plain = {rewrite_src, "tile p : i=8\nstore p : f16\n", 1, 0, o.w.hooks, 0, true, 0, 0,
		     dir};
	run(&plain, &got);
	expect_all(&got, 2, V_PASS, NULL);
	for (int i = 0; i < got.n; i++)
		ck_assert(!got.has_rules[i] && got.x1[i] == 0);
	char *src0 = tu_read_file(p, NULL);
	ck_assert_ptr_nonnull(src0);
	ck_assert_msg(strcmp(src, src0) != 0, "the rewrite left the kernel as it was:\n%s", src);
	free(src);
	free(src0);
}
END_TEST

/* The compiler's coverage comes back from the worker with each run and is recorded: a
 * partial tile (37 = 4 x 8 + 5) reaches lower_tile_partial, a whole one (37) does not, and
 * a persistent worker's counters are each run's own (the second run, in the same worker,
 * does not inherit the first's). */
START_TEST(coverage_recorded)
{
	char dir[] = "/tmp/assay-test-verify-cov-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	extra.pool = vf_pool_new();
	Got got;
	Run r = {rewrite_src, "tile p : i=8\n", 0, 0, 0, 0, true, 0, 0, dir};
	run(&r, &got);
	expect_all(&got, 1, V_PASS, NULL);
	ck_assert(got.has_cov[0] && got.partial[0]);
	Run whole = {rewrite_src, "tile p : i=37\n", 0, 0, 0, 0, true, 0, 0, NULL};
	run(&whole, &got);
	expect_all(&got, 1, V_PASS, NULL);
	ck_assert(got.has_cov[0] && !got.partial[0]);
	ck_assert_int_eq(vf_pool_stats(extra.pool).started, 1);   /* one worker served both */
	vf_pool_free(extra.pool);
	extra.pool = NULL;
	char p[1024];
	snprintf(p, sizeof p, "%s/results.jsonl", dir);
	char *text = tu_read_file(p, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "\"cov\":[\"") && strstr(text, "\"lower_tile_partial\""), "%s",
		      text);
	free(text);
}
END_TEST

/* ------------------------------------------------------------ acceptance (subset) */

START_TEST(examples_pass)
{
	static const char *ex[] = {
		"attention", "batched_matmul", "conv1d", "embedding", "layernorm", "matmul",
		"moe_topk", "paged_kv_decode", "rmsnorm", "rope", "softmax", "swiglu_mlp",
	};
	const char *e = ex[_i];
	char path[256];
	snprintf(path, sizeof path, "examples/%s.tg", e);
	Diag d = {0};
	Graph *g = ir_parse_file(path, NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s", d.msg ? d.msg : "?");
	VfSched *sc;
	int ns, failed;
	ck_assert_int_eq(vf_sched_list(g, g->has_schedule ? "graph" : "default", 1, 2, &sc, &ns,
				       &d), 0);
	HostTensor *in = calloc((size_t)ir_ninputs(g) + 1, sizeof *in);
	InputSpec spec = {DIST_NORMAL, 1, false};
	ck_assert_int_eq(mp_make_inputs(g, &spec, NULL, in, &d), 0);
	const Backend *b = be_find("c");
	Got got = {0};
	VfOpts o = {.w = {20, 2, cache_dir(), 0, 0}, .threads = 2, .seed = 1, .dist = "normal",
		    .sink = collect, .ctx = &got};
	ck_assert_msg(vf_check(g, in, &b, 1, sc, ns, &o, &failed, &d) == 0, "%s", d.msg);
	for (int i = 0; i < got.n; i++)
		ck_assert_msg(got.v[i] == V_PASS, "%s record %d: %s: %s", e, i,
			      vf_verdict_name(got.v[i]), got.reason[i]);
	ck_assert_int_eq(got.n, ns * g->noutputs);
	for (int k = 0; k < ir_ninputs(g); k++)
		ht_free(&in[k]);
	free(in);
	vf_sched_list_free(sc, ns);
	ir_free(g);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("verify");
	TCase *m = tcase_create("metrics");
	tcase_add_test(m, ulp_distance);
	tcase_add_test(m, special_values);
	tcase_add_test(m, array_metrics);
	tcase_add_test(m, near_ties);
	tcase_add_test(m, mean_signed_ratio);
	tcase_add_test(m, unbounded_specials);
	tcase_add_test(m, flushed_subnormals);
	tcase_add_test(m, fault_names);
	suite_add_tcase(s, m);
	TCase *w = tcase_create("pipeline");
	tcase_set_timeout(w, 60);
	tcase_add_test(w, clean_run_passes);
	tcase_add_loop_test(w, failure_kinds, 0, (int)ARRAY_LEN(kinds));
	tcase_add_test(w, compile_failure_and_unavailable);
	tcase_add_test(w, crash_and_timeout_confirmed);
	tcase_add_test(w, compile_and_run_limits);
	tcase_add_test(w, persistent_workers);
	tcase_add_test(w, corrupt_cache_rebuilt);
	tcase_add_test(w, full_disk_is_environment);
	tcase_add_test(w, source_override);
	tcase_add_test(w, wrong_infinities_fail);
	tcase_add_test(w, sampled_outputs);
	tcase_add_test(w, records_and_files);
	tcase_add_test(w, rewrite_recorded);
	tcase_add_test(w, coverage_recorded);
	suite_add_tcase(s, w);
	TCase *a = tcase_create("acceptance");
	tcase_set_timeout(a, 120);
	tcase_add_loop_test(a, examples_pass, 0, 12);
	suite_add_tcase(s, a);
	return s;
}

int main(void)
{
	/* the limits a timeout's re-run gets grow with the machine's load (worker.c
	 * confirm_factor): the tests name them, so they run as on an idle machine */
	setenv("ASSAY_TEST_LOADAVG", "0", 1);
	return tu_run(suite());
}
