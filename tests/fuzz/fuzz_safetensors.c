/* fuzz_safetensors.c — libFuzzer target: arbitrary bytes as a .safetensors
 * file (8-byte header length, JSON header, data), opened as a bundle's shard
 * is (vw_st_open maps a path: the bytes go to a memfd opened by its
 * /proc/self/fd path). Checks: VW_OK or VW_EINVAL/VW_EIO with a message and no
 * file; an opened file's tensors lie inside the mapping, hold exactly numel x
 * dtype bytes, are found by name, in offset order without overlap, and
 * convert to FP32 (F32/F16/BF16) or refuse (others) without reading past
 * their bytes. No crash, no leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/safetensors.h"

static int fd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fd = memfd_create("fuzz_safetensors", 0);
    if (fd < 0)
        abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return 0;
}

static void check_open(const vw_st_file *f) {
    size_t len = 0;
    const unsigned char *base = vw_st_bytes(f, &len), *prev_end = NULL;
    for (size_t i = 0; i < vw_st_count(f); i++) {
        const vw_st_tensor *t = vw_st_at(f, i);
        const unsigned char *d = t->data;
        if (d < base || t->nbytes > len || d + t->nbytes > base + len)
            abort();
        if (t->nbytes != t->numel * vw_dtype_size(t->dtype) || t->ndim > VW_ST_MAX_DIMS)
            abort();
        if (vw_st_find(f, t->name) != t)
            abort();
        if (prev_end && d < prev_end)
            abort();
        prev_end = d + t->nbytes;
        if (t->numel > (1u << 16))
            continue;
        float *out = malloc((t->numel ? t->numel : 1) * sizeof *out);
        if (!out)
            abort();
        vw_err err = {0};
        vw_status st = vw_st_to_f32(t, out, &err);
        int is_float = t->dtype == VW_DT_F32 || t->dtype == VW_DT_F16 || t->dtype == VW_DT_BF16;
        if (is_float ? st != VW_OK : st != VW_EUNSUPPORTED)
            abort();
        free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    vw_st_file *f = NULL;
    vw_err err = {0};
    vw_status st = vw_st_open(path, &f, &err);
    if (st == VW_OK) {
        if (!f)
            abort();
        check_open(f);
    } else if ((st != VW_EINVAL && st != VW_EIO && st != VW_ENOMEM) || f || !err.msg[0]) {
        abort();
    }
    vw_st_close(f);
    return 0;
}
