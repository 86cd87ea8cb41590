/* fuzz_tokenizer.c — libFuzzer target for core/tokenizer/tokenizer.h. The first byte picks the
 * mode, the rest is the input:
 *   0xFF        the rest is a tokenizer.json: loading must succeed or fail with a typed
 *               error, never crash or leak; a loaded one then encodes a few strings;
 *   otherwise   the rest is text for the Qwen3 (bit 1) or qwen35-mini tokenizer, with
 *               VW_TOK_NO_ADDED_TOKENS when bit 0 is set.
 * Text checks: VW_OK, or VW_EINVAL typed invalid_utf8; ids inside the vocabulary;
 * offsets 0 <= start <= end <= code points of the input, starts non-decreasing; and a
 * second encode (served by the BPE cache) gives the same ids and offsets.
 * The two fixture tokenizers are loaded once (libFuzzer keeps the process alive).
 */
#include "tokenizer/tokenizer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vw_tokenizer *toks[2]; /* harness state: loaded once, read-only afterwards */

static vw_tokenizer *load(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", VW_SOURCE_DIR, rel);
    vw_tokenizer *t = NULL;
    vw_err err;
    if (vw_tok_load(path, &t, &err)) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        abort();
    }
    return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    toks[0] = load("fixtures/tokenizers/qwen35-mini/tokenizer.json");
    toks[1] = load("fixtures/tokenizers/qwen3/tokenizer.json");
    return 0;
}

static size_t count_code_points(const uint8_t *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += (s[i] & 0xC0) != 0x80;
    return k;
}

static void check_text(vw_tokenizer *tok, const uint8_t *s, size_t n, unsigned flags) {
    vw_encoding a = {0}, b = {0};
    vw_err err;
    vw_err_clear(&err);
    vw_status st = vw_tok_encode(tok, (const char *)s, n, flags, &a, &err);
    if (st != VW_OK) {
        if (st != VW_EINVAL || strcmp(err.type, "invalid_utf8"))
            abort();
        vw_encoding_free(&a);
        return;
    }
    int32_t ncp = (int32_t)count_code_points(s, n), vs = vw_tok_vocab_size(tok), last = 0;
    for (size_t i = 0; i < a.n; i++) {
        int32_t st0 = a.offsets[2 * i], en = a.offsets[2 * i + 1];
        if (a.ids[i] < 0 || a.ids[i] >= vs || st0 < 0 || en < st0 || en > ncp || st0 < last)
            abort();
        last = st0;
    }
    if (vw_tok_encode(tok, (const char *)s, n, flags, &b, &err) != VW_OK || b.n != a.n ||
        (a.n && (memcmp(a.ids, b.ids, a.n * sizeof *a.ids) ||
                 memcmp(a.offsets, b.offsets, 2 * a.n * sizeof *a.offsets))))
        abort();
    vw_encoding_free(&a);
    vw_encoding_free(&b);
}

static void check_json(const uint8_t *s, size_t n) {
    vw_tokenizer *t = NULL;
    vw_err err;
    vw_err_clear(&err);
    vw_status st = vw_tok_load_json((const char *)s, n, &t, &err);
    if (st != VW_OK) {
        if (t || !err.msg[0] || (st != VW_EINVAL && st != VW_EUNSUPPORTED && st != VW_ENOMEM))
            abort();
        return;
    }
    static const char *texts[] = {"", "hello world", "a<|im_end|>b", "e\xcc\x81 \xe4\xbd\xa0"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        check_text(t, (const uint8_t *)texts[i], strlen(texts[i]), (unsigned)i & 1);
    vw_tok_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    if (data[0] == 0xFF)
        check_json(data + 1, size - 1);
    else
        check_text(toks[(data[0] >> 1) & 1], data + 1, size - 1,
                   data[0] & 1 ? VW_TOK_NO_ADDED_TOKENS : 0);
    return 0;
}
