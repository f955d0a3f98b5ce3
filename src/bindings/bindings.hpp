// Bindings beyond module.cpp's, each in its own file with its own bind_<name> function:
// backend-specific ones (device-array interop, the emulator's entry points), added by
// the backends that were built, and the benchmark orchestration (benchmark.cpp), which
// needs NativeBenchResult registered first.
#pragma once

#include <pybind11/pybind11.h>

void bind_backend_extras(pybind11::module_& m);
void bind_benchmark(pybind11::module_& m);

namespace fastgemm::bindings {
// fastgemm._fastgemm.sgemm_call, the common-case half of fastgemm.sgemm (sgemm_call.cpp).
void bind_sgemm_call(pybind11::module_& m);
}  // namespace fastgemm::bindings
