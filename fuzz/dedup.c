/* fuzz/dedup.c: failure signatures (what makes two failures the same), the ablations that
 * find which directive kinds and seeded faults a failure needs, the predicate the reducer
 * keeps (fz_holds), and failure folders.
 *
 * A signature is (backend, verdict, output format, implicated directive kinds, implicated
 * faults), plus the output's name, which the reducer keeps but deduplication ignores: a
 * generated graph's names (d0, d1, ...) say nothing about the bug. Implication is measured,
 * not guessed: a directive kind is implicated when the failure goes away with every
 * directive of that kind removed; the faults, when it goes away with them switched off. A
 * failure that stays with every fault off is a finding about the toolkit itself (the
 * compiler, a budget or the oracle), whatever fault the campaign seeded: its signature has
 * no fault, so it never counts as a kill.
 *
 * Invariants: a key names its signature exactly (fz_sig_parse(fz_sig_key(s)) gives s back,
 * the output aside) and contains only [a-z0-9+./_-]; a failure folder is complete exactly
 * when its repro.tg exists (written last, atomically).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuzz.h"

static const char *const dir_names[SD__COUNT] = {
	[SD_STORE] = "store", [SD_ACCUM] = "accum", [SD_INLINE] = "inline",
	[SD_TILE] = "tile", [SD_SPLIT] = "split", [SD_ORDER] = "order", [SD_ONLINE] = "online", [SD_MMA] = "mma",
};
_Static_assert(ARRAY_LEN(dir_names) == SD__COUNT, "one name per directive kind");

/* ------------------------------------------------------------------ keys */

const char *fz_sig_key(const FzSig *s, char *buf, size_t n)
{
	char dirs[128] = "", faults[512];
	size_t len = 0;
	for (int k = 0; k < SD__COUNT; k++)
		if (s->dirs & (1u << k))
			len += (size_t)snprintf(dirs + len, sizeof dirs - len, "%s%s", len ? "+" : "",
						dir_names[k]);
	vf_faults_name(s->faults, faults, sizeof faults);
	for (char *p = faults; *p; p++)
		if (*p == ',')
			*p = '+';
	snprintf(buf, n, "%s/%s/%s/%s/%s", s->backend, vf_verdict_name(s->verdict),
		 s->dtype == DT_NONE ? "-" : dt_name(s->dtype), *dirs ? dirs : "-",
		 *faults ? faults : "-");
	return buf;
}

/* Splits key at '/' into exactly 5 fields (in place). */
static int fields(char *key, char **f)
{
	int n = 0;
	for (char *p = key; n < 5; n++) {
		f[n] = p;
		char *q = strchr(p, '/');
		if (!q)
			return n == 4 ? 0 : -1;
		*q = 0;
		p = q + 1;
	}
	return -1;
}

int fz_sig_parse(const char *key, FzSig *s)
{
	char buf[512], *f[5];
	memset(s, 0, sizeof *s);
	snprintf(buf, sizeof buf, "%s", key);
	if (fields(buf, f) || strlen(f[0]) == 0 || strlen(f[0]) >= sizeof s->backend)
		return -1;
	snprintf(s->backend, sizeof s->backend, "%s", f[0]);
	s->verdict = V__COUNT;
	for (int v = 0; v < V__COUNT; v++)
		if (strcmp(vf_verdict_name((Verdict)v), f[1]) == 0)
			s->verdict = (Verdict)v;
	s->dtype = strcmp(f[2], "-") == 0 ? DT_NONE : dt_parse(f[2], strlen(f[2]));
	if (s->verdict == V__COUNT || (s->dtype == DT_NONE && strcmp(f[2], "-")))
		return -1;
	for (char *p = f[3]; strcmp(f[3], "-") && *p;) {
		size_t len = strcspn(p, "+");
		int k = 0;
		while (k < SD__COUNT && (strlen(dir_names[k]) != len || strncmp(dir_names[k], p, len)))
			k++;
		if (k == SD__COUNT)
			return -1;
		s->dirs |= 1u << k;
		p += len + (p[len] == '+');
	}
	if (strcmp(f[4], "-") == 0)
		return 0;
	for (char *p = f[4]; *p; p++)
		if (*p == '+')
			*p = ',';
	Diag d = {0};
	int rc = vf_faults_parse(f[4], &s->faults, &d);
	diag_clear(&d);
	return rc;
}

