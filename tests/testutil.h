/* tests/testutil.h: small helpers shared by the Check suites. Tests run from the repository
 * root, so paths like "examples/matmul.tg" work. */
#ifndef ASSAY_TESTUTIL_H
#define ASSAY_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads a whole file into a NUL-terminated heap buffer; NULL if it cannot. */
static inline char *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		size_t k = fread(buf + n, 1, 4096, f);
		n += k;
		if (k == 0)
			break;
	}
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

/* Runs a Check suite with fork mode on and returns the process exit status. */
static inline int tu_run(Suite *s)
{
	SRunner *r = srunner_create(s);
	srunner_set_fork_status(r, CK_FORK);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
