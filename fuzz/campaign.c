/* fuzz/campaign.c: the campaign loop: job processes, the ordered and durable result log,
 * deduplication into failure folders, resume, and the progress line.
 *
 * Processes. The parent forks `jobs` job processes, each fed tasks through a pipe and
 * answering through another: run case N (fz_case_run: the reply is the case's log text),
 * or reduce the failure KEY first seen in case N and write its folder. Kernels run in
 * worker processes below the jobs (verify/worker.c), so a kernel's crash or hang is a
 * verdict; a job that dies (the toolkit crashing on a case) or outlives case_limit_s is
 * replaced, and its case recorded as an error. Jobs die with the parent (PDEATHSIG).
 *
 * The log. Only the parent writes DIR/results.jsonl, one case at a time in case order
 * (replies that arrive early wait in a window of a few cases), each case with one write
 * and one fsync. So the log is always a prefix of cases 0, 1, 2, ... whatever the number of
 * jobs, and a SIGKILL loses at most the cases in flight (and a torn last case, which a
 * resume cuts off). Every case's text is a function of (seed, case) alone (case.c), so a
 * resumed campaign's log equals an uninterrupted one's, timings aside.
 *
 * Deduplication. The parent reads each case's "fails" (signature keys, dedup.c) in case
 * order: a new key gets a folder DIR/failures/KEY (with '/' as '.') and a reduction task;
 * every hit counts (DIR/failures/KEY/count, rewritten atomically). A folder is complete
 * when its repro.tg exists; a resume re-reads the log, recounts, and reduces again the
 * failures whose folder is incomplete. Which case first hits a key is decided by case
 * order, so folders are the same with any number of jobs.
 *
 * Coverage feedback (fuzz/cover.c). The parent also reads each case's coverage points in
 * case order; when epoch k (feedback_epoch cases) is logged, it computes the bias of epoch
 * k + 2, and it dispatches a case of epoch e only once e's bias exists. Every task carries
 * the bias of its case's epoch (a case, or the reduction of a failure it found), so a job
 * generates exactly the graph the case had; a resume recomputes the biases from the log.
 *
 * Shards (FzCampaign.shard_i, shard_n). A shard runs the cases I, I + N, I + 2N, ... of
 * the campaign, each exactly as the unsharded campaign runs it (fz_shard_case); its log
 * holds them in that order, and the counters of the loop (next_case, next_write, the
 * window of cases in flight) count places in it (place_of), while tasks, records and done
 * lines carry the cases' own numbers. A shard has no coverage feedback (settings.c refuses
 * it), so nothing of a case depends on the cases of the other shards; merge.c joins the
 * logs of the N shards into the unsharded campaign's.
 *
 * The baseline (FzCampaign.baseline, baseline.c): a failure whose key it lists is known. It
 * is counted (summary.json, the closing list, as known) but gets no folder and no
 * reduction (its repro is the baseline's), is not a distinct failure (so not exit 1) and not
 * a kill, and does not stop --until-failure: a campaign against a control campaign of the
 * same settings reports what the control did not find.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "fuzz.h"

/* Tasks (parent to job) and replies (job to parent); T_ENV is a reply only: the environment
 * failed under the task, whose text is the cause. */
enum { T_CASE = 1, T_REDUCE, T_SAVE, T_ENV, ITEM_MAX = 600, MAXJOBS = 64 };
/* The campaign's shared cache of compiled programs is trimmed to CACHE_LOW bytes when it
 * passes CACHE_HIGH, checked every CACHE_EVERY cases. */
enum { CACHE_EVERY = 25, JOB_WIPE = 64 };
#define CACHE_HIGH ((int64_t)512 << 20)
#define CACHE_LOW ((int64_t)384 << 20)

typedef struct {
	int kind;
	uint64_t case_no;
	char item[ITEM_MAX];   /* reductions: "KEY@OUTPUT" */
	FzBias bias;           /* the bias of the case's epoch (epoch -1: no feedback) */
} Task;

typedef struct {
	int kind;
	uint64_t case_no;
	uint32_t len;
} Reply;

typedef struct {
	pid_t pid;
	int to, from;
	bool busy, killed;
	Task task;
	double started;
	char *buf;
	size_t len, cap;
	char cache[4200];
} Job;

typedef enum { E_QUEUED, E_REDUCING, E_DONE, E_FAILED } EntState;

typedef struct {
	char key[512];
	char output[64];
	int64_t count, first_case;
	EntState state;
	int defs, defs_before, tests;
	double reduce_s;
	bool kill;
	bool known;            /* the baseline lists it: counted, never saved nor reduced */
} Entry;

typedef struct {
	uint64_t case_no;      /* its place in the log (place_of) */
	char *blob;
} Pending;

typedef struct {
	char name[16];
	int64_t runs, fails;
} BStat;

typedef struct {
	const char *dir;
	FzCampaign c;
	FILE *progress;
	bool tty;
	FzSummary *sum;
	Job jobs[MAXJOBS];
	int njobs;
	Entry *ent;
	int nent, capent;
	Task *rq;
	int nrq, caprq;
	Pending *pend;
	int npend, cappend;
	BStat bs[FZ_MAXBACKENDS];
	int nbs;
	uint64_t next_case, next_write;
	int logfd;
	double t0, last_progress;
	int64_t cases0;        /* cases in the log when this run started */
	bool found;            /* until_failure: the failure it waits for was seen */
	int found_ent;
	char *cache;           /* DIR/cache: the compiled programs every job shares */
	char *env;             /* the environment failed under a task: the cause (the campaign
	                          stops, nothing recorded for that task) */
	double last_new_s;     /* this run's time of its last new distinct failure (-1: none) */
	FzCov cov;             /* the coverage points of the cases logged */
	FzBias *ep;            /* feedback: the bias of epochs 0 .. nep-1 */
	int64_t nep, capep;
	bool log_checked;      /* the log was checked line by line already (a merge's) */
} Camp;

/* SIGINT or SIGTERM received while a campaign runs (0: none): the loop stops, writes what
 * is complete, the summary, and says how to resume. A second one ends the process, but
 * only a second or more after the first: GNU timeout sends its signal to the campaign and
 * then to the campaign's whole process group, the campaign included, so one timeout is two
 * SIGTERMs microseconds apart (as is a kill of the group beside a kill of the process). */
static volatile sig_atomic_t interrupted;
static struct timespec interrupted_at;   /* CLOCK_MONOTONIC of the first (async-signal-safe) */

static void on_signal(int sig)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (interrupted) {
		if (t.tv_sec - interrupted_at.tv_sec > 1 ||
		    (t.tv_sec - interrupted_at.tv_sec == 1 && t.tv_nsec >= interrupted_at.tv_nsec))
			_exit(128 + sig);
		return;
	}
	interrupted_at = t;
	interrupted = sig;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	char *s = NULL;
	if (vasprintf(&s, f, ap) < 0)
		s = NULL;
	va_end(ap);
	IR_ASSERT(s);
	return s;
}

static bool write_full(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		c += w;
		n -= (size_t)w;
	}
	return true;
}

