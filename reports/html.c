/* reports/html.c: index.html, one self-contained page: inline CSS, the plots embedded as
 * data: URIs of their SVG (each image isolated from the others' ids), no script and no
 * network. Sections: a headline (every class of result with its count, rp_class_line) and
 * what made the run (provenance: assay's version and commit, the command, seed, host,
 * date and devices), a summary per backend x format, the plots, the distinct failures
 * with their repros inline and links to their folders, then apart the results with
 * unclaimed special values and the flaky ones, the schedule directives and rewrite rules
 * exercised (and never exercised), every result, and a campaign's settings. A failing row
 * never shows a perfect-looking 0: a special-value mismatch shows what it was ("NaN vs
 * 1.5"), a crash or compile error no numbers.
 *
 * Links to the run's folders are relative to the report's folder, so the pair can be
 * moved together or published as CI artifacts. Every text that comes from a record is
 * escaped.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "reports.h"

enum { MAX_ROWS = 2000, REASON_MAX = 240 };

void rp_html_esc(FILE *f, const char *s)
{
	for (; s && *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
}

static void base64(FILE *f, const unsigned char *s, size_t n)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
			     (i + 2 < n ? s[i + 2] : 0);
		fputc(t[v >> 18 & 63], f);
		fputc(t[v >> 12 & 63], f);
		fputc(i + 1 < n ? t[v >> 6 & 63] : '=', f);
		fputc(i + 2 < n ? t[v & 63] : '=', f);
	}
}

/* The path of dir/rel relative to the folder out (out and dir exist; rel need not). */
static char *link_to(const char *out, const char *dir, const char *rel)
{
	char a[PATH_MAX], b[PATH_MAX], *s = NULL;
	if (!realpath(out, a) || !realpath(dir, b)) {
		IR_ASSERT(asprintf(&s, "%s/%s", dir, rel) >= 0);
		return s;
	}
	/* the longest common prefix that ends at a component boundary of both */
	size_t common = 0, i = 0;
	for (; a[i] && a[i] == b[i]; i++)
		if (a[i] == '/')
			common = i;
	if ((a[i] == 0 || a[i] == '/') && (b[i] == 0 || b[i] == '/'))
		common = i;
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	IR_ASSERT(m);
	for (const char *p = a + common; *p; p++)
		if (*p == '/')
			fputs("../", m);
	const char *rest = b + common + (b[common] == '/');
	fprintf(m, "%s%s%s", rest, *rest ? "/" : "", rel);
	fclose(m);
	return buf;
}

