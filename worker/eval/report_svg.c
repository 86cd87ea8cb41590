/* report_svg.c — the report's figures (see report_svg.h). Owns their drawing:
 * frames, axes, bars and dots in SVG user units; computes nothing but the bin
 * means and ranges it shows. */
#include "report_svg.h"

#include <math.h>
#include <string.h>

/* The plot frame every figure shares: origin (X, Y), size W × H, a strip of
 * S below it for counts. */
enum { X = 44, Y = 12, W = 260, H = 200, S = 36, PAD = 12 };

static const char font[] = "font-size=10 font-family='DejaVu Sans,Arial,sans-serif'";

void vw_eval_html_esc(vw_sbuf *sb, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&':
            vw_sbuf_puts(sb, "&amp;");
            break;
        case '<':
            vw_sbuf_puts(sb, "&lt;");
            break;
        case '>':
            vw_sbuf_puts(sb, "&gt;");
            break;
        case '"':
            vw_sbuf_puts(sb, "&quot;");
            break;
        default:
            vw_sbuf_put(sb, s, 1);
        }
    }
}

/* <div class=card data-q="QID"><h3>WHAT: QID <span class=muted>(</span>... */
static void card_open(vw_sbuf *sb, const char *what, const vw_eval_q *q) {
    vw_sbuf_puts(sb, "<div class=card data-q=\"");
    vw_eval_html_esc(sb, q->qid);
    vw_sbuf_printf(sb, "\"><h3>%s: ", what);
    vw_eval_html_esc(sb, q->qid);
    vw_sbuf_puts(sb, " <span class=muted>(");
}

static void svg_open(vw_sbuf *sb, int w, int h) {
    vw_sbuf_printf(sb, ")</span></h3><svg width=%d height=%d viewBox='0 0 %d %d' %s>", w, h, w, h,
                   font);
}

static void frame(vw_sbuf *sb) {
    vw_sbuf_printf(sb, "<rect x=%d y=%d width=%d height=%d fill='#fff' stroke='#99a'/>", X, Y, W,
                   H);
    for (int g = 1; g < 5; g++)
        vw_sbuf_printf(sb, "<line x1=%d y1=%d x2=%d y2=%d stroke='#eef'/>", X, Y + H - g * H / 5,
                       X + W, Y + H - g * H / 5);
}

/* Tick labels: x from lo to hi at `step` under the frame, y likewise. */
static void x_ticks(vw_sbuf *sb, double lo, double hi, double step, const char *fmt) {
    for (double v = lo; v <= hi + 1e-9; v += step) {
        vw_sbuf_printf(sb, "<text x=%.1f y=%d text-anchor=middle>", X + (v - lo) / (hi - lo) * W,
                       Y + H + 13);
        vw_sbuf_printf(sb, fmt, v);
        vw_sbuf_puts(sb, "</text>");
    }
}

static void y_ticks(vw_sbuf *sb, double hi, const char *fmt) {
    for (int t = 0; t <= 5; t++) {
        vw_sbuf_printf(sb, "<text x=%d y=%d text-anchor=end>", X - 4, Y + H - t * H / 5 + 3);
        vw_sbuf_printf(sb, fmt, hi * t / 5.0);
        vw_sbuf_puts(sb, "</text>");
    }
}

static void axis_names(vw_sbuf *sb, const char *x_name, const char *y_name, int bottom) {
    vw_sbuf_printf(sb, "<text x=%d y=%d text-anchor=middle>%s</text>", X + W / 2, bottom, x_name);
    vw_sbuf_printf(sb, "<text x=10 y=%d transform='rotate(-90 10 %d)' text-anchor=middle>%s</text>",
                   Y + H / 2, Y + H / 2, y_name);
}

/* A count axis up to the first multiple of a 1-2-5 step at or over most,
 * at most 6 ticks; returns that top (the bars' full height). */
static double count_axis(vw_sbuf *sb, uint64_t most) {
    uint64_t step = 1;
    for (int k = 0; most / step > 5; k++)
        step *= k % 3 == 1 ? 5 : 2; /* 1, 2, 10, 20, 100, ... with 5s between */
    uint64_t top = (most + step - 1) / step * step;
    for (uint64_t v = 0; v <= top; v += step)
        vw_sbuf_printf(sb, "<text x=%d y=%.1f text-anchor=end>%llu</text>", X - 4,
                       Y + H - (double)v / (double)top * H + 3, (unsigned long long)v);
    return (double)top;
}

/* "+0.5", "0", "-1" */
static void signed_ticks(vw_sbuf *sb, double lo, double hi, double step) {
    for (double v = lo; v <= hi + 1e-9; v += step)
        vw_sbuf_printf(sb, "<text x=%.1f y=%d text-anchor=middle>%s%g</text>",
                       X + (v - lo) / (hi - lo) * W, Y + H + 13, v > 1e-9 ? "+" : "",
                       fabs(v) < 1e-9 ? 0.0 : v);
}