/* ------------------------------------------------------------------ ablations */

unsigned fz_dir_kinds(const Graph *g)
{
	unsigned m = 0;
	for (int k = 0; k < g->ndirs; k++)
		m |= 1u << g->dirs[k].kind;
	return m;
}

Graph *fz_without_dirs(const Graph *g, unsigned mask, Diag *d)
{
	char *text = ir_print(g);
	Graph *c = ir_parse(text, strlen(text), g->file ? g->file : "graph", NULL, 0, d);
	free(text);
	if (!c)
		return NULL;
	int n = 0;
	for (int k = 0; k < c->ndirs; k++)
		if (!(mask & (1u << c->dirs[k].kind)))
			c->dirs[n++] = c->dirs[k];
	c->ndirs = n;
	/* through the text again, so every directive is checked and resolved anew */
	text = ir_print(c);
	Graph *out = ir_parse(text, strlen(text), g->file ? g->file : "graph", NULL, 0, d);
	free(text);
	ir_free(c);
	return out;
}

/* r restricted to the backends named in the failing verdicts of res (or to one name). */
static void restrict_to(FzRun *out, const FzRun *r, const FzResult *res, const char *only)
{
	*out = *r;
	out->nbackends = 0;
	out->out_dir = NULL;
	/* --grad: the derivation is a pseudo-backend, judged without kernels (grad.c) */
	out->grad_verify = false;
	if (r->grad && r->grad_verify) {
		out->grad_verify = only && strcmp(only, "derivation") == 0;
		for (int k = 0; !only && k < res->n; k++)
			out->grad_verify |= res->v[k].suspect && strcmp(res->v[k].backend, "derivation") == 0;
	}
	for (int i = 0; i < r->nbackends; i++) {
		bool want = only && strcmp(r->backends[i]->name, only) == 0;
		for (int k = 0; !only && k < res->n; k++)
			want |= res->v[k].suspect &&
				strcmp(res->v[k].backend, r->backends[i]->name) == 0;
		if (want)
			out->backends[out->nbackends++] = r->backends[i];
	}
}

/* Whether the (backend, output) verdict v is gone from res: no record of that backend and
 * output has it (an output may have several records: a probe's beside the check's, each
 * schedule's). */
static bool gone(const FzResult *res, const char *backend, const char *output, Verdict v)
{
	for (int k = 0; k < res->n; k++)
		if (strcmp(res->v[k].backend, backend) == 0 && strcmp(res->v[k].output, output) == 0 &&
		    res->v[k].verdict == v)
			return false;
	return true;
}

/* Checks g under r into res: 1, or 0 for a graph the toolkit cannot judge (no error), or
 * -1 with d when the environment failed (d->env: nothing about the graph may be concluded). */
static int check_quiet(const Graph *g, const FzRun *r, FzResult *res, Diag *d)
{
	Diag dd = {0};
	memset(res, 0, sizeof *res);
	if (fz_check(g, r, res, &dd) == 0)
		return 1;
	fz_result_free(res);
	if (dd.env) {
		*d = dd;
		return -1;
	}
	diag_clear(&dd);
	return 0;
}

/* Marks in sigs the failures of res that go away under the variant (graph v, run vr):
 * bit in *field (dirs or faults) of each. -1 with d when the environment failed. */
