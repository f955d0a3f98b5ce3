// The cuda ladder as data: one entry per kernel (rungs, their variants and the cuBLAS
// baselines) with its launcher, precision class, constraints and tile parameters. The
// registry glue (cuda_backend.cpp) and the device-array entry point (interop.cpp) both
// read this one table, so a kernel is described once.
//
// Names: a kernel's registry name is its design followed by its block tile (BM x BN, and
// _bk<BK> where a family varies BK), or by what else tells its variants apart (_splitk);
// its launcher is launch_<name>. Rungs 1-2 have no block tile.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "core/kernel_info.hpp"
#include "cuda/common/device_operands.hpp"
#include "cuda/common/workspace.hpp"

namespace fastgemm {
namespace cuda {

// One launcher per kernel, in the file its source names.
using Launcher = void (*)(const DeviceOperands& operands, cudaStream_t stream, Workspace& ws);

void launch_naive(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/01_naive.cu
void launch_coalesced(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/02_coalesced.cu
void launch_smem_tiling_32x32(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/03_smem_tiling.cu
void launch_blocktile_1d_64x64(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/04_blocktile_1d.cu
void launch_blocktile_2d_128x128(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/05_blocktile_2d.cu
void launch_vectorized_128x128(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/06_vectorized.cu
// rungs/07_bank_conflict_free.cu
void launch_bank_conflict_free_128x128(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_warptiling_128x128(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/08_warptiling.cu
void launch_async_multistage_128x128(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/09_async_multistage.cu
void launch_async_multistage_128x256(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_async_multistage_256x128(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_async_multistage_128x128_bk32(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_async_multistage_128x128_bk8(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_async_tma_128x256(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/10_async_tma.cu
void launch_async_tma_256x128(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_async_tma_128x128(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_async_tma_128x256_splitk(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_async_tma_64x256_splitk(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_async_tma_256x64_splitk(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_async_tma_128x128_splitk(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_tf32_mma_sync_128x128(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/11_tf32_mma_sync.cu
void launch_tf32_wgmma_256x128(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/12_tf32_wgmma.cu
void launch_tf32_wgmma_256x128_splitk(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_tf32_wgmma_128x128_splitk(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_tf32_wgmma_64x128_splitk(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_fp32x3_wgmma_128x128(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/13_fp32x3_wgmma.cu
void launch_fp32x3_wgmma_128x128_splitk(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_fp32x3_wgmma_64x128_splitk(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_fp32x3_wgmma_32x128_splitk(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_fp32x3_wgmma_16x128_splitk(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_skinny_m64(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/14_skinny.cu
void launch_skinny_n64(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_fp32x3_skinny_m64(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/14_skinny_fp32x3.cu
void launch_fp32x3_skinny_n64(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_ozaki_int8_128x256(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/15_ozaki_int8.cu
void launch_ozaki_int8_128x256_c4(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_ozaki_int8_128x256_fused_rows(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_ozaki_int8_128x256_resident(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_small_tile_32x32(const DeviceOperands&, cudaStream_t, Workspace&);  // rungs/16_small_tile.cu
void launch_small_tile_64x64(const DeviceOperands&, cudaStream_t, Workspace&);
void launch_cublas(const DeviceOperands&, cudaStream_t, Workspace&);  // cublas_baseline.cpp
void launch_cublas_tf32(const DeviceOperands&, cudaStream_t, Workspace&);
// `count` products of p's shape, operand i at A + i * stride_a (likewise B, C; in
// elements, 0 repeats one matrix), in one cublasSgemmStridedBatched call: FP32, TF32 off.
void launch_cublas_strided_batched(const DeviceOperands& p, int64_t count, int64_t stride_a, int64_t stride_b,
                                   int64_t stride_c, cudaStream_t stream);

struct LadderEntry {
    std::string name;
    int ladder_step = 0;  // 0 for baselines
    bool baseline = false;
    Precision precision = Precision::fp32;
    int min_sm = 0;       // 90 for the sm_90a rungs (TMA, wgmma), which run on Hopper only
    Launcher launch = nullptr;
    std::vector<Constraint> constraints;
    std::vector<std::pair<std::string, int64_t>> params;
    std::string source;
    std::string description;
    // May win somewhere: kernel="auto" times it (among the candidates its precision class
    // and the caller's accuracy allow).
    bool auto_candidate = false;
    double bench_flops_cap = 0.0;  // 0 = none
};

// Every cuda kernel, in ladder order, baselines last.
const std::vector<LadderEntry>& ladder();
const LadderEntry* find_entry(const std::string& name);

}  // namespace cuda
}  // namespace fastgemm
