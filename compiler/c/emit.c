/* compiler/c/emit.c: the C backend's emitter: kernel IR -> one C11 translation unit.
 *
 * The text is written by the emitter core (compiler/emit/cemit.h), whose defaults are C's own
 * spelling; this file holds the C language's table (CLang), the C-only pieces (rounding, a
 * pairwise tree by a recursive helper, locals too large for the stack on the heap) and the
 * program around the kernels: each kernel a function run over a range of items, the
 * AssayProgram table of c.h. The output is a deterministic function of the kernel IR:
 * temporaries t12 (expression ids), variables v3, buffers b0; one `const` temporary per
 * computing node, fully parenthesised, with explicit casts, in a block of the statement's
 * own (constants and variables are written in place).
 *
 * Numerics: f32 and f64 arithmetic is C's float and double (FLT_EVAL_METHOD 0 on x86-64
 * and AArch64), compiled without contraction (run.c: -ffp-contract=off), so every
 * operation rounds once, as the emulator assumes. f16 and bf16 live in uint16_t and are
 * converted by helpers with integer operations (round to nearest even, subnormals,
 * overflow to inf, NaN kept NaN; compiler/emit/chelp.c). Ops whose ops.def C spelling is NULL
 * are helpers: floor division and non-negative remainder, rsqrt = 1/sqrt (two roundings),
 * sigmoid = 1/(1+exp(-x)), IEEE 754-2019 maximum/minimum; the math library supplies the
 * rest (float versions with an `f` suffix; their accuracy is glibc's).
 */
#include <stdlib.h>
#include "../emit/cemit.h"
#include "c.h"

/* h2f and b2f: f16 and bf16 bits to float, exactly */
static const char widen[] =
	"static inline float h2f(uint16_t h)\n"
	"{\n"
	"\tuint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (uint32_t)(h >> 10) & 0x1fu, m = h & 0x3ffu, x;\n"
	"\tfloat f;\n"
	"\tif (e == 0) {\n"
	"\t\tf = (float)m * 0x1p-24f;\n"
	"\t\treturn s ? -f : f;\n"
	"\t}\n"
	"\tx = e == 31 ? (s | 0x7f800000u | (m << 13)) : (s | ((e + 112u) << 23) | (m << 13));\n"
	"\tmemcpy(&f, &x, sizeof f);\n"
	"\treturn f;\n"
	"}\n"
	"static inline float b2f(uint16_t h)\n"
	"{\n"
	"\tuint32_t x = (uint32_t)h << 16;\n"
	"\tfloat f;\n"
	"\tmemcpy(&f, &x, sizeof f);\n"
	"\treturn f;\n"
	"}\n";

/* rsqrt and sigmoid; the pairwise trees of kir.h, recursively; error reports */
static const char own[] =
	"static inline float rsqrt_f(float x) { return 1.0f / sqrtf(x); }\n"
	"static inline double rsqrt_d(double x) { return 1.0 / sqrt(x); }\n"
	"static inline float sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }\n"
	"static inline double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }\n"
	"/* pairwise trees: the left half is the first floor(n/2) terms (n >= 1) */\n"
	"static float tree_add_f(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : tree_add_f(t, n / 2) + tree_add_f(t + n / 2, n - n / 2);\n"
	"}\n"
	"static double tree_add_d(const double *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : tree_add_d(t, n / 2) + tree_add_d(t + n / 2, n - n / 2);\n"
	"}\n"
	"static float tree_mul_f(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : tree_mul_f(t, n / 2) * tree_mul_f(t + n / 2, n - n / 2);\n"
	"}\n"
	"static double tree_mul_d(const double *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : tree_mul_d(t, n / 2) * tree_mul_d(t + n / 2, n - n / 2);\n"
	"}\n"
	"/* f16 and bf16 arithmetic: f32 operations rounded (exact for + - * / sqrt) */\n"
	"static float tree_add_h(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : h2f(d2h((double)(tree_add_h(t, n / 2) + tree_add_h(t + n / 2, n - n / 2))));\n"
	"}\n"
	"static float tree_mul_h(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : h2f(d2h((double)(tree_mul_h(t, n / 2) * tree_mul_h(t + n / 2, n - n / 2))));\n"
	"}\n"
	"static float tree_add_b(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : b2f(d2b((double)(tree_add_b(t, n / 2) + tree_add_b(t + n / 2, n - n / 2))));\n"
	"}\n"
	"static float tree_mul_b(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : b2f(d2b((double)(tree_mul_b(t, n / 2) * tree_mul_b(t + n / 2, n - n / 2))));\n"
	"}\n"
	"/* the first error wins; the value is written after the site is claimed */\n"
	"static void rep(int64_t *err, int64_t site, int64_t v)\n"
	"{\n"
	"\tint64_t none = 0;\n"
	"\tif (__atomic_compare_exchange_n(&err[0], &none, site + 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))\n"
	"\t\t__atomic_store_n(&err[1], v, __ATOMIC_RELAXED);\n"
	"}\n";

