/* fuzz/case.c: one case of a campaign.
 *
 * Case n of a campaign with seed S is a pure function of (S, n) and the settings (and, with
 * coverage feedback, the bias of its epoch: fuzz/cover.c): the graph (fz_gen under the
 * case's generator options, its schedule block included), the inputs' distribution and seed
 * (drawn from the FZ_STREAM_INPUTS stream: with inputs "mix", normal 30%, uniform 18%,
 * adversarial 20%, adversarial with specials 12%, edges 20%), the check on every backend of
 * the settings with the seeded faults, and
 * the signature of each failing verdict (fz_classify). Its log text is one JSON line per
 * record (vf_record_json with a "case" member) and then one "done" line:
 *   {"done":N, "graph":..., "status":"ok"|"error"|"skipped", "error":"" (why the toolkit
 *    could not judge; for "skipped", the oracle's limit that stopped it: its deadline or
 *    memory cap, a case neither judged nor an error), "inputs":DIST, "seed":INPUT_SEED, "specials":bool, "fails":["KEY@OUTPUT",...]
 *    (one per distinct key), ["epoch":E, "aim":POINT, "levers":["tile2",...]: with coverage
 *    feedback, the case's epoch, the coverage point its bias aimed at ("" when none) and
 *    the generator levers it applied, fuzz/cover.c], "gen_s",
 *    "oracle_s", "budget_s", "compile_s", "launch_s", "worker_s", "classify_s", "check_s"}
 * Timings aside, the text is the same in any process, with any number of jobs.
 * (The campaign's settings file is fuzz/settings.c's.)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fuzz.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void fz_campaign_defaults(FzCampaign *c)
{
	memset(c, 0, sizeof *c);
	c->seed = 1;
	c->jobs = 1;
	snprintf(c->backends, sizeof c->backends, "c");
	snprintf(c->inputs, sizeof c->inputs, "mix");
	c->timeout_s = 10;
	c->compile_timeout_s = 60;
	c->reduce = true;
	c->reduce_tests = 300;
	c->case_limit_s = 600;
	c->feedback_epoch = FZ_EPOCH_DEFAULT;
	fz_gen_defaults(&c->gen);
}

static void json_num(FILE *f, const char *key, double x)
{
	fprintf(f, ",\"%s\":%.6g", key, isfinite(x) ? x : 0);
}

/* The inputs of case n: the distribution (drawn unless the settings fix one) and a seed
 * below 2^63. */
static int case_inputs(const FzCampaign *c, uint64_t n, FzRun *r, Diag *d)
{
	uint64_t z = fz_seed(c->seed, n, FZ_STREAM_INPUTS);
	r->seed = mix(z) >> 1;
	r->specials = false;
	if (strcmp(c->inputs, "mix") == 0) {
		static const struct { Dist dist; bool specials; unsigned w; } t[] = {
			{DIST_NORMAL, false, 30}, {DIST_UNIFORM, false, 18},
			{DIST_ADVERSARIAL, false, 20}, {DIST_ADVERSARIAL, true, 12},
			{DIST_EDGES, false, 20},
		};
		unsigned pick = (unsigned)(mix(z ^ 0x1a2b3c4dull) % 100);
		for (size_t i = 0; i < ARRAY_LEN(t); i++) {
			if (pick < t[i].w) {
				r->dist = t[i].dist;
				r->specials = t[i].specials;
				break;
			}
			pick -= t[i].w;
		}
		return 0;
	}
	bool specials = strcmp(c->inputs, "specials") == 0;
	int dist = specials ? DIST_ADVERSARIAL : dist_parse(c->inputs);
	if (dist < 0) {
		diag_set(d, 2, "inputs: expected mix, normal, uniform, adversarial, edges or specials, got "
			 "'%s'",
			 c->inputs);
		return -1;
	}
	r->dist = (Dist)dist;
	r->specials = specials;
	return 0;
}

int fz_case_setup(const FzCampaign *c, uint64_t n, const char *cache_dir, FzRun *r, Diag *d)
{
	memset(r, 0, sizeof *r);
	if (fz_run_backends(r, c->backends, d) || case_inputs(c, n, r, d))
		return -1;
	r->faults = c->faults;
	r->hooks = c->hooks;
	r->timeout_s = c->timeout_s;
	r->compile_timeout_s = c->compile_timeout_s;
	r->cache_dir = cache_dir;
	return 0;
}

/* The distinct "KEY@OUTPUT" of the failing verdicts, as a JSON array into f. */
static void fails_json(FILE *f, const FzResult *res, const FzSig *sigs)
{
	fputs(",\"fails\":[", f);
	int n = 0;
	for (int k = 0; sigs && k < res->n; k++) {
		if (sigs[k].verdict == V_PASS)
			continue;
		char key[512], prev[512];
		fz_sig_key(&sigs[k], key, sizeof key);
		bool dup = false;
		for (int j = 0; j < k && !dup; j++)
			dup = sigs[j].verdict != V_PASS &&
			      strcmp(fz_sig_key(&sigs[j], prev, sizeof prev), key) == 0;
		if (dup)
			continue;
		char item[600];
		snprintf(item, sizeof item, "%s@%s", key, sigs[k].output);
		fputs(n++ ? "," : "", f);
		vf_json_str(f, item);
	}
	fputc(']', f);
}

