// The per-tile design of the Hopper tensor-core GEMM behind rungs 11 (tf32_wgmma) and 12
// (fp32x3_wgmma), and the small pieces it is built from (wgmma_rs, Parity). The kernel
// itself is wgmma_persistent.cuh. (Its first form, one block per output tile with C
// stored straight from the accumulators, measured 3-9% slower on the H200:
// benchmarks/RESULTS.md, third pass.)
//
// Roles are swapped so that both operands are read in the layout they are stored in:
// wgmma computes D = Aw * Bw with Aw = B^T (n x k, from registers) and Bw = A^T
// (k x m, from shared memory). TF32 wgmma reads shared operands only K-major; A (row-
// major M x K) is K-major as stored, so TMA brings BM x 32 tiles of it straight in
// (128-byte rows, 128-byte swizzle). B (row-major K x N) is N-major, which wgmma cannot
// read from shared memory for TF32, so it travels as the register operand instead:
// TMA brings 32 x 128 tiles of it (four 32x32 boxes, 128-byte swizzle) and each
// consumer thread loads its TF32 fragment with scalar shared loads.
//
// Rounding: the tensor cores read a shared-memory TF32 operand by dropping its 13 low
// mantissa bits (truncation, measured on the H200). tf32's tensor maps round both
// operands to nearest on the way in (TmaElement::tf32), as cuBLAS's TF32 kernel does:
// error 2.6e-4 instead of 4.2e-4 on uniform inputs, and, with zeros in the low bits,
// 2-3% less time on an H200 whose TF32 kernels run at its power limit.
//
// Block: 384 threads = 1 producer warpgroup (one thread issues TMA) + 2 consumer
// warpgroups. The block owns BM (m) x 128 (n) of C; consumer warpgroup c owns n rows
// [64c, 64c+64) of D^T, i.e. 64 columns of C, as one m64nBMk8 accumulator (BM/2
// registers per thread). Stages of shared memory form a ring guarded by mbarriers
// (full: TMA bytes landed; empty: both consumers done with it).
//
// Which n a fragment row holds is ours to choose (D's rows are just relabelled in the
// epilogue): row g + 8h of warp w maps to n = 32(w>>1) + 8(w&1) + 16(g>>2) + 4h + (g&3),
// which makes the 32 lanes' scalar loads hit 32 distinct banks under the swizzle.
//
// fp32x3 (X3): A arrives as TF32 big and small parts (two tiles per stage: A rounded by
// its tensor map, and a pre-pass's small parts); B's fragment is split in registers,
// scaled by 2^36 (split_tf32 of b 2^36: big = tf32(.), small = tf32(. - big); see kX3Tiny);
// three products big*big + big*small + small*big per k8 step go into a tensor-core
// accumulator that is then added into the FP32 result with round-to-nearest adds: the
// tensor cores' own accumulation rounds towards zero, and over K/8 x 3 steps that bias
// grew the error linearly with K (2.9e-5 at K = 4096, measured). Promoting every
// second k-tile (64 k) instead of every k-tile lets one k-tile stay in flight: 4-13%
// faster at 4096^3 and 8192^3, error 3.1e-7 -> 4.8e-7 at 4096^3 (cuBLAS SGEMM: 1.2e-6).
//
// Per consumer warpgroup and k-tile: wait for the stage, issue the k-tile's wgmmas,
// wait for the previous k-tile's (tf32; fp32x3 waits every second k-tile), release its
// stage, load the next k-tile's B fragments into the freed buffer while the wgmmas run.
// Each warpgroup thus keeps its next k-tile queued on the tensor cores, and the two
// consumer warpgroups interleave, so one's wgmmas cover the other's bookkeeping.
//
// Any M, N, K: TMA zero-fills out-of-range boxes and the epilogue checks bounds. Needs
// 16-byte aligned rows (the launcher packs an operand that is not, or is transposed).
#pragma once

#include "cuda/hopper.cuh"
#include "cuda/raster.cuh"
#include "cuda/wgmma_ops.cuh"

namespace fastgemm {
namespace cuda {

__device__ __forceinline__ void wgmma_rs(float (&d)[128], const uint32_t (&a)[4], uint64_t desc, uint32_t scale_d) {
    wgmma_m64n256k8_tf32_rs(d, a[0], a[1], a[2], a[3], desc, scale_d);
}
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t desc, uint32_t scale_d) {
    wgmma_m64n128k8_tf32_rs(d, a[0], a[1], a[2], a[3], desc, scale_d);
}

template <int N>
struct Parity {
    static constexpr int value = N;
};

}  // namespace cuda
}  // namespace fastgemm