static const CHelp help = {
	.fn = "static inline ", .i64 = "int64_t", .let = "", .gap = "",
	.neg = {"signbit(a)", "signbit(a)"},
	.err = "int64_t *err", .site = "int64_t",
	.dfn = "static inline ", .u16 = "uint16_t", .u64 = "uint64_t",
	.bits = "\tuint64_t b, a;\n\tdouble ax;\n\tmemcpy(&b, &x, sizeof b);\n"
		"\tuint16_t s = (uint16_t)((b >> 48) & 0x8000u);\n\ta = b & 0x7fffffffffffffffull;\n",
	.ax = "\tmemcpy(&ax, &a, sizeof ax);\n",
};

/* ------------------------------------------------------------ expressions */

static void round_text(CEmit *e, const KExpr *x)
{
	Dtype f = (Dtype)x->fmt;
	bool dbl = x->type == KT_F64;
	if (f == DT_F32) {
		COV(c_round_f32);
		ce_emit(e, "((double)(float)");
		ce_ref(e, x->a[0]);
		ce_emit(e, ")");
		return;
	}
	IR_ASSERT(f == DT_F16 || f == DT_BF16);
	COV(c_round_16);
	ce_emit(e, "%s%s(%s((double)", dbl ? "(double)" : "", f == DT_F16 ? "h2f" : "b2f",
		f == DT_F16 ? "d2h" : "d2b");
	ce_ref(e, x->a[0]);
	ce_emit(e, "))");
}

/* ------------------------------------------------------------ statements */

static void decl_stmt(CEmit *e, const KStmt *s)
{
	const KVar *v = &e->k->vars[s->v];
	if (v->n > C_HEAP_LOCAL)
		return;   /* allocated at the kernel's entry */
	if (v->n)
		ce_line(e, "%s v%d[%lld];", e->L->type[v->type], s->v, (long long)v->n);
	else
		ce_line(e, "%s v%d;", e->L->type[v->type], s->v);
}

/* The statements of one line: set, store, check, tree. */
static void simple_stmt(CEmit *e, const KStmt *s)
{
	bool open = ce_open_stmt(e, s);
	ce_indent(e);
	switch (s->kind) {
	case KS_SET: ce_set(e, s->v, s->a, s->b); break;
	case KS_STORE: ce_store(e, s); break;
	case KS_CHECK:
		ce_report(e, s);
		ce_emit(e, "\n");
		break;
	case KS_TREE:
		COV(c_tree);
		if (s->fmt == DT_F16 || s->fmt == DT_BF16) {
			COV(c_tree_16);
			if (s->op == OP_MUL)
				COV(c_tree_prod_16);
		}
		ce_emit(e, "v%d = tree_%s_%s(&v%d[", s->v, s->op == OP_MUL ? "mul" : "add",
			s->fmt == DT_F64 ? "d" : s->fmt == DT_F16 ? "h" : s->fmt == DT_BF16 ? "b" : "f",
			s->c);
		ce_ref(e, s->a);
		ce_emit(e, "], ");
		ce_ref(e, s->b);
		ce_emit(e, ");\n");
		break;
	default: IR_ASSERT(!"simple_stmt: not a simple statement");
	}
	ce_close(e, open);
}

static int32_t stmt(CEmit *e, int32_t id)
{
	const KStmt *s = &e->k->s[id];
	switch (s->kind) {
	case KS_LOOP: case KS_WHILE: case KS_IF: ce_control(e, s); break;
	case KS_DECL: decl_stmt(e, s); break;
	default: simple_stmt(e, s); break;
	}
	return id;
}

static const CLang lang = {
	.name = "c",
	.no_mma = "the c backend has no matrix unit (tensor cores: the cuda backend)",
	.type = {[KT_BOOL] = "int", [KT_INT] = "int64_t", [KT_F32] = "float", [KT_F64] = "double"},
	.store = {[DT_F64] = "double", [DT_F32] = "float", [DT_F16] = "uint16_t", [DT_BF16] = "uint16_t",
		  [DT_I32] = "int32_t"},
	.imin = "INT64_MIN", .imax = "INT64_MAX", .ipre = "INT64_C(", .isfx = ")",
	.nan = {"NAN", "((double)NAN)"},
	.inf = {"INFINITY", "((double)INFINITY)"},
	.ninf = {"(-INFINITY)", "(-((double)INFINITY))"},
	.fsfx = "f",
	.ivar = "int64_t ", .ivar_end = "",
	.forever = "for (;;) {",
	.err = "err, ", .truth = "1", .site = "",
	.op = ce_cop,
	.round = round_text,
	.stmt = stmt,
};

