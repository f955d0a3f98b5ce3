// Ceiling probes for the cuda backend's roofline: FP32 FFMA peak and device copy
// bandwidth, measured on the current GPU (never datasheet numbers).
#pragma once

namespace fastgemm {
namespace cuda {

double measure_ffma_peak_gflops();   // independent FFMA chains in registers, all SMs
double measure_copy_bandwidth_gbs(); // device-to-device copy, bytes read + written

}  // namespace cuda
}  // namespace fastgemm
