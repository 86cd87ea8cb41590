/* head_goldens.h — the PyTorch FP32 head goldens (fixtures/heads/, made by
 * tools/make_head_goldens.py) for the head suites: test_heads (the CPU heads)
 * and test_cuda_heads_dev (the device heads). Loading asserts (Criterion) and
 * names the recipe on any mismatch. */
#ifndef VW_HEAD_GOLDENS_H
#define VW_HEAD_GOLDENS_H

#include <jansson.h>
#include <stddef.h>

#include "model/head_weights.h"

#define VW_HEAD_GOLDENS_HINT "(regenerate with: .venv/bin/python tools/make_head_goldens.py)"

typedef struct vw_head_goldens {
    json_t *meta;
    char *bin;
    size_t bin_len;
    const float *data;
    size_t n_floats;
    char asked[64][64]; /* names the heads asked for */
    size_t n_asked;
    const char *hide;  /* a name the lookup pretends is absent */
    int scalar_as_vec; /* serve set_bias as shape [1] */
} vw_head_goldens;

void vw_head_goldens_load(vw_head_goldens *g);
void vw_head_goldens_free(vw_head_goldens *g);
/* The tensor `name` of the fixture (asserts it exists); *numel when asked. */
const float *vw_head_goldens_tensor(const vw_head_goldens *g, const char *name, size_t *numel);
/* The bundle-style adapter (vw_tensor_lookup; ctx = the goldens). */
vw_status vw_head_goldens_lookup(void *ctx, const char *name, vw_tensor_view *out, vw_err *err);

/* The heads' bar: every |got - want| <= 1e-5 + 1e-5 |want|. Logs the max
 * difference and the first mismatches, then asserts none (the message ends
 * with hint). */
void vw_heads_assert_close(const char *what, const float *got, const float *want, size_t n,
                           const char *hint);

#endif
