/* calibration.c — calibration.json and the calibrated probabilities (see
 * calibration.h; docs/spec/answers.md §4), on the float64 arithmetic of
 * util/f64.h. Never decodes spans or formats JSON. */
#include "calibration.h"
#include "util/f64.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cal_entry {
    const char *key; /* borrowed from root */
    double value;
} cal_entry;

typedef struct cal_bucket {
    const char *name;
    double max_tokens;
    double threshold;
} cal_bucket;

struct vw_cal {
    json_t *root; /* owned; every borrowed string below points into it */
    double temperature[4];
    cal_entry *thresholds;
    size_t n_thresholds;
    const char **pii_types;
    size_t n_pii_types;
    double *anchor_log_n; /* ln n_k, strictly ascending */
    double *anchor_log_t; /* ln t_k */
    size_t n_anchors;     /* 0: no pii_length_rule */
    cal_bucket *buckets;
    size_t n_buckets;
    bool has_buckets;
    bool has_gate;
    double gate_k, gate_t_sparse, gate_probe;
    bool has_broad;
    double broad_temperature, broad_threshold;
    bool has_noul;
    double noul_t, noul_b;
    bool noul_default;
};

static const char *const TYPE_NAMES[4] = {"choice", "score", "set", "span"};

/* A finite JSON number (integer or real; booleans and strings are malformed). */
static vw_status get_number(const json_t *v, const char *path, double *out, vw_err *err) {
    if (!json_is_number(v))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration", "calibration.json: %s must be a number",
                       path);
    double x = json_number_value(v);
    if (!isfinite(x))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration", "calibration.json: %s must be finite",
                       path);
    *out = x;
    return VW_OK;
}

static vw_status get_positive(const json_t *v, const char *path, double *out, vw_err *err) {
    vw_status st = get_number(v, path, out, err);
    if (st == VW_OK && !(*out > 0.0))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: %s must be > 0 (got %.17g)", path, *out);
    return st;
}

/* The ranges a value can have and still mean something (docs/backbone.md
 * "Sense checks"): probabilities in [0, 1]; temperatures in [0.01, 100]
 * (fitted ones are near 1: 0.29 to 1.38 in the known files; past 100 every
 * probability is 0.5, under 0.01 every logit saturates); token counts in
 * [1, 2^31); a logit offset within +-100 (sigmoid(100) is 1 in float64). */
#define PROB 0.0, 1.0
#define TEMP 0.01, 100.0
#define TOKENS 1.0, 2147483647.0
#define OFFSET -100.0, 100.0

/* A finite number in [lo, hi]. */
static vw_status get_range(const json_t *v, const char *path, double lo, double hi, double *out,
                           vw_err *err) {
    vw_status st = get_number(v, path, out, err);
    if (st == VW_OK && !(*out >= lo && *out <= hi))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: %s is %.17g, outside [%.10g, %.10g]", path, *out, lo, hi);
    return st;
}

/* A block that is absent, null or {} counts as absent (the reference tests `or None`). */
static const json_t *optional_object(const json_t *root, const char *key, vw_err *err,
                                     vw_status *st) {
    const json_t *v = json_object_get(root, key);
    *st = VW_OK;
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_object(v)) {
        *st = VW_FAIL(err, VW_EINVAL, "bad_calibration", "calibration.json: %s must be an object",
                      key);
        return NULL;
    }
    return json_object_size(v) ? v : NULL;
}

static vw_status parse_temperature(vw_cal *cal, vw_err *err) {
    const json_t *t = json_object_get(cal->root, "temperature");
    if (!json_is_object(t))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: temperature must be an object");
    for (int i = 0; i < 4; i++) {
        cal->temperature[i] = 1.0;
        const json_t *v = json_object_get(t, TYPE_NAMES[i]);
        char path[64];
        snprintf(path, sizeof path, "temperature.%s", TYPE_NAMES[i]);
        if (v && get_range(v, path, TEMP, &cal->temperature[i], err) != VW_OK)
            return VW_EINVAL;
    }
    return VW_OK;
}

