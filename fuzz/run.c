/* fuzz/run.c: checking one graph the way the fuzzer does (fz_check), and the small JSON
 * reader for the fuzzer's own files.
 *
 * A check is `assay check` of one graph under its own schedule: the inputs come from
 * (seed, distribution, specials) through mp_make_inputs exactly as cli/args.c makes them, so
 * `assay check G.tg --seed S --inputs D [--specials]` with ASSAY_FAULT set the same way
 * reproduces any verdict the fuzzer reports. Every verdict is kept (FzVerdict); records may
 * also be written as JSON lines with an extra member (the campaign's case number).
 *
 * Invariant: nothing here depends on time or on the process it runs in, except the timings,
 * which the records carry in their own "timings" member.
 */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"

typedef struct {
	FzResult *res;
	bool oracle_seen;
	char run[64];   /* the (backend, schedule) whose worker timings are counted */
} Sink;

static void grow(FzResult *res)
{
	if (res->n < res->cap)
		return;
	res->cap = res->cap ? 2 * res->cap : 8;
	res->v = realloc(res->v, (size_t)res->cap * sizeof *res->v);
	IR_ASSERT(res->v);
}

/* The record as vf_record_json writes it, with json_extra added before the closing brace. */
static void json_record(FILE *f, const VfRecord *r, const char *extra)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	IR_ASSERT(m);
	vf_record_json(m, r);
	fclose(m);
	IR_ASSERT(len >= 2 && buf[len - 1] == '\n' && buf[len - 2] == '}');
	if (extra && *extra)
		fprintf(f, "%.*s,%s}\n", (int)(len - 2), buf, extra);
	else
		fputs(buf, f);
	free(buf);
}

static void copy_tensor(HostTensor *to, const HostTensor *from)
{
	memset(to, 0, sizeof *to);
	if (!from || !from->data)
		return;
	IR_ASSERT(ht_alloc(to, from->dtype, from->rank, from->dims) == 0);
	memcpy(to->data, from->data, (size_t)(from->n * dt_info(from->dtype)->bytes));
}

static bool failing(const VfRecord *r)
{
	return vf_class(r->verdict, &r->m, r->sampled, &r->m64) == VC_FAILURE;
}

static void keep_record(FzResult *res, const VfRecord *r)
{
	res->kept = realloc(res->kept, (size_t)(res->nkept + 1) * sizeof *res->kept);
	IR_ASSERT(res->kept);
	FzKept *k = &res->kept[res->nkept++];
	memset(k, 0, sizeof *k);
	snprintf(k->backend, sizeof k->backend, "%s", r->backend);
	snprintf(k->sched, sizeof k->sched, "%s", r->sched ? r->sched : "");
	snprintf(k->output, sizeof k->output, "%s", r->output);
	copy_tensor(&k->got, r->got);
	copy_tensor(&k->want, r->want);
	if (r->want_status && r->want) {
		k->status = malloc((size_t)r->want->n + 1);
		IR_ASSERT(k->status);
		memcpy(k->status, r->want_status, (size_t)r->want->n);
	}
	k->sampled = r->want_idx != NULL;
	k->failing = failing(r);
}

/* The kept record of (backend, schedule, output): a graph with an online set is checked
 * under its schedule and the default one, whose bits differ (a variant is held to its
 * original under the same schedule only). */
static const FzKept *kept_of(const FzResult *res, const char *backend, const char *sched,
			     const char *output)
{
	for (int k = 0; k < res->nkept; k++)
		if (strcmp(res->kept[k].backend, backend) == 0 &&
		    strcmp(res->kept[k].sched, sched ? sched : "") == 0 &&
		    strcmp(res->kept[k].output, output) == 0)
			return &res->kept[k];
	return NULL;
}

/* "d3[1, 2]" of flat index i of a tensor shaped like t. */
static void coords(const char *name, const HostTensor *t, int64_t i, char *buf, size_t n)
{
	int64_t c[IR_MAXRANK];
	for (int k = t->rank - 1; k >= 0; k--) {
		c[k] = t->dims[k] ? i % t->dims[k] : 0;
		i = t->dims[k] ? i / t->dims[k] : 0;
	}
	size_t len = (size_t)snprintf(buf, n, "%s[", name);
	for (int k = 0; k < t->rank && len < n; k++)
		len += (size_t)snprintf(buf + len, n - len, "%s%lld", k ? ", " : "", (long long)c[k]);
	if (len < n)
		snprintf(buf + len, n - len, "]");
}

