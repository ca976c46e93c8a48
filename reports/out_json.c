/* reports/out_json.c: report.json, every figure of the report in one JSON object:
 *
 *   {"dir", "kind": "check" | "campaign", "graphs", "cases",
 *    "provenance": {"version", "commit", "command" (shell words), "cwd", "seed", "host",
 *                   "os", "date", "backends": [{"name", "device"}]} | null (none recorded),
 *    "totals": FIG, "groups": [{"backend", "dtype", ...FIG, "ratio_quantiles": {"p50",
 *               "p90", "p99", "max"}, "ulp_bits": {BITS: results}}],
 *    "distinct_failures": [{"signature", "count" (failing results), "cases" (that hit
 *                           it: the folder's count in a campaign), "verdict", "graph", "backend",
 *                           "schedule", "output", "reason", "folder", "repro"}],
 *    "failure_folders": [{"name", "repro", "count", "signature"}],
 *    "unclaimed_special_values", "flaky": [{"graph", "backend", "schedule", "output",
 *                   "dtype", "verdict", "special" (what the values were: rp_special_text;
 *                   null for flaky), "reason", "case" (campaigns; else null), "line"}],
 *    "directives": {"exercised": {KIND: cases}, "never": [KIND]},
 *    "rules": {"recorded": bool, "cases" (that recorded rules), "firings": {NAME: n} (every
 *              known rule, 0 when never fired), "exercised": {NAME: {"firings", "cases"}},
 *              "never": [NAME], "domains": {NAME: "exact" | "real" | "integer"}},
 *    "compiler_coverage": {"recorded": bool, "cases" (that recorded coverage), "points"
 *              (in compiler/cov.def), "reachable" (by the backends run), "reached",
 *              "fraction" (reached / reachable; null when none is reachable), "unknown"
 *              (names this build does not know), "areas": [{"area", "points", "reachable",
 *              "reached", "never": [NAME] (reachable, never reached)}], "reached_by":
 *              {NAME: cases} (the points reached)},
 *    "variants": {"results", "failing", "mismatches" (verdict variant-mismatch), "distinct"
 *                 (distinct failures a variant found first), "kinds": {KIND: results}}
 *                 (the records of metamorphic variants: fuzz/meta.c),
 *    "results": [{"graph", "backend", "schedule", "output", "dtype", "verdict", "class",
 *                 "special", "max_ulp", "max_ratio", "frac_within", "argmax_agree",
 *                 "topk_agree", "red_len", "case_dir", "line", "variant" (its name, or
 *                 null)}]}
 * A result's class is vf_class_name's; "special" names a special-value mismatch ("NaN vs
 * 1.5"; else null), whose max_ulp and max_ratio are then null (no ratio measures a NaN), as
 * are every figure of a result without numbers (crash, timeout, oob-write, compile-error,
 * flaky, unsupported).
 *
 * FIG = {"results", "verdicts": {VERDICT: n}, "classes": {CLASS: n}, "failing" (classes
 * failure and unclaimed-special), "numeric", "max_ratio", "max_ulp",
 * "frac_within", "argmax_agree", "topk_agree", "elements_checked", "elements_within",
 * "agree_rows", "special_mismatches", "emulated", "distinct_failures"}: figures.c defines
 * each; a
 * fraction with nothing to divide is null, a ratio over no numeric result is null.
 * Non-finite numbers are the strings "inf", "-inf", "nan" as in the records.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "reports.h"

static void key(FILE *f, const char *k, bool *first)
{
	fprintf(f, "%s\"%s\":", *first ? "" : ",", k);
	*first = false;
}

static void frac(FILE *f, double x)
{
	if (isnan(x))
		fputs("null", f);
	else
		rp_json_num_out(f, x);
}

/* {NAME: n} for k counts, name[i] naming n[i]. */
static void counts(FILE *f, const int64_t *n, const char *const *name, int k)
{
	for (int i = 0; i < k; i++)
		fprintf(f, "%s\"%s\":%lld", i ? "," : "{", name[i], (long long)n[i]);
	fputc('}', f);
}

