// The compiler builtins Apple's own headers are built from (__metal_sin(x, fast_flag),
// __metal_simd_sum(x), __metal_get_thread_index_in_simdgroup(ushort()), ...). Some libraries
// (MLX's bfloat math and SIMD helpers) call them directly; here each forwards to the metal::
// function of the same meaning. The trailing fast-math flag is accepted and ignored.
#pragma once

#include "fgemu/atomic.hpp"

namespace metal {
namespace fgemu_detail {
struct math_mode {};
}  // namespace fgemu_detail
}  // namespace metal

#define __METAL_MAYBE_FAST_MATH__ (::metal::fgemu_detail::math_mode{})
#define __METAL_FAST_MATH__ (::metal::fgemu_detail::math_mode{})
#define __METAL_PRECISE_MATH__ (::metal::fgemu_detail::math_mode{})

#define FG_BUILTIN1(name)                                                                       \
    template <class T, class... M>                                                             \
    inline auto __metal_##name(T x, M...) { return ::metal::name(x); }
#define FG_BUILTIN2(name)                                                                       \
    template <class T, class U, class... M>                                                    \
    inline auto __metal_##name(T x, U y, M...) { return ::metal::name(x, y); }
#define FG_BUILTIN3(name)                                                                       \
    template <class T, class U, class V, class... M>                                           \
    inline auto __metal_##name(T x, U y, V z, M...) { return ::metal::name(x, y, z); }
FG_BUILTIN1(fabs) FG_BUILTIN1(acos) FG_BUILTIN1(acosh) FG_BUILTIN1(asin) FG_BUILTIN1(asinh)
FG_BUILTIN1(atan) FG_BUILTIN1(atanh) FG_BUILTIN1(ceil) FG_BUILTIN1(cos) FG_BUILTIN1(cosh)
FG_BUILTIN1(cospi) FG_BUILTIN1(exp) FG_BUILTIN1(exp2) FG_BUILTIN1(exp10) FG_BUILTIN1(floor)
FG_BUILTIN1(fract) FG_BUILTIN1(log) FG_BUILTIN1(log2) FG_BUILTIN1(log10) FG_BUILTIN1(rint)
FG_BUILTIN1(round) FG_BUILTIN1(rsqrt) FG_BUILTIN1(sin) FG_BUILTIN1(sinh) FG_BUILTIN1(sinpi)
FG_BUILTIN1(sqrt) FG_BUILTIN1(tan) FG_BUILTIN1(tanh) FG_BUILTIN1(tanpi) FG_BUILTIN1(trunc)
FG_BUILTIN1(saturate)
FG_BUILTIN2(atan2) FG_BUILTIN2(copysign) FG_BUILTIN2(fdim) FG_BUILTIN2(fmax) FG_BUILTIN2(fmin)
FG_BUILTIN2(fmod) FG_BUILTIN2(nextafter) FG_BUILTIN2(pow) FG_BUILTIN2(powr) FG_BUILTIN2(step) FG_BUILTIN2(divide)
FG_BUILTIN3(fma) FG_BUILTIN3(fmax3) FG_BUILTIN3(fmin3) FG_BUILTIN3(fmedian3) FG_BUILTIN3(clamp)
FG_BUILTIN3(mix) FG_BUILTIN3(smoothstep)
#undef FG_BUILTIN1
#undef FG_BUILTIN2
#undef FG_BUILTIN3
template <class T, class... M>
inline T __metal_ldexp(T x, int e, M...) { return ::metal::ldexp(x, e); }
template <class T>
inline T __metal_frexp(T x, int* e) { return ::metal::frexp(x, *e); }
template <class T, class... M>
inline T __metal_modf(T x, T* i, M...) { return ::metal::modf(x, *i); }

#define FG_SIMD_BUILTIN1(name)                                                                  \
    template <class T>                                                                         \
    inline T __metal_##name(T x) { return ::metal::name(x); }
#define FG_SIMD_BUILTIN2(name)                                                                  \
    template <class T, class L>                                                                \
    inline T __metal_##name(T x, L l) { return ::metal::name(x, ushort(l)); }
FG_SIMD_BUILTIN1(simd_sum) FG_SIMD_BUILTIN1(simd_product) FG_SIMD_BUILTIN1(simd_max)
FG_SIMD_BUILTIN1(simd_min) FG_SIMD_BUILTIN1(simd_and) FG_SIMD_BUILTIN1(simd_or)
FG_SIMD_BUILTIN1(simd_xor) FG_SIMD_BUILTIN1(simd_prefix_inclusive_sum)
FG_SIMD_BUILTIN1(simd_prefix_exclusive_sum) FG_SIMD_BUILTIN1(simd_prefix_inclusive_product)
FG_SIMD_BUILTIN1(simd_prefix_exclusive_product) FG_SIMD_BUILTIN1(simd_broadcast_first)
FG_SIMD_BUILTIN2(simd_shuffle) FG_SIMD_BUILTIN2(simd_shuffle_xor) FG_SIMD_BUILTIN2(simd_shuffle_up)
FG_SIMD_BUILTIN2(simd_shuffle_down) FG_SIMD_BUILTIN2(simd_shuffle_rotate_up)
FG_SIMD_BUILTIN2(simd_shuffle_rotate_down) FG_SIMD_BUILTIN2(simd_broadcast)
#undef FG_SIMD_BUILTIN1
#undef FG_SIMD_BUILTIN2
template <class T, class L>
inline T __metal_simd_shuffle_and_fill_up(T x, T fill, L d) { return ::metal::simd_shuffle_and_fill_up(x, fill, ushort(d)); }
template <class T, class L>
inline T __metal_simd_shuffle_and_fill_down(T x, T fill, L d) { return ::metal::simd_shuffle_and_fill_down(x, fill, ushort(d)); }
template <class T, class L, class M>
inline T __metal_simd_shuffle_and_fill_up(T x, T fill, L d, M) { return ::metal::simd_shuffle_and_fill_up(x, fill, ushort(d)); }
template <class T, class L, class M>
inline T __metal_simd_shuffle_and_fill_down(T x, T fill, L d, M) { return ::metal::simd_shuffle_and_fill_down(x, fill, ushort(d)); }
template <class T>
inline T __metal_get_thread_index_in_simdgroup(T) { return T(::fgemu::current().lane); }
template <class T>
inline T __metal_get_simdgroup_size(T) { return T(::fgemu::kSimdWidth); }
