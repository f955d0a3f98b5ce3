// MSL matrix types (metal_matrix): matrix<T, Cols, Rows> stored as Cols column vectors of Rows
// components (float3x3 is three float3 columns, 48 bytes, as in MSL), with the constructors,
// products and functions Metal defines: m * v, v * m, m * m, scalar products and m / s, transpose,
// determinant.
#pragma once

#include "fgemu/math.hpp"

namespace metal {

template <class T, int C, int R = C>
struct matrix {
    using column = vec<T, R>;
    column columns[C];

    matrix() = default;
    // Diagonal matrix: float3x3(1.0)
    template <class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
    constexpr explicit matrix(U d) : columns{} {
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r) columns[c][r] = c == r ? T(d) : T(0);
    }
    // One vector per column.
    template <class... V, std::enable_if_t<sizeof...(V) == size_t(C) && (C > 1) &&
                                               (detail::is_vec<std::decay_t<V>>::value && ...), int> = 0>
    constexpr matrix(const V&... v) : columns{column(v)...} {}
    // Every element, column by column.
    template <class... S, std::enable_if_t<sizeof...(S) == size_t(C * R) && (C * R > 1) &&
                                               (fgemu::is_scalar_v<std::decay_t<S>> && ...), int> = 0>
    constexpr matrix(S... s) : columns{} {
        const T v[] = {T(s)...};
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r) columns[c][r] = v[c * R + r];
    }
    template <class U>
    constexpr explicit matrix(const matrix<U, C, R>& o) : columns{} {
        for (int c = 0; c < C; ++c) columns[c] = column(o.columns[c]);
    }
    constexpr column& operator[](int c) { return columns[c]; }
    constexpr const column& operator[](int c) const { return columns[c]; }
};

#define FG_MATRIX_TYPES(T, name)                                                                 \
    typedef matrix<T, 2, 2> name##2x2; typedef matrix<T, 2, 3> name##2x3; typedef matrix<T, 2, 4> name##2x4; \
    typedef matrix<T, 3, 2> name##3x2; typedef matrix<T, 3, 3> name##3x3; typedef matrix<T, 3, 4> name##3x4; \
    typedef matrix<T, 4, 2> name##4x2; typedef matrix<T, 4, 3> name##4x3; typedef matrix<T, 4, 4> name##4x4;
FG_MATRIX_TYPES(float, float)
FG_MATRIX_TYPES(half, half)
#undef FG_MATRIX_TYPES

template <class T, int C, int R, bool P>
vec<T, R> operator*(const matrix<T, C, R>& m, const vec<T, C, P>& v) {
    vec<T, R> out(T(0));
    for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r) out[r] += m.columns[c][r] * v[c];
    return out;
}
template <class T, int C, int R, bool P>
vec<T, C> operator*(const vec<T, R, P>& v, const matrix<T, C, R>& m) {
    vec<T, C> out(T(0));
    for (int c = 0; c < C; ++c) out[c] = dot(m.columns[c], vec<T, R>(v));
    return out;
}
template <class T, int K, int R, int C>
matrix<T, C, R> operator*(const matrix<T, K, R>& a, const matrix<T, C, K>& b) {
    matrix<T, C, R> out(T(0));
    for (int c = 0; c < C; ++c) out.columns[c] = a * b.columns[c];
    return out;
}
template <class T, int C, int R, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
matrix<T, C, R> operator*(const matrix<T, C, R>& a, U s) {
    matrix<T, C, R> out = a;
    for (int c = 0; c < C; ++c) out.columns[c] = out.columns[c] * T(s);
    return out;
}
template <class T, int C, int R, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
matrix<T, C, R> operator*(U s, const matrix<T, C, R>& a) { return a * s; }
// m / s divides every element by s (each column as a vector).
template <class T, int C, int R, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
matrix<T, C, R> operator/(const matrix<T, C, R>& a, U s) {
    matrix<T, C, R> out = a;
    for (int c = 0; c < C; ++c) out.columns[c] = out.columns[c] / T(s);
    return out;
}
template <class T, int C, int R, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
matrix<T, C, R>& operator/=(matrix<T, C, R>& a, U s) { return a = a / s; }
template <class T, int C, int R>
matrix<T, C, R> operator+(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
    matrix<T, C, R> out = a;
    for (int c = 0; c < C; ++c) out.columns[c] = a.columns[c] + b.columns[c];
    return out;
}
template <class T, int C, int R>
matrix<T, C, R> operator-(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
    matrix<T, C, R> out = a;
    for (int c = 0; c < C; ++c) out.columns[c] = a.columns[c] - b.columns[c];
    return out;
}
template <class T, int C, int R>
matrix<T, C, R> operator-(const matrix<T, C, R>& a) { return a * T(-1); }
template <class T, int C, int R, class B>
matrix<T, C, R>& operator*=(matrix<T, C, R>& a, const B& b) { return a = a * b; }
template <class T, int C, int R>
matrix<T, C, R>& operator+=(matrix<T, C, R>& a, const matrix<T, C, R>& b) { return a = a + b; }
template <class T, int C, int R>
matrix<T, C, R>& operator-=(matrix<T, C, R>& a, const matrix<T, C, R>& b) { return a = a - b; }
template <class T, int C, int R>
bool operator==(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
    for (int c = 0; c < C; ++c)
        if (!all(a.columns[c] == b.columns[c])) return false;
    return true;
}

template <class T, int C, int R>
matrix<T, R, C> transpose(const matrix<T, C, R>& m) {
    matrix<T, R, C> out(T(0));
    for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r) out.columns[r][c] = m.columns[c][r];
    return out;
}
template <class T>
T determinant(const matrix<T, 2, 2>& m) { return m[0][0] * m[1][1] - m[1][0] * m[0][1]; }
template <class T>
T determinant(const matrix<T, 3, 3>& m) {
    return m[0][0] * (m[1][1] * m[2][2] - m[2][1] * m[1][2]) -
           m[1][0] * (m[0][1] * m[2][2] - m[2][1] * m[0][2]) +
           m[2][0] * (m[0][1] * m[1][2] - m[1][1] * m[0][2]);
}
template <class T>
T determinant(const matrix<T, 4, 4>& m) {
    T d = T(0);
    for (int c = 0; c < 4; ++c) {
        matrix<T, 3, 3> sub(T(0));
        for (int cc = 0, k = 0; cc < 4; ++cc) {
            if (cc == c) continue;
            for (int r = 1; r < 4; ++r) sub[k][r - 1] = m[cc][r];
            ++k;
        }
        d += ((c & 1) ? T(-1) : T(1)) * m[c][0] * determinant(sub);
    }
    return d;
}

}  // namespace metal

using metal::float2x2; using metal::float2x3; using metal::float2x4;
using metal::float3x2; using metal::float3x3; using metal::float3x4;
using metal::float4x2; using metal::float4x3; using metal::float4x4;
using metal::half2x2; using metal::half2x3; using metal::half2x4;
using metal::half3x2; using metal::half3x3; using metal::half3x4;
using metal::half4x2; using metal::half4x3; using metal::half4x4;
