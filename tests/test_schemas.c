/* test_schemas.c — the JSON Schemas in schemas/ against real output, no Python.
 *
 *  - subset: the three schemas use only the keywords tests/support/vw_schema.c
 *    implements (and a schema using another keyword is refused);
 *  - keywords: the validator on each keyword, both ways;
 *  - envelopes: every 200 result the C engine gives for the answer goldens
 *    (fixtures/answers/cases.jsonl), as the worker writes it (vw_result_out_value:
 *    request_id and source first), and every golden envelope, validate against
 *    envelope.schema.json;
 *  - rejections: every rejection the C code gives for them (record checks and
 *    the engine: 400, 413, 422), wrapped the same way, validates against
 *    rejection.schema.json;
 *  - requests: a request answered with no invalid question validates against
 *    request.schema.json; one rejected 422 for structural reasons only
 *    (missing, dict_type, too_short, string_type, ...) does not;
 *  - mutations: broken envelopes / rejections (missing usage, a probability of
 *    1.5, an unknown key, a bad span offset, an unknown head, status 500, empty
 *    detail) are refused, so the checks above can fail.
 * tools/make_answer_goldens.py cross-checks the same schemas and goldens with
 * Python `jsonschema` (fixtures/answers/SOURCE.json "jsonschema_check").
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result_out.h"
#include "answer_cases.h"
#include "vw_schema.h"
#include "vw_test.h"

static json_t *schema(const char *name) {
    json_t *s = vw_schema_load(name);
    cr_assert_not_null(s, "schemas/%s.schema.json does not load", name);
    return s;
}

static json_t *parse(const char *text) {
    json_error_t je;
    json_t *v = json_loads(text, 0, &je);
    cr_assert_not_null(v, "%s: %.200s", je.text, text);
    return v;
}

Test(schemas, subset) {
    static const char *const names[] = {"request", "envelope", "rejection"};
    char msg[512];
    for (size_t i = 0; i < 3; i++) {
        json_t *s = schema(names[i]);
        cr_expect(vw_schema_check(s, msg, sizeof msg), "%s: %s", names[i], msg);
        json_decref(s);
    }
    json_t *bad = parse("{\"type\":\"object\",\"properties\":{\"a\":{\"pattern\":\"x\"}}}");
    cr_expect_not(vw_schema_check(bad, msg, sizeof msg));
    cr_expect(strstr(msg, "pattern") != NULL, "%s", msg);
    json_decref(bad);
    bad = parse("{\"$ref\":\"#/$defs/nowhere\"}");
    cr_expect_not(vw_schema_check(bad, msg, sizeof msg));
    json_decref(bad);
}

Test(schemas, keywords) {
    static const struct {
        const char *schema, *instance;
        bool valid;
    } t[] = {
        {"{\"type\":\"integer\"}", "3", true},
        {"{\"type\":\"integer\"}", "3.0", true},
        {"{\"type\":\"integer\"}", "3.5", false},
        {"{\"type\":[\"string\",\"null\"]}", "null", true},
        {"{\"type\":[\"string\",\"null\"]}", "1", false},
        {"{\"enum\":[400,413]}", "413.0", true},
        {"{\"enum\":[400,413]}", "422", false},
        {"{\"const\":\"choice\"}", "\"choice\"", true},
        {"{\"const\":\"choice\"}", "\"noul\"", false},
        {"{\"required\":[\"a\"]}", "{\"a\":1}", true},
        {"{\"required\":[\"a\"]}", "{\"b\":1}", false},
        {"{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"a\":1}", false},
        {"{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"b\":1}", true},
        {"{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"a\":1}", true},
        {"{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"b\":1}", false},
        {"{\"additionalProperties\":{\"type\":\"number\"}}", "{\"x\":0.5}", true},
        {"{\"additionalProperties\":{\"type\":\"number\"}}", "{\"x\":\"0.5\"}", false},
        {"{\"items\":{\"type\":\"integer\"}}", "[1,2]", true},
        {"{\"items\":{\"type\":\"integer\"}}", "[1,\"2\"]", false},
        {"{\"minItems\":1,\"maxItems\":2}", "[]", false},
        {"{\"minItems\":1,\"maxItems\":2}", "[1,2,3]", false},
        {"{\"minItems\":1,\"maxItems\":2}", "[1]", true},
        {"{\"minProperties\":1,\"maxProperties\":1}", "{}", false},
        {"{\"minProperties\":1,\"maxProperties\":1}", "{\"a\":1,\"b\":2}", false},
        {"{\"minLength\":2}", "\"\\u00e9\"", false},
        {"{\"minLength\":2}", "\"\\u00e9\\u00e9\"", true},
        {"{\"minimum\":0,\"maximum\":1}", "1.0", true},
        {"{\"minimum\":0,\"maximum\":1}", "1.0000000000000002", false},
        {"{\"minimum\":0,\"maximum\":1}", "-1e-300", false},
        {"{\"minimum\":0}", "\"not a number\"", true},
        {"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"array\"}]}", "[]", true},
        {"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"array\"}]}", "{}", false},
        {"{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "1.5", true},
        {"{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "1", false},
        {"{\"$defs\":{\"p\":{\"maximum\":1}},\"items\":{\"$ref\":\"#/$defs/p\"}}", "[0.5]", true},
        {"{\"$defs\":{\"p\":{\"maximum\":1}},\"items\":{\"$ref\":\"#/$defs/p\"}}", "[2]", false},
        {"false", "1", false},
        {"true", "1", true},
    };
    char msg[512];
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        json_t *s = json_loads(t[i].schema, JSON_DECODE_ANY, NULL);
        json_t *v = json_loads(t[i].instance, JSON_DECODE_ANY, NULL);
        cr_assert(s && v, "row %zu does not parse", i);
        cr_expect_eq(vw_schema_validate(s, v, msg, sizeof msg), t[i].valid,
                     "row %zu: %s against %s (%s)", i, t[i].instance, t[i].schema, msg);
        json_decref(s);
        json_decref(v);
    }
}

/* The worker's record value for a result text (request_id, source first). */
static json_t *as_record(const char *text, size_t len, const char *id, size_t i) {
    vw_record rec = {.topic = "requests",
                     .partition = (int32_t)(i % 3),
                     .offset = (int64_t)i,
                     .timestamp = i % 2 ? -1 : 1767225600000 + (int64_t)i,
                     .request_id = id};
    vw_result r = {.kind = VW_RESULT_RECORD, .value = (char *)text, .value_len = len};
    char *value = NULL;
    size_t n = 0;
    vw_err err = {0};
    cr_assert_eq(vw_result_out_value(&r, &rec, &value, &n, &err), VW_OK, "%s", err.msg);
    json_t *v = parse(value);
    free(value);
    return v;
}

