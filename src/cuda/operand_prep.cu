// See operand_prep.cuh.
#include "cuda/cuda_check.hpp"
#include "cuda/device_common.cuh"
#include "cuda/operand_prep.cuh"

namespace fastgemm {
namespace cuda {

namespace {

// One thread per 4 consecutive destination elements of a row (16-byte stores; 16-byte
// loads too when the source row allows it), threads along the destination row. The
// padding columns of a row are written as zeros so the TMA boxes that cover them read
// defined values. The pass is bandwidth-bound: 16-byte accesses keep it near the copy
// rate (the scalar version before it, one element per thread, took ~60 us for a 4096^2
// split on the H200: ~6% of fp32x3_wgmma's time; the split writes 2 x 64 MB there).
__global__ void prepare_operand_kernel(const float* src, int64_t ld_src, bool trans, int64_t cols, float* big,
                                       float* small, int64_t ld_dst, PrepMode mode, bool vec_src) {
    const int64_t c = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
    const int64_t r = blockIdx.y;
    if (c >= ld_dst) return;
    float v[4];
    if (vec_src && c + 4 <= cols) {
        const float4 x = *reinterpret_cast<const float4*>(src + r * ld_src + c);
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
            v[i] = c + i < cols ? (trans ? src[(c + i) * ld_src + r] : src[r * ld_src + c + i]) : 0.0f;
    }
    float b[4], s[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        if (mode == PrepMode::split) {
            b[i] = __uint_as_float(to_tf32(v[i]));
            s[i] = __uint_as_float(to_tf32(v[i] - b[i]));
        } else {
            b[i] = v[i];
            s[i] = 0.0f;
        }
    }
    if (big) *reinterpret_cast<float4*>(big + r * ld_dst + c) = make_float4(b[0], b[1], b[2], b[3]);
    if (small) *reinterpret_cast<float4*>(small + r * ld_dst + c) = make_float4(s[0], s[1], s[2], s[3]);
}

}  // namespace

void prepare_operand(const float* src, int64_t ld_src, bool trans, int64_t rows, int64_t cols, float* dst_big,
                     float* dst_small, int64_t ld_dst, PrepMode mode, cudaStream_t stream) {
    if (rows == 0 || cols == 0) return;
    if (ld_dst % 4 != 0) throw KernelError("prepare_operand: destination rows must be multiples of 4 floats");
    if (mode == PrepMode::copy) dst_small = nullptr;
    const bool vec_src = !trans && ld_src % 4 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0;
    // rows beyond 65535 would overflow grid.y: fold them into several launches.
    for (int64_t r0 = 0; r0 < rows; r0 += 65535) {
        const int64_t n = rows - r0 < 65535 ? rows - r0 : 65535;
        dim3 grid(unsigned(ceil_div(ld_dst, 4 * 256)), unsigned(n));
        const float* s = trans ? src + r0 : src + r0 * ld_src;
        prepare_operand_kernel<<<grid, 256, 0, stream>>>(s, ld_src, trans, cols, dst_big ? dst_big + r0 * ld_dst : nullptr,
                                                         dst_small ? dst_small + r0 * ld_dst : nullptr, ld_dst, mode,
                                                         vec_src);
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
