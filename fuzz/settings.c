/* fuzz/settings.c: a campaign's settings file (DIR/settings.json), written and read back
 * strictly, the backends of a comma list, and the validating scan of one JSON line (the
 * campaign's log, results.jsonl, is checked with it before a resume continues it).
 *
 * settings.json is one JSON object: the members of FzCampaign (faults by name, hooks as
 * their VF_HOOK_* bits) and, under "gen", the generator's size knobs (its weights are the
 * generator's defaults of this version). fz_settings_read accepts exactly what
 * fz_settings_write writes: well-formed JSON (RFC 8259), every member of fields[] present
 * once with its type and within its range, no other member, the backends, the input
 * distribution and the faults known by name, and "version" 1 ("shard", "I/N", only in a
 * shard's settings: fz_shard_parse). Anything else is an error
 * (code 2) naming the file, the member and its value: a damaged file never turns a resumed
 * campaign into another one (other seeds, other backends). fz_settings_check holds a
 * campaign to the same ranges before its directory is written.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuzz.h"

/* ------------------------------------------------------------------ the members */

/* kind: 'u' an integer in 0 .. 2^64-1; 'i' an integer in [lo, hi] ('I': the same, and a
 * campaign written before the member existed may lack it: it gets the default); 'n' a
 * finite number in [lo, hi] ('N': the same, optional as 'I'); 'b' true or false; 's' a
 * string ('S': optional, absent when empty); 'L' an optional array of failure signature
 * keys (the baseline: absent when empty); 'o' an object (its members are "gen.NAME"). */
typedef struct {
	const char *key;
	char kind;
	double lo, hi;
} Field;

static const Field fields[] = {
	{"version", 'i', 1, 1},
	{"seed", 'u', 0, 0},
	{"cases", 'i', 0, FZ_MAX_CASES},         /* 0: no limit */
	{"seconds", 'n', 0, FZ_MAX_SECONDS},     /* 0: no limit */
	{"jobs", 'i', 1, FZ_MAXJOBS},
	{"backends", 's', 0, 0},
	{"inputs", 's', 0, 0},
	{"faults", 's', 0, 0},
	{"hooks", 'i', 0, 2 * VF_HOOK_NO_REWRITE - 1},   /* the VF_HOOK_* bits */
	{"timeout_s", 'n', 0, FZ_MAX_TIMEOUT},   /* 0: the worker's default */
	{"compile_timeout_s", 'N', 0, FZ_MAX_TIMEOUT},   /* 0: the worker's default */
	{"reduce", 'b', 0, 0},
	{"reduce_tests", 'i', 1, FZ_MAX_REDUCE_TESTS},
	{"until_failure", 'b', 0, 0},
	{"case_limit_s", 'n', 0, FZ_MAX_SECONDS},   /* 0: 600 */
	{"feedback_epoch", 'I', 0, 1 << 20},      /* 0 (and absent): no coverage feedback */
	{"baseline_from", 'S', 0, 0},
	{"baseline", 'L', 0, 0},
	{"variants", 'N', 0, FZ_MAX_VARIANTS},   /* per case; a campaign older than them has none */
	{"shard", 'S', 0, 0},                    /* "I/N"; absent: not a shard */
	{"grad_pairs", 'I', 0, 1000},            /* --grad; 0 (and absent): no --grad */
	{"invariance", 'I', 0, 1},               /* --invariance; 0 (and absent): none */
	{"probes", 'I', 0, 16},                  /* --probes; 0 (and absent: older campaigns): none */
	{"gen", 'o', 0, 0},
	{"gen.max_rank", 'i', 0, FZ_MAXRANK},
	{"gen.max_extent", 'i', 1, 1 << 20},
	{"gen.max_defs", 'i', 1, FZ_MAX_DEFS},
	{"gen.max_inputs", 'i', 1, 2 * FZ_MAX_DEFS},
	{"gen.max_depth", 'i', 1, 64},
	{"gen.max_red", 'i', 1, FZ_MAXRED},
	{"gen.max_elems", 'i', 1, 1e12},
	{"gen.max_work", 'i', 1, 1e15},
	{"gen.p_schedule", 'n', 0, 1},
	{"gen.max_large", 'I', 0, 1 << 20},   /* issue 13 */
	{"gen.p_large", 'N', 0, 1},
};
enum { NFIELDS = (int)ARRAY_LEN(fields) };