typedef struct {
	double gen_s, check_s, classify_s;
	const char *error;
	const char *gname;
	bool skipped;       /* error says which limit of the oracle stopped the case */
	int64_t epoch;      /* coverage feedback: the case's epoch (-1: none) */
	int aim;            /* the point its bias aimed at (-1: none) */
	unsigned levers;    /* and the levers it applied */
} CaseInfo;

static void done_line(FILE *f, uint64_t n, const FzRun *r, const FzResult *res,
		      const FzSig *sigs, const CaseInfo *ci)
{
	fprintf(f, "{\"done\":%llu,\"graph\":", (unsigned long long)n);
	vf_json_str(f, ci->gname);
	fprintf(f, ",\"status\":\"%s\",\"error\":", ci->skipped ? "skipped" : ci->error ? "error" : "ok");
	vf_json_str(f, ci->error ? ci->error : "");
	fprintf(f, ",\"inputs\":\"%s\",\"seed\":%llu,\"specials\":%s", dist_name(r->dist),
		(unsigned long long)r->seed, r->specials ? "true" : "false");
	fails_json(f, res, sigs);
	if (ci->epoch >= 0) {
		fprintf(f, ",\"epoch\":%lld,\"aim\":\"%s\",\"levers\":[", (long long)ci->epoch,
			ci->aim >= 0 ? cov_name((CovPoint)ci->aim) : "");
		for (int l = 0, n = 0; fz_lever_name(l); l++)
			if (ci->levers >> l & 1)
				fprintf(f, "%s\"%s\"", n++ ? "," : "", fz_lever_name(l));
		fputc(']', f);
	}
	json_num(f, "gen_s", ci->gen_s);
	json_num(f, "oracle_s", res->oracle_s);
	json_num(f, "budget_s", res->budget_s);
	json_num(f, "compile_s", res->compile_s);
	json_num(f, "launch_s", res->launch_s);
	json_num(f, "worker_s", res->worker_s);
	json_num(f, "classify_s", ci->classify_s);
	json_num(f, "check_s", ci->check_s);
	fputs("}\n", f);
}

int fz_case_run(const FzCampaign *c, uint64_t case_no, const char *cache_dir, VfPool *pool,
		char **blob, FzRun *run, char **gtext, Diag *d)
{
	return fz_case_run_bias(c, NULL, case_no, cache_dir, pool, blob, run, gtext, d);
}

int fz_case_run_bias(const FzCampaign *c, const FzBias *bias, uint64_t case_no,
		     const char *cache_dir, VfPool *pool, char **blob, FzRun *run, char **gtext,
		     Diag *d)
{
	FzRun r;
	*blob = NULL;
	if (fz_case_setup(c, case_no, cache_dir, &r, d))
		return -1;
	r.pool = pool;
	char *buf = NULL, extra[64], gname[64], *msg = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	IR_ASSERT(f);
	snprintf(extra, sizeof extra, "\"case\":%llu", (unsigned long long)case_no);
	snprintf(gname, sizeof gname, "fz%llu", (unsigned long long)case_no);
	FzResult res = {0};
	res.json = f;
	res.json_extra = extra;
	FzSig *sigs = NULL;
	CaseInfo ci = {0, 0, 0, NULL, gname, false, bias ? bias->epoch : -1, -1, 0};
	GenOpts o = fz_bias_opts(&c->gen, bias, c->seed, case_no, &ci.aim, &ci.levers);
	Diag gd = {0};
	bool env = false;
	double t0 = now();
	Graph *g = fz_gen(&o, c->seed, case_no, &gd);
	ci.gen_s = now() - t0;
	if (!g) {
		IR_ASSERT(asprintf(&msg, "the generator's graph does not check: %s",
				   gd.msg ? gd.msg : "") >= 0);
		if (gtext)
			*gtext = fz_gen_raw(&o, c->seed, case_no);
	} else {
		if (gtext)
			*gtext = ir_print(g);
		t0 = now();
		int rc = fz_check(g, &r, &res, &gd);
		ci.skipped = rc == -2;   /* the oracle hit a limit: skipped, not an error */
		env = rc == -1 && gd.env;
		if (ci.skipped)
			IR_ASSERT(asprintf(&msg, "%s", gd.msg ? gd.msg : "a limit of the oracle") >= 0);
		else if (rc)
			IR_ASSERT(asprintf(&msg, "the toolkit could not judge the case: %s",
					   gd.msg ? gd.msg : "") >= 0);
		ci.check_s = now() - t0;
		t0 = now();
		bool any = false;
		for (int k = 0; !msg && k < res.n; k++)
			any |= res.v[k].suspect;
		if (any && fz_classify(g, &r, &res, &sigs, &gd)) {
			env = gd.env;
			IR_ASSERT(asprintf(&msg, "classification failed: %s", gd.msg ? gd.msg : "") >= 0);
		}
		ci.classify_s = now() - t0;
	}
	ci.error = msg;
	done_line(f, case_no, &r, &res, msg ? NULL : sigs, &ci);
	fclose(f);
	free(msg);
	free(sigs);
	fz_result_free(&res);
	ir_free(g);
	if (run)
		*run = r;
	if (env) {   /* the environment failed: no result to record */
		free(buf);
		*d = gd;
		return -1;
	}
	diag_clear(&gd);
	*blob = buf;
	return 0;
}