/* r (a variant's record) against its original's: the oracle's values must be the same
 * where both settled (a difference is a toolkit bug: res->oracle_diff); with a claim of
 * bit-identity, where both records hold outputs and neither fails, the outputs must be the
 * same bits (NaN as a category): else *out gets verdict V_VARIANT_MISMATCH and why. */
static void compare(FzResult *res, const VfRecord *r, VfRecord *out, char *why, size_t n)
{
	const FzKept *k = kept_of(res->against, r->backend, r->sched, r->output);
	if (!k)
		return;
	if (!res->oracle_diff && r->want && !k->sampled && !r->want_idx && k->want.data) {
		int64_t i = fz_first_difference(&k->want, r->want, k->status, r->want_status);
		if (i >= 0) {
			char at[200];
			coords(r->output, r->want, i, at, sizeof at);
			IR_ASSERT(asprintf(&res->oracle_diff, "%s: the variant's oracle gives %.17g, the "
					   "original's %.17g", at, ht_get(r->want, i),
					   ht_get(&k->want, i)) >= 0);
		}
	}
	if (!res->against_bit || !r->got || !k->got.data || k->failing || failing(r))
		return;
	int64_t i = fz_first_difference(&k->got, r->got, NULL, NULL);
	if (i < 0)
		return;
	char at[200];
	coords(r->output, r->got, i, at, sizeof at);
	snprintf(why, n, "variant %s claims an emulation bit-identical to its original's, but on "
		 "%s %s is %.17g, the original's %.17g (neither fails its budget)",
		 res->variant ? res->variant : "", r->backend, at, ht_get(r->got, i),
		 ht_get(&k->got, i));
	out->verdict = V_VARIANT_MISMATCH;
	out->reason = why;
}

static void sink(void *ctx, const VfRecord *rec)
{
	Sink *s = ctx;
	FzResult *res = s->res;
	VfRecord copy = *rec, *r = &copy;
	char why[1024];
	if (res->keep)
		keep_record(res, rec);
	if (res->against)
		compare(res, rec, r, why, sizeof why);
	grow(res);
	FzVerdict *v = &res->v[res->n++];
	memset(v, 0, sizeof *v);
	snprintf(v->backend, sizeof v->backend, "%s", r->backend);
	snprintf(v->output, sizeof v->output, "%s", r->output);
	v->dtype = r->dtype;
	v->verdict = r->verdict;
	v->suspect = vf_class(r->verdict, &r->m, r->sampled, &r->m64) == VC_FAILURE;
	if (!s->oracle_seen)
		res->oracle_s += r->oracle_s;
	s->oracle_seen = true;
	/* a worker's timings repeat in each of its outputs' records: count them once */
	char run[64];
	snprintf(run, sizeof run, "%.31s/%.31s", r->backend, r->sched);
	if (strcmp(run, s->run)) {
		snprintf(s->run, sizeof s->run, "%s", run);
		res->budget_s += r->budget_s;
		res->compile_s += r->compile_s;
		res->launch_s += r->launch_s;
		res->worker_s += r->worker_s;
	}
	if (res->json)
		json_record(res->json, r, res->json_extra);
}

void fz_sink_record(FzResult *res, const VfRecord *rec)
{
	Sink s = {res, true, ""};
	snprintf(s.run, sizeof s.run, "%.31s/%.31s", rec->backend, rec->sched);
	sink(&s, rec);
}

void fz_sink_made(const Graph *g, const FzRun *r, FzResult *res, const FzMade *m)
{
	char name[256];
	VfRecord rec;
	memset(&rec, 0, sizeof rec);
	rec.graph = vf_graph_name(g, name, sizeof name);
	rec.file = g->file ? g->file : "";
	rec.backend = m->backend;
	rec.sched = m->sched;
	rec.sched_text = m->sched_text ? m->sched_text : "";
	rec.output = m->output;
	rec.dtype = m->dtype;
	rec.verdict = m->verdict;
	rec.reason = m->reason;
	rec.n_elements = m->n_elements;
	rec.seed = r->seed;
	rec.dist = dist_name(r->dist);
	rec.faults = r->faults;
	rec.case_dir = "";
	rec.ref64_by = "";
	rec.emu_why = m->emu_why;
	fz_sink_record(res, &rec);
}

VfOpts fz_vf_opts(const FzRun *r, VfSink *fn, void *ctx)
{
	return (VfOpts){
		.w = {.timeout_s = r->timeout_s, .compile_timeout_s = r->compile_timeout_s,
		      .threads = 1, .cache_dir = r->cache_dir, .faults = r->faults, .hooks = r->hooks,
		      .pool = r->pool},
		.threads = 1, .seed = r->seed, .dist = dist_name(r->dist), .out_dir = r->out_dir,
		.sink = fn, .ctx = ctx,
		/* the oracle of a case gets the kernels' run limit: a case it cannot judge in time
		 * is skipped (fz_case_run), never a verdict */
		.oracle_timeout_s = r->timeout_s > 0 ? r->timeout_s : 20,
	};
}

