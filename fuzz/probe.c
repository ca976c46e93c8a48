/* fuzz/probe.c: the FPRev probes of a case's sums (FzRun.probes; docs/probe.md, "In every
 * campaign").
 *
 * A rounding-only bug in how a kernel orders a sum (partials combined in another order, a
 * pairwise tree split elsewhere, a term dropped into another partial) changes the result
 * only where the values make the orders round differently, and a budget allows any order's
 * error: the emulation check sees it only on the rare inputs where it shows. A probe sees
 * the order itself, whatever the values: each of the first r->probes definitions of g (in
 * file order) that vf_probe_eligible accepts with at most FZ_PROBE_LEAVES summands, under g's
 * own schedule (its block, else the default), is probed on every backend of the run
 * (vf_probe_graph keeps its name, reduction indices, extents, accum, order and split). Each
 * probe is one record: backend B, schedule "probe" (its text the probe graph's schedule),
 * output the sum's name, format its accumulation's, verdict pass, tree-mismatch (the
 * kernel's tree is not the declared one: the reason gives both), or the worker's verdict
 * when the probe kernel did not run (a compile error, a crash).
 *
 * Everything is a function of the graph and the run, so classification (ablating
 * directives and faults), the reducer (fz_holds) and failure folders work unchanged: a
 * repro is the smallest graph whose sum still sums in the wrong tree. A backend that is
 * unavailable gets no probe record (the check's own records say why), nor does an
 * --external kernel (a probe graph is not within what it declares).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"

int fz_check_probes(const Graph *g, const FzRun *r, FzResult *res, Diag *d)
{
	if (r->probes <= 0 || r->nbackends == 0)
		return 0;
	Schedule s;
	Diag sd = {0};
	if (sched_build(g, &s, &sd)) {   /* the check itself has reported this graph's schedule */
		diag_clear(&sd);
		return 0;
	}
	VfOpts vo = fz_vf_opts(r, NULL, NULL);
	int done = 0, rc = 0;
	for (int k = 0; k < g->ndefs && done < r->probes && rc == 0; k++) {
		int leaves;
		char why[256];
		if (vf_probe_eligible(g, &s, k, FZ_PROBE_LEAVES, &leaves, why, sizeof why))
			continue;
		done++;
		Graph *pg = vf_probe_graph(g, &s, k, d);
		if (!pg) {
			rc = -1;
			break;
		}
		const char *out = g->tensors[g->defs[k].out[0]].name;
		for (int b = 0; b < r->nbackends && rc == 0; b++) {
			const Backend *be = r->backends[b];
			char una[256];
			/* an --external kernel computes the graphs its capabilities declare, and a
			 * probe graph is not one of the campaign's: only assay's own backends */
			if (vf_external_find(be->name) || vf_available(r->pool, be, una, sizeof una))
				continue;
			VfProbe pr;
			if (vf_probe_run(pg, be, &vo.w, &pr, d)) {
				rc = -1;
				break;
			}
			char reason[1400];
			Verdict v;
			if (!pr.ran) {
				v = vf_worker_verdict(pr.status);
				snprintf(reason, sizeof reason, "the probe's kernel: %s", pr.why);
			} else if (pr.same) {
				v = V_PASS;
				snprintf(reason, sizeof reason, "%d leaves: the declared tree", pr.leaves);
			} else {
				v = V_TREE_MISMATCH;
				snprintf(reason, sizeof reason, "%d leaves: kernel %.600s, declared %.600s",
					 pr.leaves, pr.kernel_tree ? pr.kernel_tree : "(no tree)",
					 pr.declared_tree ? pr.declared_tree : "(no tree)");
			}
			fz_sink_made(g, r, res, &(FzMade){
				.backend = be->name, .sched = "probe", .sched_text = pr.sched_text,
				.output = out, .dtype = pr.acc, .verdict = v, .reason = reason,
				.emu_why = "a probe: the tree is compared, not the values",
				.n_elements = (int64_t)pr.leaves * (pr.leaves - 1) / 2});
			vf_probe_free(&pr);
		}
		ir_free(pg);
	}
	sched_free(&s);
	return rc;
}