static int field(const char *key)
{
	for (int k = 0; k < NFIELDS; k++)
		if (strcmp(fields[k].key, key) == 0)
			return k;
	IR_ASSERT(!"a member of settings.json missing from fields[]");
	return -1;
}

/* "an integer in 1..64", "a number in [0, 86400]" */
static const char *expected(const Field *f, char *buf, size_t n)
{
	switch (f->kind) {
	case 'u': return "a non-negative integer below 2^64";
	case 'i':
	case 'I':
		if (f->lo == f->hi)
			snprintf(buf, n, "%.0f", f->lo);
		else
			snprintf(buf, n, "an integer in %.0f..%.0f", f->lo, f->hi);
		return buf;
	case 'n':
	case 'N': snprintf(buf, n, "a number in [%g, %g]", f->lo, f->hi); return buf;
	case 'b': return "true or false";
	case 's':
	case 'S': return "a string";
	case 'L': return "an array of failure signature keys";
	default: return "an object";
	}
}

static int out_of_range(Diag *d, int k, double x)
{
	char e[96];
	diag_set(d, 2, "member '%s': expected %s, got %.17g", fields[k].key,
		 expected(&fields[k], e, sizeof e), x);
	return -1;
}

static bool in_range(int k, double x)
{
	return isfinite(x) && x >= fields[k].lo && x <= fields[k].hi;
}

bool fz_inputs_known(const char *name)
{
	return strcmp(name, "mix") == 0 || strcmp(name, "specials") == 0 || dist_parse(name) >= 0;
}

int fz_settings_check(const FzCampaign *c, Diag *d)
{
	const GenOpts *o = &c->gen;
	const struct { const char *key; double x; } num[] = {
		{"cases", (double)c->cases}, {"seconds", c->seconds}, {"jobs", c->jobs},
		{"hooks", c->hooks}, {"timeout_s", c->timeout_s},
		{"compile_timeout_s", c->compile_timeout_s}, {"reduce_tests", c->reduce_tests},
		{"case_limit_s", c->case_limit_s}, {"feedback_epoch", c->feedback_epoch}, {"variants", c->variants},
		{"grad_pairs", c->grad_pairs}, {"invariance", c->invariance}, {"probes", c->probes},
		{"gen.max_rank", o->max_rank},
		{"gen.max_extent", o->max_extent}, {"gen.max_defs", o->max_defs},
		{"gen.max_inputs", o->max_inputs}, {"gen.max_depth", o->max_depth},
		{"gen.max_red", o->max_red}, {"gen.max_elems", (double)o->max_elems},
		{"gen.max_work", (double)o->max_work}, {"gen.p_schedule", o->p_schedule},
		{"gen.max_large", o->max_large}, {"gen.p_large", o->p_large},
	};
	for (size_t i = 0; i < ARRAY_LEN(num); i++)
		if (!in_range(field(num[i].key), num[i].x))
			return out_of_range(d, field(num[i].key), num[i].x);
	FzRun r;
	Diag bd = {0};
	if (fz_run_backends(&r, c->backends, &bd)) {
		diag_set(d, 2, "member 'backends': %.*s", (int)strcspn(bd.msg, "\n"), bd.msg);
		diag_clear(&bd);
		return -1;
	}
	if (!fz_inputs_known(c->inputs)) {
		diag_set(d, 2, "member 'inputs': expected mix, normal, uniform, adversarial, edges "
			 "or specials, got '%s'", c->inputs);
		return -1;
	}
	char names[512];
	uint64_t back = 0;
	if (vf_faults_parse(vf_faults_name(c->faults, names, sizeof names), &back, &bd) ||
	    back != c->faults) {
		diag_clear(&bd);
		diag_set(d, 2, "member 'faults': unknown fault bits 0x%llx",
			 (unsigned long long)(c->faults & ~back));
		return -1;
	}
	if (c->shard_n < 0 || c->shard_n > FZ_MAX_SHARDS || c->shard_i < 0 ||
	    (c->shard_n && c->shard_i >= c->shard_n) || (!c->shard_n && c->shard_i)) {
		diag_set(d, 2, "member 'shard': expected I/N with 0 <= I < N <= %d, got %d/%d",
			 FZ_MAX_SHARDS, c->shard_i, c->shard_n);
		return -1;
	}
	if (c->shard_n && c->feedback_epoch) {
		diag_set(d, 2, "member 'shard': a shard has no coverage feedback (feedback_epoch 0, "
			 "got %d): it cannot see the other shards' coverage", c->feedback_epoch);
		return -1;
	}
	return fz_baseline_check(c->baseline, d);
}

