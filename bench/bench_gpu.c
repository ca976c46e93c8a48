/* bench/bench_gpu.c: the GPU backends, each figure beside its anchor measured in the same
 * run (issue 5).
 *
 * 1. Per available backend other than c, per example (examples/NAME.tg, with its own
 *    schedule, as bench_c.c): the time of a run, the median of >= 5 batches of runs back
 *    to back after one warm-up (the run driver's be_run_time: one synchronisation and one
 *    error-slot read a batch, so neither is in the figure), beside the C backend's (one
 *    thread per core) on the same inputs, and the ratio C / backend.
 * 2. cuda: a derived bf16 matmul 4096^3 accumulating in f32, under candidate schedules, in
 *    TFLOP/s, beside cuBLAS through PyTorch (bench/anchor_torch.py, run from here).
 * 3. cuda: softmax and layernorm over 8192 x 8192 (f32 and bf16) under candidate schedules,
 *    in GB/s (inputs read once + outputs written once, over the launch time), beside the
 *    device-to-device copy bandwidth measured here through the driver API (libcuda.so.1 by
 *    dlopen, timed with CUDA events) and PyTorch's own softmax and layer_norm.
 * Every candidate prints its schedule and the CUDA plan of its kernels (the emitted
 * source's kernel comments), and its output is spot-checked on the host against a double
 * reference with a stated error bound: a wrong kernel's time is no figure. Large inputs
 * come from a cheap deterministic generator (splitmix64), not the MPFR input generator.
 * --derived-on runs items 2 and 3 on other backends as well (or instead of cuda: that is
 * how they are exercised on a machine without a GPU).
 *
 * Run from the repository root: build-gb/bench/bench_gpu [--quick] [--json FILE] ...
 * (--help). Exit 0, or 1 when a derived kernel failed to build or run (other than a
 * backend's "unsupported") or failed its check: every such case is printed.
 */
#include <dlfcn.h>
#include <fnmatch.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../compiler/compiler.h"
#include "../interp/interp.h"
#include "bench.h"

enum { REPS = 5, LONG_S = 2, MAXB = 8 };
#define BATCH_S 0.05   /* a batch of runs back to back lasts about this long */

/* ------------------------------------------------------------ small helpers */

/* A growable text (JSON fragments). */
typedef struct {
	char *p;
	size_t n, cap;
} Buf;

static void bprintf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(Buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->n + (size_t)len + 1 > b->cap) {
		b->cap = (b->n + (size_t)len + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			fprintf(stderr, "bench_gpu: out of memory\n");
			exit(3);
		}
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->n, (size_t)len + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)len;
}

/* s as a JSON string. */
static void bjstr(Buf *b, const char *s)
{
	bprintf(b, "\"");
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			bprintf(b, "\\%c", ch);
		else if (ch < 0x20)
			bprintf(b, "\\u%04x", ch);
		else
			bprintf(b, "%c", ch);
	}
	bprintf(b, "\"");
}

/* A figure as JSON: null when not measured. */
static void bjnum(Buf *b, double x)
{
	if (x >= 0 && isfinite(x))
		bprintf(b, "%.9g", x);
	else
		bprintf(b, "null");
}

static void bsep(Buf *b)
{
	if (b->n)
		bprintf(b, ",");
}

/* The first line of a diagnostic, for a table's footnote. */
static void first_line(const char *msg, char *out, size_t n)
{
	snprintf(out, n, "%s", msg && *msg ? msg : "failure (no message)");
	out[strcspn(out, "\n")] = 0;
}

/* ------------------------------------------------------------ options and context */

typedef struct {
	const char *backends;  /* comma list of GPU backends; NULL: every available one */
	const char *examples;  /* comma list of globs over example names; NULL: all */
	const char *json;      /* --json FILE */
	const char *python;    /* interpreter for the torch anchor */
	const char *anchor;    /* its script */
	const char *derived;   /* comma list of backends items 2 and 3 run on (default cuda) */
	const char *only;      /* --only FAMILY[:N]: that family (and candidate) alone */
	bool quick, no_torch;
	int reps;
	int mm_n, rows, cols, copy_mib;   /* sizes of items 2 and 3 */
} Opts;

typedef struct {
	bool ok;
	char reason[512], device[256], torch[64];
	double mm_tflops, copy_gbs, softmax[2], layernorm[2];   /* [0] f32, [1] bf16 */
	char line[4096];       /* the script's JSON line, verbatim ("" if none) */
} Torch;

typedef struct {
	Opts o;
	char cache[64];
	int cores;
	int failures;
	Buf jback, jex, jder;  /* JSON fragments */
	Torch torch;
	double d2d_gbs;        /* < 0: not measured (d2d_why) */
	char d2d_why[512];
	double overhead_s;     /* cuda: a one-element kernel's run back to back */
	double alone_s;        /* and one launch of it alone, end to end */
} Ctx;

static bool listed(const char *list, const char *name)
{
	if (!list)
		return true;
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p += len + (p[len] == ',');
	}
	return false;
}

static bool name_matches(const char *globs, const char *name)
{
	if (!globs)
		return true;
	char pat[256];
	for (const char *p = globs; *p;) {
		size_t len = strcspn(p, ",");
		snprintf(pat, sizeof pat, "%.*s", (int)len, p);
		if (fnmatch(pat, name, 0) == 0)
			return true;
		p += len + (p[len] == ',');
	}
	return false;
}

/* ------------------------------------------------------------ programs and timing */

typedef struct {
	Graph *g;
	Schedule s;
	bool have_s;
	Kernels *k;
} Prog;

static void prog_free(Prog *p)
{
	kir_free(p->k);
	if (p->have_s)
		sched_free(&p->s);
	ir_free(p->g);
	memset(p, 0, sizeof *p);
}

/* Parses, schedules (the graph's directives) and lowers text; 0, or -1 with why. */
static int prog_make(const char *text, const char *file, Prog *p, char *why, size_t n)
{
	Diag d = {0};
	memset(p, 0, sizeof *p);
	p->g = text ? ir_parse(text, strlen(text), file, NULL, 0, &d) : ir_parse_file(file, NULL, 0, &d);
	if (p->g && sched_build(p->g, &p->s, &d) == 0) {
		p->have_s = true;
		p->k = kir_lower(p->g, &p->s, NULL, &d);
	}
	if (p->k)
		return 0;
	first_line(d.msg, why, n);
	diag_clear(&d);
	prog_free(p);
	return -1;
}

typedef struct {
	double med;          /* median seconds of one run back to back; < 0: not measured (why) */
	double one_s;        /* one run alone, end to end (its wait and error-slot read) */
	double compile_s;
	int n;               /* batches timed */
	int runs;            /* runs in each batch */
	bool unsupported;    /* the backend refused the program (why) */
	char why[512];
	char plan[512];      /* the kernels' plans, from the emitted source's comments */
} Timing;

