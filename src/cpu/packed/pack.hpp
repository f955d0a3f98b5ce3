// Packing: copies a block of op(A) or op(B) into the micro-panel layout the
// micro-kernel streams (see micro_kernel.hpp), whatever the transposes and leading
// dimensions of the caller's arrays.
//
// A block of `width` rows of op(A) (or columns of op(B)) by kc becomes
// ceil(width / W) micro-panels of kc x W floats each, k-major, the last one
// zero-padded to W so the micro-kernel never branches on edges inside its k loop.
#pragma once

#include <cstdint>

#include "core/problem.hpp"

namespace fastgemm {

// Floats that pack_a / pack_b write for `width` x kc with panel width W.
inline int64_t packed_size(int64_t width, int64_t kc, int W) {
    return (width + W - 1) / W * W * kc;
}

// Rows [i0, i0 + m) x columns [p0, p0 + kc) of op(A) into MR-wide micro-panels.
void pack_a(const Problem& p, const float* A, int64_t i0, int64_t m, int64_t p0, int64_t kc,
            int mr, float* dst);

// Rows [p0, p0 + kc) x columns [j0, j0 + n) of op(B) into NR-wide micro-panels.
void pack_b(const Problem& p, const float* B, int64_t p0, int64_t kc, int64_t j0, int64_t n,
            int nr, float* dst);

}  // namespace fastgemm
