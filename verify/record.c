/* verify/record.c: the result record format and the files `-o DIR` keeps.
 *
 * A record is one JSON object on one line (JSON lines), one per (graph, backend, schedule,
 * output), in the order the checks ran. Fields (reports/ reads these; add, never rename):
 *   graph, file, backend, schedule (name: default | graph | file | s1..sN),
 *   schedule_text (the directives that differ from the default, sched_text), sched_seed,
 *   output, dtype, verdict, reason ("" when none), max_ulp, max_abs, max_rel, nmse,
 *   max_ratio, frac_within, mean_signed_ratio (the bias: mean (got - want) / budget over the
 *   bounded elements), n_checked, n_special, n_special_unbounded (of them, where the
 *   budget is +inf), n_over (elements over budget), n_unsamplable, n_unbounded (elements
 *   whose budget is +inf: no bound known, they pass whatever), n_ties (elements the
 *   budget flags as near ties), n_tie_disagree (of them, disagreeing: not failures),
 *   n_elements,
 *   worst {index, got, want, budget} (null when nothing was compared),
 *   sampled (bool), exact ("all" | "sampled N, all vs f64"),
 *   f64 {max_ratio, max_ulp, n_special, n_special_unbounded, n_over, by} (only when
 *   sampled; by: "c backend"
 *   or "interpreter", see check.c),
 *   seed, inputs (distribution), faults (comma list, "" when none), case_dir (relative to
 *   DIR), timings {oracle_s, budget_s, compile_s, launch_s, worker_s, cache_hit},
 *   red_len (terms of the longest reduction feeding the output, 0 if none: agree.c),
 *   agree_axis, agree_k, agree_rows, argmax_agree, topk_agree (fractions of the rows
 *   along agree_axis whose argmax / top-k set agrees with the oracle's: agree.c; all but
 *   agree_rows are null when agree_rows is 0), agree_ref ("oracle" | "f64" | ""),
 *   rules ({RULE NAME: firings} for the rules compiling the case fired, {} when none; absent
 *   when no rewrite ran: VfRecord.rules),
 *   emulated (bool: the emulation check applied, emucheck.c), emulated_why (why not, ""
 *   when it did), emu_diff (elements differing from the emulation bit for bit; 0 when not
 *   emulated), cov (["POINT", ...]: the compiler's coverage
 *   points, compiler/cov.def, that the run reached, in the table's order, [] when none;
 *   absent when the worker returned no counters: VfRecord.cov).
 * Non-finite numbers are written as the strings "inf", "-inf" and "nan" (JSON has no
 * such numbers); finite ones with 17 significant digits, so a double reads back exactly.
 *
 * Files: DIR/results.jsonl is opened in append mode per record, written, flushed and
 * fsync'ed, so a killed run loses at most the record in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "verify.h"

void vf_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void vf_json_num(FILE *f, double x)
{
	if (isnan(x))
		fputs("\"nan\"", f);
	else if (isinf(x))
		fputs(x > 0 ? "\"inf\"" : "\"-inf\"", f);
	else
		fprintf(f, "%.17g", x);
}

static void key(FILE *f, const char *k)
{
	fprintf(f, ",\"%s\":", k);
}

static void worst(FILE *f, const VfMetrics *m)
{
	key(f, "worst");
	if (m->worst < 0) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"index\":%lld,\"got\":", (long long)m->worst);
	vf_json_num(f, m->worst_got);
	fputs(",\"want\":", f);
	vf_json_num(f, m->worst_want);
	fputs(",\"budget\":", f);
	vf_json_num(f, m->worst_budget);
	fputc('}', f);
}

static void timings(FILE *f, const VfRecord *r)
{
	key(f, "timings");
	fputs("{\"oracle_s\":", f);
	vf_json_num(f, r->oracle_s);
	fputs(",\"budget_s\":", f);
	vf_json_num(f, r->budget_s);
	fputs(",\"compile_s\":", f);
	vf_json_num(f, r->compile_s);
	fputs(",\"launch_s\":", f);
	vf_json_num(f, r->launch_s);
	fputs(",\"worker_s\":", f);
	vf_json_num(f, r->worker_s);
	fprintf(f, ",\"cache_hit\":%s}", r->cache_hit ? "true" : "false");
}

static void agreement(FILE *f, const VfRecord *r)
{
	const VfAgree *a = &r->agree;
	key(f, "red_len"), fprintf(f, "%lld", (long long)r->red_len);
	if (a->rows <= 0) {
		fputs(",\"agree_axis\":null,\"agree_k\":null,\"agree_rows\":0,\"argmax_agree\":null,"
		      "\"topk_agree\":null", f);
	} else {
		fprintf(f, ",\"agree_axis\":%d,\"agree_k\":%d,\"agree_rows\":%lld", a->axis, a->k,
			(long long)a->rows);
		key(f, "argmax_agree"), vf_json_num(f, (double)a->argmax_ok / (double)a->rows);
		key(f, "topk_agree"), vf_json_num(f, (double)a->topk_ok / (double)a->rows);
	}
	key(f, "agree_ref"), vf_json_str(f, a->rows > 0 && a->ref ? a->ref : "");
}

static void rules(FILE *f, const RwStats *st)
{
	if (!st)
		return;
	key(f, "rules");
	fputc('{', f);
	for (int i = 0, n = 0; i < st->nrules; i++)
		if (st->fired[i]) {
			fputs(n++ ? "," : "", f);
			vf_json_str(f, st->name[i]);
			fprintf(f, ":%llu", (unsigned long long)st->fired[i]);
		}
	fputc('}', f);
}

static void coverage(FILE *f, const uint64_t *cov)
{
	if (!cov)
		return;
	key(f, "cov");
	fputc('[', f);
	for (int p = 0, n = 0; p < COV__COUNT; p++)
		if (cov[p]) {
			fputs(n++ ? "," : "", f);
			vf_json_str(f, cov_name((CovPoint)p));
		}
	fputc(']', f);
}

void vf_record_json(FILE *f, const VfRecord *r)
{
	const VfMetrics *m = &r->m;
	char fb[512];
	fputs("{\"graph\":", f);
	vf_json_str(f, r->graph);
	key(f, "file"), vf_json_str(f, r->file);
	key(f, "backend"), vf_json_str(f, r->backend);
	key(f, "schedule"), vf_json_str(f, r->sched);
	key(f, "schedule_text"), vf_json_str(f, r->sched_text);
	key(f, "sched_seed"), fprintf(f, "%llu", (unsigned long long)r->sched_seed);
	key(f, "output"), vf_json_str(f, r->output);
	key(f, "dtype"), vf_json_str(f, dt_name(r->dtype));
	key(f, "verdict"), vf_json_str(f, vf_verdict_name(r->verdict));
	key(f, "reason"), vf_json_str(f, r->reason);
	key(f, "max_ulp"), vf_json_num(f, m->max_ulp);
	key(f, "max_abs"), vf_json_num(f, m->max_abs);
	key(f, "max_rel"), vf_json_num(f, m->max_rel);
	key(f, "nmse"), vf_json_num(f, m->nmse);
	key(f, "max_ratio"), vf_json_num(f, m->max_ratio);
	key(f, "frac_within"), vf_json_num(f, m->frac_within);
	key(f, "mean_signed_ratio"), vf_json_num(f, m->mean_signed_ratio);
	key(f, "n_checked"), fprintf(f, "%lld", (long long)m->n_checked);
	key(f, "n_special"), fprintf(f, "%lld", (long long)m->n_special);
	key(f, "n_special_unbounded"), fprintf(f, "%lld", (long long)m->n_special_unbounded);
	key(f, "n_over"), fprintf(f, "%lld", (long long)m->n_over);
	key(f, "n_unsamplable"), fprintf(f, "%lld", (long long)m->n_unsamplable);
	key(f, "n_unbounded"), fprintf(f, "%lld", (long long)m->n_unbounded);
	key(f, "n_ties"), fprintf(f, "%lld", (long long)m->n_ties);
	key(f, "n_tie_disagree"), fprintf(f, "%lld", (long long)m->n_tie_disagree);
	key(f, "n_elements"), fprintf(f, "%lld", (long long)r->n_elements);
	worst(f, m);
	key(f, "sampled"), fputs(r->sampled ? "true" : "false", f);
	key(f, "exact");
	if (r->sampled) {
		char ex[64];
		snprintf(ex, sizeof ex, "sampled %lld, all vs f64",
			 (long long)(m->n_checked + m->n_unsamplable));
		vf_json_str(f, ex);
		key(f, "f64");
		fputs("{\"max_ratio\":", f);
		vf_json_num(f, r->m64.max_ratio);
		fputs(",\"max_ulp\":", f);
		vf_json_num(f, r->m64.max_ulp);
		fprintf(f, ",\"n_special\":%lld,\"n_special_unbounded\":%lld,\"n_over\":%lld,\"by\":",
			(long long)r->m64.n_special, (long long)r->m64.n_special_unbounded,
			(long long)r->m64.n_over);
		vf_json_str(f, r->ref64_by);
		fputc('}', f);
	} else {
		vf_json_str(f, "all");
	}
	key(f, "seed"), fprintf(f, "%llu", (unsigned long long)r->seed);
	key(f, "inputs"), vf_json_str(f, r->dist);
	key(f, "faults"), vf_json_str(f, vf_faults_name(r->faults, fb, sizeof fb));
	key(f, "case_dir"), vf_json_str(f, r->case_dir);
	timings(f, r);
	agreement(f, r);
	rules(f, r->rules);
	key(f, "emulated"), fputs(r->emulated ? "true" : "false", f);
	key(f, "emulated_why"), vf_json_str(f, r->emulated ? "" : r->emu_why);
	key(f, "emu_diff"), fprintf(f, "%lld", (long long)r->emu_diff);
	coverage(f, r->cov);
	fputs("}\n", f);
}

/* ------------------------------------------------------------------ files */

