/* compiler/wgsl/emit.c: the WGSL backend's emitter: kernel IR -> one WGSL module with a
 * compute entry point per kernel (k0, k1, ...), then its launch manifest.
 *
 * All text goes through one emitter (growable buffers, printf-checked); the output is a
 * deterministic function of the kernel IR. Names follow the C backend: t12 for the
 * temporary of expression 12 (one `let` per computing node of a statement, in a block of
 * its own), v3 for variable 3, b0 for buffer 0 read-only and b0w for its writable view
 * (both bound at binding 1 + buffer id; binding 0 is the error slot `err`).
 *
 * Numerics. f32 arithmetic is WGSL's f32: + - * are correctly rounded; WGSL has no fp
 * contraction in the language (no fma unless written), so none is requested or possible to
 * disable; the driver's compiler is trusted not to fuse (measured on lavapipe: a*b+c is two
 * roundings). f16 and bf16 are 16-bit storage with integer conversions (lib.c); an f16 or
 * bf16 op format computes in f32 and rounds each result, as the kernel IR says. f64 is not
 * in WGSL: a program with f64 buffers, f64 locals or f64 arithmetic is `unsupported`, but
 * for the f64 values the IR makes without f64 arithmetic: an integer as f64 (held as i32),
 * an f32-exact constant, its negation, and f64(i) rounded to f16/bf16/f32 (held as f32,
 * rounded once from the integer, exactly as in f64); these are converted to f32 and
 * compared (across the two holdings exactly: cmp_if), as integer definitions with real
 * subexpressions and integers entering a narrow format need.
 * Integers are i32 (plan.c: operations that may leave i32 are emitted checked).
 *
 * Opaque constants. WGSL lets an implementation assume that no NaN or infinity occurs, and
 * Dawn's SPIR-V does not declare SignedZeroInfNanPreserve, so a Vulkan driver may treat
 * float ops as NotNaN/NotInf/NSZ: lavapipe folds 0.0 / x to 0 and fma(0, x, c) to c, wrong
 * for x = 0, inf or NaN. Every float constant is therefore written as fbits(BITS ^ zu),
 * zu = num_workgroups.z - 1 (always 0: launches are two-dimensional, but no compiler can
 * know it), so is every integer converted to a float (integer constants fold too), and
 * an op on one value twice (x - x, x / x, x == x) gets an opaque second operand. What is not a constant fold (a driver assuming no NaN in a comparison, say) stays
 * the driver's: the special-value semantics of this backend are only as good as its
 * driver's, as WGSL allows.
 *
 * Work-groups follow plan.c (WgslMode): the kernel prologue turns the work-group and
 * invocation ids into the item and its tile origins (last parallel dimension fastest, as
 * in c/emit.c); a store outside the distributed loops of a WM_GROUP/WM_LANES kernel is
 * made by invocation 0 only (the others compute the same value).
 *
 * Ops: one table (spell[], indexed by Op) gives the f32 and i32 spellings; casts are not
 * ops of the kernel IR (KX_CVT/KX_ROUND carry them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wgsl.h"

enum { F_INFIX, F_PREFIX, F_CALL, F_SELECT, F_NONE };

typedef struct {
	uint8_t form;
	const char *f;      /* f32 (and boolean) spelling */
	const char *i;      /* i32 spelling; NULL: not an integer op */
	const char *ck;     /* i32 spelling when the result may leave i32: a checked call */
	const char *why;    /* F_NONE: why the op has no spelling */
} Spell;

