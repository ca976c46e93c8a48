/* verify/verify.h: runs derived kernels in isolated worker processes, diffs every output
 * with the exact oracle and scores it against its error budget: one verdict per
 * (backend, schedule, output) (spec/cli.md "Verdicts").
 *
 * The pieces, each usable alone:
 * - metrics.c: error measures of one output against its oracle and budget (numerics.md
 *   section 3) and the verdict they imply;
 * - worker.c: one (backend, schedule) run in a forked worker process; a crash, a hang, a
 *   write into a guard region, a compile failure become outcomes, never the caller's death;
 * - check.c: the pipeline over a graph: oracle once, then for each backend and schedule a
 *   worker, budgets, metrics, one VfRecord per output;
 * - record.c: the JSON-lines record format (DIR/results.jsonl) and the files kept by -o;
 * - agree.c: agreement of discrete choices (argmax, top-k set along an axis) with the
 *   oracle's, and the reduction length of an output (figures recorded beside the metrics);
 * - emucheck.c: the emulation check: where a schedule's arithmetic is fully specified on a
 *   backend (its BeFacts), its outputs must equal the emulating interpreter's bit for bit
 *   (the verdict emulation-mismatch, with the first differing stored definition).
 *
 * Ownership: a VfRecord's strings are owned by the pipeline and live only during the
 * callback that receives it; copy what you keep. Errors: -1 with a Diag (code 2 for the
 * user's input, 3 for internal failures); a verdict is never an error.
 */
#ifndef ASSAY_VERIFY_H
#define ASSAY_VERIFY_H

#include <stdio.h>
#include "../compiler/compiler.h"
#include "../interp/interp.h"
#include "../oracles/oracles.h"

typedef enum {
	V_PASS, V_OVER_BUDGET, V_SPECIAL_MISMATCH, V_CRASH, V_TIMEOUT, V_OOB_WRITE,
	V_COMPILE_ERROR, V_UNSUPPORTED,
	V_FLAKY,   /* a crash or timeout that a re-run of the kernel alone, with a longer limit,
	              did not reproduce (spec/cli.md v2): recorded and reported, not a failure */
	V_EMULATION_MISMATCH,   /* every budget holds, but the arithmetic is fully specified on
	              the backend (emucheck.c) and the output differs from the emulating
	              interpreter's bit for bit: a failure */
	V_VARIANT_MISMATCH,   /* fuzz/meta.c: a metamorphic variant that claims a bit-identical
	              emulation gave outputs that differ, bit for bit, from its original's on
	              the same backend, both within their budgets (a failure) */
	V_BAD_OUTPUT,   /* an external kernel (external.c) exited 0 but an output is missing,
	              not a .npy file, or not of its dtype and shape: a whole-run failure */
	V_GRAD_MISMATCH,   /* `assay fuzz --grad`: the derived gradient's <grad, t> differs from
	              the oracle's exact directional derivative (interp/gradcheck.c); the
	              record's backend is "derivation", its output the first wrong grad_X */
	V_TREE_MISMATCH,   /* an FPRev probe (probe.c) of a sum the kernel computes: it sums in a
	              tree its schedule does not declare (the emulation's order); a failure */
	V__COUNT
} Verdict;

const char *vf_verdict_name(Verdict v);
/* A failing verdict makes `assay check` exit 1: all but pass, unsupported and flaky. */
bool vf_verdict_fails(Verdict v);
/* A verdict about a whole kernel run rather than one output (crash, timeout, oob-write,
 * compile-error): every output's record repeats it, and it counts as one failure of the
 * case and kernel, not one per output (fuzz signatures, report signatures). */
bool vf_verdict_whole(Verdict v);

/* ------------------------------------------------------------------ metrics */

/* Error measures of one output (numerics.md section 3). Numeric measures (ulp, abs, rel,
 * nmse) cover the elements where both values are numbers (finite, or equal infinities);
 * special values are categories, counted before any tolerance:
 * - a NaN against a number, either way (NaN payloads and signs are canonicalised first);
 * - an infinity against anything but the same infinity;
 * - the sign of a zero, where the oracle's value is a zero AND the element's budget is 0:
 *   only where no rounding error is allowed is the sign of an exact zero decided by IEEE
 *   rules (graph-format.md section 6); elsewhere a kernel may legitimately produce a tiny
 *   value of either sign that rounds to -0 or +0, and +-0 are at ULP distance 0.
 * A NaN never passes: a NaN against a number is a special mismatch, and a NaN against a
 * NaN (the oracle's own NaN, e.g. sqrt(-1)) is an agreement, not a tolerance.
 * Elements whose oracle is unsamplable (MP_UNSAMPLABLE) are skipped and counted. Integer
 * (i32) outputs must be equal: their budget is 0, a difference has ratio inf.
 * Near ties (numerics.md 4a, orc_budget_ties): at an element flagged as depending on a
 * choice between near-equal candidates, a disagreement (an integer that differs, a real
 * value over its budget) is counted in n_tie_disagree, not as a failure, and its ratio is
 * left out of max_ratio (the budget assumed the exact choice); it still counts in the
 * other measures. Special values are categorical even there. */
