// MSL math, common, integer, geometric and relational functions (metal_math, metal_common,
// metal_integer, metal_geometric, metal_relational), for float, half and bfloat scalars and
// vectors, and the precise:: and fast:: namespaces. Scalar functions are templates, so a
// library's own non-template overloads (MLX adds bfloat ones) take precedence over them.
// Half and bfloat functions compute in float and round once, like Apple's.
#pragma once

#include "fgemu/types.hpp"

namespace metal {

namespace detail {
template <class T>
using calc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;
template <class T, class R = T>
using if_float = std::enable_if_t<fgemu::is_float_v<T>, R>;
template <class T, class R = T>
using if_int = std::enable_if_t<std::is_integral_v<T>, R>;
template <class T, class R = T>
using if_scalar = std::enable_if_t<fgemu::is_scalar_v<T>, R>;
}  // namespace detail

// One-argument float functions, scalar and vector.
// Scalar functions: non-template float and half overloads as Metal declares them (so that
// pow(x, 2) converts the int), and a template for bfloat and the rest.
#define FG_MATH1(name, impl)                                                                    \
    inline float name(float x) { return float(impl(x)); }                                       \
    inline half name(half x) { return half(impl(float(x))); }                                   \
    template <class T, std::enable_if_t<!std::is_same_v<T, float> && !std::is_same_v<T, half>, int> = 0> \
    inline detail::if_float<T> name(T x) {                                                      \
        using C = detail::calc_t<T>;                                                            \
        return T(impl(C(x)));                                                                   \
    }                                                                                           \
    template <class T, int N, bool P>                                                           \
    inline detail::if_float<T, vec<T, N>> name(const vec<T, N, P>& a) {                         \
        vec<T, N> r{};                                                                          \
        for (int i = 0; i < N; ++i) r[i] = name(a[i]);                                          \
        return r;                                                                               \
    }
#define FG_MATH2(name, impl)                                                                    \
    inline float name(float x, float y) { return float(impl(x, y)); }                           \
    inline half name(half x, half y) { return half(impl(float(x), float(y))); }                 \
    template <class T, std::enable_if_t<!std::is_same_v<T, float> && !std::is_same_v<T, half>, int> = 0> \
    inline detail::if_float<T> name(T x, T y) {                                                 \
        using C = detail::calc_t<T>;                                                            \
        return T(impl(C(x), C(y)));                                                             \
    }                                                                                           \
    template <class T, int N, bool P, bool Q>                                                   \
    inline detail::if_float<T, vec<T, N>> name(const vec<T, N, P>& a, const vec<T, N, Q>& b) {  \
        vec<T, N> r{};                                                                          \
        for (int i = 0; i < N; ++i) r[i] = name(a[i], b[i]);                                    \
        return r;                                                                               \
    }                                                                                           \
    template <class T, int N, bool P, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0> \
    inline detail::if_float<T, vec<T, N>> name(const vec<T, N, P>& a, U b) {                    \
        vec<T, N> r{};                                                                          \
        for (int i = 0; i < N; ++i) r[i] = name(a[i], T(b));                                    \
        return r;                                                                               \
    }                                                                                           \
    template <class T, int N, bool P, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0> \
    inline detail::if_float<T, vec<T, N>> name(U a, const vec<T, N, P>& b) {                    \
        vec<T, N> r{};                                                                          \
        for (int i = 0; i < N; ++i) r[i] = name(T(a), b[i]);                                    \
        return r;                                                                               \
    }
#define FG_MATH3(name, impl)                                                                    \
    inline float name(float x, float y, float z) { return float(impl(x, y, z)); }               \
    inline half name(half x, half y, half z) { return half(impl(float(x), float(y), float(z))); } \
    template <class T, std::enable_if_t<!std::is_same_v<T, float> && !std::is_same_v<T, half>, int> = 0> \
    inline detail::if_float<T> name(T x, T y, T z) {                                            \
        using C = detail::calc_t<T>;                                                            \
        return T(impl(C(x), C(y), C(z)));                                                       \
    }                                                                                           \
    template <class T, int N, bool P, bool Q, bool R>                                           \
    inline detail::if_float<T, vec<T, N>> name(const vec<T, N, P>& a, const vec<T, N, Q>& b,    \
                                               const vec<T, N, R>& c) {                         \
        vec<T, N> r{};                                                                          \
        for (int i = 0; i < N; ++i) r[i] = name(a[i], b[i], c[i]);                              \
        return r;                                                                               \
    }

namespace detail {
template <class C> C fract_(C x) { return fgemu::libm::fmin(x - fgemu::libm::floor(x), C(0x1.fffffep-1)); }
template <class C> C rsqrt_(C x) { return C(1) / fgemu::libm::sqrt(x); }
template <class C> C sinpi_(C x) { return fgemu::libm::sin(x * C(M_PI_F)); }
template <class C> C cospi_(C x) { return fgemu::libm::cos(x * C(M_PI_F)); }
template <class C> C tanpi_(C x) { return fgemu::libm::tan(x * C(M_PI_F)); }
template <class C> C exp10_(C x) { return fgemu::libm::pow(C(10), x); }
template <class C> C saturate_(C x) { return fgemu::libm::fmin(fgemu::libm::fmax(x, C(0)), C(1)); }
template <class C> C sign_(C x) { return x > C(0) ? C(1) : x < C(0) ? C(-1) : fgemu::libm::isnan(x) ? C(0) : x; }
template <class C> C powr_(C x, C y) { return fgemu::libm::pow(x, y); }
template <class C> C step_(C edge, C x) { return x < edge ? C(0) : C(1); }
template <class C> C divide_(C x, C y) { return x / y; }
template <class C> C fmax3_(C x, C y, C z) { return fgemu::libm::fmax(fgemu::libm::fmax(x, y), z); }
template <class C> C fmin3_(C x, C y, C z) { return fgemu::libm::fmin(fgemu::libm::fmin(x, y), z); }
template <class C> C fmedian3_(C x, C y, C z) { return fgemu::libm::fmax(fgemu::libm::fmin(x, y), fgemu::libm::fmin(fgemu::libm::fmax(x, y), z)); }
template <class C> C mix_(C x, C y, C a) { return x + (y - x) * a; }
template <class C> C smoothstep_(C e0, C e1, C x) {
    C t = saturate_((x - e0) / (e1 - e0));
    return t * t * (C(3) - C(2) * t);
}
template <class C> C clampf_(C x, C lo, C hi) { return fgemu::libm::fmin(fgemu::libm::fmax(x, lo), hi); }
}  // namespace detail

FG_MATH1(acos, fgemu::libm::acos)
FG_MATH1(acosh, fgemu::libm::acosh)
FG_MATH1(asin, fgemu::libm::asin)
FG_MATH1(asinh, fgemu::libm::asinh)
FG_MATH1(atan, fgemu::libm::atan)
FG_MATH1(atanh, fgemu::libm::atanh)
FG_MATH1(ceil, fgemu::libm::ceil)
FG_MATH1(cos, fgemu::libm::cos)
FG_MATH1(cosh, fgemu::libm::cosh)
FG_MATH1(cospi, detail::cospi_)
FG_MATH1(exp, fgemu::libm::exp)
FG_MATH1(exp2, fgemu::libm::exp2)
FG_MATH1(exp10, detail::exp10_)
FG_MATH1(fabs, fgemu::libm::fabs)
FG_MATH1(floor, fgemu::libm::floor)
FG_MATH1(fract, detail::fract_)
FG_MATH1(log, fgemu::libm::log)
FG_MATH1(log2, fgemu::libm::log2)
FG_MATH1(log10, fgemu::libm::log10)
FG_MATH1(rint, fgemu::libm::rint)
FG_MATH1(round, fgemu::libm::round)
FG_MATH1(rsqrt, detail::rsqrt_)
FG_MATH1(sin, fgemu::libm::sin)
FG_MATH1(sinh, fgemu::libm::sinh)
FG_MATH1(sinpi, detail::sinpi_)
FG_MATH1(sqrt, fgemu::libm::sqrt)
FG_MATH1(tan, fgemu::libm::tan)
FG_MATH1(tanh, fgemu::libm::tanh)
FG_MATH1(tanpi, detail::tanpi_)
FG_MATH1(trunc, fgemu::libm::trunc)
FG_MATH1(saturate, detail::saturate_)
// Not here on purpose: erf, erfc, expm1, log1p, cbrt, hypot are not in Metal's library, and
// libraries that need them define their own (a second candidate would be ambiguous).
FG_MATH2(atan2, fgemu::libm::atan2)
FG_MATH2(copysign, fgemu::libm::copysign)
FG_MATH2(fdim, fgemu::libm::fdim)
FG_MATH2(fmax, fgemu::libm::fmax)
FG_MATH2(fmin, fgemu::libm::fmin)
FG_MATH2(fmod, fgemu::libm::fmod)
FG_MATH2(nextafter, fgemu::libm::nextafter)
FG_MATH2(pow, fgemu::libm::pow)
FG_MATH2(powr, detail::powr_)
FG_MATH2(divide, detail::divide_)
FG_MATH3(fma, fgemu::libm::fma)
FG_MATH3(mad, fgemu::libm::fma)
FG_MATH3(fmax3, detail::fmax3_)
FG_MATH3(fmin3, detail::fmin3_)
FG_MATH3(fmedian3, detail::fmedian3_)
FG_MATH3(smoothstep, detail::smoothstep_)

// abs, sign: floats and integers.
template <class T>
inline detail::if_scalar<T> abs(T x) {
    if constexpr (fgemu::is_float_v<T>) return T(fgemu::libm::fabs(float(x)));
    else if constexpr (std::is_unsigned_v<T>) return x;
    else return T(x < 0 ? -x : x);
}
template <class T, int N, bool P>
inline vec<T, N> abs(const vec<T, N, P>& a) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = abs(a[i]);
    return r;
}
template <class T>
inline detail::if_float<T> sign(T x) { return T(detail::sign_(float(x))); }
template <class T, int N, bool P>
inline vec<T, N> sign(const vec<T, N, P>& a) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = sign(a[i]);
    return r;
}

