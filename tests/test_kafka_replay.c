/* test_kafka_replay.c — `vela-worker replay` against `vela-worker broker`: an
 * offset range replayed twice gives the same result set (reproducible), only
 * records of [from, to) are replayed, the results topic receives the same
 * values as the file, the group's offsets are untouched, and a timestamp start
 * resolves through the record-timestamp search (the mock's ListOffsets-by-time
 * answers -1). */
#include "kafka_harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Runs replay with args; returns its exit code. */
static int replay(const char *name, char **args) {
    vw_kh_proc p;
    cr_assert_eq(vw_kh_spawn(name, args, NULL, &p), 0);
    int rc = vw_kh_stop(&p, 0, 60000);
    if (rc)
        vw_kh_dump_log(&p);
    return rc;
}

/* Sorted lines of a file as one string (caller frees). */
static char *sorted_lines(const char *path, int *count) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sort '%s'", path);
    FILE *f = popen(cmd, "r");
    char *buf = NULL;
    size_t cap = 0, len = 0;
    char line[65536];
    *count = 0;
    while (f && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            buf = realloc(buf, cap);
        }
        memcpy(buf + len, line, n + 1);
        len += n;
        (*count)++;
    }
    if (f)
        pclose(f);
    return buf ? buf : strdup("");
}

