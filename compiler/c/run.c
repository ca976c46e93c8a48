/* compiler/c/run.c: the C backend's runtime: compile a generated program with the system
 * C compiler into a shared object cached by source hash, load it with dlopen, hold its
 * buffers (with guard regions), and run its kernels over threads.
 *
 * Compiler flags (C_CFLAGS in c.h): -std=c11 -O3 -march=native -fPIC -shared
 * -ffp-contract=off -fno-math-errno. Contraction is OFF: a*b+c is a rounded product and a
 * rounded sum, never an fma, so every f32/f64 operation rounds once as the emulator and the
 * budgets assume (GCC's default in GNU modes would contract; -std=c11 alone also turns it
 * off, the flag says it out loud). -fno-math-errno only lets sqrt be an instruction; no
 * -ffast-math: NaN, inf, -0 and subnormals keep IEEE semantics.
 *
 * Cache: DIR/c-<hash>.so where DIR is BeOpts.cache_dir, else $XDG_CACHE_HOME/assay, else
 * $HOME/.cache/assay, and the hash covers the source, the compiler command and this CPU's
 * identification (-march=native). A shared object is built under a temporary name and
 * renamed into place, so concurrent workers never load a partial file, then sealed with
 * its size and hash (berun.h): a cached object that does not match its seal (truncated,
 * overwritten) is rebuilt, never loaded.
 *
 * Threads: each kernel's items are cut into one contiguous chunk per thread; kernels run
 * in order (a kernel starts when the previous one has finished).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "c.h"
#include "../emit/berun.h"

struct BeModule {
	const Kernels *k;
	void *dl;
	const AssayProgram *prog;
	int threads;
	unsigned char **raw;   /* allocations: guard, data, guard */
	void **buf;            /* data pointers */
	size_t *bytes;         /* data sizes */
};

/* The first "model name" and "flags" lines of /proc/cpuinfo (empty where unreadable). */
static char *cpu_id(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	size_t cap = 1, len = 0;
	char *out = calloc(1, cap), line[8192];
	IR_ASSERT(out);
	bool model = false, flags = false;
	while (f && fgets(line, sizeof line, f) && !(model && flags)) {
		bool m = !model && strncmp(line, "model name", 10) == 0;
		bool fl = !flags && strncmp(line, "flags", 5) == 0;
		if (!m && !fl)
			continue;
		model |= m;
		flags |= fl;
		size_t n = strlen(line);
		out = realloc(out, cap = len + n + 1);
		IR_ASSERT(out);
		memcpy(out + len, line, n + 1);
		len += n;
	}
	if (f)
		fclose(f);
	return out;
}

static const char *compiler(void)
{
	const char *cc = getenv("CC");
	return cc && *cc ? cc : "cc";
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	size_t n = strlen(text);
	int bad = fwrite(text, 1, n, f) != n;
	return (fclose(f) || bad) ? -1 : 0;
}

/* The tail of a compiler log, for a message. */
static char *log_tail(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 2049);
	IR_ASSERT(buf);
	if (f) {
		fseek(f, 0, SEEK_END);
		long n = ftell(f);
		fseek(f, n > 2048 ? n - 2048 : 0, SEEK_SET);
		size_t got = fread(buf, 1, 2048, f);
		buf[got] = 0;
		fclose(f);
	}
	return buf;
}

static int build(const char *src, const char *dir, const char *key, const char *so, Diag *d)
{
	char c[4200], tmp[4200], log[4200], flags[] = C_CFLAGS;
	snprintf(c, sizeof c, "%s/c-%s.%ld.c", dir, key, (long)getpid());
	snprintf(tmp, sizeof tmp, "%s/c-%s.%ld.so", dir, key, (long)getpid());
	snprintf(log, sizeof log, "%s/c-%s.%ld.log", dir, key, (long)getpid());
	if (write_file(c, src)) {
		int e = errno;
		diag_io(d, e, "c backend: cannot write %s: %s", c, strerror(e));
		d->code = 3;
		unlink(c);
		return -1;
	}
	char *argv[32];
	int n = 0;
	argv[n++] = (char *)compiler();
	for (char *p = strtok(flags, " "); p && n < 24; p = strtok(NULL, " "))
		argv[n++] = p;
	argv[n++] = "-o";
	argv[n++] = tmp;
	argv[n++] = c;
	argv[n++] = "-lm";
	argv[n] = NULL;
	int rc = be_run_cmd(argv, log);
	if (rc != 0) {
		char *tail = log_tail(log);
		diag_set(d, 3, "c backend: %s failed (%s %d) on %s:\n%s", argv[0],
			 rc < 0 ? "could not start," : "exit status", rc, c, tail);
		free(tail);
		unlink(tmp);
		return -1;
	}
	unlink(log);
	if (rename(tmp, so)) {
		diag_set(d, 3, "c backend: cannot rename %s to %s: %s", tmp, so, strerror(errno));
		unlink(tmp);
		unlink(c);
		return -1;
	}
	be_cache_seal(so);
	/* keep the source beside the object, for a reader of the cache */
	snprintf(tmp, sizeof tmp, "%s/c-%s.c", dir, key);
	rename(c, tmp);
	return 0;
}

