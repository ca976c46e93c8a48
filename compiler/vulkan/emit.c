/* compiler/vulkan/emit.c: the Vulkan backend's emitter: kernel IR -> GLSL 450 compute
 * shaders, one per kernel (vulkan.h says how the runtime cuts them apart).
 *
 * The text is written by the emitter core (compiler/emit/cemit.h) with GLSL's table (CLang) and
 * the GLSL pieces here (constants, conversions, 16-bit storage, merges of distributed
 * nests, the shader around each kernel); the output is a deterministic function of the
 * kernel IR and of the plan (compiler/map/replicate.c), itself deterministic: temporaries
 * are named after expression ids (t12), variables after variable ids (v3), buffers after
 * buffer ids (b0). Each statement's
 * expressions become one temporary per computing node, fully parenthesised, with explicit
 * conversions; a statement that needs temporaries gets its own block.
 *
 * Numerics: KT_F32 is GLSL float, KT_F64 double (shaderFloat64), KT_INT int where the
 * kernel allows (the plan's MapKernel.i32: every integer operation proved within i32 by the
 * intervals of compiler/kir/kivl.c, so no int can wrap, but one whose result is a stored
 * value, abs(x) or x * 2 of an i32 x, spelled checked (checked[]: the store's error, with
 * the same value); the graph format makes any integer outside i32 an error anyway), else int64_t (GL_ARB_gpu_shader_int64: the kernel IR's
 * integers are exact int64, and an i32 result is checked to fit after the fact). The
 * 32-bit form is not an optimisation: NVIDIA's Vulkan driver (580.159) miscompiled kernels
 * doing their index arithmetic in int64_t (stores lost, sums of 0;
 * tests/regress/vk_nvidia_*.tg), and the same kernels in int ran right. Every float temporary and local is `precise`, which makes
 * glslang mark its operations NoContraction: a*b+c stays a rounded product and a rounded
 * sum, never an fma (the only fma is the graph's own fma(), GLSL's fma). f16 and bf16 live
 * as 16-bit patterns (uint16_t under GL_EXT_shader_16bit_storage when the runtime says the
 * device has it, else two per uint, stored with atomicAnd/atomicOr so neighbours never
 * race) and are converted by lib.c's integer code; no native half arithmetic is used (an
 * f16 op format computes in f32 and rounds each result, as the kernel IR states). Ops are
 * spelled by ops.def's C-family base with GLSL's overrides below (glsl_ops); an op GLSL
 * cannot express in a type is refused with the reason (code 2, "unsupported"), never
 * approximated silently.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../emit/cemit.h"
#include "vulkan.h"

/* GLSL's spellings where they differ from the C-family base of ops.def (cemit.h, "op
 * spellings"): != is written !(a == b) (unordered, whatever the driver's != is); abs and
 * inversesqrt are built-ins in both float types; the functions GLSL.std.450 lacks (expm1,
 * log1p, erf), defines too loosely (tanh, pow) or defines for 16- and 32-bit floats only
 * (every f64 one but sqrt, floor, ceil, fma) are lib.c's helpers, which a shader gets when
 * it calls them (vk_lib_need). */
static const COpSpell glsl_ops[OP__COUNT] = {
	[OP_NE] = {CF_NOTEQ, "==", "==", "==", "=="},
	[OP_EXP] = {CF_CALL, NULL, "exp_d", NULL, NULL},
	[OP_EXP2] = {CF_CALL, NULL, "exp2_d", NULL, NULL},
	[OP_EXPM1] = {CF_CALL, "expm1_f", "expm1_d", NULL, NULL},
	[OP_LOG] = {CF_CALL, NULL, "log_d", NULL, NULL},
	[OP_LOG2] = {CF_CALL, NULL, "log2_d", NULL, NULL},
	[OP_LOG1P] = {CF_CALL, "log1p_f", "log1p_d", NULL, NULL},
	[OP_RSQRT] = {CF_CALL, "inversesqrt", "inversesqrt", NULL, NULL},
	[OP_ABS] = {CF_CALL, "abs", "abs", NULL, NULL},
	[OP_SIN] = {CF_CALL, NULL, "sin_d", NULL, NULL},
	[OP_COS] = {CF_CALL, NULL, "cos_d", NULL, NULL},
	[OP_TANH] = {CF_CALL, "tanh_f", "tanh_d", NULL, NULL},
	[OP_ERF] = {CF_CALL, "erf_f", "erf_d", NULL, NULL},
	[OP_POW] = {CF_CALL, "pow_f", "pow_d", NULL, NULL},
};

typedef struct {
	CEmit c;
	const MapKernel *pl;
	int kernel;
	unsigned need;      /* VH_* helpers the kernel uses */
	bool f64, check, half;
	bool ck;            /* a checked i32 op was written (its helpers follow chk) */
	int32_t chain;      /* the distributed nest being emitted (PART indices), 0 */
	unsigned sused;     /* scratch views used: 1 float, 2 double, 4 int64 (int: i32) */
	bool i32;           /* integers are 32-bit ints (MapKernel.i32), else int64_t */
	const MapPlan *mp;  /* the program's plan */
	int slot0;          /* the kernel's merge slots are m<slot0 + slot> (a fused launch
	                       numbers its kernels' slots one after another) */
	bool fused;         /* a fused launch (map/fuse.c): buffers it writes are coherent */
} E;

/* The integer type and literal suffix of e's kernel. */
#define IT(e) ((e)->i32 ? "int" : "int64_t")
#define LS(e) ((e)->i32 ? "" : "l")

static const char *gtype(E *e, KType t)
{
	if (t == KT_F64)
		e->f64 = true;
	return e->c.L->type[t];
}

/* "precise " for the types whose operations must not be contracted. */
static const char *prec(KType t)
{
	return t == KT_F32 || t == KT_F64 ? "precise " : "";
}

