// Host side of TMA: building CUtensorMap descriptors for 2D row-major fp32 operands.
// cuTensorMapEncodeTiled is a driver API call; it is reached through the runtime's
// entry-point query so that fastgemm links only the CUDA runtime (no libcuda at
// link time, which CI machines without a driver do not have).
#pragma once

#include <cstdint>

#include <cuda.h>

namespace fastgemm {
namespace cuda {

// A rows x cols fp32 matrix with row stride `ld` elements (ld * 4 must be a multiple of
// 16, base 16-byte aligned), read in boxes of box_rows x box_cols (box_cols * 4 <= 128)
// with the 128-byte swizzle, zeros outside the matrix.
CUtensorMap make_tma_map_2d(const float* base, int64_t rows, int64_t cols, int64_t ld, uint32_t box_rows,
                            uint32_t box_cols);

}  // namespace cuda
}  // namespace fastgemm
