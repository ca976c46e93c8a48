/* reports/figures.c: the figures of a set of records, shared by the report and the gates,
 * and the summary a report shows.
 *
 * Definitions (docs/policy.md repeats them for gate writers):
 * - max_ratio: the worst error/budget ratio over the numeric results (verdict pass,
 *   over-budget, special-mismatch or emulation-mismatch); a sampled output counts its f64
 *   check too.
 * - emulated: results the emulation check applied to (verify/emucheck.c: held to the
 *   emulating interpreter bit for bit).
 * - mean_signed_ratio (the bias gate): the largest |mean signed error / budget| of a numeric
 *   result (verify/metrics.c), whatever its sign: a kernel whose errors lean one way;
 * - frac_within: elements within budget over elements compared, pooled over the results;
 *   a result that failed without numbers (crash, timeout, oob-write, compile-error)
 *   counts all its elements as outside; unsupported results count nothing.
 * - argmax_agree, topk_agree: agreeing rows over rows, pooled (verify/agree.c).
 * - classes: every result is in one (vf_class): failure, unclaimed special values (a
 *   special-value mismatch only where the budget is +inf: failing, but no claim of the
 *   budget is broken, so not a compiler failure), flaky, pass, unsupported.
 * - distinct failures: distinct signatures among the results of class failure
 *   (rp_signature): what `assay fuzz` counts as distinct failures, since it chases the
 *   same class (a campaign's signatures are its own keys).
 * A case is one (graph, backend, schedule[, campaign case]); schedule directives are
 * counted once per case, by kind (store and accum with their format, order with its
 * value).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "reports.h"

/* Shown where a count is given in words. */
static const char *plural(int64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

void rp_class_line(FILE *f, const RpFig *F, const char *sep)
{
	const int64_t *c = F->classes;
	fprintf(f, "%lld distinct failure%s", (long long)F->distinct, plural(F->distinct, "", "s"));
	if (c[VC_FAILURE])
		fprintf(f, " (%lld result%s)", (long long)c[VC_FAILURE],
			plural(c[VC_FAILURE], "", "s"));
	fprintf(f, "%s%lld result%s with unclaimed special values%s%lld flaky%s%lld pass%s%lld "
		"unsupported", sep, (long long)c[VC_UNCLAIMED], plural(c[VC_UNCLAIMED], "", "s"),
		sep, (long long)c[VC_FLAKY], sep, (long long)c[VC_PASS], sep,
		(long long)c[VC_UNSUPPORTED]);
	if (c[VC_KNOWN])
		fprintf(f, "%s%lld known failure%s (the campaign's baseline)", sep,
			(long long)c[VC_KNOWN], plural(c[VC_KNOWN], "", "s"));
}

int rp_status(const RpFig *F)
{
	return F->classes[VC_FAILURE] ? 2 :
	       F->classes[VC_UNCLAIMED] || F->classes[VC_FLAKY] || F->classes[VC_KNOWN];
}

const char *rp_fig_worst(const RpFig *F, double x, const char *fmt, char *buf, size_t n)
{
	char v[32];
	if (isinf(x))
		snprintf(v, sizeof v, "∞");
	else
		snprintf(v, sizeof v, fmt, x);
	if (!F->numeric)
		snprintf(buf, n, "–");
	else if (F->specials && !(x > 0))
		snprintf(buf, n, "special ×%lld", (long long)F->specials);
	else if (F->specials)
		snprintf(buf, n, "%s + special ×%lld", v, (long long)F->specials);
	else
		snprintf(buf, n, "%s", v);
	return buf;
}

bool rp_has_numbers(const RpRecord *r)
{
	return r->verdict == V_PASS || r->verdict == V_OVER_BUDGET ||
	       r->verdict == V_SPECIAL_MISMATCH || r->verdict == V_EMULATION_MISMATCH;
}

bool rp_has_ratio(const RpRecord *r)
{
	return r->verdict == V_PASS || r->verdict == V_OVER_BUDGET;
}

/* A value as a special-value category reads it: NaN, +inf, -inf, -0, +0, or the number. */
static void value(char *buf, size_t n, double x)
{
	if (isnan(x))
		snprintf(buf, n, "NaN");
	else if (isinf(x))
		snprintf(buf, n, x > 0 ? "+inf" : "-inf");
	else if (x == 0)
		snprintf(buf, n, signbit(x) ? "-0" : "+0");
	else
		snprintf(buf, n, "%.6g", x);
}

const char *rp_special_text(const RpRecord *r, char *buf, size_t n)
{
	if (!r->n_special || !r->has_worst) {
		snprintf(buf, n, r->f64_n_special ? "special values vs the f64 evaluation (%lld "
			 "elements)" : "special values", (long long)r->f64_n_special);
		return buf;
	}
	char got[32], want[32];
	value(got, sizeof got, r->worst_got);
	value(want, sizeof want, r->worst_want);
	if (r->n_special > 1)
		snprintf(buf, n, "%s vs %s (%lld elements)", got, want, (long long)r->n_special);
	else
		snprintf(buf, n, "%s vs %s", got, want);
	return buf;
}

const char *rp_signature(const RpRecord *r, char *buf, size_t n)
{
	if (r->signature && *r->signature)
		snprintf(buf, n, "%s", r->signature);
	else if (vf_verdict_whole(r->verdict))   /* one per kernel, whatever its outputs */
		snprintf(buf, n, "%s | %s | %s", r->graph, r->backend, vf_verdict_name(r->verdict));
	else
		snprintf(buf, n, "%s | %s | %s | %s", r->graph, r->backend, r->output,
			 vf_verdict_name(r->verdict));
	return buf;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Distinct strings of an array (sorts it). */
static int64_t distinct(char **s, int64_t n)
{
	if (n == 0)
		return 0;
	qsort(s, (size_t)n, sizeof *s, cmp_str);
	int64_t k = 1;
	for (int64_t i = 1; i < n; i++)
		k += strcmp(s[i], s[i - 1]) != 0;
	return k;
}

static void add(RpFig *f, const RpRecord *r)
{
	f->results++;
	f->verdicts[r->verdict]++;
	f->classes[r->cls]++;
	f->failing += vf_verdict_fails(r->verdict);
	if (r->cls == VC_KNOWN)   /* counted, but its numbers are the baseline's, not the run's */
		return;
	f->specials += r->verdict == V_SPECIAL_MISMATCH;
	f->emulated += r->emulated;
	if (rp_has_numbers(r)) {
		f->numeric++;
		double ratio = r->max_ratio > r->f64_max_ratio || isnan(r->f64_max_ratio) ?
			       r->max_ratio : r->f64_max_ratio;
		f->max_ratio = isnan(ratio) || ratio > f->max_ratio ? ratio : f->max_ratio;
		f->max_ulp = r->max_ulp > f->max_ulp ? r->max_ulp : f->max_ulp;
		double bias = fabs(r->mean_signed_ratio);
		f->max_bias = isnan(bias) || bias > f->max_bias ? bias : f->max_bias;
		f->checked += (double)r->n_checked;
		f->within += round(r->frac_within * (double)r->n_checked);
	} else if (vf_verdict_fails(r->verdict)) {
		f->checked += (double)(r->n_elements > 0 ? r->n_elements : 1);
	}
	if (r->agree_rows > 0 && !isnan(r->argmax_agree)) {
		f->rows += (double)r->agree_rows;
		f->argmax_ok += round(r->argmax_agree * (double)r->agree_rows);
		f->topk_ok += round(r->topk_agree * (double)r->agree_rows);
	}
}

void rp_figures(const RpRun *run, RpKeep *keep, void *ctx, RpFig *f)
{
	memset(f, 0, sizeof *f);
	char **sigs = calloc((size_t)run->nrecs + 1, sizeof *sigs);
	IR_ASSERT(sigs);
	int64_t nsig = 0;
	for (int i = 0; i < run->nrecs; i++) {
		const RpRecord *r = &run->recs[i];
		if (keep && !keep(ctx, r))
			continue;
		add(f, r);
		if (r->cls == VC_FAILURE) {
			char buf[1024];
			sigs[nsig] = strdup(rp_signature(r, buf, sizeof buf));
			IR_ASSERT(sigs[nsig]);
			nsig++;
		}
	}
	f->distinct = distinct(sigs, nsig);
	for (int64_t i = 0; i < nsig; i++)
		free(sigs[i]);
	free(sigs);
}

double rp_frac_within(const RpFig *f)
{
	return f->checked > 0 ? f->within / f->checked : NAN;
}

double rp_argmax_agree(const RpFig *f)
{
	return f->rows > 0 ? f->argmax_ok / f->rows : NAN;
}

double rp_topk_agree(const RpFig *f)
{
	return f->rows > 0 ? f->topk_ok / f->rows : NAN;
}

/* ---------------------------------------------------------------- summary */

typedef struct {
	const char *backend, *dtype;
} GroupKey;

static bool in_group(void *ctx, const RpRecord *r)
{
	const GroupKey *k = ctx;
	return strcmp(r->backend, k->backend) == 0 && strcmp(r->dtype, k->dtype) == 0;
}

/* Rank of a name in a list of known names (unknown ones after, alphabetically). */
static int rank(const char *s, const char *const *known, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, known[i]) == 0)
			return i;
	return n;
}

