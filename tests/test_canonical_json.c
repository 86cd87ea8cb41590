/* test_canonical_json.c — json_in (Python json.loads fidelity) and canonical
 * JSON / float repr against vectors made by tools/make_canonical_vectors.py. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "admission/canonical_json.h"
#include "admission/json_in.h"
#include "vw_test.h"

#define HINT "(regenerate with tools/make_canonical_vectors.py)"

static char *canon_of(const char *text, size_t len, vw_status *st) {
    vw_json_doc *doc = NULL;
    vw_json_error je;
    *st = vw_json_parse(text, len, &doc, &je);
    if (*st != VW_OK)
        return NULL;
    vw_sbuf sb = {0};
    *st = vw_canon_write(&sb, (vw_jref){doc, vw_json_root(doc)}, NULL);
    vw_json_free(doc);
    if (*st != VW_OK) {
        vw_sbuf_free(&sb);
        return NULL;
    }
    return vw_sbuf_take(&sb, NULL);
}

static vw_json_error parse_error(const char *text, size_t len) {
    vw_json_doc *doc = NULL;
    vw_json_error je;
    memset(&je, 0, sizeof je);
    vw_status st = vw_json_parse(text, len, &doc, &je);
    cr_assert_eq(st, VW_EINVAL, "expected a parse error for %.40s", text);
    cr_assert_null(doc);
    return je;
}

Test(canonical_json, float_repr_matches_python) {
    char *path = vw_test_path("fixtures/canonical/floats.tsv");
    char *data = vw_test_read_file(path, NULL);
    cr_assert_not_null(data, "missing %s " HINT, path);
    size_t n = 0, bad = 0;
    for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
        uint64_t bits = strtoull(line, NULL, 16);
        const char *want = strchr(line, '\t') + 1;
        double x;
        memcpy(&x, &bits, sizeof x);
        char got[32];
        vw_float_repr(x, got);
        if (strcmp(got, want) && bad++ < 10)
            cr_log_error("bits %016" PRIx64 ": got %s want %s", bits, got, want);
        n++;
    }
    cr_expect_eq(bad, 0, "%zu of %zu float reprs differ " HINT, bad, n);
    cr_expect_geq(n, 6000);
    free(data);
    free(path);
}

Test(canonical_json, documents_match_python_dumps) {
    char *path = vw_test_path("fixtures/canonical/docs.jsonl");
    char *data = vw_test_read_file(path, NULL);
    cr_assert_not_null(data, "missing %s " HINT, path);
    size_t n = 0;
    for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *rec = json_loads(line, 0, &e);
        cr_assert_not_null(rec, "%s", e.text);
        const json_t *in = json_object_get(rec, "in"), *out = json_object_get(rec, "out");
        vw_status st;
        char *got = canon_of(json_string_value(in), json_string_length(in), &st);
        cr_assert_eq(st, VW_OK, "%s", json_string_value(in));
        cr_expect_str_eq(got, json_string_value(out), "input %s", json_string_value(in));
        free(got);
        json_decref(rec);
        n++;
    }
    cr_expect_eq(n, 8);
    free(data);
    free(path);
}

Test(canonical_json, int_float_distinction_and_big_integers) {
    vw_status st;
    char *got = canon_of("[100,100.0,1e2,-0,1E400]", 24, &st);
    cr_assert_null(got); /* 1E400 is inf: allow_nan=False refuses it */
    cr_assert_eq(st, VW_EINVAL);
    char big[4400];
    memset(big, '7', 4300);
    got = canon_of(big, 4300, &st);
    cr_assert_eq(st, VW_OK);
    cr_expect_eq(strlen(got), 4300);
    free(got);
    memset(big, '7', 4301);
    vw_json_error je = parse_error(big, 4301);
    cr_expect_eq(je.offset, 0);
    cr_expect(strstr(je.msg, "4300 digits") != NULL, "%s", je.msg);
    /* The digit limit is on integers only: a float may be longer. */
    big[0] = '0';
    big[1] = '.';
    got = canon_of(big, 4301, &st);
    cr_assert_eq(st, VW_OK);
    cr_expect_str_eq(got, "0.7777777777777778");
    free(got);
}