/* The comment lines "NAME: a thread|block per item, T threads a block" of a CUDA source. */
static void plan_of(const char *src, char *out, size_t n)
{
	size_t used = 0;
	out[0] = 0;
	for (const char *p = src; (p = strstr(p, "\n/* ")) != NULL; p++) {
		const char *e = strchr(p + 1, '\n');
		static const char tail[] = " threads a block */";
		size_t len = e ? (size_t)(e - p - 1) : 0, tl = sizeof tail - 1;
		if (!e || len < tl + 3 || memcmp(e - tl, tail, tl) != 0)
			continue;
		int w = snprintf(out + used, n - used, "%s%.*s", used ? "; " : "", (int)(len - 6), p + 4);
		if (w < 0 || (size_t)w >= n - used)
			break;
		used += (size_t)w;
	}
}

/* Emits, compiles and times p on b with inputs in (input order) through the run driver
 * (compiler.h be_run_time): a warm-up run (which may include a driver's lazy compilation),
 * a run alone to size the batches, then reps batches of runs back to back of about
 * BATCH_S seconds each, one wait and one error-slot read a batch; fewer batches when the
 * run alone took over LONG_S seconds (3, or 1 past 10 * LONG_S). out (may be NULL):
 * output 0 downloaded in its output format afterwards. */
static void time_on(const Backend *b, const Prog *p, int threads, const char *cache,
		    const HostTensor *in, int reps, Timing *t, HostTensor *out)
{
	Diag d = {0};
	BeOpts o = {threads, cache};
	BeTimeOpts to = {reps, BATCH_S, LONG_S};
	BeTimes bt;
	BeRun r;
	memset(t, 0, sizeof *t);
	t->med = -1;
	be_run_open(&r, b, p->k);
	int rc = be_run_ready(&r, &o, in, &d);
	if (r.src)
		plan_of(r.src, t->plan, sizeof t->plan);
	if (rc || be_run_time(&r, &to, &bt, &d) || be_run_guards(&r, &d) ||
	    (out && be_run_download(&r, 0, out, &d)))
		goto fail;
	t->compile_s = r.st.compile_s;
	t->med = bt.run_s;
	t->one_s = bt.one_s;
	t->n = bt.batches;
	t->runs = bt.runs;
	be_run_close(&r);
	return;
fail:
	first_line(d.msg, t->why, sizeof t->why);
	t->unsupported = be_run_fail(&r, &d) == BE_FAIL_UNSUPPORTED;
	diag_clear(&d);
	be_run_close(&r);
}

/* ------------------------------------------------------------ item 1: the examples */

typedef struct {
	const Backend *b;
	bool ok;
	char why[512];
	char *device;
} Avail;

static void note(char (*notes)[1024], int *nn, const char *who, const char *ex, const Timing *t)
{
	if (*nn < 64)
		snprintf(notes[(*nn)++], 1024, "%s on %s: %s%s", ex, who,
			 t->unsupported ? "" : "FAILED: ", t->why);
}

static void cell(const Timing *t, double cms)
{
	if (t->med < 0)
		printf("  %10s %7s", t->unsupported ? "unsupp." : "FAILED", "-");
	else if (cms > 0)
		printf("  %10.3f %7.2f", t->med * 1e3, cms / t->med);
	else
		printf("  %10.3f %7s", t->med * 1e3, "-");
}

static void examples(Ctx *c, const Avail *c_av, const Avail *gpu, int ng)
{
	glob_t gl;
	if (glob("examples/*.tg", 0, NULL, &gl)) {
		printf("no examples found (run from the repository root)\n");
		c->failures++;
		return;
	}
	printf("1. Examples, default schedule: ms a run, the median of %d batches of runs back to\n"
	       "   back (about %g s a batch, one synchronisation and one error-slot read a batch)\n"
	       "   after one warm-up. C: the c backend on %d threads (one per core); xC = C time /\n"
	       "   backend time.\n", c->o.reps, BATCH_S, c->cores);
	if (!c_av->ok)
		printf("   C anchor not measured: %s\n", c_av->why);
	printf("\n%-18s %10s", "example", "C ms");
	for (int i = 0; i < ng; i++)
		printf("  %7s ms %7s", gpu[i].b->name, "xC");
	printf("\n");
	char (*notes)[1024] = calloc(64, sizeof *notes);
	int nn = 0, shown = 0;
	for (size_t e = 0; e < gl.gl_pathc; e++) {
		const char *path = gl.gl_pathv[e], *base = strrchr(path, '/');
		char name[256];
		snprintf(name, sizeof name, "%s", base ? base + 1 : path);
		name[strcspn(name, ".")] = 0;
		if (!name_matches(c->o.examples, name))
			continue;
		shown++;
		Prog p;
		char why[512];
		if (prog_make(NULL, path, &p, why, sizeof why)) {
			printf("%-18s FAILED: %s\n", name, why);
			c->failures++;
			continue;
		}
		int nin = ir_ninputs(p.g);
		HostTensor *in = calloc((size_t)nin + 1, sizeof *in);
		InputSpec spec = {DIST_NORMAL, 1, false};
		Diag d = {0};
		if (mp_make_inputs(p.g, &spec, NULL, in, &d)) {
			first_line(d.msg, why, sizeof why);
			diag_clear(&d);
			printf("%-18s FAILED (inputs): %s\n", name, why);
			c->failures++;
			free(in);
			prog_free(&p);
			continue;
		}
		Timing tc = {.med = -1};
		if (c_av->ok)
			time_on(c_av->b, &p, c->cores, c->cache, in, c->o.reps, &tc, NULL);
		printf("%-18s", name);
		if (tc.med >= 0)
			printf(" %10.3f", tc.med * 1e3);
		else
			printf(" %10s", c_av->ok ? (tc.unsupported ? "unsupp." : "FAILED") : "-");
		if (c_av->ok && tc.med < 0) {
			note(notes, &nn, "c", name, &tc);
			c->failures += !tc.unsupported;
		}
		for (int i = 0; i < ng; i++) {
			Timing t;
			time_on(gpu[i].b, &p, 1, c->cache, in, c->o.reps, &t, NULL);
			cell(&t, tc.med);
			fflush(stdout);
			if (t.med < 0) {
				note(notes, &nn, gpu[i].b->name, name, &t);
				c->failures += !t.unsupported;
			}
			bsep(&c->jex);
			bprintf(&c->jex, "{\"example\":");
			bjstr(&c->jex, name);
			bprintf(&c->jex, ",\"backend\":");
			bjstr(&c->jex, gpu[i].b->name);
			bprintf(&c->jex, ",\"ms\":");
			bjnum(&c->jex, t.med >= 0 ? t.med * 1e3 : -1);
			bprintf(&c->jex, ",\"batches\":%d,\"runs_per_batch\":%d,\"compile_s\":", t.n,
				t.runs);
			bjnum(&c->jex, t.med >= 0 ? t.compile_s : -1);
			bprintf(&c->jex, ",\"c_ms\":");
			bjnum(&c->jex, tc.med >= 0 ? tc.med * 1e3 : -1);
			bprintf(&c->jex, ",\"c_over_backend\":");
			bjnum(&c->jex, t.med > 0 && tc.med > 0 ? tc.med / t.med : -1);
			if (t.med < 0) {
				bprintf(&c->jex, ",\"error\":");
				bjstr(&c->jex, t.why);
			}
			bprintf(&c->jex, "}");
		}
		printf("\n");
		for (int i = 0; i < nin; i++)
			ht_free(&in[i]);
		free(in);
		prog_free(&p);
	}
	if (!shown)
		printf("(no example matches --examples %s)\n", c->o.examples);
	for (int i = 0; i < nn; i++)
		printf("   note: %s\n", notes[i]);
	free(notes);
	globfree(&gl);
}