static int ablate(const Graph *v, const FzRun *vr, const FzResult *res, FzSig *sigs,
		  bool faults, uint64_t bit, Diag *d)
{
	FzResult a;
	int ok = v ? check_quiet(v, vr, &a, d) : 0;
	if (ok < 0)
		return -1;
	for (int k = 0; ok && k < res->n; k++) {
		if (!res->v[k].suspect ||
		    !gone(&a, res->v[k].backend, res->v[k].output, res->v[k].verdict))
			continue;
		if (faults)
			sigs[k].faults |= bit;
		else
			sigs[k].dirs |= bit;
	}
	if (ok)
		fz_result_free(&a);
	return 0;
}

static int classify_faults(const Graph *g, const FzRun *rb, const FzResult *res, FzSig *sigs,
			   Diag *d)
{
	uint64_t all = rb->faults;
	if (!all)
		return 0;
	FzRun r0 = *rb;
	r0.faults = 0;
	if (ablate(g, &r0, res, sigs, true, all, d))
		return -1;
	if (__builtin_popcountll(all) < 2)
		return 0;
	/* several faults on: a failure that goes away without one of them needs exactly those
	 * (each found alone); one that needs none alone needs all of them jointly */
	FzSig *one = calloc((size_t)res->n + 1, sizeof *one);
	uint64_t *need = calloc((size_t)res->n + 1, sizeof *need);
	IR_ASSERT(one && need);
	int rc = 0;
	for (int b = 0; b < KF__COUNT && rc == 0; b++) {
		uint64_t bit = UINT64_C(1) << b;
		if (!(all & bit))
			continue;
		memset(one, 0, (size_t)res->n * sizeof *one);
		FzRun r1 = *rb;
		r1.faults = all & ~bit;
		rc = ablate(g, &r1, res, one, true, bit, d);
		for (int k = 0; k < res->n; k++)
			need[k] |= one[k].faults;
	}
	for (int k = 0; k < res->n; k++)
		if (sigs[k].faults && need[k])
			sigs[k].faults = need[k];
	free(one);
	free(need);
	return rc;
}

int fz_classify(const Graph *g, const FzRun *r, const FzResult *res, FzSig **out, Diag *d)
{
	FzSig *sigs = calloc((size_t)res->n + 1, sizeof *sigs);
	IR_ASSERT(sigs);
	for (int k = 0; k < res->n; k++) {
		const FzVerdict *v = &res->v[k];
		snprintf(sigs[k].backend, sizeof sigs[k].backend, "%s", v->backend);
		snprintf(sigs[k].output, sizeof sigs[k].output, "%s", v->output);
		/* a verdict about the whole kernel has no output format in its signature: one
		 * failure per case and kernel, not one per output */
		sigs[k].dtype = vf_verdict_whole(v->verdict) ? DT_NONE : v->dtype;
		sigs[k].verdict = v->suspect ? v->verdict : V_PASS;
	}
	FzRun rb;
	restrict_to(&rb, r, res, NULL);
	int rc = 0;
	if (rb.nbackends > 0 || rb.grad_verify) {
		rc = classify_faults(g, &rb, res, sigs, d);
		unsigned kinds = fz_dir_kinds(g);
		for (int kind = 0; rc == 0 && kind < SD__COUNT; kind++) {
			if (!(kinds & (1u << kind)))
				continue;
			Diag dd = {0};
			Graph *v = fz_without_dirs(g, 1u << kind, &dd);
			diag_clear(&dd);
			rc = ablate(v, &rb, res, sigs, false, 1u << kind, d);
			ir_free(v);
		}
	}
	if (rc) {
		free(sigs);
		return -1;
	}
	*out = sigs;
	return 0;
}

