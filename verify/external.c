/* verify/external.c: kernels that other compilers made, judged like assay's own (spec/cli.md
 * v2 "Verifying kernels from outside"; docs/external.md is the protocol's full text).
 *
 * An external kernel is a Backend (vf_external) whose runs do not lower anything: the
 * worker process (worker.c, with its process group, limits, confirmation of crashes and
 * timeouts, and environment probe) calls vf_ext_serve instead of the compiler. It makes a
 * fresh directory D under $TMPDIR holding graph.tg (the graph with the claimed schedule as
 * its schedule block), request.json (every input and output with its file, dtype and
 * shape, the seed, the claim, and the graph as a JSON tree a client can evaluate without
 * parsing .tg) and the inputs as D/in/NAME.npy; runs CMD through /bin/sh in D with
 * ASSAY_REQUEST=D/request.json, stdin from /dev/null, stdout and stderr into D; and reads
 * D/out/NAME.npy back. Outcomes, as a backend's kernel would have them:
 * - CMD killed by a signal or exiting non-zero: crash, with the tail of its stderr (and,
 *   like a backend's crash, confirmed by a re-run in a fresh worker);
 * - CMD outliving its limit (the compile limit plus the run limit: it compiles and runs):
 *   timeout, its whole process group killed with the worker's;
 * - exit 0 with D/unsupported.txt: unsupported, the file's first line the reason;
 * - exit 0 and an output missing, unreadable as .npy, or not of the output's dtype and
 *   shape: bad-output, naming the file and what is wrong;
 * - otherwise the outputs are judged against the oracle with the budget of the claim.
 * D is removed after the run (kept, and named in the reason, with ASSAY_EXT_KEEP=1: for
 * debugging a client). The external's facts (what the budget may assume of it) are
 * IEEE special values (NaN, infinities and signed zeros kept: what the protocol asks), no
 * flushed subnormals, IEEE max/min, contraction allowed, nothing promised bit for bit (so
 * no emulation check); its functions are held to the OpenCL C full-profile accuracy table
 * (allowances.def's "opencl" rows: vf_ext_rows).
 *
 * Relative words of CMD: CMD runs in D, so a word such as clients/numpy_client.py would
 * name nothing there; vf_external makes every word of CMD that contains a '/', does not
 * start with one and names an existing file from the directory assay was started in
 * absolute (docs/external.md), so a command means in D what it means in the user's shell.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "verify.h"
#include "ext.h"

enum { MAXEXT = 4, TAIL = 240 };   /* TAIL: the bytes of stderr a reason quotes */

typedef struct {
	Backend b;
	bool has_caps;
	VfCaps caps;
	char name[64];
	char *cmd;            /* as given */
	char *run;            /* with its relative file words made absolute */
} Ext;

static Ext exts[MAXEXT];
static int nexts;

static int ext_available(char *why, size_t n)
{
	(void)why;
	(void)n;
	return 0;
}

static char *ext_device(void)
{
	char *s = NULL;
	if (asprintf(&s, "external command%s%s", nexts ? ": " : "", nexts ? exts[0].cmd : "") < 0)
		return NULL;
	return s;
}

/* What the protocol asks of every external kernel (docs/external.md "What is claimed"). */
static const BeFacts ext_facts = {
	.flush = 0, .specials = true, .minmax = BE_MINMAX_IEEE, .no_contract = false,
};

static bool is_shell_plain(const char *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strchr("\"'`$\\;&|<>(){}*?[]~#=", w[i]))
			return false;
	return true;
}

/* cmd with each plain word holding a '/' but not starting with one, that names an existing
 * file from the current directory, made absolute. */
