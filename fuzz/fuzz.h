/* fuzz/fuzz.h: the public face of fuzz/: random graphs valid by construction (this section),
 * and, as they are written, the campaign loop, the reducer, deduplication and the seeded
 * faults (their own sections below).
 *
 * Invariants
 * - Everything is a deterministic function of (campaign seed, case number) and the options
 *   (with coverage feedback, the case's options are biased by the coverage of earlier
 *   epochs of the log: cover.c): no global state, no clock, no thread dependence. fz_seed derives the independent
 *   streams of one case (graph, schedule, inputs) with a counter-based mixer, so a case can be
 *   replayed alone: fz_gen (graph and schedule) and fz_gen_inputs (inputs) are independent.
 * - A generated graph is valid by construction: its text passes the checker (ir_parse)
 *   without retry, every quasi-affine read is provably in bounds or padded with `??`, every
 *   indirect read goes through an i32 tensor whose values are in bounds (an index table that
 *   mp_make_inputs draws in bounds, or a topk/argmax/integer definition whose value range the
 *   generator tracked), no integer can leave 32 bits, no topk range is shorter than K, no `%`
 *   divides by zero and no integer max/min runs over an empty range.
 * - By default decisions (conditions of `?:`, floor/ceil arguments, argmax/argmin/topk
 *   terms) are made on values the exact oracle can decide: exact ring arithmetic of inputs,
 *   or one irrational function of such a value compared with a dyadic literal. Elsewhere
 *   every function appears freely (NaN from log of a negative value included).
 */
#ifndef ASSAY_FUZZ_H
#define ASSAY_FUZZ_H

#include "../compiler/compiler.h"
#include "../interp/interp.h"

/* ================================================================ generator */

/* Index-expression kinds of a read (knob weights; counted by the tests). Transposes come
 * from the order in which variables meet dimensions, not from a kind of their own. */
typedef enum {
	FZ_IX_VAR,       /* x[i] */
	FZ_IX_REVERSE,   /* x[N - 1 - i] */
	FZ_IX_STRIDE,    /* x[2 * i + 1] */
	FZ_IX_WINDOW,    /* x[i + k - 1] (padded with ?? when it may fall outside) */
	FZ_IX_DIV,       /* x[i / 3] */
	FZ_IX_MOD,       /* x[(i + 1) % N] */
	FZ_IX_RESHAPE,   /* x[r / C, r % C] (two dimensions at once) */
	FZ_IX_FLAT,      /* x[i * 4 + j] */
	FZ_IX_CONST,     /* x[0], x[N - 1] (broadcast) */
	FZ_IX_INDIRECT,  /* x[tab[i]], x[topk_ix[i, r]] */
	FZ_IX__COUNT
} FzIxKind;

/* Reduction ranges. */
typedef enum {
	FZ_RANGE_FULL,   /* j:E */
	FZ_RANGE_TRI,    /* j: 0..i+1 */
	FZ_RANGE_TAIL,   /* j: i..E */
	FZ_RANGE_LIT,    /* j: 1..E */
	FZ_RANGE_SLIDE,  /* j: i..i+3 */
	FZ_RANGE__COUNT
} FzRangeKind;

enum { FZ_MAXRANK = 6, FZ_MAXRED = 3 };

/* Directives the directed pass over a case's schedule may give a definition (fuzz/cover.c,
 * fz_direct_schedule): coverage feedback raises their chances (GenOpts.p_dir). */
typedef enum {
	FZ_SD_TILE,      /* a partial tile in one dimension (the extent not a multiple of it) */
	FZ_SD_TILE2,     /* partial tiles in two dimensions */
	FZ_SD_SPLIT,     /* a split of a reduction index */
	FZ_SD_PAIRWISE,  /* order pairwise */
	FZ_SD_STORE16,   /* store in f16 or bf16 */
	FZ_SD_ACCUM16,   /* accumulate in f16 or bf16 */
	FZ_SD_ACCUM64,   /* accumulate in f64 */
	FZ_SD_INLINE,    /* inline a plain definition that is not an output */
	FZ_SD__COUNT
} FzDirected;

/* Knobs. fz_gen_defaults fills every field; change any afterwards. Weights are relative
 * (0 excludes: monoid_w[MO_TOPK] = 0 leaves topk out); probabilities are in [0, 1]. */
