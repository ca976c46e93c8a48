/* tests/test_reports.c: the reports suite: the JSON reader, loading run directories (and
 * their bad inputs), agreement figures and reduction lengths (verify/agree.c, which reports
 * plot and gate), the policy format and gates (a seeded fault fails a gate that a clean run
 * passes; a baseline comparison fails when a figure gets worse), junit.xml's structure (as
 * a real XML parser reads it) and index.html in headless Chromium (headings in the DOM,
 * plots embedded and drawn: a screenshot with plots holds far more colour than one
 * without).
 *
 * The classes of results (issue 12): a fixture campaign whose records hold a chased
 * failure, special values only where the budget is +inf, a flaky result and a crash gives
 * the same counts in report.md, index.html, report.json, junit.xml and the gates; failing
 * rows never show a perfect-looking 0; provenance.json appears in every header (and its
 * absence is said); a real campaign with a seeded fault counts the distinct failures its
 * summary counts.
 *
 * The runs are made in-process by vf_check on the c backend with the real budgets, as
 * `assay check -o DIR` makes them. Chromium and /usr/bin/python3 (for the XML parser and the
 * PNG reader tests/png_stats.py) are needed by two tests; each says SKIP loudly if absent.
 */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testutil.h"
#include "../fuzz/fuzz.h"
#include "../reports/reports.h"

#define PY "/usr/bin/python3"

