/* tests/test_cli.c: the command line as a user meets it. The program (ASSAY in the
 * environment, default ./assay: `make check` builds it first) runs as a subprocess with
 * arguments; each test asserts its exit code and a piece of its stderr. Flags are read
 * whole, one wrong flag is named with its value, a run that tests nothing is not a
 * success, `check -o` keeps another run's results, and a campaign is resumed only as
 * itself (its settings read strictly, its log whole but for a torn last case, no flag
 * that would make it another campaign). Each campaign here is two or three cases on the
 * c backend; every command runs under `timeout`, so a flag that would make the program
 * run forever fails its test instead of hanging the suite.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mount.h>
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

typedef struct {
	int code;          /* the exit status; 124 when the time limit killed it */
	char *out, *err;
} Ran;

static char *tmpdir(void)
{
	char *t = strdup("/tmp/assay-test-cli.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(t));
	return t;
}

static void rm_rf(char *dir)
{
	char cmd[600];
	ck_assert(strncmp(dir, "/tmp/assay-test-cli.", 20) == 0 && !strchr(dir, '\''));
	snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(dir);
}

static char *path_in(const char *dir, const char *name)
{
	char *p = NULL;
	ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
	return p;
}

static bool exists(const char *dir, const char *name)
{
	char *p = path_in(dir, name);
	bool yes = access(p, F_OK) == 0;
	free(p);
	return yes;
}

static void put(const char *dir, const char *name, const char *text)
{
	char *p = path_in(dir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

static char *get(const char *dir, const char *name)
{
	char *p = path_in(dir, name), *text = tu_read_file(p, NULL);
	ck_assert_msg(text != NULL, "cannot read %s", p);
	free(p);
	return text;
}

/* Runs `ENV ASSAY ARGS` (ARGS formatted, through /bin/sh) in the repository root, its
 * output kept in dir. */
static Ran run_in(const char *dir, const char *env, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static Ran run_in(const char *dir, const char *env, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *args = NULL, *cmd = NULL;
	ck_assert_int_ge(vasprintf(&args, fmt, ap), 0);
	va_end(ap);
	ck_assert_int_ge(asprintf(&cmd, "%s timeout 600 %s %s >%s/stdout 2>%s/stderr", env, prog(),
				  args, dir, dir), 0);
	int st = system(cmd);
	Ran r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128, get(dir, "stdout"), get(dir, "stderr")};
	free(args);
	free(cmd);
	return r;
}

#define run(dir, ...) run_in(dir, "", __VA_ARGS__)

static void ran_free(Ran *r)
{
	free(r->out);
	free(r->err);
}

/* The run exited with code and its stderr holds each of the NULL-terminated pieces. */
static void expect(Ran r, int code, ...)
{
	ck_assert_msg(r.code == code, "exit %d, not %d; stderr: %s", r.code, code, r.err);
	va_list ap;
	va_start(ap, code);
	for (const char *s; (s = va_arg(ap, const char *));)
		ck_assert_msg(strstr(r.err, s), "stderr lacks \"%s\": %s", s, r.err);
	va_end(ap);
	ran_free(&r);
}

/* A small graph, an f64 one (which WGSL cannot run) and a schedule-less example. */
static const char *tiny = "graph tiny\nsize N = 4\ninput x : f32[N]\ny[i:N] = x[i] * 2.0\noutput y : f32\n";
static const char *f64 = "graph wide\nsize N = 4\ninput x : f64[N]\ny[i:N] = x[i] * 2.0\noutput y : f64\n";

/* ------------------------------------------------------------ flags */

START_TEST(numbers_read_whole)
{
	char *t = tmpdir();
	put(t, "g.tg", tiny);
	static const char *secs[] = {"abc", "0", "nan", "1e400", "-1", "inf", "5x", "0x10", " 5"};
	for (size_t i = 0; i < ARRAY_LEN(secs); i++) {
		Ran r = run(t, "fuzz --seconds '%s' --backends c --quiet -o %s/camp", secs[i], t);
		char want[64];
		snprintf(want, sizeof want, "got '%s'", secs[i]);
		ck_assert_msg(!strstr(r.err, "--jobs"), "a paragraph, not the one flag: %s", r.err);
		expect(r, 2, "assay fuzz: --seconds expects a positive number", want, NULL);
		ck_assert(!exists(t, "camp"));
	}
	expect(run(t, "check %s/g.tg --backends c --timeout 5x", t), 2,
	       "assay check: --timeout expects a positive number", "'5x'", NULL);
	expect(run(t, "check %s/g.tg --backends c --timeout 1e400", t), 2, "--timeout", NULL);
	expect(run(t, "check %s/g.tg --backends c --threads 0", t), 2, "--threads", "'0'", NULL);
	expect(run(t, "check %s/g.tg --backends c --schedules 1.5", t), 2, "--schedules", NULL);
	expect(run(t, "check %s/g.tg --backends c --seed -1", t), 2,
	       "--seed expects a non-negative integer below 2^63, got '-1'", NULL);
	/* decimal only: "0x10" is not sixteen (and "010" is ten, not eight) */
	expect(run(t, "check %s/g.tg --backends c --seed 0x10", t), 2, "--seed", "'0x10'", NULL);
	expect(run(t, "check %s/g.tg --backends c --seed 99999999999999999999", t), 2, "--seed",
	       NULL);
	expect(run(t, "eval %s/g.tg --threads abc", t), 2, "assay eval: --threads", NULL);
	expect(run(t, "emit %s/g.tg --sample -3", t), 2, "assay emit: --sample", NULL);
	expect(run(t, "reduce %s/g.tg --timeout abc", t), 2, "assay reduce: --timeout", NULL);
	expect(run(t, "reduce %s/g.tg --tests 0", t), 2, "assay reduce: --tests", NULL);
	expect(run(t, "fuzz --seed -1 --cases 1 --backends c -o %s/camp", t), 2, "--seed", NULL);
	expect(run(t, "fuzz --jobs 65 --cases 1 --backends c -o %s/camp", t), 2, "--jobs", NULL);
	expect(run(t, "fuzz --cases 0 --backends c -o %s/camp", t), 2, "--cases", NULL);
	expect(run(t, "fuzz --timeout nan --cases 1 --backends c -o %s/camp", t), 2, "--timeout",
	       NULL);
	expect(run(t, "fuzz --seconds 5 --cases 1 --backends c -o %s/camp", t), 2, "not both", NULL);
	static const char *variants[] = {"-1", "9", "nan", "1x", ""};
	for (size_t i = 0; i < ARRAY_LEN(variants); i++)
		expect(run(t, "fuzz --variants '%s' --cases 1 --backends c -o %s/camp", variants[i], t),
		       2, "assay fuzz: --variants expects a number in [0, 8]", NULL);
	ck_assert(!exists(t, "camp"));
	/* what is whole is taken: a decimal timeout, a seed with a leading zero */
	Ran a = run(t, "eval %s/g.tg --seed 010", t), b = run(t, "eval %s/g.tg --seed 10", t);
	ck_assert_int_eq(a.code, 0);
	ck_assert_str_eq(a.out, b.out);
	ran_free(&a);
	ran_free(&b);
	expect(run(t, "check %s/g.tg --backends c --timeout 2.5", t), 0, NULL);
	rm_rf(t);
}
END_TEST

START_TEST(schedule_directory)
{
	char *t = tmpdir();
	put(t, "g.tg", tiny);
	expect(run(t, "check %s/g.tg --backends c --schedule %s", t, t), 2,
	       "--schedule", ": is a directory", NULL);
	expect(run(t, "emit %s/g.tg --schedule %s", t, t), 2, "--schedule", ": is a directory",
	       NULL);
	expect(run(t, "emit %s/g.tg --schedule %s/none.sched", t, t), 2, "none.sched", NULL);
	rm_rf(t);
}
END_TEST

START_TEST(backend_lists)
{
	char *t = tmpdir();
	put(t, "g.tg", tiny);
	expect(run(t, "check %s/g.tg --backends ''", t), 2, "--backends: no backend given", NULL);
	expect(run(t, "check %s/g.tg --backends c,,vulkan", t), 2, "empty name", NULL);
	expect(run(t, "check %s/g.tg --backends c,", t), 2, "empty name", NULL);
	expect(run(t, "check %s/g.tg --backends c,nope", t), 2, "unknown backend 'nope'", NULL);
	expect(run(t, "fuzz --backends nope --cases 1 -o %s/camp", t), 2, "'nope'", NULL);
	expect(run(t, "fuzz --backends c,,c --cases 1 -o %s/camp", t), 2, "empty name", NULL);
	expect(run(t, "reduce %s/g.tg --backends ''", t), 2, "no backend given", NULL);
	ck_assert(!exists(t, "camp"));
	/* "c,c" is one c */
	Ran one = run(t, "check %s/g.tg --backends c", t), two = run(t, "check %s/g.tg --backends c,c", t);
	ck_assert_int_eq(one.code, 0);
	ck_assert_int_eq(two.code, 0);
	ck_assert_str_eq(one.out, two.out);
	ck_assert_ptr_nonnull(strstr(one.out, "1 results"));
	ran_free(&one);
	ran_free(&two);
	expect(run(t, "fuzz --backends c,c --cases 1 --quiet -o %s/camp", t), 0, NULL);
	char *set = get(t, "camp/settings.json");
	ck_assert_msg(strstr(set, "\"backends\":\"c\","), "%s", set);
	free(set);
	rm_rf(t);
}
END_TEST

/* A backend unavailable here, or NULL (reasons in why). */
static const Backend *unavailable(char *why, size_t n)
{
	for (int k = 0; be_at(k); k++)
		if (be_at(k)->available(why, n) != 0)
			return be_at(k);
	return NULL;
}

START_TEST(nothing_tested)
{
	char *t = tmpdir();
	put(t, "g.tg", tiny);
	put(t, "wide.tg", f64);
	char why[256];
	const Backend *b = unavailable(why, sizeof why);
	if (b) {
		char name[64];
		snprintf(name, sizeof name, "(%s: ", b->name);
		expect(run(t, "check %s/g.tg --backends %s", t, b->name), 2,
		       "assay check: nothing was tested: every backend is unavailable", name, NULL);
		expect(run(t, "fuzz --backends %s --cases 1 -o %s/camp", b->name, t), 2,
		       "assay fuzz: --backends", name, NULL);
		expect(run(t, "fuzz --backends c,%s --cases 1 -o %s/camp", b->name, t), 2,
		       "unavailable here", NULL);
		ck_assert(!exists(t, "camp"));
		/* some unsupported results beside passing ones: a success */
		expect(run(t, "check %s/g.tg --backends c,%s", t, b->name), 0, NULL);
	} else {
		fprintf(stderr, "SKIP: nothing_tested: every backend is available here, so the "
			"unavailable-backend cases are not run (the f64-on-wgsl ones are)\n");
	}
	/* WGSL has no f64: every result unsupported (or wgsl unavailable), nothing tested */
	expect(run(t, "check %s/wide.tg --backends wgsl", t), 2, "assay check: nothing was tested",
	       "wgsl: ", NULL);
	expect(run(t, "check %s/wide.tg --backends wgsl,c", t), 0, NULL);
	rm_rf(t);
}
END_TEST

START_TEST(check_o_keeps_a_run)
{
	char *t = tmpdir();
	put(t, "g.tg", tiny);
	expect(run(t, "check %s/g.tg --backends c -o %s/run", t, t), 0, NULL);
	char *first = get(t, "run/results.jsonl");
	ck_assert_int_gt(strlen(first), 0);
	expect(run(t, "check %s/g.tg --backends c --seed 3 -o %s/run", t, t), 2,
	       "assay check: -o ", "/run: the directory is not empty", "--force", NULL);
	char *kept = get(t, "run/results.jsonl");
	ck_assert_str_eq(first, kept);
	expect(run(t, "check %s/g.tg --backends c --seed 3 -o %s/run --force", t, t), 0, NULL);
	char *now = get(t, "run/results.jsonl");
	ck_assert_str_ne(first, now);   /* another seed: other inputs */
	char *empty = path_in(t, "empty");
	ck_assert_int_eq(mkdir(empty, 0777), 0);
	free(empty);
	expect(run(t, "check %s/g.tg --backends c -o %s/empty", t, t), 0, NULL);
	Ran h = run(t, "check --help");
	ck_assert_ptr_nonnull(strstr(h.out, "--force"));
	ran_free(&h);
	free(first);
	free(kept);
	free(now);
	rm_rf(t);
}
END_TEST

/* ------------------------------------------------------------ campaigns */

/* A campaign of n cases on c in t/camp. */
static void campaign(const char *t, int n, const char *more)
{
	expect(run(t, "fuzz --cases %d --backends c --quiet %s -o %s/camp", n, more, t), 0, NULL);
}

static int lines(const char *text)
{
	int n = 0;
	for (const char *p = text; (p = strchr(p, '\n')); p++)
		n++;
	return n;
}

/* text with its first `from` replaced by `to` (heap). */
static char *replaced(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	ck_assert_msg(at != NULL, "no '%s' in %s", from, text);
	char *s = NULL;
	ck_assert_int_ge(asprintf(&s, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from)), 0);
	return s;
}

START_TEST(resume_refuses_corrupt_settings)
{
	char *t = tmpdir();
	campaign(t, 2, "--seed 1");
	char *good = get(t, "camp/settings.json"), *log = get(t, "camp/results.jsonl");
	static const struct { const char *from, *to, *says; } bad[] = {
		{"\"seed\":1,", "\"seed\":\"abc\",", "member 'seed'"},
		{"\"seed\":1,", "\"seed\":-1,", "member 'seed'"},
		{"\"seed\":1,", "\"seed\":1.5,", "member 'seed'"},
		{"\"seed\":1,", "\"seed\":18446744073709551616,", "member 'seed'"},
		{"\"seed\":1,", "", "member 'seed' is missing"},
		{"\"backends\":\"c\"", "\"backends\":\"zz\"", "member 'backends': unknown backend 'zz'"},
		{"\"backends\":\"c\"", "\"backends\":\"\"", "member 'backends'"},
		{"\"inputs\":\"mix\"", "\"inputs\":\"mixx\"", "member 'inputs'"},
		{"\"faults\":\"\"", "\"faults\":\"nope\"", "member 'faults': unknown fault 'nope'"},
		{"\"timeout_s\":10", "\"timeout_s\":1e999", "member 'timeout_s'"},
		{"\"timeout_s\":10", "\"timeout_s\":-10", "member 'timeout_s'"},
		{"\"jobs\":1", "\"jobs\":0", "member 'jobs'"},
		{"\"jobs\":1", "\"jobs\":true", "member 'jobs'"},
		{"\"version\":1", "\"version\":7", "member 'version': expected 1, got 7"},
		{",\"reduce\":true", "", "member 'reduce' is missing"},
		{"\"reduce\":true", "\"reduce\":1", "member 'reduce'"},
		{"\"max_rank\":4", "\"max_rank\":4.5", "member 'gen.max_rank'"},
		{"\"p_schedule\":0.5", "\"p_schedule\":2", "member 'gen.p_schedule'"},
		{"\"hooks\":0", "\"hooks\":0,\"extra\":1", "unknown member 'extra'"},
		{"\"hooks\":0", "\"hooks\":0,\"hooks\":0", "member 'hooks' given twice"},
		{"}}", "}", "not valid JSON"},
		{"\"inputs\"", "\"inputs", "not valid JSON"},
	};
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		char *text = replaced(good, bad[i].from, bad[i].to);
		put(t, "camp/settings.json", text);
		expect(run(t, "fuzz --resume %s/camp --cases 4 --quiet", t), 2, "/camp/settings.json: ",
		       bad[i].says, NULL);
		char *now = get(t, "camp/results.jsonl");
		ck_assert_str_eq(now, log);   /* not one case more */
		free(now);
		free(text);
	}
	put(t, "camp/settings.json", "");
	expect(run(t, "fuzz --resume %s/camp --cases 4 --quiet", t), 2, "settings.json", NULL);
	put(t, "camp/settings.json", good);
	expect(run(t, "fuzz --resume %s/camp --cases 3 --quiet", t), 0, NULL);
	char *now = get(t, "camp/results.jsonl");
	ck_assert_int_gt(lines(now), lines(log));
	free(now);
	free(good);
	free(log);
	rm_rf(t);
}
END_TEST

START_TEST(resume_refuses_a_damaged_log)
{
	char *t = tmpdir();
	campaign(t, 3, "");
	char *log = get(t, "camp/results.jsonl");
	ck_assert_int_ge(lines(log), 6);
	/* line 1 cut in the middle, its second half and newline gone: line 2 runs on */
	const char *nl = strchr(log, '\n');
	char *cut = NULL;
	ck_assert_int_ge(asprintf(&cut, "%.*s%s", (int)(nl - log) / 2, log, nl + 1), 0);
	put(t, "camp/results.jsonl", cut);
	expect(run(t, "fuzz --resume %s/camp --cases 4 --quiet", t), 2, "/camp/results.jsonl:1:",
	       "not a JSON object", "cannot be resumed", NULL);
	char *kept = get(t, "camp/results.jsonl");
	ck_assert_str_eq(kept, cut);   /* refused, and left as it was */
	free(kept);
	/* case 0's done line gone: case 1's records follow case 0's */
	const char *done0 = strstr(log, "{\"done\":0,"), *after = strchr(done0, '\n') + 1;
	char *nodone = NULL;
	ck_assert_int_ge(asprintf(&nodone, "%.*s%s", (int)(done0 - log), log, after), 0);
	put(t, "camp/results.jsonl", nodone);
	Ran r = run(t, "fuzz --resume %s/camp --cases 4 --quiet", t);
	expect(r, 2, "/camp/results.jsonl:", "case 0's belongs", NULL);
	/* a torn last case (a record, then a line without its newline) is cut as before */
	char *torn = NULL;
	ck_assert_int_ge(asprintf(&torn, "%s{\"graph\":\"fz3\",\"case\":3}\n{\"graph\":\"fz3\",\"bac",
				  log), 0);
	put(t, "camp/results.jsonl", torn);
	expect(run(t, "fuzz --resume %s/camp --cases 4 --quiet", t), 0, NULL);
	char *now = get(t, "camp/results.jsonl");
	ck_assert(strncmp(now, log, strlen(log)) == 0);
	ck_assert_ptr_nonnull(strstr(now + strlen(log), "{\"done\":3,"));
	ck_assert_ptr_null(strstr(now, "\"bac\n"));
	ck_assert_ptr_null(strstr(now, "{\"graph\":\"fz3\",\"case\":3}"));
	expect(run(t, "report %s/camp -o %s/report", t, t), 0, NULL);
	free(now);
	free(torn);
	free(nodone);
	free(cut);
	free(log);
	rm_rf(t);
}
END_TEST

START_TEST(resume_refuses_other_settings)
{
	char *t = tmpdir();
	campaign(t, 2, "--seed 5 --timeout 20");
	static const struct { const char *flags, *says, *theirs; } other[] = {
		{"--seed 99", "--seed 99 is not the campaign's", "(seed 5, in "},
		{"--backends opencl", "--backends opencl is not the campaign's", "(backends c, in "},
		{"--inputs normal", "--inputs normal is not", "(inputs mix, in "},
		{"--timeout 10", "--timeout 10 is not", "(timeout 20, in "},
		{"--no-reduce", "--no-reduce is not", "(reduce true, in "},
		{"--reduce-tests 5", "--reduce-tests 5 is not", "(reduce-tests 300, in "},
		{"--max-defs 2", "--max-defs 2 is not", "(max-defs 6, in "},
		{"--no-feedback", "--no-feedback is not", "(feedback_epoch 64, in "},
		{"--variants 1", "--variants 1 is not", "(variants 0.25, in "},
	};
	char *log = get(t, "camp/results.jsonl");
	for (size_t i = 0; i < ARRAY_LEN(other); i++)
		expect(run(t, "fuzz --resume %s/camp --cases 3 --quiet %s", t, other[i].flags), 2,
		       other[i].says, other[i].theirs, "/camp/settings.json", NULL);
	expect(run_in(t, "ASSAY_FAULT=drop_tail", "fuzz --resume %s/camp --cases 3 --quiet", t), 2,
	       "ASSAY_FAULT=drop_tail is not the campaign's", NULL);
	expect(run(t, "fuzz --resume %s/camp -o %s/camp --cases 3", t, t), 2, "--resume DIR", NULL);
	expect(run(t, "fuzz --replay %s/camp 0 --seed 3", t), 2, "--replay takes no --seed", NULL);
	expect(run(t, "fuzz --replay %s/camp +1", t), 2, "'+1' is not a case number", NULL);
	char *now = get(t, "camp/results.jsonl");
	ck_assert_str_eq(now, log);
	free(now);
	/* the campaign's own settings again, and a new stop rule and jobs: accepted */
	expect(run(t, "fuzz --resume %s/camp --seed 5 --backends c,c --timeout 20 --inputs mix "
		   "--cases 3 --jobs 2 --quiet", t), 0, NULL);
	now = get(t, "camp/results.jsonl");
	ck_assert_ptr_nonnull(strstr(now, "{\"done\":2,"));
	ck_assert_ptr_nonnull(strstr(now, "\"epoch\":0,"));   /* coverage feedback: on */
	free(now);
	char *set = get(t, "camp/settings.json");
	ck_assert_ptr_nonnull(strstr(set, "\"feedback_epoch\":64"));
	free(set);
	free(log);
	rm_rf(t);
	/* --no-feedback: a campaign without it, and its resume keeps it so */
	char *u = tmpdir();
	campaign(u, 2, "--no-feedback");
	set = get(u, "camp/settings.json");
	ck_assert_ptr_nonnull(strstr(set, "\"feedback_epoch\":0"));
	expect(run(u, "fuzz --resume %s/camp --cases 3 --quiet --no-feedback", u), 0, NULL);
	now = get(u, "camp/results.jsonl");
	ck_assert_ptr_nonnull(strstr(now, "{\"done\":2,"));
	ck_assert_ptr_null(strstr(now, "\"epoch\":"));
	free(now);
	free(set);
	rm_rf(u);
}
END_TEST

/* --baseline: the control campaign's failures are known to the next campaign (exit 0, not
 * 1, and counted as known); a list that is not one is exit 2 with its line, and a resume
 * keeps the campaign's baseline. */
START_TEST(campaign_baseline)
{
	char *t = tmpdir();
	const char *fault = "ASSAY_FAULT=view_offset";
	/* seed 8: view_offset shows in cases 0 and 2, and case 3 finds nothing cases 0-2 did not
	 * (the generator of issue 13's fully specified cases left seed 1's first 4 cases without
	 * a failure, as the 'inputs' merge had seed 7's) */
	expect(run_in(t, fault, "fuzz --cases 3 --backends c --seed 8 --no-reduce --quiet -o %s/ctl",
		      t), 1, NULL);
	Ran r = run_in(t, fault, "fuzz --cases 3 --backends c --seed 8 --no-reduce --quiet "
		       "--until-failure --baseline %s/ctl -o %s/camp", t, t);
	ck_assert_msg(strstr(r.out, "3 cases") && strstr(r.out, "0 distinct failures") &&
		      strstr(r.out, " known (of the "), "%s", r.out);
	expect(r, 0, NULL);
	put(t, "known.txt", "c/over-budget/f32/-/view_offset\nc/over-budget/f32\n");
	expect(run_in(t, fault, "fuzz --cases 3 --backends c --baseline %s/known.txt -o %s/other", t,
		      t), 2, "known.txt:2: 'c/over-budget/f32' is not a failure signature", NULL);
	ck_assert(!exists(t, "other"));
	put(t, "known.txt", "c/over-budget/f32/-/view_offset\n");
	expect(run_in(t, fault, "fuzz --resume %s/camp --cases 4 --quiet --baseline %s/known.txt", t,
		      t), 2, "a resumed campaign keeps its baseline", NULL);
	expect(run_in(t, fault, "fuzz --resume %s/camp --cases 4 --quiet --baseline %s/ctl", t, t), 0,
	       NULL);
	rm_rf(t);
}
END_TEST

START_TEST(bad_settings_write_no_directory)
{
	char *t = tmpdir();
	expect(run(t, "fuzz --inputs nromal --cases 1 --backends c -o %s/camp", t), 2,
	       "--inputs expects mix, normal, uniform, adversarial, edges or specials, got 'nromal'", NULL);
	expect(run(t, "fuzz --max-defs 0 --cases 1 --backends c -o %s/camp", t), 2, "--max-defs",
	       NULL);
	expect(run_in(t, "ASSAY_FAULT=nope", "fuzz --cases 1 --backends c -o %s/camp", t), 2,
	       "nope", NULL);
	ck_assert(!exists(t, "camp"));
	/* the library refuses them too, before it writes anything */
	FzCampaign c;
	fz_campaign_defaults(&c);
	c.cases = 1;
	snprintf(c.inputs, sizeof c.inputs, "nromal");
	char *dir = path_in(t, "lib");
	FzSummary s;
	Diag d = {0};
	ck_assert_int_eq(fz_campaign_run(dir, &c, false, NULL, &s, &d), -1);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, "member 'inputs'"), "%s", d.msg);
	diag_clear(&d);
	ck_assert(!exists(t, "lib"));
	/* and a typo no longer leaves a directory that blocks the right command */
	expect(run(t, "fuzz --cases 1 --backends c --quiet -o %s/camp", t), 0, NULL);
	free(dir);
	rm_rf(t);
}
END_TEST