static bool read_full(int fd, void *p, size_t n)
{
	char *c = p;
	while (n) {
		ssize_t r = read(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		c += r;
		n -= (size_t)r;
	}
	return true;
}

/* The folder of a key: DIR/failures/KEY with '/' as '.'. */
static char *folder_of(const char *dir, const char *key)
{
	char *p = fmt("%s/failures/%s", dir, key);
	for (char *q = p + strlen(dir) + 10; *q; q++)
		if (*q == '/')
			*q = '.';
	return p;
}

/* Removes everything inside a directory (a job's private files between tasks: PoCL's
 * program cache makes folders); the directory itself stays. */
void fz_empty_dir(const char *path)
{
	DIR *dd = opendir(path);
	struct dirent *e;
	while (dd && (e = readdir(dd))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *f = fmt("%s/%s", path, e->d_name);
		struct stat st;
		if (lstat(f, &st) == 0 && S_ISDIR(st.st_mode)) {
			fz_empty_dir(f);
			rmdir(f);
		} else {
			unlink(f);
		}
		free(f);
	}
	if (dd)
		closedir(dd);
}

typedef struct {
	char *path;
	int64_t bytes;
	time_t mtime;
} CFile;

static int by_mtime(const void *a, const void *b)
{
	const CFile *x = a, *y = b;
	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Trims the shared cache: past high bytes, the oldest files go until it holds low. A job
 * that loses a file it was about to load rebuilds it (the caches verify what they load). */
static void trim_cache(const char *path, int64_t high, int64_t low)
{
	DIR *dd = opendir(path);
	struct dirent *e;
	CFile *f = NULL;
	size_t n = 0, cap = 0;
	int64_t total = 0;
	while (dd && (e = readdir(dd))) {
		char *p = fmt("%s/%s", path, e->d_name);
		struct stat st;
		if (e->d_name[0] == '.' || lstat(p, &st) || !S_ISREG(st.st_mode)) {
			free(p);
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			f = realloc(f, cap * sizeof *f);
			IR_ASSERT(f);
		}
		f[n++] = (CFile){p, (int64_t)st.st_size, st.st_mtime};
		total += (int64_t)st.st_size;
	}
	if (dd)
		closedir(dd);
	if (total > high) {
		qsort(f, n, sizeof *f, by_mtime);
		for (size_t i = 0; i < n && total > low; i++)
			if (unlink(f[i].path) == 0)
				total -= f[i].bytes;
	}
	for (size_t i = 0; i < n; i++)
		free(f[i].path);
	free(f);
}

/* ------------------------------------------------------------------ the jobs' side */

/* A reply that the environment failed (d's message): the task has no result. */
static char *env_reply(Diag *d)
{
	char *r = fmt("%s", d->msg ? d->msg : "the environment failed\n");
	diag_clear(d);
	return r;
}

/* Case t->case_no: its log text; an error's graph is kept under DIR/errors. *kind gets
 * T_ENV (and the text the cause) when the environment failed under the case. */
static char *job_case(Camp *C, const Task *t, VfPool *pool, int *kind)
{
	char *blob = NULL, *gtext = NULL;
	Diag d = {0};
	if (fz_case_run_bias(&C->c, &t->bias, t->case_no, C->cache, pool, &blob, NULL, &gtext, &d)) {
		free(gtext);
		if (d.env) {
			*kind = T_ENV;
			return env_reply(&d);
		}
		blob = fmt("{\"done\":%llu,\"status\":\"error\",\"error\":\"the case cannot be set "
			   "up\",\"fails\":[]}\n", (unsigned long long)t->case_no);
		diag_clear(&d);
		return blob;
	}
	const char *done = strstr(blob, "{\"done\":");
	char err[4096];
	if (done && strstr(done, "\"status\":\"error\"") && gtext &&
	    fz_json_get(done, "error", err, sizeof err)) {
		char *dir = fmt("%s/errors", C->dir), *path = fmt("%s/case-%llu.tg", dir,
								   (unsigned long long)t->case_no);
		for (char *p = err; *p; p++)
			if (*p == '\n')
				*p = ' ';
		char *text = fmt("# %s\n%s", err, gtext);
		if (vf_mkdirs(dir, &d) || fz_write_atomic(path, text, &d))
			*kind = d.env ? T_ENV : *kind;
		free(text);
		free(dir);
		free(path);
		if (*kind == T_ENV) {
			free(blob);
			free(gtext);
			return env_reply(&d);
		}
		diag_clear(&d);
	}
	free(gtext);
	return blob;
}

/* A failure of variant vname of case n (of graph *g): a failure of the variant's own
 * budgets is reduced as a graph of its own (*g becomes the variant's); a bit-identity
 * mismatch is the pair's: *g stays the original and r checks it with the variant's recipe
 * (r->pair), so that every candidate of the reducer is checked with its own variant. The
 * variant in words for the repro's header (malloc'ed), or NULL when the case has no such
 * variant. */
static char *variant_task(Camp *C, uint64_t n, const char *vname, const FzSig *s, Graph **g,
			  FzRun *r)
{
	FzVariant vs[FZ_MAX_VARIANTS];
	int nv = fz_case_variants(&C->c, n, *g, vs, FZ_MAX_VARIANTS);
	char *what = NULL;
	for (int k = 0; k < nv; k++) {
		if (what || strcmp(vs[k].name, vname) != 0)
			continue;
		what = fmt("variant %s (%s: %s)", vs[k].name,
			   vs[k].bit ? "bit-identical" : "within budget", vs[k].what);
		if (s->verdict == V_VARIANT_MISMATCH) {
			r->pair = true;
			r->pair_kind = vs[k].kind;
			r->pair_seed = vs[k].seed;
		} else {
			ir_free(*g);
			*g = vs[k].g;
			vs[k].g = NULL;
		}
	}
	for (int k = 0; k < nv; k++)
		fz_variant_free(&vs[k]);
	return what;
}

/* Reduces (or with T_SAVE only saves) the failure of t and writes its folder. *kind gets
 * T_ENV when the environment failed under it. */
static char *job_reduce(Camp *C, const Task *t, VfPool *pool, int *kind)
{
	char key[ITEM_MAX], *at;
	snprintf(key, sizeof key, "%s", t->item);
	FzSig s;
	Diag d = {0};
	FzRun r;
	if (!(at = strrchr(key, '@')) || (*at = 0, fz_sig_parse(key, &s)) ||
	    fz_case_setup(&C->c, t->case_no, C->cache, &r, &d)) {
		diag_clear(&d);
		return fmt("{\"reduced\":\"%s\",\"ok\":false}\n", key);
	}
	r.pool = pool;
	/* "OUTPUT" or "OUTPUT#VARIANT": a failure of the case's variant VARIANT */
	char *vname = strchr(at + 1, '#');
	if (vname)
		*vname++ = 0;
	snprintf(s.output, sizeof s.output, "%s", at + 1);
	GenOpts go = fz_bias_opts(&C->c.gen, &t->bias, C->c.seed, t->case_no, NULL, NULL);
	Graph *g = fz_gen(&go, C->c.seed, t->case_no, &d);
	char *vwhat = NULL;
	if (g && vname && !(vwhat = variant_task(C, t->case_no, vname, &s, &g, &r))) {
		ir_free(g);
		g = NULL;
	}
	if (!g) {
		diag_clear(&d);
		return fmt("{\"reduced\":\"%s\",\"ok\":false}\n", key);
	}
	FzReduceStats st = {0};
	char *repro = NULL, *why = NULL;
	if (t->kind == T_REDUCE && C->c.reduce) {
		FzReduceOpts o = {r, C->c.reduce_tests, 0, NULL};
		if (fz_reduce(g, &s, &o, &repro, &st, &d) == 0) {
			r.seed = st.seed;
			r.dist = st.dist;
			r.specials = st.specials;
		} else if (d.env) {
			ir_free(g);
			*kind = T_ENV;
			return env_reply(&d);
		} else {
			why = fmt("not reduced: %s", d.msg ? d.msg : "");
		}
		diag_clear(&d);
	}
	if (!repro)   /* unreduced: the repro is the case's graph, whole */
		st.defs_before = st.defs_after = g->ndefs;
	char *orig = ir_print(g);
	if (!repro)
		repro = strdup(orig);
	char *origin = fmt("fuzz campaign seed %llu, case %llu (graph fz%llu)%s%s; %s%d definitions "
			   "reduced to %d in %d checks", (unsigned long long)C->c.seed,
			   (unsigned long long)t->case_no, (unsigned long long)t->case_no,
			   vwhat ? ", " : "", vwhat ? vwhat : "", why ? why : "", st.defs_before,
			   st.defs_after, st.tests);
	for (char *p = origin; *p; p++)
		if (*p == '\n')
			*p = ' ';
	if (r.invariance) {   /* the batch the repro draws, for its command */
		Diag pd = {0};
		Graph *rg = ir_parse(repro, strlen(repro), "repro.tg", NULL, 0, &pd);
		int64_t v;
		int si = rg ? fz_inv_choice(rg, r.seed, &v) : -1;
		if (si >= 0)
			snprintf(r.inv_at, sizeof r.inv_at, "%s=%lld", rg->sizes[si].name, (long long)v);
		ir_free(rg);
		diag_clear(&pd);
	}
	char *header = fz_repro_header(&s, &r, st.defs_after, origin);
	char *folder = folder_of(C->dir, key);
	bool ok = fz_save_failure(folder, &s, repro, header, orig, &r, &d) == 0;
	char *reply = d.env ? (*kind = T_ENV, env_reply(&d)) :
		fmt("{\"reduced\":\"%s\",\"ok\":%s,\"defs\":%d,\"defs_before\":%d,\"tests\":%d,"
		    "\"seconds\":%.3f}\n", key, ok ? "true" : "false", st.defs_after, st.defs_before,
		    st.tests, st.seconds);
	diag_clear(&d);
	free(folder);
	free(header);
	free(origin);
	free(orig);
	free(repro);
	free(why);
	free(vwhat);
	ir_free(g);
	return reply;
}

static _Noreturn void job_main(Camp *C, Job *j)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* the parent answers Ctrl-C and SIGTERM for the campaign; a job ends when told */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_DFL);
	/* PoCL keeps a program cache of its own: the job's private folder, emptied after each
	 * task, unless the user placed it */
	char *pocl = fmt("%s/pocl", j->cache);
	if (!getenv("POCL_CACHE_DIR"))
		setenv("POCL_CACHE_DIR", pocl, 1);
	free(pocl);
	/* persistent workers, unless ASSAY_FRESH_WORKERS asks for a fresh worker process per
	 * run (the engine before them: for benchmarks and for diagnosing a worker's state) */
	const char *fresh = getenv("ASSAY_FRESH_WORKERS");
	VfPool *pool = fresh && *fresh && strcmp(fresh, "0") ? NULL : vf_pool_new();
	unsigned tasks = 0;
	for (;;) {
		Task t;
		if (!read_full(j->to, &t, sizeof t))
			break;
		int kind = t.kind == T_SAVE ? T_REDUCE : t.kind;
		char *reply = t.kind == T_CASE ? job_case(C, &t, pool, &kind) :
						 job_reduce(C, &t, pool, &kind);
		/* the job's private folder (PoCL's program cache) is emptied only with no worker
		 * alive: a live PoCL keeps the folders it made and fails every build once they
		 * are gone. So the workers are stopped for it every JOB_WIPE tasks. */
		if (!pool || ++tasks % JOB_WIPE == 0) {
			if (pool) {
				vf_pool_free(pool);
				pool = vf_pool_new();
			}
			fz_empty_dir(j->cache);
		}
		Reply h = {kind, t.case_no, (uint32_t)strlen(reply)};
		bool sent = write_full(j->from, &h, sizeof h) && write_full(j->from, reply, h.len);
		free(reply);
		if (!sent)
			break;
	}
	vf_pool_free(pool);
	_exit(0);
}

