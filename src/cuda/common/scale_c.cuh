// C = beta * C on the device, for BLAS's quick return (alpha == 0 or K == 0): A and B
// are not read, so NaN or Inf in them cannot reach C. beta == 0 writes zeros without
// reading C; beta == 1 leaves C untouched.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace fastgemm {
namespace cuda {

void scale_c(float* C, int64_t M, int64_t N, int64_t ldc, float beta, cudaStream_t stream);

}  // namespace cuda
}  // namespace fastgemm
