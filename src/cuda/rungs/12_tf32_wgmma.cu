// Rung 12, Hopper tensor cores: wgmma (TF32 in, FP32 accumulate) fed by TMA through a
// 4-stage mbarrier ring, with a producer warpgroup and two consumer warpgroups.
// Owns: a block owns 256 (m) x 128 (n) tiles of C, one after another (persistent, one
// block per SM); consumer warpgroup c owns its 64 columns [64c, 64c + 64) of each tile.
// Reuses: each 256 x 32 tile of A in shared memory is read by both consumers' wgmmas;
// each consumer's B fragment (from registers) is used for all 256 rows of m.
// C leaves through shared memory as float4 rows. Both tensor maps round the operands to
// nearest TF32 on the way into shared memory (cuBLAS TF32's error). A transposed B (W
// stored N x K, x @ W^T) is read in place, not packed first (BLayout in
// wgmma_persistent.cuh). Per-tile design: wgmma_gemm.cuh; schedule and epilogue:
// wgmma_persistent.cuh.
// Variant _splitk: the same kernel on every tile's k range in splits (split_k.cuh).
// Variant 128x128_splitk: 128-row tiles (m64n128k8 per consumer) with split-K, for few
// tiles and a long K: twice the tiles of a 256-row tile on the same C, so half the splits
// fill the GPU, each twice as long, and half the partial tiles to write and add.
// Variant 64x128: 64-row tiles (m64n64k8 per consumer) for problems of up to 128 rows
// (a small batch through x @ W^T), where a 256-row tile would compute three quarters
// zeros or more. A problem with more rows but at most 128 columns runs transposed,
// C^T = op(B)^T op(A)^T (launch_wgmma_few).
// Constraints: any shape (the 64x128 variant: M <= 128 or N <= 128); an sm_90 GPU;
// a transposed A and unaligned rows are packed first.
#include "cuda/common/wgmma_launch.cuh"

namespace fastgemm {
namespace cuda {

using Tf32Wgmma256x128 = WgmmaPersistentConfig<256, WgmmaMath::tf32>;

void launch_tf32_wgmma_256x128(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch_wgmma_persistent<Tf32Wgmma256x128>(p, stream, ws, "tf32_wgmma_256x128");
}

// Few tiles, long K: split-K. A 256 x 128 x 32 k-tile takes about a twelfth of the time
// that writing and adding its partial tile costs the whole GPU per SM (plan_split_k).
void launch_tf32_wgmma_256x128_splitk(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch_wgmma_split_k<Tf32Wgmma256x128>(p, stream, ws, "tf32_wgmma_256x128_splitk", 12.0);
}

using Tf32Wgmma128x128 = WgmmaPersistentConfig<128, WgmmaMath::tf32>;

// A 128 x 128 x 32 k-tile costs half a 256-row one; its partial tile too, so the ratio
// of the two stays where the 256-row tile's is.
void launch_tf32_wgmma_128x128_splitk(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch_wgmma_split_k<Tf32Wgmma128x128>(p, stream, ws, "tf32_wgmma_128x128_splitk", 12.0);
}

using Tf32Wgmma64x128 = WgmmaPersistentConfig<64, WgmmaMath::tf32>;

void launch_tf32_wgmma_64x128_splitk(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch_wgmma_few<Tf32Wgmma64x128>(p, stream, ws, "tf32_wgmma_64x128_splitk", 12.0, 128);
}

}  // namespace cuda
}  // namespace fastgemm
