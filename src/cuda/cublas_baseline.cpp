// Baselines `cublas` (FP32, TF32 disabled: CUBLAS_DEFAULT_MATH, the mode PyTorch uses
// with allow_tf32 = False) and `cublas_tf32` (CUBLAS_TF32_TENSOR_OP_MATH), through the
// same harness as the ladder.
//
// cuBLAS is loaded at run time with dlopen rather than linked: CI builds the CUDA
// sources with an nvcc that has no cuBLAS, and a wheel should not fail to import on a
// machine without it. The library is looked for as $FASTGEMM_CUBLAS_LIBRARY, then
// libcublas.so.13 / .12 / libcublas.so on the loader path (python/fastgemm/cuda.py
// points the variable at the nvidia-cublas wheel when that is installed). Only the
// entry points below are used; their C signatures and enum values are cuBLAS's
// documented API (cublas_api.h), declared here so no cuBLAS header is needed.
//
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS is called
// with the operands swapped and the same transpose flags.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "cuda/common/cublas_loader.hpp"
#include "cuda/common/cuda_check.hpp"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {

using cublasHandle = void*;
using CreateFn = int (*)(cublasHandle*);
using SetStreamFn = int (*)(cublasHandle, cudaStream_t);
using SetMathModeFn = int (*)(cublasHandle, int);
using SetWorkspaceFn = int (*)(cublasHandle, void*, size_t);
using SgemmFn = int (*)(cublasHandle, int, int, int, int, int, const float*, const float*, int, const float*, int,
                        const float*, float*, int);
using GetVersionFn = int (*)(cublasHandle, int*);
using SgemmStridedBatchedFn = int (*)(cublasHandle, int, int, int, int, int, const float*, const float*, int,
                                      long long, const float*, int, long long, const float*, float*, int, long long,
                                      int);

constexpr int kOpN = 0, kOpT = 1;                      // cublasOperation_t
constexpr int kDefaultMath = 0, kTf32TensorOpMath = 3;  // cublasMath_t

struct CublasLib {
    void* handle = nullptr;
    std::string path, error;
    CreateFn create = nullptr;
    SetStreamFn set_stream = nullptr;
    SetMathModeFn set_math_mode = nullptr;
    SetWorkspaceFn set_workspace = nullptr;  // optional: cuBLAS 11.3 and newer
    SgemmFn sgemm = nullptr;
    GetVersionFn get_version = nullptr;
    SgemmStridedBatchedFn sgemm_strided_batched = nullptr;  // optional: batched matmul only
};

CublasLib& lib() {
    static CublasLib l;
    static std::once_flag once;
    std::call_once(once, [] {
        std::string candidates[4];
        int n = 0;
        if (const char* env = std::getenv("FASTGEMM_CUBLAS_LIBRARY")) candidates[n++] = env;
        candidates[n++] = "libcublas.so.13";
        candidates[n++] = "libcublas.so.12";
        candidates[n++] = "libcublas.so";
        for (int i = 0; i < n && !l.handle; ++i) {
            l.handle = dlopen(candidates[i].c_str(), RTLD_NOW | RTLD_LOCAL);
            if (l.handle) l.path = candidates[i];
        }
        if (!l.handle) {
            l.error = "cuBLAS not found (tried $FASTGEMM_CUBLAS_LIBRARY, libcublas.so.13, .so.12, .so)";
            return;
        }
        l.create = reinterpret_cast<CreateFn>(dlsym(l.handle, "cublasCreate_v2"));
        l.set_stream = reinterpret_cast<SetStreamFn>(dlsym(l.handle, "cublasSetStream_v2"));
        l.set_math_mode = reinterpret_cast<SetMathModeFn>(dlsym(l.handle, "cublasSetMathMode"));
        l.set_workspace = reinterpret_cast<SetWorkspaceFn>(dlsym(l.handle, "cublasSetWorkspace_v2"));
        l.sgemm = reinterpret_cast<SgemmFn>(dlsym(l.handle, "cublasSgemm_v2"));
        l.get_version = reinterpret_cast<GetVersionFn>(dlsym(l.handle, "cublasGetVersion_v2"));
        l.sgemm_strided_batched =
            reinterpret_cast<SgemmStridedBatchedFn>(dlsym(l.handle, "cublasSgemmStridedBatched"));
        if (!l.create || !l.set_stream || !l.set_math_mode || !l.sgemm) {
            l.error = "cuBLAS at " + l.path + " lacks cublasCreate_v2/cublasSgemm_v2/...";
            l.handle = nullptr;
        }
    });
    return l;
}

// One handle per device, created on first use and kept for the process (creating one
// costs milliseconds and would otherwise land in the first timed call), with the stream
// and math mode last set on it: setting them costs host time on every call, so they are
// set only when they change. Host threads take turns on a handle (its stream and mode
// are state, and a call must run with the ones it set).
//
// Each stream the handle runs on gets a workspace of its own, given to cuBLAS with
// cublasSetWorkspace, as frameworks do (without one, cuBLAS takes scratch memory from
// its default pool inside the call). Two streams never share one, since kernels on
// different streams may run at once; cublasSetStream drops the workspace, so it is set
// again after it.
struct Handle {
    cublasHandle h = nullptr;
    cudaStream_t stream = nullptr;
    bool stream_set = false;
    int math_mode = -1;  // none set yet
    std::map<cudaStream_t, void*> workspaces;  // kept until exit, like the handle
    std::mutex mu;
};

// cuBLAS's recommended workspace on Hopper (32 MiB); also enough for older GPUs.
constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;
// Past this many streams a new stream runs on cuBLAS's default pool instead of taking
// another workspace, so that a program creating streams without end cannot exhaust memory.
constexpr size_t kMaxWorkspaces = 16;

