// Which BLAS the cpu backend's baseline calls, for `fastgemm info` and KernelInfo.
#pragma once

#include <string>

namespace fastgemm::cpu {

std::string blas_name();     // "openblas", "accelerate", or "" when built without one
std::string blas_version();  // the library's own configuration string

}  // namespace fastgemm::cpu
