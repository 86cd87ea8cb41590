/* admit_cfg.c — the bundle facts admission and rendering need (see
 * admit_cfg.h). Owns reading config.json / calibration.json for the request
 * side; never loads weights (bundle.c) nor answer-side calibration
 * arithmetic (calibration.c). */
#include "admit_cfg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HALU_DEFAULT_DESC "a claim not supported by the context"

const char *vw_preset_name(vw_preset p) {
    static const char *const names[] = {"pii", "halu", "relevance"};
    return (unsigned)p < VW_N_PRESETS ? names[p] : "?";
}

static vw_status read_file(const char *path, char **buf, size_t *len, vw_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return VW_FAIL(err, VW_EIO, "missing_file", "%s: %s", path, strerror(errno));
    vw_status st = VW_OK;
    char *b = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = VW_FAIL(err, VW_EIO, "read_failed", "%s: cannot size", path);
        goto done;
    }
    b = malloc((size_t)n + 1);
    if (!b) {
        st = VW_FAIL(err, VW_ENOMEM, "oom", "%s: %ld bytes", path, n);
        goto done;
    }
    if (fread(b, 1, (size_t)n, f) != (size_t)n) {
        st = VW_FAIL(err, VW_EIO, "read_failed", "%s: short read", path);
        goto done;
    }
    b[n] = 0;
    *buf = b;
    *len = (size_t)n;
    b = NULL;
done:
    free(b);
    fclose(f);
    return st;
}

/* An integer member of obj; *out keeps its value when the key is absent and
 * required is false. */
static vw_status get_int(const vw_json_doc *doc, const json_t *obj, const char *key, bool required,
                         int64_t *out, const char *prefix, vw_err *err) {
    const json_t *v = json_object_get(obj, key);
    if (!v && !required)
        return VW_OK;
    const vw_jnum *num = vw_json_num(doc, v);
    if (!num || !num->is_int)
        return VW_FAIL(err, VW_EINVAL, "bad_config", "config.json: %s%s must be an integer", prefix,
                       key);
    if (num->lex[0] == '-' || !strcmp(num->lex, "0"))
        return VW_FAIL(err, VW_EINVAL, "bad_config", "config.json: %s%s is %.*s, must be positive",
                       prefix, key, (int)(num->len > 32 ? 32 : num->len), num->lex);
    *out = num->len > 12 ? INT64_MAX : strtoll(num->lex, NULL, 10);
    if (*out > VW_MAX_LENGTH_LIMIT)
        return VW_FAIL(err, VW_EINVAL, "bad_config", "config.json: %s%s is %.*s, exceeds 2^20 (%d)",
                       prefix, key, (int)(num->len > 32 ? 32 : num->len), num->lex,
                       VW_MAX_LENGTH_LIMIT);
    return VW_OK;
}

static vw_status read_config(vw_admit_cfg *cfg, const char *text, size_t len, vw_err *err) {
    vw_json_doc *doc = NULL;
    vw_json_error je;
    if (vw_json_parse(text, len, &doc, &je) != VW_OK)
        return VW_FAIL(err, VW_EINVAL, "bad_config", "config.json: byte %zu: %s", je.offset,
                       je.msg);
    const json_t *root = vw_json_root(doc), *layout;
    vw_status st = VW_OK;
    if (!json_is_object(root)) {
        st = VW_FAIL(err, VW_EINVAL, "bad_config", "config.json: not an object");
        goto done;
    }
    if ((st = get_int(doc, root, "max_length", true, &cfg->max_length, "", err)))
        goto done;
    cfg->hybrid_rmax = 2048;
    cfg->window = 1800;
    cfg->stride = 1536;
    layout = json_object_get(root, "span_layout");
    if (json_is_object(layout)) {
        int64_t above = -1;
        if ((st = get_int(doc, layout, "hybrid_rmax", false, &cfg->hybrid_rmax, "span_layout.",
                          err)) ||
            (st = get_int(doc, layout, "window", false, &cfg->window, "span_layout.", err)) ||
            (st = get_int(doc, layout, "stride", false, &cfg->stride, "span_layout.", err)) ||
            (st = get_int(doc, layout, "window_above", false, &above, "span_layout.", err)))
            goto done;
        /* The runtime refuses a layout that windows other targets than it
         * does not repeat (docs/spec/request.md §9.9). */
        if (above != -1 && above != cfg->hybrid_rmax) {
            st = VW_FAIL(err, VW_EINVAL, "bad_config",
                         "config.json: span_layout.window_above must equal hybrid_rmax");
            goto done;
        }
    } else if (layout && !json_is_null(layout)) {
        st = VW_FAIL(err, VW_EINVAL, "bad_config", "config.json: span_layout must be an object");
        goto done;
    }
    /* Windows cut targets longer than hybrid_rmax, each must fit the budget,
     * and consecutive ones must overlap or touch (a stride past the window
     * skips words): stride <= window <= hybrid_rmax <= max_length. A window of
     * 10^9 passed verify and failed every long span request ("bad_plan"). */
    if (cfg->stride > cfg->window)
        st = VW_FAIL(err, VW_EINVAL, "bad_config",
                     "config.json: span_layout.stride %lld exceeds span_layout.window %lld",
                     (long long)cfg->stride, (long long)cfg->window);
    else if (cfg->window > cfg->hybrid_rmax)
        st = VW_FAIL(err, VW_EINVAL, "bad_config",
                     "config.json: span_layout.window %lld exceeds span_layout.hybrid_rmax %lld",
                     (long long)cfg->window, (long long)cfg->hybrid_rmax);
    else if (cfg->hybrid_rmax > cfg->max_length)
        st = VW_FAIL(err, VW_EINVAL, "bad_config",
                     "config.json: span_layout.hybrid_rmax %lld exceeds max_length %lld",
                     (long long)cfg->hybrid_rmax, (long long)cfg->max_length);
done:
    vw_json_free(doc);
    return st;
}

