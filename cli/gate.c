/* cli/gate.c: `assay gate DIR --policy FILE [--baseline DIR]`: decides a release. Every
 * gate of the policy (docs/policy.md) is evaluated over DIR's records and printed with its
 * figure, threshold and result (and the baseline's figure with --baseline, where a figure
 * that got worse also fails).
 *
 * Exit codes: 0 when every gate holds, 1 when any fails, 2 for the user's errors (a policy
 * with an error at file:line:col, a run directory that cannot be read), 3 internal.
 */
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../reports/reports.h"

static const FlagSpec flags[] = {
	{"policy", true, false, "FILE     the policy: one 'gate SCOPE METRIC OP THRESHOLD' per line"},
	{"baseline", true, false, "DIR      a baseline run: also fail a gate whose figure is worse than in DIR"},
	{"skip-torn", false, false, "         leave out a torn last record (a run killed while writing)"},
	{"help", false, false, "         this help"},
};

static int load(const char *dir, bool skip_torn, RpRun *run)
{
	RpLoadOpts lo = {skip_torn};
	Diag d = {0};
	if (rp_load(dir, &lo, run, &d)) {
		fprintf(stderr, "assay gate: ");
		return cli_report(&d);
	}
	return 0;
}

int cmd_gate(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "gate", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "gate", "DIR --policy FILE [--baseline DIR]",
			  "Evaluates every gate of a release policy over the results in DIR and prints\n"
			  "each gate's figure, threshold and result. Exit 0: every gate holds; 1: a gate\n"
			  "fails (or got worse than in the baseline run); 2: bad input.",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	if (a.npos != 1 || !cli_get(&a, "policy")) {
		fprintf(stderr, "assay gate: expects one directory and --policy FILE (see 'assay gate "
			"--help')\n");
		return 2;
	}
	RpPolicy p;
	Diag d = {0};
	if (rp_policy_load(cli_get(&a, "policy"), &p, &d)) {
		/* a parse error starts with file:line:col; a file that cannot be read does not */
		if (strncmp(d.msg, cli_get(&a, "policy"), strlen(cli_get(&a, "policy"))) != 0)
			fprintf(stderr, "assay gate: ");
		return cli_report(&d);
	}
	RpRun run, base;
	bool skip = cli_has(&a, "skip-torn"), has_base = cli_get(&a, "baseline") != NULL;
	if ((code = load(a.pos[0], skip, &run)))
		goto out_policy;
	if (has_base && (code = load(cli_get(&a, "baseline"), skip, &base)))
		goto out_run;
	printf("policy %s over %s (%d results)%s%s\n", p.file, run.dir, run.nrecs,
	       has_base ? ", baseline " : "", has_base ? base.dir : "");
	code = rp_gate_run(&p, &run, has_base ? &base : NULL, stdout) ? 1 : 0;
	if (has_base)
		rp_free(&base);
out_run:
	rp_free(&run);
out_policy:
	rp_policy_free(&p);
	return code;
}