typedef struct {
	int64_t n_checked;      /* elements compared (unsamplable ones excluded) */
	int64_t n_special;      /* special-value mismatches */
	int64_t n_special_unbounded; /* of them, at elements whose budget is +inf: the budget
	                           makes no claim there (the schedule's formats may overflow or
	                           a branch may flip), so the kernel may be right and the schedule
	                           numerically wrong; still a special-mismatch verdict, but the
	                           fuzzer does not count it as a compiler failure
	                           (vf_compiler_suspect) */
	int64_t n_zero_sign;    /* of them, a zero of the wrong sign */
	int64_t n_unsamplable;  /* oracle elements skipped */
	int64_t n_over;         /* elements with ratio > 1 (special mismatches excluded) */
	int64_t n_unbounded;    /* elements compared numerically whose budget is +inf (no bound
	                           known: they pass whatever their error) */
	int64_t n_ties;         /* elements flagged as near ties */
	int64_t n_tie_disagree; /* of them, disagreeing (not failures) */
	double max_ulp;         /* ULP distance in the output's format (ord mapping, +-0 -> 0) */
	double max_abs;         /* |got - want| */
	double max_rel;         /* |got - want| / |want| (inf where want is 0 and got is not) */
	double nmse;            /* sum (got - want)^2 / sum want^2 over numeric elements */
	double max_ratio;       /* error / budget (0/0 = 0, e/0 = inf, e/inf = 0) */
	double mean_signed_ratio; /* mean of (got - want) / budget over the numeric elements
	                           with a finite positive budget (0 if none): a biased kernel
	                           (truncation, a one-sided rounding) drifts one way while each
	                           element stays within its budget (issue 17's bias gate) */
	double frac_within;     /* elements with ratio <= 1 and no special mismatch (near-tie
	                           disagreements excluded) / n_checked */
	int64_t worst;          /* flat index of the element of max ratio (or of the first
	                           special mismatch), -1 if none */
	double worst_got, worst_want, worst_budget;
	/* internal sums for nmse and mean_signed_ratio */
	double sum_d2, sum_w2, sum_signed;
	int64_t n_signed;
} VfMetrics;

/* Whether a verdict with these metrics points at the compiler (or the toolkit): a failing
 * verdict, unless it is a special-value mismatch found only at elements whose budget is
 * +inf, where a correct kernel may produce the special value (the schedule's own rounding
 * overflowed: a numerical fault of the schedule, reported by `assay check`, not a
 * miscompilation for the fuzzer to chase). */
bool vf_compiler_suspect(Verdict v, const VfMetrics *m);

/* What a record says, in the five classes that `assay fuzz`'s summary, `assay gate` and
 * every report file count alike (docs/fuzz.md "Failures the fuzzer does not chase"):
 * - VC_FAILURE: a failing verdict that points at the compiler (vf_compiler_suspect): the
 *   fuzzer chases it, reduces it and counts it among the distinct failures;
 * - VC_UNCLAIMED: "unclaimed special values": a special-value mismatch found only at
 *   elements whose budget is +inf, where the budget makes no claim (a failing verdict of
 *   `assay check`, not a compiler failure);
 * - VC_FLAKY: a crash or timeout a re-run did not reproduce (V_FLAKY, not a failure);
 * - VC_PASS and VC_UNSUPPORTED: the verdicts of those names;
 * - VC_KNOWN: a failure whose signature the campaign's baseline lists (`assay fuzz
 *   --baseline`): known, not chased, not a distinct failure. vf_class never gives it: the
 *   reports assign it from the campaign's settings (reports/load.c), as the campaign did. */
typedef enum {
	VC_PASS, VC_FAILURE, VC_UNCLAIMED, VC_FLAKY, VC_UNSUPPORTED, VC_KNOWN, VC__COUNT
} VfClass;

/* The class of a record of verdict v with exact metrics m and, for a sampled output, m64
 * (its all-elements check against the f64 evaluation; unused unless sampled): a numeric
 * failure points at the compiler when a comparison that failed it does
 * (vf_compiler_suspect of that comparison's own verdict); crash, timeout, oob-write and
 * compile-error always do. Metrics that explain no failure leave a failing verdict a
 * failure. */
VfClass vf_class(Verdict v, const VfMetrics *m, bool sampled, const VfMetrics *m64);
/* "pass", "failure", "unclaimed-special", "flaky", "unsupported" (report.json's names). */
const char *vf_class_name(VfClass c);

/* The ordinal of x in format f (f64 f32 f16 bf16; i32: the integer itself):
 * ord(x) = x < 0 ? -bits(-x) : bits(x), so +-0 -> 0. x must be a value of f, not NaN. */
int64_t vf_ord(Dtype f, double x);
/* |ord(a) - ord(b)| in format f, as a double (exact below 2^53). Both must be non-NaN. */
double vf_ulp_dist(Dtype f, double a, double b);

void vf_metrics_init(VfMetrics *m);
/* Adds one element: got (the kernel's), want (the oracle's), budget (absolute; +inf: no
 * bound known), tie (a near tie). f is the output's format. k is the element's flat index
 * (for worst). */
void vf_metrics_add(VfMetrics *m, Dtype f, int64_t k, double got, double want, double budget,
		    bool tie);
/* Finishes (nmse, frac_within). */
void vf_metrics_done(VfMetrics *m);
/* Compares n elements into m (after vf_metrics_init; call vf_metrics_done after). Element
 * i is got, budget and ties at flat index idx[i] (i when idx is NULL) against want at i
 * and status[i]. budget NULL means 0; ties and status may be NULL (no ties; all settled).
 * got and want are in the output's format. */
void vf_compare(const HostTensor *got, const HostTensor *want, const HostTensor *budget,
		const uint8_t *ties, const uint8_t *status, const int64_t *idx, int64_t n,
		VfMetrics *m);
/* The verdict of metrics: special-mismatch first, then over-budget, else pass. */
Verdict vf_metrics_verdict(const VfMetrics *m);

/* ---------------------------------------------------------------- agreement */

/* Agreement of an output's choices with the oracle's along one axis (agree.c states the
 * rules: ties in the oracle are not disagreements, NaN orders above every number, i32
 * outputs compare rows of indices). rows == 0: no figure (a scalar, an axis shorter than
 * 2, or a result without outputs). */
typedef struct {
	int axis;            /* the axis (0-based) the rows run along; -1 when rows == 0 */
	int k;               /* the k of top-k */
	int64_t rows;        /* rows compared */
	int64_t argmax_ok;   /* rows whose argmax agrees */
	int64_t topk_ok;     /* rows whose top-k set agrees */
	const char *ref;     /* what the rows were compared with: "oracle", or "f64" (the f64
	                        evaluation) for a sampled output */
} VfAgree;

