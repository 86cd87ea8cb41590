/* record.h — one line of a replay file or of a labels file, parsed (jansson)
 * and checked, with the questions of an envelope found under their types.
 *
 * A replay line (worker/sink.c write_line) is
 *   {"source", "request_id", "vela_status": N, "value": <result value>}  or
 *   {"source", "request_id", "dead_letter": "<type>"};
 * a 200 value is an envelope (docs/envelope.md): a question's answer is
 *   choice/noul/score  answers.<qid> ({"type","choice","probabilities"}, {"noul"}, {"score"}),
 *   set                sets.<qid> ({"selected","probabilities"}); its fanned-out
 *                      answers."<qid>.<label>" Nouls are not questions of their own,
 *   span               spans.<qid> ([{"label","start","end",...}]; answers.<qid> is its Noul),
 *   an error           answers.<qid> = {"type": T, "error": "<type>", ...}.
 * A labels line is {"request_id": "...", "labels": {"<qid>": <expected>, ...}}.
 *
 * Ownership: a vw_eval_rec / vw_eval_lab owns its JSON tree; every pointer in
 * it borrows from that tree until vw_eval_rec_clear / vw_eval_lab_clear.
 * Thread-safety: none. Errors: VW_EINVAL with a one-line reason in err->msg
 * ("not JSON: …", "answers.intent: probabilities must be an object") for a
 * line that cannot be used; VW_ENOMEM. On failure the record is cleared.
 */
#ifndef VW_EVAL_RECORD_H
#define VW_EVAL_RECORD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "vw_status.h"

typedef enum vw_qtype {
    VW_QT_UNKNOWN = 0, /* a per-question error that names no known type */
    VW_QT_CHOICE,
    VW_QT_NOUL,
    VW_QT_SCORE,
    VW_QT_SET,
    VW_QT_SPAN,
} vw_qtype;
#define VW_QT_COUNT 6

/* "choice", "noul", "score", "set", "span"; NULL for VW_QT_UNKNOWN. */
const char *vw_qtype_name(vw_qtype t);

/* One question's answer in one envelope. */
typedef struct vw_eval_answer {
    const char *qid;
    vw_qtype type;
    const char *error; /* the per-question error's type, or NULL */
    const json_t *v;   /* choice/noul/score: answers.<qid>; set: sets.<qid>; span: spans.<qid> */
} vw_eval_answer;

typedef struct vw_eval_rec {
    json_t *root;
    const char *id;
    int status;              /* vela_status; 0 for a dead letter */
    const char *dead_letter; /* the dead letter's type, or NULL */
    const json_t *value;     /* the result value, or NULL for a dead letter */
    vw_eval_answer *ans;     /* status 200: one per question, in the envelope's order */
    size_t n_ans, cap_ans;
} vw_eval_rec;

/* Parses one replay line (len bytes, no newline needed). A 200 record's
 * questions are listed in r->ans; other statuses list none. */
vw_status vw_eval_rec_parse(const char *line, size_t len, vw_eval_rec *r, vw_err *err);
/* Frees the tree, keeps the answer array for reuse. */
void vw_eval_rec_clear(vw_eval_rec *r);
/* vw_eval_rec_clear and the answer array. */
void vw_eval_rec_free(vw_eval_rec *r);
/* The record's status as a key: "200", "422", "dead_letter:<type>" (buf ≥ 64). */
void vw_eval_rec_status_key(const vw_eval_rec *r, char *buf, size_t cap);
/* The answer to qid, or NULL. */
const vw_eval_answer *vw_eval_rec_find(const vw_eval_rec *r, const char *qid);

typedef struct vw_eval_lab {
    json_t *root;
    const char *id;
    const json_t *labels; /* an object */
} vw_eval_lab;

vw_status vw_eval_lab_parse(const char *line, size_t len, vw_eval_lab *l, vw_err *err);
void vw_eval_lab_clear(vw_eval_lab *l);

/* True when a is [{"start": int, "end": int, "label": string, ...}] with
 * 0 <= start <= end: spans as the envelope and the labels write them. */
bool vw_eval_spans_ok(const json_t *a);

/* True when j is a JSON integer or real (not a bool) and finite. */
bool vw_eval_is_number(const json_t *j);

#endif
