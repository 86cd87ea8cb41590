/* questions.c — question validation in the reference's walk order (see
 * questions.h). Owns every per-question message, its loc and its type; never
 * renders. Messages follow the newest runtime wording (docs/spec/request.md §1.5);
 * field sets follow Decision 2 (no choices/levels/labels/overflow). */
#include "questions.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canonical_json.h"
#include "util/pystr.h"

#define NOUL_NO "No. The statement or question is not satisfied."
#define NOUL_YES "Yes. The statement or question is satisfied."
#define MAX_OPTIONS 255

const char *vw_qkind_name(vw_qkind k) {
    static const char *const names[] = {"choice", "noul", "score", "set", "span"};
    return (unsigned)k <= VW_Q_SPAN ? names[k] : "?";
}

const char *vw_qkind_engine(vw_qkind k) {
    return k == VW_Q_NOUL ? "choice" : vw_qkind_name(k);
}

const char *vw_head_name(vw_head h) {
    return h == VW_HEAD_BROAD ? "broad" : "router";
}

/* The question as the reader sees it: the request's object, or a preset
 * expanded from the calibration schema (fields from two documents). */
typedef struct view {
    vw_jref obj; /* the request's value (any JSON) */
    bool expanded;
    vw_preset preset;
    vw_qkind kind;       /* expanded: the preset's type */
    const char *keys[6]; /* expanded: the keys of the expanded object */
    size_t n_keys;
    /* The fields the reader looks at ({doc, NULL} when absent). */
    vw_jref type, instructions, criteria, over, threshold, head;
} view;

typedef struct ctx {
    const vw_admit_cfg *cfg;
    const vw_state *st;
    const char *id;
    vw_errlist *errs;
    vw_status oom;
} ctx;

/* Appends the triple (["body","questions",id,seg1,seg2], msg, type). seg1 is a
 * field name or NULL; seg2 a string or, when NULL and idx >= 0, an index. */
static vw_status invalid(ctx *c, const char *type, const char *seg1, const char *seg2, int64_t idx,
                         const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static vw_status invalid(ctx *c, const char *type, const char *seg1, const char *seg2, int64_t idx,
                         const char *fmt, ...) {
    vw_sbuf msg = {0};
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap); /* messages may quote long keys: no truncation */
    va_end(ap);
    char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (text) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)len + 1, fmt, ap);
        va_end(ap);
        vw_sbuf_puts(&msg, text);
        free(text);
    } else {
        vw_sbuf_fail(&msg);
    }
    vw_loc loc = {0};
    vw_status s = vw_loc_add_str(&loc, "body", 4);
    if (!s)
        s = vw_loc_add_str(&loc, "questions", 9);
    if (!s)
        s = vw_loc_add_str(&loc, c->id, strlen(c->id));
    if (!s && seg1)
        s = vw_loc_add_str(&loc, seg1, strlen(seg1));
    if (!s && seg2)
        s = vw_loc_add_str(&loc, seg2, strlen(seg2));
    else if (!s && idx >= 0)
        s = vw_loc_add_int(&loc, idx);
    if (!s)
        s = vw_sbuf_status(&msg);
    if (!s)
        s = vw_errlist_add(c->errs, &loc, msg.p, type);
    vw_loc_free(&loc);
    vw_sbuf_free(&msg);
    if (s)
        c->oom = s;
    return s ? s : VW_EINVAL;
}

/* Same with a preformatted (possibly long) message. */
static vw_status invalid_msg(ctx *c, const char *type, const char *seg1, const char *msg) {
    return invalid(c, type, seg1, NULL, -1, "%s", msg);
}

static bool is_str(vw_jref r, const char *s) {
    return json_is_string(r.v) && json_string_length(r.v) == strlen(s) &&
           !memcmp(json_string_value(r.v), s, strlen(s));
}

static vw_status set_str(vw_str *dst, const char *p, size_t n) {
    dst->p = malloc(n + 1);
    if (!dst->p)
        return VW_ENOMEM;
    memcpy(dst->p, p, n);
    dst->p[n] = 0;
    dst->n = n;
    return VW_OK;
}