/* Compares got's rows along axis (python-style: negative counts from the end) with want's
 * (same shape; want may be f64). k <= 0: min(5, extent); k is clamped to the extent. */
void vf_agree(const HostTensor *got, const HostTensor *want, int axis, int k, const char *ref,
	      VfAgree *a);
/* The number of terms of the longest reduction output k of g depends on (an upper bound
 * over its left-hand indices); 0 when nothing reduces. */
int64_t vf_red_len(const Graph *g, int output);

/* ------------------------------------------------------------------- worker */

/* Test-only hooks (for the tests of failure kinds, and for measuring a fuzzer): each
 * breaks the worker on purpose, never the generated code. Set from the environment by
 * vf_opts_env: ASSAY_TEST_CRASH=1 raises SIGSEGV in the worker just before launch;
 * ASSAY_TEST_HANG=1 spins forever just before launch; ASSAY_TEST_OOB=1 writes one
 * element past the end of a guarded buffer the worker adds to the program (the backend's
 * own buffers cannot be reached through the Backend interface), found by the same guard
 * check; ASSAY_TEST_NAN=1 poisons element 0 of every real output with a NaN after
 * download. ASSAY_TEST_ONCE=FILE makes the crash and the hang happen only in the run that
 * creates FILE (the first), so the confirming re-run finishes: a flaky kernel. One more is
 * a debugging switch: ASSAY_NO_REWRITE=1 lowers the graph as written, without the
 * compiler's rewrite rules (rw_compile). */
enum {
	VF_HOOK_CRASH = 1 << 0,
	VF_HOOK_HANG = 1 << 1,
	VF_HOOK_OOB = 1 << 2,
	VF_HOOK_NAN = 1 << 3,
	VF_HOOK_NO_REWRITE = 1 << 4,
};

/* What a worker came back with. On WK_OK, outs[k] holds output k in its dtype. */
typedef enum {
	WK_OK, WK_CRASH, WK_TIMEOUT, WK_OOB, WK_COMPILE_ERROR, WK_UNSUPPORTED,
	WK_BAD_OUTPUT   /* an external kernel's outputs are missing or malformed */
} WorkerStatus;

typedef struct {
	WorkerStatus status;
	char *reason;        /* malloc'ed message (compiler's message, signal name, ...) */
	char *source;        /* malloc'ed kernel source (Backend.emit), NULL if not reached */
	HostTensor *outs;    /* g->noutputs tensors on WK_OK (calloc'ed), else NULL */
	bool rewritten;      /* the worker ran the rewrite (rw_compile) to its end */
	RwStats rules;       /* then its counters (names from rw_rules) */
	bool covered;        /* the worker returned the compiler's coverage counters */
	uint64_t cov[COV__COUNT];   /* then per point (compiler/cov.def), the run's firings */
	bool cache_hit;
	int signal;          /* WK_CRASH by a signal: its number, else 0 */
	bool timed_out_compiling;   /* WK_TIMEOUT: under the compile limit (else the run limit) */
	double compile_s, launch_s;
	double wall_s;       /* the whole run: a worker started for it, the run, a confirming
	                        re-run, the environment's probe */
	/* Confirmation: the first run crashed or timed out, and this result is the re-run's,
	 * alone in a fresh worker with confirm_factor times the limits (vf_worker_run). */
	bool rerun;
	WorkerStatus first_status;
	char *first_reason;  /* malloc'ed */
	double first_wall_s, confirm_factor;
	/* The facts of the backend on the run's device: Backend.facts, refined by
	 * Backend.device_facts in the worker once its compile opened the device (facts_device). */
	BeFacts facts;
	bool facts_device;
} WorkerResult;

/* Persistent workers (worker.c): one live worker process per backend, reused run after
 * run, so a backend's context (OpenCL, Vulkan, CUDA, the WGSL helper) is made once. A pool
 * belongs to the process that made it; a child made by fork must make its own. */
typedef struct VfPool VfPool;

typedef struct {
	int64_t runs;        /* runs served by the pool's workers */
	int64_t started;     /* workers started (the first of each backend, and replacements) */
} VfPoolStats;

VfPool *vf_pool_new(void);
/* b->available, asked once per pool and remembered with its reason (a probe forks a child
 * that loads the driver: a tenth of a second here, seconds on a GPU machine, and a campaign
 * asks before every case); without a pool (NULL, or one another process made), asked now.
 * 0, or -1 with why. */
int vf_available(VfPool *p, const Backend *b, char *why, size_t n);
/* Stops every worker of p (no-op for NULL). */
void vf_pool_free(VfPool *p);
VfPoolStats vf_pool_stats(const VfPool *p);

typedef struct {
	double timeout_s;    /* the run limit: alloc, upload, launch, guards, download (<= 0: 20) */
	int threads;         /* backend threads */
	const char *cache_dir;
	uint64_t faults;     /* LowerOpts.faults (KF_*) */
	unsigned hooks;      /* VF_HOOK_* */
	double compile_timeout_s;   /* the compile limit: rewrite, lowering, emit, compile
	                               (<= 0: 120) */
	VfPool *pool;        /* persistent workers; NULL: a fresh worker process for each run */
	bool no_confirm;     /* report a crash or timeout of the first run as it is (tests of the
	                        mechanism; never for a verdict a user reads) */
	uint64_t seed;       /* the inputs' seed: an external kernel's request.json states it */
} WorkerOpts;

