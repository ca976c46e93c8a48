/* verify/worker.c: one (backend, schedule) run in an isolated worker process, the pool of
 * persistent workers that keeps a backend's context alive across runs, the confirmation of
 * crashes and timeouts, and the line between a kernel's failure and the environment's.
 *
 * A run. The caller has computed the oracle (of the graph as written). The run travels to
 * a worker process in one shared mapping (a memfd, passed over a socket): the graph as
 * canonical text (ir_print; its round trip leaves every emitted kernel unchanged), the
 * schedule's DefSched array, the inputs, and room for the answer: the stage reached with
 * the time each stage began, the outcome, a message, timings, the rules the rewrite fired,
 * the device's facts once the compile opened it (Backend.device_facts: what the emulation
 * check holds the run to), the compiler's coverage counters (compiler/cov.def: reset before
 * the run, copied back once the program is emitted and again at the end, so a compile that
 * crashes or times out keeps what rewrite, lowering and emission reached), the outputs in
 * their dtypes and the kernel source. The worker rewrites the graph
 * (rw_compile: a rewrite that crashes is a crash of the case), lowers it, and then runs
 * it through the compiler's run driver (compiler.h "The run driver": emit, compile, alloc,
 * upload, one launch, the guard check, every output downloaded; the driver's stage hook
 * times each stage into the answer, and its classification of a failure by stage,
 * be_run_fail, is the outcome). The
 * parent waits with two limits: the compile limit covers rewrite, lowering, emission and
 * the backend's compile; the run limit starts with alloc and covers upload, launch, guards
 * and download (a driver that compiles lazily at the first launch, as PoCL does, counts
 * there). Outcomes:
 * - the worker answered: ok, compile-error, unsupported, oob-write, or a crash it reported
 *   itself (a runtime error the oracle did not see);
 * - it died of a signal: crash, with the signal's name and the stage it was in;
 * - it outlived a limit: timeout; its whole process group is killed (a C compiler or the
 *   WGSL helper it started dies with it).
 *
 * Persistent workers (the AFL forkserver idea, without the fork: device contexts do not
 * survive one). With WorkerOpts.pool, a worker per backend stays alive between runs: the
 * OpenCL context, the Vulkan device, the CUDA context and the Node/Dawn helper are made
 * once, and each run frees only its own program and buffers. A worker that crashed or
 * timed out is gone (the next run starts a fresh one); one whose kernel wrote out of bounds
 * or failed at run time, or that has served SERVER_RUNS runs, is retired, so a kernel's
 * damage (a CUDA context left unusable by a fault) cannot reach another run.
 * Without a pool, a fresh worker serves the one run and exits.
 *
 * Confirmation (spec/cli.md v2). A crash or a timeout counts only once a re-run of the same
 * kernel alone, in a fresh worker, with CONFIRM_FACTOR times the limits (a timeout's up to 4
 * times more on a loaded machine: confirm_factor), gives it again; a
 * re-run that finishes is what is judged, and the caller records it as flaky when it
 * passes (WorkerResult.first_status says what the first run did). The fresh worker also
 * settles a crash that a damaged persistent worker might have caused.
 *
 * The environment. A run that fails to compile or crashes is followed by a probe of the
 * directories a run writes to (the cache directory and $TMPDIR): if they no longer take a
 * file (a full disk, a read-only or vanished directory), the failure is the environment's,
 * not the kernel's, and vf_worker_run returns -1 with an env Diag instead of a verdict. So
 * does a worker that cannot be started (fork, memory, descriptors) and one killed from
 * outside (SIGKILL we did not send, twice: the system's out-of-memory killer).
 *
 * Invariants: a worker never returns into the caller's code (it leaves by _exit); it dies
 * with its parent (PR_SET_PDEATHSIG); it dumps no core; it is the leader of its own process
 * group. The parent must have no other threads when it starts a worker (fork).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "verify.h"
#include "ext.h"

enum {
	SRC_CAP = 16 << 20, MSG_CAP = 16384, MAXIO = 64, CANARY_GUARD = 64, CANARY_BYTE = 0xa5,
	SERVER_RUNS = 200, MAXSERVERS = 16, PROBE_BYTES = 1 << 20,
};
#define CONFIRM_FACTOR 4.0
#define MAGIC 0x61737361795f7275ull   /* "assay_ru" */

typedef enum {
	ST_START, ST_REWRITE, ST_LOWER, ST_EMIT, ST_COMPILE, ST_EXTERNAL, ST_ALLOC, ST_UPLOAD,
	ST_LAUNCH, ST_GUARDS, ST_DOWNLOAD, ST_DONE, ST__COUNT
} Stage;

static const char *const stage_names[ST__COUNT] = {
	[ST_START] = "start", [ST_REWRITE] = "rewrite", [ST_LOWER] = "lowering",
	[ST_EMIT] = "emit", [ST_COMPILE] = "compile", [ST_EXTERNAL] = "the external command",
	[ST_ALLOC] = "alloc", [ST_UPLOAD] = "upload",
	[ST_LAUNCH] = "launch", [ST_GUARDS] = "the guard check", [ST_DOWNLOAD] = "download",
	[ST_DONE] = "exit",
};
_Static_assert(ARRAY_LEN(stage_names) == ST__COUNT, "one name per stage");

typedef struct {
	int dtype, rank;
	int64_t dims[IR_MAXRANK], n;
} InMeta;

/* The head of a run's mapping: the request (written by the parent), then the answer
 * (written by the worker). The graph's text, its file name, the schedule, the inputs, the
 * outputs and the source follow at their offsets. */