bool vk_loop_narrow(const Kernels *k, int32_t s)
{
	const KStmt *t = &k->s[s];
	if (t->kind != KS_LOOP || t->a < 0 || k->x[t->a].kind != KX_ICONST || k->x[t->a].i < 0)
		return false;
	int64_t hi = map_upper(k, t->b);
	return hi >= 0 && hi < INT32_MAX;
}

int64_t vk_chain_bound(const Kernels *k, const MapKernel *pl, int32_t s)
{
	int64_t n = 1;
	int32_t c = s;
	for (int i = 0; i < pl->sdepth[s]; i++, c = k->s[c].body) {
		int64_t hi = map_upper(k, k->s[c].b);
		if (hi < 0 || k->s[c].a < 0 || k->x[k->s[c].a].kind != KX_ICONST || k->x[k->s[c].a].i != 0 ||
		    (hi > 0 && n > INT64_MAX / hi))
			return -1;
		n *= hi;
	}
	return n;
}

/* ------------------------------------------------------------ expressions */

static bool temp(CEmit *c, int32_t id)
{
	KType t = (KType)c->k->x[id].type;
	ce_indent(c);
	ce_emit(c, "%s%s t%d = ", prec(t), gtype((E *)c, t), id);
	return true;
}

/* A float or double constant: short exact decimals as such, anything else as its bits. */
static void fconst(CEmit *c, const KExpr *x)
{
	double f = x->f;
	bool dbl = x->type == KT_F64;
	char txt[64];
	snprintf(txt, sizeof txt, dbl ? "%.17g" : "%.9g", f);
	bool exact = isfinite(f) && f != 0 && fabs(f) >= (dbl ? 0x1p-1022 : 0x1p-126) &&
		     strtod(txt, NULL) == f && strlen(txt) <= 12;
	if (f == 0 && !signbit(f)) {
		ce_emit(c, dbl ? "0.0lf" : "0.0");
	} else if (exact) {
		bool dot = strpbrk(txt, ".en") != NULL;
		ce_emit(c, "%s%s%s%s%s", f < 0 ? "(" : "", txt, dot ? "" : ".0", dbl ? "lf" : "",
			f < 0 ? ")" : "");
	} else if (dbl) {
		uint64_t b;
		memcpy(&b, &f, sizeof b);
		ce_emit(c, "uint64BitsToDouble(0x%016llxul)", (unsigned long long)b);
	} else {
		float g = (float)f;
		uint32_t b;
		memcpy(&b, &g, sizeof b);
		ce_emit(c, "uintBitsToFloat(0x%08xu)", b);
	}
}

/* The checked i32 spelling of the integer ops whose result may leave i32 (MapPlan.xwide) in
 * a kernel of 32-bit ints (vk_target.int_checked names them): a call that reports the
 * kernel's overflow site, nsites + its number (run.c), written with int arithmetic only. */
static const char *const checked[OP__COUNT] = {
	[OP_NEG] = "neg_ck", [OP_ADD] = "add_ck", [OP_SUB] = "sub_ck", [OP_MUL] = "mul_ck",
	[OP_IDIV] = "fdiv_ck", [OP_ABS] = "abs_ck",
};

static void op_text(CEmit *c, const KExpr *x)
{
	E *e = (E *)c;
	Op op = (Op)x->op;
	const OpInfo *oi = op_info(op);
	if (e->i32 && x->type == KT_INT && e->mp->xwide[x - c->k->x]) {
		if (!(vk_target.int_checked & BE_OP(op)) || !checked[op]) {
			ce_internal(c, "%s may leave i32 in a kernel of 32-bit ints", oi->name);
			return;
		}
		COV(vk_checked_op);
		e->check = e->ck = true;
		ce_emit(c, "%s(", checked[op]);
		ce_args(c, x, oi->arity);
		ce_emit(c, ", %du)", c->k->nsites + e->kernel);
		return;
	}
	CSType t = ce_spell_type(c, x);
	CSpelt sp;
	if (!ce_spell(c->L, op, t, &sp)) {
		COV(vk_no_spelling);
		if (t == CS_F64)
			ce_unsupported(c, "%s in f64: GLSL has no 64-bit %s (GLSL.std.450 defines it for "
				       "16- and 32-bit floats only)", oi->name, oi->spelling);
		else
			ce_unsupported(c, "%s on %s operands has no GLSL spelling", oi->name,
				       kt_name((oi->flags & OPF_CMP) ? (KType)c->k->x[x->a[0]].type : (KType)x->type));
		return;
	}
	if (sp.form == CF_CALL)
		((E *)c)->need |= vk_lib_need(sp.s);
	ce_op(c, x, (CForm)sp.form, sp.s);
}

/* buffer b's element i */
static void elem(CEmit *c, int32_t b, int32_t i)
{
	ce_emit(c, "b%d.d[int(", b);
	ce_ref(c, i);
	ce_emit(c, ")]");
}

static void load_text(CEmit *c, const KExpr *x)
{
	Dtype f = c->k->bufs[x->v].fmt;
	switch (f) {
	case DT_F16: case DT_BF16:
		COV(vk_load16);
		((E *)c)->need |= f == DT_F16 ? VH_F16 : VH_BF16;
		ce_emit(c, "%s(LD16(b%d, ", f == DT_F16 ? "h2f" : "b2f", x->v);
		ce_ref(c, x->a[0]);
		ce_emit(c, "))");
		return;
	case DT_I32:
		ce_emit(c, "%s(", IT((E *)c));
		elem(c, x->v, x->a[0]);
		ce_emit(c, ")");
		return;
	default:
		elem(c, x->v, x->a[0]);
		return;
	}
}