int fz_shard_parse(const char *text, int *i, int *n, Diag *d)
{
	const char *slash = strchr(text, '/');
	size_t li = slash ? (size_t)(slash - text) : 0;
	bool ok = slash && li > 0 && li <= 7 && strspn(text, "0123456789") == li &&
		  slash[1] && strlen(slash + 1) <= 7 && strspn(slash + 1, "0123456789") == strlen(slash + 1);
	if (!ok) {
		diag_set(d, 2, "--shard expects I/N, two decimal integers with 0 <= I < N (0/4 .. 3/4 "
			 "are the shards of a campaign cut in 4), got '%s'", text);
		return -1;
	}
	long a = strtol(text, NULL, 10), b = strtol(slash + 1, NULL, 10);
	if (b < 1 || b > FZ_MAX_SHARDS) {
		diag_set(d, 2, "--shard %s: the count of shards N must be in 1..%d", text, FZ_MAX_SHARDS);
		return -1;
	}
	if (a >= b) {
		diag_set(d, 2, "--shard %s: the shard I must be below N (the shards of %ld are 0/%ld .. "
			 "%ld/%ld)", text, b, b, b - 1, b);
		return -1;
	}
	*i = (int)a;
	*n = (int)b;
	return 0;
}

uint64_t fz_shard_case(const FzCampaign *c, uint64_t k)
{
	return c->shard_n > 0 ? (uint64_t)c->shard_i + k * (uint64_t)c->shard_n : k;
}

uint64_t fz_shard_count(const FzCampaign *c, uint64_t cases)
{
	if (c->shard_n <= 0)
		return cases;
	return cases > (uint64_t)c->shard_i ? (cases - (uint64_t)c->shard_i - 1) / (uint64_t)c->shard_n + 1 : 0;
}

/* ------------------------------------------------------------------ writing */

