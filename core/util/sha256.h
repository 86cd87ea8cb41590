/* sha256.h — SHA-256 digests (OpenSSL libcrypto EVP) as lowercase hex.
 *
 * Ownership: callers own every buffer; nothing is allocated for them.
 * Thread-safety: no shared state. Errors: vw_sha256_file returns VW_EIO
 * (type "missing_file" / "bad_file") naming the path; VW_ENOMEM/VW_EIO
 * (type "crypto") when libcrypto fails.
 */
#ifndef VW_SHA256_H
#define VW_SHA256_H

#include <stddef.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { VW_SHA256_HEX = 65 }; /* 64 hex digits + NUL */

/* Digest of len bytes at p into hex[VW_SHA256_HEX]. */
vw_status vw_sha256_hex(const void *p, size_t len, char hex[VW_SHA256_HEX], vw_err *err);

/* Digest of a whole file, read in blocks (no mapping, no resident copy). */
vw_status vw_sha256_file(const char *path, char hex[VW_SHA256_HEX], vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