static vw_status parse_thresholds(vw_cal *cal, vw_err *err) {
    const json_t *t = json_object_get(cal->root, "thresholds");
    if (!json_is_object(t))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: thresholds must be an object");
    size_t n = json_object_size(t);
    cal->thresholds = calloc(n ? n : 1, sizeof *cal->thresholds);
    if (!cal->thresholds)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "calibration thresholds");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)t, key, v) {
        char path[160];
        snprintf(path, sizeof path, "thresholds.%s", key);
        cal_entry *e = &cal->thresholds[cal->n_thresholds];
        if (get_range(v, path, PROB, &e->value, err) != VW_OK)
            return VW_EINVAL;
        e->key = key;
        cal->n_thresholds++;
    }
    return VW_OK;
}

static vw_status parse_pii_types(vw_cal *cal, vw_err *err) {
    const json_t *a = json_object_get(cal->root, "pii_types");
    if (!a || json_is_null(a))
        return VW_OK;
    if (!json_is_array(a))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: pii_types must be an array of strings");
    size_t n = json_array_size(a);
    cal->pii_types = calloc(n ? n : 1, sizeof *cal->pii_types);
    if (!cal->pii_types)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "calibration pii_types");
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(a, i);
        if (!json_is_string(s))
            return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                           "calibration.json: pii_types[%zu] must be a string", i);
        cal->pii_types[cal->n_pii_types++] = json_string_value(s);
    }
    return VW_OK;
}

static vw_status parse_length_rule(vw_cal *cal, vw_err *err) {
    const json_t *rule = json_object_get(cal->root, "pii_length_rule");
    if (!rule)
        return VW_OK;
    const json_t *a = json_is_object(rule) ? json_object_get(rule, "anchors") : NULL;
    size_t n = json_array_size(a);
    if (!json_is_array(a) || n == 0)
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: pii_length_rule.anchors must be a non-empty array");
    cal->anchor_log_n = calloc(n, sizeof(double));
    cal->anchor_log_t = calloc(n, sizeof(double));
    if (!cal->anchor_log_n || !cal->anchor_log_t)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "calibration anchors");
    for (size_t i = 0; i < n; i++) {
        const json_t *an = json_array_get(a, i);
        char path[96];
        double nt = 0.0, th = 0.0;
        snprintf(path, sizeof path, "pii_length_rule.anchors[%zu].n_tokens", i);
        if (get_range(json_object_get(an, "n_tokens"), path, TOKENS, &nt, err) != VW_OK)
            return VW_EINVAL;
        snprintf(path, sizeof path, "pii_length_rule.anchors[%zu].threshold", i);
        if (get_positive(json_object_get(an, "threshold"), path, &th, err) != VW_OK ||
            get_range(json_object_get(an, "threshold"), path, PROB, &th, err) != VW_OK)
            return VW_EINVAL;
        cal->anchor_log_n[i] = log(nt);
        cal->anchor_log_t[i] = log(th);
        /* np.interp needs ascending x; a file that breaks it is malformed. */
        if (i > 0 && !(cal->anchor_log_n[i] > cal->anchor_log_n[i - 1]))
            return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                           "calibration.json: pii_length_rule.anchors[%zu].n_tokens must be "
                           "greater than the previous anchor's",
                           i);
    }
    cal->n_anchors = n;
    return VW_OK;
}

static vw_status parse_buckets(vw_cal *cal, vw_err *err) {
    const json_t *a = json_object_get(cal->root, "pii_buckets");
    if (!a)
        return VW_OK;
    if (!json_is_array(a))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: pii_buckets must be an array");
    size_t n = json_array_size(a);
    cal->buckets = calloc(n ? n : 1, sizeof *cal->buckets);
    if (!cal->buckets)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "calibration buckets");
    for (size_t i = 0; i < n; i++) {
        const json_t *b = json_array_get(a, i);
        cal_bucket *cb = &cal->buckets[i];
        char path[64];
        snprintf(path, sizeof path, "pii_buckets[%zu].name", i);
        const json_t *name = json_object_get(b, "name");
        if (!json_is_string(name))
            return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                           "calibration.json: %s must be a string", path);
        cb->name = json_string_value(name);
        snprintf(path, sizeof path, "pii_buckets[%zu].max_tokens", i);
        if (get_range(json_object_get(b, "max_tokens"), path, TOKENS, &cb->max_tokens, err) !=
            VW_OK)
            return VW_EINVAL;
        snprintf(path, sizeof path, "pii_buckets[%zu].threshold", i);
        if (get_range(json_object_get(b, "threshold"), path, PROB, &cb->threshold, err) != VW_OK)
            return VW_EINVAL;
    }
    cal->n_buckets = n;
    cal->has_buckets = true;
    return VW_OK;
}

