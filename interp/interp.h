/* interp/interp.h: the MPFR interpreter, the oracle every result is judged against.
 *
 * Exact mode computes the graph's meaning (graph-format.md section 6) in interval arithmetic
 * and rounds each output element correctly into its format by the interval-and-escalation
 * method of numerics.md section 2. Emulation mode rounds every operation to given formats,
 * accumulating reductions in a given order. Point evaluation computes single output
 * elements without evaluating whole tensors (memoised).
 *
 * Ownership: the interpreter never keeps pointers to caller data past a call, except an
 * MpSession, which borrows its Graph and input tensors until mp_session_free.
 * Threads: results are identical for any thread count (each element's result is unique:
 * a correctly rounded value, or a deterministic emulation).
 * Errors: -1 with a Diag (code 2 for the user's errors: an out-of-range indirect index names
 * the tensor, the position and the value; code 3 for internal failures, and for memory the
 * machine would not give: "out of memory evaluating FILE ..."). -2 with a Diag of code 2
 * when a limit of MpOpts stopped the evaluation: its deadline passed, or it would hold more
 * than its memory cap. The message names the graph's file and what was too big or too
 * slow; a caller tells the two apart by the return value (verify reports a limit as the
 * user's to raise, fuzz skips the case). Once a limit is hit, the whole call stops: every
 * thread polls it between elements and inside long reductions.
 * Memory: a reduction holds at most MpOpts.red_block terms at a time and streams longer
 * ones (exact partial sums, docs/oracle.md), so memory depends on the tensors' sizes, never
 * on reduction lengths. Out of memory never aborts: the interpreter's large allocations
 * (tables, converted inputs, outputs) fail with -1 and code 3; an allocation that cannot
 * fail softly (inside MPFR or GMP, whose hooks the interpreter installs on first use, or
 * one of a few bytes) prints "assay: out of memory evaluating FILE ..." and exits the
 * process with status 3 (_exit: the one exit outside main, since GMP has no way back).
 */
#ifndef ASSAY_INTERP_H
#define ASSAY_INTERP_H

#include <mpfr.h>
#include "../compiler/compiler.h"

/* What a long evaluation reports about itself (MpOpts.progress). Work counts the terms of
 * reductions and one per element of a plain definition, so that one long reduction shows
 * progress too. */
typedef struct {
	const char *phase;      /* "generating" (inputs), "converting" (inputs to MPFR),
	                           "evaluating", "rounding", "escalating", "sampling" (points),
	                           "emulating" */
	const char *tensor;     /* the tensor being computed now, or NULL */
	int64_t done, total;    /* elements of this phase done, and in all */
	int64_t work_done;      /* terms and elements computed in this phase */
	int64_t work_total;     /* the phase's work when known in advance (every reduction range
	                           constant), else 0 */
	double elapsed_s;       /* since the phase began */
	double rate;            /* work per second in this phase */
	double eta_s;           /* estimated seconds left in the phase; < 0 when unknown */
} MpProgress;

typedef void MpProgressFn(void *ctx, const MpProgress *p);

typedef struct {
	int threads;     /* worker threads; <= 0 means 1 */
	long prec0;      /* first working precision in bits; <= 0 picks a default */
	long prec_cap;   /* escalation cap in bits; <= 0 means 10000 */
	double deadline; /* mp_now() time past which the evaluation stops (-2); 0: none */
	int64_t mem_cap; /* bytes the evaluation may hold (tables, inputs as MPFR values,
	                    outputs; mp_make_inputs: the inputs); 0: mp_default_mem_cap(),
	                    < 0: no cap */
	MpProgressFn *progress;  /* called about once a second while evaluating (from any of
	                            its threads, one call at a time), or NULL */
	void *progress_ctx;
	long red_block;  /* terms a reduction holds at once before it streams them; <= 0:
	                    4096 (tests use tiny blocks to exercise the block boundaries) */
} MpOpts;

/* CLOCK_MONOTONIC in seconds: the clock of MpOpts.deadline. */
double mp_now(void);
/* The default memory cap: half the physical memory or 8 GiB, whichever is smaller. */
int64_t mp_default_mem_cap(void);

/* The memory mp_exact (emulate: mp_emulate) needs for g at o's first precision, inputs
 * included (as given and as MPFR values), against o's cap: 0, or -2 with d naming the
 * largest part (tensor, elements, bytes) and the ways out. mp_exact and mp_emulate check it
 * themselves; a caller checks it first to refuse a graph before generating its inputs. */
