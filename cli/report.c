/* cli/report.c: `assay report DIR [-o OUT]`: turns a check or campaign directory into a
 * report (reports/ does the work): OUT/index.html (self-contained, with gnuplot plots),
 * OUT/report.md, OUT/report.json and OUT/junit.xml. OUT defaults to DIR/report.
 *
 * Exit codes: 0 when the report was written (whatever the verdicts in it: `assay gate`
 * decides), 2 for the user's errors (no such directory, no records, a malformed or torn
 * record, an OUT that cannot be written), 3 for internal failures.
 */
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../reports/reports.h"

static const FlagSpec flags[] = {
	{"o", true, false, "OUT      the report's folder (default DIR/report)"},
	{"skip-torn", false, false, "         leave out a torn last record (a run killed while writing)"},
	{"gnuplot", true, false, "PROG     the gnuplot program (default: gnuplot on PATH)"},
	{"help", false, false, "         this help"},
};

int cmd_report(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "report", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "report", "DIR [-o OUT]",
			  "Turns the results of `assay check -o DIR` or `assay fuzz -o DIR` into a report:\n"
			  "OUT/index.html (self-contained, plots drawn by gnuplot), OUT/report.md (a\n"
			  "pull-request comment), OUT/report.json (every figure) and OUT/junit.xml (one\n"
			  "test case per graph x backend x schedule). Exit 0 when written; 2: bad input.",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	if (a.npos != 1) {
		fprintf(stderr, "assay report: expects one directory (see 'assay report --help')\n");
		return 2;
	}
	const char *dir = a.pos[0];
	char *out = NULL;
	if (cli_get(&a, "o"))
		out = strdup(cli_get(&a, "o"));
	else if (asprintf(&out, "%s/report", dir) < 0)
		out = NULL;
	if (!out)
		return 3;
	RpLoadOpts lo = {cli_has(&a, "skip-torn")};
	RpRun run;
	Diag d = {0};
	if (rp_load(dir, &lo, &run, &d)) {
		free(out);
		fprintf(stderr, "assay report: ");
		return cli_report(&d);
	}
	if (run.torn)
		fprintf(stderr, "assay report: warning: left out a torn last record of %s/results.jsonl\n",
			dir);
	RpOpts o = {cli_get(&a, "gnuplot")};
	RpMade made;
	if (rp_report(&run, out, &o, &made, &d)) {
		code = cli_report(&d);
	} else {
		if (made.plot_note)
			fprintf(stderr, "assay report: warning: %s\n", made.plot_note);
		RpFig f;
		rp_figures(&run, NULL, NULL, &f);
		printf("%d results: ", run.nrecs);
		rp_class_line(stdout, &f, ", ");
		printf("; %d plots\nwrote %s/index.html, report.md, report.json, junit.xml\n",
		       made.nplots, out);
		free(made.plot_note);
	}
	rp_free(&run);
	free(out);
	return code;
}
