/* bundle_sense.h — checks that a verified bundle makes sense: values no
 * trained model or real package has are refused at open, naming the key or
 * tensor and saying what is wrong (issue 35 finding 7: bf16-max weights, a
 * slot count of 10^9 or 0 passed `bundle verify` and misled at run time).
 *
 * vw_bundle_sense_config: config.json's top-level keys the worker does not
 * otherwise read, against the tensors they describe: format_version 1;
 * head_dim and span_head.d in [1, 2^16] and equal to the rows of head.key /
 * span2.K; span_head.slots in [1, 2^16] and equal to the rows of span2.slot;
 * pad_token_id in [0, backbone vocab_size). Absent keys are fine. (The
 * backbone config is checked by qwen35_config.c, span_layout and max_length by
 * admission/admit_cfg.c, calibration.json by answers/calibration.c.)
 *
 * vw_bundle_sense_weights: every tensor the worker reads (backbone and heads;
 * F32, F16, BF16) holds finite values of magnitude at most VW_WEIGHT_MAX_ABS.
 * VW_SCAN_FULL reads every element (`bundle verify`); VW_SCAN_SAMPLE reads the
 * first block of 2,048 elements of each tensor and one block in every 64
 * after it (the worker's start: about 1/64 of the pages), so a tensor filled
 * with nonsense is caught at load and a single bad value at verify.
 *
 * Errors: VW_EINVAL, type "bad_config" (config.json, naming the key) or
 * "bad_weights" (naming the tensor, its file, the element and its value).
 * Pure: reads the bundle only; any thread.
 */
#ifndef VW_BUNDLE_SENSE_H
#define VW_BUNDLE_SENSE_H

#include "bundle.h"

/* The largest |w| accepted in a weight: trained models stay within tens (norm
 * scales, A_log, dt_bias the largest); 10^4 leaves two orders of magnitude
 * and still refuses FP16's 65,504, BF16's 3.4e38 and random bits (half of
 * them past 1). docs/backbone.md "Sense checks". */
#define VW_WEIGHT_MAX_ABS 1e4

typedef enum vw_scan { VW_SCAN_SAMPLE = 0, VW_SCAN_FULL = 1 } vw_scan;

vw_status vw_bundle_sense_config(const vw_bundle *b, vw_err *err);
vw_status vw_bundle_sense_weights(const vw_bundle *b, vw_scan how, vw_err *err);

#endif