int mp_check_memory(const Graph *g, const MpOpts *o, bool emulate, Diag *d);

/* Per-element status of an exact result. */
typedef enum {
	MP_EXACT_OK = 0,      /* correctly rounded */
	MP_UNSAMPLABLE = 1,   /* interval ends never agreed within the cap */
} MpStatus;

typedef struct {
	int64_t elements;       /* output elements evaluated */
	int64_t unsamplable;    /* of them, unsamplable */
	int64_t escalations;    /* element evaluations repeated at a higher precision */
	long max_prec;          /* the highest precision used */
	uint64_t mpfr_ops;      /* elementary MPFR operations performed (for throughput) */
	uint32_t subnormal;     /* mp_emulate: bit (1 << w), w = DT_F32 or DT_F64, when a value
	                           the emulation computed in w's width (f32, f16 and bf16 are
	                           computed in f32, as kernels do) or loaded into it was a nonzero
	                           number below w's smallest normal (2^-126, 2^-1022): an operand
	                           or result a device that flushes w's subnormals would change
	                           (verify's emulation check); and bit MP_MET_ZERO when an
	                           operand or result of a real +, -, *, / or fma was a zero
	                           (whose sign a device that folds x + 0.0 and x * 0 may
	                           change: BeFacts.nsz) */
} MpStats;

enum { MP_MET_ZERO = 1 << 30 };

/* Exact evaluation of every output. inputs[k] holds the k-th input tensor of g (in tensor
 * order, inputs only). outs[k] is allocated here for output k, in that output's dtype;
 * status[k] (if status is non-NULL) is allocated here with one MpStatus byte per element
 * (free with free()). An unsamplable element's value is NaN (0 for i32). Returns 0, -1
 * (an error) or -2 (a limit), with d; on failure nothing is left allocated. */
int mp_exact(const Graph *g, const HostTensor *inputs, const MpOpts *o,
	     HostTensor *outs, uint8_t **status, MpStats *st, Diag *d);

/* --------------------------------------------------------- point evaluation */

typedef struct MpSession MpSession;

/* A session keeps o's limits (the deadline, the memory cap) for its whole life. */
MpSession *mp_session_new(const Graph *g, const HostTensor *inputs, const MpOpts *o, Diag *d);
void mp_session_free(MpSession *s);

/* The correctly rounded value of output `output` at coordinates coords (rank of that
 * output), in format fmt (any Dtype; DT_NONE means the output's own). *value gets the
 * rounded value (every format's values are doubles). Returns 0, or -1 (-2: a limit) with d.
 * *status tells whether it settled. Single-threaded per session; use one session per
 * thread. */
int mp_point(MpSession *s, int output, const int64_t *coords, Dtype fmt,
	     double *value, MpStatus *status, Diag *d);
/* The same for a batch of points of one output, spread over o->threads threads (one
 * private session each). coords is n * rank values; values and statuses have n slots. */
int mp_points(const Graph *g, const HostTensor *inputs, const MpOpts *o, int output,
	      const int64_t *coords, int64_t n, Dtype fmt, double *values, uint8_t *status,
	      MpStats *st, Diag *d);

/* ------------------------------------------------------------------ emulation */

/* How to round: every operation of definition k rounds to op[k] (DT_NONE: dflt), its
 * reduction accumulates in accum[k] (DT_NONE: dflt), its stored values round to store[k]
 * (DT_NONE: dflt) and its reduction runs in order[k]. Arrays have g->ndefs entries or are
 * NULL. Integer definitions are computed exactly whatever the formats.
 * Split reductions (compiler/sched/sched.c, lower.c): split[k] = S > 1 deals the terms of a sum,
 * prod or logsumexp's sum into S partial reductions by (j - lo) mod S, j being reduction
 * index split_red[k] (0 when split_red is NULL) and lo the start of its range where the
 * term is taken; each partial reduces its terms in the order they come, in order[k] (an
 * empty partial is the identity: -0 for sums, 1 for products), and the S partials are
 * combined in order[k] over p0, p1, ... (linear: ((p0 op p1) op p2) ...). split[k] of 0 or
 * 1 is no split; max and min are exact in any order, and selections are never split.
 * dflt is one uniform format, not graph-format.md section 7's default schedule (which is
 * per definition: f64 where a definition reads an f64 value); a schedule's formats come
 * from sched_formats (oracles' orc_emu_config). */
