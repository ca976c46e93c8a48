/* reports/load.c: a check or campaign directory into an RpRun.
 *
 * What is read:
 * - DIR/results.jsonl: one record per line (verify/record.c). Blank lines are skipped. A
 *   line that does not parse is an error naming DIR/results.jsonl:LINE:COL, except the
 *   last line when it does not end in a newline: that is a torn record (the run was killed
 *   while writing it), an error of its own unless RpLoadOpts.skip_torn. Fields a record
 *   lacks take neutral values (numbers 0, agreement none), so records of older versions
 *   still read; graph, backend and a known verdict are required.
 *   A campaign (fuzz/case.c) follows each case's records (which carry "case": N) with a
 *   line {"done": N, "status": "ok" | "error", "fails": ["KEY@OUTPUT", ...], ...}: it is
 *   not a record; its keys (fuzz/dedup.c: "backend/verdict/format/directives/faults")
 *   become the signatures of the case's failing records (the key with the record's
 *   backend, verdict and format, for its output if listed), and name their failure
 *   folders (failures/KEY with '/' as '.'). Records may also carry "rules" ({rule name:
 *   firings} of the case's rewrite; absent when no rewrite ran), counted by the report,
 *   and "cov" ([POINT, ...]: the compiler's coverage points its run reached; a name this
 *   build does not know is counted apart, RpRecord.cov_unknown).
 * - DIR/provenance.json (verify/provenance.c), when present: which assay, command, seed,
 *   host, date and devices made the run. A run made before provenance was recorded has
 *   none (RpProvenance.present false); a malformed one is an error.
 * - The settings of a campaign: DIR/settings.json (its presence makes the run a
 *   campaign; shown as it is). Its "baseline" (fuzz --baseline) makes the failing records
 *   of the keys it lists of class VC_KNOWN, as the campaign counted them.
 * - The distinct failures of a campaign: each folder under DIR/failures/ that holds a .tg
 *   file; its repro is repro.tg when present (fuzz writes it last: without it the folder
 *   is incomplete), else the first .tg by name; its signature is the first line of its
 *   `signature` file, its count the number that starts its `count` file.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "reports.h"

static char *xstrdup(const char *s)
{
	char *t = strdup(s ? s : "");
	IR_ASSERT(t);
	return t;
}

static char *join(const char *a, const char *b)
{
	char *s = NULL;
	if (asprintf(&s, "%s/%s", a, b) < 0)
		s = NULL;
	IR_ASSERT(s);
	return s;
}

/* The whole file, NUL-terminated, or NULL (errno set). */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	IR_ASSERT(buf);
	for (size_t k; (k = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
		n += k;
		if (n + 1 == cap) {
			buf = realloc(buf, cap *= 2);
			IR_ASSERT(buf);
		}
	}
	bool bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int rp_verdict_parse(const char *s)
{
	for (int v = 0; v < V__COUNT; v++)
		if (strcmp(s, vf_verdict_name((Verdict)v)) == 0)
			return v;
	return -1;
}

/* ---------------------------------------------------------------- records */

static char *str_of(const JsVal *o, const char *key)
{
	const JsVal *v = rp_json_get(o, key);
	return xstrdup(v && v->kind == JS_STR ? v->str : "");
}

static double num_of(const JsVal *o, const char *key, double dflt)
{
	return rp_json_num(rp_json_get(o, key), dflt);
}

static int64_t int_of(const JsVal *o, const char *key, int64_t dflt)
{
	double x = num_of(o, key, (double)dflt);
	return isfinite(x) ? (int64_t)x : dflt;
}

static void rules_of(const JsVal *o, RpRecord *r)
{
	const JsVal *ru = rp_json_get(o, "rules");
	if (!ru || ru->kind != JS_OBJ)
		return;
	r->has_rules = true;
	if (ru->n == 0)
		return;
	r->rule_names = calloc((size_t)ru->n, sizeof *r->rule_names);
	r->rule_counts = calloc((size_t)ru->n, sizeof *r->rule_counts);
	IR_ASSERT(r->rule_names && r->rule_counts);
	for (int i = 0; i < ru->n; i++) {
		r->rule_names[i] = xstrdup(ru->keys[i]);
		double c = rp_json_num(&ru->items[i], 0);
		r->rule_counts[i] = isfinite(c) ? (int64_t)c : 0;
	}
	r->nrules = ru->n;
}

/* "cov": [POINT, ...], the compiler's coverage points the record's run reached. */
static void cov_of(const JsVal *o, RpRecord *r)
{
	const JsVal *c = rp_json_get(o, "cov");
	if (!c || c->kind != JS_ARR)
		return;
	r->has_cov = true;
	r->cov = calloc((size_t)c->n + 1, sizeof *r->cov);
	IR_ASSERT(r->cov);
	for (int i = 0; i < c->n; i++) {
		int p = c->items[i].kind == JS_STR ? vf_cov_find(c->items[i].str, strlen(c->items[i].str)) : -1;
		if (p < 0)
			r->cov_unknown++;
		else
			r->cov[r->ncov++] = (int16_t)p;
	}
}

/* The elements over budget of a record that does not say (written before "n_over"). */
static int64_t over_of(const RpRecord *r)
{
	int64_t within = (int64_t)llround(r->frac_within * (double)r->n_checked);
	int64_t over = r->n_checked - r->n_special - r->n_tie_disagree - within;
	return over > 0 ? over : r->max_ratio > 1;
}

/* vf_class of a record, from the counts it carries. */
static VfClass class_of(const RpRecord *r)
{
	VfMetrics m, m64;
	vf_metrics_init(&m);
	vf_metrics_init(&m64);
	m.n_special = r->n_special, m.n_special_unbounded = r->n_special_unbounded;
	m.n_over = r->n_over;
	m64.n_special = r->f64_n_special, m64.n_special_unbounded = r->f64_n_special_unbounded;
	m64.n_over = r->f64_n_over;
	return vf_class(r->verdict, &m, r->sampled, &m64);
}

/* Fills r from a parsed record; a static message when a required field is missing. */
static const char *record_of(const JsVal *o, RpRecord *r)
{
	if (o->kind != JS_OBJ)
		return "a record must be a JSON object";
	const JsVal *g = rp_json_get(o, "graph"), *b = rp_json_get(o, "backend");
	const JsVal *v = rp_json_get(o, "verdict");
	if (!g || g->kind != JS_STR || !b || b->kind != JS_STR)
		return "not a result record: no \"graph\" or \"backend\" string";
	if (!v || v->kind != JS_STR || rp_verdict_parse(v->str) < 0)
		return "not a result record: no known \"verdict\"";
	r->verdict = (Verdict)rp_verdict_parse(v->str);
	r->graph = str_of(o, "graph"), r->file = str_of(o, "file");
	r->backend = str_of(o, "backend"), r->sched = str_of(o, "schedule");
	r->sched_text = str_of(o, "schedule_text"), r->output = str_of(o, "output");
	r->dtype = str_of(o, "dtype"), r->reason = str_of(o, "reason");
	r->inputs = str_of(o, "inputs"), r->faults = str_of(o, "faults");
	r->case_dir = str_of(o, "case_dir"), r->agree_ref = str_of(o, "agree_ref");
	r->exact = str_of(o, "exact"), r->signature = xstrdup("");
	r->variant = str_of(o, "variant");
	r->failure_dir = xstrdup("");
	r->max_ulp = num_of(o, "max_ulp", 0), r->max_abs = num_of(o, "max_abs", 0);
	r->max_rel = num_of(o, "max_rel", 0), r->nmse = num_of(o, "nmse", 0);
	r->max_ratio = num_of(o, "max_ratio", 0), r->frac_within = num_of(o, "frac_within", 0);
	r->mean_signed_ratio = num_of(o, "mean_signed_ratio", 0);
	r->f64_max_ratio = num_of(rp_json_get(o, "f64"), "max_ratio", 0);
	r->argmax_agree = num_of(o, "argmax_agree", NAN);
	r->topk_agree = num_of(o, "topk_agree", NAN);
	r->n_checked = int_of(o, "n_checked", 0), r->n_special = int_of(o, "n_special", 0);
	r->n_special_unbounded = int_of(o, "n_special_unbounded", 0);
	r->n_unsamplable = int_of(o, "n_unsamplable", 0);
	r->n_unbounded = int_of(o, "n_unbounded", 0), r->n_ties = int_of(o, "n_ties", 0);
	r->n_tie_disagree = int_of(o, "n_tie_disagree", 0);
	r->n_over = int_of(o, "n_over", -1);
	if (r->n_over < 0)   /* an older record: frac_within = (checked - special - over - ties) */
		r->n_over = over_of(r);
	const JsVal *f64 = rp_json_get(o, "f64"), *w = rp_json_get(o, "worst");
	r->f64_n_special = int_of(f64, "n_special", 0);
	r->f64_n_special_unbounded = int_of(f64, "n_special_unbounded", 0);
	r->f64_n_over = int_of(f64, "n_over", 0);
	r->has_worst = w && w->kind == JS_OBJ;
	r->worst_got = num_of(w, "got", NAN), r->worst_want = num_of(w, "want", NAN);
	r->n_elements = int_of(o, "n_elements", 0), r->red_len = int_of(o, "red_len", 0);
	r->agree_rows = int_of(o, "agree_rows", 0), r->case_no = int_of(o, "case", -1);
	r->agree_axis = (int)int_of(o, "agree_axis", -1), r->agree_k = (int)int_of(o, "agree_k", 0);
	r->seed = (uint64_t)num_of(o, "seed", 0), r->sched_seed = (uint64_t)num_of(o, "sched_seed", 0);
	const JsVal *s = rp_json_get(o, "sampled"), *em = rp_json_get(o, "emulated");
	r->sampled = s && s->kind == JS_BOOL && s->b;
	r->emulated = em && em->kind == JS_BOOL && em->b;
	r->emu_diff = int_of(o, "emu_diff", 0);
	const JsVal *t = rp_json_get(o, "timings");
	r->worker_s = num_of(t, "worker_s", 0), r->compile_s = num_of(t, "compile_s", 0);
	if (r->agree_rows <= 0)
		r->argmax_agree = r->topk_agree = NAN;
	rules_of(o, r);
	cov_of(o, r);
	r->cls = class_of(r);
	return NULL;
}

static void record_free(RpRecord *r)
{
	char **s[] = {&r->graph, &r->file, &r->backend, &r->sched, &r->sched_text, &r->output,
		      &r->dtype, &r->reason, &r->inputs, &r->faults, &r->case_dir, &r->agree_ref,
		      &r->exact, &r->signature, &r->failure_dir, &r->variant};
	for (size_t i = 0; i < ARRAY_LEN(s); i++)
		free(*s[i]);
	for (int i = 0; i < r->nrules; i++)
		free(r->rule_names[i]);
	free(r->rule_names);
	free(r->rule_counts);
	free(r->cov);
}

/* The key of items (strings "KEY@OUTPUT", "KEY@OUTPUT#VARIANT" for a variant's failure)
 * that names record r's failure, or NULL. */
static const char *key_for(const RpRecord *r, const JsVal *items)
{
	char prefix[256], whose[200];
	snprintf(whose, sizeof whose, "%s%s%s", r->output, *r->variant ? "#" : "", r->variant);
	snprintf(prefix, sizeof prefix, "%s/%s/%s/", r->backend, vf_verdict_name(r->verdict),
		 vf_verdict_whole(r->verdict) ? "-" : r->dtype);
	const char *any = NULL;
	for (int i = 0; items && i < items->n; i++) {
		const JsVal *it = &items->items[i];
		if (it->kind != JS_STR || strncmp(it->str, prefix, strlen(prefix)) != 0)
			continue;
		const char *at = strrchr(it->str, '@');
		if (at && strcmp(at + 1, whose) == 0)
			return it->str;
		/* a variant's failure may have its original's key (listed once per case, for the
		 * original); an original's failure is never a variant's */
		if (*r->variant || !(at && strchr(at, '#')))
			any = any ? any : it->str;
	}
	return any;
}

/* A campaign's "done" line: the signatures of its case's failing records. */
static void done_line(RpRun *run, const JsVal *o)
{
	double n = rp_json_num(rp_json_get(o, "done"), -1);
	const JsVal *st = rp_json_get(o, "status"), *fails = rp_json_get(o, "fails");
	run->cases++;
	run->case_errors += st && st->kind == JS_STR && strcmp(st->str, "error") == 0;
	if (!fails || fails->kind != JS_ARR)
		return;
	for (int i = run->nrecs - 1; i >= 0 && (double)run->recs[i].case_no == n; i--) {
		RpRecord *r = &run->recs[i];
		/* only failures have keys: an unclaimed special value of the same backend, verdict
		 * and format must not take a failure's (key_for falls back to any such key) */
		const char *item = r->cls == VC_FAILURE ? key_for(r, fails) : NULL;
		if (!item)
			continue;
		const char *at = strrchr(item, '@');
		size_t len = at ? (size_t)(at - item) : strlen(item);
		free(r->signature);
		free(r->failure_dir);
		r->signature = strndup(item, len);
		IR_ASSERT(r->signature);
		IR_ASSERT(asprintf(&r->failure_dir, "failures/%s", r->signature) >= 0);
		for (char *c = r->failure_dir + 9; *c; c++)
			*c = *c == '/' ? '.' : *c;
	}
}

/* The column (1-based) of byte offset at in line. */
static int col_of(size_t at)
{
	return (int)at + 1;
}

static int records(RpRun *run, const char *path, const char *text, size_t len,
		   const RpLoadOpts *o, Diag *d)
{
	int cap = 0, lineno = 0;
	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		lineno++;
		size_t at = pos, n = end - pos;
		pos = nl ? end + 1 : len;
		if (strspn(text + at, " \t\r") >= n)
			continue;
		JsVal v;
		size_t err_at;
		const char *err;
		if (rp_json_parse(text + at, n, &v, &err_at, &err)) {
			if (!nl && o && o->skip_torn) {
				run->torn++;
				break;
			}
			if (!nl)
				diag_set(d, 2, "%s:%d:%d: a torn record: the last line is cut short (%s); "
					 "the run was killed while writing it. Resume the run, or pass "
					 "--skip-torn to leave that line out", path, lineno, col_of(err_at), err);
			else
				diag_set(d, 2, "%s:%d:%d: malformed record: %s", path, lineno,
					 col_of(err_at), err);
			return -1;
		}
		if (run->nrecs == cap) {
			cap = cap ? 2 * cap : 64;
			run->recs = realloc(run->recs, (size_t)cap * sizeof *run->recs);
			IR_ASSERT(run->recs);
		}
		if (rp_json_get(&v, "done")) {
			done_line(run, &v);
			rp_json_free(&v);
			continue;
		}
		RpRecord *r = &run->recs[run->nrecs];
		memset(r, 0, sizeof *r);
		const char *msg = record_of(&v, r);
		rp_json_free(&v);
		if (msg) {
			record_free(r);
			diag_set(d, 2, "%s:%d:1: %s", path, lineno, msg);
			return -1;
		}
		r->line = lineno;
		run->nrecs++;
	}
	return 0;
}