static BeModule *c_compile(const Kernels *k, const char *src, const BeOpts *o, BeStats *st,
			   Diag *d)
{
	double t0 = be_now();
	char dir[4096], so[4200], key[33];
	if (be_cache_dir(o, dir, sizeof dir)) {
		diag_set(d, 3, "c backend: cannot create the cache directory %s: %s", dir, strerror(errno));
		return NULL;
	}
	char *cpu = cpu_id();
	const char *parts[] = {src, C_CFLAGS, compiler(), cpu};
	be_hash_key(parts, ARRAY_LEN(parts), key);
	free(cpu);
	snprintf(so, sizeof so, "%s/c-%s.so", dir, key);
	/* a cached object is loaded only when its seal vouches for it (berun.h); one that
	 * still fails to load is rebuilt once */
	bool hit = be_cache_check(so);
	if (!hit && build(src, dir, key, so, d))
		return NULL;
	void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!dl && hit) {
		unlink(so);
		hit = false;
		if (build(src, dir, key, so, d))
			return NULL;
		dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	}
	if (!dl) {
		diag_set(d, 3, "c backend: cannot load %s: %s", so, dlerror());
		return NULL;
	}
	const AssayProgram *p = dlsym(dl, "assay_program");
	if (!p || p->abi != C_ABI_VERSION || p->nkernels != k->nk) {
		diag_set(d, 3, "c backend: %s is not a program of this version (abi, kernels)", so);
		dlclose(dl);
		return NULL;
	}
	BeModule *m = calloc(1, sizeof *m);
	IR_ASSERT(m);
	m->k = k;
	m->dl = dl;
	m->prog = p;
	m->threads = o && o->threads > 0 ? o->threads : 1;
	be_stats(st, hit, t0);
	return m;
}

static int c_alloc(BeModule *m, Diag *d)
{
	const Kernels *k = m->k;
	size_t n = (size_t)k->nbufs + 1;
	m->raw = calloc(n, sizeof *m->raw);
	m->buf = calloc(n, sizeof *m->buf);
	m->bytes = calloc(n, sizeof *m->bytes);
	IR_ASSERT(m->raw && m->buf && m->bytes);
	for (int b = 0; b < k->nbufs; b++) {
		size_t bytes = be_buf_bytes(&k->bufs[b]);
		size_t total = BE_GUARD + ((bytes + 63) & ~(size_t)63) + BE_GUARD;
		m->raw[b] = aligned_alloc(64, total);
		if (!m->raw[b]) {
			diag_set(d, 3, "c backend: out of memory for buffer %s (%zu bytes)",
				 k->g->tensors[k->bufs[b].tensor].name, bytes);
			return -1;
		}
		memset(m->raw[b], BE_GUARD_BYTE, total);
		memset(m->raw[b] + BE_GUARD, 0, bytes);
		m->buf[b] = m->raw[b] + BE_GUARD;
		m->bytes[b] = bytes;
	}
	return 0;
}

static int c_upload(BeModule *m, int tensor, const HostTensor *t, Diag *d)
{
	int b = be_input_buffer(m->k, tensor, m->buf != NULL, t, "c", d);
	if (b < 0)
		return -1;
	const KBuf *B = &m->k->bufs[b];
	memcpy(m->buf[b], t->data, (size_t)B->n * (size_t)dt_info(B->fmt)->bytes);
	return 0;
}

static int c_download(BeModule *m, int tensor, Dtype dt, HostTensor *t, Diag *d)
{
	int b = be_buffer_of(m->k, tensor, m->buf != NULL, "c", d);
	if (b < 0 || be_out_alloc(m->k, tensor, dt, t, "c", d))
		return -1;
	be_out_fill(t, m->buf[b], &m->k->bufs[b]);
	return 0;
}