typedef struct {
	Dtype dflt;
	const Dtype *op;
	const Dtype *accum;
	const Dtype *store;
	const Order *order;
	const int64_t *split;   /* g->ndefs entries, or NULL: no split */
	const int *split_red;   /* g->ndefs entries, or NULL: reduction index 0 */
	/* the schedule, for its `online` sets (docs/online.md): their members are emulated
	 * in the one-pass order; NULL: none */
	const Schedule *sched;
	/* the matrix unit whose arithmetic the schedule's `mma` definitions follow
	 * (interp/mma.c's rows): its compute capability, 90 for sm_90; 0: sm_90 */
	int mma_sm;
} EmuConfig;

/* Emulated evaluation of every output (each output finally rounded into its own dtype,
 * outs allocated here as for mp_exact). 0, -1 or -2 (a limit) as mp_exact. */
int mp_emulate(const Graph *g, const HostTensor *inputs, const EmuConfig *cfg,
	       const MpOpts *o, HostTensor *outs, MpStats *st, Diag *d);
/* mp_emulate, and on success def_sub[k] (g->ndefs entries) gets MpStats.subnormal's bits
 * for what definition k alone computed (its loads, literals, operations and stores; an
 * output's rounding into its dtype notes none): a check weighs only the definitions an
 * output depends on (verify's emulation check). */
int mp_emulate_defs(const Graph *g, const HostTensor *inputs, const EmuConfig *cfg,
		    const MpOpts *o, HostTensor *outs, MpStats *st, uint32_t *def_sub, Diag *d);

/* One emulated operation, for tests and for the budget code: rounds op(a, b, c) computed in
 * format f (numerics.md section 1) and returns it as a double. */
double mp_emul_op(Op op, Dtype f, double a, double b, double c);
/* Rounds x (exact double) into format f with round-to-nearest-even, subnormals, overflow. */
double mp_round_to(Dtype f, double x);

/* A matrix unit's fused dot-add (interp/mma.c, docs/numerics.md 6, 6a): one row per
 * (architecture, operand format, accumulator format), the parameters as measured by
 * MMA-Sim and by Khattak and Mikaitis (the probes of bench/exp/mma check them on a device). */
typedef struct {
	const char *arch;   /* "sm_90": the least architecture the row holds for */
	const char *instr;  /* the PTX instruction it models */
	Dtype ab, acc;      /* operand format (both), accumulator (c and d) format */
	int k;              /* products of one instruction */
	int block;          /* products of one fused dot-add (k, or k / 2 where k is split) */
	int frac;           /* fraction bits kept below the block's largest exponent */
	int out_frac;       /* fraction bits of the result (23: f32; 13: e8m13) */
	bool rz;            /* the result rounded toward zero */
} MmaUnit;
extern const MmaUnit mma_units[];
extern const int mma_nunits;
/* The row for compute capability sm (90 for sm_90) and those formats: the newest row at or
 * below sm; NULL when none (no matrix unit takes them there). */
const MmaUnit *mma_unit(int sm, Dtype ab, Dtype acc);
/* d = c + sum a[i] * b[i] (n <= 64 products, a and b values of u->ab, c of u->acc) as one
 * fused dot-add of u: the result as a double (a value of the result format). */
double mma_fdpa(const MmaUnit *u, const double *a, const double *b, int n, double c);

/* The MPFR function of an op (compiler/ops.def's mpfr column): the one of the op's arity is
 * set, or none where no single MPFR function is the op (comparisons, integer and boolean
 * ops, SELECT, MAX and MIN, SIGMOID, casts). Each computes op(x...) into y correctly
 * rounded in direction rnd at y's precision and returns MPFR's ternary value. The
 * interpreter's evaluators (emulation, intervals) and the oracles' bounds (oracles/bval.c)
 * all take their functions from here, so an op is mapped once. mp_op_fn returns a row of a
 * static table (never NULL, never freed); an op out of range is a bug (IR_ASSERT). */
typedef struct {
	int (*f1)(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd);
	int (*f2)(mpfr_ptr y, mpfr_srcptr x, mpfr_srcptr x2, mpfr_rnd_t rnd);
	int (*f3)(mpfr_ptr y, mpfr_srcptr x, mpfr_srcptr x2, mpfr_srcptr x3, mpfr_rnd_t rnd);
} MpOpFn;
const MpOpFn *mp_op_fn(Op op);
/* rsqrt as the graph format defines it: 1/sqrt(x) correctly rounded, rsqrt(+-0) = +-inf
 * (mpfr_rec_sqrt gives +inf for both). */
int mp_rsqrt(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd);

