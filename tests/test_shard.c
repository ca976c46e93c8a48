/* tests/test_shard.c: sharded campaigns and their merge (fuzz/merge.c, `assay fuzz --shard
 * I/N`, `assay merge`): a shard runs its cases exactly as the whole campaign does, the merge
 * of the N shards is the unsharded campaign (its log timings aside, its distinct failures
 * and their folders, its summary), `assay report` and `assay gate` take the merge, and a
 * merge that would be anything else is refused, naming the shard or the member, with
 * nothing written and the shards untouched.
 *
 * Campaigns run on the c backend, without coverage feedback, a few cases each, in
 * temporary directories; the program (ASSAY, default ./assay) runs for the command-line
 * parts.
 */
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"
#include "../fuzz/fuzz.h"

static const char *prog(void)
{
	const char *p = getenv("ASSAY");
	return p && *p ? p : "./assay";
}

static FzCampaign camp(int64_t cases, int jobs, uint64_t faults, int shard_i, int shard_n)
{
	FzCampaign c;
	fz_campaign_defaults(&c);
	c.seed = 7;
	c.cases = cases;
	c.jobs = jobs;
	c.faults = faults;
	c.reduce = false;
	c.timeout_s = 20;
	c.variants = 0;
	c.feedback_epoch = 0;
	c.shard_i = shard_i;
	c.shard_n = shard_n;
	return c;
}

static void run_camp(const char *dir, const FzCampaign *c, bool resume)
{
	Diag d = {0};
	FzSummary s;
	ck_assert_msg(fz_campaign_run(dir, c, resume, NULL, &s, &d) == 0, "%s", d.msg ? d.msg : "");
}

static char *path_in(const char *dir, const char *name)
{
	char *p = NULL;
	ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
	return p;
}

static char *get(const char *dir, const char *name)
{
	char *p = path_in(dir, name), *t = tu_read_file(p, NULL);
	ck_assert_msg(t, "cannot read %s", p);
	free(p);
	return t;
}

static char *log_of(const char *dir)
{
	return tu_log_untimed(dir, false);
}

