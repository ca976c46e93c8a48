/* reports/junit.c: junit.xml in the shape CI systems read (the Ant JUnit schema as Jenkins,
 * GitLab and GitHub test reporters take it):
 *
 *   <testsuites name="assay" tests= failures= errors="0" skipped= time=>
 *     <testsuite name=GRAPH tests= failures= errors="0" skipped= time=>
 *       <testcase classname="assay.GRAPH" name="BACKEND/SCHEDULE" time=>
 *         <failure type=VERDICT message="...">each failing output, reason, repro</failure>
 *       | <skipped message="unsupported: ..."/>
 *
 * One test case per graph x backend x schedule (x campaign case): its outputs' records
 * are consecutive in results.jsonl. Suites come in order of graph name. A test case fails
 * when any output is of class failure (vf_class: what the report counts as a distinct
 * failure's result, and the fuzzer chases; the worst verdict, in verdict order but
 * emulation-mismatch below the others (it is within every budget), names the type), is skipped when every output is unsupported, else passes. A passing case whose
 * outputs hold unclaimed special values (special values only where the budget is +inf:
 * no claim broken, no compiler failure) says so in its <system-out>; one with a flaky
 * output carries a <flakyFailure type="flaky"> (Maven Surefire's element for a failure a
 * re-run did not reproduce, which Jenkins and GitLab show). A failure's text names the
 * repro: the failure folder of a campaign, else the case's folder of `assay check -o`.
 * Characters XML 1.0 cannot carry become '?'.
 */
#include <stdlib.h>
#include <string.h>
#include "reports.h"

static void xml(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
		switch (*p) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		case '\n': case '\t': fputc(*p, f); break;
		default: fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
		}
}

/* One line of s (for a message attribute). */
static void xml_line(FILE *f, const char *s, size_t max)
{
	size_t n = strcspn(s, "\n");
	char *t = strndup(s, n < max ? n : max);
	IR_ASSERT(t);
	xml(f, t);
	free(t);
}

/* Records [i, j) are one case: the same graph, backend, schedule and case number. */
static int case_end(const RpRun *run, int i)
{
	const RpRecord *a = &run->recs[i];
	int j = i + 1;
	for (; j < run->nrecs; j++) {
		const RpRecord *b = &run->recs[j];
		if (strcmp(a->graph, b->graph) || strcmp(a->backend, b->backend) ||
		    strcmp(a->sched, b->sched) || a->case_no != b->case_no ||
		    a->sched_seed != b->sched_seed)
			break;
	}
	return j;
}

typedef struct {
	int tests, failures, skipped;
	double time;
} Tally;

static const char *repro_of(const RpRun *run, const RpRecord *r)
{
	if (*r->failure_dir)
		return r->failure_dir;
	return *r->case_dir ? r->case_dir : "";
}

/* What a passing case's outputs of class c were: <system-out> for unclaimed special
 * values, <flakyFailure> for flaky ones. */
static void notes(FILE *f, const RpRun *run, int i, int j, VfClass c)
{
	const RpRecord *first = NULL;
	for (int k = i; k < j && !first; k++)
		first = run->recs[k].cls == c ? &run->recs[k] : NULL;
	if (!first)
		return;
	if (c == VC_FLAKY) {
		fputs("\n      <flakyFailure type=\"flaky\" message=\"flaky: output ", f);
		xml(f, first->output);
		fputs(": ", f);
		xml_line(f, first->reason, 300);
		fputs("\">", f);
	} else {
		fputs("\n      <system-out>", f);
	}
	for (int k = i; k < j; k++) {
		const RpRecord *r = &run->recs[k];
		if (r->cls != c)
			continue;
		char sp[128];
		fprintf(f, "output %s (%s): ", r->output, r->dtype);
		if (c == VC_UNCLAIMED) {
			fputs("unclaimed special values, ", f);
			xml(f, rp_special_text(r, sp, sizeof sp));
			fputs(", only where the budget is +inf (no claim: not a compiler failure)\n", f);
		} else if (c == VC_KNOWN) {
			fprintf(f, "%s, a known failure (the campaign's baseline lists ",
				vf_verdict_name(r->verdict));
			xml(f, r->signature);
			fputs(")\n", f);
		} else {
			fputs("flaky (a re-run did not reproduce it)\n", f);
		}
		xml(f, r->reason);
		fputc('\n', f);
	}
	fputs(c == VC_FLAKY ? "</flakyFailure>" : "</system-out>", f);
}

/* A failing verdict's rank for naming a test case's failure: verdict order, but an
 * emulation-mismatch (within every budget) below every other. */
static int rank(Verdict v)
{
	return v == V_EMULATION_MISMATCH ? 0 : (int)v + 1;
}

