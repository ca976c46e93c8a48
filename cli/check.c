/* cli/check.c: `assay check G.tg...`: runs each graph on every selected backend under its
 * own schedule (the graph's schedule block, or --schedule FILE, or the default) plus N
 * sampled schedules, diffs each output with the exact oracle, scores it against its error
 * budget and prints one row per (backend, schedule, output) (verify/ does the work).
 *
 * Exit codes (spec/cli.md): 0 when every verdict is pass or unsupported and at least one
 * is not unsupported, 1 when any other verdict occurred, 2 for the user's errors (a graph
 * or schedule that does not parse, a bad flag, a missing file, an -o directory that is not
 * empty without --force) and for a run that tested nothing (every selected backend
 * unavailable, every result unsupported: like pytest's exit 5, so that a CI job that ran
 * nothing does not pass), 3 when the toolkit failed (the oracle or a budget could not be
 * computed, a worker could not be started; the environment failed: a full disk, memory).
 * The worst code wins: 3 > 2 > 1 > 0. An oracle stopped by --timeout or its memory cap is
 * exit 2 (the message names the graph).
 * Environment: ASSAY_FAULT and ASSAY_TEST_* (verify.h) break things on purpose.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../fuzz/fuzz.h"
#include "../verify/verify.h"

static const FlagSpec flags[] = {
	{"backends", true, false, "LIST     comma list of backends (default: every available one)"},
	{"schedule", true, false, "FILE     schedule directives replacing the graph's schedule block (with --external: the claim)"},
	{"external", true, false, "CMD      also (without --backends: only) check the kernel CMD computes (docs/external.md)"},
	{"name", true, false, "NAME     --external: the backend name of its records (default external)"},
	{"schedules", true, false, "N        sampled schedules besides the graph's own (default 0)"},
	{"seed", true, false, "S        seed of the inputs, sampled schedules and elements (default 1)"},
	{"inputs", true, false, "DIST     normal | uniform | adversarial | edges (default normal)"},
	{"specials", false, false, "         adversarial and edges inputs also hold inf and NaN"},
	{"input", true, true, "NAME=F   read input NAME from the .npy file F (repeatable)"},
	{"size", true, true, "N=V      override a size (repeatable)"},
	{"timeout", true, false, "S        seconds a kernel may run, alloc to download (default 20); when given, the oracle's too"},
	{"compile-timeout", true, false, "S        seconds a worker may compile (default 120)"},
	{"threads", true, false, "N        threads of the oracle and of the kernels (default 1)"},
	{"max-exact", true, false, "N        outputs larger than N elements are sampled (default 1048576)"},
	{"sample", true, false, "N        elements checked exactly in a sampled output (default 4096)"},
	{"agree-axis", true, false, "A        axis of the argmax / top-k agreement figures (default -1: the last)"},
	{"agree-k", true, false, "K        k of the top-k agreement figure (default min(5, extent))"},
	{"invariance", true, false, "SIZE=V,.. batch invariance: the rows again at SIZE = V (docs/decode.md)"},
	{"invariance-schedule", true, true, "V=FILE   --invariance: the schedule used at SIZE = V instead (repeatable)"},
	{"json", false, false, "         one JSON record per line on stdout instead of the table"},
	{"o", true, false, "DIR      keep kernels, schedules, inputs, outputs, DIR/results.jsonl and DIR/provenance.json"},
	{"force", false, false, "         -o: write into a directory that is not empty"},
	{"help", false, false, "         this help"},
};

typedef struct {
	bool json;
	int n, pass, fail, unsupported, flaky;
	char seen[16][16];       /* the backends of why */
	int nseen;
	char why[1024];          /* "BACKEND: reason; ..." of the first unsupported result of each */
} Sink;

