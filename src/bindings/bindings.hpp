// Backend-specific bindings (device-array interop, the emulator's entry points) are
// added by the backends that were built; each defines its own bind_<name> function.
#pragma once

#include <pybind11/pybind11.h>

void bind_backend_extras(pybind11::module_& m);

namespace fastgemm::bindings {
// fastgemm._fastgemm.sgemm_call, the common-case half of fastgemm.sgemm (sgemm_call.cpp).
void bind_sgemm_call(pybind11::module_& m);
}  // namespace fastgemm::bindings