static const char css[] =
	"body{font-family:-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Helvetica,Arial,sans-serif;"
	"color:#222;background:#fafafa;margin:0;line-height:1.45}"
	"main{max-width:1320px;margin:0 auto;padding:24px 32px 48px}"
	"header{background:#1f2d3d;color:#fff;padding:22px 32px}"
	"header h1{margin:0;font-size:26px;font-weight:600}header p{margin:6px 0 0;color:#c9d3dd}"
	"h2{font-size:20px;border-bottom:2px solid #e3e7ec;padding-bottom:6px;margin-top:36px}"
	"h3{font-size:16px;margin:18px 0 6px}figure h3{margin:2px 0 4px;text-align:center}"
	".badge{display:inline-block;padding:4px 12px;border-radius:14px;font-weight:600;"
	"margin-top:10px}.ok{background:#2e7d32;color:#fff}.bad{background:#c62828;color:#fff}"
	"table{border-collapse:collapse;background:#fff;font-size:13.5px;margin:8px 0;"
	"box-shadow:0 1px 2px rgba(0,0,0,.06)}"
	"th,td{padding:5px 10px;border-bottom:1px solid #eceff3;text-align:left;vertical-align:top}"
	"th{background:#f1f4f7;font-weight:600}tr:nth-child(even) td{background:#fbfcfd}"
	"td.n{text-align:right;font-variant-numeric:tabular-nums}"
	".pill{padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;white-space:nowrap}"
	".v-pass{background:#e6f4e7;color:#1b5e20}.v-unsupported{background:#eee;color:#555}"
	".v-fail{background:#fde8e8;color:#b71c1c}.v-warn{background:#fff4d6;color:#7a5a00}"
	".warn{background:#f0b400;color:#222}header .prov{font-size:13px;margin-top:10px}"
	"header code{color:#fff;background:rgba(255,255,255,.12);padding:1px 4px;border-radius:3px;"
	"overflow-wrap:anywhere}header ul{margin:4px 0 0;padding-left:20px;font-size:13px;"
	"color:#c9d3dd}"
	".plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:18px}"
	"figure{margin:0;background:#fff;padding:10px;border:1px solid #e3e7ec;border-radius:6px}"
	"figure img{width:100%;height:auto;display:block}"
	"figcaption{font-size:13px;color:#555;margin-top:6px}"
	"pre{background:#f6f8fa;border:1px solid #e3e7ec;padding:8px 10px;overflow:auto;"
	"font-size:12.5px;max-height:360px;margin:6px 0}"
	"code{font-size:12.5px}.note{color:#7a5a00;background:#fff8e1;padding:8px 12px;"
	"border-left:4px solid #f0b400}.muted{color:#777}a{color:#1565c0}"
	"details summary{cursor:pointer;color:#1565c0}td.why{overflow-wrap:anywhere;max-width:560px}"
	"td a{overflow-wrap:anywhere}";

/* The verdict, coloured by its class; unclaimed special values say so. */
static void pill(FILE *f, const RpRecord *r)
{
	static const char *const cls[VC__COUNT] = {
		[VC_PASS] = "v-pass", [VC_FAILURE] = "v-fail", [VC_UNCLAIMED] = "v-warn",
		[VC_FLAKY] = "v-warn", [VC_UNSUPPORTED] = "v-unsupported", [VC_KNOWN] = "v-warn",
	};
	fprintf(f, "<span class=\"pill %s\">%s%s</span>", cls[r->cls], vf_verdict_name(r->verdict),
		r->cls == VC_UNCLAIMED ? " (unclaimed)" : r->cls == VC_KNOWN ? " (known)" : "");
}

static void num(FILE *f, double x, const char *fmt)
{
	fputs("<td class=\"n\">", f);
	if (isnan(x))
		fputs("<span class=\"muted\">–</span>", f);
	else if (isinf(x))
		fputs(x > 0 ? "∞" : "−∞", f);
	else
		fprintf(f, fmt, x);
	fputs("</td>", f);
}

static void pct(FILE *f, double x)
{
	num(f, isnan(x) ? x : 100 * x, x == 1 ? "%.0f%%" : "%.2f%%");
}

static void provenance(FILE *f, const RpProvenance *p)
{
	if (!p->present) {
		fputs("<p class=\"prov\">No provenance recorded (made before assay recorded "
		      "provenance.json: the version, commit, command line and devices of this run are "
		      "unknown).</p>", f);
		return;
	}
	fputs("<p class=\"prov\">Made by assay ", f);
	rp_html_esc(f, p->version);
	fputs(" (commit <code>", f);
	rp_html_esc(f, p->commit);
	fputs("</code>) on <code>", f);
	rp_html_esc(f, p->host);
	fputs("</code> (", f);
	rp_html_esc(f, p->os);
	fputs(") · ", f);
	rp_html_esc(f, p->date);
	fprintf(f, " · seed %llu", (unsigned long long)p->seed);
	if (*p->command) {
		fputs("<br><code>", f);
		rp_html_esc(f, p->command);
		fputs("</code>", f);
	}
	fputs("</p><ul>", f);
	for (int i = 0; i < p->nbackends; i++) {
		fputs("<li><b>", f);
		rp_html_esc(f, p->backends[i]);
		fputs("</b>: ", f);
		rp_html_esc(f, p->devices[i]);
		fputs("</li>", f);
	}
	fputs("</ul>", f);
}