/* Runs g under s on backend b in a worker process (its own process group): rewrite
 * (rw_compile, unless VF_HOOK_NO_REWRITE; the schedule of g applies to the rewritten
 * graph, which keeps g's definitions), lower, emit, compile, alloc, upload, launch,
 * guards, download, under the compile and run limits of o. A crash or timeout is re-run
 * alone in a fresh worker with longer limits before it stands (r->rerun: the result is the
 * re-run's). Returns 0 with r filled (any status), or -1 with d when the run says nothing
 * about the kernel: the worker could not be started, or the environment failed (d->env: a
 * compile error or crash after which the cache directory or $TMPDIR no longer takes a
 * file; a worker killed from outside). The caller frees r with vf_worker_free. Call it
 * with no other threads running (fork). */
int vf_worker_run(const Backend *b, const Graph *g, const Schedule *s,
		  const HostTensor *inputs, const WorkerOpts *o, WorkerResult *r, Diag *d);
void vf_worker_free(const Graph *g, WorkerResult *r);
/* ------------------------------------------------------------------ probes (probe.c) */

/* The FPRev probe of one sum on one backend (docs/probe.md). */
typedef struct {
	int leaves;              /* L: the summands of one row */
	Dtype acc;               /* the accumulation format */
	int m_exp;               /* the probe's +-2^m_exp */
	bool ran;                /* the kernel ran (else status and why say how it ended) */
	WorkerStatus status;
	char why[256];
	char *kernel_tree;       /* the kernel's tree, "((0 1) 2)"; NULL: the counts fit none */
	char *declared_tree;     /* the schedule's (the emulating interpreter's order) */
	int fanin, depth;        /* of the kernel's tree: its widest node, its depth */
	bool same;
	char *sched_text;        /* the probe graph's schedule (sched_text) */
} VfProbe;

/* Whether definition def of g, under s, is a sum a probe can stand for: real terms, not
 * online or inlined, every reduction index over a range of constant bounds, 2..max_leaves leaves
 * in all (at most 8 in an f16 accumulation). 0 with *leaves, or 1 with why. */
int vf_probe_eligible(const Graph *g, const Schedule *s, int def, int max_leaves, int *leaves,
		      char *why, size_t n);
/* The probe graph of an eligible def: `D[p:L(L-1)/2] = sum(r1:N1, ...) x[p, r1, ...]` with
 * D's name, its reduction indices' names and extents, and its accum, order and split
 * directives (its tiles name left-hand indices the probe does not have). NULL with d. */
Graph *vf_probe_graph(const Graph *g, const Schedule *s, int def, Diag *d);
/* Probes probe graph pg (vf_probe_graph's, or any one-definition row sum of that shape) on
 * b under its schedule block: 0 with out (vf_probe_free), -1 with d when the toolkit or
 * the environment failed. Call it with no other threads running (fork). */
int vf_probe_run(const Graph *pg, const Backend *b, const WorkerOpts *wo, VfProbe *out, Diag *d);
void vf_probe_free(VfProbe *p);

/* The verdict of a run that ended with status s (WK_OK: pass; judged further by the caller). */
Verdict vf_worker_verdict(WorkerStatus s);

/* ------------------------------------------------------------------ pipeline */

/* A schedule to check: name "default", "graph" (the graph's schedule block), "file"
 * (--schedule FILE) or "s1".."sN" (sampled with seed). */
typedef struct {
	char name[16];
	Schedule s;
	char *text;          /* sched_text (malloc'ed) */
	uint64_t seed;       /* sampled: the seed given to sched_sample; else 0 */
} VfSched;

/* The seed of the k-th sampled schedule (k >= 1) of graph g under a run's seed: a mix of
 * the seed, the graph's name (its file's base name if it has none) and k. */
uint64_t vf_sched_seed(const Graph *g, uint64_t seed, int k);
/* The name vf uses for g in records: g->name, else its file's base name without .tg
 * (written into buf). */
const char *vf_graph_name(const Graph *g, char *buf, size_t n);

/* One record: one (backend, schedule, output). */
typedef struct {
	const char *graph;       /* vf_graph_name */
	const char *file;        /* g->file */
	const char *backend;
	const char *sched;       /* VfSched.name */
	const char *sched_text;
	uint64_t sched_seed;
	const char *output;      /* tensor name */
	Dtype dtype;
	Verdict verdict;
	const char *reason;      /* "" when none */
	VfMetrics m;             /* exact comparison (all elements, or the sampled ones) */
	bool sampled;            /* the exact oracle covered a sample only */
	int64_t n_elements;      /* elements of the output */
	VfMetrics m64;           /* sampled: all elements against the f64 evaluation */
	const char *ref64_by;    /* sampled: who evaluated in f64 ("c backend", "interpreter") */
	uint64_t seed;           /* inputs and sampling seed */
	const char *dist;        /* inputs distribution name */
	uint64_t faults;         /* seeded faults in effect */
	const char *case_dir;    /* -o: the case's folder relative to DIR, else "" */
	double oracle_s, budget_s, compile_s, launch_s, worker_s;
	bool cache_hit;
	VfAgree agree;           /* agreement along VfOpts.agree_axis (rows 0: none) */
	int64_t red_len;         /* vf_red_len of the output */
	const RwStats *rules;    /* the rewrite rules that compiling the case fired; NULL when no
	                            rewrite ran (backend unavailable, ASSAY_NO_REWRITE, a worker
	                            that died in it) */
	bool emulated;           /* the emulation check applied (emucheck.c) */
	const char *emu_why;     /* why it did not ("" when it did) */
	int64_t emu_diff;        /* emulated: elements that differ from the emulation bit for bit */
	const uint64_t *cov;     /* the compiler's coverage points the run reached (COV__COUNT
	                            firings); NULL when it returned none (backend unavailable, a
	                            worker that died before emitting) */
	/* For sinks that compare runs (fuzz/meta.c), valid during the callback only: */
	const HostTensor *got;   /* the backend's output, or NULL (no run, or it failed) */
	const HostTensor *want;  /* the oracle's values of the compared elements, densely */
	const uint8_t *want_status; /* per compared element (MpStatus), or NULL: all settled */
	const int64_t *want_idx; /* sampled: the flat indices of want's elements; else NULL */
} VfRecord;

