/* sha256.c — SHA-256 through libcrypto's EVP interface (see sha256.h). */
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void to_hex(const unsigned char *d, unsigned n, char *hex) {
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < n; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[2 * n] = '\0';
}

vw_status vw_sha256_hex(const void *p, size_t len, char hex[VW_SHA256_HEX], vw_err *err) {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (!EVP_Digest(p, len, d, &n, EVP_sha256(), NULL) || n != 32)
        return VW_FAIL(err, VW_EIO, "crypto", "EVP_Digest(sha256) failed");
    to_hex(d, n, hex);
    return VW_OK;
}

vw_status vw_sha256_file(const char *path, char hex[VW_SHA256_HEX], vw_err *err) {
    enum { BLOCK = 1 << 20 };
    vw_status st = VW_OK;
    unsigned char *buf = NULL;
    EVP_MD_CTX *ctx = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return VW_FAIL(err, VW_EIO, "missing_file", "%s: %s", path, strerror(errno));
    buf = malloc(BLOCK);
    ctx = EVP_MD_CTX_new();
    if (!buf || !ctx) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "hashing %s", path);
        goto done;
    }
    if (!EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
        st = VW_FAIL(err, VW_EIO, "crypto", "EVP_DigestInit_ex(sha256) failed");
        goto done;
    }
    for (;;) {
        ssize_t r = read(fd, buf, BLOCK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            st = VW_FAIL(err, VW_EIO, "bad_file", "%s: read: %s", path, strerror(errno));
            goto done;
        }
        if (r == 0)
            break;
        if (!EVP_DigestUpdate(ctx, buf, (size_t)r)) {
            st = VW_FAIL(err, VW_EIO, "crypto", "EVP_DigestUpdate failed on %s", path);
            goto done;
        }
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (!EVP_DigestFinal_ex(ctx, d, &n) || n != 32) {
        st = VW_FAIL(err, VW_EIO, "crypto", "EVP_DigestFinal_ex failed on %s", path);
        goto done;
    }
    to_hex(d, n, hex);
done:
    EVP_MD_CTX_free(ctx);
    free(buf);
    close(fd);
    return st;
}
