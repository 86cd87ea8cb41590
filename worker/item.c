/* item.c — a record's item and its outcome (see item.h). */
#include "item.h"

#include <stdlib.h>
#include <string.h>

#include "admit_record.h" /* vw_copy_type */

bool vw_items_push(vw_item ***list, size_t *n, size_t *cap, vw_item *it) {
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        vw_item **grown = realloc(*list, c * sizeof *grown);
        if (!grown)
            return false;
        *list = grown;
        *cap = c;
    }
    (*list)[(*n)++] = it;
    return true;
}

/* Frees the result value and headers of an item. [thread: any (the item's holder)] */
static void clear_result(vw_item *it) {
    free(it->res_value);
    for (size_t i = 0; i < it->n_headers; i++) {
        free(it->headers[i].name);
        free(it->headers[i].value);
    }
    free(it->headers);
    it->res_value = NULL;
    it->res_len = 0;
    it->headers = NULL;
    it->n_headers = 0;
}

/* [thread: any (the item's holder)] */
void vw_item_free(vw_item *it) {
    if (!it)
        return;
    if (it->proc_item)
        it->proc->ops->item_free(it->proc, it->proc_item);
    clear_result(it);
    free(it->msg);
    free(it->out_value);
    free(it);
}

/* [thread: any (the item's holder)] */
void vw_item_set_type(vw_item *it, const char *type) {
    vw_copy_type(it->type, sizeof it->type, type);
}

/* [thread: admission, processing] */
void vw_item_take(vw_item *it, vw_result *r) {
    clear_result(it);
    if (r->kind != VW_RESULT_RECORD) {
        vw_item_fail(it, r->kind, r->err.type[0] ? r->err.type : "no_result", r->err.msg);
        vw_result_clear(r);
        return;
    }
    it->kind = VW_RESULT_RECORD;
    it->vela_status = r->vela_status;
    it->res_value = r->value;
    it->res_len = r->value_len;
    it->headers = r->headers;
    it->n_headers = r->n_headers;
    vw_item_set_type(it, r->err.type);
    r->value = NULL;
    r->value_len = 0;
    r->headers = NULL;
    r->n_headers = 0;
}

/* [thread: any (the item's holder)] */
void vw_item_fail(vw_item *it, vw_result_kind kind, const char *type, const char *msg) {
    char *m = strdup(msg); /* msg may be it->msg itself */
    clear_result(it);
    free(it->msg);
    it->msg = m;
    it->kind = kind;
    vw_item_set_type(it, type);
}

const char *vw_item_msg(const vw_item *it) {
    return it->msg ? it->msg : it->type;
}

void vw_item_free_cb(void *it) {
    vw_item_free(it);
}