/* The output of a shell command (its exit status in *code). */
static char *sh(int *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *sh(int *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *cmd = NULL, *full = NULL;
	ck_assert_int_ge(vasprintf(&cmd, fmt, ap), 0);
	va_end(ap);
	ck_assert_int_ge(asprintf(&full, "(%s) 2>&1", cmd), 0);
	FILE *p = popen(full, "r");
	ck_assert_ptr_nonnull(p);
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	char buf[4096];
	for (size_t k; (k = fread(buf, 1, sizeof buf, p)) > 0;)
		fwrite(buf, 1, k, m);
	fclose(m);
	int st = pclose(p);
	*code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	free(cmd);
	free(full);
	return out;
}

/* Every file under dir with its checksum, sorted: what "untouched" compares. */
static char *tree_sum(const char *dir)
{
	int code;
	char *s = sh(&code, "cd '%s' && find . -type f | LC_ALL=C sort | xargs -r md5sum", dir);
	ck_assert_int_eq(code, 0);
	return s;
}

/* ------------------------------------------------------------ shards */

START_TEST(shard_parse)
{
	int i = -1, n = -1;
	Diag d = {0};
	ck_assert_int_eq(fz_shard_parse("2/4", &i, &n, &d), 0);
	ck_assert(i == 2 && n == 4);
	ck_assert_int_eq(fz_shard_parse("0/1", &i, &n, &d), 0);
	ck_assert(i == 0 && n == 1);
	static const struct {
		const char *text, *why;
	} bad[] = {
		{"0/0", "must be in 1.."}, {"1/0", "must be in 1.."}, {"3/2", "below N"},
		{"2/2", "below N"}, {"abc", "expects I/N"}, {"-1/2", "expects I/N"},
		{"1/", "expects I/N"}, {"/3", "expects I/N"}, {"1/2x", "expects I/N"},
		{"1 /2", "expects I/N"}, {"", "expects I/N"}, {"1/99999999", "expects I/N"},
	};
	for (size_t k = 0; k < ARRAY_LEN(bad); k++) {
		ck_assert_msg(fz_shard_parse(bad[k].text, &i, &n, &d) == -1, "'%s' taken", bad[k].text);
		ck_assert_int_eq(d.code, 2);
		ck_assert_msg(strstr(d.msg, bad[k].why), "'%s': %s", bad[k].text, d.msg);
		diag_clear(&d);
	}
	FzCampaign c = camp(10, 1, 0, 1, 3);
	uint64_t want[] = {1, 4, 7, 10};
	for (uint64_t k = 0; k < 4; k++)
		ck_assert_uint_eq(fz_shard_case(&c, k), want[k]);
	ck_assert_uint_eq(fz_shard_count(&c, 10), 3);   /* 1, 4, 7 */
	ck_assert_uint_eq(fz_shard_count(&c, 11), 4);
	ck_assert_uint_eq(fz_shard_count(&c, 1), 0);
	c.shard_n = 0;
	c.shard_i = 0;
	ck_assert_uint_eq(fz_shard_case(&c, 5), 5);
	ck_assert_uint_eq(fz_shard_count(&c, 10), 10);
}
END_TEST

/* settings.json keeps the shard; one without the member is not a shard; a shard with
 * coverage feedback, or a malformed member, is refused. */
START_TEST(shard_settings)
{
	char *a = tu_mkdtemp("shard");
	FzCampaign c = camp(12, 1, 0, 2, 5), back;
	Diag d = {0};
	ck_assert_int_eq(fz_settings_write(a, &c, &d), 0);
	char *text = get(a, "settings.json");
	ck_assert_ptr_nonnull(strstr(text, ",\"shard\":\"2/5\","));
	ck_assert_int_eq(fz_settings_read(a, &back, &d), 0);
	ck_assert(back.shard_i == 2 && back.shard_n == 5);
	char msg[512];
	ck_assert_int_eq(fz_settings_compare(&c, &back, "", msg, sizeof msg), 0);
	/* not a shard: no member */
	FzCampaign whole = camp(12, 1, 0, 0, 0);
	ck_assert_int_eq(fz_settings_write(a, &whole, &d), 0);
	free(text);
	text = get(a, "settings.json");
	ck_assert_ptr_null(strstr(text, "shard"));
	ck_assert_int_eq(fz_settings_read(a, &back, &d), 0);
	ck_assert(back.shard_i == 0 && back.shard_n == 0);
	/* compare names the member; "shard jobs" skips those */
	ck_assert_int_eq(fz_settings_compare(&c, &whole, "", msg, sizeof msg), 1);
	ck_assert_msg(strstr(msg, "member 'shard': 2/5 against (absent)"), "%s", msg);
	ck_assert_int_eq(fz_settings_compare(&c, &whole, "shard jobs", msg, sizeof msg), 0);
	FzCampaign other = c;
	other.jobs = 4;
	other.gen.max_depth = 3;
	ck_assert_int_eq(fz_settings_compare(&c, &other, "shard jobs", msg, sizeof msg), 1);
	ck_assert_msg(strstr(msg, "member 'gen.max_depth': 4 against 3"), "%s", msg);
	/* a shard with feedback */
	FzCampaign fb = c;
	fb.feedback_epoch = 64;
	ck_assert_int_eq(fz_settings_check(&fb, &d), -1);
	ck_assert_ptr_nonnull(strstr(d.msg, "member 'shard'"));
	diag_clear(&d);
	/* malformed members */
	const char *bad[] = {"\"3/3\"", "\"x\"", "7", "\"0/0\"", "\"01/2\""};
	for (size_t k = 0; k < ARRAY_LEN(bad); k++) {
		char *p = path_in(a, "settings.json"), *t = NULL;
		FzCampaign s = camp(12, 1, 0, 1, 2);
		ck_assert_int_eq(fz_settings_write(a, &s, &d), 0);
		char *orig = get(a, "settings.json"), *at = strstr(orig, "\"1/2\"");
		ck_assert_ptr_nonnull(at);
		ck_assert_int_ge(asprintf(&t, "%.*s%s%s", (int)(at - orig), orig, bad[k], at + 5), 0);
		FILE *f = fopen(p, "w");
		fputs(t, f);
		fclose(f);
		ck_assert_int_eq(fz_settings_read(a, &back, &d), -1);
		ck_assert_msg(strstr(d.msg, "member 'shard'"), "%s: %s", bad[k], d.msg);
		diag_clear(&d);
		free(p);
		free(t);
		free(orig);
	}
	free(text);
	tu_rm_rf(a);
	free(a);
}
END_TEST

/* A shard's log holds its cases, each as the whole campaign's log has it; a resumed shard
 * continues as itself. */
START_TEST(shard_runs_its_cases)
{
	char *w = tu_mkdtemp("shard"), *s = tu_mkdtemp("shard"), *h = tu_mkdtemp("shard");
	FzCampaign whole = camp(7, 2, 0, 0, 0), sh = camp(7, 1, 0, 1, 3), half = camp(3, 1, 0, 1, 3);
	run_camp(w, &whole, false);
	run_camp(s, &sh, false);
	run_camp(h, &half, false);   /* case 1 only: 4 is at 3 and beyond */
	FzCampaign more = camp(7, 2, 0, 0, 0);   /* the shard comes from the directory */
	run_camp(h, &more, true);
	char *lw = log_of(w), *ls = log_of(s), *lh = log_of(h);
	ck_assert_str_eq(ls, lh);
	int cases = 0;
	for (char *p = ls; *p; p = strchr(p, '\n') + 1) {
		char *nl = strchr(p, '\n');
		*nl = 0;
		ck_assert_msg(strstr(lw, p), "a line of the shard that the whole campaign lacks: %s", p);
		cases += strncmp(p, "{\"done\":", 8) == 0;
		*nl = '\n';
	}
	ck_assert_int_eq(cases, 2);   /* cases 1 and 4 */
	ck_assert_ptr_nonnull(strstr(ls, "{\"done\":1,"));
	ck_assert_ptr_nonnull(strstr(ls, "{\"done\":4,"));
	ck_assert_ptr_null(strstr(ls, "{\"done\":7,"));
	free(lw);
	free(ls);
	free(lh);
	tu_rm_rf(w);
	tu_rm_rf(s);
	tu_rm_rf(h);
	free(w);
	free(s);
	free(h);
}
END_TEST

/* ------------------------------------------------------------ the merge */

/* The equivalence: 24 cases with a seeded fault (so there are failures, several found by
 * more than one shard) and metamorphic variants, unsharded with 2 jobs against 3 shards
 * merged: the same log timings aside, the same failure folders (their repros, signatures,
 * counts and original graphs), the same summary figures; report and gate take the merge as
 * they take the whole campaign; the shards are untouched. */
START_TEST(merge_equals_unsharded)
{
	char *w = tu_mkdtemp("shard"), *top = tu_mkdtemp("shard"), *sd[3], *m = path_in(top, "merged");
	FzCampaign whole = camp(24, 2, KF_SKIP_LAST, 0, 0);
	whole.variants = 0.5;
	run_camp(w, &whole, false);
	char *sums[3];
	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof name, "s%d", i);
		sd[i] = path_in(top, name);
		FzCampaign c = camp(24, 1 + (i == 0), KF_SKIP_LAST, i, 3);   /* jobs may differ */
		c.variants = 0.5;
		run_camp(sd[i], &c, false);
		sums[i] = tree_sum(sd[i]);
	}
	/* the shards given in another order: the merge is by shard, not by argument */
	const char *dirs[] = {sd[2], sd[0], sd[1]};
	FzMergeStats st;
	Diag d = {0};
	char *argv[] = {"merge", "-o", m, NULL};
	ck_assert_msg(fz_merge(dirs, 3, m, 3, argv, &st, &d) == 0, "%s", d.msg ? d.msg : "");
	ck_assert_int_eq(st.shards, 3);
	ck_assert_int_eq(st.cases, 24);
	char *lw = log_of(w), *lm = log_of(m);
	ck_assert_str_eq(lw, lm);
	ck_assert_ptr_nonnull(strstr(lm, ",\"variant\":\""));   /* variants ran, per case */
	/* the failures: the same folders, the same files that are not timings */
	int code;
	char *fw = sh(&code, "cd '%s/failures' && ls", w), *fm = sh(&code, "cd '%s/failures' && ls", m);
	ck_assert_str_eq(fw, fm);
	ck_assert_int_ge(st.distinct, 2);
	ck_assert_int_ge(st.shared, 1);   /* one failure at least, found by several shards, is one */
	char *diff = sh(&code, "cd '%s/failures' && for f in */repro.tg */signature */count "
			"*/original.tg; do cmp \"$f\" '%s/failures/'\"$f\" || exit 1; done", w, m);
	ck_assert_msg(code == 0, "%s", diff);
	/* the summary's figures */
	FzSummary sw, sm;
	ck_assert_int_eq(fz_campaign_summarize(w, false, 0, &sw, &d), 0);
	ck_assert_int_eq(fz_campaign_summarize(m, false, 0, &sm, &d), 0);
	ck_assert_int_eq(sw.cases, sm.cases);
	ck_assert_int_eq(sw.records, sm.records);
	ck_assert_int_eq(sw.distinct, sm.distinct);
	ck_assert_int_eq(sw.kills, sm.kills);
	ck_assert_int_eq(sw.first_kill_case, sm.first_kill_case);
	ck_assert_int_eq(st.distinct, sm.distinct);
	for (int v = 0; v < V__COUNT; v++)
		ck_assert_int_eq(sw.verdicts[v], sm.verdicts[v]);
	char *set_m = get(m, "settings.json");
	ck_assert_ptr_nonnull(strstr(set_m, "\"jobs\":2,"));   /* shard 0's (the others have 1) */
	ck_assert_ptr_null(strstr(set_m, "shard"));
	char *prov = get(m, "provenance.json");
	ck_assert_ptr_nonnull(strstr(prov, "merge"));
	/* report and gate take the merge, and judge it as they judge the whole campaign */
	char *rw = sh(&code, "%s gate '%s' --policy examples/campaign.policy", prog(), w);
	int gw = code;
	char *rm = sh(&code, "%s gate '%s' --policy examples/campaign.policy", prog(), m);
	ck_assert_msg(code == gw && (code == 0 || code == 1), "gate: %d against %d\n%s\n%s", code, gw,
		      rw, rm);
	char *rep = sh(&code, "%s report '%s' -o '%s/rep' && grep -c . '%s/rep/report.md'", prog(), m,
		       top, top);
	ck_assert_msg(code == 0, "%s", rep);
	char *mdw = sh(&code, "%s report '%s' -o '%s/repw' >/dev/null && grep -i 'distinct' "
		       "'%s/repw/report.md' | head -1", prog(), w, top, top);
	char *mdm = sh(&code, "grep -i 'distinct' '%s/rep/report.md' | head -1", top);
	ck_assert_str_eq(mdw, mdm);
	/* the shards are untouched */
	for (int i = 0; i < 3; i++) {
		char *now = tree_sum(sd[i]);
		ck_assert_str_eq(sums[i], now);
		free(now);
		free(sums[i]);
	}
	/* the merge continues as the unsharded campaign does */
	FzCampaign more = camp(26, 2, 0, 0, 0);
	run_camp(m, &more, true);
	char *after = get(m, "results.jsonl");
	ck_assert_ptr_nonnull(strstr(after, "{\"done\":25,"));
	free(after);
	free(rw);
	free(rm);
	free(rep);
	free(mdw);
	free(mdm);
	free(prov);
	free(set_m);
	free(diff);
	free(fw);
	free(fm);
	free(lw);
	free(lm);
	for (int i = 0; i < 3; i++)
		free(sd[i]);
	free(m);
	tu_rm_rf(w);
	tu_rm_rf(top);
	free(w);
	free(top);
}
END_TEST