static char *absolute_words(const char *cmd)
{
	size_t cap = strlen(cmd) * 2 + 4096, len = 0;
	char *out = malloc(cap);
	IR_ASSERT(out);
	for (const char *p = cmd; *p;) {
		size_t sp = strspn(p, " \t");
		memcpy(out + len, p, sp);
		len += sp;
		p += sp;
		size_t w = strcspn(p, " \t");
		char word[4096], abs[4096];
		struct stat st;
		bool done = false;
		if (w && w < sizeof word && p[0] != '/' && memchr(p, '/', w) && is_shell_plain(p, w)) {
			memcpy(word, p, w);
			word[w] = 0;
			if (stat(word, &st) == 0 && realpath(word, abs) && len + strlen(abs) + 1 < cap) {
				memcpy(out + len, abs, strlen(abs));
				len += strlen(abs);
				done = true;
			}
		}
		if (!done) {
			if (len + w + 1 >= cap) {
				cap = (len + w) * 2 + 16;
				out = realloc(out, cap);
				IR_ASSERT(out);
			}
			memcpy(out + len, p, w);
			len += w;
		}
		p += w;
	}
	out[len] = 0;
	return out;
}

const Backend *vf_external(const char *name, const char *cmd, Diag *d)
{
	if (!cmd || !*cmd) {
		diag_set(d, 2, "--external expects a command");
		return NULL;
	}
	const char *nm = name && *name ? name : "external";
	size_t nl = strlen(nm);
	if (nl >= sizeof exts[0].name || strspn(nm, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != nl) {
		diag_set(d, 2, "--name '%s': a backend name is letters, digits, '_', '-' and '.', at "
			 "most %zu of them", nm, sizeof exts[0].name - 1);
		return NULL;
	}
	if (be_find(nm)) {
		diag_set(d, 2, "--name '%s': that is one of assay's own backends; name the external "
			 "kernel otherwise", nm);
		return NULL;
	}
	for (int i = 0; i < nexts; i++)
		if (strcmp(exts[i].name, nm) == 0) {
			diag_set(d, 2, "--name '%s' is given twice", nm);
			return NULL;
		}
	if (nexts == MAXEXT) {
		diag_set(d, 2, "at most %d external kernels at once", MAXEXT);
		return NULL;
	}
	Ext *e = &exts[nexts++];
	snprintf(e->name, sizeof e->name, "%s", nm);
	e->cmd = strdup(cmd);
	e->run = absolute_words(cmd);
	IR_ASSERT(e->cmd);
	e->b = (Backend){.name = e->name, .facts = ext_facts, .available = ext_available,
			 .device = ext_device};
	return &e->b;
}

static const Ext *ext_of(const Backend *b)
{
	for (int i = 0; i < nexts; i++)
		if (b == &exts[i].b)
			return &exts[i];
	return NULL;
}

bool vf_is_external(const Backend *b)
{
	return ext_of(b) != NULL;
}

const Backend *vf_external_find(const char *name)
{
	for (int i = 0; i < nexts; i++)
		if (strcmp(exts[i].name, name) == 0)
			return &exts[i].b;
	return NULL;
}

void vf_ext_set_caps(const Backend *b, const VfCaps *c)
{
	Ext *e = (Ext *)ext_of(b);
	if (e) {
		e->caps = *c;
		e->has_caps = true;
	}
}

const VfCaps *vf_ext_caps_of(const Backend *b)
{
	const Ext *e = ext_of(b);
	return e && e->has_caps ? &e->caps : NULL;
}

bool vf_ext_lacks(const Backend *b, const Graph *g, const Schedule *s, char *why, size_t n)
{
	const Ext *e = ext_of(b);
	char what[200];
	if (!e || !e->has_caps || vf_caps_cover(&e->caps, g, s, what, sizeof what))
		return false;
	snprintf(why, n, "the external command declares no %s (its --assay-capabilities)", what);
	return true;
}

const char *vf_ext_rows(const Backend *b)
{
	return ext_of(b) ? "opencl" : b->name;
}

const char *vf_ext_command(const Backend *b)
{
	const Ext *e = ext_of(b);
	return e ? e->cmd : NULL;
}

void vf_ext_claim(const Graph *g, Schedule *s, bool keep)
{
	for (int d = 0; d < g->ndefs && d < s->ndefs; d++) {
		Monoid m = g->defs[d].monoid;
		if (m != MO_SUM && m != MO_PROD && m != MO_LOGSUMEXP)
			continue;
		bool stated = false;
		for (int k = 0; keep && k < g->ndirs; k++)
			stated |= g->dirs[k].kind == SD_ORDER && g->dirs[k].def == d;
		if (!stated)
			s->defs[d].order = ORDER_ANY;
	}
}

/* ------------------------------------------------------------ request.json */

static const char *ty_name(int ty)
{
	return ty == TY_BOOL ? "bool" : ty == TY_INT ? "int" : "real";
}

static void op_name(FILE *f, Op op)
{
	fputc('"', f);
	for (const char *p = op_info(op)->name; *p; p++)
		fputc(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p, f);
	fputc('"', f);
}

static void expr(FILE *f, const Graph *g, const Def *D, Ref r)
{
	const Node *n = &g->nodes[r];
	fprintf(f, "{\"type\":\"%s\",", ty_name(n->ty));
	switch (n->kind) {
	case NK_NUM:
		fputs("\"k\":\"num\",\"text\":", f);
		vf_json_str(f, g->lits[n->u.lit].text);
		fputs(",\"value\":", f);
		vf_json_num(f, g->lits[n->u.lit].approx);
		break;
	case NK_INT:
		fprintf(f, "\"k\":\"int\",\"value\":%lld", (long long)n->u.ival);
		break;
	case NK_VAR: {
		int v = (int)n->u.var;
		const char *name = v < D->nlhs ? D->lhs[v].name : D->red[v - D->nlhs].name;
		fprintf(f, "\"k\":\"var\",\"var\":%d,\"name\":", v);
		vf_json_str(f, name);
		break;
	}
	case NK_SIZE:
		fputs("\"k\":\"size\",\"name\":", f);
		vf_json_str(f, g->sizes[n->u.size].name);
		fprintf(f, ",\"value\":%lld", (long long)g->sizes[n->u.size].value);
		break;
	case NK_READ:
		fputs("\"k\":\"read\",\"tensor\":", f);
		vf_json_str(f, g->tensors[n->u.read.tensor].name);
		fputs(",\"index\":[", f);
		for (uint32_t i = 0; i < n->u.read.n; i++) {
			fputs(i ? "," : "", f);
			expr(f, g, D, g->refs[n->u.read.first + i]);
		}
		fputc(']', f);
		if (n->u.read.pad != REF_NONE) {
			fputs(",\"pad\":", f);
			expr(f, g, D, n->u.read.pad);
		}
		break;
	case NK_OP:
		fputs("\"k\":\"op\",\"op\":", f);
		op_name(f, (Op)n->op);
		fputs(",\"args\":[", f);
		for (int i = 0; i < op_info((Op)n->op)->arity; i++) {
			fputs(i ? "," : "", f);
			expr(f, g, D, n->a[i]);
		}
		fputc(']', f);
		break;
	}
	fputc('}', f);
}

static void shape(FILE *f, const Graph *g, int t)
{
	const Tensor *T = &g->tensors[t];
	fputc('[', f);
	for (int i = 0; i < T->rank; i++)
		fprintf(f, "%s%lld", i ? "," : "", (long long)T->dims[i].value);
	fputc(']', f);
}

static const char *npy_descr(Dtype t)
{
	switch (t) {
	case DT_F64: return "<f8";
	case DT_F32: return "<f4";
	case DT_F16: return "<f2";
	case DT_BF16: return "<u2";
	case DT_I32: return "<i4";
	default: return "?";
	}
}

static void io_entry(FILE *f, const Graph *g, int t, Dtype dt, const char *dir)
{
	const char *name = g->tensors[t].name;
	fputs("{\"name\":", f);
	vf_json_str(f, name);
	fprintf(f, ",\"file\":\"%s/%s.npy\",\"dtype\":\"%s\",\"npy\":\"%s\",\"shape\":", dir, name,
		dt_name(dt), npy_descr(dt));
	shape(f, g, t);
	fputc('}', f);
}

static void request(FILE *f, const Graph *g, const Schedule *s, const char *claim,
		    uint64_t seed, const char *backend)
{
	char gname[256];
	fprintf(f, "{\"protocol\":1,\"assay\":\"%s\",\"backend\":", vf_version());
	vf_json_str(f, backend);
	fputs(",\"graph\":", f);
	vf_json_str(f, vf_graph_name(g, gname, sizeof gname));
	fprintf(f, ",\"graph_file\":\"graph.tg\",\"seed\":%llu,\"claim\":", (unsigned long long)seed);
	vf_json_str(f, claim);
	fputs(",\"unsupported_file\":\"unsupported.txt\",\n\"sizes\":{", f);
	for (int i = 0; i < g->nsizes; i++) {
		fputs(i ? "," : "", f);
		vf_json_str(f, g->sizes[i].name);
		fprintf(f, ":%lld", (long long)g->sizes[i].value);
	}
	fputs("},\n\"inputs\":[", f);
	for (int i = 0; i < ir_ninputs(g); i++) {
		int t = ir_input_tensor(g, i);
		fputs(i ? ",\n" : "\n", f);
		io_entry(f, g, t, (Dtype)g->tensors[t].dtype, "in");
	}
	fputs("],\n\"outputs\":[", f);
	for (int k = 0; k < g->noutputs; k++) {
		fputs(k ? ",\n" : "\n", f);
		io_entry(f, g, g->outputs[k].tensor, g->outputs[k].dtype, "out");
	}
	fputs("],\n\"tensors\":[", f);
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *T = &g->tensors[t];
		fputs(t ? ",\n" : "\n", f);
		fputs("{\"name\":", f);
		vf_json_str(f, T->name);
		bool in = T->kind == TK_INPUT;
		const Def *D = in ? NULL : &g->defs[T->def];
		bool intv = in ? T->dtype == DT_I32 : (T->result == 1 || D->ty == TY_INT);
		fprintf(f, ",\"kind\":\"%s\",\"type\":\"%s\",\"dtype\":\"%s\",\"def\":%d,\"result\":%d,"
			"\"shape\":", in ? "input" : "def", intv ? "int" : "real",
			in ? dt_name((Dtype)T->dtype) : intv ? "i32" : dt_name(s->defs[T->def].store),
			T->def, T->result);
		shape(f, g, t);
		fputc('}', f);
	}
	fputs("],\n\"defs\":[", f);
	for (int d = 0; d < g->ndefs; d++) {
		const Def *D = &g->defs[d];
		const DefSched *x = &s->defs[d];
		fputs(d ? ",\n" : "\n", f);
		fputs("{\"results\":[", f);
		for (int o = 0; o < D->nout; o++) {
			fputs(o ? "," : "", f);
			vf_json_str(f, g->tensors[D->out[o]].name);
		}
		fputs("],\"lhs\":[", f);
		for (int i = 0; i < D->nlhs; i++) {
			fputs(i ? "," : "", f);
			fputs("{\"name\":", f);
			vf_json_str(f, D->lhs[i].name);
			fprintf(f, ",\"extent\":%lld}", (long long)D->lhs[i].ext.value);
		}
		fprintf(f, "],\"monoid\":\"%s\",\"red\":[", D->monoid == MO_NONE ? "none" :
			monoid_name(D->monoid));
		for (int r = 0; r < D->nred; r++) {
			fputs(r ? "," : "", f);
			fputs("{\"name\":", f);
			vf_json_str(f, D->red[r].name);
			fputs(",\"lo\":", f);
			expr(f, g, D, D->red[r].lo);
			fputs(",\"hi\":", f);
			expr(f, g, D, D->red[r].hi);
			fputc('}', f);
		}
		fprintf(f, "],\"type\":\"%s\",\"op\":\"%s\",\"accum\":\"%s\",\"store\":\"%s\","
			"\"order\":\"%s\",\"inline\":%s,\"split\":[", ty_name(D->ty), dt_name(x->op),
			dt_name(x->accum), dt_name(x->store), order_name(x->order),
			x->inlined ? "true" : "false");
		for (int r = 0; r < D->nred; r++)
			fprintf(f, "%s%lld", r ? "," : "", (long long)x->split[r]);
		fputs("],\"body\":", f);
		expr(f, g, D, D->body);
		fputc('}', f);
	}
	fputs("]}\n", f);
}

