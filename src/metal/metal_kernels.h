// The kernels of the metal backend: one per ladder entry, plus the MPS baseline.
// Declared here so that metal_backend.mm registers them; defined in ladder_kernel.mm and
// mps_baseline.mm.
#pragma once

#include <memory>

#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "metal/ladder.hpp"

namespace fastgemm::metal_host {

struct DeviceCaps;

// The kernel for one ladder entry under backend "metal"; `caps` (nullptr without a device)
// decides whether it is a candidate for kernel="auto".
std::unique_ptr<Kernel> make_ladder_kernel(const metal_ladder::LadderKernel& k,
                                           const DeviceCaps* caps);

// Registers "mps" (MPSMatrixMultiplication) under backend "metal".
void register_mps_baseline(Registry& r, const DeviceCaps* caps);

}  // namespace fastgemm::metal_host
