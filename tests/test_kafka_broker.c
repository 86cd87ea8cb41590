/* test_kafka_broker.c — `vela-worker broker`: the mock cluster runs as its own
 * process, prints its bootstrap line, creates the topics, and a real peer client
 * (kcat) can produce to it and consume from it; SIGTERM stops it with exit 0. */
#include "kafka_harness.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(kafka_broker, kcat_produces_and_consumes) {
    vw_kh_broker b;
    cr_assert_eq(vw_kh_broker_start("requests:4,results:2", &b), 0);
    cr_assert(!strncmp(b.bootstrap, "127.0.0.1:", 10), "bootstrap %s", b.bootstrap);
    char cmd[1024];
    /* Metadata: both topics with their partition counts. */
    snprintf(cmd, sizeof cmd, "kcat -b '%s' -L -J 2>/dev/null", b.bootstrap);
    FILE *f = popen(cmd, "r");
    json_t *md = json_loadf(f, 0, NULL);
    pclose(f);
    cr_assert_not_null(md, "kcat -L failed");
    size_t i;
    json_t *t;
    int seen = 0;
    json_array_foreach(json_object_get(md, "topics"), i, t) {
        const char *name = json_string_value(json_object_get(t, "topic"));
        size_t parts = json_array_size(json_object_get(t, "partitions"));
        if (!strcmp(name, "requests"))
            seen += parts == 4;
        if (!strcmp(name, "results"))
            seen += parts == 2;
    }
    json_decref(md);
    cr_assert_eq(seen, 2, "topics requests:4 and results:2 are listed");
    /* Produce with kcat (keys, a header), consume with kcat. */
    snprintf(cmd, sizeof cmd,
             "printf 'a|one\\nb|two\\nc|three\\n' | kcat -b '%s' -P -t requests -K'|' "
             "-H trace=x 2>/dev/null",
             b.bootstrap);
    cr_assert_eq(system(cmd), 0);
    json_t *recs = vw_kh_consume(b.bootstrap, "requests", 3, 10000);
    cr_assert_eq(json_array_size(recs), 3);
    json_t *r;
    int found = 0;
    json_array_foreach(recs, i, r) {
        const char *k = json_string_value(json_object_get(r, "key"));
        const char *v = json_string_value(json_object_get(r, "payload"));
        found += (!strcmp(k, "a") && !strcmp(v, "one")) || (!strcmp(k, "b") && !strcmp(v, "two")) ||
                 (!strcmp(k, "c") && !strcmp(v, "three"));
        cr_assert_str_eq(vw_kh_header(r, "trace"), "x");
    }
    json_decref(recs);
    cr_assert_eq(found, 3);
    /* A control command creates a topic at run time. */
    cr_assert_eq(vw_kh_broker_control(&b, "topic late 3"), 0);
    vw_kh_sleep_ms(200);
    int64_t hw[3];
    cr_assert_eq(vw_kh_end_offsets(b.bootstrap, "late", 3, hw), 0);
    vw_kh_proc p = {.pid = b.pid};
    cr_assert_eq(vw_kh_stop(&p, SIGTERM, 5000), 0, "SIGTERM (stdin still open): exit 0");
    close(b.control_fd);
}