/* ------------------------------------------------------------ the run */

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f) ? -1 : 0;
}

/* The last TAIL bytes of path, whitespace trimmed, into buf. */
static void tail_of(const char *path, char *buf, size_t n)
{
	buf[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	long from = size > TAIL ? size - TAIL : 0;
	fseek(f, from, SEEK_SET);
	size_t got = fread(buf, 1, n - 1, f);
	buf[got] = 0;
	fclose(f);
	while (got && strchr(" \t\r\n", buf[got - 1]))
		buf[--got] = 0;
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = '|';
}

static void rm_tree(const char *dir)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", "--", dir, (char *)NULL);
		_exit(127);
	}
	int st;
	if (pid > 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
}

/* Runs CMD in D; 0 with *status (waitpid's), or -1 when it could not be started. */
static int run_cmd(const Ext *e, const char *dir, int *status)
{
	char req[4200], out[4200], err[4200];
	snprintf(req, sizeof req, "%s/request.json", dir);
	snprintf(out, sizeof out, "%s/stdout.txt", dir);
	snprintf(err, sizeof err, "%s/stderr.txt", dir);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* in the worker's process group: a timeout kills it with the worker */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		int in = open("/dev/null", O_RDONLY), o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644),
		    er = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (in < 0 || o < 0 || er < 0 || chdir(dir) || dup2(in, 0) < 0 || dup2(o, 1) < 0 ||
		    dup2(er, 2) < 0)
			_exit(126);
		setenv("ASSAY_REQUEST", req, 1);
		setenv("ASSAY_DIR", dir, 1);
		execl("/bin/sh", "sh", "-c", e->run, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

static bool same_shape(const Graph *g, int t, const HostTensor *h)
{
	const Tensor *T = &g->tensors[t];
	if (h->rank != T->rank)
		return false;
	for (int i = 0; i < T->rank; i++)
		if (h->dims[i] != T->dims[i].value)
			return false;
	return true;
}

static void shape_text(const int64_t *dims, int rank, char *buf, size_t n)
{
	size_t len = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < rank && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? ", " : "", (long long)dims[i]);
	if (len < n)
		snprintf(buf + len, n - len, "]");
}

/* Reads output k from D/out into outs[k]; WK_OK, or WK_BAD_OUTPUT with msg. */
static WorkerStatus read_output(const Graph *g, int k, const char *dir, HostTensor *out,
				char *msg, size_t n)
{
	const Output *O = &g->outputs[k];
	const char *name = g->tensors[O->tensor].name;
	char path[4400];
	snprintf(path, sizeof path, "%s/out/%s.npy", dir, name);
	struct stat st;
	if (stat(path, &st)) {
		snprintf(msg, n, "the command exited 0 without writing output %s (out/%s.npy)", name,
			 name);
		return WK_BAD_OUTPUT;
	}
	Diag d = {0};
	if (npy_read(path, O->dtype, out, &d)) {
		const char *m = d.msg ? d.msg : "";
		const char *rel = strstr(m, "/out/");
		snprintf(msg, n, "output %s: not a .npy file assay reads: %.*s", name,
			 (int)strcspn(rel ? rel + 1 : m, "\n"), rel ? rel + 1 : m);
		diag_clear(&d);
		return WK_BAD_OUTPUT;
	}
	const Tensor *T = &g->tensors[O->tensor];
	int64_t dims[IR_MAXRANK];
	for (int i = 0; i < T->rank; i++)
		dims[i] = T->dims[i].value;
	if (out->dtype != O->dtype || !same_shape(g, O->tensor, out)) {
		char want[200], got[200];
		shape_text(dims, T->rank, want, sizeof want);
		shape_text(out->dims, out->rank, got, sizeof got);
		snprintf(msg, n, "output %s: the command wrote %s%s (%s) where %s%s (%s) is asked", name,
			 dt_name(out->dtype), got, npy_descr(out->dtype), dt_name(O->dtype), want,
			 npy_descr(O->dtype));
		ht_free(out);
		return WK_BAD_OUTPUT;
	}
	return WK_OK;
}

WorkerStatus vf_ext_serve(const Backend *b, const Graph *g, const Schedule *s,
			  const HostTensor *in, uint64_t seed, HostTensor *outs, char **source,
			  char *msg, size_t n)
{
	const Ext *e = ext_of(b);
	IR_ASSERT(e);
	const char *tmp = getenv("TMPDIR");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/assay-ext-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		snprintf(msg, n, "cannot make the request directory %s: %s (the environment)", dir,
			 strerror(errno));
		return WK_CRASH;   /* the worker's environment probe tells it apart */
	}
	WorkerStatus ws = WK_CRASH;
	char path[4400];
	/* graph.tg: the graph with the claim as its schedule block */
	Graph copy = *g;
	copy.ndirs = 0;
	copy.has_schedule = false;
	char *text = ir_print(&copy), *claim = sched_text(g, s);
	char *src = NULL;
	if (asprintf(&src, "%s\nschedule\n%s", text, claim) < 0)
		src = NULL;
	IR_ASSERT(src);
	snprintf(path, sizeof path, "%s/graph.tg", dir);
	int bad = write_file(path, src);
	snprintf(path, sizeof path, "%s/in", dir);
	bad |= mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/out", dir);
	bad |= mkdir(path, 0755);
	Diag d = {0};
	for (int i = 0; !bad && i < ir_ninputs(g); i++) {
		snprintf(path, sizeof path, "%s/in/%s.npy", dir, g->tensors[ir_input_tensor(g, i)].name);
		bad |= npy_write(path, &in[i], &d);
	}
	diag_clear(&d);
	char *req = NULL;
	size_t reqlen = 0;
	FILE *rf = open_memstream(&req, &reqlen);
	IR_ASSERT(rf);
	request(rf, g, s, claim, seed, b->name);
	fclose(rf);
	snprintf(path, sizeof path, "%s/request.json", dir);
	bad |= write_file(path, req);
	/* the "source" a record keeps: the request itself, then the command */
	if (asprintf(source, "# assay --external: %s\n%s", e->cmd, req) < 0)
		*source = NULL;
	free(req);
	if (bad) {
		snprintf(msg, n, "cannot write the request into %s: %s (the environment)", dir,
			 strerror(errno));
		goto out;
	}
	int status = 0;
	if (run_cmd(e, dir, &status)) {
		snprintf(msg, n, "cannot start /bin/sh for the command: %s", strerror(errno));
		goto out;
	}
	char tail[TAIL + 1];
	snprintf(path, sizeof path, "%s/stderr.txt", dir);
	tail_of(path, tail, sizeof tail);
	if (WIFSIGNALED(status)) {
		snprintf(msg, n, "the command was killed by %s; its stderr ends: %s",
			 strsignal(WTERMSIG(status)), *tail ? tail : "(empty)");
		goto out;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(msg, n, "the command exited with status %d; its stderr ends: %s",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1, *tail ? tail : "(empty)");
		goto out;
	}
	snprintf(path, sizeof path, "%s/unsupported.txt", dir);
	struct stat st;
	if (stat(path, &st) == 0) {
		char why[TAIL + 1];
		tail_of(path, why, sizeof why);
		snprintf(msg, n, "the command declined: %s", *why ? why : "(no reason given)");
		ws = WK_UNSUPPORTED;
		goto out;
	}
	ws = WK_OK;
	for (int k = 0; k < g->noutputs && ws == WK_OK; k++)
		if ((ws = read_output(g, k, dir, &outs[k], msg, n)) != WK_OK)
			for (int j = 0; j < k; j++)
				ht_free(&outs[j]);
	if (ws == WK_BAD_OUTPUT && *tail) {
		size_t len = strlen(msg);
		snprintf(msg + len, n - len, "; its stderr ends: %s", tail);
	}
out:
	if (getenv("ASSAY_EXT_KEEP") && *getenv("ASSAY_EXT_KEEP")) {   /* debugging a client */
		size_t len = strlen(msg);
		snprintf(msg + len, n - len, "%s(kept: %s)", len ? " " : "", dir);
	} else {
		rm_tree(dir);
	}
	free(text);
	free(claim);
	free(src);
	return ws;
}

