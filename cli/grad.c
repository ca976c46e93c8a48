/* cli/grad.c: `assay grad G.tg [--wrt a,b] -o G_grad.tg` writes the gradient graph
 * (compiler/sched/grad.c; spec/cli.md v2 "Gradient graphs"); `assay grad --verify G.tg` checks
 * the derivation itself against the oracle's exact directional derivatives
 * (interp/gradcheck.c; docs/grad.md) and exits 1 naming the first wrong element. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static const FlagSpec flags[] = {
	{"size", true, true, "N=V      override a size (repeatable)"},
	{"wrt", true, false, "A,B      the inputs to derive against (default: every floating-point input)"},
	{"o", true, false, "FILE     write the gradient graph to FILE (default: stdout)"},
	{"verify", false, false, "         check the derivation: <grad, t> against the exact directional derivative"},
	{"pairs", true, false, "N        --verify: random (cotangent, direction) pairs (default 20)"},
	{"seed", true, false, "S        --verify: seed of the inputs, cotangents and directions (default 1)"},
	{"threads", true, false, "N        --verify: the oracle's threads (default 1)"},
	{"json", false, false, "         --verify: machine-readable output on stdout"},
	{"fault", true, false, "LIST     seed derivation faults (tests and campaigns): max-both, bcast-nosum,\n"
	 "                  view-transpose, scatter-one or div-denom"},
	{"help", false, false, "         this help"},
};

/* --wrt's names, split at commas into names (n of them, at most max); 0 or 2. */
static int wrt_list(const char *s, char *buf, size_t n, const char **names, int max, int *cnt)
{
	*cnt = 0;
	if (!s)
		return 0;
	snprintf(buf, n, "%s", s);
	for (char *p = buf, *q; p; p = q) {
		q = strchr(p, ',');
		if (q)
			*q++ = 0;
		if (!*p || *cnt == max) {
			fprintf(stderr, "assay grad: --wrt expects input names separated by commas, got '%s'\n", s);
			return 2;
		}
		names[(*cnt)++] = p;
	}
	return 0;
}

static int verify(const Args *a, const Graph *g, const GradOpts *go)
{
	long long pairs, seed, threads;
	if (cli_int(a, "grad", "pairs", 20, 1, 1000000, &pairs) ||
	    cli_int(a, "grad", "seed", 1, 0, LLONG_MAX, &seed) ||
	    cli_int(a, "grad", "threads", 1, 1, 1024, &threads))
		return 2;
	MpGradOpts o = {.pairs = (int)pairs, .seed = (uint64_t)seed};
	o.mp.threads = (int)threads;
	MpGradResult r;
	Diag d = {0};
	if (mp_grad_verify(g, go, &o, &r, &d))
		return cli_report(&d);
	if (cli_has(a, "json"))
		printf("{\"graph\": \"%s\", \"pairs\": %d, \"undefined\": %d, \"ok\": %s, "
		       "\"worst_rel\": %.3g%s%s%s}\n",
		       g->name ? g->name : "", r.pairs_done, r.undefined, r.ok ? "true" : "false",
		       r.worst,
		       r.ok ? "" : ", \"first\": \"", r.ok ? "" : r.what, r.ok ? "" : "\"");
	else if (r.ok && !r.undefined)
		printf("%s: the derivation agrees with the exact directional derivative for %d "
		       "pairs (largest relative difference %.3g)\n", g->file, r.pairs_done, r.worst);
	else if (r.ok)
		printf("%s: the derivation agrees with the exact directional derivative for %d "
		       "pairs (largest relative difference %.3g); %d pairs not judged (no finite "
		       "derivative there)\n", g->file, r.pairs_done - r.undefined, r.worst,
		       r.undefined);
	else
		printf("%s: the derivation is wrong (pair %d): %s\n", g->file, r.pair, r.what);
	return r.ok ? 0 : 1;
}

int cmd_grad(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "grad", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "grad", "G.tg [--wrt a,b] [-o G_grad.tg] | --verify G.tg [--pairs N]",
			  "Derives the gradient graph of G (reverse mode over its comprehensions): inputs\n"
			  "G's plus a cotangent d_y per output, outputs grad_a per input derived.\n"
			  "--verify checks the derivation against the oracle's exact directional\n"
			  "derivatives instead (docs/grad.md).",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	if (a.npos != 1) {
		fprintf(stderr, "assay grad: expects exactly one graph file (see 'assay grad --help')\n");
		return 2;
	}
	char buf[4096];
	const char *names[64];
	GradOpts go = {0};
	if ((code = wrt_list(cli_get(&a, "wrt"), buf, sizeof buf, names, 64, &go.nwrt)))
		return code;
	go.wrt = names;
	for (const char *p = cli_get(&a, "fault"); p && *p;) {   /* a comma list */
		char one[64];
		size_t len = strcspn(p, ",");
		snprintf(one, sizeof one, "%.*s", (int)(len < 63 ? len : 63), p);
		unsigned f = gr_fault_parse(one);
		if (!f) {
			fprintf(stderr, "assay grad: --fault: unknown fault '%s'\n", one);
			return 2;
		}
		go.faults |= f;
		p += len + (p[len] == ',');
	}
	Graph *g = cli_load_graph(&a, "grad", a.pos[0], &code);
	if (!g)
		return code;
	if (cli_has(&a, "verify")) {
		code = verify(&a, g, &go);
		ir_free(g);
		return code;
	}
	Diag d = {0};
	Graph *gg = gr_derive(g, &go, &d);
	ir_free(g);
	if (!gg)
		return cli_report(&d);
	char *text = ir_print(gg);
	ir_free(gg);
	const char *out = cli_get(&a, "o");
	FILE *f = out ? fopen(out, "w") : stdout;
	if (!f) {
		int e = errno;
		diag_io(&d, e, "assay grad: cannot write '%s': %s", out, strerror(e));
		free(text);
		return cli_report(&d);
	}
	bool ok = fputs(text, f) >= 0;
	int e = errno;
	if (out)
		ok = (fclose(f) == 0) && ok;
	free(text);
	if (!ok) {
		diag_io(&d, e, "assay grad: cannot write '%s': %s", out ? out : "stdout", strerror(e));
		return cli_report(&d);
	}
	return 0;
}
