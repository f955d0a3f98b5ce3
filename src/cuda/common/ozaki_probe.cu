// The INT8 tensor-core ceiling (see probes.hpp): what wgmma m64n256k32 s8 x s8 -> s32 with
// both operands in shared memory sustains, the instruction rung 15 (fp32_ozaki) is built on.
// Two warpgroups per SM issue it back to back over one 40 KB tile of pseudo-random bytes
// (zeros would draw less power and run at a higher clock than real operands); the result is
// the best of 5 timed runs after a warm-up, in int8 operations (2 per multiply-add).
#include <algorithm>

#include "cuda/common/cuda_check.hpp"
#include "cuda/common/hopper.cuh"
#include "cuda/common/ozaki_wgmma.cuh"
#include "cuda/common/probes.hpp"

namespace fastgemm {
namespace cuda {

namespace {

constexpr int kA = 64 * 128, kB = 256 * 128, kIters = 2048, kWarpgroups = 2;

__global__ void __launch_bounds__(128 * kWarpgroups, 1) int8_mma_probe_kernel(uint32_t seed, uint32_t* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = align_smem_1024(smem_raw);
    for (int i = threadIdx.x; i < (kA + kB) / 4; i += blockDim.x) {
        uint32_t x = seed ^ uint32_t(i) * 2654435761u;
        x ^= x >> 15;
        reinterpret_cast<uint32_t*>(smem)[i] = x * 2246822519u;
    }
    __syncthreads();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes, then wgmma reads
    const uint32_t a = smem_addr(smem), b = smem_addr(smem + kA);
    uint32_t acc[128];
#pragma unroll
    for (int r = 0; r < 128; ++r) acc[r] = 0;
    for (int it = 0; it < kIters; ++it) {
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
            wgmma_m64n256k32_s8(acc, desc_kmajor_sw128(a + 32 * kk), desc_kmajor_sw128(b + 32 * kk),
                                it == 0 && kk == 0 ? 0u : 1u);
        wgmma_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    uint32_t s = 0;
#pragma unroll
    for (int r = 0; r < 128; ++r) s += acc[r];
    if (s == seed) *sink = s;  // almost never: keeps the products alive
#endif
}

}  // namespace

double measure_int8_tensor_peak_gops() {
    int dev = 0, sms = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    FASTGEMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    uint32_t* sink = nullptr;
    FASTGEMM_CUDA_CHECK(cudaMalloc(&sink, sizeof(uint32_t)));
    const int smem = kA + kB + 1024;
    FASTGEMM_CUDA_CHECK(cudaFuncSetAttribute(int8_mma_probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaEvent_t start, stop;
    FASTGEMM_CUDA_CHECK(cudaEventCreate(&start));
    FASTGEMM_CUDA_CHECK(cudaEventCreate(&stop));
    double best = 1e30;
    for (int run = 0; run < 6; ++run) {  // run 0 warms up
        FASTGEMM_CUDA_CHECK(cudaEventRecord(start));
        int8_mma_probe_kernel<<<sms, 128 * kWarpgroups, smem>>>(0x9E3779B9u + run, sink);
        FASTGEMM_CUDA_CHECK_LAUNCH();
        FASTGEMM_CUDA_CHECK(cudaEventRecord(stop));
        FASTGEMM_CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        FASTGEMM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (run > 0) best = std::min(best, double(ms));
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaFree(sink);
    const double ops = 2.0 * 64 * 256 * 32 * 4 * double(kIters) * kWarpgroups * sms;
    return ops / (best * 1e-3) / 1e9;
}

}  // namespace cuda
}  // namespace fastgemm
