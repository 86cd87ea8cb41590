/* test_record_in.c — worker-level record checks: the json.loads-compatible
 * validator against CPython 3.11 vectors (fixtures/json_errors, recipe
 * tools/make_json_error_vectors.py), every worker-level rejection triple, the
 * request id rule and the reply-topic allow-list. The result value is
 * test_result_out's. */
#include "record_in.h"
#include "admission/json_in.h"
#include "proc_test.h"
#include "admission/request.h"
#include "vw_test.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static size_t unhex(const char *hex, char *out) {
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (char)v;
    }
    return n;
}

Test(record_in, python_json_vectors) {
    char *path = vw_test_path("fixtures/json_errors/cases.jsonl");
    size_t len = 0;
    char *text = vw_test_read_file(path, &len);
    cr_assert_not_null(text, "missing %s: run tools/make_json_error_vectors.py", path);
    int cases = 0, bad = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t je;
        json_t *c = json_loads(line, 0, &je);
        cr_assert_not_null(c, "bad fixture line: %s", je.text);
        const char *hex = json_string_value(json_object_get(c, "hex"));
        const char *kind = json_string_value(json_object_get(c, "kind"));
        json_t *off = json_object_get(c, "offset"), *msg = json_object_get(c, "msg");
        char *buf = malloc(strlen(hex) / 2 + 1);
        size_t n = unhex(hex, buf);
        vw_pyjson_check chk;
        vw_pyjson_validate(buf, n, &chk);
        const char *got = chk.kind == VW_PYJSON_OK       ? "ok"
                          : chk.kind == VW_PYJSON_SYNTAX ? "syntax"
                                                         : "surrogate";
        int ok = !strcmp(got, kind);
        if (ok && chk.kind == VW_PYJSON_SYNTAX) {
            ok = !strcmp(chk.msg, json_string_value(msg)) &&
                 (json_is_null(off) || (json_int_t)chk.offset == json_integer_value(off));
        }
        if (ok && chk.kind == VW_PYJSON_OK)
            ok = chk.is_object == json_is_true(json_object_get(c, "object"));
        if (!ok && bad++ < 10)
            cr_log_error("case %d (%.80s): want %s @%lld '%s', got %s @%zu '%s'", cases, hex, kind,
                         json_is_null(off) ? -1LL : (long long)json_integer_value(off),
                         json_is_null(msg) ? "" : json_string_value(msg), got, chk.offset, chk.msg);
        cases++;
        free(buf);
        json_decref(c);
    }
    free(text);
    free(path);
    cr_log_info("%d CPython vectors, %d mismatches", cases, bad);
    cr_assert_gt(cases, 2000);
    cr_assert_eq(bad, 0,
                 "%d of %d vectors differ from CPython (HINT: the vectors come from "
                 "tools/make_json_error_vectors.py)",
                 bad, cases);
}

static char *nest(int depth, char open, char close) {
    char *s = malloc((size_t)depth * 2 + 1);
    memset(s, open, (size_t)depth);
    memset(s + depth, close, (size_t)depth);
    s[depth * 2] = 0;
    return s;
}

Test(record_in, nesting_limit_is_1000) {
    vw_pyjson_check chk;
    char *ok = nest(1000, '[', ']'), *deep = nest(1001, '[', ']');
    vw_pyjson_validate(ok, 2000, &chk);
    cr_assert_eq(chk.kind, VW_PYJSON_OK);
    vw_pyjson_validate(deep, 2002, &chk);
    cr_assert_eq(chk.kind, VW_PYJSON_SYNTAX);
    cr_assert_eq(chk.offset, 1000, "the 1001st bracket");
    cr_assert_str_eq(chk.msg, "maximum recursion depth exceeded while decoding a JSON array from "
                              "a unicode string");
    /* {"a":{"a":...1...}}: 1000 objects pass, 1001 fail at the last '{'. */
    for (int depth = 1000; depth <= 1001; depth++) {
        char *obj = malloc((size_t)depth * 6 + 2), *p = obj;
        for (int i = 0; i < depth; i++, p += 5)
            memcpy(p, "{\"a\":", 5);
        *p++ = '1';
        memset(p, '}', (size_t)depth);
        p += depth;
        vw_pyjson_validate(obj, (size_t)(p - obj), &chk);
        if (depth == 1000) {
            cr_assert_eq(chk.kind, VW_PYJSON_OK);
            cr_assert(chk.is_object);
        } else {
            cr_assert_eq(chk.kind, VW_PYJSON_SYNTAX);
            cr_assert_eq(chk.offset, 5000);
            cr_assert_str_eq(chk.msg, "maximum recursion depth exceeded while decoding a JSON "
                                      "object from a unicode string");
        }
        free(obj);
    }
    free(ok);
    free(deep);
}

