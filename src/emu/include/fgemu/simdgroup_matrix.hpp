// simdgroup_matrix<T, Cols, Rows> for the emulator.
//
// Ownership: on hardware the 64 elements of an 8x8 matrix are spread over the 32 lanes, two
// per lane, and thread_elements() exposes a lane's two (layout as MLX and MFA measured it:
// see `owner`). Here every lane keeps a full copy, and the copy of the owning lane is the
// authoritative value of each element: every operation that reads a matrix first gathers
// each element from its owner, so a write through thread_elements() is seen by the whole
// SIMD-group, as on hardware. Results are computed redundantly in every lane, which keeps
// the copies equal.
//
// Lockstep: every operation is a rendezvous of the SIMD-group's active lanes (before and
// after), so per-lane code around it sees memory as on hardware: a simdgroup_load reads
// what every lane stored before it, and no lane's later store reaches it.
//
// Construction: value-initialised matrices (simdgroup_float8x8(), {} and the rest of an
// aggregate) are zero; a default-initialised one is trivially constructed, so the
// compiler's pattern initialisation (-ftrivial-auto-var-init=pattern) poisons it.
#pragma once

#include "fgemu/sync.hpp"

namespace metal {

template <class T, int Cols, int Rows = Cols>
struct simdgroup_matrix {
    static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix is 8x8 only");
    using value_type = T;
    alignas(16) T e[Rows][Cols];

    simdgroup_matrix() = default;
    // Diagonal matrix with d on the diagonal.
    constexpr explicit simdgroup_matrix(T d) : e{} {
        for (int r = 0; r < Rows; ++r)
            for (int c = 0; c < Cols; ++c) e[r][c] = (r == c) ? d : T(0);
    }
    // The lane's two elements: row `owner_row(lane)`, columns owner_col(lane) and + 1.
    static uint32_t owner_row(uint32_t l) { return ((l >> 4) & 1u) * 4 + ((l >> 1) & 3u); }
    static uint32_t owner_col(uint32_t l) { return ((l >> 3) & 1u) * 4 + (l & 1u) * 2; }
    vec<T, 2>& thread_elements() {
        const uint32_t l = fgemu::current().lane;
        return *reinterpret_cast<vec<T, 2>*>(&e[owner_row(l)][owner_col(l)]);
    }
    const vec<T, 2>& thread_elements() const {
        const uint32_t l = fgemu::current().lane;
        return *reinterpret_cast<const vec<T, 2>*>(&e[owner_row(l)][owner_col(l)]);
    }
};

typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

namespace fgemu_detail {

// Rendezvous of the SIMD-group; then each matrix is rebuilt from its owners' elements.
// Returns the mask of the lanes that took part.
template <class... M>
uint32_t gather_owned(M&... ms) {
    auto& t = fgemu::current();
    unsigned char* slots = fgemu::simd_slots();
    unsigned char* mine = slots + size_t(t.lane) * 64;
    size_t off = 0;
    auto publish = [&](auto& m) {
        using E = std::remove_reference_t<decltype(m.e[0][0])>;
        const uint32_t r = m.owner_row(t.lane), c = m.owner_col(t.lane);
        std::memcpy(mine + off, &m.e[r][c], 2 * sizeof(E));
        off += 2 * sizeof(E);
    };
    (publish(ms), ...);
    static_assert(((2 * sizeof(ms.e[0][0])) + ... + 0) <= 64, "too many matrices in one gather");
    const uint32_t mask = fgemu::simd_sync();
    for (uint32_t l = 0; l < fgemu::kSimdWidth; ++l) {
        if (!(mask & (1u << l)) || l == t.lane) continue;
        size_t o = 0;
        auto take = [&](auto& m) {
            using E = std::remove_cv_t<std::remove_reference_t<decltype(m.e[0][0])>>;
            std::memcpy(const_cast<E*>(&m.e[m.owner_row(l)][m.owner_col(l)]), slots + l * 64 + o,
                        2 * sizeof(E));
            o += 2 * sizeof(E);
        };
        (take(ms), ...);
    }
    fgemu::simd_sync();  // every lane has read before the slots are reused
    return mask;
}

}  // namespace fgemu_detail

template <class T, int Cols = 8, int Rows = Cols>
simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T v) {
    simdgroup_matrix<T, Cols, Rows> m(T(0));
    for (int r = 0; r < Rows; ++r)
        for (int c = 0; c < Cols; ++c) m.e[r][c] = v;
    return m;
}

