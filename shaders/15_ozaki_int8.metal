// Step 15: precision class fp32_ozaki on MPP int8 matmul2d, the Metal twin of the cuda rung
// ozaki_int8_128x256. The scheme (docs/ozaki.md): scale each row of op(A) and column of op(B)
// to integers whose 2-norm is at most R, split the integers into residues modulo the seven
// moduli 256, 255, 253, 251, 247, 241, 239 (all int8), multiply the residues exactly (int8 x
// int8 -> int32), rebuild the integer product by the Chinese remainder theorem (64-bit
// integers, the same basis and quotient estimate as src/ozaki/ozaki_scheme.hpp), unscale, and
// keep the result only where the error bound certifies it; elsewhere IEEE FP32.
//
// MSL has no double, so the Metal twin scales by powers of two (exact in FP32) instead of the
// CPU and CUDA kernels' 29-bit factors, and certifies 32 x 32 regions (its tile) with sums in
// FP32 taken relative to the region's smallest scale; the guarantee is the same, its results
// are not bit-identical to theirs.
//
// A threadgroup of four SIMD-groups (128 threads, execution_simdgroups<4>) owns one 32 x 32
// tile of C and does everything for it in one dispatch:
//  1. threads 0-63 scale the tile's 32 rows of op(A) and 32 columns of op(B) (three passes
//     over K: largest magnitude, sum of squares, exactness and 1-norm of the integers);
//  2. per modulus, per 64-wide chunk of K: all threads write the chunk's residues into
//     threadgroup int8 tiles, matmul2d (mode multiply_accumulate into a zeroed int32 tile)
//     multiplies them, and each thread folds its 8 elements into an int32 accumulator mod m
//     (a chunk's sum is at most 64 x 2^14 in magnitude: no overflow, exact even in FP32);
//  3. per element: CRT, unscaling, the bound; the region's sums, reduced in a fixed order;
//  4. C = alpha c + beta C where certified, else each element's IEEE FP32 dot product.
// Any shape, transposes, alpha and beta. Needs Metal 4 (int8 matmul2d, 64-bit integers).
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
#include "gemm_common.h"
using namespace metal;
using namespace mpp::tensor_ops;

// The scheme's constants (src/ozaki/ozaki_scheme.hpp).
inline int oz_modulus(int l) {
    return l == 0 ? 256 : l == 1 ? 255 : l == 2 ? 253 : l == 3 ? 251 : l == 4 ? 247 : l == 5 ? 241 : 239;
}
inline ulong oz_basis(int l) {
    return l == 0   ? 46306544834380545ul
           : l == 1 ? 49494834693331456ul
           : l == 2 ? 45456958648108800ul
           : l == 3 ? 39474973345167360ul
           : l == 4 ? 8595909464693760ul
           : l == 5 ? 36463261414145280ul
                    : 10117477353434880ul;
}
inline float oz_quotient_hi(int l) {
    return float(l == 0   ? 3216
                 : l == 1 ? 3437
                 : l == 2 ? 3157
                 : l == 3 ? 2742
                 : l == 4 ? 597
                 : l == 5 ? 2532
                          : 703) *
           0x1p-12f;
}
inline float oz_quotient_lo(int l) {
    return l == 0   ? 0.0f
           : l == 1 ? 0x1.b5b5b6p-14f
           : l == 2 ? -0x1.03091cp-20f
           : l == 3 ? -0x1.d1156cp-14f
           : l == 4 ? -0x1.8dfdeep-19f
           : l == 5 ? 0x1.86e792p-14f
                    : -0x1.5b0bc8p-14f;
}
inline ulong oz_p() { return 58977489938315520ul; }  // the product of the moduli

// v mod m in [-128, 127]: (-m/2, m/2] for odd m, [-128, 127] for 256.
inline int oz_residue(int v, int m) {
    int r = v % m;
    if (m == 256) return r >= 128 ? r - 256 : r < -128 ? r + 256 : r;
    return r > m / 2 ? r - m : r < -(m / 2) ? r + m : r;
}

// x 2^e, in steps that keep each factor a normal float: exact whenever the result is at least
// 2^-126 in magnitude (and for every x scaled up).
inline float oz_scale(float x, int e) {
    while (e > 127) {
        x *= as_type<float>(uint(254) << 23);
        e -= 127;
    }
    while (e < -126) {
        x *= as_type<float>(uint(1) << 23);
        e += 126;
    }
    return x * as_type<float>(uint(e + 127) << 23);
}

// x rounded to the nearest integer, ties to even (|x| < 2^31); exact arithmetic only.
inline int oz_round(float x) {
    const int t = int(x);  // towards zero
    const float f = x - float(t);
    if (f > 0.5f || (f == 0.5f && (t & 1))) return t + 1;
    if (f < -0.5f || (f == -0.5f && (t & 1))) return t - 1;
    return t;
}

