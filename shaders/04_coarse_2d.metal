// Step 4, beyond the seeds: 2D thread coarsening. A threadgroup of (BM/TM)*(BN/TN) threads owns a
// BM x BN tile of C; thread tid owns the TM x TN block at rows (tid / (BN/TN)) * TM and columns
// (tid % (BN/TN)) * TN of it. Per phase the threads stage a BM x BK tile of op(A) - stored
// transposed (As[k][m]) with one float of padding per row, so the inner loop reads TM
// consecutive floats - and a BK x BN tile of op(B), zero-filled past the edges. In the inner
// loop TM values of A and TN values of B held in registers feed TM*TN multiply-adds: both
// inputs are reused in registers (compare 1D coarsening, which reuses only B).
// Constraints: none (any shape). Instances: 64x64 tile, BK 16, 4x4 per thread (256 threads);
// 128x128 tile, BK 8, 8x8 per thread (256 threads).
#include <metal_stdlib>
#include "gemm_common.h"
using namespace metal;

template <uint BM, uint BN, uint BK, uint TM, uint TN>
kernel void matmul_coarse2d(device const float* A [[buffer(0)]],
                            device const float* B [[buffer(1)]],
                            device float* C [[buffer(2)]],
                            constant GemmParams& p [[buffer(3)]],
                            uint2 block_pos [[threadgroup_position_in_grid]],
                            uint tid [[thread_index_in_threadgroup]]) {
    constexpr uint THREADS = (BM / TM) * (BN / TN);
    threadgroup float As[BK][BM + 1];  // op(A) tile, transposed and padded
    threadgroup float Bs[BK][BN];
    const uint row0 = block_pos.y * BM, col0 = block_pos.x * BN;
    const uint tRow = (tid / (BN / TN)) * TM, tCol = (tid % (BN / TN)) * TN;

    float acc[TM][TN];
    for (uint i = 0; i < TM; ++i)
        for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float a_reg[TM], b_reg[TN];

    for (uint kk = 0; kk < p.K; kk += BK) {
        for (uint e = tid; e < BM * BK; e += THREADS) {
            const uint m = e / BK, k = e % BK;  // consecutive threads walk k of one row of A
            As[k][m] = gemm_a_or0(A, p, row0 + m, kk + k);
        }
        for (uint e = tid; e < BK * BN; e += THREADS) {
            const uint k = e / BN, n = e % BN;  // consecutive threads walk a row of B
            Bs[k][n] = gemm_b_or0(B, p, kk + k, col0 + n);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < BK; ++k) {
            for (uint i = 0; i < TM; ++i) a_reg[i] = As[k][tRow + i];
            for (uint j = 0; j < TN; ++j) b_reg[j] = Bs[k][tCol + j];
            for (uint i = 0; i < TM; ++i)
                for (uint j = 0; j < TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (uint i = 0; i < TM; ++i)
        for (uint j = 0; j < TN; ++j)
            gemm_store_checked(C, p, row0 + tRow + i, col0 + tCol + j, acc[i][j]);
}

template [[host_name("matmul_coarse2d_64x64_k16_4x4")]] [[kernel]]
decltype(matmul_coarse2d<64, 64, 16, 4, 4>) matmul_coarse2d<64, 64, 16, 4, 4>;
template [[host_name("matmul_coarse2d_128x128_k8_8x8")]] [[kernel]]
decltype(matmul_coarse2d<128, 128, 8, 8, 8>) matmul_coarse2d<128, 128, 8, 8, 8>;