/* ------------------------------------------------------------------ job control */

static int job_start(Camp *C, int k, Diag *d)
{
	Job *j = &C->jobs[k];
	int down[2], up[2];
	if (pipe(down) || pipe(up)) {
		diag_set(d, 3, "fuzz: cannot make a pipe: %s", strerror(errno));
		return -1;
	}
	snprintf(j->cache, sizeof j->cache, "%s/tmp/job%d", C->dir, k);
	if (vf_mkdirs(j->cache, d))
		return -1;
	fz_empty_dir(j->cache);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		diag_set(d, 3, "fuzz: cannot fork a job: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		close(down[1]);
		close(up[0]);
		close(C->logfd);
		for (int i = 0; i < C->njobs; i++)
			if (i != k && C->jobs[i].pid > 0) {
				close(C->jobs[i].to);
				close(C->jobs[i].from);
			}
		j->to = down[0];
		j->from = up[1];
		job_main(C, j);
	}
	close(down[0]);
	close(up[1]);
	j->pid = pid;
	j->to = down[1];
	j->from = up[0];
	j->busy = j->killed = false;
	j->len = 0;
	return 0;
}

static void job_stop(Job *j)
{
	if (j->pid <= 0)
		return;
	close(j->to);
	close(j->from);
	int st;
	while (waitpid(j->pid, &st, 0) < 0 && errno == EINTR)
		;
	j->pid = 0;
	free(j->buf);
	j->buf = NULL;
	j->cap = j->len = 0;
}

static bool send_task(Camp *C, int k, const Task *t)
{
	Job *j = &C->jobs[k];
	j->task = *t;
	j->busy = true;
	j->started = now();
	j->len = 0;
	return write_full(j->to, t, sizeof *t);
}

/* ------------------------------------------------------------------ accounting */

static Entry *entry_find(Camp *C, const char *key)
{
	for (int i = 0; i < C->nent; i++)
		if (strcmp(C->ent[i].key, key) == 0)
			return &C->ent[i];
	return NULL;
}

static void write_count(Camp *C, const Entry *e)
{
	char *folder = folder_of(C->dir, e->key), *path = fmt("%s/count", folder);
	char *text = fmt("%lld\nfirst case %lld\n", (long long)e->count, (long long)e->first_case);
	Diag d = {0};
	if (vf_mkdirs(folder, &d) == 0)
		fz_write_atomic(path, text, &d);
	diag_clear(&d);
	free(folder);
	free(path);
	free(text);
}

