/* verify/ulp.c: the per-backend ULP sweep of built-in functions (issue 5).
 *
 * For one format and a list of backends, each function of VfUlpFn over a dense
 * deterministic sweep of its domain in that format: the whole domain when the format has
 * no more values there than the points asked for (f16 and bf16 at the default count),
 * else stratified samples (one point per stratum, jittered from the seed: evenly spaced in
 * value over a bounded interval of interest, evenly spaced in the format's ordinals over a
 * range of binades) with the segments' ends. x / y and pow take pairs of random mantissas
 * and exponents (a fraction of pow's exponents integers).
 *
 * One graph holds every function, an output each, computed in the format: a plain
 * definition for f32 and f64, a one-term sum accumulated (and so computed) in f16 or bf16
 * for those (only a reduction's accum directive gives a 16-bit op format, compiler/sched/sched.c).
 * The oracle (mp_exact: every element correctly rounded) runs once per format; then per
 * backend one worker runs the graph (verify/worker.c: a crash or a compile failure is a
 * row, not the caller's death; a graph that fails is run again one function at a time, so
 * each row says what failed), and orc_budget gives every element's budget on that backend
 * (the allowance table, oracles/allowances.def). Per function: the largest distance from
 * the correctly rounded value in ulps of the format (ordinal distance, +-0 equal), its
 * argument, the budget there in ulps of the format at that value, the largest
 * error/budget ratio, and the points over their budget. A NaN or an infinity where the
 * exact value is finite counts as over budget where the budget is finite; where the
 * budget is +inf (the table promises nothing there) a point is only counted as unbounded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "verify.h"

#define PI_LO 3.14159265358979   /* the table's [-pi, pi], taken slightly smaller */
#define PI_HI 3.1415926535897936 /* the double above pi */

typedef struct {
	const char *name;   /* the row's name */
	const char *id;     /* tensor name suffix */
	const char *call;   /* the function's spelling; NULL: x / y */
	int nargs;
	Op op;              /* the op whose allowance rows apply */
} Fn;

static const Fn fns[VU__COUNT] = {
	[VU_EXP] = {"exp", "exp", "exp", 1, OP_EXP},
	[VU_LOG] = {"log", "log", "log", 1, OP_LOG},
	[VU_SIN] = {"sin", "sin", "sin", 1, OP_SIN},
	[VU_SIN_WIDE] = {"sin>pi", "sinw", "sin", 1, OP_SIN},
	[VU_TANH] = {"tanh", "tanh", "tanh", 1, OP_TANH},
	[VU_DIV] = {"div", "div", NULL, 2, OP_DIV},
	[VU_SQRT] = {"sqrt", "sqrt", "sqrt", 1, OP_SQRT},
	[VU_EXPM1] = {"expm1", "expm1", "expm1", 1, OP_EXPM1},
	[VU_LOG1P] = {"log1p", "log1p", "log1p", 1, OP_LOG1P},
	[VU_ERF] = {"erf", "erf", "erf", 1, OP_ERF},
	[VU_POW] = {"pow", "pow", "pow", 2, OP_POW},
};
_Static_assert(ARRAY_LEN(fns) == VU__COUNT, "one row per sweep function");

const char *vf_ulp_fn_name(VfUlpFn f)
{
	return f >= 0 && f < VU__COUNT ? fns[f].name : "?";
}

int vf_ulp_fn_parse(const char *name, size_t len)
{
	for (int f = 0; f < VU__COUNT; f++)
		if (strlen(fns[f].name) == len && strncmp(fns[f].name, name, len) == 0)
			return f;
	return -1;
}

const char *vf_ulp_verdict(const VfUlpRow *r)
{
	if (r->status != WK_OK)
		return vf_verdict_name(vf_worker_verdict(r->status));
	if (r->n_over > 0)
		return "EXCEEDS";
	if (r->n_checked == 0)
		return "no points";
	if (r->n_unbounded == r->n_checked)
		return "no bound";
	return "ok";
}

/* ------------------------------------------------------------ format values */

static double min_sub(Dtype f)
{
	return ldexp(1.0, (int)dt_info(f)->emin - 1);
}

/* The spacing of format f's values at magnitude |v| (the binade of R(v)). */
static double ulp_at(Dtype f, double v)
{
	int e;
	if (v == 0 || !isfinite(v))
		return min_sub(f);
	frexp(v, &e);
	return fmax(ldexp(1.0, e - dt_info(f)->prec), min_sub(f));
}

