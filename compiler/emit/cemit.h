/* compiler/emit/cemit.h (private to compiler/ and its backend folders): the emitter core of the
 * backends that write a C-like language: C, OpenCL C, CUDA C++, GLSL (vulkan) and WGSL.
 *
 * Every one of them writes its program from the kernel IR (kir.h) in the same way: all text
 * goes through one growable buffer with an indentation level and a printf-checked
 * ce_emit(); each statement's expressions become one temporary per computing node (t<id>),
 * operands first, fully parenthesised, in a block of the statement's own, so temporaries
 * never outlive their statement; locals are v<variable id>, buffers b<buffer id>. The core
 * holds that walk, the control statements and the text every program shares.
 *
 * A language is a CLang: spellings (types, constants, loop variables, error reports) and
 * hooks for the pieces it writes its own way (a load, an op, a conversion, a statement).
 * A NULL hook takes the core's default, which is C's spelling of the piece. A backend keeps
 * its real differences (execution model, storage of locals, helper functions, launch
 * interface) in its own emit.c and reaches its own state from a hook by embedding the
 * CEmit as the first member of its emitter.
 *
 * Invariants: the text is a deterministic function of the kernel IR, the CLang and the
 * backend's own plan. After the first failure (e->failed, e->d filled) nothing more is
 * walked, and ce_finish returns NULL.
 */
#ifndef ASSAY_CEMIT_H
#define ASSAY_CEMIT_H

#include "../kir/kir.h"

typedef struct CEmit CEmit;

/* How an op is written, around its spelling op. */
typedef enum {
	CF_NONE,
	CF_INFIX,    /* (a op b) */
	CF_PREFIX,   /* (op a) */
	CF_CALL,     /* op(a, b, c) */
	CF_SELECT,   /* (a ? b : c) */
	CF_SELECTF,  /* op(c, b, a): a select function of (if false, if true, condition) */
	CF_NOTEQ,    /* (!(a == b)): an unordered != (true for a NaN) */
} CForm;

/* ------------------------------------------------------------ op spellings
 *
 * How each language spells an op comes from compiler/ops.def, as tinygrad's code_for_op: a
 * C-family base, which a language overrides only in the entries it spells differently (its
 * CLang's ops). The base (ce_spell): SELECT is (c ? a : b); an op whose ops.def c column is
 * an operator is that operator in every type it has; a function is c, with the language's
 * f32 suffix (fsfx) on f32; a type c does not spell (c NULL, or abs of an integer) is the
 * program's helper <helper>_f, _d or _i. An op is spelled in the types it has: integer if
 * OPF_INT_OK, OPF_INT_ONLY or a comparison; boolean if OPF_BOOL_IN, a comparison or SELECT;
 * f32 and f64 unless OPF_INT_ONLY or OPF_BOOL_IN; casts in none (KX_CVT/KX_ROUND carry
 * them). */

/* The types an op is spelled by: its result's, but a comparison's operands'. */
typedef enum { CS_F32, CS_F64, CS_INT, CS_BOOL, CS__COUNT } CSType;

/* A language's spelling of one op where it differs from the base: in each type whose text
 * is not NULL, the op is written in form with that text; the other types keep the base's.
 * A zero entry overrides nothing. */
typedef struct {
	uint8_t form;                   /* CForm */
	const char *f, *d, *i, *b;      /* f32, f64, integer, boolean */
} COpSpell;

/* A resolved spelling: the form and its text (an operator or a function's name). */
typedef struct {
	uint8_t form;                   /* CForm; CF_NONE: the op has none in that type */
	char s[32];
} CSpelt;

