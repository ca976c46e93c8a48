/* reports/reports.h: turns the result records of a check or campaign directory into a
 * report (index.html with gnuplot plots, report.md, report.json, junit.xml) and decides
 * release gates over them.
 *
 * reports/ reads files, never another folder's internals: a run directory is
 * DIR/results.jsonl in verify/'s record format (verify/record.c lists the fields),
 * DIR/provenance.json when the run recorded one (verify/provenance.c), and for a campaign
 * (fuzz/campaign.c) also the "done" line after each case's records, settings.json and
 * failures/KEY/ (repro.tg, signature, count); load.c says how each is read.
 *
 * Every record is counted in one class (verify.h vf_class, the function `assay fuzz` uses
 * to decide what it chases): pass, failure (a distinct failure's record), unclaimed
 * special values, flaky, unsupported. Every file of a report, the gates and fuzz's
 * summary name the same classes with the same counts (rp_class_line).
 *
 * The pieces:
 * - json.c: a small JSON reader (one value per call; the record format's "inf", "-inf"
 *   and "nan" strings read as numbers where a number is expected);
 * - load.c: a run directory into an RpRun (records, failure folders, settings);
 * - figures.c: the figures of a set of records (verdict counts, the worst error/budget
 *   ratio, pooled fractions within budget and agreement rates, distinct failures), and the
 *   summary a report shows (per backend x format, directives and rules exercised, the
 *   compiler's coverage points reached);
 * - plots.c: gnuplot run as a subprocess, writing SVG; html.c, md.c, junit.c, out_json.c:
 *   the four files of a report; report.c: rp_report, which writes them all;
 * - policy.c, gate.c: the policy format (docs/policy.md) and its evaluation.
 *
 * Ownership: an RpRun owns every string it holds (rp_free). Errors: -1 with a Diag, code 2
 * for the user's input (a missing directory, a malformed or torn record, a policy error,
 * an output folder that cannot be written). gnuplot missing or failing is not an error:
 * the report says so and carries on without plots. Out of memory aborts (IR_ASSERT).
 */
#ifndef ASSAY_REPORTS_H
#define ASSAY_REPORTS_H

#include <stdio.h>
#include "../verify/verify.h"

/* ------------------------------------------------------------------- JSON */

typedef enum { JS_NULL, JS_BOOL, JS_NUM, JS_STR, JS_ARR, JS_OBJ } JsKind;

typedef struct JsVal JsVal;
struct JsVal {
	JsKind kind;
	bool b;
	double num;
	char *str;      /* JS_STR (NUL-terminated; an embedded \u0000 ends it) */
	int n;          /* JS_ARR, JS_OBJ: items */
	char **keys;    /* JS_OBJ: n keys */
	JsVal *items;   /* JS_ARR, JS_OBJ: n values */
};

/* Parses one JSON value from s[0..len) (whitespace around it allowed, nothing else). On
 * error returns -1 with *err_at the byte offset and *err a static message. */
int rp_json_parse(const char *s, size_t len, JsVal *v, size_t *err_at, const char **err);
void rp_json_free(JsVal *v);
/* The member key of an object, or NULL (also when obj is not an object). */
const JsVal *rp_json_get(const JsVal *obj, const char *key);
/* A number, accepting the strings "inf", "-inf", "nan"; dflt for null or absent. */
double rp_json_num(const JsVal *v, double dflt);
/* Writes x as a JSON number (non-finite as "inf", "-inf", "nan"). */
void rp_json_num_out(FILE *f, double x);

/* ------------------------------------------------------------------- a run */

