/* ivec.h — a growable int32 vector: token ids, offsets, ranges. The render
 * stage builds its trees from these, and the piece cache hands them out.
 * Ownership: a vw_ivec owns v (vw_ivec_free). Thread-safety: one owner.
 * Errors: VW_ENOMEM leaves the vector as it was.
 */
#ifndef VW_IVEC_H
#define VW_IVEC_H

#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_ivec {
    int32_t *v;
    size_t n, cap;
} vw_ivec;

vw_status vw_ivec_push(vw_ivec *a, int32_t x);
vw_status vw_ivec_append(vw_ivec *a, const int32_t *x, size_t n);
void vw_ivec_free(vw_ivec *a);

#ifdef __cplusplus
}
#endif
#endif
