// Step 4, beyond the seeds: 04_coarse_2d_vec4.metal with a bank-conflict-avoiding threadgroup
// layout - the kernel body is the same line for line, only `Layout` differs, so the ladder
// shows what the layout alone buys. Thread tid owns the TM x TN block of C at rows
// tRow = (tid / (BN/TN)) * TM and columns tCol = (tid % (BN/TN)) * TN of the BM x BN tile;
// float4 loads of op(A) and op(B), op(A) stored transposed, TM*TN/4 float4 FMAs per k, float4
// stores of C (see 04_coarse_2d_vec4.metal and gemm_vec4.h).
// Layout (TileLayoutPadSwizzle in gemm_vec4.h): every As and Bs row padded by one float4, so
// the transposing scatter of untransposed A / transposed B, which writes rows k, k+4, ... at
// once, starts them 16 banks apart (conflict-free at BK 8, 2-way instead of 4-way at BK 16);
// and the float4 column groups of a Bs row XOR-swizzled (slot = n4 ^ bit 3 of n4), so
// that with TN = 8 the 16 distinct float4 reads of one k step use all 8 16-byte bank groups
// (2 passes instead of 4), assuming 32 four-byte banks: Apple does not publish its
// threadgroup-memory banking, so the gain is for the GPU timings to show. The inner loop and
// the stores address through Layout::b_slot; the swizzle is a permutation within each row.
// Constraints: none (any shape, any leading dimension; float4 device accesses only where
// ld % 4 == 0 and the four elements exist). Instances: 64x64 tile, BK 16, 4x4 per thread;
// 128x128 tile, BK 8, 8x8 per thread; 256 threads each.
#include <metal_stdlib>
#include "gemm_common.h"
#include "gemm_vec4.h"
using namespace metal;

template <uint BM, uint BN, uint BK, uint TM, uint TN>
kernel void matmul_coarse2d_vec4_swizzled(device const float* A [[buffer(0)]],
                                          device const float* B [[buffer(1)]],
                                          device float* C [[buffer(2)]],
                                          constant GemmParams& p [[buffer(3)]],
                                          uint2 block_pos [[threadgroup_position_in_grid]],
                                          uint tid [[thread_index_in_threadgroup]]) {
    using Layout = TileLayoutPadSwizzle<BM, BN>;  // the only change from 04_coarse_2d_vec4
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

template [[host_name("matmul_coarse2d_vec4_swizzled_64x64_k16_4x4")]] [[kernel]]
decltype(matmul_coarse2d_vec4_swizzled<64, 64, 16, 4, 4>)
    matmul_coarse2d_vec4_swizzled<64, 64, 16, 4, 4>;
template [[host_name("matmul_coarse2d_vec4_swizzled_128x128_k8_8x8")]] [[kernel]]
decltype(matmul_coarse2d_vec4_swizzled<128, 128, 8, 8, 8>)
    matmul_coarse2d_vec4_swizzled<128, 128, 8, 8, 8>;
