/* compiler/parse.c: the `.tg` parser (graph-format.md sections 1-5 and the syntax of the
 * schedule block of section 7). Recursive descent over the lexer's token array, building
 * the graph through ir.c's hash-consing constructors.
 *
 * Names are resolved as they are read: a definition sees only the sizes and tensors above
 * it, so a graph is a DAG in file order by construction. The checker (check.c) runs on each
 * statement as soon as it is complete, with the positions of this statement's occurrences
 * of shared nodes (ck_note), so the first error reported is the first in the file. Errors
 * unwind with longjmp to ir_parse, which frees the graph; nothing else is allocated outside
 * the graph while parsing except the token array and the Parser itself, both freed there.
 *
 * Decisions the spec leaves open (see the report in docs): `graph size input output
 * schedule` are reserved words; unary minus on an integer literal folds into a negative
 * literal; `output` may name a definition further down; integer literals must fit in 32
 * bits; `?? D` chains to the right (`x[i] ?? y[i] ?? 0`).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lex.h"

typedef enum { M_VALUE, M_INDEX } Mode;

typedef struct {
	int tok;   /* the name's token */
	Dtype dt;
} PendingOut;

typedef struct {
	Graph *g;
	Diag *d;
	Checker *ck;
	const char *file;           /* arena-owned: outlives the parse */
	const char *src;
	size_t len;
	Token *t;
	int nt, p;
	jmp_buf jb;
	int nest;
	int nstmt;                  /* statements completed */
	int stmt;                   /* token index where the current statement starts */
	Def *def;                   /* the definition being parsed, or NULL */
	int nvis;                   /* index variables 0 .. nvis-1 are in scope */
	const char *right[IR_MAXRED + 1];  /* reduction indices not yet in scope */
	int nright;
	const char *ranging;        /* the reduction index whose range is being parsed */
	const SizeOverride *ov;
	int nov;
	bool *ovused;
	PendingOut *outs;
	int nouts, capouts;
	Directive *dirs;
	int ndirs, capdirs;
	char desc[64];
} Parser;

static _Noreturn void vfail(Parser *P, SrcPos pos, const char *fmt, va_list ap)
{
	char buf[512];
	vsnprintf(buf, sizeof buf, fmt, ap);
	diag_at(P->d, pos, P->src, P->len, "%s", buf);
	longjmp(P->jb, 1);
}

static SrcPos tpos(const Parser *P, const Token *t)
{
	return (SrcPos){P->file, t->line, t->col};
}

