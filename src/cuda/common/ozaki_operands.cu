// See ozaki_operands.cuh.
#include "cuda/common/ozaki_operands.cuh"

#include <mutex>
#include <string>

#include "cuda/common/cuda_check.hpp"
#include "ozaki/ozaki_scheme.hpp"

namespace fastgemm {
namespace cuda {

namespace {

namespace oz = fastgemm::ozaki;

constexpr int kTile = 32;  // lines per block, and k per step: the canonical 32 partials

// Element k of a line: src[line * ls + k * ks] (ks == 1: lines contiguous along k;
// ls == 1: lines side by side, k strided).
struct LineView {
    const float* src;
    int64_t lines, K, ls, ks;
};

// tile[line][k] = lines [l0, l0 + 32) x k [k0, k0 + 32), zeros outside. Threads run along
// whichever of the two is contiguous in memory, so each warp reads 128 contiguous bytes.
template <bool KContiguous>
__device__ __forceinline__ void load_tile(const LineView& v, int64_t l0, int64_t k0, float (&tile)[kTile][kTile + 1]) {
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int line = KContiguous ? ty : tx, k = KContiguous ? tx : ty;
    const int64_t gl = l0 + line, gk = k0 + k;
    tile[line][k] = gl < v.lines && gk < v.K ? v.src[gl * v.ls + gk * v.ks] : 0.0f;
}

// Thread (ty, tx) keeps partial tx of line l0 + ty: k = tx, tx + 32, ... in increasing k
// (zeros past K add nothing); warp ty then combines its 32 partials with the scheme's tree
// (partial[p] += partial[p + w] for w = 16 .. 1, which __shfl_down_sync does for lane p).
template <bool KContiguous>
__global__ void __launch_bounds__(kTile* kTile) line_sums_kernel(LineView v, double R, OzakiLine* out) {
    __shared__ float tile[kTile][kTile + 1];
    const int64_t l0 = int64_t(blockIdx.x) * kTile;
    double partial = 0.0;
    for (int64_t k0 = 0; k0 < v.K; k0 += kTile) {
        load_tile<KContiguous>(v, l0, k0, tile);
        __syncthreads();
        const double a = tile[threadIdx.y][threadIdx.x];
        partial += a * a;  // exact square; the sum in increasing k
        __syncthreads();
    }
    for (int w = kTile / 2; w >= 1; w /= 2) partial += __shfl_down_sync(0xffffffffu, partial, w);
    const int64_t line = l0 + threadIdx.y;
    if (threadIdx.x == 0 && line < v.lines) {
        const oz::LineScale s = oz::line_scale(partial, R);
        out[line].factor = s.factor;
        out[line].inverse = s.inverse;
    }
}

// Thread (ty, tx) scales element (l0 + ty, k0 + tx) and writes its residues into a shared
// staging tile, from which rows of 32 bytes per line and plane go out as 4-byte words.
template <bool KContiguous>
__global__ void __launch_bounds__(kTile* kTile)
    residues_kernel(LineView v, int64_t kp, int8_t* planes, OzakiLine* lines) {
    __shared__ float tile[kTile][kTile + 1];
    __shared__ uint32_t packed[oz::kModuli][kTile][kTile / 4];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kTile + tx;
    const int64_t l0 = int64_t(blockIdx.x) * kTile, line = l0 + ty;
    const double f = line < v.lines ? lines[line].factor : 0.0;
    const bool scalable = !isnan(f);  // a line with NaN or Inf keeps zero residues
    uint8_t* bytes = reinterpret_cast<uint8_t*>(&packed[0][0][0]);
    bool inexact = false;
    int64_t norm1 = 0;
    for (int64_t k0 = 0; k0 < kp; k0 += kTile) {
        load_tile<KContiguous>(v, l0, k0, tile);
        __syncthreads();
        const int32_t value = scalable ? oz::scaled_integer(tile[ty][tx], f, inexact) : 0;
        norm1 += value < 0 ? -int64_t(value) : int64_t(value);
#pragma unroll
        for (int l = 0; l < oz::kModuli; ++l)
            bytes[(l * kTile + ty) * kTile + tx] = uint8_t(int8_t(oz::symmetric_residue(value, oz::modulus(l))));
        __syncthreads();
        for (int w = tid; w < oz::kModuli * kTile * (kTile / 4); w += kTile * kTile) {
            const int l = w / (kTile * kTile / 4), r = w % (kTile * kTile / 4), ln = r / (kTile / 4), word = r % (kTile / 4);
            if (l0 + ln < v.lines)
                *reinterpret_cast<uint32_t*>(planes + (int64_t(l) * v.lines + l0 + ln) * kp + k0 + 4 * word) =
                    packed[l][ln][word];
        }
        // The next step's first barrier orders these reads before the next writes.
    }
    for (int w = kTile / 2; w >= 1; w /= 2) norm1 += __shfl_down_sync(0xffffffffu, norm1, w);
    inexact = __any_sync(0xffffffffu, inexact);
    if (tx == 0 && line < v.lines) {
        const oz::LineBound b = oz::line_bound(lines[line].inverse, inexact, norm1);
        lines[line].e = b.e;
        lines[line].n = b.n;
    }
}

void scale_and_split(const LineView& v, bool k_contiguous, int64_t kp, int8_t* planes, OzakiLine* lines,
                     cudaStream_t stream) {
    const dim3 block(kTile, kTile);
    const unsigned grid = unsigned((v.lines + kTile - 1) / kTile);
    const double R = oz::norm_bound(v.K);
    if (k_contiguous) {
        line_sums_kernel<true><<<grid, block, 0, stream>>>(v, R, lines);
        FASTGEMM_CUDA_CHECK_LAUNCH();
        residues_kernel<true><<<grid, block, 0, stream>>>(v, kp, planes, lines);
    } else {
        line_sums_kernel<false><<<grid, block, 0, stream>>>(v, R, lines);
        FASTGEMM_CUDA_CHECK_LAUNCH();
        residues_kernel<false><<<grid, block, 0, stream>>>(v, kp, planes, lines);
    }
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled through the runtime's entry-point query (no libcuda at link time).
EncodeTiled encode_tiled() {
    static EncodeTiled fn = nullptr;
    static std::once_flag once;
    std::call_once(once, [] {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult q{};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<EncodeTiled>(p);
    });
    if (!fn) throw KernelError("cuTensorMapEncodeTiled is not available from the CUDA driver");
    return fn;
}

}  // namespace

OzakiOperands prepare_ozaki_operands(const DeviceOperands& p, cudaStream_t stream, Workspace& ws) {
    const Problem& q = p.problem;
    OzakiOperands o;
    o.kp = (q.K + kTile - 1) / kTile * kTile;
    int8_t* a_planes = static_cast<int8_t*>(ws.get(0, size_t(oz::kModuli) * size_t(q.M) * size_t(o.kp)));
    int8_t* b_planes = static_cast<int8_t*>(ws.get(1, size_t(oz::kModuli) * size_t(q.N) * size_t(o.kp)));
    OzakiLine* lines = static_cast<OzakiLine*>(ws.get(2, size_t(q.M + q.N) * sizeof(OzakiLine)));
    // Rows of op(A): A[i * lda + k], or A[k * lda + i] when transposed. Columns of op(B):
    // B[k * ldb + j], or B[j * ldb + k] when transposed.
    const LineView a{p.A, q.M, q.K, q.trans_a ? 1 : q.lda, q.trans_a ? q.lda : 1};
    const LineView b{p.B, q.N, q.K, q.trans_b ? q.ldb : 1, q.trans_b ? 1 : q.ldb};
    scale_and_split(a, !q.trans_a, o.kp, a_planes, lines, stream);
    scale_and_split(b, q.trans_b, o.kp, b_planes, lines + q.M, stream);
    o.a_planes = a_planes, o.b_planes = b_planes, o.rows = lines, o.cols = lines + q.M;
    return o;
}

CUtensorMap make_residue_map(const int8_t* planes, int64_t lines, int64_t kp, uint32_t box_lines) {
    CUtensorMap map;
    const cuuint64_t dims[3] = {cuuint64_t(kp), cuuint64_t(lines), cuuint64_t(oz::kModuli)};
    const cuuint64_t strides[2] = {cuuint64_t(kp), cuuint64_t(lines) * cuuint64_t(kp)};  // bytes
    const cuuint32_t box[3] = {128, box_lines, 1};
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    const CUresult r = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<int8_t*>(planes), dims,
                                      strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw KernelError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ") for residue planes of " +
                          std::to_string(lines) + " x " + std::to_string(kp) + " bytes");
    return map;
}

}  // namespace cuda
}  // namespace fastgemm
