/* cli/eval.c: `assay eval G.tg`: evaluates a graph with the exact MPFR oracle and prints
 * each output's shape and a summary (min, max, mean, first values), or JSON with --json;
 * -o DIR writes each output as DIR/NAME.npy. With --emulate FMT it runs the emulating
 * interpreter instead (every operation rounded to FMT).
 *
 * Limits: --timeout S bounds input generation and evaluation together, --oracle-mem MB the
 * oracle's memory (its footprint is checked before any input is generated); a limit is
 * the user's to raise: exit 2 with a message naming the graph and what was too big or too
 * slow. An evaluation running longer than 2 s shows its progress on stderr: one line
 * redrawn about once a second on a terminal, else a line every 10 s. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <errno.h>
#include <unistd.h>
#include "cli.h"

static const FlagSpec flags[] = {
	{"size", true, true, "N=V      override a size (repeatable)"},
	{"seed", true, false, "S        seed of the generated inputs (default 1)"},
	{"inputs", true, false, "DIST     normal | uniform | adversarial | edges (default normal)"},
	{"specials", false, false, "         adversarial and edges inputs also hold inf and NaN"},
	{"input", true, true, "NAME=F   read input NAME from the .npy file F (repeatable)"},
	{"threads", true, false, "N        worker threads (default 1)"},
	{"timeout", true, false, "S        stop after S seconds (input generation included): exit 2"},
	{"oracle-mem", true, false, "MB       the oracle's memory cap in MiB (default: half the RAM, at most 8 GiB)"},
	{"emulate", true, false, "FMT      emulate: round every operation to FMT (f64 f32 f16 bf16 tf32 e4m3 e5m2)"},
	{"order", true, false, "ORD      emulate: reduction order linear | pairwise (default linear)"},
	{"json", false, false, "         machine-readable output on stdout"},
	{"o", true, false, "DIR      write each output as DIR/NAME.npy"},
	{"help", false, false, "         this help"},
};

typedef struct {
	double min, max, mean;
	int64_t nan, inf, count;
} Summary;

static Summary summarise(const HostTensor *t)
{
	Summary s = {INFINITY, -INFINITY, 0, 0, 0, t->n};
	double sum = 0;
	int64_t finite = 0;
	for (int64_t k = 0; k < t->n; k++) {
		double v = ht_get(t, k);
		if (isnan(v)) {
			s.nan++;
			continue;
		}
		if (isinf(v))
			s.inf++;
		s.min = fmin(s.min, v);
		s.max = fmax(s.max, v);
		if (isfinite(v)) {
			sum += v;
			finite++;
		}
	}
	s.mean = finite ? sum / (double)finite : NAN;
	return s;
}

static void shape(FILE *f, const HostTensor *t)
{
	fputc('[', f);
	for (int i = 0; i < t->rank; i++)
		fprintf(f, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
	fputc(']', f);
}

static void jnum(FILE *f, double v)
{
	if (isnan(v))
		fputs("\"nan\"", f);
	else if (isinf(v))
		fputs(v > 0 ? "\"inf\"" : "\"-inf\"", f);
	else
		fprintf(f, "%.17g", v);
}

static void print_text(const Graph *g, int k, const HostTensor *t, int64_t unsamp)
{
	const Output *o = &g->outputs[k];
	Summary s = summarise(t);
	printf("%s : %s", g->tensors[o->tensor].name, dt_name(o->dtype));
	shape(stdout, t);
	printf("  %lld elements", (long long)t->n);
	if (unsamp >= 0)
		printf(", %lld unsamplable", (long long)unsamp);
	printf("\n  min %.9g  max %.9g  mean %.9g", s.min, s.max, s.mean);
	if (s.nan || s.inf)
		printf("  (%lld nan, %lld inf)", (long long)s.nan, (long long)s.inf);
	printf("\n  first:");
	for (int64_t i = 0; i < t->n && i < 8; i++)
		printf(" %.9g", ht_get(t, i));
	printf("%s\n", t->n > 8 ? " ..." : "");
}

static void print_json(FILE *f, const Graph *g, int k, const HostTensor *t, int64_t unsamp)
{
	Summary s = summarise(t);
	fprintf(f, "    {\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": ",
		g->tensors[g->outputs[k].tensor].name, dt_name(g->outputs[k].dtype));
	shape(f, t);
	fprintf(f, ", \"elements\": %lld, \"unsamplable\": %lld, \"nan\": %lld, \"inf\": %lld",
		(long long)t->n, (long long)(unsamp < 0 ? 0 : unsamp), (long long)s.nan, (long long)s.inf);
	fputs(", \"min\": ", f);
	jnum(f, s.min);
	fputs(", \"max\": ", f);
	jnum(f, s.max);
	fputs(", \"mean\": ", f);
	jnum(f, s.mean);
	fputs(", \"first\": [", f);
	for (int64_t i = 0; i < t->n && i < 8; i++) {
		fputs(i ? ", " : "", f);
		jnum(f, ht_get(t, i));
	}
	fputs("]}", f);
}

static int write_outputs(const char *dir, const Graph *g, const HostTensor *outs)
{
	if (mkdir(dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "assay eval: cannot create directory '%s': %s\n", dir, strerror(errno));
		return 2;
	}
	for (int k = 0; k < g->noutputs; k++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s.npy", dir, g->tensors[g->outputs[k].tensor].name);
		Diag d = {0};
		if (npy_write(path, &outs[k], &d))
			return cli_report(&d);
	}
	return 0;
}

/* Progress lines on stderr (MpOpts.progress). */
typedef struct {
	bool tty, shown;
	double t0, last;
} Progress;

