/* cli/args.c: GNU-style flag parsing and the helpers every subcommand shares: numbers read
 * whole (an integer flag is decimal digits, a number flag a finite decimal number, each
 * within its range, or an error naming that one flag and its value), the backends of
 * --backends, --schedule FILE, a graph with its --size overrides, and its inputs. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "../verify/verify.h"
#include "../fuzz/fuzz.h"

static int find(const Args *a, const char *name, size_t len)
{
	for (int i = 0; i < a->nspec; i++)
		if (strlen(a->spec[i].name) == len && memcmp(a->spec[i].name, name, len) == 0)
			return i;
	return -1;
}

int cli_parse(Args *a, const char *cmd, const FlagSpec *spec, int nspec, int argc, char **argv)
{
	memset(a, 0, sizeof *a);
	a->spec = spec;
	a->nspec = nspec;
	IR_ASSERT(nspec <= 32);
	bool only_pos = false;
	for (int i = 0; i < argc; i++) {
		const char *s = argv[i];
		if (only_pos || s[0] != '-' || s[1] == 0) {
			if (a->npos == CLI_MAXPOS) {
				fprintf(stderr, "assay %s: too many arguments\n", cmd);
				return 2;
			}
			a->pos[a->npos++] = s;
			continue;
		}
		if (strcmp(s, "--") == 0) {
			only_pos = true;
			continue;
		}
		const char *name, *eq = NULL;
		size_t len;
		if (s[1] == '-') {
			name = s + 2;
			eq = strchr(name, '=');
			len = eq ? (size_t)(eq - name) : strlen(name);
		} else {
			name = s + 1;
			len = strlen(name);
			if (len != 1) {
				fprintf(stderr, "assay %s: unknown flag '%s' (long flags take two dashes)\n", cmd, s);
				return 2;
			}
		}
		int k = find(a, name, len);
		if (k < 0) {
			fprintf(stderr, "assay %s: unknown flag '%s' (see 'assay %s --help')\n", cmd, s, cmd);
			return 2;
		}
		const char *val = "";
		if (spec[k].has_arg) {
			if (eq)
				val = eq + 1;
			else if (i + 1 < argc)
				val = argv[++i];
			else {
				fprintf(stderr, "assay %s: flag '%s' needs a value\n", cmd, s);
				return 2;
			}
		} else if (eq) {
			fprintf(stderr, "assay %s: flag '--%s' takes no value\n", cmd, spec[k].name);
			return 2;
		}
		if (a->count[k] > 0 && !spec[k].repeat) {
			fprintf(stderr, "assay %s: flag '--%s' given twice\n", cmd, spec[k].name);
			return 2;
		}
		if (a->count[k] == CLI_MAXREP) {
			fprintf(stderr, "assay %s: flag '--%s' given too often\n", cmd, spec[k].name);
			return 2;
		}
		a->val[k][a->count[k]++] = val;
	}
	return 0;
}

bool cli_has(const Args *a, const char *name)
{
	return cli_count(a, name) > 0;
}

int cli_count(const Args *a, const char *name)
{
	int k = find(a, name, strlen(name));
	IR_ASSERT(k >= 0);
	return a->count[k];
}

const char *cli_get_at(const Args *a, const char *name, int i)
{
	int k = find(a, name, strlen(name));
	IR_ASSERT(k >= 0);
	return i < a->count[k] ? a->val[k][i] : NULL;
}

const char *cli_get(const Args *a, const char *name)
{
	int n = cli_count(a, name);
	return n ? cli_get_at(a, name, n - 1) : NULL;
}

/* A whole decimal integer: [+-]?[0-9]+ and nothing else ("0x10", "010" is ten, " 5" and
 * "5x" are not integers), within long long. */