static void fig(FILE *f, const RpFig *F, bool first)
{
	const char *vn[V__COUNT], *cn[VC__COUNT];
	for (int v = 0; v < V__COUNT; v++)
		vn[v] = vf_verdict_name((Verdict)v);
	for (int c = 0; c < VC__COUNT; c++)
		cn[c] = vf_class_name((VfClass)c);
	key(f, "results", &first), fprintf(f, "%lld", (long long)F->results);
	key(f, "verdicts", &first), counts(f, F->verdicts, vn, V__COUNT);
	key(f, "classes", &first), counts(f, F->classes, cn, VC__COUNT);
	key(f, "failing", &first), fprintf(f, "%lld", (long long)F->failing);
	key(f, "numeric", &first), fprintf(f, "%lld", (long long)F->numeric);
	key(f, "max_ratio", &first), frac(f, F->numeric ? F->max_ratio : NAN);
	key(f, "max_ulp", &first), frac(f, F->numeric ? F->max_ulp : NAN);
	key(f, "frac_within", &first), frac(f, rp_frac_within(F));
	key(f, "argmax_agree", &first), frac(f, rp_argmax_agree(F));
	key(f, "topk_agree", &first), frac(f, rp_topk_agree(F));
	key(f, "elements_checked", &first), fprintf(f, "%.0f", F->checked);
	key(f, "elements_within", &first), fprintf(f, "%.0f", F->within);
	key(f, "agree_rows", &first), fprintf(f, "%.0f", F->rows);
	key(f, "special_mismatches", &first), fprintf(f, "%lld", (long long)F->specials);
	key(f, "emulated", &first), fprintf(f, "%lld", (long long)F->emulated);
	key(f, "distinct_failures", &first), fprintf(f, "%lld", (long long)F->distinct);
}

static void distinct(FILE *f, const RpRun *run, const RpSummary *s)
{
	fputs(",\"distinct_failures\":[", f);
	for (int k = 0; k < s->ndistinct; k++) {
		const RpDistinct *D = &s->distinct[k];
		const RpRecord *r = &run->recs[D->first];
		const RpFailure *F = D->folder >= 0 ? &run->fails[D->folder] : NULL;
		fputs(k ? ",{\"signature\":" : "{\"signature\":", f);
		vf_json_str(f, D->signature);
		fprintf(f, ",\"count\":%lld,\"cases\":%lld,\"verdict\":", (long long)D->count,
			(long long)D->hits);
		vf_json_str(f, vf_verdict_name(r->verdict));
		fputs(",\"graph\":", f), vf_json_str(f, r->graph);
		fputs(",\"backend\":", f), vf_json_str(f, r->backend);
		fputs(",\"schedule\":", f), vf_json_str(f, r->sched);
		fputs(",\"output\":", f), vf_json_str(f, r->output);
		fputs(",\"reason\":", f), vf_json_str(f, r->reason);
		fputs(",\"folder\":", f), vf_json_str(f, F ? F->name : r->case_dir);
		fputs(",\"repro\":", f), vf_json_str(f, F && F->repro_path ? F->repro_path : "");
		fputc('}', f);
	}
	fputs("],\"failure_folders\":[", f);
	for (int i = 0; i < run->nfails; i++) {
		const RpFailure *F = &run->fails[i];
		fputs(i ? ",{\"name\":" : "{\"name\":", f);
		vf_json_str(f, F->name);
		fputs(",\"repro\":", f), vf_json_str(f, F->repro_path);
		fprintf(f, ",\"count\":%lld,\"signature\":", (long long)F->count);
		vf_json_str(f, F->signature);
		fputc('}', f);
	}
	fputc(']', f);
}

/* A record's graph, backend, schedule, output, dtype, verdict and special (what its
 * special values were, else null), members of an object begun by the caller. */
static void what(FILE *f, const RpRecord *r)
{
	char sp[128];
	fputs("\"graph\":", f), vf_json_str(f, r->graph);
	fputs(",\"backend\":", f), vf_json_str(f, r->backend);
	fputs(",\"schedule\":", f), vf_json_str(f, r->sched);
	fputs(",\"output\":", f), vf_json_str(f, r->output);
	fputs(",\"dtype\":", f), vf_json_str(f, r->dtype);
	fputs(",\"verdict\":", f), vf_json_str(f, vf_verdict_name(r->verdict));
	fputs(",\"special\":", f);
	if (r->verdict == V_SPECIAL_MISMATCH)
		vf_json_str(f, rp_special_text(r, sp, sizeof sp));
	else
		fputs("null", f);
}

/* The records of class c: unclaimed special values, or flaky ones. */
static void others(FILE *f, const RpRun *run, VfClass c, const char *name)
{
	fprintf(f, ",\"%s\":[", name);
	for (int i = 0, k = 0; i < run->nrecs; i++) {
		const RpRecord *r = &run->recs[i];
		if (r->cls != c)
			continue;
		fputs(k++ ? ",{" : "{", f);
		what(f, r);
		fputs(",\"reason\":", f), vf_json_str(f, r->reason);
		if (r->case_no >= 0)
			fprintf(f, ",\"case\":%lld", (long long)r->case_no);
		else
			fputs(",\"case\":null", f);
		fprintf(f, ",\"line\":%d}", r->line);
	}
	fputc(']', f);
}