int fz_holds(const Graph *g, const FzRun *r, const FzSig *s, bool *holds, Diag *d)
{
	*holds = false;
	if ((fz_dir_kinds(g) & s->dirs) != s->dirs)
		return 0;
	FzResult none = {0}, res;
	FzRun rb;
	restrict_to(&rb, r, &none, s->backend);
	if (rb.nbackends == 0 && !rb.grad_verify)
		return 0;
	int ok = check_quiet(g, &rb, &res, d);
	if (ok < 0)
		return -1;
	if (ok) {
		ok = false;
		for (int k = 0; k < res.n && !ok; k++)
			ok = res.v[k].suspect && strcmp(res.v[k].backend, s->backend) == 0 &&
			     strcmp(res.v[k].output, s->output) == 0 && res.v[k].verdict == s->verdict &&
			     (s->dtype == DT_NONE || res.v[k].dtype == s->dtype);
		fz_result_free(&res);
	}
	if (ok && (s->faults || r->faults)) {
		/* the implicated faults must matter; with none implicated, none may */
		FzRun r1 = rb;
		r1.faults = s->faults ? r->faults & ~s->faults : 0;
		ok = check_quiet(g, &r1, &res, d);
		if (ok < 0)
			return -1;
		if (ok) {
			bool g1 = gone(&res, s->backend, s->output, s->verdict);
			ok = s->faults ? g1 : !g1;
			fz_result_free(&res);
		}
	}
	for (int kind = 0; ok && kind < SD__COUNT; kind++) {
		if (!(s->dirs & (1u << kind)))
			continue;
		Diag dd = {0};
		Graph *v = fz_without_dirs(g, 1u << kind, &dd);
		diag_clear(&dd);
		ok = v ? check_quiet(v, &rb, &res, d) : 0;
		ir_free(v);
		if (ok < 0)
			return -1;
		if (ok) {
			ok = gone(&res, s->backend, s->output, s->verdict);
			fz_result_free(&res);
		}
	}
	*holds = ok;
	return 0;
}

/* ------------------------------------------------------------------ repro texts */

