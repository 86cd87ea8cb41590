/* reserve.c — see reserve.h. */
#include "reserve.h"

#include <stdlib.h>

vw_status vw_reserve(void **p, size_t *cap, size_t n, size_t sz) {
    if (n <= *cap)
        return VW_OK;
    size_t nc = *cap ? *cap : 16;
    while (nc < n)
        nc *= 2;
    void *q = realloc(*p, nc * sz);
    if (!q)
        return VW_ENOMEM;
    *p = q;
    *cap = nc;
    return VW_OK;
}
