/* proc_test.c — see proc_test.h. */
#include "proc_test.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "admission/canonical_json.h"
#include "util/pystr.h"
#include "vw_test.h"

vw_admit_cfg *proc_cfg(const char *name) {
    char rel[128];
    snprintf(rel, sizeof rel, "fixtures/plan/%s", name);
    char *dir = vw_test_path(rel);
    vw_admit_cfg *cfg = NULL;
    vw_err err = {0};
    vw_status st = vw_admit_cfg_load(dir, &cfg, &err);
    cr_assert_eq(st, VW_OK, "load %s: %s (regenerate with tools/make_plan_goldens.py)", dir,
                 err.msg);
    free(dir);
    return cfg;
}

vw_request *proc_admit(const vw_admit_cfg *cfg, const char *json, int *status, vw_errlist *detail) {
    vw_request *req = NULL;
    vw_err err = {0};
    vw_status st = vw_request_admit(cfg, json, strlen(json), &req, status, detail, &err);
    cr_assert_eq(st, VW_OK, "admit: %s", err.msg);
    return req;
}

char *proc_detail_json(const vw_errlist *detail) {
    vw_sbuf sb = {0};
    vw_errlist_write(&sb, detail);
    return vw_sbuf_take(&sb, NULL);
}

const vw_qentry *proc_entry(const vw_request *req, const char *id) {
    for (size_t i = 0; i < req->n; i++)
        if (!strcmp(req->entries[i].id.p, id))
            return &req->entries[i];
    return NULL;
}

vw_status proc_char_encode(void *ctx, const char *text, size_t len, vw_encoding *out, vw_err *err) {
    (void)ctx;
    size_t n = vw_utf8_count(text, len);
    if (n > out->cap) {
        int32_t *ids = realloc(out->ids, n * sizeof *ids);
        if (ids)
            out->ids = ids;
        int32_t *off = realloc(out->offsets, 2 * n * sizeof *off);
        if (off)
            out->offsets = off;
        if (!ids || !off)
            return VW_FAIL(err, VW_ENOMEM, "oom", "char tokenizer");
        out->cap = n;
    }
    size_t i = 0, k = 0;
    while (i < len) {
        uint32_t cp = vw_utf8_next(text, len, &i);
        out->ids[k] = (int32_t)(10 + cp % 1000);
        out->offsets[2 * k] = (int32_t)k;
        out->offsets[2 * k + 1] = (int32_t)k + 1;
        k++;
    }
    out->n = k;
    return VW_OK;
}

void proc_char_release(void *ctx, vw_encoding *enc) {
    (void)ctx;
    free(enc->ids);
    free(enc->offsets);
    memset(enc, 0, sizeof *enc);
}

char *proc_char_decode(const int32_t *ids, size_t n) {
    char *s = malloc(4 * n + 1), *p = s;
    for (size_t i = 0; i < n; i++)
        p += vw_utf8_put((uint32_t)(ids[i] - 10), p);
    *p = 0;
    return s;
}