static void queue(Camp *C, int kind, uint64_t case_no, const char *item)
{
	if (C->nrq == C->caprq) {
		C->caprq = C->caprq ? 2 * C->caprq : 8;
		C->rq = realloc(C->rq, (size_t)C->caprq * sizeof *C->rq);
		IR_ASSERT(C->rq);
	}
	Task *t = &C->rq[C->nrq++];
	memset(t, 0, sizeof *t);
	t->kind = kind;
	t->case_no = case_no;
	snprintf(t->item, sizeof t->item, "%s", item);
}

/* One failure "KEY@OUTPUT" of case n. */
static void count_fail(Camp *C, uint64_t n, const char *item, bool live)
{
	char key[ITEM_MAX];
	snprintf(key, sizeof key, "%s", item);
	char *at = strrchr(key, '@');
	if (at)
		*at = 0;
	Entry *e = entry_find(C, key);
	if (e) {
		e->count++;
		if (live && !e->known)
			write_count(C, e);
		return;
	}
	if (C->nent == C->capent) {
		C->capent = C->capent ? 2 * C->capent : 16;
		C->ent = realloc(C->ent, (size_t)C->capent * sizeof *C->ent);
		IR_ASSERT(C->ent);
	}
	e = &C->ent[C->nent++];
	memset(e, 0, sizeof *e);
	snprintf(e->key, sizeof e->key, "%.*s", (int)sizeof e->key - 1, key);
	snprintf(e->output, sizeof e->output, "%.*s", (int)sizeof e->output - 1, at ? at + 1 : "");
	e->count = 1;
	e->first_case = (int64_t)n;
	e->defs = -1;
	FzSig s;
	e->known = fz_baseline_has(C->c.baseline, key);
	e->kill = !e->known && fz_sig_parse(key, &s) == 0 && s.faults != 0;
	if (e->known) {
		e->state = E_DONE;
		C->sum->known++;
		return;
	}
	C->sum->distinct++;
	C->sum->kills += e->kill;
	if (!live)
		return;
	write_count(C, e);
	C->last_new_s = now() - C->t0;
	/* measuring a seeded fault (until_failure): a failure it is not in is kept unreduced,
	 * and so is one found after the failure waited for (the campaign only finishes) */
	bool aside = C->c.until_failure && ((C->c.faults && !e->kill) || C->found);
	queue(C, aside ? T_SAVE : T_REDUCE, n, item);
	double t = now() - C->t0;
	if (C->sum->first_fail_s < 0)
		C->sum->first_fail_s = t;
	if (e->kill && C->sum->first_kill_s < 0) {
		C->sum->first_kill_s = t;
		C->sum->first_kill_case = (int64_t)n;
	}
	if (C->c.until_failure && !C->found && (C->c.faults ? e->kill : true)) {
		C->found = true;
		C->found_ent = C->nent - 1;
	}
}

static void count_record(Camp *C, const char *line)
{
	char b[64], v[64];
	if (!fz_json_get(line, "backend", b, sizeof b) || !fz_json_get(line, "verdict", v, sizeof v))
		return;
	C->sum->records++;
	for (int k = 0; k < V__COUNT; k++)
		if (strcmp(vf_verdict_name((Verdict)k), v) == 0) {
			C->sum->verdicts[k]++;
			int i = 0;
			while (i < C->nbs && strcmp(C->bs[i].name, b))
				i++;
			if (i == C->nbs && C->nbs < FZ_MAXBACKENDS)
				snprintf(C->bs[C->nbs++].name, sizeof C->bs[0].name, "%.15s", b);
			if (i < C->nbs) {
				C->bs[i].runs++;
				C->bs[i].fails += vf_verdict_fails((Verdict)k);
			}
		}
}

/* The "fails" array of a done line: each string item. */
static void count_done(Camp *C, const char *line, bool live)
{
	char st[16], fails[16384], dn[32];
	fz_json_get(line, "done", dn, sizeof dn);
	uint64_t n = strtoull(dn, NULL, 10);
	C->sum->cases++;
	if (fz_json_get(line, "status", st, sizeof st) && strcmp(st, "error") == 0)
		C->sum->errors++;
	if (!fz_json_get(line, "fails", fails, sizeof fails))
		return;
	for (char *p = strchr(fails, '"'); p; p = strchr(p, '"')) {
		char *q = strchr(p + 1, '"');
		if (!q)
			break;
		*q = 0;
		count_fail(C, n, p + 1, live);
		p = q + 1;
	}
}

/* The bias of epoch e, which feedback needs once its epoch e - 2 is logged (appended to
 * C->ep in epoch order). */
static void add_bias(Camp *C, int64_t e)
{
	if (C->nep == C->capep) {
		C->capep = C->capep ? 2 * C->capep : 16;
		C->ep = realloc(C->ep, (size_t)C->capep * sizeof *C->ep);
		IR_ASSERT(C->ep);
	}
	fz_bias_of(&C->cov, e, &C->ep[C->nep++]);
}

/* One line of the log for the coverage; a done line that completes an epoch makes the
 * bias of the epoch after next. */
static void feedback_line(Camp *C, const char *line)
{
	fz_cov_line(&C->cov, line);
	int64_t E = C->c.feedback_epoch;
	if (E > 0 && strncmp(line, "{\"done\":", 8) == 0 && C->cov.cases % E == 0)
		add_bias(C, C->cov.cases / E + 1);
}

/* The bias of case n's epoch into b (epoch -1 without feedback); false while it is not
 * known yet (its epoch - 2 is not logged). */
static bool bias_for(const Camp *C, uint64_t n, FzBias *b)
{
	memset(b, 0, sizeof *b);
	b->epoch = -1;
	int64_t E = C->c.feedback_epoch;
	if (E <= 0)
		return true;
	int64_t e = (int64_t)(n / (uint64_t)E);
	if (e >= C->nep)
		return false;
	*b = C->ep[e];
	return true;
}

/* Accounts the lines of text (complete cases). */
static void account(Camp *C, char *text, size_t len, bool live)
{
	for (char *p = text; p < text + len;) {
		char *nl = memchr(p, '\n', (size_t)(text + len - p));
		if (!nl)
			break;
		*nl = 0;
		feedback_line(C, p);
		if (strncmp(p, "{\"done\":", 8) == 0)
			count_done(C, p, live);
		else
			count_record(C, p);
		*nl = '\n';
		p = nl + 1;
	}
}

/* ------------------------------------------------------------------ the log */

/* The place in this campaign's log (0, 1, 2, ...) of its case n: n itself, or for a shard
 * (fz_shard_case) n's rank among the shard's cases. */
static uint64_t place_of(const Camp *C, uint64_t n)
{
	return C->c.shard_n > 0 ? n / (uint64_t)C->c.shard_n : n;
}