static const Spell spell[] = {
	[OP_NEG] = {F_PREFIX, "-", "-", "neg_ck", NULL},
	[OP_NOT] = {F_PREFIX, "!", NULL, NULL, NULL},
	[OP_ADD] = {F_INFIX, "+", "+", "add_ck", NULL},
	[OP_SUB] = {F_INFIX, "-", "-", "sub_ck", NULL},
	[OP_MUL] = {F_INFIX, "*", "*", "mul_ck", NULL},
	[OP_DIV] = {F_CALL, "div_f", NULL, NULL, NULL},
	[OP_IDIV] = {F_CALL, NULL, "fdiv_i", "fdiv_ck", NULL},
	[OP_MOD] = {F_CALL, NULL, "fmod_i", "fmod_i", NULL},
	[OP_EQ] = {F_INFIX, "==", "==", "==", NULL},
	[OP_NE] = {F_INFIX, "!=", "!=", "!=", NULL},
	[OP_LT] = {F_INFIX, "<", "<", "<", NULL},
	[OP_LE] = {F_INFIX, "<=", "<=", "<=", NULL},
	[OP_GT] = {F_INFIX, ">", ">", ">", NULL},
	[OP_GE] = {F_INFIX, ">=", ">=", ">=", NULL},
	[OP_AND] = {F_INFIX, "&&", NULL, NULL, NULL},
	[OP_OR] = {F_INFIX, "||", NULL, NULL, NULL},
	[OP_SELECT] = {F_SELECT, "select", "select", "select", NULL},
	[OP_EXP] = {F_CALL, "exp_f", NULL, NULL, NULL},
	[OP_EXP2] = {F_CALL, "exp2_f", NULL, NULL, NULL},
	[OP_EXPM1] = {F_CALL, "expm1_f", NULL, NULL, NULL},
	[OP_LOG] = {F_CALL, "log_f", NULL, NULL, NULL},
	[OP_LOG2] = {F_CALL, "log2_f", NULL, NULL, NULL},
	[OP_LOG1P] = {F_CALL, "log1p_f", NULL, NULL, NULL},
	[OP_SQRT] = {F_CALL, "sqrt", NULL, NULL, NULL},
	[OP_RSQRT] = {F_CALL, "rsqrt_f", NULL, NULL, NULL},
	[OP_ABS] = {F_CALL, "abs", "abs", "abs_ck", NULL},
	[OP_SIN] = {F_CALL, "sin", NULL, NULL, NULL},
	[OP_COS] = {F_CALL, "cos", NULL, NULL, NULL},
	[OP_TANH] = {F_CALL, "tanh_f", NULL, NULL, NULL},
	[OP_SIGMOID] = {F_CALL, "sigmoid_f", NULL, NULL, NULL},
	[OP_ERF] = {F_CALL, "erf_f", NULL, NULL, NULL},
	[OP_FLOOR] = {F_CALL, "floor", NULL, NULL, NULL},
	[OP_CEIL] = {F_CALL, "ceil", NULL, NULL, NULL},
	[OP_POW] = {F_CALL, "pow_f", NULL, NULL, NULL},
	[OP_MAX] = {F_CALL, "max_f", "max", "max", NULL},
	[OP_MIN] = {F_CALL, "min_f", "min", "min", NULL},
	[OP_FMA] = {F_CALL, "fma", NULL, NULL, NULL},
	[OP_CAST_F64] = {F_NONE, NULL, NULL, NULL, "a conversion: the kernel IR carries it as KX_CVT/KX_ROUND"},
	[OP_CAST_F32] = {F_NONE, NULL, NULL, NULL, "a conversion: the kernel IR carries it as KX_CVT/KX_ROUND"},
	[OP_CAST_F16] = {F_NONE, NULL, NULL, NULL, "a conversion: the kernel IR carries it as KX_CVT/KX_ROUND"},
	[OP_CAST_BF16] = {F_NONE, NULL, NULL, NULL, "a conversion: the kernel IR carries it as KX_CVT/KX_ROUND"},
};
_Static_assert(ARRAY_LEN(spell) == OP__COUNT, "one WGSL spelling per op");

typedef struct {
	char *buf;
	size_t len, cap;
} Buf;

typedef struct {
	Buf o;                 /* the text being written */
	int ind;
	const Kernels *k;
	const WgslPlan *pl;
	uint32_t *mark;        /* per expression: the statement stamp it was emitted in */
	uint32_t stamp;
	bool failed;
	Diag *d;
	int ki;                /* the kernel being written */
	bool dist;             /* inside a distributed nest or a lane */
	bool uses_err;         /* the kernel reports errors */
	uint8_t *use;          /* per buffer, this kernel: 1 loads, 2 stores */
	uint8_t *views;        /* per buffer, any kernel: 1 read view, 2 write view */
} E;

