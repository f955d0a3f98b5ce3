// Step 7 (seed 004 kernel 7): kernel 6's layout (four SIMD-groups, each a 16x16 quadrant of a
// 32x32 C tile as 2x2 simdgroup matrices) with the inputs shared through threadgroup memory:
// per 32-wide K block the 128 threads copy a 32x32 tile of op(A) and of op(B) (8 elements each,
// consecutive threads on consecutive addresses) into rows of stride 33, then every SIMD-group
// loads its 8x8 fragments from there. Barrier 1: tiles full before any fragment load;
// barrier 2: all fragments read before the next copy overwrites the tiles.
//   simdgroup_32x32_shared  M, N, K multiples of 32; alpha = 1, beta = 0; transposes and
//                           leading dimensions are handled by the staging copy.
//   simdgroup_32x32_edge    any shape: zero-filled staging, and the accumulators go through a
//                           threadgroup C tile to a bounds-checked alpha/beta epilogue.
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
#include "gemm_common.h"
using namespace metal;

constant uint SG_TILE = 32;
constant uint SG_STRIDE = 33;  // one float of padding per row (bank alignment, seed 004)

template <bool EDGE>
kernel void simdgroup_32x32_staged(device const float* a [[buffer(0)]],
                                   device const float* b [[buffer(1)]],
                                   device float* c [[buffer(2)]],
                                   constant GemmParams& p [[buffer(3)]],
                                   uint2 group [[threadgroup_position_in_grid]],
                                   uint sg [[simdgroup_index_in_threadgroup]],
                                   uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float As[SG_TILE * SG_STRIDE];
    threadgroup float Bs[SG_TILE * SG_STRIDE];
    const uint block_row = group.y * SG_TILE;
    const uint block_col = group.x * SG_TILE;
    const uint subrow = (sg / 2) * 16;
    const uint subcol = (sg % 2) * 16;
    simdgroup_float8x8 c00 = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_float8x8 c01 = c00, c10 = c00, c11 = c00;

    for (uint kb = 0; kb < p.K; kb += SG_TILE) {
        for (uint i = tid; i < SG_TILE * SG_TILE; i += 128) {
            const uint r = i / SG_TILE;
            const uint col = i % SG_TILE;
            if (EDGE) {
                As[r * SG_STRIDE + col] = gemm_a_or0(a, p, block_row + r, kb + col);
                Bs[r * SG_STRIDE + col] = gemm_b_or0(b, p, kb + r, block_col + col);
            } else {
                As[r * SG_STRIDE + col] = gemm_a(a, p, block_row + r, kb + col);
                Bs[r * SG_STRIDE + col] = gemm_b(b, p, kb + r, block_col + col);
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < SG_TILE; k += 8) {
            simdgroup_float8x8 a0, a1, b0, b1, next;
            simdgroup_load(a0, As + subrow * SG_STRIDE + k, SG_STRIDE);
            simdgroup_load(a1, As + (subrow + 8) * SG_STRIDE + k, SG_STRIDE);
            simdgroup_load(b0, Bs + k * SG_STRIDE + subcol, SG_STRIDE);
            simdgroup_load(b1, Bs + k * SG_STRIDE + subcol + 8, SG_STRIDE);
            simdgroup_multiply_accumulate(next, a0, b0, c00);
            c00 = next;
            simdgroup_multiply_accumulate(next, a0, b1, c01);
            c01 = next;
            simdgroup_multiply_accumulate(next, a1, b0, c10);
            c10 = next;
            simdgroup_multiply_accumulate(next, a1, b1, c11);
            c11 = next;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (EDGE) {
        // The A tile is free after the last barrier: reuse it as the C tile.
        simdgroup_store(c00, As + subrow * SG_STRIDE + subcol, SG_STRIDE);
        simdgroup_store(c01, As + subrow * SG_STRIDE + subcol + 8, SG_STRIDE);
        simdgroup_store(c10, As + (subrow + 8) * SG_STRIDE + subcol, SG_STRIDE);
        simdgroup_store(c11, As + (subrow + 8) * SG_STRIDE + subcol + 8, SG_STRIDE);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint i = tid; i < SG_TILE * SG_TILE; i += 128) {
            const uint r = i / SG_TILE, col = i % SG_TILE;
            gemm_store_checked(c, p, block_row + r, block_col + col, As[r * SG_STRIDE + col]);
        }
    } else {
        const uint row = block_row + subrow;
        const uint col = block_col + subcol;
        simdgroup_store(c00, c + row * p.ldc + col, p.ldc);
        simdgroup_store(c01, c + row * p.ldc + col + 8, p.ldc);
        simdgroup_store(c10, c + (row + 8) * p.ldc + col, p.ldc);
        simdgroup_store(c11, c + (row + 8) * p.ldc + col + 8, p.ldc);
    }
}

template [[host_name("simdgroup_32x32_shared")]] [[kernel]]
decltype(simdgroup_32x32_staged<false>) simdgroup_32x32_staged<false>;
template [[host_name("simdgroup_32x32_edge")]] [[kernel]]
decltype(simdgroup_32x32_staged<true>) simdgroup_32x32_staged<true>;