static int log_case(Camp *C, char *blob, Diag *d)
{
	size_t len = strlen(blob);
	if (!write_full(C->logfd, blob, len) || fsync(C->logfd)) {
		int e = errno ? errno : ENOSPC;
		diag_env(d, "fuzz: the environment failed: cannot write %s/results.jsonl: %s (the "
			 "campaign stopped; a torn last case is cut by --resume)", C->dir, strerror(e));
		return -1;
	}
	account(C, blob, len, true);
	return 0;
}

/* Writes the waiting cases that are next in order. */
static int flush_in_order(Camp *C, Diag *d)
{
	for (bool more = true; more;) {
		more = false;
		for (int i = 0; i < C->npend; i++) {
			if (C->pend[i].case_no != C->next_write)
				continue;
			char *blob = C->pend[i].blob;
			C->pend[i] = C->pend[--C->npend];
			int rc = log_case(C, blob, d);
			free(blob);
			if (rc)
				return -1;
			C->next_write++;
			more = true;
			break;
		}
	}
	return 0;
}

static void pend(Camp *C, uint64_t n, char *blob)
{
	if (C->npend == C->cappend) {
		C->cappend = C->cappend ? 2 * C->cappend : 8;
		C->pend = realloc(C->pend, (size_t)C->cappend * sizeof *C->pend);
		IR_ASSERT(C->pend);
	}
	C->pend[C->npend++] = (Pending){n, blob};
}

/* The case number of member key of a log line (NUL-terminated), or -1 when it has none. */
static int64_t case_of(const char *line, const char *key)
{
	char v[32];
	if (!fz_json_get(line, key, v, sizeof v) || !*v || strspn(v, "0123456789") != strlen(v) ||
	    strlen(v) > 15)
		return -1;
	return strtoll(v, NULL, 10);
}

int fz_log_line(FzLogAt *at, const char *line, size_t n, Diag *d)
{
	size_t col;
	const char *why = NULL;
	bool done = strncmp(line, "{\"done\":", 8) == 0;
	int64_t c = fz_json_valid(line, n, &col, &why) ? case_of(line, done ? "done" : "case") : -2;
	uint64_t want = fz_shard_case(at->c, at->place);
	at->line++;
	if (c == -2)
		diag_set(d, 2, "%s:%lld:%zu: not a JSON object: %s", at->path, (long long)at->line,
			 col + 1, why);
	else if (c < 0)
		diag_set(d, 2, "%s:%lld: a %s without its case number", at->path, (long long)at->line,
			 done ? "done line" : "record");
	else if ((uint64_t)c != want)
		diag_set(d, 2, "%s:%lld: a %s of case %lld where case %llu's belongs", at->path,
			 (long long)at->line, done ? "done line" : "record", (long long)c,
			 (unsigned long long)want);
	else
		return at->place += done, done;
	return -1;
}

int fz_log_check(const char *path, const FzCampaign *c, char *text, size_t len, Diag *d)
{
	FzLogAt at = {path, c, 0, 0};
	for (char *p = text; p < text + len; p++) {
		char *nl = memchr(p, '\n', (size_t)(text + len - p));
		IR_ASSERT(nl);   /* len ends at a line's end */
		*nl = 0;
		Diag e = {0};
		int rc = fz_log_line(&at, p, (size_t)(nl - p), &e);
		*nl = '\n';
		if (rc < 0) {
			diag_set(d, 2, "%.*s; the log is damaged before its last case, so the campaign "
				 "cannot be resumed (only a torn last case is cut)",
				 (int)strcspn(e.msg, "\n"), e.msg);
			diag_clear(&e);
			return -1;
		}
		p = nl;
	}
	return 0;
}

/* Reads the log of a campaign being resumed: checks its complete cases (fz_log_check), cuts a
 * torn or incomplete last case (the lines after the last done line, a last line without
 * its newline), counts everything, and queues the reductions of incomplete failure
 * folders. */
static int scan_log(Camp *C, Diag *d)
{
	char *path = fmt("%s/results.jsonl", C->dir);
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	size_t len = 0, good = 0;
	if (f) {
		FILE *m = open_memstream(&text, &len);
		char chunk[65536];
		for (size_t k; (k = fread(chunk, 1, sizeof chunk, f)) > 0;)
			fwrite(chunk, 1, k, m);
		fclose(m);
		fclose(f);
	}
	uint64_t cases = 0;
	for (char *p = text; p && p < text + len;) {
		char *nl = memchr(p, '\n', (size_t)(text + len - p));
		if (!nl)
			break;
		if (strncmp(p, "{\"done\":", 8) == 0) {
			good = (size_t)(nl + 1 - text);
			cases++;
		}
		p = nl + 1;
	}
	int rc = 0;
	if (text && !C->log_checked && fz_log_check(path, &C->c, text, good, d))
		rc = -1;
	else if (!f && vf_write_text(path, "", d))   /* killed between the settings and the log */
		rc = -1;
	else if (good < len && truncate(path, (off_t)good)) {
		diag_set(d, 3, "fuzz: cannot cut the torn end of %s: %s", path, strerror(errno));
		rc = -1;
	}
	if (text && rc == 0)
		account(C, text, good, false);
	C->next_case = C->next_write = cases;
	for (int i = 0; rc == 0 && i < C->nent; i++) {
		Entry *e = &C->ent[i];
		if (e->known)
			continue;
		char *folder = folder_of(C->dir, e->key), *repro = fmt("%s/repro.tg", folder);
		write_count(C, e);
		if (access(repro, F_OK) != 0) {
			char *item = fmt("%s@%s", e->key, e->output);
			queue(C, T_REDUCE, (uint64_t)e->first_case, item);
			free(item);
		} else {
			e->state = E_DONE;
			FILE *rf = fopen(repro, "r");   /* its definitions, from its first line */
			if (!rf || fscanf(rf, "# assay: a minimal repro (%d", &e->defs) != 1)
				e->defs = -1;
			if (rf)
				fclose(rf);
		}
		free(folder);
		free(repro);
	}
	free(text);
	free(path);
	return rc;
}

/* ------------------------------------------------------------------ progress */

static bool may_dispatch_case(Camp *C);

/* What the campaign is doing, for the progress line. */
static const char *stage_of(Camp *C)
{
	if (interrupted || C->env)
		return "stopping";
	if (may_dispatch_case(C) || C->next_case > C->next_write)
		return "running";
	return C->nrq > 0 ? "reducing" : "finishing";
}

/* The progress line: at most 79 columns (elapsed against the limit, the stage, cases and
 * their rate, distinct failures, flaky records, errors, the time since the last new
 * failure); redrawn on a terminal, a line every 10 s otherwise. */
