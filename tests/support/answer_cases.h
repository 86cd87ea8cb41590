/* answer_cases.h — the end-to-end answer goldens (fixtures/answers/cases.jsonl,
 * written by tools/make_answer_goldens.py) for tests/test_engine.c and
 * tests/test_schemas.c: loading them, and running one case the way the worker
 * does: record checks first (vw_record_in_check: size, Python json.loads rules,
 * top-level object), then the engine (plan; score when planned).
 *
 * Ownership: vw_acases owns every case (vw_acases_free); vw_acase_engines owns
 * the engines it opened (vw_acase_engines_free). Plans returned by
 * vw_acase_plan belong to the caller (vw_plan_free).
 * Thread-safety: none (tests run cases sequentially).
 * Errors: loaders return false/NULL after printing why (naming the recipe);
 * runners return the engine's vw_status.
 */
#ifndef VW_ANSWER_CASES_H
#define VW_ANSWER_CASES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admission/canonical_json.h"
#include "engine.h"
#include "render/plan.h"
#include "vw_status.h"

#define VW_ACASES_RECIPE "tools/make_answer_goldens.py"

typedef struct vw_acase {
    char *name;
    char *bundle; /* "tiny" (fixtures/tiny-vela) or "small" (fixtures/answers/tiny-small) */
    char *body;   /* request bytes, NUL-terminated copy */
    size_t len;
    int64_t max_request_bytes; /* the worker's record limit for this case */
    int status;                /* expected vela-status */
    json_t *expected;          /* envelope (200) or {"status","detail"} */
} vw_acase;

typedef struct vw_acases {
    vw_acase *v;
    size_t n;
} vw_acases;

bool vw_acases_load(vw_acases *out);
void vw_acases_free(vw_acases *c);

typedef struct vw_acase_engines {
    vw_engine *tiny, *small;
    vw_executor_factory make_executor; /* NULL: the CPU backbone */
    void *make_ctx;
} vw_acase_engines;

/* The engine of a bundle name, opened on first use with es->make_executor
 * (NULL + stderr on failure). */
vw_engine *vw_acase_engine(vw_acase_engines *es, const char *bundle);
void vw_acase_engines_free(vw_acase_engines *es);

/* Record checks + plan. On VW_OK: *plan set (status 200), or *plan NULL with the
 * rejection value {"status","detail"} appended to rej; *status either way. */
vw_status vw_acase_plan(vw_engine *e, const vw_acase *c, vw_plan **plan, int *status, vw_sbuf *rej,
                        vw_err *err);

/* vw_acase_plan, then vw_engine_score of that one plan: out receives the
 * envelope or the rejection value. */
vw_status vw_acase_run(vw_engine *e, const vw_acase *c, int *status, vw_sbuf *out, vw_err *err);

#endif
