// MSL vector types for the emulator: vec<T, N> with the component names x y z w (and r g b a),
// swizzles, component-wise arithmetic and comparisons, and the packed_* types, at global
// scope and in namespace metal as Metal has them. Layout follows MSL: a 3-component vector
// occupies 4 components (float3 is 16 bytes), packed_float3 is 12.
//
// Swizzles of two or more components (v.xy, v.zyx, v.rgba) are rewritten by the scanner into
// v.template fg_sw<0, 1>() (a vector of the components), or v.template fg_swr<0, 1>() where
// the swizzle is assigned to: a view that writes its components back.
#pragma once

#include "fgemu/scalar.hpp"

namespace metal {

template <class T, int N, bool Packed = false>
struct vec;

namespace detail {

constexpr int storage(int n, bool packed) { return (n == 3 && !packed) ? 4 : n; }
constexpr size_t align_of(size_t elem, int n, bool packed) {
    return packed ? elem : elem * size_t(storage(n, false));
}

template <class T, int S, int N>
struct storage_base;
template <class T, int S>
struct storage_base<T, S, 1> {
    union {
        T v[S];
        struct { T x; };
        struct { T r; };
    };
};
template <class T, int S>
struct storage_base<T, S, 2> {
    union {
        T v[S];
        struct { T x, y; };
        struct { T r, g; };
    };
};
template <class T, int S>
struct storage_base<T, S, 3> {
    union {
        T v[S];
        struct { T x, y, z; };
        struct { T r, g, b; };
    };
};
template <class T, int S>
struct storage_base<T, S, 4> {
    union {
        T v[S];
        struct { T x, y, z, w; };
        struct { T r, g, b, a; };
    };
};

template <class T>
struct is_vec : std::false_type {};
template <class T, int N, bool P>
struct is_vec<vec<T, N, P>> : std::true_type {};

template <class A>
constexpr int count_components() {
    using D = std::decay_t<A>;
    if constexpr (requires { D::size; typename D::value_type; } && !fgemu::is_scalar_v<D>)
        return D::size;
    else
        return 1;
}

}  // namespace detail

template <class V, int... I>
struct swizzle_view;

template <class T, int N, bool Packed>
struct alignas(detail::align_of(sizeof(T), N, Packed)) vec
    : detail::storage_base<T, detail::storage(N, Packed), N> {
    static constexpr int size = N;
    using value_type = T;
    using element_type = T;

    vec() = default;
    // Scalar broadcast: float4 v = 0.0f;
    template <class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
    constexpr vec(U s) : detail::storage_base<T, detail::storage(N, Packed), N>{} {
        for (int i = 0; i < N; ++i) this->v[i] = T(s);
    }
    // Brace initialisation from scalars of one type, `uint4 k = {a, b, c};`, `float4 v = {1};`:
    // the values fill the first lanes and the remaining lanes are zero, as for Metal's
    // vectors (a braced list is never a broadcast). A list of mixed types, or with
    // sub-vectors, goes to the constructor below and must give all N components.
    template <class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
    constexpr vec(std::initializer_list<U> l)
        : detail::storage_base<T, detail::storage(N, Packed), N>{} {
        int k = 0;
        for (const U& u : l) {
            if (k == N) fgemu::fail("too many values in a vector's brace initialiser");
            this->v[k++] = T(u);
        }
        for (; k < N; ++k) this->v[k] = T(0);
    }
    // Components and sub-vectors: float4(a, b, c, d), float4(xy, zw), float3(xy, z), exactly
    // N components, as Metal's constructors require (float4(xy, z) is an error there too).
    template <class A0, class A1, class... As,
              std::enable_if_t<(detail::count_components<A0>() + detail::count_components<A1>() +
                                (0 + ... + detail::count_components<As>())) == N, int> = 0>
    constexpr vec(const A0& a0, const A1& a1, const As&... as)
        : detail::storage_base<T, detail::storage(N, Packed), N>{} {
        int k = 0;
        put(k, a0);
        put(k, a1);
        (put(k, as), ...);
    }
    // Element-type conversion is explicit in MSL (float2(uint2)); packing is implicit.
    template <class U, bool P2, std::enable_if_t<!std::is_same_v<U, T>, int> = 0>
    constexpr explicit vec(const vec<U, N, P2>& o)
        : detail::storage_base<T, detail::storage(N, Packed), N>{} {
        for (int i = 0; i < N; ++i) this->v[i] = T(o[i]);
    }
    template <bool P2, std::enable_if_t<P2 != Packed, int> = 0>
    constexpr vec(const vec<T, N, P2>& o) : detail::storage_base<T, detail::storage(N, Packed), N>{} {
        for (int i = 0; i < N; ++i) this->v[i] = o[i];
    }

    constexpr T& operator[](int i) { return this->v[i]; }
    constexpr const T& operator[](int i) const { return this->v[i]; }

    // v.xy read: a vector; v.xy = ... (and +=, ++ ...): a view that writes back.
    template <int... I>
    constexpr vec<T, int(sizeof...(I))> fg_sw() const { return vec<T, int(sizeof...(I))>(this->v[I]...); }
    template <int... I>
    swizzle_view<vec, I...> fg_swr() { return swizzle_view<vec, I...>(*this); }

private:
    template <class A>
    constexpr void put(int& k, const A& a) {
        if constexpr (detail::count_components<A>() > 1 || detail::is_vec<A>::value) {
            for (int i = 0; i < detail::count_components<A>(); ++i) this->v[k++] = T(a[i]);
        } else {
            this->v[k++] = T(a);
        }
    }
};

// A swizzle of an lvalue vector: a vector of the picked components that writes them back.
template <class V, int... I>
struct swizzle_view : vec<typename V::value_type, int(sizeof...(I))> {
    using T = typename V::value_type;
    using base = vec<T, int(sizeof...(I))>;
    V* src;
    explicit swizzle_view(V& v) : base(v.v[I]...), src(&v) {}
    swizzle_view(const swizzle_view&) = default;
    swizzle_view& operator=(const base& r) {
        int k = 0;
        ((src->v[I] = r[k], this->v[k] = r[k], ++k), ...);
        return *this;
    }
    swizzle_view& operator=(const swizzle_view& r) { return *this = static_cast<const base&>(r); }
    template <class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
    swizzle_view& operator=(U s) { return *this = base(s); }
    template <class B> swizzle_view& operator+=(const B& b) { return *this = base(static_cast<base&>(*this) + b); }
    template <class B> swizzle_view& operator-=(const B& b) { return *this = base(static_cast<base&>(*this) - b); }
    template <class B> swizzle_view& operator*=(const B& b) { return *this = base(static_cast<base&>(*this) * b); }
    template <class B> swizzle_view& operator/=(const B& b) { return *this = base(static_cast<base&>(*this) / b); }
};

#define FG_VEC_TYPES(T, name)                  \
    typedef vec<T, 2> name##2;                 \
    typedef vec<T, 3> name##3;                 \
    typedef vec<T, 4> name##4;                 \
    typedef vec<T, 2, true> packed_##name##2;  \
    typedef vec<T, 3, true> packed_##name##3;  \
    typedef vec<T, 4, true> packed_##name##4;
FG_VEC_TYPES(float, float)
FG_VEC_TYPES(half, half)
FG_VEC_TYPES(bfloat, bfloat)
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
typedef vec<float, 1> float1;
typedef vec<int, 1> int1;
typedef vec<uint, 1> uint1;

// ---- component-wise operators ------------------------------------------------------------
namespace detail {
template <class T, class U>
using op_t = std::conditional_t<std::is_same_v<T, bool>, int, T>;
}
#define FG_VEC_BINOP(op)                                                                     \
    template <class T, int N, bool P, bool Q>                                                \
    constexpr vec<T, N> operator op(const vec<T, N, P>& a, const vec<T, N, Q>& b) {          \
        vec<T, N> r{};                                                                       \
        for (int i = 0; i < N; ++i) r[i] = T(a[i] op b[i]);                                  \
        return r;                                                                            \
    }                                                                                        \
    template <class T, int N, bool P, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0> \
    constexpr vec<T, N> operator op(const vec<T, N, P>& a, U b) {                            \
        vec<T, N> r{};                                                                       \
        for (int i = 0; i < N; ++i) r[i] = T(a[i] op T(b));                                  \
        return r;                                                                            \
    }                                                                                        \
    template <class T, int N, bool P, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0> \
    constexpr vec<T, N> operator op(U a, const vec<T, N, P>& b) {                            \
        vec<T, N> r{};                                                                       \
        for (int i = 0; i < N; ++i) r[i] = T(T(a) op b[i]);                                  \
        return r;                                                                            \
    }                                                                                        \
    template <class T, int N, bool P, class B>                                               \
    constexpr vec<T, N, P>& operator op##=(vec<T, N, P>& a, const B& b) {                    \
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

// Shifts whose counts have another integer type (int2 << uint2), as MSL allows.
#define FG_VEC_SHIFT(op)                                                                     \
    template <class T, int N, bool P, class U, bool Q,                                       \
              std::enable_if_t<!std::is_same_v<T, U> && std::is_integral_v<U>, int> = 0>      \
    constexpr vec<T, N> operator op(const vec<T, N, P>& a, const vec<U, N, Q>& b) {          \
        vec<T, N> r{};                                                                       \
        for (int i = 0; i < N; ++i) r[i] = T(a[i] op b[i]);                                  \
        return r;                                                                            \
    }
FG_VEC_SHIFT(<<)
FG_VEC_SHIFT(>>)
#undef FG_VEC_SHIFT

#define FG_VEC_CMP(op)                                                                       \
    template <class T, int N, bool P, bool Q>                                                \
    constexpr vec<bool, N> operator op(const vec<T, N, P>& a, const vec<T, N, Q>& b) {       \
        vec<bool, N> r{};                                                                    \
        for (int i = 0; i < N; ++i) r[i] = a[i] op b[i];                                     \
        return r;                                                                            \
    }                                                                                        \
    template <class T, int N, bool P, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0> \
    constexpr vec<bool, N> operator op(const vec<T, N, P>& a, U b) {                         \
        vec<bool, N> r{};                                                                    \
        for (int i = 0; i < N; ++i) r[i] = a[i] op T(b);                                     \
        return r;                                                                            \
    }                                                                                        \
    template <class T, int N, bool P, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0> \
    constexpr vec<bool, N> operator op(U a, const vec<T, N, P>& b) {                         \
        vec<bool, N> r{};                                                                    \
        for (int i = 0; i < N; ++i) r[i] = T(a) op b[i];                                     \
        return r;                                                                            \
    }
FG_VEC_CMP(==)
FG_VEC_CMP(!=)
FG_VEC_CMP(<)
FG_VEC_CMP(<=)
FG_VEC_CMP(>)
FG_VEC_CMP(>=)
FG_VEC_CMP(&&)
FG_VEC_CMP(||)
#undef FG_VEC_CMP

template <class T, int N, bool P>
constexpr vec<T, N> operator-(const vec<T, N, P>& a) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = T(-a[i]);
    return r;
}
template <class T, int N, bool P>
constexpr vec<T, N> operator+(const vec<T, N, P>& a) { return a; }
template <class T, int N, bool P>
constexpr vec<T, N> operator~(const vec<T, N, P>& a) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = T(~a[i]);
    return r;
}
template <class T, int N, bool P>
constexpr vec<bool, N> operator!(const vec<T, N, P>& a) {
    vec<bool, N> r{};
    for (int i = 0; i < N; ++i) r[i] = !a[i];
    return r;
}
template <class T, int N, bool P>
vec<T, N, P>& operator++(vec<T, N, P>& a) { return a += T(1); }
template <class T, int N, bool P>
vec<T, N, P>& operator--(vec<T, N, P>& a) { return a -= T(1); }
template <class T, int N, bool P>
vec<T, N, P> operator++(vec<T, N, P>& a, int) { auto o = a; a += T(1); return o; }
template <class T, int N, bool P>
vec<T, N, P> operator--(vec<T, N, P>& a, int) { auto o = a; a -= T(1); return o; }

