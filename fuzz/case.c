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
 * With variants (FzCampaign.variants, meta.c), each variant's records follow the case's
 * with a "variant":NAME member; the done line lists them, "variants":[{"name", "claim":
 * "bit-identical"|"within budget", "what", "status":"ok"|"skipped"}], before "fails", whose
 * items for a variant's failures are "KEY@OUTPUT#NAME", and adds "variants_s". A variant's
 * refuted claim or an oracle that differs from the case's makes the case an error (a bug
 * of the toolkit, not of the compiler under test).
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
	/* one variant in a quarter of the cases: about 23% of a campaign's throughput for
	 * bugs no budget sees (docs/fuzz.md "Metamorphic variants", the default) */
	c->variants = 0.25;
	c->probes = FZ_PROBES;
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
	r->grad = r->grad_verify = c->grad_pairs > 0;
	r->grad_pairs = c->grad_pairs;
	r->invariance = c->invariance;
	r->probes = c->probes;
	return 0;
}

/* The failing verdicts of one checked graph: the case's own, or one variant's (name). */
typedef struct {
	const FzResult *res;
	const FzSig *sigs;      /* res->n entries (V_PASS: none), or NULL */
	const char *variant;    /* NULL for the case's graph */
} Fails;

/* The distinct keys of the failing verdicts, as a JSON array into f: "KEY@OUTPUT" for the
 * case's graph, "KEY@OUTPUT#VARIANT" for a variant's (the first graph to fail with a key
 * names it: the case's own before its variants'). */
static void fails_json(FILE *f, const Fails *fs, int nfs)
{
	fputs(",\"fails\":[", f);
	int n = 0;
	for (int g = 0; g < nfs; g++) {
		const FzResult *res = fs[g].res;
		const FzSig *sigs = fs[g].sigs;
		for (int k = 0; sigs && k < res->n; k++) {
			if (sigs[k].verdict == V_PASS)
				continue;
			char key[512], prev[512];
			fz_sig_key(&sigs[k], key, sizeof key);
			bool dup = false;
			for (int h = 0; h <= g && !dup; h++)
				for (int j = 0; fs[h].sigs && j < (h == g ? k : fs[h].res->n) && !dup; j++)
					dup = fs[h].sigs[j].verdict != V_PASS &&
					      strcmp(fz_sig_key(&fs[h].sigs[j], prev, sizeof prev), key) == 0;
			if (dup)
				continue;
			char item[700];
			snprintf(item, sizeof item, "%s@%s%s%s", key, sigs[k].output,
				 fs[g].variant ? "#" : "", fs[g].variant ? fs[g].variant : "");
			fputs(n++ ? "," : "", f);
			vf_json_str(f, item);
		}
	}
	fputc(']', f);
}

/* One variant of a case, as its done line lists it. */
typedef struct {
	FzVariant v;
	const char *status;     /* "ok", or "skipped" (the emulation or the oracle hit a limit) */
	FzResult res;
	FzSig *sigs;
} CaseVariant;

typedef struct {
	double gen_s, check_s, classify_s, variants_s;
	const char *error;
	const char *gname;
	bool skipped;       /* error says which limit of the oracle stopped the case */
	int64_t epoch;      /* coverage feedback: the case's epoch (-1: none) */
	int aim;            /* the point its bias aimed at (-1: none) */
	unsigned levers;    /* and the levers it applied */
	CaseVariant *vs;
	int nvs;
} CaseInfo;

static void variants_json(FILE *f, const CaseInfo *ci)
{
	if (!ci->nvs)
		return;
	fputs(",\"variants\":[", f);
	for (int k = 0; k < ci->nvs; k++) {
		const CaseVariant *cv = &ci->vs[k];
		fprintf(f, "%s{\"name\":", k ? "," : "");
		vf_json_str(f, cv->v.name);
		fprintf(f, ",\"claim\":\"%s\",\"what\":", cv->v.bit ? "bit-identical" : "within budget");
		vf_json_str(f, cv->v.what);
		fprintf(f, ",\"status\":\"%s\"}", cv->status);
	}
	fputc(']', f);
}