typedef struct {
	/* size */
	int max_rank;        /* rank of tensors, 0 .. FZ_MAXRANK (default 4) */
	int max_extent;      /* largest size and fresh extent (default 13); a view may widen an
	                        input's dimension past it (a stride doubles one) */
	int max_defs;        /* definitions per graph, at least 1 (default 6) */
	int max_inputs;      /* input tensors (index tables included) (default 5) */
	int max_depth;       /* expression depth (default 4) */
	int max_red;         /* reduction indices of one definition, 1 .. FZ_MAXRED (default 2) */
	int64_t max_elems;   /* elements of one tensor (default 512) */
	int64_t max_work;    /* estimated scalar operations of one exact evaluation (default 1e5) */
	int max_large;       /* largest large size (default 100; 0: none): sizes above
	                        max_extent, so that tiles of 16, 32, 64 are partial */
	/* weights */
	unsigned op_w[OP__COUNT];          /* every op of the op table (IDIV and MOD feed indices
	                                      and integer values; comparisons and && || ! feed
	                                      conditions) */
	unsigned monoid_w[MO__COUNT];      /* MO_NONE: a plain body */
	unsigned ix_w[FZ_IX__COUNT];
	unsigned range_w[FZ_RANGE__COUNT];
	unsigned in_dtype_w[DT_I32 + 1];   /* input formats (i32: small integer value tables) */
	unsigned out_dtype_w[DT_I32 + 1];  /* output formats (i32 only for integer results) */
	/* probabilities */
	double p_int_def;    /* a definition is integer-valued (default 0.15) */
	double p_oob;        /* an index may fall outside (and the read gets `??`) (0.12) */
	double p_pad;        /* an in-bounds read gets `??` anyway (0.03) */
	double p_extra_output; /* a used definition is an output too (0.3) */
	double p_schedule;   /* a schedule block from sched_sample (default 0.5) */
	double p_ident;      /* an expression is put in a pattern of the rewrite rules (x * 1.0,
	                        x / 4.0, c ? x : x, casts of casts, i + 0, x * 0.0...) (0.07) */
	double p_reread;     /* a read is a tensor read twice in one expression, through two views
	                        or paddings, a padding reached (0.03) */
	double p_compose;    /* an expression is a composition no rewrite rule has: f(a * b),
	                        (a * b) / b, a * b + a * c, (a + b) - b, min(a, max(a, b))... (0.03) */
	double p_tie;        /* the terms of an argmax, argmin, topk, max or min are made to tie
	                        (a clamp by a literal, an index seen through r / c, x * 0.0) (0.3) */
	double p_large;      /* a size is large: 17 .. max_large (0.2) */
	double p_tile;       /* a sampled schedule tiles a definition partially: a tile of 16, 32
	                        or 64 on a large extent, or two dimensions at once (0.7) */
	double p_inline_fmt; /* a sampled schedule inlines a plain definition into a reduction
	                        that accumulates in f16 or bf16 (or one stored there) (0.5) */
	double p_spec;       /* a graph is fully specified: only + - * (and, half the time, / and
	                        sqrt), casts to f32/f16/bf16, min, max, abs, neg, floor, ceil, ?:,
	                        integer ops; no f64 format, no logsumexp; so that every output is
	                        held to the emulation bit for bit on c, opencl and vulkan (0.3) */
	double p_online;     /* a graph is built around a one-pass shape (softmax, attention,
	                        logsumexp, welford: fuzz/gen_online.c) and its sets mostly
	                        scheduled `online` (0.16) */
	bool risky_ties;     /* allow computed values in decisions: may make the exact oracle
	                        report unsamplable elements (default false) */
	double p_dir[FZ_SD__COUNT];   /* per definition, the chance that the directed pass gives
	                        it that directive (default 0: fz_gen as without the pass) */
} GenOpts;

void fz_gen_defaults(GenOpts *o);

/* The independent 64-bit seed of one stream of one case (deterministic, counter-based). */
enum { FZ_STREAM_GRAPH, FZ_STREAM_SCHEDULE, FZ_STREAM_INPUTS, FZ_STREAM__COUNT };
uint64_t fz_seed(uint64_t seed, uint64_t case_no, unsigned stream);

/* The generated text of case (seed, case_no), before the checker and without a schedule
 * block. Never NULL (aborts on out of memory); the caller frees. */
char *fz_gen_raw(const GenOpts *o, uint64_t seed, uint64_t case_no);

/* The checked graph of case (seed, case_no): fz_gen_raw parsed by ir_parse, with a schedule
 * block from sched_sample with probability o->p_schedule, then the directed pass
 * (fz_direct_schedule, when some o->p_dir is above 0). NULL with d filled if the checker
 * rejects it (a generator bug: no retry is made). The caller frees (ir_free). */
Graph *fz_gen(const GenOpts *o, uint64_t seed, uint64_t case_no, Diag *d);

/* The canonical text (ir_print) of fz_gen's graph, or NULL with d. The caller frees. */
char *fz_gen_text(const GenOpts *o, uint64_t seed, uint64_t case_no, Diag *d);

/* Replaces g's schedule by a random legal one (sched_sample seeded by fz_seed(seed, case_no,
 * FZ_STREAM_SCHEDULE)), as a schedule block that ir_print prints. 0, or -1 with d. */
int fz_gen_schedule(Graph *g, uint64_t seed, uint64_t case_no, Diag *d);
/* The directed pass (fuzz/cover.c): gives each definition of g, with the chances of
 * o->p_dir, the directives of FzDirected that apply to it (replacing its own of the same
 * kind), from a stream of its own (a function of seed and case_no). Where the result does
 * not parse, g keeps its schedule. Nothing changes, and nothing is drawn, when every
 * p_dir is 0. */
void fz_direct_schedule(Graph *g, const GenOpts *o, uint64_t seed, uint64_t case_no);

/* The input distribution of case (seed, case_no): normal, uniform, adversarial, edges, or
 * adversarial with inf and NaN, in equal shares, seeded from FZ_STREAM_INPUTS. */
InputSpec fz_gen_input_spec(uint64_t seed, uint64_t case_no);

/* The inputs of g for case (seed, case_no) (mp_make_inputs with fz_gen_input_spec): inputs
 * has ir_ninputs(g) slots, allocated here (free each with ht_free). 0, or -1 with d. */
int fz_gen_inputs(const Graph *g, uint64_t seed, uint64_t case_no, HostTensor *inputs, Diag *d);

/* ================================================================ checking one case */

#include "../verify/verify.h"

/* Leaves out of o (weight 0) every op, monoid and input or output format that capabilities
 * c lack: the graphs drawn then need only what an external kernel declares it takes
 * (`assay fuzz --external`). */
void fz_gen_restrict(GenOpts *o, const VfCaps *c);

enum { FZ_MAXBACKENDS = 8 };

/* How the fuzzer checks a graph (campaign cases, classification, the reducer): exactly
 * `assay check G.tg --backends LIST --seed SEED --inputs DIST [--specials]` under the
 * graph's own schedule (its schedule block, else the default), with ASSAY_FAULT=faults. */
