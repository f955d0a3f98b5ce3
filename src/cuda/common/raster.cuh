// Grouped rasterisation: consecutive blocks walk down GROUP tile-rows before moving to
// the next tile-column, so the blocks resident at one time share their rows of A and
// columns of B in L2 (a square-ish footprint instead of whole rows of tiles).
#pragma once

namespace fastgemm {
namespace cuda {

__device__ __forceinline__ void grouped_tile(int tile, int tiles_m, int tiles_n, int group,
                                             int& tm, int& tn) {
    const int per_group = group * tiles_n;
    const int g = tile / per_group;
    const int first_m = g * group;
    const int rows = min(tiles_m - first_m, group);
    const int in_group = tile % per_group;
    tm = first_m + in_group % rows;
    tn = in_group / rows;
}

}  // namespace cuda
}  // namespace fastgemm