int vf_mkdirs(const char *path, Diag *d)
{
	char *buf = strdup(path);
	IR_ASSERT(buf);
	int rc = 0;
	for (char *p = buf + 1;; p++) {
		bool end = *p == 0;
		if (*p != '/' && !end)
			continue;
		*p = 0;
		if (mkdir(buf, 0777) && errno != EEXIST) {
			diag_io(d, errno, "cannot create directory %s: %s", buf, strerror(errno));
			rc = -1;
			break;
		}
		if (end)
			break;
		*p = '/';
	}
	free(buf);
	return rc;
}

int vf_write_text(const char *path, const char *text, Diag *d)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		diag_io(d, errno, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	size_t n = strlen(text);
	bool bad = fwrite(text, 1, n, f) != n;
	if (fclose(f) || bad) {
		diag_io(d, errno, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int vf_append_record(const char *dir, const VfRecord *r, Diag *d)
{
	char *path = NULL;
	if (asprintf(&path, "%s/results.jsonl", dir) < 0)
		path = NULL;
	IR_ASSERT(path);
	int rc = -1;
	FILE *f = fopen(path, "a");
	if (!f) {
		diag_io(d, errno, "cannot append to %s: %s", path, strerror(errno));
		goto out;
	}
	vf_record_json(f, r);
	bool bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
	if (fclose(f) || bad) {
		diag_io(d, errno, "cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	free(path);
	return rc;
}

const char *vf_cov_name(int p)
{
	return cov_name((CovPoint)p);
}

const char *vf_cov_area(int p)
{
	return cov_area((CovPoint)p);
}

const char *vf_cov_what(int p)
{
	return cov_what((CovPoint)p);
}

int vf_cov_find(const char *name, size_t len)
{
	return cov_find(name, len);
}

bool vf_cov_reaches(int p, const char *backend)
{
	return cov_reaches((CovPoint)p, backend);
}

void vf_rules(RwStats *st)
{
	rw_rules(st);
}
