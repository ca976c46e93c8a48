/* fuzz/baseline.c: a campaign's baseline, the failures already known (`assay fuzz
 * --baseline`), so that a campaign reports only new ones and `--until-failure` stops only at
 * one: the signature keys (dedup.c) of a control campaign's distinct failures, or of a list.
 *
 * A baseline is a text of keys, each ended by '\n', sorted and without repeats (so two
 * baselines are the same exactly when their texts are), at most FZ_BASELINE_MAX bytes. It is
 * read from
 * - a campaign directory (its settings.json must be one): the key of every folder under
 *   failures/ (the first line of its `signature`, or, for a folder whose failure was never
 *   saved, its name with '.' as '/'), and the campaign's own baseline, so that a campaign run
 *   against a baseline passes it on;
 * - or a text file: one key per line; blank lines and lines that start with '#' are skipped,
 *   and spaces around a key are not part of it.
 * A line or a folder that is not a key (fz_sig_parse) is an error naming it: a baseline that
 * silently matched nothing would make every known failure new again.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fuzz.h"

/* Whether key is a canonical signature key: it parses, and prints back as itself. */
static bool canonical(const char *key)
{
	FzSig s;
	char back[512];
	return strlen(key) < sizeof back && fz_sig_parse(key, &s) == 0 &&
	       strcmp(fz_sig_key(&s, back, sizeof back), key) == 0;
}

/* The key of line [p, p + len) of a baseline text: its length, or 0 past the end. */
static size_t line_len(const char *p)
{
	const char *nl = strchr(p, '\n');
	return nl ? (size_t)(nl - p) : strlen(p);
}

bool fz_baseline_has(const char *keys, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = keys; *p;) {
		size_t len = line_len(p);
		if (len == n && memcmp(p, key, n) == 0)
			return true;
		p += len + (p[len] == '\n');
	}
	return false;
}

int fz_baseline_count(const char *keys)
{
	int n = 0;
	for (const char *p = keys; *p; p++)
		n += *p == '\n';
	return n;
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A growing set of keys, written out sorted into a baseline text. */
typedef struct {
	char **k;
	int n, cap;
} Keys;

static void keys_add(Keys *s, const char *key, size_t len)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 32;
		s->k = realloc(s->k, (size_t)s->cap * sizeof *s->k);
		IR_ASSERT(s->k);
	}
	s->k[s->n] = strndup(key, len);
	IR_ASSERT(s->k[s->n]);
	s->n++;
}

static void keys_free(Keys *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->k[i]);
	free(s->k);
}

/* The sorted, repeat-free text of s into out (n bytes); -1 with d (code 2) when it does not
 * fit. */
static int keys_text(Keys *s, const char *from, char *out, size_t n, Diag *d)
{
	qsort(s->k, (size_t)s->n, sizeof *s->k, by_str);
	size_t len = 0;
	out[0] = 0;
	for (int i = 0; i < s->n; i++) {
		if (i && strcmp(s->k[i], s->k[i - 1]) == 0)
			continue;
		size_t k = strlen(s->k[i]);
		if (len + k + 2 > n) {
			diag_set(d, 2, "%s: the baseline lists more failures than a campaign keeps (%zu "
				 "bytes of keys at most)", from, n - 1);
			out[0] = 0;
			return -1;
		}
		memcpy(out + len, s->k[i], k);
		len += k;
		out[len++] = '\n';
		out[len] = 0;
	}
	return 0;
}

int fz_baseline_check(const char *keys, Diag *d)
{
	const char *prev = NULL;
	size_t plen = 0;
	for (const char *p = keys; *p;) {
		size_t len = line_len(p);
		char key[512];
		if (p[len] != '\n' || len == 0 || len >= sizeof key) {
			diag_set(d, 2, "member 'baseline': an empty, unended or overlong key");
			return -1;
		}
		memcpy(key, p, len);
		key[len] = 0;
		if (!canonical(key)) {
			diag_set(d, 2, "member 'baseline': '%s' is not a failure signature "
				 "(backend/verdict/format/directives/faults)", key);
			return -1;
		}
		if (prev) {
			int c = strncmp(prev, p, plen < len ? plen : len);
			if (c > 0 || (c == 0 && plen >= len)) {
				diag_set(d, 2, "member 'baseline': '%s' out of order or repeated", key);
				return -1;
			}
		}
		prev = p;
		plen = len;
		p += len + 1;
	}
	return 0;
}