/* ------------------------------------------------------------ anchors: the CUDA driver */

typedef unsigned long long DevPtr;

/* The driver API entry points the copy anchor needs (ABI names, as compiler/cuda/lib.c). */
typedef struct {
	void *dl;
	int (*Init)(unsigned);
	int (*DeviceGet)(int *, int);
	int (*PrimaryCtxRetain)(void **, int);
	int (*PrimaryCtxRelease)(int);
	int (*CtxSetCurrent)(void *);
	int (*CtxSynchronize)(void);
	int (*MemAlloc)(DevPtr *, size_t);
	int (*MemFree)(DevPtr);
	int (*MemsetD32)(DevPtr, unsigned, size_t);
	int (*MemcpyDtoD)(DevPtr, DevPtr, size_t);
	int (*EventCreate)(void **, unsigned);
	int (*EventRecord)(void *, void *);
	int (*EventSynchronize)(void *);
	int (*EventElapsedTime)(float *, void *, void *);
	int (*EventDestroy)(void *);
	int (*GetErrorString)(int, const char **);
} Drv;

static bool drv_sym(Drv *v, void *field, const char *name, const char *alt)
{
	void *f = dlsym(v->dl, name);
	if (!f && alt)
		f = dlsym(v->dl, alt);
	memcpy(field, &f, sizeof f);   /* ISO C has no void * to function pointer conversion */
	return f != NULL;
}

static const char *drv_err(const Drv *v, int r)
{
	const char *s = NULL;
	if (!v->GetErrorString || v->GetErrorString(r, &s) != 0 || !s)
		s = "unknown error";
	return s;
}

/* Device-to-device copy bandwidth of bytes (read + write counted): the median of reps
 * copies timed with CUDA events, after a warm-up. GB/s, or -1 with why. */
static double d2d_copy(size_t bytes, int reps, char *why, size_t n)
{
	Drv v = {0};
	v.dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!v.dl) {
		const char *e = dlerror();
		snprintf(why, n, "no CUDA driver (%s)", e ? e : "libcuda.so.1 not found");
		return -1;
	}
	struct {
		void *field;
		const char *name, *alt;
	} syms[] = {
		{&v.Init, "cuInit", NULL}, {&v.DeviceGet, "cuDeviceGet", NULL},
		{&v.PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL},
		{&v.PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"},
		{&v.CtxSetCurrent, "cuCtxSetCurrent", NULL},
		{&v.CtxSynchronize, "cuCtxSynchronize", NULL},
		{&v.MemAlloc, "cuMemAlloc_v2", NULL}, {&v.MemFree, "cuMemFree_v2", NULL},
		{&v.MemsetD32, "cuMemsetD32_v2", NULL}, {&v.MemcpyDtoD, "cuMemcpyDtoD_v2", NULL},
		{&v.EventCreate, "cuEventCreate", NULL}, {&v.EventRecord, "cuEventRecord", NULL},
		{&v.EventSynchronize, "cuEventSynchronize", NULL},
		{&v.EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"},
		{&v.EventDestroy, "cuEventDestroy_v2", "cuEventDestroy"},
		{&v.GetErrorString, "cuGetErrorString", NULL},
	};
	for (size_t i = 0; i < ARRAY_LEN(syms); i++)
		if (!drv_sym(&v, syms[i].field, syms[i].name, syms[i].alt)) {
			snprintf(why, n, "libcuda.so.1 has no symbol %s", syms[i].name);
			return -1;
		}
	int dev = 0, r;
	void *ctx = NULL, *ev[2] = {NULL, NULL};
	DevPtr src = 0, dst = 0;
	double gbs = -1;
	const char *what = "cuInit";
	if ((r = v.Init(0)) || (what = "cuDeviceGet", r = v.DeviceGet(&dev, 0)) ||
	    (what = "cuDevicePrimaryCtxRetain", r = v.PrimaryCtxRetain(&ctx, dev))) {
		snprintf(why, n, "%s: CUDA error %d: %s", what, r, drv_err(&v, r));
		return -1;
	}
	double *t = calloc((size_t)reps, sizeof *t);
	if ((what = "cuCtxSetCurrent", r = v.CtxSetCurrent(ctx)) ||
	    (what = "cuMemAlloc", r = v.MemAlloc(&src, bytes)) || (r = v.MemAlloc(&dst, bytes)) ||
	    (what = "cuMemsetD32", r = v.MemsetD32(src, 0x3f800000u, bytes / 4)) ||
	    (what = "cuEventCreate", r = v.EventCreate(&ev[0], 0)) || (r = v.EventCreate(&ev[1], 0)) ||
	    (what = "cuMemcpyDtoD", r = v.MemcpyDtoD(dst, src, bytes)) ||
	    (what = "cuCtxSynchronize", r = v.CtxSynchronize()))
		goto fail;
	for (int i = 0; i < reps; i++) {
		float ms = 0;
		if ((what = "cuEventRecord", r = v.EventRecord(ev[0], NULL)) ||
		    (what = "cuMemcpyDtoD", r = v.MemcpyDtoD(dst, src, bytes)) ||
		    (what = "cuEventRecord", r = v.EventRecord(ev[1], NULL)) ||
		    (what = "cuEventSynchronize", r = v.EventSynchronize(ev[1])) ||
		    (what = "cuEventElapsedTime", r = v.EventElapsedTime(&ms, ev[0], ev[1])))
			goto fail;
		t[i] = ms * 1e-3;
	}
	gbs = 2.0 * (double)bytes / median(t, reps) / 1e9;
	goto out;
fail:
	snprintf(why, n, "%s: CUDA error %d: %s", what, r, drv_err(&v, r));
out:
	free(t);
	for (int i = 0; i < 2; i++)
		if (ev[i])
			v.EventDestroy(ev[i]);
	if (src)
		v.MemFree(src);
	if (dst)
		v.MemFree(dst);
	v.PrimaryCtxRelease(dev);
	return gbs;
}

/* ------------------------------------------------------------ anchors: PyTorch */

/* The number after "key": in a JSON line, or -1. */
static double jnum(const char *line, const char *key)
{
	char pat[80];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(line, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	char *end;
	double x = strtod(p, &end);
	return end == p ? -1 : x;
}

/* The string after "key": in a JSON line (escapes kept but for \" and \\), or "". */
static void jstr(const char *line, const char *key, char *out, size_t n)
{
	char pat[80];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(line, pat);
	size_t k = 0;
	if (p && (p = strchr(p + strlen(pat), '"')))
		for (p++; *p && *p != '"' && k + 1 < n; p++) {
			if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
				p++;
			out[k++] = *p;
		}
	out[k] = 0;
}

static void torch_anchor(Ctx *c, int mm_n, int rows, int cols, int copy_mib, Torch *t)
{
	memset(t, 0, sizeof *t);
	if (c->o.no_torch) {
		snprintf(t->reason, sizeof t->reason, "--no-torch");
		return;
	}
	if (access(c->o.anchor, R_OK) != 0) {
		snprintf(t->reason, sizeof t->reason, "%s not found (run from the repository root)",
			 c->o.anchor);
		return;
	}
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "'%s' '%s' --n %d --rows %d --cols %d --copy-mib %d", c->o.python,
		 c->o.anchor, mm_n, rows, cols, copy_mib);
	printf("(running the PyTorch anchor: %s)\n", cmd);
	fflush(stdout);
	FILE *f = popen(cmd, "r");
	if (!f) {
		snprintf(t->reason, sizeof t->reason, "cannot run %s", c->o.python);
		return;
	}
	char buf[4096];
	while (fgets(buf, sizeof buf, f))
		if (buf[0] == '{')
			snprintf(t->line, sizeof t->line, "%s", buf);
	int st = pclose(f);
	t->line[strcspn(t->line, "\n")] = 0;
	if (!t->line[0]) {
		if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 127)
			snprintf(t->reason, sizeof t->reason, "%s not found", c->o.python);
		else
			snprintf(t->reason, sizeof t->reason, "%s %s printed no JSON line (status %d)",
				 c->o.python, c->o.anchor, st);
		return;
	}
	t->ok = strstr(t->line, "\"ok\": true") != NULL;
	jstr(t->line, "reason", t->reason, sizeof t->reason);
	jstr(t->line, "device", t->device, sizeof t->device);
	jstr(t->line, "torch", t->torch, sizeof t->torch);
	t->mm_tflops = jnum(t->line, "matmul_bf16_tflops");
	t->copy_gbs = jnum(t->line, "copy_gbs");
	t->softmax[0] = jnum(t->line, "softmax_f32_gbs");
	t->softmax[1] = jnum(t->line, "softmax_bf16_gbs");
	t->layernorm[0] = jnum(t->line, "layernorm_f32_gbs");
	t->layernorm[1] = jnum(t->line, "layernorm_bf16_gbs");
	if (!t->ok && !t->reason[0])
		snprintf(t->reason, sizeof t->reason, "the anchor said ok: false without a reason");
}

