// Step 4, beyond the seeds: 2D thread coarsening with float4 memory access (the rung after
// 04_coarse_2d.metal; same tiles, same thread-to-output map, only the access width changes).
// A threadgroup of (BM/TM)*(BN/TN) threads owns a BM x BN tile of C; thread tid owns the
// TM x TN block at rows tRow = (tid / (BN/TN)) * TM and columns tCol = (tid % (BN/TN)) * TN.
// Per K-step every thread loads float4 groups of op(A) and op(B) from device memory (along
// the stored matrix's contiguous axis, so transposes are read vectorized too) and stores them
// to threadgroup memory: op(A) transposed (As[k][m], so the inner loop reads TM consecutive m
// as TM/4 float4s), op(B) as is. In the inner loop the TM values of A and TN values of B held
// in float4 registers feed TM*TN multiply-adds as TM*TN/4 float4 FMAs; the epilogue writes C
// in float4s. Tile rows are dense here (stride BM/4, BN/4 float4s): the next rung,
// 04_coarse_2d_vec4_swizzled.metal, changes only that layout. Building blocks: gemm_vec4.h.
// Constraints: none. float4 device accesses need lda/ldb/ldc % 4 == 0 (tested per dispatch,
// groups that cross an edge are read per element), so any shape and leading dimension work.
// Instances: 64x64 tile, BK 16, 4x4 per thread; 128x128 tile, BK 8, 8x8 per thread; 256
// threads each, one float4 of A and one of B per thread per K-step.
#include <metal_stdlib>
#include "gemm_common.h"
#include "gemm_vec4.h"
using namespace metal;

template <uint BM, uint BN, uint BK, uint TM, uint TN>
kernel void matmul_coarse2d_vec4(device const float* A [[buffer(0)]],
                                 device const float* B [[buffer(1)]],
                                 device float* C [[buffer(2)]],
                                 constant GemmParams& p [[buffer(3)]],
                                 uint2 block_pos [[threadgroup_position_in_grid]],
                                 uint tid [[thread_index_in_threadgroup]]) {
    using Layout = TileLayoutDense<BM, BN>;
    constexpr uint THREADS = (BM / TM) * (BN / TN);
    constexpr uint NA = BM * BK / (4 * THREADS), NB = BK * BN / (4 * THREADS);
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 groups");
    static_assert(NA * 4 * THREADS == BM * BK && NB * 4 * THREADS == BK * BN,
                  "every thread stages the same number of float4 groups");
    threadgroup float4 As[BK * Layout::a_stride4];  // op(A)^T: BK rows of BM floats
    threadgroup float4 Bs[BK * Layout::b_stride4];  // op(B):   BK rows of BN floats

    const uint row0 = block_pos.y * BM, col0 = block_pos.x * BN;
    const uint tRow = (tid / (BN / TN)) * TM, tCol = (tid % (BN / TN)) * TN;
    const bool vec_a = p.lda % 4 == 0, vec_b = p.ldb % 4 == 0, vec_c = p.ldc % 4 == 0;

    float4 acc[TM * TN / 4];
    for (uint i = 0; i < TM * TN / 4; ++i) acc[i] = float4(0.0f);
    float4 a_regs[NA], b_regs[NB];

    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        load_a_groups<BM, BK, THREADS>(A, p, row0, k0, tid, vec_a, a_regs);
        load_b_groups<BK, BN, THREADS>(B, p, k0, col0, tid, vec_b, b_regs);
        store_a_groups<BM, BK, THREADS, Layout>(As, p, tid, a_regs);
        store_b_groups<BK, BN, THREADS, Layout>(Bs, p, tid, b_regs);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        multiply_tiles<BK, TM, TN, Layout>(As, Bs, tRow, tCol, acc);
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (uint i = 0; i < TM; ++i)
        for (uint j = 0; j < TN / 4; ++j)
            gemm_store4_checked(C, p, row0 + tRow + i, col0 + tCol + 4 * j, acc[i * (TN / 4) + j],
                                vec_c);
}

template [[host_name("matmul_coarse2d_vec4_64x64_k16_4x4")]] [[kernel]]
decltype(matmul_coarse2d_vec4<64, 64, 16, 4, 4>) matmul_coarse2d_vec4<64, 64, 16, 4, 4>;
template [[host_name("matmul_coarse2d_vec4_128x128_k8_8x8")]] [[kernel]]
decltype(matmul_coarse2d_vec4<128, 128, 8, 8, 8>) matmul_coarse2d_vec4<128, 128, 8, 8, 8>;