static int by_group(const void *a, const void *b)
{
	static const char *const backends[] = {"c", "opencl", "vulkan", "wgsl", "cuda"};
	static const char *const dtypes[] = {"f64", "f32", "f16", "bf16", "i32"};
	const RpGroup *x = a, *y = b;
	int c = rank(x->backend, backends, 5) - rank(y->backend, backends, 5);
	if (!c)
		c = strcmp(x->backend, y->backend);
	if (!c)
		c = rank(x->dtype, dtypes, 5) - rank(y->dtype, dtypes, 5);
	return c ? c : strcmp(x->dtype, y->dtype);
}

static void groups(const RpRun *run, RpSummary *s)
{
	for (int i = 0; i < run->nrecs; i++) {
		const RpRecord *r = &run->recs[i];
		int g = 0;
		while (g < s->ngroups && !(strcmp(s->groups[g].backend, r->backend) == 0 &&
					   strcmp(s->groups[g].dtype, r->dtype) == 0))
			g++;
		if (g < s->ngroups)
			continue;
		s->groups = realloc(s->groups, (size_t)(s->ngroups + 1) * sizeof *s->groups);
		IR_ASSERT(s->groups);
		RpGroup *G = &s->groups[s->ngroups++];
		G->backend = strdup(r->backend);
		G->dtype = strdup(r->dtype);
		IR_ASSERT(G->backend && G->dtype);
		GroupKey k = {G->backend, G->dtype};
		rp_figures(run, in_group, &k, &G->fig);
	}
	if (s->ngroups)
		qsort(s->groups, (size_t)s->ngroups, sizeof *s->groups, by_group);
}