// min, max, clamp: any scalar type (integers compare as integers; floats as fmin/fmax).
template <class T>
inline constexpr detail::if_scalar<T> min(T a, T b) {
    if constexpr (fgemu::is_float_v<T>) return (b < a || a != a) ? b : a;
    else return b < a ? b : a;
}
template <class T>
inline constexpr detail::if_scalar<T> max(T a, T b) {
    if constexpr (fgemu::is_float_v<T>) return (a < b || a != a) ? b : a;
    else return a < b ? b : a;
}
template <class T>
inline constexpr detail::if_scalar<T> clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <class T>
inline detail::if_scalar<T> min3(T a, T b, T c) { return min(min(a, b), c); }
template <class T>
inline detail::if_scalar<T> max3(T a, T b, T c) { return max(max(a, b), c); }
template <class T>
inline detail::if_scalar<T> median3(T a, T b, T c) { return max(min(a, b), min(max(a, b), c)); }
#define FG_VEC_FN2(name)                                                                        \
    template <class T, int N, bool P, bool Q>                                                   \
    vec<T, N> name(const vec<T, N, P>& a, const vec<T, N, Q>& b) {                              \
        vec<T, N> r{};                                                                          \
        for (int i = 0; i < N; ++i) r[i] = name(a[i], b[i]);                                    \
        return r;                                                                               \
    }                                                                                           \
    template <class T, int N, bool P, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0> \
    vec<T, N> name(const vec<T, N, P>& a, U b) {                                                \
        vec<T, N> r{};                                                                          \
        for (int i = 0; i < N; ++i) r[i] = name(a[i], T(b));                                    \
        return r;                                                                               \
    }
