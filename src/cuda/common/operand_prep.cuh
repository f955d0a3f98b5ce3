// Operand preparation for the wgmma rungs, run on the stream before the GEMM:
// pack op(X) densely with 16-byte aligned rows (when an operand is transposed or its
// rows are not aligned for TMA) and write the TF32 small parts of an operand (fp32x3).
// Both are one pass over the operand: O(size) next to the GEMM's O(size^1.5).
#pragma once

#include <cuda_runtime.h>

#include "cuda/common/device_operands.hpp"
#include "cuda/common/workspace.hpp"

namespace fastgemm {
namespace cuda {

// copy: dst = op(src). small (fp32x3): dst_small = the TF32 small part of each
// element, tf32(x - tf32(x)) (split_tf32, device_common.cuh), and dst, when not null,
// = op(src) as it is: a TMA map rounds that to the big part on the way to shared memory
// (TmaElement::tf32, the same rounding as to_tf32).
enum class PrepMode { copy, small };

// Writes op(src) as rows x cols, row stride ld_dst, in the form `mode` says. src is
// stored rows x cols (ld_src) or, when `trans`, cols x rows. A non-null `zero` is set to
// 0 in stream order by the pass itself, one launch fewer than a memset: fp32x3's
// fallback count, which the GEMM queued after the pass appends to.
void prepare_operand(const float* src, int64_t ld_src, bool trans, int64_t rows, int64_t cols, float* dst,
                     float* dst_small, int64_t ld_dst, PrepMode mode, cudaStream_t stream, int* zero = nullptr);

inline bool tma_ready(const float* p, int64_t ld) {
    return ld % 4 == 0 && reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// op(src) (rows x cols) as TMA reads it: untransposed rows starting on 16 bytes. Returns
// src itself when it already is (ld unchanged), else a packed copy in workspace slot
// `slot` (ld = cols rounded up to 4).
const float* tma_readable(const float* src, int64_t& ld, bool trans, int64_t rows, int64_t cols, Workspace& ws,
                          int slot, cudaStream_t stream);

}  // namespace cuda
}  // namespace fastgemm
