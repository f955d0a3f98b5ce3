// The per-tile design of the Hopper tensor-core GEMM behind rungs 12 (tf32_wgmma) and 13
// (fp32x3_wgmma), and two small pieces of it (wgmma_rs, Parity). The kernel is
// wgmma_persistent.cuh; the reasons for each choice are in
// docs/cuda-notes.md#wgmma-design.
// - Roles swapped: wgmma computes D = B^T A^T = C^T with B^T (n x k) as the register
//   operand and A^T (k x m) from shared memory, because TF32 wgmma reads shared operands
//   only K-major: A (M x K row-major) is K-major as stored, B (K x N) is not.
// - Shared tiles: A as BM x 32 boxes (128-byte rows, 128-byte swizzle); B as four 32 x 32
//   boxes per k-tile (or, for a transposed B, one 128 x 32 box: wgmma_persistent.cuh),
//   from which each consumer thread loads its TF32 fragment with scalar shared loads.
// - Fragment rows: row g + 8h of warp w holds n = 32(w>>1) + 8(w&1) + 16(g>>2) + 4h +
//   (g&3) (D's rows are relabelled in the epilogue), so the 32 lanes' scalar loads hit 32
//   distinct banks under the swizzle.
// - Rounding: the tensor maps round A (and tf32's B) to nearest TF32 on the way in
//   (TmaElement::tf32); the unit would otherwise truncate (docs/cuda-notes.md#tf32-rounding).
// - Block: 384 threads = 1 producer warpgroup (one thread issues TMA) + 2 consumer
//   warpgroups; consumer c owns n rows [64c, 64c + 64) of D = 64 columns of C, as one
//   m64nBMk8 accumulator (BM / 2 registers per thread). Stages form a ring guarded by
//   mbarriers (full: bytes landed; empty: both consumers done).
// - fp32x3: each stage holds A's big part (A rounded by its map) and small part (a
//   pre-pass); B's fragment is split in registers at the 2^36 scale (kX3Tiny); three
//   products big*big + big*small + small*big per k8 step gather in a tensor-core
//   accumulator, added into the FP32 result with round-to-nearest adds every PROMOTE
//   k-tiles (the tensor cores' own accumulation rounds towards zero).
// - Per consumer and k-tile: wait for the stage, issue its wgmmas, wait for the previous
//   k-tile's, release that stage, load the next k-tile's B fragments while the wgmmas
//   run; the two consumers interleave, so one's wgmmas cover the other's bookkeeping.
// Any M, N, K: TMA zero-fills out-of-range boxes and the epilogue checks bounds.
#pragma once

#include "cuda/common/hopper.cuh"
#include "cuda/common/raster.cuh"
#include "cuda/common/wgmma_ops.cuh"

namespace fastgemm {
namespace cuda {

__device__ __forceinline__ void wgmma_rs(float (&d)[128], const uint32_t (&a)[4], uint64_t desc, uint32_t scale_d) {
    wgmma_m64n256k8_tf32_rs(d, a[0], a[1], a[2], a[3], desc, scale_d);
}
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t desc, uint32_t scale_d) {
    wgmma_m64n128k8_tf32_rs(d, a[0], a[1], a[2], a[3], desc, scale_d);
}
__device__ __forceinline__ void wgmma_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc, uint32_t scale_d) {
    wgmma_m64n64k8_tf32_rs(d, a[0], a[1], a[2], a[3], desc, scale_d);
}
__device__ __forceinline__ void wgmma_rs(float (&d)[16], const uint32_t (&a)[4], uint64_t desc, uint32_t scale_d) {
    wgmma_m64n32k8_tf32_rs(d, a[0], a[1], a[2], a[3], desc, scale_d);
}
__device__ __forceinline__ void wgmma_rs(float (&d)[8], const uint32_t (&a)[4], uint64_t desc, uint32_t scale_d) {
    wgmma_m64n16k8_tf32_rs(d, a[0], a[1], a[2], a[3], desc, scale_d);
}

template <int N>
struct Parity {
    static constexpr int value = N;
};

}  // namespace cuda
}  // namespace fastgemm
