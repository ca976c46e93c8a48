/* verify/worker.c: one (backend, schedule) run in an isolated worker process.
 *
 * The caller has computed the oracle (of the graph as written); then it forks. The worker
 * rewrites the graph (rw_compile: the rewrite is part of the compiler under test, so a
 * rewrite that crashes is a crash of the case), lowers the rewritten graph, emits
 * the kernel source, compiles, allocates, uploads, launches, checks the guard regions and
 * downloads every output, writing what it gets into a shared anonymous mapping: a small
 * header (the stage reached, the outcome, a message, timings, the rules the rewrite
 * fired), the outputs in their dtypes, and the source. The parent waits with a deadline:
 * - the worker finished: its outcome (ok, compile-error, unsupported, oob-write, or a
 *   crash it reported itself: a runtime error the oracle did not see);
 * - it died of a signal: crash, with the signal's name and the stage it was in;
 * - it outlived the deadline: timeout; its whole process group is killed (the worker
 *   makes itself a group leader, so a C compiler it started dies with it).
 * Invariants: the worker never returns into the caller's code (it leaves by _exit, so no
 * stdio buffer is flushed twice and no atexit handler runs); it dies with its parent
 * (PR_SET_PDEATHSIG); it dumps no core. The parent must have no other threads when it
 * forks (the oracle's threads are joined before vf_worker_run is called).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "verify.h"

enum { SRC_CAP = 16 << 20, MSG_CAP = 16384, CANARY_GUARD = 64, CANARY_BYTE = 0xa5 };

typedef enum {
	ST_START, ST_REWRITE, ST_LOWER, ST_EMIT, ST_COMPILE, ST_ALLOC, ST_UPLOAD, ST_LAUNCH,
	ST_GUARDS, ST_DOWNLOAD, ST_DONE, ST__COUNT
} Stage;

static const char *const stage_names[ST__COUNT] = {
	[ST_START] = "start", [ST_REWRITE] = "rewrite", [ST_LOWER] = "lowering",
	[ST_EMIT] = "emit", [ST_COMPILE] = "compile", [ST_ALLOC] = "alloc", [ST_UPLOAD] = "upload",
	[ST_LAUNCH] = "launch", [ST_GUARDS] = "the guard check", [ST_DOWNLOAD] = "download",
	[ST_DONE] = "exit",
};
_Static_assert(ARRAY_LEN(stage_names) == ST__COUNT, "one name per stage");

/* The head of the shared mapping; the outputs follow at out_off[k], the source at src_off. */
typedef struct {
	volatile int stage;
	volatile int done;        /* the worker wrote its outcome */
	int status;               /* WorkerStatus */
	bool cache_hit;
	double compile_s, launch_s;
	int rw_done;              /* the rewrite ran to its end: rw_tried, rw_fired hold */
	uint64_t rw_tried[RW_MAXRULES], rw_fired[RW_MAXRULES];
	size_t src_len;
	char msg[MSG_CAP];
} Shm;

typedef struct {
	Shm *h;
	unsigned char *base;
	size_t size, src_off;
	size_t out_off[64];
} Region;

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

static int region_map(const Graph *g, Region *r, Diag *d)
{
	if (g->noutputs > (int)ARRAY_LEN(r->out_off)) {
		diag_set(d, 3, "verify: a graph of %d outputs (at most %zu)", g->noutputs,
			 ARRAY_LEN(r->out_off));
		return -1;
	}
	size_t off = (sizeof(Shm) + 63) & ~(size_t)63;
	for (int k = 0; k < g->noutputs; k++) {
		r->out_off[k] = off;
		off += (out_bytes(g, k) + 63) & ~(size_t)63;
	}
	r->src_off = off;
	r->size = off + SRC_CAP;
	void *p = mmap(NULL, r->size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		diag_set(d, 3, "verify: cannot map %zu bytes for a worker: %s", r->size, strerror(errno));
		return -1;
	}
	r->base = p;
	r->h = p;
	return 0;
}

/* ------------------------------------------------------------ the worker */

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

/* Runs up to the launch; 0 when the module is ready to launch. */
static int prepare(const Backend *b, const Graph *g, const HostTensor *in, BeModule *m, Shm *h)
{
	Diag d = {0};
	h->stage = ST_ALLOC;
	if (b->alloc(m, &d))   /* code 2: a limit of the device the backend states */
		return finish(h, d.code == 2 ? WK_UNSUPPORTED : WK_CRASH,
			      "the backend failed in alloc: %s", msg_of(&d)), -1;
	h->stage = ST_UPLOAD;
	for (int i = 0; i < ir_ninputs(g); i++)
		if (b->upload(m, ir_input_tensor(g, i), &in[i], &d))
			return finish(h, WK_CRASH, "the backend failed in upload: %s", msg_of(&d)), -1;
	return 0;
}