typedef struct {
	const char *name;               /* the backend, for messages: "opencl" */
	const char *type[KT__COUNT];    /* types of temporaries and locals */
	const char *store[DT_I32 + 1];  /* element types of buffers, by storage format */
	/* integer constants: imin for INT64_MIN, imax (unless NULL) for INT64_MAX, else
	 * ipre N isfx, a negative one in parentheses */
	const char *imin, *imax, *ipre, *isfx;
	/* real constants, [0] f32 and [1] f64: NaN, +inf, -inf; others in hex, f32 ones with
	 * an f suffix, a negative one in parentheses */
	const char *nan[2], *inf[2], *ninf[2];
	/* op spellings (ce_spell): the f32 suffix of the base's functions (expf), and the
	 * overrides of the base, indexed by Op (NULL: none) */
	const char *fsfx;
	const COpSpell *ops;
	const char *ivar, *ivar_end;    /* around a loop variable's name when it is declared */
	const char *forever;            /* the head of an endless loop: "for (;;) {" */
	bool braces;                    /* a conditional statement is always braced */
	/* error reports: chk(<err>v, lo, hi, guard or <truth>, SITE<site>) and
	 * rep(<err>SITE<site>, v) */
	const char *err, *truth, *site;
	/* Why the backend computes no `mma` contraction (graph-format.md 7a: a backend
	 * without a matrix unit reports unsupported with the reason); NULL: it computes them. */
	const char *no_mma;

	/* Opens, indented, the declaration of expression id's temporary ("const float t3 = ");
	 * false: refused (after ce_unsupported), nothing written. */
	bool (*temp)(CEmit *e, int32_t id);
	void (*iconst)(CEmit *e, const KExpr *x);
	void (*fconst)(CEmit *e, const KExpr *x);
	void (*operand)(CEmit *e, const KExpr *x, int i);   /* operand i of an op */
	void (*elem)(CEmit *e, int32_t v, int32_t idx);     /* element idx of local array v */
	void (*load)(CEmit *e, const KExpr *x);
	void (*op)(CEmit *e, const KExpr *x);               /* no default: ce_cop or ce_op */
	void (*cvt)(CEmit *e, const KExpr *x);
	void (*round)(CEmit *e, const KExpr *x);            /* no default */
	void (*check)(CEmit *e, const KExpr *x);
	/* Writes statement id (ce_stmts walks a list with it); returns the last statement of
	 * the list it wrote (id, unless it wrote a run of them). No default. */
	int32_t (*stmt)(CEmit *e, int32_t id);
	void (*body)(CEmit *e, int32_t first);   /* a nested list: ce_stmts by default */
} CLang;

struct CEmit {
	char *buf;           /* the text, NUL-terminated once anything is written */
	size_t len, cap;
	int ind;             /* tabs before each line */
	const Kernels *k;
	const CLang *L;
	uint32_t *mark;      /* per expression: the statement stamp it was written in */
	uint32_t stamp;
	bool failed;
	Diag *d;
};

/* Starts e on program k in language L (e->mark allocated); ce_finish frees what it holds
 * and returns the text (the caller frees it), or NULL after a failure. */
void ce_init(CEmit *e, const Kernels *k, const CLang *L, Diag *d);
char *ce_finish(CEmit *e);

