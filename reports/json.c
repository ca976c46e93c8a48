/* reports/json.c: a small JSON reader and the two writers the report files share.
 *
 * The reader is a recursive descent over one value (RFC 8259): objects, arrays, strings
 * with every escape (\uXXXX with surrogate pairs, encoded as UTF-8), numbers through
 * strtod after a strict check of the grammar, true, false, null. Nesting is limited to 64
 * levels so a hostile line cannot exhaust the stack. On error the reader reports the byte
 * offset and a message; nothing it allocated leaks.
 *
 * The record format writes non-finite numbers as the strings "inf", "-inf" and "nan";
 * rp_json_num reads those back as numbers.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "reports.h"

typedef struct {
	const char *s;
	size_t len, pos;
	const char *err;
	size_t err_at;
} P;

static int fail(P *p, const char *msg)
{
	if (!p->err) {
		p->err = msg;
		p->err_at = p->pos;
	}
	return -1;
}

static void ws(P *p)
{
	while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos])
		p->pos++;
}

static int value(P *p, JsVal *v, int depth);

static int hex4(P *p, unsigned *out)
{
	*out = 0;
	for (int i = 0; i < 4; i++, p->pos++) {
		if (p->pos >= p->len)
			return fail(p, "unterminated \\u escape");
		char c = p->s[p->pos];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return fail(p, "bad hex digit in \\u escape");
		*out = *out * 16 + (unsigned)d;
	}
	return 0;
}

static void put_utf8(char *buf, size_t *n, unsigned c)
{
	if (c < 0x80) {
		buf[(*n)++] = (char)c;
	} else if (c < 0x800) {
		buf[(*n)++] = (char)(0xc0 | c >> 6);
		buf[(*n)++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		buf[(*n)++] = (char)(0xe0 | c >> 12);
		buf[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		buf[(*n)++] = (char)(0x80 | (c & 0x3f));
	} else {
		buf[(*n)++] = (char)(0xf0 | c >> 18);
		buf[(*n)++] = (char)(0x80 | ((c >> 12) & 0x3f));
		buf[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		buf[(*n)++] = (char)(0x80 | (c & 0x3f));
	}
}

static int escape(P *p, char *buf, size_t *n)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	char c = p->pos < p->len ? p->s[p->pos] : 0;
	const char *k = c ? strchr(from, c) : NULL;
	p->pos++;
	if (k) {
		buf[(*n)++] = to[k - from];
		return 0;
	}
	if (c != 'u')
		return p->pos--, fail(p, "bad escape in a string");
	unsigned u, lo;
	if (hex4(p, &u))
		return -1;
	if (u >= 0xd800 && u < 0xdc00) {
		if (p->pos + 1 >= p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
			return fail(p, "unpaired surrogate in a \\u escape");
		p->pos += 2;
		if (hex4(p, &lo))
			return -1;
		if (lo < 0xdc00 || lo >= 0xe000)
			return fail(p, "unpaired surrogate in a \\u escape");
		u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
	} else if (u >= 0xdc00 && u < 0xe000) {
		return fail(p, "unpaired surrogate in a \\u escape");
	}
	put_utf8(buf, n, u);
	return 0;
}

static int string(P *p, char **out)
{
	p->pos++;   /* the opening quote */
	size_t start = p->pos;
	while (p->pos < p->len && p->s[p->pos] != '"')
		p->pos += p->s[p->pos] == '\\' ? 2 : 1;
	if (p->pos >= p->len)
		return fail(p, "unterminated string");
	size_t end = p->pos, n = 0;
	/* escapes never lengthen the text: \uXXXX (6 bytes) gives at most 3, a pair 4 of 12 */
	char *buf = malloc(end - start + 1);
	IR_ASSERT(buf);
	for (p->pos = start; p->pos < end;) {
		unsigned char c = (unsigned char)p->s[p->pos];
		if (c < 0x20) {
			free(buf);
			return fail(p, "control character in a string");
		}
		p->pos++;
		if (c != '\\') {
			buf[n++] = (char)c;
		} else if (escape(p, buf, &n)) {
			free(buf);
			return -1;
		}
	}
	p->pos = end + 1;
	buf[n] = 0;
	*out = buf;
	return 0;
}

static int number(P *p, JsVal *v)
{
	size_t i = p->pos;
	const char *s = p->s;
	if (i < p->len && s[i] == '-')
		i++;
	if (i < p->len && s[i] == '0')
		i++;
	else if (i < p->len && s[i] >= '1' && s[i] <= '9')
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	else
		return fail(p, "expected a value");
	if (i < p->len && s[i] == '.') {
		if (++i >= p->len || s[i] < '0' || s[i] > '9')
			return p->pos = i, fail(p, "expected a digit after '.'");
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < p->len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= p->len || s[i] < '0' || s[i] > '9')
			return p->pos = i, fail(p, "expected a digit in the exponent");
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	char tmp[64];
	size_t n = i - p->pos;
	char *buf = n < sizeof tmp ? tmp : malloc(n + 1);
	IR_ASSERT(buf);
	memcpy(buf, s + p->pos, n);
	buf[n] = 0;
	v->kind = JS_NUM;
	v->num = strtod(buf, NULL);
	if (buf != tmp)
		free(buf);
	p->pos = i;
	return 0;
}