/* Runs the worker-level check and compares the rejection value with want. */
static void expect_reject(const char *value, size_t len, int64_t max, int status,
                          const char *want) {
    vw_record rec = {.topic = "in",
                     .partition = 0,
                     .offset = 5,
                     .timestamp = 1,
                     .value = value,
                     .value_len = len,
                     .request_id = "r"};
    vw_result r = {0};
    bool rejected = false;
    cr_assert_eq(vw_record_in_check(&rec, max, &rejected, &r, NULL), VW_OK);
    cr_assert(rejected, "expected a rejection for %.40s", value);
    cr_assert_eq(r.kind, VW_RESULT_RECORD);
    cr_assert_eq(r.vela_status, status);
    cr_assert_str_eq(r.value, want);
    vw_result_clear(&r);
}

Test(record_in, rejection_triples) {
    expect_reject("{\"state\":\"x\"}", 13, 12, 413,
                  "{\"status\":413,\"detail\":[{\"loc\":[\"body\"],\"msg\":\"Data should have at "
                  "most 12 bytes\",\"type\":\"too_long\"}]}");
    expect_reject("{\"a\" 1}", 7, 100, 400,
                  "{\"status\":400,\"detail\":[{\"loc\":[\"body\",5],\"msg\":\"JSON decode error: "
                  "Expecting ':' delimiter\",\"type\":\"json_invalid\"}]}");
    expect_reject("{\"a\":\"\xff\"}", 8, 100, 400,
                  "{\"status\":400,\"detail\":[{\"loc\":[\"body\",6],\"msg\":\"JSON decode error: "
                  "'utf-8' codec can't decode byte 0xff in position 6: invalid start "
                  "byte\",\"type\":\"json_invalid\"}]}");
    expect_reject("\xef\xbb\xbf{}", 5, 100, 400,
                  "{\"status\":400,\"detail\":[{\"loc\":[\"body\",0],\"msg\":\"JSON decode error: "
                  "Unexpected UTF-8 BOM (decode using utf-8-sig)\",\"type\":\"json_invalid\"}]}");
    expect_reject(NULL, 0, 100, 400,
                  "{\"status\":400,\"detail\":[{\"loc\":[\"body\",0],\"msg\":\"JSON decode error: "
                  "Expecting value\",\"type\":\"json_invalid\"}]}");
    expect_reject("{\"s\":\"\\udc00\"}", 14, 100, 400,
                  "{\"status\":400,\"detail\":[{\"loc\":[\"body\"],\"msg\":\"the request contains "
                  "an unpaired surrogate\",\"type\":\"json_invalid\"}]}");
    expect_reject("[1, 2]", 6, 100, 400,
                  "{\"status\":400,\"detail\":[{\"loc\":[\"body\"],\"msg\":\"Input should be a "
                  "valid dictionary or object to extract fields from\",\"type\":"
                  "\"model_attributes_type\"}]}");
    expect_reject("\"text\"", 6, 100, 400,
                  "{\"status\":400,\"detail\":[{\"loc\":[\"body\"],\"msg\":\"Input should be a "
                  "valid dictionary or object to extract fields from\",\"type\":"
                  "\"model_attributes_type\"}]}");
}

Test(record_in, size_limit_boundary_and_pass) {
    const char *v = "{\"state\":\"x\"}";
    vw_record rec = {.topic = "in", .value = v, .value_len = 13, .request_id = "r"};
    vw_result r = {0};
    bool rejected = true;
    cr_assert_eq(vw_record_in_check(&rec, 13, &rejected, &r, NULL), VW_OK);
    cr_assert_not(rejected, "exactly at max_request_bytes passes");
    cr_assert_null(r.value);
    expect_reject(v, 13, 12, 413,
                  "{\"status\":413,\"detail\":[{\"loc\":[\"body\"],\"msg\":\"Data should have at "
                  "most 12 bytes\",\"type\":\"too_long\"}]}");
}