/* content_text: strings as they are, anything else canonical JSON. */
static vw_status text_of(vw_str *dst, vw_jref r) {
    if (json_is_string(r.v))
        return set_str(dst, json_string_value(r.v), json_string_length(r.v));
    vw_sbuf sb = {0};
    vw_status s = vw_canon_write(&sb, r, NULL);
    if (s == VW_OK && !sb.oom)
        dst->p = vw_sbuf_take(&sb, &dst->n);
    vw_sbuf_free(&sb);
    return s != VW_OK ? s : dst->p ? VW_OK : VW_ENOMEM;
}

/* systemone.content: non-blank text or an object/array of JSON values; null
 * allowed when nullable. where = (seg1, seg2 | idx) for the loc, label for msg. */
static vw_status content(ctx *c, vw_jref r, bool nullable, const char *seg1, const char *seg2,
                         int64_t idx, const char *label) {
    if (!r.v || json_is_null(r.v)) {
        if (nullable)
            return VW_OK;
    } else if (json_is_string(r.v)) {
        if (!vw_py_blank(json_string_value(r.v), json_string_length(r.v)))
            return VW_OK;
        return invalid(c, VW_ET_VALUE_ERROR, seg1, seg2, idx, "%s must not be empty or whitespace",
                       label);
    } else if ((json_is_object(r.v) || json_is_array(r.v)) && vw_json_payload(r)) {
        return VW_OK;
    }
    return invalid(c, VW_ET_VALUE_ERROR, seg1, seg2, idx, "%s must be text, an object or an array",
                   label);
}

static int cmp_cstr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "{kind} questions do not take [sorted unknown keys]" when v has keys outside
 * allowed (NULL-terminated). */
static vw_status unknown_fields(ctx *c, const view *v, const char *kind,
                                const char *const *allowed) {
    const char *found[64];
    size_t n = 0, total = 0;
    const char *k;
    json_t *val;
    const char *keys[64];
    size_t nk = 0;
    if (v->expanded) {
        for (size_t i = 0; i < v->n_keys; i++)
            keys[nk++] = v->keys[i];
    }
    json_object_foreach((json_t *)(v->expanded ? NULL : v->obj.v), k, val) {
        if (nk < 64)
            keys[nk++] = k;
        total++;
    }
    (void)total;
    for (size_t i = 0; i < nk; i++) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(keys[i], *a);
        if (!ok && n < 64)
            found[n++] = keys[i];
    }
    if (!n)
        return VW_OK;
    qsort(found, n, sizeof *found, cmp_cstr);
    vw_sbuf msg = {0};
    vw_sbuf_printf(&msg, "%s questions do not take [", kind);
    for (size_t i = 0; i < n; i++) {
        if (i)
            vw_sbuf_puts(&msg, ", ");
        vw_py_repr_str(&msg, found[i], strlen(found[i]));
    }
    vw_sbuf_puts(&msg, "]");
    vw_status s = msg.oom ? VW_ENOMEM : invalid_msg(c, VW_ET_EXTRA_FORBIDDEN, found[0], msg.p);
    vw_sbuf_free(&msg);
    return s;
}

static vw_status add_option(vw_question *q, const char *name, size_t nn, vw_jref desc,
                            const char *dflt) {
    vw_option *o = realloc(q->options, (q->n_options + 1) * sizeof *o);
    if (!o)
        return VW_ENOMEM;
    q->options = o;
    vw_option *opt = &q->options[q->n_options];
    memset(opt, 0, sizeof *opt);
    q->n_options++;
    vw_status s = set_str(&opt->name, name, nn);
    if (s)
        return s;
    if (!desc.v || json_is_null(desc.v))
        return set_str(&opt->desc, dflt, strlen(dflt));
    return text_of(&opt->desc, desc);
}

/* systemone.named_options + _described: {name: description} with minimum..255
 * entries, names non-blank, descriptions content or null ("" then). */
