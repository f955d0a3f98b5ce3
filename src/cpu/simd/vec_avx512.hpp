// AVX-512 vector traits: 16 floats per __m512, for the tile templates of the packed
// and direct kernels (micro_tile_x86.hpp, direct/direct_tiles_x86.hpp).
//
// Include only from a translation unit compiled with -mavx512f. Everything here has
// internal linkage, so each such unit keeps its own copy and no AVX-512 code can be
// linked into a caller compiled for the baseline ISA.
#pragma once

#include <immintrin.h>

namespace fastgemm {
namespace {

struct Avx512 {
    using vec = __m512;
    static constexpr int W = 16;
    static vec zero() { return _mm512_setzero_ps(); }
    static vec set1(float x) { return _mm512_set1_ps(x); }
    static vec load(const float* p) { return _mm512_load_ps(p); }
    static vec loadu(const float* p) { return _mm512_loadu_ps(p); }
    static void storeu(float* p, vec v) { _mm512_storeu_ps(p, v); }
    static vec broadcast(const float* p) { return _mm512_set1_ps(*p); }
    static vec fmadd(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
    static vec mul(vec a, vec b) { return _mm512_mul_ps(a, b); }
    static vec add(vec a, vec b) { return _mm512_add_ps(a, b); }
    // Pairwise across the four 128-bit quarters, then within one. The zero-masked
    // forms: GCC 12's unmasked shuffles and extracts (and so _mm512_reduce_add_ps) trip
    // -Wuninitialized inside its own header.
    static float reduce_add(vec v) {
        vec s = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, _MM_SHUFFLE(1, 0, 3, 2)));
        s = _mm512_add_ps(s, _mm512_maskz_shuffle_f32x4(0xFFFF, s, s, _MM_SHUFFLE(2, 3, 0, 1)));
        __m128 q = _mm512_maskz_extractf32x4_ps(0xF, s, 0);
        q = _mm_add_ps(q, _mm_movehl_ps(q, q));
        q = _mm_add_ss(q, _mm_movehdup_ps(q));
        return _mm_cvtss_f32(q);
    }
    // The first `left` lanes (0 < left < W); the other lanes read as 0 / stay untouched.
    static __mmask16 first(int left) { return __mmask16((1u << left) - 1); }
    static vec load_first(const float* p, int left) { return _mm512_maskz_loadu_ps(first(left), p); }
    static void store_first(float* p, vec v, int left) { _mm512_mask_storeu_ps(p, first(left), v); }
};

}  // namespace
}  // namespace fastgemm