/* ------------------------------------------------------------ kernels */

static const CTiles tiles = {
	"const int64_t v%d = 0;", "const int64_t v%d = (q %% %lld) * %lld;", "q /= %lld;",
};

/* Marks the locals statements s.. declare that are too large for the stack. */
static void heap_locals(const Kernels *k, int32_t s, uint8_t *heap)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_DECL && k->vars[t->v].n > C_HEAP_LOCAL) {
			COV(c_heap_local);
			heap[t->v] = 1;
		}
		heap_locals(k, t->body, heap);
		heap_locals(k, t->body2, heap);
	}
}

static void kernel(CEmit *e, int i)
{
	const Kernels *k = e->k;
	const Kernel *kn = &k->k[i];
	uint8_t *use = ce_buffer_use(k, kn->body), *heap = calloc((size_t)k->nvars + 1, 1);
	IR_ASSERT(heap);
	heap_locals(k, kn->body, heap);
	ce_line(e, "/* %s%s */", ce_kernel_name(k, i),
		kn->hoisted ? ": reduction outside the tile's point loops" : "");
	ce_line(e, "static void k%d(void *const *buf, int64_t *err, int64_t t0, int64_t t1)", i);
	ce_line(e, "{");
	e->ind++;
	ce_line(e, "(void)err;");
	for (int b = 0; b < k->nbufs; b++) {
		const char *ct = lang.store[k->bufs[b].fmt];
		if (use[b] == 1)
			ce_line(e, "const %s *restrict b%d = (const %s *)buf[%d];", ct, b, ct, b);
		else if (use[b])
			ce_line(e, "%s *restrict b%d = (%s *)buf[%d];", ct, b, ct, b);
	}
	for (int v = 0; v < k->nvars; v++) {
		const char *ct = lang.type[k->vars[v].type];
		if (heap[v])
			ce_line(e, "%s *v%d = (%s *)malloc(sizeof(%s) * %lld);", ct, v, ct, ct,
				(long long)k->vars[v].n);
	}
	ce_line(e, "for (int64_t it = t0; it < t1; it++) {");
	e->ind++;
	ce_line(e, "int64_t q = it;");
	ce_line(e, "(void)q;");
	ce_tiles(e, kn, &tiles);
	ce_stmts(e, kn->body);
	e->ind--;
	ce_line(e, "}");
	for (int v = 0; v < k->nvars; v++)
		if (heap[v])
			ce_line(e, "free(v%d);", v);
	e->ind--;
	ce_line(e, "}");
	ce_line(e, "%s", "");
	free(use);
	free(heap);
}

static void prologue(CEmit *e)
{
	const Graph *g = e->k->g;
	ce_line(e, "/* Generated by assay's c backend from graph %s. Do not edit.", g->name ? g->name : "(unnamed)");
	ce_line(e, " * Compile: cc %s", C_CFLAGS);
	ce_about(e, " *");
	ce_line(e, " */");
	ce_line(e, "#include <math.h>");
	ce_line(e, "#include <stdint.h>");
	ce_line(e, "#include <stdlib.h>");
	ce_line(e, "#include <string.h>");
	ce_line(e, "%s", "");
	ce_emit(e, "%s", C_ABI(C_TEXT));
	ce_line(e, "%s", "");
	ce_help_all(e, &help, widen, own);
	ce_line(e, "%s", "");
}

char *c_emit(const Kernels *k, Diag *d)
{
	CEmit e;
	ce_init(&e, k, &lang, d);
	prologue(&e);
	for (int i = 0; i < k->nk; i++)
		kernel(&e, i);
	ce_line(&e, "static const AssayKernel kernels[%d] = {", k->nk > 0 ? k->nk : 1);
	for (int i = 0; i < k->nk; i++)
		ce_line(&e, "\t{k%d, %lld, \"%s\"},", i, (long long)k->k[i].nitems,
			ce_kernel_name(k, i));
	if (k->nk == 0)
		ce_line(&e, "\t{0, 0, 0},");
	ce_line(&e, "};");
	ce_line(&e, "const AssayProgram assay_program = {%d, %d, kernels};", C_ABI_VERSION, k->nk);
	return ce_finish(&e);
}
