/* eval.c — the run: index the labels and the baseline, stream the results,
 * join by request_id, feed the accumulators, count what does not join.
 * Owns the reading of the three files and the problem list; the metrics are
 * qmetrics.c's, the A/B rules compare.c's, the output the report_*.c
 * writers'. */
#include "eval.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "join.h"
#include "record.h"
#include "util/sbuf.h"
#include "util/reserve.h"

typedef struct run {
    const vw_eval_opts *o;
    vw_eval_report *r;
    vw_eval_join join;
    vw_eval_rec a, b;
    vw_eval_lab lab;
} run;

/* ---- problems ---------------------------------------------------------------- */

void vw_eval_problem_print(FILE *log, const char *file, uint64_t line, const char *msg) {
    vw_sbuf sb = {0};
    vw_sbuf_put_visible(&sb, file, strlen(file));
    vw_sbuf_printf(&sb, ":%llu: ", (unsigned long long)line);
    vw_sbuf_put_visible(&sb, msg, strlen(msg));
    vw_sbuf_puts(&sb, "\n");
    if (!sb.oom)
        fwrite(sb.p, 1, sb.len, log);
    vw_sbuf_free(&sb);
}

/* a comes before b: by file name, then line number. */
static bool problem_before(const vw_eval_problem *a, const vw_eval_problem *b) {
    int c = strcmp(a->file, b->file);
    return c < 0 || (c == 0 && a->line < b->line);
}

static void problem(run *x, const char *file, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void problem(run *x, const char *file, uint64_t line, const char *fmt, ...) {
    vw_eval_report *r = x->r;
    vw_eval_problem p = {.file = file, .line = line};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p.msg, sizeof p.msg, fmt, ap);
    va_end(ap);
    r->problems_total++;
    /* Kept in (file, line) order, the first VW_EVAL_KEEP_PROBLEMS of it: a
     * labels line is found when its result is read, so in the results'
     * order (labels.jsonl:108 came before :32). Equal places keep the order
     * they were found in. */
    size_t at = r->n_problems;
    while (at > 0 && problem_before(&p, &r->problems[at - 1]))
        at--;
    if (at >= VW_EVAL_KEEP_PROBLEMS)
        return;
    size_t n = r->n_problems < VW_EVAL_KEEP_PROBLEMS ? r->n_problems : VW_EVAL_KEEP_PROBLEMS - 1;
    memmove(&r->problems[at + 1], &r->problems[at], (n - at) * sizeof p);
    r->problems[at] = p;
    if (r->n_problems < VW_EVAL_KEEP_PROBLEMS)
        r->n_problems++;
}

/* The kept problems, in order, then how many more there were. */
static void print_problems(const vw_eval_opts *o, const vw_eval_report *r) {
    size_t shown = r->n_problems < o->log_max ? r->n_problems : o->log_max;
    for (size_t i = 0; i < shown; i++)
        vw_eval_problem_print(o->log, r->problems[i].file, r->problems[i].line, r->problems[i].msg);
    if (r->problems_total > shown)
        fprintf(o->log, "eval: %llu more problems not shown\n",
                (unsigned long long)(r->problems_total - shown));
}

/* ---- per-file counts ----------------------------------------------------------- */

static vw_status count_status(vw_eval_file *f, const vw_eval_rec *rec, vw_err *err) {
    char key[64];
    size_t i;
    vw_eval_rec_status_key(rec, key, sizeof key);
    vw_status st = vw_strmap_put(&f->status, key, strlen(key), &i, NULL, err);
    if (st)
        return st;
    size_t had = f->status_cap;
    if (vw_reserve((void **)&f->status_n, &f->status_cap, i + 1, sizeof *f->status_n))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: statuses");
    memset(f->status_n + had, 0, (f->status_cap - had) * sizeof *f->status_n);
    f->status_n[i]++;
    return VW_OK;
}

static void file_free(vw_eval_file *f) {
    vw_strmap_free(&f->status);
    free(f->status_n);
}

