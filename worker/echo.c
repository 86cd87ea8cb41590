/* echo.c — the test-only echo processor (see echo.h). It exists so that
 * batching, delivery and commits can be tested end to end without a model; it
 * is chosen only by `model.device: test-echo`. */
#include "echo.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission/json_in.h"
#include "util/sbuf.h"
#include "util/sha256.h"

typedef struct echo {
    char *retry_id; /* VW_TEST_ECHO_RETRY request id, or NULL */
    long retry_n;
    char *huge_id; /* VW_TEST_ECHO_HUGE request id, or NULL */
    long delay_ms;
    char *slow_id; /* VW_TEST_ECHO_SLOW request id, or NULL */
    long slow_ms;
    atomic_bool cancelled; /* echo_cancel: the "device" stops, as the engine's does */
} echo;

typedef struct echo_item {
    char *request_id;
    char *value; /* the finished result value */
    size_t value_len;
    long runs; /* touched by the finish step only (one batch at a time) */
} echo_item;

/* [thread: kafka, processing] */
static void echo_item_free(vw_processor *p, void *it) {
    (void)p;
    echo_item *item = it;
    if (item) {
        free(item->request_id);
        free(item->value);
        free(item);
    }
}

/* {"answers":{qid:{"echo":qid},...},"usage":{"bytes":..,"tokens":..,"sha256":".."}}
 * [thread: admission] */
static vw_status echo_value(const json_t *questions, const vw_record *rec, int64_t tokens,
                            vw_sbuf *sb, vw_err *err) {
    char hex[VW_SHA256_HEX];
    vw_status st = vw_sha256_hex(rec->value ? rec->value : "", rec->value_len, hex, err);
    if (st)
        return st;
    vw_sbuf_puts(sb, "{\"answers\":{");
    const char *key;
    json_t *v;
    size_t i = 0;
    json_object_foreach((json_t *)questions, key, v) {
        size_t klen = strlen(key);
        vw_sbuf_puts(sb, i++ ? "," : "");
        vw_canon_string(sb, key, klen);
        vw_sbuf_puts(sb, ":{\"echo\":");
        vw_canon_string(sb, key, klen);
        vw_sbuf_puts(sb, "}");
    }
    vw_sbuf_printf(sb, "},\"usage\":{\"bytes\":%zu,\"tokens\":%lld,\"sha256\":\"%s\"}}",
                   rec->value_len, (long long)tokens, hex);
    return vw_sbuf_status(sb);
}

/* [thread: admission, several at once] */
static vw_status echo_admit(vw_processor *p, const vw_record *rec, vw_admission *out, vw_err *err) {
    const echo *e = p->impl;
    if (e->slow_id && !strcmp(e->slow_id, rec->request_id)) {
        struct timespec ts = {e->slow_ms / 1000, (e->slow_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    vw_json_doc *doc = NULL; /* parsed here when the worker did not */
    vw_json_error jerr;
    vw_sbuf sb = {0};
    echo_item *item = NULL;
    vw_status st = rec->doc ? VW_OK : vw_json_parse(rec->value, rec->value_len, &doc, &jerr);
    if (st) {
        st = VW_FAIL(err, st, "echo_parse", "echo: %s at %zu", jerr.msg, jerr.offset);
        goto done;
    }
    const json_t *questions = json_object_get(vw_json_root(rec->doc ? rec->doc : doc), "questions");
    if (!json_is_object(questions)) {
        /* The echo's one validation rule, shaped like the contract's 422. */
        out->finished = true;
        out->result.vela_status = 422;
        vw_sbuf_puts(&sb, "{\"status\":422,\"detail\":[{\"loc\":[\"body\",\"questions\"],"
                          "\"msg\":\"Field required\",\"type\":\"missing\"}]}");
        out->result.value = vw_sbuf_take(&sb, &out->result.value_len);
        st = out->result.value ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "echo");
        goto done;
    }
    int64_t tokens = (int64_t)(rec->value_len / 4) + 1;
    item = calloc(1, sizeof *item);
    if (!item || !(item->request_id = strdup(rec->request_id))) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "echo item");
        goto done;
    }
    if ((st = echo_value(questions, rec, tokens, &sb, err)))
        goto done;
    item->value = vw_sbuf_take(&sb, &item->value_len);
    out->finished = false;
    out->item = item;
    out->tokens = tokens;
    item = NULL;
done:
    echo_item_free(p, item);
    vw_sbuf_free(&sb);
    vw_json_free(doc);
    return st;
}

/* [thread: processing] */
static void echo_one(echo *e, echo_item *item, vw_result *r) {
    item->runs++;
    if (e->retry_id && !strcmp(e->retry_id, item->request_id) && item->runs <= e->retry_n) {
        r->kind = VW_RESULT_RETRY;
        VW_FAIL(&r->err, VW_ETRANSIENT, "echo_transient", "echo: run %ld of %ld fails on purpose",
                item->runs, e->retry_n);
        return;
    }
    size_t len = item->value_len;
    int huge = e->huge_id && !strcmp(e->huge_id, item->request_id);
    size_t pad = huge ? (size_t)2 << 20 : 0;
    /* Huge: {"pad":"xxxx...", <the usual fields>} */
    r->value = malloc(len + pad + 16);
    if (!r->value) {
        r->kind = VW_RESULT_RETRY;
        VW_FAIL(&r->err, VW_ENOMEM, "out_of_memory", "echo result");
        return;
    }
    if (huge) {
        size_t n = 0;
        memcpy(r->value, "{\"pad\":\"", 8);
        n = 8;
        memset(r->value + n, 'x', pad);
        n += pad;
        memcpy(r->value + n, "\",", 2);
        n += 2;
        memcpy(r->value + n, item->value + 1, len - 1);
        n += len - 1;
        r->value_len = n;
    } else {
        memcpy(r->value, item->value, len);
        r->value_len = len;
    }
    r->value[r->value_len] = 0;
    r->kind = VW_RESULT_RECORD;
    r->vela_status = 200;
}

