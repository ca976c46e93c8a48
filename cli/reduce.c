/* cli/reduce.c: `assay reduce REPRO.tg`: shrinks a failing graph, with its schedule block
 * and its inputs' seed, to a minimal one that fails the same way (fuzz/reduce.c).
 *
 * The failure is found by checking the graph as `assay check` would (--backends, --seed,
 * --inputs, --specials, ASSAY_FAULT); its signature (backend, verdict, output and format,
 * the directive kinds and seeded faults it needs) is what every step must keep. Inputs:
 * the flags, else the `# inputs:` comment line a repro written by assay carries, else seed
 * 1 and normal. The result goes to -o OUT.tg (default: REPRO.min.tg) with comment lines
 * giving the signature and the command that reproduces it.
 *
 * Exit codes: 0 the repro was written; 2 the user's input (a graph that does not parse or
 * does not fail, a bad flag); 3 the toolkit failed.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../fuzz/fuzz.h"

static const FlagSpec flags[] = {
	{"backends", true, false, "LIST     comma list of backends (default: every available one)"},
	{"seed", true, false, "S        the inputs' seed (default: the repro's, else 1)"},
	{"inputs", true, false, "DIST     normal | uniform | adversarial | edges (default: the repro's, else normal)"},
	{"specials", false, false, "         adversarial and edges inputs also hold inf and NaN"},
	{"output", true, false, "NAME     the failing output to keep (default: the first failing)"},
	{"tests", true, false, "N        checks the reducer may make (default 400)"},
	{"timeout", true, false, "S        seconds a worker may run (default 10)"},
	{"quiet", false, false, "         no line per reduction step"},
	{"o", true, false, "OUT.tg   where the minimal repro goes (default: REPRO.min.tg)"},
	{"help", false, false, "         this help"},
};

static int inputs_of(const Args *a, const char *text, FzRun *r)
{
	r->seed = 1;
	r->dist = DIST_NORMAL;
	r->specials = false;
	fz_repro_inputs(text, &r->seed, &r->dist, &r->specials);
	long long seed;
	if (cli_int(a, "reduce", "seed", (long long)r->seed, 0, LLONG_MAX, &seed))
		return 2;
	r->seed = (uint64_t)seed;
	const char *in = cli_get(a, "inputs");
	if (in) {
		int dist = dist_parse(in);
		if (dist < 0) {
			fprintf(stderr, "assay reduce: --inputs expects %s, got '%s'\n", dist_list(), in);
			return 2;
		}
		r->dist = (Dist)dist;
		r->specials = false;
	}
	r->specials |= cli_has(a, "specials");
	return 0;
}

static int backends_of(const Args *a, FzRun *r)
{
	const Backend *bs[16];
	int n;
	int rc = cli_backends(a, "reduce", bs, &n);
	r->nbackends = 0;
	for (int k = 0; !rc && k < n && k < FZ_MAXBACKENDS; k++)
		r->backends[r->nbackends++] = bs[k];
	return rc;
}

/* The signature of the failure to keep: the first failing verdict (of --output). */
static int failure_of(const Args *a, const Graph *g, const FzRun *r, FzSig *sig)
{
	FzResult res = {0};
	Diag d = {0};
	if (fz_check(g, r, &res, &d))
		return cli_report(&d);
	const char *want = cli_get(a, "output");
	int k = 0;
	while (k < res.n && (!vf_verdict_fails(res.v[k].verdict) ||
			     (want && strcmp(res.v[k].output, want))))
		k++;
	if (k == res.n) {
		fprintf(stderr, "assay reduce: %s does not fail%s%s: nothing to reduce\n", g->file,
			want ? " on output " : "", want ? want : "");
		fz_result_free(&res);
		return 2;
	}
	FzSig *sigs = NULL;
	int rc = fz_classify(g, r, &res, &sigs, &d) ? cli_report(&d) : 0;
	if (!rc)
		*sig = sigs[k];
	free(sigs);
	fz_result_free(&res);
	return rc;
}

static int write_repro(const Args *a, const char *path, const FzSig *sig, const FzRun *r,
		       const FzReduceStats *st, const char *text)
{
	char *origin = NULL, *out = NULL;
	IR_ASSERT(asprintf(&origin, "assay reduce of %s: %d definitions reduced to %d in %d checks",
			   path, st->defs_before, st->defs_after, st->tests) >= 0);
	char *header = fz_repro_header(sig, r, st->defs_after, origin);
	char *full = NULL;
	IR_ASSERT(asprintf(&full, "%s%s", header, text) >= 0);
	const char *o = cli_get(a, "o");
	if (!o) {
		size_t n = strlen(path);
		IR_ASSERT(asprintf(&out, "%.*s.min.tg", (int)(n > 3 && !strcmp(path + n - 3, ".tg") ?
							    n - 3 : n), path) >= 0);
		o = out;
	}
	Diag d = {0};
	int rc = vf_write_text(o, full, &d) ? cli_report(&d) : 0;
	if (!rc) {
		char key[512];
		printf("%s: %d definitions reduced to %d in %d checks (%.1f s); failure %s (output %s)\n"
		       "written to %s\n", path, st->defs_before, st->defs_after, st->tests, st->seconds,
		       fz_sig_key(sig, key, sizeof key), sig->output, o);
	}
	free(origin);
	free(header);
	free(full);
	free(out);
	return rc;
}

int cmd_reduce(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "reduce", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "reduce", "REPRO.tg [--backends B] [--seed S --inputs DIST] [-o OUT.tg]",
			  "Shrinks a failing graph (with its schedule block and input seed) to a minimal\n"
			  "one that fails the same way: the same backend, verdict, output and format, and\n"
			  "the same directive kinds and seeded faults (ASSAY_FAULT) implicated.\n"
			  "Exit 0: the repro was written; 2: bad input or no failure; 3: internal error.",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	if (a.npos != 1) {
		fprintf(stderr, "assay reduce: expects one graph file (see 'assay reduce --help')\n");
		return 2;
	}
	const char *path = a.pos[0];
	long long tests;
	FzRun r = {0};
	VfOpts env = {0};
	Diag d = {0};
	if (cli_int(&a, "reduce", "tests", 400, 1, FZ_MAX_REDUCE_TESTS, &tests) ||
	    cli_double(&a, "reduce", "timeout", 10, 0, FZ_MAX_TIMEOUT, &r.timeout_s))
		return 2;
	if (vf_opts_env(&env, &d))
		return cli_report(&d);
	r.faults = env.w.faults;
	r.hooks = env.w.hooks;
	Graph *g = ir_parse_file(path, NULL, 0, &d);
	if (!g)
		return cli_report(&d);
	FzSig sig;
	FzReduceStats st;
	char *out = NULL;
	if ((code = backends_of(&a, &r)) || (code = inputs_of(&a, g->src, &r)) ||
	    (code = failure_of(&a, g, &r, &sig)))
		goto done;
	FzReduceOpts o = {r, (int)tests, 0, cli_has(&a, "quiet") ? NULL : stderr};
	if (fz_reduce(g, &sig, &o, &out, &st, &d)) {
		code = cli_report(&d);
		goto done;
	}
	r.seed = st.seed;
	r.dist = st.dist;
	r.specials = st.specials;
	code = write_repro(&a, path, &sig, &r, &st, out);
done:
	free(out);
	ir_free(g);
	return code;
}
