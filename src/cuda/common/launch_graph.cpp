// See launch_graph.hpp.
#include "cuda/common/launch_graph.hpp"

#include "core/env_flag.hpp"
#include "cuda/common/cuda_check.hpp"

namespace fastgemm {
namespace cuda {

bool graphs_enabled() {
    static const bool enabled = env_flag("FASTGEMM_CUDA_GRAPHS", true);
    return enabled;
}

LaunchGraph& LaunchGraph::operator=(LaunchGraph&& other) noexcept {
    if (this != &other) {
        if (exec_) cudaGraphExecDestroy(exec_);
        exec_ = other.exec_;
        other.exec_ = nullptr;
    }
    return *this;
}

LaunchGraph::~LaunchGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
}

void LaunchGraph::launch(cudaStream_t stream) const { FASTGEMM_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

LaunchGraph CaptureStreams::capture(const Workspace& ws, const std::function<void(cudaStream_t)>& queue) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
        cudaGetLastError();
        return {};
    }
    std::lock_guard<std::mutex> lock(mu_);
    cudaStream_t& s = streams_[device];  // kept as long as this object
    if (!s && cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        s = nullptr;
        cudaGetLastError();
        return {};
    }
    // Relaxed: a launcher may allocate on first use (cuBLAS's workspace for this
    // stream); anything that would wait for the device still ends the capture in error.
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
        cudaGetLastError();
        return {};
    }
    const uint64_t generation = ws.generation();
    cudaGraph_t graph = nullptr;
    try {
        queue(s);
    } catch (...) {  // a launcher that cannot be recorded: the caller launches it plainly
        if (cudaStreamEndCapture(s, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
        cudaGetLastError();  // the capture's error, if it was invalidated
        return {};
    }
    const cudaError_t ended = cudaStreamEndCapture(s, &graph);
    if (ended == cudaSuccess && graph && ws.generation() != generation) {
        cudaGraphDestroy(graph);
        return {};
    }
    if (ended != cudaSuccess || !graph) {
        cudaGetLastError();
        return {};
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (made != cudaSuccess) {
        cudaGetLastError();
        return {};
    }
    return LaunchGraph(exec);
}

bool is_capturing(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
        cudaGetLastError();
        return true;  // cannot tell: queue the work as it is
    }
    return status != cudaStreamCaptureStatusNone;
}

}  // namespace cuda
}  // namespace fastgemm
