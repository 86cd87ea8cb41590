/* admit_cfg.h — what admission and rendering read from a model bundle directory:
 * config.json (max_length, span_layout), calibration.json (presets' schemas,
 * pii_types, broad_head.router_label_sets, halu description) and whether
 * broad_head.safetensors exists (docs/contract.md Decision 3). No weights.
 *
 * Ownership: vw_admit_cfg_load / _parse return a cfg the caller frees with
 * vw_admit_cfg_free; the json_t pointers inside are borrowed from cfg->cal.
 * Treat every field as read-only after loading.
 * Thread-safety: immutable after load; share freely.
 * Errors: VW_EIO (missing file), VW_EINVAL ("bad_config"/"bad_calibration",
 * the message names the key), VW_ENOMEM.
 */
#ifndef VW_ADMIT_CFG_H
#define VW_ADMIT_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json_in.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest max_length and span_layout value accepted (2^20 tokens; the
 * released decoders use 16,384): a plan's buffers follow it. Besides, stride
 * <= window <= hybrid_rmax <= max_length ("bad_config" naming both keys). */
#define VW_MAX_LENGTH_LIMIT (1 << 20)

typedef enum vw_preset {
    VW_PRESET_PII = 0,
    VW_PRESET_HALU,
    VW_PRESET_RELEVANCE,
    VW_N_PRESETS
} vw_preset;

/* "pii", "halu", "relevance". */
const char *vw_preset_name(vw_preset p);

typedef struct vw_admit_cfg {
    int64_t max_length;         /* config.json max_length */
    int64_t hybrid_rmax;        /* span_layout.hybrid_rmax (2048): repeat targets up to this */
    int64_t window;             /* span_layout.window (1800) */
    int64_t stride;             /* span_layout.stride (1536) */
    bool broad;                 /* broad head present: file + non-empty calibration block */
    size_t max_request_bytes;   /* 0: no limit */
    int64_t max_request_tokens; /* model tokens of one plan (vw_plan_cost), more: 413
                                   (Decision 9); 0: no limit (vw_admit_cfg_set_max_tokens) */
    vw_json_doc *cal;           /* calibration.json, owned */
    const json_t *schema[VW_N_PRESETS]; /* *_schema objects, NULL when absent */
    const json_t *pii_types;            /* array of strings, or NULL */
    const json_t *router_sets;          /* broad_head.router_label_sets (non-empty array) or NULL */
    const char *halu_desc;              /* halu_schema.labels.unsupported or the default text */
    size_t halu_desc_len;
} vw_admit_cfg;

/* Reads DIR/config.json, DIR/calibration.json and checks DIR/broad_head.safetensors. */
vw_status vw_admit_cfg_load(const char *dir, vw_admit_cfg **out, vw_err *err);
/* Same from memory. */
vw_status vw_admit_cfg_parse(const char *config, size_t config_len, const char *calibration,
                             size_t calibration_len, bool broad_file, vw_admit_cfg **out,
                             vw_err *err);
void vw_admit_cfg_free(vw_admit_cfg *cfg);
/* The caller's limit on the model tokens of one plan (0: none). */
void vw_admit_cfg_set_max_tokens(vw_admit_cfg *cfg, int64_t max_request_tokens);

/* name (n bytes) is one of calibration pii_types. */
bool vw_admit_cfg_is_pii_type(const vw_admit_cfg *cfg, const char *name, size_t n);

#ifdef __cplusplus
}
#endif
#endif
