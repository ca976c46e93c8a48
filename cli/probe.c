/* cli/probe.c: `assay probe`: reveals the summation tree a backend's derived kernel really
 * uses, FPRev-style (docs/numerics.md 6a; spec/cli.md v2 "probe"; docs/probe.md), and
 * compares it with the tree its schedule declares (verify/probe.c does the probing).
 *
 * Two forms: `assay probe [--n N] [--schedule FILE]` probes a row sum, s[p] = sum(k:N)
 * x[p, k] in f32, under the schedule given (split, order, accum of s); `assay probe G.tg
 * --def D` probes definition D of a graph (a linear sum: verify/probe.c says which) as G's
 * schedule block (or --schedule FILE) computes it: the probe graph keeps D's name, its
 * reduction indices and their extents, and D's accum, order and split directives. Exit 0
 * when the two trees are the same, 1 when they differ (the kernel sums in an order its
 * schedule does not declare), 2 for bad input, 3 when the backend or the environment
 * failed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../oracles/oracles.h"
#include "../verify/verify.h"

static const FlagSpec flags[] = {
	{"backend", true, false, "B        the backend whose kernel is probed (default c)"},
	{"n", true, false, "N        summands of the row sum (2..512, default 16)"},
	{"def", true, false, "D        with a graph: the definition probed (a linear sum)"},
	{"schedule", true, false, "FILE     the schedule (of s; with a graph, of the graph)"},
	{"size", true, true, "NAME=V   with a graph: override a size"},
	{"json", false, false, "         one JSON object on stdout"},
	{"help", false, false, "         this help"},
};

/* The probe graph of the request: the row sum's, or that of --def D of graph G. */
static Graph *probe_graph(const Args *a, int *code)
{
	Diag d = {0};
	const char *dn = cli_get(a, "def");
	if (a->npos == 0) {
		if (dn) {
			fprintf(stderr, "assay probe: --def %s needs a graph (assay probe G.tg --def D)\n", dn);
			*code = 2;
			return NULL;
		}
		long long n;
		if (cli_int(a, "probe", "n", 16, 2, 512, &n)) {
			*code = 2;
			return NULL;
		}
		char src[256];
		snprintf(src, sizeof src, "graph probe\nsize P = %lld, N = %lld\ninput x : f32[P, N]\n"
			 "s[p:P] = sum(k:N) x[p, k]\noutput s : f32\n", n * (n - 1) / 2, n);
		Graph *g = ir_parse(src, strlen(src), "probe.tg", NULL, 0, &d);
		IR_ASSERT(g);
		bool given = false;
		if ((*code = cli_schedule(a, "probe", g, &given))) {
			ir_free(g);
			return NULL;
		}
		return g;
	}
	if (a->npos > 1 || !dn || cli_get(a, "n")) {
		fprintf(stderr, "assay probe: %s (see 'assay probe --help')\n",
			a->npos > 1 ? "takes one graph" : !dn ? "a graph needs --def D, the sum probed" :
			"--n is the row sum's; a graph's sum has its own extents");
		*code = 2;
		return NULL;
	}
	Graph *g = cli_load_graph(a, "probe", a->pos[0], code);
	if (!g)
		return NULL;
	bool given = false;
	if ((*code = cli_schedule(a, "probe", g, &given))) {
		ir_free(g);
		return NULL;
	}
	int t = ir_find_tensor(g, dn);
	if (t < 0 || g->tensors[t].kind != TK_DEF) {
		fprintf(stderr, "assay probe: --def %s: no definition of that name in %s\n", dn,
			a->pos[0]);
		ir_free(g);
		*code = 2;
		return NULL;
	}
	Schedule s;
	if (sched_build(g, &s, &d)) {
		ir_free(g);
		*code = cli_report(&d);
		return NULL;
	}
	int def = g->tensors[t].def, leaves;
	char why[256];
	Graph *pg = NULL;
	if (vf_probe_eligible(g, &s, def, 512, &leaves, why, sizeof why)) {
		fprintf(stderr, "assay probe: --def %s: cannot be probed: %s\n", dn, why);
		*code = 2;
	} else if (!(pg = vf_probe_graph(g, &s, def, &d))) {
		*code = cli_report(&d);
	}
	sched_free(&s);
	ir_free(g);
	return pg;
}