/* value of type `from` as type `to` (rounded to nearest even) */
static void convert(E *e, KType to, KType from, int32_t a)
{
	static const char *fn[KT__COUNT][KT__COUNT] = {
		[KT_INT][KT_F32] = "i2f", [KT_INT][KT_F64] = "i2d", [KT_F32][KT_F64] = "double",
		[KT_F64][KT_F32] = "d2f", [KT_F32][KT_INT] = "int64_t", [KT_F64][KT_INT] = "int64_t",
		[KT_BOOL][KT_INT] = "int64_t",
	};
	if (to == from) {
		ce_ref(&e->c, a);
		return;
	}
	if (!fn[from][to]) {
		ce_unsupported(&e->c, "a conversion from %s to %s", kt_name(from), kt_name(to));
		return;
	}
	e->need |= from == KT_INT && to == KT_F32 ? VH_I2F : from == KT_INT && to == KT_F64 ? VH_I2D
		: from == KT_F64 && to == KT_F32 ? VH_D2F : 0;
	ce_emit(&e->c, "%s(", to == KT_INT ? IT(e) : fn[from][to]);
	ce_ref(&e->c, a);
	ce_emit(&e->c, ")");
}

static void cvt_text(CEmit *c, const KExpr *x)
{
	convert((E *)c, (KType)x->type, (KType)c->k->x[x->a[0]].type, x->a[0]);
}

static void round_text(CEmit *c, const KExpr *x)
{
	E *e = (E *)c;
	Dtype f = (Dtype)x->fmt;
	bool dbl = x->type == KT_F64;
	if (f == DT_F32 && dbl) {
		COV(vk_d2f);
		e->need |= VH_D2F;
		ce_emit(c, "double(d2f(");
		ce_ref(c, x->a[0]);
		ce_emit(c, "))");
		return;
	}
	if (f != DT_F16 && f != DT_BF16) {
		ce_unsupported(c, "rounding into %s inside a kernel", dt_name(f));
		return;
	}
	bool h = f == DT_F16;
	e->need |= h ? VH_F16 : VH_BF16;
	if (dbl)
		e->need |= h ? VH_D2H : VH_D2B;
	ce_emit(c, "%s%s(%s%s(", dbl ? "double(" : "", h ? "h2f" : "b2f", dbl ? "d" : "f", h ? "2h" : "2b");
	ce_ref(c, x->a[0]);
	ce_emit(c, "))%s", dbl ? ")" : "");
}

static void check_text(CEmit *c, const KExpr *x)
{
	if (((E *)c)->i32 && map_i32_check(c->k, (int32_t)(x - c->k->x))) {
		ce_ref(c, x->a[0]);   /* an int holds an i32 */
		return;
	}
	((E *)c)->check = true;
	ce_check(c, x);
}

/* Element idx of local array v (idx: an expression, or the text ix when not NULL):
 * private, private in parts (index j of the nest), or in scratch (vulkan.h). */
static void arr(E *e, int32_t v, int32_t idx, const char *ix)
{
	const KVar *V = &e->c.k->vars[v];
	bool part = e->pl->vshare[v] == MAP_V_PART;
	if (part)
		IR_ASSERT(e->chain > 0 && !ix);
	if (e->pl->vplace[v] == MAP_P_SCRATCH) {
		int view = V->type == KT_F64 ? 1 : V->type == KT_INT ? 2 : 0;
		e->sused |= 1u << view;
		ce_emit(&e->c, "s%c.d[int(sb%d + ", "fdi"[view], v);
	} else {
		ce_emit(&e->c, "v%d[int(", v);
	}
	if (part)
		ce_emit(&e->c, "j%d", e->chain);
	else if (ix)
		ce_emit(&e->c, "%s", ix);
	else
		ce_ref(&e->c, idx);
	ce_emit(&e->c, ")]");
}

static void local_elem(CEmit *c, int32_t v, int32_t idx)
{
	arr((E *)c, v, idx, NULL);
}

/* GLSL's table; two, by the kernel's integer type (lang32: MapKernel.i32, its integer
 * max/min identities INT64_MIN/MAX held as INT32_MIN/MAX, identities of i32 values too). */
#define GLSL_LANG(INT, IMIN, IMAX, ISFX)                                                       \
	{                                                                                      \
		.name = "vulkan",                                                              \
		.no_mma = "this backend does not use VK_KHR_cooperative_matrix yet (tensor cores: the cuda backend)", \
		.type = {[KT_BOOL] = "bool", [KT_INT] = INT, [KT_F32] = "float", [KT_F64] = "double"}, \
		.imin = IMIN, .imax = IMAX, .ipre = "", .isfx = ISFX, .ivar = INT " ", .ivar_end = "", \
		.fsfx = "", .ops = glsl_ops,                                                      \
		.forever = "for (;;) {", .err = "", .truth = "true", .site = "u", .temp = temp,  \
		.fconst = fconst, .elem = local_elem, .load = load_text, .op = op_text,           \
		.cvt = cvt_text, .round = round_text, .check = check_text,                        \
	}
static const CLang lang = GLSL_LANG("int64_t", "(-9223372036854775807l - 1l)", NULL, "l");
static const CLang lang32 = GLSL_LANG("int", "(-2147483647 - 1)", "2147483647", "");

/* ------------------------------------------------------------ statements */

static uint64_t stmts(E *e, int32_t s, uint64_t pending, bool rep);

/* Slot m's part of a merge: each invocation's values into the shared slot, or (out) the
 * merged values back into the local. */