/* A baseline is per case: shards with a control campaign's failures as their baseline merge
 * into the unsharded campaign with that baseline (the known failures counted, not saved). */
START_TEST(merge_with_baseline)
{
	char *top = tu_mkdtemp("shard"), *ctl = path_in(top, "ctl"), *w = path_in(top, "whole");
	char *s0 = path_in(top, "s0"), *s1 = path_in(top, "s1"), *m = path_in(top, "m");
	FzCampaign control = camp(4, 1, KF_SKIP_LAST, 0, 0);
	run_camp(ctl, &control, false);
	FzCampaign whole = camp(8, 2, KF_SKIP_LAST, 0, 0), c0 = camp(8, 1, KF_SKIP_LAST, 0, 2);
	FzCampaign c1 = camp(8, 1, KF_SKIP_LAST, 1, 2);
	Diag d = {0};
	ck_assert_int_eq(fz_baseline_load(ctl, whole.baseline, sizeof whole.baseline, &d), 0);
	ck_assert_int_gt(fz_baseline_count(whole.baseline), 0);
	snprintf(whole.baseline_from, sizeof whole.baseline_from, "%s", ctl);
	FzCampaign *shards[] = {&c0, &c1};
	for (int k = 0; k < 2; k++) {
		memcpy(shards[k]->baseline, whole.baseline, sizeof whole.baseline);
		memcpy(shards[k]->baseline_from, whole.baseline_from, sizeof whole.baseline_from);
	}
	run_camp(w, &whole, false);
	run_camp(s0, &c0, false);
	run_camp(s1, &c1, false);
	const char *dirs[] = {s0, s1};
	FzMergeStats st;
	char *argv[] = {"merge", NULL};
	ck_assert_msg(fz_merge(dirs, 2, m, 1, argv, &st, &d) == 0, "%s", d.msg ? d.msg : "");
	char *lw = log_of(w), *lm = log_of(m);
	ck_assert_str_eq(lw, lm);
	FzSummary sw, sm;
	ck_assert_int_eq(fz_campaign_summarize(w, false, 0, &sw, &d), 0);
	ck_assert_int_eq(fz_campaign_summarize(m, false, 0, &sm, &d), 0);
	ck_assert_int_gt(sw.known, 0);
	ck_assert_int_eq(sw.known, sm.known);
	ck_assert_int_eq(sw.distinct, sm.distinct);
	ck_assert_int_eq(st.distinct, sm.distinct);
	int code;
	char *fw = sh(&code, "cd '%s' && ls failures 2>/dev/null", w);
	char *fm = sh(&code, "cd '%s' && ls failures 2>/dev/null", m);
	ck_assert_str_eq(fw, fm);   /* the known ones have no folder in either */
	free(fw);
	free(fm);
	free(lw);
	free(lm);
	free(ctl);
	free(w);
	free(s0);
	free(s1);
	free(m);
	tu_rm_rf(top);
	free(top);
}
END_TEST

