/* cli/cli.h (private to cli/): argument parsing shared by the subcommands.
 *
 * Flags are GNU-style: `--seed 7`, `--seed=7`, `-o DIR`; a flag may repeat when the
 * subcommand allows it (--size, --input). Every error is a user error (exit 2) with a
 * message naming the subcommand and the flag.
 */
#ifndef ASSAY_CLI_H
#define ASSAY_CLI_H

#include <stdio.h>
#include "../compiler/compiler.h"
#include "../interp/interp.h"

enum { CLI_MAXPOS = 256, CLI_MAXREP = 64 };

typedef struct {
	const char *name;   /* "seed" for --seed; a one-letter name is also accepted as -x */
	bool has_arg;
	bool repeat;        /* may be given several times */
	const char *help;   /* one line, "ARG  what it does" */
} FlagSpec;

typedef struct {
	const FlagSpec *spec;
	int nspec;
	const char *val[32][CLI_MAXREP];
	int count[32];
	const char *pos[CLI_MAXPOS];
	int npos;
} Args;

/* Parses argv (after the subcommand name). Returns 0, or 2 after printing an error. */
int cli_parse(Args *a, const char *cmd, const FlagSpec *spec, int nspec, int argc, char **argv);
bool cli_has(const Args *a, const char *name);
const char *cli_get(const Args *a, const char *name);   /* the last value, or NULL */
int cli_count(const Args *a, const char *name);
const char *cli_get_at(const Args *a, const char *name, int k);
/* Integer flag --name: dflt when absent; else its whole value in decimal ("0x10" and "5x"
 * are errors, "010" is ten) within min..max. Prints an error naming the flag and the value
 * and returns -1 otherwise. */
int cli_int(const Args *a, const char *cmd, const char *name, long long dflt, long long min,
	    long long max, long long *out);
/* Number flag --name: dflt when absent; else its whole value, a finite decimal number
 * (no inf, nan or hexadecimal), with min < value <= max. Prints an error naming the flag
 * and the value and returns -1 otherwise. */
int cli_double(const Args *a, const char *cmd, const char *name, double dflt, double min,
	       double max, double *out);
/* The same with min <= value <= max (a flag that may be 0). */
int cli_number(const Args *a, const char *cmd, const char *name, double dflt, double min,
	       double max, double *out);
/* The backends of --backends (in order, a repeated name once), or every available one
 * without it: 0, or 2 after printing the error (an empty list or name, an unknown name,
 * none available). out has room for every backend. */
int cli_backends(const Args *a, const char *cmd, const Backend **out, int *n);
/* How many of bs[0..n) are unavailable here; why gets "NAME: reason; ..." of those. */
int cli_unavailable(const Backend *const *bs, int n, char *why, size_t size);
/* The whole text of file path (malloc'ed, NUL-terminated; *len its length when len is not
 * NULL), or NULL after printing "assay CMD: FLAG PATH: why" (a directory, unreadable). */
char *cli_read_text(const char *cmd, const char *flag, const char *path, size_t *len);
/* Applies --schedule FILE to g when given (*given): 0, or an exit code after printing the
 * error (a directory, an unreadable file, a schedule that does not parse). */
int cli_schedule(const Args *a, const char *cmd, Graph *g, bool *given);
void cli_usage(FILE *f, const char *cmd, const char *synopsis, const char *about,
	       const FlagSpec *spec, int nspec);

/* The --size overrides of a into ov (names holds their names: CLI_MAXREP rows). 0, or 2
 * after printing the error. */
int cli_sizes(const Args *a, const char *cmd, SizeOverride *ov, char (*names)[128], int *nov);
/* Loads a graph with the --size overrides of a. Returns NULL after printing the error
 * (*code gets its exit code). */
Graph *cli_load_graph(const Args *a, const char *cmd, const char *path, int *code);
/* Reads the --input NAME=FILE.npy files and generates the rest from --seed and --inputs.
 * inputs gets ir_ninputs(g) tensors. Returns 0 or an exit code after printing the error. */
int cli_load_inputs(const Args *a, const char *cmd, const Graph *g, HostTensor *inputs);
/* The same under o's deadline, memory cap and progress reports (mp_make_inputs_opts). */
int cli_load_inputs_opts(const Args *a, const char *cmd, const Graph *g, const MpOpts *o,
			 HostTensor *inputs);
void cli_free_inputs(const Graph *g, HostTensor *inputs);

/* -o DIR for a run: created, refused when it holds anything unless force (it may hold
 * another run's results), and each of files[0..n) started empty in it. 0, or an exit code
 * after printing the error. */
int cli_out_dir(const char *cmd, const char *dir, bool force, const char *const *files, int n);
/* Prints a Diag to stderr and returns its exit code. */
int cli_report(Diag *d);

int cmd_eval(int argc, char **argv);
int cmd_grad(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_backends(int argc, char **argv);
int cmd_emit(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_fuzz(int argc, char **argv);
int cmd_reduce(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_decode(int argc, char **argv);

#endif
