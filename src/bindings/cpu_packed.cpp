// Python bindings of the packed CPU kernels' machine queries (the kernels themselves go
// through the generic registry bindings): which SIMD path runs, and the FMA peak that
// "% of peak" figures divide by.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "cpu/packed/blocking.hpp"
#include "cpu/packed/cpu_isa.hpp"
#include "bindings/gil.hpp"
#include "cpu/peak_probe.hpp"

namespace py = pybind11;

void bind_cpu_packed(py::module_& m) {
    using namespace fastgemm;
    m.def("cpu_isa_name", &cpu_isa_name,
          "SIMD path of the packed CPU kernels, e.g. 'avx512 (12x32)'");
    m.def("cpu_isas", [] {
        std::vector<std::string> names;
        for (CpuIsa isa : supported_cpu_isas()) names.push_back(to_string(isa));
        return names;
    }, "Instruction sets this CPU and build can run, best first");
    m.def("measure_fma_peak_gflops",
          [](int threads) { return bindings::without_gil([&] { return measure_fma_peak_gflops(threads); }); },
          py::arg("threads") = 0,
          "Measured FP32 FMA throughput in GFLOP/s with `threads` threads (0: get_num_threads())");
    m.def("fma_peak_isa", &fma_peak_isa, "Instruction set the FMA peak probe used");
    m.def("cpu_cache_sizes", [] {
        CacheSizes c = detect_cache_sizes();
        py::dict d;
        d["l1d"] = c.l1d;
        d["l2"] = c.l2;
        d["l3"] = c.l3;
        return d;
    }, "Cache sizes (bytes) the packed kernels' blocking is derived from");
}