typedef struct {
	uint64_t magic;
	uint64_t id;              /* the run's number: the worker's answer repeats it */
	size_t size;
	uint64_t faults;
	unsigned hooks;
	int threads;
	uint64_t seed;            /* the inputs' seed (an external kernel's request states it) */
	char cache_dir[4096];
	int ndefs, ninputs, noutputs;
	size_t text_off, text_len, file_off, sched_off, src_off;
	size_t in_off[MAXIO], out_off[MAXIO];
	InMeta in[MAXIO];
	/* the answer */
	volatile int stage;
	volatile double t_stage[ST__COUNT];
	volatile int done;        /* the worker wrote its outcome */
	int status;               /* WorkerStatus */
	bool cache_hit;
	double compile_s, launch_s;
	int rw_done;              /* the rewrite ran to its end: rw_tried, rw_fired hold */
	int facts_done;           /* compile opened the device: facts hold its facts */
	BeFacts facts;
	uint64_t rw_tried[RW_MAXRULES], rw_fired[RW_MAXRULES];
	int cov_done;             /* cov holds the run's coverage counters */
	uint64_t cov[COV__COUNT];
	size_t src_len;
	char msg[MSG_CAP];
} Shm;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static size_t out_bytes(const Graph *g, int k)
{
	const Output *o = &g->outputs[k];
	return (size_t)ir_tensor_count(g, o->tensor) * (size_t)dt_info(o->dtype)->bytes;
}

static size_t up64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* ------------------------------------------------------------ the worker's side */

