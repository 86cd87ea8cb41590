/* test_rejections.c — every row of docs/rejections.md: the status and the exact
 * (loc, msg, type) detail of a request that exercises it (docs/contract.md
 * Decisions 1, 4, 5). Rows that stay inside a 200 (per-question errors) are
 * checked both alone (the request then has no valid question: 422) and next
 * to a valid question (200, the error kept on its entry). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "proc_test.h"
#include "admission/request.h"

static vw_admit_cfg *cfg;
static void setup(void) {
    cfg = proc_cfg("bundle");
}
static void teardown(void) {
    vw_admit_cfg_free(cfg);
}
TestSuite(rejections, .init = setup, .fini = teardown);

typedef struct row {
    const char *name;
    const char *body;
    int status;
    const char *detail;
} row;

#define OKQ "\"ok\":{\"type\":\"noul\",\"instructions\":\"Fine?\"}"
#define LOCQ "\"loc\":[\"body\",\"questions\",\"q\""

static const row ROWS[] = {
    {"json_syntax", "{\"state\":\"x\",", 400,
     "[{\"loc\":[\"body\",13],\"msg\":\"JSON decode error: Expecting property name enclosed in "
     "double quotes\",\"type\":"
     "\"json_invalid\"}]"},
    {"json_bom", "\xEF\xBB\xBF{}", 400,
     "[{\"loc\":[\"body\",0],\"msg\":\"JSON decode error: Unexpected UTF-8 BOM (decode using "
     "utf-8-sig)\",\"type\":\"json_invalid\"}]"},
    {"json_utf8", "{\"state\":\"\xff\"}", 400,
     "[{\"loc\":[\"body\",10],\"msg\":\"JSON decode error: 'utf-8' codec can't decode byte 0xff "
     "in position 10: invalid start byte\",\"type\":\"json_invalid\"}]"},
    {"json_number_tail", "{\"state\":1.5.3}", 400,
     "[{\"loc\":[\"body\",12],\"msg\":\"JSON decode error: Expecting ',' delimiter\",\"type\":"
     "\"json_invalid\"}]"},
    {"json_surrogate", "{\"state\":\"\\udc00\",\"questions\":{}}", 400,
     "[{\"loc\":[\"body\"],\"msg\":\"the request contains an unpaired surrogate\",\"type\":"
     "\"json_invalid\"}]"},
    {"not_an_object", "[1,2]", 400,
     "[{\"loc\":[\"body\"],\"msg\":\"Input should be a valid dictionary or object to extract "
     "fields from\",\"type\":\"model_attributes_type\"}]"},
    {"model_type", "{\"model\":5,\"state\":\"s\",\"questions\":{" OKQ "}}", 422,
     "[{\"loc\":[\"body\",\"model\"],\"msg\":\"Input should be a valid string\",\"type\":"
     "\"string_type\"}]"},
    {"state_missing", "{\"questions\":{" OKQ "}}", 422,
     "[{\"loc\":[\"body\",\"state\"],\"msg\":\"Field required\",\"type\":\"missing\"}]"},
    {"state_blank", "{\"state\":\" \\u001c\\n\",\"questions\":{" OKQ "}}", 422,
     "[{\"loc\":[\"body\",\"state\"],\"msg\":\"state must not be empty or whitespace\",\"type\":"
     "\"value_error\"}]"},
    {"state_array_nan", "{\"state\":[1,NaN],\"questions\":{" OKQ "}}", 422,
     "[{\"loc\":[\"body\",\"state\"],\"msg\":\"state must hold JSON values\",\"type\":"
     "\"value_error\"}]"},
    {"state_number", "{\"state\":5,\"questions\":{" OKQ "}}", 422,
     "[{\"loc\":[\"body\",\"state\"],\"msg\":\"state must be a non-empty string, JSON object or "
     "JSON array\",\"type\":\"value_error\"}]"},
    {"state_empty_object", "{\"state\":{},\"questions\":{" OKQ "}}", 422,
     "[{\"loc\":[\"body\",\"state\"],\"msg\":\"state must be a non-empty string, JSON object or "
     "JSON array\",\"type\":\"value_error\"}]"},
    {"state_object_inf", "{\"state\":{\"request\":\"a\",\"n\":1e400},\"questions\":{" OKQ "}}", 422,
     "[{\"loc\":[\"body\",\"state\"],\"msg\":\"state must be a non-empty string, JSON object or "
     "JSON array\",\"type\":\"value_error\"}]"},
    {"state_part_empty",
     "{\"state\":{\"request\":\"q\",\"answer\":\"  \"},\"questions\":{" OKQ "}}", 422,
     "[{\"loc\":[\"body\",\"state\"],\"msg\":\"the answer part of the state is empty\",\"type\":"
     "\"value_error\"}]"},
    {"questions_missing", "{\"state\":\"s\"}", 422,
     "[{\"loc\":[\"body\",\"questions\"],\"msg\":\"Field required\",\"type\":\"missing\"}]"},
    {"questions_not_map", "{\"state\":\"s\",\"questions\":[]}", 422,
     "[{\"loc\":[\"body\",\"questions\"],\"msg\":\"questions must be a nonempty mapping of "
     "question IDs\",\"type\":\"dict_type\"}]"},
    {"questions_empty", "{\"state\":\"s\",\"questions\":{}}", 422,
     "[{\"loc\":[\"body\",\"questions\"],\"msg\":\"questions must be a nonempty mapping of "
     "question IDs\",\"type\":\"too_short\"}]"},
    {"all_top_level_problems", "{\"model\":[],\"state\":\"\",\"questions\":0}", 422,
     "[{\"loc\":[\"body\",\"model\"],\"msg\":\"Input should be a valid string\",\"type\":"
     "\"string_type\"},{\"loc\":[\"body\",\"state\"],\"msg\":\"state must not be empty or "
     "whitespace\",\"type\":\"value_error\"},{\"loc\":[\"body\",\"questions\"],\"msg\":"
     "\"questions must be a nonempty mapping of question IDs\",\"type\":\"dict_type\"}]"},
};

/* Per-question rows: the question q alone (422). */
typedef struct qrow {
    const char *name;
    const char *state;
    const char *q;
    const char *detail; /* the triple without the surrounding [] */
} qrow;

