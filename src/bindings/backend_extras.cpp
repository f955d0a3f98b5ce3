#include "bindings/bindings.hpp"

#if defined(FASTGEMM_WITH_CUDA)
void bind_cuda(pybind11::module_& m);
#endif
#if defined(FASTGEMM_WITH_EMU)
void bind_emu(pybind11::module_& m);
#endif
#if defined(FASTGEMM_WITH_CPU_PACKED)
void bind_cpu_packed(pybind11::module_& m);
#endif

void bind_backend_extras(pybind11::module_& m) {
    m.attr("built_with_cuda") = bool(
#if defined(FASTGEMM_WITH_CUDA)
        true
#else
        false
#endif
    );
#if defined(FASTGEMM_WITH_CUDA)
    bind_cuda(m);
#endif
#if defined(FASTGEMM_WITH_EMU)
    bind_emu(m);
#endif
#if defined(FASTGEMM_WITH_CPU_PACKED)
    bind_cpu_packed(m);
#endif
}
