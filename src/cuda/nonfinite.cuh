// fp32x3's answer to non-finite inputs. Its split (x = big + small, both TF32) cannot
// carry an infinity: for x = +-Inf, big = x and small = 0, and the cross products
// big(a) * small(b) then give Inf * 0 = NaN, or an Inf of the wrong sign, where IEEE
// arithmetic gives +-Inf. So, with no host synchronisation:
// - the launcher records on the device whether A or B holds a NaN or an infinity (A as
//   it is split, B in flag_nonfinite's scan: one read of B, ~1% of the GEMM);
// - the usual wgmma kernel, gated on that flag, does nothing when it is set;
// - a checked form of the same kernel, queued after it, does nothing unless the flag is
//   set, and then computes the product as usual but tests each part of C (BM x 64)
//   before storing it: a NaN or an Inf among the inputs always leaves non-finite
//   accumulators in the parts whose products use it (wgmma_persistent.cuh,
//   all_finite). Those parts are not stored but listed;
// - gemm_ieee_listed, queued last, computes the listed parts as
//   C = alpha op(A) op(B) + beta C with plain FP32 FMAs, so that NaN and Inf propagate
//   as in reference BLAS, and returns at once when none is listed.
// With one NaN in A at 4096^3 only its row of tiles runs in plain FP32 (about half
// fp32x3's speed overall, against 1/30 when the whole product went there). On finite
// inputs the checked kernel and the fallback cost two launches that return at once.
// (Running the checked kernel always, with no scan and no gate, was ~2% slower at
// 8192^3 in steady state on the H200, where fp32x3 is power-bound:
// benchmarks/RESULTS.md, fifth session.) A finite product that overflows in the
// checked kernel is listed too, and is then computed in IEEE order.
#pragma once

#include "cuda/gemm_args.hpp"

namespace fastgemm {
namespace cuda {

// *flag = 1 if the rows x cols matrix x (row stride ld) holds a NaN or an infinity;
// left alone otherwise.
void flag_nonfinite(const float* x, int64_t rows, int64_t cols, int64_t ld, int* flag, cudaStream_t stream);

// For each region listed in `list` (list[0] = count, at most max_regions, then the
// (m0, n0) origin of each), rows x cols of C from there (clipped to M x N) computed as
// the IEEE FP32 GEMM of p (any transposes, alpha, beta). rows and cols are multiples
// of 16.
void gemm_ieee_listed(const GemmArgs& p, const int* list, int max_regions, int rows, int cols, cudaStream_t stream);

}  // namespace cuda
}  // namespace fastgemm