static _Noreturn void fail(Parser *P, const Token *t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static _Noreturn void fail(Parser *P, const Token *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(P, tpos(P, t), fmt, ap);
}

static void check(Parser *P, int rc)
{
	if (rc < 0)
		longjmp(P->jb, 1);
}

/* ------------------------------------------------------------------ tokens */

static const Token *cur(const Parser *P) { return &P->t[P->p]; }

static const Token *peek(const Parser *P, int k)
{
	int i = P->p + k;
	return &P->t[i < P->nt ? i : P->nt - 1];
}

static bool at(const Parser *P, TokKind k) { return cur(P)->kind == k; }

static const Token *next(Parser *P)
{
	const Token *t = cur(P);
	if (t->kind != T_EOF)
		P->p++;
	return t;
}

static bool accept(Parser *P, TokKind k)
{
	if (!at(P, k))
		return false;
	next(P);
	return true;
}

static const char *describe(Parser *P, const Token *t)
{
	if (t->kind == T_NAME || t->kind == T_INT || t->kind == T_NUM) {
		int n = t->len > 40 ? 40 : (int)t->len;
		snprintf(P->desc, sizeof P->desc, "'%.*s'", n, P->src + t->off);
		return P->desc;
	}
	return tok_describe((TokKind)t->kind);
}

static const Token *expect(Parser *P, TokKind k, const char *what)
{
	if (!at(P, k))
		fail(P, cur(P), "expected %s, found %s", what ? what : tok_describe(k),
		     describe(P, cur(P)));
	return next(P);
}

static bool is_word(const Parser *P, const Token *t, const char *w)
{
	return t->kind == T_NAME && t->len == strlen(w) && memcmp(P->src + t->off, w, t->len) == 0;
}

static bool same_text(const Parser *P, const Token *a, const Token *b)
{
	return a->len == b->len && memcmp(P->src + a->off, P->src + b->off, a->len) == 0;
}

/* The text of a name token, NUL-terminated, in buf (LEX_MAXNAME + 1 bytes). */
static char *text(const Parser *P, const Token *t, char *buf)
{
	memcpy(buf, P->src + t->off, t->len);
	buf[t->len] = 0;
	return buf;
}

static char *name_dup(Parser *P, const Token *t)
{
	return ir_strdup(P->g, P->src + t->off, t->len);
}

static void end_statement(Parser *P)
{
	if (!accept(P, T_NL) && !at(P, T_EOF))
		fail(P, cur(P), "expected end of line, found %s", describe(P, cur(P)));
	P->nstmt++;
}

static const char *const reserved[] = {"graph", "size", "input", "output", "schedule"};

/* A name being declared: not a reserved word, not a size or tensor already. */
static const Token *new_name(Parser *P, const char *what)
{
	const Token *t = expect(P, T_NAME, what);
	for (size_t k = 0; k < ARRAY_LEN(reserved); k++)
		if (is_word(P, t, reserved[k]))
			fail(P, t, "'%s' is a reserved word", reserved[k]);
	char buf[LEX_MAXNAME + 1];
	check(P, ck_name_free(P->ck, text(P, t, buf), tpos(P, t)));
	return t;
}

/* ------------------------------------------------------------ lookahead */

/* Index of the token after the bracket that opens at token i, or -1. */
static int skip_brackets(const Parser *P, int i)
{
	int depth = 0;
	for (; i < P->nt; i++) {
		TokKind k = (TokKind)P->t[i].kind;
		if (k == T_LBRACK || k == T_LPAREN)
			depth++;
		else if (k == T_RBRACK || k == T_RPAREN) {
			if (--depth == 0)
				return i + 1;
		} else if (k == T_NL || k == T_EOF)
			return -1;
	}
	return -1;
}

/* Does token i start a statement that declares the name it holds? */
static bool declares(const Parser *P, int i)
{
	const Token *t = P->t;
	bool start = i == 0 || t[i - 1].kind == T_NL;
	if (i >= 1 && is_word(P, &t[i - 1], "input") && (i == 1 || t[i - 2].kind == T_NL))
		return true;
	if (i + 1 >= P->nt || t[i + 1].kind != T_LBRACK)
		return false;
	int j = skip_brackets(P, i + 1);
	if (j < 0)
		return false;
	if (start)
		return t[j].kind == T_ASSIGN || t[j].kind == T_COMMA;
	/* the second result of topk: `v[...], NAME[...] =` */
	return i >= 2 && t[i - 1].kind == T_COMMA && t[i - 2].kind == T_RBRACK &&
	       t[j].kind == T_ASSIGN;
}

/* An unknown name: explains it if the file declares it further down. */
static _Noreturn void unknown(Parser *P, const Token *t)
{
	for (int i = P->stmt; i < P->nt; i++)
		if (P->t[i].kind == T_NAME && same_text(P, &P->t[i], t) && declares(P, i)) {
			if (i < P->p)
				fail(P, t, "'%.*s' is read in its own definition", (int)t->len, P->src + t->off);
			fail(P, t, "'%.*s' is read before its definition at line %d", (int)t->len,
			     P->src + t->off, P->t[i].line);
		}
	fail(P, t, "unknown name '%.*s'", (int)t->len, P->src + t->off);
}

/* ------------------------------------------------------------ expressions */

static Ref expr(Parser *P, Mode m);
static Ref unary(Parser *P, Mode m);

static Ref note(Parser *P, Ref r, const Token *t)
{
	SrcPos pos = tpos(P, t);
	ir_setpos(P->g, r, pos);
	ck_note(P->ck, r, pos);
	return r;
}

static Ref mkop(Parser *P, Op op, Ref a, Ref b, Ref c, const Token *t)
{
	return note(P, ir_op(P->g, op, ck_op_type(P->g, op, a, b, c), a, b, c), t);
}

/* An integer literal t; neg: the '-' token just before it, folded into the literal. */
static Ref int_lit(Parser *P, const Token *t, const Token *neg)
{
	const Token *at = neg ? neg : t;
	if (t->ival > 2147483647 + (int64_t)(neg != NULL))
		fail(P, at, "integer literal %s%.*s does not fit in 32 bits", neg ? "-" : "",
		     (int)(t->len > 40 ? 40 : t->len), P->src + t->off);
	return note(P, ir_int(P->g, neg ? -t->ival : t->ival), at);
}

/* The size or tensor called name (kind SYM_SIZE or SYM_TENSOR), or -1. */
static int lookup(const Parser *P, const char *name, SymKind want)
{
	SymKind k;
	int id = ck_find(P->ck, name, &k);
	return id >= 0 && k == want ? id : -1;
}

static const char *var_name(const Parser *P, int v)
{
	const Def *D = P->def;
	return v < D->nlhs ? D->lhs[v].name : D->red[v - D->nlhs].name;
}

/* A name used as a value: an index variable or a size. */
static Ref name_value(Parser *P, const Token *t)
{
	char buf[LEX_MAXNAME + 1];
	text(P, t, buf);
	for (int v = 0; P->def && v < P->nvis; v++)
		if (strcmp(var_name(P, v), buf) == 0)
			return note(P, ir_var(P->g, (uint32_t)v, TY_INT), t);
	for (int k = 0; k < P->nright; k++)
		if (strcmp(P->right[k], buf) == 0) {
			if (strcmp(buf, P->ranging) == 0)
				fail(P, t, "the range of '%s' uses '%s' itself", P->ranging, buf);
			fail(P, t, "the range of '%s' uses '%s', an index declared to its right",
			     P->ranging, buf);
		}
	int s = lookup(P, buf, SYM_SIZE);
	if (s >= 0)
		return note(P, ir_size(P->g, (uint32_t)s), t);
	if (lookup(P, buf, SYM_TENSOR) >= 0)
		fail(P, t, "'%s' is a tensor: read it with %s[...]", buf, buf);
	unknown(P, t);
}

static Ref pad(Parser *P);

static Ref read(Parser *P, const Token *t)
{
	char buf[LEX_MAXNAME + 1];
	text(P, t, buf);
	int tensor = lookup(P, buf, SYM_TENSOR);
	if (tensor < 0) {
		bool var = false;
		for (int v = 0; P->def && v < P->nvis; v++)
			var |= strcmp(var_name(P, v), buf) == 0;
		if (var || lookup(P, buf, SYM_SIZE) >= 0)
			fail(P, t, "'%s' is not a tensor", buf);
		unknown(P, t);
	}
	Ref idx[IR_MAXRANK * 8];
	uint32_t n = 0;
	expect(P, T_LBRACK, NULL);
	if (!accept(P, T_RBRACK)) {
		do {
			if (n == ARRAY_LEN(idx))
				fail(P, cur(P), "too many indices");
			idx[n++] = expr(P, M_INDEX);
		} while (accept(P, T_COMMA));
		expect(P, T_RBRACK, "',' or ']'");
	}
	Ref pd = REF_NONE;
	if (accept(P, T_QQ))
		pd = pad(P);
	Ref r = ir_read(P->g, (uint32_t)tensor, idx, n, pd, ck_read_type(P->g, tensor, pd));
	return note(P, r, t);
}

static Ref call(Parser *P, const Token *t)
{
	if (peek(P, 1)->kind == T_NAME && peek(P, 2)->kind == T_COLON &&
	    monoid_parse(P->src + t->off, t->len) != MO_NONE)
		fail(P, t, "a reduction must be the whole body of a definition: define it and read it");
	expect(P, T_LPAREN, NULL);
	Ref a[3] = {0, 0, 0};
	int n = 0;
	if (!at(P, T_RPAREN)) {
		do {
			if (n == 3)
				fail(P, cur(P), "too many arguments");
			a[n++] = expr(P, M_VALUE);
		} while (accept(P, T_COMMA));
	}
	expect(P, T_RPAREN, "',' or ')'");
	int op = op_lookup_call(P->src + t->off, t->len, n);
	if (op < 0) {
		for (int k = 1; k <= 3; k++)
			if (op_lookup_call(P->src + t->off, t->len, k) >= 0)
				fail(P, t, "'%.*s' takes %d argument%s, not %d", (int)t->len,
				     P->src + t->off, k, k > 1 ? "s" : "", n);
		fail(P, t, "unknown function '%.*s'", (int)t->len, P->src + t->off);
	}
	return mkop(P, (Op)op, a[0], a[1], a[2], t);
}

static Ref primary(Parser *P, Mode m)
{
	const Token *t = next(P);
	switch (t->kind) {
	case T_INT:
		return int_lit(P, t, NULL);
	case T_NUM:
		return note(P, ir_num(P->g, P->src + t->off, t->len), t);
	case T_LPAREN: {
		Ref r = expr(P, m);
		if (!at(P, T_RPAREN))
			fail(P, cur(P), "expected ')' to close '(' at %d:%d, found %s", t->line, t->col,
			     describe(P, cur(P)));
		next(P);
		return r;
	}
	case T_NAME:
		if (at(P, T_LPAREN))
			return call(P, t);
		if (at(P, T_LBRACK))
			return read(P, t);
		return name_value(P, t);
	default:
		fail(P, t, "expected an expression, found %s", describe(P, t));
	}
}

/* `?? DEFAULT`: a literal with an optional '-', or one primary. */
static Ref pad(Parser *P)
{
	const Token *t = cur(P), *l = peek(P, 1);
	if (t->kind == T_MINUS && l->kind == T_INT) {
		P->p += 2;
		return int_lit(P, l, t);
	}
	if (t->kind == T_MINUS && l->kind == T_NUM) {
		P->p += 2;
		Ref r = note(P, ir_num(P->g, P->src + l->off, l->len), l);
		return mkop(P, OP_NEG, r, 0, 0, t);
	}
	if (t->kind == T_MINUS)
		fail(P, t, "'?\?' takes one primary: a literal (with an optional '-'), a read, a call "
		     "or a parenthesised expression");
	if (++P->nest > FE_MAXNEST)   /* `?? x[i] ?? x[i] ...` recurses through here */
		fail(P, t, "expression nested too deeply");
	Ref r = primary(P, M_VALUE);
	P->nest--;
	return r;
}

static Ref unary(Parser *P, Mode m)
{
	const Token *t = cur(P);
	if (++P->nest > FE_MAXNEST)
		fail(P, t, "expression nested too deeply");
	Ref r;
	if (t->kind == T_MINUS && peek(P, 1)->kind == T_INT) {
		P->p += 2;
		r = int_lit(P, peek(P, -1), t);
	} else if (t->kind == T_MINUS || t->kind == T_NOT) {
		next(P);
		Ref a = unary(P, m);
		r = mkop(P, t->kind == T_MINUS ? OP_NEG : OP_NOT, a, 0, 0, t);
	} else {
		r = primary(P, m);
	}
	if (at(P, T_QQ))
		fail(P, cur(P), "'?\?' must follow a read");
	P->nest--;
	return r;
}

/* Binary operators by precedence level (2: || ... 6: * / %). */
static int binop(TokKind k, Mode m, Op *op)
{
	switch (k) {
	case T_OR: *op = OP_OR; return 2;
	case T_AND: *op = OP_AND; return 3;
	case T_EQ: *op = OP_EQ; return 4;
	case T_NE: *op = OP_NE; return 4;
	case T_LT: *op = OP_LT; return 4;
	case T_LE: *op = OP_LE; return 4;
	case T_GT: *op = OP_GT; return 4;
	case T_GE: *op = OP_GE; return 4;
	case T_PLUS: *op = OP_ADD; return 5;
	case T_MINUS: *op = OP_SUB; return 5;
	case T_STAR: *op = OP_MUL; return 6;
	case T_SLASH: *op = m == M_INDEX ? OP_IDIV : OP_DIV; return 6;
	case T_PERCENT: *op = OP_MOD; return 6;
	default: return 0;
	}
}

/* Left-associative binary operators of precedence >= level. */
static Ref binary(Parser *P, Mode m, int level)
{
	if (level > 6)
		return unary(P, m);
	Ref l = binary(P, m, level + 1);
	Op op = OP_ADD;
	for (int n = 0; binop((TokKind)cur(P)->kind, m, &op) == level; n++) {
		const Token *t = next(P);
		if (n == FE_MAXDEPTH)   /* a long chain is a deep tree: stop before building it all */
			fail(P, t, "expression nested too deeply (more than %d levels)", FE_MAXDEPTH);
		Ref r = binary(P, m, level + 1);
		l = mkop(P, op, l, r, 0, t);
	}
	return l;
}

static Ref expr(Parser *P, Mode m)
{
	if (++P->nest > FE_MAXNEST)
		fail(P, cur(P), "expression nested too deeply");
	Ref c = binary(P, m, 2);
	if (at(P, T_QUEST)) {
		const Token *q = next(P);
		Ref a = expr(P, m);
		expect(P, T_COLON, "':' of '?:'");
		Ref b = expr(P, m);
		c = mkop(P, OP_SELECT, c, a, b, q);
	}
	P->nest--;
	return c;
}

/* ------------------------------------------------------------ statements */

static Extent extent(Parser *P)
{
	const Token *t = next(P);
	char buf[LEX_MAXNAME + 1];
	if (t->kind == T_INT) {
		if (t->ival < 1 || t->big)
			fail(P, t, "an extent must be an integer from 1 to 2147483647");
		return (Extent){-1, t->ival};
	}
	if (t->kind != T_NAME)
		fail(P, t, "expected an extent (a size name or a positive integer), found %s",
		     describe(P, t));
	int s = lookup(P, text(P, t, buf), SYM_SIZE);
	if (s < 0) {
		if (lookup(P, buf, SYM_TENSOR) >= 0)
			fail(P, t, "'%s' is a tensor, not a size", buf);
		fail(P, t, "unknown size '%s'", buf);
	}
	return (Extent){s, P->g->sizes[s].value};
}

static Dtype format(Parser *P, bool graph)
{
	const Token *t = expect(P, T_NAME, "a format");
	Dtype dt = dt_parse(P->src + t->off, t->len);
	if (dt == DT_NONE)
		fail(P, t, "unknown format %s", describe(P, t));
	if (graph && !dt_info(dt)->in_graph)
		fail(P, t, "'%s' is not a graph format (f64, f32, f16, bf16 or i32); it may appear "
		     "only in schedules", dt_name(dt));
	return dt;
}

static void size_stmt(Parser *P)
{
	do {
		const Token *t = new_name(P, "a size name");
		expect(P, T_ASSIGN, "'='");
		const Token *v = expect(P, T_INT, "an integer");
		char buf[LEX_MAXNAME + 1];
		text(P, t, buf);
		int64_t val = v->ival;
		for (int k = 0; k < P->nov; k++)
			if (P->ov[k].name && strcmp(P->ov[k].name, buf) == 0) {
				val = P->ov[k].value;
				P->ovused[k] = true;
			}
		int s = ir_add_size(P->g, buf, val, tpos(P, t));
		check(P, ck_size(P->ck, s));
	} while (accept(P, T_COMMA));
	end_statement(P);
}

static void input_stmt(Parser *P)
{
	Tensor T = {0};
	const Token *t = new_name(P, "a tensor name");
	T.name = name_dup(P, t);
	T.pos = tpos(P, t);
	T.kind = TK_INPUT;
	T.def = -1;
	expect(P, T_COLON, "':'");
	T.dtype = (int8_t)format(P, true);
	expect(P, T_LBRACK, "'['");
	if (!accept(P, T_RBRACK)) {
		do {
			if (T.rank == IR_MAXRANK)
				fail(P, cur(P), "a tensor has at most %d dimensions", IR_MAXRANK);
			T.dims[T.rank++] = extent(P);
		} while (accept(P, T_COMMA));
		expect(P, T_RBRACK, "',' or ']'");
	}
	end_statement(P);
	check(P, ck_tensor(P->ck, ir_add_tensor(P->g, &T)));
}

static void output_stmt(Parser *P)
{
	do {
		const Token *t = expect(P, T_NAME, "a tensor name");
		Dtype dt = DT_F32;
		if (accept(P, T_COLON))
			dt = format(P, true);
		if (P->nouts == P->capouts) {
			P->capouts = P->capouts ? 2 * P->capouts : 8;
			PendingOut *o = realloc(P->outs, (size_t)P->capouts * sizeof *o);
			IR_ASSERT(o);
			P->outs = o;
		}
		P->outs[P->nouts++] = (PendingOut){(int)(t - P->t), dt};
	} while (accept(P, T_COMMA));
	end_statement(P);
}


/* --------------------------------------------------------- definitions */

/* `NAME[i:E, ...]`: a left-hand side. The second result of topk must repeat the first's
 * indices and extents (one Def holds both). */
static const Token *lhs(Parser *P, Def *D, Extent *dims, bool second)
{
	const Token *t = new_name(P, "a definition name");
	char buf[LEX_MAXNAME + 1];
	int k = 0;
	expect(P, T_LBRACK, "'['");
	if (!accept(P, T_RBRACK)) {
		do {
			if (k == IR_MAXRANK)
				fail(P, cur(P), "a tensor has at most %d dimensions", IR_MAXRANK);
			const Token *it = second ? expect(P, T_NAME, "an index name")
						 : new_name(P, "an index name");
			text(P, it, buf);
			if (second && (k >= D->nlhs || strcmp(D->lhs[k].name, buf) != 0))
				fail(P, it, "the second result of topk must have the same left-hand "
				     "indices as the first");
			for (int j = 0; !second && j < k; j++)
				if (strcmp(D->lhs[j].name, buf) == 0)
					fail(P, it, "index '%s' is declared twice", buf);
			expect(P, T_COLON, "':'");
			const Token *et = cur(P);
			dims[k] = extent(P);
			if (second && (dims[k].size != D->lhs[k].ext.size ||
				       dims[k].value != D->lhs[k].ext.value))
				fail(P, et, "the second result of topk must have the same left-hand "
				     "extents as the first");
			if (!second)
				D->lhs[k] = (LhsIndex){ir_strdup(P->g, buf, strlen(buf)), dims[k], tpos(P, it)};
			k++;
		} while (accept(P, T_COMMA));
		expect(P, T_RBRACK, "',' or ']'");
	}
	if (!second)
		D->nlhs = k;
	else if (k != D->nlhs)
		fail(P, t, "the second result of topk must have the same left-hand indices as the first");
	return t;
}

/* The names of a reduction's indices, found ahead so that a range naming an index to its
 * right gets a message saying so. */
static void scan_reduction_names(Parser *P)
{
	int depth = 0;
	bool start = true;
	P->nright = 0;
	for (int i = P->p; i + 1 < P->nt; i++) {
		TokKind k = (TokKind)P->t[i].kind;
		if (k == T_NL || k == T_EOF)
			break;
		if (k == T_LPAREN || k == T_LBRACK) {
			depth++;
		} else if (k == T_RPAREN || k == T_RBRACK) {
			if (depth-- == 0)
				break;
		} else if (depth == 0 && k == T_COMMA) {
			start = true;
			continue;
		} else if (start && depth == 0 && k == T_NAME && P->t[i + 1].kind == T_COLON &&
			   P->nright < (int)ARRAY_LEN(P->right)) {
			P->right[P->nright++] = name_dup(P, &P->t[i]);
		}
		start = false;
	}
}

/* One reduction index `j:E` or `j: LO..HI`. */
static void red_index(Parser *P, Def *D, int r)
{
	char buf[LEX_MAXNAME + 1];
	if (r == IR_MAXRED)
		fail(P, cur(P), "a reduction has at most %d indices", IR_MAXRED);
	const Token *it = new_name(P, "a reduction index");
	text(P, it, buf);
	for (int v = 0; v < D->nlhs + r; v++)
		if (strcmp(var_name(P, v), buf) == 0)
			fail(P, it, "index '%s' is declared twice", buf);
	RedIndex *R = &D->red[r];
	R->name = name_dup(P, it);
	R->pos = tpos(P, it);
	expect(P, T_COLON, "':'");
	P->ranging = R->name;
	const Token *s = cur(P);
	int p0 = P->p;
	Ref e = expr(P, M_INDEX);
	if (accept(P, T_DOTDOT)) {
		R->lo = e;
		R->hi = expr(P, M_INDEX);
	} else {
		NodeKind k = (NodeKind)ir_node(P->g, e)->kind;
		if (P->p != p0 + 1 || (k != NK_INT && k != NK_SIZE))
			fail(P, s, "a reduction range is an extent (a size name or a positive integer) "
			     "or LO..HI");
		if (k == NK_INT && s->ival < 1)
			fail(P, s, "an extent must be an integer from 1 to 2147483647");
		R->lo = note(P, ir_int(P->g, 0), it);
		R->hi = e;
		R->full = true;
	}
	D->nred = r + 1;
	P->nvis = D->nlhs + r + 1;
	for (int k = 0; k < P->nright; k++)
		if (strcmp(P->right[k], R->name) == 0) {
			memmove(&P->right[k], &P->right[k + 1], (size_t)(P->nright - k - 1) * sizeof(char *));
			P->nright--;
			break;
		}
}

/* `MONOID(j:E, k: LO..HI)`, the monoid's name already read. */
static void reduction(Parser *P, Def *D)
{
	expect(P, T_LPAREN, NULL);
	scan_reduction_names(P);
	int r = 0;
	do
		red_index(P, D, r++);
	while (accept(P, T_COMMA));
	P->nright = 0;
	P->ranging = NULL;
	expect(P, T_RPAREN, "',' or ')'");
}

static void def_stmt(Parser *P)
{
	Def D;
	memset(&D, 0, sizeof D);
	Extent dims0[IR_MAXRANK], dims1[IR_MAXRANK];
	ck_begin(P->ck);
	P->def = &D;
	P->nvis = 0;
	const Token *n0 = lhs(P, &D, dims0, false), *n1 = NULL;
	if (accept(P, T_COMMA)) {
		n1 = lhs(P, &D, dims1, true);
		if (same_text(P, n0, n1))
			fail(P, n1, "the two results of topk need different names");
	}
	expect(P, T_ASSIGN, "'='");
	P->nvis = D.nlhs;
	const Token *b = cur(P);
	if (b->kind == T_NAME && peek(P, 1)->kind == T_LPAREN && peek(P, 2)->kind == T_NAME &&
	    peek(P, 3)->kind == T_COLON) {
		D.monoid = monoid_parse(P->src + b->off, b->len);
		if (D.monoid == MO_NONE)
			fail(P, b, "unknown reduction %s (sum, prod, max, min, logsumexp, argmax, "
			     "argmin or topk)", describe(P, b));
		next(P);
		reduction(P, &D);
	}
	if (n1 && D.monoid != MO_TOPK)
		fail(P, n1, "only topk has two results");
	if (!n1 && D.monoid == MO_TOPK)
		fail(P, b, "topk has two results: write v[...], i[...] = topk(...) ...");
	D.body = expr(P, M_VALUE);
	end_statement(P);

	int id = P->g->ndefs;
	D.pos = tpos(P, n0);
	D.ty = ck_def_type(P->g, &D);
	D.nout = n1 ? 2 : 1;
	Tensor T = {0};
	T.name = name_dup(P, n0);
	T.pos = tpos(P, n0);
	T.kind = TK_DEF;
	T.dtype = D.ty == TY_INT ? DT_I32 : DT_F64;
	T.rank = D.nlhs;
	memcpy(T.dims, dims0, sizeof dims0);
	T.def = id;
	D.out[0] = ir_add_tensor(P->g, &T);
	if (n1) {
		T.name = name_dup(P, n1);
		T.pos = tpos(P, n1);
		T.dtype = DT_I32;
		memcpy(T.dims, dims1, sizeof dims1);
		T.result = 1;
		D.out[1] = ir_add_tensor(P->g, &T);
	}
	ir_add_def(P->g, &D);
	P->def = NULL;
	check(P, ck_def(P->ck, id));
}

/* ------------------------------------------------------------- schedules */

static void dir_args(Parser *P, Directive *D)
{
	DirArg a[IR_MAXVARS];
	int n = 0;
	expect(P, T_COLON, "':'");
	do {
		if (n == IR_MAXVARS)
			fail(P, cur(P), "too many indices");
		const Token *t = expect(P, T_NAME, "an index name");
		expect(P, T_ASSIGN, "'='");
		const Token *v = expect(P, T_INT, "a positive integer");
		if (v->ival < 1 || v->big)
			fail(P, v, "%s must be an integer from 1 to 2147483647",
			     D->kind == SD_TILE ? "a tile size" : D->kind == SD_MMA ? "an mma tile"
			     : "a split factor");
		a[n++] = (DirArg){name_dup(P, t), v->ival, tpos(P, t)};
	} while (accept(P, T_COMMA));
	D->args = ir_alloc(P->g, (size_t)n * sizeof *a);
	memcpy(D->args, a, (size_t)n * sizeof *a);
	D->nargs = n;
}

/* `online d1, d2, ...`: every member in args (value 0), d1 (token t) first. */
static void online_args(Parser *P, Directive *D, const Token *t)
{
	DirArg a[IR_MAXVARS];
	int n = 0;
	a[n++] = (DirArg){D->target, 0, tpos(P, t)};
	while (accept(P, T_COMMA)) {
		if (n == IR_MAXVARS)
			fail(P, cur(P), "too many definitions in one online set");
		const Token *u = expect(P, T_NAME, "a definition name");
		a[n++] = (DirArg){name_dup(P, u), 0, tpos(P, u)};
	}
	D->args = ir_alloc(P->g, (size_t)n * sizeof *a);
	memcpy(D->args, a, (size_t)n * sizeof *a);
	D->nargs = n;
}

static void directive(Parser *P)
{
	const Token *k = expect(P, T_NAME, "a directive");
	int kind = -1;
	for (int i = 0; i < SD__COUNT; i++)
		if (is_word(P, k, fe_dir_name((DirKind)i)))
			kind = i;
	if (kind < 0)
		fail(P, k, "unknown directive %s (store, accum, inline, tile, split, order, online or "
		     "mma)",
		     describe(P, k));
	Directive D = {.kind = (uint8_t)kind, .def = -1, .fmt = DT_F32, .order = ORDER_LINEAR};
	const Token *t = expect(P, T_NAME, "a definition name");
	D.target = name_dup(P, t);
	D.pos = tpos(P, t);
	if (kind == SD_ONLINE) {
		online_args(P, &D, t);
	} else if (kind == SD_STORE || kind == SD_ACCUM) {
		if (accept(P, T_COLON))
			D.fmt = format(P, false);
	} else if (kind == SD_TILE || kind == SD_SPLIT) {
		dir_args(P, &D);
	} else if (kind == SD_MMA) {
		if (at(P, T_COLON))
			dir_args(P, &D);
	} else if (kind == SD_ORDER) {
		expect(P, T_COLON, "':'");
		const Token *o = expect(P, T_NAME, "linear, pairwise or any");
		int ord = -1;
		for (int i = 0; i < ORDER__COUNT && ord < 0; i++)
			if (is_word(P, o, order_name((Order)i)))
				ord = i;
		if (ord < 0)
			fail(P, o, "unknown order %s (linear, pairwise or any)", describe(P, o));
		D.order = (Order)ord;
	}
	end_statement(P);
	if (P->ndirs == P->capdirs) {
		P->capdirs = P->capdirs ? 2 * P->capdirs : 8;
		Directive *n = realloc(P->dirs, (size_t)P->capdirs * sizeof *n);
		IR_ASSERT(n);
		P->dirs = n;
	}
	P->dirs[P->ndirs++] = D;
}

static void directives(Parser *P)
{
	while (!at(P, T_EOF))
		if (!accept(P, T_NL))
			directive(P);
}

/* ------------------------------------------------------------- the graph */

static void statement(Parser *P)
{
	const Token *t = cur(P), *n1 = peek(P, 1);
	P->stmt = P->p;
	if (t->kind != T_NAME)
		fail(P, t, "expected a statement, found %s", describe(P, t));
	if (n1->kind == T_LBRACK) {
		def_stmt(P);
	} else if (is_word(P, t, "graph")) {
		if (P->nstmt > 0)
			fail(P, t, "'graph' must be the first statement");
		next(P);
		P->g->name = name_dup(P, expect(P, T_NAME, "the graph's name"));
		end_statement(P);
	} else if (is_word(P, t, "size")) {
		next(P);
		size_stmt(P);
	} else if (is_word(P, t, "input")) {
		next(P);
		input_stmt(P);
	} else if (is_word(P, t, "output")) {
		next(P);
		output_stmt(P);
	} else if (is_word(P, t, "schedule")) {
		next(P);
		end_statement(P);
		P->g->has_schedule = true;
		directives(P);
	} else {
		fail(P, t, "expected a statement (graph, size, input, output, schedule or "
		     "NAME[...] = ...), found %s", describe(P, t));
	}
}

static void finish(Parser *P)
{
	Graph *g = P->g;
	char buf[LEX_MAXNAME + 1];
	for (int k = 0; k < P->nov; k++)
		if (!P->ovused[k]) {
			diag_set(P->d, 2, "--size %s=%lld: the graph has no size named '%s'",
				 P->ov[k].name, (long long)P->ov[k].value, P->ov[k].name);
			longjmp(P->jb, 1);
		}
	for (int k = 0; k < P->nouts; k++) {
		const Token *t = &P->t[P->outs[k].tok];
		int tensor = lookup(P, text(P, t, buf), SYM_TENSOR);
		if (tensor < 0)
			fail(P, t, "unknown name '%s'", buf);
		ir_add_output(g, tensor, P->outs[k].dt, tpos(P, t));
	}
	check(P, ck_outputs(P->ck));
	check(P, ck_unused(P->ck));
	g->dirs = P->dirs;
	g->ndirs = P->ndirs;
	P->dirs = NULL;
	if (g->has_schedule)
		check(P, ck_schedule(P->ck, P->file, P->src, P->len));
}

static void parser_free(Parser *P)
{
	if (P->ck)
		ck_free(P->ck);
	free(P->t);
	free(P->ovused);
	free(P->outs);
	free(P->dirs);
	free(P);
}

Graph *ir_parse(const char *src, size_t len, const char *file,
		const SizeOverride *ov, int nov, Diag *d)
{
	for (int k = 0; k < nov; k++)
		if (!ov[k].name || ov[k].value < 1 || ov[k].value > 2147483647) {
			diag_set(d, 2, "--size %s=%lld: a size must be an integer from 1 to 2147483647",
				 ov[k].name ? ov[k].name : "?", (long long)ov[k].value);
			return NULL;
		}
	Graph *g = ir_new(file);
	g->src = malloc(len + 1);
	IR_ASSERT(g->src);
	memcpy(g->src, src, len);
	g->src[len] = 0;
	g->srclen = len;
	Parser *P = calloc(1, sizeof *P);
	IR_ASSERT(P);
	P->g = g;
	P->d = d;
	P->file = g->file;
	P->src = g->src;
	P->len = len;
	P->ov = ov;
	P->nov = nov;
	P->ovused = calloc((size_t)nov + 1, 1);
	IR_ASSERT(P->ovused);
	if (lex_tokens(g->src, len, g->file, &P->t, &P->nt, d) < 0)
		goto fail;
	P->ck = ck_new(g, d);
	if (setjmp(P->jb))
		goto fail;
	while (!at(P, T_EOF))
		statement(P);
	finish(P);
	parser_free(P);
	return g;
fail:
	parser_free(P);
	ir_free(g);
	return NULL;
}

Graph *ir_parse_file(const char *path, const SizeOverride *ov, int nov, Diag *d)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		diag_set(d, 2, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0, k;
	char *buf = malloc(cap);
	IR_ASSERT(buf);
	while ((k = fread(buf + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			IR_ASSERT(buf);
		}
	}
	bool bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		diag_set(d, 2, "%s: cannot read", path);
		return NULL;
	}
	Graph *g = ir_parse(buf, n, path, ov, nov, d);
	free(buf);
	return g;
}

int ir_parse_schedule(Graph *g, const char *src, size_t len, const char *file, Diag *d)
{
	Parser *P = calloc(1, sizeof *P);
	IR_ASSERT(P);
	P->g = g;
	P->d = d;
	P->file = ir_strdup(g, file ? file : "<schedule>", strlen(file ? file : "<schedule>"));
	P->src = src;
	P->len = len;
	Directive *old = g->dirs;
	int nold = g->ndirs;
	bool had = g->has_schedule;
	if (lex_tokens(src, len, P->file, &P->t, &P->nt, d) < 0)
		goto fail;
	P->ck = ck_new(g, d);
	if (setjmp(P->jb))
		goto fail;
	if (is_word(P, cur(P), "schedule") && (peek(P, 1)->kind == T_NL || peek(P, 1)->kind == T_EOF)) {
		next(P);
		end_statement(P);
	}
	directives(P);
	g->dirs = P->dirs;
	g->ndirs = P->ndirs;
	g->has_schedule = true;
	if (ck_schedule(P->ck, P->file, src, len) < 0) {
		g->dirs = old;
		g->ndirs = nold;
		g->has_schedule = had;
		goto fail;
	}
	P->dirs = NULL;
	free(old);
	parser_free(P);
	return 0;
fail:
	parser_free(P);
	return -1;
}
