// Rung 7, bank-conflict-free layouts: rung 6 with two shared-memory layouts fixed.
// (1) In rung 6 a thread's 8 columns of B are contiguous, so the float4 reads of a
// warp's 16 column groups stride 32 bytes and need twice the wavefronts; here a thread
// owns columns [4c, 4c+4) and [64+4c, 64+4c+4), so consecutive lanes read consecutive
// float4s. (2) The transposed store of A (As[k][m]) put the two lanes that share a row
// in the same bank; rows of As are padded by 4 floats so they land 16 banks apart.
// Tiles and constraints as rung 6.
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/launch_checks.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = 256;
constexpr int kPadA = 4;
}  // namespace

__global__ void __launch_bounds__(kThreads) bank_conflict_free_kernel(DeviceOperands p) {
    __shared__ __align__(16) float As[BK][BM + kPadA];  // transposed, padded rows
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int trow = (tid / 16) * TM;  // 8 consecutive rows
    const int tcol = (tid % 16) * 4;   // columns tcol..+3 and 64+tcol..+3
    const int64_t m0 = int64_t(blockIdx.y) * BM, n0 = int64_t(blockIdx.x) * BN;
    const float* A = p.A + m0 * p.problem.lda;
    const float* B = p.B + n0;
    const int a_row = tid / 2, a_k = (tid % 2) * 4;
    const int b_k = tid / 32, b_n = (tid % 32) * 4;
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
            *reinterpret_cast<float4*>(&b[4]) = *reinterpret_cast<const float4*>(&Bs[k][64 + tcol]);
#pragma unroll
            for (int r = 0; r < TM; ++r)
#pragma unroll
                for (int c = 0; c < TN; ++c) acc[r][c] += a[r] * b[c];
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < TM; ++r) {
        store_c4(p, m0 + trow + r, n0 + tcol,
                 make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
        store_c4(p, m0 + trow + r, n0 + 64 + tcol,
                 make_float4(acc[r][4], acc[r][5], acc[r][6], acc[r][7]));
    }
}

void launch_bank_conflict_free_128x128(const DeviceOperands& p, cudaStream_t stream, Workspace&) {
    require_vector_alignment(p, "bank_conflict_free_128x128", true, true, true);
    dim3 grid(unsigned(p.problem.N / BN), unsigned(p.problem.M / BM));
    bank_conflict_free_kernel<<<grid, kThreads, 0, stream>>>(p);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace fastgemm
