/* compiler/emit/berun.c: the pieces every backend's runtime shares (berun.h): the clock, the
 * cache of compiled programs on disk, the checks and conversions around upload and
 * download, the guard scan, child processes and the runtime errors' messages.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "berun.h"

extern char **environ;

double be_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void be_stats(BeStats *st, bool hit, double t0)
{
	if (st) {
		st->cache_hit = hit;
		st->compile_s = be_now() - t0;
	}
}

/* ------------------------------------------------------------ the cache */

uint64_t be_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

void be_hash_key(const char *const *parts, size_t n, char key[33])
{
	uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
	for (size_t i = 0; i < n; i++) {
		h1 = be_fnv(h1, parts[i], strlen(parts[i]) + 1);
		h2 = be_fnv(h2 ^ (i + 1), parts[i], strlen(parts[i]) + 1);
	}
	snprintf(key, 33, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
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

int be_cache_dir(const BeOpts *o, char *dir, size_t n)
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

void *be_read_file(const char *path, size_t *len)
{
	*len = 0;
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

void be_write_atomic(const char *path, const void *data, size_t n)
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

static void seal_text(const void *data, size_t n, char *out, size_t cap)
{
	snprintf(out, cap, "assay-cache 1 %zu %016llx\n", n,
		 (unsigned long long)be_fnv(0xcbf29ce484222325ull, data, n));
}

/* Whether data (n bytes) matches the seal of path; a corrupt entry is removed. */
static bool sealed(const char *path, const void *data, size_t n)
{
	char sum[4400], want[96];
	snprintf(sum, sizeof sum, "%s.sum", path);
	size_t sn;
	char *got = be_read_file(sum, &sn);
	seal_text(data, n, want, sizeof want);
	bool ok = got && strcmp(got, want) == 0;
	free(got);
	if (!ok) {
		unlink(path);
		unlink(sum);
	}
	return ok;
}

void *be_cache_get(const char *path, size_t *len)
{
	char *data = be_read_file(path, len);
	if (data && !sealed(path, data, *len)) {
		free(data);
		data = NULL;
		*len = 0;
	}
	return data;
}

bool be_cache_check(const char *path)
{
	size_t n;
	void *data = be_cache_get(path, &n);
	free(data);
	return data != NULL;
}

void be_cache_seal(const char *path)
{
	size_t n;
	char *data = be_read_file(path, &n), sum[4400], text[96];
	if (!data)
		return;
	snprintf(sum, sizeof sum, "%s.sum", path);
	seal_text(data, n, text, sizeof text);
	be_write_atomic(sum, text, strlen(text));
	free(data);
}

void be_cache_put(const char *path, const void *data, size_t n)
{
	be_write_atomic(path, data, n);
	be_cache_seal(path);
}

/* ------------------------------------------------------------ buffers */

size_t be_buf_bytes(const KBuf *B)
{
	return (size_t)(B->n ? B->n : 1) * (size_t)dt_info(B->fmt)->bytes;
}

int be_buffer_of(const Kernels *k, int tensor, bool alloced, const char *be, Diag *d)
{
	if (tensor < 0 || tensor >= k->g->ntensors || k->tbuf[tensor] < 0 || !alloced) {
		diag_set(d, 3, "%s backend: tensor %d has no buffer (inlined, or not allocated)", be,
			 tensor);
		return -1;
	}
	return k->tbuf[tensor];
}

int be_input_buffer(const Kernels *k, int tensor, bool alloced, const HostTensor *t,
		    const char *be, Diag *d)
{
	int b = be_buffer_of(k, tensor, alloced, be, d);
	if (b < 0)
		return -1;
	const KBuf *B = &k->bufs[b];
	if (t->dtype != B->fmt || t->n != B->n) {
		diag_set(d, 2, "%s backend: input %s is %s with %lld elements, the graph wants %s "
			 "with %lld", be, k->g->tensors[tensor].name, dt_name(t->dtype),
			 (long long)t->n, dt_name(B->fmt), (long long)B->n);
		return -1;
	}
	return b;
}

int be_out_alloc(const Kernels *k, int tensor, Dtype dt, HostTensor *t, const char *be,
		 Diag *d)
{
	const Tensor *T = &k->g->tensors[tensor];
	int64_t dims[IR_MAXRANK];
	for (int i = 0; i < T->rank; i++)
		dims[i] = T->dims[i].value;
	if (ht_alloc(t, dt, T->rank, dims)) {
		diag_set(d, 3, "%s backend: out of memory for output %s", be, T->name);
		return -1;
	}
	return 0;
}

/* Element i of a buffer in storage format f. */
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

void be_out_fill(HostTensor *t, const void *p, const KBuf *B)
{
	if (t->dtype == B->fmt) {
		memcpy(t->data, p, (size_t)B->n * (size_t)dt_info(B->fmt)->bytes);
		return;
	}
	for (int64_t i = 0; i < B->n; i++)
		ht_set(t, i, get(p, B->fmt, i));
}

int be_guard_check(const unsigned char *p, size_t lead, size_t bytes, size_t total,
		   const char *name, Diag *d)
{
	for (size_t i = 0; i < total; i++) {
		if (i == lead)
			i += bytes;
		if (i < total && p[i] != BE_GUARD_BYTE) {
			diag_set(d, 1, "a write outside buffer %s (%s %zu bytes from its start)", name,
				 i < lead ? "before it," : "past its end,",
				 i < lead ? lead - i : i - lead - bytes);
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ processes */

int be_run_cmd(char *const *argv, const char *log)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, log ? log : "/dev/null",
					 O_WRONLY | O_CREAT | O_TRUNC, 0666);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return -1;
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

pid_t be_fork_probe(int fd[2], const char *what, char *out, size_t n)
{
	if (pipe(fd)) {
		snprintf(out, n, "cannot probe %s: pipe: %s", what, strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		snprintf(out, n, "cannot probe %s: fork: %s", what, strerror(errno));
		return -1;
	}
	close(fd[pid == 0 ? 0 : 1]);
	return pid;
}

/* ------------------------------------------------------------ launch */

void be_runtime_error(const Kernels *k, int64_t site, int64_t v, Diag *d)
{
	const Graph *g = k->g;
	const KSite *s = &k->sites[site];
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