static int word(P *p, const char *w, JsVal *v, JsKind kind, bool b)
{
	size_t n = strlen(w);
	if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n) != 0)
		return fail(p, "expected a value");
	p->pos += n;
	v->kind = kind;
	v->b = b;
	return 0;
}

/* Appends an item (and key) to an array or object under construction. */
static JsVal *push(JsVal *v, int *cap, char *key)
{
	if (v->n == *cap) {
		*cap = *cap ? 2 * *cap : 8;
		v->items = realloc(v->items, (size_t)*cap * sizeof *v->items);
		if (v->kind == JS_OBJ)
			v->keys = realloc(v->keys, (size_t)*cap * sizeof *v->keys);
		IR_ASSERT(v->items && (v->kind != JS_OBJ || v->keys));
	}
	if (v->kind == JS_OBJ)
		v->keys[v->n] = key;
	memset(&v->items[v->n], 0, sizeof *v->items);
	return &v->items[v->n++];
}

static int members(P *p, JsVal *v, int depth)
{
	bool obj = v->kind == JS_OBJ;
	char close = obj ? '}' : ']';
	int cap = 0;
	p->pos++;
	ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return 0;
	}
	for (;;) {
		char *key = NULL;
		ws(p);
		if (obj) {
			if (p->pos >= p->len || p->s[p->pos] != '"')
				return fail(p, "expected a member name (a string)");
			if (string(p, &key))
				return -1;
			ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':') {
				free(key);
				return fail(p, "expected ':' after a member name");
			}
			p->pos++;
		}
		if (value(p, push(v, &cap, key), depth + 1))
			return -1;
		ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == close) {
			p->pos++;
			return 0;
		}
		return fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int value(P *p, JsVal *v, int depth)
{
	memset(v, 0, sizeof *v);
	if (depth > 64)
		return fail(p, "nested too deeply");
	ws(p);
	if (p->pos >= p->len)
		return fail(p, "unexpected end of input");
	switch (p->s[p->pos]) {
	case '{': v->kind = JS_OBJ; return members(p, v, depth);
	case '[': v->kind = JS_ARR; return members(p, v, depth);
	case '"': v->kind = JS_STR; return string(p, &v->str);
	case 't': return word(p, "true", v, JS_BOOL, true);
	case 'f': return word(p, "false", v, JS_BOOL, false);
	case 'n': return word(p, "null", v, JS_NULL, false);
	default: return number(p, v);
	}
}

int rp_json_parse(const char *s, size_t len, JsVal *v, size_t *err_at, const char **err)
{
	P p = {s, len, 0, NULL, 0};
	int rc = value(&p, v, 0);
	if (rc == 0) {
		ws(&p);
		if (p.pos < p.len)
			rc = fail(&p, "unexpected text after the value");
	}
	if (rc) {
		rp_json_free(v);
		*err_at = p.err_at;
		*err = p.err;
	}
	return rc;
}

void rp_json_free(JsVal *v)
{
	for (int i = 0; i < v->n; i++) {
		if (v->keys)
			free(v->keys[i]);
		rp_json_free(&v->items[i]);
	}
	free(v->keys);
	free(v->items);
	free(v->str);
	memset(v, 0, sizeof *v);
}

const JsVal *rp_json_get(const JsVal *obj, const char *key)
{
	if (!obj || obj->kind != JS_OBJ)
		return NULL;
	for (int i = 0; i < obj->n; i++)
		if (obj->keys[i] && strcmp(obj->keys[i], key) == 0)
			return &obj->items[i];
	return NULL;
}

double rp_json_num(const JsVal *v, double dflt)
{
	if (!v)
		return dflt;
	if (v->kind == JS_NUM)
		return v->num;
	if (v->kind == JS_STR) {
		if (strcmp(v->str, "inf") == 0)
			return INFINITY;
		if (strcmp(v->str, "-inf") == 0)
			return -INFINITY;
		if (strcmp(v->str, "nan") == 0)
			return NAN;
	}
	return dflt;
}

void rp_json_num_out(FILE *f, double x)
{
	if (isnan(x))
		fputs("\"nan\"", f);
	else if (isinf(x))
		fputs(x > 0 ? "\"inf\"" : "\"-inf\"", f);
	else
		fprintf(f, "%.17g", x);
}
