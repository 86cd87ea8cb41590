/* request.c — whole-request admission (see request.h). Owns the top-level
 * triples of Decision 5 and the per-question walk; never renders. */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canonical_json.h"

/* Appends (["body", seg?], msg, type); seg NULL for ["body"]. */
static vw_status reject(vw_errlist *d, const char *seg, const char *msg, const char *type) {
    vw_loc loc = {0};
    vw_status s = vw_loc_add_str(&loc, "body", 4);
    if (!s && seg)
        s = vw_loc_add_str(&loc, seg, strlen(seg));
    if (!s)
        s = vw_errlist_add(d, &loc, msg, type);
    vw_loc_free(&loc);
    return s;
}

void vw_request_free(vw_request *req) {
    if (!req)
        return;
    vw_state_free(&req->state);
    for (size_t i = 0; i < req->n; i++) {
        vw_qentry *e = &req->entries[i];
        free(e->id.p);
        free(e->given_type);
        vw_question_free(&e->q);
        vw_loc_free(&e->error.loc);
        free(e->error.msg);
    }
    free(req->entries);
    free(req);
}

/* Appends a front-door row (pyjson.h): loc ["body"] or ["body", offset]. */
static vw_status body_reject(vw_errlist *d, const vw_body_reject *r) {
    vw_loc loc = {0};
    vw_status s = vw_loc_add_str(&loc, "body", 4);
    if (!s && r->offset >= 0)
        s = vw_loc_add_int(&loc, r->offset);
    if (!s)
        s = vw_errlist_add(d, &loc, r->msg, r->type);
    vw_loc_free(&loc);
    return s;
}

/* Model, state and the question map (Decision 5 rows 4-7). */
static vw_status read_top(const vw_json_doc *doc, vw_state *state, vw_errlist *d, vw_err *err) {
    const json_t *root = vw_json_root(doc);
    const json_t *model = json_object_get(root, "model");
    vw_status s = VW_OK;
    if (model && !json_is_null(model) && !json_is_string(model))
        s = reject(d, "model", "Input should be a valid string", VW_ET_STRING_TYPE);
    const json_t *sv = json_object_get(root, "state");
    if (!s && !sv) {
        s = reject(d, "state", "Field required", VW_ET_MISSING);
    } else if (!s) {
        char msg[160];
        vw_status r = vw_state_read((vw_jref){doc, sv}, state, msg, sizeof msg, err);
        if (r == VW_EINVAL)
            s = reject(d, "state", msg, VW_ET_VALUE_ERROR);
        else
            s = r;
    }
    const json_t *qs = json_object_get(root, "questions");
    const char *bad = "questions must be a nonempty mapping of question IDs";
    if (!s && !qs)
        s = reject(d, "questions", "Field required", VW_ET_MISSING);
    else if (!s && !json_is_object(qs))
        s = reject(d, "questions", bad, VW_ET_DICT_TYPE);
    else if (!s && !json_object_size(qs))
        s = reject(d, "questions", bad, VW_ET_TOO_SHORT);
    return s;
}

/* Set answers add `S.<label>` entries: a Set whose label view is another
 * question's ID is withdrawn (§1.5 step 8). */
static vw_status label_collisions(vw_request *req, vw_errlist *late) {
    for (size_t i = 0; i < req->n; i++) {
        vw_qentry *e = &req->entries[i];
        if (!e->valid || e->q.kind != VW_Q_SET)
            continue;
        for (size_t o = 0; o < e->q.n_options; o++) {
            const vw_str *name = &e->q.options[o].name;
            bool taken = false;
            for (size_t j = 0; j < req->n && !taken; j++) {
                const vw_str *id = &req->entries[j].id;
                taken = id->n == e->id.n + 1 + name->n && !memcmp(id->p, e->id.p, e->id.n) &&
                        id->p[e->id.n] == '.' && !memcmp(id->p + e->id.n + 1, name->p, name->n);
            }
            if (!taken)
                continue;
            vw_sbuf mb = {0};
            vw_sbuf_printf(&mb, "a label answer %s.<label> is another question's ID", e->id.p);
            const char *msg = mb.p;
            vw_loc loc = {0};
            vw_status s = mb.oom ? VW_ENOMEM : vw_loc_add_str(&loc, "body", 4);
            if (!s)
                s = vw_loc_add_str(&loc, "questions", 9);
            if (!s)
                s = vw_loc_add_str(&loc, e->id.p, e->id.n);
            if (!s)
                s = vw_loc_add_str(&loc, "criteria", 8);
            if (!s)
                s = vw_loc_add_str(&loc, name->p, name->n);
            if (!s)
                s = vw_loc_copy(&e->error.loc, &loc);
            if (!s && !(e->error.msg = strdup(msg)))
                s = VW_ENOMEM;
            e->error.type = VW_ET_VALUE_ERROR;
            if (!s)
                s = vw_errlist_add(late, &loc, msg, VW_ET_VALUE_ERROR);
            vw_loc_free(&loc);
            vw_sbuf_free(&mb);
            if (s)
                return s;
            vw_question_free(&e->q);
            e->valid = false;
            break;
        }
    }
    return VW_OK;
}