static void expect_valid(const json_t *s, const json_t *v, const char *what, const char *name) {
    char msg[512];
    cr_expect(vw_schema_validate(s, v, msg, sizeof msg), "%s of %s: %s", what, name, msg);
}

/* Real output (C engine + worker wrapping) and the goldens against the schemas. */
Test(schemas, outputs) {
    vw_acases cases;
    cr_assert(vw_acases_load(&cases));
    vw_acase_engines es = {0};
    json_t *env = schema("envelope"), *rej = schema("rejection");
    size_t n_env = 0, n_rej = 0;
    for (size_t i = 0; i < cases.n; i++) {
        const vw_acase *c = &cases.v[i];
        vw_engine *e = vw_acase_engine(&es, c->bundle);
        cr_assert_not_null(e);
        vw_sbuf out = {0};
        vw_err err = {0};
        int status = 0;
        cr_assert_eq(vw_acase_run(e, c, &status, &out, &err), VW_OK, "%s: %s", c->name, err.msg);
        json_t *mine = as_record(out.p, out.len, c->name, i);
        char *golden_text = json_dumps(c->expected, JSON_COMPACT);
        json_t *golden = as_record(golden_text, strlen(golden_text), c->name, i);
        const json_t *s = status == 200 ? env : rej;
        expect_valid(s, mine, "C output", c->name);
        expect_valid(s, golden, "golden", c->name);
        n_env += status == 200;
        n_rej += status != 200;
        json_decref(mine);
        json_decref(golden);
        free(golden_text);
        vw_sbuf_free(&out);
    }
    cr_log_info("schemas: %zu envelopes and %zu rejections valid", n_env, n_rej);
    fprintf(stderr, "schemas: %zu envelopes and %zu rejections of the C code valid\n", n_env,
            n_rej);
    cr_expect_gt(n_env, 20);
    cr_expect_gt(n_rej, 8);
    json_decref(env);
    json_decref(rej);
    vw_acase_engines_free(&es);
    vw_acases_free(&cases);
}

static const char *const STRUCTURAL[] = {"missing",        "dict_type",  "too_short",
                                         "string_type",    "model_type", "literal_error",
                                         "extra_forbidden"};

/* true: must validate; false: must not; -1: not judged (make_answer_goldens'
 * request_verdict, the same rule). */
