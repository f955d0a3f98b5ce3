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

// A stack of `count` problems of one shape: product i reads A + i * a and B + i * b and
// writes C + i * c (strides in elements; 0 for A or B repeats one matrix, as a
// broadcast does). C's matrices must not overlap one another.
struct BatchStrides {
    int64_t count = 1, a = 0, b = 0, c = 0;
};

// The whole stack in one launch, queued on call.stream: cuBLAS's strided-batched SGEMM
// (FP32 arithmetic, so every accuracy allows it), the one batched kernel the backend
// has; call.kernel must be "auto" or "cublas" (fastgemm.matmul runs a named kernel
// matrix by matrix). Returns the name of what ran.
std::string run_device_gemm_batched(const DeviceOperands& first, const BatchStrides& batch, const DeviceCall& call);

}  // namespace cuda
}  // namespace fastgemm