static void launch_and_fetch(const Backend *b, const Graph *g, BeModule *m, const Region *r,
			     unsigned hooks)
{
	Shm *h = r->h;
	Diag d = {0};
	h->stage = ST_LAUNCH;
	/* the hooks stand for a kernel that crashes or never ends */
	if (hooks & VF_HOOK_CRASH) {
		signal(SIGSEGV, SIG_DFL);   /* past a sanitizer's handler, as a plain build dies */
		raise(SIGSEGV);
	}
	if (hooks & VF_HOOK_HANG)
		for (volatile unsigned long spin = 0;; spin++)
			;
	double t0 = now();
	if (b->launch(m, &d)) {
		finish(h, WK_CRASH, "%s: %s", d.code == 2 ?
		       "the kernel reported a runtime error the oracle did not" :
		       "the backend failed in launch", msg_of(&d));
		return;
	}
	h->launch_s = now() - t0;
	h->stage = ST_GUARDS;
	if (b->guards(m, &d)) {
		finish(h, WK_OOB, "%s", msg_of(&d));
		return;
	}
	int past = (hooks & VF_HOOK_OOB) ? canary_write() : -1;
	if (past >= 0) {
		finish(h, WK_OOB, "a write outside buffer ASSAY_TEST_OOB-canary (past its end, %d bytes "
		       "from its end)", past);
		return;
	}
	h->stage = ST_DOWNLOAD;
	for (int k = 0; k < g->noutputs; k++) {
		HostTensor t = {0};
		if (b->download(m, g->outputs[k].tensor, g->outputs[k].dtype, &t, &d)) {
			finish(h, WK_CRASH, "the backend failed in download: %s", msg_of(&d));
			return;
		}
		if (hooks & VF_HOOK_NAN)
			poison_nan(&t);
		memcpy(r->base + r->out_off[k], t.data, out_bytes(g, k));
		ht_free(&t);
	}
	h->stage = ST_DONE;
	finish(h, WK_OK, "%s", "");
}

/* The graph the backend compiles: g rewritten by rw_compile (its counters into h), or g
 * itself under VF_HOOK_NO_REWRITE. NULL when the rewrite broke the definitions the
 * schedule names (never, by rw_simplify's contract: checked, not trusted). */
static const Graph *rewrite(const Graph *g, const WorkerOpts *o, Shm *h)
{
	if (o->hooks & VF_HOOK_NO_REWRITE)
		return g;
	h->stage = ST_REWRITE;
	RwStats st;
	memset(&st, 0, sizeof st);
	Graph *rg = rw_compile(g, o->faults, &st);
	for (int i = 0; i < st.nrules && i < RW_MAXRULES; i++) {
		h->rw_tried[i] = st.tried[i];
		h->rw_fired[i] = st.fired[i];
	}
	h->rw_done = 1;
	if (rg->ndefs != g->ndefs || rg->ntensors != g->ntensors || rg->noutputs != g->noutputs) {
		finish(h, WK_COMPILE_ERROR, "the rewrite changed the graph's definitions (%d -> %d), "
		       "tensors or outputs: the schedule does not apply", g->ndefs, rg->ndefs);
		return NULL;
	}
	return rg;   /* not freed: the process ends with the case */
}

static void worker(const Backend *b, const Graph *g0, const Schedule *s, const HostTensor *in,
		   const WorkerOpts *o, const Region *r)
{
	Shm *h = r->h;
	Diag d = {0};
	const Graph *g = rewrite(g0, o, h);
	if (!g)
		return;
	h->stage = ST_LOWER;
	LowerOpts lo = {o->faults};
	Kernels *k = kir_lower(g, s, &lo, &d);
	if (!k) {
		/* the compiler declining a legal schedule (code 2: a limit it states) is
		 * unsupported; anything else is its failure */
		finish(h, d.code == 2 ? WK_UNSUPPORTED : WK_COMPILE_ERROR, "%s", msg_of(&d));
		return;
	}
	h->stage = ST_EMIT;
	/* a backend declining what its language or device cannot express says so with code 2
	 * (unsupported, with the reason); its other failures are compile errors */
	char *src = b->emit(k, &d);
	if (!src) {
		finish(h, d.code == 2 ? WK_UNSUPPORTED : WK_COMPILE_ERROR, "%s", msg_of(&d));
		return;
	}
	/* $ASSAY_SOURCE_<BACKEND> (e.g. ASSAY_SOURCE_VULKAN): a file compiled in place of the
	 * emitted program, for bisecting a driver's miscompile by hand-edited variants of it */
	char var[64] = "ASSAY_SOURCE_";
	for (const char *p = b->name; *p && strlen(var) < sizeof var - 1; p++)
		var[strlen(var) + 1] = 0, var[strlen(var)] = (char)toupper((unsigned char)*p);
	const char *alt = getenv(var);
	if (alt && *alt) {
		size_t len;
		char *text = be_read_file(alt, &len);
		if (!text) {
			finish(h, WK_COMPILE_ERROR, "%s=%s: cannot read it", var, alt);
			free(src);
			return;
		}
		free(src);
		src = text;
	}
	size_t n = strlen(src);
	h->src_len = n < SRC_CAP ? n : SRC_CAP;
	memcpy(r->base + r->src_off, src, h->src_len);
	h->stage = ST_COMPILE;
	BeOpts bo = {o->threads, o->cache_dir};
	BeStats st = {0};
	BeModule *m = b->compile(k, src, &bo, &st, &d);
	free(src);
	h->compile_s = st.compile_s;
	h->cache_hit = st.cache_hit;
	if (!m) {
		finish(h, d.code == 2 ? WK_UNSUPPORTED : WK_COMPILE_ERROR, "%s", msg_of(&d));
		return;
	}
	if (prepare(b, g, in, m, h) == 0)
		launch_and_fetch(b, g, m, r, o->hooks);
	/* no cleanup: the process ends here */
}

