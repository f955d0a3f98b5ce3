// AVX2 + FMA micro-kernel, MR x NR = 6 x 16 (two ymm vectors per row of the C tile).
//
// Ownership: one call owns one 6 x 16 tile of C; 12 accumulators (of 16 ymm
// registers) hold it for the whole k loop, leaving 2 for the B vectors and 1 for the
// broadcast A value. Reuse: per k step, two loads from the B micro-panel (resident in
// L1 across the ir loop) and 6 broadcasts from the A micro-panel (streamed from L2)
// feed 12 FMAs: enough independent chains to cover a 4-cycle FMA latency on 2 pipes.
// Edges: a tile with m < 6 rows or n <= 8 columns runs an instantiation of the same
// loop with only the rows and vectors it needs (no FMAs on padding); n not a multiple
// of 8 uses vmaskmov loads/stores.
// Compiled with -mavx2 -mfma (this file only); called only when cpuid reports both.
#include "cpu/packed/micro_kernel.hpp"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#ifndef FASTGEMM_AVX2_MR
#define FASTGEMM_AVX2_MR 6
#endif
#ifndef FASTGEMM_AVX2_NV
#define FASTGEMM_AVX2_NV 2
#endif

namespace fastgemm {
namespace {

constexpr int MR = FASTGEMM_AVX2_MR;
constexpr int NV = FASTGEMM_AVX2_NV;  // ymm vectors per tile row
constexpr int NR = 8 * NV;

// Lane j of mask(left) is all-ones when j < left.
inline __m256i lane_mask(int left) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lanes);
}

inline void store_row(float* c, const __m256 (&acc)[NV], __m256 alpha, float beta, int n) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
        int left = n - 8 * v;
        if (left <= 0) break;
        __m256 r = _mm256_mul_ps(alpha, acc[v]);
        if (left >= 8) {
            if (beta != 0.0f) r = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(c + 8 * v), r);
            _mm256_storeu_ps(c + 8 * v, r);
        } else {
            __m256i mask = lane_mask(left);
            if (beta != 0.0f)
                r = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_maskload_ps(c + 8 * v, mask), r);
            _mm256_maskstore_ps(c + 8 * v, mask, r);
        }
    }
}

// One tile of ROWS x (8 * VECS) accumulators: the full tile is MR x NV vectors, edge
// tiles instantiate the same loop with only the rows and vectors they need.
template <int ROWS, int VECS>
void tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha,
          float beta, int m, int n) {
    __m256 acc[ROWS][VECS];
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < VECS; ++v) acc[i][v] = _mm256_setzero_ps();

#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
        _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 8 * VECS - 1), _MM_HINT_T0);
    }

#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
        __m256 bv[VECS];
#pragma GCC unroll 4
        for (int v = 0; v < VECS; ++v) bv[v] = _mm256_load_ps(b + 8 * v);
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) {
            __m256 ai = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 4
            for (int v = 0; v < VECS; ++v) acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
        }
        a += MR;  // packed panels keep their full width
        b += NR;
    }

    const __m256 va = _mm256_set1_ps(alpha);
    if (m == ROWS && n == 8 * VECS) {
        const __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
            for (int v = 0; v < VECS; ++v) {
                float* p = c + i * ldc + 8 * v;
                __m256 r = _mm256_mul_ps(va, acc[i][v]);
                if (beta != 0.0f) r = _mm256_fmadd_ps(vb, _mm256_loadu_ps(p), r);
                _mm256_storeu_ps(p, r);
            }
        return;
    }
    __m256 row[NV] = {};
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
    static_assert(MR <= 8 && NV <= 2, "edge table covers up to 8 rows and 2 vectors");
    static const TileFn edge[8][2] = {
#define FASTGEMM_ROW(r) {tile<(r <= MR ? r : MR), 1>, tile<(r <= MR ? r : MR), NV>}
        FASTGEMM_ROW(1), FASTGEMM_ROW(2), FASTGEMM_ROW(3), FASTGEMM_ROW(4),
        FASTGEMM_ROW(5), FASTGEMM_ROW(6), FASTGEMM_ROW(7), FASTGEMM_ROW(8),
#undef FASTGEMM_ROW
    };
    edge[m - 1][n <= 8 ? 0 : 1](kc, a, b, c, ldc, alpha, beta, m, n);
}

const MicroKernel kAvx2{"avx2", CpuIsa::avx2, MR, NR, kernel};

}  // namespace

const MicroKernel* micro_kernel_avx2() { return &kAvx2; }

}  // namespace fastgemm

#else

namespace fastgemm {
const MicroKernel* micro_kernel_avx2() { return nullptr; }
}  // namespace fastgemm

#endif
