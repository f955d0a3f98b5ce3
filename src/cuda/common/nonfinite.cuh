// fp32x3's answer to non-finite inputs. Its split (x = big + small, both TF32) cannot
// carry an infinity or a NaN: small = x - big is then NaN, and so is every product that
// uses it, where IEEE arithmetic may give +-Inf. Nor a finite x within 2^-12 relative of
// FLT_MAX, whose big part rounds to Inf. So:
// - the wgmma kernel tests each part of C (BM x 64, one consumer warpgroup's) before it
//   stores it: a NaN or an Inf among the inputs always leaves non-finite accumulators
//   in the parts whose products use it (wgmma_persistent.cuh, all_finite). Those parts
//   are not stored but listed;
// - gemm_ieee_listed, queued after it, computes the listed parts as
//   C = alpha op(A) op(B) + beta C with plain FP32 FMAs, so that NaN and Inf propagate
//   as in reference BLAS, and returns at once when none is listed.
// A finite product that overflows is listed too, and is then computed in IEEE order; so
// is one that overflows only at the 2^36 scale B is split at (|b| or a product >= 2^92),
// and a part of C that uses an A value under 2^-113, whose small part the pre-pass makes
// NaN (both for the split's range: kX3Tiny, device_common.cuh).
// With one NaN in A at 4096^3 only its row of tiles runs in plain FP32 (about half
// fp32x3's speed overall). On finite inputs the test costs a few instructions per part
// of C and the fallback one launch that returns at once: cheaper than scanning A and B
// for non-finite values first (docs/cuda-notes.md#fp32x3-nonfinite).
#pragma once

#include <cuda_runtime.h>

#include "cuda/common/device_operands.hpp"
#include "cuda/common/workspace.hpp"

namespace fastgemm {
namespace cuda {

// For each region listed in `list` (list[0] = count, at most max_regions, then the
// (m0, n0) origin of each), rows x cols of C from there (clipped to M x N) computed as
// the IEEE FP32 GEMM of p (any transposes, alpha, beta). rows and cols are multiples
// of 16.
void gemm_ieee_listed(const DeviceOperands& p, const int* list, int max_regions, int rows, int cols, cudaStream_t stream);

// The list gemm_ieee_listed reads, in workspace slot 7 (every kernel that lists regions
// uses this slot): room for the count and max_regions (m0, n0) pairs. Its count is not
// zeroed here: the caller queues that (a memset, or an operand pass that does it).
int* fallback_list(Workspace& ws, int64_t max_regions);

}  // namespace cuda
}  // namespace fastgemm
