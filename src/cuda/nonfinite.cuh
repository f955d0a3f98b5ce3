// fp32x3's answer to non-finite inputs. Its split (x = big + small, both TF32) cannot
// carry an infinity: for x = +-Inf, big = x and small = 0, and the cross products
// big(a) * small(b) then give Inf * 0 = NaN, or an Inf of the wrong sign, where IEEE
// arithmetic gives +-Inf. So, with no host synchronisation:
// - the launcher records on the device whether A or B holds a NaN or an infinity (A as
//   it is split, B in flag_nonfinite's scan: one read of B, ~1-2% of the GEMM);
// - the wgmma kernel, gated on that flag, does nothing when it is set;
// - gemm_ieee_if_flagged, queued after it, does nothing unless it is set, and then
//   computes C = alpha op(A) op(B) + beta C with plain FP32 FMAs, so that NaN and Inf
//   propagate as in reference BLAS (at smem_tiling's speed: non-finite inputs are the
//   exception, and a wrong NaN is worse than a slow Inf).
// (Checking the kernel's accumulators instead would send only the parts of C that a
// NaN or Inf reaches to the slow kernel: a non-finite factor always leaves non-finite
// accumulators behind. Built and measured: right, 15x faster with one NaN at 4096^3,
// but 3-4% slower on finite inputs at 8192^3 in steady state on the H200, where the
// kernel is power-bound; benchmarks/RESULTS.md, fifth session.)
#pragma once

#include "cuda/gemm_args.hpp"

namespace fastgemm {
namespace cuda {

// *flag = 1 if the rows x cols matrix x (row stride ld) holds a NaN or an infinity;
// left alone otherwise.
void flag_nonfinite(const float* x, int64_t rows, int64_t cols, int64_t ld, int* flag, cudaStream_t stream);

// The IEEE FP32 GEMM of p, run only if *flag != 0 (any shape, transposes, alpha, beta).
void gemm_ieee_if_flagged(const GemmArgs& p, const int* flag, cudaStream_t stream);

}  // namespace cuda
}  // namespace fastgemm
