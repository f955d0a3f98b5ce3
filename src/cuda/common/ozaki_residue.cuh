// Residues modulo the scheme's odd moduli (src/ozaki/ozaki_scheme.hpp) in FP32 and integer
// arithmetic, for rung 15's operand pass and its multipliers. Both run it on every element
// (the multipliers on 128 accumulators after every modulus), and neither may use the
// conversion unit for it: I2F, F2I and FRND issue 16 a clock per SM on sm_90, against
// 64-128 for integer and FP32 arithmetic. Both are bound by instruction issue there, so the
// count per residue is what this file keeps small: five FP32 instructions.
//
// The device: adding 1.5 x 2^23 to a float holding an integer u, |u| < 2^22, leaves u in the
// low bits of the sum (whose unit in the last place is 1), two's complement, so one add (or
// one integer add on the bits) converts a small integer either way. A caller brings its
// integer below 2^22 by a split v = hi 2^s + lo, y = hi (2^s mod m) + lo, congruent to v.
//
// Why no correction step is needed: with inv = fl(1/m), |inv - 1/m| <= 2^-32 for m in
// (128, 256), so |y inv - y / m| < 2^22 2^-32 = 2^-10. y / m is an integer plus k / m, and
// for odd m it lies at least 1 / (2m) > 2^-9 from every half-integer. So rounding y inv to
// the nearest integer (one FMA with 1.5 x 2^23, whose sum has a unit in the last place of 1)
// gives q = round(y / m) exactly, and r = y - q m is the canonical symmetric residue in
// [-(m-1)/2, (m-1)/2] of oz::symmetric_residue. tests/test_ozaki.py checks it for every
// |y| < 2^22 and every odd modulus.
#pragma once

#include <cstdint>

namespace fastgemm {
namespace cuda {

constexpr float kSmallIntMagic = 12582912.0f;  // 1.5 x 2^23
constexpr int32_t kSmallIntMagicBits = 0x4B400000;  // its bits; the low 22 are zero

// The float of an integer |u| < 2^22, without I2F.
__device__ __forceinline__ float small_int_to_float(int32_t u) {
    return __int_as_float(u + kSmallIntMagicBits) - kSmallIntMagic;
}

// 2^s mod m in (-m/2, m/2), for odd m: the factor of a split's high part.
__host__ __device__ constexpr int32_t symmetric_pow2_mod(int s, int32_t m) {
    return (1 << s) % m > m / 2 ? (1 << s) % m - m : (1 << s) % m;
}

// An odd modulus as the FP32 constants the reduction uses.
struct OddModulus {
    float m, inv;
};
__host__ __device__ constexpr OddModulus odd_modulus(int32_t m) { return {float(m), 1.0f / float(m)}; }

// For a float y holding an integer, |y| < 2^22, and y_biased = y + 1.5 x 2^23 (exact): the
// bits of r + 1.5 x 2^23, r = y mod m in [-(m-1)/2, (m-1)/2]. The low byte is r's
// two's-complement byte (what the int8 planes and the stash hold); minus kSmallIntMagicBits
// it is r. q m is exact and so is y_biased - q m, which lies in the binade of 1.5 x 2^23.
__device__ __forceinline__ int32_t odd_residue_bits(float y, float y_biased, const OddModulus& om) {
    const float q = fmaf(y, om.inv, kSmallIntMagic) - kSmallIntMagic;
    return __float_as_int(fmaf(-q, om.m, y_biased));
}

// Four residues (the low bytes of b0..b3) as one word, b0 in the lowest byte: three byte
// permutes, where masks and shifts would take seven instructions.
__device__ __forceinline__ uint32_t pack_low_bytes(uint32_t b0, uint32_t b1, uint32_t b2, uint32_t b3) {
    return __byte_perm(__byte_perm(b0, b1, 0x0040), __byte_perm(b2, b3, 0x0040), 0x5410);
}

}  // namespace cuda
}  // namespace fastgemm
