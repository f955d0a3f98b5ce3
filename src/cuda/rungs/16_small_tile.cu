// Rung 16, small problems (M and N up to about a thousand): strict FP32 in tiles small
// enough that the GPU is filled. At 256^3 a 128x128 tile gives 4 blocks for 132 SMs, each
// walking all of K alone; a 32x32 tile gives 64 blocks and a 512^3 product 256. Below a
// few microseconds of arithmetic the call is bound by the host's launch, and this kernel
// is one plain launch (cuBLAS spends several times longer on the host per call).
// Owns: a block of 256 threads owns a BM x BN tile of C; thread (ty, tx) owns the TM x TN
// elements at rows ty*TM + [0, TM), columns tx*TN + [0, TN). Per step of BK along K the
// block stages op(A)'s BM x BK and op(B)'s BK x BN tiles in shared memory, k-major
// (As[k][m], Bs[k][n]), so a thread reads its TM values of A and TN of B at one k as one
// vector each; the next step's tiles are loaded into registers while this step is
// computed (two shared buffers, one barrier a step).
// Loads walk the dimension along which each operand is contiguous (a template flag per
// transpose), so they coalesce in every layout; elements outside the matrices are zeros.
// Every product and sum is FP32, each C element summed over k in order.
// Constraints: M and N at most 1024 (beyond, the big-tile rungs fill the GPU); none on K,
// strides or alignment (bounds-checked scalar loads).
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

