/* fuzz_canonical_json.c — libFuzzer target: arbitrary bytes through
 * vw_json_parse (Python json.loads semantics) and vw_canon_write. Checks: a
 * parse either succeeds or names an offset inside the input; canonical output
 * (when the value is finite) parses again and is a fixed point (canonical of
 * canonical is the same bytes); jansson accepts it as JSON. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admission/canonical_json.h"
#include "admission/json_in.h"

static char *canon(const char *buf, size_t len, size_t *out_len, vw_status *st) {
    vw_json_doc *doc = NULL;
    vw_json_error je;
    *st = vw_json_parse(buf, len, &doc, &je);
    if (*st != VW_OK) {
        if (*st == VW_EINVAL && je.offset > len)
            abort();
        return NULL;
    }
    vw_sbuf sb = {0};
    *st = vw_canon_write(&sb, (vw_jref){doc, vw_json_root(doc)}, NULL);
    if (*st == VW_OK && vw_json_finite((vw_jref){doc, vw_json_root(doc)}) == false)
        abort(); /* a non-finite value must be refused */
    vw_json_free(doc);
    if (*st != VW_OK || sb.oom) {
        vw_sbuf_free(&sb);
        return NULL;
    }
    return vw_sbuf_take(&sb, out_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vw_status st;
    size_t n1 = 0, n2 = 0;
    char *c1 = canon((const char *)data, size, &n1, &st);
    if (!c1)
        return 0;
    char *c2 = canon(c1, n1, &n2, &st);
    if (!c2 || n1 != n2 || memcmp(c1, c2, n1))
        abort();
    json_error_t je;
    json_t *j = json_loadb(c1, n1, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &je);
    /* jansson refuses a NUL in a key and integers beyond double range: the
     * canonical text is still JSON then */
    if (!j && !strstr(je.text, "NUL") && !strstr(je.text, "overflow") &&
        !strstr(je.text, "too big"))
        abort();
    json_decref(j);
    free(c1);
    free(c2);
    return 0;
}