static void testcase(FILE *f, const RpRun *run, int i, int j, Tally *t)
{
	const RpRecord *a = &run->recs[i];
	int worst = -1, unsupported = 0, other = 0;
	for (int k = i; k < j; k++) {
		const RpRecord *r = &run->recs[k];
		unsupported += r->cls == VC_UNSUPPORTED;
		other += r->cls == VC_UNCLAIMED || r->cls == VC_FLAKY || r->cls == VC_KNOWN;
		if (r->cls == VC_FAILURE && (worst < 0 || rank(r->verdict) > worst))
			worst = rank(r->verdict);
	}
	t->tests++;
	t->time += a->worker_s;
	fputs("    <testcase classname=\"assay.", f);
	xml(f, a->graph);
	fputs("\" name=\"", f);
	xml(f, a->backend);
	fputc('/', f);
	xml(f, a->sched);
	if (a->case_no >= 0)
		fprintf(f, " case %lld", (long long)a->case_no);
	fprintf(f, "\" time=\"%.3f\"", a->worker_s);
	if (worst < 0 && unsupported < j - i && !other) {
		fputs("/>\n", f);
		return;
	}
	if (worst < 0 && unsupported < j - i) {
		fputc('>', f);
		notes(f, run, i, j, VC_FLAKY);
		notes(f, run, i, j, VC_UNCLAIMED);
		notes(f, run, i, j, VC_KNOWN);
		fputs("\n    </testcase>\n", f);
		return;
	}
	if (worst < 0) {
		t->skipped++;
		fputs("><skipped message=\"unsupported: ", f);
		xml_line(f, a->reason, 300);
		fputs("\"/></testcase>\n", f);
		return;
	}
	t->failures++;
	const RpRecord *w = NULL;
	for (int k = i; k < j && !w; k++)
		if (run->recs[k].cls == VC_FAILURE && rank(run->recs[k].verdict) == worst)
			w = &run->recs[k];
	fprintf(f, ">\n      <failure type=\"%s\" message=\"%s: output ", vf_verdict_name(w->verdict),
		vf_verdict_name(w->verdict));
	xml(f, w->output);
	fputs(": ", f);
	xml_line(f, w->reason, 300);
	fputs("\">", f);
	for (int k = i; k < j; k++) {
		const RpRecord *r = &run->recs[k];
		if (r->cls != VC_FAILURE && r->cls != VC_UNCLAIMED)
			continue;
		fprintf(f, "output %s (%s): %s%s\n", r->output, r->dtype, vf_verdict_name(r->verdict),
			r->cls == VC_UNCLAIMED ? " (unclaimed special values: not a compiler failure)" :
			"");
		xml(f, r->reason);
		fputc('\n', f);
	}
	fputs("repro: ", f);
	xml(f, run->dir);
	fputc('/', f);
	xml(f, repro_of(run, w));
	fputs("\n      </failure>", f);
	notes(f, run, i, j, VC_FLAKY);
	fputs("\n    </testcase>\n", f);
}

typedef struct {
	const RpRun *run;
	int start, end;
} Case;

static int by_graph(const void *a, const void *b)
{
	const Case *x = a, *y = b;
	int c = strcmp(x->run->recs[x->start].graph, y->run->recs[y->start].graph);
	return c ? c : x->start - y->start;
}

/* Writes one suite for cases [c, e) (one graph) to f, adding its tally to all. */
static void suite(FILE *f, const RpRun *run, const Case *c, int n, Tally *all)
{
	char *body = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&body, &len);
	IR_ASSERT(m);
	Tally t = {0};
	for (int k = 0; k < n; k++)
		testcase(m, run, c[k].start, c[k].end, &t);
	fclose(m);
	fputs("  <testsuite name=\"", f);
	xml(f, run->recs[c[0].start].graph);
	fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.3f\">\n",
		t.tests, t.failures, t.skipped, t.time);
	fputs(body, f);
	fputs("  </testsuite>\n", f);
	free(body);
	all->tests += t.tests, all->failures += t.failures, all->skipped += t.skipped;
	all->time += t.time;
}

void rp_junit(FILE *f, const RpRun *run)
{
	Case *cs = calloc((size_t)run->nrecs + 1, sizeof *cs);
	IR_ASSERT(cs);
	int nc = 0;
	for (int i = 0; i < run->nrecs; i = cs[nc++].end)
		cs[nc] = (Case){run, i, case_end(run, i)};
	qsort(cs, (size_t)nc, sizeof *cs, by_graph);   /* suites by graph name */
	char *body = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&body, &len);
	IR_ASSERT(m);
	Tally all = {0};
	for (int i = 0, j; i < nc; i = j) {
		for (j = i + 1; j < nc && !strcmp(run->recs[cs[j].start].graph,
						  run->recs[cs[i].start].graph); j++)
			;
		suite(m, run, cs + i, j - i, &all);
	}
	fclose(m);
	free(cs);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"assay\" "
		   "tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.3f\">\n",
		all.tests, all.failures, all.skipped, all.time);
	fputs(body, f);
	fputs("</testsuites>\n", f);
	free(body);
}