static int by_count(const void *a, const void *b)
{
	const RpDistinct *x = a, *y = b;
	return x->hits != y->hits ? (x->hits < y->hits ? 1 : -1) : x->first - y->first;
}

static void distincts(const RpRun *run, RpSummary *s)
{
	for (int i = 0; i < run->nrecs; i++) {
		const RpRecord *r = &run->recs[i];
		if (r->cls != VC_FAILURE)
			continue;
		char buf[1024];
		rp_signature(r, buf, sizeof buf);
		int k = 0;
		while (k < s->ndistinct && strcmp(s->distinct[k].signature, buf))
			k++;
		if (k < s->ndistinct) {
			s->distinct[k].count++;
			continue;
		}
		s->distinct = realloc(s->distinct, (size_t)(k + 1) * sizeof *s->distinct);
		IR_ASSERT(s->distinct);
		RpDistinct *D = &s->distinct[s->ndistinct++];
		D->signature = strdup(buf);
		IR_ASSERT(D->signature);
		D->count = 1;
		D->first = i;
		D->folder = -1;
		for (int f = 0; f < run->nfails; f++)
			if ((*r->failure_dir && strcmp(r->failure_dir, run->fails[f].name) == 0) ||
			    (*run->fails[f].signature && strcmp(run->fails[f].signature, buf) == 0))
				D->folder = f;
	}
	for (int k = 0; k < s->ndistinct; k++) {
		RpDistinct *D = &s->distinct[k];
		D->hits = D->folder >= 0 && run->fails[D->folder].count >= 0 ?
			  run->fails[D->folder].count : D->count;
	}
	if (s->ndistinct)
		qsort(s->distinct, (size_t)s->ndistinct, sizeof *s->distinct, by_count);
}

