// See interop.hpp.
#include "cuda/interop.hpp"

#include <map>
#include <memory>
#include <mutex>

#include "core/errors.hpp"
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/scale_c.cuh"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {

// One workspace per device (the fp32x3 split buffers, packed operands, partial tiles),
// shared by calls on any stream: each call's work is made to wait for the previous
// user's (an event, no host synchronisation), so a call on another stream cannot
// overwrite scratch data that a kernel still reads. Host threads take turns under the
// mutex.
struct SharedWorkspace {
    Workspace ws;
    cudaEvent_t last_use = nullptr;
};

SharedWorkspace& workspace_for(int device, std::unique_lock<std::mutex>& lock) {
    static std::mutex mu;
    static std::map<int, std::unique_ptr<SharedWorkspace>> spaces;
    lock = std::unique_lock<std::mutex>(mu);
    auto& w = spaces[device];
    if (!w) {
        w = std::make_unique<SharedWorkspace>();
        FASTGEMM_CUDA_CHECK(cudaEventCreateWithFlags(&w->last_use, cudaEventDisableTiming));
    }
    return *w;
}

}  // namespace

std::string run_device_gemm(const DeviceOperands& operands, const DeviceCall& call) {
    if (call.device >= 0) FASTGEMM_CUDA_CHECK(cudaSetDevice(call.device));
    const Problem& p = operands.problem;
    p.validate();
    // The policy times its candidates on host copies of random operands of this shape
    // (never on the caller's arrays) and keeps the winner per shape class.
    const std::string name = call.kernel.empty() || call.kernel == "auto"
                                 ? select_kernel("cuda", p, call.accuracy).info().name
                                 : call.kernel;
    const LadderEntry* e = find_entry(name);
    if (!e) throw NotFoundError("no cuda kernel named '" + name + "'");
    KernelInfo info;
    info.name = e->name;
    info.constraints = e->constraints;
    info.check(p);
    if (p.M == 0 || p.N == 0) return name;
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(call.stream);
    if (p.alpha == 0.0f || p.K == 0) {
        // BLAS's quick return, as on the host path (Kernel::run_once): A and B are not
        // read, so a kernel cannot turn 0 * NaN into NaN.
        scale_c(operands.C, p.M, p.N, p.ldc, p.beta, stream);
        return name;
    }
    int dev = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    std::unique_lock<std::mutex> lock;
    SharedWorkspace& shared = workspace_for(dev, lock);
    FASTGEMM_CUDA_CHECK(cudaStreamWaitEvent(stream, shared.last_use, 0));
    e->launch(operands, stream, shared.ws);
    FASTGEMM_CUDA_CHECK(cudaEventRecord(shared.last_use, stream));
    return name;
}

}  // namespace cuda
}  // namespace fastgemm
