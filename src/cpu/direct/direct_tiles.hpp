// The tile loops of the direct kernels, written once over a vector type V (the traits
// of src/cpu/simd/: W floats per vector, loads, broadcasts, FMA, masked first lanes,
// horizontal sum). direct_avx512.cpp, direct_avx2.cpp and direct_portable.cpp each
// include this header after defining V and instantiate the tables at the bottom.
//
// "Direct" means the operands are read where they lie, as the caller stored them: no
// packing copies. That is what a small or skinny problem wants, because a packing pass
// costs as much memory traffic as the arithmetic it would speed up (BLIS calls these
// "sup" kernels). Two tile shapes cover the layouts (direct_kernels.hpp says which
// driver uses which):
//
// RowsTile<MR, NV>: one MR x (W * NV) tile of C, held in MR x NV accumulators for the
//   whole k loop. Per k: NV vector loads of a row of op(B) (unit stride along j, row
//   stride rs_b) and MR broadcasts of op(A)(i, k) feed MR x NV FMAs. op(A) may be stored
//   either way: rows contiguous along k (A_COLS false: element (i, k) at a[i * sa + k])
//   or columns contiguous along i (A_COLS true: element (i, k) at a[k * sa + i]). A tile
//   with fewer rows or columns runs an instantiation with only what it needs; its last
//   vector is read and written through masked first lanes, so nothing past the edge of
//   B or C is touched and every element sees the same k-ordered FMA chain.
//
// DotTile<MR, NR>: MR x NR dot products along k, for op(A) rows and op(B) columns that
//   are both contiguous along k (A not transposed, B transposed: x @ W^T). Each
//   accumulator holds W partial sums (lane l sums k = l mod W); the k tail is read
//   through masked lanes, and the partial sums are added once at the end.
//
// Both store C = alpha * sum + beta * C; beta == 0 writes C without reading it (NaN or
// garbage in C is ignored, as in BLAS).
#pragma once

#include <array>
#include <cstdint>
#include <utility>

namespace fastgemm {
namespace {

template <class V, int MR, int NV>
struct RowsTile {
    static constexpr int W = V::W, MR_ = MR, NR = W * NV;
    using vec = typename V::vec;
    using Fn = void (*)(int64_t kc, const float* a, int64_t sa, const float* b, int64_t rs_b, float* c,
                        int64_t ldc, float alpha, float beta, int n);

    // ROWS x VECS accumulators; the last vector covers n - W * (VECS - 1) columns
    // (masked unless MASKED is false, when n == W * VECS).
    template <int ROWS, int VECS, bool A_COLS, bool MASKED>
    static void tile(int64_t kc, const float* a, int64_t sa, const float* b, int64_t rs_b, float* c,
                     int64_t ldc, float alpha, float beta, int n) {
        const int tail = n - W * (VECS - 1);
        vec acc[ROWS][VECS];
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
            for (int v = 0; v < VECS; ++v) acc[i][v] = V::zero();
        const float* row[ROWS];
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; ++i) row[i] = a + (A_COLS ? i : i * sa);

#pragma GCC unroll 2
        for (int64_t k = 0; k < kc; ++k) {
            vec bv[VECS];
#pragma GCC unroll 8
            for (int v = 0; v < VECS; ++v)
                bv[v] = (MASKED && v == VECS - 1) ? V::load_first(b + W * v, tail) : V::loadu(b + W * v);
#pragma GCC unroll 8
            for (int i = 0; i < ROWS; ++i) {
                const vec ai = V::broadcast(A_COLS ? row[i] + k * sa : row[i] + k);
#pragma GCC unroll 8
                for (int v = 0; v < VECS; ++v) acc[i][v] = V::fmadd(ai, bv[v], acc[i][v]);
            }
            b += rs_b;
        }

        const vec va = V::set1(alpha), vb = V::set1(beta);
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; ++i) {
            float* ci = c + i * ldc;
#pragma GCC unroll 8
            for (int v = 0; v < VECS; ++v) {
                vec r = V::mul(va, acc[i][v]);
                if (MASKED && v == VECS - 1) {
                    if (beta != 0.0f) r = V::fmadd(vb, V::load_first(ci + W * v, tail), r);
                    V::store_first(ci + W * v, r, tail);
                } else {
                    if (beta != 0.0f) r = V::fmadd(vb, V::loadu(ci + W * v), r);
                    V::storeu(ci + W * v, r);
                }
            }
        }
    }

