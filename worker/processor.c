/* processor.c — what every processor shares: its results' helpers and
 * vw_processor_free (see processor.h). */
#include "processor.h"

#include <stdlib.h>
#include <string.h>

/* [thread: any] */
void vw_result_clear(vw_result *r) {
    if (!r)
        return;
    free(r->value);
    for (size_t i = 0; i < r->n_headers; i++) {
        free(r->headers[i].name);
        free(r->headers[i].value);
    }
    free(r->headers);
    memset(r, 0, sizeof *r);
}

/* [thread: admission, processing] */
vw_status vw_result_add_header(vw_result *r, const char *name, const void *value, size_t len) {
    vw_header *grown = realloc(r->headers, (r->n_headers + 1) * sizeof *grown);
    if (!grown)
        return VW_ENOMEM;
    r->headers = grown;
    char *n = strdup(name), *v = malloc(len + 1);
    if (!n || !v) {
        free(n);
        free(v);
        return VW_ENOMEM;
    }
    if (len)
        memcpy(v, value, len);
    v[len] = 0;
    r->headers[r->n_headers++] = (vw_header){n, v, len};
    return VW_OK;
}

void vw_processor_free(vw_processor *p) {
    if (p)
        p->ops->destroy(p);
}
