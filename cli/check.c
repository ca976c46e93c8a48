/* cli/check.c: `assay check G.tg...`: runs each graph on every selected backend under its
 * own schedule (the graph's schedule block, or --schedule FILE, or the default) plus N
 * sampled schedules, diffs each output with the exact oracle, scores it against its error
 * budget and prints one row per (backend, schedule, output) (verify/ does the work).
 *
 * Exit codes (spec/cli.md): 0 when every verdict is pass or unsupported, 1 when any other
 * verdict occurred, 2 for the user's errors (a graph or schedule that does not parse, a
 * bad flag, a missing file), 3 when the toolkit failed (the oracle or a budget could not
 * be computed, a worker could not be started). The worst code wins: 3 > 2 > 1 > 0. An
 * oracle stopped by --timeout or its memory cap is exit 2 (the message names the graph).
 * Environment: ASSAY_FAULT and ASSAY_TEST_* (verify.h) break things on purpose.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "../verify/verify.h"

static const FlagSpec flags[] = {
	{"backends", true, false, "LIST     comma list of backends (default: every available one)"},
	{"schedule", true, false, "FILE     schedule directives replacing the graph's schedule block"},
	{"schedules", true, false, "N        sampled schedules besides the graph's own (default 0)"},
	{"seed", true, false, "S        seed of the inputs, sampled schedules and elements (default 1)"},
	{"inputs", true, false, "DIST     normal | uniform | adversarial (default normal)"},
	{"specials", false, false, "         adversarial inputs also hold inf and NaN"},
	{"input", true, true, "NAME=F   read input NAME from the .npy file F (repeatable)"},
	{"size", true, true, "N=V      override a size (repeatable)"},
	{"timeout", true, false, "S        seconds a worker may run (default 20); when given, the oracle's too"},
	{"threads", true, false, "N        threads of the oracle and of the kernels (default 1)"},
	{"max-exact", true, false, "N        outputs larger than N elements are sampled (default 1048576)"},
	{"sample", true, false, "N        elements checked exactly in a sampled output (default 4096)"},
	{"agree-axis", true, false, "A        axis of the argmax / top-k agreement figures (default -1: the last)"},
	{"agree-k", true, false, "K        k of the top-k agreement figure (default min(5, extent))"},
	{"json", false, false, "         one JSON record per line on stdout instead of the table"},
	{"o", true, false, "DIR      keep kernels, schedules, inputs, outputs and DIR/results.jsonl"},
	{"help", false, false, "         this help"},
};

typedef struct {
	bool json;
	int n, pass, fail, unsupported;
} Sink;

static void row(void *ctx, const VfRecord *r)
{
	Sink *s = ctx;
	s->n++;
	s->pass += r->verdict == V_PASS;
	s->unsupported += r->verdict == V_UNSUPPORTED;
	s->fail += vf_verdict_fails(r->verdict);
	if (s->json) {
		vf_record_json(stdout, r);
		fflush(stdout);
		return;
	}
	bool numeric = r->verdict == V_PASS || r->verdict == V_OVER_BUDGET ||
		       r->verdict == V_SPECIAL_MISMATCH;
	char ulp[32] = "-", ratio[32] = "-";
	if (numeric) {
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

static int pick_backends(const Args *a, const Backend **out, int *n)
{
	*n = 0;
	const char *list = cli_get(a, "backends");
	if (!list) {
		for (int k = 0; be_at(k) && *n < 16; k++) {
			char why[256];
			if (be_at(k)->available(why, sizeof why) == 0)
				out[(*n)++] = be_at(k);
		}
		if (*n == 0) {
			fprintf(stderr, "assay check: no backend is available here (see 'assay backends')\n");
			return 2;
		}
		return 0;
	}
	for (const char *p = list; *p && *n < 16;) {
		size_t len = strcspn(p, ",");
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)len, p);
		const Backend *b = be_find(name);
		if (!b) {
			fprintf(stderr, "assay check: --backends: unknown backend '%s'\n", name);
			return 2;
		}
		out[(*n)++] = b;
		p += len + (p[len] == ',');
	}
	return 0;
}

static char *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096;
	char *buf = malloc(cap);
	*n = 0;
	for (size_t k; buf && (k = fread(buf + *n, 1, cap - *n - 1, f)) > 0;) {
		*n += k;
		if (*n + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	if (buf)
		buf[*n] = 0;
	return buf;
}

/* Applies --schedule FILE to g; the name of g's own schedule in *first. */
static int own_schedule(const Args *a, Graph *g, const char **first)
{
	const char *path = cli_get(a, "schedule");
	*first = g->has_schedule ? "graph" : "default";
	if (!path)
		return 0;
	size_t n;
	char *src = read_all(path, &n);
	if (!src) {
		fprintf(stderr, "assay check: cannot read schedule '%s': %s\n", path, strerror(errno));
		return 2;
	}
	Diag d = {0};
	int rc = ir_parse_schedule(g, src, n, path, &d);
	free(src);
	*first = "file";
	return rc ? cli_report(&d) : 0;
}

