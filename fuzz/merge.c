/* fuzz/merge.c: `assay merge`: the N shards of one campaign (`assay fuzz --shard I/N`)
 * joined into the campaign directory the unsharded campaign would have made.
 *
 * What is checked, before anything is written. Every directory holds a shard's settings
 * (read strictly: fz_settings_read), all of one campaign: the same settings member for
 * member but "shard" and "jobs" (fz_settings_compare: the first member that differs is
 * named), the same N, every shard 0/N .. N-1/N exactly once (a missing or duplicated shard
 * is named). Each shard's log is whole (it ends with a done line: a torn or unfinished last
 * case is named, and `assay fuzz --resume` cuts and completes it) and checked line by line
 * as a resume checks it (fz_log_line: JSON objects, the shard's own cases in order, so no
 * two shards overlap). The merge covers cases 0 .. T-1, T the larger of the campaign's
 * --cases and one past the last case any shard holds; a shard holding fewer of them than
 * its share is incomplete, and named with the command that completes it. Anything else is
 * refused: a merge that would not be the unsharded campaign is not made.
 *
 * What is written. results.jsonl: case n taken from shard n mod N, for n = 0 .. T-1: the
 * unsharded campaign's log, timings aside, since a shard runs each case exactly as the
 * unsharded campaign does (campaign.c: a shard has no coverage feedback). failures/: the
 * distinct failures of the merged log, each the folder of the shard that holds its first
 * case (the one the unsharded campaign saved and reduced: the same case, the same
 * reduction); a failure found by several shards is one folder, its count recounted over
 * every case. errors/: every shard's. settings.json: the shards' without "shard" (the
 * unsharded campaign's, which `assay fuzz --resume` continues). provenance.json: the
 * merge's command line. summary.json: recomputed from all of it (fz_campaign_summarize).
 * Everything goes into a temporary directory beside the output, renamed into place when
 * whole; the shards are only read. The logs are streamed (a line at a time), so the merge
 * needs memory for one line per shard, not for the logs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "fuzz.h"

typedef struct {
	const char *dir;
	FzCampaign c;
	char *path;              /* DIR/results.jsonl */
	FILE *log;
	uint64_t cases;          /* done lines */
	int64_t records;
	char *line;              /* getline's buffer */
	size_t cap;
} Shard;

typedef struct {
	char key[512];
	int64_t first;           /* the first case that hit it */
	bool shared;             /* another shard hit it too */
} Key;

typedef struct {
	Shard *sh;
	int nsh, n;              /* the directories, and N */
	int *who;                /* who[i]: the directory of shard i */
	Key *keys;
	int nkeys, capkeys;
	char *tmp;               /* the temporary directory */
} Merge;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static char *cat(const char *a, const char *b)
{
	char *s = NULL;
	IR_ASSERT(asprintf(&s, "%s/%s", a, b) >= 0);
	return s;
}

/* ------------------------------------------------------------------ the shards */

static int read_settings(Merge *M, Diag *d)
{
	for (int k = 0; k < M->nsh; k++) {
		Shard *s = &M->sh[k];
		if (fz_settings_read(s->dir, &s->c, d))
			return -1;
		if (s->c.shard_n == 0) {
			diag_set(d, 2, "%s is not a shard (its settings.json has no member 'shard'): merge "
				 "takes the shards of one campaign, made by `assay fuzz --shard I/N`", s->dir);
			return -1;
		}
		const Shard *f = &M->sh[0];
		char why[512];
		if (s->c.shard_n != f->c.shard_n) {
			diag_set(d, 2, "%s and %s are not shards of one campaign: member 'shard': %d/%d "
				 "against %d/%d (a campaign is cut into one count of shards)", f->dir, s->dir,
				 f->c.shard_i, f->c.shard_n, s->c.shard_i, s->c.shard_n);
			return -1;
		}
		if (fz_settings_compare(&f->c, &s->c, "shard jobs", why, sizeof why)) {
			diag_set(d, 2, "%s and %s are not shards of one campaign: %s (in their "
				 "settings.json; shards differ only in 'shard' and 'jobs')", f->dir, s->dir,
				 why);
			return -1;
		}
	}
	M->n = M->sh[0].c.shard_n;
	M->who = malloc((size_t)M->n * sizeof *M->who);
	IR_ASSERT(M->who);
	for (int i = 0; i < M->n; i++)
		M->who[i] = -1;
	for (int k = 0; k < M->nsh; k++) {
		int i = M->sh[k].c.shard_i;
		if (M->who[i] >= 0) {
			diag_set(d, 2, "%s and %s are both shard %d/%d: give each shard once", M->sh[M->who[i]].dir,
				 M->sh[k].dir, i, M->n);
			return -1;
		}
		M->who[i] = k;
	}
	for (int i = 0; i < M->n; i++)
		if (M->who[i] < 0) {
			int missing = 0;
			for (int j = 0; j < M->n; j++)
				missing += M->who[j] < 0;
			diag_set(d, 2, "shard %d/%d is missing%s: a merge takes every shard 0/%d .. %d/%d of "
				 "the campaign (%d given)", i, M->n, missing > 1 ? " (and others)" : "", M->n,
				 M->n - 1, M->n, M->nsh);
			return -1;
		}
	return 0;
}