static int verdict(const vw_acase *c) {
    if (c->status == 200) {
        const char *k;
        json_t *a;
        json_object_foreach(json_object_get(c->expected, "answers"), k, a) {
            const char *e = json_string_value(json_object_get(a, "error"));
            if (e && !strcmp(e, "invalid_question"))
                return -1;
        }
        return 1;
    }
    if (c->status != 422)
        return -1;
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(c->expected, "detail"), i, d) {
        const char *t = json_string_value(json_object_get(d, "type"));
        bool structural = false;
        for (size_t k = 0; t && k < sizeof STRUCTURAL / sizeof *STRUCTURAL; k++)
            structural |= !strcmp(t, STRUCTURAL[k]);
        if (!structural)
            return -1;
    }
    return 0;
}

Test(schemas, requests) {
    vw_acases cases;
    cr_assert(vw_acases_load(&cases));
    json_t *s = schema("request");
    size_t valid = 0, invalid = 0;
    char msg[512];
    for (size_t i = 0; i < cases.n; i++) {
        const vw_acase *c = &cases.v[i];
        int want = verdict(c);
        if (want < 0)
            continue;
        json_t *req = json_loadb(c->body, c->len, JSON_DECODE_ANY, NULL);
        cr_assert_not_null(req, "%s", c->name);
        bool ok = vw_schema_validate(s, req, msg, sizeof msg);
        cr_expect_eq(ok, want == 1, "%s: request schema says %d (%s)", c->name, ok, msg);
        valid += ok;
        invalid += !ok;
        json_decref(req);
    }
    cr_log_info("requests: %zu valid, %zu invalid as expected", valid, invalid);
    cr_expect_gt(valid, 20);
    cr_expect_gt(invalid, 2);
    json_decref(s);
    vw_acases_free(&cases);
}

/* Applies one mutation (a JSON object of path -> new value, "DELETE" deletes). */
static void expect_refused(const char *schema_name, const char *base, const char *key,
                           const char *sub, const char *value) {
    json_t *s = schema(schema_name), *v = as_record(base, strlen(base), "mutant", 0);
    json_t *target = sub ? json_object_get(v, key) : v;
    const char *field = sub ? sub : key;
    cr_assert_not_null(target, "%s", key);
    if (!strcmp(value, "DELETE"))
        json_object_del(target, field);
    else
        json_object_set_new(target, field, json_loads(value, JSON_DECODE_ANY, NULL));
    char msg[512];
    cr_expect_not(vw_schema_validate(s, v, msg, sizeof msg), "%s with %s.%s = %s accepted",
                  schema_name, key, sub ? sub : "", value);
    json_decref(v);
    json_decref(s);
}

Test(schemas, mutations) {
    const char *env = "{\"answers\":{\"q\":{\"type\":\"noul\",\"noul\":0.5}},"
                      "\"usage\":{\"input_tokens\":10,\"output_tokens\":0},"
                      "\"spans\":{\"p\":[{\"label\":\"A\",\"start\":0,\"end\":2,\"text\":\"ab\","
                      "\"probability\":0."
                      "9}]},"
                      "\"span_heads\":{\"p\":\"router\"},\"thresholds\":{\"p\":0.5}}";
    json_t *s = schema("envelope"), *v = as_record(env, strlen(env), "base", 0);
    char msg[512];
    cr_assert(vw_schema_validate(s, v, msg, sizeof msg), "the base envelope: %s", msg);
    json_decref(v);
    json_decref(s);
    expect_refused("envelope", env, "usage", NULL, "DELETE");
    expect_refused("envelope", env, "answers", "q", "{\"type\":\"noul\",\"noul\":1.5}");
    expect_refused("envelope", env, "answers", "q", "{\"type\":\"maybe\",\"noul\":0.5}");
    expect_refused("envelope", env, "answers", "q", "{\"type\":\"choice\",\"error\":\"oops\"}");
    expect_refused("envelope", env, "meta", NULL, "{}");
    expect_refused(
        "envelope", env, "spans", "p",
        "[{\"label\":\"A\",\"start\":-1,\"end\":2,\"text\":\"ab\",\"probability\":0.9}]");
    expect_refused("envelope", env, "span_heads", "p", "\"middle\"");
    expect_refused("envelope", env, "thresholds", "p", "\"0.5\"");
    const char *rej = "{\"status\":422,\"detail\":[{\"loc\":[\"body\",\"state\"],\"msg\":\"Field "
                      "required\",\"type\":\"missing\"}]}";
    s = schema("rejection");
    v = as_record(rej, strlen(rej), "base", 1);
    cr_assert(vw_schema_validate(s, v, msg, sizeof msg), "the base rejection: %s", msg);
    json_decref(v);
    json_decref(s);
    expect_refused("rejection", rej, "status", NULL, "500");
    expect_refused("rejection", rej, "detail", NULL, "[]");
    expect_refused("rejection", rej, "detail", NULL,
                   "[{\"loc\":[],\"msg\":\"x\",\"type\":\"missing\"}]");
    expect_refused("rejection", rej, "request_id", NULL, "DELETE");
}
