// Error checking for the CUDA runtime: every call's status is checked, and a failed
// call becomes a fastgemm::KernelError that names the call and the place.
#pragma once

#include <string>

#include <cuda_runtime.h>

#include "core/errors.hpp"

namespace fastgemm {
namespace cuda {

// An allocation the device cannot hold is the caller's to size down, not a fault of a
// kernel, so it becomes OutOfMemoryError (the runtime stays usable after it).
[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
    std::string msg = std::string("CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                      ") in " + what + " at " + file + ":" + std::to_string(line);
    if (err == cudaErrorMemoryAllocation) throw OutOfMemoryError(msg);
    throw KernelError(msg);
}

}  // namespace cuda
}  // namespace fastgemm

#define FASTGEMM_CUDA_CHECK(call)                                                          \
    do {                                                                                   \
        cudaError_t fastgemm_err_ = (call);                                                \
        if (fastgemm_err_ != cudaSuccess)                                                  \
            ::fastgemm::cuda::throw_cuda_error(fastgemm_err_, #call, __FILE__, __LINE__); \
    } while (0)

// After a kernel launch: catches bad launch configurations at once.
#define FASTGEMM_CUDA_CHECK_LAUNCH() FASTGEMM_CUDA_CHECK(cudaGetLastError())