static void merge_slot(E *e, int m, bool out)
{
	CEmit *c = &e->c;
	int32_t v = e->pl->slotvar[m];
	long long n = c->k->vars[v].n;
	if (e->pl->vshare[v] == MAP_V_FLAG) {
		if (out)
			ce_line(c, "for (int i_ = 0; i_ < int(WG); i_++) v%d = max_i(v%d, %s(m%d[i_]));", v, v,
				IT(e), e->slot0 + m);
		else
			ce_line(c, "m%d[int(lid)] = int(v%d);", e->slot0 + m, v);
		return;
	}
	ce_indent(c);
	if (out) {
		ce_emit(c, "for (int i_ = 0; i_ < %lld; i_++) ", n);
		arr(e, v, -1, "i_");
		ce_emit(c, " = m%d[i_];\n", e->slot0 + m);
	} else {
		ce_emit(c, "for (int i_ = int(lid); i_ < %lld; i_ += int(WG)) m%d[i_] = ", n, e->slot0 + m);
		arr(e, v, -1, "i_");
		ce_emit(c, ";\n");
	}
}

/* Puts the owners' values of the merge slots in mask together (vulkan.h, compiler/map/replicate.c): every
 * invocation leaves holding the whole array (MAP_V_MERGE) or the maximum (MAP_V_FLAG). */
static void merge(E *e, uint64_t mask)
{
	ce_line(&e->c, "/* merge:%s */", mask ? "" : " nothing");
	for (int out = 0; out < 2; out++) {
		ce_line(&e->c, "memoryBarrierShared();");
		ce_line(&e->c, "barrier();");
		for (int m = 0; m < e->pl->nslots; m++)
			if (mask >> m & 1)
				merge_slot(e, m, out);
	}
	e->need |= VH_IMINMAX;
}

static void store_text(E *e, const KStmt *s)
{
	CEmit *c = &e->c;
	Dtype f = c->k->bufs[s->v].fmt;
	KType t = (KType)c->k->x[s->b].type;
	if (f == DT_F16 || f == DT_BF16) {
		bool h = f == DT_F16;
		COV(vk_store16);
		e->need |= h ? VH_F16 : VH_BF16;
		if (t == KT_F64)
			e->need |= h ? VH_D2H : VH_D2B;
		else if (t != KT_F32)
			ce_unsupported(c, "a store of %s into an %s buffer", kt_name(t), dt_name(f));
		ce_emit(c, "ST16(b%d, ", s->v);
		ce_ref(c, s->a);
		ce_emit(c, ", %s%s(", t == KT_F64 ? "d" : "f", h ? "2h" : "2b");
		ce_ref(c, s->b);
		ce_emit(c, "));\n");
		return;
	}
	elem(c, s->v, s->a);
	ce_emit(c, " = ");
	if (f == DT_I32) {
		ce_emit(c, "int(");
		ce_ref(c, s->b);
		ce_emit(c, ")");
	} else {
		convert(e, f == DT_F64 ? KT_F64 : KT_F32, t, s->b);
	}
	ce_emit(c, ";\n");
}

/* Term ix of local array v (ce_tree's term). */
static void tree_term(CEmit *c, int32_t v, const char *ix)
{
	arr((E *)c, v, -1, ix);
}

/* local v = the pairwise tree (kir.h) of local array c[a .. a+b), iteratively (cemit.h
 * ce_tree); its combines are precise. */
static void tree_stmt(E *e, const KStmt *s)
{
	CEmit *c = &e->c;
	KType t = (KType)c->k->vars[s->c].type;
	Dtype f = (Dtype)s->fmt;
	const CTree tr = {.itype = "int", .isfx = "", .icvt = "int", .rpre = prec(t),
			  .depth = 64, .term = tree_term};
	COV(vk_tree);
	gtype(e, t);   /* marks an f64 kernel */
	if (f == DT_F16 || f == DT_BF16) {
		COV(vk_tree_16);
		e->need |= f == DT_F16 ? VH_F16 : VH_BF16;
		if (t == KT_F64)
			ce_unsupported(c, "a pairwise tree rounded to %s over f64 terms", dt_name(f));
	}
	ce_line(c, "{");
	c->ind++;
	ce_tree(c, s, &tr);
	c->ind--;
	ce_line(c, "}");
}

/* The statements of one line: set, store, check, tree. */
static void simple_stmt(E *e, const KStmt *s)
{
	CEmit *c = &e->c;
	bool open = ce_open_stmt(c, s);
	if (s->kind == KS_TREE) {
		tree_stmt(e, s);
		ce_close(c, open);
		return;
	}
	ce_indent(c);
	switch (s->kind) {
	case KS_SET: ce_set(c, s->v, s->a, s->b); break;
	case KS_STORE: store_text(e, s); break;
	case KS_CHECK:
		e->check = true;
		ce_report(c, s);
		ce_emit(c, "\n");
		break;
	default: IR_ASSERT(!"simple_stmt: not a simple statement");
	}
	ce_close(c, open);
}

static void decl_stmt(E *e, const KStmt *s)
{
	const KVar *v = &e->c.k->vars[s->v];
	int64_t n = e->pl->vshare[s->v] == MAP_V_PART ? map_part_len(e->c.k, e->pl, s->v) : v->n;
	if (e->pl->vplace[s->v] == MAP_P_SCRATCH)
		ce_line(&e->c, "/* v%d: %lld elements in scratch at byte %lld */", s->v, (long long)n,
			(long long)e->pl->voff[s->v]);
	else if (v->n)
		ce_line(&e->c, "%s%s v%d[%lld];", prec(v->type), gtype(e, v->type), s->v, (long long)(n ? n : 1));
	else
		ce_line(&e->c, "%s%s v%d;", prec(v->type), gtype(e, v->type), s->v);
}

/* A distributed loop nest (the plan's MAP_S_NEST): iterations f = lid, lid + WG, ... of the flattened
 * nest, the last loop fastest; j counts this invocation's iterations (MAP_V_PART index). */
