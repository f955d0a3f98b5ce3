// See nonfinite.cuh.
#include "cuda/cuda_check.hpp"
#include "cuda/device_common.cuh"
#include "cuda/nonfinite.cuh"

namespace fastgemm {
namespace cuda {

namespace {

// Rows over grid.y, columns over grid.x and the threads (coalesced), both grid-strided.
__global__ void flag_nonfinite_kernel(const float* x, int64_t rows, int64_t cols, int64_t ld, int* flag) {
    bool seen = false;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
        for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x)
            seen |= !isfinite(x[r * ld + c]);
    if (__syncthreads_or(seen) && threadIdx.x == 0) *flag = 1;
}

// One thread per element of C, 16 x 16 tiles of op(A) and op(B) through shared memory;
// op() reads honour the transposes. Products in k order with FMAs, as a plain FP32
// kernel would; every block returns at once when the flag is clear.
constexpr int kTile = 16;

__global__ void gemm_ieee_kernel(GemmArgs p, const int* flag) {
    if (*flag == 0) return;
    __shared__ float As[kTile][kTile + 1], Bs[kTile][kTile + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t m = int64_t(blockIdx.y) * kTile + ty, n = int64_t(blockIdx.x) * kTile + tx;
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
    if (m >= p.M || n >= p.N) return;
    float* c = p.C + m * p.ldc + n;
    *c = p.beta == 0.0f ? p.alpha * acc : p.alpha * acc + p.beta * *c;
}

}  // namespace

void flag_nonfinite(const float* x, int64_t rows, int64_t cols, int64_t ld, int* flag, cudaStream_t stream) {
    if (rows == 0 || cols == 0) return;
    const int64_t col_blocks = ceil_div(cols, 256);
    const dim3 grid(unsigned(col_blocks < 8 ? col_blocks : 8), unsigned(rows < 2048 ? rows : 2048));
    flag_nonfinite_kernel<<<grid, 256, 0, stream>>>(x, rows, cols, ld, flag);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

void gemm_ieee_if_flagged(const GemmArgs& p, const int* flag, cudaStream_t stream) {
    if (p.M == 0 || p.N == 0) return;
    // grid.y holds at most 65535 tiles of rows: run taller problems in slices.
    const int64_t rows_per_launch = int64_t(65535) * kTile;
    for (int64_t m0 = 0; m0 < p.M; m0 += rows_per_launch) {
        GemmArgs q = p;
        q.M = p.M - m0 < rows_per_launch ? p.M - m0 : rows_per_launch;
        q.A = p.trans_a ? p.A + m0 : p.A + m0 * p.lda;
        q.C = p.C + m0 * p.ldc;
        const dim3 grid(unsigned(ceil_div(q.N, kTile)), unsigned(ceil_div(q.M, kTile)));
        gemm_ieee_kernel<<<grid, dim3(kTile, kTile), 0, stream>>>(q, flag);
        FASTGEMM_CUDA_CHECK_LAUNCH();
    }
}

}  // namespace cuda
}  // namespace fastgemm