/* ---------------------------------------------------------------- campaigns */

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the entries of dir for which want(dir/name) holds. */
static char **entries(const char *dir, bool (*want)(const char *), int *n)
{
	*n = 0;
	DIR *dp = opendir(dir);
	if (!dp)
		return NULL;
	char **names = NULL;
	int cap = 0;
	for (struct dirent *e; (e = readdir(dp));) {
		if (e->d_name[0] == '.')
			continue;
		char *p = join(dir, e->d_name);
		bool ok = want(p);
		free(p);
		if (!ok)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			names = realloc(names, (size_t)cap * sizeof *names);
			IR_ASSERT(names);
		}
		names[(*n)++] = xstrdup(e->d_name);
	}
	closedir(dp);
	if (*n)
		qsort(names, (size_t)*n, sizeof *names, by_name);
	return names;
}

static bool is_tg(const char *path)
{
	size_t n = strlen(path);
	return n > 3 && strcmp(path + n - 3, ".tg") == 0 && !is_dir(path);
}

static void free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The repro of a failure folder: a preferred name, else the first .tg. */
static char *pick_repro(char **tgs, int n)
{
	static const char *pref[] = {"repro.tg", "min.tg", "reduced.tg"};
	for (size_t k = 0; k < ARRAY_LEN(pref); k++)
		for (int i = 0; i < n; i++)
			if (strcmp(tgs[i], pref[k]) == 0)
				return tgs[i];
	return tgs[0];
}