typedef struct {
	const Backend *backends[FZ_MAXBACKENDS];
	int nbackends;
	uint64_t seed;           /* the inputs' seed (below 2^63, as --seed reads it) */
	Dist dist;
	bool specials;           /* adversarial inputs also hold inf and NaN */
	uint64_t faults;         /* KF_* in effect */
	unsigned hooks;          /* VF_HOOK_* (tests) */
	double timeout_s;        /* a worker's run limit (<= 0: 20) */
	double compile_timeout_s; /* a worker's compile limit (<= 0: 120) */
	const char *cache_dir;   /* the backends' cache (NULL: their default) */
	VfPool *pool;            /* persistent workers of this process (NULL: a fresh worker per
	                            run); borrowed */
	const char *out_dir;     /* non-NULL: keep the check's files there (verify's -o layout:
	                            inputs, oracle, kernel sources, outputs, results.jsonl) */
	bool pair;               /* the graph checked is an original, and what fz_check reports
	                            is its variant of recipe (pair_kind, pair_seed), each record
	                            compared with the original's (fz_check_pair, meta.c) */
	int pair_kind;           /* an FzVariantKind */
	uint64_t pair_seed;
	bool grad;               /* `assay fuzz --grad`: judge g's gradient instead (grad.c): the
	                            derivation, and the gradient graph's kernels on backends */
	bool grad_verify;        /* grad: run the directional test of the derivation */
	int grad_pairs;          /* its (cotangent, direction) pairs (<= 0: 2) */
	bool invariance;         /* `assay fuzz --invariance`: judge g's batch invariance instead
	                            (inv.c) */
	char inv_at[80];         /* a repro's "SIZE=V" (fz_inv_choice of the repro), for its
	                            header; "" elsewhere */
	int probes;              /* the sums of g probed FPRev-style on every backend of the run,
	                            at most (probe.c; 0: none): records of schedule "probe" */
} FzRun;

/* One (backend, output) verdict. */
typedef struct {
	char backend[16];
	char output[64];
	Dtype dtype;
	Verdict verdict;
	bool suspect;            /* vf_class VC_FAILURE: a failure the fuzzer chases */
} FzVerdict;

/* One record's numbers, kept to compare another run with (FzResult.keep). */
typedef struct {
	char backend[16];
	char sched[16];          /* VfRecord.sched: "graph", "default" (a graph with an online
	                            set is also checked under the default schedule), ... */
	char output[64];
	HostTensor got;          /* the backend's output (n 0: none) */
	HostTensor want;         /* the oracle's values of the compared elements */
	uint8_t *status;         /* per element of want (MpStatus), or NULL */
	bool sampled;            /* want holds sampled elements only */
	bool failing;            /* the record is a failure (vf_class VC_FAILURE) */
} FzKept;

/* What fz_check gathers: every verdict, optionally every record as JSON, and the time
 * spent in each part (the oracle once per check, the rest once per worker run). */
typedef struct FzResult FzResult;
struct FzResult {
	FzVerdict *v;
	int n, cap;
	FILE *json;              /* non-NULL: each record is written here as one JSON line */
	const char *json_extra;  /* with this text added as its last member ("\"case\":7") */
	double oracle_s, budget_s, compile_s, launch_s, worker_s;
	/* Comparing a metamorphic variant with its original (meta.c): */
	bool keep;               /* keep every record's numbers in kept[] */
	FzKept *kept;
	int nkept;
	const FzResult *against; /* non-NULL: compare each record with against's kept record of
	                            the same backend and output: the oracle's values must be the
	                            same (else oracle_diff), and with against_bit the outputs too,
	                            bit for bit, where neither record is a failure (else the
	                            record's verdict becomes V_VARIANT_MISMATCH) */
	bool against_bit;
	const char *variant;     /* the variant's name and claim, for the reasons */
	char *oracle_diff;       /* the first oracle value that differs (malloc'ed), or NULL */
	char grad_note[256];     /* FzRun.grad: "derived", or "unsupported: WHY" ("": no grad) */
	char inv_note[128];      /* FzRun.invariance: "SIZE=V of FULL", or why there is no batch */
};

/* Checks g under r: inputs from (r->seed, r->dist, r->specials), the oracle, a worker per
 * backend. Appends to res (which the caller zeroes, and frees with fz_result_free).
 * Returns 0, or -1 with d when the toolkit could not judge (the oracle or a budget failed,
 * the inputs could not be made): never for a verdict. */
int fz_check(const Graph *g, const FzRun *r, FzResult *res, Diag *d);
/* fz_check of g's batch invariance (r->invariance; inv.c), and the batch it draws: the
 * index of the size in g->sizes (-1: none) and its smaller value. */
int fz_check_inv(const Graph *g, const FzRun *r, FzResult *res, Diag *d);
int fz_inv_choice(const Graph *g, uint64_t seed, int64_t *value);
/* A record the fuzzer makes itself (no kernel's check: a derivation's, a probe's), of graph
 * g under run r, into res through fz_sink_record. */
typedef struct {
	const char *backend, *sched, *sched_text, *output;
	Dtype dtype;
	Verdict verdict;
	const char *reason, *emu_why;
	int64_t n_elements;
} FzMade;
void fz_sink_made(const Graph *g, const FzRun *r, FzResult *res, const FzMade *m);
/* The FPRev probes of g's sums (r->probes; probe.c): records of schedule "probe" into res,
 * whose output is the sum's name and verdict pass or tree-mismatch. 0, or -1 with d. */
int fz_check_probes(const Graph *g, const FzRun *r, FzResult *res, Diag *d);
#define FZ_PROBES 2           /* sums probed per case by default */
#define FZ_PROBE_LEAVES 40    /* their summands, at most (L (L - 1) / 2 rows in one run) */
/* fz_check of g's gradient (r->grad; grad.c). */
int fz_check_grad(const Graph *g, const FzRun *r, FzResult *res, Diag *d);
/* The verifier's options of a check under r (its limits, faults, pool, inputs), records to
 * fn(ctx) (run.c; fz_check and inv.c). */