Test(record_in, request_id_rule) {
    char *id = vw_record_in_id("in", 3, 42, "hdr-id", 6, "key", 3);
    cr_assert_str_eq(id, "hdr-id");
    free(id);
    id = vw_record_in_id("in", 3, 42, NULL, 0, "key-1", 5);
    cr_assert_str_eq(id, "key-1");
    free(id);
    id = vw_record_in_id("in", 3, 42, NULL, 0, NULL, 0);
    cr_assert_str_eq(id, "in:3:42");
    free(id);
    id = vw_record_in_id("in", 3, 42, "\xff", 1, "k\0x", 3);
    cr_assert_str_eq(id, "in:3:42", "invalid UTF-8 header and NUL in key are skipped");
    free(id);
    id = vw_record_in_id("in", 0, 0, "", 0, "k", 1);
    cr_assert_str_eq(id, "k", "an empty header is skipped");
    free(id);
    /* Longer than VW_ECHO_MAX: its digest (Python's hashlib.sha256 of 1025 'k'). */
    char k[VW_ECHO_MAX + 1];
    memset(k, 'k', sizeof k);
    id = vw_record_in_id("in", 0, 0, NULL, 0, k, sizeof k);
    cr_assert_str_eq(id, "sha256:011cc8dcade24f43d2d7f95605d8481da1d0b86475def49be02bfc20cee86e65");
    free(id);
    id = vw_record_in_id("in", 0, 0, k, sizeof k, "short", 5);
    cr_assert_str_eq(id, "sha256:011cc8dcade24f43d2d7f95605d8481da1d0b86475def49be02bfc20cee86e65",
                     "a long header still wins over the key");
    free(id);
}

Test(record_in, reply_topic_allow_list) {
    char *allow[] = {"replies", "eval"};
    vw_config cfg = {0};
    cfg.topics.reply_allow = allow;
    cfg.topics.n_reply_allow = 2;
    cr_assert_str_eq(vw_record_in_reply_topic(&cfg, "eval", 4), "eval");
    cr_assert_null(vw_record_in_reply_topic(&cfg, "evil", 4));
    cr_assert_null(vw_record_in_reply_topic(&cfg, "eva", 3));
    cr_assert_null(vw_record_in_reply_topic(&cfg, NULL, 0));
}

/* One front door: on every CPython vector, core's parser (vw_json_parse, used by
 * `score`, `plan` and the model processor) fails exactly as the checker, and
 * core admission (vw_request_admit) answers the worker's triple. */
Test(record_in, core_admission_agrees_on_vectors) {
    char *path = vw_test_path("fixtures/json_errors/cases.jsonl");
    size_t len = 0;
    char *text = vw_test_read_file(path, &len);
    cr_assert_not_null(text, "missing %s: run tools/make_json_error_vectors.py", path);
    vw_admit_cfg *cfg = proc_cfg("bundle");
    int cases = 0, bad = 0, rejected = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *c = json_loads(line, 0, NULL);
        const char *hex = json_string_value(json_object_get(c, "hex"));
        char *buf = malloc(strlen(hex) / 2 + 1);
        size_t n = unhex(hex, buf);
        vw_pyjson_check chk;
        vw_pyjson_validate(buf, n, &chk);
        vw_json_doc *doc = NULL;
        vw_json_error je;
        vw_status st = vw_json_parse(buf, n, &doc, &je);
        int ok = chk.kind == VW_PYJSON_OK ? st == VW_OK
                                          : st == VW_EINVAL && je.kind == chk.kind &&
                                                je.offset == chk.offset && !strcmp(je.msg, chk.msg);
        vw_json_free(doc);
        /* the worker's rejection vs core admission's detail */
        vw_record rec = {.topic = "t", .value = buf, .value_len = n, .request_id = "r"};
        vw_result r = {0};
        bool rej = false;
        cr_assert_eq(vw_record_in_check(&rec, 1 << 20, &rej, &r, NULL), VW_OK);
        vw_request *req = NULL;
        vw_errlist d = {0};
        int status = 0;
        cr_assert_eq(vw_request_admit(cfg, buf, n, &req, &status, &d, NULL), VW_OK);
        if (rej) {
            rejected++;
            char *dj = proc_detail_json(&d);
            char want[512];
            snprintf(want, sizeof want, "{\"status\":%d,\"detail\":%s}", status, dj);
            ok = ok && status == r.vela_status && !strcmp(want, r.value);
            if (!ok && bad < 10)
                cr_log_error("case %d: worker %s, core %s", cases, r.value, want);
            free(dj);
        }
        bad += !ok;
        vw_request_free(req);
        vw_errlist_free(&d);
        vw_result_clear(&r);
        free(buf);
        json_decref(c);
        cases++;
    }
    vw_admit_cfg_free(cfg);
    free(text);
    free(path);
    cr_log_info("%d vectors (%d rejected), %d disagreements", cases, rejected, bad);
    cr_assert_gt(rejected, 1000);
    cr_assert_eq(bad, 0, "%d of %d vectors: core and worker disagree", bad, cases);
}
