/* item.h — one consumed record on its way to a result, and what may be done
 * to it: take a processor result, fail it (RETRY/FATAL), free it.
 *
 * Ownership: as below ("Owned by whoever holds it"); vw_item_free releases the
 * processor item too. Thread-safety: an item has one holder at a time (the
 * Kafka thread, an admission thread while it is admitted, or the executor
 * thread or a processing thread while its batch is with them: dispatch to
 * collect). Errors: the
 * setters cannot fail (a message that cannot be copied falls back to the type).
 */
#ifndef VW_ITEM_H
#define VW_ITEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "processor.h"
#include "record_in.h"
#include "service/config.h"

/* One consumed record on its way to a result. Owned by whoever holds it: the
 * flow (the admission lane, the batcher, a flight, the retry list), the ledger
 * (offsets.h: READY), the sink (librdkafka's opaque while PRODUCING, until the
 * delivery report; then its redo list after a failed delivery). Its fields
 * are read through this header and written only by item.c: the holder calls
 * the functions below (scripts/check-deps enforces it). */
typedef struct vw_item {
    vw_processor *proc; /* whose proc_item it holds */
    int32_t partition;
    int64_t offset;
    uint32_t epoch;
    int64_t timestamp;   /* record timestamp (ms), -1 if none */
    int64_t admitted_ms; /* monotonic, for queue delay */
    /* request_id, key and value live in this allocation (data[], one malloc
     * per record); value is kept for the dead-letter topic. request_id and
     * key are their echoes (at most VW_ECHO_MAX bytes, contract.h). */
    char *request_id;
    void *key; /* NULL when the record has none */
    size_t key_len;
    void *value;             /* NULL when value_dropped */
    size_t value_len;        /* the record's value size, kept or not */
    bool value_dropped;      /* larger than limits.max_request_bytes: never copied */
    const char *reply_topic; /* from the allow-list (config-owned) or NULL */
    void *proc_item;         /* the processor's pending item, or NULL */
    int64_t tokens;
    int attempts;   /* RETRY results so far */
    int64_t due_ms; /* retry list: when to batch again */
    /* The outcome, set at admission (finished) or from the executor's result
     * (vw_item_take), or by a failure (vw_item_fail). */
    vw_result_kind kind;
    int vela_status; /* RECORD */
    char *res_value; /* RECORD from a processor: its value, without request_id/source */
    size_t res_len;
    vw_header *headers; /* RECORD: the processor's extra headers */
    size_t n_headers;
    char type[48];   /* the rejection type the result named (metrics), or why RETRY/FATAL */
    char *msg;       /* RETRY/FATAL/dead letter: the message (malloc'd; NULL: see vw_item_msg) */
    char *out_value; /* produced bytes (owned here until the delivery report) */
    size_t out_len;
    bool dead_letter;    /* produced to the DLQ topic */
    bool redo_dlq;       /* redo list: dead-letter it (else produce the result again) */
    bool dlq_empty;      /* a dead letter refused with its payload: sent again without it */
    bool dlq_cut;        /* the dead letter's payload is shorter than the value */
    int produce_waits;   /* transient produce errors so far (sink.c backoff) */
    int64_t redo_due_ms; /* redo list: not before (vw_now_ms) */
    char data[];         /* request_id NUL key value */
} vw_item;

/* The item of a consumed record, in one allocation: its request id (the
 * request-id header, else the key, else topic:partition:offset; a long one
 * as its digest: record_in.h vw_record_in_id_pick), its key echo (the key,
 * or its digest past VW_ECHO_MAX bytes), its reply topic (cfg's allow-list)
 * and its value, copied only when at most cfg's limits.max_request_bytes
 * (a larger one is answered 413 from its size alone: value NULL,
 * value_dropped), so an item never holds more than the limit and a few KiB.
 * The processor is proc; epoch and admitted_ms as given. NULL when out of
 * memory. [thread: any] */
vw_item *vw_item_new(const vw_record_in *r, const vw_config *cfg, vw_processor *proc,
                     uint32_t epoch, int64_t admitted_ms);

/* Items. vw_item_free releases the processor item too; NULL is a no-op. */
void vw_item_free(vw_item *it);
/* Moves a processor result into the item (r is left empty). */
void vw_item_take(vw_item *it, vw_result *r);
/* Sets the outcome to kind (RETRY or FATAL) with an error type and message,
 * dropping any result value; also names why a record is dead-lettered. */
void vw_item_fail(vw_item *it, vw_result_kind kind, const char *type, const char *msg);
/* The failure message (the type if the message could not be kept). */
const char *vw_item_msg(const vw_item *it);
/* Sets the item's type (a rejection's or a failure's), truncated to fit. */
void vw_item_set_type(vw_item *it, const char *type);
void vw_item_free_cb(void *it);

/* Admission [thread: admission]. */
/* The processor's pending item after its admit, and its tokens (< 0 as 0). */
void vw_item_set_pending(vw_item *it, void *proc_item, int64_t tokens);
/* Finishes the item as a RECORD result with its produced bytes value[0..len)
 * (taken): a rejection made before any processor. A NULL value (out of
 * memory) fails the item FATAL, out_of_memory. */
void vw_item_set_record(vw_item *it, int vela_status, const char *type, char *value, size_t len);

/* The flow. */
/* Frees the processor's item (the processor is done with it); none: no-op. */
void vw_item_drop_proc(vw_item *it);
/* A RETRY result to run again: counts the attempt (attempts), clears the
 * outcome (a RECORD without type or message) and is due at due_ms. */
void vw_item_retry(vw_item *it, int64_t due_ms);

/* The sink. */
/* The produced bytes of a RECORD result (value taken). */
void vw_item_set_output(vw_item *it, char *value, size_t len);
/* Produced to the dead-letter topic; cut: its payload is shorter than the value. */
void vw_item_set_dead_letter(vw_item *it, bool cut);
/* The next dead letter goes without its payload (a full one was refused). */
void vw_item_set_dlq_empty(vw_item *it);
/* The redo list: produce the dead letter (dlq) or the result again, not before due_ms. */
void vw_item_set_redo(vw_item *it, bool dlq, int64_t due_ms);
/* One more transient produce error (produce_waits): produced again at due_ms. */
void vw_item_set_produce_wait(vw_item *it, int64_t due_ms);

/* Appends to a growable item list; false on allocation failure. */
bool vw_items_push(vw_item ***list, size_t *n, size_t *cap, vw_item *it);

#endif
