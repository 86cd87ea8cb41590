/* vw_schema.c — the JSON Schema subset validator (see vw_schema.h). */
#include "vw_schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vw_test.h"

static const char *const ANNOTATIONS[] = {"$schema",  "$id",   "title",   "description",
                                          "$comment", "$defs", "default", "examples"};
static const char *const ASSERTIONS[] = {
    "type",    "enum",     "const",    "properties",    "required",      "additionalProperties",
    "items",   "minItems", "maxItems", "minProperties", "maxProperties", "minLength",
    "minimum", "maximum",  "anyOf",    "oneOf",         "$ref"};

typedef struct vctx {
    const json_t *root;
    char *msg;
    size_t cap;
    int quiet; /* inside anyOf/oneOf branches: keep the outer message */
    char path[1024];
} vctx;

static bool in_list(const char *k, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, list[i]))
            return true;
    return false;
}

static bool fail(vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(vctx *c, const char *fmt, ...) {
    if (c->quiet || !c->cap)
        return false;
    int n = snprintf(c->msg, c->cap, "%s: ", c->path[0] ? c->path : "/");
    if (n >= 0 && (size_t)n < c->cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->msg + n, c->cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

static const json_t *resolve(const json_t *root, const char *ref) {
    if (!strcmp(ref, "#"))
        return root;
    if (strncmp(ref, "#/$defs/", 8))
        return NULL;
    return json_object_get(json_object_get(root, "$defs"), ref + 8);
}

static bool is_type(const json_t *v, const char *t) {
    if (!strcmp(t, "object"))
        return json_is_object(v);
    if (!strcmp(t, "array"))
        return json_is_array(v);
    if (!strcmp(t, "string"))
        return json_is_string(v);
    if (!strcmp(t, "boolean"))
        return json_is_boolean(v);
    if (!strcmp(t, "null"))
        return json_is_null(v);
    if (!strcmp(t, "number"))
        return json_is_number(v);
    if (!strcmp(t, "integer"))
        return json_is_integer(v) || (json_is_real(v) && isfinite(json_real_value(v)) &&
                                      floor(json_real_value(v)) == json_real_value(v));
    return false;
}

/* JSON Schema equality: numbers by value, the rest structurally. */
static bool same(const json_t *a, const json_t *b) {
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal((json_t *)a, (json_t *)b);
}

static size_t code_points(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

static bool validate(vctx *c, const json_t *s, const json_t *v);

/* Validates v against s with `seg` appended to the path. */
static bool validate_at(vctx *c, const json_t *s, const json_t *v, const char *seg) {
    size_t n = strlen(c->path);
    snprintf(c->path + n, sizeof c->path - n, "/%s", seg);
    bool ok = validate(c, s, v);
    c->path[n] = 0;
    return ok;
}

static bool check_type(vctx *c, const json_t *t, const json_t *v) {
    if (json_is_string(t))
        return is_type(v, json_string_value(t)) || fail(c, "type: not %s", json_string_value(t));
    size_t i;
    const json_t *x;
    json_array_foreach(t, i, x) if (is_type(v, json_string_value(x))) return true;
    return fail(c, "type: none of the listed types");
}

static bool check_object(vctx *c, const json_t *s, const char *kw, const json_t *arg,
                         const json_t *v) {
    if (!strcmp(kw, "required")) {
        size_t i;
        const json_t *x;
        json_array_foreach(arg, i, x) if (!json_object_get(v, json_string_value(x))) return fail(
            c, "required: missing \"%s\"", json_string_value(x));
        return true;
    }
    if (!strcmp(kw, "minProperties"))
        return json_object_size(v) >= (size_t)json_integer_value(arg) ||
               fail(c, "minProperties: %zu < %lld", json_object_size(v),
                    (long long)json_integer_value(arg));
    if (!strcmp(kw, "maxProperties"))
        return json_object_size(v) <= (size_t)json_integer_value(arg) ||
               fail(c, "maxProperties: %zu > %lld", json_object_size(v),
                    (long long)json_integer_value(arg));
    const json_t *props = json_object_get(s, "properties");
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        const json_t *sub = json_object_get(props, k);
        if (!strcmp(kw, "properties") && sub && !validate_at(c, sub, x, k))
            return false;
        if (!strcmp(kw, "additionalProperties") && !sub) {
            if (json_is_false(arg))
                return fail(c, "additionalProperties: \"%s\" is not allowed", k);
            if (!validate_at(c, arg, x, k))
                return false;
        }
    }
    return true;
}

static bool check_array(vctx *c, const char *kw, const json_t *arg, const json_t *v) {
    if (!strcmp(kw, "minItems"))
        return json_array_size(v) >= (size_t)json_integer_value(arg) ||
               fail(c, "minItems: %zu items", json_array_size(v));
    if (!strcmp(kw, "maxItems"))
        return json_array_size(v) <= (size_t)json_integer_value(arg) ||
               fail(c, "maxItems: %zu items", json_array_size(v));
    size_t i;
    const json_t *x;
    json_array_foreach(v, i, x) {
        char seg[32];
        snprintf(seg, sizeof seg, "%zu", i);
        if (!validate_at(c, arg, x, seg))
            return false;
    }
    return true;
}

static bool check_branches(vctx *c, const char *kw, const json_t *arg, const json_t *v) {
    size_t i, hits = 0;
    const json_t *x;
    c->quiet++;
    json_array_foreach(arg, i, x) hits += validate(c, x, v);
    c->quiet--;
    if (!strcmp(kw, "anyOf"))
        return hits > 0 || fail(c, "anyOf: no branch matches");
    return hits == 1 || fail(c, "oneOf: %zu branches match", hits);
}

/* One keyword of schema s against v. */
static bool check_keyword(vctx *c, const json_t *s, const char *kw, const json_t *arg,
                          const json_t *v) {
    if (in_list(kw, ANNOTATIONS, sizeof ANNOTATIONS / sizeof *ANNOTATIONS))
        return true;
    if (!strcmp(kw, "type"))
        return check_type(c, arg, v);
    if (!strcmp(kw, "const"))
        return same(arg, v) || fail(c, "const: value differs");
    if (!strcmp(kw, "enum")) {
        size_t i;
        const json_t *x;
        json_array_foreach(arg, i, x) if (same(x, v)) return true;
        return fail(c, "enum: not one of the listed values");
    }
    if (!strcmp(kw, "$ref")) {
        const json_t *t = resolve(c->root, json_string_value(arg));
        return t ? validate(c, t, v) : fail(c, "$ref: cannot resolve %s", json_string_value(arg));
    }
    if (!strcmp(kw, "anyOf") || !strcmp(kw, "oneOf"))
        return check_branches(c, kw, arg, v);
    if (!strcmp(kw, "properties") || !strcmp(kw, "additionalProperties") ||
        !strcmp(kw, "required") || !strcmp(kw, "minProperties") || !strcmp(kw, "maxProperties"))
        return !json_is_object(v) || check_object(c, s, kw, arg, v);
    if (!strcmp(kw, "items") || !strcmp(kw, "minItems") || !strcmp(kw, "maxItems"))
        return !json_is_array(v) || check_array(c, kw, arg, v);
    if (!strcmp(kw, "minLength"))
        return !json_is_string(v) ||
               code_points(json_string_value(v), json_string_length(v)) >=
                   (size_t)json_integer_value(arg) ||
               fail(c, "minLength: too short");
    if (!strcmp(kw, "minimum"))
        return !json_is_number(v) || json_number_value(v) >= json_number_value(arg) ||
               fail(c, "minimum: %.17g < %.17g", json_number_value(v), json_number_value(arg));
    if (!strcmp(kw, "maximum"))
        return !json_is_number(v) || json_number_value(v) <= json_number_value(arg) ||
               fail(c, "maximum: %.17g > %.17g", json_number_value(v), json_number_value(arg));
    return fail(c, "unsupported keyword \"%s\"", kw);
}

static bool validate(vctx *c, const json_t *s, const json_t *v) {
    if (json_is_boolean(s))
        return json_is_true(s) || fail(c, "false schema");
    if (!json_is_object(s))
        return fail(c, "schema is not an object");
    const char *kw;
    const json_t *arg;
    json_object_foreach((json_t *)s, kw, arg) if (!check_keyword(c, s, kw, arg, v)) return false;
    return true;
}

bool vw_schema_validate(const json_t *root, const json_t *instance, char *msg, size_t cap) {
    vctx c = {.root = root, .msg = msg, .cap = cap};
    if (cap)
        msg[0] = 0;
    return validate(&c, root, instance);
}

static bool check_schema(vctx *c, const json_t *s);

static bool check_each(vctx *c, const json_t *list) {
    size_t i;
    const json_t *x;
    json_array_foreach(list, i, x) if (!check_schema(c, x)) return false;
    return json_is_array(list) || fail(c, "anyOf/oneOf wants an array");
}

static bool check_values(vctx *c, const json_t *obj) {
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)obj, k, x) if (!check_schema(c, x)) return false;
    return json_is_object(obj) || fail(c, "properties/$defs wants an object");
}

static bool check_schema(vctx *c, const json_t *s) {
    if (json_is_boolean(s))
        return true;
    if (!json_is_object(s))
        return fail(c, "schema is not an object");
    const char *kw;
    const json_t *arg;
    json_object_foreach((json_t *)s, kw, arg) {
        bool known = in_list(kw, ANNOTATIONS, sizeof ANNOTATIONS / sizeof *ANNOTATIONS) ||
                     in_list(kw, ASSERTIONS, sizeof ASSERTIONS / sizeof *ASSERTIONS);
        if (!known)
            return fail(c, "unsupported keyword \"%s\"", kw);
        bool ok = true;
        if (!strcmp(kw, "properties") || !strcmp(kw, "$defs"))
            ok = check_values(c, arg);
        else if (!strcmp(kw, "additionalProperties") || !strcmp(kw, "items"))
            ok = check_schema(c, arg);
        else if (!strcmp(kw, "anyOf") || !strcmp(kw, "oneOf"))
            ok = check_each(c, arg);
        else if (!strcmp(kw, "$ref") && !resolve(c->root, json_string_value(arg)))
            ok = fail(c, "$ref %s does not resolve", json_string_value(arg));
        if (!ok)
            return false;
    }
    return true;
}

bool vw_schema_check(const json_t *root, char *msg, size_t cap) {
    vctx c = {.root = root, .msg = msg, .cap = cap};
    if (cap)
        msg[0] = 0;
    return check_schema(&c, root);
}

json_t *vw_schema_load(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "schemas/%s.schema.json", name);
    char *path = vw_test_path(rel);
    json_t *s = path ? json_load_file(path, JSON_REJECT_DUPLICATES, NULL) : NULL;
    free(path);
    return s;
}
