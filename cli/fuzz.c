/* cli/fuzz.c: `assay fuzz`: runs a fuzz campaign (fuzz/campaign.c does the work), continues
 * one (--resume DIR), or replays one case of one (--replay DIR CASE).
 *
 * A campaign: random graphs, schedules and inputs, each case checked like `assay check`
 * on every selected backend, in `--jobs` job processes; failures deduplicated by
 * signature, each new one reduced and saved under DIR/failures. A live progress line goes
 * to stderr. Environment: ASSAY_FAULT (seeded compiler faults, to measure the fuzzer) and
 * ASSAY_TEST_* (verify.h) are recorded in the campaign's settings.
 *
 * Every setting is checked before the campaign's directory is made. A resume continues the
 * same campaign or nothing: its settings are read strictly (fuzz/settings.c), its log is
 * checked (fuzz/campaign.c, scan_log), and a flag given with --resume must equal the
 * campaign's setting, but for the stop rule (--seconds, --cases, --until-failure), --jobs
 * and --quiet. A backend unavailable here is refused up front: it would test nothing.
 *
 * --shard I/N: the campaign runs only its cases n = I mod N, each as the unsharded campaign
 * runs it (recorded in settings.json; a resume keeps it, and refuses another --shard), with
 * no coverage feedback; `assay merge` (cli/merge.c) joins the N shards.
 *
 * --baseline DIR|FILE: the failures already known (a control campaign's, or a list of
 * signature keys; fuzz/baseline.c), recorded in settings.json: a failure it lists is counted
 * as known, never reduced, and neither makes the exit code 1 nor stops --until-failure.
 *
 * Exit codes: 0 no failure; 1 a distinct failure was found; 2 the user's input (a flag, a
 * directory that already holds a campaign, a resume that would be another campaign, a
 * damaged campaign, a backend unavailable here); 3 the toolkit failed, or could not judge
 * some case (DIR/errors). The worst code wins.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "../fuzz/fuzz.h"
#include "../reports/reports.h"

static const FlagSpec flags[] = {
	{"seconds", true, false, "N        stop starting cases after N seconds, N > 0 (default 60)"},
	{"cases", true, false, "N        stop after N cases in all"},
	{"jobs", true, false, "N        job processes running cases in parallel (default 1, at most 64)"},
	{"backends", true, false, "LIST     comma list of backends (default: every available one)"},
	{"seed", true, false, "S        the campaign's seed (default 1)"},
	{"inputs", true, false, "DIST     mix (default: drawn per case), normal, uniform, adversarial, edges, specials"},
	{"timeout", true, false, "S        seconds a kernel may run, alloc to download (default 10)"},
	{"compile-timeout", true, false, "S        seconds a worker may compile (default 60)"},
	{"no-reduce", false, false, "         keep each failure's original graph, unreduced"},
	{"reduce-tests", true, false, "N        checks the reducer may make per failure (default 300)"},
	{"until-failure", false, false, "         stop at the first distinct failure (with ASSAY_FAULT: the first the fault is in;\n"
	 "                           with --baseline: the first the baseline does not list)"},
	{"baseline", true, false, "DIR|FILE known failures: a control campaign's, or signature keys one per line;\n"
	 "                          they are counted as known, not reduced, and neither fail nor stop the campaign"},
	{"max-defs", true, false, "N        definitions per generated graph at most (default 6, 1..24)"},
	{"no-feedback", false, false, "         no coverage feedback: every case drawn from the generator's defaults"},
	{"variants", true, false, "K        metamorphic variants checked per case, 0..8; a fraction is a chance (0.25, the default: one in a quarter of the cases; 0: none)"},
	{"shard", true, false, "I/N      run only the cases n with n mod N = I, as the whole campaign runs them\n"
	 "                          (no coverage feedback); `assay merge` joins the N shards"},
	{"external", true, false, "CMD      also (without --backends: only) fuzz the kernel CMD computes, on graphs within\n"
	 "                          what `CMD --assay-capabilities` declares (docs/external.md)"},
	{"name", true, false, "NAME     --external: the backend name of its records (default external)"},
	{"grad", false, false, "         judge each case's gradient instead: its derivation (the directional test) and\n"
	 "                          the gradient graph's kernels on every backend (docs/grad.md); with\n"
	 "                          ASSAY_FAULT=grad_* the derivation's seeded faults"},
	{"invariance", false, false, "         judge each case's batch invariance instead: one of its sizes drawn as the batch,\n"
	 "                          the rows again at a smaller value under the same schedule, bit for bit\n"
	 "                          (docs/decode.md)"},
	{"probes", true, false, "N        sums of each case's graph probed FPRev-style on every backend, at most\n"
	 "                          (a tree other than the schedule's is tree-mismatch; docs/probe.md;\n"
	 "                          default 2, 0: none)"},
	{"grad-pairs", true, false, "N        --grad: directional (cotangent, direction) pairs per case (default 2)"},
	{"o", true, false, "DIR      the campaign directory (required for a new campaign)"},
	{"resume", true, false, "DIR      continue the campaign in DIR with its own settings"},
	{"replay", true, false, "DIR      replay case CASE (the positional argument) of the campaign in DIR"},
	{"json", false, false, "         --replay: print the case's log lines as they are"},
	{"quiet", false, false, "         no progress line"},
	{"list-faults", false, false, "         list the seeded faults ASSAY_FAULT may name"},
	{"help", false, false, "         this help"},
};

/* The settings the flags give into c (which holds the defaults); a new campaign's
 * backends default to every available one. */