static vw_status parse_gate(vw_cal *cal, vw_err *err) {
    vw_status st;
    const json_t *g = optional_object(cal->root, "pii_sparse_gate", err, &st);
    if (!g)
        return st;
    const json_t *k = json_object_get(g, "K");
    cal->gate_k = -1.0; /* the reference's default: disabled */
    if (k && get_range(k, "pii_sparse_gate.K", -1.0, 2147483647.0, &cal->gate_k, err) != VW_OK)
        return VW_EINVAL;
    if (cal->gate_k < 0)
        return VW_OK;
    if (get_range(json_object_get(g, "t_sparse"), "pii_sparse_gate.t_sparse", PROB,
                  &cal->gate_t_sparse, err) != VW_OK)
        return VW_EINVAL;
    cal->gate_probe = 0.5;
    const json_t *p = json_object_get(g, "probe_threshold");
    if (p && get_range(p, "pii_sparse_gate.probe_threshold", PROB, &cal->gate_probe, err) != VW_OK)
        return VW_EINVAL;
    cal->has_gate = true;
    return VW_OK;
}

static vw_status parse_broad(vw_cal *cal, vw_err *err) {
    vw_status st;
    const json_t *b = optional_object(cal->root, "broad_head", err, &st);
    if (!b)
        return st;
    if (get_range(json_object_get(b, "temperature"), "broad_head.temperature", TEMP,
                  &cal->broad_temperature, err) != VW_OK ||
        get_range(json_object_get(b, "threshold"), "broad_head.threshold", PROB,
                  &cal->broad_threshold, err) != VW_OK)
        return VW_EINVAL;
    const json_t *sets = json_object_get(b, "router_label_sets");
    if (sets && !json_is_array(sets))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: broad_head.router_label_sets must be an array");
    for (size_t i = 0; i < json_array_size(sets); i++) {
        const json_t *s = json_array_get(sets, i);
        if (!json_is_array(s))
            return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                           "calibration.json: broad_head.router_label_sets[%zu] must be an "
                           "array of strings",
                           i);
        for (size_t j = 0; j < json_array_size(s); j++)
            if (!json_is_string(json_array_get(s, j)))
                return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                               "calibration.json: broad_head.router_label_sets[%zu][%zu] must "
                               "be a string",
                               i, j);
    }
    cal->has_broad = true;
    return VW_OK;
}

static vw_status parse_noul(vw_cal *cal, vw_err *err) {
    vw_status st;
    const json_t *b = optional_object(cal->root, "noul_calibration", err, &st);
    if (!b)
        return st;
    if (get_range(json_object_get(b, "T"), "noul_calibration.T", TEMP, &cal->noul_t, err) !=
            VW_OK ||
        get_range(json_object_get(b, "b"), "noul_calibration.b", OFFSET, &cal->noul_b, err) !=
            VW_OK)
        return VW_EINVAL;
    const json_t *d = json_object_get(b, "default");
    if (d && !json_is_boolean(d))
        return VW_FAIL(err, VW_EINVAL, "bad_calibration",
                       "calibration.json: noul_calibration.default must be a boolean");
    cal->noul_default = d && json_is_true(d);
    cal->has_noul = true;
    return VW_OK;
}

/* Takes over one reference to root (released on failure too). */
static vw_status cal_build(json_t *root, vw_cal **out, vw_err *err) {
    vw_status st = VW_OK;
    *out = NULL;
    vw_cal *cal = calloc(1, sizeof *cal);
    if (!cal) {
        json_decref(root);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "calibration");
    }
    cal->root = root;
    if (!json_is_object(cal->root)) {
        st = VW_FAIL(err, VW_EINVAL, "bad_calibration", "calibration.json: not an object");
        goto done;
    }
    if ((st = parse_temperature(cal, err)) || (st = parse_thresholds(cal, err)) ||
        (st = parse_pii_types(cal, err)) || (st = parse_length_rule(cal, err)) ||
        (st = parse_buckets(cal, err)) || (st = parse_gate(cal, err)) ||
        (st = parse_broad(cal, err)) || (st = parse_noul(cal, err)))
        goto done;
    *out = cal;
    cal = NULL;
