// The Metal kernel ladder as data: one table that both Metal backends read.
//
// Every kernel in shaders/*.metal appears here exactly once with: its registry name (the same
// under `metal` and `metal-emu`), the MSL function name or [[host_name]] the host looks up, the
// shader file, its KernelInfo (constraints, precision, tile parameters), and its launch
// geometry. The Objective-C++ host (src/metal/*.mm) and the emulator (src/emu) both call
// launch_geometry() and make_params(), so a dispatch is described in one place only.
//
// Plain C++17, compiled on every platform (src/emu adds ladder.cpp to the library).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/kernel_info.hpp"
#include "core/problem.hpp"

namespace fastgemm::metal_ladder {

// Buffer table of every ladder kernel (the [[buffer(n)]] indices in shaders/).
constexpr int kBufferA = 0;       // device const float*, op(A) as stored
constexpr int kBufferB = 1;       // device const float*, op(B) as stored
constexpr int kBufferC = 2;       // device float*, read when beta != 0
constexpr int kBufferParams = 3;  // constant GemmParams&, bind with setBytes

// Byte-for-byte mirror of `struct GemmParams` in shaders/gemm_common.h (MSL uint = uint32_t).
// 32-bit fields: the host checks that every dimension and span fits (see fits_32bit).
struct GemmParams {
    uint32_t M = 0, N = 0, K = 0;
    uint32_t lda = 0, ldb = 0, ldc = 0;  // row strides of the stored arrays, in elements
    uint32_t trans_a = 0, trans_b = 0;   // 0 or 1
    float alpha = 1.0f, beta = 0.0f;     // beta == 0: C is never read (NaN-safe)
    uint32_t reserved0 = 0, reserved1 = 0;
};
static_assert(sizeof(GemmParams) == 48, "GemmParams must match shaders/gemm_common.h");

struct Size3 {
    uint32_t x = 1, y = 1, z = 1;
};

// One dispatch, in Metal's dispatchThreadgroups:threadsPerThreadgroup: terms.
struct LaunchGeometry {
    Size3 threadgroups;             // grid counted in threadgroups
    Size3 threads_per_threadgroup;  // x * y * z <= 1024
    // (index, bytes) for each [[threadgroup(n)]] argument: setThreadgroupMemoryLength:atIndex:
    std::vector<std::pair<int, uint32_t>> threadgroup_memory;
};

// Which MSL language version a shader needs (host compile option / -std= of `xcrun metal`).
enum class MslVersion {
    metal3_2,  // simdgroup matrices and older
    metal4_0,  // MetalPerformancePrimitives tensor ops (macOS 26+)
};

struct LadderKernel {
    std::string name;      // registry name, e.g. "simdgroup_32x32_shared"
    std::string function;  // MSL function name or [[host_name]] for newFunctionWithName:
    std::string shader;    // file name in shaders/, e.g. "07_simdgroup_32x32_shared.metal"
    MslVersion msl = MslVersion::metal3_2;
    // Output tile of one threadgroup (rows of C x columns of C) and its threads. The grid is
    // (ceil(N / tile_n), ceil(M / tile_m), 1): x walks the columns of C, y the rows.
    uint32_t tile_m = 0, tile_n = 0;
    Size3 threads;
    // The kernel assumes SIMD-groups of this width (simdgroup matrices, MPP scopes); 0 = any.
    uint32_t simd_width = 0;
    // Backend-neutral description: name, ladder_step, precision, constraints, params, source
    // ("shaders/<file>"), description. `backend` is left empty: each backend copies this and
    // sets its own name (and metal-emu its bench_flops_cap).
    KernelInfo info;
};

// Every Metal kernel, in ladder order.
const std::vector<LadderKernel>& ladder();
// nullptr when no kernel has that name.
const LadderKernel* find(const std::string& name);

// Grid, threads and threadgroup memory for one problem (constraints already checked).
LaunchGeometry launch_geometry(const LadderKernel& k, const Problem& p);
// The params struct bound at kBufferParams.
GemmParams make_params(const Problem& p);
// Whether the problem's dimensions, leading dimensions and spans fit the shaders' 32-bit
// index arithmetic; the host raises ShapeError otherwise.
bool fits_32bit(const Problem& p);

}  // namespace fastgemm::metal_ladder