/* The first line of dir/name (heap), or NULL. */
static char *first_line(const char *dir, const char *name)
{
	char *p = join(dir, name), *text = slurp(p, NULL);
	free(p);
	if (text)
		text[strcspn(text, "\r\n")] = 0;
	return text;
}

static void failure_meta(const char *dir, RpFailure *f)
{
	char *sig = first_line(dir, "signature"), *count = first_line(dir, "count");
	f->signature = sig ? sig : xstrdup("");
	char *end = NULL;
	long long c = count ? strtoll(count, &end, 10) : -1;
	f->count = count && end != count && c >= 0 ? c : -1;
	free(count);
}

/* Failure folders under base (relative prefix rel: "failures/" or ""). */
static void failures_in(RpRun *run, const char *base, const char *rel)
{
	int n;
	char **dirs = entries(base, is_dir, &n);
	for (int i = 0; i < n; i++) {
		char *dir = join(base, dirs[i]);
		int nt;
		char **tgs = entries(dir, is_tg, &nt);
		if (nt) {
			run->fails = realloc(run->fails, (size_t)(run->nfails + 1) * sizeof *run->fails);
			IR_ASSERT(run->fails);
			RpFailure *f = &run->fails[run->nfails++];
			memset(f, 0, sizeof *f);
			char *name = NULL;
			IR_ASSERT(asprintf(&name, "%s%s", rel, dirs[i]) > 0);
			f->name = name;
			char *tg = pick_repro(tgs, nt), *abs = join(dir, tg);
			f->repro_path = join(name, tg);
			f->repro = slurp(abs, NULL);
			free(abs);
			failure_meta(dir, f);
		}
		free_names(tgs, nt);
		free(dir);
	}
	free_names(dirs, n);
}

