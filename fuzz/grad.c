/* fuzz/grad.c: a case of `assay fuzz --grad` (docs/grad.md, "Fuzzing gradients").
 *
 * With FzRun.grad, fz_check judges the gradient of the graph instead of the graph itself:
 *   1. the derivation: gr_derive under the run's derivation faults (KF_GRAD_*, gr_faults_of)
 *      checked by the directional test (mp_grad_verify: <grad, t> against the oracle's exact
 *      directional derivative for FzRun.grad_pairs random pairs). A mismatch is one verdict,
 *      V_GRAD_MISMATCH, of the pseudo-backend "derivation", on the first wrong grad_X;
 *   2. the gradient graph's kernels: the derived graph checked like any graph on every
 *      backend of the run (its outputs are grad_X: they never collide with the derivation's
 *      record, which has no kernel).
 * Both are functions of the graph and the run, so classification (ablating directives and
 * faults) and the reducer (fz_holds) work on the original graph unchanged: a repro is the
 * smallest graph whose gradient fails the same way. FzRun.grad_verify says whether part 1
 * runs (dedup.c turns it off where only a kernel's failure is asked about, and the kernels
 * off where only the derivation's is: nbackends 0).
 *
 * A graph whose gradient this derivation does not support (gr_derive's code 2) has no
 * verdicts: res->grad_note says why. A derived graph that does not parse back (code 3) is a
 * toolkit bug: -1 with d, the case an error. An oracle that hits its limits: -2 as fz_check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"

/* The tensor name of "grad_x[3, 4] = ..." into buf. */
static void output_of(const char *what, char *buf, size_t n)
{
	size_t len = strcspn(what, "[ =");
	snprintf(buf, n, "%.*s", (int)len, what);
}

/* The derivation's record: verdict v on output out (format dt), reason why. */
static void derivation_record(const Graph *g, const FzRun *r, FzResult *res, const char *out,
			      Dtype dt, Verdict v, const char *why, int64_t n_elements)
{
	fz_sink_made(g, r, res, &(FzMade){
		.backend = "derivation", .sched = "-", .output = out, .dtype = dt, .verdict = v,
		.reason = why, .emu_why = "the derivation has no kernel", .n_elements = n_elements});
}

int fz_check_grad(const Graph *g, const FzRun *r, FzResult *res, Diag *d)
{
	GradOpts go = {.faults = gr_faults_of(r->faults)};
	Diag gd = {0};
	Graph *gg = gr_derive(g, &go, &gd);
	if (!gg) {
		if (gd.code == 2) {   /* unsupported: nothing to judge */
			snprintf(res->grad_note, sizeof res->grad_note, "unsupported: %.*s",
				 (int)strcspn(gd.msg ? gd.msg : "", "\n"), gd.msg ? gd.msg : "");
			diag_clear(&gd);
			return 0;
		}
		*d = gd;
		return -1;
	}
	snprintf(res->grad_note, sizeof res->grad_note, "derived");
	if (r->out_dir) {   /* a failure's folder keeps the gradient graph it judged */
		char *text = ir_print(gg), path[4096];
		snprintf(path, sizeof path, "%s/gradient.tg", r->out_dir);
		Diag wd = {0};
		fz_write_atomic(path, text, &wd);
		diag_clear(&wd);
		free(text);
	}
	int rc = 0;
	if (r->grad_verify) {
		MpGradOpts mo = {
			.pairs = r->grad_pairs > 0 ? r->grad_pairs : 2,
			.seed = r->seed,
			.mp = {.threads = 1, .deadline = mp_now() + (r->timeout_s > 0 ? r->timeout_s : 20)},
		};
		MpGradResult gr;
		Diag vd = {0};
		int vrc = mp_grad_verify(g, &go, &mo, &gr, &vd);
		if (vrc) {
			ir_free(gg);
			*d = vd;
			return vrc == -2 ? -2 : -1;
		}
		if (!gr.ok && !gr.nonfinite) {
			char out[64];
			output_of(gr.what, out, sizeof out);
			int t = ir_find_tensor(gg, out);
			Dtype dt = DT_F32;
			int64_t n = 0;
			for (int i = 0; i < gg->noutputs; i++)
				if (gg->outputs[i].tensor == t) {
					dt = gg->outputs[i].dtype;
					n = ir_tensor_count(gg, t);
				}
			char why[700];
			snprintf(why, sizeof why, "pair %d of %d: %s", gr.pair + 1, gr.pairs_done, gr.what);
			derivation_record(g, r, res, out, dt, V_GRAD_MISMATCH, why, n);
		} else {
			char out[64] = "grad";
			if (gg->noutputs)
				snprintf(out, sizeof out, "%s", gg->tensors[gg->outputs[0].tensor].name);
			char why[160];
			snprintf(why, sizeof why, "%d pairs%s%s", gr.pairs_done,
				 gr.undefined ? ", some with no finite derivative" : "",
				 gr.nonfinite ? ", an infinite intermediate (not judged)" : "");
			derivation_record(g, r, res, out, DT_F32, V_PASS, why, 0);
		}
	}
	if (r->nbackends > 0) {
		FzRun rk = *r;
		rk.grad = false;
		rc = fz_check(gg, &rk, res, d);
	}
	ir_free(gg);
	return rc;
}