VfOpts fz_vf_opts(const FzRun *r, VfSink *fn, void *ctx);
/* Appends one record to res as fz_check's own records are (its verdict, its JSON line). */
void fz_sink_record(FzResult *res, const VfRecord *rec);
void fz_result_free(FzResult *res);
/* The index in res of the first failing verdict of (backend, output), or -1. */
int fz_result_find(const FzResult *res, const char *backend, const char *output);

/* ================================================================ signatures (dedup.c) */

/* A failure's signature: what makes two failures the same (deduplication) and what the
 * reducer must keep. The implicated directive kinds and faults are found by ablation: a
 * directive kind is implicated when removing every directive of that kind from the graph's
 * schedule makes the failure go away; the seeded faults are implicated when switching them
 * off makes it go away (0: the failure needs no seeded fault, a finding about the toolkit
 * itself). "Goes away": the (backend, output) verdict is no longer the same. */
typedef struct {
	char backend[16];
	Verdict verdict;
	Dtype dtype;             /* the output's format; DT_NONE ("-" in the key) for a verdict
	                            about the whole kernel (crash, timeout, oob-write,
	                            compile-error), which every output repeats */
	char output[64];         /* the output's name: kept by the reducer; not in the key */
	unsigned dirs;           /* 1 << DirKind of each implicated directive kind */
	uint64_t faults;         /* implicated KF_* */
} FzSig;

/* The key of s, "c/over-budget/f16/tile+split/drop_tail" ("-" for no directive or no
 * fault); also the name of its failure folder (with '/' as '.'). Returns buf. */
const char *fz_sig_key(const FzSig *s, char *buf, size_t n);
/* Parses a key (output left empty). 0, or -1 if malformed. */
int fz_sig_parse(const char *key, FzSig *s);

/* The signature of every failing verdict of res (the check of g under r): sigs[k] for
 * res->v[k] (allocated here, res->n entries; entries of passing verdicts have verdict
 * V_PASS). One ablation run per directive kind present and one for the faults, each on
 * the backends that failed. 0, or -1 with d when the environment failed (d->env). */
int fz_classify(const Graph *g, const FzRun *r, const FzResult *res, FzSig **sigs, Diag *d);

/* Whether g fails under r with signature s: the s->backend verdict of output s->output is
 * s->verdict (and its format s->dtype); every implicated directive kind is present and
 * implicated; the implicated faults are (switching them off makes it go away), and with
 * s->faults == 0 the failure stays with every fault off. 0 with *holds, or -1 with d when
 * the environment failed (d->env: the question has no answer). */
int fz_holds(const Graph *g, const FzRun *r, const FzSig *s, bool *holds, Diag *d);

/* A copy of g (through its text) without the directives of the kinds in mask. */
Graph *fz_without_dirs(const Graph *g, unsigned mask, Diag *d);
/* 1 << kind for each directive kind in g's schedule. */
unsigned fz_dir_kinds(const Graph *g);

/* Writes a failure folder DIR (created): repro.tg (the minimal repro with `header` as its
 * leading comment lines; written last, by rename, so its presence means the folder is
 * complete), original.tg, signature, and, from a check of the repro on s->backend kept
 * with -o (verify's layout): the inputs, the oracle's outputs, the kernel source and the
 * backend's outputs as .npy, and results.jsonl. 0, or -1 with d. */
int fz_save_failure(const char *dir, const FzSig *s, const char *repro, const char *header,
		    const char *original, const FzRun *r, Diag *d);
/* Writes text to path atomically (a temporary file, fsync, rename). 0, or -1 with d. */
int fz_write_atomic(const char *path, const char *text, Diag *d);

/* ================================================================ editing graphs (edit.c) */

/* What an edit changes besides the Graph itself (fz_print_masked). fz_mask_init allocates
 * the arrays for g (nothing dropped, formats kept, file order, no directive added);
 * fz_mask_free frees them, order included (a caller that sets order mallocs it). */
typedef struct {
	bool *drop;           /* per tensor: a definition or input left out */
	bool *as_input;       /* per tensor: a definition printed as an input */
	bool *drop_out;       /* per output */
	bool *drop_dir;       /* per directive */
	Dtype *in_dt;         /* per tensor: an input's new format (DT_NONE: its own) */
	int *order;           /* NULL: tensors in id order; else norder tensor ids, the order in
	                         which they are printed (readers after what they read) */
	int norder;
	const char *extra_dirs; /* directive lines added to the schedule block (borrowed), or
	                         NULL */
} FzMask;

void fz_mask_init(const Graph *g, FzMask *m);
void fz_mask_free(FzMask *m);
/* The .tg text of g under m (malloc'ed): whatever no kept output needs is left out (dead
 * definitions, unused sizes, the directives of what is gone), but every input not dropped
 * stays declared. Not checked: parse it to know whether the edit is a graph. */
char *fz_print_masked(const Graph *g, const FzMask *m);

/* A rewrite of expressions (fz_rebuild): node `from` becomes `to`; index variable v becomes
 * vmap[v] when set; reads of tensor `inl` (a plain definition; -1: none) become its body at
 * their indices, and a padded one sets `bad` (inlining it would drop the padding). New
 * nodes are hash-consed into g. */
typedef struct {
	Graph *g;
	Ref from, to;
	Ref vmap[IR_MAXVARS];
	int inl;
	bool bad;
} FzSub;

Ref fz_rebuild(FzSub *s, Ref r);
/* Applies s to every expression of definition d (range bounds and body). */
void fz_rebuild_def(FzSub *s, int d);

/* Calls fn on r and every node below it (read indices and paddings, operands), root first;
 * fz_walk_def on the range bounds and the body of definition d. */
