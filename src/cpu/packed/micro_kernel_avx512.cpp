// AVX-512 micro-kernel, MR x NR = 12 x 32 (two zmm vectors per row of the C tile).
//
// Ownership: one call owns one 12 x 32 tile of C; the 24 accumulators (of 32 zmm
// registers) hold it for the whole k loop. Reuse: per k step, two vector loads of the
// B micro-panel (which stays in L1 across the ir loop) and 12 broadcasts of the A
// micro-panel (streamed from L2) feed 24 FMAs; each B vector is used 12 times, each
// broadcast twice. Zen 4 executes a 512-bit FMA as two 256-bit halves, so the win over
// the 6x16 AVX2 kernel is fewer loads and instructions per FMA, not wider math.
// Edges: n < 32 uses masked loads/stores, m < 12 stores only the first m rows.
// Compiled with -mavx512f (this file only); called only when cpuid reports AVX-512F.
#include "cpu/packed/micro_kernel.hpp"

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

#ifndef FASTGEMM_AVX512_MR
#define FASTGEMM_AVX512_MR 12
#endif
#ifndef FASTGEMM_AVX512_NV
#define FASTGEMM_AVX512_NV 2
#endif

namespace fastgemm {
namespace {

constexpr int MR = FASTGEMM_AVX512_MR;
constexpr int NV = FASTGEMM_AVX512_NV;  // zmm vectors per tile row
constexpr int NR = 16 * NV;

// C = alpha * acc + beta * C for rows < m, masked columns.
inline void store_row(float* c, const __m512 (&acc)[NV], __m512 alpha, float beta, int n) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
        int left = n - 16 * v;
        if (left <= 0) break;
        __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
        __m512 r = _mm512_mul_ps(alpha, acc[v]);
        if (beta != 0.0f) {
            __m512 old = _mm512_maskz_loadu_ps(mask, c + 16 * v);
            r = _mm512_fmadd_ps(_mm512_set1_ps(beta), old, r);
        }
        _mm512_mask_storeu_ps(c + 16 * v, mask, r);
    }
}

void kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha,
            float beta, int m, int n) {
    __m512 acc[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();

    // The tile is written at the end; start fetching it now so the stores do not wait.
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
        _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + NR - 1), _MM_HINT_T0);
    }

#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
        __m512 bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) bv[v] = _mm512_load_ps(b + 16 * v);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
            __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
        }
        a += MR;
        b += NR;
    }

    const __m512 va = _mm512_set1_ps(alpha);
    if (m == MR && n == NR && beta == 0.0f) {
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v)
                _mm512_storeu_ps(c + i * ldc + 16 * v, _mm512_mul_ps(va, acc[i][v]));
        return;
    }
    if (m == MR && n == NR) {
        const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
                float* p = c + i * ldc + 16 * v;
                _mm512_storeu_ps(p, _mm512_fmadd_ps(vb, _mm512_loadu_ps(p),
                                                    _mm512_mul_ps(va, acc[i][v])));
            }
        return;
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
        if (i < m) store_row(c + i * ldc, acc[i], va, beta, n);
}

const MicroKernel kAvx512{"avx512", CpuIsa::avx512, MR, NR, kernel};

}  // namespace

const MicroKernel* micro_kernel_avx512() { return &kAvx512; }

}  // namespace fastgemm

#else

namespace fastgemm {
const MicroKernel* micro_kernel_avx512() { return nullptr; }
}  // namespace fastgemm

#endif