Test(kafka_replay, offset_range_is_reproducible) {
    vw_kh_broker b;
    char cfg[256], out1[300], out2[300];
    cr_assert_eq(vw_kh_broker_start("requests:3,results:3,requests.dlq:1,evals:3", &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, "replay-grp", NULL, cfg, sizeof cfg), 0);
    enum { PER = 12 };
    static vw_kh_msg msgs[3 * PER];
    static char vals[3 * PER][64];
    for (int i = 0; i < 3 * PER; i++) {
        /* Every fifth record is malformed: rejections replay too. */
        if (i % 5 == 4)
            snprintf(vals[i], sizeof vals[i], "{\"state\": %d", i);
        else
            snprintf(vals[i], sizeof vals[i], "{\"state\":\"s\",\"questions\":{\"q%d\":{}}}", i);
        msgs[i] = (vw_kh_msg){.partition = i % 3, .value = vals[i]};
    }
    cr_assert_eq(vw_kh_produce(b.bootstrap, "requests", msgs, 3 * PER, NULL, NULL), 0);
    snprintf(out1, sizeof out1, "%s/r1.jsonl", vw_kh_dir());
    snprintf(out2, sizeof out2, "%s/r2.jsonl", vw_kh_dir());
    char *a1[] = {"replay", "--config", cfg, "--topic", "requests", "--from",
                  "3",      "--to",     "9", "--out",   out1,       NULL};
    char *a2[] = {"replay", "--config", cfg, "--topic", "requests", "--from",
                  "3",      "--to",     "9", "--out",   out2,       NULL};
    cr_assert_eq(replay("replay-1", a1), 0);
    cr_assert_eq(replay("replay-2", a2), 0);
    int n1, n2;
    char *s1 = sorted_lines(out1, &n1), *s2 = sorted_lines(out2, &n2);
    cr_assert_eq(n1, 3 * 6, "offsets 3..8 of 3 partitions");
    cr_assert_eq(n2, n1);
    cr_assert_str_eq(s1, s2, "the same result set twice");
    /* Each line: a source inside the range and the result value. */
    int rejected = 0;
    for (char *save = NULL, *line = strtok_r(s1, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        json_t *j = json_loads(line, 0, NULL);
        cr_assert_not_null(j, "JSON line: %s", line);
        int part, off;
        cr_assert_eq(
            sscanf(json_string_value(json_object_get(j, "source")), "requests:%d:%d", &part, &off),
            2);
        cr_assert(off >= 3 && off < 9, "offset %d in [3, 9)", off);
        json_t *v = json_object_get(j, "value");
        cr_assert_eq(json_integer_value(json_object_get(json_object_get(v, "source"), "offset")),
                     off);
        rejected += json_integer_value(json_object_get(j, "vela_status")) == 400;
        json_decref(j);
    }
    cr_assert_gt(rejected, 0, "malformed records are replayed as rejections");
    free(s1);
    free(s2);
    /* To a results topic: same number of records. */
    char *a3[] = {"replay", "--config", cfg, "--topic",         "requests", "--from",
                  "3",      "--to",     "9", "--results-topic", "evals",    NULL};
    cr_assert_eq(replay("replay-3", a3), 0);
    json_t *evals = vw_kh_consume(b.bootstrap, "evals", 18, 10000);
    cr_assert_eq(json_array_size(evals), 18);
    json_decref(evals);
    /* No group commits. */
    int64_t committed[3];
    cr_assert_eq(vw_kh_committed(b.bootstrap, "replay-grp", "requests", 3, committed), 0);
    for (int p = 0; p < 3; p++)
        cr_assert_lt(committed[p], 0, "partition %d has no committed offset", p);
    vw_kh_broker_stop(&b);
}

Test(kafka_replay, timestamp_start_and_single_partition) {
    vw_kh_broker b;
    char cfg[256], out[300], from[32];
    cr_assert_eq(vw_kh_broker_start("requests:2,results:2,requests.dlq:1", &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, "replay-ts", NULL, cfg, sizeof cfg), 0);
    const char *v = "{\"state\":\"s\",\"questions\":{\"q\":{}}}";
    vw_kh_msg first[7], second[5];
    for (int i = 0; i < 7; i++)
        first[i] = (vw_kh_msg){.partition = 1, .value = v};
    for (int i = 0; i < 5; i++)
        second[i] = (vw_kh_msg){.partition = 1, .value = v};
    cr_assert_eq(vw_kh_produce(b.bootstrap, "requests", first, 7, NULL, NULL), 0);
    vw_kh_sleep_ms(300);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(from, sizeof from, "@%lld", (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
    vw_kh_sleep_ms(300);
    cr_assert_eq(vw_kh_produce(b.bootstrap, "requests", second, 5, NULL, NULL), 0);
    snprintf(out, sizeof out, "%s/ts.jsonl", vw_kh_dir());
    char *args[] = {"replay", "--config", cfg,    "--topic", "requests", "--partition", "1",
                    "--from", from,       "--to", "end",     "--out",    out,           NULL};
    vw_kh_proc p;
    cr_assert_eq(vw_kh_spawn("replay-ts", args, NULL, &p), 0);
    cr_assert_eq(vw_kh_stop(&p, 0, 60000), 0);
    cr_assert_eq(vw_kh_count_log(&p, "replay: requests [1] offsets 7..12"), 1,
                 "the timestamp resolved to the first record of the second batch");
    cr_assert_eq(vw_kh_count_log(&p, "replay: 5/5 records (100.0%)"), 1, "progress reports");
    /* Each range once (the log's "range" line repeated the resolved one), and
     * no rate before time has passed (issue 33 item 6: "0 records/s"). */
    cr_assert_eq(vw_kh_count_log(&p, "\"msg\":\"range\""), 0, "each range printed once");
    cr_assert_eq(vw_kh_count_log(&p, " 0 records/s"), 0, "no rate of nothing");
    cr_assert_eq(vw_kh_count_log(&p, "replay: reading requests with "
                                     "isolation.level=read_committed (the default)"),
                 1, "the isolation level is named");
    /* Into a file (no terminal) every report ends its line: no \r joining a
     * report and the next log line. */
    cr_assert_eq(vw_kh_count_log(&p, "\r"), 0, "a progress report without its newline");
    int n;
    char *s = sorted_lines(out, &n);
    cr_assert_eq(n, 5);
    free(s);
    vw_kh_broker_stop(&b);
}

/* A range that ends before it starts replayed nothing and exited 0; it is a
 * usage error now (exit 2), for offsets and for times alike. */
Test(kafka_replay, reversed_range_is_a_usage_error) {
    vw_kh_broker b;
    char cfg[256], out[300];
    cr_assert_eq(vw_kh_broker_start("requests:1,results:1,requests.dlq:1", &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, "replay-rev", NULL, cfg, sizeof cfg), 0);
    const char *v = "{\"state\":\"s\",\"questions\":{\"q\":{}}}";
    vw_kh_msg m[8];
    for (int i = 0; i < 8; i++)
        m[i] = (vw_kh_msg){.partition = 0, .value = v};
    cr_assert_eq(vw_kh_produce(b.bootstrap, "requests", m, 8, NULL, NULL), 0);
    snprintf(out, sizeof out, "%s/rev.jsonl", vw_kh_dir());
    static const char *const bounds[][2] = {{"5", "2"}, {"@2000", "@1000"}};
    for (size_t i = 0; i < 2; i++) {
        char *args[] = {"replay",
                        "--config",
                        cfg,
                        "--topic",
                        "requests",
                        "--from",
                        (char *)bounds[i][0],
                        "--to",
                        (char *)bounds[i][1],
                        "--out",
                        out,
                        NULL};
        vw_kh_proc p;
        cr_assert_eq(vw_kh_spawn("replay-rev", args, NULL, &p), 0);
        cr_assert_eq(vw_kh_stop(&p, 0, 60000), 2, "--from %s --to %s", bounds[i][0], bounds[i][1]);
        char want[64];
        snprintf(want, sizeof want, "--from %s is after --to %s", bounds[i][0], bounds[i][1]);
        cr_assert_eq(vw_kh_count_log(&p, want), 1, "%s", want);
    }
    /* An empty range (from = to) stays a valid replay of nothing. */
    char *empty[] = {"replay", "--config", cfg, "--topic", "requests", "--from",
                     "3",      "--to",     "3", "--out",   out,        NULL};
    cr_assert_eq(replay("replay-empty", empty), 0);
    vw_kh_broker_stop(&b);
}
