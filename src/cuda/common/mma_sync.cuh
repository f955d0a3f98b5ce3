// mma.sync on TF32 operands (sm_80+), shared by rung 11 and the fp32x3 skinny kernels.
// m16n8k8, row.col: with g = lane / 4 and t = lane % 4, a lane holds
//   A (16 x 8): a0 = A(g, t), a1 = A(g + 8, t), a2 = A(g, t + 4), a3 = A(g + 8, t + 4);
//   B (8 x 8):  b0 = B(t, g), b1 = B(t + 4, g);
//   C (16 x 8): c0 = C(g, 2t), c1 = C(g, 2t + 1), c2 = C(g + 8, 2t), c3 = C(g + 8, 2t + 1).
// Operands are TF32 bit patterns in 32-bit registers (to_tf32, device_common.cuh).
#pragma once

#include <cstdint>

namespace fastgemm {
namespace cuda {

// d += A B.
__device__ __forceinline__ void mma_tf32_16x8x8(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace cuda
}  // namespace fastgemm
