// kernel_smem.cu — vw_cuda_kernel_smem_table (vw_cuda.h): the mixers' kernels
// and the dynamic shared memory they launch with at a backbone's widths, from
// the tables the kernel files keep for their opt-in (kernels.cuh), for
// scripts/sass-report (bench_gpu --kernel-smem). A module of its own: it reads
// attention.cu's and delta_rule.cu's tables, which use device.cu.
#include "kernels.cuh"
#include "vw_cuda.h"

extern "C" size_t vw_cuda_kernel_smem_table(const vw_qwen35_config *cfg, vw_cuda_kernel_smem *rows,
                                            size_t cap) {
    vw_qwen35_dims d;
    vw_qwen35_dims_of(cfg, &d);
    vw_cu_kernel_smem t[2 * VW_CU_SMEM_ROWS];
    size_t n = vw_cu_attn_smem_table(d.hd, d.Hk ? d.Hq / d.Hk : 1, t);
    n += vw_cu_gdn_smem_table(d.dk, d.dv, t + n);
    for (size_t i = 0; i < n && i < cap; i++)
        rows[i] = vw_cuda_kernel_smem{t[i].name, t[i].bytes};
    return n;
}