/* A count strip under the frame: bar i of n, height by count / most. */
static void strip_bar(vw_sbuf *sb, double x0, double bw, uint64_t count, uint64_t most) {
    double h = (double)count / (double)most * (S - 6);
    vw_sbuf_printf(sb, "<rect x=%.1f y=%.1f width=%.1f height=%.1f fill='#8892a6'/>", x0 + 0.5,
                   Y + H + 22 + (S - 6) - h, bw > 1.5 ? bw - 1 : bw, h);
}

/* A tick step for a range of `span` units: 1, 2, 5, 10, ... giving at most 8
 * ticks. */
static double tick_step(double span) {
    double step = 1;
    while (span / step > 8)
        step *= step == 1 || step >= 10 ? 2 : 2.5;
    return step;
}

/* ---- reliability ---------------------------------------------------------------- */

void vw_eval_svg_reliability(vw_sbuf *sb, const vw_eval_q *q) {
    const vw_eval_ece *e = q->type == VW_QT_CHOICE ? &q->choice.ece : &q->noul.ece;
    uint64_t most = 1;
    for (int b = 0; b < VW_EVAL_BINS; b++)
        most = e->n[b] > most ? e->n[b] : most;
    card_open(sb, "reliability", q);
    vw_sbuf_printf(sb, "ECE %.4f, n %llu", q->m.ece, (unsigned long long)q->n);
    svg_open(sb, X + W + PAD, Y + H + S + 34);
    frame(sb);
    for (int b = 0; b < VW_EVAL_BINS; b++) {
        if (!e->n[b])
            continue;
        double acc = (double)e->correct[b] / (double)e->n[b], conf = e->conf[b] / (double)e->n[b];
        double x0 = X + (double)W * b / VW_EVAL_BINS, bw = (double)W / VW_EVAL_BINS;
        vw_sbuf_printf(sb,
                       "<rect x=%.1f y=%.1f width=%.1f height=%.1f fill='#5b8def' "
                       "fill-opacity=0.75 stroke='#2c5cc5'/>",
                       x0 + 1, Y + H - acc * H, bw - 2, acc * H);
        vw_sbuf_printf(sb, "<circle cx=%.1f cy=%.1f r=2.6 fill='#d9480f'/>", X + conf * W,
                       Y + H - acc * H);
        strip_bar(sb, x0 + 0.5, bw - 1, e->n[b], most);
    }
    vw_sbuf_printf(sb, "<line x1=%d y1=%d x2=%d y2=%d stroke='#444' stroke-dasharray='4 3'/>", X,
                   Y + H, X + W, Y);
    x_ticks(sb, 0, 1, 0.2, "%.1f");
    y_ticks(sb, 1, "%.1f");
    axis_names(sb, "confidence", "accuracy", Y + H + S + 30);
    vw_sbuf_printf(sb,
                   "</svg><p class=legend>15 bins. Bars: accuracy per bin; dots: its mean "
                   "confidence;<br>dashed: perfect calibration; grey: answers per bin (max "
                   "%llu).</p></div>",
                   (unsigned long long)most);
}

/* ---- score ---------------------------------------------------------------------- */

/* The levels a score plot spans: [0, R], R the largest prediction or label
 * seen rounded up (at least 1). */
static double score_range(const vw_eval_q *q) {
    double r = ceil(q->score.top);
    return r < 1 ? 1 : r;
}

