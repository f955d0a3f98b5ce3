// The arithmetic of precision class fp32_ozaki: an FP32-accurate C = op(A) op(B) from exact
// integer products of the operands' residues (an Ozaki-type scheme, after Ozaki, Uchino and
// Imamura's scheme II). One header for the CPU reference (src/cpu/ozaki_reference.cpp) and
// the Hopper rung (src/cuda/rungs/15_ozaki_int8.cu): every function here is callable from
// host C++ and CUDA device code, and every value it defines is computed the same way on
// both, so the two give the same bits. docs/ozaki.md explains the design and its guarantee.
//
// The scheme, per call (M x N x K; a "line" is a row of op(A) or a column of op(B)):
//  1. Scale. Each line gets a factor f (29 significant bits, so that f * a is exact in
//     FP64) with f * ||line||_2 <= R(K) (norm_bound). Its scaled integers are
//     A'(i, k) = rint(f_i a(i, k)), off by at most 1/2 each (0 where f * a is an integer).
//     By Cauchy-Schwarz and the choice of R, |sum_k A'(i, k) B'(k, j)| < P / 2 for every
//     (i, j), whatever K: the integer product is recovered exactly below.
//  2. Split. A'(i, k) mod m for each of the kModuli pairwise coprime moduli, as symmetric
//     residues in [-128, 127]: int8 operands.
//  3. Multiply. For each modulus, the int8 residue GEMM summed exactly in int32. A sum of
//     kExactChunk products of residues cannot overflow int32 (for m = 256 overflow would be
//     harmless anyway: 256 divides 2^32), so longer K is summed in chunks of kExactChunk,
//     the accumulator reduced mod m between chunks; the residue of the whole sum is exact
//     for any K.
//  4. Reconstruct. The Chinese remainder theorem gives C'(i, j) = sum_k A' B' exactly, as
//     an int64 (crt_reconstruct), from its kModuli residues.
//  5. Unscale. c = C' / (f_i g_j), rounded once to FP32 (unscale).
//  6. Certify. The only errors are the roundings of step 1 and the final rounding, bounded
//     per element by element_error_bound. A 64 x 64 region of C (kRegion) is kept when
//     sum(bound^2) <= tau(K)^2 sum(c^2) (region_certified): then its error is within FP32
//     GEMM's classical bound, ||dC_R||_F <= gamma_K ||C_R||_F with gamma_K = K u / (1 - K u),
//     u = 2^-24. Every other region, and every region whose lines hold NaN or Inf or whose
//     result is not finite, is recomputed in IEEE FP32 (k order, fmaf), the same as a plain
//     FP32 kernel: never a silently less accurate result.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FASTGEMM_OZAKI_HD __host__ __device__
#else
#define FASTGEMM_OZAKI_HD
#endif