static int settings(const Args *a, bool resume, FzCampaign *c)
{
	long long seed, cases, jobs, rt, maxdefs, gpairs, probes;
	double secs, timeout, ctimeout, variants;
	if (cli_int(a, "fuzz", "seed", 1, 0, LLONG_MAX, &seed) ||
	    cli_int(a, "fuzz", "cases", 0, 1, FZ_MAX_CASES, &cases) ||
	    cli_int(a, "fuzz", "jobs", 1, 1, FZ_MAXJOBS, &jobs) ||
	    cli_int(a, "fuzz", "reduce-tests", 300, 1, FZ_MAX_REDUCE_TESTS, &rt) ||
	    cli_int(a, "fuzz", "max-defs", c->gen.max_defs, 1, FZ_MAX_DEFS, &maxdefs) ||
	    cli_int(a, "fuzz", "grad-pairs", 2, 1, 1000, &gpairs) ||
	    cli_int(a, "fuzz", "probes", c->probes, 0, 16, &probes) ||
	    cli_double(a, "fuzz", "seconds", 0, 0, FZ_MAX_SECONDS, &secs) ||
	    cli_double(a, "fuzz", "timeout", 10, 0, FZ_MAX_TIMEOUT, &timeout) ||
	    cli_double(a, "fuzz", "compile-timeout", 60, 0, FZ_MAX_TIMEOUT, &ctimeout) ||
	    cli_number(a, "fuzz", "variants", c->variants, 0, FZ_MAX_VARIANTS, &variants))
		return 2;
	if (cli_has(a, "seconds") && cli_has(a, "cases")) {
		fprintf(stderr, "assay fuzz: give --seconds or --cases, not both\n");
		return 2;
	}
	const char *in = cli_get(a, "inputs");
	if (in && !fz_inputs_known(in)) {
		fprintf(stderr, "assay fuzz: --inputs expects mix, normal, uniform, adversarial, edges "
			"or specials, got '%s'\n", in);
		return 2;
	}
	c->seed = (uint64_t)seed;
	c->cases = cases;
	c->seconds = !cli_has(a, "seconds") && !cases && !resume ? 60 : secs;
	c->jobs = (int)jobs;
	c->reduce_tests = (int)rt;
	c->reduce = !cli_has(a, "no-reduce");
	c->until_failure = cli_has(a, "until-failure");
	c->timeout_s = timeout;
	c->compile_timeout_s = ctimeout;
	c->gen.max_defs = (int)maxdefs;
	if (cli_has(a, "no-feedback"))
		c->feedback_epoch = 0;
	c->variants = variants;
	c->probes = (int)probes;
	if (cli_has(a, "grad-pairs") && !cli_has(a, "grad") && !resume) {
		fprintf(stderr, "assay fuzz: --grad-pairs needs --grad\n");
		return 2;
	}
	c->grad_pairs = cli_has(a, "grad") ? (int)gpairs : 0;
	c->invariance = cli_has(a, "invariance");
	if (c->invariance && c->grad_pairs) {
		fprintf(stderr, "assay fuzz: give --grad or --invariance, not both\n");
		return 2;
	}
	const char *shard = cli_get(a, "shard");
	Diag sd = {0};
	if (shard && fz_shard_parse(shard, &c->shard_i, &c->shard_n, &sd)) {
		fprintf(stderr, "assay fuzz: ");
		return cli_report(&sd);
	}
	if (shard)   /* a shard cannot see the others' coverage (docs/fuzz.md, "Shards") */
		c->feedback_epoch = 0;
	if (in)
		snprintf(c->inputs, sizeof c->inputs, "%s", in);
	const char *base = cli_get(a, "baseline");
	if (base) {
		Diag d = {0};
		if (strlen(base) >= sizeof c->baseline_from) {
			fprintf(stderr, "assay fuzz: --baseline: a path of at most %zu bytes, got one of %zu\n",
				sizeof c->baseline_from - 1, strlen(base));
			return 2;
		}
		if (fz_baseline_load(base, c->baseline, sizeof c->baseline, &d)) {
			fprintf(stderr, "assay fuzz: ");
			return cli_report(&d);
		}
		snprintf(c->baseline_from, sizeof c->baseline_from, "%s", base);
	}
	if (resume && !cli_has(a, "backends"))
		return 0;   /* the campaign's own */
	FzRun r = {0};
	const Backend *bs[16];
	int code = cli_backends(a, "fuzz", bs, &r.nbackends);
	if (code)
		return code;
	for (int k = 0; k < r.nbackends; k++)
		r.backends[k] = bs[k];
	fz_backends_list(&r, c->backends, sizeof c->backends);
	return 0;
}

