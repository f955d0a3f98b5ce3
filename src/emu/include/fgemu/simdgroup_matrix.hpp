// simdgroup_matrix<T, Cols, Rows> for the emulator. MSL requires these operations to be
// executed uniformly by the whole SIMD-group; here every lane holds the complete 8x8 matrix
// and computes every operation redundantly (DESIGN.md), which gives the same values in all
// lanes without any exchange. thread_elements() returns the lane's two elements in the layout
// MLX/MFA measured on hardware (metal-api-facts A.5); writes through it change only that
// lane's copy.
#pragma once

#include "fgemu/types.hpp"

namespace metal {

template <class T, int Cols, int Rows = Cols>
struct simdgroup_matrix {
    static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix is 8x8 only");
    alignas(16) T e[Rows][Cols];

    simdgroup_matrix() {
        // Poisoned: a matrix used before it is loaded or filled reads NaN, not stale data.
        for (int r = 0; r < Rows; ++r)
            for (int c = 0; c < Cols; ++c) e[r][c] = std::numeric_limits<T>::quiet_NaN();
    }
    // Diagonal matrix with d on the diagonal.
    explicit simdgroup_matrix(T d) {
        for (int r = 0; r < Rows; ++r)
            for (int c = 0; c < Cols; ++c) e[r][c] = (r == c) ? d : T(0);
    }
    vec<T, 2>& thread_elements() {
        const uint32_t l = fgemu::current().lane;
        const uint32_t q = l / 4;
        const uint32_t row = (q & 4) + ((l / 2) % 4);
        const uint32_t col = (q & 2) * 2 + (l % 2) * 2;
        return *reinterpret_cast<vec<T, 2>*>(&e[row][col]);
    }
};

typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int Cols, int Rows = Cols>
simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T v) {
    simdgroup_matrix<T, Cols, Rows> m(T(0));
    for (int r = 0; r < Rows; ++r)
        for (int c = 0; c < Cols; ++c) m.e[r][c] = v;
    return m;
}

// Element (r, c) lives at src[r * elements_per_row + c], or src[c * elements_per_row + r]
// when transposed. matrix_origin (x = column, y = row) offsets the base as in MFA; its axis
// convention is unconfirmed on hardware (metal-api-facts A.3).
template <class T, class U, int Cols, int Rows>
void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, const U* src,
                    ulong elements_per_row = Cols, vec<ulong, 2> matrix_origin = vec<ulong, 2>(0ul),
                    bool transpose_matrix = false) {
    const U* base = transpose_matrix
                        ? src + matrix_origin.x * elements_per_row + matrix_origin.y
                        : src + matrix_origin.y * elements_per_row + matrix_origin.x;
    for (int r = 0; r < Rows; ++r)
        for (int c = 0; c < Cols; ++c)
            d.e[r][c] = T(transpose_matrix ? base[ulong(c) * elements_per_row + ulong(r)]
                                           : base[ulong(r) * elements_per_row + ulong(c)]);
}

template <class T, class U, int Cols, int Rows>
void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, U* dst,
                     ulong elements_per_row = Cols, vec<ulong, 2> matrix_origin = vec<ulong, 2>(0ul),
                     bool transpose_matrix = false) {
    U* base = transpose_matrix ? dst + matrix_origin.x * elements_per_row + matrix_origin.y
                               : dst + matrix_origin.y * elements_per_row + matrix_origin.x;
    for (int r = 0; r < Rows; ++r)
        for (int c = 0; c < Cols; ++c) {
            U* p = transpose_matrix ? base + ulong(c) * elements_per_row + ulong(r)
                                    : base + ulong(r) * elements_per_row + ulong(c);
            *p = U(a.e[r][c]);
        }
}

// d = a * b + c, summed in float per element in increasing k (hardware order unconfirmed).
template <class R, class T, class U, class V, int Cols, int Rows, int K>
void simdgroup_multiply_accumulate(simdgroup_matrix<R, Cols, Rows>& d,
                                   const simdgroup_matrix<T, K, Rows>& a,
                                   const simdgroup_matrix<U, Cols, K>& b,
                                   const simdgroup_matrix<V, Cols, Rows>& c) {
    R out[Rows][Cols];
    for (int r = 0; r < Rows; ++r)
        for (int j = 0; j < Cols; ++j) {
            float s = float(c.e[r][j]);
            for (int k = 0; k < K; ++k) s += float(a.e[r][k]) * float(b.e[k][j]);
            out[r][j] = R(s);
        }
    std::memcpy(d.e, out, sizeof(out));
}

template <class R, class T, class U, int Cols, int Rows, int K>
void simdgroup_multiply(simdgroup_matrix<R, Cols, Rows>& d, const simdgroup_matrix<T, K, Rows>& a,
                        const simdgroup_matrix<U, Cols, K>& b) {
    R out[Rows][Cols];
    for (int r = 0; r < Rows; ++r)
        for (int j = 0; j < Cols; ++j) {
            float s = 0.0f;
            for (int k = 0; k < K; ++k) s += float(a.e[r][k]) * float(b.e[k][j]);
            out[r][j] = R(s);
        }
    std::memcpy(d.e, out, sizeof(out));
}

template <class T, int C, int R, int K>
simdgroup_matrix<T, C, R> operator*(const simdgroup_matrix<T, K, R>& a,
                                    const simdgroup_matrix<T, C, K>& b) {
    simdgroup_matrix<T, C, R> d;
    simdgroup_multiply(d, a, b);
    return d;
}
template <class T, int C, int R>
simdgroup_matrix<T, C, R> operator+(const simdgroup_matrix<T, C, R>& a,
                                    const simdgroup_matrix<T, C, R>& b) {
    simdgroup_matrix<T, C, R> d;
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) d.e[r][c] = a.e[r][c] + b.e[r][c];
    return d;
}

}  // namespace metal
