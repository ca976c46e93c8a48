/* cli/emit.c: `assay emit G.tg --backend B [--schedule FILE]`: prints the kernel source the
 * compiler derives for backend B under the graph's schedule (its `schedule` block, or
 * FILE's directives instead, or a sampled one with --sample SEED). --kir prints the kernel
 * IR instead of the source. The output is deterministic. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static const FlagSpec flags[] = {
	{"backend", true, false, "B        the backend (default c)"},
	{"schedule", true, false, "FILE     schedule directives replacing the graph's schedule block"},
	{"sample", true, false, "SEED     use the schedule sampled from SEED (as in --schedules)"},
	{"size", true, true, "N=V      override a size (repeatable)"},
	{"kir", false, false, "         print the kernel IR instead of the source"},
	{"help", false, false, "         this help"},
};

static int load_schedule(const Args *a, Graph *g, Schedule *s)
{
	Diag d = {0};
	bool given;
	if (cli_get(a, "schedule") && cli_get(a, "sample")) {
		fprintf(stderr, "assay emit: --schedule and --sample exclude each other\n");
		return 2;
	}
	int rc = cli_schedule(a, "emit", g, &given);
	if (rc)
		return rc;
	if (cli_get(a, "sample")) {
		long long seed;
		if (cli_int(a, "emit", "sample", 0, 0, LLONG_MAX, &seed))
			return 2;
		sched_sample(g, (uint64_t)seed, s);
		return 0;
	}
	return sched_build(g, s, &d) ? cli_report(&d) : 0;
}

int cmd_emit(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "emit", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "emit", "G.tg [--backend B] [--schedule FILE]",
			  "Prints the kernel source the compiler derives for backend B from the graph\n"
			  "under its schedule (deterministic: the same graph and schedule give the same bytes).",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	if (a.npos != 1) {
		fprintf(stderr, "assay emit: expects exactly one graph file (see 'assay emit --help')\n");
		return 2;
	}
	const char *bname = cli_get(&a, "backend") ? cli_get(&a, "backend") : "c";
	const Backend *b = be_find(bname);
	if (!b) {
		fprintf(stderr, "assay emit: unknown backend '%s'\n", bname);
		return 2;
	}
	Graph *g = cli_load_graph(&a, "emit", a.pos[0], &code);
	if (!g)
		return code;
	Schedule s = {0};
	Kernels *k = NULL;
	char *text = NULL;
	Diag d = {0};
	code = load_schedule(&a, g, &s);
	if (code)
		goto out;
	k = kir_lower(g, &s, NULL, &d);
	if (!k) {
		code = cli_report(&d);
		goto out;
	}
	text = cli_has(&a, "kir") ? kir_print(k) : b->emit(k, &d);
	if (!text) {
		code = cli_report(&d);
		goto out;
	}
	fputs(text, stdout);
out:
	free(text);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
	return code;
}
