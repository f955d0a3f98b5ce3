// Step 4 (seed 000 kernel 4): 1D thread coarsening. A 512-thread threadgroup owns a 64x64
// tile of C; thread tid owns the 8 elements of column tCol = tid % 64 in rows
// tRow*8 .. tRow*8+7 (tRow = tid / 64). Per phase every thread copies one element of the
// 64x8 tile of op(A) and one of the 8x64 tile of op(B); in the inner loop one value of B_shmem,
// held in a register, feeds 8 multiply-adds (TM + 1 threadgroup loads per TM FMAs).
//   matmul_coarse1d_64x64       exact tiles: M, N multiples of 64, K a multiple of 8.
//   matmul_coarse1d_64x64_edge  the same with zero-filled staging and guarded stores: any shape.
#include <metal_stdlib>
#include "gemm_common.h"
using namespace metal;

template <uint BM, uint BN, uint BK, uint TM, bool EDGE>
kernel void matmul_coarse1d(device const float* A [[buffer(0)]],
                            device const float* B [[buffer(1)]],
                            device float* C [[buffer(2)]],
                            constant GemmParams& p [[buffer(3)]],
                            uint2 block_pos [[threadgroup_position_in_grid]],
                            uint tid [[thread_index_in_threadgroup]]) {
    static_assert(BM * BK == BM * BN / TM && BN * BK == BM * BN / TM,
                  "one element of each tile per thread");
    threadgroup float A_shmem[BM * BK];
    threadgroup float B_shmem[BK * BN];

    const uint tRow = tid / BN, tCol = tid % BN;          // owned outputs
    const uint tileRowA = tid / BK, tileColA = tid % BK;  // copied element of the A tile
    const uint tileRowB = tid / BN, tileColB = tid % BN;  // copied element of the B tile
    const uint row0 = block_pos.y * BM, col0 = block_pos.x * BN;

    float sum[TM] = {0.0f};
    for (uint ph = 0; ph < p.K; ph += BK) {
        if (EDGE) {
            A_shmem[tileRowA * BK + tileColA] = gemm_a_or0(A, p, row0 + tileRowA, ph + tileColA);
            B_shmem[tileRowB * BN + tileColB] = gemm_b_or0(B, p, ph + tileRowB, col0 + tileColB);
        } else {
            A_shmem[tileRowA * BK + tileColA] = gemm_a(A, p, row0 + tileRowA, ph + tileColA);
            B_shmem[tileRowB * BN + tileColB] = gemm_b(B, p, ph + tileRowB, col0 + tileColB);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < BK; ++k) {
            const float Btmp = B_shmem[k * BN + tCol];  // one load, reused TM times
            for (uint i = 0; i < TM; ++i) {
                sum[i] += A_shmem[(tRow * TM + i) * BK + k] * Btmp;
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (uint i = 0; i < TM; ++i) {
        if (EDGE) {
            gemm_store_checked(C, p, row0 + tRow * TM + i, col0 + tCol, sum[i]);
        } else {
            gemm_store(C, p, row0 + tRow * TM + i, col0 + tCol, sum[i]);
        }
    }
}

template [[host_name("matmul_coarse1d_64x64")]] [[kernel]]
decltype(matmul_coarse1d<64, 64, 8, 8, false>) matmul_coarse1d<64, 64, 8, 8, false>;
template [[host_name("matmul_coarse1d_64x64_edge")]] [[kernel]]
decltype(matmul_coarse1d<64, 64, 8, 8, true>) matmul_coarse1d<64, 64, 8, 8, true>;
