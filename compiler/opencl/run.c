/* compiler/opencl/run.c: the OpenCL backend's runtime: the ICD loader (libOpenCL.so.1)
 * loaded with dlopen and never linked, a device chosen, the program built with
 * clBuildProgram, buffers with guard regions, kernels launched by their plans (the
 * program's record: compiler/map/map.h).
 *
 * Device: $ASSAY_OPENCL_DEVICE, when set, picks the first device whose "platform: device"
 * description contains it (case-insensitive); otherwise the first GPU, else the first CPU,
 * else the first device of any type. The few OpenCL types, constants and prototypes used
 * are declared here (values from the Khronos headers), so building needs no OpenCL headers.
 *
 * Build options: -cl-std=CL1.2, plus -cl-fp32-correctly-rounded-divide-sqrt when the device
 * reports CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT; never -cl-fast-relaxed-math,
 * -cl-mad-enable, -cl-unsafe-math-optimizations or -cl-denorms-are-zero. With the program's
 * FP_CONTRACT OFF pragma, + - * / sqrt then round once each. A program using f64 on a device
 * without cl_khr_fp64 is refused as unsupported (diagnostic code 2). A failed build keeps
 * the build log in the diagnostic (code 3). Programs are not cached here: PoCL and NVIDIA's
 * driver cache built programs themselves.
 *
 * Processes: available() and device() probe in a forked child, so the calling process never
 * initialises an OpenCL implementation (verify forks workers from it, and a fork after
 * an implementation has started its threads is not safe). Everything else runs in the
 * caller's process: the first compile() loads the library and creates the context and
 * queue of the process's session (session() below), which every later module shares.
 *
 * Buffers: each is one cl_mem of GUARD + data + GUARD bytes (GUARD a multiple of the
 * device's base address alignment), the data reached through a sub-buffer; the guards are
 * filled with 0xa5 and read back by guards(). Launch: kernels run in order on one in-order
 * queue; a kernel's items are launched in chunks (bounded by the scratch buffer's size and
 * by a cap on work-items per launch); the error slot is cleared before a launch's n runs
 * of the program and read back once after them.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "opencl.h"
#include "../emit/berun.h"

/* ------------------------------------------------------------ the OpenCL API used */

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_uint cl_bool;
typedef cl_ulong cl_bitfield;
typedef intptr_t cl_context_properties;
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_event *cl_event;
typedef struct {
	size_t origin, size;
} cl_buffer_region;

enum {
	CL_SUCCESS = 0,
	CL_TRUE = 1,
	CL_PLATFORM_VERSION = 0x0901,
	CL_PLATFORM_NAME = 0x0902,
	CL_DEVICE_TYPE = 0x1000,
	CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002,
	CL_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004,
	CL_DEVICE_MAX_MEM_ALLOC_SIZE = 0x1010,
	CL_DEVICE_MEM_BASE_ADDR_ALIGN = 0x1019,
	CL_DEVICE_SINGLE_FP_CONFIG = 0x101B,
	CL_DEVICE_NAME = 0x102B,
	CL_DRIVER_VERSION = 0x102D,
	CL_DEVICE_VERSION = 0x102F,
	CL_DEVICE_EXTENSIONS = 0x1030,
	CL_DEVICE_DOUBLE_FP_CONFIG = 0x1032,
	CL_CONTEXT_PLATFORM = 0x1084,
	CL_PROGRAM_BUILD_LOG = 0x1183,
	CL_KERNEL_WORK_GROUP_SIZE = 0x11B0,
	CL_BUFFER_CREATE_TYPE_REGION = 0x1220,
};
#define CL_DEVICE_TYPE_CPU ((cl_bitfield)1 << 1)
#define CL_DEVICE_TYPE_GPU ((cl_bitfield)1 << 2)
#define CL_DEVICE_TYPE_ALL ((cl_bitfield)0xFFFFFFFF)
#define CL_FP_DENORM ((cl_bitfield)1 << 0)
#define CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ((cl_bitfield)1 << 7)
#define CL_MEM_READ_WRITE ((cl_bitfield)1 << 0)

