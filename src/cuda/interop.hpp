// Device-pointer entry point for arrays that already live on the GPU (CuPy, PyTorch):
// runs one cuda kernel on the caller's pointers and stream, with no copies and no
// synchronisation (the work is ordered on `stream` like the framework's own).
// Plain C++ types only, so the pybind11 module needs no CUDA headers.
#pragma once

#include <cstdint>
#include <string>

#include "cuda/common/device_operands.hpp"

namespace fastgemm {
namespace cuda {

// Where and how to run a device call: the kernel's name or "auto", the caller's stream
// (a cudaStream_t; 0 = the legacy default stream) and the CUDA device of the pointers
// (-1 = the current one).
struct DeviceCall {
    std::string kernel = "auto";
    uintptr_t stream = 0;
    int device = -1;
};

// Returns the name of the kernel that ran. Throws ConstraintError / NotFoundError /
// BackendUnavailableError / KernelError like the host path.
std::string run_device_gemm(const DeviceOperands& operands, const DeviceCall& call);

// The kernel kernel="auto" picks for device arrays: fp32x3_wgmma_128x128 on Hopper, else
// the fastest strict-fp32 rung that accepts the shape, else smem_tiling_32x32 (any shape).
std::string auto_device_kernel(const Problem& p);

}  // namespace cuda
}  // namespace fastgemm
