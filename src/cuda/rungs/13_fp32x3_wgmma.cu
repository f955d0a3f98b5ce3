// Rung 13, fp32x3 on wgmma: an FP32-accurate product from TF32 tensor-core products.
// Each operand x is split into big = tf32(x) and small = tf32(x - big), each rounded to
// nearest (big + small is x to about 2^-22 relative), and C accumulates big*big +
// big*small + small*big in FP32; small*small (about 2^-22) is dropped.
// Owns: a block owns 128 x 128 tiles of C in turn (persistent, one block per SM);
// consumer warpgroup c owns columns [64c, 64c + 64) of each.
// Reuses: A's big part is A itself, rounded to TF32 by the TMA copy; a pre-pass writes
// only its small part, so a stage holds A's two tiles and one of B; B is split in
// registers as its fragment is loaded (scaled by 2^36, kX3Tiny). Three wgmmas per k8.
// Every two k-tiles the tensor-core products are added into FP32 registers with
// round-to-nearest adds (a second accumulator: hence 128 x 128 tiles, 4 stages of 48 KB);
// on runs of up to 72 k-tiles the two k-tiles' small products go in before their big
// ones, which halves the error of the tensor cores' truncating accumulation.
// Non-finite inputs, which the split cannot carry, leave non-finite accumulators; those
// parts of C go to a plain FP32 kernel (nonfinite.cuh). What was tried and not kept:
// docs/cuda-notes.md#fp32x3-design.
// Variant _splitk: every tile's k range in splits, summed and checked by reduce_split_k.
// Variants 64x128, 32x128, 16x128 (few rows): 64-, 32- and 16-row tiles with split-K
// for problems of up to 128, 32 and 16 rows (a small batch through x @ W^T), where a
// 128-row tile would compute mostly zeros or leave most SMs idle. The 16- and 32-row
// tiles are memory-bound: a stage is mostly W, and up to ten stages stay in flight. A
// problem with more rows but as few columns runs transposed, C^T = op(B)^T op(A)^T
// (launch_wgmma_few). Every variant reads a transposed B in place, as the tf32 ones do.
// Constraints: any shape (the few-row variants: M or N at most 128, 32, 16); an sm_90 GPU.
#include "cuda/common/wgmma_launch.cuh"

namespace fastgemm {
namespace cuda {

using Fp32x3Wgmma128x128 = WgmmaPersistentConfig<128, WgmmaMath::fp32x3>;

void launch_fp32x3_wgmma_128x128(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch_wgmma_persistent<Fp32x3Wgmma128x128>(p, stream, ws, "fp32x3_wgmma_128x128");
}

// Few tiles, long K: split-K, the sums checked for non-finite values by the reduction
// (split_k.cuh). A partial tile costs about four of this kernel's k-tiles.
void launch_fp32x3_wgmma_128x128_splitk(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch_wgmma_split_k<Fp32x3Wgmma128x128>(p, stream, ws, "fp32x3_wgmma_128x128_splitk", 4.0);
}

// The few-row tiles. A partial tile's cost in k-tiles falls with the tile: a 16-row
// k-tile is nearly all W's 16 KB, about what a 16 x 128 partial tile costs to write and
// read back.
using Fp32x3Wgmma64x128 = WgmmaPersistentConfig<64, WgmmaMath::fp32x3>;
using Fp32x3Wgmma32x128 = WgmmaPersistentConfig<32, WgmmaMath::fp32x3>;
using Fp32x3Wgmma16x128 = WgmmaPersistentConfig<16, WgmmaMath::fp32x3>;

void launch_fp32x3_wgmma_64x128_splitk(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch_wgmma_few<Fp32x3Wgmma64x128>(p, stream, ws, "fp32x3_wgmma_64x128_splitk", 4.0, 128);
}

void launch_fp32x3_wgmma_32x128_splitk(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch_wgmma_few<Fp32x3Wgmma32x128>(p, stream, ws, "fp32x3_wgmma_32x128_splitk", 2.0, 32);
}

void launch_fp32x3_wgmma_16x128_splitk(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    launch_wgmma_few<Fp32x3Wgmma16x128>(p, stream, ws, "fp32x3_wgmma_16x128_splitk", 1.0, 16);
}

}  // namespace cuda
}  // namespace fastgemm
