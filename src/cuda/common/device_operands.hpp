// DeviceOperands: one SGEMM call on device memory, C = alpha * op(A) @ op(B) + beta * C.
// The problem (shape, leading dimensions, transposes, scalars) is the core's Problem;
// only the three device pointers are added. Every launcher, the registry's Launch
// objects and the device-array entry point pass this one struct, so a kernel is launched
// the same way whichever door it was reached through. Plain C++ (no CUDA headers): the
// pybind11 module includes it through interop.hpp.
#pragma once

#include <cstdint>

#include "core/problem.hpp"

namespace fastgemm {
namespace cuda {

struct DeviceOperands {
    Problem problem;
    const float* A = nullptr;  // stored as problem says: M x K (K x M when trans_a), row stride lda
    const float* B = nullptr;  // K x N (N x K when trans_b), row stride ldb
    float* C = nullptr;        // M x N, row stride ldc
};

// A row of `cols` floats padded to a multiple of 4 (16 bytes): the row stride of every
// matrix the backend or a launcher lays out itself, which TMA and the float4 rungs need.
inline int64_t round_up4(int64_t cols) { return (cols + 3) / 4 * 4; }

}  // namespace cuda
}  // namespace fastgemm