static void provenance(FILE *f, const RpProvenance *p)
{
	fputs(",\"provenance\":", f);
	if (!p->present) {
		fputs("null", f);
		return;
	}
	const char *k[] = {"version", "commit", "command", "cwd", "host", "os", "date"};
	const char *v[] = {p->version, p->commit, p->command, p->cwd, p->host, p->os, p->date};
	for (size_t i = 0; i < ARRAY_LEN(k); i++) {
		fprintf(f, "%s\"%s\":", i ? "," : "{", k[i]);
		vf_json_str(f, v[i]);
	}
	fprintf(f, ",\"seed\":%llu,\"backends\":[", (unsigned long long)p->seed);
	for (int i = 0; i < p->nbackends; i++) {
		fputs(i ? ",{\"name\":" : "{\"name\":", f);
		vf_json_str(f, p->backends[i]);
		fputs(",\"device\":", f);
		vf_json_str(f, p->devices[i]);
		fputc('}', f);
	}
	fputs("]}", f);
}

static void coverage(FILE *f, const RpSummary *s)
{
	fputs(",\"directives\":{\"exercised\":{", f);
	for (int i = 0, k = 0; i < s->ndirs; i++)
		if (s->dirs[i].count) {
			fputs(k++ ? "," : "", f);
			vf_json_str(f, s->dirs[i].name);
			fprintf(f, ":%lld", (long long)s->dirs[i].count);
		}
	fputs("},\"never\":[", f);
	for (int i = 0; i < s->ndirs_never; i++) {
		fputs(i ? "," : "", f);
		vf_json_str(f, s->dirs_never[i]);
	}
	fprintf(f, "]},\"rules\":{\"recorded\":%s,\"cases\":%lld,\"firings\":{",
		s->rules_recorded ? "true" : "false", (long long)s->rule_cases);
	for (int i = 0; i < s->nrules; i++) {
		fputs(i ? "," : "", f);
		vf_json_str(f, s->rules[i].name);
		fprintf(f, ":%lld", (long long)s->rules[i].count);
	}
	fputs("},\"exercised\":{", f);
	for (int i = 0, k = 0; i < s->nrules; i++)
		if (s->rules[i].count) {
			fputs(k++ ? "," : "", f);
			vf_json_str(f, s->rules[i].name);
			fprintf(f, ":{\"firings\":%lld,\"cases\":%lld}", (long long)s->rules[i].count,
				(long long)s->rules[i].cases);
		}
	fputs("},\"never\":[", f);
	for (int i = 0, k = 0; i < s->nrules; i++)
		if (!s->rules[i].count) {
			fputs(k++ ? "," : "", f);
			vf_json_str(f, s->rules[i].name);
		}
	fputs("],\"domains\":{", f);
	for (int i = 0; i < s->nrules; i++) {
		fputs(i ? "," : "", f);
		vf_json_str(f, s->rules[i].name);
		fputc(':', f);
		vf_json_str(f, rp_rule_domain(s->rules[i].domain));
	}
	fputs("}}", f);
}

static void points(FILE *f, const RpCoverage *c)
{
	fprintf(f, ",\"compiler_coverage\":{\"recorded\":%s,\"cases\":%lld,\"points\":%d,"
		"\"reachable\":%d,\"reached\":%d,\"fraction\":", c->recorded ? "true" : "false",
		(long long)c->cases, COV__COUNT, c->nreachable, c->nreached);
	if (c->nreachable)
		rp_json_num_out(f, (double)c->nreached / c->nreachable);
	else
		fputs("null", f);
	fprintf(f, ",\"unknown\":%lld,\"areas\":[", (long long)c->unknown);
	const char *areas[32];
	int na = rp_cov_areas(areas, 32);
	for (int a = 0; a < na; a++) {
		int np, nr, nh;
		rp_cov_area(c, areas[a], &np, &nr, &nh);
		fprintf(f, "%s{\"area\":", a ? "," : "");
		vf_json_str(f, areas[a]);
		fprintf(f, ",\"points\":%d,\"reachable\":%d,\"reached\":%d,\"never\":[", np, nr, nh);
		for (int p = 0, k = 0; p < COV__COUNT; p++)
			if (!strcmp(vf_cov_area(p), areas[a]) && c->reachable[p] && !c->hits[p]) {
				fputs(k++ ? "," : "", f);
				vf_json_str(f, vf_cov_name(p));
			}
		fputs("]}", f);
	}
	fputs("],\"reached_by\":{", f);
	for (int p = 0, k = 0; p < COV__COUNT; p++)
		if (c->hits[p]) {
			fputs(k++ ? "," : "", f);
			vf_json_str(f, vf_cov_name(p));
			fprintf(f, ":%lld", (long long)c->hits[p]);
		}
	fputs("}}", f);
}

