// Host side of TMA: building CUtensorMap descriptors for 2D row-major fp32 operands.
// cuTensorMapEncodeTiled is a driver API call; it is reached through the runtime's
// entry-point query so that fastgemm links only the CUDA runtime (no libcuda at
// link time, which CI machines without a driver do not have).
#pragma once

#include <cstdint>

#include <cuda.h>

namespace fastgemm {
namespace cuda {

// How a box lands in shared memory: swizzle128 permutes the 16-byte chunks of each
// 128-byte row by the row index (chunk ^= row % 8; box_cols * 4 must then be <= 128),
// dense stores the box rows as they are (box_cols <= 256).
enum class TmaLayout { swizzle128, dense };

// A rows x cols fp32 matrix with row stride `ld` elements (ld * 4 must be a multiple of
// 16, base 16-byte aligned), read in boxes of box_rows x box_cols, zeros outside the
// matrix.
CUtensorMap make_tma_map_2d(const float* base, int64_t rows, int64_t cols, int64_t ld, uint32_t box_rows,
                            uint32_t box_cols, TmaLayout layout = TmaLayout::swizzle128);

}  // namespace cuda
}  // namespace fastgemm