static int finish(Shm *h, WorkerStatus st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int finish(Shm *h, WorkerStatus st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(h->msg, sizeof h->msg, fmt, ap);
	va_end(ap);
	h->status = st;
	h->done = 1;
	return 0;
}

static void stage(Shm *h, Stage s)
{
	h->t_stage[s] = now();
	h->stage = s;
}

static const char *stage_of(const Shm *h)
{
	int st = h->stage;
	return stage_names[st >= 0 && st < ST__COUNT ? st : 0];
}

static const char *msg_of(const Diag *d)
{
	return d->msg ? d->msg : "(no message)";
}

/* ASSAY_TEST_OOB: a guarded buffer of the worker's own, written one element past its end,
 * then checked exactly as a backend checks its guard regions. */
static int canary_write(void)
{
	unsigned char raw[CANARY_GUARD + 8 + CANARY_GUARD];
	memset(raw, CANARY_BYTE, sizeof raw);
	volatile unsigned char *data = raw + CANARY_GUARD;
	size_t past = 8 + (size_t)(getpid() < 0);   /* one element past a buffer of one double */
	memset((void *)data, 0, 8);
	data[past] = 0x7f;
	for (size_t i = 0; i < sizeof raw; i++)
		if ((i < CANARY_GUARD || i >= CANARY_GUARD + 8) && raw[i] != CANARY_BYTE)
			return (int)(i - CANARY_GUARD - 8);
	return -1;
}

static void poison_nan(HostTensor *t)
{
	if (t->n > 0 && t->dtype != DT_I32)
		ht_set(t, 0, NAN);
}

/* The hooks that stand for a kernel that crashes or never ends (with ASSAY_TEST_ONCE,
 * only in the run that creates its file: a flaky one), as the launch begins. */
static void fault_hooks(Shm *h)
{
	const char *once = getenv("ASSAY_TEST_ONCE");
	if ((h->hooks & (VF_HOOK_CRASH | VF_HOOK_HANG)) && once && *once) {
		int fd = open(once, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			h->hooks &= ~(unsigned)(VF_HOOK_CRASH | VF_HOOK_HANG);
		else
			close(fd);
	}
	if (h->hooks & VF_HOOK_CRASH) {
		signal(SIGSEGV, SIG_DFL);   /* past a sanitizer's handler, as a plain build dies */
		raise(SIGSEGV);
	}
	if (h->hooks & VF_HOOK_HANG)
		for (volatile unsigned long spin = 0;; spin++)
			;
}

/* The run driver's stages (compiler.h, BeRun.at) as the worker's: each stage's start into
 * the answer, where the parent's limits read it. */
static const Stage of_driver[BE_ST__COUNT] = {
	[BE_ST_OPEN] = ST_LOWER, [BE_ST_EMIT] = ST_EMIT, [BE_ST_COMPILE] = ST_COMPILE,
	[BE_ST_ALLOC] = ST_ALLOC, [BE_ST_UPLOAD] = ST_UPLOAD, [BE_ST_LAUNCH] = ST_LAUNCH,
	[BE_ST_GUARDS] = ST_GUARDS, [BE_ST_DOWNLOAD] = ST_DOWNLOAD, [BE_ST_DONE] = ST_DONE,
};

static void at_stage(void *ctx, BeStage s)
{
	stage(ctx, of_driver[s]);
	if (s == BE_ST_LAUNCH)
		fault_hooks(ctx);
}

/* The outcome of a run the driver failed, by what be_run_fail makes of it: a backend
 * declining (code 2 in emit, compile or alloc) is unsupported, any other failure of emit
 * or compile a compile error (the environment's too: the parent's probe tells them
 * apart), a write outside a buffer oob-write, and the rest crashes. */
static void failure(Shm *h, const BeRun *r, const Diag *d)
{
	const char *m = msg_of(d);
	BeFail f = be_run_fail(r, d);
	bool compiling = r->stage <= BE_ST_COMPILE;
	switch (f) {
	case BE_FAIL_UNSUPPORTED:
		if (compiling)
			finish(h, WK_UNSUPPORTED, "%s", m);
		else
			finish(h, WK_UNSUPPORTED, "the backend failed in %s: %s", stage_of(h), m);
		return;
	case BE_FAIL_OOB:
		finish(h, WK_OOB, "%s", m);
		return;
	case BE_FAIL_RUNTIME:
		finish(h, WK_CRASH, "the kernel reported a runtime error the oracle did not: %s", m);
		return;
	default:
		if (compiling)
			finish(h, WK_COMPILE_ERROR, "%s", m);
		else
			finish(h, WK_CRASH, "the backend failed in %s: %s", stage_of(h), m);
		return;
	}
}

/* The run of a compiled program: bind, launch, guards, every output into the mapping. */
static void run_and_fetch(BeRun *r, const Graph *g, const HostTensor *in, Shm *h,
			  unsigned char *base)
{
	Diag d = {0};
	if (be_run_bind(r, in, &d) || be_run_launch(r, 1, &d))
		goto fail;
	h->launch_s = r->st.launch_s;
	if (be_run_guards(r, &d))
		goto fail;
	int past = (h->hooks & VF_HOOK_OOB) ? canary_write() : -1;
	if (past >= 0) {
		finish(h, WK_OOB, "a write outside buffer ASSAY_TEST_OOB-canary (past its end, %d bytes "
		       "from its end)", past);
		goto out;
	}
	for (int k = 0; k < g->noutputs; k++) {
		HostTensor t = {0};
		if (be_run_download(r, k, &t, &d))
			goto fail;
		if (h->hooks & VF_HOOK_NAN)
			poison_nan(&t);
		memcpy(base + h->out_off[k], t.data, out_bytes(g, k));
		ht_free(&t);
	}
	stage(h, ST_DONE);
	finish(h, WK_OK, "%s", "");
	goto out;
fail:
	failure(h, r, &d);
out:
	diag_clear(&d);
}

/* The graph the backend compiles: g rewritten by rw_compile (its counters into h), or g
 * itself under VF_HOOK_NO_REWRITE. NULL when the rewrite broke the definitions the
 * schedule names (never, by rw_simplify's contract: checked, not trusted). */
static Graph *rewrite(Graph *g, Shm *h)
{
	if (h->hooks & VF_HOOK_NO_REWRITE)
		return g;
	stage(h, ST_REWRITE);
	RwStats st;
	memset(&st, 0, sizeof st);
	Graph *rg = rw_compile(g, h->faults, &st);
	for (int i = 0; i < st.nrules && i < RW_MAXRULES; i++) {
		h->rw_tried[i] = st.tried[i];
		h->rw_fired[i] = st.fired[i];
	}
	h->rw_done = 1;
	if (rg->ndefs != g->ndefs || rg->ntensors != g->ntensors || rg->noutputs != g->noutputs) {
		finish(h, WK_COMPILE_ERROR, "the rewrite changed the graph's definitions (%d -> %d), "
		       "tensors or outputs: the schedule does not apply", g->ndefs, rg->ndefs);
		ir_free(rg);
		return NULL;
	}
	return rg;
}

/* $ASSAY_SOURCE_<BACKEND> (e.g. ASSAY_SOURCE_VULKAN): a file compiled in place of the
 * emitted program, for bisecting a driver's miscompile by hand-edited variants of it.
 * Returns the text to compile (src itself, or the file's, src freed); NULL when the file
 * cannot be read (src freed, h finished). */
static char *source_override(const Backend *b, char *src, Shm *h)
{
	char var[64] = "ASSAY_SOURCE_";
	for (const char *p = b->name; *p && strlen(var) < sizeof var - 1; p++)
		var[strlen(var) + 1] = 0, var[strlen(var)] = (char)toupper((unsigned char)*p);
	const char *alt = getenv(var);
	if (!alt || !*alt)
		return src;
	free(src);
	size_t len;
	char *text = be_read_file(alt, &len);
	if (!text)
		finish(h, WK_COMPILE_ERROR, "%s=%s: cannot read it", var, alt);
	return text;
}

/* The compiler's coverage counters so far into the answer. */
static void coverage(Shm *h)
{
	memcpy(h->cov, cov_hits, sizeof h->cov);
	h->cov_done = 1;
}

/* The run of an external kernel (external.c): the command in place of the compiler, under
 * one limit (await: the compile limit plus the run limit, since it does both). */
static void external(const Backend *b, const Graph *g, const Schedule *s, const HostTensor *in,
		     Shm *h, unsigned char *base)
{
	stage(h, ST_EXTERNAL);
	h->facts = b->facts;
	h->facts_done = 1;
	HostTensor outs[MAXIO];
	memset(outs, 0, sizeof outs);
	char *src = NULL, *msg = malloc(MSG_CAP);
	IR_ASSERT(msg);
	msg[0] = 0;
	double t0 = now();
	WorkerStatus st = vf_ext_serve(b, g, s, in, h->seed, outs, &src, msg, MSG_CAP);
	h->launch_s = now() - t0;
	if (src) {
		size_t n = strlen(src);
		h->src_len = n < SRC_CAP ? n : SRC_CAP;
		memcpy(base + h->src_off, src, h->src_len);
		free(src);
	}
	if (st == WK_OK) {   /* the stage stays ST_EXTERNAL: await's limit for it holds to the end */
		for (int k = 0; k < g->noutputs; k++) {
			if (h->hooks & VF_HOOK_NAN)
				poison_nan(&outs[k]);
			memcpy(base + h->out_off[k], outs[k].data, out_bytes(g, k));
			ht_free(&outs[k]);
		}
	}
	finish(h, st, "%s", msg);
	free(msg);
}

/* One run, from the request in the mapping at base; everything it makes is freed. */
static void serve(const Backend *b, unsigned char *base)
{
	Shm *h = (Shm *)base;
	Diag d = {0};
	cov_reset();   /* a persistent worker's counters are the run's own */
	stage(h, ST_START);
	Graph *g0 = ir_parse((const char *)base + h->text_off, h->text_len,
			     (const char *)base + h->file_off, NULL, 0, &d);
	if (!g0 || g0->ndefs != h->ndefs || ir_ninputs(g0) != h->ninputs ||
	    g0->noutputs != h->noutputs) {
		finish(h, WK_CRASH, "the worker could not read the graph back (a toolkit bug): %s",
		       g0 ? "its definitions, inputs or outputs differ" : msg_of(&d));
		ir_free(g0);
		diag_clear(&d);
		return;
	}
	HostTensor in[MAXIO];
	for (int i = 0; i < h->ninputs; i++) {
		in[i] = (HostTensor){.dtype = (Dtype)h->in[i].dtype, .rank = h->in[i].rank,
				     .n = h->in[i].n, .data = base + h->in_off[i]};
		memcpy(in[i].dims, h->in[i].dims, sizeof in[i].dims);
	}
	Schedule s = {h->ndefs, (DefSched *)(base + h->sched_off)};
	if (vf_is_external(b)) {
		external(b, g0, &s, in, h, base);
		ir_free(g0);
		return;
	}
	Graph *g = rewrite(g0, h);
	Kernels *k = NULL;
	BeRun run = {0};
	if (!g)
		goto out;
	stage(h, ST_LOWER);
	LowerOpts lo = {h->faults};
	if (!(k = kir_lower(g, &s, &lo, &d))) {
		/* the compiler declining a legal schedule (code 2: a limit it states) is
		 * unsupported; anything else is its failure */
		finish(h, d.code == 2 ? WK_UNSUPPORTED : WK_COMPILE_ERROR, "%s", msg_of(&d));
		goto out;
	}
	be_run_open(&run, b, k);
	run.at = at_stage;
	run.ctx = h;
	/* a backend declining what its language or device cannot express says so with code 2
	 * (unsupported, with the reason); its other failures are compile errors */
	if (be_run_emit(&run, &d)) {
		failure(h, &run, &d);
		goto out;
	}
	if (!(run.src = source_override(b, run.src, h)))
		goto out;
	size_t n = strlen(run.src);
	h->src_len = n < SRC_CAP ? n : SRC_CAP;
	memcpy(base + h->src_off, run.src, h->src_len);
	coverage(h);
	BeOpts bo = {h->threads, h->cache_dir[0] ? h->cache_dir : NULL};
	int rc = be_run_compile(&run, &bo, &d);
	h->compile_s = run.st.compile_s;
	h->cache_hit = run.st.cache_hit;
	if (rc) {
		failure(h, &run, &d);
		goto out;
	}
	h->facts = b->facts;   /* the device is open: its own facts (Backend.device_facts) */
	if (b->device_facts)
		b->device_facts(&h->facts);
	h->facts_done = 1;
	run_and_fetch(&run, g, in, h, base);
out:
	coverage(h);
	be_run_close(&run);
	kir_free(k);
	if (g && g != g0)
		ir_free(g);
	ir_free(g0);
	diag_clear(&d);
}

/* Receives one descriptor over sock; -1 at the end of the parent's requests. */
static int recv_fd(int sock)
{
	char byte;
	struct iovec iov = {&byte, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof u.buf};
	for (;;) {
		ssize_t r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		if (!c || c->cmsg_type != SCM_RIGHTS)
			return -1;
		int fd;
		memcpy(&fd, CMSG_DATA(c), sizeof fd);
		return fd;
	}
}

/* The server's parent (a campaign job, or the check itself) died: the whole process group
 * goes, the server and what it spawned (the C backend's compiler, still writing into the
 * campaign's shared cache, outlived a killed job before). */
static void parent_died(int sig)
{
	(void)sig;
	kill(0, SIGKILL);
}

static _Noreturn void server_main(const Backend *b, int sock, pid_t parent)
{
	setpgid(0, 0);
	struct sigaction sa = {.sa_handler = parent_died};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)   /* it died before the request */
		kill(0, SIGKILL);
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		int fd = recv_fd(sock);
		if (fd < 0)
			_exit(0);
		struct stat sb;
		void *p = fstat(fd, &sb) == 0 && sb.st_size > (off_t)sizeof(Shm) ?
			mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) :
			MAP_FAILED;
		close(fd);
		if (p == MAP_FAILED)
			_exit(2);   /* the parent sees a worker that died without a result */
		uint64_t id = ((Shm *)p)->id;
		if (((Shm *)p)->magic == MAGIC)
			serve(b, p);
		munmap(p, (size_t)sb.st_size);
		if (send(sock, &id, sizeof id, MSG_NOSIGNAL) != (ssize_t)sizeof id)
			_exit(0);
	}
}