/* ------------------------------------------------------------ capabilities */

/* The strings of the JSON array that is the value of top-level member key of obj, each
 * passed to fn; -1 when the member is missing or not an array of strings. A small reader:
 * the capability object is flat (docs/external.md). */
static int caps_array(const char *obj, const char *key, void (*fn)(VfCaps *, const char *,
		      size_t, char *, size_t), VfCaps *c, char *bad, size_t nbad)
{
	char pat[80];
	snprintf(pat, sizeof pat, "\"%s\"", key);
	const char *p = strstr(obj, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	p += strspn(p, " \t\r\n");
	if (*p++ != ':')
		return -1;
	p += strspn(p, " \t\r\n");
	if (*p++ != '[')
		return -1;
	for (;;) {
		p += strspn(p, " \t\r\n,");
		if (*p == ']')
			return 0;
		if (*p != '"')
			return -1;
		const char *e = strchr(p + 1, '"');
		if (!e)
			return -1;
		fn(c, p + 1, (size_t)(e - p - 1), bad, nbad);
		p = e + 1;
	}
}

static void unknown(char *bad, size_t n, const char *what, const char *s, size_t len)
{
	if (!bad[0])
		snprintf(bad, n, "unknown %s '%.*s'", what, (int)len, s);
}

static int op_by_name(const char *s, size_t len)
{
	for (int op = 0; op < OP__COUNT; op++) {
		const char *nm = op_info((Op)op)->name;
		bool eq = strlen(nm) == len;
		for (size_t i = 0; eq && i < len; i++)
			eq = (s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]) == nm[i];
		if (eq)
			return op;
	}
	return -1;
}