typedef void FzWalkFn(const Graph *g, Ref r, void *ctx);
void fz_walk(const Graph *g, Ref r, FzWalkFn *fn, void *ctx);
void fz_walk_def(const Graph *g, int d, FzWalkFn *fn, void *ctx);
/* An FzWalkFn gathering the distinct nodes walked, in order, into an FzNodes (ctx; zeroed
 * first, r freed by the caller). */
typedef struct {
	Ref *r;
	int n, cap;
} FzNodes;
void fz_collect(const Graph *g, Ref r, void *ctx);

/* ================================================================ metamorphic variants (meta.c) */

/* The kinds of variant (meta.c proves each one keeps every output's exact value):
 *   swap     operands of a commutative op exchanged (+ * min max == != && ||, fma's
 *            product), a comparison mirrored (a < b as b > a)
 *   view     an index expression written another way ((C*e + k) / C, (e - E) % E)
 *   copy     a read through a new definition holding a view of the tensor (reversed,
 *            transposed or as it is), read back through the inverse view
 *   split    a subexpression hoisted into its own stored definition
 *   inline   `inline e` for a plain definition
 *   reverse  a reduction range taken in the reverse order
 *   cast     a read wrapped in casts that are the identity on its values */
typedef enum {
	FZ_VK_SWAP, FZ_VK_VIEW, FZ_VK_COPY, FZ_VK_SPLIT, FZ_VK_INLINE, FZ_VK_REVERSE, FZ_VK_CAST,
	FZ_VK__COUNT
} FzVariantKind;

const char *fz_variant_kind_name(FzVariantKind k);   /* "swap", ... */
int fz_variant_kind_parse(const char *s);           /* -1 if unknown */

/* A variant of a graph: a checked graph with the same inputs and outputs and the same
 * exact value. (kind, seed) is its recipe: fz_variant_make of the same graph with it makes
 * it again. Owns text and g (fz_variant_free). */
typedef struct {
	FzVariantKind kind;
	uint64_t seed;
	bool bit;            /* claims a bit-identical emulation; else "within budget" only */
	char name[32];       /* "swap" (fz_variant_make), "v1.swap" (fz_variants: its number) */
	char what[400];      /* the edit in words: "operands swapped in d2: a + b -> b + a" */
	char *text;          /* canonical text (ir_print of g) */
	Graph *g;            /* its graph is named ORIGINAL_KIND */
} FzVariant;

/* The variant of kind `kind` of g made with seed (a site of that kind picked by the seed,
 * the next ones tried when its edit does not check): 1 with *v, 0 when g has no site of
 * that kind whose edit checks (*v zeroed). Deterministic in (ir_print(g), kind, seed). */
int fz_variant_make(const Graph *g, FzVariantKind kind, uint64_t seed, FzVariant *v);
/* Up to max variants of g (out has max slots), kinds in an order drawn from seed, each
 * kind once before any twice; named v1.KIND, v2.KIND, ... Returns how many. */
int fz_variants(const Graph *g, uint64_t seed, int max, FzVariant *out);
void fz_variant_free(FzVariant *v);

/* Holds v's claims to the emulator: its inputs (from spec, generated from its own text as a
 * check generates them) must be g's, and, when it claims bit-identity, its emulation (each
 * graph under its own schedule) must equal g's bit for bit (NaN as a category). *same
 * false with why: a claim refuted (a toolkit bug: the transformation or the emulator).
 * 0, or -1 (an error) or -2 (a limit of o) with d. */
int fz_variant_verify(const Graph *g, const FzVariant *v, const InputSpec *spec, const MpOpts *o,
		      bool *same, char *why, size_t n, Diag *d);
/* The first flat index where a and b differ (bits; NaN equals NaN), elements where skip_a
 * or skip_b (either may be NULL) is non-zero left out, or -1 when they are the same (0
 * when their formats or sizes differ). */
int64_t fz_first_difference(const HostTensor *a, const HostTensor *b, const uint8_t *skip_a,
			    const uint8_t *skip_b);
/* fz_check of r->pair: the variant of recipe (r->pair_kind, r->pair_seed) of original g is
 * made (none, or one that claims no bit-identity: nothing is reported), g is checked (its
 * numbers kept), then the variant, compared with it (FzResult.against): res gets the
 * variant's verdicts. 0, or as fz_check. */
int fz_check_pair(const Graph *g, const FzRun *r, FzResult *res, Diag *d);

/* ================================================================ the reducer (reduce.c) */

typedef struct {
	FzRun run;               /* how to check; its backends are replaced by the signature's */
	int max_tests;           /* candidate checks at most (<= 0: 400) */
	double max_seconds;      /* wall-clock bound (<= 0: none; a bound makes results depend on
	                            the machine's speed) */
	FILE *log;               /* a line per accepted step, or NULL */
} FzReduceOpts;

typedef struct {
	int tests;               /* candidates checked (fz_holds calls) */
	int accepted;            /* of them, kept */
	int rounds;
	int defs_before, defs_after;
	double seconds;
	bool exhausted;          /* stopped by max_tests or max_seconds before a fixpoint */
	uint64_t seed;           /* the inputs of the result (the reducer may narrow them) */
	Dist dist;
	bool specials;
} FzReduceStats;

/* Delta debugging over g, which fails with signature s under o->run (fz_holds must hold:
 * -1 with d, code 2, if it does not): drops outputs and definitions (a definition becomes
 * an input, or is substituted into its readers), drops schedule directives, turns a
 * reduction into a plain expression, drops reduction indices and narrows their ranges,
 * shrinks sizes and literal extents, replaces subexpressions (index expressions included)
 * by an operand or a constant, removes padding, and narrows the inputs (formats, the
 * distribution; the seed is kept). Each candidate is re-parsed (ir_parse checks it) and kept
 * only when fz_holds: the same signature. Deterministic for a given max_tests. *out gets the
 * canonical text (ir_print, schedule block included) of the smallest graph; the caller
 * frees. 0, or -1 with d. */