typedef struct {
	char *graph, *file, *backend, *sched, *sched_text, *output, *dtype, *reason;
	char *inputs, *faults, *case_dir, *agree_ref, *exact;
	char *variant;        /* campaign records of a metamorphic variant: its name
	                         ("v1.swap"; fuzz/meta.c), else "" */
	char *signature;      /* campaign records: the failure's key ("" if none; load.c) */
	char *failure_dir;    /* campaign records: its failure folder ("" if none) */
	Verdict verdict;
	double max_ulp, max_abs, max_rel, nmse, max_ratio, frac_within;
	double mean_signed_ratio;        /* the record's bias (older records: 0) */
	double f64_max_ratio;            /* sampled outputs: all elements vs f64; else 0 */
	double argmax_agree, topk_agree; /* NAN when the record has none */
	int64_t n_checked, n_special, n_unsamplable, n_unbounded, n_ties, n_tie_disagree;
	int64_t n_special_unbounded;  /* of n_special, where the budget is +inf */
	int64_t n_over;               /* elements over budget (older records lack it: then
	                                 inferred from frac_within, load.c) */
	int64_t f64_n_special, f64_n_special_unbounded, f64_n_over;   /* sampled: the f64 pass */
	bool has_worst;               /* the record names its worst element: */
	double worst_got, worst_want; /* the kernel's and the oracle's values there */
	VfClass cls;                  /* vf_class of the record's verdict and counts */
	int64_t n_elements, red_len, agree_rows, case_no;  /* case_no -1 when absent */
	int agree_axis, agree_k;
	uint64_t seed, sched_seed;
	bool sampled;
	bool emulated;        /* the emulation check applied (older records: false) */
	int64_t emu_diff;     /* elements differing from the emulation bit for bit */
	double worker_s, compile_s;
	int line;             /* in results.jsonl */
	bool has_rules;       /* the record carries "rules" (the case ran the rewrite) */
	char **rule_names;    /* rules fired in this case ("rules": {name: count}), if any */
	int64_t *rule_counts;
	int nrules;
	bool has_cov;         /* the record carries "cov" (the compiler's coverage points) */
	int16_t *cov;         /* the points it names that this build knows (CovPoint) */
	int ncov;
	int cov_unknown;      /* names it carries that this build does not know */
} RpRecord;

/* One folder of a distinct failure (campaigns). */
typedef struct {
	char *name;           /* the folder, relative to the run directory */
	char *repro_path;     /* its repro .tg, relative to the run directory (NULL if none) */
	char *repro;          /* the repro's text (NULL if none) */
	char *signature;      /* from its metadata, "" if none */
	int64_t count;        /* cases that hit it, -1 when not recorded */
} RpFailure;

/* DIR/provenance.json (verify/provenance.c), when the run recorded one. */
typedef struct {
	bool present;         /* false: a run made before provenance was recorded */
	char *version, *commit, *cwd, *host, *os, *date;
	char *command;        /* the command line, its words quoted for a POSIX shell ("" when
	                         none was recorded) */
	uint64_t seed;
	char **backends, **devices;   /* nbackends of each */
	int nbackends;
} RpProvenance;

/* One step of `assay decode` (DIR/decode.jsonl; reports/decode.c). */
enum { RP_STEP_AGREE, RP_STEP_LICENSED, RP_STEP_DEFECT, RP_STEP_FAILED, RP_STEP__COUNT };

typedef struct {
	char *model, *backend, *sched, *reason;
	int step;
	int64_t pos;
	int token, exact_token;
	int cls;              /* RP_STEP_* */
	double margin, budget;   /* budget: +inf when budget_finite is false */
	bool budget_finite;
	double gap, gap_budget;  /* the exact top logit's lead on the runner-up, and the two's
	                            budgets (VfStep; NaN in a run made before they were kept) */
	bool gap_exact;
} RpStep;

typedef struct {
	char *dir;
	RpProvenance prov;
	RpStep *steps;        /* DIR/decode.jsonl, when the run is a decode */
	int nsteps;
	char *settings_path;  /* relative to dir; NULL for a check directory */
	char *settings;       /* its text */
	RpRecord *recs;
	int nrecs;
	RpFailure *fails;
	int nfails;
	int torn;             /* torn last lines skipped (RpLoadOpts.skip_torn) */
	int64_t cases;        /* campaigns: complete cases (their "done" lines) */
	int64_t case_errors;  /* of them, cases the toolkit could not judge */
} RpRun;

typedef struct {
	bool skip_torn;       /* skip a torn last line (a run killed while writing) instead of
	                         failing */
} RpLoadOpts;

