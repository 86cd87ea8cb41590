/* json_in.c — Python-faithful JSON input (see json_in.h).
 *
 * Owns: the rewrite handed to jansson (numbers become table indices), built
 * through the front door's sink while core/admission/pyjson.c checks the bytes, and the
 * number table. Never: acceptance rules or their messages (pyjson.c),
 * canonical output (canonical_json.c), request semantics (request.c).
 */
#include "json_in.h"
#include "util/reserve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One rewritten token: input [in0, in1) became output [out0, out1). */
typedef struct shift {
    size_t in0, in1, out0, out1;
} shift;

struct vw_json_doc {
    json_t *root;
    char *src; /* copy of the input: number lexemes point into it */
    vw_jnum *nums;
    size_t n_nums;
};

/* The rewrite under construction (the sink's context). */
typedef struct rewrite {
    const char *in;
    size_t copied; /* input [0, copied) is already in out */
    char *out;
    size_t out_len, out_cap;
    vw_jnum *nums;
    shift *shifts; /* [n_nums], parallel to nums */
    size_t n_nums, cap_nums;
} rewrite;

static vw_status emit(rewrite *w, const char *p, size_t n) {
    if (vw_reserve((void **)&w->out, &w->out_cap, w->out_len + n + 1, 1))
        return VW_ENOMEM;
    memcpy(w->out + w->out_len, p, n);
    w->out_len += n;
    w->out[w->out_len] = 0;
    return VW_OK;
}

/* Python float(lexeme) of a number token or a NaN/Infinity literal. */
static vw_status token_value(const char *p, size_t n, double *v) {
    if (p[0] == 'N') {
        *v = NAN;
        return VW_OK;
    }
    if (p[0] == 'I' || (p[0] == '-' && n > 1 && p[1] == 'I')) {
        *v = p[0] == '-' ? -INFINITY : INFINITY;
        return VW_OK;
    }
    char small[64], *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp)
        return VW_ENOMEM;
    memcpy(tmp, p, n);
    tmp[n] = 0;
    *v = strtod(tmp, NULL); /* +-HUGE_VAL on overflow, as Python float() gives inf */
    if (tmp != small)
        free(tmp);
    return VW_OK;
}

static vw_status grow_nums(rewrite *w) {
    /* nums and shifts share one capacity. */
    size_t c1 = w->cap_nums, c2 = w->cap_nums;
    if (vw_reserve((void **)&w->nums, &c1, w->n_nums + 1, sizeof *w->nums) ||
        vw_reserve((void **)&w->shifts, &c2, w->n_nums + 1, sizeof *w->shifts))
        return VW_ENOMEM;
    w->cap_nums = c1;
    return VW_OK;
}

/* Sink: the number at [at, at+n) becomes its table index in the rewrite. */
static vw_status on_number(void *ctx, size_t at, size_t n, bool is_int) {
    rewrite *w = ctx;
    vw_status st = w->n_nums < w->cap_nums ? VW_OK : grow_nums(w);
    double value = 0;
    if (!st)
        st = token_value(w->in + at, n, &value);
    if (!st)
        st = emit(w, w->in + w->copied, at - w->copied);
    if (st)
        return st;
    char idx[24];
    int k = snprintf(idx, sizeof idx, "%zu", w->n_nums);
    shift *sh = &w->shifts[w->n_nums];
    sh->in0 = at;
    sh->in1 = at + n;
    sh->out0 = w->out_len;
    if ((st = emit(w, idx, (size_t)k)))
        return st;
    sh->out1 = w->out_len;
    vw_jnum *num = &w->nums[w->n_nums++];
    num->lex = NULL; /* set to the document's copy later: [in0, in1) */
    num->len = n;
    num->is_int = is_int;
    num->value = value;
    w->copied = at + n;
    return VW_OK;
}

/* Maps an offset of the rewritten text back to the input. */
static size_t map_back(const rewrite *w, size_t out_pos) {
    size_t in_pos = out_pos;
    for (size_t i = 0; i < w->n_nums; i++) {
        const shift *sh = &w->shifts[i];
        if (out_pos < sh->out0)
            break;
        if (out_pos < sh->out1)
            return sh->in0;
        in_pos = sh->in1 + (out_pos - sh->out1);
    }
    return in_pos;
}

