// See operand_prep.cuh.
#include "cuda/cuda_check.hpp"
#include "cuda/device_common.cuh"
#include "cuda/operand_prep.cuh"

namespace fastgemm {
namespace cuda {

// One thread per destination element, threads along the destination row (coalesced
// writes; reads are coalesced unless transposed). The padding columns of a row are
// written as zeros so the TMA boxes that cover them read defined values.
__global__ void prepare_operand_kernel(const float* src, int64_t ld_src, bool trans, int64_t rows, int64_t cols,
                                       float* big, float* small, int64_t ld_dst, bool split) {
    const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t r = blockIdx.y;
    if (c >= ld_dst) return;
    float v = 0.0f;
    if (c < cols) v = trans ? src[c * ld_src + r] : src[r * ld_src + c];
    if (split) {
        const float b = __uint_as_float(to_tf32(v));
        big[r * ld_dst + c] = b;
        small[r * ld_dst + c] = __uint_as_float(to_tf32(v - b));
    } else {
        big[r * ld_dst + c] = v;
    }
}

void prepare_operand(const float* src, int64_t ld_src, bool trans, int64_t rows, int64_t cols, float* dst_big,
                     float* dst_small, int64_t ld_dst, PrepMode mode, cudaStream_t stream) {
    if (rows == 0 || cols == 0) return;
    // rows beyond 65535 would overflow grid.y: fold them into several launches.
    for (int64_t r0 = 0; r0 < rows; r0 += 65535) {
        const int64_t n = rows - r0 < 65535 ? rows - r0 : 65535;
        dim3 grid(unsigned(ceil_div(ld_dst, 256)), unsigned(n));
        const float* s = trans ? src + r0 : src + r0 * ld_src;
        prepare_operand_kernel<<<grid, 256, 0, stream>>>(s, ld_src, trans, n, cols, dst_big + r0 * ld_dst,
                                                         dst_small ? dst_small + r0 * ld_dst : nullptr, ld_dst,
                                                         mode == PrepMode::split);
        FASTGEMM_CUDA_CHECK_LAUNCH();
    }
}

}  // namespace cuda
}  // namespace fastgemm