void vw_eval_svg_score_calibration(vw_sbuf *sb, const vw_eval_q *q) {
    const vw_eval_score_bins *s = &q->score;
    double r = score_range(q), step = VW_EVAL_SCORE_STEP;
    size_t nb = (size_t)(r / step);
    if (nb > VW_EVAL_SCORE_BINS)
        nb = VW_EVAL_SCORE_BINS;
    uint64_t most = 1;
    for (size_t b = 0; b < nb; b++)
        most = s->n[b] > most ? s->n[b] : most;
    card_open(sb, "calibration", q);
    vw_sbuf_printf(sb, "MAE %.4f, RMSE %.4f, n %llu", q->m.mae, q->m.rmse,
                   (unsigned long long)q->n);
    svg_open(sb, X + W + PAD, Y + H + S + 34);
    frame(sb);
    vw_sbuf_printf(sb, "<line x1=%d y1=%d x2=%d y2=%d stroke='#444' stroke-dasharray='4 3'/>", X,
                   Y + H, X + W, Y);
    vw_sbuf_puts(sb, "<polyline fill=none stroke='#5b8def' stroke-width=1.5 points='");
    for (size_t b = 0; b < nb; b++)
        if (s->n[b])
            vw_sbuf_printf(sb, "%.1f,%.1f ", X + s->pred[b] / (double)s->n[b] / r * W,
                           Y + H - s->label[b] / (double)s->n[b] / r * H);
    vw_sbuf_puts(sb, "'/>");
    double bw = (double)W / (double)nb;
    for (size_t b = 0; b < nb; b++) {
        if (!s->n[b])
            continue;
        double mp = s->pred[b] / (double)s->n[b], ml = s->label[b] / (double)s->n[b];
        vw_sbuf_printf(sb, "<circle cx=%.1f cy=%.1f r=3 fill='#d9480f'/>", X + mp / r * W,
                       Y + H - ml / r * H);
        strip_bar(sb, X + (double)b * bw, bw, s->n[b], most);
    }
    double t = tick_step(r);
    x_ticks(sb, 0, r, t, "%g");
    for (double v = 0; v <= r + 1e-9; v += t)
        vw_sbuf_printf(sb, "<text x=%d y=%.1f text-anchor=end>%g</text>", X - 4,
                       Y + H - v / r * H + 3, v);
    axis_names(sb, "predicted score", "mean label", Y + H + S + 30);
    vw_sbuf_printf(sb,
                   "</svg><p class=legend>Dots: the mean label of the answers in each "
                   "quarter-level<br>bin of the prediction; dashed: perfect calibration;<br>"
                   "grey: answers per bin (max %llu).</p></div>",
                   (unsigned long long)most);
}

void vw_eval_svg_score_residuals(vw_sbuf *sb, const vw_eval_q *q) {
    const vw_eval_score_bins *s = &q->score;
    double r = score_range(q), step = VW_EVAL_SCORE_STEP;
    int half = (int)(r / step), mid = VW_EVAL_RES_BINS / 2;
    if (half > mid)
        half = mid;
    uint64_t most = 1;
    for (int b = mid - half; b < mid + half; b++)
        most = s->res[b] > most ? s->res[b] : most;
    double bias = q->n ? s->res_sum / (double)q->n : NAN;
    card_open(sb, "residuals", q);
    vw_sbuf_printf(sb, "bias %+.4f, n %llu", bias, (unsigned long long)q->n);
    svg_open(sb, X + W + PAD, Y + H + 40);
    frame(sb);
    double top = count_axis(sb, most), bw = (double)W / (2.0 * half);
    for (int b = mid - half; b < mid + half; b++) {
        if (!s->res[b])
            continue;
        double h = (double)s->res[b] / top * H;
        vw_sbuf_printf(sb,
                       "<rect x=%.1f y=%.1f width=%.1f height=%.1f fill='#5b8def' "
                       "fill-opacity=0.75 stroke='#2c5cc5'/>",
                       X + (b - (mid - half)) * bw + 0.5, Y + H - h, bw > 1.5 ? bw - 1 : bw, h);
    }
    vw_sbuf_printf(sb, "<line x1=%d y1=%d x2=%d y2=%d stroke='#444'/>", X + W / 2, Y, X + W / 2,
                   Y + H);
    if (!isnan(bias)) {
        double bx = X + W / 2.0 + bias / r * (W / 2.0);
        vw_sbuf_printf(sb,
                       "<line x1=%.1f y1=%d x2=%.1f y2=%d stroke='#d9480f' stroke-width=1.5 "
                       "stroke-dasharray='4 3'/>",
                       bx, Y, bx, Y + H);
    }
    signed_ticks(sb, -r, r, tick_step(2 * r));
    axis_names(sb, "prediction &#8722; label", "answers", Y + H + 32);
    vw_sbuf_puts(sb, "</svg><p class=legend>Quarter-level bins; black: zero; orange dashed: the "
                     "mean<br>residual (bias). Beyond the range: in the end bins.</p></div>");
}

/* ---- per-label precision and recall ------------------------------------------------ */

