/* bench/bench_fuzz.c: fuzz campaign throughput, on the c backend alone and on every local
 * backend, each beside its anchors measured in the same run.
 *
 * 1. Campaigns of CASES cases (every input distribution, no seeded fault, no reduction),
 *    JOBS jobs (default: the machine's cores): on c alone (the anchor), on every available
 *    backend with persistent workers (the default), and on every available backend with a
 *    fresh worker process per run (ASSAY_FRESH_WORKERS=1, the engine before issue 12):
 *    cases per second, and the ratios between them. Targets (issue 12): >= 3 cases/s on the
 *    2-core machine with c, opencl, vulkan and wgsl; >= 10 on the H200 with 16 jobs.
 * 2. Where a case's time goes, from the campaign's own log (sums over its cases): the
 *    backends' compiles, the kernels' runs (launch to download), the workers' own overhead
 *    (the rest of their wall time: the run's trip to the worker, rewrite, lowering,
 *    emission, allocation), the exact oracle, the budgets, generation and classification;
 *    and per backend its mean worker seconds per case. CPU seconds per case (this process
 *    and every child it reaped: jobs, workers, compilers; not the WGSL helper's Node, which
 *    its worker does not reap).
 * 3. Anchors for a case's floor: a cold compile of the smallest program by the c backend,
 *    and a warm worker run of it.
 * Mesa's on-disk shader cache is switched off (MESA_SHADER_CACHE_DISABLE) so that a second
 * run of the same seeds is measured as the first: a campaign's cases are new programs.
 * Environment: BENCH_FUZZ_CASES (default 30), BENCH_FUZZ_JOBS, BENCH_FUZZ_SEED (default 1),
 * BENCH_FUZZ_BACKENDS (the comma list of the second and third campaigns; default every
 * available backend), BENCH_FUZZ_KEEP=DIR (the second campaign is made there and kept).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
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

static double cpu_s(void)
{
	struct rusage s, c;
	getrusage(RUSAGE_SELF, &s);
	getrusage(RUSAGE_CHILDREN, &c);
	return (double)(s.ru_utime.tv_sec + s.ru_stime.tv_sec + c.ru_utime.tv_sec +
			c.ru_stime.tv_sec) +
	       1e-6 * (double)(s.ru_utime.tv_usec + s.ru_stime.tv_usec + c.ru_utime.tv_usec +
			       c.ru_stime.tv_usec);
}

/* The parts of a case, from its done line (fuzz/case.c). */
static const char *const part_names[] = {"gen_s", "oracle_s", "budget_s", "worker_s",
					 "compile_s", "launch_s", "classify_s", "check_s"};
enum { P_GEN, P_ORACLE, P_BUDGET, P_WORKER, P_COMPILE, P_LAUNCH, P_CLASSIFY, P_CHECK,
       NPARTS = sizeof part_names / sizeof part_names[0], MAXB = FZ_MAXBACKENDS };

typedef struct {
	double rate, cpu_per_case, parts[NPARTS];   /* parts: sums over the cases */
	int64_t cases, failing;
	char bname[MAXB][16];
	double bworker[MAXB];   /* mean worker seconds per case, per backend */
	double bcompile[MAXB], blaunch[MAXB];   /* of them: compile, launch to download */
	int nb;
} Camp;

/* The per-backend worker seconds of the records (one per backend and case: a worker's
 * timings repeat in each of its outputs' records). */
static void backends_of(const char *log, Camp *o)
{
	FILE *f = fopen(log, "r");
	char line[1 << 16], b[32], w[64], cs[32], last[MAXB][32] = {{0}};
	int64_t n[MAXB] = {0};
	while (f && fgets(line, sizeof line, f)) {
		if (!strncmp(line, "{\"done\":", 8) || !fz_json_get(line, "backend", b, sizeof b) ||
		    !fz_json_get(line, "case", cs, sizeof cs))
			continue;
		int k = 0;
		while (k < o->nb && strcmp(o->bname[k], b))
			k++;
		if (k == o->nb && o->nb < MAXB)
			snprintf(o->bname[o->nb++], sizeof o->bname[0], "%.15s", b);
		if (k == MAXB || !strcmp(last[k], cs))
			continue;   /* another output of the same run */
		snprintf(last[k], sizeof last[k], "%s", cs);
		const char *t = strstr(line, "\"worker_s\":");
		if (t && sscanf(t, "\"worker_s\":%63[0-9.e+-]", w) == 1) {
			o->bworker[k] += strtod(w, NULL);
			n[k]++;
		}
		if ((t = strstr(line, "\"compile_s\":")) && sscanf(t, "\"compile_s\":%63[0-9.e+-]", w) == 1)
			o->bcompile[k] += strtod(w, NULL);
		if ((t = strstr(line, "\"launch_s\":")) && sscanf(t, "\"launch_s\":%63[0-9.e+-]", w) == 1)
			o->blaunch[k] += strtod(w, NULL);
	}
	if (f)
		fclose(f);
	for (int k = 0; k < o->nb; k++) {
		double d = n[k] ? (double)n[k] : 1;
		o->bworker[k] /= d;
		o->bcompile[k] /= d;
		o->blaunch[k] /= d;
	}
}