/* ------------------------------------------------------------ large inputs and checks */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Every input of g, uniform in [0.5, 1.5) for a tensor called g (a norm's scale), else in
 * [-2, 2); 24 random bits per value, stored directly (f32) or rounded (bf16, others). */
static int fill_inputs(const Graph *g, HostTensor *in)
{
	for (int k = 0; k < ir_ninputs(g); k++) {
		const Tensor *T = &g->tensors[ir_input_tensor(g, k)];
		int64_t dims[IR_MAXRANK];
		for (int i = 0; i < T->rank; i++)
			dims[i] = T->dims[i].value;
		if (ht_alloc(&in[k], (Dtype)T->dtype, T->rank, dims))
			return -1;
		double lo = strcmp(T->name, "g") == 0 ? 0.5 : -2, w = strcmp(T->name, "g") == 0 ? 1 : 4;
		uint64_t s = 0x5eed0000ull + (uint64_t)k;
		for (int64_t i = 0; i < in[k].n; i++) {
			double x = lo + w * (double)(splitmix(&s) >> 40) * 0x1p-24;
			if (in[k].dtype == DT_F32)
				((float *)in[k].data)[i] = (float)x;
			else if (in[k].dtype == DT_BF16)
				((uint16_t *)in[k].data)[i] = fmt_double_to_bf16(x);
			else
				ht_set(&in[k], i, x);
		}
	}
	return 0;
}

static const double U32 = 0x1p-24;   /* unit roundoff of f32 */

/* matmul c = a b, f32 accumulation of exact bf16 products: 64 sampled elements within
 * gamma_K = K u sum |a_ik b_kj| (linear summation in any order) of the exact value. */
static double check_matmul(const Graph *g, const HostTensor *in, const HostTensor *out)
{
	int64_t M = in[0].dims[0], K = in[0].dims[1], N = in[1].dims[1];
	double worst = 0;
	uint64_t s = 7;
	for (int q = 0; q < 64; q++) {
		int64_t i = (int64_t)(splitmix(&s) % (uint64_t)M), j = (int64_t)(splitmix(&s) % (uint64_t)N);
		double sum = 0, abs = 0;
		for (int64_t k = 0; k < K; k++) {
			double t = ht_get(&in[0], i * K + k) * ht_get(&in[1], k * N + j);
			sum += t;
			abs += fabs(t);
		}
		double err = fabs(ht_get(out, i * N + j) - sum), bound = 1.01 * (double)K * U32 * abs + 1e-30;
		if (!(err <= bound))
			return INFINITY;
		worst = fmax(worst, err / bound);
	}
	return worst;
}

static int64_t sample_row(int q, int64_t rows)
{
	return q == 0 ? 0 : q == 1 ? rows - 1 : (int64_t)q * (rows / 5);
}

/* softmax rows: 5 sampled rows, each element within (2 V + 16) u relative of the exact
 * (f32 sum of V terms, exp and division), plus half a bf16 ulp (at most 2^-8 relative;
 * 2^-8 * 1.016 allowed) when y is bf16. */
static double check_softmax(const Graph *g, const HostTensor *in, const HostTensor *out)
{
	int64_t R = in[0].dims[0], V = in[0].dims[1];
	double tol = (2.0 * (double)V + 16) * U32 + (out->dtype == DT_BF16 ? 0x1.04p-8 : 0), worst = 0;
	for (int q = 0; q < 5; q++) {
		int64_t r = sample_row(q, R);
		double m = -INFINITY, s = 0;
		for (int64_t c = 0; c < V; c++)
			m = fmax(m, ht_get(&in[0], r * V + c));
		for (int64_t c = 0; c < V; c++)
			s += exp(ht_get(&in[0], r * V + c) - m);
		for (int64_t c = 0; c < V; c++) {
			double y = exp(ht_get(&in[0], r * V + c) - m) / s;
			double e = fabs(ht_get(out, r * V + c) - y) / (tol * y + 1e-300);
			if (!(e <= 1))
				return INFINITY;
			worst = fmax(worst, e);
		}
	}
	return worst;
}

/* layernorm rows: 5 sampled rows; an element may be off by (2 C + 16) u times its scale
 * (|x - mu| + mean |x|) * rstd * |g| + |b| (the f32 sums of mean and variance), plus half
 * a bf16 ulp of the value (2^-8 * 1.016 relative allowed) when y is bf16. */
static double check_layernorm(const Graph *g, const HostTensor *in, const HostTensor *out)
{
	int64_t T = in[0].dims[0], C = in[0].dims[1];
	double f = (2.0 * (double)C + 16) * U32, worst = 0;
	for (int q = 0; q < 5; q++) {
		int64_t t = sample_row(q, T);
		double mu = 0, var = 0, am = 0;
		for (int64_t c = 0; c < C; c++) {
			mu += ht_get(&in[0], t * C + c);
			am += fabs(ht_get(&in[0], t * C + c));
		}
		mu /= (double)C;
		am /= (double)C;
		for (int64_t c = 0; c < C; c++) {
			double x = ht_get(&in[0], t * C + c) - mu;
			var += x * x;
		}
		double rstd = 1 / sqrt(var / (double)C + 1e-5);
		for (int64_t c = 0; c < C; c++) {
			double x = ht_get(&in[0], t * C + c), gg = ht_get(&in[1], c), bb = ht_get(&in[2], c);
			double y = (x - mu) * rstd * gg + bb;
			double tol = f * ((fabs(x - mu) + am) * rstd * fabs(gg) + fabs(bb)) +
				     (out->dtype == DT_BF16 ? 0x1.04p-8 * fabs(y) : 0) + 1e-30;
			double e = fabs(ht_get(out, t * C + c) - y) / tol;
			if (!(e <= 1))
				return INFINITY;
			worst = fmax(worst, e);
		}
	}
	return worst;
}

/* ------------------------------------------------------------ items 2 and 3: candidates */

typedef struct {
	const char *key;          /* JSON name */
	const char *title;
	char graph[1024];         /* graph text, without its schedule block */
	const char *base;         /* directives every candidate has ("" for none) */
	const char *const *cands; /* candidates' directives, '\n' separated; "" the default */
	int ncands;
	double flops;             /* > 0: the figure is TFLOP/s of this many flops, else GB/s */
	double (*check)(const Graph *, const HostTensor *, const HostTensor *);
	const char *check_what;
	double anchor[3];         /* anchors' figures (< 0: not measured) */
	const char *anchor_name[3];
	char anchor_why[3][600];
} Family;

static void one_line(const char *s, char *out, size_t n)
{
	size_t k = 0;
	for (; *s && k + 3 < n; s++)
		if (*s == '\n') {
			if (s[1]) {
				out[k++] = ';';
				out[k++] = ' ';
			}
		} else {
			out[k++] = *s;
		}
	out[k] = 0;
}

/* Input bytes read once plus output bytes written once (in their storage formats). */
static double io_bytes(const Prog *p)
{
	const Graph *g = p->g;
	double b = 0;
	for (int k = 0; k < ir_ninputs(g); k++) {
		int t = ir_input_tensor(g, k);
		b += (double)ir_tensor_count(g, t) * dt_info((Dtype)g->tensors[t].dtype)->bytes;
	}
	for (int o = 0; o < g->noutputs; o++) {
		int t = g->outputs[o].tensor;
		b += (double)ir_tensor_count(g, t) * dt_info(p->s.defs[g->tensors[t].def].store)->bytes;
	}
	return b;
}

static void run_family(Ctx *c, const Backend *cu, Family *f, int ncands)
{
	int only_cand = 0;   /* --only's candidate, 1-based; 0: all */
	if (c->o.only) {
		const char *fam = strchr(f->key, '/') ? strchr(f->key, '/') + 1 : f->key;
		size_t n = strcspn(c->o.only, ":");
		if (strlen(fam) != n || strncmp(fam, c->o.only, n) != 0)
			return;
		if (c->o.only[n] == ':')
			only_cand = atoi(c->o.only + n + 1);
	}
	const char *unit = f->flops > 0 ? "TFLOP/s" : "GB/s";
	printf("\n%s: %d candidate schedule%s (%s)\n", f->title, ncands, ncands > 1 ? "s" : "",
	       f->base[0] ? f->base : "no common directive");
	HostTensor *in = NULL;
	int nin = 0, best = -1;
	double best_fig = -1, work = f->flops;
	Buf jc = {0};
	for (int i = 0; i < ncands; i++) {
		char text[4096], sched[600], why[512];
		if (only_cand > 0 && i + 1 != only_cand)
			continue;
		snprintf(text, sizeof text, "%sschedule\n%s%s%s", f->graph, f->base,
			 f->base[0] && f->cands[i][0] ? "\n" : "", f->cands[i]);
		one_line(f->cands[i][0] ? f->cands[i] : "(default)", sched, sizeof sched);
		Prog p;
		Timing t = {.med = -1};
		HostTensor out = {0};
		double chk = -1;
		printf("  [%d] %-44s", i + 1, sched);
		fflush(stdout);
		if (prog_make(text, f->key, &p, why, sizeof why)) {
			snprintf(t.why, sizeof t.why, "%s", why);
		} else {
			if (!in) {
				nin = ir_ninputs(p.g);
				in = calloc((size_t)nin + 1, sizeof *in);
				if (!in || fill_inputs(p.g, in)) {
					fprintf(stderr, "bench_gpu: out of memory for the inputs of %s\n", f->key);
					exit(3);
				}
			}
			if (work <= 0)
				work = io_bytes(&p);
			time_on(cu, &p, 1, c->cache, in, c->o.reps, &t, &out);
			if (t.med >= 0)
				chk = f->check(p.g, in, &out);
			ht_free(&out);
			prog_free(&p);
		}
		double fig = t.med > 0 ? work / t.med / (f->flops > 0 ? 1e12 : 1e9) : -1;
		if (t.med < 0) {
			printf(" %s: %s\n", t.unsupported ? "unsupported" : "FAILED", t.why);
			c->failures += !t.unsupported;
		} else if (!(chk <= 1)) {
			printf(" %9.3f ms  WRONG RESULT (%s beyond its bound)\n", t.med * 1e3, f->check_what);
			c->failures++;
		} else {
			printf(" %9.3f ms %9.3f %s%s  check ok (max err/bound %.2g; %d x %d runs, %.3f ms "
			       "alone)\n", t.med * 1e3, fig, unit, t.n != c->o.reps ? " (fewer batches: slow)" : "",
			       chk, t.n, t.runs, t.one_s * 1e3);
			if (fig > best_fig)
				best_fig = fig, best = i;
		}
		if (t.plan[0])
			printf("      plan: %s\n", t.plan);
		bsep(&jc);
		bprintf(&jc, "{\"schedule\":");
		bjstr(&jc, f->cands[i]);
		bprintf(&jc, ",\"plan\":");
		bjstr(&jc, t.plan);
		bprintf(&jc, ",\"ms\":");
		bjnum(&jc, t.med >= 0 ? t.med * 1e3 : -1);
		bprintf(&jc, ",\"batches\":%d,\"runs_per_batch\":%d,\"alone_ms\":", t.n, t.runs);
		bjnum(&jc, t.med >= 0 ? t.one_s * 1e3 : -1);
		bprintf(&jc, ",\"figure\":");
		bjnum(&jc, chk <= 1 ? fig : -1);
		bprintf(&jc, ",\"check\":");
		bjstr(&jc, t.med < 0 ? (t.unsupported ? "unsupported" : "failed") : chk <= 1 ? "ok" : "wrong");
		if (t.med < 0) {
			bprintf(&jc, ",\"error\":");
			bjstr(&jc, t.why);
		}
		bprintf(&jc, "}");
	}
	if (best >= 0) {
		char sched[600];
		one_line(f->cands[best][0] ? f->cands[best] : "(default)", sched, sizeof sched);
		printf("  best: [%d] `%s`  %.3f %s\n", best + 1, sched, best_fig, unit);
	} else {
		printf("  best: none (no candidate ran and passed its check)\n");
	}
	for (int a = 0; a < 3 && f->anchor_name[a]; a++) {
		if (f->anchor[a] > 0 && best_fig > 0)
			printf("  %-34s %9.3f %s   derived/anchor %.4f\n", f->anchor_name[a], f->anchor[a], unit,
			       best_fig / f->anchor[a]);
		else if (f->anchor[a] > 0)
			printf("  %-34s %9.3f %s\n", f->anchor_name[a], f->anchor[a], unit);
		else
			printf("  %-34s not measured: %s\n", f->anchor_name[a], f->anchor_why[a]);
	}
	bsep(&c->jder);
	bprintf(&c->jder, "{\"name\":");
	bjstr(&c->jder, f->key);
	bprintf(&c->jder, ",\"unit\":\"%s\",\"work\":", unit);
	bjnum(&c->jder, work);
	bprintf(&c->jder, ",\"common\":");
	bjstr(&c->jder, f->base);
	bprintf(&c->jder, ",\"candidates\":[%s],\"best\":%d,\"best_figure\":", jc.p ? jc.p : "", best + 1);
	bjnum(&c->jder, best_fig);
	bprintf(&c->jder, ",\"anchors\":[");
	for (int a = 0; a < 3 && f->anchor_name[a]; a++) {
		bprintf(&c->jder, "%s{\"name\":", a ? "," : "");
		bjstr(&c->jder, f->anchor_name[a]);
		bprintf(&c->jder, ",\"figure\":");
		bjnum(&c->jder, f->anchor[a]);
		bprintf(&c->jder, ",\"ratio\":");
		bjnum(&c->jder, f->anchor[a] > 0 && best_fig > 0 ? best_fig / f->anchor[a] : -1);
		if (f->anchor[a] <= 0) {
			bprintf(&c->jder, ",\"reason\":");
			bjstr(&c->jder, f->anchor_why[a]);
		}
		bprintf(&c->jder, "}");
	}
	bprintf(&c->jder, "]}");
	free(jc.p);
	for (int i = 0; in && i < nin; i++)
		ht_free(&in[i]);
	free(in);
}

/* Candidate schedules. The cuda backend (compiler/map/block.c) runs a tile's point loops
 * as the threads of a block (up to 256), a reduction split S ways as S partials dealt to
 * the threads, and anything else as one thread per item. For the matmul: untiled (a
 * thread per element, the accumulator in a register); tiles up to 16384 points keep a
 * tile of accumulators in shared memory with the k loop outside (lower.c's hoisting);
 * larger tiles give each thread whole dot products; a tile of fewer than 32 points runs
 * in one thread (a register tile: each thread computes i x j outputs, reusing each loaded
 * a and b element j or i times). For the norms: the row reductions
 * split so that a block reads a row with coalesced loads; e inlined or stored. */
static const char *const mm_cands[] = {
	"",
	"tile c : i=4, j=4",
	"tile c : i=2, j=8",
	"tile c : i=8, j=8",
	"tile c : i=4, j=8",
	"tile c : i=16, j=64",
	"tile c : i=1, j=256",
	"tile c : i=8, j=32",
	"tile c : i=32, j=128",
	"tile c : i=128, j=256",
};

static const char *const sm_cands[] = {
	"",
	"split m : c=256\nsplit s : c=256\ninline e",
	"split m : c=32\nsplit s : c=32",
	"split m : c=32\nsplit s : c=32\ninline e",
	"split m : c=128\nsplit s : c=128\ninline e",
};

static const char *const ln_cands[] = {
	"",
	"split mu : c=256\nsplit var : c=256",
	"split mu : c=32\nsplit var : c=32",
	"split mu : c=128\nsplit var : c=128",
};

static void launch_overhead(Ctx *c, const Backend *cu)
{
	static const char tiny[] =
		"graph tiny\nsize N = 1\ninput x : f32[N]\ny[i:N] = x[i]\noutput y : f32\n";
	Prog p;
	char why[512];
	c->overhead_s = -1;
	if (prog_make(tiny, "tiny", &p, why, sizeof why)) {
		printf("cuda launch overhead: not measured: %s\n", why);
		return;
	}
	HostTensor in[2] = {{0}};
	fill_inputs(p.g, in);
	Timing t;
	time_on(cu, &p, 1, c->cache, in, 21, &t, NULL);
	if (t.med >= 0) {
		c->overhead_s = t.med;
		c->alone_s = t.one_s;
		printf("cuda one-element kernel: %.1f us a run back to back (the fixed cost per kernel in "
		       "every figure below), %.1f us a launch alone (with its synchronisation and "
		       "error-slot read, outside the figures)\n", t.med * 1e6, t.one_s * 1e6);
	} else {
		printf("cuda launch overhead: not measured: %s\n", t.why);
	}
	ht_free(&in[0]);
	prog_free(&p);
}

/* The anchors of items 2 and 3: the copy through the driver API, PyTorch's figures. */
static void anchors(Ctx *c, const Avail *cu)
{
	size_t copy = (size_t)c->o.copy_mib << 20;
	int reps = c->o.quick ? 5 : 10;
	printf("\n2./3. Derived kernels (bf16 matmul, softmax, layernorm) beside cuBLAS, the "
	       "device-to-device copy and PyTorch\n");
	if (!listed(c->o.derived, "cuda"))
		printf("(cuda not in --derived-on: the anchors are measured all the same)\n");
	else if (!cu->ok)
		printf("*** cuda backend UNAVAILABLE: %s\n*** the cuda kernels of items 2 and 3 are "
		       "not run; the anchors are tried anyway.\n", cu->why);
	else
		printf("cuda device: %s\n", cu->device);
	c->d2d_gbs = d2d_copy(copy, reps, c->d2d_why, sizeof c->d2d_why);
	if (c->d2d_gbs > 0)
		printf("device-to-device copy (driver API, cuMemcpyDtoD of %zu MiB, CUDA events, median "
		       "of %d): %.1f GB/s (read + write)\n", copy >> 20, reps, c->d2d_gbs);
	else
		printf("device-to-device copy: not measured: %s\n", c->d2d_why);
	Torch *t = &c->torch;
	if (t->ok)
		printf("PyTorch %s on %s: bf16 matmul %d^3 %.1f TFLOP/s, copy %.1f GB/s\n", t->torch,
		       t->device, c->o.mm_n, t->mm_tflops, t->copy_gbs);
	else
		printf("PyTorch anchor: not measured: %s\n", t->reason);
}

/* Items 2 and 3 on backend b (cuda, or another named by --derived-on). */
static void derived(Ctx *c, const Avail *b)
{
	int n = c->o.mm_n, rows = c->o.rows, cols = c->o.cols, nc = c->o.quick ? 2 : 1000;
	Torch *t = &c->torch;
	printf("\n--- derived kernels on %s (%s)\n", b->b->name, b->device);
	if (strcmp(b->b->name, "cuda") == 0)
		launch_overhead(c, b->b);

	Family mm = {.check = check_matmul, .check_what = "an element", .cands = mm_cands,
		     .ncands = ARRAY_LEN(mm_cands)};
	char key[64], title[160];
	snprintf(key, sizeof key, "%s/matmul_bf16", b->b->name);
	snprintf(title, sizeof title, "matmul %dx%dx%d, bf16 inputs, f32 accumulation and output, on %s",
		 n, n, n, b->b->name);
	mm.key = key;
	mm.title = title;
	snprintf(mm.graph, sizeof mm.graph,
		 "graph matmul_bf16\nsize M = %d, N = %d, K = %d\ninput a : bf16[M, K]\n"
		 "input b : bf16[K, N]\nc[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\noutput c : f32\n", n, n, n);
	mm.base = "accum c : f32";
	mm.flops = 2.0 * n * n * n;
	mm.anchor_name[0] = "cuBLAS bf16 (torch.matmul)";
	mm.anchor[0] = t->ok ? t->mm_tflops : -1;
	snprintf(mm.anchor_why[0], sizeof mm.anchor_why[0], "%s", t->reason);
	run_family(c, b->b, &mm, mm.ncands < nc ? mm.ncands : nc);

	static const char *const dts[2] = {"f32", "bf16"};
	for (int v = 0; v < (c->o.quick ? 1 : 2); v++) {
		for (int ln = 0; ln < 2; ln++) {
			Family f = {.check = ln ? check_layernorm : check_softmax, .check_what = "a sampled row",
				    .cands = ln ? ln_cands : sm_cands,
				    .ncands = ln ? (int)ARRAY_LEN(ln_cands) : (int)ARRAY_LEN(sm_cands)};
			const char *dt = dts[v], *what = ln ? "layernorm" : "softmax";
			snprintf(key, sizeof key, "%s/%s_%s", b->b->name, what, dt);
			snprintf(title, sizeof title, "%s %d x %d, %s in and out (%.4g MiB in), on %s", what,
				 rows, cols, dt, (double)rows * cols * (v ? 2 : 4) / (1 << 20), b->b->name);
			f.key = key;
			f.title = title;
			if (ln)
				snprintf(f.graph, sizeof f.graph,
					 "graph %s_%s\nsize T = %d, C = %d\ninput x : %s[T, C]\ninput g : %s[C]\n"
					 "input b : %s[C]\nmu[t:T] = sum(c:C) x[t, c] / C\n"
					 "var[t:T] = sum(c:C) (x[t, c] - mu[t]) * (x[t, c] - mu[t]) / C\n"
					 "y[t:T, c:C] = (x[t, c] - mu[t]) * rsqrt(var[t] + 1e-5) * g[c] + b[c]\n"
					 "output y : %s\n", what, dt, rows, cols, dt, dt, dt, dt);
			else
				snprintf(f.graph, sizeof f.graph,
					 "graph %s_%s\nsize R = %d, V = %d\ninput x : %s[R, V]\n"
					 "m[r:R] = max(c:V) x[r, c]\ne[r:R, c:V] = exp(x[r, c] - m[r])\n"
					 "s[r:R] = sum(c:V) e[r, c]\ny[r:R, c:V] = e[r, c] / s[r]\n"
					 "output y : %s\n", what, dt, rows, cols, dt, dt);
			f.base = v ? "store y : bf16" : "";
			f.anchor_name[0] = "device-to-device copy (driver)";
			f.anchor[0] = c->d2d_gbs;
			snprintf(f.anchor_why[0], sizeof f.anchor_why[0], "%s", c->d2d_why);
			f.anchor_name[1] = ln ? "torch layer_norm" : "torch softmax";
			f.anchor[1] = !t->ok ? -1 : ln ? t->layernorm[v] : t->softmax[v];
			snprintf(f.anchor_why[1], sizeof f.anchor_why[1], "%s", t->reason);
			run_family(c, b->b, &f, f.ncands < nc ? f.ncands : nc);
		}
	}
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_gpu [--quick] [--backends LIST] [--examples GLOBS] [--reps N]\n"
		"                 [--json FILE] [--python PATH] [--anchor SCRIPT] [--no-torch]\n"
		"                 [--derived-on LIST] [--matmul N] [--rows R] [--cols C]\n"
		"                 [--only FAMILY[:N]]\n"
		"Run from the repository root. Benchmarks every available GPU backend (opencl,\n"
		"cuda, vulkan, wgsl) on the examples beside the c backend, and on cuda a bf16\n"
		"matmul and softmax/layernorm beside cuBLAS (PyTorch), the device-to-device copy\n"
		"and PyTorch's own kernels.\n"
		"  --backends LIST   comma list of GPU backends item 1 runs (default: all)\n"
		"  --examples GLOBS  comma list of globs over example names (default: all;\n"
		"                    'none' runs no example)\n"
		"  --quick           smaller items 2 and 3 (matmul 1024^3, 1024 rows, f32 only,\n"
		"                    2 candidates each)\n"
		"  --derived-on LIST backends items 2 and 3 run on (default cuda; e.g. cuda,vulkan;\n"
		"                    'none': neither they nor their anchors run)\n"
		"  --matmul N        matmul size (default 4096, --quick 1024)\n"
		"  --rows R, --cols C  softmax/layernorm shape (default 8192 x 8192; --quick 1024 rows)\n"
		"  --reps N          timed launches per figure (default and minimum %d)\n"
		"  --json FILE       also write every figure as JSON\n"
		"  --python PATH     interpreter for bench/anchor_torch.py (default python3)\n"
		"  --anchor SCRIPT   the anchor script (default bench/anchor_torch.py)\n"
		"  --no-torch        do not run the PyTorch anchor\n"
		"  --only FAMILY[:N] items 2 and 3: only that family (matmul_bf16, softmax_f32,\n"
		"                    softmax_bf16, layernorm_f32, layernorm_bf16), only its\n"
		"                    candidate N (1-based) if given (e.g. under ncu)\n", REPS);
}