static void chain_stmt(E *e, int32_t s)
{
	CEmit *c = &e->c;
	const Kernels *k = c->k;
	int L = e->pl->sdepth[s];
	int32_t ch[IR_MAXRANK], roots[2 * IR_MAXRANK];
	ch[0] = s;
	for (int i = 1; i < L; i++)
		ch[i] = k->s[ch[i - 1]].body;
	for (int i = 0; i < L; i++) {
		roots[2 * i] = k->s[ch[i]].a;
		roots[2 * i + 1] = k->s[ch[i]].b;
	}
	ce_line(c, "{");
	c->ind++;
	c->stamp++;
	for (int i = 0; i < 2 * L; i++)
		ce_temps(c, roots[i]);
	for (int i = 0; i < L; i++) {
		ce_indent(c);
		ce_emit(c, "%s n%d_%d = (", IT(e), s, i);
		ce_ref(c, roots[2 * i + 1]);
		ce_emit(c, " > ");
		ce_ref(c, roots[2 * i]);
		ce_emit(c, ") ? (");
		ce_ref(c, roots[2 * i + 1]);
		ce_emit(c, " - ");
		ce_ref(c, roots[2 * i]);
		ce_emit(c, ") : 0%s;\n", LS(e));
	}
	ce_indent(c);
	ce_emit(c, "%s tot%d = n%d_0", IT(e), s, s);
	for (int i = 1; i < L; i++)
		ce_emit(c, " * n%d_%d", s, i);
	ce_emit(c, ";\n");
	ce_line(c, "int j%d = 0;", s);
	/* A 32-bit counter where the nest's count (plus one step) fits, here and in serial loops
	 * (control), in kernels that keep int64_t integers too (see the file's comment). */
	int64_t most = vk_chain_bound(k, e->pl, s);
	if (e->i32 || (most >= 0 && most <= (int64_t)INT32_MAX - e->pl->wg)) {
		ce_line(c, "for (int f%d = int(lid); f%d < int(tot%d); f%d += int(WG), j%d++) {", s, s,
			s, s, s);
	} else {
		COV(vk_chain_i64);
		ce_line(c, "for (int64_t f%d = lid; f%d < tot%d; f%d += WG, j%d++) {", s, s, s, s, s);
	}
	c->ind++;
	/* 32-bit division where the nest's count fits (see kernel()) */
	bool narrow = e->i32 || (most >= 0 && most <= UINT32_MAX);   /* i32: its count fits (the plan) */
	ce_line(c, narrow ? "uint q%d = uint(f%d);" : "int64_t q%d = f%d;", s, s);
	for (int i = L - 1; i >= 0; i--) {
		ce_indent(c);
		ce_emit(c, "%s v%d = ", IT(e), k->s[ch[i]].v);
		ce_ref(c, roots[2 * i]);
		if (i > 0) {
			if (narrow)
				ce_emit(c, " + %s(q%d %% uint(n%d_%d));\n", IT(e), s, s, i);
			else
				ce_emit(c, " + q%d %% n%d_%d;\n", s, s, i);
			ce_line(c, narrow ? "q%d /= uint(n%d_%d);" : "q%d /= n%d_%d;", s, s, i);
		} else if (narrow) {
			ce_emit(c, " + %s(q%d);\n", IT(e), s);
		} else {
			ce_emit(c, " + q%d;\n", s);
		}
	}
	e->chain = s;
	stmts(e, k->s[ch[L - 1]].body, 0, false);
	e->chain = 0;
	c->ind--;
	ce_line(c, "}");
	c->ind--;
	ce_line(c, "}");
}

/* A loop, while or if statement; a loop's or a while's merges due at the end of its body
 * happen there, inside it (rep). Returns the merge slots then pending. */
static uint64_t control(E *e, int32_t id, uint64_t pending, bool rep)
{
	CEmit *c = &e->c;
	const KStmt *s = &c->k->s[id];
	bool open;
	if (s->kind == KS_LOOP && !e->i32 && vk_loop_narrow(c->k, id)) {
		/* a 32-bit counter, the loop variable its 64-bit copy: see chain_stmt */
		COV(vk_narrow_loop);
		open = ce_open_stmt(c, s);
		ce_indent(c);
		ce_emit(c, "for (int lv%d = int(", s->v);
		ce_ref(c, s->a);
		ce_emit(c, "); lv%d < int(", s->v);
		ce_ref(c, s->b);
		ce_emit(c, "); lv%d++) {\n", s->v);
		c->ind++;
		ce_line(c, "const int64_t v%d = int64_t(lv%d);", s->v, s->v);
	} else {
		open = s->kind == KS_LOOP ? ce_loop_open(c, s) : s->kind == KS_WHILE ? ce_while_open(c, s)
			: ce_if_open(c, s);
	}
	uint64_t end = stmts(e, s->body, pending, rep);
	if (s->kind == KS_IF) {
		uint64_t other = pending;
		if (s->body2 > 0) {
			ce_else(c);
			other = stmts(e, s->body2, pending, rep);
		}
		ce_end(c, open);
		return end | other;
	}
	if (rep && (end & e->pl->srep[id])) {
		merge(e, end & e->pl->srep[id]);
		end &= ~e->pl->srep[id];
	}
	if (s->kind == KS_LOOP)
		ce_end(c, open);
	else
		ce_while_end(c, open);
	return pending | end;
}

/* A statement list; rep: replicated code of a group plan (merges are placed here).
 * Returns the merge slots still waiting for a merge at its end. */
static uint64_t stmts(E *e, int32_t s, uint64_t pending, bool rep)
{
	for (; s > 0 && !e->c.failed; s = e->c.k->s[s].next) {
		const KStmt *t = &e->c.k->s[s];
		if (rep && (pending & e->pl->srep[s])) {
			merge(e, pending & e->pl->srep[s]);
			pending &= ~e->pl->srep[s];
		}
		if (rep && e->pl->srole[s] == MAP_S_NEST) {
			chain_stmt(e, s);
			pending |= e->pl->sdist[s];
			continue;
		}
		switch (t->kind) {
		case KS_LOOP: case KS_WHILE: case KS_IF: pending = control(e, s, pending, rep); break;
		case KS_DECL: decl_stmt(e, t); break;
		default: simple_stmt(e, t); break;
		}
	}
	return pending;
}

