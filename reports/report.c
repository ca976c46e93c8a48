/* reports/report.c: rp_report, which writes a whole report: the summary once, the plots
 * (gnuplot), then index.html, report.md, report.json and junit.xml into OUT.
 *
 * Each file is written to NAME.tmp and renamed into place, so a reader never sees half a
 * report and a failed write leaves the previous report whole. A missing gnuplot costs the
 * plots only (RpMade.plot_note says why); a file that cannot be written is an error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reports.h"

typedef struct {
	const RpRun *run;
	const RpSummary *s;
	const RpPlot *plots;
	int nplots;
	const char *note;
	const char *out;
} Parts;

typedef void Writer(FILE *f, const Parts *p);

static void html(FILE *f, const Parts *p)
{
	rp_html(f, p->run, p->s, p->plots, p->nplots, p->note, p->out);
}

static void md(FILE *f, const Parts *p)
{
	rp_markdown(f, p->run, p->s, p->out);
}

static void json(FILE *f, const Parts *p)
{
	rp_json_report(f, p->run, p->s);
}

static void junit(FILE *f, const Parts *p)
{
	rp_junit(f, p->run);
}

static int write_file(const Parts *p, const char *name, Writer *w, Diag *d)
{
	char *path = NULL, *tmp = NULL;
	IR_ASSERT(asprintf(&path, "%s/%s", p->out, name) >= 0 &&
		  asprintf(&tmp, "%s/%s.tmp", p->out, name) >= 0);
	int rc = -1;
	FILE *f = fopen(tmp, "w");
	if (!f) {
		diag_set(d, 2, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	w(f, p);
	bool bad = ferror(f);
	if (fclose(f) || bad || rename(tmp, path)) {
		diag_set(d, 2, "cannot write %s: %s", path, strerror(errno));
		remove(tmp);
		goto out;
	}
	rc = 0;
out:
	free(path);
	free(tmp);
	return rc;
}

int rp_report(const RpRun *run, const char *out, const RpOpts *o, RpMade *made, Diag *d)
{
	memset(made, 0, sizeof *made);
	if (vf_mkdirs(out, d))
		return -1;
	RpSummary s;
	rp_summarise(run, &s);
	RpPlot plots[RP_MAXPLOTS] = {{0}};
	int np = 0;
	char *note = NULL;
	rp_plots(run, &s, out, o, plots, &np, &note);
	Parts p = {run, &s, plots, np, note, out};
	static const struct { const char *name; Writer *w; } files[] = {
		{"index.html", html}, {"report.md", md}, {"report.json", json}, {"junit.xml", junit},
	};
	int rc = 0;
	for (size_t i = 0; i < ARRAY_LEN(files) && rc == 0; i++)
		rc = write_file(&p, files[i].name, files[i].w, d);
	made->nplots = np;
	made->plot_note = note;
	rp_plots_free(plots, np);
	rp_summary_free(&s);
	if (rc) {
		free(note);
		made->plot_note = NULL;
	}
	return rc;
}