/* Keeps the first unsupported reason of each backend (for a run that tests nothing). */
static void why_unsupported(Sink *s, const VfRecord *r)
{
	for (int k = 0; k < s->nseen; k++)
		if (strcmp(s->seen[k], r->backend) == 0)
			return;
	if (s->nseen == (int)ARRAY_LEN(s->seen))
		return;
	snprintf(s->seen[s->nseen++], sizeof s->seen[0], "%s", r->backend);
	const char *why = r->reason ? r->reason : "";
	size_t len = strlen(s->why), n = strcspn(why, "\n");
	snprintf(s->why + len, sizeof s->why - len, "%s%s: %.*s", len ? "; " : "", r->backend,
		 (int)(n < 200 ? n : 200), why);
}

static void row(void *ctx, const VfRecord *r)
{
	Sink *s = ctx;
	s->n++;
	s->pass += r->verdict == V_PASS;
	s->unsupported += r->verdict == V_UNSUPPORTED;
	s->flaky += r->verdict == V_FLAKY;
	s->fail += vf_verdict_fails(r->verdict);
	if (r->verdict == V_UNSUPPORTED)
		why_unsupported(s, r);
	if (s->json) {
		vf_record_json(stdout, r);
		fflush(stdout);
		return;
	}
	/* a failing row never shows a perfect-looking 0: a special-value mismatch is a
	 * category, not a distance; an emulation-mismatch, within every budget, counts bits */
	bool numeric = r->verdict == V_PASS || r->verdict == V_OVER_BUDGET ||
		       r->verdict == V_SPECIAL_MISMATCH || r->verdict == V_FLAKY ||
		       r->verdict == V_EMULATION_MISMATCH;
	char ulp[32] = "-", ratio[32] = "-";
	if (r->verdict == V_EMULATION_MISMATCH) {
		snprintf(ulp, sizeof ulp, "%.0f", r->m.max_ulp);
		snprintf(ratio, sizeof ratio, "bits x%lld", (long long)r->emu_diff);
	} else if (r->verdict == V_SPECIAL_MISMATCH) {
		snprintf(ratio, sizeof ratio, "special x%lld",
			 (long long)(r->m.n_special ? r->m.n_special : r->m64.n_special));
	} else if (numeric) {
		snprintf(ulp, sizeof ulp, "%.0f", r->m.max_ulp);
		snprintf(ratio, sizeof ratio, "%.3g", fmax(r->m.max_ratio, r->m64.max_ratio));
	}
	char note[96] = "";
	if (numeric && r->m.n_unbounded)
		snprintf(note, sizeof note, "  (no bound at %lld of %lld)", (long long)r->m.n_unbounded,
			 (long long)r->m.n_checked);
	printf("%-16s %-8s %-9s %-8s %-17s %12s %12s%s%s\n", r->graph, r->backend, r->sched,
	       r->output, vf_verdict_name(r->verdict), ulp, ratio, r->sampled ? "  (sampled)" : "",
	       note);
	if (r->reason && *r->reason && r->verdict != V_PASS) {
		int len = (int)strcspn(r->reason, "\n");
		printf("    %.*s%s\n", len > 300 ? 300 : len, r->reason,
		       len > 300 || r->reason[len] ? " ..." : "");
	}
	fflush(stdout);
}

/* Applies --schedule FILE to g; the name of g's own schedule in *first. */
static int own_schedule(const Args *a, Graph *g, const char **first)
{
	bool given;
	*first = g->has_schedule ? "graph" : "default";
	int rc = cli_schedule(a, "check", g, &given);
	if (given)
		*first = "file";
	return rc;
}

static int worst(int a, int b)
{
	return a > b ? a : b;
}

/* With --external and --schedule CLAIM: the claim (g's directives replaced by CLAIM's),
 * every reduction whose order CLAIM does not state `order : any`. */
static int claim_of(const Args *a, Graph *g, VfSched *claim)
{
	bool given;
	int code = cli_schedule(a, "check", g, &given);
	Diag d = {0};
	if (code)
		return code;
	if (sched_build(g, &claim->s, &d))
		return cli_report(&d);
	vf_ext_claim(g, &claim->s, true);
	snprintf(claim->name, sizeof claim->name, "claim");
	claim->text = sched_text(g, &claim->s);
	return 0;
}