static void add_op(VfCaps *c, const char *s, size_t len, char *bad, size_t n)
{
	int op = op_by_name(s, len);
	if (op < 0)
		unknown(bad, n, "op", s, len);
	else
		c->ops |= BE_OP(op);
}

static void add_monoid(VfCaps *c, const char *s, size_t len, char *bad, size_t n)
{
	Monoid m = monoid_parse(s, len);
	if (m == MO_NONE)
		unknown(bad, n, "monoid", s, len);
	else
		c->monoids |= 1u << m;
}

static void add_format(VfCaps *c, const char *s, size_t len, char *bad, size_t n)
{
	Dtype f = dt_parse(s, len);
	if (f == DT_NONE)
		unknown(bad, n, "format", s, len);
	else
		c->formats |= 1u << f;
}

int vf_ext_caps(const char *cmd, double timeout_s, VfCaps *c, Diag *d)
{
	memset(c, 0, sizeof *c);
	char *run = absolute_words(cmd), *line = NULL;
	if (asprintf(&line, "%s --assay-capabilities", run) < 0)
		line = NULL;
	free(run);
	IR_ASSERT(line);
	int pfd[2];
	if (pipe(pfd)) {
		diag_env(d, "--external: cannot make a pipe: %s", strerror(errno));
		free(line);
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		diag_env(d, "--external: cannot fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		free(line);
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int in = open("/dev/null", O_RDONLY);
		if (in < 0 || dup2(in, 0) < 0 || dup2(pfd[1], 1) < 0)
			_exit(126);
		close(pfd[0]);
		execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	close(pfd[1]);
	size_t cap = 65536, len = 0;
	char *out = malloc(cap + 1);
	IR_ASSERT(out);
	double limit = timeout_s > 0 ? timeout_s : 30;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool timed_out = false;
	for (;;) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		double el = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
		if (el >= limit) {
			timed_out = true;
			break;
		}
		struct pollfd pf = {pfd[0], POLLIN, 0};
		int r = poll(&pf, 1, 100);
		if (r <= 0)
			continue;
		ssize_t got = read(pfd[0], out + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
		if (len == cap)
			break;
	}
	out[len] = 0;
	close(pfd[0]);
	kill(-pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	int rc = -1;
	char bad[200] = "";
	if (timed_out)
		diag_set(d, 2, "--external: '%s' did not answer within %g s", line, limit);
	else if (!WIFEXITED(st) || WEXITSTATUS(st))
		diag_set(d, 2, "--external: '%s' failed (status %d): a client answers the capability "
			 "query with a JSON object on its standard output (docs/external.md)", line,
			 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	else if (!strchr(out, '{') ||
		 caps_array(out, "ops", add_op, c, bad, sizeof bad) ||
		 caps_array(out, "monoids", add_monoid, c, bad, sizeof bad) ||
		 caps_array(out, "formats", add_format, c, bad, sizeof bad) || bad[0])
		diag_set(d, 2, "--external: '%s' printed no capability object of ops, monoids and "
			 "formats (docs/external.md)%s%s: %.200s", line, bad[0] ? ": " : "", bad, out);
	else
		rc = 0;
	const char *nm = rc == 0 ? strstr(out, "\"name\"") : NULL;
	if (nm && (nm = strchr(nm + 6, '"')))
		snprintf(c->name, sizeof c->name, "%.*s", (int)strcspn(nm + 1, "\""), nm + 1);
	free(out);
	free(line);
	return rc;
}

static bool cover_expr(const VfCaps *c, const Graph *g, Ref r, char *why, size_t n)
{
	const Node *x = &g->nodes[r];
	if (x->kind == NK_READ) {
		for (uint32_t i = 0; i < x->u.read.n; i++)
			if (!cover_expr(c, g, g->refs[x->u.read.first + i], why, n))
				return false;
		return x->u.read.pad == REF_NONE || cover_expr(c, g, x->u.read.pad, why, n);
	}
	if (x->kind != NK_OP)
		return true;
	if (!(c->ops & BE_OP(x->op))) {
		snprintf(why, n, "op %s", op_info((Op)x->op)->spelling);
		return false;
	}
	for (int i = 0; i < op_info((Op)x->op)->arity; i++)
		if (!cover_expr(c, g, x->a[i], why, n))
			return false;
	return true;
}

static bool cover_format(const VfCaps *c, Dtype f, char *why, size_t n)
{
	if (f >= 0 && f < DT__COUNT && (c->formats & (1u << f)))
		return true;
	snprintf(why, n, "format %s", dt_name(f));
	return false;
}

bool vf_caps_cover(const VfCaps *c, const Graph *g, const Schedule *s, char *why, size_t n)
{
	for (int i = 0; i < ir_ninputs(g); i++)
		if (!cover_format(c, (Dtype)g->tensors[ir_input_tensor(g, i)].dtype, why, n))
			return false;
	for (int k = 0; k < g->noutputs; k++)
		if (!cover_format(c, g->outputs[k].dtype, why, n))
			return false;
	for (int d = 0; d < g->ndefs; d++) {
		const Def *D = &g->defs[d];
		if (D->monoid != MO_NONE && !(c->monoids & (1u << D->monoid))) {
			snprintf(why, n, "monoid %s", monoid_name(D->monoid));
			return false;
		}
		if (!cover_expr(c, g, D->body, why, n))
			return false;
		for (int r = 0; r < D->nred; r++)
			if (!cover_expr(c, g, D->red[r].lo, why, n) || !cover_expr(c, g, D->red[r].hi, why, n))
				return false;
		const DefSched *x = s ? &s->defs[d] : NULL;
		if (x && D->ty == TY_REAL && (!cover_format(c, x->op, why, n) ||
		    !cover_format(c, x->accum, why, n) || !cover_format(c, x->store, why, n)))
			return false;
	}
	return true;
}
