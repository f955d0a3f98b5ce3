// The skinny view of a problem and what its kernels need before they run
// (skinny_operands.cuh).
#include "cuda/common/skinny_operands.cuh"

#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"

namespace fastgemm {
namespace cuda {

SkinnyOperands skinny_view(const DeviceOperands& p, bool small_is_m) {
    const Problem& q = p.problem;
    // op(A)(m, k) = A[m * a_m + k * a_k]; op(B)(k, n) = B[k * b_k + n * b_n].
    const int64_t a_m = q.trans_a ? 1 : q.lda, a_k = q.trans_a ? q.lda : 1;
    const int64_t b_k = q.trans_b ? 1 : q.ldb, b_n = q.trans_b ? q.ldb : 1;
    SkinnyOperands o;
    o.K = q.K;
    o.alpha = q.alpha, o.beta = q.beta;
    if (small_is_m) {
        o.S = q.M, o.L = q.N;
        o.Y = p.A, o.ys_i = a_m, o.ys_k = a_k;
        o.X = p.B, o.xs_j = b_n, o.xs_k = b_k;
        o.out = p.C, o.os_i = q.ldc, o.os_j = 1;
    } else {
        o.S = q.N, o.L = q.M;
        o.Y = p.B, o.ys_i = b_n, o.ys_k = b_k;
        o.X = p.A, o.xs_j = a_m, o.xs_k = a_k;
        o.out = p.C, o.os_i = 1, o.os_j = q.ldc;
    }
    return o;
}

SplitKSlabs park_in_slabs(SkinnyOperands& o, const Problem& q, Workspace& ws, bool small_is_m) {
    const SplitKSlabs slabs = reserve_split_k_slabs(ws, o.splits, q.M, q.N, 64, 64);
    o.out = slabs.partial, o.os_split = slabs.slab();
    o.os_i = small_is_m ? slabs.ld : 1, o.os_j = small_is_m ? 1 : slabs.ld;
    o.alpha = 1.0f, o.beta = 0.0f;
    return slabs;
}

namespace {

// dst[i * ld + k] = src[i * s_i + k * s_k] for i < S, k < K: a thread per element,
// consecutive threads along whichever of i and k src is denser in, so the loads coalesce.
__global__ void gather_rows_kernel(const float* src, int64_t s_i, int64_t s_k, int64_t S, int64_t K, float* dst,
                                   int64_t ld) {
    const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (e >= S * K) return;
    const bool i_inner = s_i < s_k;
    const int64_t i = i_inner ? e % S : e / K, k = i_inner ? e / S : e % K;
    dst[i * ld + k] = src[i * s_i + k * s_k];
}

}  // namespace

void make_y_contiguous(SkinnyOperands& o, cudaStream_t stream, Workspace& ws, bool small_is_m) {
    if ((aligned16(o.Y) && o.ys_k == 1 && (o.S == 1 || o.ys_i % 4 == 0)) || o.K == 0) return;
    const int64_t ld = (o.K + 3) / 4 * 4;
    float* y = static_cast<float*>(ws.get(small_is_m ? 0 : 2, size_t(o.S * ld) * sizeof(float)));
    constexpr int threads = 256;
    gather_rows_kernel<<<unsigned(ceil_div(o.S * o.K, threads)), threads, 0, stream>>>(o.Y, o.ys_i, o.ys_k, o.S, o.K,
                                                                                       y, ld);
    FASTGEMM_CUDA_CHECK_LAUNCH();
    o.Y = y, o.ys_i = ld, o.ys_k = 1;
}

}  // namespace cuda
}  // namespace fastgemm