/* ------------------------------------------------------------ the environment, load, signals */

/* Lines of text holding needle. */
static int count_of(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A campaign whose disk fills up stops with exit 3 and the cause, records nothing against a
 * kernel (no compile-error, no failure folder), keeps every case it wrote; once there is
 * room again, its resume finishes it with no failure. Needs a tmpfs of its own (a private
 * mount namespace, as root): without it the test fails and says why. */
START_TEST(campaign_disk_full)
{
	char *t = tmpdir(), *mnt = path_in(t, "disk");
	ck_assert_int_eq(mkdir(mnt, 0777), 0);
	if (unshare(CLONE_NEWNS) || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", mnt, "tmpfs", 0, "size=320k"))
		ck_abort_msg("campaign_disk_full needs a tmpfs of its own (mount namespaces, root): %s",
			     strerror(errno));
	Ran r = run(t, "fuzz --cases 400 --jobs 2 --backends c --seed 4 --quiet -o %s/camp", mnt);
	ck_assert_msg(r.code == 3, "exit %d, not 3; stderr: %s", r.code, r.err);
	ck_assert_msg(strstr(r.err, "the environment failed") && strstr(r.err, "--resume"),
		      "%s", r.err);
	ran_free(&r);
	char *camp = path_in(mnt, "camp");
	char *log = get(camp, "results.jsonl");
	ck_assert_int_eq(count_of(log, "compile-error"), 0);
	ck_assert(!exists(camp, "failures"));
	int done = count_of(log, "{\"done\":");
	ck_assert_int_lt(done, 400);
	free(log);
	/* room again: the campaign resumes where it stopped and finishes clean */
	ck_assert_int_eq(mount("tmpfs", mnt, "tmpfs", MS_REMOUNT, "size=64m"), 0);
	r = run(t, "fuzz --resume %s --cases 60 --quiet", camp);
	ck_assert_msg(r.code == 0, "exit %d; stdout %s stderr %s", r.code, r.out, r.err);
	ck_assert_msg(strstr(r.out, "60 cases") && strstr(r.out, "0 distinct failures"), "%s", r.out);
	ran_free(&r);
	log = get(camp, "results.jsonl");
	ck_assert_int_eq(count_of(log, "{\"done\":"), 60);
	ck_assert_int_eq(count_of(log, "compile-error"), 0);
	free(log);
	free(camp);
	umount(mnt);
	free(mnt);
	rm_rf(t);
}
END_TEST

/* Ctrl-C (SIGINT) stops a campaign at once: the summary (summary.json, "interrupted"), the
 * command that resumes it, and a log of whole cases only. */
START_TEST(campaign_interrupted)
{
	char *t = tmpdir(), *cmd = NULL;
	ck_assert_int_ge(asprintf(&cmd, "%s fuzz --seconds 300 --jobs 2 --backends c --seed 5 -o "
				  "%s/camp >%s/stdout 2>%s/stderr & pid=$!; sleep 4; kill -INT $pid; "
				  "wait $pid", prog(), t, t, t), 0);
	int st = system(cmd);
	free(cmd);
	char *out = get(t, "stdout"), *err = get(t, "stderr");
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) <= 1, "status %d; %s", st, err);
	ck_assert_msg(strstr(out, "interrupted by Ctrl-C (SIGINT)") &&
		      strstr(out, "continue with: assay fuzz --resume"), "%s", out);
	/* the progress line fits 80 columns and says the stage and the time since a new failure */
	int lines = 0;
	for (const char *p = err; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0)) {
		size_t len = strcspn(p, "\n");
		if (*p != '[')
			continue;
		lines++;
		ck_assert_msg(len < 80, "a progress line of %zu columns: %.*s", len, (int)len, p);
		ck_assert_msg(memmem(p, len, "/300s]", 6) && memmem(p, len, "| new ", 6), "%.*s",
			      (int)len, p);
	}
	ck_assert_msg(lines >= 1, "no progress line: %s", err);
	char *camp = path_in(t, "camp");
	char *sum = get(camp, "summary.json"), *log = get(camp, "results.jsonl");
	ck_assert_msg(strstr(sum, "\"interrupted\":true"), "%s", sum);
	size_t n = strlen(log);
	ck_assert(n == 0 || log[n - 1] == '\n');
	free(sum);
	free(log);
	free(out);
	free(err);
	/* the resume takes it on */
	Ran r = run(t, "fuzz --resume %s --cases 3 --quiet", camp);
	ck_assert_msg(r.code == 0 || r.code == 1, "exit %d: %s", r.code, r.err);
	ran_free(&r);
	free(camp);
	rm_rf(t);
}
END_TEST

