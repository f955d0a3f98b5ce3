// Rung 1, naive: one thread per output element, reading A and B straight from global
// memory. threadIdx.x walks down a column of C (consecutive threads = consecutive
// rows), so a warp's loads of A are 32 different rows (uncoalesced) and its stores of
// C are strided: this is the baseline every later rung improves on. Nothing is reused
// on chip beyond what the caches catch. Serves any shape, transposes, alpha and beta.
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

__global__ void naive_kernel(DeviceOperands p) {
    const int64_t i = int64_t(blockIdx.x) * 32 + threadIdx.x;  // row of C
    const int64_t j = int64_t(blockIdx.y) * 32 + threadIdx.y;  // column of C
    if (i >= p.problem.M || j >= p.problem.N) return;
    float acc = 0.0f;
    for (int64_t k = 0; k < p.problem.K; ++k) acc += load_op_a(p, i, k) * load_op_b(p, k, j);
    store_c(p, i, j, acc);
}

void launch_naive(const DeviceOperands& p, cudaStream_t stream, Workspace&) {
    dim3 block(32, 32);
    dim3 grid(unsigned(ceil_div(p.problem.M, 32)), unsigned(ceil_div(p.problem.N, 32)));
    naive_kernel<<<grid, block, 0, stream>>>(p);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace fastgemm
