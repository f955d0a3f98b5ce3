// Barriers and SIMD-group functions. threadgroup_barrier switches to the group's scheduler;
// SIMD-group functions exchange values through a per-SIMD-group slot array and two
// rendezvous (write, sync, read, sync), over the lanes that are active (not returned and not
// blocked elsewhere) — as on hardware, where reductions act over active lanes.
#pragma once

#include "fgemu/math.hpp"

#include <source_location>

namespace metal {

enum class mem_flags : unsigned {
    mem_none = 0,
    mem_device = 1,
    mem_threadgroup = 2,
    mem_texture = 4,
    mem_threadgroup_imageblock = 8,
    mem_object_data = 16,
};
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(unsigned(a) | unsigned(b)); }

// The call site's column tells apart two barriers on one line (a one-line branch, a kernel
// written by a macro), which strict mode must not take for one.
inline void threadgroup_barrier(mem_flags, std::source_location at = std::source_location::current()) {
    fgemu::group_barrier(at.file_name(), int(at.line()), int(at.column()));
}
// Lanes of a SIMD-group are separate fibers here, so simdgroup_barrier is a real rendezvous.
inline void simdgroup_barrier(mem_flags) { fgemu::simd_sync(); }

namespace fgemu_detail {

template <class T>
struct lanes {
    T v[fgemu::kSimdWidth];
    uint32_t mask;  // active lanes
    uint32_t self;
};

template <class T>
lanes<T> exchange(const T& x) {
    static_assert(sizeof(T) <= 64, "SIMD-group exchange of values larger than 64 bytes");
    auto& t = fgemu::current();
    unsigned char* slots = fgemu::simd_slots();
    std::memcpy(slots + size_t(t.lane) * 64, &x, sizeof(T));
    lanes<T> r;
    r.mask = fgemu::simd_sync();
    r.self = t.lane;
    for (uint32_t l = 0; l < fgemu::kSimdWidth; ++l)
        if (r.mask & (1u << l)) std::memcpy(&r.v[l], slots + size_t(l) * 64, sizeof(T));
    fgemu::simd_sync();  // everyone has read before the slots are reused
    return r;
}

}  // namespace fgemu_detail

template <class T>
T simd_sum(T x) {
    auto l = fgemu_detail::exchange(x);
    T s = T(0);
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if (l.mask & (1u << i)) s = s + l.v[i];
    return s;
}
template <class T>
T simd_product(T x) {
    auto l = fgemu_detail::exchange(x);
    T s = T(1);
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if (l.mask & (1u << i)) s = s * l.v[i];
    return s;
}
template <class T>
T simd_max(T x) {
    auto l = fgemu_detail::exchange(x);
    T s = x;
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if (l.mask & (1u << i)) s = max(s, l.v[i]);
    return s;
}
template <class T>
T simd_min(T x) {
    auto l = fgemu_detail::exchange(x);
    T s = x;
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if (l.mask & (1u << i)) s = min(s, l.v[i]);
    return s;
}
template <class T>
T simd_prefix_inclusive_sum(T x) {
    auto l = fgemu_detail::exchange(x);
    T s = T(0);
    for (uint32_t i = 0; i <= l.self; ++i)
        if (l.mask & (1u << i)) s = s + l.v[i];
    return s;
}
template <class T>
T simd_prefix_exclusive_sum(T x) {
    auto l = fgemu_detail::exchange(x);
    T s = T(0);
    for (uint32_t i = 0; i < l.self; ++i)
        if (l.mask & (1u << i)) s = s + l.v[i];
    return s;
}
template <class T>
T simd_shuffle(T x, ushort lane) {
    auto l = fgemu_detail::exchange(x);
    return (lane < fgemu::kSimdWidth && (l.mask & (1u << lane))) ? l.v[lane] : x;
}
template <class T>
T simd_broadcast(T x, ushort lane) { return simd_shuffle(x, lane); }
template <class T>
T simd_broadcast_first(T x) {
    auto l = fgemu_detail::exchange(x);
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if (l.mask & (1u << i)) return l.v[i];
    return x;
}
template <class T>
T simd_shuffle_xor(T x, ushort mask) {
    auto l = fgemu_detail::exchange(x);
    const uint32_t src = (l.self ^ mask) & (fgemu::kSimdWidth - 1);
    return (l.mask & (1u << src)) ? l.v[src] : x;
}
template <class T>
T simd_shuffle_down(T x, ushort delta) {
    auto l = fgemu_detail::exchange(x);
    const uint32_t src = l.self + delta;
    return (src < fgemu::kSimdWidth && (l.mask & (1u << src))) ? l.v[src] : x;
}
template <class T>
T simd_shuffle_up(T x, ushort delta) {
    auto l = fgemu_detail::exchange(x);
    return (l.self >= delta && (l.mask & (1u << (l.self - delta)))) ? l.v[l.self - delta] : x;
}
template <class T>
T simd_shuffle_rotate_down(T x, ushort delta) {
    auto l = fgemu_detail::exchange(x);
    const uint32_t src = (l.self + delta) % fgemu::kSimdWidth;
    return (l.mask & (1u << src)) ? l.v[src] : x;
}
template <class T>
T simd_shuffle_rotate_up(T x, ushort delta) {
    auto l = fgemu_detail::exchange(x);
    const uint32_t src = (l.self + fgemu::kSimdWidth - delta % fgemu::kSimdWidth) % fgemu::kSimdWidth;
    return (l.mask & (1u << src)) ? l.v[src] : x;
}
inline bool simd_all(bool b) {
    auto l = fgemu_detail::exchange(b);
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if ((l.mask & (1u << i)) && !l.v[i]) return false;
    return true;
}
inline bool simd_any(bool b) {
    auto l = fgemu_detail::exchange(b);
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if ((l.mask & (1u << i)) && l.v[i]) return true;
    return false;
}
struct simd_vote {
    using vote_t = unsigned long long;
    vote_t v;
    simd_vote() = default;
    constexpr explicit simd_vote(vote_t m) : v(m) {}
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    constexpr explicit operator I() const { return I(v); }
    bool all() const { return v == 0xffffffffull; }
    bool any() const { return v != 0; }
};
inline simd_vote simd_ballot(bool b) {
    auto l = fgemu_detail::exchange(b);
    unsigned long long m = 0;
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if ((l.mask & (1u << i)) && l.v[i]) m |= 1ull << i;
    return simd_vote{m};
}
inline bool simd_is_first() {
    auto l = fgemu_detail::exchange(true);
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if (l.mask & (1u << i)) return i == l.self;
    return false;
}

