// The Python face of the core's one baseline-then-kernel path (fastgemm/comparison.hpp):
// BaselineComparison for a ladder of kernels against one baseline run, benchmark() for
// one kernel, and the measurement helpers the CLI checks arguments and the machine with. Every native
// call runs without the GIL inside an InterruptScope, as the other bindings do.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "bindings/bindings.hpp"
#include "bindings/gil.hpp"
#include "core/errors.hpp"
#include "core/interrupt.hpp"
#include "core/registry.hpp"
#include "core/selection.hpp"
#include "fastgemm/comparison.hpp"
#include "fastgemm/contention.hpp"

namespace py = pybind11;
using namespace fastgemm;
using fastgemm::bindings::interruptible;

namespace {

const Kernel& resolve_kernel(const std::string& backend, const std::string& kernel, const Problem& p) {
    if (kernel.empty() || kernel == "auto") return select_kernel(Registry::global().resolve_backend(backend).name(), p);
    return Registry::global().resolve_kernel(backend, kernel);
}

const Kernel* resolve_baseline(const std::string& backend, const std::string& name) {
    if (name.empty()) return nullptr;
    const Backend& b = Registry::global().resolve_backend(backend);
    if (name != "auto") return &Registry::global().kernel(b.name(), name);
    for (const Kernel* k : Registry::global().kernels(b.name())) {
        if (k->info().baseline) return k;
    }
    throw NotFoundError("backend '" + b.name() + "' has no baseline kernel");
}

// A Python callable (kernel name, measured seconds) -> seconds as a TimeSource. The
// callable is held by a shared pointer whose last owner drops it under the GIL, since
// copies of the TimeSource are made and destroyed while the GIL is released.
TimeSource time_source_from(const py::object& fn) {
    if (fn.is_none()) return {};
    std::shared_ptr<py::object> held(new py::object(fn), [](py::object* o) {
        py::gil_scoped_acquire gil;
        delete o;
    });
    return [held](const KernelInfo& k, double measured_s) {
        py::gil_scoped_acquire gil;
        return (*held)(k.name, measured_s).cast<double>();
    };
}

BenchOptions options_from(int warmup, int iters, bool verify, double max_seconds, const py::object& clock) {
    BenchOptions o;
    o.warmup = warmup;
    o.iters = iters;
    o.verify = verify;
    o.max_seconds = max_seconds;
    o.time_source = time_source_from(clock);
    return o;
}

}  // namespace

