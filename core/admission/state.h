/* state.h — a System One state as typed parts (docs/spec/request.md §1.2).
 *
 * Roles are always emitted in the order user, context, answer. A string state
 * whose stripped form starts with '{' and parses to an object is read as that
 * object. Strings are one user part; arrays are their canonical JSON; objects
 * map keys by lower-cased name (request/user/prompt -> user;
 * source/context/document/tools/previous_answer -> context; answer/response ->
 * answer; anything else -> context). Each state key's code-point range inside
 * its part is recorded (fields).
 *
 * Ownership: vw_state_read fills a caller-owned vw_state whose strings it owns;
 * release with vw_state_free (also after a failed read). Thread-safety: none
 * needed. Errors: an invalid state returns VW_EINVAL with the user-facing
 * message of §1.2 in msg (a 422 value_error at ["body","state"]); VW_ENOMEM.
 */
#ifndef VW_STATE_H
#define VW_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json_in.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vw_role {
    VW_ROLE_USER = 0,
    VW_ROLE_CONTEXT = 1,
    VW_ROLE_ANSWER = 2,
} vw_role;
#define VW_N_ROLES 3

/* "user", "context", "answer". */
const char *vw_role_name(vw_role r);

typedef struct vw_part {
    vw_role role;
    char *text; /* [len] UTF-8, may contain U+0000 */
    size_t len;
    size_t n_cp; /* Python len(text) */
} vw_part;

typedef struct vw_field {
    char *key; /* the state key as written (NUL-free: JSON object keys) */
    vw_role role;
    int64_t start, end; /* code points inside the role's part */
} vw_field;

typedef struct vw_state {
    vw_part parts[VW_N_ROLES]; /* n_parts of them, in role order */
    size_t n_parts;
    vw_field *fields;
    size_t n_fields, cap_fields;
    vw_field **by_key; /* [n_fields] the fields sorted by key (vw_state_field) */
} vw_state;

/* msg receives the §1.2 message on VW_EINVAL (msg_cap bytes). */
vw_status vw_state_read(vw_jref state, vw_state *out, char *msg, size_t msg_cap, vw_err *err);
void vw_state_free(vw_state *st);

/* The part of a role, or NULL when the state has none. */
const vw_part *vw_state_part(const vw_state *st, vw_role r);
/* The field named key (exact, case-sensitive), or NULL. */
const vw_field *vw_state_field(const vw_state *st, const char *key);

/* The role a known state key name maps to (exact lower-case name), or -1. */
int vw_state_known_key(const char *key);

#ifdef __cplusplus
}
#endif
#endif
