/* compiler/emit/berun.h (private to compiler/): what the backends' runtimes (compiler/X/run.c)
 * share, so that each run.c holds only what its API makes different: the clock of
 * BeStats, the on-disk cache of compiled programs (its directory, keys, atomic files), the
 * checks of upload and download and the conversion of a stored buffer into an output's
 * dtype, the scan of a guard region read back to the host, and the messages of the
 * graph's runtime errors (kir.h's error sites).
 *
 * Messages name the backend ("c backend: ...") as each backend's own messages do; the
 * functions taking a Diag fail with the diagnostic code stated and never abort.
 */
#ifndef ASSAY_BERUN_H
#define ASSAY_BERUN_H

#include <sys/types.h>
#include "../kir/kir.h"

/* The guard region around every buffer (all but the Vulkan backend, which lays its
 * buffers out in one allocation, use BE_GUARD bytes) and the byte it is filled with. */
enum { BE_GUARD = 256, BE_GUARD_BYTE = 0xa5 };

/* Monotonic seconds. */
double be_now(void);
/* Fills st (if not NULL): the cache hit, and the time since t0 (be_now) as compile time. */
void be_stats(BeStats *st, bool hit, double t0);

/* ------------------------------------------------------------ the cache */

/* 64-bit FNV-1a of n bytes at p, continuing from h. */
uint64_t be_fnv(uint64_t h, const void *p, size_t n);
/* A cache key of 32 hex digits into key: two FNV-1a lanes over each of the n strings and
 * its NUL, the second lane salted with the string's position. */
void be_hash_key(const char *const *parts, size_t n, char key[33]);
/* Writes n bytes to path under a temporary name and renames it into place, so a reader
 * never sees part of a file; a failure leaves no file (the cache just misses). */
void be_write_atomic(const char *path, const void *data, size_t n);
/* The verified cache of compiled programs. An entry is the file PATH and its seal
 * PATH.sum ("assay-cache 1 SIZE FNV64"), written after PATH is in place. An entry whose
 * file is missing or unsealed, or whose size or hash differs from its seal (a truncated
 * file, a disk that filled up, a file overwritten in place) is never trusted: it is
 * removed and counts as a miss, so it is rebuilt, never loaded.
 * be_cache_get: the entry's bytes (malloc'ed, a NUL after them), or NULL for a miss.
 * be_cache_put: writes the file and then its seal (a failure leaves a miss).
 * be_cache_check: whether the entry at path is intact (for files loaded by path, dlopen).
 * be_cache_seal: seals the file now at path (a failure leaves it unsealed: a miss). */
void *be_cache_get(const char *path, size_t *len);
void be_cache_put(const char *path, const void *data, size_t n);
bool be_cache_check(const char *path);
void be_cache_seal(const char *path);

/* ------------------------------------------------------------ buffers */

/* The bytes a buffer is given: its elements in its format, at least one element. */
size_t be_buf_bytes(const KBuf *B);
/* The buffer of tensor (kir.h's tbuf), or -1 with d (code 3) when it has none or the
 * buffers are not allocated yet (alloced false). be: the backend's name. */
int be_buffer_of(const Kernels *k, int tensor, bool alloced, const char *be, Diag *d);
/* be_buffer_of for an upload of t, which must have the buffer's format and length: the
 * buffer, or -1 with d (code 2 for a mismatched t). */
int be_input_buffer(const Kernels *k, int tensor, bool alloced, const HostTensor *t,
		    const char *be, Diag *d);
/* Allocates t for output tensor `tensor` (its shape) in dtype dt: 0, or -1 with d
 * (code 3). */
int be_out_alloc(const Kernels *k, int tensor, Dtype dt, HostTensor *t, const char *be,
		 Diag *d);
/* Fills t (be_out_alloc's) from the contents p of buffer B: a copy in B's own format,
 * else each element converted (rounded to nearest even). */
void be_out_fill(HostTensor *t, const void *p, const KBuf *B);
/* Scans a buffer read back with its guards: p[0, lead) is the guard before the data, the
 * bytes bytes after it the data, p[lead + bytes, total) the guard after it. 0 when every
 * guard byte is BE_GUARD_BYTE, else -1 with d (code 1) naming buffer `name` and the first
 * changed byte. */
int be_guard_check(const unsigned char *p, size_t lead, size_t bytes, size_t total,
		   const char *name, Diag *d);

/* ------------------------------------------------------------ processes */

/* Runs argv (stdout discarded, stderr into the file log, or discarded where log is NULL):
 * its exit status (128 when a signal ended it), or -1 if it could not start. */
int be_run_cmd(char *const *argv, const char *log);
/* Forks the child of a probe (a driver asked in a child process, so that the calling
 * process, which may fork workers later, never initialises it) with a pipe from child to
 * parent: the child's pid in the parent, which keeps the read end fd[0]; 0 in the child,
 * which keeps the write end fd[1]; -1 with out ("cannot probe WHAT: pipe: ...", or fork)
 * when there is no child. */
pid_t be_fork_probe(int fd[2], const char *what, char *out, size_t n);

/* ------------------------------------------------------------ launch */

/* The graph's error (code 2) that a kernel reported at error site `site` (kir.h) with the
 * offending value v; site must exist. */
void be_runtime_error(const Kernels *k, int64_t site, int64_t v, Diag *d);

#endif
