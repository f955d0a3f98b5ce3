// Repeated device-array calls replayed as CUDA graphs (common/launch_graph.hpp).
//
// A program that multiplies the same arrays again and again (a layer in a loop, a
// benchmark, a solver's iteration) makes calls that differ only in the values behind
// the pointers. The first call of a kind is launched as usual; the second is captured
// into a graph, which it and every later identical call queue with one launch. A call
// is "identical" when everything a launch would be given is: the kernel, the whole
// Problem (shape, strides, transposes, alpha and beta to the bit), the three pointers,
// the stream and the workspace's buffers. Anything else is a new kind.
//
// The graph reads the arrays when it runs, so a call on new values at the same
// addresses computes the new product, exactly as a launch would.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/common/device_operands.hpp"
#include "cuda/common/launch_graph.hpp"
#include "cuda/common/workspace.hpp"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

// The calls of one device, guarded by the caller (the device's workspace lock).
class RepeatedCalls {
public:
    // Queues `entry` on `ops` on `stream`: from a graph where this call was seen before,
    // else as a plain launch. Returns whether it ran from a graph (whose workspace use,
    // cuBLAS's included, the caller then orders against other streams).
    bool launch(const LadderEntry& entry, const DeviceOperands& ops, cudaStream_t stream, Workspace& ws);

    // The most kinds of call kept (least recently used first out): a model's layers
    // called in turn each keep theirs.
    static constexpr size_t kMaxKept = 64;

private:
    struct Key {
        const LadderEntry* entry = nullptr;
        int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
        bool trans_a = false, trans_b = false;
        uint32_t alpha_bits = 0, beta_bits = 0;
        const float* A = nullptr;
        const float* B = nullptr;
        float* C = nullptr;
        cudaStream_t stream = nullptr;
        bool operator==(const Key& o) const;
    };
    struct Kept {
        Key key;
        LaunchGraph graph;    // empty until the call is seen a second time
        bool failed = false;  // could not be captured: always launched as usual
        uint64_t last_use = 0;
    };
    static Key key_of(const LadderEntry& entry, const DeviceOperands& ops, cudaStream_t stream);

    CaptureStreams captures_;  // so every replay shares one cuBLAS workspace, ordered by the caller
    std::vector<Kept> kept_;
    uint64_t clock_ = 0;
    uint64_t workspace_generation_ = 0;  // the buffers the kept graphs point into
};

}  // namespace cuda
}  // namespace fastgemm
