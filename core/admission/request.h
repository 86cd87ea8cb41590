/* request.h — admission of one System One request: bytes in, either a
 * validated request (state parts + questions in order, invalid ones carrying
 * their error) or a rejection (HTTP-style status + every (loc, msg, type)
 * problem, docs/contract.md Decisions 4 and 5; table in docs/rejections.md).
 *
 * Walk order: body size, JSON, top-level object, model, state, questions map;
 * the per-question walk runs only when the state and the map are usable;
 * then the Set label-collision check. A request whose every question is
 * invalid is a 422 listing one triple per question.
 *
 * Ownership: vw_request_admit returns a request the caller frees with
 * vw_request_free, or fills the caller's detail list (vw_errlist_free).
 * Thread-safety: reentrant; cfg is shared read-only.
 * Errors: VW_OK whenever a decision was reached (status 200 with *out, or
 * 400/413/422 with detail); VW_ENOMEM when memory ran out (nothing decided).
 */
#ifndef VW_REQUEST_H
#define VW_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "admit_cfg.h"
#include "errlist.h"
#include "questions.h"
#include "state.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_qentry {
    vw_str id;
    char *given_type; /* canonical JSON of the question's "type" ("null" when absent) */
    bool valid;
    vw_question q;   /* valid questions */
    vw_errent error; /* invalid questions: the triple (type invalid_question outside) */
} vw_qentry;

typedef struct vw_request {
    vw_state state;
    vw_qentry *entries; /* [n] in request order */
    size_t n;
} vw_request;

vw_status vw_request_admit(const vw_admit_cfg *cfg, const char *body, size_t len, vw_request **out,
                           int *status, vw_errlist *detail, vw_err *err);

/* The same decisions for a body of len bytes the caller already parsed
 * (vw_json_parse succeeded; the worker's record check does that, so a record
 * is scanned once): the size row, then the top-level value on. doc is
 * borrowed; the request copies what it keeps. */
vw_status vw_request_admit_doc(const vw_admit_cfg *cfg, size_t len, const vw_json_doc *doc,
                               vw_request **out, int *status, vw_errlist *detail, vw_err *err);
void vw_request_free(vw_request *req);

#ifdef __cplusplus
}
#endif
#endif