void ce_emit(CEmit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line: indented, with its newline. */
void ce_line(CEmit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ce_indent(CEmit *e);
/* What the language cannot express: code 2, "<name> backend: unsupported: ..." (the first
 * reason is kept). ce_internal: code 3, an emitter bug. */
void ce_unsupported(CEmit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ce_internal(CEmit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ expressions */

/* The text of expression id: a variable, a constant or a temporary. */
void ce_ref(CEmit *e, int32_t id);
void ce_args(CEmit *e, const KExpr *x, int n);                /* operands 0..n-1, comma-separated */
void ce_call(CEmit *e, const char *fn, const KExpr *x, int n); /* fn(operands) */
void ce_op(CEmit *e, const KExpr *x, CForm form, const char *spelling);
/* The type op x is spelled by (CSType): its result's, a comparison's operands'. */
CSType ce_spell_type(const CEmit *e, const KExpr *x);
/* Op op in type t in language L: L->ops's override where it has one, else the base (see
 * "op spellings" above). false (out->form CF_NONE): the op has no spelling in t. */
bool ce_spell(const CLang *L, Op op, CSType t, CSpelt *out);
/* The op of x as ce_spell spells it in x's type (the default op of C, OpenCL and CUDA);
 * a type without a spelling is an emitter bug (ce_internal). */
void ce_cop(CEmit *e, const KExpr *x);
/* chk(<err>v, lo, hi, guard, site) of check expression x: the default of L->check. */
void ce_check(CEmit *e, const KExpr *x);
/* The C-family spelling of a load (bN[i], widened): the default of CLang.load; ce_load_at
 * reads buffer x->v's element idx from the array named ARR<buffer> instead (a staged copy). */
void ce_load_c(CEmit *e, const KExpr *x);
void ce_load_at(CEmit *e, const KExpr *x, const char *arr, int32_t idx);
/* Writes the temporaries expression id needs, operands first (those already written in
 * this statement are not written again). */
void ce_temps(CEmit *e, int32_t id);

/* ------------------------------------------------------------ statements */

/* Opens a statement with expressions roots[0..n): a block when any needs a temporary
 * (true), then the temporaries. ce_close closes what ce_open opened. */
bool ce_open(CEmit *e, const int32_t *roots, int n);
bool ce_open_stmt(CEmit *e, const KStmt *s);   /* with s's expressions a and b */
void ce_close(CEmit *e, bool open);
/* `for (<ivar>v = a<from>; v < b; v<step>) {` for loop statement s, indented. */
void ce_for(CEmit *e, const KStmt *s, const char *from, const char *step);
/* The control statements in pieces, for a backend that walks their bodies itself: each
 * open returns what its end takes; the body goes between, at the indentation set. */
bool ce_loop_open(CEmit *e, const KStmt *s);
bool ce_while_open(CEmit *e, const KStmt *s);
bool ce_if_open(CEmit *e, const KStmt *s);
void ce_else(CEmit *e);
void ce_end(CEmit *e, bool open);          /* of a loop or an if */
void ce_while_end(CEmit *e, bool open);
/* A loop, while or if statement whole, its bodies written by L->body. */
void ce_control(CEmit *e, const KStmt *s);
/* `lhs = val;` and its newline (not indented); lhs is local v, or its element idx >= 0. */
void ce_set(CEmit *e, int32_t v, int32_t idx, int32_t val);
/* `if (!a) rep(site, b);` of check statement s (not indented, no newline). */
void ce_report(CEmit *e, const KStmt *s);
/* `b[a] = <b converted to the buffer's format>;` of store statement s, C's way. */
void ce_store(CEmit *e, const KStmt *s);
/* The statement list from first, by L->stmt. */
void ce_stmts(CEmit *e, int32_t first);

/* ------------------------------------------------------------ pairwise trees
 *
 * Statement s (KS_TREE: local v = the pairwise tree of local array c[a .. a+b), kir.h) for
 * the languages without recursion (OpenCL C, GLSL, WGSL), written once: an explicit stack
 * of frames (first term, count, phase) walks the tree of kir.h depth first (the left half
 * of n terms is the first floor(n/2)), a stack of values holds the finished halves, and a
 * combine is left op right rounded to s->fmt (h2f(f2h(..)) for f16, b2f(f2b(..)) for bf16,
 * the program's helpers; any other format is the terms' own). ce_tree writes the stacks'
 * declarations (unless they are the kernel's: ce_tree_stacks), the first frame, the
 * walk and v = tr_v[0] (unless t->keep: the caller gives tr_v[0] to v), at the
 * indentation set. The names are tr_lo, tr_n, tr_ph (frames), tr_v (values), tr_sp, tr_vp, tr_f, tr_r. */
typedef struct {
	const char *itype;    /* the frames' integer type ("long", "int", "i32") */
	const char *isfx;     /* the suffix of its literals ("" or "i") */
	const char *icvt;     /* a conversion of the IR's integers to itype, NULL: none */
	const char *vtype;    /* the values' type; NULL: the terms' (L->type) */
	const char *rpre;     /* before the declaration of a value: GLSL's "precise " */
	int depth;            /* frames (and values) the stacks hold */
	bool shared;          /* the stacks are the kernel's (ce_tree_stacks) */
	bool keep;            /* v is not set: the caller does it */
	/* Declares local name of type: an array of n when n > 0, else initialised to init
	 * (mutable when mut), with its newline; NULL: C's ("type name[n];", "type name = init;"). */
	void (*decl)(CEmit *e, const char *type, const char *name, int n, const char *init,
		     bool mut);
	/* Term ix of local array v (an index of itype); NULL: v<v>[ix]. */
	void (*term)(CEmit *e, int32_t v, const char *ix);
} CTree;
void ce_tree(CEmit *e, const KStmt *s, const CTree *t);
/* The declarations of the stacks (frames of t->depth, values of t->vtype) that a kernel's
 * trees share when t->shared. */
void ce_tree_stacks(CEmit *e, const CTree *t);

/* ------------------------------------------------------------ programs */

/* The tile origins of kernel kn's parallel dimensions from the item number in the
 * program's variable q, the last dimension (the fastest) first; printf formats of the lines:
 * one (origin variable) for a dimension of one tile, else first (origin variable, tiles,
 * tile size) and next (tiles), which divides q by the tiles. */
typedef struct {
	const char *one, *first, *next;
} CTiles;
void ce_tiles(CEmit *e, const Kernel *kn, const CTiles *f);
/* The name of the tensor kernel i computes (its definition's first output). */
const char *ce_kernel_name(const Kernels *k, int i);
/* Per buffer (nbufs + 1, calloc'd, the caller frees): 1 if statements from body load it,
 * 2 if they store it. */
uint8_t *ce_buffer_use(const Kernels *k, int32_t body);
/* The same over the n kernels i .. i + n - 1 of one fused launch (MapKernel.nfused). */
uint8_t *ce_launch_use(const Kernels *k, int i, int n);
/* The comment line of fused launch i of n kernels: names, "one launch, a PER per row (n
 * kernels fused, map/fuse.c)", the lead's work-group where wg > 0. */
void ce_launch_about(CEmit *e, int i, int n, const char *per, int wg);
/* The schedule's lines (none for the default schedule), each after lead, under the line
 * head unless NULL. */
void ce_schedule(CEmit *e, const char *head, const char *lead);
/* The comment lines that say a program's schedule, seeded faults and buffers, each led by
 * lead (" *" inside a block comment, "//"). */
void ce_about(CEmit *e, const char *lead);

/* ------------------------------------------------------------ helpers (chelp.c) */

/* How a C-family dialect spells the helper functions its programs carry. */
typedef struct {
	const char *fn;       /* before a helper's return type: "static inline " */
	const char *i64;      /* the int64 type */
	const char *let;      /* before a local of a helper: "" or "const " */
	const char *gap;      /* after a helper (a group of one-liners): "" or "\n" */
	const char *neg[2];   /* the test that a is negative, a float [0] or a double [1] */
	const char *err;      /* chk's error slot parameter: "int64_t *err" */
	const char *site;     /* the type of chk's site parameter */
	/* for d2h and d2b: before them, the 16-bit and 64-bit unsigned types, the lines that
	 * set b (x's bits), a (its magnitude) and s (its sign), the line that sets the double
	 * ax from a */
	const char *dfn, *u16, *u64, *bits, *ax;
} CHelp;

/* fdiv_i (floor division), fmod_i (non-negative remainder; both 0 for b = 0), abs_i, max_i
 * and min_i. */
void ce_help_int(CEmit *e, const CHelp *h);
/* max_f and min_f (dbl: max_d and min_d), IEEE 754-2019's: NaN if either is, -0 below +0. */
void ce_help_minmax(CEmit *e, const CHelp *h, bool dbl);
/* chk(err, v, lo, hi, g, site): v if lo <= v < hi, else lo, reporting site when g (through
 * the program's own rep). */
void ce_help_chk(CEmit *e, const CHelp *h);
/* d2h (bf16: d2b): double -> f16 (bf16) bits, rounded to nearest even. */
void ce_help_d2x(CEmit *e, const CHelp *h, bool bf16);
/* The helpers of a C or CUDA program, in order: widen (the program's h2f and b2f), d2h and
 * d2b, the integer ones, max and min in float and double, own (the program's others), chk. */
void ce_help_all(CEmit *e, const CHelp *h, const char *widen, const char *own);

#endif
