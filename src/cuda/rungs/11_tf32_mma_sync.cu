// Rung 11, tensor cores through mma.sync (TF32 in, FP32 accumulate, sm_80+).
// A block of 256 threads owns a 128x128 tile of C; its 8 warps each own a 64x32 warp
// tile computed as 4x4 mma.m16n8k8 instructions per k8 step. Per step of BK = 32 the
// block stages a 128x32 tile of A (As[m][k], rows padded to 36 floats) and a 32x128
// tile of B (Bs[k][n], rows padded to 136): with those pads the fragment loads of a
// warp (lane = 4*group + t reads row group, column t) hit 32 distinct banks. Tiles are
// double-buffered: the global loads of the next tile go to registers before the
// current one is computed and to the other shared buffer after it, one barrier per
// step. Operands are rounded to TF32 (to_tf32: nearest) when fragments are loaded.
// Serves any shape: loads are bounds-checked (zeros outside), 16-byte vector loads are
// used when the shape and alignment allow and no operand is transposed; transposes,
// alpha and beta are handled by the scalar path and the epilogue.
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/common/mma_sync.cuh"
#include "cuda/common/residency.hpp"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {
constexpr int BM = 128, BN = 128, BK = 32;
constexpr int kThreads = 256;
constexpr int AS_LD = BK + 4, BS_LD = BN + 8;
constexpr int kStageFloats = BM * AS_LD + BK * BS_LD;
constexpr int kSmemBytes = 2 * kStageFloats * 4;
constexpr int WM = 64, WN = 32, MT = WM / 16, NT = WN / 8;
}  // namespace

template <bool VEC>
__global__ void __launch_bounds__(kThreads) tf32_mma_sync_kernel(DeviceOperands p) {
    extern __shared__ __align__(16) float smem[];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int g = lane >> 2, t = lane & 3;
    const int wm0 = (warp % 2) * WM, wn0 = (warp / 2) * WN;
    const int64_t m0 = int64_t(blockIdx.y) * BM, n0 = int64_t(blockIdx.x) * BN;
    const int KT = int(ceil_div(p.problem.K, BK));

    float ra[16], rb[16];  // next tile, staged in registers
    auto load_regs = [&](int kt) {
        const int64_t k0 = int64_t(kt) * BK;
        if (VEC) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int e = tid + i * kThreads;
                const int row = e / 8, kq = (e % 8) * 4;
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (m0 + row < p.problem.M && k0 + kq < p.problem.K)
                    v = *reinterpret_cast<const float4*>(p.A + (m0 + row) * p.problem.lda + k0 + kq);
                ra[4 * i] = v.x, ra[4 * i + 1] = v.y, ra[4 * i + 2] = v.z, ra[4 * i + 3] = v.w;
                const int k = e / 32, nq = (e % 32) * 4;
                float4 w = make_float4(0.f, 0.f, 0.f, 0.f);
                if (k0 + k < p.problem.K && n0 + nq < p.problem.N)
                    w = *reinterpret_cast<const float4*>(p.B + (k0 + k) * p.problem.ldb + n0 + nq);
                rb[4 * i] = w.x, rb[4 * i + 1] = w.y, rb[4 * i + 2] = w.z, rb[4 * i + 3] = w.w;
            }
        } else {
#pragma unroll
            for (int i = 0; i < 16; ++i) {
                const int e = tid + i * kThreads;
                const int row = e / BK, k = e % BK;
                ra[i] = (m0 + row < p.problem.M && k0 + k < p.problem.K) ? load_op_a(p, m0 + row, k0 + k) : 0.f;
                const int kb = e / BN, n = e % BN;
                rb[i] = (k0 + kb < p.problem.K && n0 + n < p.problem.N) ? load_op_b(p, k0 + kb, n0 + n) : 0.f;
            }
        }
    };
    auto store_smem = [&](int buf) {
        float* As = smem + buf * kStageFloats;
        float* Bs = As + BM * AS_LD;
        if (VEC) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int e = tid + i * kThreads;
                *reinterpret_cast<float4*>(As + (e / 8) * AS_LD + (e % 8) * 4) =
                    make_float4(ra[4 * i], ra[4 * i + 1], ra[4 * i + 2], ra[4 * i + 3]);
                *reinterpret_cast<float4*>(Bs + (e / 32) * BS_LD + (e % 32) * 4) =
                    make_float4(rb[4 * i], rb[4 * i + 1], rb[4 * i + 2], rb[4 * i + 3]);
            }
        } else {
#pragma unroll
            for (int i = 0; i < 16; ++i) {
                const int e = tid + i * kThreads;
                As[(e / BK) * AS_LD + e % BK] = ra[i];
                Bs[(e / BN) * BS_LD + e % BN] = rb[i];
            }
        }
    };

    float acc[MT][NT][4] = {};
    load_regs(0);
    store_smem(0);
    __syncthreads();
    for (int kt = 0; kt < KT; ++kt) {
        if (kt + 1 < KT) load_regs(kt + 1);
        const float* As = smem + (kt & 1) * kStageFloats;
        const float* Bs = As + BM * AS_LD;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            uint32_t af[MT][4], bf[NT][2];
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                const float* a = As + (wm0 + 16 * i + g) * AS_LD + kk + t;
                af[i][0] = to_tf32(a[0]);
                af[i][1] = to_tf32(a[8 * AS_LD]);
                af[i][2] = to_tf32(a[4]);
                af[i][3] = to_tf32(a[8 * AS_LD + 4]);
            }
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const float* b = Bs + (kk + t) * BS_LD + wn0 + 8 * j + g;
                bf[j][0] = to_tf32(b[0]);
                bf[j][1] = to_tf32(b[4 * BS_LD]);
            }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) mma_tf32_16x8x8(acc[i][j], af[i], bf[j]);
        }
        if (kt + 1 < KT) store_smem((kt + 1) & 1);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int64_t m = m0 + wm0 + 16 * i + g + 8 * (c >> 1);
                const int64_t n = n0 + wn0 + 8 * j + 2 * t + (c & 1);
                if (m < p.problem.M && n < p.problem.N) store_c(p, m, n, acc[i][j][c]);
            }
}

void launch_tf32_mma_sync_128x128(const DeviceOperands& p, cudaStream_t stream, Workspace&) {
    const Problem& q = p.problem;
    const bool vec = !q.trans_a && !q.trans_b && q.K % 4 == 0 && q.N % 4 == 0 && q.lda % 4 == 0 &&
                     q.ldb % 4 == 0 && reinterpret_cast<uintptr_t>(p.A) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(p.B) % 16 == 0;
    auto kernel = vec ? tf32_mma_sync_kernel<true> : tf32_mma_sync_kernel<false>;
    allow_dynamic_smem(kernel, kSmemBytes);
    dim3 grid(unsigned(ceil_div(q.N, BN)), unsigned(ceil_div(q.M, BM)));
    kernel<<<grid, kThreads, kSmemBytes, stream>>>(p);
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace fastgemm
