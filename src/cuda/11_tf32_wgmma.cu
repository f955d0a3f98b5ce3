// Rung 11, Hopper tensor cores: wgmma (TF32 in, FP32 accumulate) fed by TMA through a
// 4-stage mbarrier ring, with a producer warpgroup and two consumer warpgroups, block
// tile 256 (m) x 128 (n) x 32 (k). Persistent: one block per SM walks its share of the
// tiles, the producer loading the next tile while the consumers store the last one;
// C leaves through shared memory as float4 rows. The per-tile work and its layout
// choices are described in wgmma_gemm.cuh, the persistent schedule and epilogue in
// wgmma_persistent.cuh. Both tensor maps round the operands to nearest TF32 on the way
// into shared memory (the unit would truncate A): cuBLAS's TF32 error, and 2-3% less
// time than with the low bits left in (wgmma_gemm.cuh). Any shape; transposed or
// unaligned operands are packed first.
#include "cuda/wgmma_launch.cuh"

namespace fastgemm {
namespace cuda {

void launch_tf32_wgmma(const GemmArgs& p, cudaStream_t stream, Workspace& ws) {
    launch_wgmma_persistent<WgmmaPersistentConfig<256, false, true>>(p, stream, ws, "tf32_wgmma");
}

}  // namespace cuda
}  // namespace fastgemm
