/* reports/policy.c: the release policy format (docs/policy.md), one gate per line:
 *
 *   # a comment, to the end of the line
 *   gate SCOPE METRIC OP THRESHOLD
 *
 * SCOPE is BACKEND/FORMAT/EXAMPLE, each part a shell glob (fnmatch: * ? [..]) matched
 * against a result's backend, output format and graph name; a lone `*` matches every
 * result.
 * METRIC is one of rp_metric_name's names, OP one of <= < >= > ==, THRESHOLD a number,
 * `inf`, or a percentage (`99%` is 0.99). Every error names file:line:col with the line and
 * a caret, and stops the parse (exit 2 for the caller).
 */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "reports.h"

static const char *const metric_names[GM__COUNT] = {
	[GM_MAX_RATIO] = "max_ratio", [GM_FRAC_WITHIN] = "frac_within",
	[GM_TOKEN_AGREE] = "token_agree", [GM_LICENSED_DIVERGENCES] = "licensed_divergences",
	[GM_DEFECT_DIVERGENCES] = "defect_divergences", [GM_ARGMAX_AGREE] = "argmax_agree",
	[GM_TOPK_AGREE] = "topk_agree",
	[GM_DISTINCT_FAILURES] = "distinct_failures", [GM_SPECIAL_MISMATCHES] = "special_mismatches",
	[GM_FAILING] = "failing", [GM_RESULTS] = "results", [GM_MAX_ULP] = "max_ulp",
	[GM_FLAKY] = "flaky", [GM_EMULATION_MISMATCHES] = "emulation_mismatches",
	[GM_EMULATED] = "emulated", [GM_MEAN_SIGNED_RATIO] = "mean_signed_ratio",
};
_Static_assert(ARRAY_LEN(metric_names) == GM__COUNT, "one name per metric");

static const char *const op_names[] = {
	[GO_LE] = "<=", [GO_LT] = "<", [GO_GE] = ">=", [GO_GT] = ">", [GO_EQ] = "==",
};

const char *rp_metric_name(GateMetric m)
{
	return m >= 0 && m < GM__COUNT ? metric_names[m] : "?";
}

const char *rp_op_name(GateOp op)
{
	return op >= 0 && op <= GO_EQ ? op_names[op] : "?";
}

typedef struct {
	const char *s;   /* the token */
	size_t n;
	int col;
} Tok;

typedef struct {
	const char *src;
	size_t len;
	const char *file;
	Diag *d;
} Ctx;

