// See probes.hpp. Each probe runs a warm-up, then takes the best of 5 timed runs with
// CUDA events.
#include <algorithm>

#include "cuda/common/cuda_check.hpp"
#include "cuda/common/probes.hpp"

namespace fastgemm {
namespace cuda {

namespace {
constexpr int kChains = 8, kIters = 4096;

// 8 independent FMA chains per thread hide the FMA latency; the result is stored only
// if impossible, so the compiler keeps the chains but writes nothing.
__global__ void ffma_probe_kernel(float seed, float* sink) {
    float x[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = seed + threadIdx.x + c;
    for (int i = 0; i < kIters; ++i)
#pragma unroll
        for (int c = 0; c < kChains; ++c) x[c] = fmaf(x[c], 0.999999f, 1e-7f);
    float s = 0;
#pragma unroll
    for (int c = 0; c < kChains; ++c) s += x[c];
    if (s == 12345.678f) *sink = s;
}

template <class F>
double best_ms(F&& f) {
    cudaEvent_t a, b;
    FASTGEMM_CUDA_CHECK(cudaEventCreate(&a));
    FASTGEMM_CUDA_CHECK(cudaEventCreate(&b));
    f();
    double best = 1e30;
    for (int i = 0; i < 5; ++i) {
        FASTGEMM_CUDA_CHECK(cudaEventRecord(a));
        f();
        FASTGEMM_CUDA_CHECK(cudaEventRecord(b));
        FASTGEMM_CUDA_CHECK(cudaEventSynchronize(b));
        float ms = 0;
        FASTGEMM_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        best = std::min(best, double(ms));
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return best;
}
}  // namespace

double measure_ffma_peak_gflops() {
    int dev = 0, sms = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    FASTGEMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    float* sink = nullptr;
    FASTGEMM_CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
    const int blocks = sms * 8, threads = 256;
    const double ms = best_ms([&] {
        ffma_probe_kernel<<<blocks, threads>>>(1.0f, sink);
        FASTGEMM_CUDA_CHECK_LAUNCH();
    });
    cudaFree(sink);
    const double flops = 2.0 * double(blocks) * threads * kChains * kIters;
    return flops / (ms * 1e-3) / 1e9;
}

double measure_copy_bandwidth_gbs() {
    const size_t bytes = size_t(1) << 30;
    void *a = nullptr, *b = nullptr;
    FASTGEMM_CUDA_CHECK(cudaMalloc(&a, bytes));
    FASTGEMM_CUDA_CHECK(cudaMalloc(&b, bytes));
    FASTGEMM_CUDA_CHECK(cudaMemset(a, 1, bytes));
    const double ms = best_ms([&] { FASTGEMM_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
    cudaFree(a);
    cudaFree(b);
    return 2.0 * double(bytes) / (ms * 1e-3) / 1e9;
}

}  // namespace cuda
}  // namespace fastgemm
