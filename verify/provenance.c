/* verify/provenance.c: what made a run directory, recorded when the run starts, so that
 * a report can say which assay, on which machine and devices, under which command and
 * seed produced its results (reports/load.c reads it back; a directory made before it
 * existed has none, and its report says so).
 *
 * DIR/provenance.json is one JSON object:
 *   {"version": "0.1.0", "commit": "1a2b3c4" | "1a2b3c4-dirty" | "unknown",
 *    "command": ["assay", "check", ARG...] | null, "cwd": the working directory,
 *    "seed": S, "backends": [{"name", "device"}], "host": gethostname, "os": "SYSNAME
 *    RELEASE MACHINE" (uname), "date": "YYYY-MM-DDTHH:MM:SSZ" (UTC)}
 * written once per run (a new campaign, or `assay check -o DIR`), atomically: the text
 * goes to DIR/provenance.json.tmp, is fsync'ed and renamed over the file.
 *
 * Devices: Backend.device() may open a driver (a Vulkan instance, a Node helper for
 * wgsl); the callers fork workers afterwards and must hold no driver state or thread, so
 * every device is asked in one forked child in its own process group, killed if it has
 * not answered in PROBE_S seconds. An unavailable backend's entry says why.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "verify.h"

/* The Makefile passes -DASSAY_COMMIT="..." to this file alone (build/commit.txt). */
#ifndef ASSAY_COMMIT
#define ASSAY_COMMIT "unknown"
#endif

enum { PROBE_S = 120 };

const char *vf_version(void)
{
	return "0.1.0";
}

const char *vf_commit(void)
{
	return ASSAY_COMMIT;
}

/* Writes p[0..n) to fd; false (errno set) when it could not. */
static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			errno = w < 0 ? errno : EIO;
			return false;
		}
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* The child: each backend's device (or why it is unavailable), NUL-terminated, to fd. */
static void probe_child(int fd, const Backend *const *bes, int nb)
{
	for (int i = 0; i < nb; i++) {
		char why[512] = "", *dev = bes[i]->available(why, sizeof why) == 0 ?
					    bes[i]->device() : NULL, *s = NULL;
		if (asprintf(&s, "%s%s", dev ? "" : "unavailable: ", dev ? dev : why) < 0 ||
		    !write_all(fd, s, strlen(s) + 1))
			_exit(3);
		free(s);
		free(dev);
	}
	_exit(0);
}

/* Everything the child wrote until it closed its end or the deadline passed. */
static char *drain(int fd, pid_t pid, size_t *len, bool *late)
{
	char *buf = NULL;
	FILE *m = open_memstream(&buf, len);
	IR_ASSERT(m);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = PROBE_S * 1000L - (long)(t.tv_sec - t0.tv_sec) * 1000L -
			    (t.tv_nsec - t0.tv_nsec) / 1000000L;
		struct pollfd p = {fd, POLLIN, 0};
		int r = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			*late = true;
			kill(-pid, SIGKILL);
			break;
		}
		char chunk[4096];
		ssize_t k = r > 0 ? read(fd, chunk, sizeof chunk) : -1;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		fwrite(chunk, 1, (size_t)k, m);
	}
	fclose(m);
	return buf;
}