static void progress(void *ctx, const MpProgress *p)
{
	Progress *pr = ctx;
	double t = mp_now();
	if (t - pr->t0 < 2 || (!pr->tty && pr->shown && t - pr->last < 10))
		return;
	char line[400];
	int n = snprintf(line, sizeof line, "assay eval: %s%s%s%s: %lld of %lld elements", p->phase,
			 p->tensor ? " '" : "", p->tensor ? p->tensor : "", p->tensor ? "'" : "",
			 (long long)p->done, (long long)p->total);
	if (n > 0 && (size_t)n < sizeof line && p->work_total > 0)
		n += snprintf(line + n, sizeof line - (size_t)n, ", %.0f%% of %.3g terms",
			      100.0 * (double)p->work_done / (double)p->work_total,
			      (double)p->work_total);
	else if (n > 0 && (size_t)n < sizeof line && p->work_done > p->done)
		n += snprintf(line + n, sizeof line - (size_t)n, ", %.3g terms", (double)p->work_done);
	if (n > 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, ", %.3g/s", p->rate);
	if (n > 0 && (size_t)n < sizeof line && p->eta_s >= 0)
		snprintf(line + n, sizeof line - (size_t)n, ", about %.0f s left", ceil(p->eta_s));
	fprintf(stderr, pr->tty ? "\r\033[K%s" : "%s\n", line);
	fflush(stderr);
	pr->last = t;
	pr->shown = true;
}

/* The oracle's options from --threads, --timeout and --oracle-mem: 0 or 2. */
static int options(const Args *a, MpOpts *o, Progress *pr)
{
	long long threads, mb;
	double secs;
	if (cli_int(a, "eval", "threads", 1, 1, 1024, &threads) ||
	    cli_int(a, "eval", "oracle-mem", 0, 1, 1LL << 40, &mb) ||
	    cli_double(a, "eval", "timeout", 0, 0, 1e9, &secs))
		return 2;
	memset(o, 0, sizeof *o);
	o->threads = (int)threads;
	o->mem_cap = mb << 20;
	if (cli_has(a, "timeout"))
		o->deadline = mp_now() + secs;
	*pr = (Progress){.tty = isatty(2), .t0 = mp_now()};
	o->progress = progress;
	o->progress_ctx = pr;
	return 0;
}

