// MSL scalar and vector types for the emulator: uint/ushort/half..., vec<T, N> with the
// component names x y z w (and r g b a), the common swizzles, component-wise arithmetic,
// comparisons and the packed_* types. Layout follows MSL: a 3-component vector occupies
// 4 components (float3 is 16 bytes), packed_float3 is 12.
#pragma once

#include "fgemu/prelude.hpp"

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;

namespace metal {

#if defined(__FLT16_MAX__)
typedef _Float16 half;
#else
#error "metal-emu needs a C++ compiler with _Float16 (GCC >= 12, Clang >= 15)"
#endif
typedef half half_t;
typedef float bfloat;  // stored as float: bfloat rounding is not emulated

template <class T, int N, bool Packed = false>
struct vec;

namespace detail {

constexpr int storage(int n, bool packed) { return (n == 3 && !packed) ? 4 : n; }
constexpr size_t align_of(size_t elem, int n, bool packed) {
    return packed ? elem : elem * size_t(storage(n, false));
}

// A swizzle member: S = storage components of the owning vector, I... = picked components.
template <class T, int S, int... I>
struct swizzle {
    T v[S];
    using result = vec<T, int(sizeof...(I))>;
    operator result() const { return result(v[I]...); }
    result operator()() const { return result(v[I]...); }
    swizzle& operator=(const result& r) {
        int k = 0;
        ((v[I] = r[k++]), ...);
        return *this;
    }
    // No user-declared copy assignment (it would make the union non-trivial): assigning a
    // swizzle to the *same* swizzle of another vector copies the whole storage (limitation).
};

template <class T, int S, int N>
struct storage_base;

#define FG_SW2(S, a, b) swizzle<T, S, a, b>
template <class T, int S>
struct storage_base<T, S, 2> {
    union {
        T v[S];
        struct { T x, y; };
        struct { T r, g; };
        swizzle<T, S, 0, 1> xy;
        swizzle<T, S, 1, 0> yx;
        swizzle<T, S, 0, 0> xx;
        swizzle<T, S, 1, 1> yy;
    };
};
template <class T, int S>
struct storage_base<T, S, 3> {
    union {
        T v[S];
        struct { T x, y, z; };
        struct { T r, g, b; };
        swizzle<T, S, 0, 1> xy;
        swizzle<T, S, 1, 0> yx;
        swizzle<T, S, 0, 2> xz;
        swizzle<T, S, 1, 2> yz;
        swizzle<T, S, 2, 1> zy;
        swizzle<T, S, 2, 0> zx;
        swizzle<T, S, 0, 1, 2> xyz;
        swizzle<T, S, 2, 1, 0> zyx;
    };
};
template <class T, int S>
struct storage_base<T, S, 4> {
    union {
        T v[S];
        struct { T x, y, z, w; };
        struct { T r, g, b, a; };
        swizzle<T, S, 0, 1> xy;
        swizzle<T, S, 1, 0> yx;
        swizzle<T, S, 0, 2> xz;
        swizzle<T, S, 1, 2> yz;
        swizzle<T, S, 2, 3> zw;
        swizzle<T, S, 3, 2> wz;
        swizzle<T, S, 0, 3> xw;
        swizzle<T, S, 1, 3> yw;
        swizzle<T, S, 0, 1, 2> xyz;
        swizzle<T, S, 1, 2, 3> yzw;
        swizzle<T, S, 0, 1, 2, 3> xyzw;
        swizzle<T, S, 3, 2, 1, 0> wzyx;
    };
};

template <class T>
struct is_vec : std::false_type {};
template <class T, int N, bool P>
struct is_vec<vec<T, N, P>> : std::true_type {};

template <class A>
constexpr int count_components() {
    if constexpr (is_vec<std::decay_t<A>>::value)
        return std::decay_t<A>::size;
    else
        return 1;
}

}  // namespace detail

template <class T, int N, bool Packed>
struct alignas(detail::align_of(sizeof(T), N, Packed)) vec
    : detail::storage_base<T, detail::storage(N, Packed), N> {
    static constexpr int size = N;
    using value_type = T;

    vec() = default;
    // Scalar broadcast: float4 v = 0.0f;
    template <class U, std::enable_if_t<std::is_arithmetic_v<U> || std::is_same_v<U, half>, int> = 0>
    vec(U s) {
        for (int i = 0; i < N; ++i) this->v[i] = T(s);
    }
    // Components and sub-vectors: float4(a, b, c, d), float4(xy, zw), float3(xy, z).
    template <class A0, class A1, class... As,
              std::enable_if_t<(detail::count_components<A0>() + detail::count_components<A1>() +
                                (0 + ... + detail::count_components<As>())) == N, int> = 0>
    vec(const A0& a0, const A1& a1, const As&... as) {
        int k = 0;
        put(k, a0);
        put(k, a1);
        (put(k, as), ...);
    }
    // Element-type conversion is explicit in MSL (float2(uint2)); packing is implicit.
    template <class U, bool P2, std::enable_if_t<!std::is_same_v<U, T>, int> = 0>
    explicit vec(const vec<U, N, P2>& o) {
        for (int i = 0; i < N; ++i) this->v[i] = T(o[i]);
    }
    template <bool P2, std::enable_if_t<P2 != Packed, int> = 0>
    vec(const vec<T, N, P2>& o) {
        for (int i = 0; i < N; ++i) this->v[i] = o[i];
    }
    template <int S, int... I, std::enable_if_t<sizeof...(I) == size_t(N), int> = 0>
    vec(const detail::swizzle<T, S, I...>& s) : vec(s()) {}

    T& operator[](int i) { return this->v[i]; }
    const T& operator[](int i) const { return this->v[i]; }

private:
    template <class A>
    void put(int& k, const A& a) {
        if constexpr (detail::is_vec<A>::value) {
            for (int i = 0; i < A::size; ++i) this->v[k++] = T(a[i]);
        } else if constexpr (std::is_class_v<A>) {  // a swizzle
            auto r = a();
            for (int i = 0; i < decltype(r)::size; ++i) this->v[k++] = T(r[i]);
        } else {
            this->v[k++] = T(a);
        }
    }
};

#define FG_VEC_TYPES(T, name)            \
    typedef vec<T, 2> name##2;           \
    typedef vec<T, 3> name##3;           \
    typedef vec<T, 4> name##4;           \
    typedef vec<T, 2, true> packed_##name##2; \
    typedef vec<T, 3, true> packed_##name##3; \
    typedef vec<T, 4, true> packed_##name##4;
FG_VEC_TYPES(float, float)
FG_VEC_TYPES(half, half)
FG_VEC_TYPES(int, int)
FG_VEC_TYPES(uint, uint)
FG_VEC_TYPES(short, short)
FG_VEC_TYPES(ushort, ushort)
FG_VEC_TYPES(char, char)
FG_VEC_TYPES(uchar, uchar)
FG_VEC_TYPES(bool, bool)
FG_VEC_TYPES(long, long)
FG_VEC_TYPES(ulong, ulong)
#undef FG_VEC_TYPES

// ---- component-wise operators ------------------------------------------------------------
#define FG_VEC_BINOP(op)                                                                     \
    template <class T, int N, bool P, bool Q>                                                \
    vec<T, N> operator op(const vec<T, N, P>& a, const vec<T, N, Q>& b) {                    \
        vec<T, N> r;                                                                         \
        for (int i = 0; i < N; ++i) r[i] = T(a[i] op b[i]);                                  \
        return r;                                                                            \
    }                                                                                        \
    template <class T, int N, bool P, class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0> \
    vec<T, N> operator op(const vec<T, N, P>& a, U b) {                                      \
        vec<T, N> r;                                                                         \
        for (int i = 0; i < N; ++i) r[i] = T(a[i] op T(b));                                  \
        return r;                                                                            \
    }                                                                                        \
    template <class T, int N, bool P, class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0> \
    vec<T, N> operator op(U a, const vec<T, N, P>& b) {                                      \
        vec<T, N> r;                                                                         \
        for (int i = 0; i < N; ++i) r[i] = T(T(a) op b[i]);                                  \
        return r;                                                                            \
    }                                                                                        \
    template <class T, int N, bool P, class B>                                               \
    vec<T, N, P>& operator op##=(vec<T, N, P>& a, const B& b) {                              \
        a = vec<T, N, P>(a op b);                                                            \
        return a;                                                                            \
    }