/* Loads DIR (see load.c). -1 with d (code 2): no such directory, no results.jsonl, no
 * records, a malformed record or provenance.json (file:line:col), a torn last line. */
int rp_load(const char *dir, const RpLoadOpts *o, RpRun *run, Diag *d);
void rp_free(RpRun *run);
/* The verdict named s, or -1. */
int rp_verdict_parse(const char *s);

/* ---------------------------------------------------------------- figures */

/* The figures of a set of records. Numeric results are those with verdict pass,
 * over-budget, special-mismatch or emulation-mismatch. */
typedef struct {
	int64_t results;
	int64_t verdicts[V__COUNT];
	int64_t classes[VC__COUNT];   /* results per class (vf_class) */
	int64_t failing;          /* results with a failing verdict: classes failure and
	                             unclaimed special values */
	int64_t numeric;
	double max_ratio;         /* worst error/budget over numeric results (also vs f64) */
	double max_bias;          /* the largest |mean_signed_ratio| over numeric results */
	double max_ulp;
	double checked, within;   /* elements compared, within budget (pooled) */
	double rows, argmax_ok, topk_ok;  /* agreement rows (pooled) */
	int64_t specials;         /* results with verdict special-mismatch */
	int64_t emulated;         /* results the emulation check held to the emulation bit for
	                             bit (verify/emucheck.c) */
	int64_t distinct;         /* distinct failures: distinct signatures (rp_signature) of
	                             the results of class failure */
} RpFig;

/* The signature that groups failing records into distinct failures: the record's own
 * signature when a campaign wrote one, else "graph | backend | output | verdict". Written
 * into buf. */
const char *rp_signature(const RpRecord *r, char *buf, size_t n);
/* The figures of the records of run for which keep(ctx, r) holds (keep NULL: all). */
typedef bool RpKeep(void *ctx, const RpRecord *r);
void rp_figures(const RpRun *run, RpKeep *keep, void *ctx, RpFig *f);
/* The classes of F in words, the same in every file and command: "2 distinct failures (3
 * results)", "4 results with unclaimed special values", "1 flaky", "296 pass", "2
 * unsupported", joined by sep. */
void rp_class_line(FILE *f, const RpFig *F, const char *sep);
/* How a report's headline reads F: 2 with distinct failures, 1 with unclaimed special
 * values or flaky results only, 0 when every result passed (or is unsupported). */
int rp_status(const RpFig *F);
/* What a special-value mismatch was, at the record's worst element, kernel first: "NaN vs
 * 1.5", "+inf vs 3.40282e+38", "-0 vs +0" (with the count of elements when more than one),
 * or "special values vs the f64 evaluation" when only the sampled output's f64 pass saw
 * them. Written into buf. */
const char *rp_special_text(const RpRecord *r, char *buf, size_t n);
/* A worst figure x of F (its max_ratio, "%.3g"; its max_ulp, "%.0f") as a summary row
 * shows it: "0.25", "∞", "–" (no result with numbers); with special-value mismatches
 * among the results, "0.25 + special ×4", or "special ×4" where x is 0: never a figure
 * that reads as perfect where values were wrong. Written into buf. */
const char *rp_fig_worst(const RpFig *F, double x, const char *fmt, char *buf, size_t n);
/* The numbers a row of r may show: false for verdicts without them (crash, timeout,
 * oob-write, compile-error, unsupported, flaky). */
bool rp_has_numbers(const RpRecord *r);
/* Whether r's worst error/budget and ULP distance measure it (pass, over-budget): a
 * special-value mismatch has numbers, but none that measures a NaN or an infinity, so rows
 * name its category instead and plots leave it out; an emulation-mismatch is within every
 * budget, so its ratio says nothing of what failed: rows show "bits ×N" instead. */
bool rp_has_ratio(const RpRecord *r);

/* Pooled fractions: NAN when there is nothing to divide. */
double rp_frac_within(const RpFig *f);
double rp_argmax_agree(const RpFig *f);
double rp_topk_agree(const RpFig *f);

typedef struct {
	char *name;
	int64_t count;
} RpCount;