static bool string_array(const json_t *a) {
    if (!json_is_array(a))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!json_is_string(json_array_get(a, i)))
            return false;
    return true;
}

/* A *_schema block: {"text": str, "labels"/"levels": {name: ...}}. */
static vw_status check_schema(vw_admit_cfg *cfg, vw_preset p, vw_err *err) {
    const json_t *s = cfg->schema[p];
    const char *list = p == VW_PRESET_RELEVANCE ? "levels" : "labels";
    const json_t *items = json_object_get(s, list);
    if (!json_is_string(json_object_get(s, "text")) || !json_is_object(items))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: %s_schema needs a text string and a %s object",
                       vw_preset_name(p), list);
    return VW_OK;
}

static vw_status read_calibration(vw_admit_cfg *cfg, bool broad_file, vw_err *err) {
    const json_t *root = vw_json_root(cfg->cal);
    if (!json_is_object(root))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration", "calibration.json: not an object");
    for (int p = 0; p < VW_N_PRESETS; p++) {
        char key[32];
        snprintf(key, sizeof key, "%s_schema", vw_preset_name((vw_preset)p));
        const json_t *s = json_object_get(root, key);
        cfg->schema[p] = json_is_object(s) ? s : NULL;
        vw_status st = cfg->schema[p] ? check_schema(cfg, (vw_preset)p, err) : VW_OK;
        if (st != VW_OK)
            return st;
    }
    const json_t *pii = json_object_get(root, "pii_types");
    if (pii && !string_array(pii))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: pii_types must be a list of strings");
    cfg->pii_types = pii;
    const json_t *broad = json_object_get(root, "broad_head");
    if (broad && !json_is_object(broad) && !json_is_null(broad))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: broad_head must be an object");
    cfg->broad = broad_file && json_is_object(broad) && json_object_size(broad) > 0;
    const json_t *sets = json_object_get(broad, "router_label_sets");
    if (sets) {
        if (!json_is_array(sets))
            return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                           "calibration.json: broad_head.router_label_sets must be a list");
        for (size_t i = 0; i < json_array_size(sets); i++)
            if (!string_array(json_array_get(sets, i)))
                return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                               "calibration.json: router_label_sets[%zu] must list strings", i);
        cfg->router_sets = json_array_size(sets) ? sets : NULL;
    }
    cfg->halu_desc = HALU_DEFAULT_DESC;
    cfg->halu_desc_len = strlen(HALU_DEFAULT_DESC);
    const json_t *hd =
        json_object_get(json_object_get(cfg->schema[VW_PRESET_HALU], "labels"), "unsupported");
    if (json_is_string(hd)) {
        cfg->halu_desc = json_string_value(hd);
        cfg->halu_desc_len = json_string_length(hd);
    }
    return VW_OK;
}

vw_status vw_admit_cfg_parse(const char *config, size_t config_len, const char *calibration,
                             size_t calibration_len, bool broad_file, vw_admit_cfg **out,
                             vw_err *err) {
    *out = NULL;
    vw_admit_cfg *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return VW_FAIL(err, VW_ENOMEM, "oom", "admission config");
    vw_status st = read_config(cfg, config, config_len, err);
    if (st != VW_OK)
        goto done;
    vw_json_error je;
    st = vw_json_parse(calibration, calibration_len, &cfg->cal, &je);
    if (st == VW_ENOMEM) {
        VW_FAIL(err, st, "oom", "calibration.json");
        goto done;
    }
    if (st != VW_OK) {
        st = VW_FAIL(err, VW_EINVAL, "bad_calibration", "calibration.json: byte %zu: %s", je.offset,
                     je.msg);
        goto done;
    }
    st = read_calibration(cfg, broad_file, err);
done:
    if (st != VW_OK)
        vw_admit_cfg_free(cfg);
    else
        *out = cfg;
    return st;
}

vw_status vw_admit_cfg_load(const char *dir, vw_admit_cfg **out, vw_err *err) {
    *out = NULL;
    size_t n = strlen(dir) + 32;
    char *path = malloc(n);
    char *config = NULL, *cal = NULL;
    size_t config_len = 0, cal_len = 0;
    vw_status st;
    if (!path)
        return VW_FAIL(err, VW_ENOMEM, "oom", "bundle path");
    snprintf(path, n, "%s/config.json", dir);
    if ((st = read_file(path, &config, &config_len, err)) != VW_OK)
        goto done;
    snprintf(path, n, "%s/calibration.json", dir);
    if ((st = read_file(path, &cal, &cal_len, err)) != VW_OK)
        goto done;
    snprintf(path, n, "%s/broad_head.safetensors", dir);
    st = vw_admit_cfg_parse(config, config_len, cal, cal_len, access(path, R_OK) == 0, out, err);
done:
    free(config);
    free(cal);
    free(path);
    return st;
}

void vw_admit_cfg_free(vw_admit_cfg *cfg) {
    if (!cfg)
        return;
    vw_json_free(cfg->cal);
    free(cfg);
}

void vw_admit_cfg_set_max_tokens(vw_admit_cfg *cfg, int64_t max_request_tokens) {
    cfg->max_request_tokens = max_request_tokens;
}

bool vw_admit_cfg_is_pii_type(const vw_admit_cfg *cfg, const char *name, size_t n) {
    for (size_t i = 0; i < json_array_size(cfg->pii_types); i++) {
        const json_t *t = json_array_get(cfg->pii_types, i);
        if (json_string_length(t) == n && !memcmp(json_string_value(t), name, n))
            return true;
    }
    return false;
}