static char *tmpdir(void)
{
	char *d = strdup("/tmp/assay-test-reports-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(d));
	return d;
}

/* "a/b" on the heap (the caller frees). */
static char *cat(const char *a, const char *b)
{
	char *s = NULL;
	ck_assert_int_ge(asprintf(&s, "%s/%s", a, b), 0);
	return s;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char *p = cat(dir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

static char *read_in(const char *dir, const char *name)
{
	char *p = cat(dir, name);
	char *t = tu_read_file(p, NULL);
	free(p);
	return t;
}

/* ------------------------------------------------------------------- JSON */

static const struct {
	const char *text;
	int ok;            /* 1: parses */
	const char *err;   /* a part of the message when it does not */
	int at;            /* the error's offset, -1: any */
} json_cases[] = {
	{"{\"a\":1,\"b\":[true,false,null],\"c\":\"x\"}", 1, NULL, 0},
	{"  -1.5e-3 ", 1, NULL, 0},
	{"\"\\u00e9\\ud83d\\ude00\\n\\\"\"", 1, NULL, 0},
	{"{\"a\":1,}", 0, "member name", 7},
	{"[1 2]", 0, "expected ','", 3},
	{"{\"a\":1", 0, "expected ','", 6},
	{"\"abc", 0, "unterminated string", 4},
	{"01", 0, "after the value", 1},
	{"1.", 0, "digit after '.'", 2},
	{"\"\\ud800\"", 0, "surrogate", -1},
	{"\"a\tb\"", 0, "control character", -1},
	{"nul", 0, "expected a value", 0},
	{"{\"a\":1} x", 0, "after the value", 8},
	{"", 0, "end of input", 0},
};

START_TEST(json_reader)
{
	const char *t = json_cases[_i].text;
	JsVal v;
	size_t at = 0;
	const char *err = NULL;
	int rc = rp_json_parse(t, strlen(t), &v, &at, &err);
	if (json_cases[_i].ok) {
		ck_assert_msg(rc == 0, "'%s': %s at %zu", t, err, at);
		rp_json_free(&v);
		return;
	}
	ck_assert_msg(rc == -1, "'%s' parsed", t);
	ck_assert_msg(strstr(err, json_cases[_i].err), "'%s': '%s' lacks '%s'", t, err,
		      json_cases[_i].err);
	if (json_cases[_i].at >= 0)
		ck_assert_int_eq((int)at, json_cases[_i].at);
}
END_TEST

START_TEST(json_values)
{
	const char *t = "{\"s\":\"\\u00e9\\ud83d\\ude00\",\"n\":\"inf\",\"m\":\"nan\",\"x\":-2.5e2,"
			"\"o\":{\"k\":[1,2,3]}}";
	JsVal v;
	size_t at;
	const char *err;
	ck_assert_int_eq(rp_json_parse(t, strlen(t), &v, &at, &err), 0);
	ck_assert_str_eq(rp_json_get(&v, "s")->str, "\xc3\xa9\xf0\x9f\x98\x80");
	ck_assert(isinf(rp_json_num(rp_json_get(&v, "n"), 0)));
	ck_assert(isnan(rp_json_num(rp_json_get(&v, "m"), 0)));
	ck_assert(rp_json_num(rp_json_get(&v, "x"), 0) == -250);
	ck_assert_int_eq(rp_json_get(rp_json_get(&v, "o"), "k")->n, 3);
	ck_assert_ptr_null(rp_json_get(&v, "absent"));
	ck_assert(rp_json_num(rp_json_get(&v, "absent"), 7) == 7);
	rp_json_free(&v);
}
END_TEST

/* ------------------------------------------------------------------- loading */

static const char rec_ok[] =
	"{\"graph\":\"g\",\"backend\":\"c\",\"schedule\":\"default\",\"output\":\"y\","
	"\"dtype\":\"f32\",\"verdict\":\"pass\",\"max_ratio\":0.5,\"frac_within\":1,"
	"\"n_checked\":10}\n";

static const struct {
	const char *content;   /* results.jsonl; NULL: no file */
	bool skip_torn;
	int ok;                /* 1: loads */
	const char *msg;       /* a part of the error */
	int nrecs;
} load_cases[] = {
	{NULL, false, 0, "not a check or campaign directory", 0},
	{"", false, 0, "holds no records", 0},
	{"\n  \n", false, 0, "holds no records", 0},
	{"{\"graph\":\"g\",\"backend\":\"c\",\"verd", false, 0, "results.jsonl:1:", 0},
	{"{\"graph\":\"g\",\"backend\":\"c\",\"verd", false, 0, "torn record", 0},
	{"{\"graph\":\"g\",\"backend\":\"c\",\"verd", true, 0, "holds no records", 0},
	{"{\"graph\":\"g\",\"backend\":\"c\",\"verdict\":\"pass\"}\n{\"graph\":\"h\",", true, 1, NULL, 1},
	{"{\"graph\":\"g\",\"backend\":\"c\",\"verdict\":\"pass\"}\n{\"graph\":\"h\",", false, 0,
	 "results.jsonl:2:", 0},
	{"{\"graph\":\"g\",\"backend\":\"c\",\"verdict\":\"pass\"}\n{bad}\n"
	 "{\"graph\":\"g\",\"backend\":\"c\",\"verdict\":\"pass\"}\n", true, 0, "malformed record", 0},
	{"{\"graph\":\"g\",\"backend\":\"c\",\"verdict\":\"great\"}\n", false, 0, "known \"verdict\"", 0},
	{"[1,2]\n", false, 0, ":1:1: a record must be a JSON object", 0},
	{"{\"graph\":\"g\",\"verdict\":\"pass\"}\n", false, 0, "no \"graph\" or \"backend\"", 0},
	{rec_ok, false, 1, NULL, 1},
};

START_TEST(load_inputs)
{
	char *dir = tmpdir();
	if (load_cases[_i].content)
		write_file(dir, "results.jsonl", load_cases[_i].content);
	RpLoadOpts o = {load_cases[_i].skip_torn};
	RpRun run;
	Diag d = {0};
	int rc = rp_load(dir, &o, &run, &d);
	if (load_cases[_i].ok) {
		ck_assert_msg(rc == 0, "%s", d.msg ? d.msg : "?");
		ck_assert_int_eq(run.nrecs, load_cases[_i].nrecs);
		rp_free(&run);
	} else {
		ck_assert_int_eq(rc, -1);
		ck_assert_int_eq(d.code, 2);
		ck_assert_msg(strstr(d.msg, load_cases[_i].msg), "'%s' lacks '%s'", d.msg,
			      load_cases[_i].msg);
		diag_clear(&d);
	}
	free(dir);
}
END_TEST

START_TEST(load_missing_dir)
{
	RpRun run;
	Diag d = {0};
	ck_assert_int_eq(rp_load("/nonexistent/assay-run", NULL, &run, &d), -1);
	ck_assert_int_eq(d.code, 2);
	ck_assert_ptr_nonnull(strstr(d.msg, "no such directory"));
	diag_clear(&d);
	ck_assert_int_eq(rp_load("Makefile", NULL, &run, &d), -1);
	ck_assert_ptr_nonnull(strstr(d.msg, "not a directory"));
	diag_clear(&d);
}
END_TEST

/* A campaign in fuzz/'s layout: records with "case", a "done" line per case naming its
 * failures' keys, settings.json, failures/KEY (with '/' as '.') with repro.tg, signature
 * and count. */
START_TEST(load_campaign)
{
	char *dir = tmpdir();
	write_file(dir, "results.jsonl",
		   "{\"graph\":\"fz3\",\"backend\":\"c\",\"output\":\"a\",\"dtype\":\"f16\","
		   "\"verdict\":\"over-budget\",\"case\":3,\"rules\":{\"x*1 -> x\":2}}\n"
		   "{\"graph\":\"fz3\",\"backend\":\"c\",\"output\":\"b\",\"dtype\":\"f16\","
		   "\"verdict\":\"over-budget\",\"case\":3}\n"
		   "{\"done\":3,\"graph\":\"fz3\",\"status\":\"ok\","
		   "\"fails\":[\"c/over-budget/f16/tile/drop_tail@a\"]}\n"
		   "{\"graph\":\"fz4\",\"backend\":\"c\",\"output\":\"y\",\"dtype\":\"f16\","
		   "\"verdict\":\"over-budget\",\"case\":4}\n"
		   "{\"graph\":\"fz4\",\"backend\":\"c\",\"output\":\"z\",\"dtype\":\"f32\","
		   "\"verdict\":\"special-mismatch\",\"case\":4}\n"
		   "{\"done\":4,\"graph\":\"fz4\",\"status\":\"ok\",\"fails\":["
		   "\"c/over-budget/f16/tile/drop_tail@y\",\"c/special-mismatch/f32/-/-@z\"]}\n"
		   "{\"graph\":\"fz5\",\"backend\":\"c\",\"output\":\"y\",\"dtype\":\"f32\","
		   "\"verdict\":\"pass\",\"case\":5}\n"
		   "{\"done\":5,\"graph\":\"fz5\",\"status\":\"ok\",\"fails\":[]}\n"
		   "{\"done\":6,\"graph\":\"fz6\",\"status\":\"error\",\"fails\":[]}\n");
	write_file(dir, "settings.json", "{\"seed\":7}\n");
	char *p = cat(dir, "failures/c.over-budget.f16.tile.drop_tail");
	Diag d = {0};
	ck_assert_int_eq(vf_mkdirs(p, &d), 0);
	write_file(p, "repro.tg", "graph fz3\ninput x : f32[3]\n");
	write_file(p, "original.tg", "x");
	write_file(p, "signature", "c/over-budget/f16/tile/drop_tail\noutput a\n");
	write_file(p, "count", "2\nfirst case 3\n");
	RpRun run;
	ck_assert_int_eq(rp_load(dir, NULL, &run, &d), 0);
	ck_assert_int_eq(run.nrecs, 5);          /* done lines are not records */
	ck_assert_int_eq(run.cases, 4);
	ck_assert_int_eq(run.case_errors, 1);
	ck_assert_str_eq(run.settings_path, "settings.json");
	ck_assert_int_eq(run.nfails, 1);
	ck_assert_str_eq(run.fails[0].name, "failures/c.over-budget.f16.tile.drop_tail");
	ck_assert_str_eq(run.fails[0].repro_path, "failures/c.over-budget.f16.tile.drop_tail/repro.tg");
	ck_assert_ptr_nonnull(strstr(run.fails[0].repro, "graph fz3"));
	ck_assert_str_eq(run.fails[0].signature, "c/over-budget/f16/tile/drop_tail");
	ck_assert_int_eq(run.fails[0].count, 2);
	ck_assert_int_eq(run.recs[0].case_no, 3);
	ck_assert_str_eq(run.recs[1].signature, "c/over-budget/f16/tile/drop_tail");
	ck_assert_str_eq(run.recs[4].signature, "");
	ck_assert_str_eq(run.recs[3].failure_dir, "failures/c.special-mismatch.f32.-.-");
	RpSummary s;
	rp_summarise(&run, &s);
	ck_assert_int_eq(s.ndistinct, 2);          /* one key over two cases, and another */
	ck_assert_int_eq(s.distinct[0].count, 3);
	ck_assert_int_eq(s.distinct[0].folder, 0);
	ck_assert_int_eq(s.distinct[1].folder, -1);
	ck_assert(s.rules_recorded);
	int64_t fired = -1;
	for (int i = 0; i < s.nrules; i++)
		if (strcmp(s.rules[i].name, "x*1 -> x") == 0)
			fired = s.rules[i].count;
	ck_assert_int_eq(fired, 2);
	rp_summary_free(&s);
	rp_free(&run);
	free(p);
	free(dir);
}
END_TEST

/* The compiler's coverage: each case counted once (two outputs of one case carry the same
 * points), points the backends run cannot reach left out of the fraction, names this build
 * does not know counted apart; every file of the report lists what was never reached. */
START_TEST(coverage_report)
{
	char *dir = tmpdir();
	write_file(dir, "results.jsonl",
		   "{\"graph\":\"g1\",\"backend\":\"c\",\"schedule\":\"default\",\"output\":\"a\","
		   "\"dtype\":\"f32\",\"verdict\":\"pass\",\"cov\":[\"lower_tile\",\"lower_tile_partial\"]}\n"
		   "{\"graph\":\"g1\",\"backend\":\"c\",\"schedule\":\"default\",\"output\":\"b\","
		   "\"dtype\":\"f32\",\"verdict\":\"pass\",\"cov\":[\"lower_tile\",\"lower_tile_partial\"]}\n"
		   "{\"graph\":\"g1\",\"backend\":\"c\",\"schedule\":\"s1\",\"output\":\"a\","
		   "\"dtype\":\"f32\",\"verdict\":\"pass\",\"cov\":[\"lower_tile\",\"gone_point\"]}\n"
		   "{\"graph\":\"g2\",\"backend\":\"c\",\"schedule\":\"default\",\"output\":\"a\","
		   "\"dtype\":\"f32\",\"verdict\":\"pass\"}\n");
	RpRun run;
	Diag d = {0};
	ck_assert_int_eq(rp_load(dir, NULL, &run, &d), 0);
	RpSummary s;
	rp_summarise(&run, &s);
	const RpCoverage *c = &s.cov;
	ck_assert(c->recorded);
	ck_assert_int_eq(c->cases, 2);
	ck_assert_int_eq(c->hits[COV_lower_tile], 2);
	ck_assert_int_eq(c->hits[COV_lower_tile_partial], 1);
	ck_assert_int_eq(c->hits[COV_lower_tile_partial2], 0);
	ck_assert_int_eq(c->unknown, 1);
	int reach = 0;
	for (int p = 0; p < COV__COUNT; p++)
		reach += cov_reaches((CovPoint)p, "c");
	ck_assert_int_eq(c->nreachable, reach);
	ck_assert_int_lt(reach, COV__COUNT);   /* the other backends' points are out */
	ck_assert(!c->reachable[COV_vk_merge] && c->reachable[COV_c_tree]);
	ck_assert_int_eq(c->nreached, 2);
	rp_summary_free(&s);
	char *out = cat(dir, "report");
	RpOpts o = {"/nonexistent/gnuplot"};
	RpMade made;
	ck_assert_msg(rp_report(&run, out, &o, &made, &d) == 0, "%s", d.msg);
	free(made.plot_note);
	char *md = read_in(out, "report.md"), *html = read_in(out, "index.html");
	char *js = read_in(out, "report.json");
	char want[160];
	snprintf(want, sizeof want, "**Compiler coverage**: 2 of %d reachable points (", reach);
	ck_assert_msg(strstr(md, want), "%s", md);
	ck_assert_ptr_nonnull(strstr(md, "`lower_tile_partial2`"));
	ck_assert_ptr_null(strstr(md, "`lower_tile`,"));
	ck_assert_ptr_nonnull(strstr(md, "not reachable by the backends run: kivl (6), opencl (15)"));
	ck_assert_ptr_nonnull(strstr(html, "\">lower_tile_partial2</code>"));
	ck_assert_ptr_null(strstr(html, "\">lower_tile_partial</code>"));
	JsVal v;
	size_t at;
	const char *err;
	ck_assert_msg(rp_json_parse(js, strlen(js), &v, &at, &err) == 0, "%s at %zu", err, at);
	const JsVal *cj = rp_json_get(&v, "compiler_coverage");
	ck_assert(rp_json_get(cj, "recorded")->b);
	ck_assert(rp_json_num(rp_json_get(cj, "reached"), 0) == 2);
	ck_assert(rp_json_num(rp_json_get(cj, "fraction"), 0) == 2.0 / reach);
	ck_assert(rp_json_num(rp_json_get(rp_json_get(cj, "reached_by"), "lower_tile"), 0) == 2);
	const JsVal *areas = rp_json_get(cj, "areas");
	bool lower = false;
	for (int i = 0; i < areas->n; i++) {
		const JsVal *a = &areas->items[i];
		if (strcmp(rp_json_get(a, "area")->str, "lower"))
			continue;
		lower = true;
		const JsVal *never = rp_json_get(a, "never");
		bool p2 = false;
		for (int k = 0; k < never->n; k++) {
			ck_assert_str_ne(never->items[k].str, "lower_tile");
			p2 |= strcmp(never->items[k].str, "lower_tile_partial2") == 0;
		}
		ck_assert(p2);
	}
	ck_assert(lower);
	rp_json_free(&v);
	free(md);
	free(html);
	free(js);
	free(out);
	rp_free(&run);
	/* records without coverage (an older assay) say so */
	write_file(dir, "results.jsonl",
		   "{\"graph\":\"g2\",\"backend\":\"c\",\"output\":\"a\",\"dtype\":\"f32\","
		   "\"verdict\":\"pass\"}\n");
	ck_assert_int_eq(rp_load(dir, NULL, &run, &d), 0);
	rp_summarise(&run, &s);
	ck_assert(!s.cov.recorded && s.cov.nreached == 0);
	rp_summary_free(&s);
	rp_free(&run);
	free(dir);
}
END_TEST

/* ------------------------------------------------------------------- agreement */

static void tensor(HostTensor *t, Dtype dt, int rank, const int64_t *dims, const double *v)
{
	ck_assert_int_eq(ht_alloc(t, dt, rank, dims), 0);
	for (int64_t i = 0; i < t->n; i++)
		ht_set(t, i, v[i]);
}

static const struct {
	const char *what;
	Dtype dt;
	int64_t rows, cols;
	double got[12], want[12];
	int axis, k;
	int64_t nrows, argmax_ok, topk_ok;
} agree_cases[] = {
	{"equal", DT_F32, 2, 3, {1, 2, 3, 6, 5, 4}, {1, 2, 3, 6, 5, 4}, -1, 2, 2, 2, 2},
	{"argmax differs in row 1", DT_F32, 2, 3, {1, 2, 3, 5, 6, 4}, {1, 2, 3, 6, 5, 4}, -1, 2, 2, 1, 2},
	{"top-2 set differs in row 0", DT_F32, 2, 3, {3, 1, 2, 6, 5, 4}, {3, 2, 1, 6, 5, 4}, -1, 2, 2, 2, 1},
	{"a tie in the oracle is no disagreement", DT_F32, 1, 3, {1, 2, 1}, {2, 2, 1}, -1, 1, 1, 1, 1},
	{"top-2 at an oracle tie", DT_F32, 1, 4, {3, 0, 3, 0}, {3, 1, 3, 0}, -1, 2, 1, 1, 1},
	{"top-2 misses a tied maximum", DT_F32, 1, 4, {0, 2, 3, 0}, {3, 1, 3, 0}, -1, 2, 1, 1, 0},
	{"a NaN moves the choice", DT_F32, 1, 3, {1, NAN, 0}, {1, 2, 3}, -1, 1, 1, 0, 0},
	{"along axis 0", DT_F32, 2, 3, {1, 5, 3, 2, 4, 6}, {1, 5, 6, 2, 4, 3}, 0, 1, 3, 2, 2},
	{"i32 rows: same order, same set", DT_I32, 2, 2, {3, 1, 2, 0}, {3, 1, 0, 2}, -1, 0, 2, 1, 2},
	{"extent 1: no figure", DT_F32, 3, 1, {1, 2, 3}, {1, 2, 3}, -1, 0, 0, 0, 0},
};

START_TEST(agreement)
{
	HostTensor g, w;
	int64_t dims[2] = {agree_cases[_i].rows, agree_cases[_i].cols};
	tensor(&g, agree_cases[_i].dt, 2, dims, agree_cases[_i].got);
	tensor(&w, DT_F64, 2, dims, agree_cases[_i].want);
	VfAgree a;
	vf_agree(&g, &w, agree_cases[_i].axis, agree_cases[_i].k, "oracle", &a);
	ck_assert_msg(a.rows == agree_cases[_i].nrows && a.argmax_ok == agree_cases[_i].argmax_ok &&
		      a.topk_ok == agree_cases[_i].topk_ok, "%s: rows %lld argmax %lld topk %lld",
		      agree_cases[_i].what, (long long)a.rows, (long long)a.argmax_ok,
		      (long long)a.topk_ok);
	ht_free(&g);
	ht_free(&w);
}
END_TEST

START_TEST(reduction_length)
{
	static const char src[] =
		"size M = 4, K = 96, N = 5\n"
		"input x : f32[M, K]\ninput w : f32[N, K]\n"
		"y[m:M, n:N] = sum(k:K) x[m, k] * w[n, k]\n"
		"t[i:M] = sum(j: 0..i+1) y[j, 0]\n"
		"z[i:M, j:N] = y[i, j] * 2\n"
		"c[i:M] = sum(a:M, b:N) z[a, b]\n"
		"p[i:M] = x[i, 0] + 1\n"
		"output t : f32, z : f32, p : f32, c : f32\n";
	Diag d = {0};
	Graph *g = ir_parse(src, sizeof src - 1, "red.tg", NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s", d.msg ? d.msg : "?");
	ck_assert_int_eq(vf_red_len(g, 0), 96);   /* t reads y: its 96 terms beat t's 4 */
	ck_assert_int_eq(vf_red_len(g, 1), 96);   /* z = y * 2 */
	ck_assert_int_eq(vf_red_len(g, 2), 0);    /* no reduction */
	ck_assert_int_eq(vf_red_len(g, 3), 96);   /* c: 4 * 5 = 20 terms, but y's are 96 */
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------------- policies */

static const struct {
	const char *src;
	const char *msg;    /* NULL: parses; else a part of the message (with file:line:col) */
	int ngates;
} policy_cases[] = {
	{"# c\n\ngate * max_ratio <= 1   # trailing\ngate c/bf16/mat* argmax_agree >= 99%\n", NULL, 2},
	{"gate */*/* frac_within >= 0.999\ngate * max_ratio < inf\n", NULL, 2},
	{"", "holds no gate", 0},
	{"# only a comment\n", "holds no gate", 0},
	{"gate * max_ratio <= 1\ngaet * max_ratio <= 1\n", "p.policy:2:1: error: unknown statement 'gaet'", 0},
	{"gate * max_rato <= 1\n", "p.policy:1:8: error: unknown metric 'max_rato'", 0},
	{"gate * max_ratio =< 1\n", "p.policy:1:18: error: unknown comparison '=<'", 0},
	{"gate * max_ratio <= one\n", "p.policy:1:21: error: threshold 'one' is not a number", 0},
	{"gate * max_ratio <= 1%%\n", "p.policy:1:21: error: threshold", 0},
	{"gate c/f32 max_ratio <= 1\n", "p.policy:1:6: error: scope 'c/f32' must be", 0},
	{"gate c//x max_ratio <= 1\n", "p.policy:1:6: error: scope 'c//x' has an empty part", 0},
	{"gate * max_ratio <=\n", "p.policy:1:20: error: too few words", 0},
	{"  gate * max_ratio <= 1 extra\n", "p.policy:1:25: error: unexpected text", 0},
};

START_TEST(policy_parse)
{
	const char *src = policy_cases[_i].src;
	RpPolicy p;
	Diag d = {0};
	int rc = rp_policy_parse(src, strlen(src), "p.policy", &p, &d);
	if (!policy_cases[_i].msg) {
		ck_assert_msg(rc == 0, "%s", d.msg ? d.msg : "?");
		ck_assert_int_eq(p.ngates, policy_cases[_i].ngates);
		rp_policy_free(&p);
		return;
	}
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, policy_cases[_i].msg), "'%s' lacks '%s'", d.msg,
		      policy_cases[_i].msg);
	diag_clear(&d);
}
END_TEST

START_TEST(policy_values)
{
	const char *src = "gate c/bf16/mat* argmax_agree >= 99.5%\n";
	RpPolicy p;
	Diag d = {0};
	ck_assert_int_eq(rp_policy_parse(src, strlen(src), "p", &p, &d), 0);
	ck_assert_str_eq(p.gates[0].backend, "c");
	ck_assert_str_eq(p.gates[0].dtype, "bf16");
	ck_assert_str_eq(p.gates[0].graph, "mat*");
	ck_assert_int_eq(p.gates[0].metric, GM_ARGMAX_AGREE);
	ck_assert_int_eq(p.gates[0].op, GO_GE);
	ck_assert(fabs(p.gates[0].threshold - 0.995) < 1e-15);
	ck_assert_int_eq(p.gates[0].line, 1);
	rp_policy_free(&p);
}
END_TEST

/* Records written by the record writer itself, then gated. */
static void add_record(const char *dir, const char *graph, const char *backend, Dtype dt,
		       Verdict v, double ratio, double within, int64_t rows, int64_t agree)
{
	VfRecord r = {.graph = graph, .file = "", .backend = backend, .sched = "default",
		      .sched_text = "", .output = "y", .dtype = dt, .verdict = v, .reason = "",
		      .dist = "normal", .case_dir = "", .ref64_by = "",
		      .agree = {rows ? 1 : -1, 1, rows, agree, agree, "oracle"}, .n_elements = 100};
	vf_metrics_init(&r.m);
	r.m.max_ratio = ratio;
	r.m.frac_within = within;
	r.m.n_checked = 100;
	Diag d = {0};
	ck_assert_int_eq(vf_append_record(dir, &r, &d), 0);
}

static int gate_count(const char *policy, const RpRun *run, const RpRun *base);

/* The bias gate: mean_signed_ratio holds the largest |bias| of the results in scope, read
 * back from the records; larger is worse against a baseline. */
START_TEST(bias_gate)
{
	char *dir = tmpdir();
	for (int k = 0; k < 2; k++) {
		VfRecord r = {.graph = "g", .file = "", .backend = k ? "opencl" : "c",
			      .sched = "default", .sched_text = "", .output = "y", .dtype = DT_F32,
			      .verdict = V_PASS, .reason = "", .dist = "normal", .case_dir = "",
			      .ref64_by = "", .agree = {-1, 1, 0, 0, 0, "oracle"}, .n_elements = 100};
		vf_metrics_init(&r.m);
		r.m.n_checked = 100;
		r.m.frac_within = 1;
		r.m.mean_signed_ratio = k ? -0.625 : 0.125;
		Diag d = {0};
		ck_assert_int_eq(vf_append_record(dir, &r, &d), 0);
	}
	RpRun run;
	Diag d = {0};
	ck_assert_int_eq(rp_load(dir, NULL, &run, &d), 0);
	ck_assert_int_eq(gate_count("gate * mean_signed_ratio <= 0.5\n", &run, NULL), 1);
	ck_assert_int_eq(gate_count("gate * mean_signed_ratio <= 0.625\n", &run, NULL), 0);
	ck_assert_int_eq(gate_count("gate c/*/* mean_signed_ratio <= 0.125\n", &run, NULL), 0);
	ck_assert_int_eq(gate_count("gate c/*/* mean_signed_ratio < 0.125\n", &run, NULL), 1);
	GateResult g;
	RpPolicy p;
	const char *pol = "gate * mean_signed_ratio <= 1\n";
	ck_assert_int_eq(rp_policy_parse(pol, strlen(pol), "p.policy", &p, &d), 0);
	rp_gate_eval(&p.gates[0], &run, NULL, &g);
	ck_assert_double_eq(g.figure, 0.625);
	rp_policy_free(&p);
	rp_free(&run);
	free(dir);
}
END_TEST

static int gate_count(const char *policy, const RpRun *run, const RpRun *base)
{
	RpPolicy p;
	Diag d = {0};
	ck_assert_msg(rp_policy_parse(policy, strlen(policy), "t.policy", &p, &d) == 0, "%s", d.msg);
	FILE *null = fopen("/dev/null", "w");
	int n = rp_gate_run(&p, run, base, null);
	fclose(null);
	rp_policy_free(&p);
	return n;
}

START_TEST(gates_on_records)
{
	char *dir = tmpdir();
	add_record(dir, "matmul", "c", DT_F32, V_PASS, 0.5, 1, 16, 16);
	add_record(dir, "softmax", "c", DT_F32, V_PASS, 0.25, 1, 8, 7);
	add_record(dir, "matmul", "opencl", DT_BF16, V_OVER_BUDGET, 3, 0.9, 16, 16);
	add_record(dir, "rope", "vulkan", DT_BF16, V_CRASH, 0, 0, 0, 0);
	RpRun run;
	Diag d = {0};
	ck_assert_int_eq(rp_load(dir, NULL, &run, &d), 0);
	static const struct { const char *policy; int fails; } t[] = {
		{"gate c/*/* max_ratio <= 0.5\n", 0},
		{"gate c/*/* max_ratio < 0.5\n", 1},
		{"gate * max_ratio <= 1\n", 1},
		{"gate */f32/* frac_within >= 100%\n", 0},
		/* pooled: 100 + 100 + 90 + 0 (the crash counts its 100 elements) of 400 */
		{"gate * frac_within >= 72.5%\n", 0},
		{"gate * frac_within > 72.5%\n", 1},
		{"gate c/*/* argmax_agree >= 95%\n", 0},   /* 23 of 24 rows */
		{"gate c/*/* argmax_agree >= 96%\n", 1},
		{"gate */*/softmax topk_agree >= 87.5%\n", 0},   /* 7 of 8 rows */
		{"gate */*/softmax topk_agree > 87.5%\n", 1},
		{"gate * distinct_failures <= 2\n", 0},
		{"gate * distinct_failures <= 1\n", 1},
		{"gate * failing == 2\n", 0},
		{"gate * special_mismatches <= 0\n", 0},
		{"gate cuda/*/* max_ratio <= 1\n", 0},    /* no result in scope: n/a holds */
		{"gate cuda/*/* results >= 1\n", 1},
		{"gate c/*/* results >= 2\ngate c/*/* results >= 3\n", 1},
		{"gate */bf16/* max_ratio <= 1\ngate */f32/* max_ratio <= 1\n", 1},
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++)
		ck_assert_msg(gate_count(t[i].policy, &run, NULL) == t[i].fails, "%s: want %d failing",
			      t[i].policy, t[i].fails);
	rp_free(&run);
	free(dir);
}
END_TEST

START_TEST(baseline_worse)
{
	char *a = tmpdir(), *b = tmpdir();
	add_record(a, "matmul", "c", DT_F32, V_PASS, 0.5, 1, 16, 16);
	add_record(b, "matmul", "c", DT_F32, V_PASS, 0.75, 1, 16, 15);   /* worse ratio, agreement */
	RpRun ra, rb;
	Diag d = {0};
	ck_assert_int_eq(rp_load(a, NULL, &ra, &d), 0);
	ck_assert_int_eq(rp_load(b, NULL, &rb, &d), 0);
	const char *pol = "gate * max_ratio <= 1\ngate * argmax_agree >= 90%\n";
	ck_assert_int_eq(gate_count(pol, &rb, NULL), 0);   /* both hold their thresholds */
	ck_assert_int_eq(gate_count(pol, &rb, &ra), 2);    /* but both got worse */
	ck_assert_int_eq(gate_count(pol, &ra, &rb), 0);    /* better than that baseline */
	ck_assert_int_eq(gate_count(pol, &ra, &ra), 0);    /* the same run is not worse */
	RpPolicy p;
	ck_assert_int_eq(rp_policy_parse(pol, strlen(pol), "t", &p, &d), 0);
	GateResult r;
	rp_gate_eval(&p.gates[0], &rb, &ra, &r);
	ck_assert(r.holds && r.worse && r.figure == 0.75 && r.base == 0.5);
	rp_policy_free(&p);
	rp_free(&ra);
	rp_free(&rb);
	free(a);
	free(b);
}
END_TEST

/* ------------------------------------------------------------- real runs */

static const char tiled_src[] =
	"graph tiled\n"
	"size M = 11, K = 24, N = 37\n"
	"input x : f32[M, K]\ninput w : f32[N, K]\n"
	"y[m:M, n:N] = sum(k:K) x[m, k] * w[n, k]\n"
	"s[m:M, n:N] = y[m, n] * 0.5 * 1.0 + 1\n"
	"output y : f32, s : bf16\n"
	"schedule\n"
	"  tile y : n=8\n";

static const char *cache_dir(void)
{
	static char buf[512];
	const char *t = getenv("TMPDIR");
	snprintf(buf, sizeof buf, "%s/assay-test-reports-cache", t && *t ? t : "/tmp");
	return buf;
}

/* `assay check -o dir` of tiled_src on the c backend with one sampled schedule, the
 * faults of ASSAY_FAULT in force. Returns the number of failing records. */
static int check_run(const char *dir, const char *fault)
{
	if (fault)
		setenv("ASSAY_FAULT", fault, 1);
	else
		unsetenv("ASSAY_FAULT");
	Diag d = {0};
	Graph *g = ir_parse(tiled_src, sizeof tiled_src - 1, "tiled.tg", NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s", d.msg ? d.msg : "?");
	VfSched *sc;
	int ns, failed;
	ck_assert_int_eq(vf_sched_list(g, "graph", 1, 1, &sc, &ns, &d), 0);
	HostTensor *in = calloc((size_t)ir_ninputs(g) + 1, sizeof *in);
	InputSpec spec = {DIST_NORMAL, 1, false};
	ck_assert_int_eq(mp_make_inputs(g, &spec, NULL, in, &d), 0);
	const Backend *b = be_find("c");
	VfOpts o = {.w = {20, 1, cache_dir(), 0, 0}, .threads = 1, .seed = 1, .dist = "normal",
		    .out_dir = dir};
	ck_assert_int_eq(vf_opts_env(&o, &d), 0);
	write_file(dir, "results.jsonl", "");
	ck_assert_msg(vf_check(g, in, &b, 1, sc, ns, &o, &failed, &d) == 0, "%s", d.msg);
	for (int k = 0; k < ir_ninputs(g); k++)
		ht_free(&in[k]);
	free(in);
	vf_sched_list_free(sc, ns);
	ir_free(g);
	unsetenv("ASSAY_FAULT");
	return failed;
}

static const char release[] =
	"gate * max_ratio <= 1\ngate * frac_within >= 100%\ngate * distinct_failures <= 0\n"
	"gate * special_mismatches <= 0\ngate */*/tiled results >= 4\n"
	"gate */*/tiled argmax_agree >= 99%\n";

START_TEST(fault_fails_gate)
{
	char *clean = tmpdir(), *faulty = tmpdir();
	ck_assert_int_eq(check_run(clean, NULL), 0);
	ck_assert_int_gt(check_run(faulty, "drop_tail"), 0);   /* 37 = 4 * 8 + 5: a partial tile */
	RpRun rc, rf;
	Diag d = {0};
	ck_assert_int_eq(rp_load(clean, NULL, &rc, &d), 0);
	ck_assert_int_eq(rp_load(faulty, NULL, &rf, &d), 0);
	ck_assert_int_eq(rc.nrecs, 4);
	ck_assert_int_eq(rc.recs[0].red_len, 24);
	ck_assert_int_eq(rc.recs[0].agree_rows, 11);
	ck_assert(rc.recs[0].argmax_agree == 1);
	ck_assert_str_eq(rf.recs[0].faults, "drop_tail");
	ck_assert_int_eq(gate_count(release, &rc, NULL), 0);
	ck_assert_int_ge(gate_count(release, &rf, NULL), 3);
	/* the clean run gated against the faulty one as its baseline: nothing got worse */
	ck_assert_int_eq(gate_count(release, &rc, &rf), 0);
	/* and the faulty run against the clean baseline also fails gates it would pass alone */
	const char *loose = "gate * max_ratio <= inf\ngate * frac_within >= 0%\n";
	ck_assert_int_eq(gate_count(loose, &rf, NULL), 0);
	ck_assert_int_eq(gate_count(loose, &rf, &rc), 2);
	rp_free(&rc);
	rp_free(&rf);
	free(clean);
	free(faulty);
}
END_TEST

static bool have(const char *prog)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* Writes a report of a faulty run into DIR/report; returns DIR (heap). */
static char *faulty_report(RpMade *made, const char *gnuplot)
{
	char *dir = tmpdir();
	ck_assert_int_gt(check_run(dir, "drop_tail"), 0);
	RpRun run;
	Diag d = {0};
	ck_assert_int_eq(rp_load(dir, NULL, &run, &d), 0);
	char *out = cat(dir, "report");
	RpOpts o = {gnuplot};
	ck_assert_msg(rp_report(&run, out, &o, made, &d) == 0, "%s", d.msg);
	rp_free(&run);
	free(out);
	return dir;
}

START_TEST(report_files)
{
	RpMade made;
	char *dir = faulty_report(&made, NULL);
	char *out = cat(dir, "report");
	if (!have("gnuplot"))
		fprintf(stderr, "SKIP (partly): gnuplot is not installed: no plots to check\n");
	else
		ck_assert_msg(made.nplots == 5, "%d plots: %s", made.nplots, made.plot_note);
	char *md = read_in(out, "report.md"), *html = read_in(out, "index.html");
	char *js = read_in(out, "report.json");
	ck_assert_ptr_nonnull(md);
	ck_assert_ptr_nonnull(strstr(md, "## assay: ❌"));
	ck_assert_ptr_nonnull(strstr(md, "| c | f32 |"));
	ck_assert_ptr_nonnull(strstr(md, "**over-budget** `tiled` on c"));
	ck_assert_ptr_nonnull(strstr(md, "repro: `"));
	ck_assert_ptr_nonnull(strstr(md, "`tile`"));
	ck_assert_ptr_nonnull(strstr(html, "<h2>Distinct failures</h2>"));
	ck_assert_ptr_nonnull(strstr(html, "tiled/c-graph/"));   /* a link to the case folder */
	ck_assert_ptr_null(strstr(html, "http://"));             /* nothing from the network */
	ck_assert_ptr_null(strstr(html, "https://"));
	ck_assert_ptr_null(strstr(html, "<script"));
	/* report.json reads back, with the figures of the run */
	JsVal v;
	size_t at;
	const char *err;
	ck_assert_msg(rp_json_parse(js, strlen(js), &v, &at, &err) == 0, "%s at %zu", err, at);
	const JsVal *tot = rp_json_get(&v, "totals");
	ck_assert(rp_json_num(rp_json_get(tot, "results"), 0) == 4);
	ck_assert(rp_json_num(rp_json_get(tot, "failing"), 0) >= 1);
	ck_assert(rp_json_num(rp_json_get(tot, "max_ratio"), 0) > 1);
	ck_assert_int_eq(rp_json_get(&v, "results")->n, 4);
	ck_assert(rp_json_get(rp_json_get(rp_json_get(&v, "directives"), "exercised"), "tile"));
	/* the rewrite's x * 1.0 fired once per case (2 cases of 2 outputs each: counted per
	 * case, not per record), and another rule never did */
	const JsVal *ru = rp_json_get(&v, "rules");
	ck_assert(rp_json_get(ru, "recorded")->b);
	const JsVal *x1 = rp_json_get(rp_json_get(ru, "exercised"), "x*1 -> x");
	ck_assert_ptr_nonnull(x1);
	ck_assert(rp_json_num(rp_json_get(x1, "firings"), 0) == 2);
	ck_assert(rp_json_num(rp_json_get(x1, "cases"), 0) == 2);
	const JsVal *never = rp_json_get(ru, "never");
	bool div1 = false;
	for (int i = 0; i < never->n; i++) {
		ck_assert_str_ne(never->items[i].str, "x*1 -> x");
		div1 |= strcmp(never->items[i].str, "x/1 -> x") == 0;
	}
	ck_assert(div1);
	ck_assert_str_eq(rp_json_get(rp_json_get(ru, "domains"), "x*0 -> 0")->str, "real");
	rp_json_free(&v);
	ck_assert_ptr_nonnull(strstr(html, "<tr><td><code>x*1 -&gt; x</code></td><td>exact</td>"
				      "<td class=\"n\">2</td>"));
	ck_assert_ptr_nonnull(strstr(html, "Never exercised (11 of 12 rules): <code>x/1 -&gt; x"));
	ck_assert_ptr_nonnull(strstr(md, "**Rewrite rules** exercised: `x*1 -> x` ×2 (1 of 12"));
	ck_assert_ptr_null(strstr(md, "not recorded"));
	free(md);
	free(html);
	free(js);
	free(made.plot_note);
	free(out);
	free(dir);
}
END_TEST

/* junit.xml read by Python's XML parser: the structure CI systems read. */
START_TEST(junit_structure)
{
	if (access(PY, X_OK) != 0) {
		fprintf(stderr, "SKIP: junit_structure needs %s (its XML parser)\n", PY);
		return;
	}
	RpMade made;
	char *dir = faulty_report(&made, "/nonexistent/gnuplot");
	ck_assert_int_eq(made.nplots, 0);
	ck_assert_ptr_nonnull(strstr(made.plot_note, "gnuplot could not be started"));
	char cmd[4096];
	snprintf(cmd, sizeof cmd, PY " - '%s/report/junit.xml' <<'EOF'\n"
		 "import sys, xml.etree.ElementTree as ET\n"
		 "verdicts = {'over-budget','special-mismatch','crash','timeout','oob-write','compile-error'}\n"
		 "root = ET.parse(sys.argv[1]).getroot()\n"
		 "assert root.tag == 'testsuites', root.tag\n"
		 "suites = root.findall('testsuite')\n"
		 "assert [s.get('name') for s in suites] == ['tiled'], suites\n"
		 "cases = suites[0].findall('testcase')\n"
		 "assert len(cases) == 2 and int(root.get('tests')) == 2, len(cases)\n"
		 "assert sorted(c.get('name') for c in cases) == ['c/graph', 'c/s1']\n"
		 "fails = [c for c in cases if c.find('failure') is not None]\n"
		 "assert int(root.get('failures')) == len(fails) == int(suites[0].get('failures')) >= 1\n"
		 "for c in cases:\n"
		 "    assert c.get('classname') == 'assay.tiled' and float(c.get('time')) >= 0\n"
		 "for c in fails:\n"
		 "    f = c.find('failure')\n"
		 "    assert f.get('type') in verdicts, f.get('type')\n"
		 "    assert f.get('message').startswith(f.get('type') + ': output ')\n"
		 "    assert 'repro: ' in f.text and '/tiled/c-' in f.text, f.text\n"
		 "assert int(root.get('errors')) == 0 and int(root.get('skipped')) == 0\n"
		 "EOF", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(made.plot_note);
	free(dir);
}
END_TEST

/* Counts from tests/png_stats.py: non-white and coloured pixels of a screenshot. */
static void png_stats(const char *png, long *nonwhite, long *coloured)
{
	char *cmd = NULL;
	ck_assert_int_ge(asprintf(&cmd, PY " tests/png_stats.py %s", png), 0);
	FILE *p = popen(cmd, "r");
	free(cmd);
	ck_assert_ptr_nonnull(p);
	long w = 0, h = 0;
	ck_assert_int_eq(fscanf(p, "%ld %ld %ld %ld", &w, &h, nonwhite, coloured), 4);
	ck_assert_int_eq(pclose(p), 0);
	ck_assert(w == 1280 && h == 1800);
}

#define CHROMIUM "chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run " \
	"--disable-background-networking --disable-component-update --disable-sync " \
	"--user-data-dir=%s/profile --window-size=1280,1800"

static void screenshot(const char *dir, const char *html, const char *png)
{
	char *cmd = NULL;
	ck_assert_int_ge(asprintf(&cmd, "timeout 60 " CHROMIUM " --screenshot=%s file://%s "
				  ">/dev/null 2>&1", dir, png, html), 0);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
}

START_TEST(html_in_chromium)
{
	if (!have("chromium") || !have("gnuplot") || access(PY, X_OK) != 0) {
		fprintf(stderr, "SKIP: html_in_chromium needs chromium (apt-get install chromium), "
			"gnuplot and %s\n", PY);
		return;
	}
	RpMade made;
	char *dir = faulty_report(&made, NULL);
	ck_assert_int_eq(made.nplots, 5);
	char *html = cat(dir, "report/index.html"), *dom = cat(dir, "dom.html"), *cmd = NULL;
	ck_assert_int_ge(asprintf(&cmd, "timeout 60 " CHROMIUM " --dump-dom file://%s >%s "
				  "2>/dev/null", dir, html, dom), 0);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	char *text = tu_read_file(dom, NULL);
	ck_assert_ptr_nonnull(text);
	static const char *heads[] = {
		"<h1>assay report</h1>", "<h2>Summary per backend and format</h2>", "<h2>Plots</h2>",
		"<h2>Distinct failures</h2>", "<h2>Schedule directives and rewrite rules</h2>",
		"<h2>Results</h2>", "<h3>Verdicts per backend and output format</h3>",
		"<h3>Distribution of error / budget ratios</h3>", "<h3>ULP error histogram</h3>",
		"<h3>Error against reduction length</h3>", "<h3>Agreement rates</h3>",
	};
	for (size_t i = 0; i < ARRAY_LEN(heads); i++)
		ck_assert_msg(strstr(text, heads[i]), "the DOM lacks %s", heads[i]);
	int imgs = 0;
	for (const char *p = text; (p = strstr(p, "src=\"data:image/svg+xml;base64,")); p++)
		imgs++;
	ck_assert_int_eq(imgs, 5);
	free(text);
	/* every SVG gnuplot wrote is a real plot (paths, axes) */
	static const char *svgs[] = {"verdicts", "ratio_cdf", "ulp_hist", "red_len", "agreement"};
	for (size_t i = 0; i < ARRAY_LEN(svgs); i++) {
		char *p = NULL;
		ck_assert_int_ge(asprintf(&p, "%s/report/plots/%s.svg", dir, svgs[i]), 0);
		size_t n;
		char *svg = tu_read_file(p, &n);
		ck_assert_msg(svg && n > 4000 && strstr(svg, "<svg") && strstr(svg, "<path"),
			      "%s is not a plot", p);
		free(svg);
		free(p);
	}
	/* the screenshot: the plots draw colour that the same page without them lacks */
	char *png1 = cat(dir, "with.png"), *png0 = cat(dir, "without.png");
	screenshot(dir, html, png1);
	RpRun run;
	Diag d = {0};
	ck_assert_int_eq(rp_load(dir, NULL, &run, &d), 0);
	RpOpts none = {"/nonexistent/gnuplot"};
	RpMade m0;
	char *out0 = cat(dir, "report0"), *html0 = cat(dir, "report0/index.html");
	ck_assert_int_eq(rp_report(&run, out0, &none, &m0, &d), 0);
	rp_free(&run);
	screenshot(dir, html0, png0);
	long nw1, c1, nw0, c0;
	png_stats(png1, &nw1, &c1);
	png_stats(png0, &nw0, &c0);
	fprintf(stderr, "html_in_chromium: with plots %ld non-white, %ld coloured pixels; "
		"without %ld, %ld\n", nw1, c1, nw0, c0);
	ck_assert_int_gt(nw1, 200000);        /* a page, not a blank screenshot */
	ck_assert_int_gt(c1, c0 + 30000);     /* the plots' colour */
	free(html);
	free(dom);
	free(png1);
	free(png0);
	free(out0);
	free(html0);
	free(m0.plot_note);
	free(made.plot_note);
	free(dir);
}
END_TEST

/* --------------------------------------------------- classes of results (issue 12) */

/* One campaign's log, as fuzz/case.c writes it: records with "case", a done line per case
 * naming the keys of the failures the fuzzer chased. Case 0: an over-budget result; 1: a
 * special value only where the budget is +inf (not chased: fails []); 2: a chased NaN (a)
 * beside an unclaimed one of the same backend, verdict and format (b); 3: flaky; 4: a
 * pass; 5: a crash. Three keys: fuzz's summary counts 3 distinct failures. */
static const char *const class_log[] = {
	"{\"graph\":\"fz0\",\"backend\":\"c\",\"schedule\":\"graph\",\"output\":\"y\","
	"\"dtype\":\"f32\",\"verdict\":\"over-budget\",\"reason\":\"y[3]: 1.25 against 1, error "
	"0.25 > budget 0.07\",\"max_ulp\":12,\"max_ratio\":3.5,\"frac_within\":0.75,"
	"\"n_checked\":8,\"n_special\":0,\"n_special_unbounded\":0,\"n_over\":2,"
	"\"worst\":{\"index\":3,\"got\":1.25,\"want\":1,\"budget\":0.07},\"case\":0}",
	"{\"done\":0,\"graph\":\"fz0\",\"status\":\"ok\",\"fails\":[\"c/over-budget/f32/tile/-@y\"]}",
	"{\"graph\":\"fz1\",\"backend\":\"c\",\"schedule\":\"graph\",\"output\":\"z\","
	"\"dtype\":\"f64\",\"verdict\":\"special-mismatch\",\"reason\":\"z[0]: inf against the "
	"oracle's 1e+308 (2 special-value mismatches, all where the budget is +inf, no claim)\","
	"\"max_ulp\":0,\"max_ratio\":0,\"frac_within\":0.5,\"n_checked\":4,\"n_special\":2,"
	"\"n_special_unbounded\":2,\"n_over\":0,"
	"\"worst\":{\"index\":0,\"got\":\"inf\",\"want\":1e308,\"budget\":\"inf\"},\"case\":1}",
	"{\"done\":1,\"graph\":\"fz1\",\"status\":\"ok\",\"fails\":[]}",
	"{\"graph\":\"fz2\",\"backend\":\"c\",\"schedule\":\"default\",\"output\":\"a\","
	"\"dtype\":\"f32\",\"verdict\":\"special-mismatch\",\"reason\":\"a[1]: nan against the "
	"oracle's 1.5 (1 special-value mismatches)\",\"max_ulp\":0,\"max_ratio\":0,"
	"\"frac_within\":0.5,\"n_checked\":2,\"n_special\":1,\"n_special_unbounded\":0,"
	"\"n_over\":0,\"worst\":{\"index\":1,\"got\":\"nan\",\"want\":1.5,\"budget\":0.001},"
	"\"case\":2}",
	"{\"graph\":\"fz2\",\"backend\":\"c\",\"schedule\":\"default\",\"output\":\"b\","
	"\"dtype\":\"f32\",\"verdict\":\"special-mismatch\",\"reason\":\"b[0]: nan against the "
	"oracle's -2 (3 special-value mismatches, all where the budget is +inf, no claim)\","
	"\"max_ulp\":0,\"max_ratio\":0,\"frac_within\":0.25,\"n_checked\":4,\"n_special\":3,"
	"\"n_special_unbounded\":3,\"n_over\":0,"
	"\"worst\":{\"index\":0,\"got\":\"nan\",\"want\":-2,\"budget\":\"inf\"},\"case\":2}",
	"{\"done\":2,\"graph\":\"fz2\",\"status\":\"ok\",\"fails\":[\"c/special-mismatch/f32/-/-@a\"]}",
	"{\"graph\":\"fz3\",\"backend\":\"c\",\"schedule\":\"graph\",\"output\":\"y\","
	"\"dtype\":\"f32\",\"verdict\":\"flaky\",\"reason\":\"crash (SIGSEGV) not reproduced by "
	"a re-run of the kernel alone\",\"max_ulp\":0,\"max_ratio\":0,\"frac_within\":0,"
	"\"n_checked\":0,\"n_special\":0,\"n_elements\":8,\"worst\":null,\"case\":3}",
	"{\"done\":3,\"graph\":\"fz3\",\"status\":\"ok\",\"fails\":[]}",
	"{\"graph\":\"fz4\",\"backend\":\"c\",\"schedule\":\"graph\",\"output\":\"y\","
	"\"dtype\":\"f32\",\"verdict\":\"pass\",\"reason\":\"\",\"max_ulp\":1,\"max_ratio\":0.25,"
	"\"frac_within\":1,\"n_checked\":8,\"n_special\":0,\"n_over\":0,\"case\":4}",
	"{\"done\":4,\"graph\":\"fz4\",\"status\":\"ok\",\"fails\":[]}",
	"{\"graph\":\"fz5\",\"backend\":\"c\",\"schedule\":\"graph\",\"output\":\"y\","
	"\"dtype\":\"f32\",\"verdict\":\"crash\",\"reason\":\"the worker died of SIGSEGV\","
	"\"max_ulp\":0,\"max_ratio\":0,\"frac_within\":0,\"n_checked\":0,\"n_special\":0,"
	"\"n_elements\":8,\"worst\":null,\"case\":5}",
	"{\"done\":5,\"graph\":\"fz5\",\"status\":\"ok\",\"fails\":[\"c/crash/f32/-/-@y\"]}",
};

static const char *const class_keys[] = {
	"c/over-budget/f32/tile/-", "c/special-mismatch/f32/-/-", "c/crash/f32/-/-",
};

/* The classes in words, as every file and command must say them. */
static const char class_line[] = "3 distinct failures (3 results) · 2 results with unclaimed "
				 "special values · 1 flaky · 1 pass · 0 unsupported";

/* The campaign of class_log, with a failure folder per key (prov: provenance.json's text,
 * NULL for none). Returns the directory (heap). */
static char *class_campaign(const char *prov)
{
	char *dir = tmpdir();
	char *log = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&log, &n);
	for (size_t i = 0; i < ARRAY_LEN(class_log); i++)
		fprintf(m, "%s\n", class_log[i]);
	fclose(m);
	write_file(dir, "results.jsonl", log);
	free(log);
	write_file(dir, "settings.json", "{\"seed\":3}\n");
	if (prov)
		write_file(dir, "provenance.json", prov);
	for (size_t k = 0; k < ARRAY_LEN(class_keys); k++) {
		char name[128], sig[160];
		snprintf(name, sizeof name, "failures/%s", class_keys[k]);
		for (char *c = name + 9; *c; c++)
			*c = *c == '/' ? '.' : *c;
		char *p = cat(dir, name);
		Diag d = {0};
		ck_assert_int_eq(vf_mkdirs(p, &d), 0);
		write_file(p, "repro.tg", "graph fz\ninput x : f32[3]\n");
		snprintf(sig, sizeof sig, "%s\n", class_keys[k]);
		write_file(p, "signature", sig);
		write_file(p, "count", "1\n");
		free(p);
	}
	return dir;
}

/* The report of dir into dir/report (no gnuplot: the files, not the plots, are tested). */
static void class_report(const char *dir)
{
	RpRun run;
	Diag d = {0};
	ck_assert_msg(rp_load(dir, NULL, &run, &d) == 0, "%s", d.msg);
	char *out = cat(dir, "report");
	RpOpts o = {"/nonexistent/gnuplot"};
	RpMade made;
	ck_assert_msg(rp_report(&run, out, &o, &made, &d) == 0, "%s", d.msg);
	free(made.plot_note);
	free(out);
	rp_free(&run);
}

static int count_of(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* report.md, index.html, report.json, junit.xml and the gates say the same counts of the
 * same classes: 3 distinct failures (what fuzz counted: 3 keys), 2 results with
 * unclaimed special values, 1 flaky, 1 pass. */
START_TEST(classes_agree)
{
	char *dir = class_campaign(NULL);
	class_report(dir);
	char *out = cat(dir, "report");
	char *md = read_in(out, "report.md"), *html = read_in(out, "index.html");
	char *js = read_in(out, "report.json"), *xml = read_in(out, "junit.xml");
	char head[256];
	snprintf(head, sizeof head, "## assay: ❌ %s\n", class_line);
	ck_assert_msg(strncmp(md, head, strlen(head)) == 0, "report.md begins:\n%.300s", md);
	ck_assert_msg(strstr(html, class_line), "index.html lacks '%s'", class_line);
	ck_assert_ptr_nonnull(strstr(md, "### Distinct failures (3)"));
	ck_assert_ptr_nonnull(strstr(md, "### Unclaimed special values (2 results)"));
	ck_assert_ptr_nonnull(strstr(md, "### Flaky (1 result)"));
	ck_assert_ptr_nonnull(strstr(html, "<h2>Unclaimed special values</h2>"));
	ck_assert_ptr_nonnull(strstr(html, "<h2>Flaky results</h2>"));
	/* the unclaimed b of case 2 is listed apart, not as the failure of its case's key */
	const char *un = strstr(md, "### Unclaimed special values");
	ck_assert_ptr_nonnull(strstr(un, "`fz2` on c, schedule default, output b (f32), case 2: "
				     "NaN vs -2 (3 elements)"));
	ck_assert_ptr_nonnull(strstr(un, "`fz1` on c, schedule graph, output z (f64), case 1: "
				     "+inf vs 1e+308 (2 elements)"));
	char *fails = strndup(strstr(md, "### Distinct failures"), (size_t)(un - strstr(md,
				"### Distinct failures")));
	ck_assert_ptr_null(strstr(fails, "output b"));
	ck_assert_ptr_nonnull(strstr(fails, "output a"));
	free(fails);
	/* report.json */
	JsVal v;
	size_t at;
	const char *err;
	ck_assert_msg(rp_json_parse(js, strlen(js), &v, &at, &err) == 0, "%s at %zu", err, at);
	const JsVal *tot = rp_json_get(&v, "totals"), *cl = rp_json_get(tot, "classes");
	ck_assert(rp_json_num(rp_json_get(cl, "failure"), -1) == 3);
	ck_assert(rp_json_num(rp_json_get(cl, "unclaimed-special"), -1) == 2);
	ck_assert(rp_json_num(rp_json_get(cl, "flaky"), -1) == 1);
	ck_assert(rp_json_num(rp_json_get(cl, "pass"), -1) == 1);
	ck_assert(rp_json_num(rp_json_get(tot, "distinct_failures"), -1) == 3);
	ck_assert(rp_json_num(rp_json_get(tot, "failing"), -1) == 5);
	ck_assert_int_eq(rp_json_get(&v, "distinct_failures")->n, 3);
	ck_assert_int_eq(rp_json_get(&v, "unclaimed_special_values")->n, 2);
	ck_assert_int_eq(rp_json_get(&v, "flaky")->n, 1);
	rp_json_free(&v);
	/* junit.xml: three failing test cases; the unclaimed and flaky ones pass, and say so */
	ck_assert_ptr_nonnull(strstr(xml, "<testsuites name=\"assay\" tests=\"6\" failures=\"3\""));
	ck_assert_int_eq(count_of(xml, "<failure "), 3);
	ck_assert_int_eq(count_of(xml, "<flakyFailure type=\"flaky\""), 1);
	ck_assert_ptr_nonnull(strstr(xml, "<system-out>output z (f64): unclaimed special values, "
				      "+inf vs 1e+308 (2 elements)"));
	if (access(PY, X_OK) == 0) {
		char cmd[1024];
		snprintf(cmd, sizeof cmd, PY " -c 'import sys, xml.etree.ElementTree as E; "
			 "r = E.parse(sys.argv[1]).getroot(); "
			 "assert len(r.findall(\".//failure\")) == 3'  %s/junit.xml", out);
		ck_assert_int_eq(system(cmd), 0);
	} else {
		fprintf(stderr, "SKIP (partly): classes_agree reads junit.xml with %s's XML parser, "
			"absent\n", PY);
	}
	/* the gates: distinct_failures counts what fuzz counted, flaky the flaky result */
	RpRun run;
	Diag d = {0};
	ck_assert_int_eq(rp_load(dir, NULL, &run, &d), 0);
	static const struct { const char *policy; int fails; } t[] = {
		{"gate * distinct_failures <= 3\n", 0}, {"gate * distinct_failures <= 2\n", 1},
		{"gate * flaky <= 1\n", 0}, {"gate * flaky < 1\n", 1}, {"gate * failing == 5\n", 0},
		{"gate */f64/* distinct_failures <= 0\n", 0},
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++)
		ck_assert_msg(gate_count(t[i].policy, &run, NULL) == t[i].fails, "%s: want %d failing",
			      t[i].policy, t[i].fails);
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	RpPolicy p;
	const char *one = "gate * results >= 1\n";
	ck_assert_int_eq(rp_policy_parse(one, strlen(one), "p", &p, &d), 0);
	rp_gate_run(&p, &run, NULL, m);
	fclose(m);
	ck_assert_msg(strstr(buf, "results: 3 distinct failures (3 results), 2 results with "
			     "unclaimed special values, 1 flaky, 1 pass, 0 unsupported\n"), "%s", buf);
	free(buf);
	rp_policy_free(&p);
	rp_free(&run);
	free(md);
	free(html);
	free(js);
	free(xml);
	free(out);
	free(dir);
}
END_TEST

/* The cells of the rows of the Results table of index.html whose verdict pill is of class
 * cls ("v-fail", "v-warn"): none may hold a lone "0" (a ratio or ULP distance that reads as
 * perfect; 0% within budget is a true and bad figure). Returns the rows seen. */
static int rows_without_zero(const char *html, const char *cls)
{
	const char *sec = strstr(html, "<section id=\"results\">");
	ck_assert_ptr_nonnull(sec);
	char pill[64];
	snprintf(pill, sizeof pill, "class=\"pill %s\"", cls);
	int rows = 0;
	for (const char *p = strstr(sec, "<tr>"); p; p = strstr(p + 4, "<tr>")) {
		const char *end = strstr(p, "</tr>");
		char *row = strndup(p, (size_t)(end - p));
		if (strstr(row, pill)) {
			rows++;
			ck_assert_msg(!strstr(row, ">0<"), "a failing row shows a 0: %s", row);
		}
		free(row);
	}
	return rows;
}

START_TEST(failing_rows_show_no_zero)
{
	char *dir = class_campaign(NULL);
	class_report(dir);
	char *out = cat(dir, "report");
	char *md = read_in(out, "report.md"), *html = read_in(out, "index.html");
	char *js = read_in(out, "report.json");
	/* a special value shows what it was where a ratio would be */
	ck_assert_ptr_nonnull(strstr(html, "<td class=\"n\">NaN vs 1.5</td>"));
	ck_assert_ptr_nonnull(strstr(html, "<td class=\"n\">+inf vs 1e+308 (2 elements)</td>"));
	ck_assert_int_eq(rows_without_zero(html, "v-fail"), 3);   /* over-budget, NaN, crash */
	ck_assert_int_eq(rows_without_zero(html, "v-warn"), 3);   /* two unclaimed, one flaky */
	/* the f64 group holds only the unclaimed result: its worst ratio is no 0 */
	ck_assert_msg(strstr(md, "| c | f64 | 1 | 0 | 0 | 1 | 0 | 0 | special ×1 |"), "%s", md);
	ck_assert_msg(strstr(md, "| c | f32 | 6 | 1 | 3 | 1 | 1 | 0 | 3.5 + special ×2 |"), "%s", md);
	ck_assert_ptr_nonnull(strstr(md, "**special-mismatch** (NaN vs 1.5) `fz2`"));
	/* report.json: no ratio for a special value or a crash, the category instead */
	JsVal v;
	size_t at;
	const char *err;
	ck_assert_int_eq(rp_json_parse(js, strlen(js), &v, &at, &err), 0);
	const JsVal *res = rp_json_get(&v, "results");
	ck_assert_int_eq(res->n, 7);
	for (int i = 0; i < res->n; i++) {
		const JsVal *r = &res->items[i], *sp = rp_json_get(r, "special");
		const char *verdict = rp_json_get(r, "verdict")->str;
		bool measured = !strcmp(verdict, "pass") || !strcmp(verdict, "over-budget");
		ck_assert_msg(rp_json_get(r, "max_ratio")->kind == (measured ? JS_NUM : JS_NULL),
			      "result %d (%s): max_ratio", i, verdict);
		ck_assert_int_eq(sp->kind, !strcmp(verdict, "special-mismatch") ? JS_STR : JS_NULL);
	}
	ck_assert_str_eq(rp_json_get(&res->items[2], "special")->str, "NaN vs 1.5");
	ck_assert_str_eq(rp_json_get(&res->items[2], "class")->str, "failure");
	ck_assert_str_eq(rp_json_get(&res->items[3], "class")->str, "unclaimed-special");
	rp_json_free(&v);
	free(md);
	free(html);
	free(js);
	free(out);
	free(dir);
}
END_TEST

/* An emulation-mismatch (within every budget, not the emulation's bits) is a failure in
 * every file, its row shows the differing bits where a ratio would be (never a ratio that
 * reads as fine), junit names its verdict, and the emulated results are counted. */
START_TEST(emulation_mismatch_reported)
{
	char *dir = tmpdir();
	write_file(dir, "results.jsonl",
		   "{\"graph\":\"tie\",\"backend\":\"c\",\"schedule\":\"graph\",\"output\":\"y\","
		   "\"dtype\":\"f16\",\"verdict\":\"emulation-mismatch\",\"reason\":\"y[0]: 1.00097656 "
		   "against the emulation's 1 (1 ulp; 4 of 8 elements differ bit for bit, every budget "
		   "holds)\",\"max_ulp\":1,\"max_ratio\":0.5,\"frac_within\":1,\"n_checked\":8,"
		   "\"n_special\":0,\"n_over\":0,\"n_elements\":8,\"emulated\":true,"
		   "\"emulated_why\":\"\",\"emu_diff\":4}\n"
		   "{\"graph\":\"tie\",\"backend\":\"opencl\",\"schedule\":\"graph\",\"output\":\"y\","
		   "\"dtype\":\"f16\",\"verdict\":\"pass\",\"reason\":\"\",\"max_ulp\":0,"
		   "\"max_ratio\":0,\"frac_within\":1,\"n_checked\":8,\"n_special\":0,\"n_over\":0,"
		   "\"n_elements\":8,\"emulated\":true,\"emulated_why\":\"\",\"emu_diff\":0}\n"
		   "{\"graph\":\"ex\",\"backend\":\"c\",\"schedule\":\"graph\",\"output\":\"y\","
		   "\"dtype\":\"f32\",\"verdict\":\"pass\",\"reason\":\"\",\"max_ulp\":1,"
		   "\"max_ratio\":0.1,\"frac_within\":1,\"n_checked\":8,\"n_special\":0,\"n_over\":0,"
		   "\"n_elements\":8,\"emulated\":false,\"emulated_why\":\"c: exp has an allowance\","
		   "\"emu_diff\":0}\n");
	class_report(dir);
	char *out = cat(dir, "report");
	char *md = read_in(out, "report.md"), *html = read_in(out, "index.html");
	char *js = read_in(out, "report.json"), *xml = read_in(out, "junit.xml");
	ck_assert_msg(strstr(md, "## assay: ❌ 1 distinct failure (1 result)"), "%.300s", md);
	ck_assert_msg(strstr(md, "**emulation-mismatch** (bits ×4, within budget) `tie` on c"),
		      "%s", md);
	ck_assert_ptr_nonnull(strstr(md, "2 held to the emulating interpreter bit for bit"));
	ck_assert_ptr_nonnull(strstr(html, "<td class=\"n\">bits ×4</td>"));
	ck_assert_ptr_nonnull(strstr(html, "2 of 3 results held to the emulating interpreter"));
	ck_assert_int_eq(rows_without_zero(html, "v-fail"), 1);
	ck_assert_ptr_nonnull(strstr(xml, "<failure type=\"emulation-mismatch\""));
	JsVal v;
	size_t at;
	const char *err;
	ck_assert_int_eq(rp_json_parse(js, strlen(js), &v, &at, &err), 0);
	const JsVal *tot = rp_json_get(&v, "totals");
	ck_assert(rp_json_num(rp_json_get(tot, "emulated"), -1) == 2);
	ck_assert(rp_json_num(rp_json_get(rp_json_get(tot, "classes"), "failure"), -1) == 1);
	ck_assert(rp_json_num(rp_json_get(rp_json_get(tot, "verdicts"), "emulation-mismatch"),
			      -1) == 1);
	rp_json_free(&v);
	RpRun run;
	Diag d = {0};
	ck_assert_int_eq(rp_load(dir, NULL, &run, &d), 0);
	static const struct { const char *policy; int fails; } t[] = {
		{"gate * emulation_mismatches <= 0\n", 1}, {"gate opencl/*/* emulation_mismatches <= 0\n", 0},
		{"gate */f16/* emulated >= 2\n", 0}, {"gate */f32/* emulated >= 1\n", 1},
		{"gate * failing <= 0\n", 1},
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++)
		ck_assert_msg(gate_count(t[i].policy, &run, NULL) == t[i].fails, "%s: want %d failing",
			      t[i].policy, t[i].fails);
	rp_free(&run);
	free(md);
	free(html);
	free(js);
	free(xml);
	free(out);
	free(dir);
}
END_TEST

static const char prov_json[] =
	"{\"version\":\"0.1.0\",\"commit\":\"abc1234-dirty\",\"command\":[\"assay\",\"fuzz\","
	"\"--seconds\",\"60\",\"-o\",\"/tmp/x y\"],\"cwd\":\"/w\",\"seed\":3,\"backends\":["
	"{\"name\":\"c\",\"device\":\"Test CPU, 2 hardware threads\"},{\"name\":\"vulkan\","
	"\"device\":\"llvmpipe (LLVM 15.0.6), Mesa 25.0.7, Vulkan 1.4.305\"}],\"host\":"
	"\"testhost\",\"os\":\"Linux 6.1 x86_64\",\"date\":\"2026-12-01T21:00:00Z\"}\n";

/* The header of every report says what made the run; a run without provenance.json (made
 * before it was recorded) still reports, and says so. */
START_TEST(provenance_in_reports)
{
	char *dir = class_campaign(prov_json), *old = class_campaign(NULL);
	class_report(dir);
	class_report(old);
	char *out = cat(dir, "report"), *oout = cat(old, "report");
	char *md = read_in(out, "report.md"), *html = read_in(out, "index.html");
	char *js = read_in(out, "report.json");
	static const char *const md_has[] = {
		"Made by assay 0.1.0 (commit abc1234-dirty) on `testhost` (Linux 6.1 x86\\_64), "
		"2026-12-01T21:00:00Z, seed 3: `assay fuzz --seconds 60 -o '/tmp/x y'`.",
		"- c: Test CPU, 2 hardware threads\n",
		"- vulkan: llvmpipe (LLVM 15.0.6), Mesa 25.0.7, Vulkan 1.4.305\n",
	};
	for (size_t i = 0; i < ARRAY_LEN(md_has); i++)
		ck_assert_msg(strstr(md, md_has[i]), "report.md lacks '%s':\n%s", md_has[i], md);
	static const char *const html_has[] = {
		"Made by assay 0.1.0 (commit <code>abc1234-dirty</code>) on <code>testhost</code>",
		"2026-12-01T21:00:00Z · seed 3", "<code>assay fuzz --seconds 60 -o '/tmp/x y'</code>",
		"<li><b>c</b>: Test CPU, 2 hardware threads</li>",
		"<li><b>vulkan</b>: llvmpipe (LLVM 15.0.6), Mesa 25.0.7, Vulkan 1.4.305</li>",
	};
	for (size_t i = 0; i < ARRAY_LEN(html_has); i++)
		ck_assert_msg(strstr(html, html_has[i]), "index.html lacks '%s'", html_has[i]);
	JsVal v;
	size_t at;
	const char *err;
	ck_assert_int_eq(rp_json_parse(js, strlen(js), &v, &at, &err), 0);
	const JsVal *pv = rp_json_get(&v, "provenance");
	ck_assert_str_eq(rp_json_get(pv, "command")->str, "assay fuzz --seconds 60 -o '/tmp/x y'");
	ck_assert_str_eq(rp_json_get(&rp_json_get(pv, "backends")->items[1], "name")->str, "vulkan");
	rp_json_free(&v);
	free(md);
	free(html);
	free(js);
	/* the old directory */
	md = read_in(oout, "report.md"), html = read_in(oout, "index.html");
	js = read_in(oout, "report.json");
	ck_assert_ptr_nonnull(strstr(md, "*No provenance recorded* (made before assay recorded "
				     "provenance.json"));
	ck_assert_ptr_nonnull(strstr(html, "No provenance recorded (made before assay recorded "
				       "provenance.json"));
	ck_assert_ptr_nonnull(strstr(js, "\"provenance\":null"));
	ck_assert_ptr_nonnull(strstr(md, class_line));   /* and the rest of the report */
	/* a malformed provenance.json is the user's error, with its position */
	write_file(old, "provenance.json", "{\"version\":\"0.1.0\",}");
	RpRun run;
	Diag d = {0};
	ck_assert_int_eq(rp_load(old, NULL, &run, &d), -1);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, "provenance.json:1:20: malformed provenance"), "%s", d.msg);
	diag_clear(&d);
	free(md);
	free(html);
	free(js);
	free(out);
	free(oout);
	free(dir);
	free(old);
}
END_TEST

/* vf_class: what fuzz chases and what reports count as failures are one function. */
static const struct {
	const char *what;
	Verdict v;
	int64_t special, unbounded, over;        /* the exact comparison */
	bool sampled;
	int64_t special64, unbounded64, over64;  /* the f64 pass of a sampled output */
	VfClass want;
} class_cases[] = {
	{"pass", V_PASS, 0, 0, 0, false, 0, 0, 0, VC_PASS},
	{"over budget", V_OVER_BUDGET, 0, 0, 3, false, 0, 0, 0, VC_FAILURE},
	{"NaN where the budget claims", V_SPECIAL_MISMATCH, 2, 1, 0, false, 0, 0, 0, VC_FAILURE},
	{"NaN only where the budget is +inf", V_SPECIAL_MISMATCH, 2, 2, 0, false, 0, 0, 0,
	 VC_UNCLAIMED},
	{"unclaimed, but elements over budget too", V_SPECIAL_MISMATCH, 2, 2, 1, false, 0, 0, 0,
	 VC_FAILURE},
	{"sampled: the f64 pass unclaimed", V_SPECIAL_MISMATCH, 0, 0, 0, true, 4, 4, 0,
	 VC_UNCLAIMED},
	{"sampled: the f64 pass over budget", V_OVER_BUDGET, 0, 0, 0, true, 0, 0, 2, VC_FAILURE},
	{"sampled: unclaimed exact, over-budget f64", V_SPECIAL_MISMATCH, 1, 1, 0, true, 0, 0, 5,
	 VC_FAILURE},
	{"crash", V_CRASH, 0, 0, 0, false, 0, 0, 0, VC_FAILURE},
	{"compile error", V_COMPILE_ERROR, 0, 0, 0, false, 0, 0, 0, VC_FAILURE},
	{"flaky", V_FLAKY, 0, 0, 0, false, 0, 0, 0, VC_FLAKY},
	{"unsupported", V_UNSUPPORTED, 0, 0, 0, false, 0, 0, 0, VC_UNSUPPORTED},
	{"a verdict its counts do not explain", V_SPECIAL_MISMATCH, 0, 0, 0, false, 0, 0, 0,
	 VC_FAILURE},
};

START_TEST(record_classes)
{
	VfMetrics m, m64;
	vf_metrics_init(&m);
	vf_metrics_init(&m64);
	m.n_special = class_cases[_i].special, m.n_special_unbounded = class_cases[_i].unbounded;
	m.n_over = class_cases[_i].over;
	m64.n_special = class_cases[_i].special64;
	m64.n_special_unbounded = class_cases[_i].unbounded64, m64.n_over = class_cases[_i].over64;
	VfClass c = vf_class(class_cases[_i].v, &m, class_cases[_i].sampled, &m64);
	ck_assert_msg(c == class_cases[_i].want, "%s: %s, want %s", class_cases[_i].what,
		      vf_class_name(c), vf_class_name(class_cases[_i].want));
}
END_TEST

static char *fake_device(void)
{
	return strdup("Fake GPU (driver 1.2.3)");
}

static int fake_ok(char *why, size_t n)
{
	return 0;
}

static int fake_missing(char *why, size_t n)
{
	snprintf(why, n, "no fake device here");
	return -1;
}

/* provenance.json as vf_provenance_write records it, read back as a report reads it. */
START_TEST(provenance_written)
{
	char *dir = tmpdir();
	const Backend fake = {.name = "fake", .available = fake_ok, .device = fake_device};
	const Backend gone = {.name = "gone", .available = fake_missing, .device = fake_device};
	const Backend *bes[] = {be_find("c"), &fake, &gone};
	char *argv[] = {"x.tg", "--seed", "7", "-o", "out dir"};
	Diag d = {0};
	ck_assert_msg(vf_provenance_write(dir, "check", 5, argv, bes, 3, 7, &d) == 0, "%s", d.msg);
	char *p = cat(dir, "provenance.json.tmp");
	ck_assert_int_ne(access(p, F_OK), 0);   /* renamed into place */
	free(p);
	char *text = read_in(dir, "provenance.json");
	JsVal v;
	size_t at;
	const char *err;
	ck_assert_msg(rp_json_parse(text, strlen(text), &v, &at, &err) == 0, "%s at %zu", err, at);
	ck_assert_str_eq(rp_json_get(&v, "version")->str, vf_version());
	ck_assert_str_eq(rp_json_get(&v, "commit")->str, vf_commit());
	const JsVal *cmd = rp_json_get(&v, "command"), *bs = rp_json_get(&v, "backends");
	ck_assert_int_eq(cmd->n, 7);
	ck_assert_str_eq(cmd->items[1].str, "check");
	ck_assert_str_eq(cmd->items[6].str, "out dir");
	ck_assert(rp_json_num(rp_json_get(&v, "seed"), 0) == 7);
	ck_assert_int_eq(bs->n, 3);
	char *cdev = be_find("c")->device();
	ck_assert_str_eq(rp_json_get(&bs->items[0], "device")->str, cdev);
	free(cdev);
	ck_assert_str_eq(rp_json_get(&bs->items[1], "device")->str, "Fake GPU (driver 1.2.3)");
	ck_assert_str_eq(rp_json_get(&bs->items[2], "device")->str,
			 "unavailable: no fake device here");
	char host[256] = "";
	gethostname(host, sizeof host);
	ck_assert_str_eq(rp_json_get(&v, "host")->str, host);
	const char *date = rp_json_get(&v, "date")->str;
	ck_assert_msg(strlen(date) == 20 && date[4] == '-' && date[10] == 'T' && date[19] == 'Z',
		      "date '%s'", date);
	rp_json_free(&v);
	free(text);
	/* a report reads it back, the command line quoted for a shell */
	add_record(dir, "g", "c", DT_F32, V_PASS, 0.5, 1, 0, 0);
	RpRun run;
	ck_assert_int_eq(rp_load(dir, NULL, &run, &d), 0);
	ck_assert(run.prov.present);
	ck_assert_str_eq(run.prov.command, "assay check x.tg --seed 7 -o 'out dir'");
	ck_assert_int_eq(run.prov.nbackends, 3);
	ck_assert_str_eq(run.prov.backends[1], "fake");
	rp_free(&run);
	/* a directory that cannot be written is the environment's failure */
	ck_assert_int_eq(vf_provenance_write("/nonexistent/assay-dir", "check", 0, NULL, bes, 1, 1,
					     &d), -1);
	ck_assert_int_eq(d.code, 3);
	ck_assert_msg(strstr(d.msg, "/nonexistent/assay-dir/provenance.json"), "%s", d.msg);
	diag_clear(&d);
	/* the commit id the Makefile compiled in */
	const char *c = vf_commit();
	size_t hex = strspn(c, "0123456789abcdef");
	ck_assert_msg(!strcmp(c, "unknown") || (hex >= 7 && (!c[hex] || !strcmp(c + hex, "-dirty"))),
		      "commit '%s'", c);
	free(dir);
}
END_TEST

/* The campaign of the tests below: 24 cases on c with the seeded fault skip_last, seed 3,
 * 2 jobs, no reduction. */
static void skip_last_campaign(FzCampaign *c)
{
	fz_campaign_defaults(c);
	c->seed = 3;
	c->cases = 24;
	c->jobs = 2;
	c->reduce = false;
	c->timeout_s = 20;
	Diag d = {0};
	ck_assert_int_eq(vf_faults_parse("skip_last", &c->faults, &d), 0);
}

/* A real campaign on the c backend with a seeded fault: fuzz's summary, the gate's
 * distinct_failures and report.md count the same distinct failures, and its
 * provenance.json holds the command line the CLI passed (fuzz/campaign.c fresh_dir). */
START_TEST(campaign_counts_agree)
{
	char *dir = tmpdir();
	FzCampaign c;
	skip_last_campaign(&c);
	Diag d = {0};
	char *argv[] = {"--cases", "24", "-o", dir};
	c.argc = 4;
	c.argv = argv;
	char *camp = cat(dir, "camp");
	FzSummary sum;
	ck_assert_msg(fz_campaign_run(camp, &c, false, NULL, &sum, &d) == 0, "%s", d.msg);
	ck_assert_int_gt(sum.distinct, 0);
	RpRun run;
	ck_assert_int_eq(rp_load(camp, NULL, &run, &d), 0);
	RpFig f;
	rp_figures(&run, NULL, NULL, &f);
	ck_assert_int_eq(f.distinct, sum.distinct);
	ck_assert_int_eq(f.results, sum.records);
	RpPolicy p;
	const char *pol = "gate * distinct_failures <= 0\n";
	ck_assert_int_eq(rp_policy_parse(pol, strlen(pol), "p", &p, &d), 0);
	GateResult g;
	rp_gate_eval(&p.gates[0], &run, NULL, &g);
	ck_assert(g.figure == sum.distinct && !g.holds);
	rp_policy_free(&p);
	ck_assert(run.prov.present);
	char want[512];
	snprintf(want, sizeof want, "assay fuzz --cases 24 -o %s", dir);
	ck_assert_str_eq(run.prov.command, want);
	ck_assert_int_eq(run.prov.seed, 3);
	ck_assert_int_eq(run.prov.nbackends, 1);
	ck_assert_str_eq(run.prov.backends[0], "c");
	char *out = cat(dir, "report");
	RpOpts o = {"/nonexistent/gnuplot"};
	RpMade made;
	ck_assert_int_eq(rp_report(&run, out, &o, &made, &d), 0);
	free(made.plot_note);
	char *md = read_in(out, "report.md"), head[128];
	snprintf(head, sizeof head, "## assay: ❌ %d distinct failure%s (", sum.distinct,
		 sum.distinct == 1 ? "" : "s");
	ck_assert_msg(strncmp(md, head, strlen(head)) == 0, "%.200s", md);
	free(md);
	free(out);
	rp_free(&run);
	free(camp);
	free(dir);
}
END_TEST

/* A campaign run against a baseline (fuzz --baseline) of a control campaign's failures: the
 * reports count what the campaign counted: its failing records of the baseline's keys are of
 * class known, not distinct failures (the gate distinct_failures <= 0 holds), named in the
 * headline and in junit.xml, and their numbers stay out of the figures. */
START_TEST(baseline_known_in_reports)
{
	char *dir = tmpdir();
	FzCampaign c;
	skip_last_campaign(&c);
	Diag d = {0};
	char *ctl = cat(dir, "ctl"), *camp = cat(dir, "camp");
	FzSummary sum;
	ck_assert_msg(fz_campaign_run(ctl, &c, false, NULL, &sum, &d) == 0, "%s", d.msg);
	int found = sum.distinct;
	ck_assert_int_gt(found, 0);
	ck_assert_msg(fz_baseline_load(ctl, c.baseline, sizeof c.baseline, &d) == 0, "%s", d.msg);
	snprintf(c.baseline_from, sizeof c.baseline_from, "%s", ctl);
	ck_assert_msg(fz_campaign_run(camp, &c, false, NULL, &sum, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(sum.distinct, 0);
	ck_assert_int_eq(sum.known, found);
	RpRun run;
	ck_assert_int_eq(rp_load(camp, NULL, &run, &d), 0);
	RpFig f;
	rp_figures(&run, NULL, NULL, &f);
	ck_assert_int_eq(f.distinct, 0);
	ck_assert_int_eq(f.classes[VC_FAILURE], 0);
	ck_assert_int_gt(f.classes[VC_KNOWN], 0);
	ck_assert_int_eq(rp_status(&f), 1);
	RpPolicy p;
	const char *pol = "gate * distinct_failures <= 0\n";
	ck_assert_int_eq(rp_policy_parse(pol, strlen(pol), "p", &p, &d), 0);
	GateResult g;
	rp_gate_eval(&p.gates[0], &run, NULL, &g);
	ck_assert(g.figure == 0 && g.holds);
	rp_policy_free(&p);
	/* the control's own report still counts them as failures */
	RpRun cr;
	ck_assert_int_eq(rp_load(ctl, NULL, &cr, &d), 0);
	RpFig cf;
	rp_figures(&cr, NULL, NULL, &cf);
	ck_assert_int_eq(cf.distinct, found);
	ck_assert_int_eq(cf.classes[VC_KNOWN], 0);
	rp_free(&cr);
	char *out = cat(dir, "report");
	RpOpts o = {"/nonexistent/gnuplot"};
	RpMade made;
	ck_assert_int_eq(rp_report(&run, out, &o, &made, &d), 0);
	free(made.plot_note);
	char *md = read_in(out, "report.md");
	ck_assert_msg(strncmp(md, "## assay: ⚠️ 0 distinct failures", 34) == 0, "%.200s", md);
	ck_assert_msg(strstr(md, "known failure") && strstr(md, "(the campaign's baseline)"), "%.300s", md);
	free(md);
	char *junit = read_in(out, "junit.xml");
	ck_assert_ptr_nonnull(strstr(junit, "a known failure (the campaign's baseline lists "));
	ck_assert_ptr_null(strstr(junit, "<failure "));
	free(junit);
	free(out);
	rp_free(&run);
	free(ctl);
	free(camp);
	free(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("reports");
	TCase *u = tcase_create("units");
	tcase_add_loop_test(u, json_reader, 0, ARRAY_LEN(json_cases));
	tcase_add_test(u, json_values);
	tcase_add_loop_test(u, load_inputs, 0, ARRAY_LEN(load_cases));
	tcase_add_test(u, load_missing_dir);
	tcase_add_test(u, load_campaign);
	tcase_add_test(u, coverage_report);
	tcase_add_loop_test(u, agreement, 0, ARRAY_LEN(agree_cases));
	tcase_add_test(u, reduction_length);
	tcase_add_loop_test(u, policy_parse, 0, ARRAY_LEN(policy_cases));
	tcase_add_test(u, policy_values);
	tcase_add_test(u, gates_on_records);
	tcase_add_test(u, bias_gate);
	tcase_add_test(u, baseline_worse);
	tcase_add_test(u, classes_agree);
	tcase_add_test(u, failing_rows_show_no_zero);
	tcase_add_test(u, emulation_mismatch_reported);
	tcase_add_test(u, provenance_in_reports);
	tcase_add_loop_test(u, record_classes, 0, ARRAY_LEN(class_cases));
	tcase_add_test(u, provenance_written);
	suite_add_tcase(s, u);
	TCase *r = tcase_create("runs");
	tcase_set_timeout(r, 120);
	tcase_add_test(r, fault_fails_gate);
	tcase_add_test(r, report_files);
	tcase_add_test(r, junit_structure);
	tcase_add_test(r, html_in_chromium);
	tcase_add_test(r, campaign_counts_agree);
	tcase_add_test(r, baseline_known_in_reports);
	suite_add_tcase(s, r);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
