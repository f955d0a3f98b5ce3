// Device-side helpers shared by the ladder's kernels: operand accessors that honour
// the transposes, the alpha/beta epilogue, and thin wrappers over the PTX that the
// later rungs use (cp.async, tf32 rounding). Header-only, included by .cu files.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/common/device_operands.hpp"

namespace fastgemm {
namespace cuda {

__host__ __device__ constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// op(A)(i, k) and op(B)(k, j): the generic rungs read through these, so one kernel
// serves every transpose combination.
__device__ __forceinline__ float load_op_a(const DeviceOperands& p, int64_t i, int64_t k) {
    return p.problem.trans_a ? p.A[k * p.problem.lda + i] : p.A[i * p.problem.lda + k];
}
__device__ __forceinline__ float load_op_b(const DeviceOperands& p, int64_t k, int64_t j) {
    return p.problem.trans_b ? p.B[j * p.problem.ldb + k] : p.B[k * p.problem.ldb + j];
}

// C = alpha * acc + beta * C. beta == 0 must not read C: it may hold NaN (the
// verifier poisons it) and BLAS semantics say it is not an input then.
__device__ __forceinline__ void store_c(const DeviceOperands& p, int64_t i, int64_t j, float acc) {
    float* c = p.C + i * p.problem.ldc + j;
    *c = p.problem.beta == 0.0f ? p.problem.alpha * acc : p.problem.alpha * acc + p.problem.beta * *c;
}
__device__ __forceinline__ void store_c4(const DeviceOperands& p, int64_t i, int64_t j, float4 acc) {
    float4* c = reinterpret_cast<float4*>(p.C + i * p.problem.ldc + j);
    const float alpha = p.problem.alpha, beta = p.problem.beta;
    float4 r;
    if (beta == 0.0f) {
        r = make_float4(alpha * acc.x, alpha * acc.y, alpha * acc.z, alpha * acc.w);
    } else {
        float4 old = *c;
        r = make_float4(alpha * acc.x + beta * old.x, alpha * acc.y + beta * old.y, alpha * acc.z + beta * old.z,
                        alpha * acc.w + beta * old.w);
    }
    *c = r;
}

// store_c4 where C allows it (`vec`: C's rows start on 16 bytes, and the four columns
// are inside C), else store_c for each of the four columns that is inside C.
__device__ __forceinline__ void store_c4_clipped(const DeviceOperands& p, int64_t i, int64_t j, float4 acc, bool vec) {
    if (vec && j + 4 <= p.problem.N) {
        store_c4(p, i, j, acc);
    } else {
        const float v[4] = {acc.x, acc.y, acc.z, acc.w};
#pragma unroll
        for (int e = 0; e < 4; ++e)
            if (j + e < p.problem.N) store_c(p, i, j + e, v[e]);
    }
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// cp.async: global -> shared without passing through registers (sm_80+).
__device__ __forceinline__ void cp_async_4(void* smem, const void* gmem) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Round to the nearest TF32 value (10 mantissa bits), returned as the fp32 bit pattern
// the tensor cores read. Rounding (rather than letting the unit drop the low bits)
// halves the representation error. sm_90 has a conversion instruction for ties-to-even
// (cvt.rn, one F2FP.TF32), the rounding a TmaElement::tf32 copy applies too (fp32x3
// relies on the two agreeing); sm_80's only form, ties-away (cvt.rna), costs three
// integer instructions, a fifth of fp32x3's k loop if it were used there.
__device__ __forceinline__ uint32_t to_tf32(float x) {
    uint32_t r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
#else
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
#endif
    return r;
}

// The fp32x3 split of x: big = tf32(x), small = tf32(x - big), each rounded to nearest,
// so that big + small is x to about 2^-22 relative. Not for non-finite x: x - big is
// then NaN, and the products that use it come out NaN, which fp32x3's kernel catches
// (nonfinite.cuh); so does an x within 2^-12 relative of FLT_MAX, whose big rounds to
// Inf.
struct Tf32Split {
    uint32_t big, small;
};

// The range the split carries. TF32 keeps 10 mantissa bits down to 2^-126 and below
// that has subnormals spaced 2^-136, so a small part under 2^-126 loses bits: x = big +
// small holds to FP32 accuracy only for |x| >= 2^-113 (docs/cuda-notes.md#fp32x3-range).
// So fp32x3 splits B scaled by 2^36
// (every nonzero FP32 value is then >= 2^-113; the products are scaled back as they are
// added into C, and a B value or a product that overflows at that scale is non-finite
// and goes to the IEEE fallback, nonfinite.cuh), and its A pre-pass makes the small part
// of a nonzero |a| < 2^-113 NaN, which sends the parts of C that use it to the same
// fallback.
constexpr float kX3Tiny = 0x1p-113f;
constexpr float kX3ScaleB = 0x1p36f, kX3UnscaleB = 0x1p-36f;
__device__ __forceinline__ Tf32Split split_tf32(float x) {
    const uint32_t big = to_tf32(x);
    return {big, to_tf32(x - __uint_as_float(big))};
}

}  // namespace cuda
}  // namespace fastgemm