static const qrow QROWS[] = {
    {"not_an_object", "\"s\"", "[1]",
     "{" LOCQ "],\"msg\":\"a question must be an object\",\"type\":\"model_type\"}"},
    {"bad_type", "\"s\"", "{\"type\":\"rank\",\"instructions\":\"x\"}",
     "{" LOCQ ",\"type\"],\"msg\":\"type must be one of ['choice', 'noul', 'score']\",\"type\":"
     "\"literal_error\"}"},
    {"unknown_fields", "\"s\"",
     "{\"type\":\"choice\",\"instructions\":\"x\",\"criteria\":{\"a\":1,\"b\":2},\"zeta\":1,"
     "\"choices\":[],\"threshold\":0.5}",
     "{" LOCQ ",\"choices\"],\"msg\":\"choice questions do not take ['choices', 'threshold', "
     "'zeta']\",\"type\":\"extra_forbidden\"}"},
    {"span_unknown_field", "\"s\"",
     "{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"a\":\"b\"},\"overflow\":1}",
     "{" LOCQ ",\"overflow\"],\"msg\":\"span questions do not take ['overflow']\",\"type\":"
     "\"extra_forbidden\"}"},
    {"instructions_missing", "\"s\"", "{\"type\":\"noul\"}",
     "{" LOCQ ",\"instructions\"],\"msg\":\"instructions is required\",\"type\":\"missing\"}"},
    {"instructions_blank", "\"s\"", "{\"type\":\"noul\",\"instructions\":\" \\t\"}",
     "{" LOCQ ",\"instructions\"],\"msg\":\"instructions must not be empty or whitespace\","
     "\"type\":\"value_error\"}"},
    {"instructions_type", "\"s\"", "{\"type\":\"set\",\"criteria\":{\"a\":null}}",
     "{" LOCQ ",\"instructions\"],\"msg\":\"instructions must be text, an object or an array\","
     "\"type\":\"value_error\"}"},
    {"score_levels", "\"s\"", "{\"type\":\"score\",\"instructions\":\"x\",\"criteria\":[\"a\"]}",
     "{" LOCQ ",\"criteria\"],\"msg\":\"criteria must list 2 to 10 levels\",\"type\":"
     "\"value_error\"}"},
    {"score_level_null", "\"s\"",
     "{\"type\":\"score\",\"instructions\":\"x\",\"criteria\":[\"a\",null]}",
     "{" LOCQ ",\"criteria\",1],\"msg\":\"criteria[1] must be text, an object or an array\","
     "\"type\":\"value_error\"}"},
    {"score_level_blank", "\"s\"",
     "{\"type\":\"score\",\"instructions\":\"x\",\"criteria\":[\"\",\"b\"]}",
     "{" LOCQ ",\"criteria\",0],\"msg\":\"criteria[0] must not be empty or whitespace\","
     "\"type\":\"value_error\"}"},
    {"noul_keys", "\"s\"",
     "{\"type\":\"noul\",\"instructions\":\"x\",\"criteria\":{\"maybe\":\"m\"}}",
     "{" LOCQ ",\"criteria\"],\"msg\":\"noul criteria may contain only false and true\","
     "\"type\":\"value_error\"}"},
    {"noul_value", "\"s\"", "{\"type\":\"noul\",\"instructions\":\"x\",\"criteria\":{\"true\":5}}",
     "{" LOCQ ",\"criteria\",\"true\"],\"msg\":\"criteria.true must be text, an object or an "
     "array\",\"type\":\"value_error\"}"},
    {"choice_count", "\"s\"", "{\"type\":\"choice\",\"instructions\":\"x\",\"criteria\":{\"a\":1}}",
     "{" LOCQ ",\"criteria\"],\"msg\":\"criteria must name 2 to 255 options\",\"type\":"
     "\"value_error\"}"},
    {"set_count", "\"s\"", "{\"type\":\"set\",\"instructions\":\"x\",\"criteria\":{}}",
     "{" LOCQ ",\"criteria\"],\"msg\":\"criteria must name 1 to 255 options\",\"type\":"
     "\"value_error\"}"},
    {"option_name_blank", "\"s\"",
     "{\"type\":\"choice\",\"instructions\":\"x\",\"criteria\":{\" \":\"a\",\"b\":\"c\"}}",
     "{" LOCQ ",\"criteria\",\" \"],\"msg\":\"option names must be nonempty strings\",\"type\":"
     "\"value_error\"}"},
    {"option_desc_blank", "\"s\"",
     "{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"a\":\"\\u2003\"}}",
     "{" LOCQ ",\"criteria\",\"a\"],\"msg\":\"criteria.a must not be empty or whitespace\","
     "\"type\":\"value_error\"}"},
    {"option_desc_number", "\"s\"",
     "{\"type\":\"choice\",\"instructions\":\"x\",\"criteria\":{\"a\":1,\"b\":2}}",
     "{" LOCQ ",\"criteria\",\"a\"],\"msg\":\"criteria.a must be text, an object or an array\","
     "\"type\":\"value_error\"}"},
    {"over_type", "\"s\"", "{\"type\":\"noul\",\"instructions\":\"x\",\"over\":5}",
     "{" LOCQ ",\"over\"],\"msg\":\"over must be a state key, a part name or a list of them\","
     "\"type\":\"value_error\"}"},
    {"over_unknown", "{\"request\":\"r\"}",
     "{\"type\":\"noul\",\"instructions\":\"x\",\"over\":\"it's\"}",
     "{" LOCQ ",\"over\"],\"msg\":\"\\\"it's\\\" is not a field of the state\",\"type\":"
     "\"value_error\"}"},
    {"over_absent_part", "{\"request\":\"r\"}",
     "{\"type\":\"noul\",\"instructions\":\"x\",\"over\":[\"request\",\"answer\"]}",
     "{" LOCQ ",\"over\"],\"msg\":\"'answer' is not a field of the state\",\"type\":"
     "\"value_error\"}"},
    {"over_empty", "\"s\"", "{\"type\":\"noul\",\"instructions\":\"x\",\"over\":[]}",
     "{" LOCQ ",\"over\"],\"msg\":\"over must not be empty\",\"type\":\"value_error\"}"},
    {"span_two_parts", "{\"request\":\"r\",\"answer\":\"a\"}",
     "{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"L\":null},\"over\":[\"request\","
     "\"answer\"]}",
     "{" LOCQ ",\"over\"],\"msg\":\"a span question reads one part\",\"type\":\"value_error\"}"},
    {"threshold_range", "\"s\"",
     "{\"type\":\"set\",\"instructions\":\"x\",\"criteria\":{\"a\":null},\"threshold\":2}",
     "{" LOCQ ",\"threshold\"],\"msg\":\"threshold must be a number in [0, 1]\",\"type\":"
     "\"value_error\"}"},
    {"threshold_bool", "\"s\"",
     "{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"a\":null},\"threshold\":true}",
     "{" LOCQ ",\"threshold\"],\"msg\":\"threshold must be a number in [0, 1]\",\"type\":"
     "\"value_error\"}"},
    {"threshold_nan", "\"s\"",
     "{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"a\":null},\"threshold\":NaN}",
     "{" LOCQ ",\"threshold\"],\"msg\":\"threshold must be a number in [0, 1]\",\"type\":"
     "\"value_error\"}"},
    {"head_value", "\"s\"",
     "{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"a\":null},\"head\":\"big\"}",
     "{" LOCQ ",\"head\"],\"msg\":\"head must be one of ['router', 'broad']\",\"type\":"
     "\"literal_error\"}"},
    {"preset_unknown", "\"s\"", "{\"preset\":\"toxic\"}",
     "{" LOCQ ",\"preset\"],\"msg\":\"preset must be one of ['pii', 'halu', 'relevance']\","
     "\"type\":\"literal_error\"}"},
    {"preset_fields", "\"s\"", "{\"preset\":\"pii\",\"instructions\":\"x\"}",
     "{" LOCQ ",\"instructions\"],\"msg\":\"a preset question takes only preset, type, over and "
     "threshold\",\"type\":\"extra_forbidden\"}"},
    {"preset_type", "\"s\"", "{\"preset\":\"pii\",\"type\":\"set\"}",
     "{" LOCQ ",\"type\"],\"msg\":\"preset pii is a span question\",\"type\":\"value_error\"}"},
    {"relevance_threshold", "\"s\"", "{\"preset\":\"relevance\",\"threshold\":0.5}",
     "{" LOCQ ",\"threshold\"],\"msg\":\"score questions do not take ['threshold']\",\"type\":"
     "\"extra_forbidden\"}"},
};