/* ---------------------------------------------------------------- provenance */

/* w quoted for a POSIX shell when it needs to be, appended to m. */
static void shell_word(FILE *m, const char *w)
{
	if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			 "_./=,:+@%^-") == strlen(w)) {
		fputs(w, m);
		return;
	}
	fputc('\'', m);
	for (; *w; w++)
		if (*w == '\'')
			fputs("'\\''", m);
		else
			fputc(*w, m);
	fputc('\'', m);
}

static char *command_of(const JsVal *c)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	IR_ASSERT(m);
	for (int i = 0; c && c->kind == JS_ARR && i < c->n; i++)
		if (c->items[i].kind == JS_STR) {
			fputs(i ? " " : "", m);
			shell_word(m, c->items[i].str);
		}
	fclose(m);
	return buf;
}

/* DIR/provenance.json into run->prov; absent is no error (a run made before it). */
static int provenance(RpRun *run, Diag *d)
{
	RpProvenance *p = &run->prov;
	char *path = join(run->dir, "provenance.json");
	size_t len;
	char *text = slurp(path, &len);
	int rc = 0;
	if (!text) {
		if (errno != ENOENT) {
			diag_set(d, 2, "cannot read %s: %s", path, strerror(errno));
			rc = -1;
		}
		free(path);
		return rc;
	}
	JsVal v;
	size_t at = 0;
	const char *err = NULL;
	if (rp_json_parse(text, len, &v, &at, &err) == 0 && v.kind != JS_OBJ) {
		rp_json_free(&v);
		err = "not a JSON object";
	}
	if (err) {
		int line = 1;
		size_t bol = 0;
		for (size_t i = 0; i < at && i < len; i++)
			if (text[i] == '\n')
				line++, bol = i + 1;
		diag_set(d, 2, "%s:%d:%d: malformed provenance: %s", path, line, col_of(at - bol),
			 err);
		free(text);
		free(path);
		return -1;
	}
	p->present = true;
	p->version = str_of(&v, "version"), p->commit = str_of(&v, "commit");
	p->cwd = str_of(&v, "cwd"), p->host = str_of(&v, "host"), p->os = str_of(&v, "os");
	p->date = str_of(&v, "date");
	p->command = command_of(rp_json_get(&v, "command"));
	p->seed = (uint64_t)num_of(&v, "seed", 0);
	const JsVal *b = rp_json_get(&v, "backends");
	int nb = b && b->kind == JS_ARR ? b->n : 0;
	p->backends = calloc((size_t)nb + 1, sizeof *p->backends);
	p->devices = calloc((size_t)nb + 1, sizeof *p->devices);
	IR_ASSERT(p->backends && p->devices);
	for (int i = 0; i < nb; i++) {
		p->backends[i] = str_of(&b->items[i], "name");
		p->devices[i] = str_of(&b->items[i], "device");
	}
	p->nbackends = nb;
	rp_json_free(&v);
	free(text);
	free(path);
	return 0;
}

