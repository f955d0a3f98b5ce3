// MSL scalar types at global scope, as Metal has them: uint, ushort, uchar, ulong, half, and
// bfloat - a real 16-bit brain float (8 exponent bits, 7 mantissa bits), not an alias of
// float: every conversion from float rounds to nearest even, arithmetic on two bfloats is
// done in float and rounded back, as MSL specifies.
#pragma once

#include "fgemu/prelude.hpp"

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;

#if defined(__FLT16_MAX__)
typedef _Float16 half;
#else
#error "metal-emu needs a C++ compiler with _Float16 (GCC >= 12, Clang >= 15)"
#endif

struct bfloat {
    uint16_t bits;

    bfloat() = default;
    // From floating types explicit, from integers and to float implicit: were float ->
    // bfloat implicit too, `c ? bf : 1.0f` would be ambiguous for a class type, where
    // Metal's builtin bfloat gives float.
    constexpr explicit bfloat(float f) : bits(round(f)) {}
    constexpr explicit bfloat(double d) : bfloat(float(d)) {}
    constexpr explicit bfloat(half h) : bfloat(float(h)) {}
    // Assignment from a wider type rounds, as in MSL (not a conversion: ?: is unaffected).
    constexpr bfloat& operator=(float f) { bits = round(f); return *this; }
    constexpr bfloat& operator=(double d) { bits = round(float(d)); return *this; }
    bfloat& operator=(half h) { bits = round(float(h)); return *this; }
    // Assignment from any integer (bool and char included) converts as MSL does. An exact
    // match for every integer type: otherwise `b = 0` could reach bfloat through float,
    // double or half assignment, or through the integer constructor, and be ambiguous.
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    constexpr bfloat& operator=(I i) { bits = round_integer(i); return *this; }
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    constexpr bfloat(I i) : bits(round_integer(i)) {}
    // Implicit only to float, double and bool: a plain `operator float` would also convert
    // bfloat to int (through float), making `c ? 0 : bf` ambiguous.
    template <class F, std::enable_if_t<std::is_same_v<F, float> || std::is_same_v<F, double> ||
                                            std::is_same_v<F, bool>, int> = 0>
    constexpr operator F() const { return F(std::bit_cast<float>(uint32_t(bits) << 16)); }
    template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
    constexpr explicit operator I() const { return I(std::bit_cast<float>(uint32_t(bits) << 16)); }
    constexpr explicit operator half() const { return half(std::bit_cast<float>(uint32_t(bits) << 16)); }

