/* cli/main.c: the `assay` program: dispatches to one file per subcommand. Only main exits;
 * every subcommand returns its exit code (spec/cli.md: 0 success, 1 a verdict, 2 the user's
 * input is wrong, 3 the toolkit failed). */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "../verify/verify.h"

typedef struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} Command;

static const Command commands[] = {
	{"eval", cmd_eval, "evaluate a graph with the MPFR oracle; print or save its outputs"},
	{"emit", cmd_emit, "print the kernel source the compiler derives for a backend"},
	{"check", cmd_check, "run graphs on backends, diff with the oracle, score against budgets"},
	{"fuzz", cmd_fuzz, "run a fuzz campaign: random graphs checked, failures reduced and saved"},
	{"reduce", cmd_reduce, "shrink a failing graph to a minimal one that fails the same way"},
	{"report", cmd_report, "turn a check or campaign directory into HTML, Markdown, JSON, JUnit"},
	{"decode", cmd_decode, "greedy-decode a model on backends; judge every token against the oracle"},
	{"gate", cmd_gate, "decide a release: evaluate a policy's gates over a run"},
	{"merge", cmd_merge, "merge the shards of one campaign into one campaign directory"},
	{"grad", cmd_grad, "derive a gradient graph, or check a derivation against exact derivatives"},
	{"probe", cmd_probe, "reveal a derived kernel's summation tree (FPRev) beside the one its schedule declares"},
	{"backends", cmd_backends, "list the backends, their devices, and why any is unavailable"},
};

/* Subcommands of spec/cli.md that this version does not have yet: named so that a user
 * gets a clear answer rather than "unknown command" (NULL-terminated; none left). */
static const char *planned[] = {NULL};

static void usage(FILE *f)
{
	fprintf(f, "usage: assay [--version] [--help] COMMAND [ARGS]\n\n"
		   "assay checks the kernels a tensor compiler derives against an arbitrary-precision\n"
		   "oracle. Commands:\n");
	for (size_t i = 0; i < ARRAY_LEN(commands); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'assay COMMAND --help' describes a command's flags.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *c = argv[1];
	if (strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0 || strcmp(c, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(c, "--version") == 0) {
		printf("assay %s (commit %s)\n", vf_version(), vf_commit());
		return 0;
	}
	for (size_t i = 0; i < ARRAY_LEN(commands); i++)
		if (strcmp(c, commands[i].name) == 0)
			return commands[i].run(argc - 2, argv + 2);
	for (size_t i = 0; i < ARRAY_LEN(planned) && planned[i]; i++)
		if (strcmp(c, planned[i]) == 0) {
			fprintf(stderr, "assay: '%s' is not in this version of assay (%s); see README.md\n",
				c, vf_version());
			return 2;
		}
	fprintf(stderr, "assay: unknown command '%s' (see 'assay --help')\n", c);
	return 2;
}
