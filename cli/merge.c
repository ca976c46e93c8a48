/* cli/merge.c: `assay merge DIR... -o OUT`: joins the shards of one campaign (`assay fuzz
 * --shard I/N`) into the campaign directory the unsharded campaign would have made
 * (fuzz/merge.c checks and does the work): its log, its distinct failures, its errors and
 * a recomputed summary; `assay report`, `assay gate` and `assay fuzz --resume` take it
 * like any campaign.
 *
 * Exit codes: 0 the merge is written (its failures are for `assay report` and `assay gate`
 * to judge, not a verdict of the merge); 2 the directories are not the whole, complete
 * shards of one campaign (the shard or the member at fault named), or OUT exists; 3 the
 * environment failed (nothing is left at OUT).
 */
#include <string.h>
#include "cli.h"
#include "../fuzz/fuzz.h"

static const FlagSpec flags[] = {
	{"o", true, false, "DIR      the merged campaign directory (new, or an empty directory)"},
	{"quiet", false, false, "         no closing line"},
	{"help", false, false, "         this help"},
};

int cmd_merge(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "merge", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "merge", "SHARD_DIR... -o DIR",
			  "Merges the N shards of one campaign (made by `assay fuzz --shard I/N`, each in\n"
			  "its own directory) into one campaign directory: the log the unsharded campaign\n"
			  "would have written (cases in order; timings aside), one folder per distinct\n"
			  "failure (from the shard of its first case), errors/, and a recomputed\n"
			  "summary.json. Refused, naming the cause: settings that differ (but for\n"
			  "'shard' and 'jobs'), a missing or repeated shard, a torn or incomplete shard.\n"
			  "The shards are only read; DIR appears whole or not at all.\n"
			  "Exit 0: merged; 2: bad input; 3: the environment failed.",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	const char *out = cli_get(&a, "o");
	if (!out || a.npos < 1) {
		fprintf(stderr, "assay merge: expects the shard directories and -o DIR (see 'assay "
			"merge --help')\n");
		return 2;
	}
	FzMergeStats st;
	Diag d = {0};
	if (fz_merge(a.pos, a.npos, out, argc, argv, &st, &d)) {
		fprintf(stderr, "assay merge: ");
		return cli_report(&d);
	}
	if (!cli_has(&a, "quiet"))
		printf("merged %d shard%s: %lld cases, %lld records, %d distinct failure%s (%d found "
		       "by more than one shard), %d error file%s, in %.2f s; %s\n", st.shards,
		       st.shards == 1 ? "" : "s", (long long)st.cases, (long long)st.records,
		       st.distinct, st.distinct == 1 ? "" : "s", st.shared, st.errors,
		       st.errors == 1 ? "" : "s", st.seconds, out);
	return 0;
}