FG_VEC_FN2(min)
FG_VEC_FN2(max)
#undef FG_VEC_FN2
#define FG_VEC_FN3(name)                                                                        \
    template <class T, int N, bool P, bool Q, bool R>                                           \
    vec<T, N> name(const vec<T, N, P>& a, const vec<T, N, Q>& b, const vec<T, N, R>& c) {       \
        vec<T, N> r{};                                                                          \
        for (int i = 0; i < N; ++i) r[i] = name(a[i], b[i], c[i]);                              \
        return r;                                                                               \
    }
FG_VEC_FN3(clamp)
FG_VEC_FN3(min3)
FG_VEC_FN3(max3)
FG_VEC_FN3(median3)
#undef FG_VEC_FN3
template <class T, int N, bool P, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
vec<T, N> clamp(const vec<T, N, P>& x, U lo, U hi) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = clamp(x[i], T(lo), T(hi));
    return r;
}

// mix, step with scalar mixes.
template <class T>
inline detail::if_float<T> mix(T x, T y, T a) { return T(detail::mix_(float(x), float(y), float(a))); }
template <class T, int N, bool P, bool Q, bool R>
vec<T, N> mix(const vec<T, N, P>& x, const vec<T, N, Q>& y, const vec<T, N, R>& a) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = mix(x[i], y[i], a[i]);
    return r;
}
template <class T, int N, bool P, bool Q, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
vec<T, N> mix(const vec<T, N, P>& x, const vec<T, N, Q>& y, U a) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = mix(x[i], y[i], T(a));
    return r;
}
template <class T>
inline detail::if_float<T> step(T e, T x) { return T(detail::step_(float(e), float(x))); }
template <class T, int N, bool P, bool Q>
vec<T, N> step(const vec<T, N, P>& e, const vec<T, N, Q>& x) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = step(e[i], x[i]);
    return r;
}
template <class T, int N, bool P, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
vec<T, N> step(U e, const vec<T, N, P>& x) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = step(T(e), x[i]);
    return r;
}
template <class T, int N, bool P, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
vec<T, N> smoothstep(U e0, U e1, const vec<T, N, P>& x) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = smoothstep(T(e0), T(e1), x[i]);
    return r;
}
template <class T, int N, bool P, class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>
vec<T, N> fma(const vec<T, N, P>& a, const vec<T, N, P>& b, U c) { return fma(a, b, vec<T, N>(c)); }

