// Split-K with a deterministic reduction, shared by the split-K variants of rungs 10, 12
// and 13 and by the skinny rung.
//
// When the output tiles of a problem cannot fill the GPU (K much larger than M x N
// needs: 256 x 256 x 65536 has 2 to 4 tiles for 132 SMs), each tile's k range is cut
// into S splits, each one work unit. A unit writes its FP32 partial tile into slab s of
// a partial buffer laid out like C (slab s = rows [0, M_pad) x columns [0, N_pad), row
// stride ld, whole tiles, no bounds checks needed); reduce_split_k then forms
//   C = alpha * (P_0 + P_1 + ... + P_{S-1}) + beta * C,
// adding the slabs in one fixed order for every element, so the result does not depend
// on which unit finished first, or on the number of SMs: the same inputs and S give the
// same bits. The order is increasing s. A C of few 64 x 64 regions (256 x 256 has 16)
// is summed by blocks of 16 rows, so that its slabs still stream through every SM. The
// fp32x3 check decides whole regions, one block each, so there, with few regions and S
// large, the slabs are summed in G consecutive groups first, each group in increasing s
// by its own blocks, then the G group sums in increasing g (G from the shape and S
// only): one block per region would stream 64 slabs through 16 SMs, 33 us of a 250 us
// call at 256 x 256 x 65536. (The in-kernel tails of
// graded_tail.cuh and stream_k.cuh are deterministic too, but their sum runs in the one
// block that closes a tile; here every SM sums.)
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/common/workspace.hpp"

namespace fastgemm {
namespace cuda {

// The splits of K for `tiles` output tiles on `slots` blocks resident at once: the S in
// [1, max_splits] with the least estimated time, in k-tiles of one block,
//   ceil(tiles S / slots) ceil(KT / S) + (S > 1 ? reduce_ktiles tiles S / slots : 0),
// where reduce_ktiles is what writing and adding one partial tile costs, in k-tiles of
// the kernel (more for a fast tensor-core k-tile than for an FFMA one). Ties go to the
// smaller S. No split is shorter than min_kt k-tiles.
inline int plan_split_k(int64_t tiles, int64_t slots, int64_t KT, int64_t min_kt, int64_t max_splits,
                        double reduce_ktiles) {
    int64_t most = KT / (min_kt > 0 ? min_kt : 1);
    if (most > max_splits) most = max_splits;
    int best = 1;
    double best_cost = 0.0;
    for (int64_t s = 1; s <= (most > 1 ? most : 1); ++s) {
        const double rounds = double((tiles * s + slots - 1) / slots);
        const double cost = rounds * double((KT + s - 1) / s) + (s > 1 ? reduce_ktiles * double(tiles * s) / slots : 0);
        if (s == 1 || cost < best_cost) best = int(s), best_cost = cost;
    }
    return best;
}

// The most splits whose slabs (M x N rounded up to whole tiles) fit in 256 MB, and at
// most 64: the partial traffic must stay small beside the GEMM's.
inline int64_t max_split_k(int64_t M, int64_t N, int tile_rows, int tile_cols) {
    const int64_t rows = (M + tile_rows - 1) / tile_rows * tile_rows, cols = (N + tile_cols - 1) / tile_cols * tile_cols;
    const int64_t fit = (int64_t(256) << 20) / (4 * (rows > 0 ? rows : 1) * (cols > 0 ? cols : 1));
    return fit < 1 ? 1 : fit > 64 ? 64 : fit;
}

// k-tiles [split_k_begin(s), split_k_begin(s + 1)) belong to split s of S.
__host__ __device__ inline int split_k_begin(int s, int S, int KT) { return int(int64_t(s) * KT / S); }

// The partial buffer of a split-K launch: `splits` slabs of rows x ld floats.
struct SplitKSlabs {
    float* partial = nullptr;
    int splits = 1;
    int64_t rows = 0, ld = 0;  // padded to whole tiles; ld a multiple of 4
    __host__ __device__ int64_t slab() const { return rows * ld; }
};

// Workspace slot 5, sized for `splits` slabs of rows x cols rounded up to whole
// tile_rows x tile_cols tiles.
SplitKSlabs reserve_split_k_slabs(Workspace& ws, int splits, int64_t rows, int64_t cols, int tile_rows, int tile_cols);

// Where the slabs' element (m, n) goes: C(m, n), or C(n, m) for a product computed
// transposed, C^T = op(B)^T op(A)^T (the few-row wgmma tiles take a problem with few
// columns that way, wgmma_launch.cuh).
enum class SlabsToC { same, transposed };

// C = alpha * sum of the slabs (in the order above) + beta * C, where the slabs hold an M x N
// product: C is M x N (row stride ldc), or N x M for SlabsToC::transposed; beta == 0 does
// not read C. With `fallback` (fp32x3), a 64 x 64 region of C whose sum is not finite is
// left unwritten and listed in it (a count, then (row, column) pairs of C's region
// corners, at most ceil(M / 64) ceil(N / 64) of them) for gemm_ieee_listed
// (nonfinite.cuh); the caller zeroes the count first.
void reduce_split_k(const SplitKSlabs& slabs, int64_t M, int64_t N, float* C, int64_t ldc, float alpha, float beta,
                    int* fallback, cudaStream_t stream, SlabsToC to_c = SlabsToC::same);

constexpr int kSplitKRegion = 64;  // the reduction's region of C, and fp32x3's fallback unit

}  // namespace cuda
}  // namespace fastgemm