int cmd_probe(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "probe", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "probe", "[--backend B] [--n N | G.tg --def D] [--schedule FILE] [--json]",
			  "Reveals the summation tree of the backend's derived row sum (or of sum D\n"
			  "of a graph, under its schedule) FPRev-style (+M and -M at two places,\n"
			  "ones elsewhere: N - sum counts the leaves under their lowest common\n"
			  "ancestor) and compares it with the tree its schedule declares (the\n"
			  "emulating interpreter's order). Exit 1 when they differ.",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	const char *bn = cli_get(&a, "backend") ? cli_get(&a, "backend") : "c";
	const Backend *b = be_find(bn);
	if (!b) {
		fprintf(stderr, "assay probe: --backend %s: no such backend\n", bn);
		return 2;
	}
	Graph *pg = probe_graph(&a, &code);
	if (!pg)
		return code;
	Diag d = {0};
	WorkerOpts wo = {.threads = 1, .timeout_s = 60, .compile_timeout_s = 120};
	const char *envf = getenv("ASSAY_FAULT");   /* seeded faults reach the kernel, as in check */
	if (envf && *envf && vf_faults_parse(envf, &wo.faults, &d)) {
		fprintf(stderr, "assay probe: ASSAY_FAULT: %s\n", d.msg ? d.msg : "");
		diag_clear(&d);
		ir_free(pg);
		return 2;
	}
	Schedule s;
	if (sched_build(pg, &s, &d)) {
		ir_free(pg);
		return cli_report(&d);
	}
	char why[512];
	int leaves;
	if (vf_probe_eligible(pg, &s, 0, 512, &leaves, why, sizeof why)) {
		fprintf(stderr, "assay probe: the sum cannot be probed: %s\n", why);
		sched_free(&s);
		ir_free(pg);
		return 2;
	}
	sched_free(&s);
	if (vf_available(NULL, b, why, sizeof why)) {
		fprintf(stderr, "assay probe: backend %s is unavailable here: %s\n", bn, why);
		ir_free(pg);
		return 3;
	}
	VfProbe pr;
	if (vf_probe_run(pg, b, &wo, &pr, &d)) {
		ir_free(pg);
		return cli_report(&d);
	}
	if (!pr.ran) {
		fprintf(stderr, "assay probe: the %s kernel did not run: %s\n", bn, pr.why);
		vf_probe_free(&pr);
		ir_free(pg);
		return 3;
	}
	const char *dn = pg->tensors[pg->defs[0].out[0]].name;
	const char *stext = pr.sched_text ? pr.sched_text : "";
	if (cli_has(&a, "json")) {
		printf("{\"backend\":\"%s\",\"def\":\"%s\",\"n\":%d,\"schedule\":\"", bn, dn, pr.leaves);
		for (const char *c = stext; *c; c++)
			printf(*c == '\n' ? "\\n" : *c == '"' ? "\\\"" : "%c", *c);
		printf("\",\"kernel_tree\":\"%s\",\"declared_tree\":\"%s\",\"kernel_fanin\":%d,"
		       "\"kernel_depth\":%d,\"same\":%s}\n", pr.kernel_tree ? pr.kernel_tree : "",
		       pr.declared_tree ? pr.declared_tree : "", pr.kernel_tree ? pr.fanin : 0,
		       pr.kernel_tree ? pr.depth : 0, pr.same ? "true" : "false");
	} else {
		printf("probe of the %s backend's sum %s of %d f32 terms, accumulated in %s "
		       "(FPRev: +-2^%d at two places, ones elsewhere; %d pairs in one run)\n"
		       "schedule: %s", bn, dn, pr.leaves, dt_info(pr.acc)->name, pr.m_exp,
		       pr.leaves * (pr.leaves - 1) / 2, *stext ? stext : "the default\n");
		printf("kernel's tree:   %s\n", pr.kernel_tree ? pr.kernel_tree :
		       "(not a tree of sums: the counts fit none)");
		if (pr.kernel_tree)
			printf("                 depth %d, widest node %d terms%s\n", pr.depth, pr.fanin,
			       pr.fanin > 2 ? " (a fused multi-way sum)" : "");
		printf("declared tree:   %s\n", pr.declared_tree ? pr.declared_tree : "(not a tree)");
		printf("%s\n", pr.same ? "the kernel sums in the order its schedule declares" :
		       "MISMATCH: the kernel sums in an order its schedule does not declare");
	}
	bool same = pr.same;
	vf_probe_free(&pr);
	ir_free(pg);
	return same ? 0 : 1;
}