int fz_reduce(const Graph *g, const FzSig *s, const FzReduceOpts *o, char **out,
	      FzReduceStats *st, Diag *d);

/* The comment lines a repro carries: its signature, the command that reproduces it (seed,
 * inputs, faults) and `origin` (may be NULL). The caller frees. fz_repro_inputs reads the
 * inputs back from such a text: 1 when found, 0 when the text has none. */
char *fz_repro_header(const FzSig *s, const FzRun *r, int defs, const char *origin);
int fz_repro_inputs(const char *text, uint64_t *seed, Dist *dist, bool *specials);

/* ================================================================ campaigns (campaign.c) */

/* The bytes of a campaign's baseline keys at most (FzCampaign.baseline). */
enum { FZ_BASELINE_MAX = 32768 };

/* A campaign's settings (DIR/settings.json, written first; --resume reads them back). */
typedef struct {
	uint64_t seed;
	int64_t cases;           /* stop after this many cases in all (0: no limit) */
	double seconds;          /* stop dispatching after this long (0: no limit) */
	int jobs;                /* job processes (>= 1) */
	char backends[128];      /* comma list */
	char inputs[32];         /* "mix" (every distribution, drawn per case) or one name */
	uint64_t faults;         /* KF_* (ASSAY_FAULT) */
	unsigned hooks;          /* VF_HOOK_* (ASSAY_TEST_*) */
	double timeout_s;        /* a worker's run limit (alloc to download) */
	double compile_timeout_s; /* a worker's compile limit (rewrite to compile) */
	bool reduce;             /* reduce each new distinct failure */
	int reduce_tests;        /* the reducer's max_tests */
	bool until_failure;      /* stop at the first distinct failure (with faults on: the first
	                            the faults are implicated in; never one the baseline lists)
	                            once it is reduced; with faults on, failures they are not in
	                            are saved unreduced, and so is any found after it */
	double case_limit_s;     /* a job's case or reduction running longer is killed and the
	                            case recorded as an error (<= 0: 600) */
	int feedback_epoch;      /* coverage feedback (fuzz/cover.c): cases per epoch, the
	                            generator of epoch e biased toward the compiler's points that
	                            epochs 0 .. e-2 never reached; 0: none (a campaign made
	                            before feedback existed) */
	char baseline[FZ_BASELINE_MAX]; /* the failures already known: signature keys, each ended
	                            by '\n', sorted, no repeats ("": none; fz_baseline_load) */
	char baseline_from[256]; /* where they were read (a campaign directory or a list) */
	double variants;         /* metamorphic variants checked per case (meta.c): its whole
	                            part in every case, and one more with the probability of its
	                            fraction (0.25: one variant in a quarter of the cases), at
	                            most FZ_MAX_VARIANTS; 0: none; default 0.25 */
	bool invariance;         /* --invariance: each case judges its batch invariance (inv.c);
	                            absent from settings.json when false */
	int probes;              /* --probes N: the sums of each case's graph probed FPRev-style
	                            (probe.c), at most; default FZ_PROBES; 0 (and absent from
	                            settings.json: older campaigns): none */
	int grad_pairs;          /* --grad: each case judges its graph's gradient (grad.c) with this
	                            many directional pairs; 0: no --grad (absent from
	                            settings.json) */
	int shard_i, shard_n;    /* --shard I/N (fz_shard_parse): this campaign runs only the
	                            cases n with n % shard_n == shard_i, each with the seeds the
	                            unsharded campaign gives it, and has no coverage feedback
	                            (feedback_epoch 0: a shard cannot see the others' coverage);
	                            shard_n 0: not a shard (absent from settings.json) */
	GenOpts gen;
	int argc;                /* the command line a new campaign records in provenance.json */
	char *const *argv;       /* (`assay fuzz` ARGV...; NULL: none); not part of settings.json */
} FzCampaign;

void fz_campaign_defaults(FzCampaign *c);

/* The most shards a campaign may be cut into. */
enum { FZ_MAX_SHARDS = 1 << 20 };
/* "I/N" (decimal, 0 <= I < N <= FZ_MAX_SHARDS) into *i and *n: 0, or -1 with d (code 2)
 * saying what is wrong with text. */
int fz_shard_parse(const char *text, int *i, int *n, Diag *d);
/* The global number of the k-th case of c (its shard's k-th case: shard_i + k * shard_n;
 * k itself when c is not a shard), and how many of the cases 0 .. cases-1 are c's. */
uint64_t fz_shard_case(const FzCampaign *c, uint64_t k);
uint64_t fz_shard_count(const FzCampaign *c, uint64_t cases);

/* What a campaign did (this run, or in all after a resume: cases and counts cover the whole
 * log). */
typedef struct {
	int64_t cases;           /* complete cases in the log */
	int64_t records;
	int64_t verdicts[V__COUNT];
	int64_t errors;          /* cases the toolkit could not judge (generator, oracle) */
	int distinct;            /* distinct failures (new ones: the baseline's are not counted) */
	int kills;               /* of them, those a seeded fault is implicated in */
	int known;               /* distinct failures seen that the baseline lists */
	double elapsed_s;        /* this run */
	double first_fail_s;     /* this run's time to its first new distinct failure (-1: none) */
	double first_kill_s;     /* ... to the first the faults are implicated in (-1: none) */
	int64_t first_kill_case;
	int kill_defs;           /* definitions of the first kill's reduced repro (-1: none) */
	double kill_reduce_s;
	int interrupted;         /* the signal (SIGINT, SIGTERM) that stopped this run early, or 0 */
} FzSummary;

