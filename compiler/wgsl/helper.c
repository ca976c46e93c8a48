/* compiler/wgsl/helper.c: the WGSL backend's device process: a Node program
 * (node/helper.mjs) holding Dawn, started on first use and kept for the life of this
 * process, and the framed protocol over a socket pair (documented in helper.mjs).
 *
 * Invariants
 * - One helper per process, in the one mutable static of the backend (`helper` below): a
 *   process made by fork() finds its parent's helper recorded there, sees that it does not
 *   own it (owner != getpid()), drops the inherited descriptors and starts its own.
 * - The helper dies with us: it reads end of input when our end of the socket closes, and
 *   PR_SET_PDEATHSIG kills it if we die first. It is in our process group (a verify
 *   worker's group is killed on timeout, the helper with it).
 * - Its stdout and stderr go to an unlinked temporary file, whose tail explains a helper
 *   that died; the protocol runs on descriptors 3 and 4 (both our socket's other end).
 * - A helper that died or stopped answering (ASSAY_WGSL_TIMEOUT seconds, default 600) is
 *   killed and forgotten; the next call starts a fresh one.
 *
 * Finding things: node is $ASSAY_NODE, else `node` on PATH; helper.mjs is under
 * $ASSAY_ROOT, else beside the running program or up to three folders above it, else
 * under the current folder; its node_modules must hold the npm package webgpu (scripts/
 * deps.sh runs `npm ci` there).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "wgsl.h"

typedef struct {
	pid_t pid;          /* 0: none */
	pid_t owner;        /* the process that started it */
	int sock;           /* our end of the socket pair */
	int log;            /* its stdout and stderr */
} Helper;

static Helper helper;   /* this process's helper (see the file comment) */

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool find_node(char *node, size_t n)
{
	const char *env = getenv("ASSAY_NODE"), *path = getenv("PATH");
	if (env && *env) {
		snprintf(node, n, "%s", env);
		return access(node, X_OK) == 0;
	}
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t len = strcspn(p, ":");
		snprintf(node, n, "%.*s/node", (int)len, p);
		if (len && access(node, X_OK) == 0 && is_file(node))
			return true;
		p += len + (p[len] == ':');
	}
	return false;
}

static bool script_at(const char *root, char *script, size_t n)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof p, "%s/compiler/wgsl/node/helper.mjs", root);
	if (!is_file(p) || !realpath(p, script))
		return false;
	(void)n;
	return true;
}

static bool find_script(char *script, size_t n)
{
	const char *root = getenv("ASSAY_ROOT");
	if (root && *root)
		return script_at(root, script, n);
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = 0;
		for (int up = 0; up < 4; up++) {
			char *slash = strrchr(exe, '/');
			if (!slash)
				break;
			*slash = 0;
			if (script_at(exe[0] ? exe : "/", script, n))
				return true;
		}
	}
	return script_at(".", script, n);
}

