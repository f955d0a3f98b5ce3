// Cache blocking for the packed SGEMM: how big the packed blocks are, derived from
// this machine's cache sizes at run time (and overridable), BLIS-style:
//   kc: depth of one pass. Every MR x NR tile of C is loaded and stored once per kc
//       FMAs per element, so kc is long; the kc x NR micro-panel of B, reused by every
//       tile of a row block, gets 1/8 of L2.
//   mc: rows of op(A) packed at once; the mc x kc block is reread for every NR
//       columns, so it lives in L2 (3/4 of it, per core).
//   nc: columns of op(B) packed at once; the kc x nc block is reread for every mc
//       rows and shared by the threads, so it lives in L3 (1/8 of it).
// The fractions were tuned on Zen 4 (see blocking.cpp); the sizes follow the caches.
#pragma once

#include <cstdint>

#include "cpu/packed/micro_kernel.hpp"

namespace fastgemm {

struct CacheSizes {
    int64_t l1d = 32 * 1024;   // bytes, per core
    int64_t l2 = 1024 * 1024;  // bytes, per core
    int64_t l3 = 8 << 20;      // bytes, all cores together
};

// From sysconf / sysfs (Linux) or sysctl (macOS); the defaults above where unknown.
CacheSizes detect_cache_sizes();

struct PackedConfig {
    const MicroKernel* kernel = nullptr;  // MR x NR and the ISA
    int64_t mc = 0, kc = 0, nc = 0;       // 0: the whole dimension (no cache blocking)
    int threads = 1;                      // tasks on the pool; 1 = the caller's thread only
};

// Block sizes for `kernel` on caches `caches`, then the overrides FASTGEMM_CPU_MC,
// FASTGEMM_CPU_KC, FASTGEMM_CPU_NC from the environment where set. mc is a multiple
// of MR, nc of NR, kc of 8.
PackedConfig blocked_config(const MicroKernel* kernel, const CacheSizes& caches, int threads);

}  // namespace fastgemm
