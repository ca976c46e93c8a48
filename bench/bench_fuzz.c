/* bench/bench_fuzz.c: fuzz campaign throughput on the c backend, beside its anchors measured
 * in the same run.
 *
 * 1. A campaign of CASES cases (seed 1, every input distribution, no seeded fault, no
 *    reduction) with 2 jobs, and the same with 1 job: cases per second. Target (issue 4):
 *    >= 5 cases/s with 2 jobs on the 2-core machine.
 * 2. The cost of a case's parts, from the campaign's own log (mean seconds per case):
 *    generation, the exact oracle, the budgets, the worker (fork, lowering, emission, the C
 *    compiler, the launch), of which the compile and the launch, and the ablations that
 *    classify failures.
 * 3. Anchors: a cold compile of the smallest program (`y[i:1] = x[i]`) by the c backend
 *    (the floor of a case's compile), and a worker run of it with a warm cache (the floor of
 *    isolating a run in a process).
 * Environment: BENCH_FUZZ_CASES (default 40).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../fuzz/fuzz.h"
#include "bench.h"

static void die(Diag *d)
{
	fprintf(stderr, "bench_fuzz: %s", d->msg ? d->msg : "failure\n");
	exit(3);
}

static char *tmpdir(void)
{
	char *t = strdup("/tmp/assay-bench-fuzz.XXXXXX");
	if (!mkdtemp(t)) {
		perror("bench_fuzz: mkdtemp");
		exit(3);
	}
	return t;
}

static void rm_rf(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_fuzz: could not remove %s\n", dir);
}

/* Runs a campaign; returns cases per second; parts[] gets the log's mean timings. */
static const char *const part_names[] = {"gen_s", "oracle_s", "budget_s", "worker_s",
					 "compile_s", "launch_s", "classify_s", "check_s"};
enum { NPARTS = sizeof part_names / sizeof part_names[0] };

static double campaign(int64_t cases, int jobs, double *parts, int64_t *failures)
{
	char *dir = tmpdir();
	char sub[600];
	snprintf(sub, sizeof sub, "%s/c", dir);
	FzCampaign c;
	fz_campaign_defaults(&c);
	c.seed = 1;
	c.cases = cases;
	c.jobs = jobs;
	c.reduce = false;
	FzSummary s;
	Diag d = {0};
	if (fz_campaign_run(sub, &c, false, NULL, &s, &d))
		die(&d);
	*failures = s.verdicts[V_OVER_BUDGET] + s.verdicts[V_SPECIAL_MISMATCH] +
		    s.verdicts[V_CRASH] + s.verdicts[V_TIMEOUT] + s.verdicts[V_OOB_WRITE] +
		    s.verdicts[V_COMPILE_ERROR];
	if (parts) {
		char path[700], line[1 << 16], v[64];
		snprintf(path, sizeof path, "%s/results.jsonl", sub);
		FILE *f = fopen(path, "r");
		memset(parts, 0, NPARTS * sizeof *parts);
		int n = 0;
		while (f && fgets(line, sizeof line, f)) {
			if (strncmp(line, "{\"done\":", 8))
				continue;
			n++;
			for (int k = 0; k < NPARTS; k++)
				if (fz_json_get(line, part_names[k], v, sizeof v))
					parts[k] += strtod(v, NULL);
		}
		if (f)
			fclose(f);
		for (int k = 0; n && k < NPARTS; k++)
			parts[k] /= n;
	}
	double rate = (double)s.cases / s.elapsed_s;
	rm_rf(dir);
	free(dir);
	return rate;
}

/* The anchors: a cold compile of the smallest program, and a warm worker run of it. */
static void anchors(double *compile_s, double *worker_s)
{
	const char src[] = "input x : f32[1]\ny[i:1] = x[i]\noutput y : f32\n";
	Diag d = {0};
	Graph *g = ir_parse(src, strlen(src), "anchor.tg", NULL, 0, &d);
	if (!g)
		die(&d);
	char *dir = tmpdir();
	FzRun r = {0};
	r.backends[0] = be_find("c");
	r.nbackends = 1;
	r.dist = DIST_NORMAL;
	r.seed = 1;
	r.cache_dir = dir;
	FzResult res = {0};
	if (fz_check(g, &r, &res, &d))
		die(&d);
	*compile_s = res.compile_s;
	fz_result_free(&res);
	double best = 1e9;
	for (int k = 0; k < 5; k++) {
		memset(&res, 0, sizeof res);
		if (fz_check(g, &r, &res, &d))
			die(&d);
		best = res.worker_s < best ? res.worker_s : best;
		fz_result_free(&res);
	}
	*worker_s = best;
	rm_rf(dir);
	free(dir);
	ir_free(g);
}

int main(void)
{
	const char *e = getenv("BENCH_FUZZ_CASES");
	int64_t cases = e ? atoll(e) : 40;
	char why[256];
	if (!be_find("c") || be_find("c")->available(why, sizeof why)) {
		printf("bench_fuzz: the c backend is not available here; skipped\n");
		return 0;
	}
	double parts[NPARTS], comp, work;
	int64_t f2, f1;
	double t0 = now();
	double r2 = campaign(cases, 2, parts, &f2);
	double r1 = campaign(cases, 1, NULL, &f1);
	anchors(&comp, &work);
	printf("fuzz campaign, c backend, seed 1, %lld cases, no fault, no reduction (%.0f s in all)\n",
	       (long long)cases, now() - t0);
	printf("  2 jobs: %6.2f cases/s   (target >= 5 cases/s)   beside 1 job: %6.2f cases/s "
	       "(x%.2f)\n", r2, r1, r1 > 0 ? r2 / r1 : 0);
	printf("  failing records: %lld (2 jobs), %lld (1 job): false alarms unless the same cases\n"
	       "  fail the same way in `assay fuzz` (see its failures folder)\n", (long long)f2,
	       (long long)f1);
	printf("  mean cost of a case (s):\n");
	static const char *const labels[NPARTS] = {
		"generation", "exact oracle", "budgets", "worker (all)", "  of it: C compile",
		"  of it: launch", "classification (ablations)", "check in all",
	};
	for (int k = 0; k < NPARTS; k++)
		printf("    %-28s %8.4f\n", labels[k], parts[k]);
	printf("  anchors: cold compile of the smallest program %.4f s; warm worker run of it %.4f s\n",
	       comp, work);
	return 0;
}