static void provenance_free(RpProvenance *p)
{
	char **s[] = {&p->version, &p->commit, &p->cwd, &p->host, &p->os, &p->date, &p->command};
	for (size_t i = 0; i < ARRAY_LEN(s); i++)
		free(*s[i]);
	for (int i = 0; i < p->nbackends; i++) {
		free(p->backends[i]);
		free(p->devices[i]);
	}
	free(p->backends);
	free(p->devices);
	memset(p, 0, sizeof *p);
}

/* A campaign's baseline (settings.json's "baseline": the failures it already knew, fuzz
 * --baseline): its failing records of those keys are of class known, as the campaign
 * counted them (not distinct failures, not chased). Older settings have no such member. */
static void known(RpRun *run)
{
	JsVal v;
	size_t at;
	const char *err;
	if (!run->settings || rp_json_parse(run->settings, strlen(run->settings), &v, &at, &err))
		return;
	const JsVal *b = rp_json_get(&v, "baseline");
	for (int i = 0; b && b->kind == JS_ARR && i < run->nrecs; i++) {
		RpRecord *r = &run->recs[i];
		for (int k = 0; r->cls == VC_FAILURE && *r->signature && k < b->n; k++)
			if (b->items[k].kind == JS_STR && strcmp(b->items[k].str, r->signature) == 0)
				r->cls = VC_KNOWN;
	}
	rp_json_free(&v);
}

