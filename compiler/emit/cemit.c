/* compiler/emit/cemit.c: the emitter core of the C-like backends (cemit.h): the text buffer,
 * the walk that writes a statement's temporaries, the spelling of constants and ops, the
 * control statements, and the comment every program opens with.
 *
 * The defaults of the hooks are C's spelling; each is the one the c backend uses, and the
 * others use it where their language writes the piece the same way.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cemit.h"

/* A hook of e's language, or the core's default. */
#define HOOK(e, h, dflt) ((e)->L->h ? (e)->L->h : (dflt))

void ce_init(CEmit *e, const Kernels *k, const CLang *L, Diag *d)
{
	memset(e, 0, sizeof *e);
	e->k = k;
	e->L = L;
	e->d = d;
	e->mark = calloc((size_t)k->nx + 1, sizeof *e->mark);
	IR_ASSERT(e->mark);
	for (int i = 0; i < k->nk && L->no_mma; i++)
		if (k->sched.defs[k->k[i].def].mma) {
			ce_unsupported(e, "mma of '%s': %s", k->g->tensors[k->g->defs[k->k[i].def].out[0]].name,
				       L->no_mma);
			break;
		}
}

char *ce_finish(CEmit *e)
{
	free(e->mark);
	e->mark = NULL;
	if (e->failed) {
		free(e->buf);
		return NULL;
	}
	return e->buf;
}

static void emitv(CEmit *e, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	IR_ASSERT(n >= 0);
	if (e->len + (size_t)n + 1 > e->cap) {
		e->cap = (e->len + (size_t)n + 1) * 2;
		e->buf = realloc(e->buf, e->cap);
		IR_ASSERT(e->buf);
	}
	vsnprintf(e->buf + e->len, (size_t)n + 1, fmt, ap);
	e->len += (size_t)n;
}

void ce_emit(CEmit *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emitv(e, fmt, ap);
	va_end(ap);
}

void ce_indent(CEmit *e)
{
	for (int i = 0; i < e->ind; i++)
		ce_emit(e, "\t");
}

void ce_line(CEmit *e, const char *fmt, ...)
{
	ce_indent(e);
	va_list ap;
	va_start(ap, fmt);
	emitv(e, fmt, ap);
	va_end(ap);
	ce_emit(e, "\n");
}

static void fail(CEmit *e, int code, const char *what, const char *fmt, va_list ap)
{
	if (e->failed)
		return;
	char msg[512];
	vsnprintf(msg, sizeof msg, fmt, ap);
	diag_set(e->d, code, "%s%s backend: %s%s", code == 3 ? "internal: " : "", e->L->name, what, msg);
	e->failed = true;
}

void ce_unsupported(CEmit *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fail(e, 2, "unsupported: ", fmt, ap);
	va_end(ap);
}

