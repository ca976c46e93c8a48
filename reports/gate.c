/* reports/gate.c: evaluates a policy's gates over a run (and a baseline run).
 *
 * A gate selects the results in its scope (fnmatch on backend, output format and graph),
 * computes its metric over them (figures.c defines each) and compares it with the
 * threshold. A scope that matches no result gives no figure: the gate is reported "n/a"
 * and holds (metric `results` always has a figure, so `gate SCOPE results >= 1` insists
 * that a scope is present). With a baseline run, a gate also fails when its figure is worse
 * than the baseline's figure for the same scope: larger for max_ratio, max_ulp,
 * distinct_failures, special_mismatches, failing, flaky and emulation_mismatches; smaller
 * for frac_within, argmax_agree, topk_agree, results and emulated. Exact comparison: the same seeds give the same
 * figures, so any change is a change. After the gates, one line names the run's classes
 * of results (rp_class_line), as the report's headline does.
 */
#include <fnmatch.h>
#include <math.h>
#include <string.h>
#include "reports.h"

static bool in_scope(void *ctx, const RpRecord *r)
{
	const Gate *g = ctx;
	return fnmatch(g->backend, r->backend, 0) == 0 && fnmatch(g->dtype, r->dtype, 0) == 0 &&
	       fnmatch(g->graph, r->graph, 0) == 0;
}

static bool step_in_scope(void *ctx, const RpStep *s)
{
	const Gate *g = ctx;
	return fnmatch(g->backend, s->backend, 0) == 0 && fnmatch(g->dtype, "token", 0) == 0 &&
	       fnmatch(g->graph, s->model, 0) == 0;
}

/* Larger figures are worse for these metrics. */
static bool lower_is_better(GateMetric m)
{
	return m == GM_MAX_RATIO || m == GM_MAX_ULP || m == GM_DISTINCT_FAILURES ||
	       m == GM_SPECIAL_MISMATCHES || m == GM_FAILING || m == GM_FLAKY ||
	       m == GM_EMULATION_MISMATCHES || m == GM_MEAN_SIGNED_RATIO ||
	       m == GM_LICENSED_DIVERGENCES || m == GM_DEFECT_DIVERGENCES;
}

static double figure(const Gate *g, const RpRun *run, int64_t *results)
{
	if (g->metric == GM_TOKEN_AGREE || g->metric == GM_LICENSED_DIVERGENCES ||
	    g->metric == GM_DEFECT_DIVERGENCES) {
		RpStepFig S;
		rp_step_figures(run, step_in_scope, (void *)g, &S);
		*results = S.steps;
		if (S.steps == 0)
			return NAN;
		return g->metric == GM_TOKEN_AGREE ? (double)S.n[RP_STEP_AGREE] / S.steps :
		       g->metric == GM_LICENSED_DIVERGENCES ? (double)S.n[RP_STEP_LICENSED] :
		       (double)S.n[RP_STEP_DEFECT] + S.n[RP_STEP_FAILED];
	}
	RpFig F;
	rp_figures(run, in_scope, (void *)g, &F);
	*results = F.results;
	if (F.results == 0 && g->metric != GM_RESULTS)
		return NAN;
	switch (g->metric) {
	case GM_MAX_RATIO: return F.numeric ? F.max_ratio : NAN;
	case GM_MAX_ULP: return F.numeric ? F.max_ulp : NAN;
	case GM_MEAN_SIGNED_RATIO: return F.numeric ? F.max_bias : NAN;
	case GM_FRAC_WITHIN: return rp_frac_within(&F);
	case GM_ARGMAX_AGREE: return rp_argmax_agree(&F);
	case GM_TOPK_AGREE: return rp_topk_agree(&F);
	case GM_DISTINCT_FAILURES: return (double)F.distinct;
	case GM_SPECIAL_MISMATCHES: return (double)F.specials;
	case GM_FAILING: return (double)F.failing;
	case GM_RESULTS: return (double)F.results;
	case GM_FLAKY: return (double)F.classes[VC_FLAKY];
	case GM_EMULATION_MISMATCHES: return (double)F.verdicts[V_EMULATION_MISMATCH];
	case GM_EMULATED: return (double)F.emulated;
	default: return NAN;
	}
}

static bool compare(double x, GateOp op, double t)
{
	switch (op) {
	case GO_LE: return x <= t;
	case GO_LT: return x < t;
	case GO_GE: return x >= t;
	case GO_GT: return x > t;
	case GO_EQ: return x == t;
	}
	return false;
}

void rp_gate_eval(const Gate *g, const RpRun *run, const RpRun *baseline, GateResult *r)
{
	memset(r, 0, sizeof *r);
	r->figure = figure(g, run, &r->results);
	r->holds = isnan(r->figure) || compare(r->figure, g->op, g->threshold);
	r->base = NAN;
	if (baseline) {
		int64_t n;
		r->base = figure(g, baseline, &n);
		if (!isnan(r->base) && !isnan(r->figure))
			r->worse = lower_is_better(g->metric) ? r->figure > r->base :
								r->figure < r->base;
	}
}

static bool is_frac(GateMetric m)
{
	return m == GM_FRAC_WITHIN || m == GM_ARGMAX_AGREE || m == GM_TOPK_AGREE;
}

static void show(char *buf, size_t n, GateMetric m, double x)
{
	if (isnan(x))
		snprintf(buf, n, "n/a");
	else if (isinf(x))
		snprintf(buf, n, x > 0 ? "inf" : "-inf");
	else if (is_frac(m))
		snprintf(buf, n, "%.3f%%", 100 * x);
	else if (m == GM_MAX_RATIO || m == GM_MEAN_SIGNED_RATIO)
		snprintf(buf, n, "%.4g", x);
	else
		snprintf(buf, n, "%.0f", x);
}

int rp_gate_run(const RpPolicy *p, const RpRun *run, const RpRun *baseline, FILE *f)
{
	int failed = 0;
	fprintf(f, "%-5s %-24s %-19s %10s %-2s %-9s", "line", "scope", "metric", "figure", "op",
		"threshold");
	if (baseline)
		fprintf(f, " %10s", "baseline");
	fprintf(f, "  result\n");
	for (int i = 0; i < p->ngates; i++) {
		const Gate *g = &p->gates[i];
		GateResult r;
		rp_gate_eval(g, run, baseline, &r);
		bool ok = r.holds && !r.worse;
		failed += !ok;
		char fig[32], base[32] = "";
		show(fig, sizeof fig, g->metric, r.figure);
		if (baseline)
			show(base, sizeof base, g->metric, r.base);
		fprintf(f, "%-5d %-24s %-19s %10s %-2s %-9s", g->line, g->scope,
			rp_metric_name(g->metric), fig, rp_op_name(g->op), g->threshold_text);
		if (baseline)
			fprintf(f, " %10s", base);
		fprintf(f, "  %s", ok ? "pass" : "FAIL");
		if (isnan(r.figure))
			fprintf(f, " (%s)", r.results ? "no figure: no result in scope has one" :
							"no result in scope");
		if (!r.holds)
			fprintf(f, " (threshold)");
		if (r.worse)
			fprintf(f, " (worse than the baseline)");
		fputc('\n', f);
	}
	RpFig all;
	rp_figures(run, NULL, NULL, &all);
	fputs("results: ", f);
	rp_class_line(f, &all, ", ");
	fprintf(f, "\n%d gates: %d hold, %d fail -> %s\n", p->ngates, p->ngates - failed, failed,
		failed ? "FAIL" : "PASS");
	return failed;
}
