/* bench/bench.h: the timing helpers every benchmark shares (medians of wall times). */
#ifndef ASSAY_BENCH_H
#define ASSAY_BENCH_H

#include <stdlib.h>
#include <time.h>

static inline double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v). */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmpd);
	return v[n / 2];
}

#endif