/* A batch in flight: the items the finish step answers. */
typedef struct echo_batch {
    void **items;
    size_t n;
} echo_batch;

/* [thread: kafka] */
static vw_status echo_prepare(vw_processor *p, void *const *items, size_t n, void **batch,
                              vw_err *err) {
    (void)p;
    echo_batch *b = malloc(sizeof *b);
    void **copy = malloc((n ? n : 1) * sizeof *copy);
    if (!b || !copy) {
        free(b);
        free(copy);
        return VW_FAIL(err, VW_ETRANSIENT, "out_of_memory", "echo batch");
    }
    memcpy(copy, items, n * sizeof *copy);
    *b = (echo_batch){copy, n};
    *batch = b;
    return VW_OK;
}

/* The "device": VW_TEST_ECHO_DELAY_MS holds the executor thread as a model's
 * call would. [thread: executor] */
static vw_status echo_execute(vw_processor *p, void *batch, vw_err *err) {
    (void)batch;
    echo *e = p->impl;
    /* Until delay_ms from now, in steps of at most 10 ms, checking the cancel
     * flag between them as the CPU backbone checks between trees. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t end_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + e->delay_ms * 1000000;
    while (e->delay_ms > 0 && !atomic_load(&e->cancelled)) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t left = end_ns - ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
        if (left <= 0)
            break;
        struct timespec ts = {0, (long)(left < 10000000 ? left : 10000000)};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&e->cancelled))
        return VW_FAIL(err, VW_ETRANSIENT, "cancelled", "the shutdown cancelled the batch");
    return VW_OK;
}

/* [thread: any] */
static void echo_cancel(vw_processor *p) {
    atomic_store(&((echo *)p->impl)->cancelled, true);
}

/* [thread: processing, several at once] */
static void echo_finish(vw_processor *p, void *batch, vw_result *results, vw_stage_times *t) {
    (void)t;
    echo *e = p->impl;
    echo_batch *b = batch;
    for (size_t i = 0; i < b->n; i++)
        echo_one(e, b->items[i], &results[i]);
}

/* [thread: processing; kafka at shutdown] */
static void echo_release(vw_processor *p, void *batch) {
    (void)p;
    echo_batch *b = batch;
    if (b)
        free(b->items);
    free(b);
}

/* [thread: any] */
static const char *echo_model(vw_processor *p) {
    (void)p;
    return "test-echo@0";
}

static void echo_destroy(vw_processor *p) {
    echo *e = p->impl;
    if (e) {
        free(e->retry_id);
        free(e->huge_id);
        free(e->slow_id);
        free(e);
    }
    free(p);
}

static const vw_processor_ops echo_ops = {
    .name = "test-echo",
    .admit = echo_admit,
    .prepare = echo_prepare,
    .execute = echo_execute,
    .finish = echo_finish,
    .release = echo_release,
    .item_free = echo_item_free,
    .cancel = echo_cancel,
    .ready = NULL,
    .model = echo_model,
    .destroy = echo_destroy,
};

/* A test hook "<request-id>:<n>" (n >= 1) from the environment variable var;
 * *id stays NULL when it is unset or empty. */
static vw_status id_and_number(const char *var, char **id, long *n, vw_err *err) {
    const char *v = getenv(var), *colon = v ? strrchr(v, ':') : NULL;
    if (!v || !*v)
        return VW_OK;
    if (!colon || (*n = strtol(colon + 1, NULL, 10)) < 1)
        return VW_FAIL(err, VW_EINVAL, "bad_test_hook", "%s=%s: want id:n", var, v);
    *id = strndup(v, (size_t)(colon - v));
    return *id ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "echo processor");
}

vw_status vw_echo_processor_new(vw_processor **out, vw_err *err) {
    *out = NULL;
    vw_processor *p = calloc(1, sizeof *p);
    echo *e = calloc(1, sizeof *e);
    if (!p || !e)
        goto oom;
    p->ops = &echo_ops;
    p->impl = e;
    const char *huge = getenv("VW_TEST_ECHO_HUGE"), *delay = getenv("VW_TEST_ECHO_DELAY_MS");
    vw_status st = id_and_number("VW_TEST_ECHO_RETRY", &e->retry_id, &e->retry_n, err);
    if (!st)
        st = id_and_number("VW_TEST_ECHO_SLOW", &e->slow_id, &e->slow_ms, err);
    if (st) {
        echo_destroy(p);
        return st;
    }
    if (huge && *huge && !(e->huge_id = strdup(huge)))
        goto oom;
    if (delay)
        e->delay_ms = strtol(delay, NULL, 10);
    *out = p;
    return VW_OK;
oom:
    if (p && e)
        echo_destroy(p);
    else {
        free(p);
        free(e);
    }
    return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "echo processor");
}
