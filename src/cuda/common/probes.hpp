// Ceiling probes for the cuda backend's roofline: FP32 FFMA peak, device copy bandwidth and
// (Hopper) the INT8 tensor-core rate, measured on the current GPU (never datasheet numbers).
#pragma once

namespace fastgemm {
namespace cuda {

double measure_ffma_peak_gflops();   // independent FFMA chains in registers, all SMs
double measure_copy_bandwidth_gbs(); // device-to-device copy, bytes read + written
// wgmma m64n256k32 s8 x s8 from shared memory on every SM, in int8 GOP/s (2 per
// multiply-add): the ceiling of rung 15 (ozaki_probe.cu, sm_90a; call only where
// device_is_sm90()).
double measure_int8_tensor_peak_gops();

}  // namespace cuda
}  // namespace fastgemm