/* --external CMD [--name NAME]: the external kernel registered and its capabilities asked
 * (fz_campaign_run keeps the generator within them), and, for a new campaign, its name in
 * the campaign's backends (alone unless --backends named assay's own). A campaign with an
 * external kernel is resumed with the same --external and --name: the settings name the
 * backend, not the command. */
static int external(const Args *a, bool resume, FzCampaign *c)
{
	const char *cmd = cli_get(a, "external");
	Diag d = {0};
	if (!cmd) {
		if (!cli_has(a, "name"))
			return 0;
		fprintf(stderr, "assay fuzz: --name names an --external kernel; there is none\n");
		return 2;
	}
	const Backend *b = vf_external(cli_get(a, "name"), cmd, &d);
	VfCaps caps;
	if (!b || vf_ext_caps(cmd, 30, &caps, &d))
		return cli_report(&d);
	vf_ext_set_caps(b, &caps);   /* the campaign keeps its generator within them */
	if (resume)
		return 0;   /* the campaign's own backends, which must name it */
	if (!cli_has(a, "backends"))
		snprintf(c->backends, sizeof c->backends, "%s", b->name);
	else if (strlen(c->backends) + strlen(b->name) + 2 <= sizeof c->backends)
		snprintf(c->backends + strlen(c->backends), sizeof c->backends - strlen(c->backends),
			 ",%s", b->name);
	return 0;
}

/* Refuses a campaign on a backend that is unavailable here: it would test nothing there. */
static int available(const char *list, const char *whose)
{
	FzRun r;
	Diag d = {0};
	char why[1024];
	if (fz_run_backends(&r, list, &d))
		return cli_report(&d);
	int n = cli_unavailable(r.backends, r.nbackends, why, sizeof why);
	if (n == 0)
		return 0;
	fprintf(stderr, "assay fuzz: %s: %s unavailable here (%s); a campaign runs on available "
		"backends only (see 'assay backends')\n", whose,
		n == r.nbackends ? "every backend is" : "a backend is", why);
	return 2;
}