static bool parse_ll(const char *s, long long *out)
{
	const char *p = s + (*s == '-' || *s == '+');
	if (!*p || strspn(p, "0123456789") != strlen(p))
		return false;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

int cli_int(const Args *a, const char *cmd, const char *name, long long dflt, long long min,
	    long long max, long long *out)
{
	const char *v = cli_get(a, name);
	*out = dflt;
	if (!v)
		return 0;
	if (parse_ll(v, out) && *out >= min && *out <= max)
		return 0;
	if (min == 0 && max == LLONG_MAX)
		fprintf(stderr, "assay %s: --%s expects a non-negative integer below 2^63, got '%s'\n",
			cmd, name, v);
	else if (max == LLONG_MAX)
		fprintf(stderr, "assay %s: --%s expects an integer >= %lld and below 2^63, got '%s'\n",
			cmd, name, min, v);
	else
		fprintf(stderr, "assay %s: --%s expects an integer in %lld..%lld, got '%s'\n", cmd, name,
			min, max, v);
	return -1;
}

/* A whole decimal number: [+-]?(D+|D+.D*|.D+)([eE][+-]?D+)? and nothing else (no "inf",
 * "nan", hexadecimal or blanks), finite. */
static bool parse_double(const char *s, double *out)
{
	const char *p = s + (*s == '-' || *s == '+');
	size_t n = strspn(p, "0123456789"), f = 0;
	p += n;
	if (*p == '.')
		f = strspn(++p, "0123456789"), p += f;
	if (n + f == 0)
		return false;
	if (*p == 'e' || *p == 'E') {
		p += 1 + (p[1] == '-' || p[1] == '+');
		size_t e = strspn(p, "0123456789");
		if (!e)
			return false;
		p += e;
	}
	if (*p)
		return false;
	errno = 0;
	*out = strtod(s, NULL);
	return errno == 0 && isfinite(*out);
}

int cli_double(const Args *a, const char *cmd, const char *name, double dflt, double min,
	       double max, double *out)
{
	const char *v = cli_get(a, name);
	*out = dflt;
	if (!v)
		return 0;
	if (parse_double(v, out) && *out > min && *out <= max)
		return 0;
	if (min == 0)
		fprintf(stderr, "assay %s: --%s expects a positive number (at most %g), got '%s'\n",
			cmd, name, max, v);
	else
		fprintf(stderr, "assay %s: --%s expects a number above %g and at most %g, got '%s'\n",
			cmd, name, min, max, v);
	return -1;
}

int cli_number(const Args *a, const char *cmd, const char *name, double dflt, double min,
	       double max, double *out)
{
	const char *v = cli_get(a, name);
	*out = dflt;
	if (!v)
		return 0;
	if (parse_double(v, out) && *out >= min && *out <= max)
		return 0;
	fprintf(stderr, "assay %s: --%s expects a number in [%g, %g], got '%s'\n", cmd, name, min,
		max, v);
	return -1;
}

int cli_backends(const Args *a, const char *cmd, const Backend **out, int *n)
{
	const char *list = cli_get(a, "backends");
	FzRun r;
	Diag d = {0};
	*n = 0;
	if (list && fz_run_backends(&r, list, &d)) {
		fprintf(stderr, "assay %s: --backends: %s", cmd, d.msg);
		diag_clear(&d);
		return 2;
	}
	for (int k = 0; list ? k < r.nbackends : be_at(k) != NULL; k++) {
		char why[256];
		if (list)
			out[(*n)++] = r.backends[k];
		else if (be_at(k)->available(why, sizeof why) == 0)
			out[(*n)++] = be_at(k);
	}
	if (*n == 0) {
		fprintf(stderr, "assay %s: nothing to test: no backend is available here (see "
			"'assay backends')\n", cmd);
		return 2;
	}
	return 0;
}

int cli_unavailable(const Backend *const *bs, int n, char *why, size_t size)
{
	int count = 0;
	size_t len = 0;
	why[0] = 0;
	for (int k = 0; k < n; k++) {
		char w[256];
		if (bs[k]->available(w, sizeof w) == 0)
			continue;
		count++;
		if (len < size)
			len += (size_t)snprintf(why + len, size - len, "%s%s: %s", len ? "; " : "",
						bs[k]->name, w);
	}
	return count;
}

char *cli_read_text(const char *cmd, const char *flag, const char *path, size_t *len)
{
	struct stat st;
	bool dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);   /* fopen would take it */
	FILE *f = dir ? NULL : fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "assay %s: %s %s: %s\n", cmd, flag, path,
			dir ? "is a directory" : strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	IR_ASSERT(m);
	char chunk[65536];
	for (size_t k; (k = fread(chunk, 1, sizeof chunk, f)) > 0;)
		fwrite(chunk, 1, k, m);
	bool bad = ferror(f);
	fclose(f);
	fclose(m);
	if (bad) {
		fprintf(stderr, "assay %s: %s %s: cannot read it\n", cmd, flag, path);
		free(buf);
		return NULL;
	}
	if (len)
		*len = n;
	return buf;
}

int cli_schedule(const Args *a, const char *cmd, Graph *g, bool *given)
{
	const char *path = cli_get(a, "schedule");
	*given = path != NULL;
	if (!path)
		return 0;
	size_t n;
	char *buf = cli_read_text(cmd, "--schedule", path, &n);
	if (!buf)
		return 2;
	Diag d = {0};
	int rc = ir_parse_schedule(g, buf, n, path, &d) ? cli_report(&d) : 0;
	free(buf);
	return rc;
}

void cli_usage(FILE *f, const char *cmd, const char *synopsis, const char *about,
	       const FlagSpec *spec, int nspec)
{
	fprintf(f, "usage: assay %s %s\n\n%s\n\nflags:\n", cmd, synopsis, about);
	for (int i = 0; i < nspec; i++) {
		char left[64];
		snprintf(left, sizeof left, "%s%s", strlen(spec[i].name) == 1 ? "-" : "--", spec[i].name);
		fprintf(f, "  %-14s %s\n", left, spec[i].help);
	}
}

