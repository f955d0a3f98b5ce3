// Rung 2, global-memory coalescing: still one thread per output element, but
// threadIdx.x now walks along a row of C. A warp reads one element of A (a broadcast)
// and 32 consecutive elements of B per k, and stores 32 consecutive elements of C: every
// global access of a warp is one or two 128-byte transactions instead of 32.
// Serves any shape, transposes, alpha and beta.
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

__global__ void coalesced_kernel(DeviceOperands p) {
    const int64_t j = int64_t(blockIdx.x) * 32 + threadIdx.x;  // column of C
    const int64_t i = int64_t(blockIdx.y) * 32 + threadIdx.y;  // row of C
    if (i >= p.problem.M || j >= p.problem.N) return;
    float acc = 0.0f;
    for (int64_t k = 0; k < p.problem.K; ++k) acc += load_op_a(p, i, k) * load_op_b(p, k, j);
    store_c(p, i, j, acc);
}

void launch_coalesced(const DeviceOperands& p, cudaStream_t stream, Workspace&) {
    dim3 block(32, 32);
    dim3 grid(unsigned(ceil_div(p.problem.N, 32)), unsigned(ceil_div(p.problem.M, 32)));
    coalesced_kernel<<<grid, block, 0, stream>>>(p);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace fastgemm
