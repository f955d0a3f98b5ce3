// Rung 8, warp tiling: the block tile (128x128, BK = 16, 256 threads) is split into
// 8 warp tiles of 64x32, and inside each warp the lanes are laid out so that the
// shared-memory reads of a warp are conflict-free and broadcast (see warp_tile.cuh):
// each lane owns an 8x8 set of outputs as 2x2 groups of 4x4. Tiles are staged through
// registers with 16-byte global loads (A stored transposed). Constraints: M % 128,
// N % 128, K % 16, no transposes, 16-byte alignment (checked at launch).
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/launch_checks.hpp"
#include "cuda/ladder.hpp"
#include "cuda/common/warp_tile.cuh"

namespace fastgemm {
namespace cuda {

namespace {
struct Warptiling128x128 {
    static constexpr int BM = 128, BN = 128, BK = 16;
    static constexpr int WARPS_M = 2, WARPS_N = 4;  // warp tiles of 64 x 32
};
using Shape = WarpTileShape<Warptiling128x128>;
}  // namespace

__global__ void __launch_bounds__(Shape::kThreads) warptiling_kernel(DeviceOperands p) {
    __shared__ __align__(16) float As[Shape::BK * Shape::AS_LD];
    __shared__ __align__(16) float Bs[Shape::BK * Shape::BS_LD];
    const int tid = threadIdx.x;
    const int64_t m0 = int64_t(blockIdx.y) * Shape::BM, n0 = int64_t(blockIdx.x) * Shape::BN;
    const float* A = p.A + m0 * p.problem.lda;
    const float* B = p.B + n0;
    const WarpTilePosition<Shape> w;
    float acc[Shape::TM][Shape::TN] = {};
    constexpr int kA4 = Shape::BM * Shape::BK / 4 / Shape::kThreads;  // float4s per thread
    constexpr int kB4 = Shape::BK * Shape::BN / 4 / Shape::kThreads;
    for (int64_t k0 = 0; k0 < p.problem.K; k0 += Shape::BK) {
#pragma unroll
        for (int i = 0; i < kA4; ++i) {
            const int e = tid + i * Shape::kThreads;
            const int row = e / (Shape::BK / 4), kq = (e % (Shape::BK / 4)) * 4;
            const float4 v = *reinterpret_cast<const float4*>(A + row * p.problem.lda + k0 + kq);
            As[(kq + 0) * Shape::AS_LD + row] = v.x;
            As[(kq + 1) * Shape::AS_LD + row] = v.y;
            As[(kq + 2) * Shape::AS_LD + row] = v.z;
            As[(kq + 3) * Shape::AS_LD + row] = v.w;
        }
#pragma unroll
        for (int i = 0; i < kB4; ++i) {
            const int e = tid + i * Shape::kThreads;
            const int k = e / (Shape::BN / 4), nq = (e % (Shape::BN / 4)) * 4;
            *reinterpret_cast<float4*>(&Bs[k * Shape::BS_LD + nq]) =
                *reinterpret_cast<const float4*>(B + (k0 + k) * p.problem.ldb + nq);
        }
        __syncthreads();
        warp_tile_step<Shape>(As, Bs, w, acc);
        __syncthreads();
    }
    warp_tile_store<Shape>(p, m0, n0, w, acc);
}

void launch_warptiling_128x128(const DeviceOperands& p, cudaStream_t stream, Workspace&) {
    require_vector_alignment(p, "warptiling_128x128", true, true, true);
    dim3 grid(unsigned(p.problem.N / Shape::BN), unsigned(p.problem.M / Shape::BM));
    warptiling_kernel<<<grid, Shape::kThreads, 0, stream>>>(p);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace fastgemm
