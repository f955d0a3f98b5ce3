// Stream-K tail, shared by the rungs that run whole tiles in rounds of one block per
// SM slot (09_async_tma's 128x128 FFMA kernel, the persistent wgmma kernels).
//
// With T tiles and G blocks resident at once, the last round holds R = T mod G tiles,
// and while it runs G - R slots idle. The launcher can instead deal the R x KT k-tile
// steps of those tiles out evenly to G blocks of a second kernel: block b takes the flat
// range [b W / G, (b + 1) W / G) of W = R KT steps, cut at tile boundaries into
// segments. A segment parks its FP32 partial tile in a workspace slot; the block that
// completes a tile's last segment (a counter per tile) adds the partials in segment
// order, so the result does not depend on which block finishes first, and applies
// alpha / beta.
#pragma once

#include <algorithm>

#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/common/device_operands.hpp"
#include "cuda/common/workspace.hpp"

namespace fastgemm {
namespace cuda {

// tail_tiles == 0: every tile whole.
struct TailSplit {
    int full_tiles = 0;            // tiles [0, full_tiles) are run whole
    int tail_tiles = 0;            // the R tiles after them are dealt out by k-tiles
    int max_segments = 1;          // partial-tile slots per tail tile
    float* partial = nullptr;      // tail_tiles * max_segments partial tiles, BM x BN each
    unsigned* counters = nullptr;  // segments finished per tail tile (zeroed before launch)
};

// One segment of the tail: k-tiles [kb, ke) of tail tile r (tile full_tiles + r), the
// seg-th of its nseg segments.
struct TailSegment {
    int r, kb, ke, seg, nseg;
};

// Walks block b's segments of the tail, in order.
class TailWalker {
public:
    __device__ TailWalker(const TailSplit& ts, int KT) : KT_(KT), W_(int64_t(ts.tail_tiles) * KT) {
        it_ = int64_t(blockIdx.x) * W_ / gridDim.x;
        hi_ = int64_t(blockIdx.x + 1) * W_ / gridDim.x;
    }
    __device__ bool next(TailSegment& u) {
        if (it_ >= hi_) return false;
        const int r = int(it_ / KT_);
        const int64_t begin = int64_t(r) * KT_, end = min(hi_, begin + KT_);
        const int first = owner(begin), last = owner(begin + KT_ - 1);
        u = {r, int(it_ - begin), int(end - begin), int(blockIdx.x) - first, last - first + 1};
        it_ = end;
        return true;
    }

private:
    // The block whose range holds flat step i: the largest b with b W / G <= i.
    __device__ int owner(int64_t i) const { return int(((i + 1) * gridDim.x - 1) / W_); }
    int KT_;
    int64_t W_, it_, hi_;
};

// The block that completes a split tail tile: C = alpha * (the nseg partial tiles added
// in segment order) + beta * C. THREADS threads (ct = 0 .. THREADS - 1) walk the tile in
// float4 columns (coalesced), eight segments' loads in flight per thread. Out of line:
// it runs once per split tile. (Scalars by value: a reference to the kernel's DeviceOperands
// would force a local copy of it, and every access to the arguments would then go
// through local memory.)
template <int BM, int BN, int THREADS>
__device__ __noinline__ void sum_partials(const float* first, int nseg, int ct, float* C, int64_t ldc, int64_t M,
                                          int64_t N, float alpha, float beta, int64_t m0, int64_t n0) {
    constexpr int Q_PER_ROW = BN / 4, TILE4 = BM * BN / 4;
    const float4* src = reinterpret_cast<const float4*>(first);
    for (int q = ct; q < TILE4; q += THREADS) {
        float4 acc[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) acc[k] = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int sg0 = 0; sg0 < nseg; sg0 += 8) {
#pragma unroll
            for (int k = 0; k < 8; ++k)
                if (sg0 + k < nseg) {
                    const float4 v = __ldcg(src + int64_t(sg0 + k) * TILE4 + q);
                    acc[k].x += v.x, acc[k].y += v.y, acc[k].z += v.z, acc[k].w += v.w;
                }
        }
#pragma unroll
        for (int k = 1; k < 8; ++k) acc[0].x += acc[k].x, acc[0].y += acc[k].y, acc[0].z += acc[k].z, acc[0].w += acc[k].w;
        const int64_t m = m0 + q / Q_PER_ROW, n = n0 + 4 * (q % Q_PER_ROW);
        if (m >= M) continue;
        const float v[4] = {acc[0].x, acc[0].y, acc[0].z, acc[0].w};
#pragma unroll
        for (int e = 0; e < 4; ++e)
            if (n + e < N) {
                float* c = C + m * ldc + n + e;
                *c = beta == 0.0f ? alpha * v[e] : alpha * v[e] + beta * *c;
            }
    }
}

// Called by every thread of a block that has just parked its segment's partial tile
// (its own stores done): counts the segment in the tile's counter and, in the block that
// completes the tile, adds the tile's nseg partials (from `first`) into C. `last` is a
// __shared__ int of the caller's, rewritten here.
template <int BM, int BN, int THREADS>
__device__ __forceinline__ void close_segment(unsigned* counter, int nseg, int& last, const float* first, float* C,
                                              int64_t ldc, int64_t M, int64_t N, float alpha, float beta,
                                              int64_t m0, int64_t n0) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == unsigned(nseg - 1);
    __syncthreads();
    if (last) {
        __threadfence();
        sum_partials<BM, BN, THREADS>(first, nseg, int(threadIdx.x), C, ldc, M, N, alpha, beta, m0, n0);
    }
}

// The launcher's side: splits the last round when it holds at most max_rest tiles (and
// enough k-tiles that every block gets one), reserving the partial tiles (workspace
// slot 3) and zeroed counters (slot 4).
inline TailSplit plan_stream_k_tail(int64_t tiles, int64_t blocks, int64_t KT, int64_t max_rest, size_t tile_floats,
                                    Workspace& ws, cudaStream_t stream) {
    TailSplit ts;
    ts.full_tiles = int(tiles);
    const int64_t rest = tiles % blocks;
    if (tiles <= blocks || rest == 0 || rest > max_rest || rest * KT < blocks) return ts;
    ts.full_tiles = int(tiles - rest);
    ts.tail_tiles = int(rest);
    // Partial slots per tile: the most blocks whose ranges meet one tile's KT steps
    // (TailWalker::owner, evaluated here for every tail tile).
    const int64_t W = rest * KT;
    auto owner = [&](int64_t i) { return ((i + 1) * blocks - 1) / W; };
    for (int64_t r = 0; r < rest; ++r)
        ts.max_segments = std::max(ts.max_segments, int(owner((r + 1) * KT - 1) - owner(r * KT) + 1));
    ts.partial = static_cast<float*>(ws.get(3, size_t(rest) * ts.max_segments * tile_floats * sizeof(float)));
    ts.counters = static_cast<unsigned*>(ws.get(4, size_t(rest) * sizeof(unsigned)));
    FASTGEMM_CUDA_CHECK(cudaMemsetAsync(ts.counters, 0, size_t(rest) * sizeof(unsigned), stream));
    return ts;
}

}  // namespace cuda
}  // namespace fastgemm