static void head(FILE *f, const RpRun *run, const RpSummary *s)
{
	char when[64];
	time_t t = time(NULL);
	strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime(&t));
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		   "<meta name=\"viewport\" content=\"width=device-width\"><title>assay report: ");
	rp_html_esc(f, run->dir);
	fprintf(f, "</title><style>%s</style></head><body>\n<header><h1>assay report</h1><p>", css);
	fprintf(f, "%s <code>", run->settings ? "Campaign" : "Check run");
	rp_html_esc(f, run->dir);
	fprintf(f, "</code> · %lld results · %d graphs · %d cases", (long long)s->all.results,
		s->ngraphs, run->settings ? (int)run->cases : s->ncases);
	if (run->case_errors)
		fprintf(f, " (%lld the toolkit could not judge)", (long long)run->case_errors);
	fprintf(f, " · report made %s</p>", when);
	static const char *const badge[] = {"ok", "warn", "bad"};
	fprintf(f, "<div class=\"badge %s\">", badge[rp_status(&s->all)]);
	rp_class_line(f, &s->all, " · ");
	fputs("</div>", f);
	if (s->all.emulated)
		fprintf(f, "<p class=\"muted\">%lld of %lld results held to the emulating interpreter "
			   "bit for bit, where their arithmetic is fully specified (docs/oracle.md).</p>",
			(long long)s->all.emulated, (long long)s->all.results);
	provenance(f, &run->prov);
	fprintf(f, "</header>\n<main>\n");
}

static void summary(FILE *f, const RpSummary *s)
{
	fprintf(f, "<section id=\"summary\"><h2>Summary per backend and format</h2>\n<table><tr>"
		   "<th>backend</th><th>format</th><th>results</th><th>pass</th><th>failures</th>"
		   "<th>unclaimed special values</th><th>flaky</th>"
		   "<th>unsupported</th><th>worst error/budget</th><th>within budget</th>"
		   "<th>argmax agree</th><th>top-k agree</th><th>max ULP</th>"
		   "<th>distinct failures</th></tr>\n");
	for (int g = 0; g <= s->ngroups; g++) {
		const RpFig *F = g < s->ngroups ? &s->groups[g].fig : &s->all;
		fputs("<tr><td>", f);
		if (g < s->ngroups) {
			rp_html_esc(f, s->groups[g].backend);
			fputs("</td><td>", f);
			rp_html_esc(f, s->groups[g].dtype);
		} else {
			fputs("<b>all</b></td><td>", f);
		}
		fprintf(f, "</td><td class=\"n\">%lld</td>", (long long)F->results);
		static const VfClass order[] = {VC_PASS, VC_FAILURE, VC_UNCLAIMED, VC_FLAKY,
						VC_UNSUPPORTED};
		for (size_t c = 0; c < ARRAY_LEN(order); c++)
			fprintf(f, "<td class=\"n\">%lld</td>", (long long)F->classes[order[c]]);
		char worst[64];
		fprintf(f, "<td class=\"n\">%s</td>", rp_fig_worst(F, F->max_ratio, "%.3g", worst,
								    sizeof worst));
		pct(f, rp_frac_within(F));
		pct(f, rp_argmax_agree(F));
		pct(f, rp_topk_agree(F));
		fprintf(f, "<td class=\"n\">%s</td>", rp_fig_worst(F, F->max_ulp, "%.0f", worst,
								    sizeof worst));
		fprintf(f, "<td class=\"n\">%lld</td></tr>\n", (long long)F->distinct);
	}
	fprintf(f, "</table></section>\n");
}

