/* safetensors.h — read-only access to one .safetensors file through mmap.
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON
 * {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
 * then the data section; offsets are relative to the data section.
 * vw_st_open validates everything before returning: the header length fits
 * the file and VW_ST_MAX_HEADER, the JSON parses, every entry has a known dtype, a shape of at most
 * VW_ST_MAX_DIMS non-negative dims, offsets inside the data section, a byte
 * size equal to elements x dtype size, and no two tensors overlap. A file
 * that fails any check is refused with VW_EINVAL, type "bad_safetensors",
 * and a message naming the file and the offending tensor.
 *
 * Ownership: vw_st_open returns a vw_st_file the caller releases with
 * vw_st_close; tensor views (vw_st_tensor, their names and data pointers)
 * borrow from it and die with it. Thread-safety: an open file is immutable;
 * concurrent readers are fine. vw_st_drop_pages only hints the kernel.
 */
#ifndef VW_SAFETENSORS_H
#define VW_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { VW_ST_MAX_DIMS = 8 };

/* The largest header accepted (real ones are < 1 MiB: a 9B shard's is about
 * 100 KiB). It is parsed whole as JSON, which costs about 30 times its size:
 * the format's own 100 MB ceiling would let one file take 3 GB. */
#define VW_ST_MAX_HEADER ((uint64_t)16 << 20)

typedef enum vw_dtype {
    VW_DT_F32 = 0,
    VW_DT_F16,
    VW_DT_BF16,
    VW_DT_F64,
    VW_DT_I64,
    VW_DT_I32,
    VW_DT_I16,
    VW_DT_I8,
    VW_DT_U8,
    VW_DT_BOOL,
} vw_dtype;

typedef struct vw_st_tensor {
    const char *name;
    vw_dtype dtype;
    int ndim;                      /* 0 for a scalar */
    int64_t shape[VW_ST_MAX_DIMS]; /* [ndim] */
    size_t numel;                  /* product of shape (1 for a scalar) */
    const void *data;              /* little-endian, unaligned in general */
    size_t nbytes;
} vw_st_tensor;

typedef struct vw_st_file vw_st_file;

/* "F32", "BF16", ...; never NULL. */
const char *vw_dtype_name(vw_dtype dt);
/* Bytes per element. */
size_t vw_dtype_size(vw_dtype dt);

/* Maps and validates path. Refuses a header that lies about its length, bad
 * JSON, unknown dtypes, out-of-range or overlapping offsets. */
vw_status vw_st_open(const char *path, vw_st_file **out, vw_err *err);
/* Releases the mapping; NULL is a no-op. */
void vw_st_close(vw_st_file *f);

/* Tensors in data-offset order. */
size_t vw_st_count(const vw_st_file *f);
const vw_st_tensor *vw_st_at(const vw_st_file *f, size_t i);
/* Exact-name lookup, or NULL. */
const vw_st_tensor *vw_st_find(const vw_st_file *f, const char *name);
/* The mapped file (all of it, header included), e.g. for hashing. */
const void *vw_st_bytes(const vw_st_file *f, size_t *len);
const char *vw_st_path(const vw_st_file *f);

/* Converts t (F32, F16 or BF16) to n = t->numel floats at dst (caller-owned).
 * Other dtypes -> VW_EUNSUPPORTED naming the tensor. Exact: BF16/F16 -> F32
 * is lossless. */
vw_status vw_st_to_f32(const vw_st_tensor *t, float *dst, vw_err *err);

/* Tells the kernel the pages backing t (or the whole file when t is NULL)
 * are not needed now, so they leave this process's resident set after the
 * weights were upcast. The mapping stays valid (pages fault back in). */
void vw_st_drop_pages(const vw_st_file *f, const vw_st_tensor *t);

/* Scalar conversions, exposed for tests and for other readers. */
float vw_bf16_to_f32(uint16_t h);
float vw_f16_to_f32(uint16_t h);

#ifdef __cplusplus
}
#endif
#endif