    // edge<A_COLS>[rows - 1][vecs - 1]: the masked tile of that many rows and vectors.
    template <bool A_COLS, int ROWS, int... Vs>
    static constexpr std::array<Fn, NV> edge_row(std::integer_sequence<int, Vs...>) {
        return {&tile<ROWS, Vs + 1, A_COLS, true>...};
    }
    template <bool A_COLS, int... R>
    static Fn edge_entry(int rows, int vecs, std::integer_sequence<int, R...>) {
        static const std::array<std::array<Fn, NV>, MR> table = {
            edge_row<A_COLS, R + 1>(std::make_integer_sequence<int, NV>{})...};
        return table[rows - 1][vecs - 1];
    }

    // C[0:m, 0:n] for m <= MR, n <= NR. sa is op(A)'s row stride (A_COLS false) or its
    // k stride (A_COLS true); the other stride is 1.
    template <bool A_COLS>
    static void kernel(int64_t kc, const float* a, int64_t sa, const float* b, int64_t rs_b, float* c,
                       int64_t ldc, float alpha, float beta, int m, int n) {
        if (m == MR && n == NR) return tile<MR, NV, A_COLS, false>(kc, a, sa, b, rs_b, c, ldc, alpha, beta, n);
        const Fn fn = edge_entry<A_COLS>(m, (n + W - 1) / W, std::make_integer_sequence<int, MR>{});
        fn(kc, a, sa, b, rs_b, c, ldc, alpha, beta, n);
    }
};

template <class V, int MR, int NR>
struct DotTile {
    static constexpr int W = V::W, MR_ = MR, NR_ = NR;
    using vec = typename V::vec;
    using Fn = void (*)(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                        int64_t rs_c, int64_t cs_c, float alpha, float beta);

    // C(i, j) at c[i * rs_c + j * cs_c] = alpha * dot(a + i * lda, b + j * ldb) + beta * C.
    template <int ROWS, int COLS>
    static void tile(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                     int64_t rs_c, int64_t cs_c, float alpha, float beta) {
        vec acc[ROWS][COLS];
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
            for (int j = 0; j < COLS; ++j) acc[i][j] = V::zero();
        int64_t k = 0;
        auto step = [&](auto load) {
            vec bv[COLS];
#pragma GCC unroll 8
            for (int j = 0; j < COLS; ++j) bv[j] = load(b + j * ldb + k);
#pragma GCC unroll 8
            for (int i = 0; i < ROWS; ++i) {
                const vec av = load(a + i * lda + k);
#pragma GCC unroll 8
                for (int j = 0; j < COLS; ++j) acc[i][j] = V::fmadd(av, bv[j], acc[i][j]);
            }
        };
        for (; k + W <= kc; k += W) step([](const float* p) { return V::loadu(p); });
        if (k < kc) {
            const int left = int(kc - k);
            step([left](const float* p) { return V::load_first(p, left); });
        }
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
            for (int j = 0; j < COLS; ++j) {
                float* out = c + i * rs_c + j * cs_c;
                const float r = alpha * V::reduce_add(acc[i][j]);
                *out = beta == 0.0f ? r : r + beta * *out;
            }
    }

    template <int ROWS, int... Cs>
    static constexpr std::array<Fn, NR> entry_row(std::integer_sequence<int, Cs...>) {
        return {&tile<ROWS, Cs + 1>...};
    }
    template <int... R>
    static Fn entry(int rows, int cols, std::integer_sequence<int, R...>) {
        static const std::array<std::array<Fn, NR>, MR> table = {
            entry_row<R + 1>(std::make_integer_sequence<int, NR>{})...};
        return table[rows - 1][cols - 1];
    }