static void plots(FILE *f, const RpPlot *p, int n, const char *note)
{
	fprintf(f, "<section id=\"plots\"><h2>Plots</h2>\n");
	if (note) {
		fputs("<p class=\"note\">", f);
		rp_html_esc(f, note);
		fputs("</p>\n", f);
	}
	fprintf(f, "<div class=\"plots\">\n");
	for (int i = 0; i < n; i++) {
		fprintf(f, "<figure><h3>");
		rp_html_esc(f, p[i].title);
		fprintf(f, "</h3><img alt=\"");
		rp_html_esc(f, p[i].title);
		fprintf(f, "\" src=\"data:image/svg+xml;base64,");
		base64(f, (const unsigned char *)p[i].svg, strlen(p[i].svg));
		fprintf(f, "\"><figcaption>");
		rp_html_esc(f, p[i].caption);
		fprintf(f, " <a href=\"plots/%s\">SVG</a></figcaption></figure>\n", p[i].file);
	}
	fprintf(f, "</div></section>\n");
}

/* The command line that reproduces a record of a check run. */
static void command(FILE *f, const RpRecord *r, const char *case_link)
{
	fputs("<pre>", f);
	if (*r->faults) {
		fputs("ASSAY_FAULT=", f);
		rp_html_esc(f, r->faults);
		fputc(' ', f);
	}
	fputs("assay check ", f);
	rp_html_esc(f, *r->file ? r->file : r->graph);
	fprintf(f, " --backends ");
	rp_html_esc(f, r->backend);
	if (*r->sched_text && case_link) {
		fputs(" --schedule ", f);
		rp_html_esc(f, case_link);
		fputs("/schedule.txt", f);
	}
	fprintf(f, " --seed %llu", (unsigned long long)r->seed);
	if (*r->inputs) {
		fputs(" --inputs ", f);
		rp_html_esc(f, r->inputs);
	}
	fputs("</pre>", f);
	if (*r->sched_text) {
		fputs("<pre>", f);
		rp_html_esc(f, r->sched_text);
		fputs("</pre>", f);
	}
}

/* The first line of a reason, cut to REASON_MAX characters (the rest is in the repro). */
static void reason(FILE *f, const char *s)
{
	size_t n = strcspn(s, "\n");
	char *t = strndup(s, n < REASON_MAX ? n : REASON_MAX);
	IR_ASSERT(t);
	rp_html_esc(f, t);
	if (s[n] || n > REASON_MAX)
		fputs(" …", f);
	free(t);
}

/* What a special-value mismatch was, in bold before its reason. */
static void special(FILE *f, const RpRecord *r)
{
	if (r->verdict != V_SPECIAL_MISMATCH)
		return;
	char sp[128];
	fputs("<b>", f);
	rp_html_esc(f, rp_special_text(r, sp, sizeof sp));
	fputs("</b>: ", f);
}

static void failure_row(FILE *f, const RpRun *run, const RpDistinct *D, int k, const char *out)
{
	const RpRecord *r = &run->recs[D->first];
	const RpFailure *F = D->folder >= 0 ? &run->fails[D->folder] : NULL;
	fprintf(f, "<tr><td class=\"n\">%d</td><td>", k + 1);
	pill(f, r);
	fputs("</td><td>", f);
	rp_html_esc(f, r->graph);
	if (*r->variant) {
		fputs("<br><small>variant ", f);
		rp_html_esc(f, r->variant);
		fprintf(f, " of case %lld</small>", (long long)r->case_no);
	}
	fputs("</td><td>", f);
	rp_html_esc(f, r->backend);
	fputs("</td><td>", f);
	rp_html_esc(f, r->sched);
	fputs("</td><td>", f);
	rp_html_esc(f, r->output);
	fprintf(f, "</td><td class=\"n\">%lld</td><td class=\"why\">", (long long)D->hits);
	special(f, r);
	reason(f, r->reason);
	fputs("<details><summary>repro</summary>", f);
	if (strlen(r->reason) > REASON_MAX || strchr(r->reason, '\n')) {
		fputs("<pre>", f);
		rp_html_esc(f, r->reason);
		fputs("</pre>", f);
	}
	char *link = NULL;
	if (F) {
		link = link_to(out, run->dir, F->name);
		fputs("<pre>", f);
		rp_html_esc(f, F->repro ? F->repro : "(the repro could not be read)");
		fputs("</pre>", f);
	} else {
		link = *r->case_dir ? link_to(out, run->dir, r->case_dir) : NULL;
		command(f, r, link);
	}
	fputs("</details></td><td>", f);
	if (link) {
		fputs("<a href=\"", f);
		rp_html_esc(f, link);
		fputs("/\">", f);
		rp_html_esc(f, F ? F->name : r->case_dir);
		fputs("</a>", f);
	}
	fputs("</td></tr>\n", f);
	free(link);
}