char *fz_repro_header(const FzSig *s, const FzRun *r, int defs, const char *origin)
{
	char key[512], faults[512], inputs[128];
	fz_sig_key(s, key, sizeof key);
	vf_faults_name(r->faults, faults, sizeof faults);
	snprintf(inputs, sizeof inputs, "--seed %llu --inputs %s%s", (unsigned long long)r->seed,
		 dist_name(r->dist), r->specials ? " --specials" : "");
	char pair[600] = "";
	if (r->pair)   /* the failure is a pair's: this graph and its variant differ */
		snprintf(pair, sizeof pair,
			 "# the failure is a difference: this graph and its %s variant (variant.tg, "
			 "made from it by fz_variant_make with seed %llu) claim bit-identical "
			 "emulations, but output %s on %s differs between them bit for bit; check "
			 "both with the command below (-o DIR keeps their outputs) and compare\n",
			 fz_variant_kind_name((FzVariantKind)r->pair_kind),
			 (unsigned long long)r->pair_seed, s->output, s->backend);
	/* an external kernel is named by its command (quoted for sh) and name */
	char be[1200];
	const Backend *xb = vf_external_find(s->backend);
	const char *cmd = xb ? vf_ext_command(xb) : NULL;
	if (cmd) {
		size_t len = (size_t)snprintf(be, sizeof be, "--external '");
		for (const char *c = cmd; *c && len + 8 < sizeof be; c++)
			len += (size_t)snprintf(be + len, sizeof be - len, "%s",
						*c == '\'' ? "'\\''" : (char[2]){*c, 0});
		snprintf(be + len, sizeof be - len, "' --name %s", s->backend);
	} else {
		snprintf(be, sizeof be, "--backends %s", s->backend);
	}
	char *h = NULL;
	if (r->invariance) {   /* a batch-invariance failure (inv.c) */
		int n = asprintf(&h,
			"# assay: a minimal repro (%d definition%s) of failure %s of batch invariance\n"
			"# (backend %s, output %s: %s)\n"
			"# inputs: %s\n"
			"# reproduce: %s%s%sassay check THIS.tg --invariance %s %s %s\n"
			"%s%s%s",
			defs, defs == 1 ? "" : "s", key, s->backend, s->output,
			vf_verdict_name(s->verdict), inputs, *faults ? "ASSAY_FAULT=" : "", faults,
			*faults ? " " : "", *r->inv_at ? r->inv_at : "SIZE=V", be, inputs,
			origin ? "# origin: " : "", origin ? origin : "", origin ? "\n" : "");
		IR_ASSERT(n >= 0);
		return h;
	}
	if (r->grad) {   /* the gradient's failure (grad.c): its derivation, or its kernels */
		char gf[512] = "", kf[512] = "";
		unsigned gfs = gr_faults_of(r->faults);
		for (int k = 0, len = 0; k < GF__COUNT; k++)
			if (gfs >> k & 1)
				len += snprintf(gf + len, sizeof gf - (size_t)len, "%s%s",
						len ? "," : " --fault ", gr_fault_name(k));
		vf_faults_name(r->faults & ~(((UINT64_C(1) << GF__COUNT) - 1) * KF_GRAD_MAX_BOTH),
			       kf, sizeof kf);
		char cmd[3072];   /* gf, kf, be and inputs whole */
		if (strcmp(s->backend, "derivation") == 0)
			snprintf(cmd, sizeof cmd, "assay grad --verify THIS.tg --pairs %d --seed %llu%s",
				 r->grad_pairs > 0 ? r->grad_pairs : 2, (unsigned long long)r->seed, gf);
		else
			snprintf(cmd, sizeof cmd, "assay grad THIS.tg%s -o THIS_grad.tg && %s%s%sassay "
				 "check THIS_grad.tg %s %s", gf, *kf ? "ASSAY_FAULT=" : "", kf,
				 *kf ? " " : "", be, inputs);
		int n = asprintf(&h,
			"# assay: a minimal repro (%d definition%s) of failure %s of its gradient\n"
			"# (backend %s, output %s: %s)\n"
			"# inputs: %s\n"
			"# reproduce: %s\n"
			"%s%s%s",
			defs, defs == 1 ? "" : "s", key, s->backend, s->output,
			vf_verdict_name(s->verdict), inputs, cmd,
			origin ? "# origin: " : "", origin ? origin : "", origin ? "\n" : "");
		IR_ASSERT(n >= 0);
		return h;
	}
	if (s->verdict == V_TREE_MISMATCH) {   /* a probe's (probe.c): the values do not matter */
		int n = asprintf(&h,
			"# assay: a minimal repro (%d definition%s) of failure %s\n"
			"# (backend %s, sum %s: its kernel sums in a tree the schedule does not declare)\n"
			"# reproduce: %s%s%sassay probe THIS.tg --def %s --backend %s\n"
			"%s%s%s",
			defs, defs == 1 ? "" : "s", key, s->backend, s->output,
			*faults ? "ASSAY_FAULT=" : "", faults, *faults ? " " : "", s->output, s->backend,
			origin ? "# origin: " : "", origin ? origin : "", origin ? "\n" : "");
		IR_ASSERT(n >= 0);
		return h;
	}
	int n = asprintf(&h,
		"# assay: a minimal repro (%d definition%s) of failure %s\n"
		"# (backend %s, output %s: %s)\n"
		"# inputs: %s\n"
		"%s"
		"# reproduce: %s%s%sassay check THIS.tg%s %s %s\n"
		"%s%s%s",
		defs, defs == 1 ? "" : "s", key, s->backend, s->output, vf_verdict_name(s->verdict),
		inputs, pair, *faults ? "ASSAY_FAULT=" : "", faults, *faults ? " " : "",
		r->pair ? " variant.tg" : "", be, inputs,
		origin ? "# origin: " : "", origin ? origin : "", origin ? "\n" : "");
	IR_ASSERT(n >= 0);
	return h;
}