/* ------------------------------------------------------------ shaders */

static const char *const fc_modes[][2] = {
	/* symbol, spirv_execution_mode arguments: capability, mode (float controls) */
	{VK_SYM_DENORM32, "capabilities = [4464], 4459, 32"},
	{VK_SYM_SZINP32, "capabilities = [4466], 4461, 32"},
	{VK_SYM_RTE32, "capabilities = [4467], 4462, 32"},
	{VK_SYM_DENORM64, "capabilities = [4464], 4459, 64"},
	{VK_SYM_SZINP64, "capabilities = [4466], 4461, 64"},
	{VK_SYM_RTE64, "capabilities = [4467], 4462, 64"},
};

static void header(CEmit *o, const E *b, int i)
{
	const Kernels *k = o->k;
	const Kernel *kn = &k->k[i];
	const MapKernel *pl = b->pl;
	ce_line(o, VK_MARK "%d: %s group=%d wg=%d f64=%d scratch=%lld", i,
		ce_kernel_name(k, i), pl->mode == MAP_GROUP ? 1 : 0, pl->wg, pl->f64 ? 1 : 0,
		(long long)pl->scratch);
	ce_line(o, "#version 450");
	ce_line(o, "#extension GL_ARB_gpu_shader_int64 : require");
	const char *syms[] = {VK_SYM_16BIT, VK_SYM_FC, VK_SYM_DENORM32, VK_SYM_SZINP32, VK_SYM_RTE32,
			      VK_SYM_DENORM64, VK_SYM_SZINP64, VK_SYM_RTE64};
	for (size_t s = 0; s < ARRAY_LEN(syms); s++)
		ce_line(o, "#ifndef %s\n#define %s 0\n#endif", syms[s], syms[s]);
	if (b->half)
		ce_line(o, "#if %s\n#extension GL_EXT_shader_16bit_storage : require\n#endif", VK_SYM_16BIT);
	ce_line(o, "#if %s\n#extension GL_EXT_spirv_intrinsics : require", VK_SYM_FC);
	for (size_t m = 0; m < ARRAY_LEN(fc_modes); m++)
		if (m < 3 || pl->f64)
			ce_line(o, "#if %s\nspirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], "
				"%s);\n#endif", fc_modes[m][0], fc_modes[m][1]);
	ce_line(o, "#endif");
	if (pl->nfused > 1) {
		ce_launch_about(o, i, pl->nfused, "work-group", 0);
	} else {
		ce_line(o, "/* %s%s; %s plan: %s */", ce_kernel_name(k, i),
			kn->hoisted ? ": reduction outside the tile's point loops" : "",
			pl->mode == MAP_GROUP ? "group" : "serial",
			pl->mode == MAP_GROUP ? "one item per work-group, distributed loop nests" : "one item per invocation");
	}
	ce_line(o, "layout(local_size_x = %d) in;", pl->wg);
	ce_line(o, "const %s WG = %d%s;", IT(b), pl->wg, LS(b));
	ce_line(o, "const %s NITEMS = %lld%s;", IT(b), (long long)kn->nitems, LS(b));
	ce_line(o, "layout(push_constant) uniform PC { int64_t base; } pc;   /* first item of this dispatch */");
}

