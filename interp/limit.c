/* interp/limit.c: the limits of an evaluation (limit.h): the deadline, the memory cap,
 * progress reports, and the one way out when memory runs out where no error can be
 * returned.
 *
 * Invariants: a Limits' hit goes from LIM_NONE to one limit once (compare-and-swap), and
 * only the thread that made that step writes why; readers read why only after the threads
 * of the call are joined (lim_diag). Progress reports are rate-limited by a compare-and-swap
 * on next_ns, so one thread at a time calls the callback, about once a second.
 */
#include <gmp.h>
#include <mpfr.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "limit.h"

enum { GIB = 1 << 30 };

double mp_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int64_t mp_default_mem_cap(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
	int64_t cap = (int64_t)8 * GIB;
	if (pages > 0 && size > 0 && (int64_t)pages / 2 < cap / size)
		cap = (int64_t)pages / 2 * size;
	return cap;
}

const char *lim_bytes(char *buf, size_t n, int64_t bytes)
{
	static const char *unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024 && u + 1 < ARRAY_LEN(unit)) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%lld bytes", (long long)bytes);
	else
		snprintf(buf, n, "%.1f %s", v, unit[u]);
	return buf;
}

const char *lim_shape(const Graph *g, int t, char *buf, size_t n)
{
	const Tensor *T = &g->tensors[t];
	size_t k = (size_t)snprintf(buf, n, "%s[", dt_name((Dtype)T->dtype));
	for (int i = 0; i < T->rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "",
				      (long long)T->dims[i].value);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

/* ------------------------------------------------------------ out of memory */

/* The file named by the hard out-of-memory path (see limit.h: the one global). */
static char oom_label[512] = "a graph";

_Noreturn void mp_oom_exit(size_t bytes)
{
	char msg[700];
	int n = snprintf(msg, sizeof msg, "assay: out of memory evaluating %s: %zu bytes could "
			 "not be allocated\n", oom_label, bytes);
	if (n > 0 && write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0)
		n = 0;
	_exit(3);
}

void *mp_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		mp_oom_exit(n);
	return p;
}

void *mp_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		mp_oom_exit(n * size);
	return p;
}

void *mp_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		mp_oom_exit(n);
	return q;
}

static void *gmp_alloc(size_t n) { return mp_xmalloc(n); }
static void *gmp_realloc(void *p, size_t old, size_t n) { (void)old; return mp_xrealloc(p, n); }
static void gmp_free(void *p, size_t n) { (void)n; free(p); }

/* GMP's defaults print "GNU MP: Cannot allocate memory" and abort (SIGABRT). Ours are
 * malloc, realloc and free too, so memory allocated before the switch is freed alike; MPFR
 * caches the functions per thread, hence the cleanup first (this thread's cache). */
static void install_hooks(void)
{
	mpfr_mp_memory_cleanup();
	mp_set_memory_functions(gmp_alloc, gmp_realloc, gmp_free);
}

/* ------------------------------------------------------------ limits */

void lim_init(Limits *L, const Graph *g, const MpOpts *o, const char *who)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, install_hooks);
	memset(L, 0, sizeof *L);
	L->g = g;
	L->who = who;
	L->t0 = L->phase_t0 = mp_now();
	L->deadline = o ? o->deadline : 0;
	L->cap = o && o->mem_cap ? o->mem_cap : mp_default_mem_cap();
	L->fn = o ? o->progress : NULL;
	L->ctx = o ? o->progress_ctx : NULL;
	atomic_init(&L->used, 0);
	atomic_init(&L->hit, LIM_NONE);
	atomic_init(&L->next_ns, (int64_t)((L->t0 + 1) * 1e9));
	atomic_init(&L->done, 0);
	atomic_init(&L->work, 0);
	atomic_init(&L->tensor, NULL);
	if (g)
		snprintf(oom_label, sizeof oom_label, "%s", g->file ? g->file : g->name ? g->name : "a graph");
}

void lim_free(Limits *L)
{
	free(L->why);
	L->why = NULL;
}

static const char *file_of(const Limits *L)
{
	return L->g && L->g->file ? L->g->file : L->g && L->g->name ? L->g->name : "<graph>";
}

void lim_phase(Limits *L, const char *phase, int64_t total, int64_t work_total)
{
	L->phase = phase;
	L->total = total;
	L->work_total = work_total;
	L->phase_t0 = mp_now();
	atomic_store(&L->done, 0);
	atomic_store(&L->work, 0);
}

/* An integer expression without index variables (sizes and literals under + - *). */
static bool const_int(const Graph *g, Ref r, int64_t *v)
{
	const Node *n = &g->nodes[r];
	int64_t a, b;
	switch (n->kind) {
	case NK_INT: *v = n->u.ival; return true;
	case NK_SIZE: *v = g->sizes[n->u.size].value; return true;
	case NK_OP: break;
	default: return false;
	}
	switch (n->op) {
	case OP_NEG: return const_int(g, n->a[0], &a) && !__builtin_sub_overflow((int64_t)0, a, v);
	case OP_ADD: return const_int(g, n->a[0], &a) && const_int(g, n->a[1], &b) &&
			    !__builtin_add_overflow(a, b, v);
	case OP_SUB: return const_int(g, n->a[0], &a) && const_int(g, n->a[1], &b) &&
			    !__builtin_sub_overflow(a, b, v);
	case OP_MUL: return const_int(g, n->a[0], &a) && const_int(g, n->a[1], &b) &&
			    !__builtin_mul_overflow(a, b, v);
	default: return false;
	}
}

/* The reduction terms one unit of definition di evaluates when every range is a constant,
 * else -1; 1 for a plain definition. */
