// Step 1: naive. One thread owns one element C(i, j) and walks row i of op(A) and column j of
// op(B) straight from device memory; nothing is reused except by the caches.
//   matmul_naive      (seed 000): 32x32 threadgroups; x selects the column, y the row, so the
//                     32 lanes of a SIMD-group read 32 neighbouring floats of B.
//   matmul_naive_grid (seed 003): the same mapping read from thread_position_in_grid,
//                     16x16 threadgroups.
// Constraints: none (any shape, transposes, leading dimensions, alpha/beta); threads outside C
// return before touching memory.
#include <metal_stdlib>
#include "gemm_common.h"
using namespace metal;

kernel void matmul_naive(device const float* A [[buffer(0)]],
                         device const float* B [[buffer(1)]],
                         device float* C [[buffer(2)]],
                         constant GemmParams& p [[buffer(3)]],
                         uint2 block_pos [[threadgroup_position_in_grid]],
                         uint2 thread_pos [[thread_position_in_threadgroup]],
                         uint2 threads_per_group [[threads_per_threadgroup]]) {
    const uint j = block_pos.x * threads_per_group.x + thread_pos.x;  // column
    const uint i = block_pos.y * threads_per_group.y + thread_pos.y;  // row
    if (i < p.M && j < p.N) {
        float sum = 0.0f;
        for (uint k = 0; k < p.K; ++k) {
            sum += gemm_a(A, p, i, k) * gemm_b(B, p, k, j);
        }
        gemm_store(C, p, i, j, sum);
    }
}

kernel void matmul_naive_grid(device const float* A [[buffer(0)]],
                              device const float* B [[buffer(1)]],
                              device float* C [[buffer(2)]],
                              constant GemmParams& p [[buffer(3)]],
                              uint2 gid [[thread_position_in_grid]]) {
    const uint col = gid.x;
    const uint row = gid.y;
    if (row >= p.M || col >= p.N) return;
    float sum = 0.0f;
    for (uint k = 0; k < p.K; ++k) {
        sum += gemm_a(A, p, row, k) * gemm_b(B, p, k, col);
    }
    gemm_store(C, p, row, col, sum);
}
