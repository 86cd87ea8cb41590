/* state.c — state -> typed parts and field ranges (see state.h). Owns the
 * §1.2 rules and messages; never tokenizes or renders. */
#include "state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canonical_json.h"
#include "util/pystr.h"
#include "util/reserve.h"

static const struct {
    const char *name;
    vw_role role;
} known_keys[] = {
    {"request", VW_ROLE_USER},    {"user", VW_ROLE_USER},
    {"prompt", VW_ROLE_USER},     {"source", VW_ROLE_CONTEXT},
    {"context", VW_ROLE_CONTEXT}, {"document", VW_ROLE_CONTEXT},
    {"tools", VW_ROLE_CONTEXT},   {"previous_answer", VW_ROLE_CONTEXT},
    {"answer", VW_ROLE_ANSWER},   {"response", VW_ROLE_ANSWER},
};

const char *vw_role_name(vw_role r) {
    static const char *const names[] = {"user", "context", "answer"};
    return (unsigned)r < VW_N_ROLES ? names[r] : "?";
}

int vw_state_known_key(const char *key) {
    for (size_t i = 0; i < sizeof known_keys / sizeof known_keys[0]; i++)
        if (!strcmp(key, known_keys[i].name))
            return (int)known_keys[i].role;
    return -1;
}

/* Python str(key).lower() in STATE_KEY_ROLES: only ASCII keys can match (no
 * non-ASCII code point lower-cases into these names). */
static int key_role(const char *key, bool *known) {
    char low[32];
    size_t n = strlen(key);
    *known = false;
    if (n < sizeof low) {
        for (size_t i = 0; i <= n; i++)
            low[i] = (char)(key[i] >= 'A' && key[i] <= 'Z' ? key[i] + 32 : key[i]);
        int r = vw_state_known_key(low);
        if (r >= 0) {
            *known = true;
            return r;
        }
    }
    return VW_ROLE_CONTEXT;
}

const vw_part *vw_state_part(const vw_state *st, vw_role r) {
    for (size_t i = 0; i < st->n_parts; i++)
        if (st->parts[i].role == r)
            return &st->parts[i];
    return NULL;
}

static int by_key_cmp(const void *a, const void *b) {
    return strcmp((*(const vw_field *const *)a)->key, (*(const vw_field *const *)b)->key);
}

/* The fields sorted by key, so a request of many `over` names against a
 * state of many keys costs n log n, not n * m. Keys are unique (one JSON
 * object's). */
static vw_status index_fields(vw_state *st) {
    if (!st->n_fields)
        return VW_OK;
    st->by_key = malloc(st->n_fields * sizeof *st->by_key);
    if (!st->by_key)
        return VW_ENOMEM;
    for (size_t i = 0; i < st->n_fields; i++)
        st->by_key[i] = &st->fields[i];
    qsort(st->by_key, st->n_fields, sizeof *st->by_key, by_key_cmp);
    return VW_OK;
}

const vw_field *vw_state_field(const vw_state *st, const char *key) {
    vw_field probe = {.key = (char *)key};
    const vw_field *p = &probe;
    const vw_field *const *hit =
        st->by_key ? bsearch(&p, st->by_key, st->n_fields, sizeof *st->by_key, by_key_cmp) : NULL;
    return hit ? *hit : NULL;
}

void vw_state_free(vw_state *st) {
    for (size_t i = 0; i < st->n_parts; i++)
        free(st->parts[i].text);
    for (size_t i = 0; i < st->n_fields; i++)
        free(st->fields[i].key);
    free(st->fields);
    free(st->by_key);
    memset(st, 0, sizeof *st);
}

static vw_status add_field(vw_state *st, const char *key, vw_role role, int64_t a, int64_t b) {
    if (vw_reserve((void **)&st->fields, &st->cap_fields, st->n_fields + 1, sizeof *st->fields))
        return VW_ENOMEM;
    char *k = strdup(key);
    if (!k)
        return VW_ENOMEM;
    st->fields[st->n_fields++] = (vw_field){k, role, a, b};
    return VW_OK;
}

/* Takes the bytes of sb as the part of role. */
static vw_status add_part(vw_state *st, vw_role role, vw_sbuf *sb) {
    if (sb->oom)
        return VW_ENOMEM;
    size_t len;
    char *text = vw_sbuf_take(sb, &len);
    if (!text)
        return VW_ENOMEM;
    st->parts[st->n_parts++] = (vw_part){role, text, len, vw_utf8_count(text, len)};
    return VW_OK;
}

/* content_text(value): strings as they are, anything else canonical JSON. */
static vw_status content_text(vw_sbuf *sb, vw_jref v) {
    if (json_is_string(v.v)) {
        vw_sbuf_put(sb, json_string_value(v.v), json_string_length(v.v));
        return vw_sbuf_status(sb);
    }
    vw_status s = vw_canon_write(sb, v, NULL);
    return s != VW_OK ? s : vw_sbuf_status(sb);
}