typedef void VfSink(void *ctx, const VfRecord *r);

typedef struct {
	WorkerOpts w;
	int threads;             /* oracle threads (<= 0: 1) */
	int64_t max_exact;       /* outputs larger than this are sampled (<= 0: 1 << 20) */
	int64_t nsample;         /* sampled elements per large output (<= 0: 4096) */
	uint64_t seed;           /* the inputs' seed; also picks sampled elements */
	const char *dist;        /* the inputs' distribution, for records */
	const char *out_dir;     /* -o DIR: keep sources, schedules, .npy, results.jsonl */
	/* Budgets: NULL means orc_budget_ties (tests may substitute a stand-in; it gives no
	 * near-tie flags). */
	int (*budget)(const Graph *g, const Schedule *s, const char *backend,
		      const HostTensor *inputs, HostTensor *budgets, Diag *d);
	int agree_axis;          /* axis of the agreement figures, python-style (negative
	                            counts from the end); used when agree_axis_set, else -1 */
	bool agree_axis_set;
	int agree_k;             /* k of top-k agreement (<= 0: min(5, extent)) */
	VfSink *sink;            /* called once per record, in order */
	void *ctx;
	double oracle_timeout_s; /* seconds the oracle may take for a graph (its exact values,
	                            sampled points and f64 emulation together); 0: no limit */
	int64_t oracle_mem;      /* the oracle's memory cap in bytes (MpOpts.mem_cap); 0: the
	                            default (mp_default_mem_cap), < 0: none */
	/* What an external kernel (vf_external) claims to compute: it runs under this one
	 * schedule, never under the scheds vf_check is given (those are assay's kernels');
	 * NULL: the default schedule with every sum, prod and logsumexp `order : any`
	 * (spec/cli.md v2), named "claim". */
	const VfSched *claim;
} VfOpts;

/* Reads ASSAY_FAULT (a comma list of seeded fault names: drop_tail, skip_last, pad_zero,
 * no_combine and the others of compiler.h's KF_*, named in check.c) and the
 * ASSAY_TEST_* hooks into o->w. Returns 0, or -1 with d (code 2) on an unknown name. */
int vf_opts_env(VfOpts *o, Diag *d);
/* Parses a comma list of fault names into KF_* bits; -1 with d on an unknown name. */
int vf_faults_parse(const char *list, uint64_t *faults, Diag *d);
/* The comma list of the names of faults (static storage in buf). */
const char *vf_faults_name(uint64_t faults, char *buf, size_t n);

/* The schedules `assay check` runs: first g's own (sched_build of its directives: from a
 * schedule block or --schedule FILE; the default when it has none), named first_name,
 * then, when g's own schedule has an `online` set, the default schedule too (named
 * "default": an example gains its one-pass form without losing the multi-pass one), then
 * nsampled sampled ones s1..sN (sched_sample with vf_sched_seed(g, seed, k)).
 * *out is allocated here (free with vf_sched_list_free). -1 with d if g's directives do
 * not apply (code 2). */
int vf_sched_list(const Graph *g, const char *first_name, uint64_t seed, int nsampled,
		  VfSched **out, int *n, Diag *d);
void vf_sched_list_free(VfSched *s, int n);

/* Checks g (with its inputs) on each backend under each schedule: the oracle once, then a
 * worker per (backend, schedule), a record per output to o->sink (and to
 * o->out_dir/results.jsonl). *failed gets the number of failing records. Returns 0, or -1
 * with d for an internal failure (the oracle or the budget could not be computed) or
 * a user error (an input the oracle rejects: code 2), or -2 with d (code 2, naming the
 * graph) when the oracle stopped at a limit (oracle_timeout_s, oracle_mem): no record is
 * sent then. */
int vf_check(const Graph *g, const HostTensor *inputs, const Backend *const *backends,
	     int nbackends, const VfSched *scheds, int nscheds, const VfOpts *o,
	     int *failed, Diag *d);

/* ---------------------------------------------------------- external kernels */

/* An external kernel (external.c, docs/external.md): a Backend named name (NULL or "":
 * "external") whose every run writes the case into a fresh directory and runs cmd there
 * through /bin/sh (the protocol of spec/cli.md v2 "Verifying kernels from outside"), in a
 * worker like any backend's kernel. Records, reports and gates see a backend of that name.
 * The Backend lives as long as the process (at most 4 of them). NULL with d (code 2) for an
 * empty command, a name that is not a plain word, one of assay's own backends' names or one
 * given twice. */
const Backend *vf_external(const char *name, const char *cmd, Diag *d);
bool vf_is_external(const Backend *b);
/* The external backend of that name this process made (vf_external), or NULL. */
const Backend *vf_external_find(const char *name);
/* The command of an external backend as given, or NULL for any other backend. */
const char *vf_ext_command(const Backend *b);
/* Makes schedule s of g the claim of an external kernel: every sum, prod and logsumexp is
 * `order : any` (graph-format.md 7a), but with stated, those whose order a directive of g
 * states (s built from g's directives: the claim's text, --schedule CLAIM). */
void vf_ext_claim(const Graph *g, Schedule *s, bool stated);

/* What an external kernel takes (its answer to CMD --assay-capabilities, a JSON object
 * docs/external.md defines): op bits (BE_OP), monoid bits (1 << Monoid) and format bits
 * (1 << Dtype, of input, output, op, accumulation and storage formats alike). */
typedef struct {
	uint64_t ops;
	unsigned monoids;
	unsigned formats;
	char name[64];       /* its "name", or "" */
} VfCaps;