/* Checks one graph file; returns its exit code. */
static int check_one(const Args *a, const char *path, const Backend **bs, int nb, int nsched,
		     VfOpts *o)
{
	int code = 0, failed = 0, ns = 0;
	Graph *g = cli_load_graph(a, "check", path, &code);
	if (!g)
		return code;
	VfSched *scheds = NULL, claim = {.name = ""};
	HostTensor *inputs = calloc((size_t)ir_ninputs(g) + 1, sizeof *inputs);
	Diag d = {0};
	const char *first = g->has_schedule ? "graph" : "default";
	bool ext_claim = cli_has(a, "external") && cli_has(a, "schedule");
	if (!ext_claim && (code = own_schedule(a, g, &first)))
		goto out;
	if (vf_sched_list(g, first, o->seed, nsched, &scheds, &ns, &d)) {
		code = cli_report(&d);
		goto out;
	}
	o->claim = NULL;
	if (ext_claim) {   /* assay's own backends keep the graph's schedule */
		if ((code = claim_of(a, g, &claim)))
			goto out;
		o->claim = &claim;
	}
	if ((code = cli_load_inputs(a, "check", g, inputs)))
		goto out;
	if (vf_check(g, inputs, bs, nb, scheds, ns, o, &failed, &d))
		code = cli_report(&d);
	else
		code = failed ? 1 : 0;
	cli_free_inputs(g, inputs);
out:
	free(inputs);
	vf_sched_list_free(scheds, ns);
	sched_free(&claim.s);
	free(claim.text);
	o->claim = NULL;
	ir_free(g);
	return code;
}


/* --invariance SIZE=V,... and --invariance-schedule V=FILE into io. 0, or 2. */
static int invariance_opts(const Args *a, VfInvOpts *io, char *size, size_t n)
{
	const char *spec = cli_get(a, "invariance");
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec || (size_t)(eq - spec) >= n) {
		fprintf(stderr, "assay check: --invariance expects SIZE=V,... (smaller batches), got "
			"'%s'\n", spec);
		return 2;
	}
	memcpy(size, spec, (size_t)(eq - spec));
	size[eq - spec] = 0;
	io->size = size;
	for (const char *p = eq + 1; *p;) {
		char *end;
		long long v = strtoll(p, &end, 10);
		if (end == p || v <= 0 || v > INT32_MAX || (*end && *end != ',') ||
		    io->nvalues == VF_INV_MAXV) {
			fprintf(stderr, "assay check: --invariance expects SIZE=V,... with at most %d "
				"positive values, got '%s'\n", VF_INV_MAXV, spec);
			return 2;
		}
		io->values[io->nvalues++] = v;
		p = *end ? end + 1 : end;
	}
	if (!io->nvalues) {
		fprintf(stderr, "assay check: --invariance %s: no value\n", spec);
		return 2;
	}
	for (int i = 0; i < cli_count(a, "invariance-schedule"); i++) {
		const char *t = cli_get_at(a, "invariance-schedule", i), *e = strchr(t, '=');
		long long v = e ? strtoll(t, NULL, 10) : -1;
		int k = 0;
		while (k < io->nvalues && io->values[k] != v)
			k++;
		if (!e || k == io->nvalues) {
			fprintf(stderr, "assay check: --invariance-schedule expects V=FILE with V one of "
				"--invariance's values, got '%s'\n", t);
			return 2;
		}
		io->sched_file[k] = e + 1;
		io->sched_at[k] = cli_read_text("check", "--invariance-schedule", e + 1, NULL);
		if (!io->sched_at[k])
			return 2;
	}
	return 0;
}

