/* cli/fuzz.c: `assay fuzz`: runs a fuzz campaign (fuzz/campaign.c does the work), continues
 * one (--resume DIR), or replays one case of one (--replay DIR CASE).
 *
 * A campaign: random graphs, schedules and inputs, each case checked like `assay check`
 * on every selected backend, in `--jobs` job processes; failures deduplicated by
 * signature, each new one reduced and saved under DIR/failures. A live progress line goes
 * to stderr. Environment: ASSAY_FAULT (seeded compiler faults, to measure the fuzzer) and
 * ASSAY_TEST_* (verify.h) are recorded in the campaign's settings.
 *
 * Exit codes: 0 no failure; 1 a distinct failure was found; 2 the user's input (a flag, a
 * directory that already holds a campaign); 3 the toolkit failed, or could not judge some
 * case (DIR/errors). The worst code wins.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "../fuzz/fuzz.h"
#include "../reports/reports.h"

static const FlagSpec flags[] = {
	{"seconds", true, false, "N        stop starting cases after N seconds (default 60)"},
	{"cases", true, false, "N        stop after N cases in all"},
	{"jobs", true, false, "N        job processes running cases in parallel (default 1)"},
	{"backends", true, false, "LIST     comma list of backends (default: every available one)"},
	{"seed", true, false, "S        the campaign's seed (default 1)"},
	{"inputs", true, false, "DIST     mix (default: drawn per case), normal, uniform, adversarial, specials"},
	{"timeout", true, false, "S        seconds a worker may run (default 10)"},
	{"no-reduce", false, false, "         keep each failure's original graph, unreduced"},
	{"reduce-tests", true, false, "N        checks the reducer may make per failure (default 300)"},
	{"until-failure", false, false, "         stop at the first distinct failure (with ASSAY_FAULT: the first the fault is in)"},
	{"max-defs", true, false, "N        definitions per generated graph at most (default 6)"},
	{"o", true, false, "DIR      the campaign directory (required for a new campaign)"},
	{"resume", true, false, "DIR      continue the campaign in DIR with its own settings"},
	{"replay", true, false, "DIR      replay case CASE (the positional argument) of the campaign in DIR"},
	{"json", false, false, "         --replay: print the case's log lines as they are"},
	{"quiet", false, false, "         no progress line"},
	{"list-faults", false, false, "         list the seeded faults ASSAY_FAULT may name"},
	{"help", false, false, "         this help"},
};

static int available_backends(char *out, size_t n)
{
	size_t len = 0;
	out[0] = 0;
	for (int k = 0; be_at(k); k++) {
		char why[256];
		if (be_at(k)->available(why, sizeof why) == 0 && len < n)
			len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", be_at(k)->name);
	}
	if (!len) {
		fprintf(stderr, "assay fuzz: no backend is available here (see 'assay backends')\n");
		return 2;
	}
	return 0;
}

static int settings(const Args *a, FzCampaign *c)
{
	long long seed, cases, jobs, rt, maxdefs;
	if (cli_int(a, "fuzz", "seed", 1, &seed) || cli_int(a, "fuzz", "cases", 0, &cases) ||
	    cli_int(a, "fuzz", "jobs", 1, &jobs) || cli_int(a, "fuzz", "reduce-tests", 300, &rt) ||
	    cli_int(a, "fuzz", "max-defs", c->gen.max_defs, &maxdefs))
		return 2;
	const char *s = cli_get(a, "seconds"), *t = cli_get(a, "timeout");
	char *end;
	double secs = s ? strtod(s, &end) : 0, timeout = t ? strtod(t, &end) : 10;
	if (cases < 0 || jobs < 1 || jobs > 64 || rt < 1 || maxdefs < 1 || secs < 0 ||
	    !(timeout > 0) || (s && cases)) {
		fprintf(stderr, "assay fuzz: give --seconds or --cases (not both, neither negative), "
			"--jobs in 1..64, --reduce-tests and --max-defs >= 1, --timeout > 0\n");
		return 2;
	}
	c->seed = (uint64_t)seed;
	c->cases = cases;
	c->seconds = !s && !cases && !cli_has(a, "resume") ? 60 : secs;
	c->jobs = (int)jobs;
	c->reduce_tests = (int)rt;
	c->reduce = !cli_has(a, "no-reduce");
	c->until_failure = cli_has(a, "until-failure");
	c->timeout_s = timeout;
	c->gen.max_defs = (int)maxdefs;
	const char *in = cli_get(a, "inputs");
	if (in)
		snprintf(c->inputs, sizeof c->inputs, "%.31s", in);
	const char *list = cli_get(a, "backends");
	if (list) {
		snprintf(c->backends, sizeof c->backends, "%.127s", list);
		return 0;
	}
	return available_backends(c->backends, sizeof c->backends);
}

/* The records by class, as `assay report` and `assay gate` name them (reports/ reads the
 * log: about 30 MB/s here, so a log past LOG_MAX is left to `assay report`). */
static void results_line(const char *dir)
{
	enum { LOG_MAX = 256 << 20 };
	char *log = NULL;
	struct stat st;
	if (asprintf(&log, "%s/results.jsonl", dir) < 0)
		return;
	bool big = stat(log, &st) == 0 && st.st_size > LOG_MAX;
	free(log);
	if (big) {
		printf("results: %lld MiB of records, counted by class by `assay report %s`\n",
		       (long long)(st.st_size >> 20), dir);
		return;
	}
	RpLoadOpts lo = {true};
	RpRun run;
	Diag d = {0};
	if (rp_load(dir, &lo, &run, &d)) {
		diag_clear(&d);
		return;
	}
	RpFig f;
	rp_figures(&run, NULL, NULL, &f);
	printf("results: ");
	rp_class_line(stdout, &f, ", ");
	printf("\n");
	rp_free(&run);
}

