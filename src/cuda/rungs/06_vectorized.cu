// Rung 6, vectorized loads: the 2D tiling of rung 5 (128x128 block tile, 8x8 per
// thread, BK = 8) with every global load, shared load and store of C 16 bytes wide.
// The A tile is stored transposed in shared memory (As[k][m]), so a thread's 8 values
// of A for one k are contiguous and come in as two float4 loads, like its 8 values of
// B. Constraints: M % 128, N % 128, K % 8, no transposes, leading dimensions and
// pointers 16-byte aligned (checked at launch); alpha/beta in the epilogue.
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/launch_checks.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = 256;
}  // namespace

__global__ void __launch_bounds__(kThreads) vectorized_kernel(DeviceOperands p) {
    __shared__ __align__(16) float As[BK][BM];  // transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int trow = (tid / 16) * TM, tcol = (tid % 16) * TN;
    const int64_t m0 = int64_t(blockIdx.y) * BM, n0 = int64_t(blockIdx.x) * BN;
    const float* A = p.A + m0 * p.problem.lda;
    const float* B = p.B + n0;
    const int a_row = tid / 2, a_k = (tid % 2) * 4;   // one float4 of A per thread
    const int b_k = tid / 32, b_n = (tid % 32) * 4;   // one float4 of B per thread
    float acc[TM][TN] = {};
    for (int64_t k0 = 0; k0 < p.problem.K; k0 += BK) {
        const float4 av = *reinterpret_cast<const float4*>(A + a_row * p.problem.lda + k0 + a_k);
        As[a_k + 0][a_row] = av.x;
        As[a_k + 1][a_row] = av.y;
        As[a_k + 2][a_row] = av.z;
        As[a_k + 3][a_row] = av.w;
        *reinterpret_cast<float4*>(&Bs[b_k][b_n]) =
            *reinterpret_cast<const float4*>(B + (k0 + b_k) * p.problem.ldb + b_n);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            *reinterpret_cast<float4*>(&a[0]) = *reinterpret_cast<const float4*>(&As[k][trow]);
            *reinterpret_cast<float4*>(&a[4]) = *reinterpret_cast<const float4*>(&As[k][trow + 4]);
            *reinterpret_cast<float4*>(&b[0]) = *reinterpret_cast<const float4*>(&Bs[k][tcol]);
            *reinterpret_cast<float4*>(&b[4]) = *reinterpret_cast<const float4*>(&Bs[k][tcol + 4]);
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
        for (int c = 0; c < TN; c += 4)
            store_c4(p, m0 + trow + r, n0 + tcol + c,
                     make_float4(acc[r][c], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]));
}

void launch_vectorized_128x128(const DeviceOperands& p, cudaStream_t stream, Workspace&) {
    require_vector_alignment(p, "vectorized_128x128", true, true, true);
    dim3 grid(unsigned(p.problem.N / BN), unsigned(p.problem.M / BM));
    vectorized_kernel<<<grid, kThreads, 0, stream>>>(p);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace fastgemm