static const char *const known_dirs[] = {
	"store f64", "store f32", "store f16", "store bf16", "accum f64", "accum f32",
	"accum f16", "accum bf16", "inline", "tile", "split", "order linear", "order pairwise",
};

static void count(RpCount **c, int *n, const char *name, int64_t by)
{
	for (int i = 0; i < *n; i++)
		if (strcmp((*c)[i].name, name) == 0) {
			(*c)[i].count += by;
			return;
		}
	*c = realloc(*c, (size_t)(*n + 1) * sizeof **c);
	IR_ASSERT(*c);
	(*c)[*n].name = strdup(name);
	IR_ASSERT((*c)[*n].name);
	(*c)[(*n)++].count = by;
}

/* The kind of one directive line: "store f16", "tile", "order pairwise"... */
static void dir_kind(const char *line, size_t len, char *buf, size_t n)
{
	size_t w = strcspn(line, " \t:");
	w = w < len ? w : len;
	const char *colon = memchr(line, ':', len);
	bool qual = (w == 5 && (!strncmp(line, "store", 5) || !strncmp(line, "accum", 5) ||
				!strncmp(line, "order", 5))) && colon;
	if (!qual) {
		snprintf(buf, n, "%.*s", (int)w, line);
		return;
	}
	const char *v = colon + 1;
	while (v < line + len && (*v == ' ' || *v == '\t'))
		v++;
	size_t vl = (size_t)(line + len - v);
	while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r'))
		vl--;
	snprintf(buf, n, "%.*s %.*s", (int)w, line, (int)vl, v);
}

/* Is record i the first of its case (graph, backend, schedule, case number)? */
static bool first_of_case(const RpRun *run, int i)
{
	const RpRecord *r = &run->recs[i];
	for (int j = i - 1; j >= 0 && i - j < 64; j--) {
		const RpRecord *q = &run->recs[j];
		if (!strcmp(q->graph, r->graph) && !strcmp(q->backend, r->backend) &&
		    !strcmp(q->sched, r->sched) && q->case_no == r->case_no &&
		    q->sched_seed == r->sched_seed)
			return false;
	}
	return true;
}

static void directives(const RpRun *run, RpSummary *s)
{
	for (size_t k = 0; k < ARRAY_LEN(known_dirs); k++)
		count(&s->dirs, &s->ndirs, known_dirs[k], 0);
	for (int i = 0; i < run->nrecs; i++) {
		if (!first_of_case(run, i))
			continue;
		s->ncases++;
		for (const char *p = run->recs[i].sched_text; *p;) {
			size_t len = strcspn(p, "\n");
			size_t lead = strspn(p, " \t");
			if (len > lead && p[lead] != '#') {
				char kind[96];
				dir_kind(p + lead, len - lead, kind, sizeof kind);
				count(&s->dirs, &s->ndirs, kind, 1);
			}
			p += len + (p[len] == '\n');
		}
	}
	s->dirs_never = calloc((size_t)s->ndirs + 1, sizeof *s->dirs_never);
	IR_ASSERT(s->dirs_never);
	for (int i = 0; i < s->ndirs; i++)
		if (s->dirs[i].count == 0)
			s->dirs_never[s->ndirs_never++] = s->dirs[i].name;
}

const char *rp_rule_domain(unsigned domain)
{
	return domain == RW_EXACT ? "exact" : domain == RW_REAL ? "real" :
	       domain == RW_INT ? "integer" : "?";
}

static RpRule *rule_of(RpSummary *s, const char *name)
{
	for (int i = 0; i < s->nrules; i++)
		if (strcmp(s->rules[i].name, name) == 0)
			return &s->rules[i];
	s->rules = realloc(s->rules, (size_t)(s->nrules + 1) * sizeof *s->rules);
	IR_ASSERT(s->rules);
	RpRule *r = &s->rules[s->nrules++];
	memset(r, 0, sizeof *r);
	r->name = strdup(name);
	IR_ASSERT(r->name);
	return r;
}

/* Every rule the compiler knows (vf_rules), with the firings the records carry, counted
 * once per case (every output of a case carries the same counters). */