/* The graph's integer arithmetic as the emulator evaluates it (and the budgets with it):
 * op (OP_NEG, OP_ABS, OP_ADD, OP_SUB, OP_MUL, OP_MAX, OP_MIN, OP_IDIV: floor division,
 * OP_MOD: a remainder in [0, |b|)) of a and b (b unused by a unary op) in int64. Returns 0
 * with *v; else the error's diagnostic code (2: an overflow, *v the wrapped result, or a
 * division by zero; 3: op is not an integer operation) with its message in why. */
int mp_int_op(Op op, int64_t a, int64_t b, int64_t *v, char *why, size_t n);
/* The comparison op (OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE) of two integers. */
bool mp_int_compare(Op op, int64_t a, int64_t b);
/* One term x into the accumulator of an integer reduction under m (MO_SUM, MO_PROD,
 * MO_MAX, MO_MIN); true when the sum or product overflows int64. */
bool mp_int_reduce(Monoid m, int64_t *acc, int64_t x);

/* ------------------------------------------------------------------- inputs */

/* edges (an extension of spec/cli.md's three): values on the rounding ties and boundaries of
 * every narrower format, equal and negated pairs, exactly cancelling runs (inputs.c). */
typedef enum {
	DIST_NONE = -1, DIST_NORMAL, DIST_UNIFORM, DIST_ADVERSARIAL, DIST_EDGES, DIST__COUNT
} Dist;

typedef struct {
	Dist dist;
	uint64_t seed;
	bool specials;   /* adversarial and edges: also inf and NaN */
} InputSpec;

Dist dist_parse(const char *s);   /* DIST_NONE if unknown */
const char *dist_name(Dist d);
const char *dist_list(void);      /* "normal, uniform, adversarial or edges", for messages */

/* Fills every input k of g with given[k].data == NULL (given may be NULL) deterministically
 * from the seed: inputs[k] is allocated here. An i32 input read in an index position is
 * drawn within the bounds of every dimension it indexes (graph-format.md: generated cases
 * are always valid). Inputs already given are copied. Returns 0, or -1 with d, or -2 with
 * d when the inputs would take more than the memory cap (checked before anything is
 * generated: the largest input is named) or the deadline passed. */
int mp_make_inputs(const Graph *g, const InputSpec *spec, const HostTensor *given,
		   HostTensor *inputs, Diag *d);
/* The same under o's deadline, memory cap and progress callback (o NULL: mp_make_inputs,
 * no deadline and the default cap). */
int mp_make_inputs_opts(const Graph *g, const InputSpec *spec, const HostTensor *given,
			const MpOpts *o, HostTensor *inputs, Diag *d);

/* ------------------------------------------------------------ gradients */

/* The directional check of a derived gradient (interp/gradcheck.c, docs/grad.md): for
 * `pairs` random draws of g's inputs, cotangents c and directions t, the derived
 * <grad, t> against the exact central difference of <c, g> along t (step 2^-step_log2),
 * both from the oracle. The gradient is gr_derive(g, go) with its casts stripped. */
typedef struct {
	int pairs;         /* <= 0: 20 */
	uint64_t seed;
	int step_log2;     /* <= 0: 60 */
	double rtol;       /* agreement: |ip - cd| <= rtol (mag + |cd|); <= 0: 2^-40 */
	MpOpts mp;         /* the oracle's limits */
} MpGradOpts;

typedef struct {
	bool ok;
	int pairs_done;
	int undefined;     /* of them, pairs where the directional derivative is not finite (a
	                      pole or an overflow at those inputs): not judged */
	int pair;          /* the failing pair (when !ok) */
	bool nonfinite;    /* when !ok: the derived <grad, t> was not finite where the exact
	                      derivative is (the chain rule through an infinite intermediate
	                      value: 0 * inf is NaN, as in every autodiff; docs/grad.md) */
	int64_t element;   /* the first wrong element of all the gradients, in output order */
	double ip, cd;     /* the last pair's figures */
	double worst;      /* the largest |ip - cd| / (mag + |cd|) over the pairs */
	char what[512];    /* when !ok: "grad_x[3, 4] = D but the exact partial derivative is E" */
} MpGradResult;

/* Output elements that are not finite at a pair's inputs get a zero cotangent (the
 * derivative of <c, y> exists only where y does).
 * 0 with r (r->ok false on a mismatch, naming the first wrong element), or -1 / -2 with d
 * as mp_exact (a derivation the compiler refuses is -1 with its code-2 diagnostic). */
int mp_grad_verify(const Graph *g, const GradOpts *go, const MpGradOpts *o, MpGradResult *r,
		   Diag *d);

#endif