void ce_internal(CEmit *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fail(e, 3, "", fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------ expressions */

static bool leaf(const KExpr *x)
{
	return x->kind == KX_FCONST || x->kind == KX_ICONST || x->kind == KX_VAR;
}

static void iconst_c(CEmit *e, const KExpr *x)
{
	const CLang *L = e->L;
	if (x->i == INT64_MIN || x->i == INT64_MAX)
		COV(cemit_int_limit);
	if (x->i == INT64_MIN)
		ce_emit(e, "%s", L->imin);
	else if (x->i == INT64_MAX && L->imax)
		ce_emit(e, "%s", L->imax);
	else
		ce_emit(e, "%s%s%lld%s%s", x->i < 0 ? "(" : "", L->ipre, (long long)x->i, L->isfx,
			x->i < 0 ? ")" : "");
}

static void fconst_c(CEmit *e, const KExpr *x)
{
	int dbl = x->type != KT_F32;
	const char *sfx = dbl ? "" : "f";
	if (isnan(x->f))
		COV(cemit_nan);
	else if (isinf(x->f))
		COV(cemit_inf);
	if (isnan(x->f))
		ce_emit(e, "%s", e->L->nan[dbl]);
	else if (isinf(x->f))
		ce_emit(e, "%s", x->f < 0 ? e->L->ninf[dbl] : e->L->inf[dbl]);
	else if (signbit(x->f))
		ce_emit(e, "(%a%s)", x->f, sfx);
	else
		ce_emit(e, "%a%s", x->f, sfx);
}

void ce_ref(CEmit *e, int32_t id)
{
	const KExpr *x = &e->k->x[id];
	if (x->kind == KX_VAR)
		ce_emit(e, "v%d", x->v);
	else if (x->kind == KX_ICONST)
		HOOK(e, iconst, iconst_c)(e, x);
	else if (x->kind == KX_FCONST)
		HOOK(e, fconst, fconst_c)(e, x);
	else
		ce_emit(e, "t%d", id);
}

static void operand_c(CEmit *e, const KExpr *x, int i)
{
	ce_ref(e, x->a[i]);
}

void ce_args(CEmit *e, const KExpr *x, int n)
{
	for (int i = 0; i < n; i++) {
		if (i)
			ce_emit(e, ", ");
		HOOK(e, operand, operand_c)(e, x, i);
	}
}

void ce_call(CEmit *e, const char *fn, const KExpr *x, int n)
{
	ce_emit(e, "%s(", fn);
	ce_args(e, x, n);
	ce_emit(e, ")");
}

/* open a sep1 b sep2 c) */
static void refs3(CEmit *e, const char *open, int32_t a, const char *sep1, int32_t b, const char *sep2,
		  int32_t c)
{
	ce_emit(e, "%s", open);
	ce_ref(e, a);
	ce_emit(e, "%s", sep1);
	ce_ref(e, b);
	ce_emit(e, "%s", sep2);
	ce_ref(e, c);
	ce_emit(e, ")");
}

void ce_op(CEmit *e, const KExpr *x, CForm form, const char *s)
{
	void (*operand)(CEmit *, const KExpr *, int) = HOOK(e, operand, operand_c);
	switch (form) {
	case CF_SELECT:
		refs3(e, "(", x->a[0], " ? ", x->a[1], " : ", x->a[2]);
		return;
	case CF_SELECTF:
		ce_emit(e, "%s", s);
		refs3(e, "(", x->a[2], ", ", x->a[1], ", ", x->a[0]);
		return;
	case CF_INFIX:
	case CF_NOTEQ:
		ce_emit(e, form == CF_NOTEQ ? "(!(" : "(");
		operand(e, x, 0);
		ce_emit(e, " %s ", form == CF_NOTEQ ? "==" : s);
		operand(e, x, 1);
		ce_emit(e, form == CF_NOTEQ ? "))" : ")");
		return;
	case CF_PREFIX:
		ce_emit(e, "(%s", s);
		operand(e, x, 0);
		ce_emit(e, ")");
		return;
	case CF_CALL:
		ce_call(e, s, x, op_info((Op)x->op)->arity);
		return;
	case CF_NONE:
		break;
	}
	IR_ASSERT(!"ce_op: no form");
}

CSType ce_spell_type(const CEmit *e, const KExpr *x)
{
	bool cmp = op_info((Op)x->op)->flags & OPF_CMP;
	switch (cmp ? (KType)e->k->x[x->a[0]].type : (KType)x->type) {
	case KT_F64: return CS_F64;
	case KT_INT: return CS_INT;
	case KT_BOOL: return CS_BOOL;
	default: return CS_F32;
	}
}

/* Whether op has a spelling in type t (cemit.h, "op spellings"). */
static bool spelled_in(Op op, CSType t)
{
	unsigned fl = op_info(op)->flags;
	if (fl & OPF_CAST)
		return false;
	switch (t) {
	case CS_INT: return fl & (OPF_INT_OK | OPF_INT_ONLY | OPF_CMP);
	case CS_BOOL: return (fl & (OPF_BOOL_IN | OPF_CMP)) || op == OP_SELECT;
	default: return !(fl & (OPF_INT_ONLY | OPF_BOOL_IN));
	}
}

/* out = form with text a b. */
static bool spelt(CSpelt *out, CForm form, const char *a, const char *b)
{
	out->form = (uint8_t)form;
	snprintf(out->s, sizeof out->s, "%s%s", a, b);
	return true;
}

bool ce_spell(const CLang *L, Op op, CSType t, CSpelt *out)
{
	const OpInfo *oi = op_info(op);
	out->form = CF_NONE;
	out->s[0] = 0;
	if (L->ops) {
		const COpSpell *o = &L->ops[op];
		const char *s = t == CS_F32 ? o->f : t == CS_F64 ? o->d : t == CS_INT ? o->i : o->b;
		if (s)
			return spelt(out, (CForm)o->form, s, "");
	}
	if (!spelled_in(op, t))
		return false;
	if (op == OP_SELECT)
		return spelt(out, CF_SELECT, "?:", "");
	if (oi->flags & (OPF_INFIX | OPF_PREFIX)) {
		if (oi->c)
			return spelt(out, oi->flags & OPF_INFIX ? CF_INFIX : CF_PREFIX, oi->c, "");
	} else if (oi->c && t != CS_INT) {
		return spelt(out, CF_CALL, oi->c, t == CS_F32 && L->fsfx ? L->fsfx : "");
	}
	if (!oi->helper || t == CS_BOOL)
		return false;
	return spelt(out, CF_CALL, oi->helper, t == CS_F32 ? "_f" : t == CS_F64 ? "_d" : "_i");
}

void ce_cop(CEmit *e, const KExpr *x)
{
	CSpelt sp;
	CSType t = ce_spell_type(e, x);
	if (!ce_spell(e->L, (Op)x->op, t, &sp)) {
		ce_internal(e, "no spelling for %s on %s", op_info((Op)x->op)->name,
			    kt_name((KType)x->type));
		return;
	}
	ce_op(e, x, (CForm)sp.form, sp.s);
}

static bool temp_c(CEmit *e, int32_t id)
{
	ce_indent(e);
	ce_emit(e, "const %s t%d = ", e->L->type[e->k->x[id].type], id);
	return true;
}

static void elem_c(CEmit *e, int32_t v, int32_t idx)
{
	ce_emit(e, "v%d[", v);
	ce_ref(e, idx);
	ce_emit(e, "]");
}

/* f16 and bf16 widen by the program's h2f and b2f, i32 by a cast */
void ce_load_at(CEmit *e, const KExpr *x, const char *arr, int32_t idx)
{
	Dtype f = e->k->bufs[x->v].fmt;
	if (f == DT_I32)
		ce_emit(e, "((%s)", e->L->type[KT_INT]);
	else
		ce_emit(e, "%s", f == DT_F16 ? "h2f(" : f == DT_BF16 ? "b2f(" : "(");
	ce_emit(e, "%s%d[", arr, x->v);
	ce_ref(e, idx);
	ce_emit(e, "])");
}

void ce_load_c(CEmit *e, const KExpr *x)
{
	ce_load_at(e, x, "b", x->a[0]);
}

static void cvt_c(CEmit *e, const KExpr *x)
{
	ce_emit(e, "((%s)", e->L->type[x->type]);
	ce_ref(e, x->a[0]);
	ce_emit(e, ")");
}

void ce_check(CEmit *e, const KExpr *x)
{
	COV(cemit_check);
	ce_emit(e, "chk(%s", e->L->err);
	for (int i = 0; i < 3; i++) {
		ce_ref(e, x->a[i]);
		ce_emit(e, ", ");
	}
	if (x->a[3] >= 0)
		ce_ref(e, x->a[3]);
	else
		ce_emit(e, "%s", e->L->truth);
	ce_emit(e, ", %d%s)", x->v, e->L->site);
}

void ce_temps(CEmit *e, int32_t id)
{
	if (id < 0 || e->failed)
		return;
	const KExpr *x = &e->k->x[id];
	if (leaf(x) || e->mark[id] == e->stamp)
		return;
	e->mark[id] = e->stamp;
	for (int i = 0; i < 4; i++)
		ce_temps(e, x->a[i]);
	if (!HOOK(e, temp, temp_c)(e, id))
		return;
	switch (x->kind) {
	case KX_ELEM: HOOK(e, elem, elem_c)(e, x->v, x->a[0]); break;
	case KX_LOAD: HOOK(e, load, ce_load_c)(e, x); break;
	case KX_OP: e->L->op(e, x); break;
	case KX_CVT: HOOK(e, cvt, cvt_c)(e, x); break;
	case KX_ROUND: e->L->round(e, x); break;
	case KX_CHECK: HOOK(e, check, ce_check)(e, x); break;
	default: IR_ASSERT(!"ce_temps: a leaf");
	}
	ce_emit(e, ";\n");
}

/* ------------------------------------------------------------ statements */

bool ce_open(CEmit *e, const int32_t *roots, int n)
{
	e->stamp++;
	bool need = false;
	for (int i = 0; i < n; i++)
		need |= roots[i] >= 0 && !leaf(&e->k->x[roots[i]]);
	if (need) {
		ce_line(e, "{");
		e->ind++;
	}
	for (int i = 0; i < n; i++)
		ce_temps(e, roots[i]);
	return need;
}

bool ce_open_stmt(CEmit *e, const KStmt *s)
{
	int32_t roots[2] = {s->a, s->b};
	return ce_open(e, roots, 2);
}

void ce_close(CEmit *e, bool open)
{
	if (open) {
		e->ind--;
		ce_line(e, "}");
	}
}

void ce_for(CEmit *e, const KStmt *s, const char *from, const char *step)
{
	ce_indent(e);
	ce_emit(e, "for (%sv%d%s = ", e->L->ivar, s->v, e->L->ivar_end);
	ce_ref(e, s->a);
	ce_emit(e, "%s; v%d < ", from, s->v);
	ce_ref(e, s->b);
	ce_emit(e, "; v%d%s) {\n", s->v, step);
}

bool ce_loop_open(CEmit *e, const KStmt *s)
{
	bool open = ce_open_stmt(e, s);
	ce_for(e, s, "", "++");
	e->ind++;
	return open;
}

/* for (;;) { condition's temporaries; if (!cond) break; body } */
bool ce_while_open(CEmit *e, const KStmt *s)
{
	COV(cemit_while);
	ce_line(e, "%s", e->L->forever);
	e->ind++;
	bool open = ce_open(e, &s->a, 1);
	ce_indent(e);
	ce_emit(e, "if (!");
	ce_ref(e, s->a);
	ce_emit(e, ")%s\n", e->L->braces ? " {" : "");
	ce_line(e, "\tbreak;");
	if (e->L->braces)
		ce_line(e, "}");
	return open;
}

bool ce_if_open(CEmit *e, const KStmt *s)
{
	bool open = ce_open(e, &s->a, 1);
	ce_indent(e);
	ce_emit(e, "if (");
	ce_ref(e, s->a);
	ce_emit(e, ") {\n");
	e->ind++;
	return open;
}

void ce_else(CEmit *e)
{
	e->ind--;
	ce_line(e, "} else {");
	e->ind++;
}

void ce_end(CEmit *e, bool open)
{
	e->ind--;
	ce_line(e, "}");
	ce_close(e, open);
}

void ce_while_end(CEmit *e, bool open)
{
	ce_close(e, open);
	e->ind--;
	ce_line(e, "}");
}

void ce_control(CEmit *e, const KStmt *s)
{
	void (*body)(CEmit *, int32_t) = HOOK(e, body, ce_stmts);
	bool open;
	switch (s->kind) {
	case KS_LOOP:
		open = ce_loop_open(e, s);
		body(e, s->body);
		ce_end(e, open);
		return;
	case KS_WHILE:
		open = ce_while_open(e, s);
		body(e, s->body);
		ce_while_end(e, open);
		return;
	case KS_IF:
		open = ce_if_open(e, s);
		body(e, s->body);
		if (s->body2 > 0) {
			ce_else(e);
			body(e, s->body2);
		}
		ce_end(e, open);
		return;
	default: IR_ASSERT(!"ce_control: not a control statement");
	}
}

void ce_set(CEmit *e, int32_t v, int32_t idx, int32_t val)
{
	if (idx >= 0)
		HOOK(e, elem, elem_c)(e, v, idx);
	else
		ce_emit(e, "v%d", v);
	ce_emit(e, " = ");
	ce_ref(e, val);
	ce_emit(e, ";\n");
}

void ce_report(CEmit *e, const KStmt *s)
{
	const CLang *L = e->L;
	COV(cemit_report);
	ce_emit(e, "if (!");
	ce_ref(e, s->a);
	ce_emit(e, ") %srep(%s%d%s, ", L->braces ? "{ " : "", L->err, s->v, L->site);
	ce_ref(e, s->b);
	ce_emit(e, ");%s", L->braces ? " }" : "");
}

/* f16 and bf16 through the program's d2h and d2b (from double: exact for f32 too) */
void ce_store(CEmit *e, const KStmt *s)
{
	Dtype f = e->k->bufs[s->v].fmt;
	if (f == DT_F16 || f == DT_BF16)
		COV(cemit_store_16);
	ce_emit(e, "b%d[", s->v);
	ce_ref(e, s->a);
	ce_emit(e, "] = ");
	switch (f) {
	case DT_F16: ce_emit(e, "d2h((double)"); break;
	case DT_BF16: ce_emit(e, "d2b((double)"); break;
	default: ce_emit(e, "((%s)", e->L->store[f]); break;
	}
	ce_ref(e, s->b);
	ce_emit(e, ");\n");
}

void ce_stmts(CEmit *e, int32_t s)
{
	for (; s > 0 && !e->failed; s = e->k->s[s].next)
		s = e->L->stmt(e, s);
}

/* ------------------------------------------------------------ pairwise trees */

static void tr_decl(CEmit *e, const CTree *t, const char *type, const char *name, int n,
		    const char *init, bool mut)
{
	if (t->decl) {
		t->decl(e, type, name, n, init, mut);
	} else if (n > 0) {
		ce_line(e, "%s %s[%d];", type, name, n);
	} else {
		ce_indent(e);
		ce_emit(e, "%s %s = %s;\n", type, name, init);
	}
}

static const char *tr_vtype(const CEmit *e, const CTree *t, KType terms)
{
	return t->vtype ? t->vtype : e->L->type[terms];
}

void ce_tree_stacks(CEmit *e, const CTree *t)
{
	tr_decl(e, t, t->itype, "tr_lo", t->depth, NULL, true);
	tr_decl(e, t, t->itype, "tr_n", t->depth, NULL, true);
	tr_decl(e, t, t->itype, "tr_ph", t->depth, NULL, true);
	tr_decl(e, t, t->vtype, "tr_v", t->depth, NULL, true);
}

/* tr_<what>[0] = the IR's integer x, converted to the frames' type. */
static void tr_first(CEmit *e, const CTree *t, const char *what, int32_t x)
{
	ce_indent(e);
	ce_emit(e, "tr_%s[0] = %s%s", what, t->icvt ? t->icvt : "", t->icvt ? "(" : "");
	ce_ref(e, x);
	ce_emit(e, "%s;\n", t->icvt ? ")" : "");
}

/* The frame tr_sp = the left (phase 0) or right half of frame tr_f, which enters phase+1. */
static void tr_descend(CEmit *e, const char *i, int phase)
{
	ce_line(e, "} else if (tr_ph[tr_f] == %d%s) {", phase, i);
	ce_line(e, "\ttr_ph[tr_f] = %d%s;", phase + 1, i);
	if (phase == 0) {
		ce_line(e, "\ttr_lo[tr_sp] = tr_lo[tr_f];");
		ce_line(e, "\ttr_n[tr_sp] = tr_n[tr_f] / 2%s;", i);
	} else {
		ce_line(e, "\ttr_lo[tr_sp] = tr_lo[tr_f] + tr_n[tr_f] / 2%s;", i);
		ce_line(e, "\ttr_n[tr_sp] = tr_n[tr_f] - tr_n[tr_f] / 2%s;", i);
	}
	ce_line(e, "\ttr_ph[tr_sp] = 0%s;", i);
	ce_line(e, "\ttr_sp = tr_sp + 1%s;", i);
}

void ce_tree(CEmit *e, const KStmt *s, const CTree *t)
{
	KType terms = (KType)e->k->vars[s->c].type;
	const char *i = t->isfx, *op = s->op == OP_MUL ? "*" : "+";
	const char *r0 = s->fmt == DT_F16 ? "h2f(f2h(" : s->fmt == DT_BF16 ? "b2f(f2b(" : "";
	const char *r1 = *r0 ? "))" : "";
	char one[8], zero[8], last[16], comb[64], real[48];
	snprintf(one, sizeof one, "1%s", i);
	snprintf(zero, sizeof zero, "0%s", i);
	snprintf(last, sizeof last, "tr_sp - 1%s", i);
	snprintf(comb, sizeof comb, "tr_v[tr_vp - 2%s] %s tr_v[tr_vp - 1%s]", i, op, i);
	snprintf(real, sizeof real, "%s%s", t->rpre ? t->rpre : "", tr_vtype(e, t, terms));
	if (!t->shared) {
		CTree own = *t;
		own.vtype = tr_vtype(e, t, terms);
		ce_tree_stacks(e, &own);
	}
	tr_decl(e, t, t->itype, "tr_sp", 0, one, true);
	tr_decl(e, t, t->itype, "tr_vp", 0, zero, true);
	tr_first(e, t, "lo", s->a);
	tr_first(e, t, "n", s->b);
	ce_line(e, "tr_ph[0] = 0%s;", i);
	ce_line(e, "while (tr_sp > 0%s) {", i);
	e->ind++;
	tr_decl(e, t, t->itype, "tr_f", 0, last, false);
	ce_line(e, "if (tr_n[tr_f] == 1%s) {", i);
	ce_indent(e);
	ce_emit(e, "\ttr_v[tr_vp] = ");
	if (t->term)
		t->term(e, s->c, "tr_lo[tr_f]");
	else
		ce_emit(e, "v%d[tr_lo[tr_f]]", s->c);
	ce_emit(e, ";\n");
	ce_line(e, "\ttr_vp = tr_vp + 1%s;", i);
	ce_line(e, "\ttr_sp = tr_sp - 1%s;", i);
	tr_descend(e, i, 0);
	tr_descend(e, i, 1);
	ce_line(e, "} else {");
	e->ind++;
	tr_decl(e, t, real, "tr_r", 0, comb, false);
	e->ind--;
	ce_line(e, "\ttr_v[tr_vp - 2%s] = %str_r%s;", i, r0, r1);
	ce_line(e, "\ttr_vp = tr_vp - 1%s;", i);
	ce_line(e, "\ttr_sp = tr_sp - 1%s;", i);
	ce_line(e, "}");
	e->ind--;
	ce_line(e, "}");
	if (!t->keep)
		ce_line(e, "v%d = tr_v[0];", s->v);
}

/* ------------------------------------------------------------ programs */

const char *ce_kernel_name(const Kernels *k, int i)
{
	return k->g->tensors[k->g->defs[k->k[i].def].out[0]].name;
}

uint8_t *ce_launch_use(const Kernels *k, int i, int n)
{
	uint8_t *use = ce_buffer_use(k, k->k[i].body);
	for (int j = i + 1; j < i + n; j++) {
		uint8_t *u = ce_buffer_use(k, k->k[j].body);
		for (int b = 0; b < k->nbufs; b++)
			use[b] |= u[b];
		free(u);
	}
	return use;
}

void ce_launch_about(CEmit *e, int i, int n, const char *per, int wg)
{
	ce_indent(e);
	ce_emit(e, "/* %s", ce_kernel_name(e->k, i));
	for (int j = i + 1; j < i + n; j++)
		ce_emit(e, ", %s", ce_kernel_name(e->k, j));
	ce_emit(e, ": one launch, a %s per row (%d kernels fused, map/fuse.c)", per, n);
	if (wg > 0)
		ce_emit(e, ", %d threads a block", wg);
	ce_emit(e, " */\n");
}

void ce_tiles(CEmit *e, const Kernel *kn, const CTiles *f)
{
	int grid = 0;
	for (int p = 0; p < kn->npar; p++)
		grid += kn->par[p].extent > kn->par[p].tile;
	if (grid >= 2)
		COV(cemit_tile_grid);
	for (int p = kn->npar - 1; p >= 0; p--) {
		const KPar *P = &kn->par[p];
		long long nt = (P->extent + P->tile - 1) / P->tile;
		if (nt == 1) {
			ce_line(e, f->one, P->origin);
			continue;
		}
		ce_line(e, f->first, P->origin, nt, (long long)P->tile);
		ce_line(e, f->next, nt);
	}
}

static void use_expr(const Kernels *k, int32_t id, uint8_t *use)
{
	if (id < 0)
		return;
	const KExpr *x = &k->x[id];
	if (x->kind == KX_LOAD)
		use[x->v] |= 1;
	for (int i = 0; i < 4; i++)
		use_expr(k, x->a[i], use);
}

static void use_stmts(const Kernels *k, int32_t s, uint8_t *use)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		use_expr(k, t->a, use);
		use_expr(k, t->b, use);
		if (t->kind == KS_STORE)
			use[t->v] |= 2;
		use_stmts(k, t->body, use);
		use_stmts(k, t->body2, use);
	}
}