Handle& handle_for_current_device() {
    static std::mutex mu;
    static auto* handles = new std::map<int, std::unique_ptr<Handle>>();  // kept until exit
    int dev = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    std::lock_guard<std::mutex> lock(mu);
    std::unique_ptr<Handle>& slot = (*handles)[dev];
    if (slot) return *slot;
    CublasLib& l = lib();
    if (!l.handle) throw BackendUnavailableError(l.error);
    auto made = std::make_unique<Handle>();
    if (int st = l.create(&made->h)) throw KernelError("cublasCreate failed with status " + std::to_string(st));
    slot = std::move(made);
    return *slot;
}

void check_int32(const Problem& q) {
    if (q.M > INT32_MAX || q.N > INT32_MAX || q.K > INT32_MAX || q.lda > INT32_MAX || q.ldb > INT32_MAX ||
        q.ldc > INT32_MAX)
        throw ConstraintError("cublas: dimensions above 2^31 need the 64-bit API, which this baseline does not use");
}

// The handle of the current device, locked, with `stream` and `math_mode` set on it.
class ConfiguredHandle {
public:
    ConfiguredHandle(cudaStream_t stream, int math_mode) : h_(handle_for_current_device()), lock_(h_.mu) {
        CublasLib& l = lib();
        if (!h_.stream_set || h_.stream != stream) {
            h_.stream_set = false;
            if (int st = l.set_stream(h_.h, stream)) throw KernelError("cublasSetStream failed: " + std::to_string(st));
            if (void* ws = workspace_for(stream))
                if (int st = l.set_workspace(h_.h, ws, kCublasWorkspaceBytes))
                    throw KernelError("cublasSetWorkspace failed: " + std::to_string(st));
            h_.stream = stream, h_.stream_set = true;
        }
        if (h_.math_mode != math_mode) {
            if (int st = l.set_math_mode(h_.h, math_mode))
                throw KernelError("cublasSetMathMode failed: " + std::to_string(st));
            h_.math_mode = math_mode;
        }
    }
    cublasHandle get() const { return h_.h; }

private:
    // The stream's own workspace (allocated on its first use), or null where cuBLAS's
    // default pool is to be used: no cublasSetWorkspace, or kMaxWorkspaces taken.
    void* workspace_for(cudaStream_t stream) {
        if (!lib().set_workspace) return nullptr;
        auto it = h_.workspaces.find(stream);
        if (it != h_.workspaces.end()) return it->second;
        if (h_.workspaces.size() >= kMaxWorkspaces) return nullptr;
        void* ws = nullptr;
        if (cudaMalloc(&ws, kCublasWorkspaceBytes) != cudaSuccess) {
            cudaGetLastError();  // clear the error: the default pool still works
            return nullptr;
        }
        h_.workspaces.emplace(stream, ws);
        return ws;
    }

    Handle& h_;
    std::lock_guard<std::mutex> lock_;
};

// cuBLAS wants lda >= rows of the column-major view even when that dimension is 0.
int ld_of(int64_t v) { return int(v < 1 ? 1 : v); }

void run_sgemm(const DeviceOperands& p, cudaStream_t stream, int math_mode) {
    const Problem& q = p.problem;
    if (q.M == 0 || q.N == 0) return;
    check_int32(q);
    ConfiguredHandle h(stream, math_mode);
    const int st = lib().sgemm(h.get(), q.trans_b ? kOpT : kOpN, q.trans_a ? kOpT : kOpN, int(q.N), int(q.M),
                               int(q.K), &q.alpha, p.B, ld_of(q.ldb), p.A, ld_of(q.lda), &q.beta, p.C, ld_of(q.ldc));
    if (st) throw KernelError("cublasSgemm failed with status " + std::to_string(st));
}

}  // namespace

void launch_cublas_strided_batched(const DeviceOperands& p, int64_t count, int64_t stride_a, int64_t stride_b,
                                   int64_t stride_c, cudaStream_t stream) {
    const Problem& q = p.problem;
    if (q.M == 0 || q.N == 0 || count == 0) return;
    check_int32(q);
    if (!lib().sgemm_strided_batched)
        throw BackendUnavailableError("cuBLAS at " + lib().path + " lacks cublasSgemmStridedBatched");
    ConfiguredHandle h(stream, kDefaultMath);
    // batchCount is an int: a longer batch goes in pieces of at most 2^31 - 1 products.
    for (int64_t first = 0; first < count; first += INT32_MAX) {
        const int n = int(std::min<int64_t>(INT32_MAX, count - first));
        const int st = lib().sgemm_strided_batched(
            h.get(), q.trans_b ? kOpT : kOpN, q.trans_a ? kOpT : kOpN, int(q.N), int(q.M), int(q.K), &q.alpha,
            p.B + first * stride_b, ld_of(q.ldb), stride_b, p.A + first * stride_a, ld_of(q.lda), stride_a, &q.beta,
            p.C + first * stride_c, ld_of(q.ldc), stride_c, n);
        if (st) throw KernelError("cublasSgemmStridedBatched failed with status " + std::to_string(st));
    }
}

std::string cublas_status(bool* available) {
    CublasLib& l = lib();
    *available = l.handle != nullptr;
    return l.handle ? l.path : l.error;
}

void launch_cublas(const DeviceOperands& p, cudaStream_t stream, Workspace&) { run_sgemm(p, stream, kDefaultMath); }
void launch_cublas_tf32(const DeviceOperands& p, cudaStream_t stream, Workspace&) {
    run_sgemm(p, stream, kTf32TensorOpMath);
}

}  // namespace cuda
}  // namespace fastgemm