/* A rewrite rule: its firings summed over cases (each compilation of a graph for one
 * backend and schedule is a case), the cases in which it fired, and its domain (RW_* of
 * compiler.h; 0 for a name the records carry that this compiler does not know). */
typedef struct {
	char *name;
	int64_t count;
	int64_t cases;
	unsigned domain;
} RpRule;

/* The compiler's coverage over a run (compiler/cov.def, the records' "cov"): per point, the
 * cases ((graph, backend, schedule) compilations, as for rules) that reached it. A point is
 * reachable when a backend some case ran can reach it (cov_reaches): the vulkan backend's
 * points are not counted against a run on c alone. */
typedef struct {
	bool recorded;               /* some record carries "cov" */
	int64_t cases;               /* cases whose records carry it */
	int64_t hits[COV__COUNT];    /* cases that reached each point */
	bool reachable[COV__COUNT];
	int nreachable, nreached;    /* reachable points; of them, reached */
	int64_t unknown;             /* point names carried that this build does not know */
} RpCoverage;

/* The areas of the coverage table (cov_area) in the table's order, each once: *n of them
 * into areas (at most max). Per area: its points, reachable and reached ones. */
int rp_cov_areas(const char **areas, int max);
void rp_cov_area(const RpCoverage *c, const char *area, int *points, int *reachable,
		 int *reached);

/* One group of the report: a backend and an output format. */
typedef struct {
	char *backend, *dtype;
	RpFig fig;
} RpGroup;

/* A distinct failure: its signature, how many failing records carry it, the first. */
typedef struct {
	char *signature;
	int64_t count;
	int64_t hits;        /* cases that hit it: its folder's count, else count (the order) */
	int first;           /* index in run->recs */
	int folder;          /* index in run->fails, -1 if none */
} RpDistinct;

typedef struct {
	RpFig all;
	RpGroup *groups;     /* by backend (c, opencl, vulkan, wgsl, cuda, others), then format */
	int ngroups;
	RpDistinct *distinct;
	int ndistinct;
	RpCount *dirs;       /* schedule directives exercised, counted once per case */
	int ndirs;
	const char **dirs_never;   /* known directives no case exercised */
	int ndirs_never;
	bool rules_recorded; /* records carry rule counts */
	int64_t rule_cases;  /* cases whose records carry them */
	RpRule *rules;       /* every known rule (then unknown recorded ones) with its firings
	                        (0: never) */
	int nrules;
	RpCoverage cov;      /* the compiler's coverage points reached */
	int ngraphs, ncases; /* distinct graphs, distinct (graph, backend, schedule) cases */
	RpCount *variants;   /* records of metamorphic variants, by kind ("swap", ...) */
	int nvariants;
	int64_t variant_results, variant_failures, variant_mismatches;
	int variant_distinct; /* distinct failures whose first record is a variant's */
} RpSummary;

void rp_summarise(const RpRun *run, RpSummary *s);
/* The name of a rule's domain: "exact", "real", "integer" ("?" for 0). */
const char *rp_rule_domain(unsigned domain);
void rp_summary_free(RpSummary *s);

/* ---------------------------------------------------------------- outputs */

typedef struct {
	const char *gnuplot;   /* the gnuplot program (NULL: "gnuplot" on PATH) */
} RpOpts;

/* What rp_report made. */
typedef struct {
	int nplots;            /* plots drawn */
	char *plot_note;       /* why plots are missing (NULL when all were drawn) */
} RpMade;

/* Writes OUT/index.html, OUT/report.md, OUT/report.json, OUT/junit.xml and OUT/plots/
 * (the gnuplot scripts, data and SVG files) for run. out is created if needed. -1 with d
 * (code 2: out cannot be written). */
int rp_report(const RpRun *run, const char *out, const RpOpts *o, RpMade *made, Diag *d);

/* The parts, for tests and other callers (each writes one file's content to f). */
typedef struct {
	char *title;           /* heading */
	char *file;            /* the SVG file's name under OUT/plots */
	char *svg;             /* its text (NULL when not drawn) */
	char *caption;
} RpPlot;

