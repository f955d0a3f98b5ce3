// Rung 3, shared-memory tiling: a 32x32 block owns a 32x32 tile of C, one thread per
// element. Per step of 32 along K the block stages a 32x32 tile of op(A) and of op(B)
// in shared memory (each thread loads one element of each, coalesced when not
// transposed) and every element is then read 32 times from shared memory instead of
// global memory. Out-of-range tile elements are loaded as zeros, so it serves any
// shape; transposes, alpha and beta too.
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

constexpr int kTile = 32;

__global__ void smem_tiling_kernel(DeviceOperands p) {
    __shared__ float As[kTile][kTile];
    __shared__ float Bs[kTile][kTile + 1];  // +1: a column read by a warp hits 32 banks
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t i = int64_t(blockIdx.y) * kTile + ty;
    const int64_t j = int64_t(blockIdx.x) * kTile + tx;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < p.problem.K; k0 += kTile) {
        As[ty][tx] = (i < p.problem.M && k0 + tx < p.problem.K) ? load_op_a(p, i, k0 + tx) : 0.0f;
        const int64_t jb = int64_t(blockIdx.x) * kTile + tx;
        Bs[ty][tx] = (k0 + ty < p.problem.K && jb < p.problem.N) ? load_op_b(p, k0 + ty, jb) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (i < p.problem.M && j < p.problem.N) store_c(p, i, j, acc);
}

void launch_smem_tiling_32x32(const DeviceOperands& p, cudaStream_t stream, Workspace&) {
    dim3 block(kTile, kTile);
    dim3 grid(unsigned(ceil_div(p.problem.N, kTile)), unsigned(ceil_div(p.problem.M, kTile)));
    smem_tiling_kernel<<<grid, block, 0, stream>>>(p);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace fastgemm
