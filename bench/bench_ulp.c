/* bench/bench_ulp.c: the per-backend ULP sweep (issue 5): exp, log, sin, tanh, x / y and
 * sqrt (and expm1, log1p, erf, pow) per backend and format, each function's measured worst
 * distance from the correctly rounded value in ulps beside the allowance the table gives
 * there (verify/ulp.c states the method; oracles/allowances.def the allowances).
 *
 *   bench_ulp [--backends c,opencl,...] [--formats f32,f16,bf16,f64] [--functions exp,...]
 *             [--points N] [--seed S] [--threads T] [--timeout SEC]
 *
 * Every available backend and every format by default; an unavailable backend is said
 * loudly with its reason (and, when named with --backends, gets rows saying so); a
 * format or a function a backend cannot compile is a row `unsupported` with its reason.
 * The binary needs no file: graphs and inputs are made in memory, kernels are compiled
 * into the usual cache.
 *
 * Columns: points (distinct arguments), worst (the largest ulp distance; inf: a NaN or
 * infinity where the exact value is finite), at (its argument; x,y for div and pow),
 * allow@ (the budget at that point in ulps of the format: orc_budget of the sweep's graph,
 * whose outputs are independent), err/bud (the largest error/budget over every point; > 1 is a point over its budget),
 * verdict (ok, EXCEEDS, no bound: the table promises nothing for those arguments), and the
 * table's rows for the function in words.
 * Exit status: 0 whatever the verdicts (EXCEEDS is printed, and counted on the last line),
 * 2 a bad option, 3 an internal failure of the sweep.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../verify/verify.h"
#include "bench.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_ulp [--backends LIST] [--formats LIST] [--functions LIST]\n"
		   "                 [--points N] [--seed S] [--threads T] [--timeout SEC]\n"
		   "  LIST is comma-separated. Backends: every available one by default.\n"
		   "  Formats: f32,f16,bf16,f64 (default all). Functions (default all):");
	for (int k = 0; k < VU__COUNT; k++)
		fprintf(f, "%s%s", k ? "," : " ", vf_ulp_fn_name((VfUlpFn)k));
	fprintf(f, "\n  --points N   arguments per function and format (default 65536)\n");
}

static int bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "bench_ulp: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	usage(stderr);
	return 2;
}

/* x (a value of format f) as the shortest %g that reads back as x in f. */
static void num(char *buf, size_t n, Dtype f, double x)
{
	for (int p = 3; p <= 17; p++) {
		snprintf(buf, n, "%.*g", p, x);
		if (mp_round_to(f, strtod(buf, NULL)) == x || isnan(x))
			return;
	}
}

/* The arguments x (and y, unless NaN) of a row. */
static void where(char *buf, size_t n, Dtype f, double x, double y)
{
	char a[40], b[40];
	num(a, sizeof a, f, x);
	if (isnan(y)) {
		snprintf(buf, n, "%s", a);
		return;
	}
	num(b, sizeof b, f, y);
	snprintf(buf, n, "%s,%s", a, b);
}

static void print_row(const VfUlpRow *r)
{
	char at[80] = "-", worst[24] = "-", allow[24] = "-", ratio[24] = "-";
	bool ok = r->status == WK_OK && r->n_checked > 0;
	if (ok) {
		where(at, sizeof at, r->fmt, r->worst_x, r->worst_y);
		snprintf(worst, sizeof worst, "%.0f", r->worst_ulp);
		snprintf(allow, sizeof allow, isinf(r->worst_allow) ? "none" : "%.3g", r->worst_allow);
		snprintf(ratio, sizeof ratio, "%.3g", r->max_ratio);
	}
	printf("%-7s %-5s %-7s %7lld %6s %-22s %8s %8s  %-9s %s\n", r->backend, dt_name(r->fmt),
	       vf_ulp_fn_name(r->fn), (long long)r->points, worst, at, allow, ratio,
	       vf_ulp_verdict(r), r->status == WK_OK ? r->allowance : r->reason);
	if (!ok)
		return;
	if (r->n_special > 0) {
		where(at, sizeof at, r->fmt, r->worst_x, r->worst_y);
		printf("        %lld point(s) gave a NaN or an infinity where the exact value is "
		       "finite; at %s: got %g, correctly rounded %.17g\n", (long long)r->n_special,
		       at, r->worst_got, r->worst_want);
	}
	if (r->max_ratio > 1) {
		where(at, sizeof at, r->fmt, r->ratio_x, r->ratio_y);
		printf("        %lld point(s) over budget; the largest error/budget at %s: got %.9g, "
		       "correctly rounded %.9g, budget %.3g\n", (long long)r->n_over, at,
		       r->ratio_got, r->ratio_want, r->ratio_budget);
	}
	if (r->n_unbounded > 0 && r->n_unbounded < r->n_checked)
		printf("        %lld point(s) without a bound\n", (long long)r->n_unbounded);
}