static void buffers(CEmit *o, const E *b, const uint8_t *use)
{
	const Kernels *k = o->k;
	if (b->half) {
		ce_line(o, "#if %s", VK_SYM_16BIT);
		ce_line(o, "#define HALF_T uint16_t");
		ce_line(o, "#define LD16(B, I) uint(B.d[int(I)])");
		ce_line(o, "#define ST16(B, I, V) B.d[int(I)] = uint16_t(V)");
		ce_line(o, "#else");
		ce_line(o, "#define HALF_T uint");
		ce_line(o, "#define LD16(B, I) ((B.d[int((I) >> 1)] >> (uint((I) & 1l) * 16u)) & 0xffffu)");
		ce_line(o, "#define ST16(B, I, V) { uint sh_ = uint((I) & 1l) * 16u; int w_ = int((I) >> 1); "
			"atomicAnd(B.d[w_], ~(0xffffu << sh_)); atomicOr(B.d[w_], uint(V) << sh_); }");
		ce_line(o, "#endif");
	}
	for (int v = 0; v < 3; v++)
		if (b->sused >> v & 1)
			ce_line(o, "layout(std430, set = 0, binding = %d) restrict buffer S%c { %s d[]; } s%c;  /* scratch */",
				k->nbufs + 1 + v, "FDI"[v], v == 0 ? "float" : v == 1 ? "double" : IT(b), "fdi"[v]);
	for (int i = 0; i < k->nbufs; i++) {
		if (!use[i])
			continue;
		Dtype f = k->bufs[i].fmt;
		const char *t = f == DT_F64 ? "double" : f == DT_F32 ? "float" : f == DT_I32 ? "int" : "HALF_T";
		ce_line(o, "layout(std430, set = 0, binding = %d) restrict %sbuffer B%d { %s d[]; } b%d;  /* %s: %s */",
			i, use[i] == 1 ? "readonly " : b->fused ? "coherent " : "", i, t, i,
			k->g->tensors[k->bufs[i].tensor].name, dt_name(f));
	}
	if (!b->check)
		return;
	ce_line(o, "layout(std430, set = 0, binding = %d) restrict buffer Err { uint e[]; } err;", k->nbufs);
	ce_line(o, "const uint EB = %du;", b->kernel * VK_ERR_WORDS);
	ce_line(o, "/* the first error wins; its value follows the claimed site */");
	ce_line(o, "void rep(uint site, int64_t v)");
	ce_line(o, "{");
	ce_line(o, "\tif (atomicCompSwap(err.e[EB], 0u, site + 1u) == 0u) {");
	ce_line(o, "\t\terr.e[EB + 1u] = uint(uint64_t(v) & 0xfffffffful);");
	ce_line(o, "\t\terr.e[EB + 2u] = uint(uint64_t(v) >> 32);");
	ce_line(o, "\t}");
	ce_line(o, "}");
	ce_line(o, "int64_t chk(int64_t v, int64_t lo, int64_t hi, bool g, uint site)");
	ce_line(o, "{");
	ce_line(o, "\tif (v >= lo && v < hi)");
	ce_line(o, "\t\treturn v;");
	ce_line(o, "\tif (g)");
	ce_line(o, "\t\trep(site, v);");
	ce_line(o, "\treturn lo;");
	ce_line(o, "}");
	if (!b->i32)
		return;
	ce_line(o, "int chk(int v, int lo, int hi, bool g, uint site)");
	ce_line(o, "{");
	ce_line(o, "\tif (v >= lo && v < hi)");
	ce_line(o, "\t\treturn v;");
	ce_line(o, "\tif (g)");
	ce_line(o, "\t\trep(site, int64_t(v));");
	ce_line(o, "\treturn lo;");
	ce_line(o, "}");
	if (!b->ck)
		return;
	/* checked i32 ops (checked[]): the result wraps as SPIR-V's integer ops do, and an
	 * overflow reports the kernel's site with the exact value (int64_t arithmetic only
	 * there, on the error's path) */
	static const char *const ck =
		"int add_ck(int a, int b, uint site)\n{\n\tint r = a + b;\n"
		"\tif (((a ^ r) & (b ^ r)) < 0)\n\t\trep(site, int64_t(a) + int64_t(b));\n\treturn r;\n}\n"
		"int sub_ck(int a, int b, uint site)\n{\n\tint r = a - b;\n"
		"\tif (((a ^ b) & (a ^ r)) < 0)\n\t\trep(site, int64_t(a) - int64_t(b));\n\treturn r;\n}\n"
		"int mul_ck(int a, int b, uint site)\n{\n\tint hi, lo;\n\timulExtended(a, b, hi, lo);\n"
		"\tif (hi != (lo >> 31))\n\t\trep(site, int64_t(a) * int64_t(b));\n\treturn lo;\n}\n"
		"int neg_ck(int a, uint site)\n{\n\tif (a == (-2147483647 - 1))\n\t\trep(site, 2147483648l);\n"
		"\treturn -a;\n}\n"
		"int abs_ck(int a, uint site)\n{\n\tif (a == (-2147483647 - 1))\n\t\trep(site, 2147483648l);\n"
		"\treturn a < 0 ? -a : a;\n}\n"
		"int fdiv_ck(int a, int b, uint site)\n{\n\tif (a == (-2147483647 - 1) && b == -1)\n"
		"\t\trep(site, 2147483648l);\n\tif (b == 0)\n\t\treturn 0;\n"
		"\tuint ua = a < 0 ? uint(-a) : uint(a), ub = b < 0 ? uint(-b) : uint(b), q = ua / ub, r = ua - q * ub;\n"
		"\tif ((a < 0) == (b < 0))\n\t\treturn int(q);\n\treturn r != 0u ? -int(q) - 1 : -int(q);\n}\n";
	ce_emit(o, "%s", ck);
}

static void put_text(void *ctx, const char *text)
{
	ce_emit(ctx, "%s", text);
}

/* q is an int64_t, or a uint where it fits; [2]: integers are ints */
static const CTiles tiles[3] = {
	{"const int64_t v%d = 0l;", "const int64_t v%d = int64_t(q %% %lldl) * %lldl;", "q /= %lldl;"},
	{"const int64_t v%d = 0l;", "const int64_t v%d = int64_t(q %% %lldu) * %lldl;", "q /= %lldu;"},
	{"const int v%d = 0;", "const int v%d = int(q %% %lldu) * %lld;", "q /= %lldu;"},
};

/* The phases of fused launch i (MapKernel.nfused, map/fuse.c), into b: each kernel's items
 * of row `it`, one after another on the whole work-group (a group-per-item kernel) or dealt
 * to the invocations (an item-per-invocation kernel); between phases, a barrier that makes
 * the buffers' stores visible to the work-group (they are coherent). Returns the buffers
 * they use (ce_buffer_use's marks, all kernels'). */
static uint8_t *phases(E *b, int i)
{
	CEmit *c = &b->c;
	const Kernels *k = c->k;
	const MapKernel *lead = b->pl;
	const char *it = IT(b);
	b->slot0 = 0;
	for (int j = i; j < i + lead->nfused; j++) {
		const Kernel *kn = &k->k[j];
		b->pl = &b->mp->k[j];
		long long f = (long long)b->pl->per_row;
		bool group = b->pl->mode == MAP_GROUP;
		if (group)
			ce_line(c, "for (%s u%d = it * %lld%s; u%d < (it + 1%s) * %lld%s; u%d++) {", it, j, f,
				LS(b), j, LS(b), f, LS(b), j);
		else
			ce_line(c, "for (%s u%d = it * %lld%s + lid; u%d < (it + 1%s) * %lld%s; u%d += WG) {", it,
				j, f, LS(b), j, LS(b), f, LS(b), j);
		c->ind++;
		bool narrow = kn->nitems <= UINT32_MAX;
		if (b->i32 || narrow)
			ce_line(c, "uint q = uint(u%d);", j);
		else
			ce_line(c, "int64_t q = u%d;", j);
		ce_tiles(c, kn, &tiles[b->i32 ? 2 : narrow]);
		stmts(b, kn->body, 0, group);
		if (group && f > 1) {   /* the next item reuses the merge slots and shared locals */
			ce_line(c, "memoryBarrierShared();");
			ce_line(c, "barrier();");
		}
		c->ind--;
		ce_line(c, "}");
		ce_line(c, "memoryBarrierBuffer();");
		ce_line(c, "memoryBarrierShared();");
		ce_line(c, "barrier();");
		b->slot0 += b->pl->nslots;
	}
	b->pl = lead;
	b->slot0 = 0;
	return ce_launch_use(k, i, lead->nfused);
}