/* Runs cmd --assay-capabilities (through /bin/sh, relative words as vf_external makes them,
 * killed after timeout_s seconds, <= 0: 30) and parses its standard output into c. 0, or
 * -1 with d: code 2 when the command fails, says nothing or prints something that is not
 * the capability object (the message quotes it); code 3 when it cannot be started. */
int vf_ext_caps(const char *cmd, double timeout_s, VfCaps *c, Diag *d);
/* Gives external backend b its capabilities: vf_check then sends it only graphs they cover
 * (vf_caps_cover of the graph under the claim), and records the others unsupported, with
 * what is lacking. */
void vf_ext_set_caps(const Backend *b, const VfCaps *c);
/* The capabilities given to b (vf_ext_set_caps), or NULL: none given, or not external. */
const VfCaps *vf_ext_caps_of(const Backend *b);
/* Whether g, under schedule s, needs only what c lists; false with the first thing it
 * lacks in why ("exp", "monoid topk", "format bf16"). */
bool vf_caps_cover(const VfCaps *c, const Graph *g, const Schedule *s, char *why, size_t n);

/* ---------------------------------------------------------- emulation check */

/* The definitions output k of g depends on: cone[d] = 1 (g->ndefs bytes, written here) for
 * its own and, transitively, each definition a read names anywhere in theirs (terms,
 * index lists, reduction bounds, `??` defaults), inlined ones included: output k's values
 * are computed from these alone. */
void vf_emu_cone(const Graph *g, int k, uint8_t *cone);

/* Whether the arithmetic of output k of g (k < 0: every output) under schedule s is fully
 * specified on a backend with facts f (emucheck.c states the rules), over the definitions
 * it depends on (vf_emu_cone): where they have real arithmetic, special values kept; where
 * + - * / or fma, nothing contracted; every operation of each, in the format it computes
 * in, in f->exact (conversions into every format values are converted to included);
 * integer arithmetic always is. Subnormals are the caller's to weigh (BeFacts.flush
 * against mp_emulate_defs's per-definition bits). true, or false with the first reason why
 * not in why ("exp has an allowance", "div in f32 is not promised correctly rounded"). */
bool vf_emu_specified(const Graph *g, const Schedule *s, const BeFacts *f, int k, char *why,
		      size_t n);

/* A bit-for-bit comparison of a kernel's output with the emulation's (same dtype and
 * shape): any NaN equals any NaN, zeros must agree in sign, integers must be equal. */
typedef struct {
	int64_t n_diff;    /* elements that differ */
	int64_t first;     /* the first's flat index, -1 when none */
	double got, want;  /* its values */
	double ulps;       /* their distance in ulps of the dtype (inf: a NaN against a number;
	                      0: zeros of opposite signs) */
} VfEmuDiff;

void vf_emu_compare(const HostTensor *got, const HostTensor *want, VfEmuDiff *diff);

/* "NAME[i, j]" of element flat of tensor t of g, into buf (vf_emu, check.c's reasons). */
void vf_coords_text(const Graph *g, int t, int64_t flat, char *buf, size_t n);

/* The emulations of one graph's schedules, each computed the first time a backend needs it
 * (mp_emulate with the schedule's formats, orders and splits), and the verdicts drawn from
 * them. Borrows g, inputs and scheds for its life. */
typedef struct VfEmu VfEmu;

/* o: the oracle's options (threads, memory cap); timeout_s: a deadline for each emulation
 * (<= 0: none). */
VfEmu *vf_emu_new(const Graph *g, const HostTensor *inputs, const VfSched *scheds,
		  int nscheds, const MpOpts *o, double timeout_s);
void vf_emu_free(VfEmu *e);

/* The emulation check of one output of a (backend, schedule) run. */
typedef struct {
	bool applies;        /* the record's "emulated" */
	char why[400];       /* why not */
	VfEmuDiff diff;      /* applies: the output against its emulation */
	char *locate;        /* vf_emu_locate's finding for this output, or NULL */
} VfEmuOut;

typedef struct {
	VfEmuOut *out;       /* per output (n = g->noutputs entries) */
	int n;
} VfEmuResult;

/* The emulation check of schedule si's run w on backend b, per output k: r->out[k].applies
 * and its diff, or why not (the run did not finish, an output is sampled: the graph's
 * emulation would cost more than the oracle, output k's arithmetic is not fully specified
 * (vf_emu_specified over its cone), the device may flush subnormals the emulation met in
 * its cone, the emulation failed or hit its deadline). The caller gives the verdict
 * emulation-mismatch where out[k].diff.n_diff > 0 and every budget holds. Free r with
 * vf_emu_result_free. */
void vf_emu_judge(VfEmu *e, const Backend *b, int si, const WorkerResult *w, bool sampled,
		  VfEmuResult *r);
/* After a difference: runs the kernels of schedule si again on b (wo's workers and limits),
 * downloading the stored definitions of the differing outputs' cones, and names in
 * r->out[k].locate (malloc'ed), for each output k that applies and differs, the first
 * stored definition of its cone, in graph order, whose values differ from the emulation's,
 * and its first differing element. Nothing is found (locate NULL) when the re-run fails or
 * the copy stores more tensors than a run carries. 0, or -1 with d when the environment
 * failed in the re-run (vf_worker_run). */
int vf_emu_locate(VfEmu *e, const Backend *b, int si, const WorkerOpts *wo, VfEmuResult *r,
		  Diag *d);
void vf_emu_result_free(VfEmuResult *r);

/* ------------------------------------------------------------------ ULP sweep */

/* The functions of the per-backend ULP sweep (ulp.c, issue 5). VU_SIN sweeps [-pi, pi],
 * where every table row for sin holds; VU_SIN_WIDE sweeps |x| from pi to the format's
 * largest value, reported apart. */
typedef enum {
	VU_EXP, VU_LOG, VU_SIN, VU_SIN_WIDE, VU_TANH, VU_DIV, VU_SQRT, VU_EXPM1, VU_LOG1P,
	VU_ERF, VU_POW, VU__COUNT
} VfUlpFn;