/* ------------------------------------------------------------ the pool */

typedef struct {
	const Backend *b;
	pid_t pid;
	int sock;
	int runs;
} Server;

typedef struct {
	const Backend *b;
	int rc;
	char why[512];
} Avail;

struct VfPool {
	pid_t owner;          /* the process whose servers these are */
	Server s[MAXSERVERS];
	int n;
	Avail av[MAXSERVERS];   /* vf_available's answers */
	int nav;
	VfPoolStats st;
};

VfPool *vf_pool_new(void)
{
	VfPool *p = calloc(1, sizeof *p);
	IR_ASSERT(p);
	p->owner = getpid();
	return p;
}

static void server_stop(Server *sv, bool kill_it)
{
	if (sv->pid <= 0)
		return;
	close(sv->sock);   /* a live worker reads the end of its requests and exits */
	if (kill_it)
		kill(-sv->pid, SIGKILL);
	int st;
	while (waitpid(sv->pid, &st, 0) < 0 && errno == EINTR)
		;
	sv->pid = 0;
	sv->sock = -1;
}

int vf_available(VfPool *p, const Backend *b, char *why, size_t n)
{
	if (!p || p->owner != getpid())
		return b->available(why, n);
	for (int i = 0; i < p->nav; i++)
		if (p->av[i].b == b) {
			snprintf(why, n, "%s", p->av[i].why);
			return p->av[i].rc;
		}
	if (p->nav == MAXSERVERS)
		return b->available(why, n);
	Avail *a = &p->av[p->nav++];
	a->b = b;
	a->why[0] = 0;
	a->rc = b->available(a->why, sizeof a->why);
	snprintf(why, n, "%s", a->why);
	return a->rc;
}