static void check(const char *name, const vw_admit_cfg *c, const char *body, int status,
                  const char *detail) {
    int got = 0;
    vw_errlist d = {0};
    vw_request *req = proc_admit(c, body, &got, &d);
    char *dj = proc_detail_json(&d);
    cr_expect_eq(got, status, "%s: status %d, want %d (%s)", name, got, status, dj);
    cr_expect_str_eq(dj, detail, "%s", name);
    free(dj);
    vw_request_free(req);
    vw_errlist_free(&d);
}

Test(rejections, request_rows) {
    for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++)
        check(ROWS[i].name, cfg, ROWS[i].body, ROWS[i].status, ROWS[i].detail);
}

Test(rejections, question_rows_alone_are_422) {
    for (size_t i = 0; i < sizeof QROWS / sizeof QROWS[0]; i++) {
        char body[2048], detail[1024];
        snprintf(body, sizeof body, "{\"state\":%s,\"questions\":{\"q\":%s}}", QROWS[i].state,
                 QROWS[i].q);
        snprintf(detail, sizeof detail, "[%s]", QROWS[i].detail);
        check(QROWS[i].name, cfg, body, 422, detail);
    }
}

Test(rejections, question_rows_next_to_a_valid_question_stay_in_200) {
    for (size_t i = 0; i < sizeof QROWS / sizeof QROWS[0]; i++) {
        char body[2048], detail[1024];
        snprintf(body, sizeof body, "{\"state\":%s,\"questions\":{\"q\":%s," OKQ "}}",
                 QROWS[i].state, QROWS[i].q);
        int status = 0;
        vw_errlist d = {0};
        vw_request *req = proc_admit(cfg, body, &status, &d);
        cr_assert_eq(status, 200, "%s", QROWS[i].name);
        const vw_qentry *e = proc_entry(req, "q");
        cr_expect(!e->valid && proc_entry(req, "ok")->valid, "%s", QROWS[i].name);
        vw_errlist one = {0};
        vw_loc loc = {0};
        vw_loc_copy(&loc, &e->error.loc);
        vw_errlist_add(&one, &loc, e->error.msg, e->error.type);
        char *dj = proc_detail_json(&one);
        snprintf(detail, sizeof detail, "[%s]", QROWS[i].detail);
        cr_expect_str_eq(dj, detail, "%s", QROWS[i].name);
        free(dj);
        vw_errlist_free(&one);
        vw_request_free(req);
        vw_errlist_free(&d);
    }
}

