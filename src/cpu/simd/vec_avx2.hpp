// AVX2 + FMA vector traits: 8 floats per __m256, for the tile templates of the packed
// and direct kernels (micro_tile_x86.hpp, direct/direct_tiles_x86.hpp).
//
// Include only from a translation unit compiled with -mavx2 -mfma. Everything here has
// internal linkage, so each such unit keeps its own copy and no AVX2 code can be linked
// into a caller compiled for the baseline ISA.
#pragma once

#include <immintrin.h>

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
    static vec add(vec a, vec b) { return _mm256_add_ps(a, b); }
    static float reduce_add(vec v) {
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
    // Lane j of the mask is all-ones when j < left (0 < left < W); masked lanes read as 0
    // and are never written.
    static __m256i first(int left) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static vec load_first(const float* p, int left) { return _mm256_maskload_ps(p, first(left)); }
    static void store_first(float* p, vec v, int left) { _mm256_maskstore_ps(p, first(left), v); }
};

}  // namespace
}  // namespace fastgemm
