// AVX-512 micro-kernel, MR x NR = 12 x 32 (two zmm vectors per row of the C tile).
//
// Ownership: one call owns one 12 x 32 tile of C; the 24 accumulators (of 32 zmm
// registers) hold it for the whole k loop. Reuse: per k step, two vector loads of the
// B micro-panel (which stays in L1 across the ir loop) and 12 broadcasts of the A
// micro-panel (streamed from L2) feed 24 FMAs; each B vector is used 12 times, each
// broadcast twice. Zen 4 executes a 512-bit FMA as two 256-bit halves, so the win over
// the 6x16 AVX2 kernel is fewer loads and instructions per FMA, not wider math.
// Edges: a tile with m < 12 rows or n <= 16 columns runs an instantiation of the same
// loop with only the rows and vectors it needs (no FMAs on padding); n not a multiple
// of 16 uses masked loads/stores.
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
    // n <= 16 * VECS of the tile, so vectors past VECS are never read.
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

// One tile of ROWS x (16 * VECS) accumulators. The full tile is ROWS = MR, VECS = NV;
// edge tiles instantiate the same loop with fewer rows or vectors, so they spend no
// FMAs on padding, and every element still sees the same k-ordered FMA chain.
template <int ROWS, int VECS>
void tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha,
          float beta, int m, int n) {
    __m512 acc[ROWS][VECS];
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < VECS; ++v) acc[i][v] = _mm512_setzero_ps();

    // The tile is written at the end; start fetching it now so the stores do not wait.
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
        _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16 * VECS - 1), _MM_HINT_T0);
    }

#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
        __m512 bv[VECS];
#pragma GCC unroll 4
        for (int v = 0; v < VECS; ++v) bv[v] = _mm512_load_ps(b + 16 * v);
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) {
            __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 4
            for (int v = 0; v < VECS; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
        }
        a += MR;  // packed panels keep their full width
        b += NR;
    }

    const __m512 va = _mm512_set1_ps(alpha);
    if (m == ROWS && n == 16 * VECS) {
        const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
            for (int v = 0; v < VECS; ++v) {
                float* p = c + i * ldc + 16 * v;
                __m512 r = _mm512_mul_ps(va, acc[i][v]);
                if (beta != 0.0f) r = _mm512_fmadd_ps(vb, _mm512_loadu_ps(p), r);
                _mm512_storeu_ps(p, r);
            }
        return;
    }
    __m512 row[NV] = {};
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
        if (i >= m) break;
#pragma GCC unroll 4
        for (int v = 0; v < VECS; ++v) row[v] = acc[i][v];
        store_row(c + i * ldc, row, va, beta, n);
    }
}

using TileFn = void (*)(int64_t, const float*, const float*, float*, int64_t, float, float, int, int);

void kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha,
            float beta, int m, int n) {
    if (m == MR && n == NR) return tile<MR, NV>(kc, a, b, c, ldc, alpha, beta, m, n);
    static_assert(MR <= 14 && NV <= 2, "edge table covers up to 14 rows and 2 vectors");
    static const TileFn edge[14][2] = {
#define FASTGEMM_ROW(r) {tile<(r <= MR ? r : MR), 1>, tile<(r <= MR ? r : MR), NV>}
        FASTGEMM_ROW(1),  FASTGEMM_ROW(2),  FASTGEMM_ROW(3),  FASTGEMM_ROW(4),  FASTGEMM_ROW(5),
        FASTGEMM_ROW(6),  FASTGEMM_ROW(7),  FASTGEMM_ROW(8),  FASTGEMM_ROW(9),  FASTGEMM_ROW(10),
        FASTGEMM_ROW(11), FASTGEMM_ROW(12), FASTGEMM_ROW(13), FASTGEMM_ROW(14),
#undef FASTGEMM_ROW
    };
    edge[m - 1][n <= 16 ? 0 : 1](kc, a, b, c, ldc, alpha, beta, m, n);
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
