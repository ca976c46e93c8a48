/* reports/md.c: report.md, a summary fit for a pull-request comment: the headline (every
 * class of result with its count, rp_class_line), what made the run (provenance), one
 * table row per backend x format, the first distinct failures with where their repros are,
 * then apart the results with unclaimed special values and the flaky ones, and the
 * coverage of schedule directives and rules in two lines. GitHub-flavoured Markdown; table
 * cells have their pipes escaped and are cut to one line. A failing row never shows a
 * perfect-looking 0: a special-value mismatch shows what it was ("NaN vs 1.5").
 */
#include <math.h>
#include <string.h>
#include "reports.h"

enum { MAX_FAILURES = 10, MAX_OTHERS = 10, MAX_REASON = 220 };

/* Text for one table cell or list item: one line, pipes and backticks escaped, cut. */
static void cell(FILE *f, const char *s, size_t max)
{
	size_t n = 0;
	for (; s && *s && *s != '\n' && n < max; s++, n++) {
		if (*s == '|' || *s == '`' || *s == '*' || *s == '_' || *s == '<')
			fputc('\\', f);
		fputc(*s, f);
	}
	if (s && *s)
		fputs(" …", f);
}

static void ratio(FILE *f, const RpFig *F)
{
	char buf[64];
	fprintf(f, " %s |", rp_fig_worst(F, F->max_ratio, "%.3g", buf, sizeof buf));
}

static void pct(FILE *f, double x)
{
	if (isnan(x))
		fputs(" – |", f);
	else
		fprintf(f, x == 1 ? " %.0f%% |" : " %.2f%% |", 100 * x);
}

