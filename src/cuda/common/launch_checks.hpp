// Checks a launcher makes on the host before it launches: what the Constraint
// vocabulary of KernelInfo cannot express (pointer alignment, the GPU's architecture).
// Each throws ConstraintError naming the kernel, so the caller learns which rule failed.
#pragma once

#include "cuda/common/device_operands.hpp"

namespace fastgemm {
namespace cuda {

// A, B and/or C (as selected) start on 16 bytes and have row strides of a multiple of 4
// floats: what 16-byte vector loads and stores of whole rows need.
void require_vector_alignment(const DeviceOperands& p, const char* kernel, bool a, bool b, bool c);

// Whether this process can launch sm_90a code (the current GPU has compute capability 9.0).
bool device_is_sm90();
// Throws unless device_is_sm90(); `uses` says which sm_90a features the kernel needs.
void require_sm90(const char* kernel, const char* uses);

}  // namespace cuda
}  // namespace fastgemm
