// Whether cuBLAS could be loaded (cublas_baseline.cpp loads it with dlopen) and from
// where, or why not: for the backend's status and `fastgemm info`.
#pragma once

#include <string>

namespace fastgemm {
namespace cuda {

std::string cublas_status(bool* available);

}  // namespace cuda
}  // namespace fastgemm
