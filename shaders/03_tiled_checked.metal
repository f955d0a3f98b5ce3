// Steps 2-3, seed 003: threadgroup tiling with bounds checks, for any shape. A TILE x TILE
// threadgroup owns a TILE x TILE tile of C, one element per thread (x -> column, y -> row).
// Each phase stages a TILE x TILE tile of op(A) and of op(B), zero-filled past the matrix
// edges, so every thread (also those outside C) takes part in both barriers; only the store
// is guarded. Each staged value is reused TILE times from threadgroup memory.
// Constraints: none. TILE = 8, 16, 32 (TILE * TILE threads, at most 1024).
#include <metal_stdlib>
#include "gemm_common.h"
using namespace metal;

template <uint TILE>
kernel void matmul_tiled(device const float* A [[buffer(0)]],
                         device const float* B [[buffer(1)]],
                         device float* C [[buffer(2)]],
                         constant GemmParams& p [[buffer(3)]],
                         uint2 tid [[thread_position_in_threadgroup]],
                         uint2 tg [[threadgroup_position_in_grid]]) {
    threadgroup float As[TILE][TILE];
    threadgroup float Bs[TILE][TILE];

    const uint row = tg.y * TILE + tid.y;
    const uint col = tg.x * TILE + tid.x;
    float sum = 0.0f;

    for (uint kk = 0; kk < p.K; kk += TILE) {
        As[tid.y][tid.x] = gemm_a_or0(A, p, row, kk + tid.x);
        Bs[tid.y][tid.x] = gemm_b_or0(B, p, kk + tid.y, col);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < TILE; ++k) {
            sum += As[tid.y][k] * Bs[k][tid.x];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    gemm_store_checked(C, p, row, col, sum);
}

template [[host_name("matmul_tiled_8")]] [[kernel]] decltype(matmul_tiled<8>) matmul_tiled<8>;
template [[host_name("matmul_tiled_16")]] [[kernel]] decltype(matmul_tiled<16>) matmul_tiled<16>;
template [[host_name("matmul_tiled_32")]] [[kernel]] decltype(matmul_tiled<32>) matmul_tiled<32>;