/* With --resume: every setting given must be the campaign's own; only the stop rule
 * (--seconds, --cases, --until-failure), --jobs and --quiet may differ. */
static int same_settings(const Args *a, const char *dir, const FzCampaign *mine,
			 const FzCampaign *camp)
{
	char fm[512], fc[512];
	const char *env = getenv("ASSAY_FAULT");
	char theirs[15][160];
	snprintf(theirs[0], 160, "seed %llu", (unsigned long long)camp->seed);
	snprintf(theirs[1], 160, "backends %s", camp->backends);
	snprintf(theirs[2], 160, "inputs %s", camp->inputs);
	snprintf(theirs[3], 160, "timeout %g", camp->timeout_s);
	snprintf(theirs[4], 160, "reduce true");
	snprintf(theirs[5], 160, "reduce-tests %d", camp->reduce_tests);
	snprintf(theirs[6], 160, "max-defs %d", camp->gen.max_defs);
	snprintf(theirs[7], 160, "compile-timeout %g", camp->compile_timeout_s);
	snprintf(theirs[8], 160, "feedback_epoch %d", camp->feedback_epoch);
	snprintf(theirs[9], 160, "variants %g", camp->variants);
	if (camp->shard_n)
		snprintf(theirs[10], 160, "shard %d/%d", camp->shard_i, camp->shard_n);
	else
		snprintf(theirs[10], 160, "not a shard");
	snprintf(theirs[11], 160, camp->grad_pairs ? "--grad" : "no --grad");
	snprintf(theirs[12], 160, "grad-pairs %d", camp->grad_pairs);
	snprintf(theirs[13], 160, camp->invariance ? "--invariance" : "no --invariance");
	snprintf(theirs[14], 160, "probes %d", camp->probes);
	const struct {
		const char *flag;
		bool differs;
	} t[ARRAY_LEN(theirs)] = {
		{"seed", mine->seed != camp->seed},
		{"backends", strcmp(mine->backends, camp->backends) != 0},
		{"inputs", strcmp(mine->inputs, camp->inputs) != 0},
		{"timeout", mine->timeout_s != camp->timeout_s},
		{"no-reduce", camp->reduce},
		{"reduce-tests", mine->reduce_tests != camp->reduce_tests},
		{"max-defs", mine->gen.max_defs != camp->gen.max_defs},
		{"compile-timeout", mine->compile_timeout_s != camp->compile_timeout_s},
		{"no-feedback", camp->feedback_epoch > 0},
		{"variants", mine->variants != camp->variants},
		{"shard", mine->shard_i != camp->shard_i || mine->shard_n != camp->shard_n},
		{"grad", !camp->grad_pairs},
		{"grad-pairs", mine->grad_pairs != camp->grad_pairs},
		{"invariance", !camp->invariance},
		{"probes", mine->probes != camp->probes},
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++) {
		if (!cli_has(a, t[i].flag) || !t[i].differs)
			continue;
		const char *v = cli_get(a, t[i].flag);
		fprintf(stderr, "assay fuzz: --%s%s%s is not the campaign's setting (%s, in "
			"%s/settings.json); a resumed campaign keeps its settings: only --seconds, "
			"--cases, --until-failure and --jobs may be given anew\n", t[i].flag,
			*v ? " " : "", v, theirs[i], dir);
		return 2;
	}
	if (env && *env && mine->faults != camp->faults) {
		fprintf(stderr, "assay fuzz: ASSAY_FAULT=%s is not the campaign's faults ('%s', in "
			"%s/settings.json); a resumed campaign keeps its faults\n",
			vf_faults_name(mine->faults, fm, sizeof fm),
			vf_faults_name(camp->faults, fc, sizeof fc), dir);
		return 2;
	}
	if (cli_has(a, "baseline") && strcmp(mine->baseline, camp->baseline) != 0) {
		fprintf(stderr, "assay fuzz: --baseline %s lists %d known failure%s, not the campaign's "
			"(%d, from %s, in %s/settings.json); a resumed campaign keeps its baseline\n",
			cli_get(a, "baseline"), fz_baseline_count(mine->baseline),
			fz_baseline_count(mine->baseline) == 1 ? "" : "s", fz_baseline_count(camp->baseline),
			*camp->baseline_from ? camp->baseline_from : "none", dir);
		return 2;
	}
	if (mine->hooks && mine->hooks != camp->hooks) {
		fprintf(stderr, "assay fuzz: the ASSAY_TEST_* hooks set (0x%x) are not the campaign's "
			"(0x%x, in %s/settings.json)\n", mine->hooks, camp->hooks, dir);
		return 2;
	}
	return 0;
}

