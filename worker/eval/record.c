/* record.c — replay and labels lines to checked records. Owns the shape
 * checks of what the metrics read (a choice has a string pick and numeric
 * probabilities, a span has integer offsets, …); never computes a metric and
 * never judges a label against a question (qmetrics.c does). */
#include "record.h"
#include "util/reserve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[VW_QT_COUNT] = {NULL, "choice", "noul", "score", "set", "span"};

const char *vw_qtype_name(vw_qtype t) {
    return (unsigned)t < VW_QT_COUNT ? type_names[t] : NULL;
}

static vw_qtype type_of(const json_t *j) {
    const char *s = json_string_value(j);
    for (int t = 1; s && t < VW_QT_COUNT; t++)
        if (!strcmp(s, type_names[t]))
            return (vw_qtype)t;
    return VW_QT_UNKNOWN;
}

bool vw_eval_is_number(const json_t *j) {
    return json_is_integer(j) || (json_is_real(j) && isfinite(json_real_value(j)));
}

void vw_eval_rec_clear(vw_eval_rec *r) {
    json_decref(r->root);
    r->root = NULL;
    r->id = r->dead_letter = NULL;
    r->value = NULL;
    r->status = 0;
    r->n_ans = 0;
}

void vw_eval_rec_free(vw_eval_rec *r) {
    vw_eval_rec_clear(r);
    free(r->ans);
    r->ans = NULL;
    r->cap_ans = 0;
}

void vw_eval_rec_status_key(const vw_eval_rec *r, char *buf, size_t cap) {
    if (r->dead_letter)
        snprintf(buf, cap, "dead_letter:%.40s", r->dead_letter);
    else
        snprintf(buf, cap, "%d", r->status);
}

const vw_eval_answer *vw_eval_rec_find(const vw_eval_rec *r, const char *qid) {
    for (size_t i = 0; i < r->n_ans; i++)
        if (!strcmp(r->ans[i].qid, qid))
            return &r->ans[i];
    return NULL;
}

/* ---- answer shapes ------------------------------------------------------- */

static bool numbers_object(const json_t *o) {
    const char *k;
    json_t *v;
    if (!json_is_object(o))
        return false;
    json_object_foreach((json_t *)o, k, v) {
        if (!vw_eval_is_number(v))
            return false;
    }
    return true;
}

static bool strings_array(const json_t *a) {
    size_t i;
    json_t *v;
    if (!json_is_array(a))
        return false;
    json_array_foreach(a, i, v) {
        if (!json_is_string(v))
            return false;
    }
    return true;
}

/* Spans as the envelope and the labels write them: [{"start","end","label"}],
 * 0 <= start <= end. */
bool vw_eval_spans_ok(const json_t *a) {
    size_t i;
    json_t *s;
    if (!json_is_array(a))
        return false;
    json_array_foreach(a, i, s) {
        json_t *st = json_object_get(s, "start"), *en = json_object_get(s, "end");
        if (!json_is_object(s) || !json_is_integer(st) || !json_is_integer(en) ||
            !json_is_string(json_object_get(s, "label")) || json_integer_value(st) < 0 ||
            json_integer_value(en) < json_integer_value(st))
            return false;
    }
    return true;
}

/* NULL when the answer has the fields its type's metrics read, else why not. */
static const char *shape_error(const vw_eval_answer *a) {
    switch (a->type) {
    case VW_QT_CHOICE:
        if (!json_is_string(json_object_get(a->v, "choice")))
            return "choice must be a string";
        return numbers_object(json_object_get(a->v, "probabilities"))
                   ? NULL
                   : "probabilities must be an object of numbers";
    case VW_QT_NOUL:
        return vw_eval_is_number(json_object_get(a->v, "noul")) ? NULL : "noul must be a number";
    case VW_QT_SCORE:
        return vw_eval_is_number(json_object_get(a->v, "score")) ? NULL : "score must be a number";
    case VW_QT_SET:
        if (!strings_array(json_object_get(a->v, "selected")))
            return "selected must be an array of strings";
        return numbers_object(json_object_get(a->v, "probabilities"))
                   ? NULL
                   : "probabilities must be an object of numbers";
    case VW_QT_SPAN:
        return vw_eval_spans_ok(a->v)
                   ? NULL
                   : "spans must be [{start, end, label}] with 0 <= start <= end";
    case VW_QT_UNKNOWN:
        break;
    }
    return "unknown answer type";
}

/* ---- the envelope's questions -------------------------------------------- */

static vw_status add_answer(vw_eval_rec *r, vw_eval_answer a, vw_err *err) {
    if (vw_reserve((void **)&r->ans, &r->cap_ans, r->n_ans + 1, sizeof *r->ans))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: %zu answers", r->n_ans + 1);
    r->ans[r->n_ans++] = a;
    return VW_OK;
}

/* The set this answers key fans out from ("tags" for "tags.refund" when
 * sets.tags.probabilities has "refund"; the key borrowed from the tree), or
 * NULL. Sets are few per envelope: a scan of them is cheap. */
static const char *fanned_from(const json_t *sets, const char *key) {
    const char *s;
    json_t *v;
    if (!sets)
        return NULL;
    json_object_foreach((json_t *)sets, s, v) {
        size_t n = strlen(s);
        if (!strncmp(key, s, n) && key[n] == '.' &&
            json_object_get(json_object_get(v, "probabilities"), key + n + 1))
            return s;
    }
    return NULL;
}