FG_VEC_BINOP(+)
FG_VEC_BINOP(-)
FG_VEC_BINOP(*)
FG_VEC_BINOP(/)
FG_VEC_BINOP(%)
FG_VEC_BINOP(&)
FG_VEC_BINOP(|)
FG_VEC_BINOP(^)
FG_VEC_BINOP(<<)
FG_VEC_BINOP(>>)
#undef FG_VEC_BINOP

#define FG_VEC_CMP(op)                                                                       \
    template <class T, int N, bool P, bool Q>                                                \
    vec<bool, N> operator op(const vec<T, N, P>& a, const vec<T, N, Q>& b) {                 \
        vec<bool, N> r;                                                                      \
        for (int i = 0; i < N; ++i) r[i] = a[i] op b[i];                                     \
        return r;                                                                            \
    }                                                                                        \
    template <class T, int N, bool P, class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0> \
    vec<bool, N> operator op(const vec<T, N, P>& a, U b) {                                   \
        vec<bool, N> r;                                                                      \
        for (int i = 0; i < N; ++i) r[i] = a[i] op T(b);                                     \
        return r;                                                                            \
    }
FG_VEC_CMP(==)
FG_VEC_CMP(!=)
FG_VEC_CMP(<)
FG_VEC_CMP(<=)
FG_VEC_CMP(>)
FG_VEC_CMP(>=)
#undef FG_VEC_CMP