/* The records by class, as `assay report` and `assay gate` name them (reports/ reads the
 * log: about 30 MB/s here, so a log past LOG_MAX is left to `assay report`); they count
 * every record, a baseline's known failures included (known: the campaign has one). */
static void results_line(const char *dir, bool known)
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
	printf("results%s: ", known ? " (every record, the known failures' too)" : "");
	rp_class_line(stdout, &f, ", ");
	printf("\n");
	rp_free(&run);
}

static int list_faults(void)
{
	for (unsigned b = 0; b < KF__COUNT; b++) {
		char name[64];
		printf("%s\n", vf_faults_name(UINT64_C(1) << b, name, sizeof name));
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

/* The variants case n checks (its records are the rows of graph NAME_KIND), each with
 * its claim, its edit and its text. */
static void show_variants(const FzCampaign *c, uint64_t n, const char *gtext)
{
	if (c->variants <= 0 || !gtext)
		return;
	Diag d = {0};
	Graph *g = ir_parse(gtext, strlen(gtext), "case.tg", NULL, 0, &d);
	diag_clear(&d);
	FzVariant vs[FZ_MAX_VARIANTS];
	int nv = g ? fz_case_variants(c, n, g, vs, FZ_MAX_VARIANTS) : 0;
	for (int k = 0; k < nv; k++) {
		printf("\n# variant %s (claims %s): %s\n%s", vs[k].name,
		       vs[k].bit ? "a bit-identical emulation" : "its own budgets only", vs[k].what,
		       vs[k].text);
		fz_variant_free(&vs[k]);
	}
	if (nv)
		printf("\n");
	ir_free(g);
}

static int replay(const Args *a)
{
	const char *dir = cli_get(a, "replay");
	if (a->npos != 1) {
		fprintf(stderr, "assay fuzz: --replay DIR expects the case number as its argument\n");
		return 2;
	}
	for (int k = 0; k < a->nspec; k++)
		if (a->count[k] && strcmp(a->spec[k].name, "replay") && strcmp(a->spec[k].name, "json")) {
			fprintf(stderr, "assay fuzz: --replay takes no --%s: a case is replayed with its "
				"campaign's settings\n", a->spec[k].name);
			return 2;
		}
	const char *s = a->pos[0];
	errno = 0;
	unsigned long long n = strtoull(s, NULL, 10);
	if (!*s || strspn(s, "0123456789") != strlen(s) || errno) {
		fprintf(stderr, "assay fuzz: --replay: '%s' is not a case number\n", s);
		return 2;
	}
	FzCampaign c;
	Diag d = {0};
	char *blob = NULL, *gtext = NULL;
	FzRun r;
	FzBias b;   /* with coverage feedback, the case's epoch's, from the campaign's log */
	if (fz_settings_read(dir, &c, &d) || fz_case_bias(dir, &c, n, &b, &d) ||
	    fz_case_run_bias(&c, &b, n, NULL, NULL, &blob, &r, &gtext, &d))
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
		show_variants(&c, n, gtext);
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
		cli_usage(stdout, "fuzz", "[--seconds N | --cases N] [--jobs N] [--backends LIST] [--seed S]\n"
			  "       [--baseline DIR|FILE] [--shard I/N] -o DIR\n"
			  "       assay fuzz --resume DIR [--seconds N | --cases N] [--jobs N]\n"
			  "       assay fuzz --replay DIR CASE [--json]",
			  "Runs a fuzz campaign: random graphs, schedules and inputs, each checked like\n"
			  "`assay check` on every selected backend; each distinct failure is reduced to a\n"
			  "minimal repro and saved under DIR/failures with its kernels and outputs.\n"
			  "DIR/results.jsonl is append-only and fsync'ed per case: a killed campaign loses\n"
			  "at most the cases in flight, and --resume DIR continues it with the same seeds.\n"
			  "A resume reads DIR's settings strictly, refuses a log damaged before its torn\n"
			  "last case, and refuses a flag that differs from the campaign's setting: only\n"
			  "--seconds, --cases, --until-failure, --jobs and --quiet may be given anew.\n"
			  "A backend unavailable here is refused. ASSAY_FAULT=NAME seeds a compiler fault\n"
			  "(see --list-faults) to measure the fuzzer. --baseline DIR (a control campaign)\n"
			  "or FILE (signature keys, one per line) names failures already known: they are\n"
			  "counted as known, not reduced, and neither fail nor stop the campaign.\n"
			  "--shard I/N runs only the cases n with n mod N = I (with the seeds the whole\n"
			  "campaign gives them; no coverage feedback); `assay merge` joins the N shards.\n"
			  "--variants K also checks K\n"
			  "metamorphic variants of each case (equivalent graphs, each held to its own\n"
			  "budgets, and to its original's outputs bit for bit where it claims so).\n"
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
	FzCampaign c, camp;
	fz_campaign_defaults(&c);
	VfOpts env = {0};
	Diag d = {0};
	if ((code = settings(&a, resume, &c)))
		return code;
	if (vf_opts_env(&env, &d))
		return cli_report(&d);
	c.faults = env.w.faults;
	c.hooks = env.w.hooks;
	if ((code = external(&a, resume, &c)))
		return code;
	if (resume && fz_settings_read(dir, &camp, &d))
		return cli_report(&d);
	if (resume && (code = same_settings(&a, dir, &c, &camp)))
		return code;
	if ((resume || cli_has(&a, "backends")) &&   /* the default is every available one */
	    (code = available(resume ? camp.backends : c.backends,
			      resume ? "the campaign's backends" : "--backends")))
		return code;
	if (resume && !cli_has(&a, "jobs"))
		c.jobs = 0;   /* the campaign's own */
	c.argc = argc;
	c.argv = argv;
	FzSummary sum;
	if (fz_campaign_run(dir, &c, resume, cli_has(&a, "quiet") ? NULL : stderr, &sum, &d))
		return cli_report(&d);
	char known[300] = "";
	const FzCampaign *run = resume ? &camp : &c;
	if (*run->baseline)
		snprintf(known, sizeof known, ", %d known (of the %d in the baseline %s)", sum.known,
			 fz_baseline_count(run->baseline), run->baseline_from);
	printf("%lld cases, %lld records, %d distinct failure%s (%d with a seeded fault)%s, %lld "
	       "error%s; %s\n", (long long)sum.cases, (long long)sum.records, sum.distinct,
	       sum.distinct == 1 ? "" : "s", sum.kills, known, (long long)sum.errors,
	       sum.errors == 1 ? "" : "s", dir);
	results_line(dir, *run->baseline);
	if (sum.interrupted)   /* stopped early: what is logged stays, the rest can follow */
		printf("interrupted by %s after %.0f s; continue with: assay fuzz --resume %s\n",
		       sum.interrupted == SIGINT ? "Ctrl-C (SIGINT)" : "SIGTERM", sum.elapsed_s, dir);
	return sum.errors ? 3 : sum.distinct ? 1 : 0;
}