/* One timeout is two SIGTERMs: GNU timeout signals the campaign, then its process group (the
 * campaign again). A second signal within a second of the first does not end the process
 * before the summary (one a second or more later would). Two signals that arrive together
 * without merging, deterministically: stopped, the campaign is sent SIGTERM and SIGINT, and
 * on SIGCONT both handlers run at once. */
START_TEST(campaign_timeout_two_signals)
{
	char *t = tmpdir(), *cmd = NULL;
	ck_assert_int_ge(asprintf(&cmd, "%s fuzz --seconds 300 --jobs 2 --backends c --seed 6 -o "
				  "%s/camp >%s/stdout 2>%s/stderr & pid=$!; sleep 3; kill -STOP $pid; "
				  "kill -TERM $pid; kill -INT $pid; kill -CONT $pid; wait $pid", prog(), t, t,
				  t), 0);
	int st = system(cmd);
	free(cmd);
	char *out = get(t, "stdout"), *err = get(t, "stderr");
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) <= 1, "status %d; %s", st, err);
	ck_assert_msg(strstr(out, "interrupted by"), "%s", out);
	char *camp = path_in(t, "camp");
	ck_assert_msg(exists(camp, "summary.json"), "no summary after two signals at once");
	char *sum = get(camp, "summary.json");
	ck_assert_msg(strstr(sum, "\"interrupted\":true"), "%s", sum);
	free(sum);
	free(out);
	free(err);
	free(camp);
	rm_rf(t);
}
END_TEST

