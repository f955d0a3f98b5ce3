// Step 6 (seed 004 kernel 6): four SIMD-groups (128 threads) own a 32x32 tile of C; SIMD-group
// sg owns the 16x16 quadrant (sg / 2, sg % 2) as four 8x8 accumulators. Per k step it loads two
// 8x8 tiles of A and two of B from device memory; each loaded tile feeds two
// multiply-accumulates (4 MMAs per 4 loads instead of 1 per 2).
// Constraints: M, N multiples of 32, K a multiple of 8; no transposes; alpha = 1, beta = 0.
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
#include "gemm_common.h"
using namespace metal;

kernel void simdgroup_32x32(device const float* a [[buffer(0)]],
                            device const float* b [[buffer(1)]],
                            device float* c [[buffer(2)]],
                            constant GemmParams& p [[buffer(3)]],
                            uint2 group [[threadgroup_position_in_grid]],
                            uint sg [[simdgroup_index_in_threadgroup]]) {
    const uint row = group.y * 32 + (sg / 2) * 16;
    const uint col = group.x * 32 + (sg % 2) * 16;
    simdgroup_float8x8 c00 = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_float8x8 c01 = c00, c10 = c00, c11 = c00;
    for (uint k = 0; k < p.K; k += 8) {
        simdgroup_float8x8 a0, a1, b0, b1, next;
        simdgroup_load(a0, a + row * p.lda + k, p.lda);
        simdgroup_load(a1, a + (row + 8) * p.lda + k, p.lda);
        simdgroup_load(b0, b + k * p.ldb + col, p.ldb);
        simdgroup_load(b1, b + k * p.ldb + col + 8, p.ldb);
        simdgroup_multiply_accumulate(next, a0, b0, c00);
        c00 = next;
        simdgroup_multiply_accumulate(next, a0, b1, c01);
        c01 = next;
        simdgroup_multiply_accumulate(next, a1, b0, c10);
        c10 = next;
        simdgroup_multiply_accumulate(next, a1, b1, c11);
        c11 = next;
    }
    simdgroup_store(c00, c + row * p.ldc + col, p.ldc);
    simdgroup_store(c01, c + row * p.ldc + col + 8, p.ldc);
    simdgroup_store(c10, c + (row + 8) * p.ldc + col, p.ldc);
    simdgroup_store(c11, c + (row + 8) * p.ldc + col + 8, p.ldc);
}
