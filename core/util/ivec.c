/* ivec.c — the int32 vector (see ivec.h). */
#include "ivec.h"

#include <stdlib.h>
#include <string.h>

#include "reserve.h"

vw_status vw_ivec_push(vw_ivec *a, int32_t x) {
    return vw_ivec_append(a, &x, 1);
}

vw_status vw_ivec_append(vw_ivec *a, const int32_t *x, size_t n) {
    if (vw_reserve((void **)&a->v, &a->cap, a->n + n, sizeof *a->v))
        return VW_ENOMEM;
    if (n)
        memcpy(a->v + a->n, x, n * sizeof *x);
    a->n += n;
    return VW_OK;
}

void vw_ivec_free(vw_ivec *a) {
    free(a->v);
    memset(a, 0, sizeof *a);
}
