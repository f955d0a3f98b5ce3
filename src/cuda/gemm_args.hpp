// GemmArgs: one SGEMM call on device pointers, C = alpha * op(A) @ op(B) + beta * C,
// row-major, as every cuda ladder launcher receives it. Shared by the registry's
// Launch objects, the raw-pointer interop path and the standalone driver, so that a
// kernel is launched the same way whichever door it was reached through.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

namespace fastgemm {
namespace cuda {

struct GemmArgs {
    int64_t M = 0, N = 0, K = 0;
    const float* A = nullptr;  // stored M x K (K x M when trans_a), row stride lda
    int64_t lda = 0;
    const float* B = nullptr;  // stored K x N (N x K when trans_b), row stride ldb
    int64_t ldb = 0;
    float* C = nullptr;        // M x N, row stride ldc
    int64_t ldc = 0;
    bool trans_a = false, trans_b = false;
    float alpha = 1.0f, beta = 0.0f;
};

// Scratch device memory a launcher may need (split operands, packed copies). Owned by
// whoever launches (a Launch, the interop pool), grown on demand and reused, so the
// timed loop never allocates.
class Workspace {
public:
    Workspace() = default;
    Workspace(const Workspace&) = delete;
    Workspace& operator=(const Workspace&) = delete;
    ~Workspace();
    // At least `bytes` of device memory for `slot` (0..7), 256-byte aligned.
    void* get(int slot, size_t bytes);

private:
    void* ptr_[8] = {};
    size_t size_[8] = {};
};

using Launcher = void (*)(const GemmArgs& args, cudaStream_t stream, Workspace& ws);

// A row of `cols` floats padded to a multiple of 4 (16 bytes): the row stride of every
// matrix the backend or a launcher lays out itself, which TMA and the float4 rungs need.
inline int64_t round_up4(int64_t cols) { return (cols + 3) / 4 * 4; }

}  // namespace cuda
}  // namespace fastgemm