void vf_pool_free(VfPool *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n && p->owner == getpid(); i++)
		server_stop(&p->s[i], false);
	free(p);
}

VfPoolStats vf_pool_stats(const VfPool *p)
{
	VfPoolStats z = {0};
	return p ? p->st : z;
}

/* Starts a worker for b into sv (the descriptors of every other server in pool closed in
 * the child). 0, or -1 with d (env: the machine cannot start a process). */
static int server_start(const Backend *b, Server *sv, const VfPool *pool, Diag *d)
{
	if (b->warm) {   /* once per backend and process: every worker after this inherits it */
		static const Backend *warmed[MAXSERVERS];
		size_t i = 0;
		while (i < ARRAY_LEN(warmed) && warmed[i] && warmed[i] != b)
			i++;
		if (i < ARRAY_LEN(warmed) && !warmed[i]) {
			warmed[i] = b;
			b->warm();
		}
	}
	int sv2[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv2)) {
		diag_env(d, "verify: cannot make a socket for a worker: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t parent = getpid(), pid = fork();
	if (pid < 0) {
		diag_env(d, "verify: cannot fork a worker: %s", strerror(errno));
		close(sv2[0]);
		close(sv2[1]);
		return -1;
	}
	if (pid == 0) {
		close(sv2[0]);
		for (int i = 0; pool && i < pool->n; i++)
			if (pool->s[i].pid > 0)
				close(pool->s[i].sock);
		server_main(b, sv2[1], parent);
	}
	close(sv2[1]);
	setpgid(pid, pid);   /* as the worker does: whichever runs first wins the race */
	*sv = (Server){b, pid, sv2[0], 0};
	return 0;
}

/* The pool's live server for b, started if need be; NULL with d. */
static Server *pool_server(VfPool *p, const Backend *b, Diag *d)
{
	Server *sv = NULL;
	for (int i = 0; i < p->n && !sv; i++)
		if (p->s[i].b == b)
			sv = &p->s[i];
	if (!sv) {
		if (p->n == MAXSERVERS) {
			diag_set(d, 3, "verify: more than %d backends in one pool", MAXSERVERS);
			return NULL;
		}
		sv = &p->s[p->n++];
		*sv = (Server){b, 0, -1, 0};
	}
	if (sv->pid > 0) {   /* a worker that died between runs is reaped and replaced */
		int st;
		if (waitpid(sv->pid, &st, WNOHANG) == sv->pid) {
			close(sv->sock);
			sv->pid = 0;
		}
	}
	if (sv->pid <= 0) {
		if (server_start(b, sv, p, d))
			return NULL;
		p->st.started++;
	}
	return sv;
}

/* ------------------------------------------------------------ the parent's side */

typedef struct {
	int fd;
	unsigned char *base;
	size_t size;
	Shm *h;
} Region;

/* Makes the run's mapping and writes the request. 0, or -1 with d. */
static int region_make(const Graph *g, const Schedule *s, const HostTensor *in,
		       const WorkerOpts *o, Region *r, Diag *d)
{
	int ni = ir_ninputs(g);
	if (g->noutputs > MAXIO || ni > MAXIO) {
		diag_set(d, 3, "verify: a graph of %d inputs and %d outputs (at most %d each)", ni,
			 g->noutputs, MAXIO);
		return -1;
	}
	char *text = ir_print(g);
	const char *file = g->file ? g->file : "graph";
	size_t tlen = strlen(text), off = up64(sizeof(Shm));
	size_t text_off = off;
	off = up64(off + tlen + 1);
	size_t file_off = off;
	off = up64(off + strlen(file) + 1);
	size_t sched_off = off;
	off = up64(off + (size_t)s->ndefs * sizeof(DefSched));
	size_t in_off[MAXIO], out_off[MAXIO];
	for (int i = 0; i < ni; i++) {
		in_off[i] = off;
		off = up64(off + (size_t)in[i].n * (size_t)dt_info(in[i].dtype)->bytes);
	}
	for (int k = 0; k < g->noutputs; k++) {
		out_off[k] = off;
		off = up64(off + out_bytes(g, k));
	}
	size_t src_off = off;
	r->size = off + SRC_CAP;
	r->fd = memfd_create("assay-run", MFD_CLOEXEC);
	if (r->fd < 0 || ftruncate(r->fd, (off_t)r->size) ||
	    (r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0)) ==
		    MAP_FAILED) {
		diag_env(d, "verify: cannot map %zu bytes for a worker: %s", r->size, strerror(errno));
		if (r->fd >= 0)
			close(r->fd);
		free(text);
		return -1;
	}
	Shm *h = r->h = (Shm *)r->base;
	static uint64_t runs;
	h->magic = MAGIC;
	h->id = ((uint64_t)getpid() << 32) ^ ++runs;
	h->size = r->size;
	h->faults = o->faults;
	h->hooks = o->hooks;
	h->threads = o->threads;
	h->seed = o->seed;
	snprintf(h->cache_dir, sizeof h->cache_dir, "%s", o->cache_dir ? o->cache_dir : "");
	h->ndefs = s->ndefs;
	h->ninputs = ni;
	h->noutputs = g->noutputs;
	h->text_off = text_off;
	h->text_len = tlen;
	h->file_off = file_off;
	h->sched_off = sched_off;
	h->src_off = src_off;
	memcpy(r->base + text_off, text, tlen + 1);
	memcpy(r->base + file_off, file, strlen(file) + 1);
	memcpy(r->base + sched_off, s->defs, (size_t)s->ndefs * sizeof(DefSched));
	for (int i = 0; i < ni; i++) {
		h->in_off[i] = in_off[i];
		h->in[i] = (InMeta){in[i].dtype, in[i].rank, {0}, in[i].n};
		memcpy(h->in[i].dims, in[i].dims, sizeof h->in[i].dims);
		memcpy(r->base + in_off[i], in[i].data,
		       (size_t)in[i].n * (size_t)dt_info(in[i].dtype)->bytes);
	}
	for (int k = 0; k < g->noutputs; k++)
		h->out_off[k] = out_off[k];
	free(text);
	return 0;
}

