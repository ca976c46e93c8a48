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
 * guard; the guards hold BE_GUARD_BYTE, checked by guards() after the launches. The error
 * slot is a device u64[2] (site + 1, value), cleared once per launch (of n runs of the
 * program, queued back to back on the default stream) and read once after the one
 * synchronisation at its end. Scratch for large locals (the plan) is one allocation grown,
 * before a launch queues anything, to the largest kernel's need, its grid capped so that
 * the scratch stays under SCRATCH_MAX.
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
#include <sys/wait.h>
#include <unistd.h>
#include "cuda.h"
#include "../emit/berun.h"

#define SCRATCH_MAX ((int64_t)1 << 30)

struct BeModule {
	const Kernels *k;
	CuDriver cu;
	CUdevice dev;
	CUmodule mod;
	CUfunction *fn;
	const MapKernel *launch;   /* per kernel: its plan (the program's record, map_plan) */
	int sms;
	CUdeviceptr *raw;     /* allocations: guard, data, guard */
	size_t *bytes;        /* data sizes */
	CUdeviceptr err, scratch;
	size_t scratch_bytes;
};

static int fail(const BeModule *m, CUresult r, Diag *d, const char *what)
{
	char buf[256];
	diag_set(d, 3, "cuda backend: %s: %s", what, cu_errstr(&m->cu, r, buf, sizeof buf));
	return -1;
}

/* ------------------------------------------------------------ cache */

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
	char ver[64], key[33];
	snprintf(ver, sizeof ver, "nvrtc %d.%d", maj, min);
	const char *parts[] = {src, CU_NVRTC_OPTS(OPT_CAT), arch, ver};
	be_hash_key(parts, ARRAY_LEN(parts), key);
	bool cached = be_cache_dir(o, dir, sizeof dir) == 0;
	snprintf(path, sizeof path, "%s/cuda-%s-%s.cubin", dir, key, arch);
	char *img = cached ? be_cache_get(path, len) : NULL;
	*hit = img != NULL;
	if (!img && !have_nv)
		diag_set(d, 3, "cuda backend: %s", why);
	else if (!img && (img = cu_nvrtc_compile(&nv, src, arch, len, d)) && cached)
		be_cache_put(path, img, *len);
	if (have_nv)
		cu_nvrtc_close(&nv);
	return img;
}

/* ------------------------------------------------------------ compile */

/* The process's CUDA session: the driver, device 0 and its primary context, retained at
 * the first compile and kept for the life of the process, so that a persistent worker
 * (verify/worker.c) makes the context once (releasing the last reference destroys it).
 * A worker whose kernel faulted is retired by verify, so a context a fault left unusable
 * serves no other run. A process made by fork() makes its own session (owner). */
static struct {
	pid_t owner;
	CuDriver cu;
	CUdevice dev;
	CUcontext ctx;
	int sms;
} csess;

static int session(char *why, size_t n)
{
	if (csess.owner == getpid())
		return 0;
	memset(&csess, 0, sizeof csess);   /* a parent's: not ours to release */
	char buf[256];
	if (cu_driver_load(&csess.cu, why, n))
		return -1;
	CUresult r = csess.cu.Init(0);
	int count = 0;
	if (r == 0)
		r = csess.cu.DeviceGetCount(&count);
	if (r) {
		snprintf(why, n, "the CUDA driver refused: cuInit: %s",
			 cu_errstr(&csess.cu, r, buf, sizeof buf));
		return -1;
	}
	if (count == 0) {
		snprintf(why, n, "no CUDA device (the driver is there, it sees no GPU)");
		return -1;
	}
	if ((r = csess.cu.DeviceGet(&csess.dev, 0)) ||
	    (r = csess.cu.DevicePrimaryCtxRetain(&csess.ctx, csess.dev))) {
		snprintf(why, n, "the CUDA driver refused device 0: %s",
			 cu_errstr(&csess.cu, r, buf, sizeof buf));
		return -1;
	}
	csess.cu.DeviceGetAttribute(&csess.sms, CU_ATTR_MULTIPROCESSOR_COUNT, csess.dev);
	csess.owner = getpid();
	return 0;
}

/* The session's driver and device in m, its primary context made current. */
static int open_device(BeModule *m, char *why, size_t n)
{
	if (session(why, n))
		return -1;
	m->cu = csess.cu;
	m->dev = csess.dev;
	m->sms = csess.sms;
	char buf[256];
	CUresult r = m->cu.CtxSetCurrent(csess.ctx);
	if (r) {
		snprintf(why, n, "cuCtxSetCurrent: %s", cu_errstr(&m->cu, r, buf, sizeof buf));
		return -1;
	}
	return 0;
}

static void cuda_free(BeModule *m);

/* The compute capability of the device the last compile was for (0: none yet): the device
 * facts' matrix unit (one device per process). */
