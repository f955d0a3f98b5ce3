// Rung 5, 2D block tiling: a block of 256 threads owns a 128x128 tile of C and each
// thread an 8x8 sub-tile (TM = TN = 8). Per k the thread loads 8 values of A and 8 of
// B from shared memory into registers and does 64 FMAs with them: 4 FMAs per shared
// load instead of about 1. Per step of BK = 8 the block stages a 128x8 tile of A and
// an 8x128 tile of B, 4 elements of each per thread. Constraints: M % 128, N % 128,
// K % 8, no transposes; alpha/beta in the epilogue.
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
}  // namespace

__global__ void __launch_bounds__(kThreads) blocktile_2d_kernel(DeviceOperands p) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int trow = (tid / (BN / TN)) * TM;  // first row of this thread's 8x8
    const int tcol = (tid % (BN / TN)) * TN;  // first column
    const int64_t m0 = int64_t(blockIdx.y) * BM, n0 = int64_t(blockIdx.x) * BN;
    const float* A = p.A + m0 * p.problem.lda;
    const float* B = p.B + n0;
    float acc[TM][TN] = {};
    float a[TM], b[TN];
    for (int64_t k0 = 0; k0 < p.problem.K; k0 += BK) {
#pragma unroll
        for (int i = 0; i < BM * BK / kThreads; ++i) {
            const int e = tid + i * kThreads;
            As[e / BK][e % BK] = A[(e / BK) * p.problem.lda + k0 + e % BK];
            Bs[e / BN][e % BN] = B[(k0 + e / BN) * p.problem.ldb + e % BN];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int r = 0; r < TM; ++r) a[r] = As[trow + r][k];
#pragma unroll
            for (int c = 0; c < TN; ++c) b[c] = Bs[k][tcol + c];
#pragma unroll
            for (int r = 0; r < TM; ++r)
#pragma unroll
                for (int c = 0; c < TN; ++c) acc[r][c] += a[r] * b[c];
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int c = 0; c < TN; ++c) store_c(p, m0 + trow + r, n0 + tcol + c, acc[r][c]);
}

void launch_blocktile_2d_128x128(const DeviceOperands& p, cudaStream_t stream, Workspace&) {
    dim3 grid(unsigned(p.problem.N / BN), unsigned(p.problem.M / BM));
    blocktile_2d_kernel<<<grid, kThreads, 0, stream>>>(p);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace fastgemm
