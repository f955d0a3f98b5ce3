// Step 8 (seed 004 kernel 8): Metal Performance Primitives matmul2d. A threadgroup of four
// SIMD-groups (128 threads, execution_simdgroups<4>) owns a TM x TN tile of C and hands MPP
// views of the device buffers: TM rows of A and TN columns of B across all of K
// (dynamic_length_v K in the descriptor), no threadgroup staging - the caches provide the
// reuse, as Apple's guide recommends. MPP chooses which thread loads and computes what.
// Tensor coordinates are (column, row): A has extents (K, M), B (N, K), C (N, M), with the
// row strides lda, ldb, ldc.
// Full tiles use static slice extents (no bounds checks); edge tiles use dynamic slices,
// which MPP bounds-checks against the matrices, so any M, N, K works.
// Constraints: no transposes, alpha = 1, beta = 0 (mode::multiply overwrites C). Needs
// Metal 4 (-std=metal4.0); FP32 operands with relaxed_precision = false.
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
#include "gemm_common.h"
using namespace metal;
using namespace mpp::tensor_ops;

template <int TM, int TN, int SG>
kernel void matmul_tensorops(device const float* a [[buffer(0)]],
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

    constexpr auto desc = matmul2d_descriptor(TM, TN, dynamic_length_v<int>);
    matmul2d<desc, execution_simdgroups<SG>> op;
    const int row = (int)group.y * TM;
    const int col = (int)group.x * TN;

    if (row + TM <= (int)p.M && col + TN <= (int)p.N) {
        auto ta = A.slice<dynamic_extent, TM>(0, row);
        auto tb = B.slice<TN, dynamic_extent>(col, 0);
        auto tc = C.slice<TN, TM>(col, row);
        op.run(ta, tb, tc);
    } else {
        auto ta = A.slice(0, row);
        auto tb = B.slice(col, 0);
        auto tc = C.slice(col, row);
        op.run(ta, tb, tc);
    }
}

template [[host_name("matmul_tensorops_64x64")]] [[kernel]]
decltype(matmul_tensorops<64, 64, 4>) matmul_tensorops<64, 64, 4>;
template [[host_name("matmul_tensorops_64x128")]] [[kernel]]
decltype(matmul_tensorops<64, 128, 4>) matmul_tensorops<64, 128, 4>;
