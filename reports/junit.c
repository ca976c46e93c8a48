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
 * are consecutive in results.jsonl. Suites come in order of graph name. It fails when any output has a failing verdict (the
 * worst, in verdict order, names the type), is skipped when every output is unsupported,
 * else passes. A failure's text names the repro: the failure folder of a campaign, else
 * the case's folder of `assay check -o`. Characters XML 1.0 cannot carry become '?'.
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

static void testcase(FILE *f, const RpRun *run, int i, int j, Tally *t)
{
	const RpRecord *a = &run->recs[i];
	int worst = -1, unsupported = 0;
	for (int k = i; k < j; k++) {
		Verdict v = run->recs[k].verdict;
		unsupported += v == V_UNSUPPORTED;
		if (vf_verdict_fails(v) && (worst < 0 || (int)v > worst))
			worst = (int)v;
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
	if (worst < 0 && unsupported < j - i) {
		fputs("/>\n", f);
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
		if ((int)run->recs[k].verdict == worst)
			w = &run->recs[k];
	fprintf(f, ">\n      <failure type=\"%s\" message=\"%s: output ", vf_verdict_name(w->verdict),
		vf_verdict_name(w->verdict));
	xml(f, w->output);
	fputs(": ", f);
	xml_line(f, w->reason, 300);
	fputs("\">", f);
	for (int k = i; k < j; k++) {
		const RpRecord *r = &run->recs[k];
		if (!vf_verdict_fails(r->verdict))
			continue;
		fprintf(f, "output %s (%s): %s\n", r->output, r->dtype, vf_verdict_name(r->verdict));
		xml(f, r->reason);
		fputc('\n', f);
	}
	fputs("repro: ", f);
	xml(f, run->dir);
	fputc('/', f);
	xml(f, repro_of(run, w));
	fputs("\n      </failure>\n    </testcase>\n", f);
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