done:
    vw_cal_free(cal);
    return st;
}

vw_status vw_cal_parse(const char *json, size_t len, vw_cal **out, vw_err *err) {
    *out = NULL;
    json_error_t je;
    json_t *root = json_loadb(json, len, 0, &je);
    if (!root)
        return VW_FAIL(err, VW_EINVAL, "bad_calibration", "calibration.json: line %d: %s", je.line,
                       je.text);
    return cal_build(root, out, err);
}

vw_status vw_cal_from_json(const json_t *root, vw_cal **out, vw_err *err) {
    *out = NULL;
    if (!root)
        return VW_FAIL(err, VW_EINVAL, "bad_calibration", "calibration.json: missing");
    return cal_build(json_incref((json_t *)root), out, err);
}

vw_status vw_cal_load(const char *path, vw_cal **out, vw_err *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return VW_FAIL(err, VW_EIO, "io_error", "cannot open %s", path);
    char *buf = NULL;
    size_t n = 0;
    vw_status st = VW_OK;
    if (fseek(f, 0, SEEK_END) != 0) {
        st = VW_FAIL(err, VW_EIO, "io_error", "cannot seek %s", path);
        goto done;
    }
    long size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = VW_FAIL(err, VW_EIO, "io_error", "cannot size %s", path);
        goto done;
    }
    buf = malloc((size_t)size + 1);
    if (!buf) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "reading %s", path);
        goto done;
    }
    n = fread(buf, 1, (size_t)size, f);
    if (n != (size_t)size) {
        st = VW_FAIL(err, VW_EIO, "io_error", "short read on %s", path);
        goto done;
    }
    st = vw_cal_parse(buf, n, out, err);
done:
    free(buf);
    fclose(f);
    return st;
}

void vw_cal_free(vw_cal *cal) {
    if (!cal)
        return;
    free(cal->thresholds);
    free(cal->pii_types);
    free(cal->anchor_log_n);
    free(cal->anchor_log_t);
    free(cal->buckets);
    json_decref(cal->root);
    free(cal);
}

double vw_cal_temperature(const vw_cal *cal, vw_cal_type type) {
    return cal->temperature[type];
}

vw_status vw_cal_span_temperature(const vw_cal *cal, vw_span_head_kind head, double *out,
                                  vw_err *err) {
    if (head == VW_SPAN_BROAD) {
        if (!cal->has_broad)
            return VW_FAIL(err, VW_EINVAL, "calibration_missing_key",
                           "calibration.json has no broad_head block");
        *out = cal->broad_temperature;
        return VW_OK;
    }
    *out = cal->temperature[VW_CAL_SPAN];
    return VW_OK;
}

bool vw_cal_has_broad(const vw_cal *cal) {
    return cal->has_broad;
}

bool vw_cal_noul_default(const vw_cal *cal) {
    return cal->has_noul && cal->noul_default;
}

bool vw_cal_is_pii_type(const vw_cal *cal, const char *label) {
    for (size_t i = 0; i < cal->n_pii_types; i++)
        if (strcmp(cal->pii_types[i], label) == 0)
            return true;
    return false;
}

bool vw_cal_is_pii(const vw_cal *cal, const char *key, const char *const *labels, size_t n) {
    if (strcmp(key, "pii") == 0)
        return true;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!vw_cal_is_pii_type(cal, labels[i]))
            return false;
    return true;
}

/* thresholds["<prefix><key>"] without building the string. */
static const cal_entry *threshold_entry(const vw_cal *cal, const char *prefix, const char *key) {
    size_t np = strlen(prefix);
    for (size_t i = 0; i < cal->n_thresholds; i++) {
        const char *k = cal->thresholds[i].key;
        if (strncmp(k, prefix, np) == 0 && strcmp(k + np, key) == 0)
            return &cal->thresholds[i];
    }
    return NULL;
}

vw_status vw_cal_set_threshold(const vw_cal *cal, const char *key, const double *given, double *out,
                               vw_err *err) {
    if (given) {
        *out = *given;
        return VW_OK;
    }
    const cal_entry *e = threshold_entry(cal, "set:", key);
    if (!e)
        e = threshold_entry(cal, "set:", "*");
    if (!e)
        return VW_FAIL(err, VW_EINVAL, "calibration_missing_key",
                       "calibration.json: thresholds has neither set:%s nor set:*", key);
    *out = e->value;
    return VW_OK;
}

