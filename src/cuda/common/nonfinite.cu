// See nonfinite.cuh.
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/common/nonfinite.cuh"

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

__global__ void gemm_ieee_listed_kernel(DeviceOperands p, const int* list, int rows, int cols) {
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
        for (int64_t k0 = 0; k0 < p.problem.K; k0 += kTile) {
            const int64_t ka = k0 + tx, kb = k0 + ty;
            const Problem& q = p.problem;
            As[ty][tx] = m < q.M && ka < q.K ? (q.trans_a ? p.A[ka * q.lda + m] : p.A[m * q.lda + ka]) : 0.0f;
            Bs[ty][tx] = kb < q.K && n < q.N ? (q.trans_b ? p.B[n * q.ldb + kb] : p.B[kb * q.ldb + n]) : 0.0f;
            __syncthreads();
            // No padding zeros: Inf * 0 would be NaN.
            const int kn = p.problem.K - k0 < kTile ? int(p.problem.K - k0) : kTile;
            for (int k = 0; k < kn; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
            __syncthreads();
        }
        if (m < p.problem.M && n < p.problem.N) {
            float* c = p.C + m * p.problem.ldc + n;
            *c = p.problem.beta == 0.0f ? p.problem.alpha * acc : p.problem.alpha * acc + p.problem.beta * *c;
        }
    }
}

}  // namespace

void gemm_ieee_listed(const DeviceOperands& p, const int* list, int max_regions, int rows, int cols,
                      cudaStream_t stream) {
    if (p.problem.M == 0 || p.problem.N == 0 || max_regions == 0) return;
    if (rows % kTile != 0 || cols % kTile != 0) throw KernelError("gemm_ieee_listed: regions must be multiples of 16");
    const int64_t tiles = int64_t(max_regions) * (rows / kTile) * (cols / kTile);
    gemm_ieee_listed_kernel<<<unsigned(tiles < kMaxBlocks ? tiles : kMaxBlocks), dim3(kTile, kTile), 0, stream>>>(
        p, list, rows, cols);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

int* fallback_list(Workspace& ws, int64_t max_regions) {
    return static_cast<int*>(ws.get(7, size_t(1 + 2 * max_regions) * sizeof(int)));
}

}  // namespace cuda
}  // namespace fastgemm