namespace fastgemm {
namespace ozaki {

// --- The moduli ---------------------------------------------------------------------------
// The largest pairwise coprime integers that are at most 256, so that every symmetric
// residue fits int8: 256 = 2^8, 255 = 3 5 17, 253 = 11 23, 251, 247 = 13 19, 241, 239. Seven
// is the fewest for which the worst-case error bound of uniform random inputs stays well
// inside FP32's classical bound (about 12x, docs/ozaki.md); six would not meet it.
constexpr int kModuli = 7;
// P = 256 255 253 251 247 241 239 = 58977489938315520, about 2^55.71.
constexpr uint64_t kP = 58977489938315520ull;

FASTGEMM_OZAKI_HD constexpr int32_t modulus(int l) {
    return l == 0 ? 256 : l == 1 ? 255 : l == 2 ? 253 : l == 3 ? 251 : l == 4 ? 247 : l == 5 ? 241 : 239;
}
// The CRT basis: E_l = (P/m_l) ((P/m_l)^-1 mod m_l), congruent to 1 mod m_l and to 0 mod
// every other modulus, in [0, P).
FASTGEMM_OZAKI_HD constexpr uint64_t crt_basis(int l) {
    return l == 0   ? 46306544834380545ull
           : l == 1 ? 49494834693331456ull
           : l == 2 ? 45456958648108800ull
           : l == 3 ? 39474973345167360ull
           : l == 4 ? 8595909464693760ull
           : l == 5 ? 36463261414145280ull
                    : 10117477353434880ull;
}
// E_l / P = quotient_hi(l) + quotient_lo(l): hi a multiple of 2^-12 (so that r hi is exact
// in FP32 for any residue r, and so is a sum of seven such products), lo below 2^-13 in
// magnitude, the nearest float to the rest (within 2^-38).
FASTGEMM_OZAKI_HD constexpr float quotient_hi(int l) {
    return float(l == 0   ? 3216
                 : l == 1 ? 3437
                 : l == 2 ? 3157
                 : l == 3 ? 2742
                 : l == 4 ? 597
                 : l == 5 ? 2532
                          : 703) *
           0x1p-12f;
}
FASTGEMM_OZAKI_HD constexpr float quotient_lo(int l) {
    return l == 0   ? 0.0f
           : l == 1 ? 0x1.b5b5b6p-14f
           : l == 2 ? -0x1.03091cp-20f
           : l == 3 ? -0x1.d1156cp-14f
           : l == 4 ? -0x1.8dfdeep-19f
           : l == 5 ? 0x1.86e792p-14f
                    : -0x1.5b0bc8p-14f;
}

// Products of residues per int32 chunk: 2^17 (127^2 2^17 < 2^31; see step 3 above).
constexpr int64_t kExactChunk = int64_t(1) << 17;
// The square regions of C that are certified or recomputed as a whole.
constexpr int kRegion = 64;
// Canonical summation order of a line's sum of squares (line_partials_combine).
constexpr int kSumLanes = 32;

// --- Step 1: scaling ----------------------------------------------------------------------
// R(K): the largest 2-norm a scaled line may have. With ||A'_i||, ||B'_j|| <= R + sqrt(K)/2
// (each integer off by at most 1/2) and R^2 < P/2 (1 - 2^-12), every |C'(i, j)| stays
// below P/2 (1 - 2^-12), with room for a relative error of up to 2^-21 in the computed
// line norms (any K < 2^32).
FASTGEMM_OZAKI_HD inline double norm_bound(int64_t K) {
    const double half_p = double(kP) * 0.5 * (1.0 - 0x1p-12);
    return sqrt(half_p) * (1.0 - 0x1p-20) - sqrt(double(K));
}

// x rounded towards zero to 29 significant bits: a float (24 bits) times it is exact in FP64.
FASTGEMM_OZAKI_HD inline double truncate_to_29_bits(double x) {
    uint64_t bits;
#if defined(__CUDA_ARCH__)
    bits = uint64_t(__double_as_longlong(x));
    return __longlong_as_double(int64_t(bits & ~((uint64_t(1) << 24) - 1)));
#else
    std::memcpy(&bits, &x, sizeof bits);
    bits &= ~((uint64_t(1) << 24) - 1);
    std::memcpy(&x, &bits, sizeof bits);
    return x;
#endif
}

// One line's sum of squares in the canonical order: kSumLanes partials, partial p adding
// double(a_k)^2 (exact in FP64) for k = p, p + 32, p + 64, ... in increasing k; then
// combined pairwise, partial[p] += partial[p + w] for p < w, w = 16, 8, 4, 2, 1. (A warp
// with lane p holding partial p does the same with __shfl_down_sync.) FP64 neither
// overflows nor underflows on squares of FP32 values, and a NaN or an infinity in the
// line makes the sum NaN or +Inf.
FASTGEMM_OZAKI_HD inline double line_partials_combine(double (&partial)[kSumLanes]) {
    for (int w = kSumLanes / 2; w >= 1; w /= 2)
        for (int p = 0; p < w; ++p) partial[p] += partial[p + w];
    return partial[0];
}

// The scale of a line from its sum of squares: factor f (f ||line|| <= R) and its inverse.
// A zero line gets f = 1; a line holding NaN or Inf gets NaN for both, which makes every
// result that uses it NaN, hence uncertified (its regions go to the IEEE recomputation).
struct LineScale {
    double factor;
    double inverse;
};
FASTGEMM_OZAKI_HD inline LineScale line_scale(double sum_of_squares, double R) {
    if (!(sum_of_squares <= 1.0e300)) return {NAN, NAN};  // NaN or +Inf
    if (sum_of_squares == 0.0) return {1.0, 1.0};
    const double f = truncate_to_29_bits(R / sqrt(sum_of_squares));
    return {f, 1.0 / f};
}

// rint(f a) as an int32 (|value| <= R + 1/2 < 2^28); `inexact` is set when f a was not an
// integer, i.e. when the line's integers carry a rounding error.
FASTGEMM_OZAKI_HD inline int32_t scaled_integer(float a, double f, bool& inexact) {
    const double x = double(a) * f;  // exact: 24 x 29 significant bits
    const double r = rint(x);
    inexact = inexact || r != x;
    return int32_t(r);
}

// --- Steps 2 and 3: residues --------------------------------------------------------------
// v mod m in [-128, 127]: (-m/2, m/2] for odd m, [-128, 127] for m = 256. Exact for every
// int32 v, so it also reduces an int32 accumulator.
FASTGEMM_OZAKI_HD inline int32_t symmetric_residue(int32_t v, int32_t m) {
    if (m == 256) return int32_t(int8_t(uint8_t(uint32_t(v) & 0xFFu)));
    int32_t r = v % m;  // in (-m, m)
    if (r > m / 2)
        r -= m;
    else if (r < -(m / 2))
        r += m;
    return r;
}

// --- Step 4: reconstruction ---------------------------------------------------------------
// C' from its residues (any representatives in [-128, 127]): S = sum_l r_l E_l is congruent
// to C' mod P, and C' = S - q P with q = round(S / P) = round(sum_l r_l E_l / P). The
// quotient is estimated in FP32 as sum_l r_l hi_l (exact) + sum_l r_l lo_l, within 2^-14.9
// of S / P, while |C'| / P < 1/2 - 2^-13 keeps S / P at least 2^-13 from a half-integer; and
// S - q P, computed modulo 2^64, is C' exactly (|C'| < 2^63).
FASTGEMM_OZAKI_HD inline int64_t crt_reconstruct(const int32_t (&residue)[kModuli]) {
    uint64_t s = 0;
    float exact_part = 0.0f, rest = 0.0f;
    for (int l = 0; l < kModuli; ++l) {
        s += uint64_t(int64_t(residue[l])) * crt_basis(l);
        exact_part = fmaf(float(residue[l]), quotient_hi(l), exact_part);
        rest = fmaf(float(residue[l]), quotient_lo(l), rest);
    }
    const int64_t q = int64_t(rintf(exact_part + rest));
    return int64_t(s - uint64_t(q) * kP);
}

// --- Step 5: unscaling --------------------------------------------------------------------
// C'(i, j) / (f_i g_j): two FP64 products (relative error 2^-52), then one rounding to FP32.
FASTGEMM_OZAKI_HD inline float unscale(int64_t c, double inverse_i, double inverse_j) {
    return float((double(c) * inverse_i) * inverse_j);
}

// --- Step 6: the certificate --------------------------------------------------------------
// What the error bound needs of a line: e = (1/2 if its integers were rounded, else 0) / f
// and n = ||line'||_1 / f (the 1-norm of its scaled integers, exact as an int64).
struct LineBound {
    double e, n;
};
FASTGEMM_OZAKI_HD inline LineBound line_bound(double inverse, bool inexact, int64_t norm1) {
    return {inexact ? 0.5 * inverse : 0.0, double(norm1) * inverse};
}

// |c_ij - (A B)_ij| before the final rounding, at most:
//   sum_k |dA'(i,k)| |B'(k,j)| + |A'(i,k)| |dB'(k,j)| + |dA'| |dB'|, over f_i g_j
//   <= e_i n_j + n_i e_j + K e_i e_j,
// plus 2^-149 for the absolute error of a result that lands among FP32's subnormals.
FASTGEMM_OZAKI_HD inline double element_error_bound(const LineBound& row, const LineBound& col, int64_t K) {
    return fma(row.e, fma(double(K), col.e, col.n), row.n * col.e) + 0x1p-149;
}

// tau(K)^2, tau(K) = (K - 1) u (1 - 2^-20): with the final rounding (u |c|) on top, a region
// with sum(bound^2) <= tau^2 sum(c^2) has ||dC_R||_F <= K u ||c_R||_F, hence
// <= gamma_K ||C_R||_F. (For K = 1 nothing is certified: one product cannot be carried
// better than FP32's single rounding.)
FASTGEMM_OZAKI_HD inline double certificate_threshold_sq(int64_t K) {
    const double tau = double(K - 1) * 0x1p-24 * (1.0 - 0x1p-20);
    return tau * tau;
}
// The region's verdict from its sums (FP64) of squared bounds and squared results.
FASTGEMM_OZAKI_HD inline bool region_certified(double sum_bound_sq, double sum_result_sq, int64_t K) {
    return sum_result_sq <= 1.0e300 && sum_bound_sq <= certificate_threshold_sq(K) * sum_result_sq;
}

}  // namespace ozaki
}  // namespace fastgemm