static vw_status named_options(ctx *c, vw_question *q, vw_jref crit, size_t minimum) {
    size_t n = json_is_object(crit.v) ? json_object_size(crit.v) : 0;
    if (!json_is_object(crit.v) || n < minimum || n > MAX_OPTIONS)
        return invalid(c, VW_ET_VALUE_ERROR, "criteria", NULL, -1,
                       "criteria must name %zu to %d options", minimum, MAX_OPTIONS);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)crit.v, k, v) {
        if (vw_py_blank(k, strlen(k)))
            return invalid(c, VW_ET_VALUE_ERROR, "criteria", k, -1,
                           "option names must be nonempty strings");
        vw_sbuf label = {0};
        vw_sbuf_printf(&label, "criteria.%s", k);
        vw_status s = label.oom
                          ? VW_ENOMEM
                          : content(c, (vw_jref){crit.doc, v}, true, "criteria", k, -1, label.p);
        vw_sbuf_free(&label);
        if (s)
            return s;
    }
    json_object_foreach((json_t *)crit.v, k, v) {
        vw_status s = add_option(q, k, strlen(k), (vw_jref){crit.doc, v}, "");
        if (s)
            return s;
    }
    return VW_OK;
}

static vw_status read_noul(ctx *c, vw_question *q, vw_jref crit) {
    if (crit.v && !json_is_null(crit.v)) {
        bool bad = !json_is_object(crit.v);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)(bad ? NULL : crit.v), k, v) {
            if (strcmp(k, "false") && strcmp(k, "true"))
                bad = true;
        }
        if (bad)
            return invalid(c, VW_ET_VALUE_ERROR, "criteria", NULL, -1,
                           "noul criteria may contain only false and true");
        json_object_foreach((json_t *)crit.v, k, v) {
            char label[32];
            snprintf(label, sizeof label, "criteria.%s", k);
            vw_status s = content(c, (vw_jref){crit.doc, v}, true, "criteria", k, -1, label);
            if (s)
                return s;
        }
    }
    const json_t *no = json_is_object(crit.v) ? json_object_get(crit.v, "false") : NULL;
    const json_t *yes = json_is_object(crit.v) ? json_object_get(crit.v, "true") : NULL;
    vw_status s = add_option(q, "no", 2, (vw_jref){crit.doc, no}, NOUL_NO);
    return s ? s : add_option(q, "yes", 3, (vw_jref){crit.doc, yes}, NOUL_YES);
}

/* Score levels: a JSON array, or (relevance preset) the levels object's values
 * named by its keys. */
static vw_status read_score(ctx *c, vw_question *q, const view *v, vw_jref crit) {
    const json_t *levels_obj = v->expanded ? crit.v : NULL;
    size_t n = levels_obj              ? json_object_size(levels_obj)
               : json_is_array(crit.v) ? json_array_size(crit.v)
                                       : 0;
    if ((!levels_obj && !json_is_array(crit.v)) || n < 2 || n > 10)
        return invalid(c, VW_ET_VALUE_ERROR, "criteria", NULL, -1,
                       "criteria must list 2 to 10 levels");
    const char *k = NULL;
    json_t *lv;
    void *it = levels_obj ? json_object_iter((json_t *)levels_obj) : NULL;
    for (size_t i = 0; i < n; i++) {
        if (levels_obj) {
            k = json_object_iter_key(it);
            lv = json_object_iter_value(it);
            it = json_object_iter_next((json_t *)levels_obj, it);
        } else {
            lv = json_array_get(crit.v, i);
        }
        char label[32];
        snprintf(label, sizeof label, "criteria[%zu]", i);
        vw_status s =
            content(c, (vw_jref){crit.doc, lv}, false, "criteria", NULL, (int64_t)i, label);
        if (s)
            return s;
        vw_str text = {0};
        if ((s = text_of(&text, (vw_jref){crit.doc, lv})))
            return s;
        /* Levels are option names with empty descriptions; the relevance
         * preset names them by key and describes them by the level text. */
        vw_jref desc = {crit.doc, NULL};
        const char *name = text.p;
        size_t nn = text.n;
        if (levels_obj) {
            desc.v = lv;
            name = k;
            nn = strlen(k);
        }
        s = add_option(q, name, nn, desc, "");
        free(text.p);
        if (s)
            return s;
    }
    return VW_OK;
}

static const char *const LABELLED_SET[] = {"type", "instructions", "criteria", "threshold",
                                           "over", "preset",       NULL};
static const char *const LABELLED_SPAN[] = {"type", "instructions", "criteria", "threshold",
                                            "head", "over",         "preset",   NULL};
static const char *const SYSTEM_ONE[] = {"type", "instructions", "criteria",
                                         "over", "preset",       NULL};

