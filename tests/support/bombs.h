/* bombs.h — compressed records for the poison tests: values of one repeated
 * byte, which zstd, lz4 and gzip shrink a hundredfold or more, so a few KiB
 * or MiB on the wire decompress to as much as a test asks (issue 35: a 6 KB
 * zstd record decompressing past receive.message.max.bytes, an lz4 record
 * decompressing to 500 MiB).
 *
 * Ownership: nothing kept. Thread-safety: one test thread. Errors: -1 with a
 * message on stderr.
 */
#ifndef VW_BOMBS_H
#define VW_BOMBS_H

#include <stddef.h>
#include <stdint.h>

/* Produces n records, each value_len bytes of `fill` with key "bomb-<i>", to
 * topic:partition with compression.type codec ("zstd", "lz4", "gzip"), in
 * one batch (one compressed record set) as far as librdkafka's batch limits
 * allow (linger 200 ms, message.max.bytes 1e9), flushed. The value is held
 * once, not copied per record. offsets (may be NULL) receives each record's
 * offset. */
int vw_bomb_produce(const char *bootstrap, const char *topic, int32_t partition, const char *codec,
                    char fill, size_t value_len, size_t n, int64_t *offsets);

/* Produces msgs (kafka_harness.h's shape; key_len/hdr_len beside them for
 * keys and header values that are not C strings: 0 means strlen) with
 * message.max.bytes 1e9, so records past a default producer's 1 MB limit
 * reach the broker as a careless or hostile producer would send them. */
typedef struct vw_big_msg {
    int32_t partition;
    const void *key;
    size_t key_len;
    const void *value;
    size_t len;
    const char *hdr_name; /* NULL: no header */
    const void *hdr_value;
    size_t hdr_len;
} vw_big_msg;
int vw_big_produce(const char *bootstrap, const char *topic, const vw_big_msg *msgs, size_t n);

#endif
