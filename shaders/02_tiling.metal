// Steps 2-3: threadgroup tiling (seed 000 kernels 2 and 3). A T x T threadgroup owns a T x T
// tile of C, one element per thread (thread (x, y) -> C(row0 + y, col0 + x)). Per phase every
// thread copies one element of a T x T tile of op(A) and one of op(B) into threadgroup memory;
// after a barrier each thread reads T values of each tile, so every loaded value is reused T
// times from threadgroup memory. The second barrier keeps the next phase from overwriting a
// tile that slower SIMD-groups are still reading.
// Constraints: M, N, K multiples of T (no edge handling; see 03_tiled_checked.metal).
#include <metal_stdlib>
#include "gemm_common.h"
using namespace metal;

template <uint T>
kernel void matmul_tiling(device const float* A [[buffer(0)]],
                          device const float* B [[buffer(1)]],
                          device float* C [[buffer(2)]],
                          constant GemmParams& p [[buffer(3)]],
                          uint2 block_pos [[threadgroup_position_in_grid]],
                          uint2 thread_pos [[thread_position_in_threadgroup]]) {
    threadgroup float A_shmem[T * T];
    threadgroup float B_shmem[T * T];
    const uint tRow = thread_pos.y;
    const uint tCol = thread_pos.x;
    const uint row = block_pos.y * T + tRow;
    const uint col = block_pos.x * T + tCol;

    float sum = 0.0f;
    for (uint ph = 0; ph < p.K; ph += T) {
        A_shmem[tRow * T + tCol] = gemm_a(A, p, row, ph + tCol);
        B_shmem[tRow * T + tCol] = gemm_b(B, p, ph + tRow, col);
        threadgroup_barrier(mem_flags::mem_threadgroup);  // both tiles are full
        for (uint k = 0; k < T; ++k) {
            sum += A_shmem[tRow * T + k] * B_shmem[k * T + tCol];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);  // everyone is done reading
    }
    gemm_store(C, p, row, col, sum);
}

template [[host_name("matmul_tiling_16")]] [[kernel]] decltype(matmul_tiling<16>) matmul_tiling<16>;
template [[host_name("matmul_tiling_32")]] [[kernel]] decltype(matmul_tiling<32>) matmul_tiling<32>;