static void done_line(FILE *f, uint64_t n, const FzRun *r, const FzResult *res,
		      const FzSig *sigs, const CaseInfo *ci)
{
	fprintf(f, "{\"done\":%llu,\"graph\":", (unsigned long long)n);
	vf_json_str(f, ci->gname);
	fprintf(f, ",\"status\":\"%s\",\"error\":", ci->skipped ? "skipped" : ci->error ? "error" : "ok");
	vf_json_str(f, ci->error ? ci->error : "");
	fprintf(f, ",\"inputs\":\"%s\",\"seed\":%llu,\"specials\":%s", dist_name(r->dist),
		(unsigned long long)r->seed, r->specials ? "true" : "false");
	variants_json(f, ci);
	if (r->invariance) {   /* --invariance: the batch drawn (inv.c) */
		fputs(",\"invariance\":", f);
		vf_json_str(f, res->inv_note);
	}
	if (r->grad) {   /* --grad: whether the gradient was derived (grad.c) */
		fputs(",\"grad\":", f);
		vf_json_str(f, res->grad_note);
	}
	/* the failures classified before an error stay (a variant's error is not its
	 * original's) */
	Fails fs[1 + FZ_MAX_VARIANTS] = {{res, sigs, NULL}};
	for (int k = 0; k < ci->nvs; k++)
		fs[1 + k] = (Fails){&ci->vs[k].res, ci->vs[k].sigs, ci->vs[k].v.name};
	fails_json(f, fs, 1 + ci->nvs);
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
	if (ci->nvs)
		json_num(f, "variants_s", ci->variants_s);
	fputs("}\n", f);
}

int fz_case_variants(const FzCampaign *c, uint64_t case_no, const Graph *g, FzVariant *out, int max)
{
	uint64_t z = mix(fz_seed(c->seed, case_no, FZ_STREAM_SCHEDULE) ^ 0x3e7a3e7aull);
	double whole = floor(c->variants);
	int n = (int)whole;
	if (c->variants > whole && (double)(mix(z ^ 1) >> 11) * 0x1p-53 < c->variants - whole)
		n++;
	n = n < max ? n : max;
	return n > 0 ? fz_variants(g, mix(z ^ 2), n, out) : 0;
}

/* The signatures of a variant's failing verdicts: a failure of its own budgets is the
 * variant's, classified as a graph of its own; a bit-identity mismatch is the pair's,
 * classified on the original with the variant's recipe (r->pair), so that its ablations
 * and its reduction remake the variant from each graph they try. */
static int classify_variant(const Graph *g, const FzRun *r, CaseVariant *cv, Diag *d)
{
	FzResult own = cv->res, pair = cv->res;
	own.v = malloc(((size_t)cv->res.n + 1) * sizeof *own.v);
	pair.v = malloc(((size_t)cv->res.n + 1) * sizeof *pair.v);
	IR_ASSERT(own.v && pair.v);
	bool any_own = false, any_pair = false;
	for (int k = 0; k < cv->res.n; k++) {
		bool mm = cv->res.v[k].verdict == V_VARIANT_MISMATCH;
		own.v[k] = pair.v[k] = cv->res.v[k];
		own.v[k].suspect &= !mm;
		pair.v[k].suspect &= mm;
		any_own |= own.v[k].suspect;
		any_pair |= pair.v[k].suspect;
	}
	FzSig *so = NULL, *sp = NULL;
	FzRun rp = *r;
	rp.pair = true;
	rp.pair_kind = cv->v.kind;
	rp.pair_seed = cv->v.seed;
	int rc = 0;
	if (any_own)
		rc = fz_classify(cv->v.g, r, &own, &so, d);
	if (!rc && any_pair)
		rc = fz_classify(g, &rp, &pair, &sp, d);
	if (!rc) {
		cv->sigs = calloc((size_t)cv->res.n + 1, sizeof *cv->sigs);
		IR_ASSERT(cv->sigs);
		for (int k = 0; k < cv->res.n; k++)
			cv->sigs[k] = sp && pair.v[k].suspect ? sp[k] : so ? so[k] : cv->sigs[k];
	}
	free(so);
	free(sp);
	free(own.v);
	free(pair.v);
	return rc;
}

/* Checks the variants of case n (ci->vs, allocated here): each one's claims are held to
 * the emulator, then it is checked like the case, its records compared with the case's
 * (res, kept), and its failing verdicts classified. A refuted claim, or an oracle that
 * differs from the case's, is a toolkit bug: *msg. 0, or -1 with d when the environment
 * failed. */
