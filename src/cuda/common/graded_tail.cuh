// Graded tail: the last tiles of a one-tile-per-block grid cut into k-segments, in the
// same launch, so that the end of the grid is made of small blocks.
// Why: the SMs of an H200 do not all run the 68 KB FFMA loop at one speed (a group of
// them is 10-18% slower per tile; docs/cuda-notes.md#instruction-fetch). The hardware
// hands blocks to SMs as they free up, so the slow ones do fewer tiles, but the grid
// ends with its last tile: small blocks at the end let every SM finish at about the
// same time.
// Order: blocks run in increasing index, first the whole tiles, then n1 tiles in s1
// segments each, then n2 tiles in s2 segments. A segment parks its FP32 partial tile in
// a workspace slot; the block that completes a tile's last segment (a counter per tile)
// adds the tile's partials in segment order (sum_partials, stream_k.cuh), so the result
// does not depend on which block finishes first. The dispatch order only makes it fast.
#pragma once

#include <algorithm>

#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_operands.hpp"
#include "cuda/common/workspace.hpp"

namespace fastgemm {
namespace cuda {

// n1 == n2 == 0: every tile whole.
struct GradedTail {
    int whole = 0;                 // blocks [0, whole) run tiles [0, whole) whole
    int n1 = 0, s1 = 1;            // then n1 tiles in s1 segments each
    int n2 = 0, s2 = 1;            // then n2 tiles in s2 segments each
    float* partial = nullptr;      // one partial tile per segment block, in block order
    unsigned* counters = nullptr;  // segments finished per split tile (zeroed before launch)
};

// The work of one block: k-tiles [kb, ke) of tile `tile`, segment seg of nseg (nseg == 1:
// the whole tile, written straight to C). A split tile's partials are slots
// [first_slot, first_slot + nseg) of GradedTail::partial; it is split tile `split`.
struct BlockUnit {
    int tile, kb, ke, seg, nseg, first_slot, split;
};

__device__ __forceinline__ BlockUnit block_unit(const GradedTail& g, int block, int KT) {
    if (block < g.whole) return {block, 0, KT, 0, 1, 0, 0};
    int j = block - g.whole, split, seg, nseg, first_slot;
    if (j < g.n1 * g.s1) {
        split = j / g.s1, seg = j % g.s1, nseg = g.s1, first_slot = j - seg;
    } else {
        const int j2 = j - g.n1 * g.s1;
        split = g.n1 + j2 / g.s2, seg = j2 % g.s2, nseg = g.s2, first_slot = j - seg;
    }
    return {g.whole + split, seg * KT / nseg, (seg + 1) * KT / nseg, seg, nseg, first_slot, split};
}

// The launcher's side. `slots`: blocks resident at once (SMs x blocks per SM). With at
// least that many tiles, the last `cut` tiles are split: the first half of them in four
// k-segments each, the rest in eight. `cut` covers what the last round lacks or holds,
// whichever is less (rem = tiles % slots tiles run in it: min(rem, slots - rem)), plus
// an eighth of a round for the spread of SM speeds (docs/cuda-notes.md#graded-tail).
// With fewer tiles than slots, every tile is cut so that the grid fills the GPU
// (split-K). No segment is shorter than min_kt k-tiles. Partial tiles go to workspace
// slot 3, counters to slot 4: fewer than 4 x slots partial tiles whatever the problem
// size (66 MB for 128 x 256 tiles on 132 SMs).
inline GradedTail plan_graded_tail(int64_t tiles, int64_t slots, int64_t KT, int64_t min_kt, size_t tile_floats,
                                   Workspace& ws, cudaStream_t stream) {
    GradedTail g;
    g.whole = int(tiles);
    const int64_t most = std::max<int64_t>(1, KT / min_kt);  // most segments per tile
    if (tiles >= slots) {
        const int64_t rem = tiles % slots;
        const int64_t cut = std::min<int64_t>(std::min(rem, slots - rem) + slots / 8, tiles);
        g.n1 = int((cut + 1) / 2);
        g.n2 = int(cut / 2);
        g.s1 = int(std::min<int64_t>(4, most));
        g.s2 = int(std::min<int64_t>(8, most));
    } else {
        g.n1 = int(tiles);
        g.s1 = int(std::min<int64_t>(slots / tiles, most));
    }
    if (g.s1 < 2) g.n1 = 0, g.s1 = 1;
    if (g.s2 < 2) g.n2 = 0, g.s2 = 1;
    g.whole = int(tiles) - g.n1 - g.n2;
    const int64_t segments = int64_t(g.n1) * g.s1 + int64_t(g.n2) * g.s2;
    if (segments == 0) return g;
    g.partial = static_cast<float*>(ws.get(3, size_t(segments) * tile_floats * sizeof(float)));
    g.counters = static_cast<unsigned*>(ws.get(4, size_t(g.n1 + g.n2) * sizeof(unsigned)));
    FASTGEMM_CUDA_CHECK(cudaMemsetAsync(g.counters, 0, size_t(g.n1 + g.n2) * sizeof(unsigned), stream));
    return g;
}

inline int64_t graded_tail_blocks(const GradedTail& g) {
    return int64_t(g.whole) + int64_t(g.n1) * g.s1 + int64_t(g.n2) * g.s2;
}

}  // namespace cuda
}  // namespace fastgemm