Test(rejections, broad_head_missing) {
    vw_admit_cfg *nb = proc_cfg("bundle-nobroad");
    check("broad_without_head", nb,
          "{\"state\":\"s\",\"questions\":{\"q\":{\"type\":\"span\",\"instructions\":\"x\","
          "\"criteria\":{\"a\":null},\"head\":\"broad\"}}}",
          422,
          "[{" LOCQ ",\"head\"],\"msg\":\"this model has no broad span head\",\"type\":"
          "\"value_error\"}]");
    vw_admit_cfg_free(nb);
}

Test(rejections, label_collision_and_walk_order) {
    check("label_collision", cfg,
          "{\"state\":\"s\",\"questions\":{\"s\":{\"type\":\"set\",\"instructions\":\"x\","
          "\"criteria\":{\"a\":null}},\"s.a\":{\"type\":\"noul\"}}}",
          422,
          "[{\"loc\":[\"body\",\"questions\",\"s.a\",\"instructions\"],\"msg\":\"instructions is "
          "required\",\"type\":\"missing\"},{\"loc\":[\"body\",\"questions\",\"s\",\"criteria\","
          "\"a\"],\"msg\":\"a label answer s.<label> is another question's ID\",\"type\":"
          "\"value_error\"}]");
}

Test(rejections, json_limits) {
    /* 4,301-digit integer, nesting deeper than 1,000 */
    size_t n = 4301;
    char *body = malloc(n + 64);
    strcpy(body, "{\"state\":");
    memset(body + 9, '1', n);
    strcpy(body + 9 + n, "}");
    int status;
    vw_errlist d = {0};
    vw_request *req = proc_admit(cfg, body, &status, &d);
    cr_expect_null(req);
    cr_expect_eq(status, 400);
    char *dj = proc_detail_json(&d);
    cr_expect_str_eq(dj, "[{\"loc\":[\"body\",9],\"msg\":\"JSON decode error: Exceeds the limit "
                         "(4300 digits) for integer string conversion: value has 4301 "
                         "digits; use sys.set_int_max_str_digits() to increase the limit\","
                         "\"type\":\"json_invalid\"}]");
    free(dj);
    vw_errlist_free(&d);
    free(body);
    body = malloc(2200);
    strcpy(body, "{\"state\":");
    memset(body + 9, '[', 1000);
    body[1009] = 0;
    req = proc_admit(cfg, body, &status, &d);
    cr_expect_eq(status, 400);
    dj = proc_detail_json(&d);
    cr_expect_str_eq(dj, "[{\"loc\":[\"body\",1008],\"msg\":\"JSON decode error: maximum recursion "
                         "depth exceeded while decoding a JSON array from a unicode string\","
                         "\"type\":\"json_invalid\"}]");
    free(dj);
    vw_errlist_free(&d);
    free(body);
}