static int check_variants(const FzCampaign *c, uint64_t n, const Graph *g, const FzRun *r,
			  FzResult *res, FILE *f, CaseInfo *ci, char **msg, Diag *d)
{
	FzVariant vs[FZ_MAX_VARIANTS];
	int nv = fz_case_variants(c, n, g, vs, FZ_MAX_VARIANTS);
	ci->vs = calloc((size_t)nv + 1, sizeof *ci->vs);
	IR_ASSERT(ci->vs);
	InputSpec spec = {r->dist, r->seed, r->specials};
	int rc = 0;
	for (int k = 0; k < nv; k++) {
		CaseVariant *cv = &ci->vs[ci->nvs++];
		cv->v = vs[k];
		cv->status = "ok";
		if (*msg || rc)
			continue;   /* kept to be freed, not checked */
		MpOpts mo = {.threads = 1, .deadline = mp_now() + (r->timeout_s > 0 ? r->timeout_s : 20)};
		bool same = true;
		char why[1024];
		Diag vd = {0};
		int vrc = fz_variant_verify(g, &cv->v, &spec, &mo, &same, why, sizeof why, &vd);
		if (vrc == -2) {
			cv->status = "skipped";
			diag_clear(&vd);
			continue;
		}
		if (vrc || !same) {
			IR_ASSERT(asprintf(msg, "variant %s (%s) claims %s, but %s: a toolkit bug (the "
					   "transformation or the emulator)", cv->v.name, cv->v.what,
					   cv->v.bit ? "a bit-identical emulation" : "the original's inputs",
					   vrc ? (vd.msg ? vd.msg : "its emulation failed") : why) >= 0);
			diag_clear(&vd);
			continue;
		}
		char extra[160];
		snprintf(extra, sizeof extra, "\"case\":%llu,\"variant\":\"%s\"", (unsigned long long)n,
			 cv->v.name);
		char label[64];
		snprintf(label, sizeof label, "%s (%s)", cv->v.name,
			 cv->v.bit ? "bit-identical" : "within budget");
		cv->res.json = f;
		cv->res.json_extra = extra;
		cv->res.against = res;
		cv->res.against_bit = cv->v.bit;
		cv->res.variant = label;
		int crc = fz_check(cv->v.g, r, &cv->res, &vd);
		cv->res.json = NULL;
		cv->res.against = NULL;
		cv->res.variant = NULL;
		if (crc == -2) {
			cv->status = "skipped";
			diag_clear(&vd);
			continue;
		}
		if (crc && vd.env) {
			*d = vd;
			rc = -1;
			continue;
		}
		if (crc) {
			IR_ASSERT(asprintf(msg, "variant %s (%s): the toolkit could not judge it: %s",
					   cv->v.name, cv->v.what, vd.msg ? vd.msg : "") >= 0);
			diag_clear(&vd);
			continue;
		}
		if (cv->res.oracle_diff) {
			IR_ASSERT(asprintf(msg, "variant %s (%s): its oracle differs from the original's "
					   "at %s: a toolkit bug (the oracle or the transformation)",
					   cv->v.name, cv->v.what, cv->res.oracle_diff) >= 0);
			continue;
		}
		bool any = false;
		for (int j = 0; j < cv->res.n; j++)
			any |= cv->res.v[j].suspect;
		if (any && classify_variant(g, r, cv, &vd)) {
			if (vd.env) {
				*d = vd;
				rc = -1;
			} else {
				IR_ASSERT(asprintf(msg, "variant %s: classification failed: %s", cv->v.name,
						   vd.msg ? vd.msg : "") >= 0);
				diag_clear(&vd);
			}
		}
	}
	return rc;
}

static void free_variants(CaseInfo *ci)
{
	for (int k = 0; k < ci->nvs; k++) {
		fz_variant_free(&ci->vs[k].v);
		fz_result_free(&ci->vs[k].res);
		free(ci->vs[k].sigs);
	}
	free(ci->vs);
}

/* The case's graph text, and after it, as comment lines, the text of the variant an error
 * is about (so that DIR/errors/case-N.tg holds both). */
static char *case_text(const Graph *g, const CaseInfo *ci, const char *msg)
{
	char *t = ir_print(g);
	for (int k = 0; msg && k < ci->nvs; k++) {
		char tag[48];
		snprintf(tag, sizeof tag, "variant %s ", ci->vs[k].v.name);
		if (strncmp(msg, tag, strlen(tag)) != 0 || !ci->vs[k].v.text)
			continue;
		char *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);
		IR_ASSERT(f);
		fprintf(f, "%s\n# the variant %s:\n", t, ci->vs[k].v.name);
		for (const char *p = ci->vs[k].v.text; *p;) {
			size_t l = strcspn(p, "\n");
			fprintf(f, "# %.*s\n", (int)l, p);
			p += l + (p[l] == '\n');
		}
		fclose(f);
		free(t);
		return out;
	}
	return t;
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
	res.keep = c->variants > 0;
	FzSig *sigs = NULL;
	CaseInfo ci = {.gname = gname, .epoch = bias ? bias->epoch : -1, .aim = -1};
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
		t0 = now();
		if (!msg && !env && c->variants > 0 && check_variants(c, case_no, g, &r, &res, f, &ci,
								      &msg, &gd))
			env = true;
		ci.variants_s = now() - t0;
		if (gtext)
			*gtext = case_text(g, &ci, msg);
	}
	ci.error = msg;
	done_line(f, case_no, &r, &res, sigs, &ci);
	fclose(f);
	free(msg);
	free(sigs);
	free_variants(&ci);
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