static int list_faults(void)
{
	for (unsigned b = 0; b < KF__COUNT; b++) {
		char name[64];
		printf("%s\n", vf_faults_name(1u << b, name, sizeof name));
	}
	return 0;
}

/* Prints one record line of a case's log as `assay check` would. */
static void row(const char *line)
{
	char g[64], b[32], s[32], o[64], v[32], ulp[32], ratio[32], reason[400];
	if (!fz_json_get(line, "backend", b, sizeof b))
		return;
	fz_json_get(line, "graph", g, sizeof g);
	fz_json_get(line, "schedule", s, sizeof s);
	fz_json_get(line, "output", o, sizeof o);
	fz_json_get(line, "verdict", v, sizeof v);
	fz_json_get(line, "max_ulp", ulp, sizeof ulp);
	fz_json_get(line, "max_ratio", ratio, sizeof ratio);
	printf("%-16s %-8s %-9s %-8s %-17s %12.12s %12.12s\n", g, b, s, o, v, ulp, ratio);
	if (fz_json_get(line, "reason", reason, sizeof reason) && *reason && strcmp(v, "pass"))
		printf("    %s\n", reason);
}

static int replay(const Args *a)
{
	const char *dir = cli_get(a, "replay");
	if (a->npos != 1) {
		fprintf(stderr, "assay fuzz: --replay DIR expects the case number as its argument\n");
		return 2;
	}
	char *end;
	unsigned long long n = strtoull(a->pos[0], &end, 10);
	if (*end || !*a->pos[0]) {
		fprintf(stderr, "assay fuzz: --replay: '%s' is not a case number\n", a->pos[0]);
		return 2;
	}
	FzCampaign c;
	Diag d = {0};
	char *blob = NULL, *gtext = NULL;
	FzRun r;
	if (fz_settings_read(dir, &c, &d) || fz_case_run(&c, n, NULL, &blob, &r, &gtext, &d))
		return cli_report(&d);
	char *done = strstr(blob, "{\"done\":"), fails[4096] = "", st[16] = "";
	fz_json_get(done, "fails", fails, sizeof fails);
	fz_json_get(done, "status", st, sizeof st);
	if (cli_has(a, "json")) {
		fputs(blob, stdout);
	} else {
		char fb[512];
		printf("# case %llu of the campaign in %s: inputs --seed %llu --inputs %s%s, faults '%s'\n%s\n",
		       n, dir, (unsigned long long)r.seed, dist_name(r.dist),
		       r.specials ? " --specials" : "", vf_faults_name(c.faults, fb, sizeof fb),
		       gtext ? gtext : "");
		for (char *p = blob; p < done; p = strchr(p, '\n') + 1) {
			char *nl = strchr(p, '\n');
			*nl = 0;
			row(p);
			*nl = '\n';
		}
		printf("status %s, failures %s\n", st, fails);
	}
	int code = strcmp(st, "error") == 0 ? 3 : strcmp(fails, "[]") ? 1 : 0;
	free(blob);
	free(gtext);
	return code;
}

int cmd_fuzz(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "fuzz", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "fuzz", "[--seconds N | --cases N] [--jobs N] [--backends LIST] [--seed S] -o DIR\n"
			  "       assay fuzz --resume DIR [--seconds N | --cases N] [--jobs N]\n"
			  "       assay fuzz --replay DIR CASE [--json]",
			  "Runs a fuzz campaign: random graphs, schedules and inputs, each checked like\n"
			  "`assay check` on every selected backend; each distinct failure is reduced to a\n"
			  "minimal repro and saved under DIR/failures with its kernels and outputs.\n"
			  "DIR/results.jsonl is append-only and fsync'ed per case: a killed campaign loses\n"
			  "at most the cases in flight, and --resume DIR continues it with the same seeds.\n"
			  "ASSAY_FAULT=NAME seeds a compiler fault (see --list-faults) to measure the fuzzer.\n"
			  "Exit 0: no failure; 1: a failure; 2: bad input; 3: internal error.",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	if (cli_has(&a, "list-faults"))
		return list_faults();
	if (cli_has(&a, "replay"))
		return replay(&a);
	const char *dir = cli_get(&a, "resume");
	bool resume = dir != NULL;
	if (!resume)
		dir = cli_get(&a, "o");
	if (!dir || a.npos || (resume && cli_has(&a, "o"))) {
		fprintf(stderr, "assay fuzz: expects -o DIR (a new campaign) or --resume DIR, and no "
			"other argument (see 'assay fuzz --help')\n");
		return 2;
	}
	FzCampaign c;
	fz_campaign_defaults(&c);
	if ((code = settings(&a, &c)))
		return code;
	if (resume && !cli_has(&a, "jobs"))
		c.jobs = 0;   /* the campaign's own */
	VfOpts env = {0};
	Diag d = {0};
	if (vf_opts_env(&env, &d))
		return cli_report(&d);
	c.faults = env.w.faults;
	c.hooks = env.w.hooks;
	c.argc = argc;
	c.argv = argv;
	FzSummary sum;
	if (fz_campaign_run(dir, &c, resume, cli_has(&a, "quiet") ? NULL : stderr, &sum, &d))
		return cli_report(&d);
	printf("%lld cases, %lld records, %d distinct failure%s (%d with a seeded fault), %lld "
	       "error%s; %s\n", (long long)sum.cases, (long long)sum.records, sum.distinct,
	       sum.distinct == 1 ? "" : "s", sum.kills, (long long)sum.errors,
	       sum.errors == 1 ? "" : "s", dir);
	results_line(dir);
	return sum.errors ? 3 : sum.distinct ? 1 : 0;
}
