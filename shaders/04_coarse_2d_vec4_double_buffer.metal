// Step 4, beyond the seeds: 04_coarse_2d_vec4_swizzled.metal with double-buffered tiles - the
// same tiles, thread-to-output map, float4 accesses and padded/swizzled layout; only the K loop
// is pipelined. Thread tid owns the TM x TN block of C at rows tRow = (tid / (BN/TN)) * TM and
// columns tCol = (tid % (BN/TN)) * TN of the BM x BN tile.
// Two threadgroup buffers per operand. Before step t computes on buffer t % 2, each thread
// issues its float4 device loads of K-tile t+1 into registers; they are in flight while the
// TM*TN/4 float4 FMAs per k run, and land in buffer (t+1) % 2 afterwards. One barrier per
// K-step suffices: buffer (t+1) % 2 was last read in step t-1, whose reads all precede the
// barrier that ended step t-1, and the barrier that ends step t orders these writes before
// step t+1 reads them (and step t's reads of buffer t % 2 before step t+1 overwrites it).
// Compared with the single-buffered rung: half the barriers, and the device loads' latency
// can overlap the arithmetic, for twice the threadgroup memory (64x64/BK16: 17 KiB,
// 128x128/BK8: 16.5 KiB) and NA + NB float4 registers live across the multiply.
// Constraints: none (any shape, any leading dimension; float4 device accesses only where
// ld % 4 == 0 and the four elements exist). Instances: 64x64 tile, BK 16, 4x4 per thread;
// 128x128 tile, BK 8, 8x8 per thread; 256 threads each. Building blocks: gemm_vec4.h.
#include <metal_stdlib>
#include "gemm_common.h"
#include "gemm_vec4.h"
using namespace metal;

template <uint BM, uint BN, uint BK, uint TM, uint TN>
kernel void matmul_coarse2d_vec4_db(device const float* A [[buffer(0)]],
                                    device const float* B [[buffer(1)]],
                                    device float* C [[buffer(2)]],
                                    constant GemmParams& p [[buffer(3)]],
                                    uint2 block_pos [[threadgroup_position_in_grid]],
                                    uint tid [[thread_index_in_threadgroup]]) {
    using Layout = TileLayoutPadSwizzle<BM, BN>;
    constexpr uint THREADS = (BM / TM) * (BN / TN);
    constexpr uint NA = BM * BK / (4 * THREADS), NB = BK * BN / (4 * THREADS);
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 groups");
    static_assert(NA * 4 * THREADS == BM * BK && NB * 4 * THREADS == BK * BN,
                  "every thread stages the same number of float4 groups");
    threadgroup float4 As[2][BK * Layout::a_stride4];  // op(A)^T: BK rows of BM floats, x2
    threadgroup float4 Bs[2][BK * Layout::b_stride4];  // op(B):   BK rows of BN floats, x2

    const uint row0 = block_pos.y * BM, col0 = block_pos.x * BN;
    const uint tRow = (tid / (BN / TN)) * TM, tCol = (tid % (BN / TN)) * TN;
    const bool vec_a = p.lda % 4 == 0, vec_b = p.ldb % 4 == 0, vec_c = p.ldc % 4 == 0;
    const uint steps = (p.K + BK - 1) / BK;  // uniform: every thread runs every barrier

    float4 acc[TM * TN / 4];
    for (uint i = 0; i < TM * TN / 4; ++i) acc[i] = float4(0.0f);
    float4 a_regs[NA], b_regs[NB];

    if (steps > 0) {  // prologue: K-tile 0 into buffer 0
        load_a_groups<BM, BK, THREADS>(A, p, row0, 0, tid, vec_a, a_regs);
        load_b_groups<BK, BN, THREADS>(B, p, 0, col0, tid, vec_b, b_regs);
        store_a_groups<BM, BK, THREADS, Layout>(As[0], p, tid, a_regs);
        store_b_groups<BK, BN, THREADS, Layout>(Bs[0], p, tid, b_regs);
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (uint t = 0; t < steps; ++t) {
        const uint cur = t % 2;
        const bool next = t + 1 < steps;
        if (next) {  // device loads of K-tile t+1, consumed after the multiply
            load_a_groups<BM, BK, THREADS>(A, p, row0, (t + 1) * BK, tid, vec_a, a_regs);
            load_b_groups<BK, BN, THREADS>(B, p, (t + 1) * BK, col0, tid, vec_b, b_regs);
        }
        multiply_tiles<BK, TM, TN, Layout>(As[cur], Bs[cur], tRow, tCol, acc);
        if (next) {
            store_a_groups<BM, BK, THREADS, Layout>(As[cur ^ 1], p, tid, a_regs);
            store_b_groups<BK, BN, THREADS, Layout>(Bs[cur ^ 1], p, tid, b_regs);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (uint i = 0; i < TM; ++i)
        for (uint j = 0; j < TN / 4; ++j)
            gemm_store4_checked(C, p, row0 + tRow + i, col0 + tCol + 4 * j, acc[i * (TN / 4) + j],
                                vec_c);
}

template [[host_name("matmul_coarse2d_vec4_db_64x64_k16_4x4")]] [[kernel]]
decltype(matmul_coarse2d_vec4_db<64, 64, 16, 4, 4>) matmul_coarse2d_vec4_db<64, 64, 16, 4, 4>;
template [[host_name("matmul_coarse2d_vec4_db_128x128_k8_8x8")]] [[kernel]]
decltype(matmul_coarse2d_vec4_db<128, 128, 8, 8, 8>) matmul_coarse2d_vec4_db<128, 128, 8, 8, 8>;
