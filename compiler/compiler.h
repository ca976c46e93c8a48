/* compiler/compiler.h: the public face of compiler/: the graph IR, the .tg format (parse,
 * print, check), schedules, numeric formats, host tensors and .npy files.
 *
 * Invariants
 * - A Graph owns everything reachable from it (names, nodes, literal texts, directives);
 *   ir_free releases it in one call. Nothing in a Graph points into another Graph.
 * - Expression nodes are immutable and hash-consed inside their Graph: creating the same
 *   (kind, op, type, operands, payload) twice gives the same Ref. Structural equality of
 *   two expressions of one graph is therefore `a == b`.
 * - Ref 0 is "no node" (REF_NONE); real nodes start at 1.
 * - Tensors are numbered in file order: inputs and definition results share one list, so a
 *   definition may read only tensors with a smaller id (the graph is a DAG in file order).
 * - Library functions never exit: they return 0 on success and -1 on error, filling a Diag
 *   with `file:line:col: message`, the source line and a caret.
 */
#ifndef ASSAY_COMPILER_H
#define ASSAY_COMPILER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Internal bugs abort with file and line (never a user error). */
#define IR_ASSERT(c) \
	((c) ? (void)0 : ir_abort(__FILE__, __LINE__, #c))
_Noreturn void ir_abort(const char *file, int line, const char *what);

enum {
	IR_MAXRANK = 8,  /* dimensions of a tensor, left-hand indices of a definition */
	IR_MAXRED = 8,   /* reduction indices of one definition */
	IR_MAXVARS = IR_MAXRANK + IR_MAXRED,
};

/* ------------------------------------------------------------------ formats */

/* Numeric formats. The first five are the graph's DTYPEs; the rest may appear only in
 * schedules and in emulation (numerics.md section 1). */
typedef enum {
	DT_F64, DT_F32, DT_F16, DT_BF16, DT_I32,
	DT_TF32, DT_E4M3, DT_E5M2,
	DT__COUNT,
	DT_NONE = -1
} Dtype;

typedef struct {
	const char *name;   /* "f64", ... */
	int prec;           /* significand bits incl. hidden bit; 0 for i32 */
	long emin, emax;    /* MPFR exponent range (x = m * 2^e, m in [1/2,1)) */
	int bytes;          /* storage size of one element in a host tensor */
	bool in_graph;      /* may be written as a DTYPE in a .tg file */
	bool has_inf;       /* e4m3: no inf, overflow saturates to NaN */
	double maxfinite;
} DtypeInfo;

const DtypeInfo *dt_info(Dtype d);
Dtype dt_parse(const char *s, size_t len); /* DT_NONE if unknown */
const char *dt_name(Dtype d);

/* Exact conversions between 16-bit storage and double (every f16/bf16 value is a double)
 * and round-to-nearest-even conversions from double (NaN stays NaN, overflow to inf). */
double fmt_f16_to_double(uint16_t h);
double fmt_bf16_to_double(uint16_t h);
uint16_t fmt_double_to_f16(double x);
uint16_t fmt_double_to_bf16(double x);

/* ---------------------------------------------------------------- diagnostics */

typedef struct {
	const char *file;  /* borrowed: lives as long as the Graph or the caller's source */
	int line, col;     /* 1-based; 0 when unknown */
} SrcPos;

/* An error message. msg is heap-allocated, already formatted as
 * "file:line:col: error: message\n<source line>\n<caret line>\n" (or just "message\n"
 * when there is no position). code is the exit code the error deserves (2: user input,
 * 3: internal). env marks a failure of the environment (spec/cli.md v2: a full disk, an
 * unwritable directory, memory exhausted, a lost device): code 3, and never a verdict
 * about a kernel: verify and fuzz stop on it instead of recording it. */
typedef struct {
	char *msg;
	int code;
	bool env;
} Diag;

void diag_clear(Diag *d);
/* Formats an error at pos; src/srclen is the whole source text (may be NULL). */
void diag_at(Diag *d, SrcPos pos, const char *src, size_t srclen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void diag_set(Diag *d, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* diag_set with code 3 and env set: the environment failed (see Diag). */
void diag_env(Diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether errno value e is the environment's failure when writing or allocating (ENOSPC,
 * EDQUOT, EROFS, EACCES, EPERM, EIO, ENOMEM, EMFILE, ENFILE, EFBIG). */
bool diag_errno_env(int e);
/* A failed file operation with errno e: env (code 3) when diag_errno_env(e), else the
 * user's (code 2: a path that is not a directory, a missing folder). */
void diag_io(Diag *d, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------- op table */

enum {
	OPF_PREFIX = 1 << 0,
	OPF_INFIX = 1 << 1,
	OPF_CALL = 1 << 2,
	OPF_CMP = 1 << 3,
	OPF_BOOL_IN = 1 << 4,   /* operands are booleans */
	OPF_BOOL_OUT = 1 << 5,  /* result is a boolean */
	OPF_INT_OK = 1 << 6,    /* integer operands give an integer result */
	OPF_INT_ONLY = 1 << 7,  /* operands must be integers (index / and %) */
	OPF_CAST = 1 << 8,
};

typedef enum {
#define X(name, spelling, arity, flags, c, helper, mpfr, grad) OP_##name,
#include "ops.def"
#undef X
	OP__COUNT
} Op;

typedef struct {
	const char *name;      /* "ADD" */
	const char *spelling;  /* "+" / "exp" */
	int arity;
	unsigned flags;
	const char *c;         /* C-family base spelling (an operator or function) or NULL */
	const char *helper;    /* stem of the program's helper (<helper>_f, _d, _i) or NULL */
} OpInfo;

const OpInfo *op_info(Op op);
/* The function op called NAME with ARITY arguments (exp, max, f16, ...), or -1. */
int op_lookup_call(const char *name, size_t len, int arity);
/* The cast op to format d (OP_CAST_F64...), or -1 for formats without a cast. */
int op_cast_to(Dtype d);
Dtype op_cast_dtype(Op op);

/* ------------------------------------------------------------------- the IR */

typedef uint32_t Ref;
#define REF_NONE ((Ref)0)

typedef enum { TY_BOOL, TY_INT, TY_REAL } Ty;

typedef enum {
	NK_NUM,   /* a real literal: u.lit indexes g->lits */
	NK_INT,   /* an integer literal: u.ival */
	NK_VAR,   /* an index variable of the enclosing definition: u.var */
	NK_SIZE,  /* a size name used as a value: u.size indexes g->sizes */
	NK_READ,  /* a tensor read: u.read */
	NK_OP,    /* an operation of the op table: op, a[0..arity-1] */
} NodeKind;

typedef struct {
	uint8_t kind;  /* NodeKind */
	uint8_t ty;    /* Ty */
	uint16_t op;   /* Op, for NK_OP */
	Ref a[3];      /* operands of NK_OP */
	union {
		int64_t ival;
		uint32_t lit;
		uint32_t var;
		uint32_t size;
		struct {
			uint32_t tensor;  /* tensor id */
			uint32_t first;   /* first index expression: g->refs[first .. first+n-1] */
			uint32_t n;       /* = rank of the tensor */
			Ref pad;          /* `?? DEFAULT`, or REF_NONE */
		} read;
	} u;
	SrcPos pos;  /* of the first occurrence; not part of the node's identity */
} Node;

/* A literal: its exact value is the decimal or binary number its text denotes. */
typedef struct {
	char *text;    /* as written (canonical printing prints it verbatim) */
	double approx; /* nearest double, for display and cheap paths */
	bool exact;    /* approx is exactly the literal's value */
} Lit;

typedef struct {
	char *name;
	int64_t value;  /* positive */
	SrcPos pos;
} Size;

/* An extent as written: a size name (size >= 0) or an integer literal (size == -1). */
typedef struct {
	int32_t size;
	int64_t value;  /* resolved value (sizes after --size overrides) */
} Extent;

typedef enum { TK_INPUT, TK_DEF } TensorKind;

typedef struct {
	char *name;
	SrcPos pos;
	uint8_t kind;     /* TensorKind */
	int8_t dtype;     /* inputs: as declared; definitions: DT_I32 if integer-valued,
	                     else DT_F64 (an exact real; the format means nothing here) */
	int rank;
	Extent dims[IR_MAXRANK];
	int def;          /* index in g->defs for TK_DEF, -1 for inputs */
	int result;       /* which result of its definition (topk: 0 values, 1 indices) */
} Tensor;

typedef enum {
	MO_NONE,  /* the body is a plain expression */
	MO_SUM, MO_PROD, MO_MAX, MO_MIN, MO_LOGSUMEXP, MO_ARGMAX, MO_ARGMIN, MO_TOPK,
	MO__COUNT
} Monoid;

const char *monoid_name(Monoid m);
Monoid monoid_parse(const char *s, size_t len);  /* MO_NONE if not a monoid name */

typedef struct {
	char *name;
	Extent ext;
	SrcPos pos;
} LhsIndex;

/* A reduction index ranging over [lo, hi). `j:E` is stored with lo = INT 0, hi = the
 * extent (an NK_INT or NK_SIZE node) and full = true, so it prints back as `j:E`. */
typedef struct {
	char *name;
	Ref lo, hi;
	bool full;
	SrcPos pos;
} RedIndex;

/* A definition. Variables: left-hand index k is var k; reduction index r is var nlhs + r. */
typedef struct {
	int out[2];   /* result tensor ids: out[0]; topk also out[1] (the indices) */
	int nout;
	int nlhs;
	LhsIndex lhs[IR_MAXRANK];
	Monoid monoid;
	int nred;
	RedIndex red[IR_MAXRED];
	Ref body;     /* the expression (of the reduction, when monoid != MO_NONE) */
	Ty ty;        /* TY_INT or TY_REAL: the type of the (value) result */
	SrcPos pos;
} Def;

typedef struct {
	int tensor;
	Dtype dtype;
	SrcPos pos;
} Output;

/* ---------------------------------------------------------------- schedules */

/* SD_ONLINE (graph-format.md 7a): `online d1, d2, ...`; target is d1 and args[0..nargs) name
 * every member (d1 included), each with value 0. */
/* SD_MMA (graph-format.md 7a): `mma y` or `mma y : m=64, n=128, k=16`; args hold the given
 * m, n, k (names "m", "n", "k"), none for the bare form. */
typedef enum { SD_STORE, SD_ACCUM, SD_INLINE, SD_TILE, SD_SPLIT, SD_ORDER, SD_ONLINE, SD_MMA,
	       SD__COUNT } DirKind;
/* ORDER_ANY (graph-format.md 7a, claims of --external kernels): the reduction may be computed
 * in any order; its budget is that of the worst tree (oracles/budget.c), and assay's own
 * kernels compute it linearly. */
typedef enum { ORDER_LINEAR, ORDER_PAIRWISE, ORDER_ANY, ORDER__COUNT } Order;
/* "linear", "pairwise", "any"; order_parse: -1 if unknown. */
const char *order_name(Order o);
int order_parse(const char *s, size_t len);

typedef struct {
	char *name;     /* an index name */
	int64_t value;  /* tile size or split factor (positive) */
	SrcPos pos;
} DirArg;

typedef struct {
	uint8_t kind;   /* DirKind */
	char *target;   /* the definition named */
	int def;        /* its index in g->defs (resolved when checked), -1 before */
	Dtype fmt;      /* store, accum */
	Order order;    /* order */
	int nargs;      /* tile, split; online: its members */
	DirArg *args;
	SrcPos pos;
} Directive;

/* ------------------------------------------------------------------ a graph */

typedef struct Graph Graph;
struct Graph {
	char *name;          /* `graph NAME`, or NULL */
	char *file;          /* the file name diagnostics use */
	char *src;           /* a copy of the source text (for carets), NUL-terminated */
	size_t srclen;

	Size *sizes;     int nsizes;
	Tensor *tensors; int ntensors;
	Def *defs;       int ndefs;
	Output *outputs; int noutputs;
	Directive *dirs; int ndirs;
	bool has_schedule;   /* a `schedule` block was present (even if empty) */

	/* node store: nodes[0] is unused (REF_NONE) */
	Node *nodes;     uint32_t nnodes, capnodes;
	Ref *refs;       uint32_t nrefs, caprefs;   /* index lists of reads */
	Lit *lits;       uint32_t nlits, caplits;
	uint32_t *lithash; uint32_t caplithash;    /* open-addressing table of lit ids + 1 */
	uint32_t *hash;  uint32_t caphash;         /* open-addressing table of node ids */

	struct Arena *arena;  /* names and small allocations */
};

/* --- construction (parse.c uses these; so do the fuzzer and the reducer) --- */

Graph *ir_new(const char *file);
void ir_free(Graph *g);
char *ir_strdup(Graph *g, const char *s, size_t len);  /* arena copy, NUL-terminated */
void *ir_alloc(Graph *g, size_t n);                     /* arena, zeroed */

Ref ir_num(Graph *g, const char *text, size_t len);  /* a real literal (text as written) */
Ref ir_int(Graph *g, int64_t v);
Ref ir_var(Graph *g, uint32_t var, Ty ty);           /* ty is TY_INT for index variables */
Ref ir_size(Graph *g, uint32_t size);
Ref ir_read(Graph *g, uint32_t tensor, const Ref *idx, uint32_t n, Ref pad, Ty ty);
Ref ir_op(Graph *g, Op op, Ty ty, Ref a, Ref b, Ref c);
/* Sets the position of a node if it has none yet (positions are not part of identity). */
void ir_setpos(Graph *g, Ref r, SrcPos pos);

int ir_add_size(Graph *g, const char *name, int64_t value, SrcPos pos);
int ir_add_tensor(Graph *g, const Tensor *t);  /* copies *t (name must be arena-owned) */
int ir_add_def(Graph *g, const Def *d);
int ir_add_output(Graph *g, int tensor, Dtype dt, SrcPos pos);

static inline const Node *ir_node(const Graph *g, Ref r) { return &g->nodes[r]; }
static inline const Ref *ir_read_idx(const Graph *g, const Node *n)
{
	return &g->refs[n->u.read.first];
}

int ir_find_tensor(const Graph *g, const char *name);  /* -1 if none */
int ir_find_size(const Graph *g, const char *name);
int ir_find_def(const Graph *g, const char *name);     /* by a result's name; -1 if none */
/* Number of input tensors of g, and the tensor id of the k-th (in file order). */
int ir_ninputs(const Graph *g);
int ir_input_tensor(const Graph *g, int k);
/* Number of elements of tensor t (product of its extents). */
int64_t ir_tensor_count(const Graph *g, int t);

/* --- the .tg format --- */

typedef struct {
	const char *name;
	int64_t value;
} SizeOverride;

/* Parses and checks a graph. `file` names it in diagnostics. Size overrides (--size) replace
 * the values of declared sizes; an override naming no size is an error. Returns NULL and
 * fills d on error (exit code 2 for the user's errors). */
Graph *ir_parse(const char *src, size_t len, const char *file,
		const SizeOverride *ov, int nov, Diag *d);
Graph *ir_parse_file(const char *path, const SizeOverride *ov, int nov, Diag *d);

/* Parses a separate schedule file (--schedule FILE) into g's directives, replacing any
 * schedule block, and checks it against g. */
int ir_parse_schedule(Graph *g, const char *src, size_t len, const char *file, Diag *d);

/* Checks a graph built in memory (the parser calls this). Errors carry the positions
 * stored in the graph. */
int ir_check(Graph *g, Diag *d);
/* Checks only the schedule directives against g (names, indices, formats). */
int ir_check_schedule(Graph *g, Diag *d);

/* Canonical text of a graph: print(parse(print(parse(x)))) == print(parse(x)). The caller
 * frees the result. */
char *ir_print(const Graph *g);
/* Canonical text of one expression in the context of definition `def` (for messages). */
char *ir_print_expr(const Graph *g, int def, Ref r);
/* Structural equality of two graphs (names, sizes, tensors, bodies, outputs, schedule). */
bool ir_graph_equal(const Graph *a, const Graph *b);

/* ------------------------------------------------------------ host tensors */

/* A dense C-order tensor on the host. f64 as double, f32 as float, f16/bf16 as their raw
 * 16-bit patterns (uint16_t), i32 as int32_t. Owns data (free with ht_free). */
typedef struct {
	Dtype dtype;
	int rank;
	int64_t dims[IR_MAXRANK];
	int64_t n;
	void *data;
} HostTensor;

int ht_alloc(HostTensor *t, Dtype dt, int rank, const int64_t *dims);  /* zeroed; -1 on OOM */
void ht_free(HostTensor *t);
/* Element k as a double (exact for every graph dtype). */
double ht_get(const HostTensor *t, int64_t k);
/* Stores x into element k, rounding to nearest even for f32/f16/bf16; i32 truncates a
 * value the caller has made integral. */
void ht_set(HostTensor *t, int64_t k, double x);

/* .npy version 1.0, little-endian, C order: <f8 <f4 <f2 <i4, and bf16 as <u2 raw bits.
 * Reading checks nothing about the graph (see npy_check). */
int npy_write(const char *path, const HostTensor *t, Diag *d);
/* want is the dtype the caller expects: a <u2 file is read as bf16 raw bits. */
int npy_read(const char *path, Dtype want, HostTensor *t, Diag *d);
/* An input file must match its declaration exactly: names both on a mismatch. */
int npy_check(const Graph *g, int tensor, const HostTensor *t, const char *path, Diag *d);

/* --- derived gradients (compiler/sched/grad.c, docs/grad.md; spec/cli.md v2) --- */

/* Seeded faults of the derivation (GradOpts.faults), each a rule gone wrong, which the
 * directional check (interp.h mp_grad_verify) must catch (tests/test_grad.c). */
enum {
	GF_MAX_BOTH = 1 << 0,      /* max/min: every tied term gets the whole cotangent (no share) */
	GF_BCAST_NOSUM = 1 << 1,   /* a consumer index the read does not use (a broadcast) is
	                              not summed over: only its first value contributes */
	GF_VIEW_TRANSPOSE = 1 << 2, /* a transposed read's adjoint is not transposed back: the
	                              consumer's own index order is used */
	GF_SCATTER_ONE = 1 << 3,   /* a scatter through an index table keeps one write (the
	                              largest) instead of adding them */
	GF_DIV_DENOM = 1 << 4,     /* a quotient by a read has no derivative in its denominator:
	                              softmax's backward loses its - sum p dp term */
	GF__COUNT = 5,
};

typedef struct {
	const char *const *wrt;  /* the inputs to derive against (names); nwrt 0: every real one */
	int nwrt;
	bool strip_casts;        /* derive the graph with every cast replaced by its operand (the
	                            directional check's graph: docs/grad.md, "Verifying a
	                            derivation") */
	unsigned faults;         /* GF_* (seeded derivation faults, for tests and campaigns) */
} GradOpts;

/* The gradient graph of g (checked, parsed back from its own canonical text; the caller
 * frees): g's inputs, a cotangent d_y for each real output y (y's format, f32 for 16-bit
 * ones), and outputs grad_a (a's shape and format) = sum_y (dy/da)^T d_y for each input a of
 * o->wrt. o may be NULL. NULL with d: code 2 for a graph or --wrt the derivation does not
 * support (a tensor read inside a padding default, a name the spec fixes already taken, a
 * prod whose indices cannot be left-hand ones, more reduction indices than IR_MAXRED), code 3
 * for an internal error. */
Graph *gr_derive(const Graph *g, const GradOpts *o, Diag *d);
/* The GF_* fault called name ("max-both", "bcast-nosum", "view-transpose", "scatter-one",
 * "div-denom"), or 0. */
unsigned gr_fault_parse(const char *name);
/* The GF_* faults of the seeded faults kf (KF_GRAD_*: the fuzzer's names for them). */
unsigned gr_faults_of(uint64_t kf);
/* The name of GF_* bit k ("max-both"), or NULL. */
const char *gr_fault_name(int k);

/* A copy of g with every cast replaced by its operand and every real output delivered in f64
 * (the function the directional check differentiates). The caller frees; NULL with d. */
Graph *gr_strip(const Graph *g, Diag *d);

/* The directional check's graph (docs/grad.md "Verifying a derivation"), for g and its
 * gradient gg = gr_derive(g, strip_casts): inputs gg's, then t_a (f64, a's shape) for each
 * input a that gg derives, in gg's output order; outputs ip = sum_a <grad_a, t_a>,
 * cd = (L(x + h t) - L(x - h t)) / 2h with L(x) = sum_y <d_y, y(x)> and h = 2^-k, computed
 * on g with its casts dropped, and mag = sum_a sum |grad_a * t_a| (the scale of ip). The
 * caller frees; NULL with d on failure. */
Graph *gr_dirgraph(const Graph *g, const Graph *gg, int k, Diag *d);

/* --- schedules, kernel IR entry points (issue 3) --- */

/* A definition's schedule, resolved from the graph's directives (graph-format.md section 7;
 * compiler/sched/sched.c states the exact meaning of each choice):
 * - op: the format of the definition's real arithmetic (terms, expression values, loads
 *   rounded on reading): accum for reductions (by default f64 when the definition reads an
 *   f64 value, else f32: sched.c says what reading one means; any of f64, f32, f16, bf16
 *   by directive); for a plain definition f64 when it reads an f64 value or is stored in
 *   f64, else f32; f64 for the real subexpressions of integer definitions.
 * - accum: the accumulation format of a reduction (= op); DT_I32 for integer results.
 * - store: the storage format of the (value) result; DT_I32 for integer results; for an
 *   inlined definition it is op (the value is used as computed).
 * - tile[k]: tile size of left-hand index k (0: not tiled); split[r]: number of strided
 *   partial reductions over reduction index r (0 or 1: not split; at most one r).
 * For the emulator (interp.h EmuConfig): sched_formats and sched_splits. */
typedef struct {
	bool inlined;
	Dtype op, accum, store;
	Order order;
	int online;       /* 0, or 1 + the first (file order) member of its `online` set */
	int8_t orule;     /* OnRule of that set (when online) */
	/* mma (graph-format.md 7a, docs/mma.md): the contraction computed on the target's
	 * matrix unit: mma_ab the operands' format (bf16, f16), mma_m/n/k the instruction tile
	 * (16 x 8 x 16 unless the directive says) */
	bool mma;
	Dtype mma_ab;
	int mma_m, mma_n, mma_k;
	int64_t tile[IR_MAXRANK];
	int64_t split[IR_MAXRED];
} DefSched;

typedef struct {
	int ndefs;
	DefSched *defs;   /* ndefs entries (heap; sched_free) */
} Schedule;

/* The default schedule of g (no directive): every format f64 for a definition that reads
 * an f64 value, f32 for the others (graph-format.md section 7, version 2). */
void sched_default(const Graph *g, Schedule *s);
/* The schedule of g's directives (g->dirs), checked for applicability: an index that is
 * not there, a split or order of a non-reduction, an inline of an output, a reduction or a
 * topk, conflicting or repeated directives... Errors carry the directive's line. */
int sched_build(const Graph *g, Schedule *s, Diag *d);
/* A random legal schedule of g, a deterministic function of seed; over many seeds every
 * directive kind and format appears. */
void sched_sample(const Graph *g, uint64_t seed, Schedule *s);
/* s as the emulator's per-definition arrays (interp.h EmuConfig: op, accum, store, order;
 * each g->ndefs entries, caller-allocated; any may be NULL). Integer formats read f64 there:
 * the emulator computes integer definitions exactly whatever the format. */
void sched_formats(const Graph *g, const Schedule *s, Dtype *op, Dtype *accum, Dtype *store,
		   Order *order);
/* The split of each definition for the emulator (EmuConfig split, split_red; g->ndefs
 * entries each, caller-allocated): the factor (1: none) and the split reduction index. */
void sched_splits(const Graph *g, const Schedule *s, int64_t *split, int *split_red);
/* The directives of s that differ from the default, one per line, in the .tg syntax
 * (ir_parse_schedule reads them back). The caller frees the result. */
char *sched_text(const Graph *g, const Schedule *s);
void sched_free(Schedule *s);

/* One-pass forms (compiler/sched/online.c, graph-format.md 7a, docs/online.md): the rules,
 * as data, and the structural match of a set of reductions. */
typedef enum { ON_SOFTMAX, ON_FLASH, ON_WELFORD, ON_LSE, ON__COUNT } OnRule;
typedef struct {
	const char *name;     /* "online-softmax" */
	const char *takes;    /* the reductions it takes */
	const char *state;    /* the running state */
	const char *update;   /* one term */
	const char *merge;    /* two states (split pieces) */
	const char *domain;   /* why it holds, and where (all are real identities) */
} OnRuleInfo;
extern const OnRuleInfo on_rules[ON__COUNT];
/* A recognised set: its members in file order (softmax: m, l; attention: m, l, o;
 * welford: mu, var; logsumexp: z), the constant c of exp((x - m) * c) in l's terms
 * (REF_NONE: 1), attention's numerator (o's body is num / l) and which factor of it is v. */
typedef struct {
	int rule;             /* OnRule, -1 when none */
	int n;
	int def[3];
	Ref scale;
	Ref num;
	int vside;
} OnPlan;
/* Matches the reductions defs[0..n) against the rules. 0 with p filled, or -1 with why
 * (the pattern that is missing). */
int on_match(const Graph *g, const int *defs, int n, OnPlan *p, char *why, size_t nwhy);
/* The two factors of mma definition d's terms (its body a * b, each factor a read of a
 * bf16 or f16 tensor or a cast into one: compiler/sched/sched.c); false when d's body is
 * not such a product. */
bool sched_mma_factors(const Graph *g, const Schedule *s, int d, Ref *a, Ref *b, Dtype *ab,
		       char *why, size_t nwhy);
/* The plan of definition d's online set under s; -1 when d is in none. */
int on_plan(const Graph *g, const Schedule *s, int d, OnPlan *p);
/* Does r read (operands, index lists, `??` defaults) a tensor u with t[u]? */
bool on_reads(const Graph *g, Ref r, const bool *t);

/* Algebraic simplification (compiler/sched/rewrite.c). Every rule states its domain: exact
 * (bit-identical for every input, NaN, +-0, inf and subnormals included), real (an identity
 * over the reals only: allowed only when the caller's budget accounts for it) or integer. */
enum { RW_EXACT = 1 << 0, RW_REAL = 1 << 1, RW_INT = 1 << 2 };
enum { RW_MAXRULES = 32 };
typedef struct {
	int nrules;
	const char *name[RW_MAXRULES];  /* "x*1 -> x" */
	unsigned domain[RW_MAXRULES];   /* RW_EXACT, RW_REAL or RW_INT */
	uint64_t tried[RW_MAXRULES];    /* nodes the rule was tried on */
	uint64_t fired[RW_MAXRULES];    /* rewrites it made */
} RwStats;
/* A copy of g (directives included) whose bodies are simplified by the rules of the given
 * domains (a mask of RW_*). st (may be NULL) accumulates counters. The copy keeps every
 * size, tensor, definition (its index, names, indices, monoid and type), output and
 * directive of g; only expressions (bodies, range bounds) change, so a Schedule built for g
 * applies to the copy as it is, and a directive names the same definition in both (build
 * it from g: a rule that drops an f64 read or cast, such as f64(f16(x)) -> f16(x), changes
 * the copy's own default formats, section 7). The caller frees. */
Graph *rw_simplify(const Graph *g, unsigned domains, RwStats *st);
/* The rewrite the compiler applies before lowering (verify/'s workers, for every backend
 * run): the exact and integer rules only, which keep the exact value of every output bit
 * for bit; never the real ones. faults: KF_* (KF_RW_DIV_POW2 acts here, the others in
 * kir_lower). st as for rw_simplify. The caller frees. */
Graph *rw_compile(const Graph *g, uint64_t faults, RwStats *st);
/* The names and domains of every rule, counters zero (for readers of recorded firings). */
void rw_rules(RwStats *st);

/* Coverage points (compiler/cov.def, cov.c): named branches of the compiler (a partial
 * tile, a split, a plan's choice, a hard spelling), each counted when it runs. The counters
 * are the one mutable global of compiler/: they are the instrumentation, per process,
 * never read by the compiler itself. verify/'s workers reset them before a run and return
 * them with its answer (verify/worker.c); records name the points a run reached. An
 * increment costs what an increment costs: no lock, no test. */
typedef enum {
#define X(name, area, hints, what) COV_##name,
#include "cov.def"
#undef X
	COV__COUNT
} CovPoint;
extern uint64_t cov_hits[COV__COUNT];
#define COV(name) ((void)cov_hits[COV_##name]++)
/* Zeroes every counter. */
void cov_reset(void);
/* A point's name ("lower_tile_partial"), area ("lower", "vulkan", ...), hints (the
 * generator levers of cov.def, space-separated) and description (static strings). */
const char *cov_name(CovPoint p);
const char *cov_area(CovPoint p);
const char *cov_hints(CovPoint p);
const char *cov_what(CovPoint p);
/* The point named name[0..len), or -1 (a scan of lengths first: cheap enough for readers
 * of many records). */
int cov_find(const char *name, size_t len);
/* Whether a run on backend (a Backend's name) can reach point p: its area is a backend's
 * own, or code that backend runs (rewrite, lower, cemit; kivl for vulkan and wgsl). */
bool cov_reaches(CovPoint p, const char *backend);

/* Seeded faults (fuzz/ measures the fuzzer with them): each makes lowering wrong on
 * purpose in one way, the way a real compiler bug would. Never set outside that use. Off
 * by default; each is a test at lowering time only (rw_compile, kir_lower: no cost in
 * kernels when off). Their
 * names (ASSAY_FAULT=name) are verify/check.c's table; `make faults` measures each. A set of
 * faults is a uint64_t mask of the KF_* bits (LowerOpts.faults, the verifier's and the
 * fuzzer's `faults`). */
#define KF_DROP_TAIL (UINT64_C(1) << 0)     /* tile tails: partial tiles are not computed */
#define KF_SKIP_LAST (UINT64_C(1) << 1)     /* range bounds: the last term of every reduction range is
	                              left out */
#define KF_PAD_ZERO (UINT64_C(1) << 2)      /* padding: `?? DEFAULT` gives 0 whatever DEFAULT is */
#define KF_NO_COMBINE (UINT64_C(1) << 3)    /* split reduction: returns its first partial only */
#define KF_MAX_IDENTITY (UINT64_C(1) << 4)  /* reduction identity: max and min start from 0, not -+inf */
#define KF_PAIRWISE_ODD (UINT64_C(1) << 5)  /* pairwise order: a tree over an odd number (> 1) of terms
	                              leaves the last one out */
#define KF_VIEW_OFFSET (UINT64_C(1) << 6)   /* view offsets: a literal offset in an index expression is
	                              dropped (x[i + 1] reads x[i]) */
#define KF_VIEW_STRIDE (UINT64_C(1) << 7)   /* view strides: a constant factor in an index expression is
	                              dropped (x[2 * i + 1] reads x[i + 1]) */
#define KF_TRUNC_DIV (UINT64_C(1) << 8)     /* floor division: integer `/` truncates toward zero */
#define KF_NEG_MOD (UINT64_C(1) << 9)       /* remainder: integer `%` takes the sign of the dividend */
#define KF_TRI_BOUND (UINT64_C(1) << 10)    /* triangular ranges: a bound that depends on an index takes
	                              one more term (<= for <), clamped to its largest value */
#define KF_INLINE_PAD (UINT64_C(1) << 11)   /* inlining: a padded read of an inlined definition loses
	                              its padding (the producer is computed at a clamped index) */
#define KF_ACCUM_IGNORED (UINT64_C(1) << 12) /* the accumulation format is ignored: a reduction
	                              accumulates in its storage format when that is narrower
	                              (`store s : f16` sums in f16) */
#define KF_STORE_TRUNC (UINT64_C(1) << 13)  /* f16/bf16 storage truncates toward zero instead of rounding
	                              to nearest */
#define KF_MAX_NAN (UINT64_C(1) << 14)      /* real max and min (calls and monoids) are `a > b ? a : b`:
	                              a NaN is lost, and -0/+0 follow the operand order */
#define KF_ZERO_SIGN (UINT64_C(1) << 15)    /* sign of zero: real `a - b` is lowered as -(b - a), right
	                              but for an exact zero (x - x gives -0, not +0) */
#define KF_ARGMAX_TIE (UINT64_C(1) << 16)   /* argmax/argmin ties keep the last index, not the first */
#define KF_TOPK_ORDER (UINT64_C(1) << 17)   /* topk delivers its K results in ascending order */
#define KF_GATHER_BOUNDS (UINT64_C(1) << 18) /* index tables: the bounds check of an indirect index is
	                              off by one (the last valid index is an error) */
#define KF_RW_DIV_POW2 (UINT64_C(1) << 19)  /* rewrite: x / 2^k becomes x * 2^-(k+1) (frexp's exponent
	                              taken for k): the quotient is halved */
#define KF_TIE_AWAY (UINT64_C(1) << 20)     /* conversion helper: the c (and cuda) programs' double ->
	                              f16/bf16 conversion (compiler/emit/chelp.c d2h, d2b) rounds an
	                              exact tie between two normal results away from zero instead
	                              of to even: off by the half ulp every budget allows, so only
	                              the emulation check (verify/emucheck.c) sees it */
/* derivation faults: gr_derive's GF_* (below) under `assay fuzz --grad` (fz_check
 * derives every case's gradient with them); no effect on lowering */
#define KF_GRAD_MAX_BOTH (UINT64_C(1) << 21)      /* GF_MAX_BOTH */
#define KF_GRAD_BCAST_NOSUM (UINT64_C(1) << 22)   /* GF_BCAST_NOSUM */
#define KF_GRAD_VIEW_TRANSPOSE (UINT64_C(1) << 23) /* GF_VIEW_TRANSPOSE */
#define KF_GRAD_SCATTER_ONE (UINT64_C(1) << 24)   /* GF_SCATTER_ONE */
#define KF_GRAD_DIV_DENOM (UINT64_C(1) << 25)     /* GF_DIV_DENOM */
#define KF_ONLINE_NO_RESCALE (UINT64_C(1) << 26) /* online attention: acc is not rescaled when the
	                              running maximum grows */
#define KF_ONLINE_FLIP (UINT64_C(1) << 27)  /* online softmax/attention: partials rescaled by
	                              exp(m_new - m_old), not exp(m_old - m_new) */
#define KF_WELFORD_WEIGHT (UINT64_C(1) << 28) /* welford: Chan's merge of split pieces moves the mean by
	                              d * nA / n instead of d * nB / n */
#define KF_LSE_NO_SHIFT (UINT64_C(1) << 29) /* online logsumexp: log(sum exp(x)), without the shift by
	                              the running maximum */
#define KF_ONLINE_SPLIT_MAX (UINT64_C(1) << 30) /* online softmax/attention/logsumexp: the merge of
	                              split pieces ignores their maxima (l = lA + lB, acc = accA
	                              + accB, not rescaled to the common maximum) */
#define KF_ONLINE_CAUSAL_TILE (UINT64_C(1) << 31) /* online passes: a key range whose upper
	                              bound depends on the row (r: 0..i+1) stops one key short in
	                              the one-pass loop (the diagonal key is masked out) */
#define KF_ONLINE_LAST_L (UINT64_C(1) << 32) /* online attention: o's final division takes the
	                              last split piece's own l, not the combined l */
#define KF__COUNT 33
#define KF_REWRITE KF_RW_DIV_POW2   /* the faults rw_compile acts on (compiler/sched/rewrite.c) */

typedef struct {
	uint64_t faults;   /* KF_* */
} LowerOpts;

/* A lowered program: one kernel (loop nest) per stored definition, over buffers (the
 * private kernel IR of compiler/kir/kir.h). It borrows g and must not outlive it. */
typedef struct Kernels Kernels;
typedef struct MapTarget MapTarget;   /* a GPU target's limits (compiler/map/map.h) */
/* Lowers g under schedule s (which must come from sched_build/sched_default/sched_sample
 * for this g). o may be NULL. Returns NULL with d on failure. */
Kernels *kir_lower(const Graph *g, const Schedule *s, const LowerOpts *o, Diag *d);
void kir_free(Kernels *k);
/* A readable dump of the kernel IR (for tests and debugging). The caller frees. */
char *kir_print(const Kernels *k);
/* The GPU plan the mapping stage recorded for k on target t (a Backend's map; compiler/
 * map.h), in words, one paragraph per kernel (for tests and debugging; the caller frees):
 *   kernel I: item|group|lanes wg=W groups=G [split=S] [shared=B] [scratch=B]
 *             [scratch_group=B] [i32] [f64] [err]
 *     roles: nest:STMT/DEPTH split:STMT tail:STMT swap:STMT lane:STMT ...
 *     locals: vV:own|shared|part|merge|flag/private|shared|scratch|scratch_group ...
 *     binds: bB:l|s|ls ...
 * (roles, locals other than own/private, binds: lines only where there is one). */
char *kir_plan_text(const Kernels *k, const MapTarget *t);
/* Checks that the program is well formed: every operand an expression names exists (an op
 * has all the operands of its arity) and an op's operands have the types kir.h states
 * (C would convert a mismatch silently; WGSL and GLSL reject it). 0, or -1 with d (code 3:
 * a compiler bug). */
int kir_validate(const Kernels *k, Diag *d);

/* Backends (architecture.md "Backends"): one struct of function pointers each. A module is
 * one compiled program with its buffers; it borrows its Kernels (keep them alive). */
typedef struct BeModule BeModule;

typedef struct {
	int threads;             /* <= 0: 1 */
	const char *cache_dir;   /* NULL: $XDG_CACHE_HOME/assay, else ~/.cache/assay */
} BeOpts;

typedef struct {
	bool cache_hit;          /* compile found the program already built */
	double compile_s;        /* wall time of compile (including a cache lookup) */
	double launch_s;         /* wall time of the last launch (all its runs, one wait) */
	int runs;                /* runs of the program in the last launch */
} BeStats;

/* What a backend promises about its arithmetic, as data (architecture.md v2, style.md "A
 * target carries facts"): the budgets (oracles/budget.c) and the emulation check
 * (verify/emucheck.c) read these, never a backend's name. Each backend's run.c states its
 * facts with their sources; docs/oracle.md "Bit-exact verdicts" has the table.
 * - flush: bit (1 << f) for a format f whose subnormal values the device may flush to zero
 *   as operands and results of arithmetic, comparisons, conversions and functions (not of
 *   loads, stores and selections); f16 and bf16 are computed in f32, so DT_F32 covers them.
 * - specials: + - * / fma, conversions and selections keep NaN, infinities and the sign of
 *   zero as IEEE 754 does (false where the device may assume them absent or ignore the sign
 *   of a zero: SPIR-V without SignedZeroInfNanPreserve, WGSL).
 * - minmax: how real max and min treat NaN and signed zeros.
 * - no_contract: a*b + c is never fused into an fma nor otherwise rearranged (GCC
 *   -ffp-contract=off, OpenCL's FP_CONTRACT OFF, NVRTC --fmad=false, GLSL `precise`);
 *   WGSL has no way to forbid it.
 * - exact[f]: bit (BE_OP(op)) when op computed in format f (the schedule's op format; f16
 *   and bf16 are f32 operations rounded to the format, compiler/kir/kir.h) gives exactly the
 *   IEEE 754 result rounded to nearest even, special values included: what the emulating
 *   interpreter computes. A cast op's bit in exact[f] (OP_CAST_F32 in exact[DT_F32]) says
 *   that conversions into f (from the other formats and from integers) round to nearest
 *   even. exact[DT_I32] holds the integer operations (exact int64 in every backend).
 *   Functions with an allowance (exp, log, ...: oracles/allowances.def) are in no set. */
typedef enum {
	BE_MINMAX_IEEE,   /* IEEE 754-2019 maximum and minimum: NaN if either operand is NaN,
	                     -0 below +0 (the emitters' max_f/min_f helpers) */
	BE_MINMAX_ANY,    /* unspecified for a NaN operand: the device may assume none */
} BeMinMax;

typedef struct {
	uint32_t flush;
	bool specials;
	BeMinMax minmax;
	bool no_contract;
	bool nsz;          /* the sign of a zero may be lost although specials holds: a driver
	                      that folds x + 0.0 to x and x * 0 to 0 under SignedZeroInfNanPreserve
	                      (Mesa's llvmpipe: compiler/vulkan/run.c) */
	uint64_t exact[DT__COUNT];
	/* the matrix unit's compute capability (90: sm_90) whose arithmetic `mma` follows
	 * (interp/mma.c's rows); 0: none, or not known before a compile */
	int mma_sm;
} BeFacts;

#define BE_OP(op) ((uint64_t)1 << (op))
_Static_assert(OP__COUNT <= 64, "BeFacts.exact holds one bit per op");
/* Operations whose result is one of their operands, an integer value or a boolean: exact in
 * any format where special values and zero signs are kept. */
#define BE_OPS_SELECTING (BE_OP(OP_NEG) | BE_OP(OP_ABS) | BE_OP(OP_MAX) | BE_OP(OP_MIN) | \
	BE_OP(OP_FLOOR) | BE_OP(OP_CEIL) | BE_OP(OP_SELECT) | BE_OP(OP_EQ) | BE_OP(OP_NE) | \
	BE_OP(OP_LT) | BE_OP(OP_LE) | BE_OP(OP_GT) | BE_OP(OP_GE))
/* + - * rounded once */
#define BE_OPS_ROUNDED (BE_OP(OP_ADD) | BE_OP(OP_SUB) | BE_OP(OP_MUL))
#define BE_OPS_DIVSQRT (BE_OP(OP_DIV) | BE_OP(OP_SQRT))
/* the integer operations of the kernel IR (exact int64, overflow checked where stored) */
#define BE_OPS_INT (BE_OP(OP_NEG) | BE_OP(OP_ADD) | BE_OP(OP_SUB) | BE_OP(OP_MUL) | \
	BE_OP(OP_IDIV) | BE_OP(OP_MOD) | BE_OP(OP_ABS) | BE_OP(OP_MAX) | BE_OP(OP_MIN) | \
	BE_OP(OP_SELECT) | BE_OP(OP_EQ) | BE_OP(OP_NE) | BE_OP(OP_LT) | BE_OP(OP_LE) | \
	BE_OP(OP_GT) | BE_OP(OP_GE))
/* IEEE arithmetic in every format (c; cuda with --fmad=false --prec-div --prec-sqrt): f16
 * and bf16 + - * / sqrt through f32 are the format's own operations (24 >= 2p + 2), fma is
 * not (a fused f32 result rounded again to 11 or 8 bits may differ from one rounding). */
#define BE_FACTS_IEEE { \
	.specials = true, .minmax = BE_MINMAX_IEEE, .no_contract = true, \
	.exact = { \
		[DT_F64] = BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OPS_DIVSQRT | BE_OP(OP_FMA) | \
			   BE_OP(OP_CAST_F64), \
		[DT_F32] = BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OPS_DIVSQRT | BE_OP(OP_FMA) | \
			   BE_OP(OP_CAST_F32), \
		[DT_F16] = BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OPS_DIVSQRT | BE_OP(OP_CAST_F16), \
		[DT_BF16] = BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OPS_DIVSQRT | BE_OP(OP_CAST_BF16), \
		[DT_I32] = BE_OPS_INT, \
	}}

/* Whether facts f promise op computed in format fmt bit for bit (f->exact). */
static inline bool be_exact(const BeFacts *f, Op op, Dtype fmt)
{
	return fmt >= 0 && fmt < DT__COUNT && (f->exact[fmt] & BE_OP(op));
}

typedef struct {
	const char *name;                                   /* "c" */
	/* What every device of this backend promises (BeFacts); device_facts may refine it. */
	BeFacts facts;
	/* Where the permission to flush subnormals comes from (a citation), or NULL. */
	const char *flush_source;
	/* A GPU target's limits for the mapping stage (compiler/map/map.h), or NULL (c). */
	const MapTarget *map;
	/* Optional: the facts of the device the process's session has open (called after a
	 * compile, in the worker that ran it): f starts as facts and is refined where the
	 * device promises more (OpenCL's CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT, Vulkan's float
	 * controls) or less (an OpenCL device without CL_FP_DENORM flushes f32). Leaves f as it
	 * is when no session is open. */
	void (*device_facts)(BeFacts *f);
	/* 0 if usable here; else -1 with the reason in why. */
	int (*available)(char *why, size_t n);
	/* A description of the device (malloc'ed). */
	char *(*device)(void);
	/* The program's source text (malloc'ed), deterministic. */
	char *(*emit)(const Kernels *k, Diag *d);
	BeModule *(*compile)(const Kernels *k, const char *src, const BeOpts *o, BeStats *st,
			     Diag *d);
	/* Optional: readies, in a process that forks workers, what every compile would otherwise
	 * redo in each (loads a compiler library, builds its tables), so that the workers
	 * inherit it. It opens no device (a device context does not survive a fork), starts no
	 * thread, reports nothing (compile says what is missing) and runs at most once. */
	void (*warm)(void);
	/* Allocates every buffer of the program, with guard regions around each. */
	int (*alloc)(BeModule *m, Diag *d);
	/* Copies input tensor `tensor` (in its declared dtype and shape) into its buffer. */
	int (*upload)(BeModule *m, int tensor, const HostTensor *t, Diag *d);
	/* Runs the program n (>= 1) times back to back, each run every kernel in order and
	 * after the last run's writes, then waits for the device once and reads the error
	 * slot once: the first error any kernel reported since the launch began (kernels
	 * after a failing one run on harmlessly: every index is clamped by its check). A
	 * runtime error of the graph (an indirect index out of range, a topk range shorter
	 * than K, an integer that does not fit in 32 bits) is -1 with d (code 2). */
	int (*launch)(BeModule *m, int n, Diag *d);
	/* Stored tensor `tensor` converted to dt (rounded to nearest even); t allocated here. */
	int (*download)(BeModule *m, int tensor, Dtype dt, HostTensor *t, Diag *d);
	/* 0 when every guard region is intact; else -1 with d naming the buffer. */
	int (*guards)(BeModule *m, Diag *d);
	void (*free)(BeModule *m);
	/* Optional (NULL where a backend has none): the program compiled for target without a
	 * device (cuda: target "sm_90" gives PTX for compute_90), malloc'ed; NULL with d. */
	char *(*compile_only)(const Kernels *k, const char *target, Diag *d);
} Backend;

/* The cache directory of compiled programs, created: BeOpts.cache_dir, else
 * $XDG_CACHE_HOME/assay, else $HOME/.cache/assay (o may be NULL). 0, or -1 with errno. */
int be_cache_dir(const BeOpts *o, char *dir, size_t n);
/* A whole non-empty file (malloc'ed, *len bytes and a NUL after them), or NULL with
 * *len = 0 (compiler/emit/berun.c; the backends' caches, verify's ASSAY_SOURCE_<BACKEND>). */
void *be_read_file(const char *path, size_t *len);
/* The backend called name, or NULL. */
const Backend *be_find(const char *name);
/* The k-th backend (0..), NULL past the last. */
const Backend *be_at(int k);
/* The run driver (compiler/backend.c): the one run sequence of a lowered program on a
 * backend (emit, compile, alloc, upload, launch, guards, download) that be_run, verify's
 * workers and the benchmarks share. A BeRun is one program's run; its stages are called
 * in this order, each at most once but for be_run_launch (any number of times) and
 * be_run_download (once per output):
 *   be_run_open                 the run of k on b (borrows both; makes nothing)
 *   be_run_emit                 r->src: the program's text (the caller may replace it,
 *                               malloc'ed, before the compile)
 *   be_run_compile              r->m, r->st's compile time and cache hit
 *   be_run_bind                 alloc, then every input uploaded (be_run_ready: the
 *                               three above in turn)
 *   be_run_launch / be_run_time n runs back to back; r->st's launch time and runs
 *   be_run_guards               every guard region intact
 *   be_run_download / _outputs  outputs in their dtypes
 *   be_run_close                frees the source and the module
 * A stage that fails returns -1 with d and leaves r->stage at the stage that failed,
 * which be_run_fail classifies; the stages after it then fail at once (code 3), as does a
 * stage asked for out of order or (but launch, guards and download) a second time. r->at,
 * when set, is called with r->ctx as each stage begins (verify's workers time the stages
 * and apply their limits by it). */
typedef enum {
	BE_ST_OPEN, BE_ST_EMIT, BE_ST_COMPILE, BE_ST_ALLOC, BE_ST_UPLOAD, BE_ST_LAUNCH,
	BE_ST_GUARDS, BE_ST_DOWNLOAD, BE_ST_DONE, BE_ST__COUNT
} BeStage;

/* What a failed run's diagnostic means, by the stage it came from (be_run_fail). */
typedef enum {
	BE_FAIL_NONE,
	BE_FAIL_UNSUPPORTED,  /* emit, compile or alloc declined (code 2): a limit the backend
	                         or the device states */
	BE_FAIL_COMPILE,      /* emit or compile failed otherwise: a compile error */
	BE_FAIL_RUNTIME,      /* launch: a kernel reported a runtime error of the graph (code 2) */
	BE_FAIL_OOB,          /* guards: a kernel wrote outside a buffer (code 1) */
	BE_FAIL_BACKEND,      /* alloc, upload, launch, guards or download failed otherwise */
	BE_FAIL_ENV,          /* any stage: the environment failed (Diag.env), not the kernel */
} BeFail;

typedef struct {
	const Backend *b;
	const Kernels *k;
	char *src;            /* after be_run_emit (owned) */
	BeModule *m;          /* after be_run_compile (owned) */
	BeStage stage;        /* the stage running, failed in, or last done (BE_ST_DONE) */
	bool failed;
	int downloaded;       /* outputs downloaded so far */
	BeStats st;
	void (*at)(void *ctx, BeStage s);   /* optional */
	void *ctx;
} BeRun;

/* be_run_time's measure: one warm-up run (a driver that compiles at the first launch
 * does it there), one run to size the batches, then `batches` batches of runs back to
 * back, each of about batch_s seconds (at least one run, at most BE_MAX_RUNS); a sizing
 * run over long_s seconds (> 0) cuts the batches to 3, one over 10 long_s to 1, and
 * counts as the first batch. */
enum { BE_MAX_RUNS = 10000 };
typedef struct {
	int batches;          /* <= 0: 1 */
	double batch_s;       /* <= 0: one run a batch */
	double long_s;        /* <= 0: never cut */
} BeTimeOpts;

typedef struct {
	double run_s;         /* median over the batches of a batch's time / its runs */
	double warm_s;        /* the warm-up run, end to end */
	double one_s;         /* the sizing run: one run alone, end to end (its launch, wait and
	                         error-slot read) */
	int batches, runs;    /* batches timed, runs in each (the first alone after a cut) */
} BeTimes;

void be_run_open(BeRun *r, const Backend *b, const Kernels *k);
int be_run_emit(BeRun *r, Diag *d);
int be_run_compile(BeRun *r, const BeOpts *o, Diag *d);
/* alloc, then inputs[i] (input order, ir_input_tensor) uploaded into each input. */
int be_run_bind(BeRun *r, const HostTensor *inputs, Diag *d);
/* be_run_emit, be_run_compile and be_run_bind in turn: the run ready to launch (r->src
 * kept until be_run_close). */
int be_run_ready(BeRun *r, const BeOpts *o, const HostTensor *inputs, Diag *d);
/* The program run n (>= 1) times back to back, one wait and one error-slot read at the
 * end (Backend.launch); r->st.launch_s is the wall time of the whole call. */
int be_run_launch(BeRun *r, int n, Diag *d);
/* Times the program by o (BeTimeOpts) into t, through be_run_launch. */
int be_run_time(BeRun *r, const BeTimeOpts *o, BeTimes *t, Diag *d);
int be_run_guards(BeRun *r, Diag *d);
/* Output k (0..) converted to its dtype into t (allocated here); the stage after the
 * last output is BE_ST_DONE. */
int be_run_download(BeRun *r, int k, HostTensor *t, Diag *d);
/* Every output into outs[k] (allocated here; none kept on failure). */
int be_run_outputs(BeRun *r, HostTensor *outs, Diag *d);
/* What the failure of r (with its diagnostic d) is; BE_FAIL_NONE for a run not failed. */
BeFail be_run_fail(const BeRun *r, const Diag *d);
void be_run_close(BeRun *r);
/* Lowers nothing: runs an already lowered program on backend b end to end through the
 * driver (emit, compile, bind, one launch, guards, every output in its dtype). inputs
 * are in input order (ir_input_tensor); outs[k] is allocated for output k. */
int be_run(const Backend *b, const Kernels *k, const BeOpts *o, const HostTensor *inputs,
	   HostTensor *outs, BeStats *st, Diag *d);

#endif