/* Copies directory a to b (cp -a). */
static void copy(const char *a, const char *b)
{
	int code;
	char *o = sh(&code, "cp -a '%s' '%s'", a, b);
	ck_assert_msg(code == 0, "%s", o);
	free(o);
}

static void expect_refused(const char *const *dirs, int n, const char *out, const char *what)
{
	FzMergeStats st;
	Diag d = {0};
	char *argv[] = {"merge", NULL};
	ck_assert_int_eq(fz_merge(dirs, n, out, 1, argv, &st, &d), -1);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, what), "wanted \"%s\": %s", what, d.msg);
	diag_clear(&d);
	/* nothing written: no output, no temporary directory beside it */
	int code;
	char *left = sh(&code, "ls -d '%s'* 2>/dev/null", out);
	ck_assert_msg(!*left || strstr(what, "exists"), "left behind: %s", left);
	free(left);
}

START_TEST(merge_refuses)
{
	char *top = tu_mkdtemp("shard");
	char *s0 = path_in(top, "s0"), *s1 = path_in(top, "s1"), *s2 = path_in(top, "s2");
	char *whole = path_in(top, "whole"), *seed = path_in(top, "seed"), *of3 = path_in(top, "of3");
	char *out = path_in(top, "out");
	FzCampaign c0 = camp(6, 1, 0, 0, 2), c1 = camp(6, 1, 0, 1, 2), cw = camp(2, 1, 0, 0, 0);
	FzCampaign cs = camp(6, 1, 0, 1, 2), c3 = camp(6, 1, 0, 2, 3);
	cs.seed = 8;
	run_camp(s0, &c0, false);
	run_camp(s1, &c1, false);
	run_camp(whole, &cw, false);
	run_camp(seed, &cs, false);
	run_camp(of3, &c3, false);
	char *untouched = tree_sum(s0);   /* every refusal below leaves the shards as they are */
	{
		const char *d[] = {s0, whole};
		expect_refused(d, 2, out, "is not a shard");
	}
	{
		const char *d[] = {s0, seed};
		expect_refused(d, 2, out, "member 'seed': 7 against 8");
	}
	{
		const char *d[] = {s0, s0};
		expect_refused(d, 2, out, "are both shard 0/2");
	}
	{
		const char *d[] = {s0};
		expect_refused(d, 1, out, "shard 1/2 is missing");
	}
	{
		const char *d[] = {s0, of3};
		expect_refused(d, 2, out, "member 'shard': 0/2 against 2/3");
	}
	{
		const char *d[] = {s0, top};
		expect_refused(d, 2, out, "does not hold a campaign");
	}
	/* incomplete: shard 1 cut after its first case (1); shard 0 holds 4, so 0..5 */
	copy(s1, s2);
	char *log = path_in(s2, "results.jsonl"), *text = tu_read_file(log, NULL);
	char *cut = strstr(text, "{\"done\":1,");
	ck_assert_ptr_nonnull(cut);
	cut = strchr(cut, '\n') + 1;
	FILE *f = fopen(log, "w");
	fwrite(text, 1, (size_t)(cut - text), f);
	fclose(f);
	{
		const char *d[] = {s0, s2};
		expect_refused(d, 2, out, "is incomplete: it holds 1 of its 3 cases among 0..5");
	}
	/* torn: a record without its done line */
	f = fopen(log, "a");
	fputs("{\"graph\":\"fz3\",\"backend\":\"c\",\"case\":3}\n", f);
	fclose(f);
	{
		const char *d[] = {s0, s2};
		expect_refused(d, 2, out, "ends in a torn or unfinished case");
	}
	/* a log with another shard's case in it: the cases would overlap */
	f = fopen(log, "w");
	fwrite(text, 1, (size_t)(cut - text), f);
	fputs("{\"done\":2,\"status\":\"ok\",\"fails\":[]}\n", f);
	fclose(f);
	{
		const char *d[] = {s0, s2};
		expect_refused(d, 2, out, "a done line of case 2 where case 3's belongs");
	}
	/* the output exists */
	ck_assert_int_eq(mkdir(out, 0777), 0);
	char *junk = path_in(out, "x");
	f = fopen(junk, "w");
	fclose(f);
	{
		const char *d[] = {s0, s1};
		expect_refused(d, 2, out, "already exists and is not empty");
	}
	unlink(junk);   /* an empty directory is taken */
	/* errors/: every shard's (one made here: the cases of this campaign have none) */
	char *errs = path_in(s1, "errors"), *err = path_in(errs, "case-3.tg");
	ck_assert_int_eq(mkdir(errs, 0777), 0);
	f = fopen(err, "w");
	fputs("# the oracle failed\n", f);
	fclose(f);
	char *before = tree_sum(s1);
	{
		const char *d[] = {s1, s0};
		FzMergeStats st;
		Diag dg = {0};
		char *argv[] = {"merge", NULL};
		ck_assert_msg(fz_merge(d, 2, out, 1, argv, &st, &dg) == 0, "%s", dg.msg ? dg.msg : "");
		ck_assert_int_eq(st.cases, 6);
		ck_assert_int_eq(st.errors, 1);
	}
	char *copied = get(out, "errors/case-3.tg");
	ck_assert_str_eq(copied, "# the oracle failed\n");
	free(copied);
	free(errs);
	free(err);
	char *after = tree_sum(s1), *after0 = tree_sum(s0);
	ck_assert_str_eq(before, after);
	ck_assert_str_eq(untouched, after0);
	free(before);
	free(after);
	free(untouched);
	free(after0);
	free(junk);
	free(log);
	free(text);
	free(s0);
	free(s1);
	free(s2);
	free(whole);
	free(seed);
	free(of3);
	free(out);
	tu_rm_rf(top);
	free(top);
}
END_TEST

