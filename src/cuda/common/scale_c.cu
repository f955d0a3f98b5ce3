// See scale_c.cuh. One thread per element of a row segment; a grid-stride loop over
// rows, so any M fits the grid's limits.
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/scale_c.cuh"

namespace fastgemm {
namespace cuda {

namespace {

__global__ void scale_c_kernel(float* C, int64_t M, int64_t N, int64_t ldc, float beta) {
    const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (j >= N) return;
    for (int64_t i = blockIdx.y; i < M; i += gridDim.y) C[i * ldc + j] *= beta;
}

}  // namespace

void scale_c(float* C, int64_t M, int64_t N, int64_t ldc, float beta, cudaStream_t stream) {
    if (M == 0 || N == 0 || beta == 1.0f) return;
    if (beta == 0.0f) {
        FASTGEMM_CUDA_CHECK(cudaMemset2DAsync(C, size_t(ldc) * sizeof(float), 0, size_t(N) * sizeof(float),
                                              size_t(M), stream));
        return;
    }
    const int threads = 256;
    const dim3 grid(unsigned((N + threads - 1) / threads), unsigned(M < 65535 ? M : 65535));
    scale_c_kernel<<<grid, threads, 0, stream>>>(C, M, N, ldc, beta);
    FASTGEMM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace fastgemm