static vw_status read_labelled(ctx *c, vw_question *q, const view *v) {
    vw_status s = unknown_fields(c, v, vw_qkind_name(q->kind),
                                 q->kind == VW_Q_SET ? LABELLED_SET : LABELLED_SPAN);
    if (s)
        return s;
    vw_jref instr = v->instructions;
    if ((s = content(c, instr, false, "instructions", NULL, -1, "instructions")))
        return s;
    if ((s = named_options(c, q, v->criteria, 1)))
        return s;
    return text_of(&q->text, instr);
}

static vw_status read_system_one(ctx *c, vw_question *q, const view *v) {
    if (!v->expanded && !json_is_object(v->obj.v))
        return invalid(c, VW_ET_MODEL_TYPE, NULL, NULL, -1, "a question must be an object");
    vw_jref type = v->type;
    if (v->expanded)
        q->kind = v->kind;
    else if (is_str(type, "choice"))
        q->kind = VW_Q_CHOICE;
    else if (is_str(type, "noul"))
        q->kind = VW_Q_NOUL;
    else if (is_str(type, "score"))
        q->kind = VW_Q_SCORE;
    else
        return invalid(c, VW_ET_LITERAL_ERROR, "type", NULL, -1,
                       "type must be one of ['choice', 'noul', 'score']");
    vw_status s = unknown_fields(c, v, vw_qkind_name(q->kind), SYSTEM_ONE);
    if (s)
        return s;
    vw_jref instr = v->instructions;
    if (!instr.v)
        return invalid(c, VW_ET_MISSING, "instructions", NULL, -1, "instructions is required");
    if ((s = content(c, instr, false, "instructions", NULL, -1, "instructions")))
        return s;
    vw_jref crit = v->criteria;
    if (q->kind == VW_Q_SCORE)
        s = read_score(c, q, v, crit);
    else if (q->kind == VW_Q_NOUL)
        s = read_noul(c, q, crit);
    else
        s = named_options(c, q, crit, 2);
    return s ? s : text_of(&q->text, instr);
}

/* resolve_over (§3.3). */
static vw_status resolve_over(ctx *c, vw_question *q, vw_jref over) {
    bool list = json_is_array(over.v);
    size_t n = list ? json_array_size(over.v) : 1;
    unsigned roles = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *item = list ? json_array_get(over.v, i) : over.v;
        if (!json_is_string(item))
            return invalid(c, VW_ET_VALUE_ERROR, "over", NULL, -1,
                           "over must be a state key, a part name or a list of them");
        const char *s = json_string_value(item);
        size_t sn = json_string_length(item);
        const vw_field *f = strlen(s) == sn ? vw_state_field(c->st, s) : NULL;
        int role = -1;
        if (f) {
            role = (int)f->role;
            if (!list) {
                q->has_range = true;
                q->range_lo = f->start;
                q->range_hi = f->end;
            }
        }
        for (int r = 0; r < VW_N_ROLES && role < 0; r++)
            if (!strcmp(s, vw_role_name((vw_role)r)) && vw_state_part(c->st, (vw_role)r))
                role = r;
        if (role < 0 && strlen(s) == sn) {
            int k = vw_state_known_key(s);
            if (k >= 0 && vw_state_part(c->st, (vw_role)k))
                role = k;
        }
        if (role < 0) {
            vw_sbuf msg = {0};
            vw_py_repr_str(&msg, s, sn);
            vw_sbuf_puts(&msg, " is not a field of the state");
            vw_status st = msg.oom ? VW_ENOMEM : invalid_msg(c, VW_ET_VALUE_ERROR, "over", msg.p);
            vw_sbuf_free(&msg);
            return st;
        }
        roles |= 1u << role;
    }
    if (!roles)
        return invalid(c, VW_ET_VALUE_ERROR, "over", NULL, -1, "over must not be empty");
    q->roles = roles;
    return VW_OK;
}

static unsigned default_over(const vw_state *st, vw_qkind kind) {
    if (kind == VW_Q_SPAN) {
        if (vw_state_part(st, VW_ROLE_ANSWER))
            return 1u << VW_ROLE_ANSWER;
        if (vw_state_part(st, VW_ROLE_USER))
            return 1u << VW_ROLE_USER;
        return 1u << st->parts[0].role;
    }
    unsigned m = 0;
    for (size_t i = 0; i < st->n_parts; i++)
        m |= 1u << st->parts[i].role;
    return m;
}