void bind_benchmark(py::module_& m) {
    py::class_<MeasurementPolicy>(m, "MeasurementPolicy")
        .def(py::init([](double spread_limit, double drift_limit, int check_iters, int interleaved_rounds,
                         double settle_seconds, bool watch_contention) {
                 MeasurementPolicy p;
                 p.spread_limit = spread_limit;
                 p.drift_limit = drift_limit;
                 p.check_iters = check_iters;
                 p.interleaved_rounds = interleaved_rounds;
                 p.settle_seconds = settle_seconds;
                 p.watch_contention = watch_contention;
                 return p;
             }),
             py::arg("spread_limit") = MeasurementPolicy{}.spread_limit,
             py::arg("drift_limit") = MeasurementPolicy{}.drift_limit,
             py::arg("check_iters") = MeasurementPolicy{}.check_iters,
             py::arg("interleaved_rounds") = MeasurementPolicy{}.interleaved_rounds,
             py::arg("settle_seconds") = MeasurementPolicy{}.settle_seconds,
             py::arg("watch_contention") = MeasurementPolicy{}.watch_contention)
        .def_readonly("spread_limit", &MeasurementPolicy::spread_limit)
        .def_readonly("drift_limit", &MeasurementPolicy::drift_limit)
        .def_readonly("check_iters", &MeasurementPolicy::check_iters)
        .def_readonly("interleaved_rounds", &MeasurementPolicy::interleaved_rounds)
        .def_readonly("settle_seconds", &MeasurementPolicy::settle_seconds)
        .def_readonly("watch_contention", &MeasurementPolicy::watch_contention);

    py::class_<Interleaved>(m, "Interleaved")
        .def_readonly("baseline_s", &Interleaved::baseline_s)
        .def_readonly("kernel_s", &Interleaved::kernel_s)
        .def_readonly("ratio", &Interleaved::ratio)
        .def_readonly("spread", &Interleaved::spread);

    py::class_<Timings, BenchResult>(m, "Timings")
        .def_property_readonly("precision", [](const Timings& t) { return to_string(t.precision); })
        .def_readonly("baseline", &Timings::baseline)
        .def_readonly("ratio", &Timings::ratio)
        .def_readonly("diff_vs_baseline", &Timings::diff_vs_baseline)
        .def_readonly("block_ratio", &Timings::block_ratio)
        .def_readonly("baseline_check", &Timings::baseline_check)
        .def_readonly("kernel_check", &Timings::kernel_check)
        .def_readonly("baseline_drift", &Timings::baseline_drift)
        .def_readonly("kernel_drift", &Timings::kernel_drift)
        .def_readonly("others_before", &Timings::others_before)
        .def_readonly("others_after", &Timings::others_after)
        .def_readonly("interleaved", &Timings::interleaved)
        .def_readonly("flags", &Timings::flags)
        .def_readonly("ratio_trusted", &Timings::ratio_trusted);

    py::class_<BaselineComparison>(m, "BaselineComparison")
        .def(py::init([](Bench& bench, const std::string& backend, const std::string& baseline, int warmup,
                         int iters, bool verify, double max_seconds, const MeasurementPolicy& policy,
                         const py::object& clock) {
                 const Kernel* base = resolve_baseline(backend, baseline);
                 BenchOptions o = options_from(warmup, iters, verify, max_seconds, clock);
                 return interruptible([&] { return std::make_unique<BaselineComparison>(bench, base, o, policy); });
             }),
             py::keep_alive<1, 2>(), py::arg("bench"), py::arg("backend"), py::arg("baseline") = "",
             py::arg("warmup") = 3, py::arg("iters") = 10, py::arg("verify") = true, py::arg("max_seconds") = 0.0,
             py::arg("policy") = MeasurementPolicy{}, py::arg("clock") = py::none())
        .def_property_readonly("baseline", &BaselineComparison::baseline_row)
        .def("measure",
             [](BaselineComparison& c, const std::string& backend, const std::string& kernel) {
                 const Kernel& k = resolve_kernel(backend, kernel, c.problem());
                 return interruptible([&] { return c.measure(k); });
             },
             py::arg("backend"), py::arg("kernel"));

    m.def("benchmark",
          [](Bench& bench, const std::string& backend, const std::string& kernel, const std::string& baseline,
             int warmup, int iters, bool verify, double max_seconds, const MeasurementPolicy& policy,
             const py::object& clock) {
              const Kernel& k = resolve_kernel(backend, kernel, bench.problem());
              const Kernel* base = resolve_baseline(backend, baseline);
              BenchOptions o = options_from(warmup, iters, verify, max_seconds, clock);
              return interruptible([&] { return benchmark_on(bench, k, base, o, policy); });
          },
          py::arg("bench"), py::arg("backend"), py::arg("kernel"), py::arg("baseline") = "", py::arg("warmup") = 3,
          py::arg("iters") = 10, py::arg("verify") = true, py::arg("max_seconds") = 0.0,
          py::arg("policy") = MeasurementPolicy{}, py::arg("clock") = py::none());

    m.def("settle_after_baseline", [](const std::string& backend, const std::string& baseline) {
        const Kernel* base = resolve_baseline(backend, baseline.empty() ? "auto" : baseline);
        interruptible([&] {
            settle_after_baseline(base->info());
            return 0;
        });
    }, py::arg("backend"), py::arg("baseline") = "auto");
    m.def("relative_spread", &relative_spread, py::arg("samples"));
    m.def("other_runnable_threads", &other_runnable_threads);
    m.def("bench_bytes", [](int64_t M, int64_t N, int64_t K) { return bench_bytes(Problem::dense(M, N, K)); },
          py::arg("M"), py::arg("N"), py::arg("K"));
    m.def("available_memory_bytes", &available_memory_bytes);
}