static vw_status read_role(vw_state *st, vw_jref obj, vw_role role, char *msg, size_t cap) {
    size_t count = 0;
    bool known = false;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj.v, k, v) {
        bool kn;
        if (key_role(k, &kn) == (int)role) {
            count++;
            known = kn;
        }
    }
    if (!count)
        return VW_OK;
    vw_sbuf sb = {0};
    vw_status s = VW_OK;
    /* Code points of sb.p[0, counted): each byte is counted once, so a state
     * of many keys costs linear time in its bytes. */
    size_t counted = 0, cps = 0;
    json_object_foreach((json_t *)obj.v, k, v) {
        bool kn;
        if (key_role(k, &kn) != (int)role)
            continue;
        if (count == 1 && known) {
            if ((s = content_text(&sb, (vw_jref){obj.doc, v})) != VW_OK)
                goto done;
            s = add_field(st, k, role, 0, (int64_t)vw_utf8_count(sb.p, sb.len));
            goto done_text;
        }
        if (sb.len)
            vw_sbuf_puts(&sb, "\n\n");
        vw_sbuf_puts(&sb, k);
        vw_sbuf_puts(&sb, ":\n");
        size_t head = sb.len;
        if ((s = content_text(&sb, (vw_jref){obj.doc, v})) != VW_OK)
            goto done;
        cps += vw_utf8_count(sb.p + counted, head - counted);
        int64_t a = (int64_t)cps;
        cps += vw_utf8_count(sb.p + head, sb.len - head);
        counted = sb.len;
        if ((s = add_field(st, k, role, a, (int64_t)cps)) != VW_OK)
            goto done;
    }
done_text:
    if (s != VW_OK)
        goto done;
    if (vw_py_blank(sb.p ? sb.p : "", sb.len)) {
        snprintf(msg, cap, "the %s part of the state is empty", vw_role_name(role));
        s = VW_EINVAL;
        goto done;
    }
    s = add_part(st, role, &sb);
done:
    vw_sbuf_free(&sb);
    return s;
}

/* A string state that is a JSON object in disguise (§1.2 rule 1). Returns the
 * parsed document (caller frees) or NULL to keep the string. Python would also
 * keep the string for text that is not JSON; we keep it too for text with
 * nesting deeper than 1000 or an unpaired surrogate (Python: RecursionError /
 * a surrogate in the text, both crashes later). */
static vw_json_doc *sniff_object(const json_t *s) {
    const char *p = json_string_value(s);
    size_t n = json_string_length(s), b0, b1;
    vw_py_strip(p, n, &b0, &b1);
    if (b0 == b1 || p[b0] != '{')
        return NULL;
    vw_json_doc *doc = NULL;
    if (vw_json_parse(p + b0, b1 - b0, &doc, NULL) != VW_OK)
        return NULL;
    if (!json_is_object(vw_json_root(doc))) {
        vw_json_free(doc);
        return NULL;
    }
    return doc;
}

static vw_status read_text(vw_state *st, vw_jref v, char *msg, size_t cap) {
    vw_sbuf sb = {0};
    vw_status s = content_text(&sb, v);
    if (s == VW_OK) {
        int64_t n = (int64_t)vw_utf8_count(sb.p, sb.len);
        s = add_part(st, VW_ROLE_USER, &sb);
        if (s == VW_OK)
            s = add_field(st, "request", VW_ROLE_USER, 0, n);
    }
    vw_sbuf_free(&sb);
    (void)msg;
    (void)cap;
    return s;
}

vw_status vw_state_read(vw_jref state, vw_state *out, char *msg, size_t cap, vw_err *err) {
    memset(out, 0, sizeof *out);
    vw_json_doc *inner = NULL;
    vw_status s = VW_OK;
    if (json_is_string(state.v) && (inner = sniff_object(state.v)) != NULL)
        state = (vw_jref){inner, vw_json_root(inner)};
    if (json_is_string(state.v)) {
        if (vw_py_blank(json_string_value(state.v), json_string_length(state.v))) {
            snprintf(msg, cap, "state must not be empty or whitespace");
            s = VW_EINVAL;
            goto done;
        }
        s = read_text(out, state, msg, cap);
        goto done;
    }
    if (json_is_array(state.v)) {
        if (!vw_json_payload(state)) {
            snprintf(msg, cap, "state must hold JSON values");
            s = VW_EINVAL;
            goto done;
        }
        s = read_text(out, state, msg, cap);
        goto done;
    }
    if (!json_is_object(state.v) || !json_object_size(state.v) || !vw_json_payload(state)) {
        snprintf(msg, cap, "state must be a non-empty string, JSON object or JSON array");
        s = VW_EINVAL;
        goto done;
    }
    for (int r = 0; r < VW_N_ROLES && s == VW_OK; r++)
        s = read_role(out, state, (vw_role)r, msg, cap);
done:
    if (s == VW_OK)
        s = index_fields(out);
    vw_json_free(inner);
    if (s == VW_ENOMEM)
        VW_FAIL(err, s, "oom", "reading the state");
    else if (s != VW_OK)
        VW_FAIL(err, s, "invalid_state", "%s", msg);
    return s;
}