static vw_status read_threshold(ctx *c, vw_question *q, vw_jref t) {
    if (!t.v || json_is_null(t.v))
        return VW_OK;
    const vw_jnum *num = vw_json_num(t.doc, t.v);
    /* bool is not a number here; NaN fails the comparisons as in Python. */
    if (!num || !(num->value >= 0.0 && num->value <= 1.0))
        return invalid(c, VW_ET_VALUE_ERROR, "threshold", NULL, -1,
                       "threshold must be a number in [0, 1]");
    q->has_threshold = true;
    q->threshold = num->value == 0.0 ? 0.0 : num->value; /* float(-0) is 0.0 for ints */
    if (!num->is_int)
        q->threshold = num->value;
    return VW_OK;
}

static vw_status read_head(ctx *c, vw_question *q, vw_jref h) {
    if (!h.v || json_is_null(h.v))
        return VW_OK;
    if (is_str(h, "router"))
        q->head = VW_HEAD_ROUTER;
    else if (is_str(h, "broad"))
        q->head = VW_HEAD_BROAD;
    else
        return invalid(c, VW_ET_LITERAL_ERROR, "head", NULL, -1,
                       "head must be one of ['router', 'broad']");
    if (q->head == VW_HEAD_BROAD && !c->cfg->broad)
        return invalid(c, VW_ET_VALUE_ERROR, "head", NULL, -1, "this model has no broad span head");
    return VW_OK;
}

/* _expand_preset: the view of a preset question (§3.4, Decision 2). */
static vw_status expand_preset(ctx *c, vw_jref q, view *v) {
    vw_jref name = {q.doc, json_object_get(q.v, "preset")};
    int found = -1;
    for (int p = 0; p < VW_N_PRESETS && found < 0; p++)
        if (c->cfg->schema[p] && is_str(name, vw_preset_name((vw_preset)p)))
            found = p;
    if (found < 0) {
        vw_sbuf msg = {0};
        vw_sbuf_puts(&msg, "preset must be one of [");
        bool first = true;
        for (int p = 0; p < VW_N_PRESETS; p++) {
            if (!c->cfg->schema[p])
                continue;
            vw_sbuf_printf(&msg, "%s'%s'", first ? "" : ", ", vw_preset_name((vw_preset)p));
            first = false;
        }
        vw_sbuf_puts(&msg, "]");
        vw_status s = msg.oom ? VW_ENOMEM : invalid_msg(c, VW_ET_LITERAL_ERROR, "preset", msg.p);
        vw_sbuf_free(&msg);
        return s;
    }
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)q.v, k, val) {
        if (strcmp(k, "preset") && strcmp(k, "type") && strcmp(k, "over") && strcmp(k, "threshold"))
            return invalid(c, VW_ET_EXTRA_FORBIDDEN, k, NULL, -1,
                           "a preset question takes only preset, type, over and threshold");
    }
    v->preset = (vw_preset)found;
    v->kind = found == VW_PRESET_RELEVANCE ? VW_Q_SCORE : VW_Q_SPAN;
    vw_jref type = {q.doc, json_object_get(q.v, "type")};
    if (type.v && !json_is_null(type.v) && !is_str(type, vw_qkind_name(v->kind)))
        return invalid(c, VW_ET_VALUE_ERROR, "type", NULL, -1, "preset %s is a %s question",
                       vw_preset_name(v->preset), vw_qkind_name(v->kind));
    v->expanded = true;
    v->n_keys = 0;
    v->keys[v->n_keys++] = "type";
    v->keys[v->n_keys++] = "instructions";
    v->keys[v->n_keys++] = "criteria";
    v->keys[v->n_keys++] = "preset";
    if (json_object_get(q.v, "over"))
        v->keys[v->n_keys++] = "over";
    if (json_object_get(q.v, "threshold"))
        v->keys[v->n_keys++] = "threshold";
    return VW_OK;
}

/* Resolves the fields of the view: from the request's object, or for a
 * preset from the calibration schema (instructions, criteria) and the request
 * (over, threshold). */
