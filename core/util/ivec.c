/* ivec.c — the int32 vector (see ivec.h). */
#include "ivec.h"

#include <stdlib.h>
#include <string.h>

vw_status vw_ivec_push(vw_ivec *a, int32_t x) {
    return vw_ivec_append(a, &x, 1);
}

vw_status vw_ivec_append(vw_ivec *a, const int32_t *x, size_t n) {
    if (a->n + n > a->cap) {
        size_t cap = a->cap ? a->cap : 16;
        while (cap < a->n + n)
            cap *= 2;
        int32_t *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return VW_ENOMEM;
        a->v = v;
        a->cap = cap;
    }
    if (n)
        memcpy(a->v + a->n, x, n * sizeof *x);
    a->n += n;
    return VW_OK;
}

void vw_ivec_free(vw_ivec *a) {
    free(a->v);
    memset(a, 0, sizeof *a);
}
