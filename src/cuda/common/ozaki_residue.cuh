// Residues modulo the scheme's odd moduli (src/ozaki/ozaki_scheme.hpp) in FP32 and integer
// arithmetic, for rung 15's operand pass and its multipliers. Both run it on every element
// (the multipliers on 128 accumulators after every modulus, while the tensor cores wait),
// and neither may use the conversion unit for it: I2F, F2I and FRND issue 16 a clock per
// SM on sm_90, against 64-128 for integer and FP32 arithmetic.
//
// The device: adding 1.5 x 2^23 to a float holding an integer u, |u| < 2^22, leaves u in the
// low bits of the sum (whose unit in the last place is 1), two's complement, so one add
// converts a small integer either way. A caller brings its integer below 2^22 by a split
// v = hi 2^s + lo, y = hi (2^s mod m) + lo, congruent to v; then q = rint(y / m) from one
// FMA with 1 / m is at most one off, r = y - q m is exact, and two selects bring r into
// [-(m-1)/2, (m-1)/2], oz::symmetric_residue's canonical range. Checked against
// symmetric_residue on the CPU with the same IEEE operations: the operand pass's form for
// every |v| <= 2^28 and every odd modulus, the multipliers' on 1.7e8 int32 values
// including both ends of the range.
#pragma once

#include <cstdint>

namespace fastgemm {
namespace cuda {

constexpr float kSmallIntMagic = 12582912.0f;  // 1.5 x 2^23
constexpr int32_t kSmallIntMagicBits = 0x4B400000;

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
    float m, inv, half;
};
__host__ __device__ constexpr OddModulus odd_modulus(int32_t m) {
    return {float(m), 1.0f / float(m), float((m - 1) / 2)};
}

// For a float holding an integer y, |y| < 2^22: the bits of r + 1.5 x 2^23, r = y mod m in
// [-(m-1)/2, (m-1)/2]. The low byte is r's two's-complement byte (what the int8 planes and
// the stash hold); minus kSmallIntMagicBits it is r.
__device__ __forceinline__ int32_t odd_residue_bits(float y, const OddModulus& om) {
    const float q = fmaf(y, om.inv, kSmallIntMagic) - kSmallIntMagic;
    float r = fmaf(-q, om.m, y);
    r = r > om.half ? r - om.m : r;
    r = r < -om.half ? r + om.m : r;
    return __float_as_int(r + kSmallIntMagic);
}

}  // namespace cuda
}  // namespace fastgemm