namespace {

constexpr int kThreads = 256;

template <int N>
struct VecOf;
template <>
struct VecOf<2> {
    using type = float2;
};
template <>
struct VecOf<4> {
    using type = float4;
};

// v[0..N) = src[0..N), src aligned to N floats.
template <int N>
__device__ __forceinline__ void load_vec(float (&v)[N], const float* src) {
    const typename VecOf<N>::type x = *reinterpret_cast<const typename VecOf<N>::type*>(src);
    const float* f = reinterpret_cast<const float*>(&x);
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = f[i];
}

template <int BM_, int BN_, int BK_, int TM_, int TN_>
struct SmallTile {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
    static_assert((BM / TM) * (BN / TN) == kThreads, "one thread per TM x TN sub-tile");
    static_assert((BM * BK) % kThreads == 0 && (BK * BN) % kThreads == 0, "whole loads per thread");
    static constexpr int A_LOADS = BM * BK / kThreads, B_LOADS = BK * BN / kThreads;
    // Rows padded by 4 floats: vector reads stay aligned, and the k-major stores of a
    // K-contiguous operand spread over twice as many banks.
    static constexpr int A_LD = BM + 4, B_LD = BN + 4;
};

// Element e (of A_LOADS * kThreads) of op(A)'s tile at (m0, k0) maps to (m, k): along k
// when A is stored M x K (k contiguous), along m when it is stored K x M.
template <class S, bool TA>
__device__ __forceinline__ void tile_a_coord(int e, int& m, int& k) {
    if (TA) {
        m = e % S::BM, k = e / S::BM;
    } else {
        m = e / S::BK, k = e % S::BK;
    }
}
template <class S, bool TB>
__device__ __forceinline__ void tile_b_coord(int e, int& k, int& n) {
    if (TB) {
        n = e / S::BK, k = e % S::BK;
    } else {
        n = e % S::BN, k = e / S::BN;
    }
}

template <class S, bool TA, bool TB>
__device__ __forceinline__ void load_tiles(const DeviceOperands& p, int64_t m0, int64_t n0, int64_t k0,
                                           float (&ra)[S::A_LOADS], float (&rb)[S::B_LOADS]) {
    const Problem& q = p.problem;
#pragma unroll
    for (int r = 0; r < S::A_LOADS; ++r) {
        int m, k;
        tile_a_coord<S, TA>(threadIdx.x + r * kThreads, m, k);
        const int64_t gm = m0 + m, gk = k0 + k;
        ra[r] = gm < q.M && gk < q.K ? (TA ? p.A[gk * q.lda + gm] : p.A[gm * q.lda + gk]) : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < S::B_LOADS; ++r) {
        int k, n;
        tile_b_coord<S, TB>(threadIdx.x + r * kThreads, k, n);
        const int64_t gk = k0 + k, gn = n0 + n;
        rb[r] = gk < q.K && gn < q.N ? (TB ? p.B[gn * q.ldb + gk] : p.B[gk * q.ldb + gn]) : 0.0f;
    }
}

template <class S, bool TA, bool TB>
__device__ __forceinline__ void store_tiles(float* As, float* Bs, const float (&ra)[S::A_LOADS],
                                            const float (&rb)[S::B_LOADS]) {
#pragma unroll
    for (int r = 0; r < S::A_LOADS; ++r) {
        int m, k;
        tile_a_coord<S, TA>(threadIdx.x + r * kThreads, m, k);
        As[k * S::A_LD + m] = ra[r];
    }
#pragma unroll
    for (int r = 0; r < S::B_LOADS; ++r) {
        int k, n;
        tile_b_coord<S, TB>(threadIdx.x + r * kThreads, k, n);
        Bs[k * S::B_LD + n] = rb[r];
    }
}

template <class S, bool TA, bool TB>
__global__ void __launch_bounds__(kThreads) small_tile_kernel(DeviceOperands p) {
    __shared__ __align__(16) float As[2][S::BK * S::A_LD];
    __shared__ __align__(16) float Bs[2][S::BK * S::B_LD];
    const Problem& q = p.problem;
    const int tx = threadIdx.x % (S::BN / S::TN), ty = threadIdx.x / (S::BN / S::TN);
    const int64_t m0 = int64_t(blockIdx.y) * S::BM, n0 = int64_t(blockIdx.x) * S::BN;

    float acc[S::TM][S::TN];
#pragma unroll
    for (int i = 0; i < S::TM; ++i)
#pragma unroll
        for (int j = 0; j < S::TN; ++j) acc[i][j] = 0.0f;

    float ra[S::A_LOADS], rb[S::B_LOADS];
    load_tiles<S, TA, TB>(p, m0, n0, 0, ra, rb);
    store_tiles<S, TA, TB>(As[0], Bs[0], ra, rb);
    __syncthreads();

    int cur = 0;
    for (int64_t k0 = 0; k0 < q.K; k0 += S::BK) {
        const bool more = k0 + S::BK < q.K;
        if (more) load_tiles<S, TA, TB>(p, m0, n0, k0 + S::BK, ra, rb);  // in flight during the step
        const float* as = As[cur] + ty * S::TM;
        const float* bs = Bs[cur] + tx * S::TN;
#pragma unroll
        for (int k = 0; k < S::BK; ++k) {
            float a[S::TM], b[S::TN];
            load_vec(a, as + k * S::A_LD);
            load_vec(b, bs + k * S::B_LD);
#pragma unroll
            for (int i = 0; i < S::TM; ++i)
#pragma unroll
                for (int j = 0; j < S::TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        // The other buffer was last read in the previous step, before that step's barrier.
        if (more) store_tiles<S, TA, TB>(As[cur ^ 1], Bs[cur ^ 1], ra, rb);
        __syncthreads();
        cur ^= 1;
    }

#pragma unroll
    for (int i = 0; i < S::TM; ++i) {
        const int64_t m = m0 + ty * S::TM + i;
        if (m >= q.M) continue;
#pragma unroll
        for (int j = 0; j < S::TN; ++j) {
            const int64_t n = n0 + tx * S::TN + j;
            if (n < q.N) store_c(p, m, n, acc[i][j]);
        }
    }
}

template <class S>
void launch_small_tile(const DeviceOperands& p, cudaStream_t stream) {
    const Problem& q = p.problem;
    const dim3 grid(unsigned(ceil_div(q.N, S::BN)), unsigned(ceil_div(q.M, S::BM)));
    if (q.trans_a && q.trans_b) {
        small_tile_kernel<S, true, true><<<grid, kThreads, 0, stream>>>(p);
    } else if (q.trans_a) {
        small_tile_kernel<S, true, false><<<grid, kThreads, 0, stream>>>(p);
    } else if (q.trans_b) {
        small_tile_kernel<S, false, true><<<grid, kThreads, 0, stream>>>(p);
    } else {
        small_tile_kernel<S, false, false><<<grid, kThreads, 0, stream>>>(p);
    }
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_small_tile_32x32(const DeviceOperands& p, cudaStream_t stream, Workspace&) {
    launch_small_tile<SmallTile<32, 32, 32, 2, 2>>(p, stream);
}
void launch_small_tile_64x64(const DeviceOperands& p, cudaStream_t stream, Workspace&) {
    launch_small_tile<SmallTile<64, 64, 16, 4, 4>>(p, stream);
}

}  // namespace cuda
}  // namespace fastgemm