/* The text of settings.json for c (malloc'ed). */
static char *settings_text(const FzCampaign *c)
{
	char *buf = NULL, faults[512];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	IR_ASSERT(f);
	fprintf(f, "{\"version\":1,\"seed\":%llu,\"cases\":%lld,\"seconds\":%.17g,\"jobs\":%d",
		(unsigned long long)c->seed, (long long)c->cases, c->seconds, c->jobs);
	fputs(",\"backends\":", f);
	vf_json_str(f, c->backends);
	fputs(",\"inputs\":", f);
	vf_json_str(f, c->inputs);
	fputs(",\"faults\":", f);
	vf_json_str(f, vf_faults_name(c->faults, faults, sizeof faults));
	fprintf(f, ",\"hooks\":%u,\"timeout_s\":%.17g,\"compile_timeout_s\":%.17g,\"reduce\":%s,"
		"\"reduce_tests\":%d", c->hooks, c->timeout_s, c->compile_timeout_s,
		c->reduce ? "true" : "false", c->reduce_tests);
	fprintf(f, ",\"until_failure\":%s,\"case_limit_s\":%.17g,\"feedback_epoch\":%d,\"variants\":%.17g",
		c->until_failure ? "true" : "false", c->case_limit_s, c->feedback_epoch,
		c->variants);
	if (*c->baseline) {   /* absent without one: the settings of older campaigns */
		fputs(",\"baseline_from\":", f);
		vf_json_str(f, c->baseline_from);
		fputs(",\"baseline\":[", f);
		for (const char *p = c->baseline; *p;) {
			size_t n = strcspn(p, "\n");
			char key[512];
			snprintf(key, sizeof key, "%.*s", (int)n, p);
			fputs(p == c->baseline ? "" : ",", f);
			vf_json_str(f, key);
			p += n + (p[n] == '\n');
		}
		fputs("]", f);
	}
	if (c->probes > 0)   /* absent without probes: the settings of older campaigns */
		fprintf(f, ",\"probes\":%d", c->probes);
	if (c->invariance)   /* absent without --invariance */
		fputs(",\"invariance\":1", f);
	if (c->grad_pairs > 0)   /* absent without --grad: the settings of older campaigns */
		fprintf(f, ",\"grad_pairs\":%d", c->grad_pairs);
	if (c->shard_n > 0)   /* absent when not a shard: the settings of older campaigns */
		fprintf(f, ",\"shard\":\"%d/%d\"", c->shard_i, c->shard_n);
	const GenOpts *o = &c->gen;
	fprintf(f, ",\"gen\":{\"max_rank\":%d,\"max_extent\":%d,\"max_defs\":%d,\"max_inputs\":%d,"
		"\"max_depth\":%d,\"max_red\":%d,\"max_elems\":%lld,\"max_work\":%lld,"
		"\"p_schedule\":%.17g,\"max_large\":%d,\"p_large\":%.17g}}\n", o->max_rank,
		o->max_extent, o->max_defs, o->max_inputs, o->max_depth, o->max_red,
		(long long)o->max_elems, (long long)o->max_work, o->p_schedule, o->max_large,
		o->p_large);
	fclose(f);
	return buf;
}

int fz_settings_write(const char *dir, const FzCampaign *c, Diag *d)
{
	char *buf = settings_text(c), *path = NULL;
	IR_ASSERT(asprintf(&path, "%s/settings.json", dir) >= 0);
	int rc = fz_write_atomic(path, buf, d);
	free(path);
	free(buf);
	return rc;
}

/* ------------------------------------------------------------------ strict JSON */

typedef struct {
	const char *s, *p, *end;
	const char *why;         /* the first error */
} Js;

static bool fail(Js *j, const char *why)
{
	if (!j->why)
		j->why = why;
	return false;
}