const char *vf_ulp_fn_name(VfUlpFn f);          /* "exp", "sin>pi", "div", ... */
int vf_ulp_fn_parse(const char *name, size_t len);   /* -1 if unknown */

/* One row: a function on a backend in a format. */
typedef struct {
	VfUlpFn fn;
	Dtype fmt;
	const char *backend;     /* the Backend's name (static) */
	WorkerStatus status;     /* WK_OK: the figures hold; else reason says why not */
	char reason[256];
	int64_t points;          /* distinct arguments swept */
	int64_t n_checked;       /* of them, compared (the exact value finite and settled) */
	double worst_ulp;        /* largest distance from R(exact) in ulps of fmt (inf: a NaN
	                            or an infinity where the budget is finite) */
	double worst_x, worst_y; /* its arguments (y: the divisor, pow's exponent; else NaN) */
	double worst_got, worst_want;
	double worst_allow;      /* the budget there, in ulps of fmt at R(exact) (inf: none) */
	double max_ratio;        /* max |got - R(exact)| / budget over the bounded points */
	double ratio_x, ratio_y; /* where, */
	double ratio_got, ratio_want, ratio_budget;   /* and what */
	int64_t n_over;          /* bounded points over their budget (special values included) */
	int64_t n_special;       /* of them, a NaN or an infinity where the exact value is finite */
	int64_t n_unbounded;     /* points whose budget is +inf (the table promises nothing) */
	char allowance[200];     /* the table's rows in words (orc_allowance_text) */
} VfUlpRow;

/* "ok", "EXCEEDS" (a point over its budget), "no bound" (the budget is +inf at every
 * point), "no points", or the name of the verdict a failed worker gives
 * ("unsupported", "compile-error", "crash", "timeout", "oob-write"). */
const char *vf_ulp_verdict(const VfUlpRow *r);

typedef struct {
	int64_t points;          /* per function (<= 0: 65536); a format with no more values
	                            in a domain than this is swept over all of them */
	uint64_t seed;           /* the samples' jitter and the pairs of div and pow */
	int threads;             /* oracle threads */
	WorkerOpts w;            /* the workers' */
	unsigned fns;            /* 1 << VfUlpFn of the functions to sweep (0: all) */
} VfUlpOpts;

/* Sweeps the functions of o->fns in format f (f64 f32 f16 bf16) on each of the nbes
 * backends: rows (caller-allocated, nbes * VU__COUNT entries) get nbes blocks of one row
 * per selected function, in VfUlpFn order; *nrows their number. An unavailable backend's
 * rows say so (status WK_UNSUPPORTED, reason "unavailable: ..."). Call it with no other
 * threads running (workers fork). Returns 0, or -1 with d when the sweep itself failed
 * (the oracle or a budget: code 3; a format it does not sweep: code 2). */
int vf_ulp_sweep(const Backend *const *bes, int nbes, Dtype f, const VfUlpOpts *o,
		 VfUlpRow *rows, int *nrows, Diag *d);

/* ------------------------------------------------------------------- records */

/* Writes r as one JSON object on one line (non-finite numbers as the strings "inf",
 * "-inf", "nan"). */
void vf_record_json(FILE *f, const VfRecord *r);

/* Creates path and its parents (mkdir -p). -1 with d (code 2). */
int vf_mkdirs(const char *path, Diag *d);
int vf_write_text(const char *path, const char *text, Diag *d);
/* Appends r to DIR/results.jsonl, flushed and fsync'ed. */
int vf_append_record(const char *dir, const VfRecord *r, Diag *d);

/* The vocabulary of a record's cov and rules fields, for the readers of records
 * (reports/, which uses verify/ and nothing of compiler/): the coverage point p's name,
 * area and description (compiler/cov.def), the point named name[0..len) (-1: none this
 * build knows), whether backend's runs can reach p at all, and every rewrite rule the
 * compiler has (st->nrules of them). */
const char *vf_cov_name(int p);
const char *vf_cov_area(int p);
const char *vf_cov_what(int p);
int vf_cov_find(const char *name, size_t len);
bool vf_cov_reaches(int p, const char *backend);
void vf_rules(RwStats *st);

/* s (NULL: "") as a JSON string literal, quotes included (records, campaign logs, reports). */
void vf_json_str(FILE *f, const char *s);
/* x as a JSON number (%.17g), non-finite ones as the strings "inf", "-inf", "nan". */
void vf_json_num(FILE *f, double x);

/* --------------------------------------------------------------- provenance */

/* assay's version ("0.1.0") and the git commit it was built from ("1a2b3c4", with
 * "-dirty" when the tree had changes; "unknown" outside a git checkout): the Makefile
 * compiles the commit into provenance.c alone. Static strings. */
const char *vf_version(void);
const char *vf_commit(void);

/* Writes DIR/provenance.json (atomically: a temporary file, fsync'ed, renamed), what a
 * report's header says about the run (provenance.c lists the fields): assay's version and
 * commit, the command line (`assay CMD argv...`), the seed, each backend's device and
 * driver (Backend.device(), asked in a forked child so that no driver state stays in the
 * caller, which forks workers; an unavailable backend says why), the host, the date. argv
 * may be NULL (argc 0: no command line known). Call it with no other threads running.
 * 0, or -1 with d (code 3: DIR cannot be written). */
int vf_provenance_write(const char *dir, const char *cmd, int argc, char *const *argv,
			const Backend *const *bes, int nb, uint64_t seed, Diag *d);

/* ------------------------------------------------------------------- decode */

