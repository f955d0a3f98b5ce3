// See launch_checks.hpp.
#include "cuda/common/launch_checks.hpp"

#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "core/errors.hpp"

namespace fastgemm {
namespace cuda {

void require_vector_alignment(const DeviceOperands& p, const char* kernel, bool a, bool b, bool c) {
    auto aligned = [](const void* ptr, int64_t ld) {
        return ld % 4 == 0 && reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
    };
    const char* what = nullptr;
    if (a && !aligned(p.A, p.problem.lda)) what = "A";
    else if (b && !aligned(p.B, p.problem.ldb)) what = "B";
    else if (c && !aligned(p.C, p.problem.ldc)) what = "C";
    if (what)
        throw ConstraintError(std::string(kernel) + " needs 16-byte aligned rows: " + what +
                              "'s pointer and leading dimension must be multiples of 16 bytes / 4 elements");
}

bool device_is_sm90() {
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) return false;
    return major == 9 && minor == 0;  // sm_90a machine code runs on 9.0 only
}

void require_sm90(const char* kernel, const char* uses) {
    if (!device_is_sm90())
        throw ConstraintError(std::string(kernel) + " needs an sm_90 GPU (Hopper): it uses " + uses);
}

}  // namespace cuda
}  // namespace fastgemm
