// The cuda backend: status (why it cannot run, when it cannot), ceilings, and every
// ladder entry registered as a fastgemm::Kernel.
//
// A CudaLaunch owns the device side of one bound problem: make_launch takes pooled
// device buffers and uploads A, B (and C when beta != 0); run() is one launch timed with
// CUDA events (device time) and a steady clock around launch + synchronise (host time);
// finish() downloads C's M x N elements into the caller's C (rows of ldc, so the gaps
// between rows are left untouched).
//
// The device copies are laid out by the backend, not by the caller: rows padded to a
// multiple of 4 floats (16 bytes; padding zeroed), whatever the host arrays' leading
// dimensions or offsets. The vectorized rungs' alignment constraint is about device
// memory, so it holds for every host array (a C view with an odd row pitch included);
// CUDA arrays passed in place (interop.cpp) are checked as they are.
//
// A single call (Kernel::run_once, what fastgemm.sgemm on host arrays runs) does not
// bind a Launch: CudaKernel::run_direct takes the pipelined path of direct_call.hpp,
// which lays the device copies out the same way.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "core/backend.hpp"
#include "core/backends.hpp"
#include "core/registry.hpp"
#include "cuda/common/cublas_loader.hpp"
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_pool.hpp"
#include "cuda/common/launch_checks.hpp"
#include "cuda/common/launch_graph.hpp"
#include "cuda/common/probes.hpp"
#include "cuda/direct_call.hpp"
#include "cuda/ladder.hpp"

namespace fastgemm {

namespace cuda {
namespace {

// Why no kernel can run here, or "" when a GPU is usable.
std::string unavailable_reason() {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err == cudaErrorNoDevice || (err == cudaSuccess && n == 0)) return "no CUDA GPU found on this machine";
    if (err == cudaErrorInsufficientDriver)
        return "no usable NVIDIA driver: the driver is missing or older than CUDA runtime " +
               std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
    if (err != cudaSuccess)
        return std::string("CUDA runtime could not initialise: ") + cudaGetErrorName(err) + " (" +
               cudaGetErrorString(err) + ")";
    return "";
}

// The capture streams of timed loops (CudaLaunch::run_repeated), apart from the
// device-array entry's: a tuning run's replays then never share a cuBLAS workspace with
// the caller's replays still in flight on another stream.
CaptureStreams& timing_captures() {
    static auto* c = new CaptureStreams();  // kept until exit
    return *c;
}

cudaStream_t backend_stream() {
    static cudaStream_t s = [] {
        cudaStream_t st = nullptr;
        FASTGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
        return st;
    }();
    return s;
}

class CudaBackend : public Backend {
public:
    std::string name() const override { return "cuda"; }
    int auto_priority() const override { return 30; }
    BackendStatus status() const override {
        BackendStatus s;
        s.name = "cuda";
        s.reason = unavailable_reason();
        s.available = s.reason.empty();
        bool cublas_ok = false;
        const std::string cublas = cublas_status(&cublas_ok);
        s.properties.push_back({"cublas", cublas_ok ? "loaded from " + cublas : cublas});
        s.properties.push_back({"cuda runtime", std::to_string(CUDART_VERSION)});
        if (!s.available) return s;
        int dev = 0, drv = 0;
        cudaDeviceProp prop{};
        if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
            s.device = prop.name;
            s.properties.push_back({"gpu", prop.name});
            s.properties.push_back({"compute capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)});
            s.properties.push_back({"multiprocessors", std::to_string(prop.multiProcessorCount)});
            s.properties.push_back({"memory", std::to_string(prop.totalGlobalMem >> 20) + " MiB"});
            s.properties.push_back({"l2", std::to_string(prop.l2CacheSize >> 20) + " MiB"});
            int clock_khz = 0;
            if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev) == cudaSuccess)
                s.properties.push_back({"max sm clock", std::to_string(clock_khz / 1000) + " MHz"});
            char bus_id[32] = {};
            if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, dev) == cudaSuccess)
                s.properties.push_back({"pci bus id", bus_id});  // what nvidia-smi and NVML go by
        }
        if (cudaDriverGetVersion(&drv) == cudaSuccess) s.properties.push_back({"driver api", std::to_string(drv)});
        s.properties.push_back({"wgmma rungs", device_is_sm90() ? "yes (sm_90)" : "no: they need sm_90 (Hopper)"});
        return s;
    }
    // Timing off: a small problem (M and N above the skinny rungs' 64, at most 512^2
    // outputs) takes the 32x32 small tile, whose launch is cheapest and whose 64 or more
    // blocks spread over the SMs; every other problem the highest rung other than the
    // small tiles, which lose to the big tiles once those fill the GPU, and other than the
    // Ozaki rung below 4096^2 outputs or K = 4096: its operand pass and 128 x 256 tiles
    // cost more than its integer rate saves there (slower than fp32x3 at 2048^3 and at
    // 1024 x 4096 x 16384 on the H200; faster from 4096^3 up, docs/ozaki.md).
    const Kernel* preferred(const Problem& p, const std::vector<const Kernel*>& candidates) const override {
        const bool small = p.M > 64 && p.N > 64 && p.M * p.N <= 512 * 512;
        const bool ozaki_pays = p.M * p.N >= int64_t(4096) * 4096 && p.K >= 4096;
        const Kernel* best = nullptr;
        for (const Kernel* k : candidates) {
            const bool small_tile = k->info().ladder_step == 16;
            if (small_tile && small && k->info().name == "small_tile_32x32") return k;
            if (small_tile) continue;
            if (k->info().precision == Precision::fp32_ozaki && !ozaki_pays) continue;
            if (!best || k->info().ladder_step > best->info().ladder_step) best = k;
        }
        return best ? best : candidates.front();
    }
    Ceilings measure_ceilings() const override {
        if (!unavailable_reason().empty()) return {};
        Ceilings c;
        c.peak_gflops = measure_ffma_peak_gflops();
        c.peak_probe = "independent FFMA chains in registers on every SM (strict fp32)";
        if (device_is_sm90())  // the roof of the fp32_ozaki rung, beside the FP32 roof
            c.matrix_peaks_gops.push_back(
                {"int8 tensor cores (wgmma m64n256k32 s8, operands in shared memory)", measure_int8_tensor_peak_gops()});
        c.bandwidth_gbs = measure_copy_bandwidth_gbs();
        c.bandwidth_probe = "device-to-device copy of 1 GiB, read+write bytes";
        return c;
    }
};

