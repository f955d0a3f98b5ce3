// Registration of the packed CPU kernels (ladder steps 20..28 of backend "cpu").
//
//   20 packed_scalar    packing only: dot-product micro-kernel, no register blocking
//   21 packed_regblock  + register blocking: portable 4x8 micro-kernel
//   22 packed_simd      + SIMD micro-kernel of the selected ISA (12x32 AVX-512, 6x16
//                         AVX2+FMA, 8x12 NEON); whole matrices packed, no cache blocking
//   23 packed_blocked   + cache blocking (MC, KC, NC from the cache sizes)
//   24 packed           + threads (the shared pool); auto candidate
//   25..28 packed_portable / packed_avx2 / packed_avx512 / packed_neon:
//                       step 24 with the micro-kernel forced to that ISA, registered
//                       when this CPU can run it (to test and compare every path)
#pragma once

namespace fastgemm {

class Registry;

// Adds the kernels above to backend "cpu" (which must already be registered).
void register_packed_kernels(Registry& registry);

}  // namespace fastgemm