/* Draws the report's plots into out_dir/plots; plots[] gets up to RP_MAXPLOTS entries. */
enum { RP_MAXPLOTS = 8 };
int rp_plots(const RpRun *run, const RpSummary *s, const char *out_dir, const RpOpts *o,
	     RpPlot *plots, int *nplots, char **note);
void rp_plots_free(RpPlot *plots, int n);
void rp_html(FILE *f, const RpRun *run, const RpSummary *s, const RpPlot *plots, int nplots,
	     const char *plot_note, const char *out_dir);
void rp_markdown(FILE *f, const RpRun *run, const RpSummary *s, const char *out_dir);
void rp_json_report(FILE *f, const RpRun *run, const RpSummary *s);
void rp_junit(FILE *f, const RpRun *run);

/* ------------------------------------------------------------------ decode steps */

/* Parses decode.jsonl's text into run->steps. -1 with d (code 2, path:line:col). */
int rp_load_steps(RpRun *run, const char *text, size_t len, const char *path, Diag *d);
void rp_steps_free(RpRun *run);

typedef struct {
	int steps;
	int n[RP_STEP__COUNT];
	int unbounded;        /* licensed steps whose budget had no bound */
} RpStepFig;

/* Figures over the steps keep() accepts (NULL: all). */
void rp_step_figures(const RpRun *run, bool (*keep)(void *, const RpStep *), void *ctx,
		     RpStepFig *f);
const char *rp_step_class_name(int c);    /* "agree", "licensed", "defect", "failed" */
void rp_steps_markdown(FILE *f, const RpRun *run);
void rp_steps_html(FILE *f, const RpRun *run);
/* s as HTML text (< > & " escaped; NULL writes nothing). */
void rp_html_esc(FILE *f, const char *s);

/* ------------------------------------------------------------------ gates */

typedef enum {
	GM_MAX_RATIO, GM_FRAC_WITHIN, GM_ARGMAX_AGREE, GM_TOPK_AGREE, GM_DISTINCT_FAILURES,
	GM_SPECIAL_MISMATCHES, GM_FAILING, GM_RESULTS, GM_MAX_ULP, GM_FLAKY,
	GM_EMULATION_MISMATCHES, GM_EMULATED, GM_MEAN_SIGNED_RATIO, GM_TOKEN_AGREE,
	GM_LICENSED_DIVERGENCES, GM_DEFECT_DIVERGENCES, GM__COUNT
} GateMetric;

typedef enum { GO_LE, GO_LT, GO_GE, GO_GT, GO_EQ } GateOp;

typedef struct {
	char *scope;          /* as written: BACKEND/FORMAT/EXAMPLE globs */
	char *backend, *dtype, *graph;   /* the three globs */
	GateMetric metric;
	GateOp op;
	double threshold;
	char *threshold_text; /* as written ("99%") */
	int line;
} Gate;

typedef struct {
	char *file;
	Gate *gates;
	int ngates;
} RpPolicy;

const char *rp_metric_name(GateMetric m);
const char *rp_op_name(GateOp op);
/* Parses a policy (docs/policy.md). -1 with d (code 2, file:line:col and a caret). */
int rp_policy_parse(const char *src, size_t len, const char *file, RpPolicy *p, Diag *d);
int rp_policy_load(const char *path, RpPolicy *p, Diag *d);
void rp_policy_free(RpPolicy *p);

/* The outcome of one gate. */
typedef struct {
	double figure;        /* NAN: no result in scope */
	int64_t results;      /* results in scope */
	double base;          /* the baseline's figure (NAN: none) */
	bool holds;           /* figure meets threshold (true when no result is in scope,
	                         except for metric results) */
	bool worse;           /* got worse than the baseline */
} GateResult;

/* Evaluates gate g on run (and on baseline when not NULL). */
void rp_gate_eval(const Gate *g, const RpRun *run, const RpRun *baseline, GateResult *r);
/* Evaluates every gate, printing one line each and a summary to f. Returns the number of
 * gates that fail (not holding, or worse than the baseline). */
int rp_gate_run(const RpPolicy *p, const RpRun *run, const RpRun *baseline, FILE *f);

#endif