int cli_report(Diag *d)
{
	int code = d->code ? d->code : 3;
	fprintf(stderr, "%s", d->msg ? d->msg : "assay: unknown error\n");
	diag_clear(d);
	return code;
}

int cli_sizes(const Args *a, const char *cmd, SizeOverride *ov, char (*names)[128], int *nov)
{
	*nov = cli_count(a, "size");
	for (int i = 0; i < *nov; i++) {
		const char *s = cli_get_at(a, "size", i);
		const char *eq = strchr(s, '=');
		long long v;
		if (!eq || eq == s || (size_t)(eq - s) >= 128 || !parse_ll(eq + 1, &v) ||
		    v <= 0 || v > INT32_MAX) {
			fprintf(stderr, "assay %s: --size expects NAME=POSITIVE_INTEGER, got '%s'\n", cmd, s);
			return 2;
		}
		memcpy(names[i], s, (size_t)(eq - s));
		names[i][eq - s] = 0;
		ov[i].name = names[i];
		ov[i].value = v;
	}
	return 0;
}

Graph *cli_load_graph(const Args *a, const char *cmd, const char *path, int *code)
{
	SizeOverride ov[CLI_MAXREP];
	char names[CLI_MAXREP][128];
	int nov;
	if ((*code = cli_sizes(a, cmd, ov, names, &nov)))
		return NULL;
	Diag d = {0};
	Graph *g = ir_parse_file(path, ov, nov, &d);
	if (!g)
		*code = cli_report(&d);
	return g;
}

int cli_load_inputs(const Args *a, const char *cmd, const Graph *g, HostTensor *inputs)
{
	return cli_load_inputs_opts(a, cmd, g, NULL, inputs);
}

int cli_load_inputs_opts(const Args *a, const char *cmd, const Graph *g, const MpOpts *o,
			 HostTensor *inputs)
{
	int n = ir_ninputs(g);
	HostTensor *given = calloc((size_t)n + 1, sizeof *given);
	Diag d = {0};
	int code = 0;
	for (int i = 0; i < cli_count(a, "input"); i++) {
		const char *s = cli_get_at(a, "input", i);
		const char *eq = strchr(s, '=');
		if (!eq || eq == s || !eq[1]) {
			fprintf(stderr, "assay %s: --input expects NAME=FILE.npy, got '%s'\n", cmd, s);
			code = 2;
			goto out;
		}
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)(eq - s), s);
		int t = ir_find_tensor(g, name), k = -1;
		for (int j = 0; j < n; j++)
			if (ir_input_tensor(g, j) == t)
				k = j;
		if (t < 0 || k < 0) {
			fprintf(stderr, "assay %s: --input %s: the graph has no input named '%s'\n", cmd, s, name);
			code = 2;
			goto out;
		}
		ht_free(&given[k]);
		if (npy_read(eq + 1, (Dtype)g->tensors[t].dtype, &given[k], &d) ||
		    npy_check(g, t, &given[k], eq + 1, &d)) {
			code = cli_report(&d);
			goto out;
		}
	}
	InputSpec spec = {DIST_NORMAL, 1, false};
	long long seed;
	if (cli_int(a, cmd, "seed", 1, 0, LLONG_MAX, &seed)) {
		code = 2;
		goto out;
	}
	spec.seed = (uint64_t)seed;
	if (cli_get(a, "inputs")) {
		int dist = dist_parse(cli_get(a, "inputs"));
		if (dist < 0) {
			fprintf(stderr, "assay %s: --inputs expects %s, got '%s'\n", cmd, dist_list(),
				cli_get(a, "inputs"));
			code = 2;
			goto out;
		}
		spec.dist = (Dist)dist;
	}
	spec.specials = cli_has(a, "specials");
	if (mp_make_inputs_opts(g, &spec, given, o, inputs, &d))
		code = cli_report(&d);
out:
	for (int j = 0; j < n; j++)
		ht_free(&given[j]);
	free(given);
	return code;
}

void cli_free_inputs(const Graph *g, HostTensor *inputs)
{
	for (int j = 0; j < ir_ninputs(g); j++)
		ht_free(&inputs[j]);
}

int cli_out_dir(const char *cmd, const char *dir, bool force, const char *const *files, int n)
{
	Diag d = {0};
	DIR *dd = force ? NULL : opendir(dir);
	bool full = false;
	for (struct dirent *e; dd && !full && (e = readdir(dd));)
		full = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (dd)
		closedir(dd);
	if (full) {
		fprintf(stderr, "assay %s: -o %s: the directory is not empty (it may hold another "
			"run); give an empty or new one, or --force to write over it\n", cmd, dir);
		return 2;
	}
	if (vf_mkdirs(dir, &d))
		return cli_report(&d);
	for (int i = 0; i < n; i++) {
		char *path = NULL;
		if (asprintf(&path, "%s/%s", dir, files[i]) < 0)
			return 3;
		int rc = vf_write_text(path, "", &d) ? cli_report(&d) : 0;
		free(path);
		if (rc)
			return rc;
	}
	return 0;
}
