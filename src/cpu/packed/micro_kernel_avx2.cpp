// AVX2 + FMA micro-kernel, MR x NR = 6 x 16 (two ymm vectors per row of the C tile).
//
// 12 accumulators (of 16 ymm registers) hold the tile for the whole k loop, leaving 2
// for the B vectors and 1 for the broadcast A value. Per k step, two loads of the B
// micro-panel and 6 broadcasts of the A micro-panel feed 12 FMAs: enough independent
// chains to cover a 4-cycle FMA latency on 2 pipes. The tile loop and its edge handling
// are micro_tile_x86.hpp's; a ragged last vector uses vmaskmov loads/stores.
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

struct Avx2 {
    using vec = __m256;
    static constexpr int W = 8;
    static vec zero() { return _mm256_setzero_ps(); }
    static vec set1(float x) { return _mm256_set1_ps(x); }
    static vec load(const float* p) { return _mm256_load_ps(p); }
    static vec loadu(const float* p) { return _mm256_loadu_ps(p); }
    static void storeu(float* p, vec v) { _mm256_storeu_ps(p, v); }
    static vec broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    static vec fmadd(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
    static vec mul(vec a, vec b) { return _mm256_mul_ps(a, b); }
    // Lane j of the mask is all-ones when j < left.
    static __m256i first(int left) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static vec load_first(const float* p, int left) { return _mm256_maskload_ps(p, first(left)); }
    static void store_first(float* p, vec v, int left) { _mm256_maskstore_ps(p, first(left), v); }
};

}  // namespace
}  // namespace fastgemm

#include "cpu/packed/micro_tile_x86.hpp"

namespace fastgemm {
namespace {

using Tile = X86MicroTile<Avx2, FASTGEMM_AVX2_MR, FASTGEMM_AVX2_NV>;
const MicroKernel kAvx2{"avx2", CpuIsa::avx2, Tile::MR_, Tile::NR, Tile::kernel};

}  // namespace

const MicroKernel* micro_kernel_avx2() { return &kAvx2; }

}  // namespace fastgemm

#else

namespace fastgemm {
const MicroKernel* micro_kernel_avx2() { return nullptr; }
}  // namespace fastgemm

#endif
