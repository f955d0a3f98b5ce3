// fp32x3's answer to non-finite inputs. Its split (x = big + small, both TF32) cannot
// carry an infinity: for x = +-Inf, big = x and small = 0, and the cross products
// big(a) * small(b) then give Inf * 0 = NaN, or an Inf of the wrong sign, where IEEE
// arithmetic gives +-Inf. So, with no host synchronisation and no pass over the inputs:
// - the wgmma kernel checks its accumulators before it stores a part of C: a NaN or
//   an infinity in A or B always leaves a non-finite value in every part of C whose
//   products use it (wgmma_persistent.cuh, all_finite). Such a part is not stored but
//   listed (region origins in a device array);
// - gemm_ieee_listed, queued after it, computes the listed regions as
//   C = alpha op(A) op(B) + beta C with plain FP32 FMAs, so that NaN and Inf propagate
//   as in reference BLAS (at smem_tiling's speed: non-finite inputs are the exception,
//   and a wrong NaN is worse than a slow Inf), and returns at once when none is listed.
// A finite product that overflows is listed too, and is then computed in IEEE order.
#pragma once

#include "cuda/gemm_args.hpp"

namespace fastgemm {
namespace cuda {

// For each region listed in `list` (list[0] = count, at most max_regions, then the
// (m0, n0) origin of each), rows x cols of C from there (clipped to M x N) computed as
// the IEEE FP32 GEMM of p (any transposes, alpha, beta). rows and cols are multiples
// of 16.
void gemm_ieee_listed(const GemmArgs& p, const int* list, int max_regions, int rows, int cols, cudaStream_t stream);

}  // namespace cuda
}  // namespace fastgemm