template <class T, size_t N>
struct array {
    T _elems[N ? N : 1];
    constexpr T& operator[](size_t i) { return _elems[i]; }
    constexpr const T& operator[](size_t i) const { return _elems[i]; }
    static constexpr size_t size() { return N; }
    constexpr T* data() { return _elems; }
    constexpr const T* data() const { return _elems; }
    constexpr T* begin() { return _elems; }
    constexpr T* end() { return _elems + N; }
    constexpr const T* begin() const { return _elems; }
    constexpr const T* end() const { return _elems + N; }
};
template <class T, size_t N>
using array_ref = const T (&)[N];

// as_type<T>(x): bit reinterpretation of equal-sized values.
template <class To, class From>
To as_type(const From& f) {
    static_assert(sizeof(To) == sizeof(From), "as_type needs equal sizes");
    To t;
    std::memcpy(static_cast<void*>(&t), &f, sizeof(To));
    return t;
}

// Apple's trait for the element types SIMD-group functions take (libraries test it).
template <class T>
struct __is_valid_simdgroup_type
    : std::bool_constant<fgemu::is_scalar_v<std::remove_cv_t<T>> || detail::is_vec<std::remove_cv_t<T>>::value> {};

template <class V>
struct vec_elements {
    static constexpr int value = detail::count_components<V>();
};
template <class V>
using vec_element_t = std::conditional_t<detail::is_vec<V>::value, typename V::value_type, V>;

}  // namespace metal

// as_type is a builtin operator in Metal, usable without metal::.
using metal::as_type;

// Metal has its vector types at global scope too.
#define FG_GLOBAL_VEC(name) using metal::name##2; using metal::name##3; using metal::name##4; \
    using metal::packed_##name##2; using metal::packed_##name##3; using metal::packed_##name##4;
FG_GLOBAL_VEC(float)
FG_GLOBAL_VEC(half)
FG_GLOBAL_VEC(bfloat)
FG_GLOBAL_VEC(int)
FG_GLOBAL_VEC(uint)
FG_GLOBAL_VEC(short)
FG_GLOBAL_VEC(ushort)
FG_GLOBAL_VEC(char)
FG_GLOBAL_VEC(uchar)
FG_GLOBAL_VEC(bool)
FG_GLOBAL_VEC(long)
FG_GLOBAL_VEC(ulong)
#undef FG_GLOBAL_VEC
