// A launch sequence as one CUDA graph: what lets a small call cost one launch.
//
// A launcher queues several operations for one product (fp32x3: A's split pass, the
// GEMM, the IEEE fallback; split-K: a reduction too), and cuBLAS chooses its kernel on
// the host on every call. For a 512^3 product each queued operation costs about as much
// host time as the GPU spends on it, so a loop of such calls runs at the host's pace.
// Captured once into a graph, the same sequence is queued by one cudaGraphLaunch and
// its kernels run back to back.
//
// A graph replays the operations exactly as captured: the same kernels, the same
// arguments and pointers (the operands', the workspace's, the tensor maps built from
// them). So it stands for a call only where all of those are the same; the memory behind
// the pointers is read when the graph runs, as a launch would read it.
#pragma once

#include <functional>
#include <map>
#include <mutex>

#include <cuda_runtime.h>

#include "cuda/common/workspace.hpp"

namespace fastgemm {
namespace cuda {

// Whether calls may run as graphs: FASTGEMM_CUDA_GRAPHS unset, or anything but
// 0/off/false/no. Read once per process.
bool graphs_enabled();

// An executable graph, destroyed with its owner (a graph still running is freed when it
// completes, as cudaGraphExecDestroy does).
class LaunchGraph {
public:
    LaunchGraph() = default;
    explicit LaunchGraph(cudaGraphExec_t exec) : exec_(exec) {}
    LaunchGraph(LaunchGraph&& other) noexcept : exec_(other.exec_) { other.exec_ = nullptr; }
    LaunchGraph& operator=(LaunchGraph&& other) noexcept;
    LaunchGraph(const LaunchGraph&) = delete;
    LaunchGraph& operator=(const LaunchGraph&) = delete;
    ~LaunchGraph();

    explicit operator bool() const { return exec_ != nullptr; }
    // Queues the whole sequence on `stream` (any stream of the graph's device).
    void launch(cudaStream_t stream) const;

private:
    cudaGraphExec_t exec_ = nullptr;
};

// Streams that are only ever captured into graphs, one per device, created on first use
// and kept for the process (nothing queued on them runs: a capture only records). Each
// user of graphs keeps its own CaptureStreams, because what a launcher ties to the stream
// it queues on, cuBLAS's workspace, is then shared by every replay of that user's graphs
// and by no one else's.
class CaptureStreams {
public:
    // Captures what `queue(s)` queues on stream s into a graph, on the current device's
    // capture stream (one capture at a time: the others wait). Returns an empty
    // LaunchGraph where the sequence cannot stand for later calls: it cannot be captured
    // (it synchronises, say, or `queue` throws), or it changed `ws`'s buffers while being
    // recorded (Workspace::generation), which the replays of its users are keyed to.
    LaunchGraph capture(const Workspace& ws, const std::function<void(cudaStream_t)>& queue);

private:
    std::mutex mu_;
    std::map<int, cudaStream_t> streams_;
};

// Whether work queued on `stream` is being captured into a graph of the caller's (a
// framework's graph capture): such work must be queued as it is, not replayed.
bool is_capturing(cudaStream_t stream);

}  // namespace cuda
}  // namespace fastgemm