/* ---- lines ------------------------------------------------------------------------ */

typedef struct lines {
    FILE *f;
    char *buf;
    size_t cap;
    int64_t off;  /* byte offset of the current line */
    int64_t next; /* of the next one */
    uint64_t no;  /* 1-based number of the current line */
} lines;

/* The next non-empty line without its newline (and a \r before it): 1, 0 at
 * the end, -1 on a read error. */
static int next_line(lines *l, const char **s, size_t *len) {
    for (;;) {
        ssize_t n = getline(&l->buf, &l->cap, l->f);
        if (n < 0)
            return ferror(l->f) ? -1 : 0;
        l->off = l->next;
        l->next += n;
        l->no++;
        while (n > 0 && (l->buf[n - 1] == '\n' || l->buf[n - 1] == '\r'))
            n--;
        if (n == 0)
            continue;
        *s = l->buf;
        *len = (size_t)n;
        return 1;
    }
}

/* Opens path and runs fn over its non-empty lines. */
static vw_status each_line(run *x, const char *path,
                           vw_status (*fn)(run *, const lines *, const char *, size_t, vw_err *),
                           vw_err *err) {
    lines l = {.f = fopen(path, "r")};
    const char *s;
    size_t len;
    int got;
    vw_status st = VW_OK;
    if (!l.f)
        return VW_FAIL(err, VW_EIO, "io_error", "%s: cannot open", path);
    while (!st && (got = next_line(&l, &s, &len)) > 0) {
        if (len > UINT32_MAX)
            st = VW_FAIL(err, VW_ETOOLONG, "too_long", "%s:%llu: a line over 4 GiB", path,
                         (unsigned long long)l.no);
        else
            st = fn(x, &l, s, len, err);
    }
    if (!st && got < 0)
        st = VW_FAIL(err, VW_EIO, "io_error", "%s: read error", path);
    free(l.buf);
    fclose(l.f);
    return st;
}

/* ---- indexing: labels, baseline ------------------------------------------------------ */

/* A line that does not parse: counted and reported; only out of memory stops
 * the run. */
static vw_status bad_line(run *x, vw_eval_file *f, const lines *l, const vw_err *why, vw_err *err) {
    f->bad_lines++;
    problem(x, f->path, l->no, "%s", why->msg);
    return why->status == VW_ENOMEM ? VW_FAIL(err, VW_ENOMEM, "out_of_memory", "%s", why->msg)
                                    : VW_OK;
}

/* The join entry of id for one file: *e is NULL for a duplicate (reported and
 * counted; the first line is used), else the entry, flagged and counted, with
 * this line's position for a side read back later (VW_SIDE_LABELS,
 * VW_SIDE_BASELINE; RESULTS: the results, streamed, keep none). */
enum { RESULTS = -1 };
static vw_status index_line(run *x, vw_eval_file *f, const lines *l, size_t len, const char *id,
                            int side, unsigned flag, vw_eval_entry **e, vw_err *err) {
    vw_status st = vw_eval_join_entry(&x->join, id, strlen(id), e, err);
    if (st)
        return st;
    if ((*e)->flags & flag) {
        f->duplicates++;
        if (side == RESULTS)
            problem(x, f->path, l->no, "request_id \"%.80s\" again (its first line is used)", id);
        else
            problem(x, f->path, l->no, "request_id \"%.80s\" again (line %u is used)", id,
                    (*e)->line[side]);
        *e = NULL;
        return VW_OK;
    }
    f->records++;
    (*e)->flags |= flag;
    if (side != RESULTS) {
        (*e)->off[side] = l->off;
        (*e)->len[side] = (uint32_t)len;
        (*e)->line[side] = (uint32_t)l->no;
    }
    return VW_OK;
}

