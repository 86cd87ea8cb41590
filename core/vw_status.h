/* vw_status.h — status codes and the error record every fallible call fills.
 *
 * Contract: a fallible function returns vw_status (VW_OK == 0) and, when given a
 * non-NULL vw_err *, describes the failure there (a stable snake_case type, a
 * human message, and the file:line that raised it). On failure, outputs are left
 * as documented by the function (usually untouched or freed). vw_err is a plain
 * value: no heap, nothing to free. Thread-safe: no shared state.
 *
 * Admission errors that are reported to users as (loc, msg, type) triples use
 * their own list (see the request module); vw_err is for programmatic failures.
 */
#ifndef VW_STATUS_H
#define VW_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vw_status {
    VW_OK = 0,
    VW_EINVAL,       /* bad input (malformed file, bad argument) */
    VW_ENOMEM,       /* allocation failed */
    VW_EIO,          /* file system or OS error */
    VW_EUNSUPPORTED, /* valid input this build does not handle (named in msg) */
    VW_ETOOLONG,     /* input exceeds a hard limit */
    VW_EINTEGRITY,   /* checksum / manifest mismatch */
    VW_ECUDA,        /* CUDA runtime or cuBLAS failure */
    VW_EKAFKA,       /* librdkafka failure */
    VW_ETRANSIENT,   /* retryable failure (executor busy, out of device memory) */
} vw_status;

typedef struct vw_err {
    vw_status status;
    char type[48];  /* stable snake_case code, e.g. "invalid_utf8" */
    char msg[512];  /* human readable, names the offending file/field/value */
    char where[96]; /* "file.c:123" of the raising site */
} vw_err;

/* Name of a status ("VW_EINVAL"); never NULL. */
const char *vw_status_name(vw_status st);

/* Fills *err (when err != NULL) and returns st, so callers can write
 *   return VW_FAIL(err, VW_EINVAL, "bad_header", "file %s: ...", path);
 * A later failure overwrites an earlier one. */
vw_status vw_err_set(vw_err *err, vw_status st, const char *type, const char *file, int line,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#define VW_FAIL(err, st, type, ...) vw_err_set((err), (st), (type), __FILE__, __LINE__, __VA_ARGS__)

/* Clears *err to the VW_OK state (err may be NULL). */
void vw_err_clear(vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
