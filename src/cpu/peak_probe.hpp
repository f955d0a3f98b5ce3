// FMA peak probe: the FP32 throughput this CPU reaches when nothing but fused
// multiply-adds on registers is running. It is the "100 %" in "% of peak" tables.
#pragma once

#include <string>

namespace fastgemm {

// Measured FP32 GFLOP/s (an FMA counts as 2 FLOPs) with `threads` threads (>= 1), each
// running independent FMA chains on the widest vector unit the CPU has. Best of a few
// short runs (~0.1 s in total per call). threads <= 0 means get_num_threads().
double measure_fma_peak_gflops(int threads);

// The instruction set the probe used ("avx512", "avx2+fma", "neon", "scalar").
std::string fma_peak_isa();

}  // namespace fastgemm