static vw_status index_label(run *x, const lines *l, const char *s, size_t len, vw_err *err) {
    vw_eval_file *f = &x->r->labels;
    vw_eval_entry *e;
    vw_err why = {0};
    f->lines++;
    if (vw_eval_lab_parse(s, len, &x->lab, &why))
        return bad_line(x, f, l, &why, err);
    vw_status st = index_line(x, f, l, len, x->lab.id, VW_SIDE_LABELS, VW_JOIN_LABELS, &e, err);
    vw_eval_lab_clear(&x->lab);
    return st;
}

static vw_status index_baseline(run *x, const lines *l, const char *s, size_t len, vw_err *err) {
    vw_eval_file *f = &x->r->baseline;
    vw_eval_entry *e;
    vw_err why = {0};
    f->lines++;
    if (vw_eval_rec_parse(s, len, &x->b, &why))
        return bad_line(x, f, l, &why, err);
    vw_status st = index_line(x, f, l, len, x->b.id, VW_SIDE_BASELINE, VW_JOIN_BASELINE, &e, err);
    if (!st && e)
        st = count_status(f, &x->b, err);
    vw_eval_rec_clear(&x->b);
    return st;
}

/* ---- one result record ------------------------------------------------------------------ */

/* Every question of a 200 record into the table: answered or errors. */
static vw_status register_questions(run *x, const vw_eval_rec *a, vw_err *err) {
    for (size_t i = 0; i < a->n_ans; i++) {
        const vw_eval_answer *ans = &a->ans[i];
        vw_eval_q *q;
        vw_status st = vw_eval_qtable_get(&x->r->questions, ans->qid, ans->type, &q, err);
        if (st)
            return st;
        vw_eval_q_count(q, ans->error, ans->type);
    }
    return VW_OK;
}

static vw_status use_labels(run *x, const vw_eval_rec *a, const vw_eval_lab *lab, uint64_t line,
                            vw_err *err) {
    const char *qid;
    json_t *expected;
    json_object_foreach((json_t *)lab->labels, qid, expected) {
        const vw_eval_answer *ans = vw_eval_rec_find(a, qid);
        vw_eval_q *q = vw_eval_qtable_find(&x->r->questions, qid);
        vw_err why = {0};
        if (!ans) {
            x->r->unknown_qids++;
            problem(x, x->r->labels.path, line, "request \"%.80s\" has no question \"%.80s\"",
                    a->id, qid);
            continue;
        }
        if (ans->error || !q || ans->type != q->type)
            continue; /* counted as an error or a type conflict */
        vw_status st = vw_eval_q_observe(q, ans, expected, &why);
        if (st == VW_EINVAL) {
            x->r->bad_labels++;
            problem(x, x->r->labels.path, line, "request \"%.80s\": %s", a->id, why.msg);
        } else if (st)
            return VW_FAIL(err, st, why.type, "%s", why.msg);
    }
    return VW_OK;
}

/* The record's labels, when it has a labels line and an envelope. */
static vw_status join_labels(run *x, const vw_eval_rec *a, const vw_eval_entry *e, vw_err *err) {
    const char *s;
    size_t len;
    vw_status st;
    if (!(e->flags & VW_JOIN_LABELS)) {
        x->r->unlabelled++;
        return VW_OK;
    }
    x->r->labelled++;
    if (a->status != 200)
        return VW_OK;
    if ((st = vw_eval_join_read(&x->join, VW_SIDE_LABELS, e, &s, &len, err)) ||
        (st = vw_eval_lab_parse(s, len, &x->lab, err)))
        return st; /* it parsed when indexed: a changed file */
    st = use_labels(x, a, &x->lab, e->line[VW_SIDE_LABELS], err);
    vw_eval_lab_clear(&x->lab);
    return st;
}