// The exponent of a positive normal float: 2^x <= v < 2^(x + 1).
inline int oz_exponent(float v) { return int((as_type<uint>(v) >> 23) & 0xFFu) - 127; }

// C' from its seven residues (ozaki::crt_reconstruct).
inline long oz_reconstruct(thread const int* r) {
    ulong s = 0;
    float exact_part = 0.0f, rest = 0.0f;
    for (int l = 0; l < 7; ++l) {
        s += ulong(long(r[l])) * oz_basis(l);
        exact_part = fma(float(r[l]), oz_quotient_hi(l), exact_part);
        rest = fma(float(r[l]), oz_quotient_lo(l), rest);
    }
    const long q = long(oz_round(exact_part + rest));
    return long(s - ulong(q) * oz_p());
}

kernel void matmul_ozaki_int8_32x32(device const float* a [[buffer(0)]],
                                    device const float* b [[buffer(1)]],
                                    device float* c [[buffer(2)]],
                                    constant GemmParams& p [[buffer(3)]],
                                    uint2 group [[threadgroup_position_in_grid]],
                                    uint tid [[thread_index_in_threadgroup]]) {
    constexpr int T = 32, BK = 64, LINES = 2 * T, THREADS = 128, PER = T * T / THREADS, MODULI = 7;
    // Lines 0..31: rows of op(A); 32..63: columns of op(B). flags: 1 inexact, 2 not finite,
    // 4 outside C.
    threadgroup int line_e[LINES];
    threadgroup int line_flags[LINES];
    threadgroup float line_norm1[LINES];
    threadgroup char ta[T * BK];    // [m][k]: extents (BK, T)
    threadgroup char tb[BK * T];    // [k][n]: extents (T, BK)
    threadgroup int chunk[T * T];   // [m][n]: extents (T, T)
    threadgroup int acc[T * T];
    threadgroup char res[MODULI * T * T];
    threadgroup float red_c[THREADS];
    threadgroup float red_b[THREADS];
    threadgroup int red_bad[THREADS];

    const int M = int(p.M), N = int(p.N), K = int(p.K);
    const int r0 = int(group.y) * T, c0 = int(group.x) * T;
    const int t = int(tid);

    // 1. Scales. R: the largest 2-norm a scaled line may have, below the exact bound of
    //    ozaki::norm_bound (171701745.29 - sqrt(K)); slack covers FP32's error in the norm.
    if (t < LINES) {
        const bool is_row = t < T;
        const int line = is_row ? r0 + t : c0 + t - T;
        int flags = (is_row ? line >= M : line >= N) ? 4 : 0;
        float largest = 0.0f;
        for (int k = 0; k < K && flags == 0; ++k) {
            const float x = is_row ? gemm_a(a, p, uint(line), uint(k)) : gemm_b(b, p, uint(k), uint(line));
            if (!isfinite(x)) flags = 2;
            largest = max(largest, abs(x));
        }
        int e = 0;
        if (flags == 0 && largest > 0.0f) {
            const int E = largest >= 0x1p-126f ? oz_exponent(largest) : -126;  // largest 2^-E < 2
            float q = 0.0f;
            for (int k = 0; k < K; ++k) {
                const float x = oz_scale(is_row ? gemm_a(a, p, uint(line), uint(k)) : gemm_b(b, p, uint(k), uint(line)), -E);
                q = fma(x, x, q);
            }
            const float R = 171701744.0f - sqrt(float(K)) * (1.0f + 0x1p-20f) - 32.0f;
            const float slack = 1.0f + float(K) * 0x1p-23f + 0x1p-20f;
            e = oz_exponent(R / (sqrt(q) * slack)) - E;  // 2^e ||line|| <= R
        }
        float norm1 = 0.0f;
        if (flags == 0) {
            long sum = 0;
            for (int k = 0; k < K; ++k) {
                const float x = oz_scale(is_row ? gemm_a(a, p, uint(line), uint(k)) : gemm_b(b, p, uint(k), uint(line)), e);
                const int v = oz_round(x);
                if (float(v) != x) flags |= 1;
                sum += long(abs(v));
            }
            norm1 = float(sum) * (1.0f + 0x1p-22f);  // rounded up
        }
        line_e[t] = e;
        line_flags[t] = flags;
        line_norm1[t] = norm1;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    auto At = tensor<threadgroup char, extents<int, BK, T>, tensor_inline>(ta, extents<int, BK, T>());
    auto Bt = tensor<threadgroup char, extents<int, T, BK>, tensor_inline>(tb, extents<int, T, BK>());
    auto Ct = tensor<threadgroup int, extents<int, T, T>, tensor_inline>(chunk, extents<int, T, T>());
    constexpr auto desc = matmul2d_descriptor(T, T, BK, false, false, false,
                                              matmul2d_descriptor::mode::multiply_accumulate);
    matmul2d<desc, execution_simdgroups<4>> op;

    // 2. The residue products, one modulus at a time.
    for (int l = 0; l < MODULI; ++l) {
        const int m = oz_modulus(l);
        for (int s = 0; s < PER; ++s) acc[t + THREADS * s] = 0;
        for (int k0 = 0; k0 < K; k0 += BK) {
            for (int s = 0; s < T * BK / THREADS; ++s) {
                const int idx = t + THREADS * s;
                const int mi = idx / BK, kk = idx % BK, nj = idx % T, kb = idx / T;
                const int ra = mi, rb = T + nj;
                int va = 0, vb = 0;
                if (line_flags[ra] < 2 && k0 + kk < K)
                    va = oz_round(oz_scale(gemm_a(a, p, uint(r0 + mi), uint(k0 + kk)), line_e[ra]));
                if (line_flags[rb] < 2 && k0 + kb < K)
                    vb = oz_round(oz_scale(gemm_b(b, p, uint(k0 + kb), uint(c0 + nj)), line_e[rb]));
                ta[idx] = char(oz_residue(va, m));
                tb[idx] = char(oz_residue(vb, m));
            }
            for (int s = 0; s < PER; ++s) chunk[t + THREADS * s] = 0;
            threadgroup_barrier(mem_flags::mem_threadgroup);
            op.run(At, Bt, Ct);
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (int s = 0; s < PER; ++s) {
                const int e = t + THREADS * s;
                acc[e] = oz_residue(acc[e] + chunk[e], m);
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        for (int s = 0; s < PER; ++s) res[l * T * T + t + THREADS * s] = char(acc[t + THREADS * s]);
    }

    // 3. Reconstruction and the region's certificate, in the scale of its smallest exponent.
    int e_min = 0x7fffffff;
    for (int x = 0; x < T; ++x)
        if (line_flags[x] < 4) e_min = min(e_min, line_e[x]);
    int f_min = 0x7fffffff;
    for (int x = T; x < LINES; ++x)
        if (line_flags[x] < 4) f_min = min(f_min, line_e[x]);
    float value[PER];
    float sum_c = 0.0f, sum_b = 0.0f;
    int bad = 0;
    for (int s = 0; s < PER; ++s) {
        const int e = t + THREADS * s, i = e / T, j = e % T;
        value[s] = 0.0f;
        if (line_flags[i] >= 4 || line_flags[T + j] >= 4) continue;  // outside C
        if (line_flags[i] >= 2 || line_flags[T + j] >= 2) {
            bad = 1;  // NaN or Inf in the lines: IEEE FP32 decides
            continue;
        }
        int r[MODULI];
        for (int l = 0; l < MODULI; ++l) r[l] = int(res[l * T * T + e]);
        const long exact = oz_reconstruct(r);
        const int shift = line_e[i] + line_e[T + j];
        const float cf = float(exact);
        value[s] = oz_scale(cf, -shift);
        if (exact != 0 && !(abs(value[s]) >= 0x1p-126f && isfinite(value[s]))) bad = 1;  // subnormal, 0 or Inf
        const float ea = (line_flags[i] & 1) ? 0.5f : 0.0f, eb = (line_flags[T + j] & 1) ? 0.5f : 0.0f;
        const float bound = ea * line_norm1[T + j] + eb * line_norm1[i] + float(K) * ea * eb;
        const float w = oz_scale(1.0f, -(shift - e_min - f_min));  // <= 1
        if (w == 0.0f && bound > 0.0f) bad = 1;
        sum_c = fma(cf * w, cf * w, sum_c);
        sum_b = fma(bound * w, bound * w, sum_b);
    }
    red_c[t] = sum_c;
    red_b[t] = sum_b;
    red_bad[t] = bad;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int w = THREADS / 2; w >= 1; w /= 2) {
        if (t < w) {
            red_c[t] += red_c[t + w];
            red_b[t] += red_b[t + w];
            red_bad[t] |= red_bad[t + w];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    // tau(K) (ozaki::certificate_threshold_sq) with room for FP32's error in these sums.
    const float tau = float(K - 1) * 0x1p-24f * (1.0f - 0x1p-12f);
    const bool certified = red_bad[0] == 0 && isfinite(red_c[0]) && red_b[0] <= tau * tau * red_c[0];

    // 4. C.
    for (int s = 0; s < PER; ++s) {
        const int e = t + THREADS * s, i = r0 + e / T, j = c0 + e % T;
        if (i >= M || j >= N) continue;
        float v = value[s];
        if (!certified) {
            float dot = 0.0f;
            for (int k = 0; k < K; ++k) dot = fma(gemm_a(a, p, uint(i), uint(k)), gemm_b(b, p, uint(k), uint(j)), dot);
            v = dot;
        }
        device float* out = c + i * int(p.ldc) + j;
        *out = p.beta == 0.0f ? p.alpha * v : fma(p.alpha, v, p.beta * *out);
    }
}
