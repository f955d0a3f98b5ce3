// Rung 12, fp32x3 on wgmma: an FP32-accurate product from TF32 tensor-core products.
// Each operand x is split into big = tf32(x) and small = tf32(x - big), each rounded to
// nearest (x is then big + small to about 2^-22 relative), and C accumulates
// big*big + big*small + small*big in FP32; the small*small term (about 2^-22) is
// dropped. A's big part is A itself, rounded to TF32 by the TMA copy on its way to
// shared memory (TmaElement::tf32: ties to even, as to_tf32), and a pre-pass writes only
// its small part, so each stage holds two tiles of A (big, small); B is split in
// registers as its fragment is loaded, scaled by 2^36 so that no small part of it
// underflows (kX3Tiny, device_common.cuh; see wgmma_gemm.cuh). Three wgmmas per k8 step.
// (Splitting A in shared memory instead, by three producer warps as each tile lands,
// saves the pass, ~5% of the time at 4096^3, but measured 8-12% slower on the H200: the
// wgmmas already read ~64 of the SM's 128 shared-memory bytes per clock, and the split
// moves 48 KB more per k-tile of ~1500 clocks. Having the producer warpgroup load A from
// global memory and write the small parts itself measured 1.51-1.74x slower: beside the
// consumers' 232 registers it keeps 40, too few loads in flight to feed a k-tile per
// ~1 us through L2 latency. Taking A as it is for the big part,
// which the unit truncates to TF32, measured 3% slower at 8192^3: the 13 low mantissa
// bits cost the tensor cores power when they are not zero, and at 8192^3 fp32x3 runs at
// its power limit. The TMA's rounding zeroes them for free.)
// Each pair of k-tiles' products is accumulated on the tensor cores and then added into
// FP32 registers with round-to-nearest adds (see wgmma_gemm.cuh), which needs a second
// accumulator: block tile 128 (m) x 128 (n), 4 stages of 48 KB. Persistent, with the
// shared-memory staged epilogue of wgmma_persistent.cuh. Any shape. A NaN or an
// infinity among the inputs, which the split cannot carry, leaves non-finite
// accumulators; the kernel leaves those parts of C to a plain FP32 kernel
// (nonfinite.cuh).
#include "cuda/wgmma_launch.cuh"

namespace fastgemm {
namespace cuda {

void launch_fp32x3_wgmma(const GemmArgs& p, cudaStream_t stream, Workspace& ws) {
    launch_wgmma_persistent<WgmmaPersistentConfig<128, true, true>>(p, stream, ws, "fp32x3_wgmma");
}

}  // namespace cuda
}  // namespace fastgemm
