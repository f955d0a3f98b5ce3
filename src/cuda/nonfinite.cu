// See nonfinite.cuh.
#include "cuda/cuda_check.hpp"
#include "cuda/device_common.cuh"
#include "cuda/nonfinite.cuh"

namespace fastgemm {
namespace cuda {

namespace {

// One thread per element of a 16 x 16 tile of C, tiles of op(A) and op(B) through
// shared memory; op() reads honour the transposes. Products in k order with FMAs, as a
// plain FP32 kernel would. A fixed grid walks the listed regions' 16 x 16 tiles, so
// that when nothing is listed (the usual case) the kernel costs one small launch whose
// blocks all return at once (one block per tile of C, 65536 of them at 4096^2, made
// fp32x3 7% slower there).
constexpr int kTile = 16, kMaxBlocks = 1024;

__global__ void gemm_ieee_listed_kernel(GemmArgs p, const int* list, int rows, int cols) {
    const int regions = list[0];
    if (regions == 0) return;
    __shared__ float As[kTile][kTile + 1], Bs[kTile][kTile + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tiles_n = cols / kTile, per_region = (rows / kTile) * tiles_n;
    for (int64_t t = blockIdx.x; t < int64_t(regions) * per_region; t += gridDim.x) {
        const int region = int(t / per_region), in_region = int(t % per_region);
        const int64_t m = list[1 + 2 * region] + (in_region / tiles_n) * kTile + ty;
        const int64_t n = list[2 + 2 * region] + (in_region % tiles_n) * kTile + tx;
        float acc = 0.0f;
        for (int64_t k0 = 0; k0 < p.K; k0 += kTile) {
            const int64_t ka = k0 + tx, kb = k0 + ty;
            As[ty][tx] = m < p.M && ka < p.K ? (p.trans_a ? p.A[ka * p.lda + m] : p.A[m * p.lda + ka]) : 0.0f;
            Bs[ty][tx] = kb < p.K && n < p.N ? (p.trans_b ? p.B[n * p.ldb + kb] : p.B[kb * p.ldb + n]) : 0.0f;
            __syncthreads();
            const int kn = p.K - k0 < kTile ? int(p.K - k0) : kTile;  // no padding zeros: Inf * 0 would be NaN
            for (int k = 0; k < kn; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
            __syncthreads();
        }
        if (m < p.M && n < p.N) {
            float* c = p.C + m * p.ldc + n;
            *c = p.beta == 0.0f ? p.alpha * acc : p.alpha * acc + p.beta * *c;
        }
    }
}

}  // namespace

void gemm_ieee_listed(const GemmArgs& p, const int* list, int max_regions, int rows, int cols, cudaStream_t stream) {
    if (p.M == 0 || p.N == 0 || max_regions == 0) return;
    if (rows % kTile != 0 || cols % kTile != 0) throw KernelError("gemm_ieee_listed: regions must be multiples of 16");
    const int64_t tiles = int64_t(max_regions) * (rows / kTile) * (cols / kTile);
    gemm_ieee_listed_kernel<<<unsigned(tiles < kMaxBlocks ? tiles : kMaxBlocks), dim3(kTile, kTile), 0, stream>>>(
        p, list, rows, cols);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace fastgemm