static void bputv(Buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (b->len + (size_t)n + 1 > b->cap) {
		b->cap = (b->len + (size_t)n + 1) * 2;
		b->buf = realloc(b->buf, b->cap);
		IR_ASSERT(b->buf);
	}
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

static void bput(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bput(Buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	bputv(b, fmt, ap);
	va_end(ap);
}

static void emit(E *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(E *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	bputv(&e->o, fmt, ap);
	va_end(ap);
}

static void indent(E *e)
{
	for (int i = 0; i < e->ind; i++)
		emit(e, "\t");
}

static void line(E *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(E *e, const char *fmt, ...)
{
	indent(e);
	va_list ap;
	va_start(ap, fmt);
	bputv(&e->o, fmt, ap);
	va_end(ap);
	emit(e, "\n");
}

/* Records the first reason the program cannot be written (code 2: unsupported). */
static void unsupported(E *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void unsupported(E *e, const char *fmt, ...)
{
	if (e->failed)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_set(e->d, 2, "wgsl backend: unsupported: %s", msg);
	e->failed = true;
}

/* ------------------------------------------------------------ types */

/* f64 nodes the backend can hold (see the file comment): 1 an integer (held as i32),
 * 2 a value exact in f32 (held as f32: an f32-exact constant, a rounding to f32, f16 or
 * bf16, and the negation or absolute value of such); 0 none. */
static int f64kind(const E *e, int32_t id)
{
	const KExpr *x = &e->k->x[id];
	if (x->type != KT_F64)
		return 0;
	if (x->kind == KX_FCONST)
		return isnan(x->f) || (double)(float)x->f == x->f ? 2 : 0;
	if (x->kind == KX_CVT && e->k->x[x->a[0]].type == KT_INT)
		return 1;
	if (x->kind == KX_ROUND && (x->fmt == DT_F32 || x->fmt == DT_F16 || x->fmt == DT_BF16))
		return f64kind(e, x->a[0]) ? 2 : 0;
	if (x->kind == KX_OP && (x->op == OP_NEG || x->op == OP_ABS))   /* exact */
		return f64kind(e, x->a[0]) == 2 ? 2 : 0;
	return 0;
}

static const char *wtype(const E *e, int32_t id)
{
	static const char *names[] = {[KT_BOOL] = "bool", [KT_INT] = "i32", [KT_F32] = "f32",
				      [KT_F64] = "f64"};
	_Static_assert(ARRAY_LEN(names) == KT__COUNT, "one WGSL type per KType");
	KType t = (KType)e->k->x[id].type;
	if (t == KT_F64)
		return f64kind(e, id) == 1 ? "i32" : "f32";
	return names[t];
}

static const char *vtype(E *e, KType t)
{
	switch (t) {
	case KT_BOOL: return "bool";
	case KT_INT: return "i32";
	case KT_F32: return "f32";
	default:
		unsupported(e, "an f64 local (WGSL has no f64)");
		return "f32";
	}
}

/* ------------------------------------------------------------ expressions */

static bool leaf(const KExpr *x)
{
	return x->kind == KX_FCONST || x->kind == KX_ICONST || x->kind == KX_VAR;
}

/* A float constant, from its bits xor zu (0 at run time, unknown to the compiler): see
 * the file comment ("opaque constants"). */
static void fconst(E *e, double f)
{
	float v = (float)f;
	uint32_t u;
	memcpy(&u, &v, sizeof u);
	emit(e, "fbits(0x%08xu ^ zu)", u);
}

static void iconst(E *e, int64_t i)
{
	if (i < INT32_MIN || i > INT32_MAX)
		unsupported(e, "the integer constant %lld does not fit in 32 bits (WGSL has no i64)",
			    (long long)i);
	else if (i == INT32_MIN)
		emit(e, "i32(-2147483648)");
	else if (i < 0)
		emit(e, "(%lldi)", (long long)i);
	else
		emit(e, "%lldi", (long long)i);
}

/* The WGSL text that denotes expression id (a constant, a variable or a temporary). */
static void ref(E *e, int32_t id)
{
	const KExpr *x = &e->k->x[id];
	if (x->kind == KX_VAR)
		emit(e, "v%d", x->v);
	else if (x->kind == KX_ICONST && x->type == KT_BOOL)
		emit(e, "%s", x->i ? "true" : "false");
	else if (x->kind == KX_ICONST)
		iconst(e, x->i);
	else if (x->kind == KX_FCONST)
		fconst(e, x->f);
	else
		emit(e, "t%d", id);
}

/* Operand i of x; the second operand of a float op on one value twice (x - x, x / x,
 * x == x) is made opaque, so that the compiler cannot fold the op to a constant (wrong for
 * inf and NaN: see the file comment). */
static void arg(E *e, const KExpr *x, int i)
{
	bool twice = i == 1 && x->a[0] == x->a[1] && strcmp(wtype(e, x->a[0]), "f32") == 0;
	if (twice)
		emit(e, "opq(");
	ref(e, x->a[i]);
	if (twice)
		emit(e, ", zu)");
}

static void args(E *e, const KExpr *x, int n)
{
	for (int i = 0; i < n; i++) {
		if (i)
			emit(e, ", ");
		arg(e, x, i);
	}
}

/* A comparison of two f64 values the backend holds differently: an integer (i32) and an
 * f32-exact value. cmp_if compares them exactly (lib.c). */
static void cmp_mixed(E *e, const KExpr *x)
{
	static const struct { Op op, swapped; int code; } rel[] = {
		{OP_LT, OP_GT, 0}, {OP_LE, OP_GE, 1}, {OP_GT, OP_LT, 2}, {OP_GE, OP_LE, 3},
		{OP_EQ, OP_EQ, 4}, {OP_NE, OP_NE, 5},
	};
	int ka = f64kind(e, x->a[0]), kb = f64kind(e, x->a[1]);
	if (!ka || !kb) {
		unsupported(e, "a comparison of f64 values (WGSL has no f64)");
		return;
	}
	bool swap = ka == 2;   /* the integer goes first */
	Op op = (Op)x->op;
	for (size_t i = 0; i < ARRAY_LEN(rel); i++) {
		if (rel[i].op != op)
			continue;
		Op want = swap ? rel[i].swapped : op;
		for (size_t j = 0; j < ARRAY_LEN(rel); j++)
			if (rel[j].op == want) {
				emit(e, "cmp_if(");
				ref(e, x->a[swap ? 1 : 0]);
				emit(e, ", ");
				ref(e, x->a[swap ? 0 : 1]);
				emit(e, ", %di)", rel[j].code);
			}
		return;
	}
	IR_ASSERT(!"cmp_mixed: not a comparison");
}

static void op_text(E *e, const KExpr *x)
{
	Op op = (Op)x->op;
	const Spell *s = &spell[op];
	int n = op_info(op)->arity;
	bool ints = x->type == KT_INT, wide = ints && e->pl->xwide[x - e->k->x];
	const char *sp = ints ? (wide ? s->ck : s->i) : s->f;
	if (s->form == F_NONE || !sp) {
		diag_set(e->d, 3, "internal: the wgsl backend has no spelling for %s on %s (%s)",
			 op_info(op)->name, kt_name((KType)x->type), s->why ? s->why : "no such op");
		e->failed = true;
		return;
	}
	if (wide && s->ck != s->i && strcmp(sp, "fmod_i") != 0) {
		e->uses_err = true;   /* a checked call: the kernel's overflow site is nsites + ki */
		emit(e, "%s(", sp);
		args(e, x, n);
		emit(e, ", %di)", e->k->nsites + e->ki);
		return;
	}
	if ((op_info(op)->flags & OPF_CMP) && e->k->x[x->a[0]].type == KT_F64 &&
	    f64kind(e, x->a[0]) != f64kind(e, x->a[1])) {
		cmp_mixed(e, x);
		return;
	}
	if (op == OP_NE && e->k->x[x->a[0]].type != KT_INT) {
		/* unordered: true for a NaN (Dawn's != is ordered on lavapipe) */
		emit(e, "(!(");
		arg(e, x, 0);
		emit(e, " == ");
		arg(e, x, 1);
		emit(e, "))");
		return;
	}
	switch (s->form) {
	case F_SELECT:
		emit(e, "select(");
		ref(e, x->a[2]);
		emit(e, ", ");
		ref(e, x->a[1]);
		emit(e, ", ");
		ref(e, x->a[0]);
		emit(e, ")");
		return;
	case F_INFIX:
		emit(e, "(");
		arg(e, x, 0);
		emit(e, " %s ", sp);
		arg(e, x, 1);
		emit(e, ")");
		return;
	case F_PREFIX:
		emit(e, "(%s", sp);
		ref(e, x->a[0]);
		emit(e, ")");
		return;
	default:
		emit(e, "%s(", sp);
		args(e, x, n);
		emit(e, ")");
		return;
	}
}

/* Buffer b's element at index expression idx, for a load. */
static void load_text(E *e, const KExpr *x)
{
	int b = x->v;
	Dtype f = e->k->bufs[b].fmt;
	bool w = e->use[b] & 2;
	e->use[b] |= 1;
	if (f == DT_F16 || f == DT_BF16) {
		emit(e, "%s(half16(%sb%d%s[(u32(", f == DT_F16 ? "h2f" : "b2f", w ? "atomicLoad(&" : "", b,
		     w ? "w" : "");
		ref(e, x->a[0]);
		emit(e, ") >> 1u) + %du]%s, u32(", WGSL_GUARD / 4, w ? ")" : "");
		ref(e, x->a[0]);
		emit(e, ")))");
		return;
	}
	emit(e, "b%d%s[u32(", b, w ? "w" : "");
	ref(e, x->a[0]);
	emit(e, ") + %du]", WGSL_GUARD / 4);
}

static void cvt_text(E *e, const KExpr *x)
{
	int32_t a = x->a[0];
	KType from = (KType)e->k->x[a].type;
	if ((x->type == KT_F32 && from == KT_INT) ||
	    (x->type == KT_F32 && from == KT_F64 && f64kind(e, a) == 1)) {
		emit(e, "opq(i2f(");   /* opaque: an integer may be a folded constant */
		ref(e, a);
		emit(e, "), zu)");
	} else if ((x->type == KT_F32 && from == KT_F64 && f64kind(e, a) == 2) ||
		   (x->type == KT_F64 && from == KT_INT)) {
		ref(e, a);   /* an exact f32 value; an integer held as i32 */
	} else {
		unsupported(e, "a conversion from %s to %s (WGSL has no f64)", kt_name(from),
			    kt_name((KType)x->type));
	}
}

static void round_text(E *e, const KExpr *x)
{
	Dtype f = (Dtype)x->fmt;
	int32_t a = x->a[0];
	int k64 = x->type == KT_F64 ? f64kind(e, a) : 0;
	if (x->type == KT_F64 && !k64) {
		unsupported(e, "f64 arithmetic rounded to %s (WGSL has no f64)", dt_name(f));
		return;
	}
	if (k64 == 1) {
		const char *fn = f == DT_F16 ? "i2h" : f == DT_BF16 ? "i2b" : f == DT_F32 ? "i2f" : NULL;
		if (!fn) {
			unsupported(e, "rounding to %s", dt_name(f));
			return;
		}
		emit(e, "opq(%s(", fn);
		ref(e, a);
		emit(e, "), zu)");
		return;
	}
	if (f == DT_F32) {
		ref(e, a);
		return;
	}
	if (f != DT_F16 && f != DT_BF16) {
		unsupported(e, "rounding to %s", dt_name(f));
		return;
	}
	emit(e, "%s(%s(", f == DT_F16 ? "h2f" : "b2f", f == DT_F16 ? "f2h" : "f2b");
	ref(e, a);
	emit(e, "))");
}

static bool is_const(const Kernels *k, int32_t id)
{
	return k->x[id].kind == KX_ICONST;
}

/* chk(v, lo, hi inclusive, guard, site); a check the intervals already prove is v. */
static void check_text(E *e, const KExpr *x)
{
	const Kernels *k = e->k;
	WgslIvl v = e->pl->xiv[x->a[0]];
	if (is_const(k, x->a[1]) && is_const(k, x->a[2]) && v.lo <= v.hi &&
	    v.lo >= k->x[x->a[1]].i && v.hi < k->x[x->a[2]].i) {
		ref(e, x->a[0]);
		return;
	}
	e->uses_err = true;
	emit(e, "chk(");
	ref(e, x->a[0]);
	emit(e, ", ");
	if (is_const(k, x->a[1]))
		iconst(e, k->x[x->a[1]].i < INT32_MIN ? INT32_MIN : k->x[x->a[1]].i);
	else
		ref(e, x->a[1]);
	emit(e, ", ");
	if (is_const(k, x->a[2]))
		iconst(e, k->x[x->a[2]].i - 1 > INT32_MAX ? INT32_MAX : k->x[x->a[2]].i - 1);
	else {
		emit(e, "(");
		ref(e, x->a[2]);
		emit(e, " - 1i)");
	}
	emit(e, ", ");
	if (x->a[3] >= 0)
		ref(e, x->a[3]);
	else
		emit(e, "true");
	emit(e, ", %di)", x->v);
}

/* Emits the temporaries that expression id needs, operands first. */
static void temps(E *e, int32_t id)
{
	if (id < 0 || e->failed)
		return;
	const KExpr *x = &e->k->x[id];
	if (leaf(x) || e->mark[id] == e->stamp)
		return;
	e->mark[id] = e->stamp;
	for (int i = 0; i < 4; i++)
		temps(e, x->a[i]);
	if (x->type == KT_F64 && !f64kind(e, id)) {
		unsupported(e, "f64 arithmetic (WGSL has no f64)");
		return;
	}
	indent(e);
	emit(e, "let t%d: %s = ", id, wtype(e, id));
	switch (x->kind) {
	case KX_ELEM:
		emit(e, "v%d[", x->v);
		ref(e, x->a[0]);
		emit(e, "]");
		break;
	case KX_LOAD: load_text(e, x); break;
	case KX_OP: op_text(e, x); break;
	case KX_CVT: cvt_text(e, x); break;
	case KX_ROUND: round_text(e, x); break;
	case KX_CHECK: check_text(e, x); break;
	default: IR_ASSERT(!"temps: a leaf");
	}
	emit(e, ";\n");
}

/* Opens a statement: a block when any of its expressions needs temporaries. */
static bool open_stmt(E *e, const int32_t *roots, int n)
{
	e->stamp++;
	bool need = false;
	for (int i = 0; i < n; i++)
		need |= roots[i] >= 0 && !leaf(&e->k->x[roots[i]]);
	if (need) {
		line(e, "{");
		e->ind++;
	}
	for (int i = 0; i < n; i++)
		temps(e, roots[i]);
	return need;
}

static void close_stmt(E *e, bool open)
{
	if (open) {
		e->ind--;
		line(e, "}");
	}
}

/* ------------------------------------------------------------ statements */

static void stmts(E *e, int32_t s);

static void store_text(E *e, const KStmt *s)
{
	int b = s->v;
	Dtype f = e->k->bufs[b].fmt;
	e->use[b] |= 2;
	bool solo = e->pl->kp[e->ki].mode != WM_ITEM && !e->dist;
	indent(e);
	if (solo)
		emit(e, "if (lid == 0u) ");
	if (f == DT_F16 || f == DT_BF16) {
		/* two invocations may write the two halves of one word: atomic and/or */
		emit(e, "{ let i = u32(");
		ref(e, s->a);
		emit(e, "); let sh = (i & 1u) << 4u; let w = (i >> 1u) + %du; ", WGSL_GUARD / 4);
		emit(e, "atomicAnd(&b%dw[w], ~(0xffffu << sh)); atomicOr(&b%dw[w], %s(", b, b,
		     f == DT_F16 ? "f2h" : "f2b");
		ref(e, s->b);
		emit(e, ") << sh); }\n");
		return;
	}
	emit(e, "%sb%dw[u32(", solo ? "{ " : "", b);
	ref(e, s->a);
	emit(e, ") + %du] = ", WGSL_GUARD / 4);
	ref(e, s->b);
	emit(e, ";%s\n", solo ? " }" : "");
}

static void loop_stmt(E *e, const KStmt *s)
{
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	indent(e);
	emit(e, "for (var v%d: i32 = ", s->v);
	ref(e, s->a);
	emit(e, "; v%d < ", s->v);
	ref(e, s->b);
	emit(e, "; v%d++) {\n", s->v);
	e->ind++;
	stmts(e, s->body);
	e->ind--;
	line(e, "}");
	close_stmt(e, open);
}

/* WM_GROUP: a par nest of `levels` loops flattened, iteration f to invocation f mod wg. */
static void nest_stmt(E *e, const KStmt *s, int levels)
{
	const KStmt *lv[8];
	int32_t roots[16];
	lv[0] = s;
	for (int l = 1; l < levels; l++)
		lv[l] = &e->k->s[lv[l - 1]->body];
	for (int l = 0; l < levels; l++) {
		roots[2 * l] = lv[l]->a;
		roots[2 * l + 1] = lv[l]->b;
	}
	bool open = open_stmt(e, roots, 2 * levels);
	if (!open) {
		line(e, "{");
		e->ind++;
	}
	for (int l = 0; l < levels; l++) {
		indent(e);
		emit(e, "let n%d: u32 = u32(max(", l);
		ref(e, lv[l]->b);
		emit(e, " - ");
		ref(e, lv[l]->a);
		emit(e, ", 0i));\n");
	}
	indent(e);
	emit(e, "let nf: u32 = n0");
	for (int l = 1; l < levels; l++)
		emit(e, " * n%d", l);
	emit(e, ";\n");
	line(e, "for (var f: u32 = lid; f < nf; f += %du) {", e->pl->kp[e->ki].wg);
	e->ind++;
	line(e, "var r: u32 = f;");
	for (int l = levels - 1; l >= 0; l--) {
		indent(e);
		emit(e, "let v%d: i32 = ", lv[l]->v);
		ref(e, lv[l]->a);
		emit(e, " + i32(r %% n%d);\n", l);
		line(e, "r = r / n%d;", l);
	}
	bool was = e->dist;
	e->dist = true;
	stmts(e, lv[levels - 1]->body);
	e->dist = was;
	e->ind--;
	line(e, "}");
	e->ind--;
	line(e, "}");
}

/* WM_LANES: invocation l runs iteration l of a lane loop. */
static void lane_stmt(E *e, const KStmt *s)
{
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	if (!open) {
		line(e, "{");
		e->ind++;
	}
	line(e, "let v%d: i32 = i32(lid);", s->v);
	indent(e);
	emit(e, "if (v%d >= ", s->v);
	ref(e, s->a);
	emit(e, " && v%d < ", s->v);
	ref(e, s->b);
	emit(e, ") {\n");
	e->ind++;
	bool was = e->dist;
	e->dist = true;
	stmts(e, s->body);
	e->dist = was;
	e->ind--;
	line(e, "}");
	e->ind--;
	line(e, "}");
}

/* loop { { condition's temporaries; if (!cond) { break; } body } } */
static void while_stmt(E *e, const KStmt *s)
{
	line(e, "loop {");
	e->ind++;
	bool open = open_stmt(e, &s->a, 1);
	indent(e);
	emit(e, "if (!");
	ref(e, s->a);
	emit(e, ") {\n");
	e->ind++;
	line(e, "break;");
	e->ind--;
	line(e, "}");
	stmts(e, s->body);
	close_stmt(e, open);
	e->ind--;
	line(e, "}");
}

static void if_stmt(E *e, const KStmt *s)
{
	bool open = open_stmt(e, &s->a, 1);
	indent(e);
	emit(e, "if (");
	ref(e, s->a);
	emit(e, ") {\n");
	e->ind++;
	stmts(e, s->body);
	e->ind--;
	if (s->body2 > 0) {
		line(e, "} else {");
		e->ind++;
		stmts(e, s->body2);
		e->ind--;
	}
	line(e, "}");
	close_stmt(e, open);
}

static void decl_stmt(E *e, const KStmt *s)
{
	const KVar *v = &e->k->vars[s->v];
	const char *t = vtype(e, v->type);
	if (v->n)
		line(e, "var v%d: array<%s, %lld>;", s->v, t, (long long)v->n);
	else
		line(e, "var v%d: %s;", s->v, t);
}

/* The pairwise tree of kir.h, iteratively: a stack of (start, count, stage) frames and a
 * stack of values; a frame's left half is its first floor(n/2) terms. */
static void tree_stmt(E *e, const KStmt *s)
{
	Dtype f = (Dtype)s->fmt;
	if (f != DT_F32 && f != DT_F16 && f != DT_BF16) {
		unsupported(e, "a pairwise reduction in %s (WGSL has no f64)", dt_name(f));
		return;
	}
	const char *op = s->op == OP_MUL ? "*" : "+";
	const char *pre = f == DT_F16 ? "h2f(f2h(" : f == DT_BF16 ? "b2f(f2b(" : "(";
	const char *post = f == DT_F32 ? ")" : "))";
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	if (!open) {
		line(e, "{");
		e->ind++;
	}
	line(e, "var fs: array<i32, 64>;");
	line(e, "var fn_: array<i32, 64>;");
	line(e, "var fk: array<i32, 64>;");
	line(e, "var tv: array<f32, 64>;");
	line(e, "var sp: i32 = 1i;");
	line(e, "var vp: i32 = 0i;");
	indent(e);
	emit(e, "fs[0] = ");
	ref(e, s->a);
	emit(e, ";\n");
	indent(e);
	emit(e, "fn_[0] = ");
	ref(e, s->b);
	emit(e, ";\n");
	line(e, "fk[0] = 0i;");
	line(e, "loop {");
	e->ind++;
	line(e, "if (sp == 0i) { break; }");
	line(e, "let st = fs[sp - 1i]; let n = fn_[sp - 1i]; let stage = fk[sp - 1i];");
	line(e, "if (n == 1i) { tv[vp] = v%d[st]; vp++; sp--; continue; }", s->c);
	line(e, "if (stage == 0i) { fk[sp - 1i] = 1i; fs[sp] = st; fn_[sp] = n / 2i; fk[sp] = 0i; sp++; continue; }");
	line(e, "if (stage == 1i) { fk[sp - 1i] = 2i; fs[sp] = st + n / 2i; fn_[sp] = n - n / 2i; fk[sp] = 0i; sp++; continue; }");
	line(e, "tv[vp - 2i] = %stv[vp - 2i] %s tv[vp - 1i]%s; vp--; sp--;", pre, op, post);
	e->ind--;
	line(e, "}");
	line(e, "v%d = tv[0];", s->v);
	e->ind--;
	line(e, "}");
}

/* The statements of one line: set, store, check. */
static void simple_stmt(E *e, const KStmt *s)
{
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	switch (s->kind) {
	case KS_SET:
		indent(e);
		emit(e, "v%d", s->v);
		if (s->a >= 0) {
			emit(e, "[");
			ref(e, s->a);
			emit(e, "]");
		}
		emit(e, " = ");
		ref(e, s->b);
		emit(e, ";\n");
		break;
	case KS_STORE: store_text(e, s); break;
	case KS_CHECK:
		e->uses_err = true;
		indent(e);
		emit(e, "if (!");
		ref(e, s->a);
		emit(e, ") { rep(%di, ", s->v);
		ref(e, s->b);
		emit(e, "); }\n");
		break;
	default: IR_ASSERT(!"simple_stmt: not a simple statement");
	}
	close_stmt(e, open);
}

static void gather(E *e)
{
	const WgslKPlan *kp = &e->pl->kp[e->ki];
	line(e, "wg%d[lid] = v%d[lid];", e->ki, kp->lane_arr);
	line(e, "workgroupBarrier();");
	line(e, "for (var j: u32 = 0u; j < %du; j++) {", kp->wg);
	line(e, "\tv%d[j] = wg%d[j];", kp->lane_arr, e->ki);
	line(e, "}");
}

static void stmt(E *e, int32_t id)
{
	const KStmt *s = &e->k->s[id];
	uint8_t role = e->pl->srole[id];
	switch (s->kind) {
	case KS_LOOP:
		if (role == WS_NEST && e->pl->kp[e->ki].mode == WM_GROUP)
			nest_stmt(e, s, e->pl->slevels[id]);
		else if (role == WS_LANE && e->pl->kp[e->ki].mode == WM_LANES)
			lane_stmt(e, s);
		else
			loop_stmt(e, s);
		break;
	case KS_WHILE: while_stmt(e, s); break;
	case KS_IF: if_stmt(e, s); break;
	case KS_DECL: decl_stmt(e, s); break;
	case KS_TREE: tree_stmt(e, s); break;
	default: simple_stmt(e, s); break;
	}
	if (id == e->pl->kp[e->ki].gather_after && e->pl->kp[e->ki].mode == WM_LANES)
		gather(e);
}

static void stmts(E *e, int32_t s)
{
	for (; s > 0 && !e->failed; s = e->k->s[s].next)
		stmt(e, s);
}

/* ------------------------------------------------------------ kernels */

static const char *mode_name(WgslMode m)
{
	static const char *names[] = {[WM_ITEM] = "an invocation per item",
				      [WM_GROUP] = "a work-group per item, its tile's points over the invocations",
				      [WM_LANES] = "a work-group per item, a split partial per invocation"};
	return names[m];
}

/* Marks the buffers that statements s.. store (before any load is written, so that a
 * kernel reading its own output reads it through the writable view). */
static void scan_stores(E *e, int32_t s)
{
	for (; s > 0; s = e->k->s[s].next) {
		const KStmt *t = &e->k->s[s];
		if (t->kind == KS_STORE)
			e->use[t->v] |= 2;
		scan_stores(e, t->body);
		scan_stores(e, t->body2);
	}
}

static void kernel(E *e, int i, Buf *manifest)
{
	const Kernels *k = e->k;
	const Kernel *kn = &k->k[i];
	const Graph *g = k->g;
	const WgslKPlan *kp = &e->pl->kp[i];
	e->ki = i;
	e->uses_err = false;
	memset(e->use, 0, (size_t)k->nbufs + 1);
	scan_stores(e, kn->body);
	line(e, "// %s: %s", g->tensors[g->defs[kn->def].out[0]].name, mode_name(kp->mode));
	line(e, "@compute @workgroup_size(%d)", kp->wg);
	line(e, "fn k%d(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,", i);
	line(e, "\t@builtin(local_invocation_index) lid: u32) {");
	e->ind++;
	line(e, "let grp: u32 = wid.x + wid.y * nwg.x;");
	line(e, "let zu: u32 = nwg.z - 1u;");
	if (kp->mode == WM_ITEM)
		line(e, "let item: u32 = grp * %du + lid;", kp->wg);
	else
		line(e, "let item: u32 = grp;");
	line(e, "if (item >= %lldu) {", (long long)kn->nitems);
	line(e, "\treturn;");
	line(e, "}");
	line(e, "var q: i32 = i32(item);");
	for (int p = kn->npar - 1; p >= 0; p--) {
		const KPar *P = &kn->par[p];
		int64_t nt = (P->extent + P->tile - 1) / P->tile;
		if (nt == 1) {
			line(e, "let v%d: i32 = 0i;", P->origin);
			continue;
		}
		line(e, "let v%d: i32 = (q %% %lldi) * %lldi;", P->origin, (long long)nt, (long long)P->tile);
		line(e, "q = q / %lldi;", (long long)nt);
	}
	stmts(e, kn->body);
	e->ind--;
	line(e, "}");
	line(e, "%s", "");
	bput(manifest, "//! kernel k%d groups=%lld bindings=%s", i, (long long)kp->groups,
	     e->uses_err ? "0" : "");
	bool first = !e->uses_err;
	for (int b = 0; b < k->nbufs; b++) {
		if (!e->use[b])
			continue;
		bput(manifest, "%s%d", first ? "" : ",", b + 1);
		first = false;
		e->views[b] |= (e->use[b] & 2) ? 2 : 1;
	}
	bput(manifest, "\n");
}

static const char *view_type(Dtype f, bool w)
{
	switch (f) {
	case DT_F32: return "array<f32>";
	case DT_I32: return "array<i32>";
	default: return w ? "array<atomic<u32>>" : "array<u32>";
	}
}

static void prologue(E *e, Buf *out)
{
	const Kernels *k = e->k;
	const Graph *g = k->g;
	bput(out, "// Generated by assay's wgsl backend from graph %s. Do not edit.\n",
	     g->name ? g->name : "(unnamed)");
	bput(out, "// Runs on Dawn (npm package webgpu) through compiler/wgsl/node/helper.mjs; the\n"
		  "// launch manifest (//! lines) is at the end. Buffers have %d guard bytes on each side:\n"
		  "// element i of a 32-bit buffer is word i + %d, of a 16-bit one the half i %% 2 of\n"
		  "// word i / 2 + %d. WGSL has no fp contraction to turn off.\n",
	     WGSL_GUARD, WGSL_GUARD / 4, WGSL_GUARD / 4);
	char *sch = sched_text(g, &k->sched);
	if (sch[0]) {
		bput(out, "// Schedule:\n");
		for (char *p = sch, *nl; *p; p = nl + 1) {
			nl = strchr(p, '\n');
			bput(out, "//   %.*s\n", (int)(nl - p), p);
		}
	}
	free(sch);
	if (k->faults)
		bput(out, "// SEEDED FAULTS 0x%x: this program is wrong on purpose.\n", k->faults);
	bput(out, "// Buffers:\n");
	for (int b = 0; b < k->nbufs; b++)
		bput(out, "//   b%d  %s : %s[%lld]%s\n", b, g->tensors[k->bufs[b].tensor].name,
		     dt_name(k->bufs[b].fmt), (long long)k->bufs[b].n, k->bufs[b].input ? " (input)" : "");
	bput(out, "\n@group(0) @binding(0) var<storage, read_write> err: array<atomic<i32>, 4>;\n");
	for (int b = 0; b < k->nbufs; b++) {
		if (e->views[b] & 1)
			bput(out, "@group(0) @binding(%d) var<storage, read> b%d: %s;\n", b + 1, b,
			     view_type(k->bufs[b].fmt, false));
		if (e->views[b] & 2)
			bput(out, "@group(0) @binding(%d) var<storage, read_write> b%dw: %s;\n", b + 1, b,
			     view_type(k->bufs[b].fmt, true));
	}
	for (int i = 0; i < k->nk; i++) {
		const WgslKPlan *kp = &e->pl->kp[i];
		if (kp->mode == WM_LANES)
			bput(out, "var<workgroup> wg%d: array<%s, %d>;\n", i,
			     k->vars[kp->lane_arr].type == KT_INT ? "i32" : "f32", kp->wg);
	}
	bput(out, "\n");
	for (size_t i = 0; i < wgsl_nlib; i++)
		bput(out, "%s", wgsl_lib[i]);
	bput(out, "\n");
}

/* Limits WGSL imposes before any text is written. */
static int limits(const Kernels *k, Diag *d)
{
	const Graph *g = k->g;
	for (int b = 0; b < k->nbufs; b++) {
		if (k->bufs[b].fmt == DT_F64) {
			diag_set(d, 2, "wgsl backend: unsupported: tensor %s is stored in f64 (WGSL has no f64)",
				 g->tensors[k->bufs[b].tensor].name);
			return -1;
		}
		if (k->bufs[b].n > INT32_MAX - 1024) {
			diag_set(d, 2, "wgsl backend: unsupported: tensor %s has %lld elements (indices are i32)",
				 g->tensors[k->bufs[b].tensor].name, (long long)k->bufs[b].n);
			return -1;
		}
	}
	for (int i = 0; i < k->nk; i++)
		if (k->k[i].nitems > INT32_MAX) {
			diag_set(d, 2, "wgsl backend: unsupported: kernel %d has %lld items (more than i32 counts)",
				 i, (long long)k->k[i].nitems);
			return -1;
		}
	return 0;
}

char *wgsl_emit(const Kernels *k, Diag *d)
{
	if (limits(k, d))
		return NULL;
	E e = {0};
	e.k = k;
	e.d = d;
	e.pl = wgsl_plan(k);
	e.mark = calloc((size_t)k->nx + 1, sizeof *e.mark);
	e.use = calloc((size_t)k->nbufs + 1, 1);
	e.views = calloc((size_t)k->nbufs + 1, 1);
	IR_ASSERT(e.mark && e.use && e.views);
	Buf manifest = {0}, out = {0};
	bput(&manifest, "%s", "");
	for (int i = 0; i < k->nk && !e.failed; i++)
		kernel(&e, i, &manifest);
	if (!e.failed) {
		prologue(&e, &out);
		bput(&out, "%s%s", e.o.buf ? e.o.buf : "", manifest.buf);
	}
	free(e.o.buf);
	free(manifest.buf);
	free(e.mark);
	free(e.use);
	free(e.views);
	wgsl_plan_free((WgslPlan *)e.pl);
	if (e.failed) {
		free(out.buf);
		return NULL;
	}
	return out.buf;
}