static void table(FILE *f, const RpSummary *s)
{
	fprintf(f, "| backend | format | results | pass | failures | unclaimed special values | "
		   "flaky | unsupported | worst error/budget | within budget | argmax agree | "
		   "top-k agree |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
	for (int g = 0; g <= s->ngroups; g++) {
		const RpFig *F = g < s->ngroups ? &s->groups[g].fig : &s->all;
		if (g < s->ngroups) {
			fputs("| ", f);
			cell(f, s->groups[g].backend, 40);
			fputs(" | ", f);
			cell(f, s->groups[g].dtype, 16);
			fputs(" |", f);
		} else {
			fputs("| **all** | |", f);
		}
		fprintf(f, " %lld | %lld | %lld | %lld | %lld | %lld |", (long long)F->results,
			(long long)F->classes[VC_PASS], (long long)F->classes[VC_FAILURE],
			(long long)F->classes[VC_UNCLAIMED], (long long)F->classes[VC_FLAKY],
			(long long)F->classes[VC_UNSUPPORTED]);
		ratio(f, F);
		pct(f, rp_frac_within(F));
		pct(f, rp_argmax_agree(F));
		pct(f, rp_topk_agree(F));
		fputc('\n', f);
	}
}

static void failures(FILE *f, const RpRun *run, const RpSummary *s)
{
	fprintf(f, "\n### Distinct failures (%d)\n\n", s->ndistinct);
	if (!s->ndistinct)
		fprintf(f, "None: %s\n", s->all.failing || s->all.classes[VC_FLAKY] ?
			"no result points at the compiler." :
			"every result is within its budget (or unsupported).");
	for (int k = 0; k < s->ndistinct && k < MAX_FAILURES; k++) {
		const RpDistinct *D = &s->distinct[k];
		const RpRecord *r = &run->recs[D->first];
		const RpFailure *F = D->folder >= 0 ? &run->fails[D->folder] : NULL;
		fprintf(f, "%d. **%s** ", k + 1, vf_verdict_name(r->verdict));
		if (r->verdict == V_SPECIAL_MISMATCH) {
			char sp[128];
			fputs("(", f);
			cell(f, rp_special_text(r, sp, sizeof sp), 120);
			fputs(") ", f);
		} else if (r->verdict == V_EMULATION_MISMATCH) {
			fprintf(f, "(bits ×%lld, within budget) ", (long long)r->emu_diff);
		}
		fputc('`', f);
		fputs(r->graph, f);
		fputc('`', f);
		if (*r->variant)
			fprintf(f, " (variant %s of case %lld)", r->variant, (long long)r->case_no);
		fprintf(f, " on %s, schedule %s, output %s, ×%lld: ", r->backend, r->sched,
			r->output, (long long)D->hits);
		cell(f, r->reason, MAX_REASON);
		fprintf(f, "\n   repro: `%s/%s`\n", run->dir, F ? (F->repro_path ? F->repro_path :
						F->name) : (*r->case_dir ? r->case_dir : r->file));
	}
	if (s->ndistinct > MAX_FAILURES)
		fprintf(f, "\n…and %d more (see index.html).\n", s->ndistinct - MAX_FAILURES);
}

/* The results of class c, listed apart from the failures, with what explains them. */
static void others(FILE *f, const RpRun *run, const RpSummary *s, VfClass c)
{
	int64_t n = s->all.classes[c];
	if (!n)
		return;
	if (c == VC_UNCLAIMED)
		fprintf(f, "\n### Unclaimed special values (%lld result%s)\n\nSpecial values (NaN, "
			   "±inf) where the error budget is +inf: the budget makes no claim there (the "
			   "schedule's own formats may overflow, a divisor may be 0), so these fail "
			   "`assay check` but are not compiler failures, and the fuzzer does not chase "
			   "them (docs/fuzz.md).\n\n", (long long)n, n == 1 ? "" : "s");
	else
		fprintf(f, "\n### Flaky (%lld result%s)\n\nA crash or timeout that a re-run of "
			   "the kernel alone did not reproduce: recorded, not a failure.\n\n",
			(long long)n, n == 1 ? "" : "s");
	int k = 0;
	for (int i = 0; i < run->nrecs && k < MAX_OTHERS; i++) {
		const RpRecord *r = &run->recs[i];
		if (r->cls != c)
			continue;
		char sp[128];
		fprintf(f, "%d. `", ++k);
		cell(f, r->graph, 60);
		fprintf(f, "` on %s, schedule %s, output %s (%s)", r->backend, r->sched, r->output,
			r->dtype);
		if (r->case_no >= 0)
			fprintf(f, ", case %lld", (long long)r->case_no);
		fputs(": ", f);
		if (c == VC_UNCLAIMED)
			cell(f, rp_special_text(r, sp, sizeof sp), 120);
		else
			cell(f, r->reason, MAX_REASON);
		fputc('\n', f);
	}
	if (n > k)
		fprintf(f, "\n…and %lld more (see index.html).\n", (long long)(n - k));
}

static void provenance(FILE *f, const RpRun *run)
{
	const RpProvenance *p = &run->prov;
	if (!p->present) {
		fputs("*No provenance recorded* (made before assay recorded provenance.json: the "
		      "version, commit, command line and devices of this run are unknown).\n\n", f);
		return;
	}
	fputs("Made by assay ", f);
	cell(f, p->version, 40);
	fputs(" (commit ", f);
	cell(f, p->commit, 60);
	fputs(") on `", f);
	cell(f, p->host, 80);
	fputs("` (", f);
	cell(f, p->os, 120);
	fputs("), ", f);
	cell(f, p->date, 40);
	fprintf(f, ", seed %llu", (unsigned long long)p->seed);
	if (*p->command) {
		fputs(": `", f);
		for (const char *c = p->command; *c; c++)   /* no backtick ends the code span */
			fputc(*c == '`' ? '\'' : *c, f);
		fputc('`', f);
	}
	fputs(".\n", f);
	for (int i = 0; i < p->nbackends; i++) {
		fputs("- ", f);
		cell(f, p->backends[i], 40);
		fputs(": ", f);
		cell(f, p->devices[i], 400);
		fputc('\n', f);
	}
	fputc('\n', f);
}

/* The compiler's coverage points in one line: the fraction, then what was never reached. */
static void points(FILE *f, const RpCoverage *c)
{
	if (!c->recorded) {
		fprintf(f, "**Compiler coverage**: no record carries coverage points.\n");
		return;
	}
	fprintf(f, "**Compiler coverage**: %d of %d reachable points (%.0f%%, over %lld cases); "
		"never reached:", c->nreached, c->nreachable,
		c->nreachable ? 100.0 * c->nreached / c->nreachable : 0.0, (long long)c->cases);
	const char *areas[32];
	int na = rp_cov_areas(areas, 32), never = 0;
	for (int a = 0; a < na; a++) {
		int np, nr, nh;
		rp_cov_area(c, areas[a], &np, &nr, &nh);
		if (!nr || nh == nr)
			continue;
		fprintf(f, "%s %s:", never++ ? ";" : "", areas[a]);
		for (int p = 0, k = 0; p < COV__COUNT; p++)
			if (!strcmp(vf_cov_area(p), areas[a]) && c->reachable[p] && !c->hits[p])
				fprintf(f, "%s `%s`", k++ ? "," : "", vf_cov_name(p));
	}
	fprintf(f, "%s", never ? "" : " none");
	for (int a = 0, k = 0; a < na; a++) {
		int np, nr, nh;
		rp_cov_area(c, areas[a], &np, &nr, &nh);
		if (!nr)
			fprintf(f, "%s %s (%d)", k++ ? "," : "; not reachable by the backends run:",
				areas[a], np);
	}
	fprintf(f, ".\n");
}

/* The metamorphic variants a campaign checked (docs/fuzz.md "Metamorphic variants"). */
static void variants(FILE *f, const RpSummary *s)
{
	if (!s->variant_results)
		return;
	fprintf(f, "\n**Metamorphic variants**: %lld results of variants (", (long long)s->variant_results);
	for (int i = 0; i < s->nvariants; i++)
		fprintf(f, "%s`%s` ×%lld", i ? ", " : "", s->variants[i].name,
			(long long)s->variants[i].count);
	fprintf(f, "), %lld failing (%lld bit-identity mismatches), %d distinct failures first "
		"found by a variant.\n", (long long)s->variant_failures,
		(long long)s->variant_mismatches, s->variant_distinct);
}

static void coverage(FILE *f, const RpSummary *s)
{
	fprintf(f, "\n**Schedule directives** exercised:");
	int n = 0;
	for (int i = 0; i < s->ndirs; i++)
		if (s->dirs[i].count)
			fprintf(f, "%s `%s` ×%lld", n++ ? "," : "", s->dirs[i].name,
				(long long)s->dirs[i].count);
	fprintf(f, "%s; never:", n ? "" : " none");
	for (int i = 0; i < s->ndirs_never; i++)
		fprintf(f, "%s `%s`", i ? "," : "", s->dirs_never[i]);
	fprintf(f, "%s.\n", s->ndirs_never ? "" : " none");
	points(f, &s->cov);
	if (!s->rules_recorded) {
		fprintf(f, "**Rewrite rules**: no record carries rule counts (ASSAY_NO_REWRITE=1?); "
			"%d known rules.\n", s->nrules);
		return;
	}
	int fired = 0;
	fprintf(f, "**Rewrite rules** exercised:");
	for (int i = 0; i < s->nrules; i++)
		if (s->rules[i].count)
			fprintf(f, "%s `%s` ×%lld", fired++ ? "," : "", s->rules[i].name,
				(long long)s->rules[i].count);
	fprintf(f, "%s (%d of %d rules, over %lld cases); never:", fired ? "" : " none", fired,
		s->nrules, (long long)s->rule_cases);
	for (int i = 0, k = 0; i < s->nrules; i++)
		if (!s->rules[i].count)
			fprintf(f, "%s `%s` (%s)", k++ ? "," : "", s->rules[i].name,
				rp_rule_domain(s->rules[i].domain));
	fprintf(f, "%s.\n", fired == s->nrules ? " none" : "");
}

void rp_markdown(FILE *f, const RpRun *run, const RpSummary *s, const char *out_dir)
{
	static const char *const icon[] = {"✅", "⚠️", "❌"};
	fprintf(f, "## assay: %s ", icon[rp_status(&s->all)]);
	rp_class_line(f, &s->all, " · ");
	fputs("\n\n", f);
	provenance(f, run);
	fprintf(f, "%s `%s`: %lld results over %d graphs and %lld cases", run->settings ?
		"Campaign" : "Check run", run->dir, (long long)s->all.results, s->ngraphs,
		run->settings ? (long long)run->cases : (long long)s->ncases);
	if (run->case_errors)
		fprintf(f, " (%lld the toolkit could not judge)", (long long)run->case_errors);
	fputs(".", f);
	if (s->all.emulated)
		fprintf(f, " %lld held to the emulating interpreter bit for bit.",
			(long long)s->all.emulated);
	fputs("\n\n", f);
	table(f, s);
	failures(f, run, s);
	others(f, run, s, VC_UNCLAIMED);
	others(f, run, s, VC_FLAKY);
	variants(f, s);
	rp_steps_markdown(f, run);
	coverage(f, s);
	fprintf(f, "\nFull report with plots: `%s/index.html`\n", out_dir);
}
