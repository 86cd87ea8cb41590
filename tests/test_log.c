/* test_log.c — the JSON log writer (worker/service/log.h): every line is one
 * strict JSON object with each key once, whatever the arguments hold; fields
 * come from the format, never from the formatted text. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/log.h"

/* Logs one event through fmt into a temporary file and returns it parsed
 * strictly (duplicate keys refused; jansson also refuses invalid UTF-8). */
#define ONE_LINE(out, ...)                                                                         \
    do {                                                                                           \
        FILE *f_ = tmpfile();                                                                      \
        cr_assert_not_null(f_);                                                                    \
        vw_log lg_ = {VW_LOG_DEBUG, VW_LOG_JSON, f_};                                              \
        VW_LOG(&lg_, VW_LOG_WARN, "test", __VA_ARGS__);                                            \
        out = read_line(f_);                                                                       \
    } while (0)

static json_t *read_line(FILE *f) {
    char buf[65536];
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cr_assert(n > 0 && buf[n - 1] == '\n', "one line, newline-terminated");
    cr_assert_null(memchr(buf, '\n', n - 1), "exactly one line: %s", buf);
    json_error_t e;
    json_t *v = json_loadb(buf, n - 1, JSON_REJECT_DUPLICATES, &e);
    cr_assert_not_null(v, "strict JSON: %s (%s)", e.text, buf);
    cr_assert(json_is_string(json_object_get(v, "ts")));
    cr_assert_str_eq(json_string_value(json_object_get(v, "level")), "warn");
    cr_assert_str_eq(json_string_value(json_object_get(v, "module")), "test");
    cr_assert(strstr(json_string_value(json_object_get(v, "where")), "test_log.c:"));
    return v;
}

static const char *field(const json_t *v, const char *k) {
    const json_t *x = json_object_get(v, k);
    cr_assert(json_is_string(x), "field %s is a string", k);
    return json_string_value(x);
}

Test(log, fields_come_from_the_format) {
    json_t *v;
    ONE_LINE(v, "partition revoked tp=%s:%d position=%lld lost=%d", "requests", 3, 42LL, 0);
    cr_assert_str_eq(field(v, "msg"), "partition revoked");
    cr_assert_str_eq(field(v, "tp"), "requests:3");
    cr_assert_eq(json_integer_value(json_object_get(v, "position")), 42);
    cr_assert_eq(json_integer_value(json_object_get(v, "lost")), 0);
    json_decref(v);
}

/* The start error of issue 17, as librdkafka 2.16 words it: '=' and backticks
 * in an argument are text, not a field. */
Test(log, an_argument_with_equals_stays_in_the_message) {
    const char *rk = "`partition.assignment.strategy` is not supported for "
                     "`group.protocol=consumer`. Set `group.remote.assignor` instead";
    json_t *v;
    ONE_LINE(v, "consumer: %s type=%s where=%s", rk, "kafka_client", "consumer.c:537");
    char want[256];
    snprintf(want, sizeof want, "consumer: %s", rk);
    cr_assert_str_eq(field(v, "msg"), want);
    cr_assert_str_eq(field(v, "type"), "kafka_client");
    /* The format's own "where" cannot replace the logger's: it is kept apart. */
    cr_assert_str_eq(field(v, "where_2"), "consumer.c:537");
    cr_assert_eq(json_object_size(v), 7); /* ts level module msg type where_2 where */
    json_decref(v);
}

Test(log, quotes_backslashes_controls_and_invalid_utf8_are_escaped) {
    const char nasty[] = "say \"hi\" \\ path=C:\\x\n\ttab\x01\x7f bad\xff\xc3(end) caf\xc3\xa9";
    json_t *v;
    ONE_LINE(v, "record skipped reason=\"%s\" id=%s", nasty, "k\"1");
    cr_assert_str_eq(field(v, "msg"), "record skipped");
    cr_assert_str_eq(field(v, "reason"),
                     "say \"hi\" \\ path=C:\\x\n\ttab\x01\x7f bad\xef\xbf\xbd\xef\xbf\xbd(end) "
                     "caf\xc3\xa9");
    cr_assert_str_eq(field(v, "id"), "k\"1");
    json_decref(v);
}

Test(log, a_quoted_value_with_spaces_and_a_key_inside) {
    json_t *v;
    ONE_LINE(v, "client error client=%s err=%s reason=\"%s\"", "vela-worker#consumer-1",
             "_TRANSPORT", "127.0.0.1:9092/1: Connect failed: errno=111 (a key=value inside)");
    cr_assert_str_eq(field(v, "reason"),
                     "127.0.0.1:9092/1: Connect failed: errno=111 (a key=value inside)");
    cr_assert_str_eq(field(v, "err"), "_TRANSPORT");
    json_decref(v);
}

Test(log, a_repeated_key_is_written_once_each) {
    json_t *v;
    ONE_LINE(v, "twice tp=%s tp=%s msg=%s", "a", "b", "c");
    cr_assert_str_eq(field(v, "msg"), "twice");
    cr_assert_str_eq(field(v, "tp"), "a");
    cr_assert_str_eq(field(v, "tp_2"), "b");
    cr_assert_str_eq(field(v, "msg_2"), "c");
    json_decref(v);
}

Test(log, numbers_only_when_they_are_json_numbers) {
    json_t *v;
    ONE_LINE(v, "n a=%d b=%s c=%s d=%s e=\"%d\" f=%.2f", -7, "007", "1e5", "nan", 5, 0.25);
    cr_assert_eq(json_integer_value(json_object_get(v, "a")), -7);
    cr_assert_str_eq(field(v, "b"), "007");
    cr_assert_str_eq(field(v, "c"), "1e5");
    cr_assert_str_eq(field(v, "d"), "nan");
    cr_assert_str_eq(field(v, "e"), "5"); /* quoted in the format: a string */
    cr_assert_float_eq(json_real_value(json_object_get(v, "f")), 0.25, 1e-12);
    json_decref(v);
}

Test(log, text_after_the_fields_is_kept) {
    json_t *v;
    ONE_LINE(v, "assigned n=%d (and more text) %s", 4, "tail");
    cr_assert_str_eq(field(v, "n"), "4 (and more text) tail");
    json_decref(v);
}

Test(log, a_long_argument_is_cut_inside_valid_json) {
    size_t n = 20000;
    char *big = malloc(n + 1);
    cr_assert_not_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = i % 3 == 2 ? '"' : (char)0xc3; /* a UTF-8 lead byte then a quote */
    big[n] = 0;
    json_t *v;
    ONE_LINE(v, "big %s", big);
    const char *m = field(v, "msg");
    cr_assert(strlen(m) > 8000 && strstr(m, "..."), "cut with a mark");
    json_decref(v);
    free(big);
}