uint8_t *ce_buffer_use(const Kernels *k, int32_t body)
{
	uint8_t *use = calloc((size_t)k->nbufs + 1, 1);
	IR_ASSERT(use);
	use_stmts(k, body, use);
	return use;
}

void ce_schedule(CEmit *e, const char *head, const char *lead)
{
	char *sch = sched_text(e->k->g, &e->k->sched);
	if (sch[0] && head)
		ce_line(e, "%s", head);
	for (char *p = sch, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		IR_ASSERT(nl);   /* sched_text ends every line */
		ce_line(e, "%s%.*s", lead, (int)(nl - p), p);
	}
	free(sch);
}

void ce_about(CEmit *e, const char *lead)
{
	const Kernels *k = e->k;
	const Graph *g = k->g;
	char head[16], sub[16];
	snprintf(head, sizeof head, "%s Schedule:", lead);
	snprintf(sub, sizeof sub, "%s   ", lead);
	ce_schedule(e, head, sub);
	if (k->faults)
		ce_line(e, "%s SEEDED FAULTS 0x%llx: this program is wrong on purpose.", lead,
			(unsigned long long)k->faults);
	ce_line(e, "%s Buffers:", lead);
	for (int b = 0; b < k->nbufs; b++)
		ce_line(e, "%s   b%d  %s : %s[%lld]%s", lead, b, g->tensors[k->bufs[b].tensor].name,
			dt_name(k->bufs[b].fmt), (long long)k->bufs[b].n, k->bufs[b].input ? " (input)" : "");
}