static int worst(int a, int b)
{
	return a > b ? a : b;
}

/* Checks one graph file; returns its exit code. */
static int check_one(const Args *a, const char *path, const Backend **bs, int nb, int nsched,
		     VfOpts *o)
{
	int code = 0, failed = 0, ns = 0;
	Graph *g = cli_load_graph(a, "check", path, &code);
	if (!g)
		return code;
	VfSched *scheds = NULL;
	HostTensor *inputs = calloc((size_t)ir_ninputs(g) + 1, sizeof *inputs);
	Diag d = {0};
	const char *first;
	if ((code = own_schedule(a, g, &first)))
		goto out;
	if (vf_sched_list(g, first, o->seed, nsched, &scheds, &ns, &d)) {
		code = cli_report(&d);
		goto out;
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
	ir_free(g);
	return code;
}

static int options(const Args *a, VfOpts *o, long long *nsched)
{
	long long seed, threads, max_exact, nsample, axis, k;
	if (cli_int(a, "check", "agree-axis", -1, &axis) || cli_int(a, "check", "agree-k", 0, &k))
		return 2;
	if (axis < -IR_MAXRANK || axis >= IR_MAXRANK || k < 0 || k > 1 << 20) {
		fprintf(stderr, "assay check: --agree-axis must be in -%d..%d and --agree-k in 1..%d\n",
			IR_MAXRANK, IR_MAXRANK - 1, 1 << 20);
		return 2;
	}
	o->agree_axis = (int)axis;
	o->agree_axis_set = true;
	o->agree_k = (int)k;
	if (cli_int(a, "check", "schedules", 0, nsched) || cli_int(a, "check", "seed", 1, &seed) ||
	    cli_int(a, "check", "threads", 1, &threads) ||
	    cli_int(a, "check", "max-exact", 1 << 20, &max_exact) ||
	    cli_int(a, "check", "sample", 4096, &nsample))
		return 2;
	if (*nsched < 0 || *nsched > 10000 || threads < 1 || threads > 1024 || max_exact < 1 ||
	    nsample < 2) {
		fprintf(stderr, "assay check: --schedules must be in 0..10000, --threads in 1..1024, "
			"--max-exact >= 1 and --sample >= 2\n");
		return 2;
	}
	double timeout = 20;
	const char *t = cli_get(a, "timeout");
	if (t) {
		char *end;
		timeout = strtod(t, &end);
		if (*end || !(timeout > 0) || timeout > 86400) {
			fprintf(stderr, "assay check: --timeout expects seconds in (0, 86400], got '%s'\n", t);
			return 2;
		}
		o->oracle_timeout_s = timeout;   /* a limit of the oracle is exit 2, naming the graph */
	}
	o->w.timeout_s = timeout;
	o->w.threads = (int)threads;
	o->threads = (int)threads;
	o->max_exact = max_exact;
	o->nsample = nsample;
	o->seed = (uint64_t)seed;
	o->dist = cli_get(a, "inputs") ? cli_get(a, "inputs") : "normal";
	o->out_dir = cli_get(a, "o");
	return 0;
}

/* Creates DIR and starts DIR/results.jsonl afresh. */
static int out_dir(const char *dir)
{
	Diag d = {0};
	if (vf_mkdirs(dir, &d))
		return cli_report(&d);
	char *path = NULL;
	if (asprintf(&path, "%s/results.jsonl", dir) < 0)
		return 3;
	int rc = vf_write_text(path, "", &d) ? cli_report(&d) : 0;
	free(path);
	return rc;
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
			  "(or unsupported); 1: a failing verdict; 2: bad input; 3: internal error.",
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
	Sink sink = {cli_has(&a, "json"), 0, 0, 0, 0};
	VfOpts o = {.sink = row, .ctx = &sink};
	Diag d = {0};
	if ((code = pick_backends(&a, bs, &nb)) || (code = options(&a, &o, &nsched)))
		return code;
	if (vf_opts_env(&o, &d))
		return cli_report(&d);
	if (o.out_dir && (code = out_dir(o.out_dir)))
		return code;
	if (!sink.json)
		printf("%-16s %-8s %-9s %-8s %-17s %12s %12s\n", "graph", "backend", "schedule",
		       "output", "verdict", "max_ulp", "err/budget");
	for (int i = 0; i < a.npos; i++)
		code = worst(code, check_one(&a, a.pos[i], bs, nb, (int)nsched, &o));
	if (!sink.json)
		printf("%d results: %d pass, %d failing, %d unsupported\n", sink.n, sink.pass,
		       sink.fail, sink.unsupported);
	return code;
}
