/* answer_cases.c — loading and running the end-to-end answer goldens (see
 * answer_cases.h). */
#include "answer_cases.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record_in.h"
#include "vw_test.h"

#define ACASE_FILE "fixtures/answers/cases.jsonl"

/* base64 (no line breaks) -> malloc'd bytes. */
static char *unbase64(const char *s, size_t *len) {
    size_t n = strlen(s);
    unsigned char *out = malloc(n / 4 * 3 + 4);
    int got = out ? EVP_DecodeBlock(out, (const unsigned char *)s, (int)n) : -1;
    if (got < 0) {
        free(out);
        return NULL;
    }
    /* EVP_DecodeBlock counts the '=' padding as zero bytes. */
    while (n && s[n - 1] == '=' && got > 0) {
        n--;
        got--;
    }
    out[got] = 0;
    *len = (size_t)got;
    return (char *)out;
}

static bool load_case(json_t *row, vw_acase *c) {
    const char *name = json_string_value(json_object_get(row, "name"));
    const char *bundle = json_string_value(json_object_get(row, "bundle"));
    json_t *body = json_object_get(row, "body"), *b64 = json_object_get(row, "body_b64");
    json_t *exp = json_object_get(row, "expected");
    if (!name || !bundle || !exp || (!json_is_string(body) && !json_is_string(b64)))
        return false;
    c->name = strdup(name);
    c->bundle = strdup(bundle);
    if (json_is_string(body)) {
        c->len = json_string_length(body);
        c->body = malloc(c->len + 1);
        if (c->body) {
            memcpy(c->body, json_string_value(body), c->len);
            c->body[c->len] = 0;
        }
    } else {
        c->body = unbase64(json_string_value(b64), &c->len);
    }
    json_t *limit = json_object_get(row, "max_request_bytes");
    c->max_request_bytes = limit ? json_integer_value(limit) : (int64_t)1 << 20;
    c->status = (int)json_integer_value(json_object_get(row, "status"));
    c->expected = json_incref(exp);
    return c->name && c->bundle && c->body;
}

bool vw_acases_load(vw_acases *out) {
    memset(out, 0, sizeof *out);
    char *path = vw_test_path(ACASE_FILE);
    size_t len = 0;
    char *text = path ? vw_test_read_file(path, &len) : NULL;
    bool ok = text != NULL;
    for (char *line = text, *end; ok && line < text + len; line = end + 1) {
        end = memchr(line, '\n', (size_t)(text + len - line));
        if (!end)
            end = text + len;
        if (end == line)
            continue;
        json_error_t je;
        json_t *row = json_loadb(line, (size_t)(end - line), 0, &je);
        vw_acase *v = realloc(out->v, (out->n + 1) * sizeof *v);
        ok = row && v;
        if (v)
            out->v = v;
        if (ok) {
            memset(&out->v[out->n], 0, sizeof out->v[out->n]);
            ok = load_case(row, &out->v[out->n++]);
        }
        json_decref(row);
    }
    if (!ok || out->n == 0)
        fprintf(stderr, "%s: cannot load the answer goldens; HINT: run .venv/bin/python %s\n",
                ACASE_FILE, VW_ACASES_RECIPE);
    free(text);
    free(path);
    return ok && out->n > 0;
}

void vw_acases_free(vw_acases *c) {
    for (size_t i = 0; c->v && i < c->n; i++) {
        free(c->v[i].name);
        free(c->v[i].bundle);
        free(c->v[i].body);
        json_decref(c->v[i].expected);
    }
    free(c->v);
    memset(c, 0, sizeof *c);
}

vw_engine *vw_acase_engine(vw_acase_engines *es, const char *bundle) {
    bool tiny = !strcmp(bundle, "tiny");
    vw_engine **slot = tiny ? &es->tiny : &es->small;
    if (*slot)
        return *slot;
    char *dir = vw_test_path(tiny ? "fixtures/tiny-vela" : "fixtures/answers/tiny-small");
    vw_err err = {0};
    vw_engine_opts opts = {
        .make_executor = es->make_executor, .make_ctx = es->make_ctx, .noul_calibration = -1};
    vw_status st = dir ? vw_engine_open(dir, &opts, slot, &err) : VW_ENOMEM;
    if (st != VW_OK)
        fprintf(stderr, "%s: %s (%s)\n", dir ? dir : bundle, err.msg, err.type);
    free(dir);
    return *slot;
}

void vw_acase_engines_free(vw_acase_engines *es) {
    vw_engine_free(es->tiny);
    vw_engine_free(es->small);
    es->tiny = es->small = NULL;
}

vw_status vw_acase_plan(vw_engine *e, const vw_acase *c, vw_plan **plan, int *status, vw_sbuf *rej,
                        vw_err *err) {
    *plan = NULL;
    vw_record rec = {.topic = "requests",
                     .timestamp = -1,
                     .value = c->body,
                     .value_len = c->len,
                     .request_id = c->name};
    vw_result res = {0};
    bool rejected = false;
    vw_status st = vw_record_in_check(&rec, c->max_request_bytes, &rejected, &res, err);
    if (st == VW_OK && rejected) {
        *status = res.vela_status;
        vw_sbuf_put(rej, res.value, res.value_len);
        free(res.value); /* a check result owns only its value (no headers) */
        return vw_sbuf_status(rej);
    }
    vw_errlist detail = {0};
    st = vw_engine_plan(e, c->body, c->len, plan, status, &detail, err);
    if (st == VW_OK && !*plan) {
        vw_plan_write_rejection(rej, *status, &detail);
        st = vw_sbuf_status(rej);
    } else if (st == VW_OK) {
        *status = 200;
    }
    vw_errlist_free(&detail);
    return st;
}

vw_status vw_acase_run(vw_engine *e, const vw_acase *c, int *status, vw_sbuf *out, vw_err *err) {
    vw_plan *plan = NULL;
    vw_status st = vw_acase_plan(e, c, &plan, status, out, err);
    if (st == VW_OK && plan)
        st = vw_engine_score(e, &plan, 1, out, err);
    vw_plan_free(plan);
    return st;
}