/* The keys of a list file (text, named path) into s. */
static int from_list(const char *path, char *text, Keys *s, Diag *d)
{
	int lineno = 0;
	for (char *p = text; *p;) {
		char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
		lineno++;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		char *q = end;
		while (q > p && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\r'))
			q--;
		if (q > p && *p != '#') {
			char key[512];
			snprintf(key, sizeof key, "%.*s", (int)(q - p), p);
			if ((size_t)(q - p) >= sizeof key || !canonical(key)) {
				diag_set(d, 2, "%s:%d: '%.*s' is not a failure signature (backend/verdict/"
					 "format/directives/faults, as under a campaign's failures/)", path,
					 lineno, (int)(q - p) > 80 ? 80 : (int)(q - p), p);
				return -1;
			}
			keys_add(s, key, strlen(key));
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/* The keys of a campaign directory into s: its failures' and its own baseline's. */
static int from_campaign(const char *dir, Keys *s, Diag *d)
{
	FzCampaign *c = malloc(sizeof *c);
	IR_ASSERT(c);
	Diag sd = {0};
	if (fz_settings_read(dir, c, &sd)) {
		diag_set(d, 2, "--baseline %s: not a campaign directory: %.*s", dir,
			 (int)strcspn(sd.msg, "\n"), sd.msg);
		diag_clear(&sd);
		free(c);
		return -1;
	}
	for (const char *p = c->baseline; *p;) {
		size_t len = line_len(p);
		keys_add(s, p, len);
		p += len + 1;
	}
	free(c);
	char *fdir = NULL;
	IR_ASSERT(asprintf(&fdir, "%s/failures", dir) >= 0);
	DIR *dd = opendir(fdir);
	struct dirent *e;
	int rc = 0;
	while (rc == 0 && dd && (e = readdir(dd))) {
		if (e->d_name[0] == '.')
			continue;
		char *sig = NULL, key[512];
		IR_ASSERT(asprintf(&sig, "%s/%s/signature", fdir, e->d_name) >= 0);
		size_t n;
		char *text = be_read_file(sig, &n);
		if (text) {
			snprintf(key, sizeof key, "%.*s", (int)strcspn(text, "\n"), text);
		} else {
			snprintf(key, sizeof key, "%s", e->d_name);
			for (char *q = key; *q; q++)
				if (*q == '.')
					*q = '/';
		}
		struct stat st;
		char *folder = strndup(sig, strlen(sig) - strlen("/signature"));
		IR_ASSERT(folder);
		if (stat(folder, &st) == 0 && S_ISDIR(st.st_mode)) {
			if (canonical(key)) {
				keys_add(s, key, strlen(key));
			} else {
				diag_set(d, 2, "--baseline %s: %s is not a failure's folder ('%s' is not a "
					 "failure signature)", dir, folder, key);
				rc = -1;
			}
		}
		free(folder);
		free(text);
		free(sig);
	}
	if (dd)
		closedir(dd);
	else if (errno != ENOENT) {   /* a campaign without failures has no folder */
		diag_set(d, 2, "--baseline %s: cannot read %s: %s", dir, fdir, strerror(errno));
		rc = -1;
	}
	free(fdir);
	return rc;
}

int fz_baseline_load(const char *path, char *keys, size_t n, Diag *d)
{
	struct stat st;
	keys[0] = 0;
	if (stat(path, &st)) {
		diag_set(d, 2, "--baseline %s: %s (expects a control campaign's directory or a file "
			 "of signature keys)", path, strerror(errno));
		return -1;
	}
	Keys s = {0};
	int rc;
	if (S_ISDIR(st.st_mode)) {
		rc = from_campaign(path, &s, d);
	} else {
		size_t len;
		char *text = be_read_file(path, &len);
		if (!text && st.st_size > 0) {
			diag_set(d, 2, "--baseline %s: cannot read it", path);
			rc = -1;
		} else {
			rc = from_list(path, text ? text : "", &s, d);
		}
		free(text);
	}
	if (rc == 0)
		rc = keys_text(&s, path, keys, n, d);
	keys_free(&s);
	return rc;
}
