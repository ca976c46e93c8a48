/* compiler/cov.c: the coverage points' counters and table (cov.def, compiler.h).
 *
 * cov_hits is the compiler's one mutable global, on purpose: it is instrumentation that
 * the compiler writes (COV(name), an increment at a branch) and never reads, so it cannot
 * change what the compiler does. It counts per process; verify/worker.c resets it before
 * each run of a worker and copies it into the run's answer, so a record names what that
 * run reached. Tests read it after calling the compiler in process.
 */
#include <string.h>
#include "compiler.h"

uint64_t cov_hits[COV__COUNT];

static const struct {
	const char *name;
	size_t len;
	const char *area, *hints, *what;
} table[] = {
#define X(name, area, hints, what) {#name, sizeof #name - 1, area, hints, what},
#include "cov.def"
#undef X
};
_Static_assert(ARRAY_LEN(table) == COV__COUNT, "one row per coverage point");

void cov_reset(void)
{
	memset(cov_hits, 0, sizeof cov_hits);
}

const char *cov_name(CovPoint p)
{
	return table[p].name;
}

const char *cov_area(CovPoint p)
{
	return table[p].area;
}

const char *cov_hints(CovPoint p)
{
	return table[p].hints;
}

const char *cov_what(CovPoint p)
{
	return table[p].what;
}

int cov_find(const char *name, size_t len)
{
	for (int p = 0; p < COV__COUNT; p++)
		if (table[p].len == len && memcmp(table[p].name, name, len) == 0)
			return p;
	return -1;
}

bool cov_reaches(CovPoint p, const char *backend)
{
	const char *a = table[p].area;
	if (strcmp(a, "rewrite") == 0 || strcmp(a, "lower") == 0 || strcmp(a, "cemit") == 0)
		return true;
	if (strcmp(a, "kivl") == 0)
		return strcmp(backend, "vulkan") == 0 || strcmp(backend, "wgsl") == 0;
	return strcmp(a, backend) == 0;
}