/* The value of ordinal o of format f (vf_ord's inverse; o within the finite values). */
static double of_ord(Dtype f, int64_t o)
{
	uint64_t m = (uint64_t)(o < 0 ? -o : o);
	double v;
	switch (f) {
	case DT_F64: { memcpy(&v, &m, sizeof v); break; }
	case DT_F32: { uint32_t b = (uint32_t)m; float x; memcpy(&x, &b, sizeof x); v = x; break; }
	case DT_F16: v = fmt_f16_to_double((uint16_t)m); break;
	default: v = fmt_bf16_to_double((uint16_t)m); break;
	}
	return o < 0 ? -v : v;
}

/* The value of f nearest v on the inside of a bound: dir > 0 for a lower bound (the
 * least value >= v), dir < 0 for an upper one; open: strictly inside. */
static int64_t inward(Dtype f, double v, int dir, bool open)
{
	double m = dt_info(f)->maxfinite;
	double r = mp_round_to(f, fmin(fmax(v, -m), m));
	int64_t o = vf_ord(f, r);
	if (dir > 0 && (r < v || (open && r == v)))
		o++;
	if (dir < 0 && (r > v || (open && r == v)))
		o--;
	return o;
}

/* A deterministic generator (splitmix64). */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static double unit(uint64_t *s)
{
	return (double)(next(s) >> 11) * 0x1p-53;
}

/* ------------------------------------------------------------ the sweeps */

/* An interval of a domain: [lo, hi] in ordinals; lin: sampled evenly in value, else in
 * ordinals; w: its share of the points. */
typedef struct {
	int64_t lo, hi;
	bool lin;
	double w;
} Seg;

static int add_seg(Seg *s, int n, Dtype f, double lo, double hi, bool open_lo, bool lin, double w)
{
	int64_t a = inward(f, lo, 1, open_lo), b = inward(f, hi, -1, false);
	if (a <= b)
		s[n++] = (Seg){a, b, lin, w};
	return n;
}