/* main's statements (into b), then the whole shader around them (into o). */
static void kernel(CEmit *o, E *b, int i)
{
	CEmit *c = &b->c;
	const Kernels *k = o->k;
	const Kernel *kn = &k->k[i];
	const MapKernel *pl = b->pl;
	c->ind = 1;
	const char *it = IT(b);
	ce_line(c, "%s it = %s(gl_WorkGroupID.y) * %s(gl_NumWorkGroups.x) + %s(gl_WorkGroupID.x);", it,
		it, it, it);
	if (pl->mode != MAP_GROUP)
		ce_line(c, "it = it * WG + %s(gl_LocalInvocationID.x);", it);
	ce_line(c, b->i32 ? "it += int(pc.base);" : "it += pc.base;");
	ce_line(c, "const %s lid = %s(gl_LocalInvocationID.x);", it, it);
	ce_line(c, "if (it >= NITEMS)");
	ce_line(c, "\treturn;");
	if (pl->scratch) {
		const char *base = b->i32 ? "int(pc.base)" : "pc.base";
		if (pl->mode == MAP_GROUP)
			ce_line(c, "const %s slot = (it - %s) * WG + lid;   /* this invocation's scratch */", it,
				base);
		else
			ce_line(c, "const %s slot = it - %s;   /* this invocation's scratch */", it, base);
		for (int32_t v = 0; v < k->nvars; v++)
			if (pl->vplace[v] == MAP_P_SCRATCH) {
				KType t = (KType)k->vars[v].type;
				int sz = t == KT_F32 || (t == KT_INT && b->i32) ? 4 : 8;
				ce_line(c, "const %s sb%d = slot * %lld%s + %lld%s;", it, v,
					(long long)(pl->scratch / sz), LS(b), (long long)(pl->voff[v] / sz), LS(b));
			}
	}
	/* 32-bit division where the item ids fit: NVIDIA's driver (580) was seen to compute 64-bit
	 * division and remainder by constants wrongly */
	bool narrow = kn->nitems <= UINT32_MAX;
	uint8_t *use;
	if (pl->nfused > 1) {
		use = phases(b, i);
	} else {
		ce_line(c, narrow ? "uint q = uint(it);" : "int64_t q = it;");
		ce_tiles(c, kn, &tiles[b->i32 ? 2 : narrow]);
		stmts(b, kn->body, 0, pl->mode == MAP_GROUP);
		use = ce_buffer_use(k, kn->body);
	}
	for (int j = 0; j < k->nbufs; j++) {
		b->half |= use[j] && (k->bufs[j].fmt == DT_F16 || k->bufs[j].fmt == DT_BF16);
		b->f64 |= use[j] && k->bufs[j].fmt == DT_F64;
	}
	if (pl->f64)
		COV(vk_f64);
	header(o, b, i);
	buffers(o, b, use);
	free(use);
	for (int j = i, m0 = 0; j < i + pl->nfused; m0 += b->mp->k[j++].nslots) {
		const MapKernel *pj = &b->mp->k[j];
		for (int m = 0; m < pj->nslots; m++) {
			int32_t v = pj->slotvar[m];
			if (pj->vshare[v] == MAP_V_FLAG)
				ce_line(o, "shared int m%d[%d];", m0 + m, pj->wg);
			else
				ce_line(o, "shared %s m%d[%lld];", c->L->type[k->vars[v].type], m0 + m,
					(long long)k->vars[v].n);
		}
	}
	vk_lib(b->need, put_text, o);
	ce_line(o, "void main()");
	ce_line(o, "{");
	ce_emit(o, "%.*s", (int)c->len, c->buf);
	ce_line(o, "}");
	ce_line(o, "%s", "");
}

char *vk_emit(const Kernels *k, Diag *d)
{
	CEmit o;
	ce_init(&o, k, &lang, d);
	const Graph *g = k->g;
	const MapPlan *mp = map_plan(k, &vk_target);
	int shaders = 0;
	for (int i = 0; i < k->nk; i += mp->k[i].nfused)
		shaders++;
	ce_line(&o, "// Generated by assay's vulkan backend from graph %s: %d compute shaders (GLSL 450).",
		g->name ? g->name : "(unnamed)", shaders);
	if (k->faults)
		ce_line(&o, "// SEEDED FAULTS 0x%llx: this program is wrong on purpose.",
			(unsigned long long)k->faults);
	ce_schedule(&o, NULL, "// schedule: ");
	for (int i = 0; i < k->nk && !o.failed; i += mp->k[i].nfused) {
		const MapKernel *pl = &mp->k[i];
		E b = {.c = {.k = k, .L = pl->i32 ? &lang32 : &lang, .d = d, .mark = o.mark, .stamp = o.stamp},
		       .pl = pl, .kernel = i, .i32 = pl->i32, .mp = mp, .fused = pl->nfused > 1};
		kernel(&o, &b, i);
		if (b.f64 && !pl->f64)   /* the runtime picks the shader's f64 modes by the plan */
			ce_internal(&o, "kernel %d holds f64 values its plan does not know of", i);
		o.failed |= b.c.failed;
		o.stamp = b.c.stamp;
		free(b.c.buf);
	}
	return ce_finish(&o);
}
