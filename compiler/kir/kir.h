/* compiler/kir/kir.h (private to compiler/): the kernel IR, the loop-nest form every backend
 * emits from.
 *
 * A program (struct Kernels) is a list of kernels run in order, over buffers: one buffer
 * per input tensor and per stored definition result, in its storage format. A kernel
 * computes one stored definition. Its parallel domain is a grid of tiles over the
 * definition's left-hand indices (a topk's last index excepted): item t of the grid binds
 * each tile origin variable, and the kernel's body runs once per item; items are
 * independent, so a backend spreads them over threads or work-groups. Inside the body,
 * statements are structured (loops, while, if, assignments to locals, stores to buffers).
 *
 * Expressions are a hash-consed DAG of pure values (except KX_CHECK, which reports an
 * error and is idempotent). A statement's expressions are evaluated when the statement
 * runs; a backend may share a node within one statement (one temporary per node) but
 * must re-evaluate across statements, because locals change between them.
 *
 * Typing: every expression has a KType. Arithmetic happens in KT_F32 or KT_F64 (the
 * schedule's op format; an f16 or bf16 op format computes in KT_F32 and rounds each
 * result with KX_ROUND, which for + - * / sqrt is exactly the f16/bf16 operation) or KT_INT
 * (int64, exact integers, indices); comparisons give KT_BOOL. Conversions are explicit: KX_LOAD widens a stored value exactly (f16, bf16 and
 * f32 to f32, f64 to f64, i32 to int), KX_CVT converts between types with one rounding,
 * KX_ROUND rounds a value into a narrower format and keeps its type (casts, f16 storage
 * emulation). A store converts the value into the buffer's format (round to nearest even).
 *
 * Reductions are explicit: accumulators are locals, linear order is a loop, split
 * reductions are strided partial accumulators combined at the end, and pairwise order is
 * KS_TREE over a local array of terms (the tree: left half = the first floor(n/2) terms,
 * recursively; one term is itself).
 *
 * Ids: expressions, statements, variables and buffers are int32 indices into the program's
 * arrays; -1 means none. Expression 0 and statement 0 are unused.
 *
 * For a backend (the GPU ones of issue 5 included):
 * - items of a kernel's grid are independent: one work-group (or thread) per item; the
 *   origins follow from the item id t as in c/emit.c (last parallel dimension fastest);
 *   loops marked par (a tile's point loops) have independent iterations too and may be
 *   spread over the threads of a work-group;
 * - locals (KS_DECL) are private per item: scalars, or arrays of a size known here
 *   (tile accumulators, topk lists, pairwise term buffers);
 * - KX_CHECK and KS_CHECK report into a small error slot (first error wins, then its value);
 *   the program's error sites (Kernels.sites) turn it into a message;
 * - KS_TREE must combine in exactly the stated tree (an iterative form is fine) so that
 *   the budget's tree height and the emulator's order stay right;
 * - conversions: KX_LOAD widens exactly, KX_CVT and KX_ROUND round to nearest even, a
 *   store rounds to nearest even; arithmetic must not be contracted into fma.
 */
#ifndef ASSAY_KIR_H
#define ASSAY_KIR_H

#include "../compiler.h"

typedef struct MapCache MapCache;

typedef enum { KT_BOOL, KT_INT, KT_F32, KT_F64, KT__COUNT } KType;

typedef enum {
	KX_FCONST,  /* f: a value of type t (exactly representable in it) */
	KX_ICONST,  /* i */
	KX_VAR,     /* scalar variable v */
	KX_ELEM,    /* element a[0] of local array v */
	KX_LOAD,    /* element a[0] of buffer v, widened exactly to t */
	KX_OP,      /* op(a[0], a[1], a[2]) of the op table: arithmetic on operands of type t;
	               comparisons (t = KT_BOOL) on two operands of one type; SELECT */
	KX_CVT,     /* a[0] converted to t, rounded to nearest */
	KX_ROUND,   /* a[0] (type t) rounded to format fmt, result still of type t */
	KX_CHECK,   /* a[0] (int) when a[1] <= a[0] < a[2]; otherwise, if guard a[3]
	               (bool, or -1 for always) holds, error site v is reported with the value;
	               the result is then a[1] (a safe index) */
	KX__COUNT
} KxKind;

typedef struct {
	uint8_t kind;    /* KxKind */
	uint8_t type;    /* KType of the result */
	uint8_t fmt;     /* KX_ROUND: Dtype */
	uint16_t op;     /* KX_OP: Op */
	int32_t a[4];
	int32_t v;       /* variable or buffer id, error site */
	int64_t i;       /* KX_ICONST */
	double f;        /* KX_FCONST */
} KExpr;

typedef enum {
	KS_LOOP,    /* for v in [a, b): body.  par: iterations are independent */
	KS_WHILE,   /* while (a): body */
	KS_IF,      /* if (a) body else body2 */
	KS_DECL,    /* declares local v (uninitialised) */
	KS_SET,     /* local v (at element a, or a = -1 for a scalar) = b */
	KS_STORE,   /* buffer v at element a = b, converted to the buffer's format */
	KS_CHECK,   /* unless a (bool) holds, report error site v with the value b (int) */
	KS_TREE,    /* local v = the pairwise reduction (op, each result rounded to fmt) of
	               local array c[a .. a+b) where b > 0 (the tree of this file's header) */
} KsKind;

