// Device-pointer entry point for arrays that already live on the GPU (CuPy, PyTorch):
// runs one cuda ladder kernel on the caller's pointers and stream, with no copies and
// no synchronisation (the work is ordered on `stream` like the framework's own).
// Plain C++ types only, so the pybind11 module needs no CUDA headers.
#pragma once

#include <cstdint>
#include <string>

namespace fastgemm {
namespace cuda {

struct DeviceGemm {
    std::string kernel = "auto";  // a cuda kernel name, or "auto"
    int64_t M = 0, N = 0, K = 0;
    uintptr_t A = 0, B = 0, C = 0;  // device pointers
    int64_t lda = 0, ldb = 0, ldc = 0;
    bool trans_a = false, trans_b = false;
    float alpha = 1.0f, beta = 0.0f;
    uintptr_t stream = 0;  // cudaStream_t; 0 = the legacy default stream
    int device = -1;       // CUDA device of the pointers; -1 = current
};

// Returns the name of the kernel that ran. Throws ConstraintError / NotFoundError /
// BackendUnavailableError / KernelError like the host path.
std::string run_device_gemm(const DeviceGemm& g);

// The kernel kernel="auto" picks for device arrays: fp32x3_wgmma on Hopper, else the
// fastest strict-fp32 rung that accepts the shape, else smem_tiling (any shape).
std::string auto_device_kernel(const DeviceGemm& g);

}  // namespace cuda
}  // namespace fastgemm