static int compiled_sm;

static BeModule *cuda_compile(const Kernels *k, const char *src, const BeOpts *o, BeStats *st,
			      Diag *d)
{
	double t0 = be_now();
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
	compiled_sm = maj * 10 + min;
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
	m->launch = map_plan(k, &cuda_target)->k;
	IR_ASSERT(m->fn);
	for (int i = 0; i < k->nk; i += m->launch[i].nfused) {   /* a function per launch */
		char name[32];
		snprintf(name, sizeof name, "k%d", i);
		if ((r = m->cu.ModuleGetFunction(&m->fn[i], m->mod, name))) {
			fail(m, r, d, "cuModuleGetFunction");
			goto fail;
		}
	}
	be_stats(st, hit, t0);
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
		size_t bytes = be_buf_bytes(&k->bufs[b]);
		size_t total = BE_GUARD + padded(bytes) + BE_GUARD;
		if ((r = m->cu.MemAlloc(&m->raw[b], total))) {
			char what[300];
			snprintf(what, sizeof what, "cuMemAlloc of buffer %s (%zu bytes)",
				 k->g->tensors[k->bufs[b].tensor].name, bytes);
			return fail(m, r, d, what);
		}
		m->bytes[b] = bytes;
		if ((r = m->cu.MemsetD8(m->raw[b], BE_GUARD_BYTE, total)) ||
		    (r = m->cu.MemsetD8(m->raw[b] + BE_GUARD, 0, bytes)))
			return fail(m, r, d, "cuMemsetD8");
	}
	return 0;
}

static int cuda_upload(BeModule *m, int tensor, const HostTensor *t, Diag *d)
{
	int b = be_input_buffer(m->k, tensor, m->raw != NULL, t, "cuda", d);
	if (b < 0)
		return -1;
	const KBuf *B = &m->k->bufs[b];
	size_t n = (size_t)B->n * (size_t)dt_info(B->fmt)->bytes;
	CUresult r = B->n ? m->cu.MemcpyHtoD(m->raw[b] + BE_GUARD, t->data, n) : 0;
	return r ? fail(m, r, d, "cuMemcpyHtoD") : 0;
}

static int cuda_download(BeModule *m, int tensor, Dtype dt, HostTensor *t, Diag *d)
{
	int b = be_buffer_of(m->k, tensor, m->raw != NULL, "cuda", d);
	if (b < 0 || be_out_alloc(m->k, tensor, dt, t, "cuda", d))
		return -1;
	void *host = malloc(m->bytes[b]);
	if (!host) {
		ht_free(t);
		diag_set(d, 3, "cuda backend: out of memory for output %s", m->k->g->tensors[tensor].name);
		return -1;
	}
	CUresult r = m->cu.MemcpyDtoH(host, m->raw[b] + BE_GUARD, m->bytes[b]);
	if (r) {
		free(host);
		ht_free(t);
		return fail(m, r, d, "cuMemcpyDtoH");
	}
	be_out_fill(t, host, &m->k->bufs[b]);
	free(host);
	return 0;
}

static int cuda_guards(BeModule *m, Diag *d)
{
	unsigned char *h = malloc(BE_GUARD + 64 + BE_GUARD);
	IR_ASSERT(h);
	int rc = 0;
	for (int b = 0; b < m->k->nbufs && m->raw && !rc; b++) {
		size_t after = padded(m->bytes[b]) - m->bytes[b] + BE_GUARD;
		CUresult r = m->cu.MemcpyDtoH(h, m->raw[b], BE_GUARD);
		if (!r)
			r = m->cu.MemcpyDtoH(h + BE_GUARD, m->raw[b] + BE_GUARD + m->bytes[b], after);
		if (r) {
			rc = fail(m, r, d, "cuMemcpyDtoH (guards)");
			break;
		}
		/* h: the guard before the data, then what follows the data */
		rc = be_guard_check(h, BE_GUARD, 0, BE_GUARD + after,
				    m->k->g->tensors[m->k->bufs[b].tensor].name, d);
	}
	free(h);
	return rc;
}

/* ------------------------------------------------------------ launch */

/* The grid of kernel i: enough blocks for its items, at most 32 per multiprocessor and as
 * many as SCRATCH_MAX bytes of scratch allow (the kernels loop over items). */
static unsigned grid_of(const BeModule *m, int i, size_t *scratch)
{
	const MapKernel *L = &m->launch[i];
	int64_t n = m->k->k[i].nitems;
	int64_t G = L->mode == MAP_GROUP ? n : (n + L->wg - 1) / L->wg;
	int64_t cap = (int64_t)(m->sms > 0 ? m->sms : 1) * 32;
	int64_t per = L->scratch * L->wg + L->scratch_group;
	if (G > cap)
		G = cap;
	if (per > 0 && G * per > SCRATCH_MAX)
		G = SCRATCH_MAX / per;
	if (G < 1)
		G = 1;
	*scratch = (size_t)(G * per);
	return (unsigned)G;
}