static void results(FILE *f, const RpRun *run)
{
	fputs(",\"results\":[", f);
	for (int i = 0; i < run->nrecs; i++) {
		const RpRecord *r = &run->recs[i];
		fputs(i ? ",\n{" : "\n{", f);
		what(f, r);
		fputs(",\"class\":", f), vf_json_str(f, vf_class_name(r->cls));
		bool nums = rp_has_numbers(r);
		fputs(",\"max_ulp\":", f), frac(f, rp_has_ratio(r) ? r->max_ulp : NAN);
		fputs(",\"max_ratio\":", f);
		frac(f, !rp_has_ratio(r) ? NAN :
		     r->f64_max_ratio > r->max_ratio ? r->f64_max_ratio : r->max_ratio);
		fputs(",\"frac_within\":", f), frac(f, nums ? r->frac_within : NAN);
		fputs(",\"argmax_agree\":", f), frac(f, nums ? r->argmax_agree : NAN);
		fputs(",\"topk_agree\":", f), frac(f, nums ? r->topk_agree : NAN);
		fprintf(f, ",\"red_len\":%lld,\"case_dir\":", (long long)r->red_len);
		vf_json_str(f, r->case_dir);
		fprintf(f, ",\"line\":%d,\"variant\":", r->line);
		if (*r->variant)
			vf_json_str(f, r->variant);
		else
			fputs("null", f);
		fputc('}', f);
	}
	fputs("]", f);
}

static void variants(FILE *f, const RpSummary *s)
{
	fprintf(f, ",\"variants\":{\"results\":%lld,\"failing\":%lld,\"mismatches\":%lld,"
		"\"distinct\":%d,\"kinds\":{", (long long)s->variant_results,
		(long long)s->variant_failures, (long long)s->variant_mismatches, s->variant_distinct);
	for (int i = 0; i < s->nvariants; i++) {
		fputs(i ? "," : "", f);
		vf_json_str(f, s->variants[i].name);
		fprintf(f, ":%lld", (long long)s->variants[i].count);
	}
	fputs("}}", f);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The distributions the plots draw, for one group: quantiles of the error/budget ratios
 * and the histogram of bits of error (ceil(log2(1 + ULPs))) of its results with a ratio
 * (rp_has_ratio: special-value mismatches have none). */
static void distributions(FILE *f, const RpRun *run, const RpGroup *g)
{
	double *x = malloc(((size_t)run->nrecs + 1) * sizeof *x);
	int64_t bits[65] = {0};
	IR_ASSERT(x);
	int n = 0;
	for (int i = 0; i < run->nrecs; i++) {
		const RpRecord *r = &run->recs[i];
		if (strcmp(r->backend, g->backend) || strcmp(r->dtype, g->dtype) ||
		    !rp_has_ratio(r))
			continue;
		x[n++] = r->f64_max_ratio > r->max_ratio ? r->f64_max_ratio : r->max_ratio;
		double b = ceil(log2(1 + r->max_ulp));
		bits[isfinite(b) && b < 64 ? (int)b : 64]++;
	}
	qsort(x, (size_t)n, sizeof *x, cmp_double);
	static const double q[] = {0.5, 0.9, 0.99, 1};
	static const char *qn[] = {"p50", "p90", "p99", "max"};
	fputs(",\"ratio_quantiles\":{", f);
	for (size_t k = 0; k < ARRAY_LEN(q); k++) {
		fprintf(f, "%s\"%s\":", k ? "," : "", qn[k]);
		frac(f, n ? x[(int)ceil(q[k] * n) - 1] : NAN);
	}
	fputs("},\"ulp_bits\":{", f);
	for (int b = 0, k = 0; b <= 64; b++)
		if (bits[b])
			fprintf(f, "%s\"%d\":%lld", k++ ? "," : "", b, (long long)bits[b]);
	fputc('}', f);
	free(x);
}

void rp_json_report(FILE *f, const RpRun *run, const RpSummary *s)
{
	fputs("{\"dir\":", f);
	vf_json_str(f, run->dir);
	fprintf(f, ",\"kind\":\"%s\",\"graphs\":%d,\"cases\":%d",
		run->settings ? "campaign" : "check", s->ngraphs, s->ncases);
	provenance(f, &run->prov);
	fputs(",\"totals\":{", f);
	fig(f, &s->all, true);
	fputs("},\"groups\":[", f);
	for (int g = 0; g < s->ngroups; g++) {
		fputs(g ? ",{\"backend\":" : "{\"backend\":", f);
		vf_json_str(f, s->groups[g].backend);
		fputs(",\"dtype\":", f);
		vf_json_str(f, s->groups[g].dtype);
		fig(f, &s->groups[g].fig, false);
		distributions(f, run, &s->groups[g]);
		fputc('}', f);
	}
	fputc(']', f);
	distinct(f, run, s);
	others(f, run, VC_UNCLAIMED, "unclaimed_special_values");
	others(f, run, VC_FLAKY, "flaky");
	coverage(f, s);
	points(f, &s->cov);
	variants(f, s);
	results(f, run);
	fputs("}\n", f);
}