// Functions with an out-parameter.
template <class T>
inline detail::if_float<T> modf(T x, T& ip) {
    float i;
    float f = fgemu::libm::modf(float(x), &i);
    ip = T(i);
    return T(f);
}
template <class T, int N, bool P>
vec<T, N> modf(const vec<T, N, P>& x, vec<T, N, P>& ip) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = modf(x[i], ip[i]);
    return r;
}
template <class T>
inline detail::if_float<T> sincos(T x, T& c) {
    c = T(fgemu::libm::cos(float(x)));
    return T(fgemu::libm::sin(float(x)));
}
template <class T, int N, bool P>
vec<T, N> sincos(const vec<T, N, P>& x, vec<T, N, P>& c) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = sincos(x[i], c[i]);
    return r;
}
template <class T>
inline detail::if_float<T> frexp(T x, int& e) { return T(fgemu::libm::frexp(float(x), &e)); }
template <class T, int N, bool P>
vec<T, N> frexp(const vec<T, N, P>& x, vec<int, N>& e) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = frexp(x[i], e[i]);
    return r;
}
template <class T>
inline detail::if_float<T> ldexp(T x, int e) { return T(fgemu::libm::ldexp(float(x), e)); }
template <class T, int N, bool P, bool Q>
vec<T, N> ldexp(const vec<T, N, P>& x, const vec<int, N, Q>& e) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = ldexp(x[i], e[i]);
    return r;
}
template <class T>
inline detail::if_float<T, int> ilogb(T x) { return fgemu::libm::ilogb(float(x)); }

// Classification.
template <class T>
inline detail::if_float<T, bool> isnan(T x) { return fgemu::libm::isnan(float(x)); }
template <class T>
inline detail::if_float<T, bool> isinf(T x) { return fgemu::libm::isinf(float(x)); }
template <class T>
inline detail::if_float<T, bool> isfinite(T x) { return fgemu::libm::isfinite(float(x)); }
template <class T>
inline detail::if_float<T, bool> isnormal(T x) { return fgemu::libm::isnormal(float(x)); }
template <class T>
inline detail::if_float<T, bool> signbit(T x) { return fgemu::libm::signbit(float(x)); }
template <class T>
inline detail::if_float<T, bool> isordered(T x, T y) { return x == x && y == y; }
template <class T>
inline detail::if_float<T, bool> isunordered(T x, T y) { return x != x || y != y; }
#define FG_VEC_PRED(name)                                                                       \
    template <class T, int N, bool P>                                                           \
    vec<bool, N> name(const vec<T, N, P>& a) {                                                  \
        vec<bool, N> r{};                                                                       \
        for (int i = 0; i < N; ++i) r[i] = name(a[i]);                                          \
        return r;                                                                               \
    }
FG_VEC_PRED(isnan)
FG_VEC_PRED(isinf)
FG_VEC_PRED(isfinite)
FG_VEC_PRED(isnormal)
FG_VEC_PRED(signbit)
#undef FG_VEC_PRED

