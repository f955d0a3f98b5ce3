// Memory bandwidth probe: the slanted roof of the CPU roofline.
#pragma once

#include <cstdint>

namespace fastgemm {

// GB/s of a parallel copy between two buffers of `bytes` each (default 0: eight times
// the last-level cache, at least 256 MiB), counted as STREAM does: bytes read plus bytes
// written. Best of a few passes, after one that faults the pages in.
double measure_copy_bandwidth_gbs(int threads, int64_t bytes = 0);

// The last-level cache size the OS reports, or 0 when unknown.
int64_t last_level_cache_bytes();

}  // namespace fastgemm
