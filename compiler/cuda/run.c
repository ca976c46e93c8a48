/* compiler/cuda/run.c: the CUDA backend's runtime: NVRTC compiles the emitted program for
 * the device's architecture (a cubin, cached by hash), the driver API loads and launches
 * it over device buffers with guard regions.
 *
 * Numerics of the NVRTC options (CU_NVRTC_OPTS in cuda.h): --fmad=false keeps a*b+c two
 * roundings (NVRTC's default, like nvcc's, contracts it into an fma; the budgets model no
 * contraction); --prec-div=true and --prec-sqrt=true make / and sqrt correctly rounded;
 * --ftz=false keeps subnormals (all three are the defaults without --use_fast_math, and are
 * stated anyway); -default-device makes unannotated functions device functions.
 *
 * Fork safety: the driver must not be initialised in a process that later forks a worker
 * that uses it (verify/ forks one per run, after asking available()). So available() and
 * device() ask in a child process of their own, and only compile() (in the worker)
 * initialises the driver in the calling process.
 *
 * Memory: plain cuMemAlloc allocations (never managed memory). Each buffer is guard, data,
 * guard; the guards hold GUARD_BYTE, checked by guards() after the launches. The error
 * slot is a device u64[2] (site + 1, value), cleared before each kernel. Scratch for large
 * locals (plan.c) is one allocation grown to the largest kernel's need, its grid capped so
 * that the scratch stays under SCRATCH_MAX.
 *
 * Cache: DIR/cuda-<hash>-<arch>.cubin, the hash over the source, the options, the
 * architecture and the NVRTC version; DIR as the c backend's (BeOpts.cache_dir,
 * $XDG_CACHE_HOME/assay, ~/.cache/assay). A cached cubin is used even where NVRTC is
 * missing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cuda.h"

enum { GUARD = 256, GUARD_BYTE = 0xa5 };
#define SCRATCH_MAX ((int64_t)1 << 30)

typedef struct {
	CuMode mode;
	int threads;
	int64_t thread_bytes, block_bytes;
} Launch;

struct BeModule {
	const Kernels *k;
	CuDriver cu;
	CUdevice dev;
	bool ctx_held;
	CUmodule mod;
	CUfunction *fn;
	Launch *launch;
	int sms;
	CUdeviceptr *raw;     /* allocations: guard, data, guard */
	size_t *bytes;        /* data sizes */
	CUdeviceptr err, scratch;
	size_t scratch_bytes;
};

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const BeModule *m, CUresult r, Diag *d, const char *what)
{
	char buf[256];
	diag_set(d, 3, "cuda backend: %s: %s", what, cu_errstr(&m->cu, r, buf, sizeof buf));
	return -1;
}

/* ------------------------------------------------------------ cache */

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static int mkdirs(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(buf, 0777) && errno != EEXIST)
				return -1;
			*p = '/';
		}
	return mkdir(buf, 0777) && errno != EEXIST ? -1 : 0;
}