static void ws(Js *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool eat(Js *j, char c)
{
	ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

/* A string; its text unescaped into buf (n bytes) unless buf is NULL. A \u escape is taken
 * only below 0x80 into buf (our files hold no other). */
static bool str(Js *j, char *buf, size_t n)
{
	static const char esc[] = "\"\\/bfnrt", val[] = "\"\\/\b\f\n\r\t";
	size_t k = 0;
	if (j->p >= j->end || *j->p != '"')
		return fail(j, "expected a string");
	for (j->p++;; j->p++) {
		if (j->p >= j->end)
			return fail(j, "a string without its closing quote");
		unsigned c = (unsigned char)*j->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(j, "a control character in a string");
		if (c == '\\') {
			const char *e = ++j->p < j->end && *j->p ? strchr(esc, *j->p) : NULL;
			if (j->p < j->end && *j->p == 'u') {
				char hex[5] = {0};
				for (int i = 0; i < 4; i++)
					if (j->p + 1 + i < j->end && isxdigit((unsigned char)j->p[1 + i]))
						hex[i] = j->p[1 + i];
					else
						return fail(j, "a malformed \\u escape");
				j->p += 4;
				c = (unsigned)strtoul(hex, NULL, 16);
				if (buf && c >= 0x80)
					return fail(j, "a \\u escape beyond ASCII");
			} else if (e) {
				c = (unsigned char)val[e - esc];
			} else {
				return fail(j, "a malformed escape in a string");
			}
		}
		if (buf) {
			if (k + 1 >= n)
				return fail(j, "a string too long");
			buf[k++] = (char)c;
		}
	}
	j->p++;
	if (buf)
		buf[k] = 0;
	return true;
}

static bool digits(Js *j)
{
	if (j->p >= j->end || !isdigit((unsigned char)*j->p))
		return false;
	while (j->p < j->end && isdigit((unsigned char)*j->p))
		j->p++;
	return true;
}

/* A number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool num(Js *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!digits(j))
		return fail(j, "expected a value");
	if (j->p < j->end && *j->p == '.' && (j->p++, !digits(j)))
		return fail(j, "expected a digit after '.'");
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!digits(j))
			return fail(j, "expected a digit in the exponent");
	}
	return true;
}

static bool word(Js *j, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
		return fail(j, "expected a value");
	j->p += n;
	return true;
}

static bool value(Js *j, int depth)
{
	ws(j);
	if (j->p >= j->end)
		return fail(j, "expected a value");
	if (depth > 32)
		return fail(j, "nested too deeply");
	char c = *j->p;
	if (c == '"')
		return str(j, NULL, 0);
	if (c == 't' || c == 'f' || c == 'n')
		return word(j, c == 't' ? "true" : c == 'f' ? "false" : "null");
	if (c != '{' && c != '[')
		return num(j);
	char close = c == '{' ? '}' : ']';
	j->p++;
	if (eat(j, close))
		return true;
	do {
		if (close == '}') {
			ws(j);
			if (!str(j, NULL, 0))
				return false;
			if (!eat(j, ':'))
				return fail(j, "expected ':'");
		}
		if (!value(j, depth + 1))
			return false;
	} while (eat(j, ','));
	return eat(j, close) || fail(j, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
}

bool fz_json_valid(const char *text, size_t n, size_t *err_at, const char **why)
{
	Js j = {text, text, text + n, NULL};
	ws(&j);
	bool ok = j.p < j.end && *j.p == '{' ? value(&j, 0) : fail(&j, "expected an object");
	if (ok) {
		ws(&j);
		ok = j.p == j.end || fail(&j, "text after the object");
	}
	if (err_at)
		*err_at = (size_t)(j.p - text);
	if (why)
		*why = j.why;
	return ok;
}

/* ------------------------------------------------------------------ reading */

typedef struct {
	bool seen, b;
	uint64_t u;
	double x;
	char s[512];
	char *list;              /* 'L': the keys, each ended by '\n' (malloc'ed) */
} Got;

/* An array of strings at t->p (kind 'L') into *list: each item then '\n'. */
static bool list(Js *t, char **list)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	IR_ASSERT(m);
	bool ok = eat(t, '[');
	if (ok && !eat(t, ']')) {
		do {
			char item[512];
			ws(t);
			ok = str(t, item, sizeof item) && !strchr(item, '\n');
			if (ok)
				fprintf(m, "%s\n", item);
		} while (ok && eat(t, ','));
		ok = ok && eat(t, ']');
	}
	fclose(m);
	*list = buf;
	return ok;
}

/* The value text [v, j->p) of member k into got[k], checked against fields[k]. */
static int take(const char *v, Js *j, int k, Got *got, Diag *d)
{
	const Field *f = &fields[k];
	int len = (int)(j->p - v);
	Js t = {v, v, j->p, NULL};
	char e[96], *end;
	bool ok;
	errno = 0;
	switch (f->kind) {
	case 's':
	case 'S':
		ok = *v == '"' && str(&t, got[k].s, sizeof got[k].s);
		break;
	case 'L':
		ok = list(&t, &got[k].list) && (ws(&t), t.p == j->p) &&
		     strlen(got[k].list) < FZ_BASELINE_MAX;
		break;
	case 'b':
		ok = (len == 4 && !memcmp(v, "true", 4)) || (len == 5 && !memcmp(v, "false", 5));
		got[k].b = *v == 't';
		break;
	case 'u':
		ok = isdigit((unsigned char)*v) && (size_t)len == strspn(v, "0123456789");
		got[k].u = ok ? strtoull(v, &end, 10) : 0;
		ok = ok && errno == 0;
		break;
	default:   /* 'i', 'I', 'n', 'N': a number, an integer for 'i' and 'I' */
		ok = num(&t) && t.p == j->p &&
		     (f->kind == 'n' || f->kind == 'N' || (size_t)len == strspn(v, "-0123456789"));
		got[k].x = ok ? strtod(v, &end) : 0;
		ok = ok && in_range(k, got[k].x);
		break;
	}
	if (!ok) {
		diag_set(d, 2, "member '%s': expected %s, got %.*s%s", f->key, expected(f, e, sizeof e),
			 len > 60 ? 60 : len, v, len > 60 ? "..." : "");
		return -1;
	}
	return 0;
}

/* The members of the object at j->p, each one of fields[] (named prefix + key). */
static int members(Js *j, const char *prefix, Got *got, Diag *d)
{
	if (!eat(j, '{'))
		return fail(j, "expected an object"), -1;
	if (eat(j, '}'))
		return 0;
	do {
		char key[64], full[96];
		ws(j);
		if (!str(j, key, sizeof key) || !(eat(j, ':') || fail(j, "expected ':'")))
			return -1;
		ws(j);
		snprintf(full, sizeof full, "%s%s", prefix, key);
		int k = 0;
		while (k < NFIELDS && strcmp(fields[k].key, full))
			k++;
		const char *v = j->p;
		if (k == NFIELDS || strchr(key, '.')) {
			diag_set(d, 2, "unknown member '%s'", full);
			return -1;
		}
		if (got[k].seen) {
			diag_set(d, 2, "member '%s' given twice", full);
			return -1;
		}
		got[k].seen = true;
		if (fields[k].kind == 'o') {
			if (*v != '{') {
				diag_set(d, 2, "member '%s': expected an object", full);
				return -1;
			}
			if (members(j, "gen.", got, d))
				return -1;
		} else if (!value(j, 1) || take(v, j, k, got, d)) {
			return -1;
		}
	} while (eat(j, ','));
	return eat(j, '}') ? 0 : (fail(j, "expected ',' or '}'"), -1);
}

static int parse_got(const char *text, size_t n, FzCampaign *c, Got *got, Diag *d);

/* The settings of text into c, or -1 with d (the message without the file's name). */
static int parse(const char *text, size_t n, FzCampaign *c, Diag *d)
{
	Got got[NFIELDS];
	memset(got, 0, sizeof got);
	int rc = parse_got(text, n, c, got, d);
	for (int k = 0; k < NFIELDS; k++)
		free(got[k].list);
	return rc;
}

static int parse_got(const char *text, size_t n, FzCampaign *c, Got *got, Diag *d)
{
	Js j = {text, text, text + n, NULL};
	if (members(&j, "", got, d) == 0 && (ws(&j), j.p != j.end))
		fail(&j, "text after the object");
	if (j.why) {
		int line = 1, col = 1;
		for (const char *p = text; p < j.p; p++)
			line += *p == '\n', col = *p == '\n' ? 1 : col + 1;
		diag_set(d, 2, "line %d, column %d: not valid JSON: %s", line, col, j.why);
	}
	if (d->msg)
		return -1;
	for (int k = 0; k < NFIELDS; k++)
		if (!got[k].seen && !strchr("NISL", fields[k].kind)) {
			diag_set(d, 2, "member '%s' is missing", fields[k].key);
			return -1;
		}
#define G(key) got[field(key)]
	c->seed = G("seed").u;
	c->cases = (int64_t)G("cases").x;
	c->seconds = G("seconds").x;
	c->jobs = (int)G("jobs").x;
	snprintf(c->backends, sizeof c->backends, "%.*s", (int)sizeof c->backends - 1, G("backends").s);
	snprintf(c->inputs, sizeof c->inputs, "%.*s", (int)sizeof c->inputs - 1, G("inputs").s);
	c->hooks = (unsigned)G("hooks").x;
	c->timeout_s = G("timeout_s").x;
	c->compile_timeout_s = G("compile_timeout_s").seen ? G("compile_timeout_s").x : 0;
	c->reduce = G("reduce").b;
	c->reduce_tests = (int)G("reduce_tests").x;
	c->until_failure = G("until_failure").b;
	c->case_limit_s = G("case_limit_s").x;
	c->feedback_epoch = G("feedback_epoch").seen ? (int)G("feedback_epoch").x : 0;
	if (G("baseline").list)   /* fz_settings_check holds it to its form */
		snprintf(c->baseline, sizeof c->baseline, "%s", G("baseline").list);
	snprintf(c->baseline_from, sizeof c->baseline_from, "%.*s", (int)sizeof c->baseline_from - 1,
		 G("baseline_from").s);
	if (G("baseline").seen != G("baseline_from").seen) {
		diag_set(d, 2, "member '%s' is missing (a baseline has both)",
			 G("baseline").seen ? "baseline_from" : "baseline");
		return -1;
	}
	c->variants = G("variants").seen ? G("variants").x : 0;
	c->grad_pairs = G("grad_pairs").seen ? (int)G("grad_pairs").x : 0;
	c->invariance = G("invariance").seen && G("invariance").x != 0;
	c->probes = G("probes").seen ? (int)G("probes").x : 0;
	c->shard_i = c->shard_n = 0;
	Diag sd = {0};
	char canon[32] = "";
	if (G("shard").seen && fz_shard_parse(G("shard").s, &c->shard_i, &c->shard_n, &sd) == 0)
		snprintf(canon, sizeof canon, "%d/%d", c->shard_i, c->shard_n);
	if (G("shard").seen && strcmp(canon, G("shard").s)) {   /* "01/4" is not what is written */
		diag_set(d, 2, "member 'shard': expected \"I/N\" with 0 <= I < N <= %d, got \"%.40s\"",
			 FZ_MAX_SHARDS, G("shard").s);
		diag_clear(&sd);
		return -1;
	}
	GenOpts *o = &c->gen;
	o->max_rank = (int)G("gen.max_rank").x;
	o->max_extent = (int)G("gen.max_extent").x;
	o->max_defs = (int)G("gen.max_defs").x;
	o->max_inputs = (int)G("gen.max_inputs").x;
	o->max_depth = (int)G("gen.max_depth").x;
	o->max_red = (int)G("gen.max_red").x;
	o->max_elems = (int64_t)G("gen.max_elems").x;
	o->max_work = (int64_t)G("gen.max_work").x;
	o->p_schedule = G("gen.p_schedule").x;
	if (G("gen.max_large").seen)   /* else the defaults (fz_campaign_defaults) */
		o->max_large = (int)G("gen.max_large").x;
	if (G("gen.p_large").seen)
		o->p_large = G("gen.p_large").x;
	if (strlen(G("backends").s) >= sizeof c->backends || strlen(G("inputs").s) >= sizeof c->inputs) {
		diag_set(d, 2, "member '%s': too long", strlen(G("inputs").s) >= sizeof c->inputs ?
			 "inputs" : "backends");
		return -1;
	}
	Diag fd = {0};
	if (vf_faults_parse(G("faults").s, &c->faults, &fd)) {
		diag_set(d, 2, "member 'faults': %.*s", (int)strcspn(fd.msg, "\n"), fd.msg);
		diag_clear(&fd);
		return -1;
	}
#undef G
	return fz_settings_check(c, d);
}

int fz_settings_read(const char *dir, FzCampaign *c, Diag *d)
{
	char *path = NULL;
	IR_ASSERT(asprintf(&path, "%s/settings.json", dir) >= 0);
	fz_campaign_defaults(c);
	size_t n = 0;
	char *text = be_read_file(path, &n);
	Diag pd = {0};
	int rc = 0;
	if (!text) {
		if (access(path, F_OK) == 0)
			diag_set(d, 2, "%s: empty or unreadable: not a campaign's settings", path);
		else
			diag_set(d, 2, "%s: missing: %s does not hold a campaign", path, dir);
		rc = -1;
	} else if (parse(text, n, c, &pd)) {
		diag_set(d, 2, "%s: %.*s", path, (int)strcspn(pd.msg, "\n"), pd.msg);
		diag_clear(&pd);
		fz_campaign_defaults(c);
		rc = -1;
	}
	free(text);
	free(path);
	return rc;
}

/* ------------------------------------------------------------------ comparing */

int fz_settings_compare(const FzCampaign *a, const FzCampaign *b, const char *skip, char *msg,
			size_t n)
{
	char *ta = settings_text(a), *tb = settings_text(b);
	size_t vn = 2 * FZ_BASELINE_MAX + 1024;
	char *va = malloc(vn), *vb = malloc(vn);
	IR_ASSERT(va && vb);
	int rc = 0;
	for (int k = 0; k < NFIELDS && !rc && strcmp(ta, tb); k++) {
		const char *key = fields[k].key, *in_a = ta, *in_b = tb;
		size_t kl = strlen(key);
		bool skipped = false;
		for (const char *p = skip; p && (p = strstr(p, key)); p += kl)
			skipped |= (p == skip || p[-1] == ' ') && (p[kl] == ' ' || !p[kl]);
		if (fields[k].kind == 'o' || skipped)
			continue;
		if (strncmp(key, "gen.", 4) == 0) {   /* inside the "gen" object */
			in_a = strstr(ta, ",\"gen\":{") + 7;
			in_b = strstr(tb, ",\"gen\":{") + 7;
			key += 4;
		}
		bool ha = fz_json_get(in_a, key, va, vn), hb = fz_json_get(in_b, key, vb, vn);
		if (ha != hb || (ha && strcmp(va, vb))) {
			snprintf(msg, n, "member '%s': %.200s against %.200s", fields[k].key,
				 ha ? va : "(absent)", hb ? vb : "(absent)");
			rc = 1;
		}
	}
	free(va);
	free(vb);
	free(ta);
	free(tb);
	return rc;
}

/* ------------------------------------------------------------------ backends */

int fz_run_backends(FzRun *r, const char *list, Diag *d)
{
	r->nbackends = 0;
	char known[256] = "";
	for (int k = 0, len = 0; be_at(k); k++)
		len += snprintf(known + len, sizeof known - (size_t)len, "%s%s", k ? ", " : "",
				be_at(k)->name);
	if (!*list) {
		diag_set(d, 2, "no backend given (known: %s)", known);
		return -1;
	}
	for (const char *p = list;; p++) {
		size_t len = strcspn(p, ",");
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)len, p);
		const Backend *b = len < sizeof name ? be_find(name) : NULL;
		if (!b && len < sizeof name)   /* an --external kernel registered by this process */
			b = vf_external_find(name);
		if (len == 0) {
			diag_set(d, 2, "an empty name in the list '%s' (known: %s)", list, known);
			return -1;
		}
		if (!b) {
			diag_set(d, 2, "unknown backend '%.*s' (known: %s; an external kernel's is named "
				 "by --external CMD --name NAME)", (int)len, p, known);
			return -1;
		}
		int i = 0;
		while (i < r->nbackends && r->backends[i] != b)
			i++;
		if (i == r->nbackends) {   /* "c,c" is one c */
			IR_ASSERT(r->nbackends < FZ_MAXBACKENDS);
			r->backends[r->nbackends++] = b;
		}
		p += len;
		if (!*p)
			return 0;
	}
}

void fz_backends_list(const FzRun *r, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	for (int k = 0; k < r->nbackends && len < n; k++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", k ? "," : "", r->backends[k]->name);
}