    static constexpr uint16_t round(float f) {
        const uint32_t u = std::bit_cast<uint32_t>(f);
        if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
        return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    // An integer rounded once, to nearest even, to bfloat's 8 significant bits. Going
    // through float would round twice for integers above 2^24 (2^24 + 2^16 + 1 would
    // become 2^24 instead of 2^24 + 2^17).
    template <class I>
    static constexpr uint16_t round_integer(I i) {
        const bool neg = std::is_signed_v<I> && i < 0;
        uint64_t mag = neg ? uint64_t(0) - uint64_t(i) : uint64_t(i);
        int shift = 0;
        if (mag >> 8) {
            shift = 63 - std::countl_zero(mag) - 7;  // drop all but the top 8 bits
            const uint64_t rest = mag & ((uint64_t(1) << shift) - 1);
            const uint64_t half_ulp = uint64_t(1) << (shift - 1);
            mag >>= shift;
            if (rest > half_ulp || (rest == half_ulp && (mag & 1))) ++mag;  // mag <= 256
        }
        const float f = float(mag) * float(uint64_t(1) << shift);  // exact: <= 9 bits
        return round(neg ? -f : f);
    }
    static constexpr bfloat from_bits(uint16_t b) {
        bfloat r{};
        r.bits = b;
        return r;
    }
};

namespace fgemu {
// MSL's scalar floating types (std::is_floating_point does not know half or bfloat).
template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, half> ||
                                   std::is_same_v<T, bfloat>;
template <class T>
inline constexpr bool is_scalar_v = std::is_arithmetic_v<T> || is_float_v<T>;
}  // namespace fgemu

// bfloat arithmetic: bfloat op bfloat -> bfloat; with an integer -> bfloat; with float or
// half -> float (the wider type).
#define FG_BF_ARITH(op)                                                                        \
    inline constexpr bfloat operator op(bfloat a, bfloat b) { return bfloat(float(a) op float(b)); }      \
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                       \
    inline constexpr bfloat operator op(bfloat a, I b) { return bfloat(float(a) op float(b)); }          \
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                       \
    inline constexpr bfloat operator op(I a, bfloat b) { return bfloat(float(a) op float(b)); }          \
    inline constexpr float operator op(bfloat a, float b) { return float(a) op b; }                       \
    inline constexpr float operator op(float a, bfloat b) { return a op float(b); }                       \
    inline constexpr float operator op(bfloat a, double b) { return float(a) op float(b); }               \
    inline constexpr float operator op(double a, bfloat b) { return float(a) op float(b); }               \
    inline constexpr float operator op(bfloat a, half b) { return float(a) op float(b); }                 \
    inline constexpr float operator op(half a, bfloat b) { return float(a) op float(b); }                 \
    template <class U>                                                                         \
    inline bfloat& operator op##=(bfloat & a, U b) { return a = bfloat(float(a op b)); }
FG_BF_ARITH(+)
FG_BF_ARITH(-)
FG_BF_ARITH(*)
FG_BF_ARITH(/)
#undef FG_BF_ARITH
#define FG_BF_CMP(op)                                                                          \
    inline constexpr bool operator op(bfloat a, bfloat b) { return float(a) op float(b); }                \
    template <class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>                        \
    inline constexpr bool operator op(bfloat a, U b) { return float(a) op float(b); }                     \
    template <class U, std::enable_if_t<fgemu::is_scalar_v<U>, int> = 0>                        \
    inline constexpr bool operator op(U a, bfloat b) { return float(a) op float(b); }
FG_BF_CMP(==)
FG_BF_CMP(!=)
FG_BF_CMP(<)
FG_BF_CMP(<=)
FG_BF_CMP(>)
FG_BF_CMP(>=)
#undef FG_BF_CMP
// float op= bfloat (the bfloat widens).
inline float& operator+=(float& a, bfloat b) { return a += float(b); }
inline float& operator-=(float& a, bfloat b) { return a -= float(b); }
inline float& operator*=(float& a, bfloat b) { return a *= float(b); }
inline float& operator/=(float& a, bfloat b) { return a /= float(b); }
inline constexpr bfloat operator-(bfloat a) { return bfloat::from_bits(uint16_t(a.bits ^ 0x8000u)); }
inline constexpr bfloat operator+(bfloat a) { return a; }
inline bfloat& operator++(bfloat& a) { return a = a + 1; }
inline bfloat& operator--(bfloat& a) { return a = a - 1; }

namespace metal {
using ::uint;
using ::ushort;
using ::uchar;
using ::ulong;
using ::half;
using ::bfloat;
typedef ::half half_t;
using std::int8_t;
using std::int16_t;
using std::int32_t;
using std::int64_t;
using std::uint8_t;
using std::uint16_t;
using std::uint32_t;
using std::uint64_t;
using std::size_t;
using std::ptrdiff_t;

// numeric_limits, with half and bfloat. As in Apple's header, numeric_limits<T> derives from
// _numeric_limits_impl<T>, which libraries specialise for their own types.
template <class T>
struct _numeric_limits_impl : std::numeric_limits<T> {};
template <class T>
struct numeric_limits : _numeric_limits_impl<T> {};
template <>
struct _numeric_limits_impl<half> {
    static constexpr bool is_specialized = true, is_signed = true, is_integer = false,
                          has_infinity = true, has_quiet_NaN = true;
    static constexpr int digits = 11, max_exponent = 16, min_exponent = -13;
    static constexpr half max() { return half(65504.0f); }
    static constexpr half min() { return half(6.103515625e-05f); }
    static constexpr half lowest() { return half(-65504.0f); }
    static constexpr half epsilon() { return half(0.0009765625f); }
    static constexpr half denorm_min() { return half(5.960464477539063e-08f); }
    static constexpr half infinity() { return half(__builtin_inff()); }
    static constexpr half quiet_NaN() { return half(__builtin_nanf("")); }
    static constexpr half signaling_NaN() { return half(__builtin_nanf("")); }
};
template <>
struct _numeric_limits_impl<bfloat> {
    static constexpr bool is_specialized = true, is_signed = true, is_integer = false,
                          has_infinity = true, has_quiet_NaN = true;
    static constexpr int digits = 8, max_exponent = 128, min_exponent = -125;
    static constexpr bfloat max() { return bfloat::from_bits(0x7f7f); }
    static constexpr bfloat min() { return bfloat::from_bits(0x0080); }
    static constexpr bfloat lowest() { return bfloat::from_bits(0xff7f); }
    static constexpr bfloat epsilon() { return bfloat::from_bits(0x3c00); }
    static constexpr bfloat denorm_min() { return bfloat::from_bits(0x0001); }
    static constexpr bfloat infinity() { return bfloat::from_bits(0x7f80); }
    static constexpr bfloat quiet_NaN() { return bfloat::from_bits(0x7fc0); }
    static constexpr bfloat signaling_NaN() { return bfloat::from_bits(0x7fa0); }
};

// Type traits MSL offers in namespace metal.
using std::conditional;
using std::conditional_t;
using std::enable_if;
using std::enable_if_t;
using std::integral_constant;
using std::is_arithmetic;
using std::is_arithmetic_v;
using std::is_const;
using std::is_convertible;
using std::is_convertible_v;
using std::is_integral;
using std::is_integral_v;
using std::is_same;
using std::is_same_v;
using std::is_signed;
using std::is_signed_v;
using std::is_unsigned;
using std::is_unsigned_v;
using std::make_signed;
using std::make_signed_t;
using std::make_unsigned;
using std::make_unsigned_t;
using std::remove_const_t;
using std::remove_cv;
using std::remove_cv_t;
using std::remove_reference;
using std::remove_reference_t;
using std::true_type;
using std::false_type;
using std::bool_constant;
using std::declval;
using std::is_pointer;
using std::is_pointer_v;
using std::decay;
using std::decay_t;
using std::is_void_v;
using std::initializer_list;
// The emulator has one address space: removing it leaves the type.
template <class T>
struct remove_addrspace { using type = T; };
template <class T>
using remove_addrspace_t = T;
// uniform<T> (metal_uniform) marks a value as the same in every thread; here it is the value.
template <class T>
using uniform = T;
template <class T>
constexpr T make_uniform(T v) { return v; }
// Apple's internal spellings of the logical traits (libraries use them).
template <class... B>
using _disjunction = std::disjunction<B...>;
template <class... B>
using _conjunction = std::conjunction<B...>;
template <class B>
using _negation = std::negation<B>;
template <class T>
struct is_floating_point : std::bool_constant<fgemu::is_float_v<std::remove_cv_t<T>>> {};
template <class T>
inline constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T>
struct is_scalar : std::bool_constant<fgemu::is_scalar_v<std::remove_cv_t<T>>> {};
template <class T>
inline constexpr bool is_scalar_v = is_scalar<T>::value;
}  // namespace metal

// Half and brain-float constants of metal_math (HALF_MAX, ...) and integer limits.
#define HALF_MAX (::half(65504.0f))
#define HALF_MIN (::half(6.103515625e-05f))
#define HALF_EPSILON (::half(0.0009765625f))
#define MAXHALF HALF_MAX
#define BFLOAT_MAX (::bfloat::from_bits(0x7f7f))
#ifndef MAXFLOAT
#define MAXFLOAT FLT_MAX
#endif
#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LOG10E_F 0.434294481903251827651f
#define M_LN2_F 0.693147180559945309417f
#define M_LN10_F 2.30258509299404568402f
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.785398163397448309616f
#define M_1_PI_F 0.318309886183790671538f
#define M_2_PI_F 0.636619772367581343076f
#define M_2_SQRTPI_F 1.12837916709551257390f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.707106781186547524401f
#define M_E_H (::half(M_E_F))
#define M_LOG2E_H (::half(M_LOG2E_F))
#define M_LOG10E_H (::half(M_LOG10E_F))
#define M_LN2_H (::half(M_LN2_F))
#define M_LN10_H (::half(M_LN10_F))
#define M_PI_H (::half(M_PI_F))
#define M_PI_2_H (::half(M_PI_2_F))
#define M_PI_4_H (::half(M_PI_4_F))
#define M_1_PI_H (::half(M_1_PI_F))
#define M_2_PI_H (::half(M_2_PI_F))
#define M_2_SQRTPI_H (::half(M_2_SQRTPI_F))
#define M_SQRT2_H (::half(M_SQRT2_F))
#define M_SQRT1_2_H (::half(M_SQRT1_2_F))