/* `check --invariance`: each graph, then the summary with the rate per directive kind. */
static int invariance(const Args *a, const Backend **bs, int nb, int nsched, VfOpts *o)
{
	FILE *sf = cli_has(a, "json") ? stderr : stdout;   /* stdout holds only records then */
	VfInvOpts io = {.nsampled = nsched};
	char size[128];
	SizeOverride ov[CLI_MAXREP];
	char names[CLI_MAXREP][128];
	int nov, code;
	if ((code = invariance_opts(a, &io, size, sizeof size)) ||
	    (code = cli_sizes(a, "check", ov, names, &nov)))
		goto out;
	if (cli_has(a, "schedule")) {
		io.schedule_file = cli_get(a, "schedule");
		if (!(io.schedule = cli_read_text("check", "--schedule", io.schedule_file, NULL))) {
			code = 2;
			goto out;
		}
	}
	VfInvSummary all = {0};
	for (int i = 0; i < a->npos && code < 2; i++) {
		VfInvSummary s;
		Diag d = {0};
		if (vf_invariance(a->pos[i], ov, nov, bs, nb, &io, o, &s, &d)) {
			code = cli_report(&d);
			break;
		}
		all.compared += s.compared;
		all.noninvariant += s.noninvariant;
		all.failed += s.failed;
		for (int k = 0; k < VF_INV_KINDS; k++) {
			all.kind_results[k] += s.kind_results[k];
			all.kind_noninv[k] += s.kind_noninv[k];
		}
	}
	if (code < 2) {
		fprintf(sf, "invariance over %s: %lld comparisons, %lld not bitwise identical (%lld "
			"under the same schedule: failures)\nnon-invariant results per directive:",
			io.size, (long long)all.compared, (long long)all.noninvariant,
			(long long)all.failed);
		for (int k = 0; k < VF_INV_KINDS; k++)
			if (all.kind_results[k])
				fprintf(sf, " %s %lld/%lld", vf_inv_kind_name(k),
					(long long)all.kind_noninv[k], (long long)all.kind_results[k]);
		fprintf(sf, "\n");
		if (all.compared == 0) {
			fprintf(stderr, "assay check: --invariance compared nothing (no batched output "
				"ran on both sizes)\n");
			code = 2;
		} else if (all.failed && code == 0)
			code = 1;
	}
out:
	for (int k = 0; k < io.nvalues; k++)
		free((char *)io.sched_at[k]);
	free((char *)io.schedule);
	return code;
}

static int options(const Args *a, VfOpts *o, long long *nsched)
{
	long long seed, threads, max_exact, nsample, axis, k;
	double timeout, ctimeout;
	if (cli_int(a, "check", "agree-axis", -1, -IR_MAXRANK, IR_MAXRANK - 1, &axis) ||
	    cli_int(a, "check", "agree-k", 0, 1, 1 << 20, &k) ||
	    cli_int(a, "check", "schedules", 0, 0, 10000, nsched) ||
	    cli_int(a, "check", "seed", 1, 0, LLONG_MAX, &seed) ||
	    cli_int(a, "check", "threads", 1, 1, 1024, &threads) ||
	    cli_int(a, "check", "max-exact", 1 << 20, 1, LLONG_MAX, &max_exact) ||
	    cli_int(a, "check", "sample", 4096, 2, LLONG_MAX, &nsample) ||
	    cli_double(a, "check", "timeout", 20, 0, FZ_MAX_TIMEOUT, &timeout) ||
	    cli_double(a, "check", "compile-timeout", 120, 0, FZ_MAX_TIMEOUT, &ctimeout))
		return 2;
	const char *dist = cli_get(a, "inputs");
	if (dist && dist_parse(dist) < 0) {
		fprintf(stderr, "assay check: --inputs expects %s, got '%s'\n", dist_list(), dist);
		return 2;
	}
	o->agree_axis = (int)axis;
	o->agree_axis_set = true;
	o->agree_k = (int)k;
	o->w.timeout_s = timeout;
	o->w.compile_timeout_s = ctimeout;
	if (cli_has(a, "timeout"))
		o->oracle_timeout_s = timeout;   /* a limit of the oracle is exit 2, naming the graph */
	o->w.threads = (int)threads;
	o->threads = (int)threads;
	o->max_exact = max_exact;
	o->nsample = nsample;
	o->seed = (uint64_t)seed;
	o->dist = dist ? dist : "normal";
	o->out_dir = cli_get(a, "o");
	return 0;
}

