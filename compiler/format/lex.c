/* compiler/format/lex.c: the `.tg` lexer. It turns the whole source into an array of tokens up
 * front, so the parser can look ahead freely (a body starting `NAME(` is a reduction when
 * the parentheses open with `index:`; a name read before its definition is found by
 * looking further down the file).
 *
 * Line structure is decided here: a newline ends a statement unless it falls inside
 * brackets or parentheses, or the line's last token continues the statement (a binary
 * operator, `?`, `:`, `,`, `..`, `??`). Blank lines and comments give no tokens.
 * Non-ASCII bytes are allowed only in comments. Every malformed input gives a Diag; no
 * input makes the lexer read outside src[0 .. len-1].
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lex.h"

typedef struct {
	const char *src;
	size_t len, i;
	const char *file;
	int line;
	size_t linestart;
	Token *t;
	int n, cap;
	int depth;   /* open brackets and parentheses */
	Diag *d;
} Lexer;

static const char *names[T__COUNT] = {
	[T_EOF] = "end of file", [T_NL] = "end of line", [T_NAME] = "a name",
	[T_INT] = "an integer", [T_NUM] = "a number",
	[T_PLUS] = "'+'", [T_MINUS] = "'-'", [T_STAR] = "'*'", [T_SLASH] = "'/'",
	[T_PERCENT] = "'%'", [T_EQ] = "'=='", [T_NE] = "'!='", [T_LT] = "'<'",
	[T_LE] = "'<='", [T_GT] = "'>'", [T_GE] = "'>='", [T_AND] = "'&&'", [T_OR] = "'||'",
	[T_NOT] = "'!'", [T_QUEST] = "'?'", [T_QQ] = "'?\?'", [T_COLON] = "':'",
	[T_COMMA] = "','", [T_ASSIGN] = "'='", [T_DOTDOT] = "'..'", [T_LPAREN] = "'('",
	[T_RPAREN] = "')'", [T_LBRACK] = "'['", [T_RBRACK] = "']'",
};

const char *tok_describe(TokKind k)
{
	return k < T__COUNT ? names[k] : "?";
}

/* Length of a quoted piece of source in a message. */
static int clip(size_t n)
{
	return n > 40 ? 40 : (int)n;
}