static vw_status read_entry(const vw_admit_cfg *cfg, vw_request *req, const char *id, vw_jref q,
                            vw_errlist *walk, vw_err *err) {
    vw_qentry *e = &req->entries[req->n++];
    memset(e, 0, sizeof *e);
    size_t idn = strlen(id);
    if (!(e->id.p = strdup(id)))
        return VW_ENOMEM;
    e->id.n = idn;
    const json_t *type = json_is_object(q.v) ? json_object_get(q.v, "type") : NULL;
    vw_sbuf sb = {0};
    if (!type || vw_canon_write(&sb, (vw_jref){q.doc, type}, NULL) != VW_OK) {
        vw_sbuf_reset(&sb);
        vw_sbuf_puts(&sb, "null");
    }
    e->given_type = sb.oom ? NULL : vw_sbuf_take(&sb, NULL);
    vw_sbuf_free(&sb);
    if (!e->given_type)
        return VW_ENOMEM;
    size_t before = walk->n;
    vw_status s = vw_question_read(cfg, &req->state, id, q, &e->q, walk, err);
    if (s == VW_OK) {
        e->valid = true;
        return VW_OK;
    }
    if (s != VW_EINVAL || walk->n != before + 1)
        return s == VW_EINVAL ? VW_ENOMEM : s;
    e->error.type = walk->items[before].type;
    if (!(e->error.msg = strdup(walk->items[before].msg)))
        return VW_ENOMEM;
    return vw_loc_copy(&e->error.loc, &walk->items[before].loc);
}

/* Moves every triple of src to the end of dst. */
static vw_status append_all(vw_errlist *dst, vw_errlist *src) {
    for (size_t i = 0; i < src->n; i++) {
        vw_status s =
            vw_errlist_add(dst, &src->items[i].loc, src->items[i].msg, src->items[i].type);
        if (s)
            return s;
    }
    return VW_OK;
}

static vw_status walk_questions(const vw_admit_cfg *cfg, const vw_json_doc *doc, vw_request *req,
                                int *status, vw_errlist *detail, vw_err *err) {
    const json_t *qs = json_object_get(vw_json_root(doc), "questions");
    vw_errlist walk = {0}, late = {0};
    vw_status s = VW_OK;
    req->entries = calloc(json_object_size(qs), sizeof *req->entries);
    if (!req->entries) {
        s = VW_ENOMEM;
        goto done;
    }
    const char *id;
    json_t *q;
    json_object_foreach((json_t *)qs, id, q) {
        if ((s = read_entry(cfg, req, id, (vw_jref){doc, q}, &walk, err)))
            goto done;
    }
    if ((s = label_collisions(req, &late)))
        goto done;
    size_t valid = 0;
    for (size_t i = 0; i < req->n; i++)
        valid += req->entries[i].valid;
    if (!valid) {
        *status = 422;
        if (!(s = append_all(detail, &walk)))
            s = append_all(detail, &late);
    }
done:
    vw_errlist_free(&walk);
    vw_errlist_free(&late);
    return s;
}

/* Admission from the top-level value on (the body is a JSON object). */
static vw_status admit_object(const vw_admit_cfg *cfg, const vw_json_doc *doc, vw_request **out,
                              int *status, vw_errlist *detail, vw_err *err) {
    vw_request *req = calloc(1, sizeof *req);
    vw_status s = req ? VW_OK : VW_ENOMEM;
    size_t before = detail->n;
    if (!s)
        s = read_top(doc, &req->state, detail, err);
    if (!s && detail->n > before)
        *status = 422;
    else if (!s)
        s = walk_questions(cfg, doc, req, status, detail, err);
    if (!s && *status == 200) {
        *out = req;
        req = NULL;
    }
    vw_request_free(req);
    return s;
}

/* The size row, then the check's rows (syntax, surrogate, not an object);
 * true when one rejected the body. */
static bool front_door(const vw_admit_cfg *cfg, size_t len, const vw_pyjson_check *chk, int *status,
                       vw_errlist *detail, vw_status *s) {
    vw_body_reject rej;
    if (!vw_body_too_long(len, cfg->max_request_bytes, &rej) &&
        (!chk || !vw_body_reject_of(chk, &rej)))
        return false;
    *status = rej.status;
    *s = body_reject(detail, &rej);
    return true;
}

vw_status vw_request_admit(const vw_admit_cfg *cfg, const char *body, size_t len, vw_request **out,
                           int *status, vw_errlist *detail, vw_err *err) {
    *out = NULL;
    *status = 200;
    vw_json_doc *doc = NULL;
    vw_status s = VW_OK;
    if (front_door(cfg, len, NULL, status, detail, &s))
        goto done;
    /* One pass decides acceptance (CPython's messages) and builds the tree. */
    vw_json_error je;
    s = vw_json_parse(body, len, &doc, &je);
    if ((s == VW_OK || s == VW_EINVAL) && front_door(cfg, len, &je, status, detail, &s))
        goto done;
    if (!s)
        s = admit_object(cfg, doc, out, status, detail, err);
done:
    if (s == VW_ENOMEM)
        VW_FAIL(err, s, "oom", "admitting a request of %zu bytes", len);
    vw_json_free(doc);
    return s;
}

vw_status vw_request_admit_doc(const vw_admit_cfg *cfg, size_t len, const vw_json_doc *doc,
                               vw_request **out, int *status, vw_errlist *detail, vw_err *err) {
    *out = NULL;
    *status = 200;
    vw_pyjson_check chk = {.kind = VW_PYJSON_OK, .is_object = json_is_object(vw_json_root(doc))};
    vw_status s = VW_OK;
    if (!front_door(cfg, len, &chk, status, detail, &s))
        s = admit_object(cfg, doc, out, status, detail, err);
    if (s == VW_ENOMEM)
        VW_FAIL(err, s, "oom", "admitting a request of %zu bytes", len);
    return s;
}