static void show_progress(Camp *C, bool final)
{
	if (!C->progress)
		return;
	double t = now() - C->t0;
	if (!final && t - C->last_progress < (C->tty ? 0.25 : 10))
		return;
	C->last_progress = t;
	const FzSummary *s = C->sum;
	char lim[32] = "", when[32] = "-", line[256];
	if (C->c.seconds > 0)
		snprintf(lim, sizeof lim, "/%.0fs", C->c.seconds);
	if (C->last_new_s >= 0)
		snprintf(when, sizeof when, "%.0fs ago", t - C->last_new_s);
	double rate = t > 0 ? (double)(s->cases - C->cases0) / t : 0;
	char cases[48];
	if (C->c.cases > 0)
		snprintf(cases, sizeof cases, "%lld/%llu cases", (long long)s->cases,
			 (unsigned long long)fz_shard_count(&C->c, (uint64_t)C->c.cases));
	else
		snprintf(cases, sizeof cases, "%lld cases", (long long)s->cases);
	char known[32] = "";
	if (*C->c.baseline)
		snprintf(known, sizeof known, " (+%d known)", s->known);
	snprintf(line, sizeof line, "[%4.0fs%s] %-9s %s %.1f/s | %d distinct%s %lld flaky %lld err | "
		 "new %s", t, lim, stage_of(C), cases, rate, s->distinct, known,
		 (long long)s->verdicts[V_FLAKY], (long long)s->errors, when);
	line[79] = 0;
	if (C->tty)
		fprintf(C->progress, "\r%s\033[K%s", line, final ? "\n" : "");
	else
		fprintf(C->progress, "%s\n", line);
	fflush(C->progress);
}

/* ------------------------------------------------------------------ the parent */

static bool may_dispatch_case(Camp *C)
{
	const FzCampaign *c = &C->c;
	if (C->found)
		return false;
	uint64_t n = fz_shard_case(c, C->next_case);   /* --cases C: a shard's among 0 .. C-1 */
	if (c->cases > 0 && n >= (uint64_t)c->cases)
		return false;
	if (c->seconds > 0 && now() - C->t0 >= c->seconds)
		return false;
	FzBias b;
	if (!bias_for(C, n, &b))   /* feedback: its epoch's bias is not known yet */
		return false;
	return C->next_case < C->next_write + (uint64_t)(2 * C->njobs + 2);
}

static int job_died(Camp *C, int k, Diag *d);

static int dispatch(Camp *C, Diag *d)
{
	for (int k = 0; k < C->njobs; k++) {
		if (C->jobs[k].busy)
			continue;
		Task t;
		memset(&t, 0, sizeof t);
		if (C->nrq > 0) {
			t = C->rq[0];
			memmove(C->rq, C->rq + 1, (size_t)--C->nrq * sizeof *C->rq);
			char key[ITEM_MAX];
			snprintf(key, sizeof key, "%s", t.item);
			char *at = strrchr(key, '@');
			if (at)
				*at = 0;
			Entry *e = entry_find(C, key);
			if (e)
				e->state = E_REDUCING;
		} else if (may_dispatch_case(C)) {
			t.kind = T_CASE;
			t.case_no = fz_shard_case(&C->c, C->next_case++);
		} else {
			continue;
		}
		bool known = bias_for(C, t.case_no, &t.bias);   /* a case's, or a logged case's */
		IR_ASSERT(known);
		if (!send_task(C, k, &t) && job_died(C, k, d))   /* it is answered for it */
			return -1;
	}
	return 0;
}

static void reduced(Camp *C, const char *reply)
{
	char key[ITEM_MAX], v[64];
	if (!fz_json_get(reply, "reduced", key, sizeof key))
		return;
	Entry *e = entry_find(C, key);
	if (!e)
		return;
	bool ok = fz_json_get(reply, "ok", v, sizeof v) && strcmp(v, "true") == 0;
	e->state = ok ? E_DONE : E_FAILED;
	if (fz_json_get(reply, "defs", v, sizeof v))
		e->defs = atoi(v);
	if (fz_json_get(reply, "defs_before", v, sizeof v))
		e->defs_before = atoi(v);
	if (fz_json_get(reply, "tests", v, sizeof v))
		e->tests = atoi(v);
	if (fz_json_get(reply, "seconds", v, sizeof v))
		e->reduce_s = strtod(v, NULL);
	if (e->kill && C->sum->kill_defs < 0 && (int64_t)e->first_case == C->sum->first_kill_case) {
		C->sum->kill_defs = e->defs;
		C->sum->kill_reduce_s = e->reduce_s;
	}
}

