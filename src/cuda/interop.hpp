// Device-pointer entry point for arrays that already live on the GPU (CuPy, PyTorch):
// runs one cuda kernel on the caller's pointers and stream, with no copies and no
// synchronisation (the work is ordered on `stream` like the framework's own).
// kernel="auto" asks the core's one selection policy (core/selection.hpp), with the
// caller's accuracy request, which kernel runs the problem.
// Plain C++ types only, so the pybind11 module needs no CUDA headers.
#pragma once

#include <cstdint>
#include <string>

#include "core/selection.hpp"
#include "cuda/common/device_operands.hpp"

namespace fastgemm {
namespace cuda {

// Where and how to run a device call: the kernel's name or "auto", the accuracy "auto"
// must keep, the caller's stream (a cudaStream_t; 0 = the legacy default stream) and
// the CUDA device of the pointers (-1 = the current one).
struct DeviceCall {
    std::string kernel = "auto";
    Accuracy accuracy = Accuracy::fp32;
    uintptr_t stream = 0;
    int device = -1;
};

// Returns the name of the kernel that ran. Throws ConstraintError / NotFoundError /
// BackendUnavailableError / KernelError like the host path.
std::string run_device_gemm(const DeviceOperands& operands, const DeviceCall& call);

}  // namespace cuda
}  // namespace fastgemm