/* The segments of fn's domain in format f (one-argument functions). */
static int segments(VfUlpFn fn, Dtype f, Seg *s)
{
	double mx = dt_info(f)->maxfinite;
	int n = 0;
	switch (fn) {
	case VU_EXP:
		/* results from the smallest subnormal up: flushing devices show */
		n = add_seg(s, n, f, log(min_sub(f)), log(mx), false, true, 3);
		n = add_seg(s, n, f, -1, 1, false, false, 1);
		break;
	case VU_LOG:
		n = add_seg(s, n, f, 0, mx, true, false, 2);
		n = add_seg(s, n, f, 0.5, 2, false, true, 2);
		break;
	case VU_SIN:
		n = add_seg(s, n, f, -PI_LO, PI_LO, false, true, 3);
		n = add_seg(s, n, f, -1, 1, false, false, 1);
		break;
	case VU_SIN_WIDE:
		n = add_seg(s, n, f, -mx, -PI_HI, false, false, 1);
		n = add_seg(s, n, f, PI_HI, mx, false, false, 1);
		break;
	case VU_TANH:
		n = add_seg(s, n, f, -10, 10, false, true, 2);
		n = add_seg(s, n, f, -1, 1, false, false, 2);
		break;
	case VU_SQRT:
		n = add_seg(s, n, f, 0, mx, false, false, 1);
		break;
	case VU_EXPM1:
		n = add_seg(s, n, f, -20, log(mx), false, true, 2);
		n = add_seg(s, n, f, -1, 1, false, false, 2);
		break;
	case VU_LOG1P:
		n = add_seg(s, n, f, -1, 1, true, true, 1);
		n = add_seg(s, n, f, -1, 1, true, false, 2);
		n = add_seg(s, n, f, 1, mx, false, false, 1);
		break;
	case VU_ERF:
		n = add_seg(s, n, f, -5, 5, false, true, 2);
		n = add_seg(s, n, f, -1, 1, false, false, 2);
		break;
	default:
		break;
	}
	return n;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The arguments of a one-argument function: sorted, distinct ordinals of f into *out;
 * returns their number. */
static int64_t sweep1(VfUlpFn fn, Dtype f, int64_t npts, uint64_t seed, int64_t **out)
{
	Seg s[4] = {{0}};
	int ns = segments(fn, f, s);
	/* the union of the segments, in ordinals */
	Seg u[4];
	memcpy(u, s, sizeof s);
	for (int i = 0; i < ns; i++)
		for (int j = i + 1; j < ns; j++)
			if (u[j].lo < u[i].lo) {
				Seg t = u[i];
				u[i] = u[j];
				u[j] = t;
			}
	double total = 0;   /* f64 domains hold up to 2^64 values */
	int64_t reach = INT64_MIN;
	for (int i = 0; i < ns; i++) {
		int64_t lo = u[i].lo > reach ? u[i].lo : reach + 1;
		if (u[i].hi >= lo)
			total += (double)u[i].hi - (double)lo + 1;
		if (u[i].hi > reach)
			reach = u[i].hi;
	}
	int64_t cap = total <= (double)npts ? (int64_t)total : npts + 2 * ns, n = 0;
	int64_t *v = malloc((size_t)(cap + 1) * sizeof *v);
	IR_ASSERT(v);
	if (total <= (double)npts) {
		/* every value of the domain */
		reach = INT64_MIN;
		for (int i = 0; i < ns; i++) {
			for (int64_t o = u[i].lo > reach ? u[i].lo : reach + 1; o <= u[i].hi; o++)
				v[n++] = o;
			if (u[i].hi > reach)
				reach = u[i].hi;
		}
	} else {
		double wsum = 0;
		for (int i = 0; i < ns; i++)
			wsum += s[i].w;
		uint64_t st = seed ^ ((uint64_t)fn << 32) ^ (uint64_t)f;
		for (int i = 0; i < ns; i++) {
			int64_t k = (int64_t)((double)npts * s[i].w / wsum);
			double a = of_ord(f, s[i].lo), b = of_ord(f, s[i].hi);
			double cnt = (double)s[i].hi - (double)s[i].lo + 1;
			v[n++] = s[i].lo;
			v[n++] = s[i].hi;
			for (int64_t j = 0; j < k && n < cap; j++) {
				double t = ((double)j + unit(&st)) / (double)k;
				int64_t o = s[i].lin ? vf_ord(f, mp_round_to(f, a + (b - a) * t))
						     : (int64_t)((double)s[i].lo + t * cnt);
				v[n++] = o < s[i].lo ? s[i].lo : o > s[i].hi ? s[i].hi : o;
			}
		}
	}
	qsort(v, (size_t)n, sizeof *v, cmp_i64);
	int64_t m = 0;
	for (int64_t i = 0; i < n; i++)
		if (m == 0 || v[i] != v[m - 1])
			v[m++] = v[i];
	*out = v;
	return m;
}

/* A random value of f: sign, mantissa and exponent uniform, the exponent in [-e, e]. */
static double rand_val(Dtype f, int e, uint64_t *st)
{
	int p = dt_info(f)->prec;
	uint64_t m = next(st) >> (64 - (p - 1));
	int x = (int)(next(st) % (uint64_t)(2 * e + 1)) - e;
	double v = ldexp(1.0 + ldexp((double)m, 1 - p), x);
	return next(st) & 1 ? -v : v;
}

/* Arguments of x / y and pow: n pairs into x and y (values of f). */
static void sweep2(VfUlpFn fn, Dtype f, int64_t n, uint64_t seed, double *x, double *y)
{
	uint64_t st = seed ^ ((uint64_t)fn << 32) ^ (uint64_t)f;
	int64_t k = 0;
	if (fn == VU_DIV) {
		static const double edge[][2] = {{1, 3}, {-1, 3}, {2, 3}, {10, 3}, {1, 7}, {7, 7},
						 {0, 3}, {1, 10}, {-5, -9}, {1, 1.5}};
		int e = f == DT_F64 ? 500 : f == DT_F16 ? 6 : 60;
		for (; k < n && k < (int64_t)ARRAY_LEN(edge); k++)
			x[k] = edge[k][0], y[k] = edge[k][1];
		for (; k < n; k++) {
			x[k] = rand_val(f, e, &st);
			y[k] = rand_val(f, e, &st);
		}
		return;
	}
	/* pow: x in [2^-e, 2^e] by ordinals, y in [-Y, Y]: |result| within 2^(e Y) */
	int e = f == DT_F64 ? 16 : f == DT_F16 ? 2 : 8;
	double ym = f == DT_F64 ? 32 : f == DT_F16 ? 6 : 8;
	static const double edge[][2] = {{2, 0.5}, {2, 3}, {4, 0.5}, {0.5, -3}, {1, 7}, {3, 0},
					 {10, 2}, {1.5, -2.5}};
	for (; k < n && k < (int64_t)ARRAY_LEN(edge); k++)
		x[k] = edge[k][0], y[k] = edge[k][1];
	int64_t lo = vf_ord(f, ldexp(1.0, -e)), hi = vf_ord(f, ldexp(1.0, e));
	for (; k < n; k++) {
		x[k] = of_ord(f, lo + (int64_t)(unit(&st) * (double)(hi - lo + 1)));
		double t = (2 * unit(&st) - 1) * ym;
		y[k] = mp_round_to(f, k % 8 == 0 ? nearbyint(t) : t);
	}
}

/* ------------------------------------------------------------ the graph */

typedef struct {
	int nf;
	VfUlpFn fn[VU__COUNT];
	int64_t npts[VU__COUNT];     /* distinct arguments of each */
	double *arg[VU__COUNT][2];   /* n values each (cycled past npts) */
	int64_t n;                   /* the graph's extent */
} Sweep;

static char *graph_text(const Sweep *w, Dtype f, unsigned mask)
{
	size_t cap = 8192;
	char *t = malloc(cap);
	IR_ASSERT(t);
	size_t len = 0;
#define PUT(...) (len += (size_t)snprintf(t + len, cap - len, __VA_ARGS__), IR_ASSERT(len < cap))
	const char *fm = dt_name(f);
	bool narrow = f == DT_F16 || f == DT_BF16;
	PUT("graph ulp_%s\nsize N = %lld\n", fm, (long long)w->n);
	for (int i = 0; i < w->nf; i++) {
		if (!(mask & 1u << w->fn[i]))
			continue;
		const Fn *F = &fns[w->fn[i]];
		PUT("input x_%s : %s[N]\n", F->id, fm);
		if (F->nargs == 2)
			PUT("input y_%s : %s[N]\n", F->id, fm);
	}
	for (int i = 0; i < w->nf; i++) {
		if (!(mask & 1u << w->fn[i]))
			continue;
		const Fn *F = &fns[w->fn[i]];
		PUT("r_%s[i:N] = %s", F->id, narrow ? "sum(j:1) " : "");
		if (!F->call)
			PUT("x_%s[i] / y_%s[i]\n", F->id, F->id);
		else if (F->nargs == 2)
			PUT("%s(x_%s[i], y_%s[i])\n", F->call, F->id, F->id);
		else
			PUT("%s(x_%s[i])\n", F->call, F->id);
	}
	PUT("output");
	for (int i = 0, c = 0; i < w->nf; i++)
		if (mask & 1u << w->fn[i])
			PUT("%s r_%s : %s", c++ ? "," : "", fns[w->fn[i]].id, fm);
	PUT("\nschedule\n");
	for (int i = 0; i < w->nf; i++) {
		if (!(mask & 1u << w->fn[i]))
			continue;
		if (narrow)
			PUT("accum r_%s : %s\n", fns[w->fn[i]].id, fm);
		PUT("store r_%s : %s\n", fns[w->fn[i]].id, fm);
	}
#undef PUT
	return t;
}

/* The graph of the functions in mask, its schedule and its inputs. */
static int build(const Sweep *w, Dtype f, unsigned mask, Graph **g, Schedule *s,
		 HostTensor **in, Diag *d)
{
	char *text = graph_text(w, f, mask);
	*g = ir_parse(text, strlen(text), "<ulp sweep>", NULL, 0, d);
	free(text);
	if (!*g)
		return -1;
	if (sched_build(*g, s, d)) {
		ir_free(*g);
		return -1;
	}
	int nin = ir_ninputs(*g);
	*in = calloc((size_t)nin + 1, sizeof **in);
	IR_ASSERT(*in);
	for (int k = 0; k < nin; k++) {
		const char *name = (*g)->tensors[ir_input_tensor(*g, k)].name;
		const double *src = NULL;
		for (int i = 0; i < w->nf && !src; i++)
			for (int a = 0; a < fns[w->fn[i]].nargs; a++)
				if (strcmp(name + 2, fns[w->fn[i]].id) == 0 && name[0] == "xy"[a])
					src = w->arg[i][a];
		IR_ASSERT(src);
		int64_t dims[1] = {w->n};
		IR_ASSERT(ht_alloc(&(*in)[k], f, 1, dims) == 0);
		for (int64_t j = 0; j < w->n; j++)
			ht_set(&(*in)[k], j, src[j]);
	}
	return 0;
}

static void free_in(const Graph *g, HostTensor *in)
{
	for (int k = 0; in && k < ir_ninputs(g); k++)
		ht_free(&in[k]);
	free(in);
}

static void free_outs(HostTensor *t, int n)
{
	for (int k = 0; t && k < n; k++)
		ht_free(&t[k]);
	free(t);
}

/* ------------------------------------------------------------ scoring */

/* Scores output `got` of function i against want and budget into r. */
static void score(const Sweep *w, int i, Dtype f, const HostTensor *got, const HostTensor *want,
		  const uint8_t *status, const HostTensor *budget, VfUlpRow *r)
{
	const double *x = w->arg[i][0], *y = w->arg[i][1];
	double worst = -1;
	for (int64_t k = 0; k < w->npts[i]; k++) {
		double g = ht_get(got, k), v = ht_get(want, k), b = ht_get(budget, k);
		if ((status && status[k] != MP_EXACT_OK) || !isfinite(v))
			continue;
		r->n_checked++;
		bool bounded = isfinite(b);
		if (!bounded)
			r->n_unbounded++;
		if (!isfinite(g)) {
			/* a special value where the exact one is finite: over a finite budget */
			if (!bounded)
				continue;
			r->n_over++;
			if (r->n_special++ == 0) {
				worst = INFINITY;
				r->worst_ulp = INFINITY;
				r->worst_x = x[k], r->worst_y = y ? y[k] : NAN;
				r->worst_got = g, r->worst_want = v;
				r->worst_allow = b / ulp_at(f, v);
			}
			continue;
		}
		double u = vf_ulp_dist(f, g, v), e = fabs(g - v);
		double ratio = e == 0 ? 0 : e / b;
		if (bounded && ratio > 1)
			r->n_over++;
		if (bounded && ratio > r->max_ratio) {
			r->max_ratio = ratio;
			r->ratio_x = x[k], r->ratio_y = y ? y[k] : NAN;
			r->ratio_got = g, r->ratio_want = v, r->ratio_budget = b;
		}
		if (u > worst) {
			worst = u;
			r->worst_ulp = u;
			r->worst_x = x[k], r->worst_y = y ? y[k] : NAN;
			r->worst_got = g, r->worst_want = v;
			r->worst_allow = b / ulp_at(f, v);
		}
	}
}

static void row_init(VfUlpRow *r, VfUlpFn fn, Dtype f, const Backend *b, int64_t npts)
{
	memset(r, 0, sizeof *r);
	r->fn = fn;
	r->fmt = f;
	r->backend = b->name;
	r->points = npts;
	r->worst_x = r->worst_y = r->ratio_x = r->ratio_y = NAN;
	r->ratio_got = r->ratio_want = r->ratio_budget = NAN;
	r->worst_got = r->worst_want = NAN;
	r->worst_allow = NAN;
	orc_allowance_text(b->name, fns[fn].op, f, r->allowance, sizeof r->allowance);
}

static void fail_row(VfUlpRow *r, const WorkerResult *wr)
{
	r->status = wr->status;
	const char *why = wr->reason ? wr->reason : "";
	/* the first line of the reason */
	size_t n = strcspn(why, "\n");
	snprintf(r->reason, sizeof r->reason, "%.*s", (int)n, why);
}

/* One backend: the worker on the whole graph, then one function at a time if it fails. */
static int run_backend(const Backend *b, const Sweep *w, Dtype f, const Graph *g,
		       const Schedule *s, const HostTensor *in, const HostTensor *want,
		       uint8_t *const *status, const VfUlpOpts *o, VfUlpRow *rows, Diag *d)
{
	char why[512] = "";
	for (int i = 0; i < w->nf; i++)
		row_init(&rows[i], w->fn[i], f, b, w->npts[i]);
	if (b->available(why, sizeof why) != 0) {
		for (int i = 0; i < w->nf; i++) {
			rows[i].status = WK_UNSUPPORTED;
			snprintf(rows[i].reason, sizeof rows[i].reason, "unavailable: %.200s", why);
		}
		return 0;
	}
	HostTensor *bud = calloc((size_t)g->noutputs + 1, sizeof *bud);
	IR_ASSERT(bud);
	if (orc_budget(g, s, b->name, in, bud, d)) {
		free(bud);
		return -1;
	}
	WorkerResult wr;
	int rc = -1;
	if (vf_worker_run(b, g, s, in, &o->w, &wr, d))
		goto out;
	if (wr.status == WK_OK) {
		for (int i = 0; i < w->nf; i++)
			score(w, i, f, &wr.outs[i], &want[i], status[i], &bud[i], &rows[i]);
	} else {
		for (int i = 0; i < w->nf; i++) {
			Graph *g1;
			Schedule s1;
			HostTensor *in1;
			WorkerResult w1;
			if (build(w, f, 1u << w->fn[i], &g1, &s1, &in1, d))
				goto out_worker;
			int r1 = vf_worker_run(b, g1, &s1, in1, &o->w, &w1, d);
			if (r1 == 0 && w1.status == WK_OK)
				score(w, i, f, &w1.outs[0], &want[i], status[i], &bud[i], &rows[i]);
			else if (r1 == 0)
				fail_row(&rows[i], &w1);
			if (r1 == 0)
				vf_worker_free(g1, &w1);
			free_in(g1, in1);
			sched_free(&s1);
			ir_free(g1);
			if (r1)
				goto out_worker;
		}
	}
	rc = 0;
out_worker:
	vf_worker_free(g, &wr);
out:
	free_outs(bud, g->noutputs);
	return rc;
}

int vf_ulp_sweep(const Backend *const *bes, int nbes, Dtype f, const VfUlpOpts *o,
		 VfUlpRow *rows, int *nrows, Diag *d)
{
	if (f != DT_F64 && f != DT_F32 && f != DT_F16 && f != DT_BF16) {
		diag_set(d, 2, "ulp sweep: format %s is not f64, f32, f16 or bf16", dt_name(f));
		return -1;
	}
	int64_t npts = o->points > 0 ? o->points : 1 << 16;
	unsigned mask = o->fns ? o->fns : (1u << VU__COUNT) - 1;
	Sweep w = {0};
	for (int fn = 0; fn < VU__COUNT; fn++)
		if (mask & 1u << fn)
			w.fn[w.nf++] = (VfUlpFn)fn;
	int64_t *ords[VU__COUNT] = {0};
	for (int i = 0; i < w.nf; i++) {
		w.npts[i] = fns[w.fn[i]].nargs == 2 ? npts : sweep1(w.fn[i], f, npts, o->seed, &ords[i]);
		if (w.npts[i] > w.n)
			w.n = w.npts[i];
	}
	for (int i = 0; i < w.nf; i++) {
		for (int a = 0; a < fns[w.fn[i]].nargs; a++) {
			w.arg[i][a] = malloc((size_t)w.n * sizeof(double));
			IR_ASSERT(w.arg[i][a]);
		}
		if (fns[w.fn[i]].nargs == 2) {
			sweep2(w.fn[i], f, w.npts[i], o->seed, w.arg[i][0], w.arg[i][1]);
		} else {
			for (int64_t k = 0; k < w.npts[i]; k++)
				w.arg[i][0][k] = of_ord(f, ords[i][k]);
		}
		free(ords[i]);
		for (int a = 0; a < fns[w.fn[i]].nargs; a++)
			for (int64_t k = w.npts[i]; k < w.n; k++)
				w.arg[i][a][k] = w.arg[i][a][k % w.npts[i]];
	}
	Graph *g = NULL;
	Schedule s;
	HostTensor *in = NULL, *want = NULL;
	uint8_t **status = NULL;
	int rc = -1;
	if (build(&w, f, mask, &g, &s, &in, d))
		goto out_args;
	want = calloc((size_t)g->noutputs + 1, sizeof *want);
	status = calloc((size_t)g->noutputs + 1, sizeof *status);
	IR_ASSERT(want && status);
	MpOpts mo = {.threads = o->threads};
	if (mp_exact(g, in, &mo, want, status, NULL, d))
		goto out_exact;
	for (int b = 0; b < nbes; b++)
		if (run_backend(bes[b], &w, f, g, &s, in, want, status, o, rows + (size_t)b * (size_t)w.nf, d))
			goto out_exact;
	*nrows = nbes * w.nf;
	rc = 0;
out_exact:
	for (int k = 0; k < g->noutputs; k++)
		free(status[k]);
	free(status);
	free_outs(want, g->noutputs);
	free_in(g, in);
	sched_free(&s);
	ir_free(g);
out_args:
	for (int i = 0; i < w.nf; i++)
		for (int a = 0; a < 2; a++)
			free(w.arg[i][a]);
	return rc;
}