/* Persistent workers keep a backend's state across cases: a campaign of many cases on
 * opencl (PoCL keeps the folders of its program cache, which a job must not remove from
 * under it) gives no compile error. OpenCL missing here is a failure that says so. */
START_TEST(campaign_workers_keep_state)
{
	char *t = tmpdir();
	Ran b = run(t, "backends");
	ck_assert_msg(strstr(b.out, "opencl   available"), "this test needs OpenCL (PoCL): %s", b.out);
	ran_free(&b);
	Ran r = run(t, "fuzz --cases 10 --jobs 1 --backends opencl --seed 4 --no-reduce --quiet -o "
		    "%s/camp", t);
	char *camp = path_in(t, "camp"), *log = get(camp, "results.jsonl");
	ck_assert_msg(count_of(log, "compile-error") == 0, "compile errors: %s", r.out);
	ck_assert_msg(r.code == 0, "exit %d: %s %s", r.code, r.out, r.err);
	ran_free(&r);
	free(log);
	free(camp);
	rm_rf(t);
}
END_TEST

/* The main job on a busy machine: a campaign on every local backend beside two CPU-bound
 * loops records no timeout and no crash (a slow kernel is confirmed by a re-run alone
 * before it counts), and its gate holds. */
START_TEST(campaign_beside_busy_loops)
{
	char *t = tmpdir();
	pid_t spin[2];
	for (int i = 0; i < 2; i++) {
		spin[i] = fork();
		ck_assert_int_ge(spin[i], 0);
		if (spin[i] == 0)
			for (volatile unsigned long k = 0;; k++)
				;
	}
	Ran r = run(t, "fuzz --cases 16 --jobs 2 --seed 12 --quiet -o %s/camp", t);
	int code = r.code;
	char *err = strdup(r.err), *out = strdup(r.out);
	ran_free(&r);
	r = run(t, "gate %s/camp --policy examples/campaign.policy", t);
	for (int i = 0; i < 2; i++) {
		kill(spin[i], SIGKILL);
		waitpid(spin[i], NULL, 0);
	}
	ck_assert_msg(code == 0, "fuzz exit %d; %s %s", code, out, err);
	char *camp = path_in(t, "camp");
	char *log = get(camp, "results.jsonl");
	ck_assert_int_eq(count_of(log, "\"verdict\":\"timeout\""), 0);
	ck_assert_int_eq(count_of(log, "\"verdict\":\"crash\""), 0);
	ck_assert_msg(r.code == 0, "gate exit %d: %s", r.code, r.out);
	ran_free(&r);
	free(log);
	free(camp);
	free(err);
	free(out);
	rm_rf(t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("flags");
	tcase_set_timeout(tc, 1200);
	tcase_add_test(tc, numbers_read_whole);
	tcase_add_test(tc, schedule_directory);
	tcase_add_test(tc, backend_lists);
	tcase_add_test(tc, nothing_tested);
	tcase_add_test(tc, check_o_keeps_a_run);
	suite_add_tcase(s, tc);
	tc = tcase_create("campaigns");
	tcase_set_timeout(tc, 1200);
	tcase_add_test(tc, resume_refuses_corrupt_settings);
	tcase_add_test(tc, resume_refuses_a_damaged_log);
	tcase_add_test(tc, resume_refuses_other_settings);
	tcase_add_test(tc, bad_settings_write_no_directory);
	tcase_add_test(tc, campaign_baseline);
	suite_add_tcase(s, tc);
	tc = tcase_create("robust");
	tcase_set_timeout(tc, 1200);
	tcase_add_test(tc, campaign_disk_full);
	tcase_add_test(tc, campaign_interrupted);
	tcase_add_test(tc, campaign_timeout_two_signals);
	tcase_add_test(tc, campaign_workers_keep_state);
	tcase_add_test(tc, campaign_beside_busy_loops);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (access(prog(), X_OK) != 0) {
		fprintf(stderr, "test_cli: %s is not there: build it first (make), or set ASSAY\n",
			prog());
		return EXIT_FAILURE;
	}
	return tu_run(suite());
}