/* Grows the scratch to the largest need of the program's kernels, before any of them is
 * launched (freeing memory a queued kernel uses would wait for the device). */
static int scratch_for(BeModule *m, Diag *d)
{
	size_t need = 0, s;
	for (int i = 0; i < m->k->nk; i++) {
		grid_of(m, i, &s);
		if (s > need)
			need = s;
	}
	if (need <= m->scratch_bytes)
		return 0;
	if (m->scratch)
		m->cu.MemFree(m->scratch);
	m->scratch = 0;
	m->scratch_bytes = 0;
	CUresult r = m->cu.MemAlloc(&m->scratch, need);
	if (r)
		return fail(m, r, d, "cuMemAlloc (scratch for large locals)");
	m->scratch_bytes = need;
	return 0;
}

/* Queues kernel i (the stream orders it after the kernels queued before it). */
static int run_kernel(BeModule *m, int i, Diag *d)
{
	size_t need;
	unsigned G = grid_of(m, i, &need);
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
		data[b] = m->raw[b] + BE_GUARD;
		args[2 + b] = &data[b];
	}
	CUresult r = m->cu.LaunchKernel(m->fn[i], G, 1, 1, (unsigned)m->launch[i].wg, 1, 1, 0,
					NULL, args, NULL);
	return r ? fail(m, r, d, "cuLaunchKernel") : 0;
}

/* The error slot is cleared once, every kernel of the n runs is queued, then one
 * synchronisation and one read of the slot: the first error since the clear. */
static int cuda_launch(BeModule *m, int n, Diag *d)
{
	if (!m->raw) {
		diag_set(d, 3, "cuda backend: launch before alloc");
		return -1;
	}
	CUresult r;
	if (scratch_for(m, d))
		return -1;
	if ((r = m->cu.MemsetD8(m->err, 0, 16)))
		return fail(m, r, d, "cuMemsetD8 (error slot)");
	for (int run = 0; run < n; run++)
		for (int i = 0; i < m->k->nk; i += m->launch[i].nfused)
			if (run_kernel(m, i, d))
				return -1;
	if ((r = m->cu.CtxSynchronize()))
		return fail(m, r, d, "the kernels failed");
	unsigned long long err[2];
	if ((r = m->cu.MemcpyDtoH(err, m->err, sizeof err)))
		return fail(m, r, d, "cuMemcpyDtoH (error slot)");
	if (err[0]) {
		be_runtime_error(m->k, (int64_t)err[0] - 1, (int64_t)err[1], d);
		return -1;
	}
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
	/* the driver and the primary context are the process's session's */
	free(m->raw);
	free(m->bytes);
	free(m->fn);
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
	pid_t pid = be_fork_probe(fd, "the CUDA driver", out, n);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char buf[1024];
		alarm(60);   /* a driver that hangs kills the probe, not its caller */
		int rc = probe_child(buf, sizeof buf);
		ssize_t w = write(fd[1], buf, strlen(buf));
		_exit(w < 0 ? 3 : rc);
	}
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

/* Facts (BeFacts): IEEE 754 arithmetic in every format under the NVRTC options above
 * (CUDA C Programming Guide, 'Floating-Point Standard': + - * / sqrt and fma of float and
 * double are IEEE-compliant, correctly rounded to nearest even, when not contracted, with
 * --prec-div, --prec-sqrt and --ftz=false); max, min and the f16/bf16 conversions are
 * chelp.c's helpers, as in the c backend. */
const MapTarget cuda_target = {
	.rules = MAP_RULES_BLOCK,
	.item_wg = 128,           /* block size of a thread-per-item kernel */
	.wg_min = 32,             /* a warp; a construct of fewer iterations keeps a thread per item */
	.wg_max = 256,
	.shared_max = 40960,      /* bytes of __shared__ locals per block (a fused launch: all
	                             its kernels') */
	.fuse_rows = true,        /* row kernels share a launch (map/fuse.c) */
	.stage_max = 49152,       /* a fused launch's __shared__ bytes with a staged row
	                             (map/stage.c): the static limit of a block */
	.private_bytes = 2048,    /* larger private arrays go to scratch */
};

/* The device's matrix unit, for the emulation check of `mma` definitions (docs/mma.md):
 * the compute capability of the last compile's device. */
static void cuda_device_facts(BeFacts *f)
{
	if (compiled_sm)
		f->mma_sm = compiled_sm;
}

const Backend cuda_backend = {
	.name = "cuda",
	.map = &cuda_target,
	.facts = BE_FACTS_IEEE,
	.device_facts = cuda_device_facts,
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