template <int N, bool P>
constexpr bool all(const vec<bool, N, P>& a) {
    for (int i = 0; i < N; ++i)
        if (!a[i]) return false;
    return true;
}
template <int N, bool P>
constexpr bool any(const vec<bool, N, P>& a) {
    for (int i = 0; i < N; ++i)
        if (a[i]) return true;
    return false;
}
constexpr bool all(bool b) { return b; }
constexpr bool any(bool b) { return b; }
template <class T>
inline detail::if_scalar<T> select(T a, T b, bool c) { return c ? b : a; }
template <class T, int N, bool P, bool Q, bool R>
vec<T, N> select(const vec<T, N, P>& a, const vec<T, N, Q>& b, const vec<bool, N, R>& c) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = c[i] ? b[i] : a[i];
    return r;
}
template <class T, int N, bool P, bool Q>
vec<T, N> select(const vec<T, N, P>& a, const vec<T, N, Q>& b, bool c) { return c ? vec<T, N>(b) : vec<T, N>(a); }

// Geometric functions.
template <class T, int N, bool P, bool Q>
T dot(const vec<T, N, P>& a, const vec<T, N, Q>& b) {
    float s = 0;
    for (int i = 0; i < N; ++i) s += float(a[i]) * float(b[i]);
    return T(s);
}
template <class T>
inline detail::if_float<T> dot(T a, T b) { return a * b; }
template <class T, bool P, bool Q>
vec<T, 3> cross(const vec<T, 3, P>& a, const vec<T, 3, Q>& b) {
    return vec<T, 3>(a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]);
}
template <class T, int N, bool P>
T length_squared(const vec<T, N, P>& a) { return dot(a, a); }
template <class T, int N, bool P>
T length(const vec<T, N, P>& a) { return T(fgemu::libm::sqrt(float(dot(a, a)))); }
template <class T>
inline detail::if_float<T> length(T a) { return abs(a); }
template <class T, int N, bool P, bool Q>
T distance(const vec<T, N, P>& a, const vec<T, N, Q>& b) { return length(vec<T, N>(a - b)); }
template <class T>
inline detail::if_float<T> distance(T a, T b) { return abs(a - b); }
template <class T, int N, bool P, bool Q>
T distance_squared(const vec<T, N, P>& a, const vec<T, N, Q>& b) { return length_squared(vec<T, N>(a - b)); }
template <class T, int N, bool P>
vec<T, N> normalize(const vec<T, N, P>& a) { return a * rsqrt(dot(a, a)); }
template <class T>
inline detail::if_float<T> normalize(T a) { return sign(a); }
template <class T, int N, bool P, bool Q>
vec<T, N> reflect(const vec<T, N, P>& i, const vec<T, N, Q>& n) { return i - T(2) * dot(n, i) * n; }
template <class T>
inline detail::if_float<T> reflect(T i, T n) { return i - T(2) * n * i * n; }
template <class T, int N, bool P, bool Q>
vec<T, N> refract(const vec<T, N, P>& i, const vec<T, N, Q>& n, T eta) {
    const T d = dot(n, i);
    const T k = T(1) - eta * eta * (T(1) - d * d);
    if (k < T(0)) return vec<T, N>(T(0));
    return eta * i - (eta * d + sqrt(k)) * n;
}
template <class T, int N, bool P, bool Q, bool R>
vec<T, N> faceforward(const vec<T, N, P>& n, const vec<T, N, Q>& i, const vec<T, N, R>& nref) {
    return dot(nref, i) < T(0) ? vec<T, N>(n) : vec<T, N>(-n);
}

