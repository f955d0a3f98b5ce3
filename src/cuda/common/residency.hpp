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

// Clusters of `cluster_blocks` blocks of `kernel` resident at once on the current GPU (0 if
// none fits); the first call also allows it `smem_bytes` of dynamic shared memory. Asked
// once per kernel, device and launch shape, as resident_blocks.
int64_t resident_clusters(const void* kernel, int threads, int smem_bytes, int cluster_blocks);

template <class Kernel>
int64_t resident_clusters(Kernel* kernel, int threads, int smem_bytes, int cluster_blocks) {
    return resident_clusters(reinterpret_cast<const void*>(kernel), threads, smem_bytes, cluster_blocks);
}

// Allows `kernel` `smem_bytes` of dynamic shared memory on the current GPU (a launch of
// more than 48 KiB needs it), asking the driver only when the kernel needs more than it
// was allowed before on this device: a driver call on every launch is a measurable part of
// a small product's host time. The allowance only grows, so a kernel launched with several
// sizes (the Ozaki operand pass's chunks) never has a smaller one set after a larger one,
// which would fail the next launch of the larger size.
void allow_dynamic_smem(const void* kernel, int smem_bytes);

template <class Kernel>
void allow_dynamic_smem(Kernel* kernel, int smem_bytes) {
    allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem_bytes);
}

}  // namespace cuda
}  // namespace fastgemm
