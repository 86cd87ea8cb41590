/* test_kafka_apache.c — the worker on Apache Kafka 4 (KRaft, the jars of
 * scripts/kafka; $VW_KAFKA names them, tests/support/kafka_apache.h), one
 * cluster per test: end to end with rejections and lz4/zstd input, the DLQ
 * and a replay of an offset range, SASL/SCRAM-SHA-512 over TLS with
 * config/worker.sasl_ssl.example.yaml (and a wrong password), static
 * membership, KIP-848 groups. Every test prints its figures (vw_rel_print)
 * for docs/reliability.md "Apache Kafka". Without $VW_KAFKA every test skips. */
#include "kafka_apache.h"
#include "kafka_conf.h"
#include "rel_check.h"
#include "vw_test.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOPICS "requests:4,results:4,requests.dlq:1,evals:4"
enum { PARTS = 4 };

static void need_kafka(void) {
    if (vw_kh_kafka_skip_reason())
        cr_skip_test("%s", vw_kh_kafka_skip_reason());
}

/* Produces requests first..first+n-1 like vw_rel_produce, compressed with codec. */
static int produce_codec(const char *bootstrap, size_t first, size_t n, const char *prefix,
                         const char *codec) {
    vw_kh_msg *m = calloc(n, sizeof *m);
    char(*keys)[32] = calloc(n, sizeof *keys);
    char prop[64];
    snprintf(prop, sizeof prop, "compression.codec=%s", codec);
    const char *props[] = {prop, "linger.ms=50", NULL};
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], sizeof keys[i], "%s%05zu", prefix, first + i);
        m[i] = (vw_kh_msg){
            .partition = (int32_t)((first + i) % PARTS), .key = keys[i], .value = VW_REL_ECHO_VALUE};
    }
    int rc = vw_kh_produce_conf(bootstrap, "requests", m, n, props, NULL, NULL);
    free(m);
    free(keys);
    return rc;
}

Test(kafka_apache, end_to_end_rejections_lz4_zstd) {
    need_kafka();
    vw_kh_kafka k;
    vw_kh_proc w;
    char cfg[256];
    cr_assert_eq(vw_kh_kafka_start(1, TOPICS, &k), 0);
    cr_assert_eq(vw_kh_write_config(&k.broker, "apache-e2e", NULL, cfg, sizeof cfg), 0);
    int64_t t0 = vw_kh_now_ms();
    cr_assert_eq(vw_kh_worker_start("worker", cfg, NULL, &w), 0);
    enum { N = 200, BAD = 20, Z = 100 };
    cr_assert_eq(vw_rel_produce(k.broker.bootstrap, 0, N, PARTS, "r", VW_REL_ECHO_VALUE), 0);
    vw_kh_msg bad[BAD];
    char keys[BAD][16], ids[BAD][16];
    int32_t parts[BAD];
    int64_t offs[BAD];
    for (int i = 0; i < BAD; i++) {
        snprintf(keys[i], sizeof keys[i], "bad%02d", i);
        snprintf(ids[i], sizeof ids[i], "id-bad%02d", i);
        bad[i] = (vw_kh_msg){.partition = i % PARTS,
                             .key = keys[i],
                             .value = i % 2 ? "[1, 2]" : "{not json",
                             .hdr_name = {"request-id"},
                             .hdr_value = {ids[i]}};
    }
    cr_assert_eq(vw_kh_produce(k.broker.bootstrap, "requests", bad, BAD, parts, offs), 0);
    /* Compressed input: record batches the broker keeps as the producer
     * compressed them, decompressed by the worker's consumer. */
    cr_assert_eq(produce_codec(k.broker.bootstrap, 0, Z, "l", "lz4"), 0);
    cr_assert_eq(produce_codec(k.broker.bootstrap, 0, Z, "z", "zstd"), 0);
    vw_rel_report r = vw_rel_collect(k.broker.bootstrap, "results", "r", N, 120000);
    vw_rel_print("apache_end_to_end", &r, vw_kh_now_ms() - t0);
    vw_rel_report rl = vw_rel_collect(k.broker.bootstrap, "results", "l", Z, 60000);
    vw_rel_print("apache_lz4_input", &rl, rl.waited_ms);
    vw_rel_report rz = vw_rel_collect(k.broker.bootstrap, "results", "z", Z, 60000);
    vw_rel_print("apache_zstd_input", &rz, rz.waited_ms);
    json_t *res = vw_kh_consume(k.broker.bootstrap, "results", N + BAD + 2 * Z, 30000);
    size_t n_bad = 0, i_rec;
    json_t *rec;
    json_array_foreach(res, i_rec, rec) {
        const char *key = json_string_value(json_object_get(rec, "key"));
        if (!key || strncmp(key, "bad", 3))
            continue;
        int i = atoi(key + 3);
        n_bad++;
        cr_assert_str_eq(vw_kh_header(rec, "vela-status"), "400", "%s", key);
        cr_assert_str_eq(vw_kh_header(rec, "request-id"), ids[i]);
    }
    json_decref(res);
    int64_t end[PARTS] = {0};
    cr_assert_eq(vw_kh_end_offsets(k.broker.bootstrap, "requests", PARTS, end), 0);
    cr_assert_eq(end[0] + end[1] + end[2] + end[3], N + BAD + 2 * Z);
    int committed =
        vw_kh_wait_committed(k.broker.bootstrap, "apache-e2e", "requests", PARTS, end, 30000);
    int rc = vw_kh_stop(&w, SIGTERM, 30000);
    vw_kh_kafka_stop(&k);
    cr_assert_eq(r.missing, 0, "200/200 answered");
    cr_assert_eq(r.duplicates, 0);
    cr_assert_eq(r.order_errors, 0);
    cr_assert_eq(r.not_200, 0);
    cr_assert_eq(n_bad, BAD, "every invalid record has its rejection");
    cr_assert_eq(rl.missing + rl.duplicates + rl.not_200, 0, "lz4 input answered once each");
    cr_assert_eq(rz.missing + rz.duplicates + rz.not_200, 0, "zstd input answered once each");
    cr_assert_eq(committed, 0, "committed offsets at the log end");
    cr_assert_eq(rc, 0, "SIGTERM: drained, exit 0");
}
