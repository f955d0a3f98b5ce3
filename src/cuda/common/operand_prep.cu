// See operand_prep.cuh.
#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/common/operand_prep.cuh"

namespace fastgemm {
namespace cuda {

namespace {

// fp32x3's small parts of v, tf32(v - tf32(v)). A nonzero |v| below kX3Tiny, which the
// split cannot carry, gets a NaN small part (device_common.cuh).
template <int N>
__device__ __forceinline__ void small_parts(const float (&v)[N], float (&s)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const bool tiny = fabsf(v[i]) < kX3Tiny && v[i] != 0.0f;
        s[i] = tiny ? __uint_as_float(0x7fc00000u) : __uint_as_float(split_tf32(v[i]).small);
    }
}

// The untransposed form: one thread per 4 consecutive destination elements of a row
// (16-byte stores; 16-byte loads too when the source row allows it), threads along the
// destination row. The padding columns of a row are written as zeros so the TMA boxes
// that cover them read defined values. The pass is bandwidth-bound: 16-byte accesses
// keep it near the device copy rate.
__global__ void prepare_operand_kernel(const float* src, int64_t ld_src, int64_t cols, float* out,
                                       float* small, int64_t ld_dst, bool vec_src, int* zero) {
    const int64_t c = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
    const int64_t r = blockIdx.y;
    if (zero && c == 0 && r == 0) *zero = 0;
    if (c >= ld_dst) return;
    float v[4];
    if (vec_src && c + 4 <= cols) {
        const float4 x = *reinterpret_cast<const float4*>(src + r * ld_src + c);
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
            v[i] = c + i < cols ? src[r * ld_src + c + i] : 0.0f;
    }
    if (out) *reinterpret_cast<float4*>(out + r * ld_dst + c) = make_float4(v[0], v[1], v[2], v[3]);
    if (small) {
        float s[4];
        small_parts(v, s);
        *reinterpret_cast<float4*>(small + r * ld_dst + c) = make_float4(s[0], s[1], s[2], s[3]);
    }
}

// The transposing form: dst[r][c] = src[c][r]. A 64 x 64 tile goes through shared
// memory so that both the reads (along a source row) and the writes (along a
// destination row) are coalesced; each thread moves pairs of elements (8-byte accesses)
// of 8 rows, and the +1 column keeps the transposed reads of the tile at two-way bank
// conflicts. A 4096^2 operand takes about 1.1x a plain 16-byte copy of it
// (docs/cuda-notes.md#operand-packing).
constexpr int kTransposeTile = 64, kTransposeRows = 8;

__global__ void prepare_transposed_kernel(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* out,
                                          float* small, int64_t ld_dst, bool vec_src, int* zero) {
    __shared__ float tile[kTransposeTile][kTransposeTile + 1];
    const int64_t r0 = int64_t(blockIdx.y) * kTransposeTile, c0 = int64_t(blockIdx.x) * kTransposeTile;
    const int x = 2 * int(threadIdx.x), ty = int(threadIdx.y);
    if (zero && r0 == 0 && c0 == 0 && x == 0 && ty == 0) *zero = 0;
    // tile[y][x] = src[c0 + y][r0 + x] = dst[r0 + x][c0 + y]; zeros past the edges, so
    // the padding columns of dst (cols <= c < ld_dst) come out as zeros.
    const int64_t sr = r0 + x;
    for (int y = ty; y < kTransposeTile; y += kTransposeRows) {
        const int64_t sc = c0 + y;
        float2 v = make_float2(0.0f, 0.0f);
        if (sc < cols) {
            const float* row = src + sc * ld_src;
            if (vec_src && sr + 1 < rows) {
                v = *reinterpret_cast<const float2*>(row + sr);
            } else {
                if (sr < rows) v.x = row[sr];
                if (sr + 1 < rows) v.y = row[sr + 1];
            }
        }
        tile[y][x] = v.x;
        tile[y][x + 1] = v.y;
    }
    __syncthreads();
    // dst columns c0 + x and c0 + x + 1: both inside the row or both past it, since
    // ld_dst is a multiple of 4 and x is even.
    const int64_t c = c0 + x;
    if (c >= ld_dst) return;
    for (int y = ty; y < kTransposeTile; y += kTransposeRows) {
        const int64_t r = r0 + y;
        if (r >= rows) break;
        const float v[2] = {tile[x][y], tile[x + 1][y]};
        if (out) *reinterpret_cast<float2*>(out + r * ld_dst + c) = make_float2(v[0], v[1]);
        if (small) {
            float s[2];
            small_parts(v, s);
            *reinterpret_cast<float2*>(small + r * ld_dst + c) = make_float2(s[0], s[1]);
        }
    }
}

}  // namespace

void prepare_operand(const float* src, int64_t ld_src, bool trans, int64_t rows, int64_t cols, float* dst,
                     float* dst_small, int64_t ld_dst, PrepMode mode, cudaStream_t stream, int* zero) {
    if (rows == 0 || cols == 0) {
        if (zero) FASTGEMM_CUDA_CHECK(cudaMemsetAsync(zero, 0, sizeof(int), stream));
        return;
    }
    if (ld_dst % 4 != 0) throw KernelError("prepare_operand: destination rows must be multiples of 4 floats");
    if (reinterpret_cast<uintptr_t>(dst) % 16 != 0 || reinterpret_cast<uintptr_t>(dst_small) % 16 != 0)
        throw KernelError("prepare_operand: destinations must start on 16 bytes");
    if (mode == PrepMode::copy) dst_small = nullptr;
    if (mode != PrepMode::small && !dst) throw KernelError("prepare_operand: no destination for the values");
    if (mode != PrepMode::copy && !dst_small) throw KernelError("prepare_operand: no destination for the small parts");
    if (trans) {
        const bool vec_src = ld_src % 2 == 0 && reinterpret_cast<uintptr_t>(src) % 8 == 0;
        // grid.y counts 64-row tiles: fold more than 65535 of them into several launches.
        const int64_t max_rows = int64_t(65535) * kTransposeTile;
        for (int64_t r0 = 0; r0 < rows; r0 += max_rows) {
            const int64_t n = rows - r0 < max_rows ? rows - r0 : max_rows;
            const dim3 grid(unsigned(ceil_div(ld_dst, kTransposeTile)), unsigned(ceil_div(n, kTransposeTile)));
            prepare_transposed_kernel<<<grid, dim3(kTransposeTile / 2, kTransposeRows), 0, stream>>>(
                src + r0, ld_src, n, cols, dst ? dst + r0 * ld_dst : nullptr,
                dst_small ? dst_small + r0 * ld_dst : nullptr, ld_dst, vec_src,
                r0 == 0 ? zero : nullptr);
            FASTGEMM_CUDA_CHECK_LAUNCH();
        }
        return;
    }
    const bool vec_src = ld_src % 4 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0;
    // rows beyond 65535 would overflow grid.y: fold them into several launches.
    for (int64_t r0 = 0; r0 < rows; r0 += 65535) {
        const int64_t n = rows - r0 < 65535 ? rows - r0 : 65535;
        dim3 grid(unsigned(ceil_div(ld_dst, 4 * 256)), unsigned(n));
        prepare_operand_kernel<<<grid, 256, 0, stream>>>(src + r0 * ld_src, ld_src, cols,
                                                         dst ? dst + r0 * ld_dst : nullptr,
                                                         dst_small ? dst_small + r0 * ld_dst : nullptr, ld_dst,
                                                         vec_src, r0 == 0 ? zero : nullptr);
        FASTGEMM_CUDA_CHECK_LAUNCH();
    }
}

const float* tma_readable(const float* src, int64_t& ld, bool trans, int64_t rows, int64_t cols, Workspace& ws,
                          int slot, cudaStream_t stream) {
    if (!trans && tma_ready(src, ld)) return src;
    const int64_t ld_src = ld;
    ld = round_up4(cols);
    float* packed = static_cast<float*>(ws.get(slot, size_t(rows) * ld * sizeof(float)));
    prepare_operand(src, ld_src, trans, rows, cols, packed, nullptr, ld, PrepMode::copy, stream);
    return packed;
}

}  // namespace cuda
}  // namespace fastgemm