static int cache_dir(const BeOpts *o, char *dir, size_t n)
{
	const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	if (o && o->cache_dir)
		snprintf(dir, n, "%s", o->cache_dir);
	else if (x && *x)
		snprintf(dir, n, "%s/assay", x);
	else
		snprintf(dir, n, "%s/.cache/assay", h && *h ? h : "/tmp");
	return mkdirs(dir);
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
	    fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = 0;
		*len = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Writes under a temporary name and renames into place: readers never see a part. */
static void write_atomic(const char *path, const char *data, size_t n)
{
	char tmp[4400];
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	FILE *f = fopen(tmp, "wb");
	if (!f)
		return;
	bool ok = fwrite(data, 1, n, f) == n;
	if (fclose(f) == 0 && ok && rename(tmp, path) == 0)
		return;
	unlink(tmp);
}

#define OPT_CAT(s) s " "

/* The cubin of src for arch, from the cache or NVRTC. */
static char *cubin_of(const char *src, const char *arch, const BeOpts *o, bool *hit, size_t *len,
		      Diag *d)
{
	char dir[4096], path[4300], why[512];
	CuNvrtc nv;
	bool have_nv = cu_nvrtc_load(&nv, why, sizeof why) == 0;
	int maj = 0, min = 0;
	if (have_nv)
		nv.Version(&maj, &min);
	char ver[64];
	snprintf(ver, sizeof ver, "nvrtc %d.%d", maj, min);
	uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
	const char *parts[] = {src, CU_NVRTC_OPTS(OPT_CAT), arch, ver};
	for (size_t i = 0; i < ARRAY_LEN(parts); i++) {
		h1 = fnv(h1, parts[i], strlen(parts[i]) + 1);
		h2 = fnv(h2 ^ (i + 1), parts[i], strlen(parts[i]) + 1);
	}
	bool cached = cache_dir(o, dir, sizeof dir) == 0;
	snprintf(path, sizeof path, "%s/cuda-%016llx%016llx-%s.cubin", dir, (unsigned long long)h1,
		 (unsigned long long)h2, arch);
	char *img = cached ? read_all(path, len) : NULL;
	*hit = img != NULL;
	if (!img && !have_nv)
		diag_set(d, 3, "cuda backend: %s", why);
	else if (!img && (img = cu_nvrtc_compile(&nv, src, arch, len, d)) && cached)
		write_atomic(path, img, *len);
	if (have_nv)
		cu_nvrtc_close(&nv);
	return img;
}

/* ------------------------------------------------------------ compile */

/* Driver, device 0, its primary context made current. */
static int open_device(BeModule *m, char *why, size_t n)
{
	char buf[256];
	if (cu_driver_load(&m->cu, why, n))
		return -1;
	CUresult r = m->cu.Init(0);
	int count = 0;
	if (r == 0)
		r = m->cu.DeviceGetCount(&count);
	if (r) {
		snprintf(why, n, "the CUDA driver refused: cuInit: %s", cu_errstr(&m->cu, r, buf, sizeof buf));
		return -1;
	}
	if (count == 0) {
		snprintf(why, n, "no CUDA device (the driver is there, it sees no GPU)");
		return -1;
	}
	CUcontext ctx;
	if ((r = m->cu.DeviceGet(&m->dev, 0)) || (r = m->cu.DevicePrimaryCtxRetain(&ctx, m->dev))) {
		snprintf(why, n, "the CUDA driver refused device 0: %s", cu_errstr(&m->cu, r, buf, sizeof buf));
		return -1;
	}
	m->ctx_held = true;
	if ((r = m->cu.CtxSetCurrent(ctx))) {
		snprintf(why, n, "cuCtxSetCurrent: %s", cu_errstr(&m->cu, r, buf, sizeof buf));
		return -1;
	}
	m->cu.DeviceGetAttribute(&m->sms, CU_ATTR_MULTIPROCESSOR_COUNT, m->dev);
	return 0;
}

static void cuda_free(BeModule *m);

static BeModule *cuda_compile(const Kernels *k, const char *src, const BeOpts *o, BeStats *st,
			      Diag *d)
{
	double t0 = now();
	char why[512], arch[32];
	BeModule *m = calloc(1, sizeof *m);
	IR_ASSERT(m);
	m->k = k;
	if (open_device(m, why, sizeof why)) {
		diag_set(d, 3, "cuda backend: %s", why);
		goto fail;
	}
	int maj = 0, min = 0;
	m->cu.DeviceGetAttribute(&maj, CU_ATTR_CC_MAJOR, m->dev);
	m->cu.DeviceGetAttribute(&min, CU_ATTR_CC_MINOR, m->dev);
	snprintf(arch, sizeof arch, "sm_%d%d", maj, min);
	size_t len = 0;
	bool hit = false;
	char *img = cubin_of(src, arch, o, &hit, &len, d);
	if (!img)
		goto fail;
	CUresult r = m->cu.ModuleLoadData(&m->mod, img);
	free(img);
	if (r) {
		fail(m, r, d, "cuModuleLoadData");
		goto fail;
	}
	m->fn = calloc((size_t)k->nk + 1, sizeof *m->fn);
	m->launch = calloc((size_t)k->nk + 1, sizeof *m->launch);
	IR_ASSERT(m->fn && m->launch);
	for (int i = 0; i < k->nk; i++) {
		char name[32];
		snprintf(name, sizeof name, "k%d", i);
		if ((r = m->cu.ModuleGetFunction(&m->fn[i], m->mod, name))) {
			fail(m, r, d, "cuModuleGetFunction");
			goto fail;
		}
		CuPlan p;
		cuda_plan(k, i, &p);
		m->launch[i] = (Launch){p.mode, p.threads, p.thread_bytes, p.block_bytes};
		cuda_plan_free(&p);
	}
	if (st) {
		st->cache_hit = hit;
		st->compile_s = now() - t0;
	}
	return m;
fail:
	cuda_free(m);
	return NULL;
}

/* The PTX of k for target ("sm_90": PTX for compute_90), without a device. */
static char *cuda_compile_only(const Kernels *k, const char *target, Diag *d)
{
	char why[512], arch[64];
	if (strncmp(target, "sm_", 3) != 0) {
		diag_set(d, 3, "cuda backend: target '%s' is not of the form sm_XY", target);
		return NULL;
	}
	snprintf(arch, sizeof arch, "compute_%s", target + 3);
	CuNvrtc nv;
	if (cu_nvrtc_load(&nv, why, sizeof why)) {
		diag_set(d, 3, "cuda backend: %s", why);
		return NULL;
	}
	char *src = cuda_emit(k, d), *ptx = NULL;
	size_t len;
	if (src)
		ptx = cu_nvrtc_compile(&nv, src, arch, &len, d);
	free(src);
	cu_nvrtc_close(&nv);
	return ptx;
}

/* ------------------------------------------------------------ buffers */

static size_t elem_bytes(Dtype f)
{
	return (size_t)dt_info(f)->bytes;
}

static size_t padded(size_t bytes)
{
	return (bytes + 63) & ~(size_t)63;
}

static int cuda_alloc(BeModule *m, Diag *d)
{
	const Kernels *k = m->k;
	size_t n = (size_t)k->nbufs + 1;
	m->raw = calloc(n, sizeof *m->raw);
	m->bytes = calloc(n, sizeof *m->bytes);
	IR_ASSERT(m->raw && m->bytes);
	CUresult r = m->cu.MemAlloc(&m->err, 16);
	if (r)
		return fail(m, r, d, "cuMemAlloc (error slot)");
	for (int b = 0; b < k->nbufs; b++) {
		size_t bytes = (size_t)(k->bufs[b].n ? k->bufs[b].n : 1) * elem_bytes(k->bufs[b].fmt);
		size_t total = GUARD + padded(bytes) + GUARD;
		if ((r = m->cu.MemAlloc(&m->raw[b], total))) {
			char what[300];
			snprintf(what, sizeof what, "cuMemAlloc of buffer %s (%zu bytes)",
				 k->g->tensors[k->bufs[b].tensor].name, bytes);
			return fail(m, r, d, what);
		}
		m->bytes[b] = bytes;
		if ((r = m->cu.MemsetD8(m->raw[b], GUARD_BYTE, total)) ||
		    (r = m->cu.MemsetD8(m->raw[b] + GUARD, 0, bytes)))
			return fail(m, r, d, "cuMemsetD8");
	}
	return 0;
}

static int buffer_of(BeModule *m, int tensor, Diag *d)
{
	if (tensor < 0 || tensor >= m->k->g->ntensors || m->k->tbuf[tensor] < 0 || !m->raw) {
		diag_set(d, 3, "cuda backend: tensor %d has no buffer (inlined, or not allocated)", tensor);
		return -1;
	}
	return m->k->tbuf[tensor];
}

static int cuda_upload(BeModule *m, int tensor, const HostTensor *t, Diag *d)
{
	int b = buffer_of(m, tensor, d);
	if (b < 0)
		return -1;
	const KBuf *B = &m->k->bufs[b];
	if (t->dtype != B->fmt || t->n != B->n) {
		diag_set(d, 2, "cuda backend: input %s is %s with %lld elements, the graph wants %s with %lld",
			 m->k->g->tensors[tensor].name, dt_name(t->dtype), (long long)t->n,
			 dt_name(B->fmt), (long long)B->n);
		return -1;
	}
	CUresult r = B->n ? m->cu.MemcpyHtoD(m->raw[b] + GUARD, t->data, (size_t)B->n * elem_bytes(B->fmt)) : 0;
	return r ? fail(m, r, d, "cuMemcpyHtoD") : 0;
}

static double get(const void *p, Dtype f, int64_t i)
{
	switch (f) {
	case DT_F64: return ((const double *)p)[i];
	case DT_F32: return ((const float *)p)[i];
	case DT_F16: return fmt_f16_to_double(((const uint16_t *)p)[i]);
	case DT_BF16: return fmt_bf16_to_double(((const uint16_t *)p)[i]);
	case DT_I32: return ((const int32_t *)p)[i];
	default: IR_ASSERT(!"get: no storage format");
	}
}

static int cuda_download(BeModule *m, int tensor, Dtype dt, HostTensor *t, Diag *d)
{
	int b = buffer_of(m, tensor, d);
	if (b < 0)
		return -1;
	const Tensor *T = &m->k->g->tensors[tensor];
	const KBuf *B = &m->k->bufs[b];
	int64_t dims[IR_MAXRANK];
	for (int i = 0; i < T->rank; i++)
		dims[i] = T->dims[i].value;
	void *host = malloc(m->bytes[b]);
	if (!host || ht_alloc(t, dt, T->rank, dims)) {
		free(host);
		diag_set(d, 3, "cuda backend: out of memory for output %s", T->name);
		return -1;
	}
	CUresult r = m->cu.MemcpyDtoH(host, m->raw[b] + GUARD, m->bytes[b]);
	if (r) {
		free(host);
		ht_free(t);
		return fail(m, r, d, "cuMemcpyDtoH");
	}
	if (dt == B->fmt)
		memcpy(t->data, host, (size_t)B->n * elem_bytes(dt));
	else
		for (int64_t i = 0; i < B->n; i++)
			ht_set(t, i, get(host, B->fmt, i));
	free(host);
	return 0;
}

static int cuda_guards(BeModule *m, Diag *d)
{
	unsigned char *h = malloc(GUARD + 64 + GUARD);
	IR_ASSERT(h);
	int rc = 0;
	for (int b = 0; b < m->k->nbufs && m->raw && !rc; b++) {
		size_t after = padded(m->bytes[b]) - m->bytes[b] + GUARD;
		CUresult r = m->cu.MemcpyDtoH(h, m->raw[b], GUARD);
		if (!r)
			r = m->cu.MemcpyDtoH(h + GUARD, m->raw[b] + GUARD + m->bytes[b], after);
		if (r) {
			rc = fail(m, r, d, "cuMemcpyDtoH (guards)");
			break;
		}
		for (size_t i = 0; i < GUARD + after; i++)
			if (h[i] != GUARD_BYTE) {
				diag_set(d, 1, "a write outside buffer %s (%s %zu bytes from its start)",
					 m->k->g->tensors[m->k->bufs[b].tensor].name,
					 i < GUARD ? "before it," : "past its end,",
					 i < GUARD ? GUARD - i : i - GUARD);
				rc = -1;
				break;
			}
	}
	free(h);
	return rc;
}

/* ------------------------------------------------------------ launch */

static void runtime_error(const BeModule *m, int64_t site, int64_t v, Diag *d)
{
	const Graph *g = m->k->g;
	const KSite *s = &m->k->sites[site];
	const char *def = g->tensors[g->defs[s->def].out[0]].name;
	switch (s->kind) {
	case KE_INDEX:
		diag_set(d, 2, "indirect read of '%s' out of range: index %d (read from '%s') is %lld, "
			 "outside [0, %lld), in '%s'", g->tensors[s->tensor].name, s->dim,
			 g->tensors[s->idx_tensor].name, (long long)v, (long long)s->bound, def);
		return;
	case KE_TOPK:
		diag_set(d, 2, "topk '%s' over a range of %lld terms, fewer than K = %lld", def,
			 (long long)v, (long long)s->bound);
		return;
	case KE_INT32:
		diag_set(d, 2, "integer value %lld of '%s' does not fit in 32 bits", (long long)v,
			 g->tensors[s->tensor].name);
		return;
	}
}

/* The grid of kernel i: enough blocks for its items, at most 32 per multiprocessor and as
 * many as SCRATCH_MAX bytes of scratch allow (the kernels loop over items). */
static unsigned grid_of(const BeModule *m, int i, size_t *scratch)
{
	const Launch *L = &m->launch[i];
	int64_t n = m->k->k[i].nitems;
	int64_t G = L->mode == CM_BLOCK ? n : (n + L->threads - 1) / L->threads;
	int64_t cap = (int64_t)(m->sms > 0 ? m->sms : 1) * 32;
	int64_t per = L->thread_bytes * L->threads + L->block_bytes;
	if (G > cap)
		G = cap;
	if (per > 0 && G * per > SCRATCH_MAX)
		G = SCRATCH_MAX / per;
	if (G < 1)
		G = 1;
	*scratch = (size_t)(G * per);
	return (unsigned)G;
}

static int run_kernel(BeModule *m, int i, Diag *d)
{
	size_t need;
	unsigned G = grid_of(m, i, &need);
	CUresult r;
	if (need > m->scratch_bytes) {
		if (m->scratch)
			m->cu.MemFree(m->scratch);
		m->scratch = 0;
		m->scratch_bytes = 0;
		if ((r = m->cu.MemAlloc(&m->scratch, need)))
			return fail(m, r, d, "cuMemAlloc (scratch for large locals)");
		m->scratch_bytes = need;
	}
	void *args[3 + 1024];
	int nb = m->k->nbufs;
	CUdeviceptr data[1024];
	if (nb > 1024) {
		diag_set(d, 2, "cuda backend: more than 1024 buffers");
		return -1;
	}
	args[0] = &m->err;
	args[1] = &m->scratch;
	for (int b = 0; b < nb; b++) {
		data[b] = m->raw[b] + GUARD;
		args[2 + b] = &data[b];
	}
	if ((r = m->cu.MemsetD8(m->err, 0, 16)))
		return fail(m, r, d, "cuMemsetD8 (error slot)");
	r = m->cu.LaunchKernel(m->fn[i], G, 1, 1, (unsigned)m->launch[i].threads, 1, 1, 0, NULL, args,
			       NULL);
	if (r)
		return fail(m, r, d, "cuLaunchKernel");
	if ((r = m->cu.CtxSynchronize()))
		return fail(m, r, d, "the kernel failed");
	unsigned long long err[2];
	if ((r = m->cu.MemcpyDtoH(err, m->err, sizeof err)))
		return fail(m, r, d, "cuMemcpyDtoH (error slot)");
	if (err[0]) {
		runtime_error(m, (int64_t)err[0] - 1, (int64_t)err[1], d);
		return -1;
	}
	return 0;
}

static int cuda_launch(BeModule *m, Diag *d)
{
	if (!m->raw) {
		diag_set(d, 3, "cuda backend: launch before alloc");
		return -1;
	}
	for (int i = 0; i < m->k->nk; i++)
		if (run_kernel(m, i, d))
			return -1;
	return 0;
}

static void cuda_free(BeModule *m)
{
	if (!m)
		return;
	for (int b = 0; m->raw && b < m->k->nbufs; b++)
		if (m->raw[b])
			m->cu.MemFree(m->raw[b]);
	if (m->err)
		m->cu.MemFree(m->err);
	if (m->scratch)
		m->cu.MemFree(m->scratch);
	if (m->mod)
		m->cu.ModuleUnload(m->mod);
	if (m->ctx_held)
		m->cu.DevicePrimaryCtxRelease(m->dev);
	cu_driver_close(&m->cu);
	free(m->raw);
	free(m->bytes);
	free(m->fn);
	free(m->launch);
	free(m);
}

/* ------------------------------------------------------------ probing, in a child */

/* Fills out (n bytes) in a child process: the device's description (ok) or why not. */
static int probe_child(char *out, size_t n)
{
	BeModule m = {0};
	char why[512];
	if (open_device(&m, why, sizeof why)) {
		snprintf(out, n, "%s", why);
		return 1;
	}
	CuNvrtc nv;
	if (cu_nvrtc_load(&nv, why, sizeof why)) {
		snprintf(out, n, "%s", why);
		return 1;
	}
	char name[256] = "?";
	int maj = 0, min = 0, drv = 0, nmaj = 0, nmin = 0;
	size_t mem = 0;
	m.cu.DeviceGetName(name, sizeof name, m.dev);
	m.cu.DeviceGetAttribute(&maj, CU_ATTR_CC_MAJOR, m.dev);
	m.cu.DeviceGetAttribute(&min, CU_ATTR_CC_MINOR, m.dev);
	m.cu.DeviceTotalMem(&mem, m.dev);
	m.cu.DriverGetVersion(&drv);
	nv.Version(&nmaj, &nmin);
	snprintf(out, n, "%s (sm_%d%d, %d SMs, %.0f GiB), driver %d.%d, NVRTC %d.%d (%s)", name, maj,
		 min, m.sms, (double)mem / (1 << 30), drv / 1000, drv % 1000 / 10, nmaj, nmin, nv.path);
	return 0;
}

/* Runs probe_child in a forked child; returns its status (0: usable) and its text. */
static int probe(char *out, size_t n)
{
	int fd[2];
	if (pipe(fd)) {
		snprintf(out, n, "cannot probe the CUDA driver: pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		snprintf(out, n, "cannot probe the CUDA driver: fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		char buf[1024];
		close(fd[0]);
		alarm(60);   /* a driver that hangs kills the probe, not its caller */
		int rc = probe_child(buf, sizeof buf);
		ssize_t w = write(fd[1], buf, strlen(buf));
		_exit(w < 0 ? 3 : rc);
	}
	close(fd[1]);
	size_t got = 0;
	ssize_t r;
	while (got + 1 < n && (r = read(fd[0], out + got, n - 1 - got)) != 0)
		if (r > 0)
			got += (size_t)r;
		else if (errno != EINTR)
			break;
	out[got] = 0;
	close(fd[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status)) {
		snprintf(out, n, "the CUDA driver probe died (signal %d)", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		return -1;
	}
	return WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int cuda_available(char *why, size_t n)
{
	return probe(why, n);
}

static char *cuda_device(void)
{
	char *out = malloc(1024);
	IR_ASSERT(out);
	probe(out, 1024);   /* on failure: why there is none */
	return out;
}

const Backend cuda_backend = {
	.name = "cuda",
	.available = cuda_available,
	.device = cuda_device,
	.emit = cuda_emit,
	.compile = cuda_compile,
	.alloc = cuda_alloc,
	.upload = cuda_upload,
	.launch = cuda_launch,
	.download = cuda_download,
	.guards = cuda_guards,
	.free = cuda_free,
	.compile_only = cuda_compile_only,
};