// Integer functions.
template <class T>
inline detail::if_int<T> popcount(T x) {
    return T(__builtin_popcountll((unsigned long long)(std::make_unsigned_t<T>(x))));
}
template <class T>
inline detail::if_int<T> clz(T x) {
    using U = std::make_unsigned_t<T>;
    const U u = U(x);
    return u == 0 ? T(sizeof(T) * 8) : T(__builtin_clzll((unsigned long long)u) - (64 - int(sizeof(T) * 8)));
}
template <class T>
inline detail::if_int<T> ctz(T x) {
    using U = std::make_unsigned_t<T>;
    const U u = U(x);
    return u == 0 ? T(sizeof(T) * 8) : T(__builtin_ctzll((unsigned long long)u));
}
template <class T>
inline detail::if_int<T> reverse_bits(T x) {
    using U = std::make_unsigned_t<T>;
    U u = U(x), r = 0;
    for (size_t i = 0; i < sizeof(T) * 8; ++i) {
        r = U((r << 1) | (u & 1));
        u = U(u >> 1);
    }
    return T(r);
}
template <class T>
inline detail::if_int<T> extract_bits(T x, uint offset, uint bits) {
    if (bits == 0) return T(0);
    using U = std::make_unsigned_t<T>;
    U v = U(U(x) >> offset);
    if (bits < sizeof(T) * 8) v &= U((U(1) << bits) - 1);
    if constexpr (std::is_signed_v<T>) {
        if (bits < sizeof(T) * 8 && (v >> (bits - 1)) & 1) v |= U(~U(0) << bits);
    }
    return T(v);
}
template <class T>
inline detail::if_int<T> insert_bits(T base, T insert, uint offset, uint bits) {
    using U = std::make_unsigned_t<T>;
    if (bits == 0) return base;
    const U mask = bits >= sizeof(T) * 8 ? U(~U(0)) : U(((U(1) << bits) - 1) << offset);
    return T((U(base) & U(~mask)) | ((U(insert) << offset) & mask));
}
template <class T>
inline detail::if_int<T> rotate(T x, T n) {
    using U = std::make_unsigned_t<T>;
    const unsigned w = sizeof(T) * 8, s = unsigned(U(n)) % w;
    return s == 0 ? x : T((U(x) << s) | (U(x) >> (w - s)));
}
template <class T>
inline detail::if_int<T> mulhi(T a, T b) {
    if constexpr (sizeof(T) == 8) {
        if constexpr (std::is_signed_v<T>) return T((__int128(a) * __int128(b)) >> 64);
        else return T((unsigned __int128)(a) * (unsigned __int128)(b) >> 64);
    } else {
        using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
        return T((W(a) * W(b)) >> (sizeof(T) * 8));
    }
}
template <class T>
inline detail::if_int<T> mul24(T a, T b) { return T(a * b); }
template <class T>
inline detail::if_int<T> mad24(T a, T b, T c) { return T(a * b + c); }
template <class T>
inline detail::if_int<T> madhi(T a, T b, T c) { return T(mulhi(a, b) + c); }
template <class T>
inline detail::if_int<T> hadd(T a, T b) { return T((int64_t(a) + int64_t(b)) >> 1); }
template <class T>
inline detail::if_int<T> rhadd(T a, T b) { return T((int64_t(a) + int64_t(b) + 1) >> 1); }
template <class T>
inline detail::if_int<T> absdiff(T a, T b) { return a > b ? T(a - b) : T(b - a); }
template <class T>
inline detail::if_int<T> addsat(T a, T b) {
    T r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 || std::is_unsigned_v<T> ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
    return r;
}
template <class T>
inline detail::if_int<T> subsat(T a, T b) {
    T r;
    if (__builtin_sub_overflow(a, b, &r)) return std::is_unsigned_v<T> || b > 0 ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
    return r;
}
#define FG_VEC_INT1(name)                                                                       \
    template <class T, int N, bool P>                                                           \
    detail::if_int<T, vec<T, N>> name(const vec<T, N, P>& a) {                                  \
        vec<T, N> r{};                                                                          \
        for (int i = 0; i < N; ++i) r[i] = name(a[i]);                                          \
        return r;                                                                               \
    }
FG_VEC_INT1(popcount)
FG_VEC_INT1(clz)
FG_VEC_INT1(ctz)
FG_VEC_INT1(reverse_bits)
#undef FG_VEC_INT1
#define FG_VEC_INT2(name)                                                                       \
    template <class T, int N, bool P, bool Q>                                                   \
    detail::if_int<T, vec<T, N>> name(const vec<T, N, P>& a, const vec<T, N, Q>& b) {           \
        vec<T, N> r{};                                                                          \
        for (int i = 0; i < N; ++i) r[i] = name(a[i], b[i]);                                    \
        return r;                                                                               \
    }