template <class T, int N, bool P>
vec<T, N> operator-(const vec<T, N, P>& a) {
    vec<T, N> r;
    for (int i = 0; i < N; ++i) r[i] = T(-a[i]);
    return r;
}

// Swizzles used directly in arithmetic: a.xy + b.xy.
template <class T, int S, int... I>
auto operator+(const detail::swizzle<T, S, I...>& a, const detail::swizzle<T, S, I...>& b) {
    return a() + b();
}

// ---- scalar and vector functions ----------------------------------------------------------
using std::abs;
using std::ceil;
using std::cos;
using std::exp;
using std::exp2;
using std::floor;
using std::fma;
using std::isfinite;
using std::isinf;
using std::isnan;
using std::log;
using std::log2;
using std::pow;
using std::round;
using std::sin;
using std::sqrt;
using std::tanh;
using std::trunc;

template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
inline T min(T a, T b) { return b < a ? b : a; }
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
inline T max(T a, T b) { return a < b ? b : a; }
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <class T>
inline T select(T a, T b, bool c) { return c ? b : a; }
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }

#define FG_VEC_FN2(name)                                                          \
    template <class T, int N, bool P, bool Q>                                     \
    vec<T, N> name(const vec<T, N, P>& a, const vec<T, N, Q>& b) {                \
        vec<T, N> r;                                                              \
        for (int i = 0; i < N; ++i) r[i] = name(a[i], b[i]);                      \
        return r;                                                                 \
    }
FG_VEC_FN2(min)
FG_VEC_FN2(max)
#undef FG_VEC_FN2

template <class T, int N, bool P>
vec<T, N> fma(const vec<T, N, P>& a, const vec<T, N, P>& b, const vec<T, N, P>& c) {
    vec<T, N> r;
    for (int i = 0; i < N; ++i) r[i] = std::fma(a[i], b[i], c[i]);
    return r;
}
template <class T, int N, bool P>
vec<T, N> abs(const vec<T, N, P>& a) {
    vec<T, N> r;
    for (int i = 0; i < N; ++i) r[i] = std::abs(a[i]);
    return r;
}
template <class T, int N, bool P, bool Q>
T dot(const vec<T, N, P>& a, const vec<T, N, Q>& b) {
    T s = T(0);
    for (int i = 0; i < N; ++i) s += a[i] * b[i];
    return s;
}
template <int N, bool P>
bool all(const vec<bool, N, P>& a) {
    for (int i = 0; i < N; ++i)
        if (!a[i]) return false;
    return true;
}
template <int N, bool P>
bool any(const vec<bool, N, P>& a) {
    for (int i = 0; i < N; ++i)
        if (a[i]) return true;
    return false;
}
template <class T, int N, bool P, bool Q>
vec<T, N> select(const vec<T, N, P>& a, const vec<T, N, P>& b, const vec<bool, N, Q>& c) {
    vec<T, N> r;
    for (int i = 0; i < N; ++i) r[i] = c[i] ? b[i] : a[i];
    return r;
}

template <class T, size_t N>
using array = std::array<T, N>;

namespace precise {
using std::exp;
using std::sqrt;
using std::log;
}  // namespace precise
namespace fast {
using std::exp;
using std::sqrt;
using std::log;
}  // namespace fast

// as_type<T>(x): bit reinterpretation of equal-sized values.
template <class To, class From>
To as_type(const From& f) {
    static_assert(sizeof(To) == sizeof(From), "as_type needs equal sizes");
    To t;
    std::memcpy(&t, &f, sizeof(To));
    return t;
}

}  // namespace metal
