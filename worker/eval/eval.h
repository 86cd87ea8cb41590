/* eval.h — `vela-worker eval`: replay results (and optionally a baseline
 * replay and a labels file) in, a report out (docs/eval.md).
 *
 * The labels and the baseline are indexed first (join.h: ids and line
 * positions only); the results are then streamed line by line, each record
 * joined by request_id with its labels and baseline lines (read back), its
 * questions fed to their accumulators (qmetrics.h) and compared (compare.h).
 * Memory: the ids, 40 bytes per indexed id, one (p, label) pair per labelled
 * Noul answer (AUROC), and per question its labels seen; never an envelope
 * beyond the one being read.
 *
 * Missing, extra and duplicate ids are counted; a duplicate's later lines
 * are not used. A line that is not a usable record, and a label that does
 * not fit its question or names a question its result does not have, is a
 * problem: counted, kept (the first VW_EVAL_KEEP_PROBLEMS by file name, then
 * line number) and, once the run is done, written to opts->log in that order
 * as "file:line: message" (at most log_max, then a count of the others;
 * vw_eval_problem_print).
 * Empty lines are skipped.
 *
 * Ownership: the caller frees the report (vw_eval_report_free); the report
 * borrows the option paths. Thread-safety: none (one run, one thread).
 * Errors: VW_EIO (a file cannot be read), VW_ENOMEM, VW_ETOOLONG (a line over
 * 4 GiB); bad content is never an error of the run.
 */
#ifndef VW_EVAL_EVAL_H
#define VW_EVAL_EVAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "compare.h"
#include "qtable.h"
#include "strmap.h"

typedef struct vw_eval_opts {
    const char *results;  /* replay JSONL (required) */
    const char *baseline; /* replay JSONL of the same records, or NULL */
    const char *labels;   /* labels JSONL, or NULL */
    size_t top;           /* keep the N records that changed most (needs baseline) */
    FILE *log;            /* the problems at the end of the run; NULL: none written */
    size_t log_max;       /* at most this many problem lines (then a count) */
} vw_eval_opts;

#define VW_EVAL_KEEP_PROBLEMS 20

typedef struct vw_eval_problem {
    const char *file;
    uint64_t line;
    char msg[240];
} vw_eval_problem;

/* One input file's counts. lines = records + duplicates + bad_lines. */
typedef struct vw_eval_file {
    const char *path;
    uint64_t lines, records, duplicates, bad_lines;
    vw_strmap status; /* "200", "422", "dead_letter:<type>" (replay files) */
    uint64_t *status_n;
    size_t status_cap;
} vw_eval_file;

typedef struct vw_eval_report {
    vw_eval_file results, baseline, labels;
    bool has_baseline, has_labels;
    uint64_t bad_labels;            /* labels that did not fit their question */
    uint64_t unknown_qids;          /* labels naming a question the result lacks */
    uint64_t labelled, unlabelled;  /* results records with / without a labels line */
    uint64_t labels_without_result; /* labels ids the results do not have */
    uint64_t in_both, only_in_results, only_in_baseline, status_changed;
    vw_eval_qtable questions;
    vw_eval_top top;
    vw_eval_flips flips; /* A/B: the first flipped decisions (compare.h) */
    vw_eval_problem problems[VW_EVAL_KEEP_PROBLEMS];
    size_t n_problems;
    uint64_t problems_total;
    double seconds;
} vw_eval_report;

/* Writes "file:line: msg\n" to log, file and msg escaped for the terminal
 * (vw_sbuf_put_visible: a message quotes record strings). The problem line
 * of the run and of --list. */
void vw_eval_problem_print(FILE *log, const char *file, uint64_t line, const char *msg);

/* Runs the evaluation; on success *out is the finished report. */
vw_status vw_eval_run(const vw_eval_opts *opts, vw_eval_report **out, vw_err *err);
void vw_eval_report_free(vw_eval_report *r);

/* The count of status key i of a file (keys in first-seen order). */
static inline uint64_t vw_eval_status_count(const vw_eval_file *f, size_t i) {
    return f->status_n[i];
}

#endif