Test(rejections, request_too_large) {
    vw_admit_cfg *c = proc_cfg("bundle");
    c->max_request_bytes = 16;
    check("too_large", c, "{\"state\":\"s\",\"questions\":{}}", 413,
          "[{\"loc\":[\"body\"],\"msg\":\"Data should have at most 16 bytes\",\"type\":"
          "\"too_long\"}]");
    vw_admit_cfg_free(c);
}

Test(rejections, messages_are_whole_and_valid_utf8) {
    /* a long key is quoted whole (no fixed-size truncation) */
    char key[1201];
    for (int i = 0; i < 600; i++)
        memcpy(key + 2 * i, "\xC3\xA9", 2); /* é x 600 */
    key[1200] = 0;
    char *body = malloc(4096), *want = malloc(4096);
    snprintf(body, 4096,
             "{\"state\":\"s\",\"questions\":{\"q\":{\"type\":\"choice\",\"instructions\":\"x\","
             "\"criteria\":{\"%s\":5,\"b\":null}}}}",
             key);
    snprintf(want, 4096,
             "[{" LOCQ ",\"criteria\",\"%s\"],\"msg\":\"criteria.%s must be text, an object or an "
             "array\",\"type\":\"value_error\"}]",
             key, key);
    check("long_key", cfg, body, 422, want);
    /* a bad escape next to multi-byte text: CPython's message, a byte offset */
    check("syntax_near_utf8", cfg, "{\"state\": \" \\u1\xE3\x80\x80\"}", 400,
          "[{\"loc\":[\"body\",13],\"msg\":\"JSON decode error: Invalid \\\\uXXXX escape\","
          "\"type\":\"json_invalid\"}]");
    free(body);
    free(want);
}