namespace fgemu_detail {
// Bitwise reductions of floating values act on their bits.
template <class T>
T bit_op(T a, T b, char op) {
    if constexpr (fgemu::is_float_v<T>) {
        using U = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
        U x, y;
        std::memcpy(&x, &a, sizeof(T));
        std::memcpy(&y, &b, sizeof(T));
        const U r = op == '&' ? U(x & y) : op == '|' ? U(x | y) : U(x ^ y);
        T out;
        std::memcpy(&out, &r, sizeof(T));
        return out;
    } else {
        return op == '&' ? T(a & b) : op == '|' ? T(a | b) : T(a ^ b);
    }
}
}  // namespace fgemu_detail

// SIMD-group reductions and scans over the bitwise operators, and the products.
template <class T>
T simd_and(T x) {
    auto l = fgemu_detail::exchange(x);
    T s = x;
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if (l.mask & (1u << i)) s = fgemu_detail::bit_op(s, l.v[i], '&');
    return s;
}
template <class T>
T simd_or(T x) {
    auto l = fgemu_detail::exchange(x);
    T s = x;
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if (l.mask & (1u << i)) s = fgemu_detail::bit_op(s, l.v[i], '|');
    return s;
}
template <class T>
T simd_xor(T x) {
    auto l = fgemu_detail::exchange(x);
    T s{};
    for (uint32_t i = 0; i < fgemu::kSimdWidth; ++i)
        if (l.mask & (1u << i)) s = fgemu_detail::bit_op(s, l.v[i], '^');
    return s;
}
template <class T>
T simd_prefix_inclusive_product(T x) {
    auto l = fgemu_detail::exchange(x);
    T s = T(1);
    for (uint32_t i = 0; i <= l.self; ++i)
        if (l.mask & (1u << i)) s = s * l.v[i];
    return s;
}
template <class T>
T simd_prefix_exclusive_product(T x) {
    auto l = fgemu_detail::exchange(x);
    T s = T(1);
    for (uint32_t i = 0; i < l.self; ++i)
        if (l.mask & (1u << i)) s = s * l.v[i];
    return s;
}
template <class T>
T simd_shuffle_and_fill_down(T x, T fill, ushort delta) {
    auto l = fgemu_detail::exchange(x);
    auto f = fgemu_detail::exchange(fill);
    const uint32_t src = l.self + delta;
    if (src < fgemu::kSimdWidth) return (l.mask & (1u << src)) ? l.v[src] : x;
    return f.v[src - fgemu::kSimdWidth];
}
template <class T>
T simd_shuffle_and_fill_up(T x, T fill, ushort delta) {
    auto l = fgemu_detail::exchange(x);
    auto f = fgemu_detail::exchange(fill);
    if (l.self >= delta) return (l.mask & (1u << (l.self - delta))) ? l.v[l.self - delta] : x;
    return f.v[fgemu::kSimdWidth - delta + l.self];
}
inline simd_vote simd_active_threads_mask() {
    auto l = fgemu_detail::exchange(true);
    return simd_vote{l.mask};
}
inline bool simd_is_helper_thread() { return false; }