/* ------------------------------------------------------------ the command line */

START_TEST(cli_shard_and_merge)
{
	char *top = tu_mkdtemp("shard");
	static const char *bad[] = {"0/0", "3/2", "abc", "1/0"};
	int code;
	for (size_t k = 0; k < ARRAY_LEN(bad); k++) {
		char *o = sh(&code, "%s fuzz --shard %s --cases 2 --backends c -o '%s/x'", prog(), bad[k],
			     top);
		ck_assert_msg(code == 2 && strstr(o, "--shard"), "--shard %s: exit %d: %s", bad[k], code, o);
		char *x = path_in(top, "x");
		ck_assert_int_ne(access(x, F_OK), 0);   /* refused before anything is written */
		free(x);
		free(o);
	}
	char *o = sh(&code, "%s fuzz --shard 1/2 --cases 4 --backends c --seed 3 --quiet -o '%s/s1' && "
		     "grep -c . '%s/s1/results.jsonl' >/dev/null && cat '%s/s1/settings.json'",
		     prog(), top, top, top);
	ck_assert_msg(code == 0 && strstr(o, "\"shard\":\"1/2\"") && strstr(o, "\"feedback_epoch\":0"),
		      "exit %d: %s", code, o);
	free(o);
	/* a resume keeps the shard: the same one may be given, another is refused */
	o = sh(&code, "%s fuzz --resume '%s/s1' --shard 0/2 --cases 4", prog(), top);
	ck_assert_msg(code == 2 && strstr(o, "--shard 0/2 is not the campaign's setting (shard 1/2"),
		      "exit %d: %s", code, o);
	free(o);
	o = sh(&code, "%s fuzz --resume '%s/s1' --shard 1/2 --cases 4 --quiet", prog(), top);
	ck_assert_msg(code == 0, "exit %d: %s", code, o);
	free(o);
	o = sh(&code, "%s fuzz --shard 0/2 --cases 4 --backends c --seed 3 --quiet -o '%s/s0' && "
	       "%s merge '%s/s0' '%s/s1' -o '%s/m/'", prog(), top, prog(), top, top, top);
	ck_assert_msg(code == 0 && strstr(o, "merged 2 shards: 4 cases"), "exit %d: %s", code, o);
	free(o);
	o = sh(&code, "ls -a '%s' '%s/m'", top, top);   /* m whole, nothing left beside or in it */
	ck_assert_msg(!strstr(o, "merge-tmp") && strstr(o, "results.jsonl"), "%s", o);
	free(o);
	o = sh(&code, "%s merge '%s/s0' -o '%s/m2'", prog(), top, top);
	ck_assert_msg(code == 2 && strstr(o, "assay merge: shard 1/2 is missing"), "exit %d: %s", code, o);
	free(o);
	o = sh(&code, "%s merge '%s/s0' '%s/s1'", prog(), top, top);
	ck_assert_msg(code == 2 && strstr(o, "-o DIR"), "exit %d: %s", code, o);
	free(o);
	tu_rm_rf(top);
	free(top);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("shard");
	TCase *tc = tcase_create("shards");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, shard_parse);
	tcase_add_test(tc, shard_settings);
	tcase_add_test(tc, shard_runs_its_cases);
	suite_add_tcase(s, tc);
	tc = tcase_create("merge");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, merge_equals_unsharded);
	tcase_add_test(tc, merge_with_baseline);
	tcase_add_test(tc, merge_refuses);
	tcase_add_test(tc, cli_shard_and_merge);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (access(prog(), X_OK) != 0) {
		fprintf(stderr, "test_shard: %s is not there: build it first (make), or set ASSAY\n",
			prog());
		return EXIT_FAILURE;
	}
	return tu_run(suite());
}