static void failures(FILE *f, const RpRun *run, const RpSummary *s, const char *out)
{
	fprintf(f, "<section id=\"failures\"><h2>Distinct failures</h2>\n");
	if (!s->ndistinct && !run->nfails) {
		fprintf(f, "<p>None: %s</p></section>\n", s->all.failing || s->all.classes[VC_FLAKY] ?
			"no result points at the compiler (the results below are not compiler "
			"failures)." : "every result is within its budget (or unsupported).");
		return;
	}
	fprintf(f, "<table><tr><th>#</th><th>verdict</th><th>graph</th><th>backend</th>"
		   "<th>schedule</th><th>output</th><th>count</th><th>first reason and repro</th>"
		   "<th>folder</th></tr>\n");
	for (int k = 0; k < s->ndistinct; k++)
		failure_row(f, run, &s->distinct[k], k, out);
	fprintf(f, "</table>\n");
	/* folders no failing record points at (a campaign's dedup may group differently) */
	for (int i = 0; i < run->nfails; i++) {
		bool shown = false;
		for (int k = 0; k < s->ndistinct && !shown; k++)
			shown = s->distinct[k].folder == i;
		if (shown)
			continue;
		char *link = link_to(out, run->dir, run->fails[i].name);
		fputs("<h3>Failure folder <a href=\"", f);
		rp_html_esc(f, link);
		fputs("/\">", f);
		rp_html_esc(f, run->fails[i].name);
		fputs("</a></h3><pre>", f);
		rp_html_esc(f, run->fails[i].repro ? run->fails[i].repro : "");
		fputs("</pre>\n", f);
		free(link);
	}
	fprintf(f, "</section>\n");
}

/* The results of class c, apart from the failures, with what explains them and how to
 * run each again. */
static void others(FILE *f, const RpRun *run, const RpSummary *s, VfClass c, const char *out)
{
	int64_t n = s->all.classes[c];
	if (!n)
		return;
	if (c == VC_UNCLAIMED)
		fprintf(f, "<section id=\"unclaimed\"><h2>Unclaimed special values</h2>\n<p>%lld "
			   "result%s with special values (NaN, ±inf) only where the error budget is "
			   "+inf: the budget makes no claim there (the schedule's own formats may "
			   "overflow, a divisor or a log argument may be 0), so <code>assay check</code> "
			   "fails them but they are not compiler failures; the fuzzer does not chase "
			   "them (docs/fuzz.md, \"Failures the fuzzer does not chase\").</p>\n",
			(long long)n, n == 1 ? "" : "s");
	else
		fprintf(f, "<section id=\"flaky\"><h2>Flaky results</h2>\n<p>%lld result%s whose "
			   "crash or timeout a re-run of the kernel alone did not reproduce: recorded, "
			   "not failures (a policy may gate on <code>flaky</code>).</p>\n",
			(long long)n, n == 1 ? "" : "s");
	fprintf(f, "<table><tr><th>#</th><th>verdict</th><th>graph</th><th>backend</th>"
		   "<th>schedule</th><th>output</th><th>format</th><th>%s</th><th>run again</th>"
		   "</tr>\n", c == VC_UNCLAIMED ? "kernel vs oracle, and why" : "reason");
	for (int i = 0, k = 0; i < run->nrecs && k < MAX_ROWS; i++) {
		const RpRecord *r = &run->recs[i];
		if (r->cls != c)
			continue;
		fprintf(f, "<tr><td class=\"n\">%d</td><td>", ++k);
		pill(f, r);
		const char *cells[] = {r->graph, r->backend, r->sched, r->output, r->dtype};
		for (size_t j = 0; j < ARRAY_LEN(cells); j++) {
			fputs("</td><td>", f);
			rp_html_esc(f, cells[j]);
		}
		fputs("</td><td class=\"why\">", f);
		special(f, r);
		reason(f, r->reason);
		fputs("</td><td>", f);
		if (r->case_no >= 0) {
			fputs("<code>assay fuzz --replay ", f);
			rp_html_esc(f, run->dir);
			fprintf(f, " %lld</code>", (long long)r->case_no);
		} else {
			char *link = *r->case_dir ? link_to(out, run->dir, r->case_dir) : NULL;
			command(f, r, link);
			free(link);
		}
		fputs("</td></tr>\n", f);
	}
	fprintf(f, "</table></section>\n");
}