static bool listed(const vw_eval_rec *r, const char *qid) {
    return vw_eval_rec_find(r, qid) != NULL;
}

/* One answers entry to at most one question (a set's second fanned-out
 * entry adds nothing). */
static vw_status add_entry(vw_eval_rec *r, const json_t *env, const char *key, const json_t *e,
                           vw_err *err) {
    const json_t *sets = json_object_get(env, "sets"), *spans = json_object_get(env, "spans");
    vw_eval_answer a = {.qid = key, .v = e};
    if (!json_is_object(e))
        return VW_FAIL(err, VW_EINVAL, "bad_record", "answers.%s: must be an object", key);
    const json_t *error = json_object_get(e, "error");
    if (error) {
        if (!json_is_string(error))
            return VW_FAIL(err, VW_EINVAL, "bad_record", "answers.%s: error must be a string", key);
        a.error = json_string_value(error);
        a.type = type_of(json_object_get(e, "type"));
        return add_answer(r, a, err);
    }
    const json_t *span = spans ? json_object_get(spans, key) : NULL;
    const char *set = span ? NULL : fanned_from(sets, key);
    if (span) {
        a.type = VW_QT_SPAN;
        a.v = span;
    } else if (set) {
        if (listed(r, set))
            return VW_OK;
        a.qid = set;
        a.type = VW_QT_SET;
        a.v = json_object_get(sets, set);
    } else {
        a.type = type_of(json_object_get(e, "type"));
        if (a.type != VW_QT_CHOICE && a.type != VW_QT_NOUL && a.type != VW_QT_SCORE)
            return VW_FAIL(err, VW_EINVAL, "bad_record", "answers.%s: unknown type", key);
    }
    const char *why = shape_error(&a);
    if (why)
        return VW_FAIL(err, VW_EINVAL, "bad_record", "%s.%s: %s",
                       a.type == VW_QT_SET    ? "sets"
                       : a.type == VW_QT_SPAN ? "spans"
                                              : "answers",
                       a.qid, why);
    return add_answer(r, a, err);
}

static vw_status list_questions(vw_eval_rec *r, vw_err *err) {
    const json_t *env = r->value, *answers = json_object_get(env, "answers");
    const char *key;
    json_t *e;
    vw_status st;
    if (!json_is_object(answers))
        return VW_FAIL(err, VW_EINVAL, "bad_record", "a 200 value must have an answers object");
    json_object_foreach((json_t *)answers, key, e) {
        if ((st = add_entry(r, env, key, e, err)))
            return st;
    }
    return VW_OK;
}

/* ---- lines ------------------------------------------------------------------ */

static json_t *load(const char *line, size_t len, vw_err *err) {
    json_error_t je;
    json_t *root = json_loadb(line, len, 0, &je);
    if (!root)
        VW_FAIL(err, VW_EINVAL, "bad_line", "not JSON: %s (column %d)", je.text, je.column);
    else if (!json_is_object(root)) {
        json_decref(root);
        root = NULL;
        VW_FAIL(err, VW_EINVAL, "bad_line", "not a JSON object");
    }
    return root;
}

vw_status vw_eval_rec_parse(const char *line, size_t len, vw_eval_rec *r, vw_err *err) {
    vw_status st = VW_EINVAL;
    vw_eval_rec_clear(r);
    if (!(r->root = load(line, len, err)))
        return VW_EINVAL;
    const json_t *id = json_object_get(r->root, "request_id");
    const json_t *status = json_object_get(r->root, "vela_status");
    const json_t *dead = json_object_get(r->root, "dead_letter");
    if (!json_is_string(id)) {
        VW_FAIL(err, VW_EINVAL, "bad_line", "request_id must be a string");
        goto done;
    }
    r->id = json_string_value(id);
    if (json_is_string(dead)) {
        r->dead_letter = json_string_value(dead);
        st = VW_OK;
        goto done;
    }
    r->value = json_object_get(r->root, "value");
    if (!json_is_integer(status) || !json_is_object(r->value)) {
        VW_FAIL(err, VW_EINVAL, "bad_line",
                "a replay line has vela_status (an integer) and value (an object), or dead_letter");
        goto done;
    }
    r->status = (int)json_integer_value(status);
    st = r->status == 200 ? list_questions(r, err) : VW_OK;
done:
    if (st)
        vw_eval_rec_clear(r);
    return st;
}

void vw_eval_lab_clear(vw_eval_lab *l) {
    json_decref(l->root);
    memset(l, 0, sizeof *l);
}

vw_status vw_eval_lab_parse(const char *line, size_t len, vw_eval_lab *l, vw_err *err) {
    vw_eval_lab_clear(l);
    if (!(l->root = load(line, len, err)))
        return VW_EINVAL;
    const json_t *id = json_object_get(l->root, "request_id");
    l->labels = json_object_get(l->root, "labels");
    if (json_is_string(id) && json_is_object(l->labels)) {
        l->id = json_string_value(id);
        return VW_OK;
    }
    vw_eval_lab_clear(l);
    return VW_FAIL(err, VW_EINVAL, "bad_line",
                   "a labels line is {\"request_id\": string, \"labels\": object}");
}