    // m <= MR rows of op(A), n <= NR columns of op(B).
    static void kernel(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                       int64_t rs_c, int64_t cs_c, float alpha, float beta, int m, int n) {
        if (m == MR && n == NR) return tile<MR, NR>(kc, a, lda, b, ldb, c, rs_c, cs_c, alpha, beta);
        entry(m, n, std::make_integer_sequence<int, MR>{})(
            kc, a, lda, b, ldb, c, rs_c, cs_c, alpha, beta);
    }
};

// y[0:n] = sum_k x[k] * b[k * ldb + j], overwriting y: the rows-form matrix-vector
// product. The rows of b stream front to back, eight at a time (each software-prefetched
// a kilobyte ahead: 41 -> 46 GB/s on the AVX-512 machine), into a y that stays in L1
// (the driver hands out column chunks of 16 KiB: whole rows of a 4096-wide matrix, so
// each row is one sequential stream). Each y element sums k in increasing order.
template <class V, int R>
void gemv_rows_step(int64_t n, const float* x, const float* b, int64_t ldb, float* y) {
    constexpr int W = V::W;
    constexpr int64_t kAhead = 256;  // floats
    using vec = typename V::vec;
    vec xs[R];
    const float* row[R];
#pragma GCC unroll 8
    for (int t = 0; t < R; ++t) xs[t] = V::set1(x[t]), row[t] = b + t * ldb;
    const int64_t full = n / W * W;
    for (int64_t j = 0; j < full; j += W) {
        vec s = V::loadu(y + j);
#pragma GCC unroll 8
        for (int t = 0; t < R; ++t) {
            __builtin_prefetch(row[t] + j + kAhead);
            s = V::fmadd(xs[t], V::loadu(row[t] + j), s);
        }
        V::storeu(y + j, s);
    }
    if (const int tail = int(n - full)) {
        vec s = V::load_first(y + full, tail);
#pragma GCC unroll 8
        for (int t = 0; t < R; ++t) s = V::fmadd(xs[t], V::load_first(row[t] + full, tail), s);
        V::store_first(y + full, s, tail);
    }
}

template <class V>
void gemv_rows_sum(int64_t K, int64_t n, const float* x, const float* b, int64_t ldb, float* y) {
    for (int64_t j = 0; j < n; ++j) y[j] = 0.0f;
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) gemv_rows_step<V, 8>(n, x + k, b + k * ldb, ldb, y);
    for (; k < K; ++k) gemv_rows_step<V, 1>(n, x + k, b + k * ldb, ldb, y);
}

// y[r] = sum_k a[r * lda + k] * x[k] for r < rows (rows <= R): the dot-form
// matrix-vector product. R rows stream at once (eight streams keep a core's memory
// requests in flight; measured 30 -> 41 GB/s from four to eight on the AVX-512 machine),
// each software-prefetched a kilobyte ahead (41 -> 48 GB/s), against x from L1. Each
// accumulator holds W partial sums of one row, added once at the end.
template <class V, int R>
void gemv_dot_sum(int64_t K, const float* a, int64_t lda, const float* x, float* y) {
    constexpr int W = V::W;
    constexpr int64_t kAhead = 256;  // floats
    using vec = typename V::vec;
    vec acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = V::zero();
    int64_t k = 0;
    for (; k + W <= K; k += W) {
        const vec xv = V::loadu(x + k);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            __builtin_prefetch(a + r * lda + k + kAhead);
            acc[r] = V::fmadd(V::loadu(a + r * lda + k), xv, acc[r]);
        }
    }
    if (k < K) {
        const int left = int(K - k);
        const vec xv = V::load_first(x + k, left);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r] = V::fmadd(V::load_first(a + r * lda + k, left), xv, acc[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) y[r] = V::reduce_add(acc[r]);
}

// gemv_dot_sum for any rows <= 8: full groups of eight, the rest one by one.
template <class V>
void gemv_dot_rows(int64_t K, int64_t rows, const float* a, int64_t lda, const float* x, float* y) {
    int64_t r = 0;
    for (; r + 8 <= rows; r += 8) gemv_dot_sum<V, 8>(K, a + r * lda, lda, x, y + r);
    for (; r < rows; ++r) gemv_dot_sum<V, 1>(K, a + r * lda, lda, x, y + r);
}

}  // namespace
}  // namespace fastgemm