static vw_status join_baseline(run *x, const vw_eval_rec *a, const vw_eval_entry *e, uint64_t seq,
                               vw_err *err) {
    const char *s;
    size_t len;
    bool changed;
    vw_status st;
    if (!(e->flags & VW_JOIN_BASELINE))
        return VW_OK;
    x->r->in_both++;
    if ((st = vw_eval_join_read(&x->join, VW_SIDE_BASELINE, e, &s, &len, err)) ||
        (st = vw_eval_rec_parse(s, len, &x->b, err)))
        return st;
    st = vw_eval_compare_records(&x->r->questions, a, &x->b, seq, &x->r->top, &x->r->flips,
                                 &changed, err);
    x->r->status_changed += changed;
    vw_eval_rec_clear(&x->b);
    return st;
}

static vw_status use_result(run *x, const lines *l, const char *s, size_t len, vw_err *err) {
    vw_eval_file *f = &x->r->results;
    vw_eval_entry *e;
    vw_err why = {0};
    vw_status st;
    f->lines++;
    if (vw_eval_rec_parse(s, len, &x->a, &why))
        return bad_line(x, f, l, &why, err);
    st = index_line(x, f, l, len, x->a.id, RESULTS, VW_JOIN_RESULTS, &e, err);
    if (!st && e) {
        vw_eval_entry at = *e; /* e moves if the index grows; nothing adds below */
        if (!(st = count_status(f, &x->a, err)) && !(st = register_questions(x, &x->a, err)) &&
            !(st = join_labels(x, &x->a, &at, err)))
            st = join_baseline(x, &x->a, &at, f->records, err);
    }
    vw_eval_rec_clear(&x->a);
    return st;
}

/* ---- the run ------------------------------------------------------------------------------ */

static void count_unjoined(run *x) {
    vw_eval_report *r = x->r;
    for (size_t i = 0; i < x->join.ids.n; i++) {
        uint32_t fl = x->join.e[i].flags;
        if ((fl & VW_JOIN_LABELS) && !(fl & VW_JOIN_RESULTS))
            r->labels_without_result++;
        if ((fl & VW_JOIN_BASELINE) && !(fl & VW_JOIN_RESULTS))
            r->only_in_baseline++;
    }
    if (r->has_baseline)
        r->only_in_results = r->results.records - r->in_both;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

vw_status vw_eval_run(const vw_eval_opts *o, vw_eval_report **out, vw_err *err) {
    run x = {.o = o};
    vw_status st = VW_OK;
    double t0 = now_s();
    *out = NULL;
    if (!(x.r = calloc(1, sizeof *x.r)))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: report");
    vw_eval_join_init(&x.join);
    x.r->results.path = o->results;
    x.r->baseline.path = o->baseline;
    x.r->labels.path = o->labels;
    x.r->has_baseline = o->baseline != NULL;
    x.r->has_labels = o->labels != NULL;
    x.r->top.cap = o->baseline ? o->top : 0;
    if (o->labels && !(st = vw_eval_join_open(&x.join, VW_SIDE_LABELS, o->labels, err)))
        st = each_line(&x, o->labels, index_label, err);
    if (!st && o->baseline &&
        !(st = vw_eval_join_open(&x.join, VW_SIDE_BASELINE, o->baseline, err)))
        st = each_line(&x, o->baseline, index_baseline, err);
    if (!st)
        st = each_line(&x, o->results, use_result, err);
    if (!st) {
        count_unjoined(&x);
        for (size_t i = 0; i < x.r->questions.ids.n; i++)
            vw_eval_q_finish(x.r->questions.q[i]);
        vw_eval_top_sort(&x.r->top);
        if (o->log)
            print_problems(o, x.r);
    }
    vw_eval_rec_free(&x.a);
    vw_eval_rec_free(&x.b);
    vw_eval_lab_clear(&x.lab);
    vw_eval_join_free(&x.join);
    x.r->seconds = now_s() - t0;
    if (st)
        vw_eval_report_free(x.r);
    else
        *out = x.r;
    return st;
}

void vw_eval_report_free(vw_eval_report *r) {
    if (!r)
        return;
    file_free(&r->results);
    file_free(&r->baseline);
    file_free(&r->labels);
    vw_eval_qtable_free(&r->questions);
    vw_eval_top_free(&r->top);
    free(r);
}
