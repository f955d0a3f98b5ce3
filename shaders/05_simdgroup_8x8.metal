// Step 5 (seed 004 kernel 5): one SIMD-group (32 threads) per threadgroup owns one 8x8 tile of C
// as a simdgroup_float8x8 accumulator. At each k step it loads an 8x8 tile of A and one of B
// straight from device memory and multiply-accumulates; no threadgroup memory, no barriers.
// Which lane holds which element is up to the hardware; the matrix calls are collective and
// executed uniformly by all 32 lanes.
// Constraints: M, N, K multiples of 8; no transposes; alpha = 1, beta = 0 (the store writes
// the raw accumulator); lda, ldb, ldc are honoured.
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
#include "gemm_common.h"
using namespace metal;

kernel void simdgroup_8x8(device const float* a [[buffer(0)]],
                          device const float* b [[buffer(1)]],
                          device float* c [[buffer(2)]],
                          constant GemmParams& p [[buffer(3)]],
                          uint2 group [[threadgroup_position_in_grid]]) {
    const uint row = group.y * 8;
    const uint col = group.x * 8;
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint k = 0; k < p.K; k += 8) {
        simdgroup_float8x8 ta, tb, next;
        simdgroup_load(ta, a + row * p.lda + k, p.lda);
        simdgroup_load(tb, b + k * p.ldb + col, p.ldb);
        simdgroup_multiply_accumulate(next, ta, tb, acc);
        acc = next;
    }
    simdgroup_store(acc, c + row * p.ldc + col, p.ldc);
}
