/* errlist.c — (loc, msg, type) triples (see errlist.h). */
#include "errlist.h"
#include "util/reserve.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static vw_status loc_push(vw_loc *loc, vw_locseg seg) {
    vw_locseg *s = realloc(loc->segs, (loc->n + 1) * sizeof *s);
    if (!s)
        return VW_ENOMEM;
    loc->segs = s;
    loc->segs[loc->n++] = seg;
    return VW_OK;
}

vw_status vw_loc_add_str(vw_loc *loc, const char *s, size_t len) {
    char *c = malloc(len + 1);
    if (!c)
        return VW_ENOMEM;
    memcpy(c, s, len);
    c[len] = 0;
    vw_status st = loc_push(loc, (vw_locseg){c, len, 0});
    if (st != VW_OK)
        free(c);
    return st;
}

vw_status vw_loc_add_int(vw_loc *loc, int64_t index) {
    return loc_push(loc, (vw_locseg){NULL, 0, index});
}

void vw_loc_free(vw_loc *loc) {
    for (size_t i = 0; i < loc->n; i++)
        free(loc->segs[i].str);
    free(loc->segs);
    loc->segs = NULL;
    loc->n = 0;
}

vw_status vw_loc_copy(vw_loc *dst, const vw_loc *src) {
    vw_loc out = {0};
    for (size_t i = 0; i < src->n; i++) {
        const vw_locseg *s = &src->segs[i];
        vw_status st =
            s->str ? vw_loc_add_str(&out, s->str, s->len) : vw_loc_add_int(&out, s->index);
        if (st != VW_OK) {
            vw_loc_free(&out);
            return st;
        }
    }
    *dst = out;
    return VW_OK;
}

vw_status vw_errlist_add(vw_errlist *l, vw_loc *loc, const char *msg, const char *type) {
    if (vw_reserve((void **)&l->items, &l->cap, l->n + 1, sizeof *l->items))
        return VW_ENOMEM;
    char *m = strdup(msg);
    if (!m)
        return VW_ENOMEM;
    l->items[l->n++] = (vw_errent){*loc, m, type};
    *loc = (vw_loc){0};
    return VW_OK;
}

void vw_errlist_free(vw_errlist *l) {
    for (size_t i = 0; i < l->n; i++) {
        vw_loc_free(&l->items[i].loc);
        free(l->items[i].msg);
    }
    free(l->items);
    *l = (vw_errlist){0};
}

void vw_loc_write(vw_sbuf *sb, const vw_loc *loc) {
    vw_sbuf_put(sb, "[", 1);
    for (size_t i = 0; i < loc->n; i++) {
        if (i)
            vw_sbuf_put(sb, ",", 1);
        if (loc->segs[i].str)
            vw_canon_string(sb, loc->segs[i].str, loc->segs[i].len);
        else
            vw_sbuf_printf(sb, "%" PRId64, loc->segs[i].index);
    }
    vw_sbuf_put(sb, "]", 1);
}

void vw_errlist_write(vw_sbuf *sb, const vw_errlist *l) {
    vw_sbuf_put(sb, "[", 1);
    for (size_t i = 0; i < l->n; i++) {
        const vw_errent *e = &l->items[i];
        if (i)
            vw_sbuf_put(sb, ",", 1);
        vw_sbuf_puts(sb, "{\"loc\":");
        vw_loc_write(sb, &e->loc);
        vw_sbuf_puts(sb, ",\"msg\":");
        vw_canon_string(sb, e->msg, strlen(e->msg));
        vw_sbuf_puts(sb, ",\"type\":");
        vw_canon_string(sb, e->type, strlen(e->type));
        vw_sbuf_put(sb, "}", 1);
    }
    vw_sbuf_put(sb, "]", 1);
}
