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

static void sink(void *ctx, const VfRecord *r)
{
	Sink *s = ctx;
	FzResult *res = s->res;
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

int fz_check(const Graph *g, const FzRun *r, FzResult *res, Diag *d)
{
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
	VfOpts vo = {
		.w = {.timeout_s = r->timeout_s, .compile_timeout_s = r->compile_timeout_s,
		      .threads = 1, .cache_dir = r->cache_dir, .faults = r->faults, .hooks = r->hooks,
		      .pool = r->pool},
		.threads = 1, .seed = r->seed, .dist = dist_name(r->dist), .out_dir = r->out_dir,
		.sink = sink, .ctx = &s,
		/* the oracle of a case gets the kernels' run limit: a case it cannot judge in time
		 * is skipped (fz_case_run), never a verdict */
		.oracle_timeout_s = r->timeout_s > 0 ? r->timeout_s : 20,
	};
	rc = vf_check(g, inputs, r->backends, r->nbackends, scheds, ns, &vo, &failed, d);
	vf_sched_list_free(scheds, ns);
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
