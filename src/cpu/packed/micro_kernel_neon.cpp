// NEON micro-kernel (AArch64), MR x NR = 8 x 12 (three q vectors per row of the tile).
//
// Ownership: one call owns one 8 x 12 tile of C; 24 accumulators (of 32 q registers)
// hold it for the whole k loop. Reuse: per k step, three q loads of the B micro-panel
// (resident in L1 across the ir loop) and two q loads of the A micro-panel (8 values,
// used through the by-lane FMA, so no broadcasts) feed 24 FMAs.
// Edges: full tiles store directly; partial tiles go through a small stack tile so
// only the m x n corner of C is read (beta != 0) and written.
// AArch64 always has Advanced SIMD, so this file needs no extra compiler flags.
#include "cpu/packed/micro_kernel.hpp"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>

namespace fastgemm {
namespace {

constexpr int MR = 8, NV = 3, NR = 4 * NV;

void kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha,
            float beta, int m, int n) {
    float32x4_t acc[MR][NV];
    for (int i = 0; i < MR; ++i)
        for (int v = 0; v < NV; ++v) acc[i][v] = vdupq_n_f32(0.0f);

    for (int64_t k = 0; k < kc; ++k) {
        const float32x4_t a_lo = vld1q_f32(a), a_hi = vld1q_f32(a + 4);
        float32x4_t bv[NV];
        for (int v = 0; v < NV; ++v) bv[v] = vld1q_f32(b + 4 * v);
        for (int v = 0; v < NV; ++v) {
            acc[0][v] = vfmaq_laneq_f32(acc[0][v], bv[v], a_lo, 0);
            acc[1][v] = vfmaq_laneq_f32(acc[1][v], bv[v], a_lo, 1);
            acc[2][v] = vfmaq_laneq_f32(acc[2][v], bv[v], a_lo, 2);
            acc[3][v] = vfmaq_laneq_f32(acc[3][v], bv[v], a_lo, 3);
            acc[4][v] = vfmaq_laneq_f32(acc[4][v], bv[v], a_hi, 0);
            acc[5][v] = vfmaq_laneq_f32(acc[5][v], bv[v], a_hi, 1);
            acc[6][v] = vfmaq_laneq_f32(acc[6][v], bv[v], a_hi, 2);
            acc[7][v] = vfmaq_laneq_f32(acc[7][v], bv[v], a_hi, 3);
        }
        a += MR;
        b += NR;
    }

    const float32x4_t va = vdupq_n_f32(alpha), vb = vdupq_n_f32(beta);
    if (m == MR && n == NR) {
        for (int i = 0; i < MR; ++i)
            for (int v = 0; v < NV; ++v) {
                float* p = c + i * ldc + 4 * v;
                float32x4_t r = vmulq_f32(va, acc[i][v]);
                if (beta != 0.0f) r = vfmaq_f32(r, vb, vld1q_f32(p));
                vst1q_f32(p, r);
            }
        return;
    }
    float tile[MR][NR];
    for (int i = 0; i < MR; ++i)
        for (int v = 0; v < NV; ++v) vst1q_f32(&tile[i][4 * v], vmulq_f32(va, acc[i][v]));
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float* p = c + i * ldc + j;
            *p = beta == 0.0f ? tile[i][j] : tile[i][j] + beta * *p;
        }
}

const MicroKernel kNeon{"neon", CpuIsa::neon, MR, NR, kernel};

}  // namespace

const MicroKernel* micro_kernel_neon() { return &kNeon; }

}  // namespace fastgemm

#else

namespace fastgemm {
const MicroKernel* micro_kernel_neon() { return nullptr; }
}  // namespace fastgemm

#endif