// Element (r, c) lives at src[r * elements_per_row + c], or src[c * elements_per_row + r]
// when transposed. matrix_origin (x = column, y = row) offsets the base as in MFA.
template <class T, class U, int Cols, int Rows>
void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, const U* src, ulong elements_per_row = Cols,
                    vec<ulong, 2> matrix_origin = vec<ulong, 2>(0ul), bool transpose_matrix = false) {
    fgemu::simd_sync();  // every lane's earlier stores are visible
    const U* base = transpose_matrix ? src + matrix_origin.x * elements_per_row + matrix_origin.y
                                     : src + matrix_origin.y * elements_per_row + matrix_origin.x;
    for (int r = 0; r < Rows; ++r)
        for (int c = 0; c < Cols; ++c)
            d.e[r][c] = T(transpose_matrix ? base[ulong(c) * elements_per_row + ulong(r)]
                                           : base[ulong(r) * elements_per_row + ulong(c)]);
    fgemu::simd_sync();  // no lane's later store reaches the load
}

template <class T, class U, int Cols, int Rows>
void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, U* dst, ulong elements_per_row = Cols,
                     vec<ulong, 2> matrix_origin = vec<ulong, 2>(0ul), bool transpose_matrix = false) {
    using M = simdgroup_matrix<T, Cols, Rows>;
    const uint32_t mask = fgemu::simd_sync();
    const uint32_t lane = fgemu::current().lane;
    const uint32_t first = uint32_t(__builtin_ctz(mask ? mask : 1u));
    U* base = transpose_matrix ? dst + matrix_origin.x * elements_per_row + matrix_origin.y
                               : dst + matrix_origin.y * elements_per_row + matrix_origin.x;
    // Each lane stores the elements it owns; the first active lane those of absent lanes.
    for (uint32_t l = 0; l < fgemu::kSimdWidth; ++l) {
        if (l != lane && !(lane == first && !(mask & (1u << l)))) continue;
        const uint32_t r = M::owner_row(l);
        for (uint32_t c = M::owner_col(l); c < M::owner_col(l) + 2; ++c) {
            U* p = transpose_matrix ? base + ulong(c) * elements_per_row + ulong(r)
                                    : base + ulong(r) * elements_per_row + ulong(c);
            *p = U(a.e[r][c]);
        }
    }
    fgemu::simd_sync();  // the whole matrix is in memory before any lane goes on
}

// d = a * b + c, summed in float per element in increasing k (hardware order unconfirmed).
template <class R, class T, class U, class V, int Cols, int Rows, int K>
void simdgroup_multiply_accumulate(simdgroup_matrix<R, Cols, Rows>& d,
                                   const simdgroup_matrix<T, K, Rows>& a_in,
                                   const simdgroup_matrix<U, Cols, K>& b_in,
                                   const simdgroup_matrix<V, Cols, Rows>& c_in) {
    simdgroup_matrix<T, K, Rows> a = a_in;
    simdgroup_matrix<U, Cols, K> b = b_in;
    simdgroup_matrix<V, Cols, Rows> c = c_in;
    fgemu_detail::gather_owned(a, b, c);
    for (int r = 0; r < Rows; ++r)
        for (int j = 0; j < Cols; ++j) {
            float s = float(c.e[r][j]);
            for (int k = 0; k < K; ++k) s += float(a.e[r][k]) * float(b.e[k][j]);
            d.e[r][j] = R(s);
        }
}

template <class R, class T, class U, int Cols, int Rows, int K>
void simdgroup_multiply(simdgroup_matrix<R, Cols, Rows>& d, const simdgroup_matrix<T, K, Rows>& a_in,
                        const simdgroup_matrix<U, Cols, K>& b_in) {
    simdgroup_matrix<T, K, Rows> a = a_in;
    simdgroup_matrix<U, Cols, K> b = b_in;
    fgemu_detail::gather_owned(a, b);
    for (int r = 0; r < Rows; ++r)
        for (int j = 0; j < Cols; ++j) {
            float s = 0.0f;
            for (int k = 0; k < K; ++k) s += float(a.e[r][k]) * float(b.e[k][j]);
            d.e[r][j] = R(s);
        }
}

template <class T, int C, int R, int K>
simdgroup_matrix<T, C, R> operator*(const simdgroup_matrix<T, K, R>& a,
                                    const simdgroup_matrix<T, C, K>& b) {
    simdgroup_matrix<T, C, R> d(T(0));
    simdgroup_multiply(d, a, b);
    return d;
}
template <class T, int C, int R>
simdgroup_matrix<T, C, R> operator+(const simdgroup_matrix<T, C, R>& a_in,
                                    const simdgroup_matrix<T, C, R>& b_in) {
    simdgroup_matrix<T, C, R> a = a_in, b = b_in, d(T(0));
    fgemu_detail::gather_owned(a, b);
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) d.e[r][c] = a.e[r][c] + b.e[r][c];
    return d;
}

}  // namespace metal
