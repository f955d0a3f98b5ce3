// The C math functions the shims compute with, as compiler builtins in namespace fgemu::libm.
// The shims do not include <cmath>: its functions would be declared at global scope
// (::log1p(double), ...), where Metal has none, and would make a shader's own overloads
// ambiguous (MLX defines log1p(float) and calls it with half).
#pragma once

namespace fgemu {
namespace libm {
#define FG_LIBM1(name)                                                                          \
    inline float name(float x) { return __builtin_##name##f(x); }                              \
    inline double name(double x) { return __builtin_##name(x); }
#define FG_LIBM2(name)                                                                          \
    inline float name(float x, float y) { return __builtin_##name##f(x, y); }                  \
    inline double name(double x, double y) { return __builtin_##name(x, y); }
FG_LIBM1(acos) FG_LIBM1(acosh) FG_LIBM1(asin) FG_LIBM1(asinh) FG_LIBM1(atan) FG_LIBM1(atanh)
FG_LIBM1(ceil) FG_LIBM1(cos) FG_LIBM1(cosh) FG_LIBM1(exp) FG_LIBM1(exp2) FG_LIBM1(fabs)
FG_LIBM1(floor) FG_LIBM1(log) FG_LIBM1(log2) FG_LIBM1(log10) FG_LIBM1(rint) FG_LIBM1(round)
FG_LIBM1(sin) FG_LIBM1(sinh) FG_LIBM1(sqrt) FG_LIBM1(tan) FG_LIBM1(tanh) FG_LIBM1(trunc)
FG_LIBM2(atan2) FG_LIBM2(copysign) FG_LIBM2(fdim) FG_LIBM2(fmax) FG_LIBM2(fmin) FG_LIBM2(fmod)
FG_LIBM2(nextafter) FG_LIBM2(pow)
#undef FG_LIBM1
#undef FG_LIBM2
inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline double fma(double a, double b, double c) { return __builtin_fma(a, b, c); }
inline float modf(float x, float* i) { return __builtin_modff(x, i); }
inline float frexp(float x, int* e) { return __builtin_frexpf(x, e); }
inline float ldexp(float x, int e) { return __builtin_ldexpf(x, e); }
inline int ilogb(float x) { return __builtin_ilogbf(x); }
inline long lrint(float x) { return __builtin_lrintf(x); }
inline bool isnan(float x) { return __builtin_isnan(x); }
inline bool isnan(double x) { return __builtin_isnan(x); }
inline bool isinf(float x) { return __builtin_isinf(x); }
inline bool isfinite(float x) { return __builtin_isfinite(x); }
inline bool isnormal(float x) { return __builtin_isnormal(x); }
inline bool signbit(float x) { return __builtin_signbit(x); }
}  // namespace libm
}  // namespace fgemu

// What <math.h> would have defined and MSL has.
#ifndef INFINITY
#define INFINITY (__builtin_inff())
#endif
#ifndef NAN
#define NAN (__builtin_nanf(""))
#endif
#ifndef HUGE_VALF
#define HUGE_VALF (__builtin_huge_valf())
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (__builtin_huge_val())
#endif
