/* test_item.c — a consumed record becomes an item (worker/item.h
 * vw_item_new): the request id and the key echo are bounded (issue 35 finding
 * 2: a 600 KB or 1 MiB key was echoed three times and the result, then its
 * dead letter, exceeded the producer's limit: "record dropped"), and a value
 * over limits.max_request_bytes is never copied (finding 4: one 500 MiB
 * record cost its size twice). The digests are Python's hashlib.sha256 of the
 * same bytes. */
#include "item.h"

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "service/config.h"

/* sha256 of 1025 'k', of 512 KiB of 'h' and of 2000 bytes 0xff (hashlib). */
#define DIGEST_K1025 "sha256:011cc8dcade24f43d2d7f95605d8481da1d0b86475def49be02bfc20cee86e65"
#define DIGEST_H512K "sha256:b191f276f3c36f631597b0fa70df75f2b95d80ac751d4e134d3eba70d2937e04"
#define DIGEST_FF2000 "sha256:19813270963599ad8ba084792ca1c8fcae3bc421aee518e709642df647fba6fe"

static vw_config *config(int64_t max_request_bytes) {
    char yaml[256];
    snprintf(yaml, sizeof yaml,
             "kafka: {bootstrap.servers: \"h:1\"}\ntopics: {input: in, reply_allow: [replies]}\n"
             "limits: {max_request_bytes: %lld}\n",
             (long long)max_request_bytes);
    vw_config *cfg = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_config_parse(yaml, strlen(yaml), "t.yaml", NULL, &cfg, &err), VW_OK, "%s",
                 err.msg);
    return cfg;
}

static char *filled(char c, size_t n) {
    char *p = malloc(n + 1);
    cr_assert_not_null(p);
    memset(p, c, n);
    p[n] = 0;
    return p;
}

static vw_item *item_of(const vw_config *cfg, const void *key, size_t key_len,
                        rd_kafka_headers_t *h, const void *value, size_t value_len) {
    vw_record_in r = {.topic = "in",
                      .partition = 2,
                      .offset = 7,
                      .timestamp = 1700000000000,
                      .key = key,
                      .key_len = key_len,
                      .headers = h,
                      .value = value,
                      .value_len = value_len};
    vw_item *it = vw_item_new(&r, cfg, NULL, 3, 5);
    cr_assert_not_null(it);
    return it;
}

Test(item, short_ids_and_keys_are_echoed_as_they_are) {
    vw_config *cfg = config(64);
    rd_kafka_headers_t *h = rd_kafka_headers_new(2);
    rd_kafka_header_add(h, VW_HDR_REQUEST_ID, -1, "id-1", -1);
    rd_kafka_header_add(h, VW_HDR_REPLY_TOPIC, -1, "replies", -1);
    vw_item *it = item_of(cfg, "key-1", 5, h, "{\"a\":1}", 7);
    cr_assert_str_eq(it->request_id, "id-1");
    cr_assert_eq(it->key_len, 5);
    cr_assert(!memcmp(it->key, "key-1", 5));
    cr_assert_eq(it->value_len, 7);
    cr_assert(!memcmp(it->value, "{\"a\":1}", 7));
    cr_assert_not(it->value_dropped);
    cr_assert_str_eq(it->reply_topic, "replies");
    cr_assert_eq(it->partition, 2);
    cr_assert_eq(it->offset, 7);
    cr_assert_eq(it->epoch, 3);
    cr_assert_eq(it->timestamp, 1700000000000);
    vw_item_free(it);
    /* Exactly VW_ECHO_MAX bytes: still as they are. */
    char *k = filled('k', VW_ECHO_MAX);
    it = item_of(cfg, k, VW_ECHO_MAX, NULL, NULL, 0);
    cr_assert_eq(strlen(it->request_id), VW_ECHO_MAX);
    cr_assert_eq(it->key_len, VW_ECHO_MAX);
    cr_assert_null(it->reply_topic);
    vw_item_free(it);
    free(k);
    rd_kafka_headers_destroy(h);
    vw_config_free(cfg);
}

Test(item, a_long_key_or_request_id_is_echoed_as_its_digest) {
    vw_config *cfg = config(64);
    char *k = filled('k', VW_ECHO_MAX + 1);
    vw_item *it = item_of(cfg, k, VW_ECHO_MAX + 1, NULL, NULL, 0);
    cr_assert_str_eq(it->request_id, DIGEST_K1025, "the id from the key");
    cr_assert_eq(it->key_len, VW_ECHO_DIGEST_LEN);
    cr_assert(!memcmp(it->key, DIGEST_K1025, VW_ECHO_DIGEST_LEN), "the key echo");
    vw_item_free(it);
    /* A 512 KiB request-id header beside a short key: the id is its digest,
     * the key stays. */
    char *hid = filled('h', 512 * 1024);
    rd_kafka_headers_t *h = rd_kafka_headers_new(1);
    rd_kafka_header_add(h, VW_HDR_REQUEST_ID, -1, hid, 512 * 1024);
    it = item_of(cfg, "k", 1, h, NULL, 0);
    cr_assert_str_eq(it->request_id, DIGEST_H512K);
    cr_assert_eq(it->key_len, 1);
    vw_item_free(it);
    rd_kafka_headers_destroy(h);
    /* A long key that is not UTF-8: no id from it (the source instead), and
     * its echo is the digest of its bytes. */
    char *ff = filled('\xff', 2000);
    it = item_of(cfg, ff, 2000, NULL, NULL, 0);
    cr_assert_str_eq(it->request_id, "in:2:7");
    cr_assert(!memcmp(it->key, DIGEST_FF2000, VW_ECHO_DIGEST_LEN));
    vw_item_free(it);
    free(ff);
    free(hid);
    free(k);
    vw_config_free(cfg);
}

Test(item, a_value_over_the_limit_is_never_copied) {
    vw_config *cfg = config(64);
    char *v = filled('v', 65);
    vw_item *it = item_of(cfg, NULL, 0, NULL, v, 65);
    cr_assert_null(it->value, "not copied");
    cr_assert(it->value_dropped);
    cr_assert_eq(it->value_len, 65, "its size is kept: the 413 needs only that");
    cr_assert_null(it->key);
    vw_item_free(it);
    it = item_of(cfg, NULL, 0, NULL, v, 64);
    cr_assert_not_null(it->value, "at the limit: copied");
    cr_assert_not(it->value_dropped);
    cr_assert(!memcmp(it->value, v, 64));
    vw_item_free(it);
    free(v);
    vw_config_free(cfg);
}
