// A skinny problem in its own terms, shared by the skinny rungs (14_skinny.cu, strict
// FFMA; 14_skinny_fp32x3.cu, fp32x3 on mma.sync): Out(i, j) = sum_k Y(i, k) X(j, k) with
// i < S, the small dimension, and j < L, the large one. With the small side M, Y = op(A)
// and X = op(B)^T; with the small side N, Y = op(B)^T and X = op(A). So one kernel serves
// every transpose: what differs is only whether X's rows run along k (x @ W^T with W
// stored N x K, PyTorch Linear's layout) or along j.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/common/device_operands.hpp"
#include "cuda/common/split_k.cuh"
#include "cuda/common/workspace.hpp"

namespace fastgemm {
namespace cuda {

// Element (a, b) of an operand at base[a * s0 + b * s1].
struct SkinnyOperands {
    const float* X = nullptr;  // L x K: X(j, k)
    int64_t xs_j = 0, xs_k = 0;
    const float* Y = nullptr;  // S x K: Y(i, k)
    int64_t ys_i = 0, ys_k = 0;
    float* out = nullptr;  // S x L: C, or the slabs of the splits (split s at out + s * os_split)
    int64_t os_i = 0, os_j = 0, os_split = 0;
    int64_t S = 0, L = 0, K = 0;
    float alpha = 1.0f, beta = 0.0f;
    int splits = 1, chunks = 0;  // k chunks of the kernel's chunk length, dealt to the splits
};

// The problem in skinny terms: small_is_m, S = M (Y = op(A), X(j, k) = op(B)(k, j));
// else S = N (Y(i, k) = op(B)(k, i), X = op(A)).
SkinnyOperands skinny_view(const DeviceOperands& p, bool small_is_m);

// X's rows run along k (xs_k == 1). With K == 1 or L == 1 both strides may be 1, and
// either reading is right.
inline bool rows_along_k(const SkinnyOperands& o) { return o.xs_k == 1; }

inline bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// Every row of X starts on 16 bytes, so it can be read in 16-byte loads.
inline bool x_rows_aligned16(const SkinnyOperands& o) {
    return rows_along_k(o) ? aligned16(o.X) && o.xs_j % 4 == 0 : aligned16(o.X) && o.xs_k % 4 == 0 && o.xs_j == 1;
}

// Y as the GEMV kernels read it: rows contiguous along k, each starting on 16 bytes.
// Any other Y is copied so into workspace slot 0 or 2 (as Y is op(A) or op(B)) first.
void make_y_contiguous(SkinnyOperands& o, cudaStream_t stream, Workspace& ws, bool small_is_m);

// Points o at the slabs of o.splits splits (C's layout, alpha 1, beta 0), which
// reduce_split_k then sums into C, and returns them.
SplitKSlabs park_in_slabs(SkinnyOperands& o, const Problem& q, Workspace& ws, bool small_is_m);

__device__ __forceinline__ void prefetch_l2(const float* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

}  // namespace cuda
}  // namespace fastgemm