/* The rules fired (firings, cases) and those never fired, by domain. */
static void rules(FILE *f, const RpSummary *s)
{
	if (!s->rules_recorded)
		fprintf(f, "<p class=\"note\">No record carries rule counts: the run was made with "
			   "ASSAY_NO_REWRITE=1 (or by an assay that did not rewrite before lowering), "
			   "so every rule is listed as never exercised.</p>\n");
	else
		fprintf(f, "<p>Before lowering, the compiler rewrites each graph by its exact and "
			   "integer rules (compiler/sched/rewrite.c); the oracle evaluates the graph as "
			   "written. Firings are summed over the %lld cases that recorded them.</p>\n",
			(long long)s->rule_cases);
	int fired = 0;
	for (int i = 0; i < s->nrules; i++)
		fired += s->rules[i].count > 0;
	if (fired) {
		fprintf(f, "<table><tr><th>rule exercised</th><th>domain</th><th>firings</th>"
			   "<th>cases</th></tr>\n");
		for (int i = 0; i < s->nrules; i++) {
			const RpRule *r = &s->rules[i];
			if (!r->count)
				continue;
			fputs("<tr><td><code>", f);
			rp_html_esc(f, r->name);
			fprintf(f, "</code></td><td>%s</td><td class=\"n\">%lld</td><td class=\"n\">"
				"%lld</td></tr>\n", rp_rule_domain(r->domain), (long long)r->count,
				(long long)r->cases);
		}
		fputs("</table>\n", f);
	}
	fprintf(f, "<p>Never exercised (%d of %d rules): ", s->nrules - fired, s->nrules);
	for (int i = 0, k = 0; i < s->nrules; i++) {
		const RpRule *r = &s->rules[i];
		if (r->count)
			continue;
		fputs(k++ ? ", <code>" : "<code>", f);
		rp_html_esc(f, r->name);
		fprintf(f, "</code> (%s)", rp_rule_domain(r->domain));
	}
	fprintf(f, "%s</p>\n", fired == s->nrules ? "none." : ".");
	fprintf(f, "<p class=\"note\">Real rules are identities over the reals only (wrong for "
		   "inf, NaN or -0): check and fuzz never apply them.</p>\n");
}

