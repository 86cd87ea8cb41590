/* starts.c — partitions assigned but not yet fetching (see starts.h). */
#include "starts.h"
#include "util/reserve.h"

#include <stdlib.h>
#include <string.h>

void vw_starts_free(vw_starts *s) {
    free(s->items);
    *s = (vw_starts){0};
}

static struct vw_start *find(vw_starts *s, int32_t partition) {
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i].partition == partition)
            return &s->items[i];
    return NULL;
}

vw_status vw_starts_add(vw_starts *s, int32_t partition, int64_t now_ms) {
    struct vw_start *e = find(s, partition);
    if (!e) {
        if (vw_reserve((void **)&s->items, &s->cap, s->n + 1, sizeof *s->items))
            return VW_ENOMEM;
        e = &s->items[s->n++];
        e->partition = partition;
    }
    e->since_ms = now_ms;
    return VW_OK;
}

void vw_starts_remove(vw_starts *s, int32_t partition) {
    struct vw_start *e = find(s, partition);
    if (e)
        *e = s->items[--s->n];
}

bool vw_starts_fetching(const char *fetch_state) {
    return fetch_state && strcmp(fetch_state, "none") && strcmp(fetch_state, "stopping") &&
           strcmp(fetch_state, "stopped");
}

size_t vw_starts_due(vw_starts *s, int64_t now_ms, int64_t timeout_ms, int32_t *out, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < s->n && k < cap; i++) {
        if (now_ms - s->items[i].since_ms < timeout_ms)
            continue;
        out[k++] = s->items[i].partition;
        s->items[i].since_ms = now_ms;
    }
    return k;
}
