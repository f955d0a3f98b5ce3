// Step 9 (seed 004 kernel 9): matmul2d over K in BK-wide chunks. As in kernel 8, four
// SIMD-groups own a TM x TN tile of C, but the kernel owns the K loop: each op.run adds one
// TM x BK by BK x TN product into a cooperative destination tensor (the accumulator, spread
// over the 128 threads' registers in MPP's layout), and a threadgroup_barrier(mem_none) before
// every chunk keeps the SIMD-groups within one chunk of each other so that they read nearby
// parts of A and B (Apple's guidance; there is no shared tile to protect, hence mem_none).
// C is written once, after the last chunk.
// Constraints: M % TM == 0, N % TN == 0, K % BK == 0 (static slices, no edge path); no
// transposes; alpha = 1, beta = 0. Tiles 64x64, 64x128, 128x128 x BK 256, 512, 1024 (seed 004
// sweep). Needs Metal 4.
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
#include "gemm_common.h"
using namespace metal;
using namespace mpp::tensor_ops;

template <int TM, int TN, int BK>
kernel void matmul_tensorops_sync(device const float* a [[buffer(0)]],
                                  device const float* b [[buffer(1)]],
                                  device float* c [[buffer(2)]],
                                  constant GemmParams& p [[buffer(3)]],
                                  uint2 group [[threadgroup_position_in_grid]]) {
    auto A = tensor<device const float, dextents<int, 2>, tensor_inline>(
        a, dextents<int, 2>((int)p.K, (int)p.M), array<int, 2>{1, (int)p.lda});
    auto B = tensor<device const float, dextents<int, 2>, tensor_inline>(
        b, dextents<int, 2>((int)p.N, (int)p.K), array<int, 2>{1, (int)p.ldb});
    auto C = tensor<device float, dextents<int, 2>, tensor_inline>(
        c, dextents<int, 2>((int)p.N, (int)p.M), array<int, 2>{1, (int)p.ldc});

    const int row = (int)group.y * TM;
    const int col = (int)group.x * TN;
    constexpr auto desc = matmul2d_descriptor(TM, TN, BK, false, false, false,
                                              matmul2d_descriptor::mode::multiply_accumulate);
    matmul2d<desc, execution_simdgroups<4>> op;
    auto first_a = A.slice<BK, TM>(0, row);
    auto first_b = B.slice<TN, BK>(col, 0);
    auto acc = op.template get_destination_cooperative_tensor<decltype(first_a),
                                                              decltype(first_b), float>();
    for (uint16_t i = 0; i < acc.get_capacity(); ++i) {
        if (acc.is_valid_element(i)) acc[i] = 0.0f;
    }
    for (int k = 0; k < (int)p.K; k += BK) {
        threadgroup_barrier(mem_flags::mem_none);
        auto ta = A.slice<BK, TM>(k, row);
        auto tb = B.slice<TN, BK>(col, k);
        op.run(ta, tb, acc);
    }
    auto tc = C.slice<TN, TM>(col, row);
    acc.store(tc);
}

template [[host_name("matmul_tensorops_sync_64x64_k256")]] [[kernel]]
decltype(matmul_tensorops_sync<64, 64, 256>) matmul_tensorops_sync<64, 64, 256>;
template [[host_name("matmul_tensorops_sync_64x64_k512")]] [[kernel]]
decltype(matmul_tensorops_sync<64, 64, 512>) matmul_tensorops_sync<64, 64, 512>;
template [[host_name("matmul_tensorops_sync_64x64_k1024")]] [[kernel]]
decltype(matmul_tensorops_sync<64, 64, 1024>) matmul_tensorops_sync<64, 64, 1024>;
template [[host_name("matmul_tensorops_sync_64x128_k256")]] [[kernel]]
decltype(matmul_tensorops_sync<64, 128, 256>) matmul_tensorops_sync<64, 128, 256>;
template [[host_name("matmul_tensorops_sync_64x128_k512")]] [[kernel]]
decltype(matmul_tensorops_sync<64, 128, 512>) matmul_tensorops_sync<64, 128, 512>;
template [[host_name("matmul_tensorops_sync_64x128_k1024")]] [[kernel]]
decltype(matmul_tensorops_sync<64, 128, 1024>) matmul_tensorops_sync<64, 128, 1024>;
template [[host_name("matmul_tensorops_sync_128x128_k256")]] [[kernel]]
decltype(matmul_tensorops_sync<128, 128, 256>) matmul_tensorops_sync<128, 128, 256>;
template [[host_name("matmul_tensorops_sync_128x128_k512")]] [[kernel]]
decltype(matmul_tensorops_sync<128, 128, 512>) matmul_tensorops_sync<128, 128, 512>;
template [[host_name("matmul_tensorops_sync_128x128_k1024")]] [[kernel]]
decltype(matmul_tensorops_sync<128, 128, 1024>) matmul_tensorops_sync<128, 128, 1024>;