static void rules(const RpRun *run, RpSummary *s)
{
	RwStats st;
	vf_rules(&st);
	for (int i = 0; i < st.nrules; i++)
		rule_of(s, st.name[i])->domain = st.domain[i];
	for (int i = 0; i < run->nrecs; i++) {
		const RpRecord *r = &run->recs[i];
		if (!r->has_rules || !first_of_case(run, i))
			continue;
		s->rules_recorded = true;
		s->rule_cases++;
		for (int k = 0; k < r->nrules; k++) {
			RpRule *u = rule_of(s, r->rule_names[k]);
			u->count += r->rule_counts[k];
			u->cases += r->rule_counts[k] > 0;
		}
	}
}

/* The compiler's coverage: each case (graph, backend, schedule) counted once, as rules. */
static void coverage(const RpRun *run, RpSummary *s)
{
	RpCoverage *c = &s->cov;
	for (int i = 0; i < run->nrecs; i++) {
		const RpRecord *r = &run->recs[i];
		if (!r->has_cov || !first_of_case(run, i))
			continue;
		c->recorded = true;
		c->cases++;
		c->unknown += r->cov_unknown;
		for (int k = 0; k < r->ncov; k++)
			c->hits[r->cov[k]]++;
		for (int p = 0; p < COV__COUNT; p++)
			c->reachable[p] |= vf_cov_reaches(p, r->backend);
	}
	for (int p = 0; p < COV__COUNT; p++) {
		c->reachable[p] |= c->hits[p] > 0;
		c->nreachable += c->reachable[p];
		c->nreached += c->hits[p] > 0;
	}
}

int rp_cov_areas(const char **areas, int max)
{
	int n = 0;
	for (int p = 0; p < COV__COUNT; p++) {
		int k = 0;
		while (k < n && strcmp(areas[k], vf_cov_area(p)))
			k++;
		if (k == n && n < max)
			areas[n++] = vf_cov_area(p);
	}
	return n;
}

void rp_cov_area(const RpCoverage *c, const char *area, int *points, int *reachable, int *reached)
{
	*points = *reachable = *reached = 0;
	for (int p = 0; p < COV__COUNT; p++)
		if (strcmp(vf_cov_area(p), area) == 0) {
			++*points;
			*reachable += c->reachable[p];
			*reached += c->hits[p] > 0;
		}
}

/* The records of metamorphic variants (a "variant" member, fuzz/meta.c): how many of each
 * kind, their failures, the bit-identity mismatches among them, and the distinct failures
 * a variant found first. */
static void variants(const RpRun *run, RpSummary *s)
{
	for (int i = 0; i < run->nrecs; i++) {
		const RpRecord *r = &run->recs[i];
		if (!*r->variant)
			continue;
		const char *dot = strchr(r->variant, '.');
		count(&s->variants, &s->nvariants, dot ? dot + 1 : r->variant, 1);
		s->variant_results++;
		s->variant_failures += r->cls == VC_FAILURE;
		s->variant_mismatches += r->verdict == V_VARIANT_MISMATCH;
	}
	for (int k = 0; k < s->ndistinct; k++)
		s->variant_distinct += *run->recs[s->distinct[k].first].variant != 0;
}

void rp_summarise(const RpRun *run, RpSummary *s)
{
	memset(s, 0, sizeof *s);
	rp_figures(run, NULL, NULL, &s->all);
	groups(run, s);
	distincts(run, s);
	directives(run, s);
	rules(run, s);
	coverage(run, s);
	variants(run, s);
	char **names = calloc((size_t)run->nrecs + 1, sizeof *names);
	IR_ASSERT(names);
	for (int i = 0; i < run->nrecs; i++)
		names[i] = run->recs[i].graph;
	s->ngraphs = (int)distinct(names, run->nrecs);
	free(names);
}

void rp_summary_free(RpSummary *s)
{
	for (int i = 0; i < s->ngroups; i++) {
		free(s->groups[i].backend);
		free(s->groups[i].dtype);
	}
	for (int i = 0; i < s->ndistinct; i++)
		free(s->distinct[i].signature);
	for (int i = 0; i < s->ndirs; i++)
		free(s->dirs[i].name);
	for (int i = 0; i < s->nrules; i++)
		free(s->rules[i].name);
	for (int i = 0; i < s->nvariants; i++)
		free(s->variants[i].name);
	free(s->variants);
	free(s->groups);
	free(s->distinct);
	free(s->dirs);
	free(s->dirs_never);
	free(s->rules);
	memset(s, 0, sizeof *s);
}