static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static bool is_hex(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A token that, ending a line, continues the statement on the next one: a binary operator
 * (`??` and `..` included), `?`, `:` or `,`. */
static bool continues(TokKind k)
{
	return (k >= T_PLUS && k <= T_OR) || (k >= T_QUEST && k <= T_COMMA) || k == T_DOTDOT;
}

static int peekc(const Lexer *L, size_t k)
{
	return L->i + k < L->len ? (unsigned char)L->src[L->i + k] : -1;
}

static SrcPos pos_at(const Lexer *L, size_t off)
{
	return (SrcPos){L->file, L->line, (int)(off - L->linestart) + 1};
}

static int error_at(Lexer *L, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int error_at(Lexer *L, size_t off, const char *fmt, ...)
{
	char buf[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	diag_at(L->d, pos_at(L, off), L->src, L->len, "%s", buf);
	return -1;
}

static void push(Lexer *L, TokKind k, size_t off, size_t len)
{
	if (L->n == L->cap) {
		L->cap = L->cap ? L->cap * 2 : 256;
		Token *t = realloc(L->t, (size_t)L->cap * sizeof *t);
		IR_ASSERT(t);
		L->t = t;
	}
	Token *t = &L->t[L->n++];
	memset(t, 0, sizeof *t);
	t->kind = (uint8_t)k;
	t->off = (uint32_t)off;
	t->len = (uint32_t)len;
	t->line = L->line;
	t->col = (int)(off - L->linestart) + 1;
}

/* Reads the decimal digits of an exponent after [eEpP][+-]; -1 if there are none or the
 * exponent is absurdly large. */
static int exponent(Lexer *L, size_t *j)
{
	size_t k = *j;
	if (k < L->len && (L->src[k] == '+' || L->src[k] == '-'))
		k++;
	if (k >= L->len || !is_digit((unsigned char)L->src[k]))
		return -1;
	long v = 0;
	while (k < L->len && is_digit((unsigned char)L->src[k])) {
		if (v <= LEX_MAXEXP)
			v = v * 10 + (L->src[k] - '0');
		k++;
	}
	*j = k;
	return v > LEX_MAXEXP ? -2 : 0;
}

/* Numbers: integers, decimals with optional exponent, hexadecimal floats (0x1.8p-3).
 * `1..4` is the integer 1 followed by `..`. */
static int number(Lexer *L)
{
	size_t s = L->i, j = s;
	bool real = false;
	int ex = 0;
	if (L->src[j] == '0' && j + 1 < L->len && (L->src[j + 1] == 'x' || L->src[j + 1] == 'X')) {
		j += 2;
		size_t digits = 0;
		while (j < L->len && is_hex((unsigned char)L->src[j]))
			j++, digits++;
		if (j < L->len && L->src[j] == '.')
			for (j++; j < L->len && is_hex((unsigned char)L->src[j]); j++)
				digits++;
		if (digits == 0 || j >= L->len || (L->src[j] != 'p' && L->src[j] != 'P')) {
			while (j < L->len && is_alnum((unsigned char)L->src[j]))
				j++;
			return error_at(L, s, "malformed hexadecimal float '%.*s' (write it as 0x1.8p-3)",
					clip(j - s), L->src + s);
		}
		j++;
		ex = exponent(L, &j);
		real = true;
	} else {
		while (j < L->len && is_digit((unsigned char)L->src[j]))
			j++;
		if (j < L->len && L->src[j] == '.' && !(j + 1 < L->len && L->src[j + 1] == '.')) {
			real = true;
			for (j++; j < L->len && is_digit((unsigned char)L->src[j]); j++)
				;
		}
		if (j < L->len && (L->src[j] == 'e' || L->src[j] == 'E')) {
			j++;
			ex = exponent(L, &j);
			real = true;
		}
	}
	bool dot = j < L->len && L->src[j] == '.' && !(j + 1 < L->len && L->src[j + 1] == '.');
	if (ex == -1 || dot || (j < L->len && is_alnum((unsigned char)L->src[j]))) {
		while (j < L->len && (is_alnum((unsigned char)L->src[j]) || L->src[j] == '.'))
			j++;
		return error_at(L, s, "malformed number '%.*s'", clip(j - s), L->src + s);
	}
	if (ex == -2)
		return error_at(L, s, "the exponent of '%.*s' is too large", clip(j - s), L->src + s);
	if (j - s > LEX_MAXLIT)
		return error_at(L, s, "number literal '%.20s...' is too long", L->src + s);
	push(L, real ? T_NUM : T_INT, s, j - s);
	if (!real) {
		const int64_t big = (int64_t)1 << 62;
		int64_t v = 0;
		for (size_t k = s; k < j; k++)
			v = v > (big - 9) / 10 ? big : v * 10 + (L->src[k] - '0');
		L->t[L->n - 1].ival = v;
		L->t[L->n - 1].big = v > 2147483647;
	}
	L->i = j;
	return 0;
}

static int name(Lexer *L)
{
	size_t s = L->i, j = s;
	while (j < L->len && is_alnum((unsigned char)L->src[j]))
		j++;
	if (j - s > LEX_MAXNAME)
		return error_at(L, s, "name '%.20s...' is too long (more than 255 characters)",
				L->src + s);
	bool lit = (j - s == 3) && (memcmp(L->src + s, "inf", 3) == 0 || memcmp(L->src + s, "nan", 3) == 0);
	push(L, lit ? T_NUM : T_NAME, s, j - s);
	L->i = j;
	return 0;
}

static const struct { char s[3]; TokKind k; } ops2[] = {
	{"==", T_EQ}, {"!=", T_NE}, {"<=", T_LE}, {">=", T_GE}, {"&&", T_AND}, {"||", T_OR},
	{"??", T_QQ}, {"..", T_DOTDOT},
};
static const struct { char c; TokKind k; } ops1[] = {
	{'+', T_PLUS}, {'-', T_MINUS}, {'*', T_STAR}, {'/', T_SLASH}, {'%', T_PERCENT},
	{'<', T_LT}, {'>', T_GT}, {'!', T_NOT}, {'?', T_QUEST}, {':', T_COLON}, {',', T_COMMA},
	{'=', T_ASSIGN}, {'(', T_LPAREN}, {')', T_RPAREN}, {'[', T_LBRACK}, {']', T_RBRACK},
};

static int punct(Lexer *L)
{
	int c = peekc(L, 0), c1 = peekc(L, 1);
	for (size_t k = 0; k < ARRAY_LEN(ops2); k++)
		if (c == ops2[k].s[0] && c1 == ops2[k].s[1]) {
			push(L, ops2[k].k, L->i, 2);
			L->i += 2;
			return 0;
		}
	for (size_t k = 0; k < ARRAY_LEN(ops1); k++)
		if (c == ops1[k].c) {
			TokKind t = ops1[k].k;
			if (t == T_LPAREN || t == T_LBRACK)
				L->depth++;
			else if ((t == T_RPAREN || t == T_RBRACK) && L->depth > 0)
				L->depth--;
			push(L, t, L->i, 1);
			L->i++;
			return 0;
		}
	if (c == '&' || c == '|')
		return error_at(L, L->i, "unexpected '%c' (did you mean '%c%c'?)", c, c, c);
	if (c >= 0x21 && c < 0x7f)
		return error_at(L, L->i, "unexpected character '%c'", c);
	return error_at(L, L->i, "unexpected byte 0x%02x (only comments may hold non-ASCII text)",
			(unsigned)c);
}

/* A newline: ends the statement unless it is continued. */
static void newline(Lexer *L)
{
	if (L->n > 0 && L->depth == 0 && L->t[L->n - 1].kind != T_NL &&
	    !continues((TokKind)L->t[L->n - 1].kind))
		push(L, T_NL, L->i, 0);
	L->i++;
	L->line++;
	L->linestart = L->i;
}

int lex_tokens(const char *src, size_t len, const char *file, Token **out, int *n, Diag *d)
{
	Lexer L = {.src = src, .len = len, .file = file, .line = 1, .d = d};
	while (L.i < len) {
		int c = (unsigned char)src[L.i], rc = 0;
		if (c == '\n')
			newline(&L);
		else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v')
			L.i++;
		else if (c == '#')
			while (L.i < len && src[L.i] != '\n')
				L.i++;
		else if (is_digit(c) || (c == '.' && is_digit(peekc(&L, 1))))
			rc = number(&L);
		else if (is_alpha(c))
			rc = name(&L);
		else
			rc = punct(&L);
		if (rc < 0) {
			free(L.t);
			return -1;
		}
	}
	/* a statement cut off by the end of the file is the parser's to report */
	if (L.n > 0 && L.depth == 0 && L.t[L.n - 1].kind != T_NL &&
	    !continues((TokKind)L.t[L.n - 1].kind))
		push(&L, T_NL, L.i, 0);
	push(&L, T_EOF, L.i, 0);
	*out = L.t;
	*n = L.n;
	return 0;
}