int fz_check(const Graph *g, const FzRun *r, FzResult *res, Diag *d)
{
	if (r->pair)
		return fz_check_pair(g, r, res, d);
	if (r->grad)
		return fz_check_grad(g, r, res, d);
	if (r->invariance)
		return fz_check_inv(g, r, res, d);
	int ni = ir_ninputs(g), ns = 0, failed = 0, rc = -1;
	HostTensor *inputs = calloc((size_t)ni + 1, sizeof *inputs);
	IR_ASSERT(inputs);
	VfSched *scheds = NULL;
	InputSpec spec = {r->dist, r->seed, r->specials};
	if (mp_make_inputs(g, &spec, NULL, inputs, d))
		goto out;
	if (vf_sched_list(g, g->has_schedule ? "graph" : "default", r->seed, 0, &scheds, &ns, d))
		goto out_inputs;
	Sink s = {res, false, ""};
	VfOpts vo = fz_vf_opts(r, sink, &s);
	rc = vf_check(g, inputs, r->backends, r->nbackends, scheds, ns, &vo, &failed, d);
	vf_sched_list_free(scheds, ns);
	if (rc == 0)   /* the order of its sums, whatever the values (probe.c) */
		rc = fz_check_probes(g, r, res, d);
out_inputs:
	for (int k = 0; k < ni; k++)
		ht_free(&inputs[k]);
out:
	free(inputs);
	return rc;
}

void fz_result_free(FzResult *res)
{
	free(res->v);
	res->v = NULL;
	res->n = res->cap = 0;
	for (int k = 0; k < res->nkept; k++) {
		ht_free(&res->kept[k].got);
		ht_free(&res->kept[k].want);
		free(res->kept[k].status);
	}
	free(res->kept);
	res->kept = NULL;
	res->nkept = 0;
	free(res->oracle_diff);
	res->oracle_diff = NULL;
}

int fz_result_find(const FzResult *res, const char *backend, const char *output)
{
	for (int k = 0; k < res->n; k++)
		if (strcmp(res->v[k].backend, backend) == 0 && strcmp(res->v[k].output, output) == 0 &&
		    res->v[k].suspect)
			return k;
	return -1;
}

/* ------------------------------------------------------------------ JSON */

/* The end of the JSON value at p (a string, an object, an array or a bare token). */
static const char *value_end(const char *p)
{
	if (*p == '"') {
		for (p++; *p && *p != '"'; p++)
			if (*p == '\\' && p[1])
				p++;
		return *p ? p + 1 : p;
	}
	if (*p == '{' || *p == '[') {
		int depth = 0;
		for (; *p; p++) {
			if (*p == '"') {
				p = value_end(p) - 1;
				continue;
			}
			depth += (*p == '{' || *p == '[') - (*p == '}' || *p == ']');
			if (depth == 0)
				return p + 1;
		}
		return p;
	}
	while (*p && *p != ',' && *p != '}' && *p != ']' && *p != '\n')
		p++;
	return p;
}

static void unescape(const char *p, const char *end, char *buf, size_t n)
{
	size_t k = 0;
	for (p++, end--; p < end && k + 1 < n; p++) {
		char c = *p;
		if (c == '\\' && p + 1 < end) {
			c = *++p;
			c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
		}
		buf[k++] = c;
	}
	buf[k] = 0;
}

/* Top-level members only: nested objects are skipped whole. */
bool fz_json_get(const char *line, const char *key, char *buf, size_t n)
{
	const char *p = strchr(line, '{');
	size_t kl = strlen(key);
	while (p && *p && *p != '}') {
		p++;
		while (*p == ' ')
			p++;
		if (*p != '"')
			return false;
		const char *kend = value_end(p);
		bool match = (size_t)(kend - p) == kl + 2 && strncmp(p + 1, key, kl) == 0;
		p = kend;
		while (*p == ' ' || *p == ':')
			p++;
		const char *vend = value_end(p);
		if (match) {
			if (*p == '"') {
				unescape(p, vend, buf, n);
			} else {
				size_t len = (size_t)(vend - p) < n ? (size_t)(vend - p) : n - 1;
				memcpy(buf, p, len);
				buf[len] = 0;
			}
			return true;
		}
		p = vend;
		while (*p == ' ')
			p++;
	}
	return false;
}
