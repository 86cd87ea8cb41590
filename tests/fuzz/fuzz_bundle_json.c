/* fuzz_bundle_json.c — libFuzzer target: arbitrary bytes as a bundle's
 * config.json and calibration.json (split at the first NUL byte; without one
 * the same bytes serve as both), read as the engine's open reads them: the
 * backbone config (qwen35_config.h), the admission config with its span
 * layout (admit_cfg.h) and the calibration (calibration.h). Checks: each
 * parse is VW_OK or VW_EINVAL/VW_EUNSUPPORTED/VW_ENOMEM with a message; what
 * is accepted keeps the documented ranges (widths, span layout order,
 * probabilities and temperatures), and the calibration's lookups answer
 * within them. No crash, no leak. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admission/admit_cfg.h"
#include "answers/calibration.h"
#include "model/qwen35_config.h"

static void want_error(vw_status st, const vw_err *err) {
    if ((st != VW_EINVAL && st != VW_EUNSUPPORTED && st != VW_ENOMEM) || !err->msg[0])
        abort();
}

static void backbone(const char *text, size_t len) {
    json_t *root = json_loadb(text, len, 0, NULL);
    vw_qwen35_config c;
    vw_err err = {0};
    vw_status st = vw_qwen35_config_parse(json_object_get(root, "backbone_config"), &c, &err);
    if (st == VW_OK) {
        if (c.hidden < 1 || c.hidden > (1 << 20) || c.vocab < 1 || c.vocab > (1 << 26) ||
            c.n_layers < 1 || c.n_layers > VW_QWEN35_MAX_LAYERS || c.head_dim < 1 ||
            c.rotary_dim < 2 || c.rotary_dim > c.head_dim || !(c.rms_eps > 0))
            abort();
        size_t n = vw_qwen35_tensor_specs(&c, NULL, 0);
        if (n < 2)
            abort();
    } else {
        want_error(st, &err);
    }
    json_decref(root);
}

static void admission(const char *cfg, size_t cl, const char *cal, size_t kl, bool broad) {
    vw_admit_cfg *a = NULL;
    vw_err err = {0};
    vw_status st = vw_admit_cfg_parse(cfg, cl, cal, kl, broad, &a, &err);
    if (st == VW_OK) {
        if (!a || a->max_length < 1 || a->max_length > VW_MAX_LENGTH_LIMIT || a->stride < 1 ||
            a->stride > a->window || a->window > a->hybrid_rmax || a->hybrid_rmax > a->max_length)
            abort();
        vw_admit_cfg_is_pii_type(a, "PERSON", 6);
    } else if (a) {
        abort();
    } else {
        want_error(st, &err);
    }
    vw_admit_cfg_free(a);
}

static void calibration(const char *cal, size_t kl) {
    vw_cal *c = NULL;
    vw_err err = {0};
    vw_status st = vw_cal_parse(cal, kl, &c, &err);
    if (st != VW_OK) {
        if (c)
            abort();
        want_error(st, &err);
        return;
    }
    for (int t = 0; t < 4; t++) {
        double temp = vw_cal_temperature(c, (vw_cal_type)t);
        if (!(temp >= 0.01 && temp <= 100))
            abort();
    }
    double th = -1;
    if (vw_cal_set_threshold(c, "q", NULL, &th, &err) == VW_OK && !(th >= 0 && th <= 1))
        abort();
    static const int64_t tokens[] = {0, 1, 21, 126, 1022, 100000};
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
        th = -1;
        if (vw_cal_pii_length_threshold(c, tokens[i], &th, &err) == VW_OK && !(th >= 0 && th <= 1))
            abort();
    }
    int64_t k = 0;
    double t_sparse = -1, probe = -1;
    if (vw_cal_sparse_gate(c, &k, &t_sparse, &probe) &&
        !(t_sparse >= 0 && t_sparse <= 1 && probe >= 0 && probe <= 1))
        abort();
    double p = vw_cal_noul(c, 0.5, true);
    if (!(p >= 0 && p <= 1))
        abort();
    vw_cal_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    const char *nul = memchr(text, 0, size);
    size_t cl = nul ? (size_t)(nul - text) : size;
    const char *cal = nul ? nul + 1 : text;
    size_t kl = nul ? size - cl - 1 : size;
    backbone(text, cl);
    admission(text, cl, cal, kl, size & 1);
    calibration(cal, kl);
    return 0;
}
