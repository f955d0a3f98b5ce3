// How many blocks of a kernel the GPU holds at once: what a launcher sizes its grid,
// its split-K and its tails by.
#pragma once

#include <cstdint>

namespace fastgemm {
namespace cuda {

// Blocks of `kernel` (a __global__ function, launched with `threads` threads and
// `smem_bytes` of dynamic shared memory) resident at once on the current GPU, all SMs
// together; at least one per SM. The first call for a kernel on a device also allows it
// `smem_bytes` of dynamic shared memory. Asked of the runtime once per kernel and
// device: the occupancy query costs microseconds, which is all a small product's launch
// may spend.
int64_t resident_blocks(const void* kernel, int threads, int smem_bytes);

template <class Kernel>
int64_t resident_blocks(Kernel* kernel, int threads, int smem_bytes) {
    return resident_blocks(reinterpret_cast<const void*>(kernel), threads, smem_bytes);
}

}  // namespace cuda
}  // namespace fastgemm
