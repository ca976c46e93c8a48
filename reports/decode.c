/* reports/decode.c: the steps of `assay decode` (DIR/decode.jsonl, verify/decode.c) in
 * reports and gates: loading them, the figures the gates hold (token_agree,
 * licensed_divergences, defect_divergences) and the report's section on them (per
 * history: steps, agreement, divergences; per divergence its exact margin against the
 * budget that licenses it or not).
 *
 * A step's scope for a gate is its backend and its model (the decode graph's name) as
 * BACKEND and EXAMPLE, and "token" as FORMAT. A run without decode.jsonl has no steps:
 * the three metrics then give no figure (n/a).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "reports.h"

static const char *const class_names[RP_STEP__COUNT] = {"agree", "licensed", "defect", "failed"};

static char *dup_str(const JsVal *o, const char *key)
{
	const JsVal *v = rp_json_get(o, key);
	const char *s = v && v->kind == JS_STR ? v->str : "";
	char *r = strdup(s);
	IR_ASSERT(r);
	return r;
}

int rp_load_steps(RpRun *run, const char *text, size_t len, const char *path, Diag *d)
{
	size_t cap = 0;
	int line = 0;
	for (size_t at = 0; at < len;) {
		size_t end = at;
		while (end < len && text[end] != '\n')
			end++;
		line++;
		size_t ll = end - at;
		const char *s = text + at;
		at = end + 1;
		if (ll == 0)
			continue;
		JsVal v;
		size_t err_at;
		const char *why;
		if (rp_json_parse(s, ll, &v, &err_at, &why)) {
			diag_set(d, 2, "%s:%d:%zu: %s", path, line, err_at + 1, why);
			return -1;
		}
		if ((size_t)run->nsteps == cap) {
			cap = cap ? 2 * cap : 64;
			run->steps = realloc(run->steps, cap * sizeof *run->steps);
			IR_ASSERT(run->steps);
		}
		RpStep *st = &run->steps[run->nsteps++];
		memset(st, 0, sizeof *st);
		st->model = dup_str(&v, "model");
		st->backend = dup_str(&v, "backend");
		st->sched = dup_str(&v, "schedule");
		st->reason = dup_str(&v, "reason");
		st->step = (int)rp_json_num(rp_json_get(&v, "step"), -1);
		st->pos = (int64_t)rp_json_num(rp_json_get(&v, "pos"), -1);
		st->token = (int)rp_json_num(rp_json_get(&v, "token"), -1);
		st->exact_token = (int)rp_json_num(rp_json_get(&v, "exact_token"), -1);
		st->margin = rp_json_num(rp_json_get(&v, "margin"), NAN);
		st->budget = rp_json_num(rp_json_get(&v, "budget"), NAN);
		st->gap = rp_json_num(rp_json_get(&v, "gap"), NAN);
		st->gap_budget = rp_json_num(rp_json_get(&v, "gap_budget"), NAN);
		const JsVal *ge = rp_json_get(&v, "gap_exact");
		st->gap_exact = ge && ge->kind == JS_BOOL && ge->b;
		if (st->gap < 0)   /* -1: not finite when written */
			st->gap = NAN;
		if (st->gap_budget < 0)
			st->gap_budget = INFINITY;
		const JsVal *bf = rp_json_get(&v, "budget_finite");
		st->budget_finite = bf && bf->kind == JS_BOOL && bf->b;
		if (!st->budget_finite)
			st->budget = INFINITY;
		const JsVal *c = rp_json_get(&v, "class");
		st->cls = RP_STEP__COUNT;
		for (int k = 0; k < RP_STEP__COUNT && c && c->kind == JS_STR; k++)
			if (strcmp(c->str, class_names[k]) == 0)
				st->cls = k;
		rp_json_free(&v);
		if (st->cls == RP_STEP__COUNT) {
			diag_set(d, 2, "%s:%d: a step without a known class (%s)", path, line,
				 "agree, licensed, defect, failed");
			return -1;
		}
	}
	return 0;
}

void rp_steps_free(RpRun *run)
{
	for (int i = 0; i < run->nsteps; i++) {
		free(run->steps[i].model);
		free(run->steps[i].backend);
		free(run->steps[i].sched);
		free(run->steps[i].reason);
	}
	free(run->steps);
	run->steps = NULL;
	run->nsteps = 0;
}

void rp_step_figures(const RpRun *run, bool (*keep)(void *, const RpStep *), void *ctx,
		     RpStepFig *f)
{
	memset(f, 0, sizeof *f);
	for (int i = 0; i < run->nsteps; i++) {
		const RpStep *s = &run->steps[i];
		if (keep && !keep(ctx, s))
			continue;
		f->steps++;
		f->n[s->cls]++;
		if (s->cls == RP_STEP_LICENSED && !s->budget_finite)
			f->unbounded++;
	}
}

const char *rp_step_class_name(int c)
{
	return c >= 0 && c < RP_STEP__COUNT ? class_names[c] : "?";
}

/* The histories (backend, schedule, model) in the order they first appear. */
typedef struct {
	const char *backend, *sched, *model;
} Hist;

