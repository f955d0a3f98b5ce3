// See interop.hpp.
#include "cuda/interop.hpp"

#include <map>
#include <memory>
#include <mutex>

#include "core/errors.hpp"
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/scale_c.cuh"
#include "cuda/ladder.hpp"
#include "cuda/repeated_calls.hpp"

namespace fastgemm {
namespace cuda {

namespace {

// One workspace per device (the fp32x3 split buffers, packed operands, partial tiles),
// shared by calls on any stream. A launch that used it records `last_use` on its
// stream; a later call on another stream waits for that event (no host
// synchronisation) before it launches, so it cannot overwrite scratch data a kernel
// still reads. Calls on the stream of the last use are ordered by the stream itself
// and wait for nothing. A call replayed from a graph counts as a use whatever it ran:
// its cuBLAS workspace belongs to the capture stream, shared by every replay. Host
// threads take turns under the mutex.
struct SharedWorkspace {
    Workspace ws;
    RepeatedCalls repeats;
    cudaEvent_t last_use = nullptr;
    cudaStream_t last_stream = nullptr;
    bool used = false;  // last_use has been recorded
};

SharedWorkspace& workspace_for(int device, std::unique_lock<std::mutex>& lock) {
    static std::mutex mu;
    static auto* spaces = new std::map<int, std::unique_ptr<SharedWorkspace>>();  // kept until exit
    lock = std::unique_lock<std::mutex>(mu);
    auto& w = (*spaces)[device];
    if (!w) {
        w = std::make_unique<SharedWorkspace>();
        FASTGEMM_CUDA_CHECK(cudaEventCreateWithFlags(&w->last_use, cudaEventDisableTiming));
    }
    return *w;
}

// Each ladder entry's KernelInfo, built once: checking a problem needs only the name and
// the constraints.
const KernelInfo& info_of(const LadderEntry& e) {
    static std::mutex mu;
    static auto* infos = new std::map<const LadderEntry*, KernelInfo>();
    std::lock_guard<std::mutex> lock(mu);
    auto it = infos->find(&e);
    if (it == infos->end()) {
        KernelInfo info;
        info.name = e.name;
        info.constraints = e.constraints;
        it = infos->emplace(&e, std::move(info)).first;
    }
    return it->second;
}

// The last resolution this thread made: a loop that repeats one call (the common case
// for a small problem, where the host cost is the whole cost) resolves the kernel once.
// Valid for the same request and problem while the tuning table is unchanged (choices
// are per machine, not per device).
struct Resolved {
    std::string kernel;
    Accuracy accuracy = Accuracy::fp32;
    int64_t M = -1, N = -1, K = -1, lda = -1, ldb = -1, ldc = -1;
    bool trans_a = false, trans_b = false, alpha0 = false, beta0 = false;
    uint64_t generation = 0;
    const LadderEntry* entry = nullptr;

    bool matches(const Problem& p, const DeviceCall& c, uint64_t gen) const {
        return entry && gen == generation && p.M == M && p.N == N && p.K == K && p.lda == lda &&
               p.ldb == ldb && p.ldc == ldc && p.trans_a == trans_a && p.trans_b == trans_b &&
               (p.alpha == 0.0f) == alpha0 && (p.beta == 0.0f) == beta0 && c.accuracy == accuracy &&
               c.kernel == kernel;
    }
    void keep(const Problem& p, const DeviceCall& c, uint64_t gen, const LadderEntry* e) {
        kernel = c.kernel, accuracy = c.accuracy, generation = gen, entry = e;
        M = p.M, N = p.N, K = p.K, lda = p.lda, ldb = p.ldb, ldc = p.ldc;
        trans_a = p.trans_a, trans_b = p.trans_b, alpha0 = p.alpha == 0.0f, beta0 = p.beta == 0.0f;
    }
};

// The entry that runs `p` for this call: the named kernel, or the selection policy's
// choice for "auto" (which times candidates on random operands of this shape, never on
// the caller's arrays, and keeps the winner per shape class); checked against p.
const LadderEntry& resolve(const Problem& p, const DeviceCall& call) {
    thread_local Resolved last;
    const uint64_t gen = tuning_generation();
    if (last.matches(p, call, gen)) return *last.entry;
    p.validate();
    const std::string name = call.kernel.empty() || call.kernel == "auto"
                                 ? select_kernel("cuda", p, call.accuracy).info().name
                                 : call.kernel;
    const LadderEntry* e = find_entry(name);
    if (!e) throw NotFoundError("no cuda kernel named '" + name + "'");
    info_of(*e).check(p);
    // The generation read before selecting: a choice made by this call bumps it, and the
    // next call then checks once more and keeps the entry.
    last.keep(p, call, gen, e);
    return *e;
}

}  // namespace

std::string run_device_gemm(const DeviceOperands& operands, const DeviceCall& call) {
    if (call.device >= 0) FASTGEMM_CUDA_CHECK(cudaSetDevice(call.device));
    const Problem& p = operands.problem;
    const LadderEntry& e = resolve(p, call);
    if (p.M == 0 || p.N == 0) return e.name;
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(call.stream);
    if (p.alpha == 0.0f || p.K == 0) {
        // BLAS's quick return, as on the host path (Kernel::run_once): A and B are not
        // read, so a kernel cannot turn 0 * NaN into NaN.
        scale_c(operands.C, p.M, p.N, p.ldc, p.beta, stream);
        return e.name;
    }
    int dev = call.device;
    if (dev < 0) FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    std::unique_lock<std::mutex> lock;
    SharedWorkspace& shared = workspace_for(dev, lock);
    if (shared.used && shared.last_stream != stream)
        FASTGEMM_CUDA_CHECK(cudaStreamWaitEvent(stream, shared.last_use, 0));
    const uint64_t uses = shared.ws.uses();
    // A framework capturing the stream into a graph of its own gets the launches as they are.
    bool replayed = false;
    if (graphs_enabled() && !is_capturing(stream))
        replayed = shared.repeats.launch(e, operands, stream, shared.ws);
    else
        e.launch(operands, stream, shared.ws);
    if (replayed || shared.ws.uses() != uses) {
        FASTGEMM_CUDA_CHECK(cudaEventRecord(shared.last_use, stream));
        shared.last_stream = stream;
        shared.used = true;
    }
    return e.name;
}

std::string run_device_gemm_batched(const DeviceOperands& first, const BatchStrides& batch, const DeviceCall& call) {
    const Problem& p = first.problem;
    p.validate();
    if (!(call.kernel.empty() || call.kernel == "auto" || call.kernel == "cublas"))
        throw ConstraintError("a batched call runs cuBLAS's strided-batched SGEMM; kernel '" + call.kernel +
                              "' runs one matrix at a time");
    if (batch.count < 0) throw ConstraintError("batch count " + std::to_string(batch.count) + " is negative");
    if (batch.count > 1 && (batch.c < 0 || batch.c < (p.M - 1) * p.ldc + p.N))
        throw ConstraintError("C's batch stride " + std::to_string(batch.c) +
                              " makes its matrices overlap (each spans " + std::to_string((p.M - 1) * p.ldc + p.N) +
                              " elements)");
    if (call.device >= 0) FASTGEMM_CUDA_CHECK(cudaSetDevice(call.device));
    launch_cublas_strided_batched(first, batch.count, batch.a, batch.b, batch.c,
                                  reinterpret_cast<cudaStream_t>(call.stream));
    return "cublas";
}

}  // namespace cuda
}  // namespace fastgemm