static void parse_args(int argc, char **argv, Opts *o)
{
	*o = (Opts){.python = "python3", .anchor = "bench/anchor_torch.py", .reps = REPS,
		    .derived = "cuda"};
	int sizes[3] = {0, 0, 0};   /* --matmul, --rows, --cols */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "--quick") == 0)
			o->quick = true;
		else if (strcmp(a, "--no-torch") == 0)
			o->no_torch = true;
		else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			exit(0);
		} else if (more && strcmp(a, "--backends") == 0)
			o->backends = argv[++i];
		else if (more && strcmp(a, "--examples") == 0)
			o->examples = argv[++i];
		else if (more && strcmp(a, "--json") == 0)
			o->json = argv[++i];
		else if (more && strcmp(a, "--python") == 0)
			o->python = argv[++i];
		else if (more && strcmp(a, "--anchor") == 0)
			o->anchor = argv[++i];
		else if (more && strcmp(a, "--derived-on") == 0)
			o->derived = argv[++i];
		else if (more && strcmp(a, "--only") == 0)
			o->only = argv[++i];
		else if (more && (strcmp(a, "--reps") == 0 || strcmp(a, "--matmul") == 0 ||
				  strcmp(a, "--rows") == 0 || strcmp(a, "--cols") == 0)) {
			char *end;
			long r = strtol(argv[++i], &end, 10), lo = a[2] == 'r' && a[3] == 'e' ? REPS : 1;
			if (*end || r < lo || r > 65536) {
				fprintf(stderr, "bench_gpu: %s wants an integer in [%ld, 65536], not '%s'\n", a,
					lo, argv[i]);
				exit(2);
			}
			if (strcmp(a, "--reps") == 0)
				o->reps = (int)r;
			else
				sizes[a[2] == 'm' ? 0 : a[2] == 'r' ? 1 : 2] = (int)r;
		} else {
			fprintf(stderr, "bench_gpu: unknown or incomplete option '%s'\n", a);
			usage(stderr);
			exit(2);
		}
	}
	if (o->backends)
		for (const char *p = o->backends; *p;) {
			size_t len = strcspn(p, ",");
			char name[64];
			snprintf(name, sizeof name, "%.*s", (int)len, p);
			const Backend *b = be_find(name);
			if (!b || strcmp(name, "c") == 0) {
				fprintf(stderr, "bench_gpu: --backends: '%s' is not a GPU backend "
					"(opencl, cuda, vulkan, wgsl)\n", name);
				exit(2);
			}
			p += len + (p[len] == ',');
		}
	if (strcmp(o->derived, "none") == 0)
		o->derived = "";
	for (const char *p = o->derived; *p;) {
		size_t len = strcspn(p, ",");
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)len, p);
		if (!be_find(name)) {
			fprintf(stderr, "bench_gpu: --derived-on: no backend '%s'\n", name);
			exit(2);
		}
		p += len + (p[len] == ',');
	}
	if (o->examples && strcmp(o->examples, "none") == 0)
		o->examples = "";
	o->mm_n = sizes[0] ? sizes[0] : o->quick ? 1024 : 4096;
	o->rows = sizes[1] ? sizes[1] : o->quick ? 1024 : 8192;
	o->cols = sizes[2] ? sizes[2] : 8192;
	o->copy_mib = o->quick ? 128 : 512;
}

