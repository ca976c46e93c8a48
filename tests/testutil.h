/* tests/testutil.h: small helpers shared by the Check suites. Tests run from the repository
 * root, so paths like "examples/matmul.tg" work. */
#ifndef ASSAY_TESTUTIL_H
#define ASSAY_TESTUTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../compiler/compiler.h"

/* Reads a whole file into a NUL-terminated heap buffer; NULL if it cannot. */
static inline char *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		size_t k = fread(buf + n, 1, 4096, f);
		n += k;
		if (k == 0)
			break;
	}
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

/* The log of campaign dir without its timings (the only part of a case's text that depends
 * on the run): records lose "timings", done lines their *_s members. A torn last line is
 * left out with torn_ok, else a failure. The caller frees. */
static inline char *tu_log_untimed(const char *dir, bool torn_ok)
{
	char path[512];
	snprintf(path, sizeof path, "%s/results.jsonl", dir);
	char *t = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(t);
	char *out = malloc(strlen(t) + 1), *o = out;
	for (char *p = t; *p;) {
		char *nl = strchr(p, '\n');
		if (!nl && torn_ok)
			break;
		ck_assert_msg(nl, "a torn last line in %s", path);
		char *cut = strstr(p, ",\"timings\":{");
		if (cut && cut < nl) {
			memcpy(o, p, (size_t)(cut - p));
			o += cut - p;
			p = strchr(cut, '}') + 1;
		}
		cut = strncmp(p, "{\"done\":", 8) == 0 ? strstr(p, ",\"gen_s\":") : NULL;
		if (cut && cut < nl) {
			memcpy(o, p, (size_t)(cut - p));
			o += cut - p;
			*o++ = '}';
			p = nl;
		}
		memcpy(o, p, (size_t)(nl + 1 - p));
		o += nl + 1 - p;
		p = nl + 1;
	}
	*o = 0;
	free(t);
	return out;
}

/* The compiled-program cache of suite `name`: $TMPDIR/assay-test-NAME (a static buffer). */
static inline const char *tu_cache_dir(const char *name)
{
	static char buf[512];
	const char *t = getenv("TMPDIR");
	snprintf(buf, sizeof buf, "%s/assay-test-%s", t && *t ? t : "/tmp", name);
	return buf;
}

/* A new empty directory /tmp/assay-test-NAME.XXXXXX (malloc'ed); tu_rm_rf removes one. */
static inline char *tu_mkdtemp(const char *name)
{
	char *t = NULL;
	ck_assert_int_ge(asprintf(&t, "/tmp/assay-test-%s.XXXXXX", name), 0);
	ck_assert_ptr_nonnull(mkdtemp(t));
	return t;
}

static inline void tu_rm_rf(const char *dir)
{
	char *cmd = NULL;
	ck_assert_int_ge(asprintf(&cmd, "rm -rf '%s'", dir), 0);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
}

/* The graph of a .tg text; the test fails on a parse error. */
static inline Graph *tu_parse(const char *src)
{
	Diag d = {0};
	Graph *g = ir_parse(src, strlen(src), "test.tg", NULL, 0, &d);
	ck_assert_msg(g != NULL, "parse: %s", d.msg ? d.msg : "?");
	return g;
}

/* The inputs of g (input order), each allocated in its declared dtype and shape, zero. */
static inline HostTensor *tu_new_inputs(const Graph *g)
{
	int n = ir_ninputs(g);
	HostTensor *in = calloc((size_t)n + 1, sizeof *in);
	for (int k = 0; k < n; k++) {
		const Tensor *T = &g->tensors[ir_input_tensor(g, k)];
		int64_t dims[IR_MAXRANK];
		for (int i = 0; i < T->rank; i++)
			dims[i] = T->dims[i].value;
		ck_assert_int_eq(ht_alloc(&in[k], (Dtype)T->dtype, T->rank, dims), 0);
	}
	return in;
}

/* Frees n tensors and the array that holds them (t may be NULL). */
static inline void tu_free_tensors(HostTensor *t, int n)
{
	for (int i = 0; t && i < n; i++)
		ht_free(&t[i]);
	free(t);
}

/* splitmix64's output function: well-mixed test data from an index. */
static inline uint64_t tu_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The float and the double with the given bits. */
static inline float tu_bits_f(uint32_t b)
{
	float f;
	memcpy(&f, &b, sizeof f);
	return f;
}

static inline double tu_bits_d(uint64_t b)
{
	double f;
	memcpy(&f, &b, sizeof f);
	return f;
}

/* The same value: both NaN, or equal with the same sign (so -0 is not +0). */
static inline bool tu_same(double a, double b)
{
	return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

/* Two schedules of g make the same choices for every definition (formats, inlining,
 * order, tiles, splits). */
static inline bool tu_sched_equal(const Graph *g, const Schedule *a, const Schedule *b)
{
	for (int d = 0; d < g->ndefs; d++) {
		const DefSched *x = &a->defs[d], *y = &b->defs[d];
		if (x->inlined != y->inlined || x->op != y->op || x->accum != y->accum ||
		    x->store != y->store || x->order != y->order || x->mma != y->mma ||
		    (x->mma && (x->mma_ab != y->mma_ab || x->mma_m != y->mma_m ||
				x->mma_n != y->mma_n || x->mma_k != y->mma_k)) ||
		    memcmp(x->tile, y->tile, sizeof x->tile) ||
		    memcmp(x->split, y->split, sizeof x->split))
			return false;
	}
	return true;
}

/* Runs a Check suite with fork mode on and returns the process exit status. */
static inline int tu_run(Suite *s)
{
	SRunner *r = srunner_create(s);
	srunner_set_fork_status(r, CK_FORK);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