static void region_free(Region *r)
{
	munmap(r->base, r->size);
	close(r->fd);
}

static const char *signal_name(int sig)
{
	static const struct { int sig; const char *name; } t[] = {
		{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"}, {SIGILL, "SIGILL"},
		{SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"},
		{SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"}, {SIGPIPE, "SIGPIPE"},
		{SIGXCPU, "SIGXCPU"}, {SIGINT, "SIGINT"}, {SIGXFSZ, "SIGXFSZ"},
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++)
		if (t[i].sig == sig)
			return t[i].name;
	return "a signal";
}

static char *strdup_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *strdup_fmt(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	IR_ASSERT(s);
	return s;
}

static int send_fd(int sock, int fd)
{
	char byte = 0;
	struct iovec iov = {&byte, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	for (;;) {
		ssize_t w = sendmsg(sock, &mh, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		return w == 1 ? 0 : -1;
	}
}

/* The coverage counters, when the worker copied them. */
static void cov_of(const Shm *h, WorkerResult *res)
{
	res->covered = h->cov_done;
	if (h->cov_done)
		memcpy(res->cov, h->cov, sizeof res->cov);
}

/* The rewrite's counters, when the worker got through the rewrite. */
static void rules_of(const Shm *h, WorkerResult *res)
{
	if (!h->rw_done)
		return;
	res->rewritten = true;
	rw_rules(&res->rules);
	for (int i = 0; i < res->rules.nrules; i++) {
		res->rules.tried[i] = h->rw_tried[i];
		res->rules.fired[i] = h->rw_fired[i];
	}
}

/* The outcome of a worker that answered (died: false) or died with status. */
static void collect(const Graph *g, const Region *r, bool died, int status, WorkerResult *res)
{
	const Shm *h = r->h;
	const char *stage = stage_of(h);
	if (died && WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		res->status = WK_CRASH;
		res->signal = sig;
		res->reason = strdup_fmt("killed by %s (%s) during %s", signal_name(sig),
					 strsignal(sig), stage);
	} else if (died || !h->done) {
		res->status = WK_CRASH;
		res->reason = strdup_fmt("the worker exited with status %d during %s without a result",
					 WIFEXITED(status) ? WEXITSTATUS(status) : -1, stage);
	} else {
		res->status = (WorkerStatus)h->status;
		res->reason = strdup_fmt("%.*s", (int)strnlen(h->msg, sizeof h->msg), h->msg);
	}
	res->cache_hit = h->cache_hit;
	res->compile_s = h->compile_s;
	res->launch_s = h->launch_s;
	res->facts_device = h->facts_done;
	if (h->facts_done)
		res->facts = h->facts;
	rules_of(h, res);
	cov_of(h, res);
	if (h->src_len)
		res->source = strdup_fmt("%.*s", (int)h->src_len, (const char *)r->base + h->src_off);
	if (res->status != WK_OK)
		return;
	res->outs = calloc((size_t)g->noutputs + 1, sizeof *res->outs);
	IR_ASSERT(res->outs);
	for (int k = 0; k < g->noutputs; k++) {
		const Tensor *T = &g->tensors[g->outputs[k].tensor];
		int64_t dims[IR_MAXRANK];
		for (int i = 0; i < T->rank; i++)
			dims[i] = T->dims[i].value;
		IR_ASSERT(ht_alloc(&res->outs[k], g->outputs[k].dtype, T->rank, dims) == 0);
		memcpy(res->outs[k].data, r->base + h->out_off[k], out_bytes(g, k));
	}
}

static double limit_of(double x, double dflt)
{
	return x > 0 ? x : dflt;
}

/* Waits for sv's answer to the request in r under the limits (compile: from t0; run: from
 * the start of alloc). Fills res. The worker is gone afterwards unless it answered. */
static void await(Server *sv, const Graph *g, const Region *r, double t0, double climit,
		  double rlimit, WorkerResult *res)
{
	Shm *h = r->h;
	for (;;) {
		double t = now();
		bool compiling = h->stage < ST_ALLOC, ext = h->stage == ST_EXTERNAL;
		double deadline = ext ? t0 + climit + rlimit : compiling ? t0 + climit :
				  h->t_stage[ST_ALLOC] + rlimit;
		if (t >= deadline) {
			kill(-sv->pid, SIGKILL);
			server_stop(sv, true);
			res->status = WK_TIMEOUT;
			res->timed_out_compiling = compiling;
			rules_of(h, res);
			cov_of(h, res);
			res->reason = ext ?
				strdup_fmt("the external command gave no result within %g s (the compile "
					   "limit plus the run limit); it was killed", climit + rlimit) :
				compiling ?
				strdup_fmt("no result after %g s of compiling (the compile limit; the "
					   "worker was in %s)", climit, stage_of(h)) :
				strdup_fmt("the kernel ran past the run limit of %g s (the worker was in "
					   "%s)", rlimit, stage_of(h));
			if (h->src_len)
				res->source = strdup_fmt("%.*s", (int)h->src_len,
							 (const char *)r->base + h->src_off);
			return;
		}
		double left = deadline - t;
		struct pollfd pf = {sv->sock, POLLIN, 0};
		int n = poll(&pf, 1, left > 0.05 ? 50 : (int)(left * 1000) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			continue;
		uint64_t id = 0;
		ssize_t got = (pf.revents & POLLIN) ? recv(sv->sock, &id, sizeof id, MSG_DONTWAIT) : 0;
		if (got == (ssize_t)sizeof id && id != h->id)
			continue;   /* the answer to a run someone else abandoned (a reducer's child) */
		if (got == (ssize_t)sizeof id) {
			collect(g, r, false, 0, res);
			return;
		}
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		/* the worker died: reap it for its status */
		int status = 0;
		close(sv->sock);
		while (waitpid(sv->pid, &status, 0) < 0 && errno == EINTR)
			;
		sv->pid = 0;
		sv->sock = -1;
		collect(g, r, true, status, res);
		return;
	}
}

/* A live worker of a pool this process did not make (a reducer's child borrows its
 * parent's): used as it is, never started, stopped or counted here; NULL if none. */
static Server *borrow(VfPool *p, const Backend *b, Server *copy)
{
	for (int i = 0; p && i < p->n; i++)
		if (p->s[i].b == b && p->s[i].pid > 0 && kill(p->s[i].pid, 0) == 0) {
			*copy = p->s[i];
			return copy;
		}
	return NULL;
}

/* One run: in pool's worker for b (a fresh one when pool is NULL), limits scaled by
 * factor. 0 with r filled, or -1 with d. */
static int run_once(const Backend *b, const Graph *g, const Schedule *s,
		    const HostTensor *inputs, const WorkerOpts *o, VfPool *pool, double factor,
		    WorkerResult *r, Diag *d)
{
	memset(r, 0, sizeof *r);
	bool own = pool && pool->owner == getpid();
	Region reg;
	if (region_make(g, s, inputs, o, &reg, d))
		return -1;
	Server one = {b, 0, -1, 0}, *sv = own ? pool_server(pool, b, d) : borrow(pool, b, &one);
	bool borrowed = !own && sv;
	if (!own && !sv)
		sv = server_start(b, &one, NULL, d) ? NULL : &one;
	if (!sv) {
		region_free(&reg);
		return -1;
	}
	double t0 = now();
	if (send_fd(sv->sock, reg.fd)) {
		/* a worker that died while idle: one more try with a fresh one */
		if (!borrowed)
			server_stop(sv, true);
		else
			sv = &one;
		borrowed = false;
		if (server_start(b, sv, own ? pool : NULL, d)) {
			region_free(&reg);
			return -1;
		}
		if (own)
			pool->st.started++;
		t0 = now();
		if (send_fd(sv->sock, reg.fd)) {
			diag_env(d, "verify: cannot send a run to a %s worker: %s", b->name,
				 strerror(errno));
			server_stop(sv, true);
			region_free(&reg);
			return -1;
		}
	}
	double climit = factor * limit_of(o->compile_timeout_s, 120);
	double rlimit = factor * limit_of(o->timeout_s, 20);
	await(sv, g, &reg, t0, climit, rlimit, r);
	r->wall_s = now() - t0;
	if (own)
		pool->st.runs++;
	if (sv->pid > 0 && !borrowed) {
		sv->runs++;
		/* a worker whose kernel wrote past its buffers or failed at run time (a CUDA
		 * context is unusable after a fault), or that has served long enough, is retired;
		 * a one-off worker always is */
		bool clean = r->status == WK_OK || r->status == WK_UNSUPPORTED ||
			     r->status == WK_COMPILE_ERROR;
		if (!own || !clean || sv->runs >= SERVER_RUNS)
			server_stop(sv, false);
	}
	region_free(&reg);
	return 0;
}

/* Whether the directories a run writes to (the cache, $TMPDIR) still take a file of
 * PROBE_BYTES. 0 when they do; -1 with an env d naming the directory and the error. */
static int env_probe(const Backend *b, const WorkerOpts *o, const WorkerResult *r, Diag *d)
{
	char cache[4096];
	BeOpts bo = {o->threads, o->cache_dir};
	const char *tmp = getenv("TMPDIR");
	const char *dirs[2] = {cache, tmp && *tmp ? tmp : "/tmp"};
	if (be_cache_dir(&bo, cache, sizeof cache)) {
		int e = errno;
		diag_env(d, "%s backend: the environment failed: cannot create the cache directory "
			 "%s (%s), after a %s; not a verdict", b->name, cache, strerror(e),
			 r->status == WK_CRASH ? "crash" : "compile error");
		return -1;
	}
	static char zeros[65536];
	for (int i = 0; i < 2; i++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/.assay-probe.%ld", dirs[i], (long)getpid());
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), e = 0;
		size_t done = 0;
		if (fd < 0)
			e = errno;
		while (fd >= 0 && !e && done < PROBE_BYTES) {
			ssize_t w = write(fd, zeros, sizeof zeros);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				e = w < 0 ? errno : ENOSPC;
			else
				done += (size_t)w;
		}
		if (fd >= 0 && !e && fsync(fd))
			e = errno;
		if (fd >= 0 && close(fd) && !e)
			e = errno;
		unlink(path);
		if (e && diag_errno_env(e)) {
			const char *why = r->reason ? r->reason : "";
			diag_env(d, "%s backend: the environment failed: %s does not take a file (%s); "
				 "the %s that followed is not a verdict about the kernel (it said: %.*s)",
				 b->name, dirs[i], strerror(e),
				 r->status == WK_CRASH ? "crash" : "compile error",
				 (int)(strcspn(why, "\n") < 300 ? strcspn(why, "\n") : 300), why);
			return -1;
		}
	}
	return 0;
}

/* The factor of the limits a timeout's confirming re-run gets: CONFIRM_FACTOR, and on a
 * machine busier than its processors (the 1-minute load average per online processor, a
 * campaign's own jobs included) that much more, up to 4 times more: a re-run "alone" is not
 * alone there, and a kernel whose driver compiles it at its first launch (lavapipe) needs
 * CPU time that a loaded machine gives it only slowly. A crash's re-run needs no more time.
 * ASSAY_TEST_LOADAVG stands in for the load average in tests. */
static double confirm_factor(WorkerStatus first)
{
	if (first != WK_TIMEOUT)
		return CONFIRM_FACTOR;
	double load = 0;
	const char *fake = getenv("ASSAY_TEST_LOADAVG");
	if (fake)
		load = strtod(fake, NULL);
	else if (getloadavg(&load, 1) != 1)
		load = 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	double busy = cpus > 0 ? load / (double)cpus : 1;
	return CONFIRM_FACTOR * (busy > 4 ? 4 : busy > 1 ? busy : 1);
}

int vf_worker_run(const Backend *b, const Graph *g, const Schedule *s,
		  const HostTensor *inputs, const WorkerOpts *o, WorkerResult *r, Diag *d)
{
	double t0 = now();
	if (run_once(b, g, s, inputs, o, o->pool, 1, r, d))
		return -1;
	if (!o->no_confirm && (r->status == WK_CRASH || r->status == WK_TIMEOUT)) {
		/* confirmed only if a re-run alone, in a fresh worker, with longer limits, does
		 * it again; what that re-run gives is the result */
		WorkerResult first = *r;
		double factor = confirm_factor(first.status);
		if (run_once(b, g, s, inputs, o, NULL, factor, r, d)) {
			vf_worker_free(g, &first);
			return -1;
		}
		r->rerun = true;
		r->first_status = first.status;
		r->first_reason = first.reason;
		r->first_wall_s = first.wall_s;
		r->confirm_factor = factor;
		first.reason = NULL;
		vf_worker_free(g, &first);
		if (r->status == WK_CRASH && r->signal == SIGKILL) {
			diag_env(d, "%s backend: the environment failed: the worker was killed by SIGKILL "
				 "twice from outside assay (the system's out-of-memory killer?); not a "
				 "verdict", b->name);
			vf_worker_free(g, r);
			return -1;
		}
	}
	if ((r->status == WK_COMPILE_ERROR || r->status == WK_CRASH) && env_probe(b, o, r, d)) {
		vf_worker_free(g, r);
		return -1;
	}
	/* the run's whole cost: a worker started for it, a confirming re-run, the probe */
	r->wall_s = now() - t0;
	if (!r->facts_device)
		r->facts = b->facts;
	return 0;
}

void vf_worker_free(const Graph *g, WorkerResult *r)
{
	if (r->outs)
		for (int k = 0; k < g->noutputs; k++)
			ht_free(&r->outs[k]);
	free(r->outs);
	free(r->reason);
	free(r->source);
	free(r->first_reason);
	memset(r, 0, sizeof *r);
}

Verdict vf_worker_verdict(WorkerStatus s)
{
	static const Verdict t[] = {
		[WK_OK] = V_PASS, [WK_CRASH] = V_CRASH, [WK_TIMEOUT] = V_TIMEOUT, [WK_OOB] = V_OOB_WRITE,
		[WK_COMPILE_ERROR] = V_COMPILE_ERROR, [WK_UNSUPPORTED] = V_UNSUPPORTED,
		[WK_BAD_OUTPUT] = V_BAD_OUTPUT,
	};
	_Static_assert(ARRAY_LEN(t) == WK_BAD_OUTPUT + 1, "one verdict per worker status");
	return t[s];
}