int wgsl_locate(char *node, size_t nn, char *script, size_t ns, char *why, size_t nw)
{
	if (!find_node(node, nn)) {
		snprintf(why, nw, "no Node.js: `node` is not on PATH (set ASSAY_NODE; scripts/deps.sh installs nodejs)");
		return -1;
	}
	if (ns < PATH_MAX || !find_script(script, ns)) {
		snprintf(why, nw, "compiler/wgsl/node/helper.mjs not found (set ASSAY_ROOT to the assay checkout)");
		return -1;
	}
	char pkg[PATH_MAX + 64];
	snprintf(pkg, sizeof pkg, "%.*s/node_modules/webgpu/package.json",
		 (int)(strrchr(script, '/') - script), script);
	if (!is_file(pkg)) {
		snprintf(why, nw, "the npm package webgpu is not installed (%s missing: run scripts/deps.sh, "
			 "or `npm ci` in compiler/wgsl/node)", pkg);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ the process */

static void forget(void)
{
	if (helper.sock > 0)
		close(helper.sock);
	if (helper.log > 0)
		close(helper.log);
	memset(&helper, 0, sizeof helper);
}

/* The last lines of the helper's output, for a message (malloc'ed). */
static char *log_tail(void)
{
	char *buf = calloc(1, 2049);
	IR_ASSERT(buf);
	if (helper.log > 0) {
		off_t n = lseek(helper.log, 0, SEEK_END);
		off_t at = n > 2048 ? n - 2048 : 0;
		ssize_t got = pread(helper.log, buf, 2048, at);
		buf[got > 0 ? got : 0] = 0;
	}
	return buf;
}

static void stop(const char *what, Diag *d)
{
	int status = 0;
	char *tail = log_tail();
	if (helper.pid > 0) {
		kill(helper.pid, SIGKILL);
		while (waitpid(helper.pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	diag_set(d, 3, "wgsl backend: the Node helper %s%s%s", what, tail[0] ? "; its output:\n" : "", tail);
	free(tail);
	forget();
}

static int start(Diag *d)
{
	char node[PATH_MAX], script[PATH_MAX], why[PATH_MAX + 256];
	if (wgsl_locate(node, sizeof node, script, sizeof script, why, sizeof why)) {
		diag_set(d, 3, "wgsl backend: %s", why);
		return -1;
	}
	const char *t = getenv("TMPDIR");
	char tmpl[PATH_MAX];
	snprintf(tmpl, sizeof tmpl, "%s/assay-wgsl-XXXXXX", t && *t ? t : "/tmp");
	int sv[2], log = mkostemp(tmpl, O_CLOEXEC);
	if (log < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		diag_set(d, 3, "wgsl backend: cannot set up the helper (%s): %s", tmpl, strerror(errno));
		if (log >= 0)
			close(log);
		return -1;
	}
	unlink(tmpl);
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int s = fcntl(sv[1], F_DUPFD, 10), nul = open("/dev/null", O_RDONLY);
		if (s < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0 ||
		    dup2(s, 3) < 0 || dup2(s, 4) < 0)
			_exit(126);
		char *argv[] = {node, script, NULL};
		execv(node, argv);
		_exit(127);
	}
	close(sv[1]);
	if (pid < 0) {
		diag_set(d, 3, "wgsl backend: cannot fork the helper: %s", strerror(errno));
		close(sv[0]);
		close(log);
		return -1;
	}
	helper = (Helper){pid, getpid(), sv[0], log};
	return 0;
}

static int send_all(const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = send(helper.sock, c, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static int timeout_ms(void)
{
	const char *t = getenv("ASSAY_WGSL_TIMEOUT");
	long s = t && *t ? strtol(t, NULL, 10) : 600;
	return (int)(s > 0 && s < 86400 ? s * 1000 : 600000);
}

/* 0, -1 on end of input or error, -2 on timeout. */
static int recv_all(void *p, size_t n)
{
	char *c = p;
	while (n) {
		struct pollfd pf = {helper.sock, POLLIN, 0};
		int r = poll(&pf, 1, timeout_ms());
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return -2;
		ssize_t k = recv(helper.sock, c, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

int wgsl_call(const char *head, const void *data, size_t n, WgslReply *r, Diag *d)
{
	memset(r, 0, sizeof *r);
	if (helper.pid && helper.owner != getpid())
		forget();   /* our parent's helper: not ours to talk to */
	if (!helper.pid && start(d))
		return -1;
	uint32_t hl = (uint32_t)strlen(head), pl = (uint32_t)n, in[2] = {hl, pl};
	if (send_all(in, 8) || send_all(head, hl) || (n && send_all(data, n))) {
		stop("died (its input closed)", d);
		return -1;
	}
	int rc = recv_all(in, 8);
	if (rc == 0) {
		r->head = malloc((size_t)in[0] + 1);
		r->data = malloc((size_t)in[1] + 1);
		IR_ASSERT(r->head && r->data);
		r->n = in[1];
		rc = recv_all(r->head, in[0]);
		if (rc == 0)
			rc = recv_all(r->data, in[1]);
		r->head[in[0]] = 0;
	}
	if (rc) {
		wgsl_reply_free(r);
		stop(rc == -2 ? "did not answer in time (ASSAY_WGSL_TIMEOUT)" : "died", d);
		return -1;
	}
	return 0;
}

void wgsl_reply_free(WgslReply *r)
{
	free(r->head);
	free(r->data);
	memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------ JSON */

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* p at '"': past the closing quote. */
static const char *skip_str(const char *p)
{
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p ? p + 1 : p;
}

static const char *skip_val(const char *p)
{
	p = ws(p);
	if (*p == '"')
		return skip_str(p);
	if (*p == '{' || *p == '[') {
		int depth = 0;
		for (; *p; p++) {
			if (*p == '"') {
				p = skip_str(p) - 1;
				continue;
			}
			depth += (*p == '{' || *p == '[') - (*p == '}' || *p == ']');
			if (depth == 0)
				return p + 1;
		}
		return p;
	}
	while (*p && *p != ',' && *p != '}' && *p != ']')
		p++;
	return p;
}

/* The value of top-level key in object json: its first character, or NULL. */
static const char *field(const char *json, const char *key)
{
	const char *p = ws(json);
	if (*p != '{')
		return NULL;
	size_t kl = strlen(key);
	for (p = ws(p + 1); *p == '"';) {
		const char *k = p + 1, *end = skip_str(p);
		bool hit = (size_t)(end - 1 - k) == kl && strncmp(k, key, kl) == 0;
		p = ws(end);
		if (*p != ':')
			return NULL;
		p = ws(p + 1);
		if (hit)
			return p;
		p = ws(skip_val(p));
		if (*p != ',')
			return NULL;
		p = ws(p + 1);
	}
	return NULL;
}

char *wgsl_json_str(const char *json, const char *key)
{
	const char *v = field(json, key);
	if (!v)
		return NULL;
	const char *end = skip_val(v);
	char *out = malloc((size_t)(end - v) + 1), *o = out;
	IR_ASSERT(out);
	if (*v != '"') {
		memcpy(out, v, (size_t)(end - v));
		out[end - v] = 0;
		return out;
	}
	for (const char *p = v + 1; p < end - 1; p++) {
		if (*p != '\\') {
			*o++ = *p;
			continue;
		}
		p++;
		switch (*p) {
		case 'n': *o++ = '\n'; break;
		case 't': *o++ = '\t'; break;
		case 'r': *o++ = '\r'; break;
		case 'b': case 'f': *o++ = ' '; break;
		case 'u': {
			unsigned c = 0;
			for (int i = 1; i <= 4 && p[i]; i++)
				c = c * 16 + (unsigned)(p[i] <= '9' ? p[i] - '0' : (p[i] | 32) - 'a' + 10);
			*o++ = c < 128 ? (char)c : '?';
			p += 4;
			break;
		}
		default: *o++ = *p; break;
		}
	}
	*o = 0;
	return out;
}

bool wgsl_json_num(const char *json, const char *key, double *v)
{
	const char *p = field(json, key);
	char *end;
	if (!p)
		return false;
	*v = strtod(p, &end);
	return end != p;
}

bool wgsl_json_bool(const char *json, const char *key)
{
	const char *p = field(json, key);
	return p && strncmp(p, "true", 4) == 0;
}

void wgsl_json_quote(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t need = *len + 6 * strlen(s) + 3;
	if (need > *cap) {
		*cap = need * 2;
		*buf = realloc(*buf, *cap);
		IR_ASSERT(*buf);
	}
	char *o = *buf + *len;
	*o++ = '"';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			*o++ = '\\';
			*o++ = (char)*p;
		} else if (*p == '\n') {
			*o++ = '\\';
			*o++ = 'n';
		} else if (*p == '\t') {
			*o++ = '\\';
			*o++ = 't';
		} else if (*p < 0x20) {
			o += sprintf(o, "\\u%04x", *p);
		} else {
			*o++ = (char)*p;
		}
	}
	*o++ = '"';
	*o = 0;
	*len = (size_t)(o - *buf);
}