void vw_eval_svg_prf(vw_sbuf *sb, const vw_eval_q *q, const vw_eval_labelled *l) {
    enum { ROW = 28, BAR = 10, BW = 200 };
    size_t longest = 4;
    for (size_t i = 0; i < l->names.n; i++) {
        size_t n = strlen(vw_strmap_key(&l->names, i));
        longest = n > longest ? n : longest;
    }
    int name_w = (int)(longest > 24 ? 24 : longest) * 7 + 8, x0 = name_w;
    int h = (int)l->names.n * ROW + 30, w = x0 + BW + 110;
    card_open(sb, "precision and recall", q);
    vw_sbuf_printf(sb, "per label%s", q->type == VW_QT_SPAN ? ", exact spans" : "");
    svg_open(sb, w, h);
    for (int g = 0; g <= 4; g++)
        vw_sbuf_printf(sb, "<line x1=%d y1=4 x2=%d y2=%d stroke='#eef'/>", x0 + g * BW / 4,
                       x0 + g * BW / 4, h - 22);
    for (size_t i = 0; i < l->names.n; i++) {
        vw_eval_prf c = l->c[i];
        double v[2] = {vw_eval_precision(c), vw_eval_recall(c)};
        static const char *const fill[2] = {"#5b8def", "#e8590c"};
        int y = 6 + (int)i * ROW;
        const char *name = vw_strmap_key(&l->names, i);
        vw_sbuf_printf(sb, "<text x=%d y=%d text-anchor=end>", x0 - 6, y + BAR + 4);
        if (strlen(name) > 24) {
            char cut[32];
            snprintf(cut, sizeof cut, "%.22s", name);
            vw_eval_html_esc(sb, cut);
            vw_sbuf_puts(sb, "&#8230;");
        } else {
            vw_eval_html_esc(sb, name);
        }
        vw_sbuf_puts(sb, "</text>");
        for (int k = 0; k < 2; k++) {
            int by = y + k * (BAR + 2);
            if (!isnan(v[k]))
                vw_sbuf_printf(sb, "<rect x=%d y=%d width=%.1f height=%d fill='%s'/>", x0, by,
                               v[k] * BW, BAR, fill[k]);
            if (isnan(v[k]))
                vw_sbuf_printf(sb, "<text x=%d y=%d>&#8211;</text>", x0 + 4, by + BAR - 1);
            else
                vw_sbuf_printf(sb, "<text x=%.1f y=%d>%.2f</text>", x0 + v[k] * BW + 4,
                               by + BAR - 1, v[k]);
        }
        vw_sbuf_printf(sb, "<text x=%d y=%d fill='#667'>n %llu</text>", x0 + BW + 40, y + BAR + 4,
                       (unsigned long long)(c.tp + c.fn));
    }
    for (int g = 0; g <= 4; g++)
        vw_sbuf_printf(sb, "<text x=%d y=%d text-anchor=middle>%.2g</text>", x0 + g * BW / 4, h - 8,
                       g / 4.0);
    vw_sbuf_puts(sb, "</svg><p class=legend><span style='color:#2c5cc5'>&#9632;</span> precision, "
                     "<span style='color:#e8590c'>&#9632;</span> recall; n: the label's "
                     "support;<br>&#8211;: undefined (never predicted, or never "
                     "expected).</p></div>");
}

/* ---- A/B ---------------------------------------------------------------------------- */

void vw_eval_svg_changes(vw_sbuf *sb, const vw_eval_q *q) {
    uint64_t most = 1, n = 0;
    for (int b = 0; b < VW_EVAL_DELTA_BINS; b++) {
        most = q->cmp_hist[b] > most ? q->cmp_hist[b] : most;
        n += q->cmp_hist[b];
    }
    double mean = n ? q->cmp_change_sum / (double)n : NAN;
    card_open(sb, "probability change", q);
    vw_sbuf_printf(sb, "results &#8722; baseline, n %llu", (unsigned long long)n);
    svg_open(sb, X + W + PAD, Y + H + 40);
    frame(sb);
    double top = count_axis(sb, most), bw = (double)W / VW_EVAL_DELTA_BINS;
    for (int b = 0; b < VW_EVAL_DELTA_BINS; b++) {
        if (!q->cmp_hist[b])
            continue;
        double h = (double)q->cmp_hist[b] / top * H;
        vw_sbuf_printf(sb,
                       "<rect x=%.1f y=%.1f width=%.1f height=%.1f fill='#5b8def' "
                       "fill-opacity=0.75 stroke='#2c5cc5'/>",
                       X + b * bw + 0.5, Y + H - h, bw - 1, h);
    }
    vw_sbuf_printf(sb, "<line x1=%d y1=%d x2=%d y2=%d stroke='#444'/>", X + W / 2, Y, X + W / 2,
                   Y + H);
    if (!isnan(mean)) {
        double mx = X + (mean + 1.0) / 2.0 * W;
        vw_sbuf_printf(sb,
                       "<line x1=%.1f y1=%d x2=%.1f y2=%d stroke='#d9480f' stroke-width=1.5 "
                       "stroke-dasharray='4 3'/>",
                       mx, Y, mx, Y + H);
    }
    signed_ticks(sb, -1, 1, 0.5);
    axis_names(sb, "&#916;p", "answers", Y + H + 32);
    vw_sbuf_printf(sb,
                   "</svg><p class=legend>%s; orange dashed: the mean change.<br>Flipped "
                   "decisions: %llu of %llu (listed below).</p></div>",
                   q->type == VW_QT_CHOICE ? "The probability of the results' pick"
                                           : "The Noul probability",
                   (unsigned long long)(q->cmp_n - q->cmp_agree), (unsigned long long)q->cmp_n);
}