Test(canonical_json, python_loads_semantics) {
    vw_json_doc *doc = NULL;
    const char *t = "{\"b\":1,\"a\":2,\"b\":3}";
    cr_assert_eq(vw_json_parse(t, strlen(t), &doc, NULL), VW_OK);
    const char *k;
    json_t *v;
    const char *order[2] = {0};
    size_t i = 0;
    json_object_foreach((json_t *)vw_json_root(doc), k, v) order[i++] = k;
    cr_expect_str_eq(order[0], "b"); /* first position ... */
    cr_expect_str_eq(vw_json_num(doc, json_object_get(vw_json_root(doc), "b"))->lex, "3}");
    cr_expect_eq(vw_json_num(doc, json_object_get(vw_json_root(doc), "b"))->len,
                 1); /* last value */
    vw_json_free(doc);

    t = "[NaN, Infinity, -Infinity, 1e400, -1e400]";
    cr_assert_eq(vw_json_parse(t, strlen(t), &doc, NULL), VW_OK);
    const json_t *a = vw_json_root(doc);
    cr_expect(isnan(vw_json_num(doc, json_array_get(a, 0))->value));
    cr_expect(isinf(vw_json_num(doc, json_array_get(a, 1))->value));
    cr_expect(vw_json_num(doc, json_array_get(a, 2))->value < 0);
    cr_expect(isinf(vw_json_num(doc, json_array_get(a, 3))->value));
    cr_expect(!vw_json_finite((vw_jref){doc, a}));
    vw_json_free(doc);

    t = "{\"s\":\"a\\u0000b\"}";
    cr_assert_eq(vw_json_parse(t, strlen(t), &doc, NULL), VW_OK);
    cr_expect_eq(json_string_length(json_object_get(vw_json_root(doc), "s")), 3);
    vw_json_free(doc);
}

Test(canonical_json, decision4_errors) {
    vw_json_error je = parse_error("\xEF\xBB\xBF{}", 5);
    cr_expect_eq(je.offset, 0);
    cr_expect(strstr(je.msg, "BOM") != NULL);
    je = parse_error("{\"a\":\"\xC3\x28\"}", 9);
    cr_expect_eq(je.offset, 6);
    cr_expect_eq(je.kind, VW_JSON_SYNTAX);
    /* A UTF-8-encoded surrogate decodes (surrogatepass, as json.loads(bytes)) and
     * is then an unpaired surrogate; cut short, the syntax error comes first. */
    je = parse_error("{\"a\":\"\xED\xA0\x80\"}", 11);
    cr_expect_eq(je.kind, VW_JSON_SURROGATE);
    cr_expect_eq(je.offset, 6);
    je = parse_error("{\"a\":\"\xED\xA0\x80\"}", 10);
    cr_expect_eq(je.kind, VW_JSON_SYNTAX);
    cr_expect_eq(je.offset, 10);
    cr_expect_str_eq(je.msg, "Expecting ',' delimiter");
    je = parse_error("[\"x\\ud800\"]", 11);
    cr_expect_eq(je.kind, VW_JSON_SURROGATE);
    cr_expect_str_eq(je.msg, "the request contains an unpaired surrogate");
    je = parse_error("[\"\\udc00\\ud800\"]", 16);
    cr_expect_eq(je.kind, VW_JSON_SURROGATE);
    je = parse_error("[1.5.3]", 7);
    cr_expect_eq(je.offset, 4);
    je = parse_error("{\"a\":1", 6);
    cr_expect_eq(je.kind, VW_JSON_SYNTAX);
    je = parse_error("[1, 2", 5);
    cr_expect_eq(je.kind, VW_JSON_SYNTAX);
    je = parse_error("", 0);
    cr_expect_eq(je.offset, 0);
    je = parse_error("[\"\\ud800\" 1]", 12); /* syntax beats the surrogate */
    cr_expect_eq(je.kind, VW_JSON_SYNTAX);
    cr_expect_eq(je.offset, 10);
    je = parse_error("{\"a\\u0000\":1}", 13); /* documented deviation */
    cr_expect_eq(je.kind, VW_JSON_SYNTAX);
}

static char *nested(size_t depth, size_t *len) {
    char *s = malloc(2 * depth + 1);
    memset(s, '[', depth);
    memset(s + depth, ']', depth);
    *len = 2 * depth;
    return s;
}

Test(canonical_json, depth_limit_is_1000) {
    size_t len;
    char *s = nested(1000, &len);
    vw_json_doc *doc = NULL;
    cr_expect_eq(vw_json_parse(s, len, &doc, NULL), VW_OK);
    vw_json_free(doc);
    free(s);
    s = nested(1001, &len);
    vw_json_error je = parse_error(s, len);
    cr_expect_eq(je.offset, 1000);
    cr_expect_str_eq(je.msg, "maximum recursion depth exceeded while decoding a JSON array from a "
                             "unicode string");
    free(s);
}

Test(canonical_json, python_str_repr) {
    static const struct {
        const char *in, *out;
    } v[] = {
        {"colour", "'colour'"},        {"it's", "\"it's\""},          {"a'b\"c", "'a\\'b\"c'"},
        {"tab\there", "'tab\\there'"}, {"\x01\x7f", "'\\x01\\x7f'"},  {"é日", "'é日'"},
        {"\xC2\xA0", "'\\xa0'"},       {"\xE2\x80\xA8", "'\\u2028'"}, {"back\\", "'back\\\\'"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        vw_sbuf sb = {0};
        vw_py_repr_str(&sb, v[i].in, strlen(v[i].in));
        cr_expect_str_eq(sb.p, v[i].out);
        vw_sbuf_free(&sb);
    }
}