static void fill_view(const ctx *c, view *v) {
    const json_t *o = json_is_object(v->obj.v) ? v->obj.v : NULL;
    vw_json_doc const *d = v->obj.doc;
    v->type = (vw_jref){d, json_object_get(o, "type")};
    v->instructions = (vw_jref){d, json_object_get(o, "instructions")};
    v->criteria = (vw_jref){d, json_object_get(o, "criteria")};
    v->over = (vw_jref){d, json_object_get(o, "over")};
    v->threshold = (vw_jref){d, json_object_get(o, "threshold")};
    v->head = (vw_jref){d, json_object_get(o, "head")};
    if (!v->expanded)
        return;
    const json_t *schema = c->cfg->schema[v->preset];
    v->type = (vw_jref){d, NULL};
    v->head = (vw_jref){d, NULL};
    v->instructions = (vw_jref){c->cfg->cal, json_object_get(schema, "text")};
    v->criteria =
        (vw_jref){c->cfg->cal,
                  json_object_get(schema, v->preset == VW_PRESET_RELEVANCE ? "levels" : "labels")};
}

static bool labelled(const view *v, vw_qkind *kind) {
    if (v->expanded) {
        *kind = v->kind;
        return v->kind == VW_Q_SPAN;
    }
    if (!json_is_object(v->obj.v))
        return false;
    if (is_str(v->type, "set"))
        *kind = VW_Q_SET;
    else if (is_str(v->type, "span"))
        *kind = VW_Q_SPAN;
    else
        return false;
    return true;
}

static int popcount(unsigned m) {
    int n = 0;
    for (; m; m &= m - 1)
        n++;
    return n;
}

/* Over, span's single part, threshold and head (§1.5 steps 4-7). */
static vw_status read_common(ctx *c, vw_question *q, const view *v) {
    vw_status s = VW_OK;
    if (v->over.v && !json_is_null(v->over.v))
        s = resolve_over(c, q, v->over);
    else
        q->roles = default_over(c->st, q->kind);
    if (s)
        return s;
    if (q->kind != VW_Q_SPAN)
        q->has_range = false;
    else if (popcount(q->roles) > 1)
        return invalid(c, VW_ET_VALUE_ERROR, "over", NULL, -1, "a span question reads one part");
    if ((s = read_threshold(c, q, v->threshold)))
        return s;
    return read_head(c, q, v->head);
}

vw_status vw_question_read(const vw_admit_cfg *cfg, const vw_state *st, const char *id, vw_jref q,
                           vw_question *out, vw_errlist *errs, vw_err *err) {
    memset(out, 0, sizeof *out);
    out->head = VW_HEAD_NONE;
    ctx c = {cfg, st, id, errs, VW_OK};
    view v;
    memset(&v, 0, sizeof v);
    v.obj = q;
    vw_status s = VW_OK;
    const json_t *preset = json_is_object(q.v) ? json_object_get(q.v, "preset") : NULL;
    if (preset && !json_is_null(preset) && (s = expand_preset(&c, q, &v)))
        goto done;
    fill_view(&c, &v);
    if (labelled(&v, &out->kind))
        s = read_labelled(&c, out, &v);
    else
        s = read_system_one(&c, out, &v);
    if (s || (s = read_common(&c, out, &v)))
        goto done;
    out->abstain = out->kind == VW_Q_CHOICE || out->kind == VW_Q_NOUL;
    if ((s = set_str(&out->id, id, strlen(id))))
        goto done;
    if (v.expanded)
        s = set_str(&out->key, vw_preset_name(v.preset), strlen(vw_preset_name(v.preset)));
    else
        s = set_str(&out->key, id, strlen(id));
done:
    if (c.oom)
        s = c.oom;
    if (s == VW_ENOMEM)
        VW_FAIL(err, s, "oom", "question %s", id);
    else if (s != VW_OK)
        VW_FAIL(err, s, "invalid_question", "question %s", id);
    return s;
}

void vw_question_free(vw_question *q) {
    free(q->id.p);
    free(q->text.p);
    free(q->key.p);
    for (size_t i = 0; i < q->n_options; i++) {
        free(q->options[i].name.p);
        free(q->options[i].desc.p);
    }
    free(q->options);
    memset(q, 0, sizeof *q);
}

vw_role vw_question_span_role(const vw_question *q) {
    for (int r = 0; r < VW_N_ROLES; r++)
        if (q->roles & (1u << r))
            return (vw_role)r;
    return VW_ROLE_USER;
}

