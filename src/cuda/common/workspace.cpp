// See workspace.hpp.
#include "cuda/common/workspace.hpp"

#include <string>

#include "cuda/common/cuda_check.hpp"

namespace fastgemm {
namespace cuda {

Workspace::~Workspace() {
    for (void* p : ptr_)
        if (p) cudaFree(p);
}

void* Workspace::get(int slot, size_t bytes) {
    if (slot < 0 || slot >= kSlots) throw KernelError("Workspace::get: slot " + std::to_string(slot) + " out of range");
    ++uses_;
    if (bytes == 0) bytes = 256;
    if (size_[slot] < bytes) {
        if (ptr_[slot]) {
            FASTGEMM_CUDA_CHECK(cudaDeviceSynchronize());
            FASTGEMM_CUDA_CHECK(cudaFree(ptr_[slot]));
            ptr_[slot] = nullptr;
            size_[slot] = 0;
        }
        ++generation_;  // before the allocation: a failed one leaves the slot empty, changed too
        FASTGEMM_CUDA_CHECK(cudaMalloc(&ptr_[slot], bytes));
        size_[slot] = bytes;
    }
    return ptr_[slot];
}

}  // namespace cuda
}  // namespace fastgemm