/* The device strings of bes (malloc'ed, nb of them). */
static char **devices(const Backend *const *bes, int nb)
{
	char **out = calloc((size_t)nb + 1, sizeof *out);
	IR_ASSERT(out);
	int fd[2] = {-1, -1};
	const char *fail = NULL;
	char *text = NULL;
	size_t len = 0;
	bool late = false;
	if (nb == 0)
		return out;
	fflush(NULL);
	pid_t pid = pipe(fd) ? -1 : fork();
	if (pid == 0) {
		setpgid(0, 0);
		close(fd[0]);
		probe_child(fd[1], bes, nb);
	}
	if (pid < 0) {
		fail = strerror(errno);
	} else {
		setpgid(pid, pid);   /* either side may come first */
		close(fd[1]);
		fd[1] = -1;
		text = drain(fd[0], pid, &len, &late);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	for (int k = 0; k < 2; k++)
		if (fd[k] >= 0)
			close(fd[k]);
	size_t at = 0;
	for (int i = 0; i < nb; i++) {
		const char *s = at < len && memchr(text + at, 0, len - at) ? text + at : NULL;
		if (s) {
			out[i] = strdup(s);
			at += strlen(s) + 1;
		} else if (asprintf(&out[i], "unknown: %s%s", fail ? "cannot fork the device probe: " :
				    late ? "the device probe did not answer in time" :
				    "the device probe died", fail ? fail : "") < 0) {
			out[i] = NULL;
		}
		IR_ASSERT(out[i]);
	}
	free(text);
	return out;
}

/* The file's text. */
static char *provenance_text(const char *cmd, int argc, char *const *argv,
			     const Backend *const *bes, int nb, uint64_t seed)
{
	char *buf = NULL, host[256] = "", cwd[4096] = "", date[32] = "", os[512] = "unknown";
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	IR_ASSERT(f);
	if (gethostname(host, sizeof host))
		snprintf(host, sizeof host, "unknown");
	host[sizeof host - 1] = 0;
	if (!getcwd(cwd, sizeof cwd))
		cwd[0] = 0;
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
	time_t t = time(NULL);
	struct tm tm;
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	fputs("{\"version\":", f), vf_json_str(f, vf_version());
	fputs(",\"commit\":", f), vf_json_str(f, vf_commit());
	fputs(",\"command\":", f);
	if (argv) {
		fputs("[\"assay\",", f);
		vf_json_str(f, cmd);
		for (int i = 0; i < argc; i++)
			fputc(',', f), vf_json_str(f, argv[i]);
		fputc(']', f);
	} else {
		fputs("null", f);
	}
	fputs(",\"cwd\":", f), vf_json_str(f, cwd);
	fprintf(f, ",\"seed\":%llu,\"backends\":[", (unsigned long long)seed);
	char **dev = devices(bes, nb);
	for (int i = 0; i < nb; i++) {
		fputs(i ? ",{\"name\":" : "{\"name\":", f);
		vf_json_str(f, bes[i]->name);
		fputs(",\"device\":", f);
		vf_json_str(f, dev[i]);
		fputc('}', f);
		free(dev[i]);
	}
	free(dev);
	fputs("],\"host\":", f), vf_json_str(f, host);
	fputs(",\"os\":", f), vf_json_str(f, os);
	fputs(",\"date\":", f), vf_json_str(f, date);
	fputs("}\n", f);
	fclose(f);
	return buf;
}

/* A write that failed: the environment's failure (spec/cli.md v2: a full disk or an
 * unwritable directory is exit 3, never a verdict). */
static int write_error(Diag *d, const char *path, int err)
{
	diag_set(d, 3, "cannot write %s: %s", path, strerror(err));
	return -1;
}

int vf_provenance_write(const char *dir, const char *cmd, int argc, char *const *argv,
			const Backend *const *bes, int nb, uint64_t seed, Diag *d)
{
	char *text = provenance_text(cmd, argc, argv, bes, nb, seed), *path = NULL, *tmp = NULL;
	IR_ASSERT(asprintf(&path, "%s/provenance.json", dir) >= 0 &&
		  asprintf(&tmp, "%s/provenance.json.tmp", dir) >= 0);
	int rc = -1, fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		write_error(d, tmp, errno);
		goto out;
	}
	int err = !write_all(fd, text, strlen(text)) || fsync(fd) ? errno : 0;
	if (close(fd) && !err)
		err = errno;
	if (!err && rename(tmp, path))
		err = errno;
	if (err) {
		write_error(d, path, err);
		remove(tmp);
		goto out;
	}
	rc = 0;
out:
	free(text);
	free(path);
	free(tmp);
	return rc;
}