/* Reads shard s's log through once: every line checked (fz_log_line), its cases counted;
 * a last case without its done line, or a last line without its newline, is torn. */
static int scan_shard(Shard *s, Diag *d)
{
	s->path = cat(s->dir, "results.jsonl");
	s->log = fopen(s->path, "rb");
	if (!s->log) {
		diag_set(d, 2, "%s: cannot read the shard's log: %s", s->path, strerror(errno));
		return -1;
	}
	FzLogAt at = {s->path, &s->c, 0, 0};
	bool open_case = false;
	for (ssize_t n; (n = getline(&s->line, &s->cap, s->log)) > 0;) {
		bool nl = s->line[n - 1] == '\n';
		if (nl)
			s->line[--n] = 0;
		int rc = nl ? fz_log_line(&at, s->line, (size_t)n, d) : 0;
		if (rc < 0)
			return -1;
		open_case = !nl || rc == 0;
		s->records += nl && rc == 0;
	}
	if (ferror(s->log)) {
		diag_env(d, "%s: cannot read: %s", s->path, strerror(errno));
		return -1;
	}
	s->cases = at.place;
	if (open_case) {
		diag_set(d, 2, "shard %d/%d (%s) ends in a torn or unfinished case (after its %llu "
			 "complete ones): it was stopped mid-case; `assay fuzz --resume %s` cuts it and "
			 "completes the shard", s->c.shard_i, s->c.shard_n, s->dir,
			 (unsigned long long)s->cases, s->dir);
		return -1;
	}
	rewind(s->log);
	return 0;
}

/* The cases the merge covers (0 .. *T-1) from the shards' counts; -1 with d naming an
 * incomplete shard. */