static const char *const HALU_ALIASES[] = {
    "unsupported",  "unsupportedclaim", "hallucinated", "hallucination", "hallucinatedspan",
    "notsupported", "unsupportedspan",  "fabricated",   "fabrication",   NULL};

/* dispatch.halu_alias: re.sub(r"[\s_\-]+", "", name).lower() is an alias.
 * Non-ASCII code points never lower-case into these ASCII names (the Kelvin
 * sign gives 'k', which no alias holds). */
static bool halu_alias(const vw_question *q) {
    if (q->n_options != 1)
        return false;
    const vw_str *n = &q->options[0].name;
    char low[32];
    size_t k = 0, i = 0;
    while (i < n->n) {
        uint32_t cp = vw_utf8_next(n->p, n->n, &i);
        if (vw_py_isspace(cp) || cp == '_' || cp == '-')
            continue;
        if (cp >= 0x80 || k + 1 >= sizeof low)
            return false;
        low[k++] = (char)(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    }
    low[k] = 0;
    for (const char *const *a = HALU_ALIASES; *a; a++)
        if (!strcmp(low, *a))
            return true;
    return false;
}

static bool has_name(const vw_question *q, const char *s, size_t n) {
    for (size_t i = 0; i < q->n_options; i++)
        if (q->options[i].name.n == n && !memcmp(q->options[i].name.p, s, n))
            return true;
    return false;
}

/* set(names) == set(list of strings) */
static bool same_set(const vw_question *q, const json_t *list) {
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *s = json_array_get(list, i);
        if (!has_name(q, json_string_value(s), json_string_length(s)))
            return false;
    }
    for (size_t i = 0; i < q->n_options; i++) {
        bool in = false;
        for (size_t j = 0; j < json_array_size(list) && !in; j++) {
            const json_t *s = json_array_get(list, j);
            in = json_string_length(s) == q->options[i].name.n &&
                 !memcmp(json_string_value(s), q->options[i].name.p, q->options[i].name.n);
        }
        if (!in)
            return false;
    }
    return true;
}

/* The default router label sets: the PII types and the halu schema's labels
 * (names are never empty, so an absent set matches nothing). */
static bool in_default_sets(const vw_admit_cfg *cfg, const vw_question *q) {
    if (cfg->pii_types && same_set(q, cfg->pii_types))
        return true;
    const json_t *halu = json_object_get(cfg->schema[VW_PRESET_HALU], "labels");
    if (!json_object_size(halu))
        return false;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)halu, k, v) {
        if (!has_name(q, k, strlen(k)))
            return false;
    }
    /* every label name is a halu key, and (names unique) the counts agree */
    return json_object_size(halu) == q->n_options;
}

static vw_head choose_head(const vw_admit_cfg *cfg, const vw_question *q) {
    if (q->head != VW_HEAD_NONE)
        return q->head;
    const char *key = q->key.p;
    if (!strcmp(key, "pii") || !strcmp(key, "halu") || !strcmp(key, "toxic"))
        return VW_HEAD_ROUTER;
    if (cfg->router_sets) {
        for (size_t i = 0; i < json_array_size(cfg->router_sets); i++)
            if (same_set(q, json_array_get(cfg->router_sets, i)))
                return VW_HEAD_ROUTER;
    } else if (in_default_sets(cfg, q)) {
        return VW_HEAD_ROUTER;
    }
    bool subset = q->n_options > 0;
    for (size_t i = 0; i < q->n_options && subset; i++)
        subset = vw_admit_cfg_is_pii_type(cfg, q->options[i].name.p, q->options[i].name.n);
    if (subset || halu_alias(q))
        return VW_HEAD_ROUTER;
    return VW_HEAD_BROAD;
}

vw_route vw_question_route(const vw_admit_cfg *cfg, const vw_question *q) {
    vw_route r = {VW_HEAD_ROUTER, false};
    if (!cfg->broad)
        return r;
    r.head = choose_head(cfg, q);
    r.alias = r.head == VW_HEAD_ROUTER && halu_alias(q) &&
              !(q->options[0].name.n == 11 && !memcmp(q->options[0].name.p, "unsupported", 11));
    return r;
}