/* A model for `assay decode` (decode.c states the conventions; docs/decode.md). */
typedef struct {
	Graph *prefill, *decode;
	int64_t nprompt;       /* T: the prompt's length (prefill's `tokens`) */
	int64_t vocab;         /* the logits' length */
	int64_t nblocks, npages, block;   /* NB (pages' length), NP and BS of the caches */
	int logits_pre, logits_dec;       /* output index of `logits` in each graph */
	int ncache;            /* cache entries */
	int *cache_in;         /* per entry: decode's input index of cache_X */
	int *cache_dec;        /* per entry: decode's output index of X */
	int *cache_pre;        /* per entry: prefill's output index of X */
	HostTensor *weights;   /* per decode input (its weights; the rest empty) */
	int nweights, nloaded; /* weights, and of them read from MODEL/weights/ */
	int embed;             /* decode's input read through tok (the embedding), or -1 */
} VfModel;

/* Loads MODEL/prefill.tg (with T = nprompt when nprompt > 0) and MODEL/decode.tg, checks
 * their conventions, and reads or generates the weights from seed. 0, or -1 with d (code
 * 2: the model is wrong, naming the file and line; 3: memory). */
int vf_model_load(const char *dir, int nprompt, uint64_t seed, VfModel *m, Diag *d);
void vf_model_free(VfModel *m);

typedef enum { VD_AGREE, VD_LICENSED, VD_DEFECT, VD_FAILED, VD__COUNT } VfStepClass;
const char *vf_step_class_name(VfStepClass c);   /* "agree", "licensed", "defect", "failed" */

/* One decode step of one history (decode.jsonl's record). */
typedef struct {
	const char *model, *backend, *sched;
	int step;              /* 0: the prefill's token */
	int64_t pos;           /* the position whose logits chose the token */
	int token;             /* the backend's token (its first largest logit) */
	int exact_token;       /* the oracle's, along the backend's history */
	VfStepClass cls;
	double margin;         /* z[exact_token] - z[token] (exact logits) */
	double budget;         /* beta[exact_token] + beta[token] */
	double gap;            /* how far the step was from a flip: z[exact_token] minus the
	                          largest exact logit of the other candidates; with no other
	                          candidate, minus the largest upper bound (y + beta) of the
	                          rest (a lower bound of the exact gap: gap_exact false) */
	double gap_budget;     /* beta[exact_token] + beta[runner-up] (0 with no other
	                          candidate): a flip to the runner-up within it is licensed */
	bool gap_exact;
	int ncand;             /* tokens evaluated exactly as candidates */
	Verdict logits_verdict;   /* the checked logits against their budgets (or the
	                             kernel's failure) */
	double max_ratio;      /* worst |error| / budget among the checked logits */
	char reason[512];
} VfStep;

typedef void VfStepSink(void *ctx, const VfStep *s);

typedef struct {
	int steps;             /* tokens to generate (the prefill's included) */
	uint64_t seed;         /* page table, generated prompt, sampled logits */
	const int32_t *prompt; /* the prompt's first tokens, or NULL (generated) */
	int nprompt_given;
	int64_t check_logits;  /* other logits checked exactly per step */
	int64_t oracle_mem;    /* MpOpts.mem_cap */
	WorkerOpts w;
	const char *out_dir;   /* DIR/decode.jsonl and DIR/results.jsonl, or NULL */
	VfSink *sink;          /* each step's check records */
	VfStepSink *on_step;
	void *ctx;
} VfDecodeOpts;

typedef struct {
	int steps;
	int n[VD__COUNT];
	char unsupported[512];   /* the backend cannot run the history: why ("" otherwise) */
} VfDecodeSummary;

/* The greedy decode of m on backend b, the prefill under schedule sp and every step under
 * sd, for o->steps tokens; each step judged (decode.c) and written. A kernel that fails
 * ends the history with a `failed` step. 0, or -1 with d (2: too many steps for the cache;
 * 3: the oracle, a budget, the environment). */
int vf_decode(const VfModel *m, const Backend *b, const VfSched *sp, const VfSched *sd,
	      const VfDecodeOpts *o, VfDecodeSummary *sum, Diag *d);

/* ---------------------------------------------------------------- invariance */

enum { VF_INV_KINDS = 7, VF_INV_MAXV = 16 };
const char *vf_inv_kind_name(int k);   /* "none", "split", "tile", "order", "accum", ... */

typedef struct {
	const char *size;            /* the batch size's name */
	int64_t values[VF_INV_MAXV]; /* the smaller batches */
	int nvalues;
	const char *sched_at[VF_INV_MAXV];   /* per value: schedule text used there instead of
	                                        the full run's (NULL: the same schedule) */
	const char *sched_file[VF_INV_MAXV]; /* its file, for messages */
	int nsampled;                /* sampled schedules besides the graph's own */
	const char *schedule;        /* --schedule FILE's text replacing the graph's block, or
	                                NULL */
	const char *schedule_file;
} VfInvOpts;

typedef struct {
	int64_t compared;            /* (backend, schedule, output, batch) comparisons */
	int64_t noninvariant;        /* of them, not bitwise identical */
	int64_t failed;              /* of those, under the same schedule (failures) */
	int64_t kind_results[VF_INV_KINDS], kind_noninv[VF_INV_KINDS];
	bool env_failed;
} VfInvSummary;

/* Batch invariance of the graph at path (invariance.c): records to o->sink and
 * o->out_dir/results.jsonl (graph NAME@SIZE=V). 0, or -1 with d (2: a size that is not
 * there or not smaller, a graph that does not parse; 3: the oracle, the environment). */
int vf_invariance(const char *path, const SizeOverride *ov, int nov, const Backend *const *bs,
		  int nb, const VfInvOpts *io, const VfOpts *o, VfInvSummary *sum, Diag *d);
/* The same for the graph text `text` (its file name path, for messages). */
int vf_invariance_text(const char *text, const char *path, const SizeOverride *ov, int nov,
		       const Backend *const *bs, int nb, const VfInvOpts *io, const VfOpts *o,
		       VfInvSummary *sum, Diag *d);

#endif