/* np.interp(x, xp, fp) for ascending xp: clamped outside, exact at the knots. */
static double interp(double x, const double *xp, const double *fp, size_t n) {
    if (x < xp[0])
        return fp[0];
    if (x >= xp[n - 1])
        return fp[n - 1];
    size_t j = 0;
    while (j + 1 < n && xp[j + 1] <= x)
        j++;
    if (xp[j] == x)
        return fp[j];
    double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
    return slope * (x - xp[j]) + fp[j];
}

vw_status vw_cal_pii_length_threshold(const vw_cal *cal, int64_t tokens, double *out, vw_err *err) {
    if (cal->n_anchors == 0)
        return VW_FAIL(err, VW_EINVAL, "calibration_missing_key",
                       "calibration.json has no pii_length_rule");
    double x = log((double)(tokens > 1 ? tokens : 1));
    *out = exp(interp(x, cal->anchor_log_n, cal->anchor_log_t, cal->n_anchors));
    return VW_OK;
}

/* Rule 3 of §4.4: returns VW_OK with *found false when no bucket matches (the
 * reference then falls through to the later rules). */
static vw_status pii_rule(const vw_cal *cal, const vw_span_query *q, vw_span_threshold *out,
                          bool *found, vw_err *err) {
    *found = true;
    if (cal->n_anchors > 0) {
        out->rule = VW_THR_PII_LENGTH;
        return vw_cal_pii_length_threshold(cal, q->part_tokens, &out->value, err);
    }
    if (!cal->has_buckets)
        return VW_FAIL(err, VW_EINVAL, "calibration_missing_key",
                       "calibration.json has neither pii_length_rule nor pii_buckets");
    for (size_t i = 0; i < cal->n_buckets; i++) {
        if ((double)q->part_tokens <= cal->buckets[i].max_tokens) {
            out->rule = VW_THR_PII_BUCKET;
            out->bucket = cal->buckets[i].name;
            out->value = cal->buckets[i].threshold;
            return VW_OK;
        }
    }
    *found = false;
    return VW_OK;
}

vw_status vw_cal_span_threshold(const vw_cal *cal, const vw_span_query *q, vw_span_threshold *out,
                                vw_err *err) {
    memset(out, 0, sizeof *out);
    if (q->given) {
        out->rule = VW_THR_GIVEN;
        out->value = *q->given;
        return VW_OK;
    }
    if (q->head == VW_SPAN_BROAD) {
        if (!cal->has_broad)
            return VW_FAIL(err, VW_EINVAL, "calibration_missing_key",
                           "calibration.json has no broad_head block");
        out->rule = VW_THR_BROAD;
        out->value = cal->broad_threshold;
        return VW_OK;
    }
    if (vw_cal_is_pii(cal, q->key, q->labels, q->n_labels)) {
        bool found;
        vw_status st = pii_rule(cal, q, out, &found, err);
        if (st != VW_OK || found)
            return st;
    }
    const cal_entry *e = threshold_entry(cal, "span:", q->key);
    if (strcmp(q->key, "halu") == 0 || strcmp(q->key, "toxic") == 0) {
        /* The reference reads span:<key> here without a fallback. */
        if (!e)
            return VW_FAIL(err, VW_EINVAL, "calibration_missing_key",
                           "calibration.json: thresholds has no span:%s", q->key);
        out->rule = VW_THR_NAMED;
        out->value = e->value;
        return VW_OK;
    }
    out->rule = VW_THR_KEY;
    if (!e) {
        out->rule = VW_THR_DEFAULT;
        e = threshold_entry(cal, "span:", "*");
    }
    if (!e)
        return VW_FAIL(err, VW_EINVAL, "calibration_missing_key",
                       "calibration.json: thresholds has neither span:%s nor span:*", q->key);
    out->value = e->value;
    return VW_OK;
}

