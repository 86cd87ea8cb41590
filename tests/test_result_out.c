/* test_result_out.c — what a result carries out: its value with request_id
 * and source first (vw_result_out_value), a rejection's value with and
 * without them (vw_result_out_rejection) and the source string. */
#include "result_out.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

Test(result_out, value_puts_request_id_and_source_first) {
    vw_record rec = {.topic = "requests",
                     .partition = 2,
                     .offset = 17,
                     .timestamp = 1700000000123,
                     .request_id = "id \"1\""};
    vw_result r = {.kind = VW_RESULT_RECORD,
                   .vela_status = 200,
                   .value = " {\"answers\":{}}",
                   .value_len = 15};
    char *out = NULL;
    size_t n = 0;
    cr_assert_eq(vw_result_out_value(&r, &rec, &out, &n, NULL), VW_OK);
    cr_assert_str_eq(out, "{\"request_id\":\"id \\\"1\\\"\",\"source\":{\"topic\":\"requests\","
                          "\"partition\":2,\"offset\":17,\"timestamp\":1700000000123},"
                          "\"answers\":{}}");
    cr_assert_eq(n, strlen(out));
    free(out);
    rec.timestamp = -1;
    r.value = "{ }";
    r.value_len = 3;
    cr_assert_eq(vw_result_out_value(&r, &rec, &out, &n, NULL), VW_OK);
    cr_assert(strstr(out, "\"timestamp\":null} }"), "%s", out);
    json_t *j = json_loadb(out, n, 0, NULL);
    cr_assert_not_null(j, "valid JSON: %s", out);
    json_decref(j);
    free(out);
    r.value = "[1]";
    cr_assert_eq(vw_result_out_value(&r, &rec, &out, &n, NULL), VW_EINVAL);
}

Test(result_out, rejection_with_and_without_the_record) {
    vw_body_reject rej = {.status = 400, .offset = 5, .type = "json_invalid"};
    strcpy(rej.msg, "JSON decode error: Expecting ':' delimiter");
    vw_sbuf sb = {0};
    vw_result_out_rejection(&sb, NULL, &rej);
    cr_assert_str_eq(sb.p, "{\"status\":400,\"detail\":[{\"loc\":[\"body\",5],\"msg\":\"JSON "
                           "decode error: Expecting ':' delimiter\",\"type\":\"json_invalid\"}]}");
    vw_sbuf_reset(&sb);
    vw_record rec = {
        .topic = "in", .partition = 1, .offset = 7, .timestamp = -1, .request_id = "r"};
    rej.offset = -1;
    vw_result_out_rejection(&sb, &rec, &rej);
    cr_assert_str_eq(sb.p,
                     "{\"request_id\":\"r\",\"source\":{\"topic\":\"in\",\"partition\":1,"
                     "\"offset\":7,\"timestamp\":null},\"status\":400,\"detail\":[{\"loc\":"
                     "[\"body\"],\"msg\":\"JSON decode error: Expecting ':' delimiter\",\"type\":"
                     "\"json_invalid\"}]}");
    vw_sbuf_free(&sb);
}

Test(result_out, source_string) {
    char buf[VW_SOURCE_MAX];
    vw_result_out_source(buf, sizeof buf, "requests", 3, -1);
    cr_assert_str_eq(buf, "requests:3:-1");
    char topic[250]; /* Kafka's longest topic name: 249 bytes */
    memset(topic, 't', 249);
    topic[249] = 0;
    vw_result_out_source(buf, sizeof buf, topic, 2147483647, INT64_MAX);
    cr_assert_eq(strlen(buf), 249 + 1 + 10 + 1 + 19);
    cr_assert_str_eq(buf + 250, "2147483647:9223372036854775807");
    vw_result_out_source(buf, 260, topic, 1, 2); /* near the buffer size: the slow path */
    cr_assert_eq(strlen(buf), 253);
    cr_assert_str_eq(buf + 249, ":1:2");
    vw_result_out_source(buf, 252, topic, 1, 2); /* a buffer too short: cut, terminated */
    cr_assert_eq(strlen(buf), 251);
}