#define CL_FUNCS(X) \
	X(cl_int, clGetPlatformIDs, (cl_uint, cl_platform_id *, cl_uint *)) \
	X(cl_int, clGetPlatformInfo, (cl_platform_id, cl_uint, size_t, void *, size_t *)) \
	X(cl_int, clGetDeviceIDs, (cl_platform_id, cl_bitfield, cl_uint, cl_device_id *, cl_uint *)) \
	X(cl_int, clGetDeviceInfo, (cl_device_id, cl_uint, size_t, void *, size_t *)) \
	X(cl_context, clCreateContext, (const cl_context_properties *, cl_uint, const cl_device_id *, \
		void (*)(const char *, const void *, size_t, void *), void *, cl_int *)) \
	X(cl_command_queue, clCreateCommandQueue, (cl_context, cl_device_id, cl_bitfield, cl_int *)) \
	X(cl_program, clCreateProgramWithSource, (cl_context, cl_uint, const char **, const size_t *, \
		cl_int *)) \
	X(cl_int, clBuildProgram, (cl_program, cl_uint, const cl_device_id *, const char *, \
		void (*)(cl_program, void *), void *)) \
	X(cl_int, clGetProgramBuildInfo, (cl_program, cl_device_id, cl_uint, size_t, void *, size_t *)) \
	X(cl_kernel, clCreateKernel, (cl_program, const char *, cl_int *)) \
	X(cl_int, clGetKernelWorkGroupInfo, (cl_kernel, cl_device_id, cl_uint, size_t, void *, size_t *)) \
	X(cl_mem, clCreateBuffer, (cl_context, cl_bitfield, size_t, void *, cl_int *)) \
	X(cl_mem, clCreateSubBuffer, (cl_mem, cl_bitfield, cl_uint, const void *, cl_int *)) \
	X(cl_int, clEnqueueWriteBuffer, (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, \
		cl_uint, const cl_event *, cl_event *)) \
	X(cl_int, clEnqueueReadBuffer, (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, \
		cl_uint, const cl_event *, cl_event *)) \
	X(cl_int, clSetKernelArg, (cl_kernel, cl_uint, size_t, const void *)) \
	X(cl_int, clEnqueueNDRangeKernel, (cl_command_queue, cl_kernel, cl_uint, const size_t *, \
		const size_t *, const size_t *, cl_uint, const cl_event *, cl_event *)) \
	X(cl_int, clFinish, (cl_command_queue)) \
	X(cl_int, clReleaseMemObject, (cl_mem)) \
	X(cl_int, clReleaseKernel, (cl_kernel)) \
	X(cl_int, clReleaseProgram, (cl_program)) \
	X(cl_int, clReleaseCommandQueue, (cl_command_queue)) \
	X(cl_int, clReleaseContext, (cl_context))

typedef struct {
	void *dl;
#define X(ret, name, args) ret (*name) args;
	CL_FUNCS(X)
#undef X
} Cl;

/* ------------------------------------------------------------ library and device */

enum { GUARD_MIN = BE_GUARD, WG_PLAIN = 64, PROBE_TIMEOUT_MS = 60000 };
#define ITEMS_PER_LAUNCH ((int64_t)1 << 24)
#define SCRATCH_BUDGET ((int64_t)256 << 20)

typedef struct {
	cl_platform_id plat;
	cl_device_id dev;
	char name[256], platform[256], version[256], driver[128];
	bool gpu, cpu, fp64, cr_divsqrt, denorm;
	size_t max_wg;
	cl_uint align_bits, units;
	cl_ulong max_alloc;
} Dev;

static int cl_load(Cl *cl, char *why, size_t n)
{
	memset(cl, 0, sizeof *cl);
	cl->dl = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cl->dl)
		cl->dl = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
	if (!cl->dl) {
		snprintf(why, n, "no OpenCL ICD loader (libOpenCL.so.1): %s", dlerror());
		return -1;
	}
	void *p;