static void write_json(Ctx *c)
{
	FILE *f = fopen(c->o.json, "w");
	if (!f) {
		perror(c->o.json);
		c->failures++;
		return;
	}
	fprintf(f, "{\"bench\":\"bench_gpu\",\"quick\":%s,\"reps\":%d,\"cores\":%d,\"failures\":%d,\n",
		c->o.quick ? "true" : "false", c->o.reps, c->cores, c->failures);
	fprintf(f, "\"backends\":[%s],\n\"examples\":[%s],\n", c->jback.p ? c->jback.p : "",
		c->jex.p ? c->jex.p : "");
	Buf a = {0};
	bprintf(&a, "{\"d2d_gbs\":");
	bjnum(&a, c->d2d_gbs);
	if (c->d2d_gbs <= 0) {
		bprintf(&a, ",\"d2d_reason\":");
		bjstr(&a, c->d2d_why);
	}
	bprintf(&a, ",\"cuda_launch_overhead_us\":");
	bjnum(&a, c->overhead_s >= 0 ? c->overhead_s * 1e6 : -1);
	bprintf(&a, ",\"cuda_launch_alone_us\":");
	bjnum(&a, c->overhead_s >= 0 ? c->alone_s * 1e6 : -1);
	bprintf(&a, ",\"torch\":%s}", c->torch.line[0] ? c->torch.line : "null");
	fprintf(f, "\"anchors\":%s,\n\"derived\":[%s]}\n", a.p, c->jder.p ? c->jder.p : "");
	free(a.p);
	if (fclose(f))
		perror(c->o.json);
	else
		printf("figures written to %s\n", c->o.json);
}