/* Runs (or with resume, continues) the campaign in directory dir: settings.json (written
 * first, once fz_settings_check holds, so invalid settings leave no directory; read back on
 * resume, where c gives only the stop rule and the jobs),
 * results.jsonl (per case: one JSON line per (backend, output) record with a "case"
 * member, then a {"done":N,...} line; written in case order, one write and fsync per case;
 * a resume drops a torn or incomplete last case and continues with the next, and refuses,
 * code 2, settings or a log damaged anywhere else: fz_settings_read, scan_log), failures/
 * (one folder per distinct failure: fz_save_failure, plus `count` of the cases that hit
 * it), errors/ (the graphs of cases the toolkit could not judge), summary.json. progress:
 * a live line (\r-updated on a terminal, a line every 10 s otherwise), or NULL. The
 * process must have no other threads (it forks); SIGPIPE is ignored while it runs. 0, or
 * -1 with d. */
int fz_campaign_run(const char *dir, const FzCampaign *c, bool resume, FILE *progress,
		    FzSummary *sum, Diag *d);

/* Checks the complete cases text[0..len) (len at a line's end) of the log at path, of
 * campaign c (lines counted from 1): every line one JSON object, the cases c runs (all, or
 * its shard's: fz_shard_case) in order, each record ("case": N) of the case whose done line
 * ({"done": N, ...}) follows it. 0, or -1 with d (code 2) naming the line. */
int fz_log_check(const char *path, const FzCampaign *c, char *text, size_t len, Diag *d);
/* The same, one line at a time: at (zeroed but for path and c) follows the log. Returns 1
 * for a done line, 0 for a record, or -1 with d (code 2) naming the line. */
typedef struct {
	const char *path;
	const FzCampaign *c;
	uint64_t place;          /* the cases read (their done lines) */
	int64_t line;            /* the lines read */
} FzLogAt;
int fz_log_line(FzLogAt *at, const char *line, size_t n, Diag *d);
/* Removes everything inside directory path (not path itself); what cannot be removed
 * stays. */
void fz_empty_dir(const char *path);

/* Recomputes DIR/summary.json of the campaign in dir from its settings, its log (which must
 * be whole: no torn case; checked as a resume checks it unless checked says the caller did,
 * line by line) and its failure folders, as a resume would count them, without running
 * anything; elapsed_s is recorded as the run's time. Rewrites each folder's count. 0, or
 * -1 with d. */
int fz_campaign_summarize(const char *dir, bool checked, double elapsed_s, FzSummary *sum,
			  Diag *d);

/* ================================================================ merging shards (merge.c) */

typedef struct {
	int shards;              /* the shards merged (N) */
	int64_t cases, records;
	int distinct;            /* distinct failures of the merge (the baseline's not counted) */
	int shared;              /* of them, those that more than one shard found */
	int errors;              /* errors/ files merged */
	double seconds;          /* the merge's own time */
} FzMergeStats;

/* Merges the N shard directories dirs[0..ndirs) of one campaign (fz_merge_check: the same
 * settings apart from "shard" and "jobs", every shard 0/N .. N-1/N exactly once, each log
 * whole and holding every case of its shard up to the campaign's last) into the new
 * campaign directory out: settings.json (the shards' without "shard"), results.jsonl (the
 * cases 0, 1, 2, ... in order: the unsharded campaign's log, timings aside), failures/ (one
 * folder per distinct failure, the one of the shard that holds its first case), errors/,
 * provenance.json (cmd, argc, argv: the merge's command line) and summary.json
 * (fz_campaign_summarize). Written in a temporary directory beside out, renamed into place
 * when whole; the shards are only read. out must not exist, or be an empty directory.
 * 0, or -1 with d (code 2: the shards do not make one campaign, named; 3: the
 * environment). */
int fz_merge(const char *const *dirs, int ndirs, const char *out, int argc, char *const *argv,
	     FzMergeStats *st, Diag *d);

/* ================================================================ settings (settings.c) */

/* The ranges of a campaign's settings (settings.json; the CLI's flags). */
enum { FZ_MAXJOBS = 64, FZ_MAX_DEFS = 24, FZ_MAX_REDUCE_TESTS = 1000000, FZ_MAX_VARIANTS = 8 };
#define FZ_MAX_CASES 1000000000000000LL
#define FZ_MAX_SECONDS 1e9
#define FZ_MAX_TIMEOUT 86400.0

/* DIR/settings.json into c, read strictly (fuzz/settings.c says what it accepts): 0, or -1
 * with d (code 2) naming the file, the member and its value; c then holds the defaults. */
int fz_settings_read(const char *dir, FzCampaign *c, Diag *d);
/* Writes DIR/settings.json atomically. 0, or -1 with d. */
int fz_settings_write(const char *dir, const FzCampaign *c, Diag *d);
/* Whether c's settings are valid (the ranges of fz_settings_read, backends, inputs and
 * faults known): 0, or -1 with d (code 2) naming the member ("member 'jobs': ..."). */
int fz_settings_check(const FzCampaign *c, Diag *d);
/* Whether name is a campaign's input distribution: mix, normal, uniform, adversarial,
 * edges or specials. */
bool fz_inputs_known(const char *name);
/* Whether a and b have the same settings, members named in skip (a space-separated list:
 * "shard jobs") aside: 0, or 1 with msg naming the first member that differs and both
 * values ("member 'seed': 7 against 8"). */
int fz_settings_compare(const FzCampaign *a, const FzCampaign *b, const char *skip, char *msg,
			size_t n);
/* The backends of a comma list into r->backends, in order, a repeated name once ("c,c" is
 * c). 0, or -1 with d (code 2) for an empty list, an empty name ("c,,vulkan") or an
 * unknown one. fz_backends_list writes r's backends back as a comma list into buf. */