static void campaign(RpRun *run)
{
	static const char *settings[] = {"settings.json"};
	for (size_t i = 0; i < ARRAY_LEN(settings) && !run->settings; i++) {
		char *p = join(run->dir, settings[i]);
		if (!is_dir(p) && (run->settings = slurp(p, NULL)))
			run->settings_path = xstrdup(settings[i]);
		free(p);
	}
	char *fdir = join(run->dir, "failures");
	if (is_dir(fdir))
		failures_in(run, fdir, "failures/");
	free(fdir);
	known(run);
}

int rp_load(const char *dir, const RpLoadOpts *o, RpRun *run, Diag *d)
{
	memset(run, 0, sizeof *run);
	struct stat st;
	if (stat(dir, &st)) {
		diag_set(d, 2, "%s: %s", dir, errno == ENOENT ? "no such directory" : strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		diag_set(d, 2, "%s: not a directory (expected the -o DIR of assay check or fuzz)", dir);
		return -1;
	}
	run->dir = xstrdup(dir);
	char *path = join(dir, "results.jsonl");
	size_t len;
	char *text = slurp(path, &len);
	int rc = -1;
	if (!text) {
		diag_set(d, 2, "%s: not a check or campaign directory: cannot read %s: %s", dir,
			 path, strerror(errno));
		goto out;
	}
	if (records(run, path, text, len, o, d))
		goto out;
	if (run->nrecs == 0) {
		diag_set(d, 2, "%s holds no records (an empty run: nothing to report)", path);
		goto out;
	}
	if (provenance(run, d))
		goto out;
	char *sp = join(dir, "decode.jsonl");
	size_t slen;
	char *steps = slurp(sp, &slen);
	int src = steps ? rp_load_steps(run, steps, slen, sp, d) : 0;
	free(steps);
	free(sp);
	if (src)
		goto out;
	campaign(run);
	rc = 0;
out:
	free(text);
	free(path);
	if (rc)
		rp_free(run);
	return rc;
}

void rp_free(RpRun *run)
{
	for (int i = 0; i < run->nrecs; i++)
		record_free(&run->recs[i]);
	for (int i = 0; i < run->nfails; i++) {
		free(run->fails[i].name);
		free(run->fails[i].repro_path);
		free(run->fails[i].repro);
		free(run->fails[i].signature);
	}
	free(run->recs);
	free(run->fails);
	rp_steps_free(run);
	provenance_free(&run->prov);
	free(run->dir);
	free(run->settings_path);
	free(run->settings);
	memset(run, 0, sizeof *run);
}