#define X(ret, name, args) \
	if (!(p = dlsym(cl->dl, #name))) { \
		snprintf(why, n, "the OpenCL library lacks %s", #name); \
		dlclose(cl->dl); \
		cl->dl = NULL; \
		return -1; \
	} \
	memcpy(&cl->name, &p, sizeof p);
	CL_FUNCS(X)
#undef X
	return 0;
}

static void dev_info(const Cl *cl, Dev *d)
{
	cl_bitfield type = 0, single = 0, dbl = 0;
	char ext[8192] = "";
	cl->clGetPlatformInfo(d->plat, CL_PLATFORM_NAME, sizeof d->platform, d->platform, NULL);
	cl->clGetDeviceInfo(d->dev, CL_DEVICE_NAME, sizeof d->name, d->name, NULL);
	cl->clGetDeviceInfo(d->dev, CL_DEVICE_VERSION, sizeof d->version, d->version, NULL);
	cl->clGetDeviceInfo(d->dev, CL_DRIVER_VERSION, sizeof d->driver, d->driver, NULL);
	cl->clGetDeviceInfo(d->dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
	cl->clGetDeviceInfo(d->dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof single, &single, NULL);
	cl->clGetDeviceInfo(d->dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dbl, &dbl, NULL);
	cl->clGetDeviceInfo(d->dev, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
	cl->clGetDeviceInfo(d->dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_wg, &d->max_wg, NULL);
	cl->clGetDeviceInfo(d->dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof d->align_bits,
			    &d->align_bits, NULL);
	cl->clGetDeviceInfo(d->dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->units, &d->units, NULL);
	cl->clGetDeviceInfo(d->dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc,
			    NULL);
	d->gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
	d->cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
	d->fp64 = dbl != 0 || strstr(ext, "cl_khr_fp64") != NULL;
	d->cr_divsqrt = (single & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
	d->denorm = (single & CL_FP_DENORM) != 0;
	if (d->max_wg < 1)
		d->max_wg = 1;
}

static bool contains_ci(const char *hay, const char *needle)
{
	for (; *hay; hay++) {
		size_t i = 0;
		while (needle[i] && hay[i] &&
		       tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
			i++;
		if (!needle[i])
			return true;
	}
	return !*needle;
}

/* Picks the device (see the file's comment); -1 with why when there is none. */
static int pick(const Cl *cl, Dev *out, char *why, size_t n)
{
	cl_platform_id plats[16];
	cl_uint np = 0;
	cl_int rc = cl->clGetPlatformIDs(16, plats, &np);
	if (rc != CL_SUCCESS || np == 0) {
		snprintf(why, n, "no OpenCL platform (clGetPlatformIDs: %d; is an ICD such as "
			 "pocl-opencl-icd installed?)", rc);
		return -1;
	}
	const char *want = getenv("ASSAY_OPENCL_DEVICE");
	int best = -1;
	char seen[1024] = "";
	for (cl_uint p = 0; p < np && p < 16; p++) {
		cl_device_id devs[16];
		cl_uint nd = 0;
		if (cl->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS)
			continue;
		for (cl_uint i = 0; i < nd && i < 16; i++) {
			Dev d = {.plat = plats[p], .dev = devs[i]};
			dev_info(cl, &d);
			char desc[600];
			snprintf(desc, sizeof desc, "%s: %s", d.platform, d.name);
			size_t l = strlen(seen);
			snprintf(seen + l, sizeof seen - l, "%s'%s'", l ? ", " : "", desc);
			int rank = want && *want ? (contains_ci(desc, want) ? 3 : 0) : d.gpu ? 3 : d.cpu ? 2 : 1;
			if (rank > best) {
				best = rank;
				*out = d;
			}
			if (best == 3)
				return 0;
		}
	}
	if (best > 0 && !(want && *want))
		return 0;
	if (want && *want)
		snprintf(why, n, "no OpenCL device matches ASSAY_OPENCL_DEVICE='%s' (devices: %s)", want,
			 seen[0] ? seen : "none");
	else
		snprintf(why, n, "the OpenCL platforms have no device");
	return -1;
}

static void describe(const Dev *d, char *out, size_t n)
{
	snprintf(out, n, "%s (%s, %s, driver %s; %s%s%s%s)", d->name, d->platform, d->version,
		 d->driver, d->gpu ? "GPU" : "CPU", d->fp64 ? ", fp64" : ", no fp64",
		 d->cr_divsqrt ? ", correctly rounded f32 divide/sqrt" : ", f32 divide 2.5 ulp, sqrt 3 ulp",
		 d->denorm ? "" : ", f32 denormals flushed");
}

/* The probe: in a child process, load the library, pick the device and describe it. */
static int probe(char *out, size_t n)
{
	int fd[2];
	pid_t pid = be_fork_probe(fd, "for OpenCL", out, n);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char msg[1024];
		Cl cl;
		Dev d;
		if (cl_load(&cl, msg + 1, sizeof msg - 1) == 0 && pick(&cl, &d, msg + 1, sizeof msg - 1) == 0) {
			msg[0] = '+';
			describe(&d, msg + 1, sizeof msg - 1);
		} else {
			msg[0] = '-';
		}
		ssize_t w = write(fd[1], msg, strlen(msg));
		_exit(w < 0);
	}
	char buf[1024];
	size_t got = 0;
	struct pollfd pf = {fd[0], POLLIN, 0};
	while (got < sizeof buf - 1 && poll(&pf, 1, PROBE_TIMEOUT_MS) > 0) {
		ssize_t r = read(fd[0], buf + got, sizeof buf - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = 0;
	close(fd[0]);
	int status = 0;
	if (got == 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got == 0) {
		snprintf(out, n, "the OpenCL probe %s", WIFSIGNALED(status) ? "crashed (the driver "
			 "failed while listing devices)" : "gave no answer");
		return -1;
	}
	snprintf(out, n, "%s", buf + 1);
	return buf[0] == '+' ? 0 : -1;
}

static int ocl_available(char *why, size_t n)
{
	char msg[1024];
	int rc = probe(msg, sizeof msg);
	if (rc)
		snprintf(why, n, "%s", msg);
	return rc;
}

static char *ocl_device(void)
{
	char msg[1024];
	probe(msg, sizeof msg);
	char *out = strdup(msg);
	IR_ASSERT(out);
	return out;
}

/* ------------------------------------------------------------ modules */

typedef struct {
	const MapKernel *plan;   /* the program's record (map_plan) */
	size_t wg;               /* CL_KERNEL_WORK_GROUP_SIZE */
} KInfo;

struct BeModule {
	const Kernels *k;
	Cl cl;
	Dev dev;
	cl_context ctx;
	cl_command_queue q;
	cl_program prog;
	cl_kernel *kern;
	KInfo *ki;
	cl_mem *raw, *sub;     /* per buffer: guard + data + guard, and its data */
	size_t *bytes;         /* per buffer: data bytes */
	size_t guard;
	cl_mem err, scr;
	size_t scr_bytes;
};

static void ocl_free(BeModule *m)
{
	if (!m)
		return;
	const Cl *cl = &m->cl;
	for (int i = 0; m->kern && i < m->k->nk; i++)
		if (m->kern[i])
			cl->clReleaseKernel(m->kern[i]);
	for (int b = 0; m->raw && b < m->k->nbufs; b++) {
		if (m->sub[b])
			cl->clReleaseMemObject(m->sub[b]);
		if (m->raw[b])
			cl->clReleaseMemObject(m->raw[b]);
	}
	if (m->err)
		cl->clReleaseMemObject(m->err);
	if (m->scr)
		cl->clReleaseMemObject(m->scr);
	if (m->prog)
		cl->clReleaseProgram(m->prog);
	/* the context and the queue are the process's session's; the library stays loaded */
	free(m->kern);
	free(m->ki);
	free(m->raw);
	free(m->sub);
	free(m->bytes);
	free(m);
}

/* The build log's tail (malloc'ed). */
static char *build_log(const BeModule *m)
{
	size_t n = 0;
	m->cl.clGetProgramBuildInfo(m->prog, m->dev.dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
	char *log = calloc(n + 1, 1);
	IR_ASSERT(log);
	if (n)
		m->cl.clGetProgramBuildInfo(m->prog, m->dev.dev, CL_PROGRAM_BUILD_LOG, n, log, NULL);
	size_t len = strlen(log);
	if (len > 4096)
		memmove(log, log + len - 4096, 4097);
	return log;
}

/* The process's OpenCL session: the library, the device, one context and one in-order
 * queue, made at the first compile and kept for the life of the process, so that a
 * persistent worker (verify/worker.c) builds program after program in one context (PoCL's
 * first build in a context costs about half a second, every later one a fraction of it).
 * A process made by fork() finds its parent's session and makes its own (owner). */
static struct {
	pid_t owner;
	Cl cl;
	Dev dev;
	cl_context ctx;
	cl_command_queue q;
} sess;

static int session(char *why, size_t n)
{
	if (sess.owner == getpid())
		return 0;
	memset(&sess, 0, sizeof sess);   /* a parent's: not ours to release */
	if (cl_load(&sess.cl, why, n) || pick(&sess.cl, &sess.dev, why, n))
		return -1;
	cl_int rc;
	cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)sess.dev.plat, 0};
	sess.ctx = sess.cl.clCreateContext(props, 1, &sess.dev.dev, NULL, NULL, &rc);
	if (!sess.ctx) {
		snprintf(why, n, "clCreateContext failed (%d) on %s", rc, sess.dev.name);
		return -1;
	}
	sess.q = sess.cl.clCreateCommandQueue(sess.ctx, sess.dev.dev, 0, &rc);
	if (!sess.q) {
		sess.cl.clReleaseContext(sess.ctx);
		sess.ctx = NULL;
		snprintf(why, n, "clCreateCommandQueue failed (%d)", rc);
		return -1;
	}
	sess.owner = getpid();
	return 0;
}

static int build(BeModule *m, const char *src, Diag *d)
{
	const Cl *cl = &m->cl;
	cl_int rc;
	m->prog = cl->clCreateProgramWithSource(m->ctx, 1, &src, NULL, &rc);
	if (!m->prog) {
		diag_set(d, 3, "opencl backend: clCreateProgramWithSource failed (%d)", rc);
		return -1;
	}
	char opts[128];
	snprintf(opts, sizeof opts, "-cl-std=CL1.2%s",
		 m->dev.cr_divsqrt ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
	/* PoCL's embedded clang writes its warnings ("N warnings generated.") straight to fd 2,
	 * into the terminal of a campaign; the build log keeps them (build_log) for a failure.
	 * ASSAY_CL_STDERR=1 leaves fd 2 alone. */
	int saved = -1;
	if (!getenv("ASSAY_CL_STDERR")) {
		int null = open("/dev/null", O_WRONLY);
		fflush(stderr);
		if (null >= 0 && (saved = dup(2)) >= 0 && dup2(null, 2) < 0) {
			close(saved);
			saved = -1;
		}
		if (null >= 0)
			close(null);
	}
	rc = cl->clBuildProgram(m->prog, 1, &m->dev.dev, opts, NULL, NULL);
	if (saved >= 0) {
		dup2(saved, 2);
		close(saved);
	}
	if (rc != CL_SUCCESS) {
		char *log = build_log(m);
		diag_set(d, 3, "opencl backend: clBuildProgram failed (%d) on %s with '%s':\n%s", rc,
			 m->dev.name, opts, log);
		free(log);
		return -1;
	}
	return 0;
}

static int kernels(BeModule *m, Diag *d)
{
	const Kernels *k = m->k;
	m->kern = calloc((size_t)k->nk + 1, sizeof *m->kern);
	m->ki = calloc((size_t)k->nk + 1, sizeof *m->ki);
	IR_ASSERT(m->kern && m->ki);
	for (int i = 0; i < k->nk; i += map_plan(k, &ocl_target)->k[i].nfused) {   /* a launch each */
		char name[32];
		cl_int rc;
		snprintf(name, sizeof name, "k%d", i);
		m->kern[i] = m->cl.clCreateKernel(m->prog, name, &rc);
		if (!m->kern[i]) {
			diag_set(d, 3, "opencl backend: clCreateKernel(%s) failed (%d)", name, rc);
			return -1;
		}
		m->ki[i] = (KInfo){&map_plan(k, &ocl_target)->k[i], 1};
		size_t wg = 0;
		if (m->cl.clGetKernelWorkGroupInfo(m->kern[i], m->dev.dev, CL_KERNEL_WORK_GROUP_SIZE,
						   sizeof wg, &wg, NULL) == CL_SUCCESS && wg > 0)
			m->ki[i].wg = wg < m->dev.max_wg ? wg : m->dev.max_wg;
	}
	return 0;
}

static BeModule *ocl_compile(const Kernels *k, const char *src, const BeOpts *o, BeStats *st,
			     Diag *d)
{
	/* PoCL caches every program it builds, in ~/.cache/pocl by default; a campaign's job
	 * (o->cache_dir, emptied after every case) would fill it with programs never seen
	 * again, so PoCL's cache goes there too unless the user placed it */
	char pc[4200];
	if (o && o->cache_dir && !getenv("POCL_CACHE_DIR")) {
		snprintf(pc, sizeof pc, "%s/pocl", o->cache_dir);
		setenv("POCL_CACHE_DIR", pc, 1);
	}
	double t0 = be_now();
	BeModule *m = calloc(1, sizeof *m);
	IR_ASSERT(m);
	m->k = k;
	char why[2048];
	if (session(why, sizeof why)) {
		diag_set(d, 3, "opencl backend: %s", why);
		free(m);
		return NULL;
	}
	m->cl = sess.cl;
	m->dev = sess.dev;
	m->ctx = sess.ctx;
	m->q = sess.q;
	if (ocl_needs_fp64(k) && !m->dev.fp64) {
		diag_set(d, 2, "opencl backend: unsupported: the program computes or stores f64 and "
			 "device '%s' has no cl_khr_fp64", m->dev.name);
		ocl_free(m);
		return NULL;
	}
	if (build(m, src, d) || kernels(m, d)) {
		ocl_free(m);
		return NULL;
	}
	size_t align = m->dev.align_bits / 8;
	m->guard = align > GUARD_MIN ? align : GUARD_MIN;
	if (align > 1)
		m->guard = (m->guard + align - 1) / align * align;
	be_stats(st, false, t0);
	return m;
}

static cl_mem new_buffer(BeModule *m, size_t bytes, Diag *d, const char *what)
{
	cl_int rc;
	cl_mem b = m->cl.clCreateBuffer(m->ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
	if (!b)
		diag_set(d, 3, "opencl backend: cannot allocate %zu bytes for %s (%d)", bytes, what, rc);
	return b;
}

static int write_at(BeModule *m, cl_mem b, size_t off, size_t n, const void *p, Diag *d)
{
	cl_int rc = m->cl.clEnqueueWriteBuffer(m->q, b, CL_TRUE, off, n, p, 0, NULL, NULL);
	if (rc != CL_SUCCESS)
		diag_set(d, 3, "opencl backend: clEnqueueWriteBuffer failed (%d)", rc);
	return rc == CL_SUCCESS ? 0 : -1;
}

static int read_at(BeModule *m, cl_mem b, size_t off, size_t n, void *p, Diag *d)
{
	cl_int rc = m->cl.clEnqueueReadBuffer(m->q, b, CL_TRUE, off, n, p, 0, NULL, NULL);
	if (rc != CL_SUCCESS)
		diag_set(d, 3, "opencl backend: clEnqueueReadBuffer failed (%d)", rc);
	return rc == CL_SUCCESS ? 0 : -1;
}

static int ocl_alloc(BeModule *m, Diag *d)
{
	const Kernels *k = m->k;
	size_t n = (size_t)k->nbufs + 1;
	m->raw = calloc(n, sizeof *m->raw);
	m->sub = calloc(n, sizeof *m->sub);
	m->bytes = calloc(n, sizeof *m->bytes);
	unsigned char *pat = malloc(m->guard);
	IR_ASSERT(m->raw && m->sub && m->bytes && pat);
	memset(pat, BE_GUARD_BYTE, m->guard);
	int rc = -1;
	for (int b = 0; b < k->nbufs; b++) {
		const char *name = k->g->tensors[k->bufs[b].tensor].name;
		size_t bytes = be_buf_bytes(&k->bufs[b]);
		m->bytes[b] = bytes;
		if (!(m->raw[b] = new_buffer(m, m->guard + bytes + m->guard, d, name)))
			goto out;
		cl_buffer_region r = {m->guard, bytes};
		cl_int e;
		m->sub[b] = m->cl.clCreateSubBuffer(m->raw[b], CL_MEM_READ_WRITE,
						    CL_BUFFER_CREATE_TYPE_REGION, &r, &e);
		if (!m->sub[b]) {
			diag_set(d, 3, "opencl backend: clCreateSubBuffer for %s failed (%d)", name, e);
			goto out;
		}
		void *zero = calloc(bytes, 1);
		IR_ASSERT(zero);
		int w = write_at(m, m->raw[b], 0, m->guard, pat, d) ||
			write_at(m, m->raw[b], m->guard, bytes, zero, d) ||
			write_at(m, m->raw[b], m->guard + bytes, m->guard, pat, d);
		free(zero);
		if (w)
			goto out;
	}
	if (!(m->err = new_buffer(m, 16, d, "the error slot")) ||
	    !(m->scr = new_buffer(m, 8, d, "scratch")))
		goto out;
	m->scr_bytes = 8;
	rc = 0;
out:
	free(pat);
	return rc;
}

static int ocl_upload(BeModule *m, int tensor, const HostTensor *t, Diag *d)
{
	int b = be_input_buffer(m->k, tensor, m->raw != NULL, t, "opencl", d);
	if (b < 0)
		return -1;
	const KBuf *B = &m->k->bufs[b];
	if (B->n == 0)
		return 0;
	return write_at(m, m->raw[b], m->guard, (size_t)B->n * (size_t)dt_info(B->fmt)->bytes,
			t->data, d);
}

static int ocl_download(BeModule *m, int tensor, Dtype dt, HostTensor *t, Diag *d)
{
	int b = be_buffer_of(m->k, tensor, m->raw != NULL, "opencl", d);
	if (b < 0 || be_out_alloc(m->k, tensor, dt, t, "opencl", d))
		return -1;
	const KBuf *B = &m->k->bufs[b];
	size_t bytes = (size_t)B->n * (size_t)dt_info(B->fmt)->bytes;
	void *host = malloc(bytes ? bytes : 1);
	IR_ASSERT(host);
	if (bytes && read_at(m, m->raw[b], m->guard, bytes, host, d)) {
		free(host);
		ht_free(t);
		return -1;
	}
	be_out_fill(t, host, B);
	free(host);
	return 0;
}

/* A site number read back from the device is checked before it is believed. */
static void runtime_error(const BeModule *m, int64_t site, int64_t v, Diag *d)
{
	if (site < 0 || site >= m->k->nsites)
		diag_set(d, 3, "opencl backend: a kernel reported error site %lld, which does not exist",
			 (long long)site);
	else
		be_runtime_error(m->k, site, v, d);
}

/* The work-group size of kernel i: its lanes (a power of two the kernel allows) or, for a
 * work-item per item, WG_PLAIN at most. */
static size_t group_size(const BeModule *m, int i)
{
	const KInfo *ki = &m->ki[i];
	size_t cap = ki->wg, g = 1;
	if (ki->plan->mode != MAP_GROUP)
		return cap < WG_PLAIN ? cap : WG_PLAIN;
	while (g * 2 <= cap && (int64_t)(g * 2) <= ki->plan->wg)
		g *= 2;
	return g;
}

static int set_args(BeModule *m, int i, int64_t t0, int64_t t1, Diag *d)
{
	const Cl *cl = &m->cl;
	cl_kernel kn = m->kern[i];
	cl_uint a = 0;
	cl_int rc = CL_SUCCESS;
	for (int b = 0; b < m->k->nbufs && rc == CL_SUCCESS; b++)
		rc = cl->clSetKernelArg(kn, a++, sizeof(cl_mem), &m->sub[b]);
	if (rc == CL_SUCCESS)
		rc = cl->clSetKernelArg(kn, a++, sizeof(cl_mem), &m->err);
	if (rc == CL_SUCCESS)
		rc = cl->clSetKernelArg(kn, a++, sizeof(cl_mem), &m->scr);
	if (rc == CL_SUCCESS)
		rc = cl->clSetKernelArg(kn, a++, sizeof t0, &t0);
	if (rc == CL_SUCCESS)
		rc = cl->clSetKernelArg(kn, a++, sizeof t1, &t1);
	if (rc != CL_SUCCESS)
		diag_set(d, 3, "opencl backend: clSetKernelArg %u of k%d failed (%d)", a - 1, i, rc);
	return rc == CL_SUCCESS ? 0 : -1;
}

/* Grows the scratch buffer to n bytes. */
static int scratch(BeModule *m, size_t n, Diag *d)
{
	if (n <= m->scr_bytes)
		return 0;
	m->cl.clFinish(m->q);
	m->cl.clReleaseMemObject(m->scr);
	m->scr_bytes = 0;
	if (!(m->scr = new_buffer(m, n, d, "scratch")))
		return -1;
	m->scr_bytes = n;
	return 0;
}

static int run_kernel(BeModule *m, int i, Diag *d)
{
	const KInfo *ki = &m->ki[i];
	int64_t nitems = m->k->k[i].nitems;
	size_t G = group_size(m, i);
	const MapKernel *p = ki->plan;
	bool lanes = p->mode == MAP_GROUP;
	int64_t per = lanes ? p->scratch_group + (int64_t)G * p->scratch : p->scratch;
	int64_t budget = SCRATCH_BUDGET, cap = (int64_t)m->dev.max_alloc / 2;
	if (cap > 0 && cap < budget)
		budget = cap;
	int64_t chunk = lanes ? ITEMS_PER_LAUNCH / (int64_t)G : ITEMS_PER_LAUNCH;
	if (per > 0 && chunk > budget / per)
		chunk = budget / per;
	if (chunk < 1)
		chunk = 1;
	if (chunk > nitems)
		chunk = nitems;
	if (per > 0 && scratch(m, (size_t)(chunk * per), d))
		return -1;
	for (int64_t t0 = 0; t0 < nitems; t0 += chunk) {
		int64_t n = nitems - t0 < chunk ? nitems - t0 : chunk;
		size_t global = lanes ? (size_t)n * G : ((size_t)n + G - 1) / G * G;
		if (set_args(m, i, t0, t0 + n, d))
			return -1;
		cl_int rc = m->cl.clEnqueueNDRangeKernel(m->q, m->kern[i], 1, NULL, &global, &G, 0,
							 NULL, NULL);
		if (rc != CL_SUCCESS) {
			diag_set(d, 3, "opencl backend: clEnqueueNDRangeKernel(k%d, %zu, %zu) failed (%d)",
				 i, global, G, rc);
			return -1;
		}
	}
	return 0;
}

/* The error slot is cleared once, every kernel of the n runs is queued in order, then
 * one blocking read of the slot (the in-order queue finishes them first): the first
 * error since the clear. */
static int ocl_launch(BeModule *m, int n, Diag *d)
{
	if (!m->raw) {
		diag_set(d, 3, "opencl backend: launch before alloc");
		return -1;
	}
	int32_t err[4] = {0, 0, 0, 0};
	if (write_at(m, m->err, 0, sizeof err, err, d))
		return -1;
	for (int run = 0; run < n; run++)
		for (int i = 0; i < m->k->nk; i += m->ki[i].plan->nfused)
			if (run_kernel(m, i, d))
				return -1;
	if (read_at(m, m->err, 0, sizeof err, err, d))
		return -1;
	if (err[0]) {
		int64_t v;
		memcpy(&v, &err[2], sizeof v);
		runtime_error(m, err[0] - 1, v, d);
		return -1;
	}
	return 0;
}

static int ocl_guards(BeModule *m, Diag *d)
{
	unsigned char *buf = malloc(m->guard);
	IR_ASSERT(buf);
	int rc = 0;
	for (int b = 0; b < m->k->nbufs && m->raw && rc == 0; b++) {
		for (int side = 0; side < 2 && rc == 0; side++) {
			size_t off = side ? m->guard + m->bytes[b] : 0;
			if (read_at(m, m->raw[b], off, m->guard, buf, d)) {
				rc = -1;
				break;
			}
			/* buf is all guard: the one before the data (side 0) or after it */
			rc = be_guard_check(buf, side ? 0 : m->guard, 0, m->guard,
					    m->k->g->tensors[m->k->bufs[b].tensor].name, d);
		}
	}
	free(buf);
	return rc;
}

/* The facts of the session's device (Backend.device_facts): f32 / and sqrt are correctly
 * rounded where the device reports CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (build() then passes
 * -cl-fp32-correctly-rounded-divide-sqrt: PoCL does, NVIDIA's OpenCL does); a device whose
 * CL_DEVICE_SINGLE_FP_CONFIG lacks CL_FP_DENORM may flush f32 subnormals. */
static void ocl_device_facts(BeFacts *f)
{
	if (sess.owner != getpid())
		return;
	if (sess.dev.cr_divsqrt) {
		f->exact[DT_F32] |= BE_OPS_DIVSQRT;
		f->exact[DT_F16] |= BE_OPS_DIVSQRT;
		f->exact[DT_BF16] |= BE_OPS_DIVSQRT;
	}
	if (!sess.dev.denorm)
		f->flush |= 1u << DT_F32;
}

/* Facts (BeFacts) every OpenCL device promises (OpenCL C 3.0, full profile, 'Relative Error
 * as ULPs': + - * and fma correctly rounded in float and double, x / y and sqrt correctly
 * rounded in double, in float 2.5 and 3 ulp unless -cl-fp32-correctly-rounded-divide-sqrt
 * (ocl_device_facts); 'Rounding Modes': conversions to floating point round to nearest even
 * by default; the program's FP_CONTRACT OFF; no -cl-fast-relaxed-math, -cl-finite-math-only
 * or -cl-denorms-are-zero, so NaN, inf, -0 and, where the device has CL_FP_DENORM,
 * subnormals keep IEEE semantics). max and min are the program's IEEE helpers; f16/bf16
 * conversions lib.c's integer code. */
const MapTarget ocl_target = {
	.rules = MAP_RULES_LANES,
	.item_wg = 0,             /* a work-item per item: the runtime picks the work-group */
	.wg_min = 2,              /* lanes for a nest of two iterations or more */
	.wg_max = 256,            /* lanes wanted at most */
	.shared_max = 16384,      /* __local bytes a kernel (a fused launch: all its kernels)
	                             may use (OpenCL's minimum: 32K) */
	.fuse_rows = true,        /* row kernels share a launch (map/fuse.c) */
	.private_elems = 256,     /* larger private arrays live in scratch */
};

const Backend opencl_backend = {
	.name = "opencl",
	.map = &ocl_target,
	.facts = {.specials = true, .minmax = BE_MINMAX_IEEE, .no_contract = true, .exact = {
		[DT_F64] = BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OPS_DIVSQRT | BE_OP(OP_FMA) |
			   BE_OP(OP_CAST_F64),
		[DT_F32] = BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OP(OP_FMA) | BE_OP(OP_CAST_F32),
		[DT_F16] = BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OP(OP_CAST_F16),
		[DT_BF16] = BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OP(OP_CAST_BF16),
		[DT_I32] = BE_OPS_INT}},
	.device_facts = ocl_device_facts,
	.available = ocl_available,
	.device = ocl_device,
	.emit = ocl_emit,
	.compile = ocl_compile,
	.alloc = ocl_alloc,
	.upload = ocl_upload,
	.launch = ocl_launch,
	.download = ocl_download,
	.guards = ocl_guards,
	.free = ocl_free,
};