FG_VEC_INT2(mulhi)
FG_VEC_INT2(rotate)
FG_VEC_INT2(hadd)
FG_VEC_INT2(rhadd)
FG_VEC_INT2(absdiff)
FG_VEC_INT2(addsat)
FG_VEC_INT2(subsat)
#undef FG_VEC_INT2
template <class T, int N, bool P>
detail::if_int<T, vec<T, N>> extract_bits(const vec<T, N, P>& x, uint o, uint b) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = extract_bits(x[i], o, b);
    return r;
}
template <class T, int N, bool P, bool Q>
detail::if_int<T, vec<T, N>> insert_bits(const vec<T, N, P>& x, const vec<T, N, Q>& y, uint o, uint b) {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r[i] = insert_bits(x[i], y[i], o, b);
    return r;
}

// Pack/unpack (metal_pack).
inline uint pack_float_to_unorm4x8(float4 v) {
    uint r = 0;
    for (int i = 0; i < 4; ++i) r |= uint(fgemu::libm::lrint(detail::saturate_(v[i]) * 255.0f)) << (8 * i);
    return r;
}
inline uint pack_float_to_snorm4x8(float4 v) {
    uint r = 0;
    for (int i = 0; i < 4; ++i)
        r |= (uint(int(fgemu::libm::lrint(detail::clampf_(v[i], -1.0f, 1.0f) * 127.0f))) & 0xffu) << (8 * i);
    return r;
}
inline uint pack_float_to_unorm2x16(float2 v) {
    return uint(fgemu::libm::lrint(detail::saturate_(v[0]) * 65535.0f)) |
           (uint(fgemu::libm::lrint(detail::saturate_(v[1]) * 65535.0f)) << 16);
}
inline uint pack_float_to_snorm2x16(float2 v) {
    return (uint(int(fgemu::libm::lrint(detail::clampf_(v[0], -1.0f, 1.0f) * 32767.0f))) & 0xffffu) |
           (uint(int(fgemu::libm::lrint(detail::clampf_(v[1], -1.0f, 1.0f) * 32767.0f))) << 16);
}
inline float4 unpack_unorm4x8_to_float(uint x) {
    float4 r{};
    for (int i = 0; i < 4; ++i) r[i] = float((x >> (8 * i)) & 0xffu) / 255.0f;
    return r;
}
inline float4 unpack_snorm4x8_to_float(uint x) {
    float4 r{};
    for (int i = 0; i < 4; ++i) r[i] = detail::clampf_(float(int8_t((x >> (8 * i)) & 0xffu)) / 127.0f, -1.0f, 1.0f);
    return r;
}
inline float2 unpack_unorm2x16_to_float(uint x) {
    return float2(float(x & 0xffffu) / 65535.0f, float(x >> 16) / 65535.0f);
}
inline float2 unpack_snorm2x16_to_float(uint x) {
    return float2(detail::clampf_(float(int16_t(x & 0xffffu)) / 32767.0f, -1.0f, 1.0f),
                  detail::clampf_(float(int16_t(x >> 16)) / 32767.0f, -1.0f, 1.0f));
}

#undef FG_MATH1
#undef FG_MATH2
#undef FG_MATH3

// precise:: and fast:: name the same functions here: the emulator computes in IEEE float.
#define FG_FLOAT_FUNCS                                                                         \
    using metal::acos; using metal::acosh; using metal::asin; using metal::asinh;               \
    using metal::atan; using metal::atan2; using metal::atanh; using metal::ceil;               \
    using metal::cos; using metal::cosh; using metal::cospi; using metal::divide;               \
    using metal::exp; using metal::exp2; using metal::exp10; using metal::fabs;                 \
    using metal::abs; using metal::fdim; using metal::floor; using metal::fma;                  \
    using metal::fmax; using metal::fmin; using metal::fmax3; using metal::fmin3;               \
    using metal::fmod; using metal::fract; using metal::frexp; using metal::ldexp;              \
    using metal::log; using metal::log2; using metal::log10; using metal::modf;                 \
    using metal::pow; using metal::powr; using metal::rint; using metal::round;                 \
    using metal::rsqrt; using metal::sin; using metal::sincos; using metal::sinh;               \
    using metal::sinpi; using metal::sqrt; using metal::tan; using metal::tanh;                 \
    using metal::tanpi; using metal::trunc; using metal::clamp; using metal::saturate;          \
    using metal::normalize; using metal::length; using metal::distance; using metal::max;       \
    using metal::min; using metal::copysign;
namespace precise {
FG_FLOAT_FUNCS
}
namespace fast {
FG_FLOAT_FUNCS
}
#undef FG_FLOAT_FUNCS

}  // namespace metal