static Camp campaign(const char *backends, int64_t cases, int jobs, uint64_t seed, bool fresh,
		     const char *keep)
{
	char *dir = tmpdir(), sub[600], log[700];
	snprintf(sub, sizeof sub, "%s", keep && *keep ? keep : dir);
	snprintf(log, sizeof log, "%s/results.jsonl", sub);
	FzCampaign c;
	fz_campaign_defaults(&c);
	c.seed = seed;
	c.cases = cases;
	c.jobs = jobs;
	c.reduce = false;
	snprintf(c.backends, sizeof c.backends, "%s", backends);
	if (fresh)
		setenv("ASSAY_FRESH_WORKERS", "1", 1);
	Camp o = {0};
	FzSummary s;
	Diag d = {0};
	double c0 = cpu_s();
	if (fz_campaign_run(sub, &c, false, NULL, &s, &d))
		die(&d);
	o.cpu_per_case = (cpu_s() - c0) / (double)(s.cases ? s.cases : 1);
	unsetenv("ASSAY_FRESH_WORKERS");
	for (int v = 0; v < V__COUNT; v++)
		o.failing += vf_verdict_fails((Verdict)v) ? s.verdicts[v] : 0;
	o.cases = s.cases;
	o.rate = (double)s.cases / s.elapsed_s;
	FILE *f = fopen(log, "r");
	char line[1 << 16], v[64];
	while (f && fgets(line, sizeof line, f)) {
		if (strncmp(line, "{\"done\":", 8))
			continue;
		for (int k = 0; k < NPARTS; k++)
			if (fz_json_get(line, part_names[k], v, sizeof v))
				o.parts[k] += strtod(v, NULL);
	}
	if (f)
		fclose(f);
	backends_of(log, &o);
	rm_rf(dir);   /* a kept campaign (keep) is elsewhere */
	free(dir);
	return o;
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

static void shares(const char *what, const Camp *o)
{
	const double *p = o->parts;
	double total = p[P_CHECK] + p[P_GEN] + p[P_CLASSIFY];
	double run = p[P_LAUNCH], overhead = p[P_WORKER] - p[P_COMPILE] - p[P_LAUNCH];
	double rest = total - p[P_WORKER] - p[P_ORACLE] - p[P_BUDGET] - p[P_GEN] - p[P_CLASSIFY];
	if (total <= 0)
		return;
	printf("  where a case's time goes (%s; %.3f s per case in its job): compile %.0f%%, run "
	       "%.0f%%, worker overhead %.0f%%, oracle %.0f%%, budget %.0f%%, generation and "
	       "classification %.0f%%, the rest %.0f%%\n", what, total / (double)o->cases,
	       100 * p[P_COMPILE] / total, 100 * run / total, 100 * overhead / total,
	       100 * p[P_ORACLE] / total, 100 * p[P_BUDGET] / total,
	       100 * (p[P_GEN] + p[P_CLASSIFY]) / total, 100 * rest / total);
	printf("  mean worker seconds per case (compile + run):");
	for (int k = 0; k < o->nb; k++)
		printf(" %s %.3f (%.3f + %.3f)%s", o->bname[k], o->bworker[k], o->bcompile[k],
		       o->blaunch[k], k + 1 < o->nb ? "," : "\n");
}

int main(void)
{
	const char *e = getenv("BENCH_FUZZ_CASES"), *j = getenv("BENCH_FUZZ_JOBS"),
		   *sd = getenv("BENCH_FUZZ_SEED");
	int64_t cases = e ? atoll(e) : 30;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int jobs = j ? atoi(j) : ncpu > 0 ? (int)ncpu : 2;
	uint64_t seed = sd ? strtoull(sd, NULL, 10) : 1;
	char why[256], all[128] = "";
	if (!be_find("c") || be_find("c")->available(why, sizeof why)) {
		printf("bench_fuzz: the c backend is not available here (%s): no campaign to time\n",
		       why);
		return 0;
	}
	for (int k = 0; be_at(k); k++)
		if (be_at(k)->available(why, sizeof why) == 0)
			snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", *all ? "," : "",
				 be_at(k)->name);
	const char *bl = getenv("BENCH_FUZZ_BACKENDS");
	if (bl && *bl)
		snprintf(all, sizeof all, "%s", bl);
	setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
	double t0 = now();
	Camp c = campaign("c", cases, jobs, seed, false, NULL);
	Camp a = campaign(all, cases, jobs, seed, false, getenv("BENCH_FUZZ_KEEP"));
	Camp f = campaign(all, cases, jobs, seed, true, NULL);
	double comp, work;
	anchors(&comp, &work);
	printf("fuzz campaigns, seed %llu, %lld cases each, %d jobs, no fault, no reduction (%.0f s "
	       "in all)\n", (unsigned long long)seed, (long long)cases, jobs, now() - t0);
	printf("  c alone:                     %6.2f cases/s  %.3f CPU s/case   (the anchor)\n",
	       c.rate, c.cpu_per_case);
	printf("  %-28s %6.2f cases/s  %.3f CPU s/case   = %.2fx c alone   (target >= 3 cases/s "
	       "on 2 cores with c,opencl,vulkan,wgsl; >= 10 on the H200 with 16 jobs)\n", all,
	       a.rate, a.cpu_per_case, c.rate > 0 ? a.rate / c.rate : 0);
	printf("  the same, a fresh worker per run: %6.2f cases/s  %.3f CPU s/case   persistent "
	       "workers: x%.2f\n", f.rate, f.cpu_per_case, f.rate > 0 ? a.rate / f.rate : 0);
	printf("  failing records: %lld (c), %lld (all), %lld (all, fresh workers): false alarms "
	       "unless `assay fuzz` finds the same\n", (long long)c.failing, (long long)a.failing,
	       (long long)f.failing);
	shares(all, &a);
	shares("fresh workers", &f);
	printf("  anchors: cold compile of the smallest program %.4f s; warm worker run of it "
	       "%.4f s\n", comp, work);
	return 0;
}