int fz_run_backends(FzRun *r, const char *list, Diag *d);
void fz_backends_list(const FzRun *r, char *buf, size_t n);
/* Whether text[0..n) is exactly one JSON object (RFC 8259's grammar; whitespace around it
 * allowed). On false, *err_at gets the byte offset of the error and *why what is wrong
 * (static text); either may be NULL. */
bool fz_json_valid(const char *text, size_t n, size_t *err_at, const char **why);

/* ================================================================ baselines (baseline.c) */

/* The known failures of path into keys (n bytes; fz_baseline_check's form): a campaign
 * directory (the keys of its failures/ folders and of its own baseline) or a text file of
 * keys, one per line ('#' comments and blank lines skipped). 0, or -1 with d (code 2) naming
 * the path and, for a list, the line that is not a signature key. */
int fz_baseline_load(const char *path, char *keys, size_t n, Diag *d);
/* Whether keys (a baseline) lists key; how many it lists. */
bool fz_baseline_has(const char *keys, const char *key);
int fz_baseline_count(const char *keys);
/* Whether keys is a baseline as fz_baseline_load makes them: canonical signature keys, each
 * ended by '\n', in strcmp order without repeats. 0, or -1 with d (code 2, "member
 * 'baseline': ..."). */
int fz_baseline_check(const char *keys, Diag *d);

/* The FzRun of case n of campaign c: its backends, faults, hooks, timeout, inputs (cache_dir
 * borrowed). 0, or -1 with d (code 2: an unknown backend or distribution). */
int fz_case_setup(const FzCampaign *c, uint64_t n, const char *cache_dir, FzRun *r, Diag *d);

/* Case case_no of a campaign, run here as a job runs it (fuzz/case.c states its log text),
 * with the backends' cache in cache_dir and the persistent workers of pool (may be NULL):
 * *blob gets its log text (its records, then its done line; malloc'ed). The FzRun of the
 * case is stored in *run if non-NULL, and its graph's text in *gtext (malloc'ed) if
 * non-NULL. 0, or -1 with d when the case cannot even be set up (an unknown backend) or
 * the environment failed under it (d->env: the case has no result and must not be
 * recorded; *blob is NULL). */
int fz_case_run(const FzCampaign *c, uint64_t case_no, const char *cache_dir, VfPool *pool,
		char **blob, FzRun *run, char **gtext, Diag *d);

/* The variants case case_no of campaign c checks, of its graph g (into out, max slots):
 * c->variants of them (its fraction drawn per case), by fz_variants with a seed of the
 * case. Returns how many. */
int fz_case_variants(const FzCampaign *c, uint64_t case_no, const Graph *g, FzVariant *out,
		     int max);

/* The value of member key in a JSON line as text (a string unescaped, anything else as
 * written), in buf; false when absent. For the fuzzer's own files. */
bool fz_json_get(const char *line, const char *key, char *buf, size_t n);

/* ================================================================ coverage feedback (cover.c) */

#define FZ_EPOCH_DEFAULT 64

/* The compiler's coverage points (compiler/cov.def) that a campaign's cases reached, read
 * from its log in case order: per point, the cases whose records name it, and the cases
 * the bias aimed at it (their done lines' "aim"). reachable: the points a backend of the
 * campaign can reach (cov_reaches); the others never bias. */
typedef struct {
	int64_t cases;               /* done lines read */
	int64_t hits[COV__COUNT];
	int64_t aimed[COV__COUNT];
	bool reachable[COV__COUNT];
	bool in_case[COV__COUNT];    /* the case being read */
} FzCov;

void fz_cov_init(FzCov *c, const FzCampaign *camp);
/* One line of a campaign's log: a record's "cov" joins the case being read, a done line
 * ends it (and counts its points once). */
void fz_cov_line(FzCov *c, const char *line);

/* The bias of an epoch: per point, its demand: the points the campaign has not reached or
 * rarely reached, each decaying as cases aimed at it fail to reach it (cover.c says how).
 * epoch -1: no feedback (want all 0). A function of the coverage alone, so the same log
 * gives the same bias whatever the jobs. */
typedef struct {
	int64_t epoch;
	uint16_t want[COV__COUNT];
} FzBias;

void fz_bias_of(const FzCov *c, int64_t epoch, FzBias *b);
/* The generator options of case case_no under bias b: o as it is for about half the cases
 * (drawn from seed and case_no); the others aim at a point drawn in proportion to the
 * demand and get the generator levers its cov.def hints name (the thin layer: only knobs
 * of GenOpts change). *aim (may be NULL) gets the point (-1: none), *levers (may be NULL)
 * the mask (1 << lever) applied. */
GenOpts fz_bias_opts(const GenOpts *o, const FzBias *b, uint64_t seed, uint64_t case_no,
		     int *aim, unsigned *levers);
/* A lever's name ("tile2", "extent", ...; NULL past the last) and the lever of a name (-1). */
const char *fz_lever_name(int lever);
int fz_lever_find(const char *name, size_t len);
/* The epoch of case n, and the bias of case n of the campaign in dir computed from its log
 * (the cases of epochs before n's epoch minus one: what the campaign had when it ran n).
 * Without feedback, epoch -1. 0, or -1 with d (the log unreadable or too short, code 2). */
int fz_case_bias(const char *dir, const FzCampaign *c, uint64_t case_no, FzBias *b, Diag *d);
/* fz_case_run under bias (NULL: none), as a feedback campaign's job runs case_no: its done
 * line then also names the epoch, the point aimed at and the levers applied ("epoch",
 * "aim", "levers"). */
int fz_case_run_bias(const FzCampaign *c, const FzBias *bias, uint64_t case_no,
		     const char *cache_dir, VfPool *pool, char **blob, FzRun *run, char **gtext,
		     Diag *d);

#endif