static int64_t unit_work(const Graph *g, int di)
{
	const Def *d = &g->defs[di];
	int64_t w = 1;
	for (int r = 0; r < d->nred; r++) {
		int64_t lo, hi;
		if (!const_int(g, d->red[r].lo, &lo) || !const_int(g, d->red[r].hi, &hi))
			return -1;
		if (__builtin_mul_overflow(w, hi > lo ? hi - lo : 0, &w))
			return -1;
	}
	return w;
}

void lim_phase_defs(Limits *L, const char *phase)
{
	const Graph *g = L->g;
	int64_t total = 0, work = 0;
	for (int di = 0; di < g->ndefs; di++) {
		const Def *D = &g->defs[di];
		int64_t n = ir_tensor_count(g, D->out[0]), uw = unit_work(g, di), nw;
		if (D->monoid == MO_TOPK)
			n /= D->lhs[D->nlhs - 1].ext.value;
		total += n;
		if (uw < 0 || work < 0 || __builtin_mul_overflow(n, uw, &nw) ||
		    __builtin_add_overflow(work, nw, &work))
			work = -1;
	}
	lim_phase(L, phase, total, work < 0 ? 0 : work);
}

void lim_set(Limits *L, int kind, const char *why)
{
	int none = LIM_NONE;
	if (atomic_compare_exchange_strong(&L->hit, &none, kind)) {
		L->why = strdup(why);
		if (!L->why)
			mp_oom_exit(strlen(why));
	}
}

static void report(Limits *L, double t)
{
	MpProgress p = {
		.phase = L->phase ? L->phase : "evaluating", .tensor = atomic_load(&L->tensor),
		.done = atomic_load(&L->done), .total = L->total, .work_done = atomic_load(&L->work),
		.work_total = L->work_total, .elapsed_s = t - L->phase_t0, .eta_s = -1,
	};
	p.rate = p.elapsed_s > 0 ? (double)p.work_done / p.elapsed_s : 0;
	if (p.work_total > 0 && p.work_done > 0)
		p.eta_s = p.elapsed_s * (double)(p.work_total - p.work_done) / (double)p.work_done;
	else if (p.total > 0 && p.done > 0)
		p.eta_s = p.elapsed_s * (double)(p.total - p.done) / (double)p.done;
	L->fn(L->ctx, &p);
}

static void deadline_passed(Limits *L, double t)
{
	char why[1024];
	const char *tn = atomic_load(&L->tensor);
	int n = snprintf(why, sizeof why, "%s: %s stopped at its deadline, %.1f s after it "
			 "started", file_of(L), L->who, t - L->t0);
	if (n > 0 && (size_t)n < sizeof why && L->phase)
		n += snprintf(why + n, sizeof why - (size_t)n, ", %s%s%s%s (%lld of %lld elements, "
			      "%lld terms and elements computed)", L->phase, tn ? " '" : "",
			      tn ? tn : "", tn ? "'" : "", (long long)atomic_load(&L->done),
			      (long long)L->total, (long long)atomic_load(&L->work));
	if (n > 0 && (size_t)n < sizeof why)
		snprintf(why + n, sizeof why - (size_t)n, "; allow it more time (--timeout) or "
			 "evaluate a smaller --size");
	lim_set(L, LIM_DEADLINE, why);
}

bool lim_poll(Limits *L, int64_t elements, int64_t work)
{
	if (elements)
		atomic_fetch_add_explicit(&L->done, elements, memory_order_relaxed);
	if (work)
		atomic_fetch_add_explicit(&L->work, work, memory_order_relaxed);
	if (lim_hit(L))
		return true;
	if (L->deadline <= 0 && !L->fn)
		return false;
	double t = mp_now();
	if (L->deadline > 0 && t >= L->deadline) {
		deadline_passed(L, t);
		return true;
	}
	if (L->fn) {
		int64_t due = atomic_load_explicit(&L->next_ns, memory_order_relaxed);
		int64_t ns = (int64_t)(t * 1e9);
		if (ns >= due && atomic_compare_exchange_strong(&L->next_ns, &due, ns + 1000000000))
			report(L, t);
	}
	return false;
}

bool lim_charge(Limits *L, int64_t bytes, const char *what)
{
	int64_t now = atomic_fetch_add(&L->used, bytes) + bytes;
	if (L->cap < 0 || now <= L->cap)
		return true;
	atomic_fetch_sub(&L->used, bytes);
	char why[1024], a[32], b[32], c[32];
	snprintf(why, sizeof why, "%s: %s reached its memory cap of %s while allocating %s more "
		 "for %s (it held %s); evaluate a smaller --size, sample large outputs (check's "
		 "--max-exact), or raise the cap (--oracle-mem MB)", file_of(L), L->who,
		 lim_bytes(a, sizeof a, L->cap), lim_bytes(b, sizeof b, bytes), what,
		 lim_bytes(c, sizeof c, now - bytes));
	lim_set(L, LIM_MEMORY, why);
	return false;
}

void lim_release(Limits *L, int64_t bytes)
{
	atomic_fetch_sub(&L->used, bytes);
}

void lim_diag(Limits *L, Diag *d)
{
	if (!d)
		return;
	diag_clear(d);
	diag_set(d, 2, "%s", L->why ? L->why : "the evaluation stopped at a limit");
}

int lim_oom(Limits *L, Diag *d, int64_t bytes, const char *what)
{
	char a[32], b[32];
	diag_set(d, 3, "%s: out of memory evaluating %s: %s could not be allocated (the oracle "
		 "held %s)", file_of(L), what, lim_bytes(a, sizeof a, bytes),
		 lim_bytes(b, sizeof b, atomic_load(&L->used)));
	return -1;
}