class CudaLaunch : public Launch {
public:
    CudaLaunch(const LadderEntry& e, const Problem& p, const float* A, const float* B, float* C)
        : entry_(e), p_(p), hostC_(C) {
        const std::string why = unavailable_reason();
        if (!why.empty()) throw BackendUnavailableError("cuda: " + why);
        stream_ = backend_stream();
        lda_ = round_up4(p.a_cols()), ldb_ = round_up4(p.b_cols()), ldc_ = round_up4(p.N);
        dA_ = upload(A, p.a_rows(), p.a_cols(), p.lda, lda_);
        dB_ = upload(B, p.b_rows(), p.b_cols(), p.ldb, ldb_);
        dC_ = acquire_device_buffer(size_t(p.M) * ldc_ * sizeof(float));
        // Every run() starts from the caller's C, so repeated timed runs give one result.
        if (p.beta != 0.0f) dC0_ = upload(C, p.M, p.N, p.ldc, ldc_);
        FASTGEMM_CUDA_CHECK(cudaEventCreate(&start_));
        FASTGEMM_CUDA_CHECK(cudaEventCreate(&stop_));
        FASTGEMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
        args_.problem = p;
        args_.problem.lda = lda_, args_.problem.ldb = ldb_, args_.problem.ldc = ldc_;
        args_.A = dA_.data(), args_.B = dB_.data(), args_.C = dC_.data();
    }
    ~CudaLaunch() override {
        cudaStreamSynchronize(stream_);
        cudaEventDestroy(start_);
        cudaEventDestroy(stop_);
    }
    Timing run() override {
        restore_c();
        const auto h0 = std::chrono::steady_clock::now();
        FASTGEMM_CUDA_CHECK(cudaEventRecord(start_, stream_));
        entry_.launch(args_, stream_, ws_);
        FASTGEMM_CUDA_CHECK(cudaEventRecord(stop_, stream_));
        const auto queued = std::chrono::steady_clock::now();
        FASTGEMM_CUDA_CHECK(cudaEventSynchronize(stop_));
        const auto h1 = std::chrono::steady_clock::now();
        float ms = 0.0f;
        FASTGEMM_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        Timing t;
        t.device_s = double(ms) * 1e-3;
        t.host_s = std::chrono::duration<double>(h1 - h0).count();
        t.launch_s = std::chrono::duration<double>(queued - h0).count();
        return t;
    }
    // The calls alone, queued back to back (no events between them), then one wait; C
    // restored before each when beta != 0, as run() does, so every call computes the
    // same product (a C grown without bound would send fp32x3 to its IEEE fallback).
    // As the device-array entry runs a repeated call (repeated_calls.hpp): one plain
    // call, then the same call captured into a graph and replayed, where graphs are on
    // and the sequence can be captured.
    RepeatTiming run_repeated(int calls) override {
        calls = std::max(calls, 1);
        LaunchGraph graph;
        if (graphs_enabled() && calls > 1) {
            queue_call(stream_);  // workspace grown and kernel attributes set outside the capture
            FASTGEMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
            graph = timing_captures().capture(ws_, [&](cudaStream_t s) { queue_call(s); });
        }
        const auto h0 = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i) {
            if (graph)
                graph.launch(stream_);
            else
                queue_call(stream_);
        }
        const auto queued = std::chrono::steady_clock::now();
        FASTGEMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
        const auto h1 = std::chrono::steady_clock::now();
        return {std::chrono::duration<double>(h1 - h0).count() / calls,
                std::chrono::duration<double>(queued - h0).count() / calls};
    }
    void finish() override {
        if (p_.M == 0 || p_.N == 0) return;
        FASTGEMM_CUDA_CHECK(cudaMemcpy2DAsync(hostC_, size_t(p_.ldc) * 4, dC_.data(), size_t(ldc_) * 4,
                                              size_t(p_.N) * 4, size_t(p_.M), cudaMemcpyDeviceToHost, stream_));
        FASTGEMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }

private:
    // beta != 0: C back to the caller's values on the stream, so that every run computes
    // the same product from the same C.
    void restore_c(cudaStream_t stream) {
        if (p_.beta != 0.0f && p_.M > 0 && p_.N > 0)
            FASTGEMM_CUDA_CHECK(cudaMemcpyAsync(dC_.data(), dC0_.data(), size_t(p_.M) * ldc_ * 4,
                                                cudaMemcpyDeviceToDevice, stream));
    }
    void restore_c() { restore_c(stream_); }
    // One repeated call on `stream`: C restored, then the kernel.
    void queue_call(cudaStream_t stream) {
        restore_c(stream);
        entry_.launch(args_, stream, ws_);
    }
    // A rows x cols host matrix (leading dimension ld_host) as a device matrix with
    // leading dimension ld_dev; the padding columns are zeroed, so no kernel reads garbage
    // past a row's end.
    DeviceBuffer upload(const float* host, int64_t rows, int64_t cols, int64_t ld_host, int64_t ld_dev) {
        DeviceBuffer d = acquire_device_buffer(size_t(rows) * ld_dev * sizeof(float));
        if (rows == 0 || cols == 0) return d;
        if (ld_dev != cols)
            FASTGEMM_CUDA_CHECK(cudaMemsetAsync(d.data(), 0, size_t(rows) * ld_dev * sizeof(float), stream_));
        FASTGEMM_CUDA_CHECK(cudaMemcpy2DAsync(d.data(), size_t(ld_dev) * 4, host, size_t(ld_host) * 4,
                                              size_t(cols) * 4, size_t(rows), cudaMemcpyHostToDevice, stream_));
        return d;
    }

    const LadderEntry& entry_;
    Problem p_;
    int64_t lda_ = 0, ldb_ = 0, ldc_ = 0;
    float* hostC_;
    cudaStream_t stream_ = nullptr;
    DeviceBuffer dA_, dB_, dC_, dC0_;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
    DeviceOperands args_;
    Workspace ws_;
};

class CudaKernel : public Kernel {
public:
    CudaKernel(KernelInfo info, const LadderEntry& e) : Kernel(std::move(info)), entry_(e) {}

protected:
    std::unique_ptr<Launch> make_launch(const Problem& p, const float* A, const float* B, float* C) const override {
        return std::make_unique<CudaLaunch>(entry_, p, A, B, C);
    }
    // One call (fastgemm.sgemm on host arrays): the pipelined path of direct_call.hpp,
    // which keeps its buffers between calls and times nothing.
    void run_direct(const Problem& p, const float* A, const float* B, float* C) const override {
        const std::string why = unavailable_reason();
        if (!why.empty()) throw BackendUnavailableError("cuda: " + why);
        run_host_call(entry_, p, A, B, C);
    }

private:
    const LadderEntry& entry_;
};

}  // namespace
}  // namespace cuda

void register_cuda_backend(Registry& r) {
    r.add_backend(std::make_unique<cuda::CudaBackend>());
    // sm_90a rungs cannot launch elsewhere, and the baselines need cuBLAS: keep them out
    // of kernel="auto" where they cannot run.
    const bool usable = cuda::unavailable_reason().empty();
    const bool sm90 = usable && cuda::device_is_sm90();
    bool cublas_ok = false;
    if (usable) cuda::cublas_status(&cublas_ok);
    for (const auto& e : cuda::ladder()) {
        KernelInfo info;
        info.name = e.name;
        info.backend = "cuda";
        info.ladder_step = e.ladder_step;
        info.baseline = e.baseline;
        info.precision = e.precision;
        info.constraints = e.constraints;
        info.params = e.params;
        info.source = e.source;
        info.description = e.description;
        if (e.min_sm == 90) {
            info.flags = "nvcc -O3 -gencode arch=compute_90a,code=sm_90a";
            info.isa = "sm_90a (wgmma, TMA, mbarrier, setmaxnreg)";
        } else if (e.baseline) {
            info.flags = "cuBLAS (dlopen)";
            info.isa = "cuBLAS";
        } else {
            info.flags = "nvcc -O3 -gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=sm_90";
            info.isa = e.precision == Precision::tf32 ? "sm_80+ (mma.sync tf32)" : "sm_80+ (FFMA)";
        }
        if (e.bench_flops_cap > 0) info.bench_flops_cap = e.bench_flops_cap;
        // The selection policy admits a candidate only when the caller's accuracy allows
        // its precision class (a tf32 kernel needs precision="tf32").
        info.auto_candidate = e.auto_candidate && (e.min_sm != 90 || sm90) && (!e.baseline || cublas_ok);
        r.add_kernel(std::make_unique<cuda::CudaKernel>(std::move(info), e));
    }
}

}  // namespace fastgemm