static int err(const Ctx *c, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int err(const Ctx *c, int line, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *m = NULL;
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	va_end(ap);
	SrcPos pos = {c->file, line, col};
	diag_at(c->d, pos, c->src, c->len, "%s", m ? m : "error");
	c->d->code = 2;
	free(m);
	return -1;
}

/* Splits one line (without its newline, comments removed) into at most 8 tokens. */
static int tokens(const char *line, size_t n, Tok *t)
{
	int k = 0;
	for (size_t i = 0; i < n && k < 8;) {
		while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
			i++;
		if (i >= n)
			break;
		size_t j = i;
		while (j < n && line[j] != ' ' && line[j] != '\t' && line[j] != '\r')
			j++;
		t[k++] = (Tok){line + i, j - i, (int)i + 1};
		i = j;
	}
	return k;
}

static bool is(const Tok *t, const char *w)
{
	return t->n == strlen(w) && memcmp(t->s, w, t->n) == 0;
}

static char *dup(const char *s, size_t n)
{
	char *t = strndup(s, n);
	IR_ASSERT(t);
	return t;
}

static int scope(const Ctx *c, int line, const Tok *t, Gate *g)
{
	g->scope = dup(t->s, t->n);
	if (is(t, "*")) {
		g->backend = dup("*", 1), g->dtype = dup("*", 1), g->graph = dup("*", 1);
		return 0;
	}
	const char *a = memchr(t->s, '/', t->n);
	const char *b = a ? memchr(a + 1, '/', (size_t)(t->s + t->n - a - 1)) : NULL;
	if (!a || !b || memchr(b + 1, '/', (size_t)(t->s + t->n - b - 1)))
		return err(c, line, t->col, "scope '%.*s' must be BACKEND/FORMAT/EXAMPLE (globs, "
			   "e.g. c/*/matmul) or *", (int)t->n, t->s);
	if (a == t->s || b == a + 1 || b + 1 == t->s + t->n)
		return err(c, line, t->col, "scope '%.*s' has an empty part (write * for any)",
			   (int)t->n, t->s);
	g->backend = dup(t->s, (size_t)(a - t->s));
	g->dtype = dup(a + 1, (size_t)(b - a - 1));
	g->graph = dup(b + 1, (size_t)(t->s + t->n - b - 1));
	return 0;
}

static int threshold(const Ctx *c, int line, const Tok *t, Gate *g)
{
	char buf[64];
	if (t->n >= sizeof buf)
		return err(c, line, t->col, "threshold '%.*s' is too long", (int)t->n, t->s);
	memcpy(buf, t->s, t->n);
	buf[t->n] = 0;
	bool pct = t->n > 1 && buf[t->n - 1] == '%';
	if (pct)
		buf[t->n - 1] = 0;
	char *end;
	errno = 0;
	double x = strcmp(buf, "inf") == 0 ? INFINITY : strtod(buf, &end);
	if (!isinf(x) && (errno || *end || end == buf || isnan(x) || buf[0] == ' '))
		return err(c, line, t->col, "threshold '%.*s' is not a number (write e.g. 1, 0.99, "
			   "99%% or inf)", (int)t->n, t->s);
	g->threshold = pct ? x / 100 : x;
	g->threshold_text = dup(t->s, t->n);
	return 0;
}

static int gate_line(const Ctx *c, int line, const Tok *t, int n, Gate *g)
{
	if (!is(&t[0], "gate"))
		return err(c, line, t[0].col, "unknown statement '%.*s' (a policy line is "
			   "'gate SCOPE METRIC OP THRESHOLD')", (int)t[0].n, t[0].s);
	if (n != 5) {
		int col = n > 5 ? t[5].col : n > 0 ? t[n - 1].col + (int)t[n - 1].n : 1;
		return err(c, line, col, "%s: expected 'gate SCOPE METRIC OP THRESHOLD'",
			   n > 5 ? "unexpected text after the threshold" : "too few words");
	}
	g->line = line;
	if (scope(c, line, &t[1], g))
		return -1;
	int m = 0;
	while (m < GM__COUNT && !is(&t[2], metric_names[m]))
		m++;
	if (m == GM__COUNT)
		return err(c, line, t[2].col, "unknown metric '%.*s' (known: max_ratio, frac_within, "
			   "argmax_agree, topk_agree, distinct_failures, special_mismatches, failing, "
			   "results, max_ulp, flaky, emulation_mismatches, emulated, mean_signed_ratio, "
			   "token_agree, licensed_divergences, defect_divergences)", (int)t[2].n,
			   t[2].s);
	g->metric = (GateMetric)m;
	int op = 0;
	while (op <= GO_EQ && !is(&t[3], op_names[op]))
		op++;
	if (op > GO_EQ)
		return err(c, line, t[3].col, "unknown comparison '%.*s' (known: <= < >= > ==)",
			   (int)t[3].n, t[3].s);
	g->op = (GateOp)op;
	return threshold(c, line, &t[4], g);
}

static void gate_free(Gate *g)
{
	free(g->scope);
	free(g->backend);
	free(g->dtype);
	free(g->graph);
	free(g->threshold_text);
}

int rp_policy_parse(const char *src, size_t len, const char *file, RpPolicy *p, Diag *d)
{
	memset(p, 0, sizeof *p);
	p->file = dup(file, strlen(file));
	Ctx c = {src, len, file, d};
	int line = 0;
	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(src + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - src) : len, n = end - pos;
		const char *hash = memchr(src + pos, '#', n);
		const char *nul = memchr(src + pos, 0, n);
		line++;
		if (nul) {
			err(&c, line, (int)(nul - src - pos) + 1, "a NUL byte in the policy");
			goto fail;
		}
		Tok t[8];
		int k = tokens(src + pos, hash ? (size_t)(hash - src - pos) : n, t);
		pos = nl ? end + 1 : len;
		if (k == 0)
			continue;
		p->gates = realloc(p->gates, (size_t)(p->ngates + 1) * sizeof *p->gates);
		IR_ASSERT(p->gates);
		Gate *g = &p->gates[p->ngates++];
		memset(g, 0, sizeof *g);
		if (gate_line(&c, line, t, k, g))
			goto fail;
	}
	if (p->ngates == 0) {
		SrcPos at = {file, 0, 0};
		diag_at(d, at, NULL, 0, "the policy holds no gate (a policy line is 'gate SCOPE "
			"METRIC OP THRESHOLD')");
		d->code = 2;
		goto fail;
	}
	return 0;
fail:
	rp_policy_free(p);
	return -1;
}

int rp_policy_load(const char *path, RpPolicy *p, Diag *d)
{
	memset(p, 0, sizeof *p);
	FILE *f = fopen(path, "rb");
	if (!f) {
		diag_set(d, 2, "cannot read the policy %s: %s", path, strerror(errno));
		return -1;
	}
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	IR_ASSERT(m);
	char chunk[4096];
	for (size_t k; (k = fread(chunk, 1, sizeof chunk, f)) > 0;)
		fwrite(chunk, 1, k, m);
	bool bad = ferror(f);
	fclose(f);
	fclose(m);
	int rc = -1;
	if (bad)
		diag_set(d, 2, "cannot read the policy %s: %s", path, strerror(errno));
	else
		rc = rp_policy_parse(buf, n, path, p, d);
	free(buf);
	return rc;
}

void rp_policy_free(RpPolicy *p)
{
	for (int i = 0; i < p->ngates; i++)
		gate_free(&p->gates[i]);
	free(p->gates);
	free(p->file);
	memset(p, 0, sizeof *p);
}