// Quad-groups: four consecutive lanes of a SIMD-group.
namespace fgemu_detail {
inline uint32_t quad_base(uint32_t lane) { return lane & ~3u; }
}
template <class T>
T quad_shuffle(T x, ushort lane) {
    auto l = fgemu_detail::exchange(x);
    const uint32_t src = fgemu_detail::quad_base(l.self) + (lane & 3u);
    return (l.mask & (1u << src)) ? l.v[src] : x;
}
template <class T>
T quad_broadcast(T x, ushort lane) { return quad_shuffle(x, lane); }
template <class T>
T quad_shuffle_xor(T x, ushort m) {
    auto l = fgemu_detail::exchange(x);
    const uint32_t src = fgemu_detail::quad_base(l.self) + ((l.self ^ m) & 3u);
    return (l.mask & (1u << src)) ? l.v[src] : x;
}
template <class T>
T quad_shuffle_down(T x, ushort d) {
    auto l = fgemu_detail::exchange(x);
    const uint32_t q = l.self & 3u;
    const uint32_t src = fgemu_detail::quad_base(l.self) + q + d;
    return (q + d < 4 && (l.mask & (1u << src))) ? l.v[src] : x;
}
template <class T>
T quad_shuffle_up(T x, ushort d) {
    auto l = fgemu_detail::exchange(x);
    const uint32_t q = l.self & 3u;
    return (q >= d && (l.mask & (1u << (l.self - d)))) ? l.v[l.self - d] : x;
}
template <class T>
T quad_shuffle_rotate_down(T x, ushort d) {
    auto l = fgemu_detail::exchange(x);
    const uint32_t src = fgemu_detail::quad_base(l.self) + (((l.self & 3u) + d) & 3u);
    return (l.mask & (1u << src)) ? l.v[src] : x;
}
#define FG_QUAD_REDUCE(name, init, op)                                                          \
    template <class T>                                                                          \
    T quad_##name(T x) {                                                                        \
        auto l = fgemu_detail::exchange(x);                                                     \
        T s = init;                                                                             \
        const uint32_t b = fgemu_detail::quad_base(l.self);                                     \
        for (uint32_t i = b; i < b + 4; ++i)                                                    \
            if (l.mask & (1u << i)) s = op;                                                     \
        return s;                                                                               \
    }
FG_QUAD_REDUCE(sum, T(0), s + l.v[i])
FG_QUAD_REDUCE(product, T(1), s * l.v[i])
FG_QUAD_REDUCE(max, x, max(s, l.v[i]))
FG_QUAD_REDUCE(min, x, min(s, l.v[i]))
#undef FG_QUAD_REDUCE
inline bool quad_all(bool b) {
    auto l = fgemu_detail::exchange(b);
    const uint32_t q = fgemu_detail::quad_base(l.self);
    for (uint32_t i = q; i < q + 4; ++i)
        if ((l.mask & (1u << i)) && !l.v[i]) return false;
    return true;
}
inline bool quad_any(bool b) {
    auto l = fgemu_detail::exchange(b);
    const uint32_t q = fgemu_detail::quad_base(l.self);
    for (uint32_t i = q; i < q + 4; ++i)
        if ((l.mask & (1u << i)) && l.v[i]) return true;
    return false;
}
inline simd_vote quad_ballot(bool b) {
    auto l = fgemu_detail::exchange(b);
    const uint32_t q = fgemu_detail::quad_base(l.self);
    unsigned long long m = 0;
    for (uint32_t i = q; i < q + 4; ++i)
        if ((l.mask & (1u << i)) && l.v[i]) m |= 1ull << (i - q);
    return simd_vote{m};
}
inline void quadgroup_barrier(mem_flags) { fgemu::simd_sync(); }


}  // namespace metal