static int out_dir(const char *dir, bool force)
{
	static const char *const files[] = {"results.jsonl"};
	return cli_out_dir("check", dir, force, files, (int)ARRAY_LEN(files));
}

int cmd_check(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "check", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "check", "G.tg... [--backends LIST] [--schedules N] [--seed S] [-o DIR]",
			  "Runs each graph on every selected backend under its own schedule and N sampled\n"
			  "ones, each (backend, schedule) in an isolated worker process; diffs every output\n"
			  "with the exact oracle and scores it against its error budget. Exit 0: all pass\n"
			  "(or unsupported, as long as something was tested); 1: a failing verdict; 2: bad\n"
			  "input, or nothing tested (no backend available, every result unsupported);\n"
			  "3: internal error. -o refuses a directory that is not empty unless --force.",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	if (a.npos < 1) {
		fprintf(stderr, "assay check: expects one or more graph files (see 'assay check --help')\n");
		return 2;
	}
	const Backend *bs[16];
	int nb;
	long long nsched;
	Sink sink = {.json = cli_has(&a, "json")};
	VfOpts o = {.sink = row, .ctx = &sink};
	Diag d = {0};
	char why[1024];
	nb = 0;
	const char *ext = cli_get(&a, "external");
	if (ext) {   /* the external kernel first; assay's own only where --backends names them */
		if (!(bs[0] = vf_external(cli_get(&a, "name"), ext, &d)))
			return cli_report(&d);
		nb = 1;
	} else if (cli_has(&a, "name")) {
		fprintf(stderr, "assay check: --name names an --external kernel; there is none\n");
		return 2;
	}
	if ((!ext || cli_has(&a, "backends")) && (code = cli_backends(&a, "check", bs + nb, &nb)))
		return code;
	if (ext && cli_has(&a, "backends"))
		nb++;
	if ((code = options(&a, &o, &nsched)))
		return code;
	if (cli_has(&a, "backends") && cli_unavailable(bs, nb, why, sizeof why) == nb) {
		fprintf(stderr, "assay check: nothing was tested: every backend is unavailable (%s)\n",
			why);
		return 2;
	}
	if (vf_opts_env(&o, &d))
		return cli_report(&d);
	if (o.out_dir && (code = out_dir(o.out_dir, cli_has(&a, "force"))))
		return code;
	if (o.out_dir && vf_provenance_write(o.out_dir, "check", argc, argv, bs, nb, o.seed, &d))
		return cli_report(&d);
	if (!sink.json)
		printf("%-16s %-8s %-9s %-8s %-17s %12s %12s\n", "graph", "backend", "schedule",
		       "output", "verdict", "max_ulp", "err/budget");
	o.w.pool = vf_pool_new();   /* one worker per backend for every graph and schedule */
	if (cli_has(&a, "invariance")) {
		code = invariance(&a, bs, nb, (int)nsched, &o);
		vf_pool_free(o.w.pool);
		return code;
	}
	for (int i = 0; i < a.npos && code < 3; i++)
		code = worst(code, check_one(&a, a.pos[i], bs, nb, (int)nsched, &o));
	vf_pool_free(o.w.pool);
	if (!sink.json)
		printf("%d results: %d pass, %d failing, %d unsupported\n", sink.n, sink.pass,
		       sink.fail, sink.unsupported);
	if (!sink.json && sink.flaky)
		printf("%d flaky: the first run crashed or timed out, a re-run alone passed (not "
		       "failures)\n", sink.flaky);
	/* like pytest's exit 5: a run that judged no kernel is not a success */
	if (code == 0 && sink.n == sink.unsupported) {
		fprintf(stderr, "assay check: nothing was tested: every result is unsupported (%s)\n",
			sink.why);
		code = 2;
	}
	return code;
}
