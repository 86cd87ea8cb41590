/* report_svg.h — the HTML report's figures (docs/eval.md "Output"): each one
 * a card (<div class=card data-q=QID>) with a title, one inline SVG (no
 * script, no font or file fetched) and a legend, drawn from a question's
 * finished accumulators. report_html.c lays the cards out, a question's
 * together.
 *
 * Ownership: everything is borrowed; output is appended to sb (its oom flag
 * says whether it all fit). Thread-safety: none. Cannot fail otherwise.
 */
#ifndef VW_EVAL_REPORT_SVG_H
#define VW_EVAL_REPORT_SVG_H

#include "qmetrics.h"
#include "util/sbuf.h"

/* Text with & < > " escaped (every string from a file goes through it). */
void vw_eval_html_esc(vw_sbuf *sb, const char *s);

/* A reliability diagram (choice, noul): per confidence bin its accuracy, its
 * mean confidence, the diagonal, the answers per bin. */
void vw_eval_svg_reliability(vw_sbuf *sb, const vw_eval_q *q);

/* A score question's calibration: the mean label of each quarter-level bin
 * of the prediction against the bin's mean prediction, the diagonal, the
 * answers per bin. */
void vw_eval_svg_score_calibration(vw_sbuf *sb, const vw_eval_q *q);

/* A score question's residuals (prediction − label) as a histogram of
 * quarter levels, zero and the mean (the bias) marked. */
void vw_eval_svg_score_residuals(vw_sbuf *sb, const vw_eval_q *q);

/* Per-label precision and recall bars of a set question (l = &q->set) or a
 * span question (l = &q->span.per, exact spans), with each label's support. */
void vw_eval_svg_prf(vw_sbuf *sb, const vw_eval_q *q, const vw_eval_labelled *l);

/* A/B: the histogram of a choice's or Noul's probability changes (results −
 * baseline), zero and the mean marked, with the flipped count. */
void vw_eval_svg_changes(vw_sbuf *sb, const vw_eval_q *q);

#endif