/* jansson reports the offset after the offending token and quotes the token
 * ("... near 'tok'"); Python reports where the token starts. */
static size_t token_start(const json_error_t *je) {
    size_t pos = je->position > 0 ? (size_t)je->position : 0;
    const char *near = strstr(je->text, " near '");
    if (!near)
        return pos;
    near += 7;
    size_t n = strlen(near);
    if (n == 0 || near[n - 1] != '\'')
        return pos; /* truncated message: keep jansson's offset */
    n--;
    return pos >= n ? pos - n : 0;
}

/* The one error jansson still finds in a checked document (an object key
 * holding U+0000): its message without the quote of the input. */
static void jansson_error(const rewrite *w, const json_error_t *je, size_t len,
                          vw_json_error *jerr) {
    size_t at = map_back(w, token_start(je));
    memset(jerr, 0, sizeof *jerr);
    jerr->kind = VW_PYJSON_SYNTAX;
    jerr->offset = at > len ? len : at;
    const char *near = strstr(je->text, " near ");
    int n = near ? (int)(near - je->text) : (int)strlen(je->text);
    snprintf(jerr->msg, sizeof jerr->msg, "%.*s", n, je->text);
}

/* Takes root and the rewrite's number table into a new document. */
static vw_status make_doc(rewrite *w, json_t *root, const char *buf, size_t len,
                          vw_json_doc **out) {
    vw_json_doc *doc = calloc(1, sizeof *doc);
    char *src = malloc(len + 1);
    if (!doc || !src) {
        free(doc);
        free(src);
        json_decref(root);
        return VW_ENOMEM;
    }
    if (len)
        memcpy(src, buf, len);
    src[len] = 0;
    for (size_t i = 0; i < w->n_nums; i++)
        w->nums[i].lex = src + w->shifts[i].in0;
    doc->root = root;
    doc->src = src;
    doc->nums = w->nums;
    doc->n_nums = w->n_nums;
    w->nums = NULL;
    *out = doc;
    return VW_OK;
}

vw_status vw_json_parse(const char *buf, size_t len, vw_json_doc **out, vw_json_error *jerr) {
    vw_json_error local;
    if (!jerr)
        jerr = &local;
    *out = NULL;
    rewrite w = {.in = buf ? buf : ""};
    vw_pyjson_sink sink = {&w, on_number};
    vw_status st = vw_pyjson_scan(buf, len, &sink, jerr);
    if (st)
        goto done;
    if (jerr->kind != VW_PYJSON_OK) {
        st = VW_EINVAL;
        goto done;
    }
    if ((st = emit(&w, w.in + w.copied, len - w.copied)))
        goto done;
    json_error_t je;
    json_t *root = json_loadb(w.out, w.out_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!root) {
        jansson_error(&w, &je, len, jerr);
        st = VW_EINVAL;
        goto done;
    }
    st = make_doc(&w, root, buf, len, out);
done:
    free(w.out);
    free(w.nums);
    free(w.shifts);
    return st;
}

void vw_json_free(vw_json_doc *doc) {
    if (!doc)
        return;
    json_decref(doc->root);
    free(doc->src);
    free(doc->nums);
    free(doc);
}

const json_t *vw_json_root(const vw_json_doc *doc) {
    return doc->root;
}

const vw_jnum *vw_json_num(const vw_json_doc *doc, const json_t *v) {
    if (!doc || !json_is_integer(v))
        return NULL;
    json_int_t i = json_integer_value(v);
    if (i < 0 || (size_t)i >= doc->n_nums)
        return NULL;
    return &doc->nums[i];
}

bool vw_json_finite(vw_jref r) {
    const json_t *v = r.v;
    if (json_is_integer(v)) {
        const vw_jnum *n = vw_json_num(r.doc, v);
        return n && (n->is_int || isfinite(n->value));
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!vw_json_finite((vw_jref){r.doc, json_array_get(v, i)}))
                return false;
        return true;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach((json_t *)v, k, c) {
            if (!vw_json_finite((vw_jref){r.doc, c}))
                return false;
        }
    }
    return true;
}

bool vw_json_payload(vw_jref r) {
    if (!json_is_string(r.v) && !json_is_object(r.v) && !json_is_array(r.v))
        return false;
    return vw_json_finite(r);
}