int main(int argc, char **argv)
{
	double t_start = now();
	Ctx c = {.d2d_gbs = -1, .overhead_s = -1, .alone_s = -1};
	parse_args(argc, argv, &c.o);
	long nc = sysconf(_SC_NPROCESSORS_ONLN);
	c.cores = nc > 0 ? (int)nc : 1;
	snprintf(c.cache, sizeof c.cache, "/tmp/assay-bench-gpu-XXXXXX");
	if (!mkdtemp(c.cache)) {
		perror("mkdtemp");
		return 3;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* availability first: cuda's probe forks, before anything initialises a driver here */
	Avail cav = {.b = be_find("c")}, all[MAXB], gpu[MAXB];
	int na = 0, ng = 0;
	cav.ok = cav.b->available(cav.why, sizeof cav.why) == 0;
	printf("GPU backends, each figure beside its anchor measured in the same run (cache %s)\n",
	       c.cache);
	printf("  %-7s %s\n", "c", cav.ok ? "available (the anchor of item 1)" : cav.why);
	for (int k = 0; be_at(k) && na < MAXB; k++) {
		const Backend *b = be_at(k);
		bool ex = strcmp(b->name, "c") != 0 && listed(c.o.backends, b->name);
		if (!ex && !listed(c.o.derived, b->name))
			continue;
		Avail *a = &all[na++];
		*a = (Avail){.b = b};
		a->ok = b->available(a->why, sizeof a->why) == 0;
		if (a->ok)
			a->device = b->device();
		if (a->ok)
			printf("  %-7s available: %s\n", b->name, a->device);
		else
			printf("  %-7s UNAVAILABLE: %s\n", b->name, a->why);
		bsep(&c.jback);
		bprintf(&c.jback, "{\"name\":\"%s\",\"available\":%s,\"%s\":", b->name,
			a->ok ? "true" : "false", a->ok ? "device" : "reason");
		bjstr(&c.jback, a->ok ? a->device : a->why);
		bprintf(&c.jback, "}");
		if (a->ok && ex)
			gpu[ng++] = *a;
	}
	if (*c.o.derived)
		torch_anchor(&c, c.o.mm_n, c.o.rows, c.o.cols, c.o.copy_mib, &c.torch);
	printf("\n");
	if (c.o.examples && !*c.o.examples)
		printf("1. Examples: not run (--examples none)\n");
	else if (ng == 0)
		printf("1. Examples: no GPU backend available\n");
	else
		examples(&c, &cav, gpu, ng);
	if (*c.o.derived) {
		Avail cu = {.b = be_find("cuda")};
		snprintf(cu.why, sizeof cu.why, "not in --derived-on");
		for (int i = 0; i < na; i++)
			if (strcmp(all[i].b->name, "cuda") == 0 && listed(c.o.derived, "cuda"))
				cu = all[i];
		anchors(&c, &cu);
		for (int i = 0; i < na; i++) {
			if (!listed(c.o.derived, all[i].b->name))
				continue;
			if (all[i].ok)
				derived(&c, &all[i]);
			else if (strcmp(all[i].b->name, "cuda") != 0)
				printf("*** %s UNAVAILABLE: %s: items 2 and 3 not run on it\n", all[i].b->name,
				       all[i].why);
		}
	} else {
		printf("\n2./3. not run (--derived-on none)\n");
	}

	if (c.o.json)
		write_json(&c);
	printf("\ntotal wall time %.1f s\n", now() - t_start);
	if (c.failures)
		printf("\n*** %d failure%s above (a derived kernel did not build, run or pass its check)\n",
		       c.failures, c.failures > 1 ? "s" : "");
	for (int i = 0; i < na; i++)
		free(all[i].device);
	free(c.jback.p);
	free(c.jex.p);
	free(c.jder.p);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", c.cache);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_gpu: could not remove %s\n", c.cache);
	return c.failures ? 1 : 0;
}
