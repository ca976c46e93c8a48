/* tests/backendutil.h: what the GPU-language backends' suites share: running a graph on a
 * backend and on the c backend with the same kernels and inputs, and comparing the outputs
 * (bit for bit where the language fixes every rounding, else within a few ulps), and the
 * sorted list of the examples. Include after testutil.h. Each suite names its backend and
 * its tolerance for results of cancellation near zero (a fraction of the tensor's largest
 * magnitude, in ulps of the output format). */
#ifndef ASSAY_BACKENDUTIL_H
#define ASSAY_BACKENDUTIL_H

#include <dirent.h>
#include <math.h>
#include "../compiler/compiler.h"
#include "../interp/interp.h"

enum { BT_CLOSE_ULPS = 64 };

/* The compiled-program cache of the suite of backend `name`: $TMPDIR/assay-test-NAME. */
static inline const char *bt_cache_dir(const char *name)
{
	static char buf[512];
	const char *t = getenv("TMPDIR");
	snprintf(buf, sizeof buf, "%s/assay-test-%s", t && *t ? t : "/tmp", name);
	return buf;
}

static inline const Backend *bt_backend(const char *name)
{
	const Backend *b = be_find(name);
	ck_assert_msg(b != NULL, "no backend named %s", name);
	return b;
}

static inline Graph *bt_parse(const char *src)
{
	Diag d = {0};
	Graph *g = ir_parse(src, strlen(src), "test.tg", NULL, 0, &d);
	ck_assert_msg(g != NULL, "parse: %s", d.msg ? d.msg : "?");
	return g;
}

static inline HostTensor *bt_inputs(const Graph *g, uint64_t seed)
{
	Diag d = {0};
	HostTensor *in = calloc((size_t)ir_ninputs(g) + 1, sizeof *in);
	InputSpec spec = {DIST_NORMAL, seed, false};
	ck_assert_msg(mp_make_inputs(g, &spec, NULL, in, &d) == 0, "inputs: %s", d.msg);
	return in;
}

static inline void bt_free_all(HostTensor *t, int n)
{
	for (int i = 0; i < n; i++)
		ht_free(&t[i]);
	free(t);
}

/* g's schedule from directive text ("" for the default). */
static inline void bt_sched_of(Graph *g, const char *text, Schedule *s)
{
	Diag d = {0};
	ck_assert_msg(ir_parse_schedule(g, text, strlen(text), "test.sched", &d) == 0, "%s", d.msg);
	ck_assert_msg(sched_build(g, s, &d) == 0, "%s", d.msg);
}

/* Lowers g under s and runs it on b (2 threads, the cache of the suite `name`). */
static inline int bt_run_on(const char *name, const Backend *b, const Graph *g,
			    const Schedule *s, const HostTensor *in, HostTensor *out, Diag *d)
{
	Kernels *k = kir_lower(g, s, NULL, d);
	if (!k)
		return -1;
	BeOpts o = {2, bt_cache_dir(name)};
	int rc = be_run(b, k, &o, in, out, NULL, d);
	kir_free(k);
	return rc;
}

static inline char *bt_emit_of(const Backend *b, const Graph *g, const Schedule *s)
{
	Diag d = {0};
	Kernels *k = kir_lower(g, s, NULL, &d);
	ck_assert_msg(k != NULL, "lower: %s", d.msg);
	char *src = b->emit(k, &d);
	ck_assert_msg(src != NULL, "emit: %s", d.msg);
	kir_free(k);
	return src;
}

static inline bool bt_same(double a, double b)
{
	return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

/* a (the backend) and c (the c backend) in format f agree within BT_CLOSE_ULPS ulps of the
 * larger, or, after cancellation near zero, within `cancel` ulps of the tensor's largest
 * magnitude `scale`. The worst distance in ulps goes to *worst. */
static inline bool bt_near(double a, double c, Dtype f, double scale, double cancel,
			   double *worst)
{
	if (bt_same(a, c))
		return true;
	if (isnan(a) || isnan(c) || isinf(a) || isinf(c))
		return false;
	double eps = ldexp(1.0, 1 - dt_info(f)->prec), m = fmax(fabs(a), fabs(c));
	double ulps = fabs(a - c) / (eps * fmax(m, ldexp(1.0, (int)dt_info(f)->emin)));
	*worst = fmax(*worst, ulps);
	return ulps <= BT_CLOSE_ULPS || fabs(a - c) <= cancel * eps * scale;
}

/* Runs g under s on backend `name` and on c and compares every output: bit for bit when
 * exact, else bt_near in the coarser of the output's dtype and its store format. */
static inline void bt_diff_vs_c(const char *name, double cancel, const Graph *g,
				const Schedule *s, const HostTensor *in, bool exact, const char *what)
{
	Diag d = {0};
	HostTensor *o1 = calloc((size_t)g->noutputs + 1, sizeof *o1);
	HostTensor *o2 = calloc((size_t)g->noutputs + 1, sizeof *o2);
	ck_assert_msg(bt_run_on(name, bt_backend(name), g, s, in, o1, &d) == 0, "%s: %s: %s",
		      what, name, d.msg);
	ck_assert_msg(bt_run_on(name, be_find("c"), g, s, in, o2, &d) == 0, "%s: c: %s", what,
		      d.msg);
	for (int k = 0; k < g->noutputs; k++) {
		const Tensor *T = &g->tensors[g->outputs[k].tensor];
		Dtype f = o1[k].dtype, st = T->kind == TK_DEF ? s->defs[T->def].store : f;
		if (f != DT_I32 && st != DT_I32 && dt_info(st)->prec < dt_info(f)->prec)
			f = st;
		double scale = 0, worst = 0;
		for (int64_t i = 0; i < o2[k].n; i++)
			if (isfinite(ht_get(&o2[k], i)))
				scale = fmax(scale, fabs(ht_get(&o2[k], i)));
		for (int64_t i = 0; i < o1[k].n; i++) {
			double a = ht_get(&o1[k], i), c = ht_get(&o2[k], i);
			bool ok = exact || f == DT_I32 ? bt_same(a, c)
						       : bt_near(a, c, f, scale, cancel, &worst);
			ck_assert_msg(ok, "%s: output %s [%lld]: %s %a, c %a", what, T->name,
				      (long long)i, name, a, c);
		}
		if (getenv("ASSAY_TEST_VERBOSE"))
			printf("%-44s %-6s worst %.3g ulps\n", what, T->name, worst);
		ht_free(&o1[k]);
		ht_free(&o2[k]);
	}
	free(o1);
	free(o2);
}

/* The examples' paths, sorted; n gets their number. */
static inline char **bt_examples(int *n)
{
	DIR *dir = opendir("examples");
	char **v = calloc(256, sizeof *v);
	*n = 0;
	for (struct dirent *e; dir && (e = readdir(dir)) && *n < 255;) {
		size_t l = strlen(e->d_name);
		if (l > 3 && strcmp(e->d_name + l - 3, ".tg") == 0) {
			v[*n] = malloc(l + 10);
			snprintf(v[(*n)++], l + 10, "examples/%s", e->d_name);
		}
	}
	if (dir)
		closedir(dir);
	for (int i = 1; i < *n; i++)
		for (int j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			char *t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v;
}

static inline void bt_free_examples(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

#endif
