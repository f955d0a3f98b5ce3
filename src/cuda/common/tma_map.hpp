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

// What a copy does to each element: fp32 moves the bits as they are; tf32 rounds each
// FP32 value to the nearest TF32 value (10 mantissa bits, ties to even as cvt.rn, not
// flushing subnormals; the 13 low bits land as zeros), which the tensor cores then
// read exactly. (The unit itself drops the low bits of a shared-memory operand, so
// without this a TF32 wgmma truncates: relative error 4.2e-4 instead of 2.6e-4 on
// uniform inputs; docs/cuda-notes.md#tf32-rounding.)
enum class TmaElement { fp32, tf32 };

// A rows x cols fp32 matrix with row stride `ld` elements (ld * 4 must be a multiple of
// 16, base 16-byte aligned), read in boxes of box_rows x box_cols, zeros outside the
// matrix.
CUtensorMap make_tma_map_2d(const float* base, int64_t rows, int64_t cols, int64_t ld, uint32_t box_rows,
                            uint32_t box_cols, TmaLayout layout = TmaLayout::swizzle128,
                            TmaElement element = TmaElement::fp32);

}  // namespace cuda
}  // namespace fastgemm
