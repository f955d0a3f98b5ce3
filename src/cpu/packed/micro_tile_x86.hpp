// The register-blocked tile loop of the x86 micro-kernels (AVX2, AVX-512), written once
// over a vector type; micro_kernel_avx2.cpp and micro_kernel_avx512.cpp say what each
// tile shape buys on its ISA.
//
// Each of those files defines its vector traits V and then includes this header. All of
// it has internal linkage (an anonymous namespace), so every translation unit, compiled
// with its own ISA flags, keeps its own copy: the linker can never hand the AVX2 path a
// function that was compiled with -mavx512f (see sources.cmake).
//
// V provides, for W floats per vector `vec`: zero(), set1(x), load(p) (aligned: the
// packed B panel), loadu(p), storeu(p, v), broadcast(p) (*p in every lane),
// fmadd(a, b, c) = a * b + c, mul(a, b), and load_first(p, left) / store_first(p, v,
// left) for the first `left` lanes only (0 < left < W; the other lanes of C untouched).
//
// Ownership and reuse: one call owns one MR x (W * NV) tile of C, held in MR x NV
// accumulators for the whole k loop; per k step NV vector loads of the B micro-panel
// (resident in L1 across the ir loop) and MR broadcasts of the A micro-panel feed
// MR x NV FMAs. Edges: a tile with fewer rows, or with n <= W columns, runs an
// instantiation of the same loop with only the rows and vectors it needs (no FMAs on
// padding; every element still sees the same k-ordered FMA chain), and a ragged last
// vector is stored through the partial forms.
#pragma once

#include <cstdint>
#include <utility>

#include <immintrin.h>

namespace fastgemm {
namespace {

template <class V, int MR, int NV>
struct X86MicroTile {
    static constexpr int MR_ = MR, W = V::W, NR = W * NV;
    using vec = typename V::vec;
    using TileFn = void (*)(int64_t, const float*, const float*, float*, int64_t, float, float, int, int);

    // C = alpha * acc + beta * C for the first n columns of one row.
    static void store_row(float* c, const vec (&acc)[NV], vec alpha, float beta, int n) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            const int left = n - W * v;
            if (left <= 0) break;
            vec r = V::mul(alpha, acc[v]);
            if (left >= W) {
                if (beta != 0.0f) r = V::fmadd(V::set1(beta), V::loadu(c + W * v), r);
                V::storeu(c + W * v, r);
            } else {
                if (beta != 0.0f) r = V::fmadd(V::set1(beta), V::load_first(c + W * v, left), r);
                V::store_first(c + W * v, r, left);
            }
        }
    }

    // One tile of ROWS x (W * VECS) accumulators: the full tile is MR x NV vectors.
    template <int ROWS, int VECS>
    static void tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha, float beta,
                     int m, int n) {
        vec acc[ROWS][VECS];
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
            for (int v = 0; v < VECS; ++v) acc[i][v] = V::zero();

        // The tile is written at the end; start fetching it now so the stores do not wait.
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) {
            _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + W * VECS - 1), _MM_HINT_T0);
        }

#pragma GCC unroll 4
        for (int64_t k = 0; k < kc; ++k) {
            vec bv[VECS];
#pragma GCC unroll 4
            for (int v = 0; v < VECS; ++v) bv[v] = V::load(b + W * v);
#pragma GCC unroll 16
            for (int i = 0; i < ROWS; ++i) {
                const vec ai = V::broadcast(a + i);
#pragma GCC unroll 4
                for (int v = 0; v < VECS; ++v) acc[i][v] = V::fmadd(ai, bv[v], acc[i][v]);
            }
            a += MR;  // packed panels keep their full width
            b += NR;
        }

        const vec va = V::set1(alpha);
        if (m == ROWS && n == W * VECS) {
            const vec vb = V::set1(beta);
#pragma GCC unroll 16
            for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
                for (int v = 0; v < VECS; ++v) {
                    float* p = c + i * ldc + W * v;
                    vec r = V::mul(va, acc[i][v]);
                    if (beta != 0.0f) r = V::fmadd(vb, V::loadu(p), r);
                    V::storeu(p, r);
                }
            return;
        }
        vec row[NV] = {};
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) {
            if (i >= m) break;
#pragma GCC unroll 4
            for (int v = 0; v < VECS; ++v) row[v] = acc[i][v];
            store_row(c + i * ldc, row, va, beta, n);
        }
    }

    // edge[r - 1][narrow ? 0 : 1]: the tile for r rows and one vector (n <= W) or all NV.
    template <int... R>
    static const TileFn (&edge_table(std::integer_sequence<int, R...>))[MR][2] {
        static const TileFn table[MR][2] = {{&tile<R + 1, 1>, &tile<R + 1, NV>}...};
        return table;
    }

    // The MicroKernelFn (micro_kernel.hpp): m <= MR rows and n <= NR columns of C.
    static void kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha, float beta,
                       int m, int n) {
        if (m == MR && n == NR) return tile<MR, NV>(kc, a, b, c, ldc, alpha, beta, m, n);
        static const auto& edge = edge_table(std::make_integer_sequence<int, MR>{});
        edge[m - 1][n <= W ? 0 : 1](kc, a, b, c, ldc, alpha, beta, m, n);
    }
};

}  // namespace
}  // namespace fastgemm
