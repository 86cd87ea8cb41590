/* proc_test.h — helpers for the processor suites (request, rejections, render,
 * plan): fixture bundles, admission in one call, and the spec's
 * 1-char-per-token test tokenizer (docs/spec/request.md §5.1 worked example). */
#ifndef VW_PROC_TEST_H
#define VW_PROC_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "admission/admit_cfg.h"
#include "admission/errlist.h"
#include "admission/request.h"
#include "tokenizer/tokenizer.h"

/* Loads fixtures/plan/<name> (e.g. "bundle"); aborts the test on failure. */
vw_admit_cfg *proc_cfg(const char *name);

/* Admits a NUL-terminated JSON body. Returns the request (status 200) or NULL
 * with *status and *detail filled. */
vw_request *proc_admit(const vw_admit_cfg *cfg, const char *json, int *status, vw_errlist *detail);

/* The detail list as JSON text (caller frees). */
char *proc_detail_json(const vw_errlist *detail);

/* The entry of question id, or NULL. */
const vw_qentry *proc_entry(const vw_request *req, const char *id);

/* One token per code point: id = 10 + cp % 1000, offsets [i, i+1) — the
 * reference tests' tokenizer, so token positions equal code points. Matches
 * the vw_encoder signature (render.h); ctx unused. */
vw_status proc_char_encode(void *ctx, const char *text, size_t len, vw_encoding *out, vw_err *err);
void proc_char_release(void *ctx, vw_encoding *enc);

/* Decodes ids made by proc_char_encode back to text (caller frees). */
char *proc_char_decode(const int32_t *ids, size_t n);

#endif