int fz_repro_inputs(const char *text, uint64_t *seed, Dist *dist, bool *specials)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "# inputs:", 9) != 0)
			continue;
		size_t len = strcspn(p, "\n");
		char line[256], name[32] = "normal";
		snprintf(line, sizeof line, "%.*s", (int)(len < 255 ? len : 255), p);
		unsigned long long sd = 1;
		const char *q = strstr(line, "--seed ");
		if (q)
			sd = strtoull(q + 7, NULL, 10);
		q = strstr(line, "--inputs ");
		if (q)
			sscanf(q + 9, "%31s", name);
		*seed = sd;
		*dist = dist_parse(name) < 0 ? DIST_NORMAL : dist_parse(name);
		*specials = strstr(line, "--specials") != NULL;
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ folders */

int fz_write_atomic(const char *path, const char *text, Diag *d)
{
	char *tmp = NULL;
	IR_ASSERT(asprintf(&tmp, "%s.tmp%ld", path, (long)getpid()) >= 0);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666), rc = -1;
	if (fd < 0)
		goto fail;
	size_t n = strlen(text), off = 0;
	while (off < n) {
		ssize_t w = write(fd, text + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	bool bad = off < n || fsync(fd) != 0;
	if (close(fd) || bad || rename(tmp, path))
		goto fail;
	rc = 0;
	goto out;
fail:
	diag_set(d, 2, "cannot write %s: %s", path, strerror(errno));
	unlink(tmp);
out:
	free(tmp);
	return rc;
}

static int write_in(const char *dir, const char *name, const char *text, Diag *d)
{
	char *path = NULL;
	IR_ASSERT(asprintf(&path, "%s/%s", dir, name) >= 0);
	int rc = fz_write_atomic(path, text, d);
	free(path);
	return rc;
}

/* DIR/variant.tg: the variant of a pair's repro g (r->pair's recipe). */
static int write_variant(const char *dir, const Graph *g, const FzRun *r, Diag *d)
{
	FzVariant v;
	if (!fz_variant_make(g, (FzVariantKind)r->pair_kind, r->pair_seed, &v))
		return 0;
	char *text = NULL;
	IR_ASSERT(asprintf(&text, "# the %s variant of repro.tg (%s): %s\n%s",
			   fz_variant_kind_name(v.kind), v.bit ? "bit-identical" : "within budget",
			   v.what, v.text) >= 0);
	int rc = write_in(dir, "variant.tg", text, d);
	free(text);
	fz_variant_free(&v);
	return rc;
}

int fz_save_failure(const char *dir, const FzSig *s, const char *repro, const char *header,
		    const char *original, const FzRun *r, Diag *d)
{
	char key[512], *sig = NULL;
	fz_sig_key(s, key, sizeof key);
	IR_ASSERT(asprintf(&sig, "%s\noutput %s\n", key, s->output) >= 0);
	int rc = vf_mkdirs(dir, d) || write_in(dir, "signature", sig, d) ||
		 (original && write_in(dir, "original.tg", original, d)) ||
		 write_in(dir, "results.jsonl", "", d) ? -1 : 0;
	free(sig);
	if (rc)
		return -1;
	/* the files of a check of the repro; a repro the toolkit cannot judge keeps none */
	Graph *g = ir_parse(repro, strlen(repro), "repro.tg", NULL, 0, d);
	if (!g)
		return -1;
	FzResult none = {0}, res = {0};
	FzRun rk;
	restrict_to(&rk, r, &none, s->backend);
	rk.out_dir = dir;
	Diag dd = {0};
	fz_check(g, &rk, &res, &dd);
	diag_clear(&dd);
	fz_result_free(&res);
	if (r->pair && write_variant(dir, g, r, d)) {
		ir_free(g);
		return -1;
	}
	ir_free(g);
	char *text = NULL;
	IR_ASSERT(asprintf(&text, "%s%s", header ? header : "", repro) >= 0);
	rc = write_in(dir, "repro.tg", text, d);
	free(text);
	return rc;
}
