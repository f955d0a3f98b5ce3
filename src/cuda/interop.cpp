// See interop.hpp.
#include "cuda/interop.hpp"

#include <map>
#include <memory>
#include <mutex>

#include "core/problem.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {

Problem problem_of(const DeviceGemm& g) {
    Problem p;
    p.M = g.M, p.N = g.N, p.K = g.K;
    p.lda = g.lda, p.ldb = g.ldb, p.ldc = g.ldc;
    p.trans_a = g.trans_a, p.trans_b = g.trans_b;
    p.alpha = g.alpha, p.beta = g.beta;
    return p;
}

bool entry_accepts(const LadderEntry& e, const Problem& p) {
    KernelInfo info;
    info.constraints = e.constraints;
    return info.accepts(p);
}

// One workspace per device (the fp32x3 split buffers and packed operands), shared by
// calls on any stream: each call's work is made to wait for the previous user's (an
// event, no host synchronisation), so a call on another stream cannot overwrite split
// operands that a kernel still reads. Host threads take turns under the mutex.
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

std::string auto_device_kernel(const DeviceGemm& g) {
    const Problem p = problem_of(g);
    if (device_is_sm90()) return "fp32x3_wgmma";
    for (const char* name : {"async_multistage", "warptiling"}) {
        const LadderEntry* e = find_entry(name);
        if (e && entry_accepts(*e, p)) return name;
    }
    return "smem_tiling";
}

std::string run_device_gemm(const DeviceGemm& g) {
    if (g.device >= 0) FASTGEMM_CUDA_CHECK(cudaSetDevice(g.device));
    const Problem p = problem_of(g);
    p.validate();
    const std::string name = g.kernel.empty() || g.kernel == "auto" ? auto_device_kernel(g) : g.kernel;
    const LadderEntry* e = find_entry(name);
    if (!e) throw NotFoundError("no cuda kernel named '" + name + "'");
    KernelInfo info;
    info.name = e->name;
    info.constraints = e->constraints;
    info.check(p);
    GemmArgs a;
    a.M = g.M, a.N = g.N, a.K = g.K;
    a.A = reinterpret_cast<const float*>(g.A), a.lda = g.lda;
    a.B = reinterpret_cast<const float*>(g.B), a.ldb = g.ldb;
    a.C = reinterpret_cast<float*>(g.C), a.ldc = g.ldc;
    a.trans_a = g.trans_a, a.trans_b = g.trans_b;
    a.alpha = g.alpha, a.beta = g.beta;
    int dev = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    std::unique_lock<std::mutex> lock;
    SharedWorkspace& shared = workspace_for(dev, lock);
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(g.stream);
    FASTGEMM_CUDA_CHECK(cudaStreamWaitEvent(stream, shared.last_use, 0));
    e->launch(a, stream, shared.ws);
    FASTGEMM_CUDA_CHECK(cudaEventRecord(shared.last_use, stream));
    return name;
}

}  // namespace cuda
}  // namespace fastgemm