typedef struct {
	const AssayKernel *kn;
	void *const *buf;
	int64_t *err;
	int64_t t0, t1;
} Job;

static void *job_run(void *p)
{
	Job *j = p;
	j->kn->fn(j->buf, j->err, j->t0, j->t1);
	return NULL;
}

static void run_kernel(const AssayKernel *kn, void *const *buf, int64_t *err, int threads)
{
	int64_t n = kn->nitems;
	int T = threads < n ? threads : (int)n;
	if (T <= 1) {
		kn->fn(buf, err, 0, n);
		return;
	}
	Job *jobs = calloc((size_t)T, sizeof *jobs);
	pthread_t *th = calloc((size_t)T, sizeof *th);
	bool *started = calloc((size_t)T, sizeof *started);
	IR_ASSERT(jobs && th && started);
	for (int i = 0; i < T; i++)
		jobs[i] = (Job){kn, buf, err, n * i / T, n * (i + 1) / T};
	for (int i = 1; i < T; i++)
		started[i] = pthread_create(&th[i], NULL, job_run, &jobs[i]) == 0;
	job_run(&jobs[0]);
	for (int i = 1; i < T; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		else
			job_run(&jobs[i]);
	}
	free(jobs);
	free(th);
	free(started);
}

/* The error slot is the host's own: read after each kernel, at no cost. */
static int c_launch(BeModule *m, int n, Diag *d)
{
	if (!m->buf) {
		diag_set(d, 3, "c backend: launch before alloc");
		return -1;
	}
	for (int run = 0; run < n; run++)
		for (int i = 0; i < m->prog->nkernels; i++) {
			int64_t err[2] = {0, 0};
			run_kernel(&m->prog->kernels[i], m->buf, err, m->threads);
			if (err[0]) {
				be_runtime_error(m->k, err[0] - 1, err[1], d);
				return -1;
			}
		}
	return 0;
}

static int c_guards(BeModule *m, Diag *d)
{
	for (int b = 0; b < m->k->nbufs && m->raw; b++) {
		size_t total = BE_GUARD + ((m->bytes[b] + 63) & ~(size_t)63) + BE_GUARD;
		if (be_guard_check(m->raw[b], BE_GUARD, m->bytes[b], total,
				   m->k->g->tensors[m->k->bufs[b].tensor].name, d))
			return -1;
	}
	return 0;
}

static void c_free(BeModule *m)
{
	if (!m)
		return;
	for (int b = 0; m->raw && b < m->k->nbufs; b++)
		free(m->raw[b]);
	free(m->raw);
	free(m->buf);
	free(m->bytes);
	if (m->dl)
		dlclose(m->dl);
	free(m);
}

static int c_available(char *why, size_t n)
{
	char *argv[] = {(char *)compiler(), "--version", NULL};
	if (be_run_cmd(argv, NULL) != 0) {
		snprintf(why, n, "no working C compiler '%s' (set CC)", argv[0]);
		return -1;
	}
	return 0;
}

static char *c_device(void)
{
	char *id = cpu_id(), *p = strstr(id, "model name");
	char model[256] = "unknown CPU";
	if (p && (p = strchr(p, ':'))) {
		snprintf(model, sizeof model, "%s", p + 2);
		model[strcspn(model, "\n")] = 0;
	}
	free(id);
	char *out = malloc(512);
	IR_ASSERT(out);
	snprintf(out, 512, "%s, %ld hardware threads", model, sysconf(_SC_NPROCESSORS_ONLN));
	return out;
}

/* Facts (BeFacts): IEEE 754 arithmetic in every format: C11 Annex F operations on float
 * and double (FLT_EVAL_METHOD 0), no contraction (-ffp-contract=off), no -ffast-math (NaN,
 * inf, -0 and subnormals kept: SSE arithmetic without FTZ/DAZ), glibc's sqrt, floor, ceil
 * and fma correctly rounded; f16/bf16 conversions by chelp.c's integer helpers. */
const Backend c_backend = {
	.name = "c",
	.facts = BE_FACTS_IEEE,
	.available = c_available,
	.device = c_device,
	.emit = c_emit,
	.compile = c_compile,
	.alloc = c_alloc,
	.upload = c_upload,
	.launch = c_launch,
	.download = c_download,
	.guards = c_guards,
	.free = c_free,
};