int main(int argc, char **argv)
{
	const char *blist = NULL, *flist = "f32,f16,bf16,f64", *fnlist = NULL;
	VfUlpOpts o = {.points = 1 << 16, .seed = 1, .threads = 2};
	o.w.timeout_s = 300;
	o.w.threads = 2;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (!v)
			return bad("unknown option or missing value: %s", a);
		char *end;
		if (strcmp(a, "--backends") == 0)
			blist = v;
		else if (strcmp(a, "--formats") == 0)
			flist = v;
		else if (strcmp(a, "--functions") == 0)
			fnlist = v;
		else if (strcmp(a, "--points") == 0) {
			o.points = strtoll(v, &end, 10);
			if (*end || o.points < 16 || o.points > (1 << 24))
				return bad("--points wants an integer in [16, 2^24]: %s", v);
		} else if (strcmp(a, "--seed") == 0) {
			o.seed = strtoull(v, &end, 10);
			if (*end)
				return bad("--seed wants an integer: %s", v);
		} else if (strcmp(a, "--threads") == 0) {
			o.threads = (int)strtol(v, &end, 10);
			if (*end || o.threads < 1 || o.threads > 256)
				return bad("--threads wants an integer in [1, 256]: %s", v);
			o.w.threads = o.threads;
		} else if (strcmp(a, "--timeout") == 0) {
			o.w.timeout_s = strtod(v, &end);
			if (*end || !(o.w.timeout_s > 0))
				return bad("--timeout wants a positive number of seconds: %s", v);
		} else
			return bad("unknown option: %s", a);
		i++;
	}
	/* functions */
	if (fnlist) {
		for (const char *p = fnlist; *p;) {
			size_t n = strcspn(p, ",");
			int f = vf_ulp_fn_parse(p, n);
			if (f < 0) {
				char name[64];
				snprintf(name, sizeof name, "%.*s", (int)(n < 60 ? n : 60), p);
				return bad("unknown function: %s", name);
			}
			o.fns |= 1u << f;
			p += n + (p[n] == ',');
		}
	}
	/* formats */
	Dtype fmts[8];
	int nf = 0;
	for (const char *p = flist; *p && nf < 8;) {
		size_t n = strcspn(p, ",");
		Dtype f = dt_parse(p, n);
		if (f != DT_F32 && f != DT_F16 && f != DT_BF16 && f != DT_F64) {
			char name[64];
			snprintf(name, sizeof name, "%.*s", (int)(n < 60 ? n : 60), p);
			return bad("unknown format (f32, f16, bf16, f64): %s", name);
		}
		fmts[nf++] = f;
		p += n + (p[n] == ',');
	}
	/* backends: the named ones (unavailable ones get rows saying why), else every
	 * available one (the others said once) */
	const Backend *bes[16];
	int nb = 0;
	char why[512];
	if (blist) {
		for (const char *p = blist; *p && nb < 16;) {
			size_t n = strcspn(p, ",");
			char name[64];
			snprintf(name, sizeof name, "%.*s", (int)(n < 60 ? n : 60), p);
			const Backend *b = be_find(name);
			if (!b)
				return bad("unknown backend: %s", name);
			if (b->available(why, sizeof why) != 0)
				fprintf(stderr, "bench_ulp: backend %s UNAVAILABLE: %s\n", name, why);
			bes[nb++] = b;
			p += n + (p[n] == ',');
		}
	} else {
		for (int k = 0; be_at(k) && nb < 16; k++) {
			if (be_at(k)->available(why, sizeof why) != 0) {
				fprintf(stderr, "bench_ulp: backend %s UNAVAILABLE, skipped: %s\n",
					be_at(k)->name, why);
				continue;
			}
			bes[nb++] = be_at(k);
		}
	}
	for (int b = 0; b < nb; b++) {
		char *dev = bes[b]->available(why, sizeof why) == 0 ? bes[b]->device() : NULL;
		printf("%-7s %s\n", bes[b]->name, dev ? dev : "unavailable");
		free(dev);
	}
	printf("\n%-7s %-5s %-7s %7s %6s %-22s %8s %8s  %-9s %s\n", "backend", "fmt", "fn", "points",
	       "worst", "at", "allow@", "err/bud", "verdict", "allowance (table)");
	VfUlpRow *rows = calloc((size_t)nb * VU__COUNT + 1, sizeof *rows);
	if (!rows)
		return 3;
	int nexceed = 0, nrow = 0, nfail = 0;
	double t0 = now();
	for (int i = 0; i < nf; i++) {
		int n = 0;
		Diag d = {0};
		if (vf_ulp_sweep(bes, nb, fmts[i], &o, rows, &n, &d)) {
			fprintf(stderr, "bench_ulp: %s", d.msg ? d.msg : "the sweep failed\n");
			diag_clear(&d);
			free(rows);
			return 3;
		}
		for (int k = 0; k < n; k++) {
			print_row(&rows[k]);
			nrow++;
			nexceed += strcmp(vf_ulp_verdict(&rows[k]), "EXCEEDS") == 0;
			nfail += rows[k].status != WK_OK && rows[k].status != WK_UNSUPPORTED;
		}
		fflush(stdout);
	}
	free(rows);
	printf("\n%d rows: %d EXCEEDS, %d failed to run (%.1f s)\n", nrow, nexceed, nfail, now() - t0);
	return 0;
}