bool vw_cal_sparse_gate(const vw_cal *cal, int64_t *k, double *t_sparse, double *probe) {
    if (!cal->has_gate)
        return false;
    /* K is compared with a span count; a fractional K behaves as its floor. */
    *k = (int64_t)floor(cal->gate_k);
    *t_sparse = cal->gate_t_sparse;
    *probe = cal->gate_probe;
    return true;
}

const char *vw_span_threshold_name(const vw_span_threshold *t, const char *key, char *buf,
                                   size_t cap) {
    const char *sparse = t->sparse ? "+sparse" : "";
    switch (t->rule) {
    case VW_THR_GIVEN:
        snprintf(buf, cap, "given%s", sparse);
        break;
    case VW_THR_BROAD:
        snprintf(buf, cap, "broad%s", sparse);
        break;
    case VW_THR_PII_LENGTH:
        snprintf(buf, cap, "pii:length%s", sparse);
        break;
    case VW_THR_PII_BUCKET:
        snprintf(buf, cap, "pii:%s%s", t->bucket ? t->bucket : "", sparse);
        break;
    case VW_THR_NAMED:
        snprintf(buf, cap, "%s%s", key, sparse);
        break;
    case VW_THR_KEY:
        snprintf(buf, cap, "span:%s%s", key, sparse);
        break;
    case VW_THR_DEFAULT:
        snprintf(buf, cap, "span:*%s", sparse);
        break;
    }
    return buf;
}

double vw_cal_noul(const vw_cal *cal, double p, bool enabled) {
    if (!enabled || !cal->has_noul)
        return p;
    const double lo = 1e-12, hi = 1.0 - 1e-12;
    p = p < lo ? lo : (p > hi ? hi : p);
    double logit = log(p) - log1p(-p);
    return 1.0 / (1.0 + exp(-(logit / cal->noul_t + cal->noul_b)));
}

void vw_cal_choice(const vw_cal *cal, const double *z, size_t n, bool with_abstain, double *probs,
                   vw_choice_stats *st) {
    double t = cal->temperature[VW_CAL_CHOICE];
    st->abstain = 0.0;
    if (with_abstain) {
        vw_f64_softmax(z, n + 1, t, probs);
        st->abstain = probs[n];
    }
    vw_f64_softmax(z, n, t, probs);
    st->pick = 0;
    for (size_t i = 1; i < n; i++)
        if (z[i] > z[st->pick])
            st->pick = i;
    if (n < 2) {
        st->confidence = 1.0;
        return;
    }
    double p1 = -1.0, p2 = -1.0;
    for (size_t i = 0; i < n; i++) {
        if (probs[i] > p1) {
            p2 = p1;
            p1 = probs[i];
        } else if (probs[i] > p2) {
            p2 = probs[i];
        }
    }
    double c = p1 - p2;
    st->confidence = c < 0.0 ? 0.0 : (c > 1.0 ? 1.0 : c);
}

double vw_cal_noul_yes(const vw_cal *cal, double z_no, double z_yes) {
    double z[2] = {z_no, z_yes}, p[2];
    vw_f64_softmax(z, 2, cal->temperature[VW_CAL_CHOICE], p);
    return p[1];
}

void vw_cal_score(const vw_cal *cal, const double *z, size_t n, double *probs, double *score,
                  double *confidence) {
    vw_f64_softmax(z, n, cal->temperature[VW_CAL_SCORE], probs);
    vw_f64_fsum_acc m = {.n = 0}, v = {.n = 0};
    for (size_t i = 0; i < n; i++)
        vw_f64_fsum_add(&m, (double)i * probs[i]);
    double mean = vw_f64_fsum_result(&m);
    for (size_t i = 0; i < n; i++) {
        /* Python's (i - mean) ** 2 is pow(x, 2.0), which rounds exactly like x * x. */
        double d = (double)i - mean;
        vw_f64_fsum_add(&v, probs[i] * (d * d));
    }
    double var = vw_f64_fsum_result(&v);
    *score = mean;
    double c = 1.0 - var / ((double)(n * n - 1) / 12.0);
    *confidence = c < 0.0 ? 0.0 : (c > 1.0 ? 1.0 : c);
}

void vw_cal_set_probs(const vw_cal *cal, const double *z, size_t n, double *probs) {
    double t = cal->temperature[VW_CAL_SET];
    for (size_t i = 0; i < n; i++)
        probs[i] = vw_f64_sigmoid(z[i] / t);
}
