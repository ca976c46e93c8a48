/* reports/md.c: report.md, a summary fit for a pull-request comment: the headline, one
 * table row per backend x format, the first distinct failures with where their repros are,
 * and the coverage of schedule directives and rules in two lines. GitHub-flavoured
 * Markdown; table cells have their pipes escaped and are cut to one line.
 */
#include <math.h>
#include <string.h>
#include "reports.h"

enum { MAX_FAILURES = 10, MAX_REASON = 220 };

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
	if (!F->numeric)
		fputs(" – |", f);
	else if (isinf(F->max_ratio))
		fputs(" ∞ |", f);
	else
		fprintf(f, " %.3g |", F->max_ratio);
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
	fprintf(f, "| backend | format | results | pass | failing | worst error/budget | within "
		   "budget | argmax agree | top-k agree |\n|---|---|--:|--:|--:|--:|--:|--:|--:|\n");
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
		fprintf(f, " %lld | %lld | %lld |", (long long)F->results,
			(long long)F->verdicts[V_PASS], (long long)F->failing);
		ratio(f, F);
		pct(f, rp_frac_within(F));
		pct(f, rp_argmax_agree(F));
		pct(f, rp_topk_agree(F));
		fputc('\n', f);
	}
}

static void failures(FILE *f, const RpRun *run, const RpSummary *s)
{
	if (!s->ndistinct)
		return;
	fprintf(f, "\n### Distinct failures (%d)\n\n", s->ndistinct);
	for (int k = 0; k < s->ndistinct && k < MAX_FAILURES; k++) {
		const RpDistinct *D = &s->distinct[k];
		const RpRecord *r = &run->recs[D->first];
		const RpFailure *F = D->folder >= 0 ? &run->fails[D->folder] : NULL;
		fprintf(f, "%d. **%s** ", k + 1, vf_verdict_name(r->verdict));
		fputc('`', f);
		fputs(r->graph, f);
		fprintf(f, "` on %s, schedule %s, output %s, ×%lld: ", r->backend, r->sched,
			r->output, (long long)D->hits);
		cell(f, r->reason, MAX_REASON);
		fprintf(f, "\n   repro: `%s/%s`\n", run->dir, F ? (F->repro_path ? F->repro_path :
						F->name) : (*r->case_dir ? r->case_dir : r->file));
	}
	if (s->ndistinct > MAX_FAILURES)
		fprintf(f, "\n…and %d more (see index.html).\n", s->ndistinct - MAX_FAILURES);
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
	if (s->all.failing)
		fprintf(f, "## assay: ❌ %lld failing results, %d distinct failures\n\n",
			(long long)s->all.failing, s->ndistinct);
	else
		fprintf(f, "## assay: ✅ every result within budget\n\n");
	fprintf(f, "%s `%s`: %lld results over %d graphs and %lld cases", run->settings ?
		"Campaign" : "Check run", run->dir, (long long)s->all.results, s->ngraphs,
		run->settings ? (long long)run->cases : (long long)s->ncases);
	if (run->case_errors)
		fprintf(f, " (%lld the toolkit could not judge)", (long long)run->case_errors);
	fputs(".\n\n", f);
	table(f, s);
	failures(f, run, s);
	coverage(f, s);
	fprintf(f, "\nFull report with plots: `%s/index.html`\n", out_dir);
}