static _Noreturn void worker_main(const Backend *b, const Graph *g, const Schedule *s,
				  const HostTensor *in, const WorkerOpts *o, const Region *r)
{
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);
	worker(b, g, s, in, o, r);
	_exit(0);
}

/* ------------------------------------------------------------ the parent */

static const char *signal_name(int sig)
{
	static const struct { int sig; const char *name; } t[] = {
		{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"}, {SIGILL, "SIGILL"},
		{SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"},
		{SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"}, {SIGPIPE, "SIGPIPE"},
		{SIGXCPU, "SIGXCPU"}, {SIGINT, "SIGINT"},
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

/* Waits for pid until the deadline; true when it ended (not yet reaped). */
static bool wait_until(pid_t pid, double deadline)
{
	long nap = 200000;   /* ns, doubling up to 20 ms */
	for (;;) {
		siginfo_t si = {0};
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
			return true;
		if (now() >= deadline)
			return false;
		struct timespec ts = {0, nap};
		nanosleep(&ts, NULL);
		nap = nap * 2 > 20000000 ? 20000000 : nap * 2;
	}
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

static void collect(const Graph *g, const Region *r, int status, WorkerResult *res)
{
	const Shm *h = r->h;
	const char *stage = stage_names[h->stage >= 0 && h->stage < ST__COUNT ? h->stage : 0];
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		res->status = WK_CRASH;
		res->reason = strdup_fmt("killed by %s (%s) during %s", signal_name(sig),
					 strsignal(sig), stage);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !h->done) {
		res->status = WK_CRASH;
		res->reason = strdup_fmt("the worker exited with status %d during %s without a result",
					 WIFEXITED(status) ? WEXITSTATUS(status) : -1, stage);
	} else {
		res->status = (WorkerStatus)h->status;
		res->reason = strdup_fmt("%.*s", (int)strnlen(h->msg, sizeof h->msg), h->msg);
	}
	res->cache_hit = h->cache_hit;
	res->compile_s = h->compile_s;
	rules_of(h, res);
	res->launch_s = h->launch_s;
	if (h->src_len)
		res->source = strdup_fmt("%.*s", (int)h->src_len, (const char *)r->base + r->src_off);
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
		memcpy(res->outs[k].data, r->base + r->out_off[k], out_bytes(g, k));
	}
}

int vf_worker_run(const Backend *b, const Graph *g, const Schedule *s,
		  const HostTensor *inputs, const WorkerOpts *o, WorkerResult *r, Diag *d)
{
	memset(r, 0, sizeof *r);
	Region reg;
	if (region_map(g, &reg, d))
		return -1;
	if (b->warm) {   /* once per backend and process: every worker after this inherits it */
		static const Backend *warmed[16];
		size_t i = 0;
		while (i < ARRAY_LEN(warmed) && warmed[i] && warmed[i] != b)
			i++;
		if (i < ARRAY_LEN(warmed) && !warmed[i]) {
			warmed[i] = b;
			b->warm();
		}
	}
	double timeout = o->timeout_s > 0 ? o->timeout_s : 20, t0 = now();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		diag_set(d, 3, "verify: cannot fork a worker: %s", strerror(errno));
		munmap(reg.base, reg.size);
		return -1;
	}
	if (pid == 0)
		worker_main(b, g, s, inputs, o, &reg);
	setpgid(pid, pid);   /* as the worker does: whichever runs first wins the race */
	bool ended = wait_until(pid, t0 + timeout);
	/* the zombie still holds pid, so the group id cannot have been reused */
	kill(-pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	r->wall_s = now() - t0;
	if (ended) {
		collect(g, &reg, status, r);
	} else {
		int st = reg.h->stage;
		r->status = WK_TIMEOUT;
		rules_of(reg.h, r);
		r->reason = strdup_fmt("no result after %g s (the worker was in %s)", timeout,
				       stage_names[st >= 0 && st < ST__COUNT ? st : 0]);
		if (reg.h->src_len)
			r->source = strdup_fmt("%.*s", (int)reg.h->src_len,
					       (const char *)reg.base + reg.src_off);
	}
	munmap(reg.base, reg.size);
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
	memset(r, 0, sizeof *r);
}