static int histories(const RpRun *run, Hist *h, int max)
{
	int n = 0;
	for (int i = 0; i < run->nsteps; i++) {
		const RpStep *s = &run->steps[i];
		int k = 0;
		while (k < n && !(strcmp(h[k].backend, s->backend) == 0 &&
				  strcmp(h[k].sched, s->sched) == 0 && strcmp(h[k].model, s->model) == 0))
			k++;
		if (k == n && n < max)
			h[n++] = (Hist){s->backend, s->sched, s->model};
	}
	return n;
}

static bool same(const Hist *h, const RpStep *s)
{
	return strcmp(h->backend, s->backend) == 0 && strcmp(h->sched, s->sched) == 0 &&
	       strcmp(h->model, s->model) == 0;
}

static bool in_hist(void *ctx, const RpStep *s)
{
	return same(ctx, s);
}

enum { MAX_HIST = 64, MAX_SHOWN = 20 };

void rp_steps_markdown(FILE *f, const RpRun *run)
{
	if (!run->nsteps)
		return;
	Hist h[MAX_HIST];
	int nh = histories(run, h, MAX_HIST);
	fputs("\n### Decode (`assay decode`)\n\n| model | backend | schedule | steps | agree | "
	      "licensed | defect | failed | token agreement |\n|---|---|---|---:|---:|---:|---:|"
	      "---:|---:|\n", f);
	for (int k = 0; k < nh; k++) {
		RpStepFig F;
		rp_step_figures(run, in_hist, &h[k], &F);
		fprintf(f, "| %s | %s | %s | %d | %d | %d%s | %d | %d | %.2f%% |\n", h[k].model,
			h[k].backend, h[k].sched, F.steps, F.n[RP_STEP_AGREE], F.n[RP_STEP_LICENSED],
			F.unbounded ? " (no bound)" : "", F.n[RP_STEP_DEFECT], F.n[RP_STEP_FAILED],
			F.steps ? 100.0 * F.n[RP_STEP_AGREE] / F.steps : 0);
	}
	int shown = 0;
	for (int i = 0; i < run->nsteps && shown < MAX_SHOWN; i++) {
		const RpStep *s = &run->steps[i];
		if (s->cls == RP_STEP_AGREE)
			continue;
		if (!shown++)
			fputs("\nDivergences and defects (exact margin between the oracle's token and the "
			      "backend's, against the sum of their budgets):\n\n", f);
		fprintf(f, "- %s %s step %d (position %lld): %s, token %d where the oracle says %d",
			s->backend, s->sched, s->step, (long long)s->pos, rp_step_class_name(s->cls),
			s->token, s->exact_token);
		if (s->token != s->exact_token && s->cls != RP_STEP_FAILED)
			fprintf(f, ", margin %.3g against %s%.3g", s->margin,
				s->budget_finite ? "" : "no bound ", s->budget_finite ? s->budget : 0.0);
		if (*s->reason)
			fprintf(f, " (%s)", s->reason);
		fputs("\n", f);
	}
}


void rp_steps_html(FILE *f, const RpRun *run)
{
	if (!run->nsteps)
		return;
	Hist h[MAX_HIST];
	int nh = histories(run, h, MAX_HIST);
	fputs("<section id=\"decode\"><h2>Decode</h2><p>Each step's token against the oracle's "
	      "along the backend's own history: <b>agree</b>; <b>licensed</b>, the exact logits "
	      "of the two tokens within the sum of their budgets (the margin column); "
	      "<b>defect</b>, a flip at a clear margin or logits outside their budgets.</p>\n", f);
	for (int k = 0; k < nh; k++) {
		RpStepFig F;
		rp_step_figures(run, in_hist, &h[k], &F);
		fputs("<h3>", f);
		rp_html_esc(f, h[k].model);
		fputs(" on ", f);
		rp_html_esc(f, h[k].backend);
		fputs(", schedule ", f);
		rp_html_esc(f, h[k].sched);
		fprintf(f, ": %d of %d steps agree, %d licensed, %d defect, %d failed</h3>\n"
			"<table><tr><th>step</th><th>position</th><th>token</th><th>oracle</th>"
			"<th>class</th><th>margin</th><th>budget</th><th>note</th></tr>\n",
			F.n[RP_STEP_AGREE], F.steps, F.n[RP_STEP_LICENSED], F.n[RP_STEP_DEFECT],
			F.n[RP_STEP_FAILED]);
		for (int i = 0; i < run->nsteps; i++) {
			const RpStep *s = &run->steps[i];
			if (!same(&h[k], s))
				continue;
			fprintf(f, "<tr class=\"%s\"><td>%d</td><td>%lld</td><td>%d</td><td>%d</td>"
				"<td>%s</td>", s->cls == RP_STEP_AGREE ? "ok" : s->cls == RP_STEP_LICENSED ?
				"warn" : "bad", s->step, (long long)s->pos, s->token, s->exact_token,
				rp_step_class_name(s->cls));
			if (s->cls == RP_STEP_FAILED)
				fputs("<td>–</td><td>–</td>", f);
			else if (s->budget_finite)
				fprintf(f, "<td>%.3g</td><td>%.3g</td>", s->margin, s->budget);
			else
				fprintf(f, "<td>%.3g</td><td>no bound</td>", s->margin);
			fputs("<td>", f);
			rp_html_esc(f, s->reason);
			fputs("</td></tr>\n", f);
		}
		fputs("</table>\n", f);
	}
	fputs("</section>\n", f);
}