/* The compiler's coverage points (compiler/cov.def): reached and never reached, by area. */
static void points(FILE *f, const RpSummary *s)
{
	const RpCoverage *c = &s->cov;
	if (!c->recorded) {
		fprintf(f, "<p class=\"note\">No record carries the compiler's coverage points (the "
			   "run was made by an assay that did not record them).</p>\n");
		return;
	}
	fprintf(f, "<p>%d of the %d points that the backends run can reach were reached (%.0f%%), "
		   "over %lld cases; %d points in all (compiler/cov.def).", c->nreached,
		c->nreachable, c->nreachable ? 100.0 * c->nreached / c->nreachable : 0.0,
		(long long)c->cases, COV__COUNT);
	if (c->unknown)
		fprintf(f, " The records also name %lld points this build does not know.",
			(long long)c->unknown);
	fputs("</p>\n<table><tr><th>area</th><th>points</th><th>reached</th><th>never reached</th>"
	      "</tr>\n", f);
	const char *areas[32];
	int na = rp_cov_areas(areas, 32);
	for (int a = 0; a < na; a++) {
		int np, nr, nh;
		rp_cov_area(c, areas[a], &np, &nr, &nh);
		fputs("<tr><td>", f);
		rp_html_esc(f, areas[a]);
		fprintf(f, "</td><td class=\"n\">%d</td><td class=\"n\">%d</td><td>", np, nh);
		if (!nr)
			fputs("not reachable: no case ran a backend that reaches it", f);
		for (int p = 0, k = 0; nr && p < COV__COUNT; p++) {
			if (strcmp(vf_cov_area(p), areas[a]) || c->hits[p] || !c->reachable[p])
				continue;
			fputs(k++ ? ", <code title=\"" : "<code title=\"", f);
			rp_html_esc(f, vf_cov_what(p));
			fputs("\">", f);
			rp_html_esc(f, vf_cov_name(p));
			fputs("</code>", f);
		}
		if (nr && nh == nr)
			fputs("none", f);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void coverage(FILE *f, const RpSummary *s)
{
	fprintf(f, "<section id=\"coverage\"><h2>Schedule directives and rewrite rules</h2>\n"
		   "<h3>Schedule directives exercised</h3><table><tr><th>directive</th>"
		   "<th>cases</th></tr>\n");
	for (int i = 0; i < s->ndirs; i++)
		if (s->dirs[i].count) {
			fputs("<tr><td><code>", f);
			rp_html_esc(f, s->dirs[i].name);
			fprintf(f, "</code></td><td class=\"n\">%lld</td></tr>\n",
				(long long)s->dirs[i].count);
		}
	fprintf(f, "</table>\n<p>Never exercised: ");
	for (int i = 0; i < s->ndirs_never; i++) {
		fputs(i ? ", <code>" : "<code>", f);
		rp_html_esc(f, s->dirs_never[i]);
		fputs("</code>", f);
	}
	fprintf(f, "%s</p>\n<h3>Rewrite rules</h3>\n", s->ndirs_never ? "." : "none.");
	rules(f, s);
	fprintf(f, "<h3>Compiler coverage</h3>\n");
	points(f, s);
	if (s->variant_results) {   /* docs/fuzz.md "Metamorphic variants" */
		fprintf(f, "<h3>Metamorphic variants</h3>\n<p>%lld results of variants, %lld "
			   "failing (%lld bit-identity mismatches), %d distinct failures first found by "
			   "a variant.</p>\n<table><tr><th>kind</th><th>results</th></tr>\n",
			(long long)s->variant_results, (long long)s->variant_failures,
			(long long)s->variant_mismatches, s->variant_distinct);
		for (int i = 0; i < s->nvariants; i++) {
			fputs("<tr><td><code>", f);
			rp_html_esc(f, s->variants[i].name);
			fprintf(f, "</code></td><td class=\"n\">%lld</td></tr>\n",
				(long long)s->variants[i].count);
		}
		fputs("</table>\n", f);
	}
	fprintf(f, "</section>\n");
}

static void result_row(FILE *f, const RpRun *run, const RpRecord *r, const char *out)
{
	fputs("<tr><td>", f);
	rp_html_esc(f, r->graph);
	fputs("</td><td>", f);
	rp_html_esc(f, r->backend);
	fputs("</td><td>", f);
	rp_html_esc(f, r->sched);
	fputs("</td><td>", f);
	rp_html_esc(f, r->output);
	fputs("</td><td>", f);
	rp_html_esc(f, r->dtype);
	fputs("</td><td>", f);
	pill(f, r);
	fputs("</td>", f);
	/* a special value is a category, not a ratio; a crash has no numbers at all */
	bool nums = rp_has_numbers(r);
	num(f, rp_has_ratio(r) ? r->max_ulp : NAN, "%.0f");
	if (r->verdict == V_SPECIAL_MISMATCH) {
		char sp[128];
		fputs("<td class=\"n\">", f);
		rp_html_esc(f, rp_special_text(r, sp, sizeof sp));
		fputs("</td>", f);
	} else if (r->verdict == V_EMULATION_MISMATCH) {   /* within budget: bits, not a ratio */
		fprintf(f, "<td class=\"n\">bits ×%lld</td>", (long long)r->emu_diff);
	} else {
		num(f, nums ? (r->f64_max_ratio > r->max_ratio ? r->f64_max_ratio : r->max_ratio) :
		    NAN, "%.3g");
	}
	pct(f, nums ? r->frac_within : NAN);
	pct(f, nums ? r->argmax_agree : NAN);
	pct(f, nums ? r->topk_agree : NAN);
	num(f, nums && r->red_len > 0 ? (double)r->red_len : NAN, "%.0f");   /* –: none */
	fputs("<td>", f);
	if (*r->case_dir) {
		char *link = link_to(out, run->dir, r->case_dir);
		fputs("<a href=\"", f);
		rp_html_esc(f, link);
		fputs("/\">files</a>", f);
		free(link);
	}
	fputs("</td></tr>\n", f);
}

static void results(FILE *f, const RpRun *run, const char *out)
{
	fprintf(f, "<section id=\"results\"><h2>Results</h2>\n");
	bool all = run->nrecs <= MAX_ROWS;
	if (!all)
		fprintf(f, "<p class=\"muted\">%d results: those that did not pass are listed (at "
			   "most %d); report.json holds every figure.</p>\n", run->nrecs, MAX_ROWS);
	fprintf(f, "<table><tr><th>graph</th><th>backend</th><th>schedule</th><th>output</th>"
		   "<th>format</th><th>verdict</th><th>max ULP</th><th>error/budget</th>"
		   "<th>within</th><th>argmax</th><th>top-k</th><th>reduction</th><th></th></tr>\n");
	for (int i = 0, shown = 0; i < run->nrecs && shown < MAX_ROWS; i++)
		if (all || (run->recs[i].cls != VC_PASS && run->recs[i].cls != VC_UNSUPPORTED)) {
			result_row(f, run, &run->recs[i], out);
			shown++;
		}
	fprintf(f, "</table></section>\n");
}

void rp_html(FILE *f, const RpRun *run, const RpSummary *s, const RpPlot *p, int np,
	     const char *plot_note, const char *out)
{
	head(f, run, s);
	summary(f, s);
	plots(f, p, np, plot_note);
	rp_steps_html(f, run);
	failures(f, run, s, out);
	others(f, run, s, VC_UNCLAIMED, out);
	others(f, run, s, VC_FLAKY, out);
	coverage(f, s);
	results(f, run, out);
	if (run->settings) {
		fprintf(f, "<section id=\"settings\"><h2>Campaign settings</h2><p><code>");
		rp_html_esc(f, run->settings_path);
		fputs("</code></p><pre>", f);
		rp_html_esc(f, run->settings);
		fputs("</pre></section>\n", f);
	}
	fprintf(f, "<footer><p class=\"muted\">Also written: <a href=\"report.md\">report.md</a>, "
		   "<a href=\"report.json\">report.json</a>, <a href=\"junit.xml\">junit.xml</a>. "
		   "Generated by <code>assay report</code>.</p></footer>\n</main></body></html>\n");
}