static int run(const Args *a, const Graph *g, const MpOpts *op, HostTensor *inputs,
	       HostTensor *outs, int64_t *unsamp)
{
	MpOpts o = *op;
	MpStats st = {0};
	Diag d = {0};
	if (cli_get(a, "emulate")) {
		const char *fs = cli_get(a, "emulate");
		Dtype f = dt_parse(fs, strlen(fs));
		if (f == DT_NONE || f == DT_I32) {
			fprintf(stderr, "assay eval: --emulate expects a float format, got '%s'\n", fs);
			return 2;
		}
		Order ord = ORDER_LINEAR;
		const char *os = cli_get(a, "order");
		if (os && strcmp(os, "pairwise") == 0)
			ord = ORDER_PAIRWISE;
		else if (os && strcmp(os, "linear") != 0) {
			fprintf(stderr, "assay eval: --order expects linear or pairwise, got '%s'\n", os);
			return 2;
		}
		Order *orders = calloc((size_t)g->ndefs + 1, sizeof *orders);
		for (int i = 0; i < g->ndefs; i++)
			orders[i] = ord;
		EmuConfig cfg = {.dflt = f, .order = orders};
		int r = mp_emulate(g, inputs, &cfg, &o, outs, &st, &d);
		free(orders);
		for (int k = 0; k < g->noutputs; k++)
			unsamp[k] = -1;
		return r ? cli_report(&d) : 0;
	}
	uint8_t **status = calloc((size_t)g->noutputs + 1, sizeof *status);
	int r = mp_exact(g, inputs, &o, outs, status, &st, &d);
	for (int k = 0; k < g->noutputs; k++) {
		unsamp[k] = 0;
		for (int64_t i = 0; !r && i < outs[k].n; i++)
			unsamp[k] += status[k][i] == MP_UNSAMPLABLE;
		free(status[k]);
	}
	free(status);
	return r ? cli_report(&d) : 0;
}

int cmd_eval(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "eval", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "eval", "G.tg [flags]",
			  "Evaluates the graph exactly (MPFR interval arithmetic, each output correctly\n"
			  "rounded into its format) on inputs given as .npy files or generated from a seed.",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	if (a.npos != 1) {
		fprintf(stderr, "assay eval: expects exactly one graph file (see 'assay eval --help')\n");
		return 2;
	}
	MpOpts o;
	Progress pr;
	if ((code = options(&a, &o, &pr)))
		return code;
	Graph *g = cli_load_graph(&a, "eval", a.pos[0], &code);
	if (!g)
		return code;
	int nin = ir_ninputs(g);
	HostTensor *inputs = calloc((size_t)nin + 1, sizeof *inputs);
	HostTensor *outs = calloc((size_t)g->noutputs + 1, sizeof *outs);
	int64_t *unsamp = calloc((size_t)g->noutputs + 1, sizeof *unsamp);
	Diag d = {0};
	if (mp_check_memory(g, &o, cli_get(&a, "emulate") != NULL, &d)) {
		code = cli_report(&d);   /* before generating inputs that would not be used */
		goto out;
	}
	code = cli_load_inputs_opts(&a, "eval", g, &o, inputs);
	if (!code)
		code = run(&a, g, &o, inputs, outs, unsamp);
	if (pr.tty && pr.shown)
		fputs("\r\033[K", stderr);
	if (code)
		goto out;
	if (cli_has(&a, "json")) {
		printf("{\"graph\": \"%s\", \"outputs\": [\n", g->name ? g->name : "");
		for (int k = 0; k < g->noutputs; k++) {
			print_json(stdout, g, k, &outs[k], unsamp[k]);
			printf("%s\n", k + 1 < g->noutputs ? "," : "");
		}
		printf("]}\n");
	} else {
		for (int k = 0; k < g->noutputs; k++)
			print_text(g, k, &outs[k], unsamp[k]);
	}
	if (cli_get(&a, "o"))
		code = write_outputs(cli_get(&a, "o"), g, outs);
out:
	for (int k = 0; k < g->noutputs; k++)
		ht_free(&outs[k]);
	cli_free_inputs(g, inputs);
	free(inputs);
	free(outs);
	free(unsamp);
	ir_free(g);
	return code;
}
