// The cuda ladder as data: one entry per kernel (rungs and the cuBLAS baselines) with
// its launcher, precision class, constraints and tile parameters. The registry glue
// (cuda_backend.cpp), the raw-pointer interop and the standalone driver all read this
// one table, so a kernel is described once.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/kernel_info.hpp"
#include "cuda/gemm_args.hpp"

namespace fastgemm {
namespace cuda {

// One launcher per ladder file.
void launch_naive(const GemmArgs&, cudaStream_t, Workspace&);
void launch_coalesced(const GemmArgs&, cudaStream_t, Workspace&);
void launch_smem_tiling(const GemmArgs&, cudaStream_t, Workspace&);
void launch_blocktile_1d(const GemmArgs&, cudaStream_t, Workspace&);
void launch_blocktile_2d(const GemmArgs&, cudaStream_t, Workspace&);
void launch_vectorized(const GemmArgs&, cudaStream_t, Workspace&);
void launch_bank_conflict_free(const GemmArgs&, cudaStream_t, Workspace&);
void launch_warptiling(const GemmArgs&, cudaStream_t, Workspace&);
void launch_async_128x128(const GemmArgs&, cudaStream_t, Workspace&);
void launch_async_128x256(const GemmArgs&, cudaStream_t, Workspace&);
void launch_async_256x128(const GemmArgs&, cudaStream_t, Workspace&);
void launch_async_128x128_bk32(const GemmArgs&, cudaStream_t, Workspace&);
void launch_async_128x128_bk8(const GemmArgs&, cudaStream_t, Workspace&);
void launch_async_tma_128x256(const GemmArgs&, cudaStream_t, Workspace&);
void launch_async_tma_256x128(const GemmArgs&, cudaStream_t, Workspace&);
void launch_async_tma_128x128(const GemmArgs&, cudaStream_t, Workspace&);
void launch_tf32_mma_sync(const GemmArgs&, cudaStream_t, Workspace&);
void launch_tf32_wgmma(const GemmArgs&, cudaStream_t, Workspace&);
void launch_fp32x3_wgmma(const GemmArgs&, cudaStream_t, Workspace&);
void launch_cublas(const GemmArgs&, cudaStream_t, Workspace&);
void launch_cublas_tf32(const GemmArgs&, cudaStream_t, Workspace&);

struct LadderEntry {
    std::string name;
    int ladder_step = 0;  // 0 for baselines
    bool baseline = false;
    Precision precision = Precision::fp32;
    int min_sm = 0;       // 90 for wgmma/TMA rungs (compiled for sm_90a only)
    Launcher launch = nullptr;
    std::vector<Constraint> constraints;
    std::vector<std::pair<std::string, int64_t>> params;
    std::string source;
    std::string description;
    bool auto_candidate = false;
    double bench_flops_cap = 0.0;  // 0 = none
};

// Every cuda kernel, in ladder order, baselines last.
const std::vector<LadderEntry>& ladder();
const LadderEntry* find_entry(const std::string& name);

// Host-side checks the Constraint vocabulary cannot express (leading dimensions and
// pointers aligned for 16-byte vector loads). Throws ConstraintError naming `kernel`.
void require_vector_alignment(const GemmArgs& p, const char* kernel, bool a, bool b, bool c);

// Whether this process can launch sm_90a code (a Hopper GPU is current).
bool device_is_sm90();

}  // namespace cuda
}  // namespace fastgemm