/* A job died (or was killed): its task is answered for it and the job replaced. */
static int job_died(Camp *C, int k, Diag *d)
{
	Job *j = &C->jobs[k];
	Task t = j->task;
	bool busy = j->busy, killed = j->killed;
	int st = 0;
	kill(j->pid, SIGKILL);
	while (waitpid(j->pid, &st, 0) < 0 && errno == EINTR)
		;
	close(j->to);
	close(j->from);
	j->pid = 0;
	if (busy && t.kind == T_CASE) {
		char why[128];
		if (killed)
			snprintf(why, sizeof why, "the case ran longer than %g s", C->c.case_limit_s);
		else if (WIFSIGNALED(st))
			snprintf(why, sizeof why, "the toolkit died of signal %d (%s) on this case",
				 WTERMSIG(st), strsignal(WTERMSIG(st)));
		else
			snprintf(why, sizeof why, "the toolkit exited with status %d on this case",
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		pend(C, place_of(C, t.case_no), fmt("{\"done\":%llu,\"graph\":\"fz%llu\",\"status\":\"error\","
				       "\"error\":\"%s\",\"fails\":[]}\n",
				       (unsigned long long)t.case_no, (unsigned long long)t.case_no, why));
	} else if (busy && t.kind == T_REDUCE) {
		queue(C, T_SAVE, t.case_no, t.item);   /* keep the unreduced repro at least */
	} else if (busy) {
		char key[ITEM_MAX];
		snprintf(key, sizeof key, "%s", t.item);
		char *at = strrchr(key, '@');
		if (at)
			*at = 0;
		Entry *e = entry_find(C, key);
		if (e)
			e->state = E_FAILED;
	}
	return job_start(C, k, d);
}

/* Reads what job k has sent; handles a complete reply. */
static int job_read(Camp *C, int k, Diag *d)
{
	Job *j = &C->jobs[k];
	if (j->cap - j->len < 65536) {
		j->cap = j->cap ? 2 * j->cap : 131072;
		j->buf = realloc(j->buf, j->cap);
		IR_ASSERT(j->buf);
	}
	ssize_t r = read(j->from, j->buf + j->len, j->cap - j->len - 1);
	if (r < 0 && errno == EINTR)
		return 0;
	if (r <= 0)
		return job_died(C, k, d);
	j->len += (size_t)r;
	Reply h;
	if (j->len < sizeof h)
		return 0;
	memcpy(&h, j->buf, sizeof h);
	if (j->len < sizeof h + h.len)
		return 0;
	char *text = malloc((size_t)h.len + 1);
	IR_ASSERT(text);
	memcpy(text, j->buf + sizeof h, h.len);
	text[h.len] = 0;
	j->len = 0;
	j->busy = false;
	if (h.kind == T_ENV) {   /* the campaign stops; the task's case stays unrecorded */
		if (!C->env)
			C->env = text;
		else
			free(text);
		return 0;
	}
	if (h.kind == T_CASE) {
		pend(C, place_of(C, h.case_no), text);
		return flush_in_order(C, d);
	}
	reduced(C, text);
	free(text);
	return 0;
}

static int wait_jobs(Camp *C, Diag *d)
{
	struct pollfd pf[MAXJOBS];
	for (int k = 0; k < C->njobs; k++)
		pf[k] = (struct pollfd){C->jobs[k].from, POLLIN, 0};
	int n = poll(pf, (nfds_t)C->njobs, 250);
	if (n < 0 && errno != EINTR) {
		diag_set(d, 3, "fuzz: poll: %s", strerror(errno));
		return -1;
	}
	if (n < 0)
		n = 0;   /* a signal: the loop looks at `interrupted` */
	for (int k = 0; n > 0 && k < C->njobs; k++)
		if (pf[k].revents && job_read(C, k, d))
			return -1;
	double limit = C->c.case_limit_s > 0 ? C->c.case_limit_s : 600;
	for (int k = 0; k < C->njobs; k++) {
		Job *j = &C->jobs[k];
		if (j->busy && !j->killed && now() - j->started > limit) {
			j->killed = true;
			kill(j->pid, SIGKILL);   /* its pipe closes: job_read sees the death */
		}
	}
	return flush_in_order(C, d);
}

static bool any_busy(const Camp *C)
{
	for (int k = 0; k < C->njobs; k++)
		if (C->jobs[k].busy)
			return true;
	return false;
}

/* Stops every job now: the cases in flight are lost (a resume runs them again), every
 * case already written stays. */
static void kill_jobs(Camp *C)
{
	for (int k = 0; k < C->njobs; k++)
		if (C->jobs[k].pid > 0) {
			kill(C->jobs[k].pid, SIGKILL);
			job_stop(&C->jobs[k]);
		}
}

static int loop(Camp *C, Diag *d)
{
	uint64_t trimmed = C->next_write;
	for (;;) {
		if (C->env) {
			kill_jobs(C);
			char *m = C->env;
			size_t len = strlen(m);
			while (len && m[len - 1] == '\n')
				m[--len] = 0;
			diag_env(d, "%s\nfuzz: the campaign stopped: %llu cases are in %s/results.jsonl; "
				 "continue it with --resume %s once the cause is gone", m,
				 (unsigned long long)C->next_write, C->dir, C->dir);
			return -1;
		}
		if (interrupted) {
			kill_jobs(C);
			C->sum->interrupted = interrupted;
			return 0;
		}
		if (dispatch(C, d))
			return -1;
		if (!any_busy(C) && C->nrq == 0)
			return 0;
		if (wait_jobs(C, d))
			return -1;
		if (C->next_write >= trimmed + CACHE_EVERY) {
			trim_cache(C->cache, CACHE_HIGH, CACHE_LOW);
			trimmed = C->next_write;
		}
		show_progress(C, false);
	}
}

/* ------------------------------------------------------------------ start and end */

static int summary_write(Camp *C, Diag *d)
{
	const FzSummary *s = C->sum;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	IR_ASSERT(f);
	fprintf(f, "{\"cases\":%lld,\"records\":%lld,\"errors\":%lld,\"distinct\":%d,\"kills\":%d,"
		"\"known\":%d,\"interrupted\":%s,\"elapsed_s\":%.3f,\"first_fail_s\":%.3f,\"first_kill_s\":%.3f,"
		"\"first_kill_case\":%lld,\"kill_defs\":%d,\"kill_reduce_s\":%.3f,\"verdicts\":{",
		(long long)s->cases, (long long)s->records, (long long)s->errors, s->distinct,
		s->kills, s->known, s->interrupted ? "true" : "false", s->elapsed_s, s->first_fail_s, s->first_kill_s,
		(long long)s->first_kill_case, s->kill_defs, s->kill_reduce_s);
	for (int v = 0; v < V__COUNT; v++)
		fprintf(f, "%s\"%s\":%lld", v ? "," : "", vf_verdict_name((Verdict)v),
			(long long)s->verdicts[v]);
	fputs("},\"failures\":[", f);
	for (int i = 0; i < C->nent; i++) {
		const Entry *e = &C->ent[i];
		fprintf(f, "%s{\"key\":\"%s\",\"output\":\"%s\",\"count\":%lld,\"first_case\":%lld,"
			"\"kill\":%s,\"defs\":%d,\"reduce_s\":%.3f,\"state\":\"%s\",\"known\":%s}",
			i ? "," : "", e->key, e->output, (long long)e->count, (long long)e->first_case,
			e->kill ? "true" : "false", e->defs, e->reduce_s,
			e->known ? "known" : e->state == E_DONE ? "done" :
			e->state == E_FAILED ? "failed" : "pending", e->known ? "true" : "false");
	}
	int reach = 0, reached = 0;
	for (int p = 0; p < COV__COUNT; p++) {
		reach += C->cov.reachable[p];
		reached += C->cov.reachable[p] && C->cov.hits[p] > 0;
	}
	fprintf(f, "],\"coverage\":{\"points\":%d,\"reachable\":%d,\"reached\":%d,"
		"\"feedback_epoch\":%d}}\n", COV__COUNT, reach, reached, C->c.feedback_epoch);
	fclose(f);
	char *path = fmt("%s/summary.json", C->dir);
	int rc = fz_write_atomic(path, buf, d);
	free(path);
	free(buf);
	return rc;
}

static void list_failures(Camp *C)
{
	if (!C->progress)
		return;
	int reach = 0, reached = 0;
	for (int p = 0; p < COV__COUNT; p++) {
		reach += C->cov.reachable[p];
		reached += C->cov.reachable[p] && C->cov.hits[p] > 0;
	}
	fprintf(C->progress, "compiler coverage: %d of %d reachable points reached (%s; `assay "
		"report` lists the others)\n", reached, reach, C->c.feedback_epoch > 0 ?
		"coverage feedback on" : "no coverage feedback");
	if (C->nbs > 0) {
		fprintf(C->progress, "failing records per backend:");
		for (int i = 0; i < C->nbs; i++)
			fprintf(C->progress, " %s %lld/%lld%s", C->bs[i].name, (long long)C->bs[i].fails,
				(long long)C->bs[i].runs, i + 1 < C->nbs ? "," : "\n");
	}
	if (C->sum->distinct > 0)
		fprintf(C->progress, "distinct failures (%d):\n", C->sum->distinct);
	for (int i = 0; i < C->nent; i++) {
		const Entry *e = &C->ent[i];
		if (e->known)
			continue;
		char *folder = folder_of(C->dir, e->key);
		fprintf(C->progress, "  %-48s %6lld case%s, first %lld; repro %s%d definition%s: %s\n",
			e->key, (long long)e->count, e->count == 1 ? "" : "s",
			(long long)e->first_case, e->state == E_DONE ? "" : "(unfinished) ", e->defs,
			e->defs == 1 ? "" : "s", folder);
		free(folder);
	}
	if (C->sum->known == 0)
		return;
	fprintf(C->progress, "known failures (%d, in the baseline %s; not distinct, not reduced):\n",
		C->sum->known, C->c.baseline_from);
	for (int i = 0; i < C->nent; i++)
		if (C->ent[i].known)
			fprintf(C->progress, "  %-48s %6lld case%s, first %lld\n", C->ent[i].key,
				(long long)C->ent[i].count, C->ent[i].count == 1 ? "" : "s",
				(long long)C->ent[i].first_case);
}

/* A fresh campaign directory (with its provenance.json): refuses settings that are not
 * valid before anything is written (a directory is a campaign only once its settings are
 * valid), and a directory that already holds a campaign. */
static int fresh_dir(Camp *C, Diag *d)
{
	char *settings = fmt("%s/settings.json", C->dir), *log = fmt("%s/results.jsonl", C->dir);
	int rc = -1;
	Diag sd = {0};
	if (fz_settings_check(&C->c, &sd)) {
		diag_set(d, 2, "the settings of the campaign %s are not valid: %.*s", C->dir,
			 (int)strcspn(sd.msg, "\n"), sd.msg);
		diag_clear(&sd);
		goto out;
	}
	if (access(settings, F_OK) == 0 || access(log, F_OK) == 0) {
		diag_set(d, 2, "%s already holds a campaign (continue it with --resume %s)", C->dir,
			 C->dir);
		goto out;
	}
	FzRun r;
	if (vf_mkdirs(C->dir, d) || fz_settings_write(C->dir, &C->c, d) ||
	    vf_write_text(log, "", d) || fz_run_backends(&r, C->c.backends, d) ||
	    vf_provenance_write(C->dir, "fuzz", C->c.argc, C->c.argv, r.backends, r.nbackends,
				C->c.seed, d))
		goto out;
	rc = 0;
out:
	free(settings);
	free(log);
	return rc;
}

/* The settings of the campaign being resumed (read strictly: fz_settings_read); c's stop
 * rule (cases or seconds, until_failure) and jobs win when given. */
static int resume_settings(Camp *C, const FzCampaign *c, Diag *d)
{
	if (fz_settings_read(C->dir, &C->c, d))
		return -1;
	if (c->cases > 0 || c->seconds > 0) {
		C->c.cases = c->cases;
		C->c.seconds = c->seconds;
	}
	if (c->jobs > 0)
		C->c.jobs = c->jobs;
	C->c.until_failure = c->until_failure;
	return 0;
}

static void camp_free(Camp *C)
{
	for (int k = 0; k < C->njobs; k++) {
		job_stop(&C->jobs[k]);
		fz_empty_dir(C->jobs[k].cache);   /* the jobs' compiler caches go with them */
		rmdir(C->jobs[k].cache);
	}
	char *tmp = fmt("%s/tmp", C->dir);
	rmdir(tmp);
	free(tmp);
	for (int i = 0; i < C->npend; i++)
		free(C->pend[i].blob);
	free(C->pend);
	free(C->ent);
	free(C->rq);
	free(C->ep);
	free(C->cache);
	free(C->env);
	if (C->logfd >= 0)
		close(C->logfd);
}

/* C for a campaign in dir, its summary sum zeroed (no time measured yet: -1). */
static void camp_init(Camp *C, const char *dir, FzSummary *sum)
{
	memset(C, 0, sizeof *C);
	memset(sum, 0, sizeof *sum);
	sum->first_fail_s = sum->first_kill_s = -1;
	sum->first_kill_case = -1;
	sum->kill_defs = -1;
	C->dir = dir;
	C->sum = sum;
	C->logfd = -1;
	C->last_new_s = -1;
}

int fz_campaign_summarize(const char *dir, bool checked, double elapsed_s, FzSummary *sum,
			  Diag *d)
{
	Camp C;
	camp_init(&C, dir, sum);
	C.log_checked = checked;
	int rc = -1;
	if (fz_settings_read(dir, &C.c, d))
		goto out;
	fz_cov_init(&C.cov, &C.c);
	for (int e = 0; C.c.feedback_epoch > 0 && e < 2; e++) {   /* as fz_campaign_run */
		add_bias(&C, e);
		memset(C.ep[e].want, 0, sizeof C.ep[e].want);
	}
	if (scan_log(&C, d))
		goto out;
	for (int i = 0; i < C.nent; i++)   /* the first kill of the whole log, as a run counts it */
		if (C.ent[i].kill && (sum->first_kill_case < 0 || C.ent[i].first_case < sum->first_kill_case)) {
			sum->first_kill_case = C.ent[i].first_case;
			sum->kill_defs = C.ent[i].defs;
		}
	sum->elapsed_s = elapsed_s;
	rc = summary_write(&C, d);
out:
	camp_free(&C);
	return rc;
}

int fz_campaign_run(const char *dir, const FzCampaign *c, bool resume, FILE *progress,
		    FzSummary *sum, Diag *d)
{
	Camp C;
	camp_init(&C, dir, sum);
	C.c = *c;
	C.progress = progress;
	C.tty = progress && isatty(fileno(progress));
	C.t0 = now();
	C.cache = fmt("%s/cache", dir);
	/* a job that dies closes its pipe: writing to it must be an error, not our death */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old, on = {.sa_handler = on_signal},
			 old_int, old_term;
	sigaction(SIGPIPE, &ign, &old);
	sigemptyset(&on.sa_mask);   /* one handler at a time: a SIGINT inside a SIGTERM's waits */
	sigaddset(&on.sa_mask, SIGINT);
	sigaddset(&on.sa_mask, SIGTERM);
	interrupted = 0;
	sigaction(SIGINT, &on, &old_int);
	sigaction(SIGTERM, &on, &old_term);
	FzRun probe;
	int rc = -1;
	if (resume ? resume_settings(&C, c, d) : fresh_dir(&C, d))
		goto out;
	if (fz_case_setup(&C.c, 0, NULL, &probe, d))
		goto out;
	for (int k = 0; k < probe.nbackends; k++)   /* an --external kernel's capabilities */
		if (vf_ext_caps_of(probe.backends[k]))
			fz_gen_restrict(&C.c.gen, vf_ext_caps_of(probe.backends[k]));
	fz_cov_init(&C.cov, &C.c);
	for (int e = 0; C.c.feedback_epoch > 0 && e < 2; e++) {   /* epochs 0 and 1: no bias */
		add_bias(&C, e);
		memset(C.ep[e].want, 0, sizeof C.ep[e].want);
	}
	if (resume && scan_log(&C, d))
		goto out;
	C.cases0 = sum->cases;
	char *log = fmt("%s/results.jsonl", dir);
	C.logfd = open(log, O_WRONLY | O_APPEND);
	free(log);
	if (C.logfd < 0) {
		diag_set(d, 2, "cannot open %s/results.jsonl: %s", dir, strerror(errno));
		goto out;
	}
	if (vf_mkdirs(C.cache, d))
		goto out;
	C.njobs = C.c.jobs < 1 ? 1 : C.c.jobs > MAXJOBS ? MAXJOBS : C.c.jobs;
	for (int k = 0; k < C.njobs; k++)
		if (job_start(&C, k, d))
			goto out;
	rc = loop(&C, d);
out:
	sum->elapsed_s = now() - C.t0;
	if (C.logfd >= 0) {
		show_progress(&C, true);
		list_failures(&C);
		Diag sd = {0};
		if (summary_write(&C, rc ? &sd : d) && rc == 0)
			rc = -1;
		diag_clear(&sd);
	}
	camp_free(&C);
	sigaction(SIGPIPE, &old, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}