typedef struct {
	uint8_t kind;   /* KsKind */
	bool par;
	uint8_t fmt;    /* KS_TREE: each combine is rounded to this format (Dtype) */
	uint16_t op;    /* KS_TREE: OP_ADD or OP_MUL */
	int32_t v;
	int32_t a, b, c;
	int32_t body, body2;
	int32_t next;   /* the next statement of the same list, or -1 */
} KStmt;

typedef struct {
	KType type;
	int64_t n;      /* 0: a scalar; else an array of n elements */
	bool loop;      /* a loop or tile-origin variable (declared by its loop) */
} KVar;

typedef struct {
	int tensor;     /* graph tensor id */
	Dtype fmt;      /* storage format: f64 f32 f16 bf16 i32 */
	int64_t n;      /* elements */
	bool input;
} KBuf;

/* One parallel dimension of a kernel: a left-hand index cut into tiles. */
typedef struct {
	int lhs;          /* left-hand index of the definition */
	int64_t extent;
	int64_t tile;     /* 1 <= tile <= extent */
	int32_t origin;   /* variable bound to the tile's first index: 0, tile, 2*tile, ... */
} KPar;

typedef struct {
	int def;          /* graph definition */
	int npar;
	KPar par[IR_MAXRANK];
	int64_t nitems;   /* product of ceil(extent / tile) */
	int32_t body;     /* statements run once per item */
	bool hoisted;     /* the reduction loop runs outside the tile's point loops */
} Kernel;

typedef enum { KE_INDEX, KE_TOPK, KE_INT32 } KErrKind;

/* A place where a kernel may report an error of the graph. */
typedef struct {
	KErrKind kind;
	int def;          /* definition computing */
	int tensor;       /* KE_INDEX: the tensor read; KE_INT32: the result */
	int dim;          /* KE_INDEX: its dimension */
	int idx_tensor;   /* KE_INDEX: the i32 tensor the index was read from */
	int64_t bound;    /* KE_INDEX: the extent; KE_TOPK: K */
} KSite;

struct Kernels {
	const Graph *g;           /* borrowed */
	Schedule sched;           /* a copy */
	uint64_t faults;

	KExpr *x; int32_t nx, capx;
	int32_t *hash; int32_t caphash;
	KStmt *s; int32_t ns, caps;
	KVar *vars; int32_t nvars, capvars;
	KBuf *bufs; int32_t nbufs;
	int32_t *tbuf;            /* tensor id -> buffer, -1 for inlined definitions */
	Kernel *k; int nk;
	KSite *sites; int32_t nsites, capsites;
	MapCache *maps;           /* the GPU plans made for it (compiler/map/map.h), owned */
};

/* --- construction (compiler/kir/kir.c) --- */
int32_t kx_new(Kernels *k, const KExpr *e);           /* interned */
int32_t kx_int(Kernels *k, int64_t v);
int32_t kx_real(Kernels *k, KType t, double v);
int32_t kx_var(Kernels *k, int32_t v);
int32_t kx_elem(Kernels *k, int32_t v, int32_t idx);
int32_t kx_load(Kernels *k, int32_t buf, int32_t idx);
/* Folds integer constants and the integer identities i+0, i*1, i*0. */
int32_t kx_op(Kernels *k, Op op, KType t, int32_t a, int32_t b, int32_t c);
int32_t kx_cvt(Kernels *k, KType t, int32_t a);       /* a itself when already of type t */
int32_t kx_round(Kernels *k, Dtype f, int32_t a);     /* a itself when f holds a's type */
int32_t kx_check(Kernels *k, int32_t a, int32_t lo, int32_t hi, int32_t guard, int32_t site);
static inline KType kx_type(const Kernels *k, int32_t e) { return (KType)k->x[e].type; }

int32_t kv_new(Kernels *k, KType t, int64_t n, bool loop);
int32_t ks_new(Kernels *k, const KStmt *s);
int32_t ksite_new(Kernels *k, const KSite *s);

/* A statement list under construction. */
typedef struct {
	int32_t head, tail;
} KBlk;
void kb_add(Kernels *k, KBlk *b, int32_t stmt);
void kb_loop(Kernels *k, KBlk *b, int32_t var, int32_t lo, int32_t hi, bool par, KBlk body);
void kb_set(Kernels *k, KBlk *b, int32_t var, int32_t idx, int32_t val);
void kb_decl(Kernels *k, KBlk *b, int32_t var);

KType kt_of(Dtype f);           /* f64 -> KT_F64, f32 f16 bf16 -> KT_F32, i32 -> KT_INT */
const char *kt_name(KType t);

/* Integer intervals (kivl.c) for backends with 32-bit integers. The graph format makes every
 * integer value an i32; kir_int_ranges fills, per expression id (arrays of k->nx + 1),
 * xiv: the values it can take (within i32), and xwide: true for an integer operation whose
 * exact result may leave i32 (to be emitted checked, or in 64 bits). */
typedef struct {
	int64_t lo, hi;          /* hi < lo: empty */
} KIvl;
void kir_int_ranges(const Kernels *k, KIvl *xiv, bool *xwide);

#endif