static int span(Merge *M, uint64_t *T, Diag *d)
{
	uint64_t last = 0;   /* one past the last case any shard holds */
	int by = -1;
	for (int k = 0; k < M->nsh; k++) {
		const Shard *s = &M->sh[k];
		if (s->cases && fz_shard_case(&s->c, s->cases - 1) + 1 > last) {
			last = fz_shard_case(&s->c, s->cases - 1) + 1;
			by = k;
		}
	}
	const FzCampaign *c = &M->sh[0].c;
	*T = (uint64_t)c->cases > last ? (uint64_t)c->cases : last;
	for (int i = 0; i < M->n; i++) {
		const Shard *s = &M->sh[M->who[i]];
		uint64_t need = fz_shard_count(&s->c, *T);
		if (s->cases >= need)
			continue;
		char why[160];
		if (*T == (uint64_t)c->cases)
			snprintf(why, sizeof why, "the campaign's --cases %lld", (long long)c->cases);
		else
			snprintf(why, sizeof why, "shard %d/%d holds case %llu", M->sh[by].c.shard_i, M->n,
				 (unsigned long long)(last - 1));
		diag_set(d, 2, "shard %d/%d (%s) is incomplete: it holds %llu of its %llu cases among "
			 "0..%llu (%s); complete it with `assay fuzz --resume %s --cases %llu`", i, M->n,
			 s->dir, (unsigned long long)s->cases, (unsigned long long)need,
			 (unsigned long long)(*T - 1), why, s->dir, (unsigned long long)*T);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ the log */

/* The failures of a done line: each key, with the first case that hit it. */
static void note_fails(Merge *M, const char *done, uint64_t n)
{
	char fails[16384];
	if (!fz_json_get(done, "fails", fails, sizeof fails))
		return;
	for (char *p = strchr(fails, '"'); p; p = strchr(p, '"')) {
		char *q = strchr(p + 1, '"');
		if (!q)
			break;
		*q = 0;
		char *at = strrchr(p + 1, '@');
		if (at)
			*at = 0;
		int i = 0;
		while (i < M->nkeys && strcmp(M->keys[i].key, p + 1))
			i++;
		if (i == M->nkeys) {
			if (M->nkeys == M->capkeys) {
				M->capkeys = M->capkeys ? 2 * M->capkeys : 16;
				M->keys = realloc(M->keys, (size_t)M->capkeys * sizeof *M->keys);
				IR_ASSERT(M->keys);
			}
			Key *k = &M->keys[M->nkeys++];
			snprintf(k->key, sizeof k->key, "%.*s", (int)sizeof k->key - 1, p + 1);
			k->first = (int64_t)n;
			k->shared = false;
		} else if ((uint64_t)M->keys[i].first % (uint64_t)M->n != n % (uint64_t)M->n) {
			M->keys[i].shared = true;
		}
		p = q + 1;
	}
}

/* Writes the merged log: case n of shard n mod N, for n = 0 .. T-1. */
static int write_log(Merge *M, uint64_t T, Diag *d)
{
	char *path = cat(M->tmp, "results.jsonl");
	FILE *out = fopen(path, "w");
	int rc = -1;
	if (!out) {
		diag_io(d, errno, "cannot write %s: %s", path, strerror(errno));
		free(path);
		return -1;
	}
	for (uint64_t n = 0; n < T; n++) {
		Shard *s = &M->sh[M->who[n % (uint64_t)M->n]];
		for (;;) {   /* the case's records, then its done line (scan_shard checked them) */
			ssize_t k = getline(&s->line, &s->cap, s->log);
			if (k <= 0) {
				diag_env(d, "%s: the log changed while it was merged", s->path);
				goto out;
			}
			fwrite(s->line, 1, (size_t)k, out);
			if (strncmp(s->line, "{\"done\":", 8) == 0) {
				note_fails(M, s->line, n);
				break;
			}
		}
	}
	if (fflush(out) || ferror(out) || fsync(fileno(out))) {
		diag_io(d, errno, "cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fclose(out) && rc == 0) {
		diag_io(d, errno, "cannot write %s: %s", path, strerror(errno));
		rc = -1;
	}
	free(path);
	return rc;
}

/* ------------------------------------------------------------------ folders */

static int copy_file(const char *from, const char *to, Diag *d)
{
	int in = open(from, O_RDONLY), out = in < 0 ? -1 : open(to, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	int rc = in < 0 || out < 0 ? -1 : 0;
	char buf[65536];
	for (ssize_t k; rc == 0 && (k = read(in, buf, sizeof buf)) != 0;) {
		if (k < 0 && errno == EINTR)
			continue;
		for (ssize_t off = 0, w; rc == 0 && k > 0 && off < k; off += w)
			if ((w = write(out, buf + off, (size_t)(k - off))) <= 0)
				rc = -1;
		if (k < 0)
			rc = -1;
	}
	if (rc == 0 && fsync(out))
		rc = -1;
	int e = errno;
	if (out >= 0 && close(out))
		rc = -1;
	if (in >= 0)
		close(in);
	if (rc)
		diag_io(d, e, "cannot copy %s to %s: %s", from, to, strerror(e));
	return rc;
}

/* Copies the tree under from into to (made; what is there already stays): directories and
 * plain files, nothing else. *files counts the files. */
static int copy_tree(const char *from, const char *to, int *files, Diag *d)
{
	DIR *dd = opendir(from);
	if (!dd) {
		diag_io(d, errno, "cannot read %s: %s", from, strerror(errno));
		return -1;
	}
	int rc = vf_mkdirs(to, d);
	for (struct dirent *e; rc == 0 && (e = readdir(dd));) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *f = cat(from, e->d_name), *t = cat(to, e->d_name);
		struct stat st;
		if (lstat(f, &st) == 0 && S_ISDIR(st.st_mode))
			rc = copy_tree(f, t, files, d);
		else if (lstat(f, &st) == 0 && S_ISREG(st.st_mode) && (rc = copy_file(f, t, d)) == 0)
			++*files;
		free(f);
		free(t);
	}
	closedir(dd);
	return rc;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The folder of each distinct failure, from the shard of its first case. */
static int copy_failures(Merge *M, Diag *d)
{
	for (int i = 0; i < M->nkeys; i++) {
		char name[528], *p;
		snprintf(name, sizeof name, "failures/%s", M->keys[i].key);
		for (p = name + 9; *p; p++)
			if (*p == '/')
				*p = '.';
		const Shard *s = &M->sh[M->who[(uint64_t)M->keys[i].first % (uint64_t)M->n]];
		char *from = cat(s->dir, name), *to = cat(M->tmp, name);
		int files = 0;
		/* none: a failure the baseline lists (it has no folder), or one the shard had no
		 * time to save; the summary says which */
		int rc = is_dir(from) ? copy_tree(from, to, &files, d) : 0;
		free(from);
		free(to);
		if (rc)
			return -1;
	}
	return 0;
}

static int copy_errors(Merge *M, int *files, Diag *d)
{
	char *to = cat(M->tmp, "errors");
	int rc = 0;
	for (int k = 0; rc == 0 && k < M->nsh; k++) {
		char *from = cat(M->sh[k].dir, "errors");
		if (is_dir(from))
			rc = copy_tree(from, to, files, d);
		free(from);
	}
	free(to);
	return rc;
}

/* Whether out may be made: absent, or an empty directory (rename replaces it). */
static int out_free(const char *out, Diag *d)
{
	struct stat st;
	if (stat(out, &st) != 0)
		return 0;
	DIR *dd = S_ISDIR(st.st_mode) ? opendir(out) : NULL;
	int entries = 0;
	for (struct dirent *e; dd && (e = readdir(dd));)
		entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (dd)
		closedir(dd);
	if (dd && entries == 0)
		return 0;
	diag_set(d, 2, "%s already exists%s: a merge writes a new campaign directory", out,
		 S_ISDIR(st.st_mode) ? " and is not empty" : " (not a directory)");
	return -1;
}

static void rm_tree(const char *path)
{
	fz_empty_dir(path);
	rmdir(path);
}

/* ------------------------------------------------------------------ the merge */

static int merge(Merge *M, const char *out, int argc, char *const *argv, FzMergeStats *st,
		 Diag *d)
{
	if (out_free(out, d) || read_settings(M, d))
		return -1;
	for (int k = 0; k < M->nsh; k++)
		if (scan_shard(&M->sh[k], d))
			return -1;
	uint64_t T;
	if (span(M, &T, d))
		return -1;
	IR_ASSERT(asprintf(&M->tmp, "%s.merge-tmp%ld", out, (long)getpid()) >= 0);
	rm_tree(M->tmp);   /* a merge of this process id that died */
	if (vf_mkdirs(M->tmp, d) || write_log(M, T, d) || copy_failures(M, d) ||
	    copy_errors(M, &st->errors, d))
		return -1;
	FzCampaign *c = &M->sh[M->who[0]].c;   /* shard 0's settings, without the shard */
	c->shard_i = c->shard_n = 0;
	FzRun r;
	FzSummary sum;
	if (fz_settings_write(M->tmp, c, d) || fz_run_backends(&r, c->backends, d) ||
	    vf_provenance_write(M->tmp, "merge", argc, argv, r.backends, r.nbackends, c->seed, d) ||
	    fz_campaign_summarize(M->tmp, true, 0, &sum, d))   /* its lines: scan_shard's */
		return -1;
	if (rename(M->tmp, out)) {
		diag_io(d, errno, "cannot rename %s to %s: %s", M->tmp, out, strerror(errno));
		return -1;
	}
	free(M->tmp);
	M->tmp = NULL;
	st->shards = M->n;
	st->cases = sum.cases;
	st->records = sum.records;
	st->distinct = sum.distinct;
	for (int i = 0; i < M->nkeys; i++)
		st->shared += M->keys[i].shared && !fz_baseline_has(c->baseline, M->keys[i].key);
	return 0;
}

int fz_merge(const char *const *dirs, int ndirs, const char *out, int argc, char *const *argv,
	     FzMergeStats *st, Diag *d)
{
	double t0 = now();
	memset(st, 0, sizeof *st);
	if (ndirs < 1) {
		diag_set(d, 2, "no shard given: a merge takes the N shard directories of a campaign");
		return -1;
	}
	char *o = strdup(out);   /* "camp/merged/": the temporary directory goes beside it */
	IR_ASSERT(o);
	for (size_t n = strlen(o); n > 1 && o[n - 1] == '/';)
		o[--n] = 0;
	Merge M;
	memset(&M, 0, sizeof M);
	M.nsh = ndirs;
	M.sh = calloc((size_t)ndirs, sizeof *M.sh);
	IR_ASSERT(M.sh);
	for (int k = 0; k < ndirs; k++)
		M.sh[k].dir = dirs[k];
	int rc = merge(&M, o, argc, argv, st, d);
	if (M.tmp)
		rm_tree(M.tmp);
	for (int k = 0; k < ndirs; k++) {
		if (M.sh[k].log)
			fclose(M.sh[k].log);
		free(M.sh[k].line);
		free(M.sh[k].path);
	}
	free(M.sh);
	free(M.who);
	free(M.keys);
	free(M.tmp);
	free(o);
	st->seconds = now() - t0;
	return rc;
}
