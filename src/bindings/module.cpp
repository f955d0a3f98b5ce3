// fastgemm._fastgemm: the pybind11 face of the core. It converts numpy arrays to
// (pointer, leading dimension) views, releases the GIL around every native call, and
// turns core errors into the Python classes of fastgemm.errors. Layout decisions
// (Fortran order, strided views, aliasing) are made in python/fastgemm/api.py; this
// layer checks them again, so a wrong view can raise but never read out of bounds.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>

#include "core/selection.hpp"
#include "core/build_info.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"
#include "core/runner.hpp"
#include "core/threads.hpp"
#include "bindings/bindings.hpp"
#include "bindings/gil.hpp"
#include "bindings/python_errors.hpp"

namespace py = pybind11;
using namespace fastgemm;
using fastgemm::bindings::interruptible;
using fastgemm::bindings::without_gil;

namespace {

// A 2-D float32 array with unit inner stride, as (pointer, rows, cols, ld).
struct MatrixView {
    float* data;
    int64_t rows, cols, ld;
};

MatrixView view_of(const py::array& a, const char* name, bool writable) {
    if (!py::isinstance<py::array_t<float>>(a) || a.dtype().kind() != 'f' || a.itemsize() != 4) {
        throw DTypeError(std::string(name) + " must be float32, got " +
                         std::string(py::str(a.dtype())));
    }
    if (a.ndim() != 2) {
        throw ShapeError(std::string(name) + " must be 2-D, got " + std::to_string(a.ndim()) + "-D");
    }
    if (writable && !a.writeable()) {
        throw ShapeError(std::string(name) + " is read-only; pass a writable array");
    }
    int64_t rows = a.shape(0), cols = a.shape(1);
    int64_t s0 = a.strides(0), s1 = a.strides(1);
    if (rows == 0 || cols == 0) {  // nothing is read or written
        return {static_cast<float*>(const_cast<void*>(a.data())), rows, cols, std::max<int64_t>(1, cols)};
    }
    if (reinterpret_cast<std::uintptr_t>(a.data()) % alignof(float) != 0) {
        throw ShapeError(std::string(name) + " is not aligned to 4 bytes (internal layout error: "
                                             "fastgemm.sgemm copies unaligned arrays)");
    }
    if (cols > 1 && s1 != 4) {
        throw ShapeError(std::string(name) + " needs unit stride along its rows (internal layout error)");
    }
    int64_t ld = std::max<int64_t>(1, cols);
    if (rows > 1) {
        if (s0 <= 0 || s0 % 4 != 0 || s0 / 4 < cols) {
            throw ShapeError(std::string(name) + " has a row stride that is not a positive multiple "
                                                 "of the row length (internal layout error)");
        }
        ld = s0 / 4;
    }
    return {static_cast<float*>(const_cast<void*>(a.data())), rows, cols, ld};
}

struct PreparedLaunch {
    const Kernel* kernel = nullptr;
    std::vector<float> C;
    std::unique_ptr<Launch> launch;
};

py::dict params_dict(const KernelInfo& info) {
    py::dict d;
    for (const auto& kv : info.params) d[py::str(kv.first)] = kv.second;
    return d;
}

std::vector<std::string> constraint_texts(const KernelInfo& info) {
    std::vector<std::string> out;
    for (const auto& c : info.constraints) out.push_back(c.describe());
    return out;
}

Problem problem_from(int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha, float beta) {
    return Problem::dense(M, N, K, ta, tb, alpha, beta);
}

const Kernel& resolve_kernel(const std::string& backend, const std::string& kernel, const Problem& p) {
    if (kernel.empty() || kernel == "auto") return select_kernel(Registry::global().resolve_backend(backend).name(), p);
    return Registry::global().resolve_kernel(backend, kernel);
}

// Lets Ctrl-C stop a long native benchmark: checked between iterations.
bool python_interrupt_pending() {
    if (fastgemm::bindings::interpreter_finalizing()) return true;  // stop; the thread parks
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    return false;
}

}  // namespace

PYBIND11_MODULE(_fastgemm, m) {
    m.doc() = "fastgemm native core (see the fastgemm package for the documented API)";
    fastgemm::bindings::register_error_translator();
    // Looked up here, while the importing thread is the only one in the module: a first
    // lookup from a call could be under way in one thread while another forks.
    (void)fastgemm::bindings::ctrl_c_raises_keyboard_interrupt();

    py::class_<KernelInfo>(m, "KernelInfo")
        .def_readonly("name", &KernelInfo::name)
        .def_readonly("backend", &KernelInfo::backend)
        .def_readonly("ladder_step", &KernelInfo::ladder_step)
        .def_readonly("baseline", &KernelInfo::baseline)
        .def_property_readonly("precision", [](const KernelInfo& k) { return to_string(k.precision); })
        .def_property_readonly("constraints", &constraint_texts)
        .def_property_readonly("params", &params_dict)
        .def_readonly("source", &KernelInfo::source)
        .def_readonly("description", &KernelInfo::description)
        .def_readonly("flags", &KernelInfo::flags)
        .def_readonly("isa", &KernelInfo::isa)
        .def_readonly("bench_flops_cap", &KernelInfo::bench_flops_cap)
        .def_readonly("auto_candidate", &KernelInfo::auto_candidate)
        .def("accepts",
             [](const KernelInfo& k, int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha, float beta) {
                 // A problem no kernel can run (a negative dimension) is an error, not "no".
                 const Problem p = problem_from(M, N, K, ta, tb, alpha, beta);
                 p.validate();
                 return k.accepts(p);
             },
             py::arg("M"), py::arg("N"), py::arg("K"), py::arg("trans_a") = false,
             py::arg("trans_b") = false, py::arg("alpha") = 1.0f, py::arg("beta") = 0.0f)
        .def("check",
             [](const KernelInfo& k, int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha, float beta) {
                 const Problem p = problem_from(M, N, K, ta, tb, alpha, beta);
                 p.validate();
                 k.check(p);  // ConstraintError naming the kernel, the rule and the problem
             },
             py::arg("M"), py::arg("N"), py::arg("K"), py::arg("trans_a") = false,
             py::arg("trans_b") = false, py::arg("alpha") = 1.0f, py::arg("beta") = 0.0f)
        .def("__repr__", [](const KernelInfo& k) {
            return "<KernelInfo " + k.backend + "/" + k.name + " step " + std::to_string(k.ladder_step) +
                   " " + to_string(k.precision) + (k.baseline ? " baseline" : "") + ">";
        });

    py::class_<BackendStatus>(m, "BackendStatus")
        .def_readonly("name", &BackendStatus::name)
        .def_readonly("available", &BackendStatus::available)
        .def_readonly("reason", &BackendStatus::reason)
        .def_readonly("device", &BackendStatus::device)
        .def_property_readonly("properties", [](const BackendStatus& s) {
            py::dict d;
            for (const auto& kv : s.properties) d[py::str(kv.first)] = kv.second;
            return d;
        })
        .def("__repr__", [](const BackendStatus& s) {
            return "<Backend " + s.name + (s.available ? " available: " + s.device : " unavailable: " + s.reason) + ">";
        });

    py::class_<Verification>(m, "Verification")
        .def_readonly("max_abs_diff", &Verification::max_abs_diff)
        .def_readonly("rel_err", &Verification::rel_err)
        .def_readonly("tolerance", &Verification::tolerance)
        .def_readonly("checksum", &Verification::checksum)
        .def_readonly("rows_checked", &Verification::rows_checked)
        .def_readonly("all_finite", &Verification::all_finite)
        .def_readonly("unwritten", &Verification::unwritten)
        .def_readonly("ieee_elements", &Verification::ieee_elements)
        .def_readonly("ieee_mismatches", &Verification::ieee_mismatches)
        .def_readonly("passed", &Verification::passed);

    py::class_<BenchResult>(m, "NativeBenchResult")
        .def_readonly("kernel", &BenchResult::kernel)
        .def_readonly("backend", &BenchResult::backend)
        .def_property_readonly("M", [](const BenchResult& r) { return r.problem.M; })
        .def_property_readonly("N", [](const BenchResult& r) { return r.problem.N; })
        .def_property_readonly("K", [](const BenchResult& r) { return r.problem.K; })
        .def_readonly("device_s", &BenchResult::device_s)
        .def_readonly("host_s", &BenchResult::host_s)
        .def_readonly("prep_s", &BenchResult::prep_s)
        .def_readonly("threads", &BenchResult::threads)
        .def_readonly("verification", &BenchResult::verification)
        .def_readonly("verified", &BenchResult::verified)
        .def_readonly("truncated", &BenchResult::truncated);

    py::class_<Ceilings>(m, "Ceilings")
        .def_readonly("peak_gflops", &Ceilings::peak_gflops)
        .def_readonly("bandwidth_gbs", &Ceilings::bandwidth_gbs)
        .def_readonly("peak_probe", &Ceilings::peak_probe)
        .def_readonly("bandwidth_probe", &Ceilings::bandwidth_probe)
        .def_readonly("matrix_peaks_gops", &Ceilings::matrix_peaks_gops);

    // One kernel bound to a Bench's operands: each step() is one native iteration, the
    // unit that pytest-benchmark's device clock (fastgemm.harness) counts.
    py::class_<PreparedLaunch>(m, "PreparedLaunch")
        .def("step", [](PreparedLaunch& l) {
            const Timing t = without_gil([&] { return l.launch->run(); });
            return py::make_tuple(t.device_s, t.host_s, t.prep_s);
        })
        .def("finish", [](PreparedLaunch& l) { without_gil([&] { l.launch->finish(); }); })
        .def_property_readonly("kernel", [](const PreparedLaunch& l) { return l.kernel->info(); });

    py::class_<Bench>(m, "Bench")
        .def(py::init([](int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha, float beta,
                         uint64_t seed) {
                 return without_gil(
                     [&] { return std::make_unique<Bench>(problem_from(M, N, K, ta, tb, alpha, beta), seed); });
             }),
             py::arg("M"), py::arg("N"), py::arg("K"), py::arg("trans_a") = false,
             py::arg("trans_b") = false, py::arg("alpha") = 1.0f, py::arg("beta") = 0.0f,
             py::arg("seed") = 0x5eed)
        .def("run",
             [](Bench& b, const std::string& backend, const std::string& kernel, int warmup, int iters,
                bool verify, double max_seconds) {
                 const Kernel& k = resolve_kernel(backend, kernel, b.problem());
                 BenchOptions opts;
                 opts.warmup = warmup;
                 opts.iters = iters;
                 opts.verify = verify;
                 opts.max_seconds = max_seconds;
                 opts.should_stop = python_interrupt_pending;
                 return interruptible([&] { return b.run(k, opts); });
             },
             py::arg("backend"), py::arg("kernel"), py::arg("warmup") = 3, py::arg("iters") = 10,
             py::arg("verify") = true, py::arg("max_seconds") = 0.0)
        .def("output", [](const Bench& b) {
            // The latest run's C as an M x N array (a copy, so later runs don't change it).
            const Problem& p = b.problem();
            py::array_t<float> out({p.M, p.N});
            const auto& src = b.last_output();
            auto w = out.mutable_unchecked<2>();
            for (int64_t i = 0; i < p.M; ++i)
                for (int64_t j = 0; j < p.N; ++j) w(i, j) = src[size_t(i * p.ldc + j)];
            return out;
        })
        .def_property_readonly("reference_rows", &Bench::reference_rows)
        .def("prepare",
             [](Bench& b, const std::string& backend, const std::string& kernel) {
                 auto l = std::make_unique<PreparedLaunch>();
                 l->kernel = &resolve_kernel(backend, kernel, b.problem());
                 l->C = b.C_initial();
                 without_gil([&] { l->launch = l->kernel->bind(b.problem(), b.A().data(), b.B().data(), l->C.data()); });
                 return l;
             },
             py::keep_alive<0, 1>(), py::arg("backend"), py::arg("kernel"));

    m.def("backends", [] {
        std::vector<BackendStatus> out;
        for (const Backend* b : Registry::global().backends()) out.push_back(b->status());
        return out;
    });
    m.def("measure_ceilings", [](const std::string& backend) {
        const Backend& b = Registry::global().resolve_backend(backend);
        return without_gil([&] { return b.measure_ceilings(); });
    }, py::arg("backend"));
    m.def("best_backend", [] { return Registry::global().best_backend().name(); });
    m.def("kernels", [](const std::string& backend) {
        if (!backend.empty()) Registry::global().backend(backend);  // unknown -> NotFoundError
        std::vector<KernelInfo> out;
        for (const Kernel* k : Registry::global().kernels(backend)) out.push_back(k->info());
        return out;
    }, py::arg("backend") = "");
    m.def("kernel_info", [](const std::string& backend, const std::string& name) {
        return Registry::global().kernel(backend, name).info();
    });
    m.def("select_kernel",
          [](const std::string& backend, int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha,
             float beta, const std::string& precision) {
              Problem p = problem_from(M, N, K, ta, tb, alpha, beta);
              const Accuracy accuracy = parse_accuracy(precision);
              return interruptible([&] { return select_kernel(backend, p, accuracy).info(); });
          },
          py::arg("backend"), py::arg("M"), py::arg("N"), py::arg("K"), py::arg("trans_a") = false,
          py::arg("trans_b") = false, py::arg("alpha") = 1.0f, py::arg("beta") = 0.0f,
          py::arg("precision") = "fp32",
          "KernelInfo of the kernel kernel=\"auto\" runs for this problem (tuning it without operands).");

    m.def("gemm",
          [](const std::string& backend, const std::string& kernel, const py::array& A, const py::array& B,
             const py::array& C, bool trans_a, bool trans_b, float alpha, float beta, const std::string& precision) {
              const Accuracy accuracy = parse_accuracy(precision);
              MatrixView c = view_of(C, "C", true);
              if (c.rows == 0 || c.cols == 0) {
                  // Nothing to compute, but the same checks as a real call: an unknown
                  // kernel or a violated constraint raises for an empty C too. A and B
                  // may be any layout here (nothing is read), so only their shapes count.
                  if (A.ndim() != 2 || B.ndim() != 2) throw ShapeError("A and B must be 2-D");
                  Problem p = Problem::dense(c.rows, c.cols, trans_a ? A.shape(0) : A.shape(1), trans_a,
                                             trans_b, alpha, beta);
                  if (p.a_rows() != A.shape(0) || p.b_rows() != B.shape(0) || p.b_cols() != B.shape(1)) {
                      throw ShapeError("operand shapes do not match the empty output " +
                                       std::to_string(p.M) + "x" + std::to_string(p.N));
                  }
                  p.validate();
                  if (kernel.empty() || kernel == "auto") {
                      if (backend != "auto") Registry::global().resolve_backend(backend);  // unknown/unavailable raise
                      return std::string();
                  }
                  const Kernel& k = resolve_kernel(backend, kernel, p);
                  k.info().check(p);
                  return k.info().name;
              }
              MatrixView a = view_of(A, "A", false), b = view_of(B, "B", false);
              Problem p;
              p.trans_a = trans_a, p.trans_b = trans_b, p.alpha = alpha, p.beta = beta;
              p.M = c.rows, p.N = c.cols;
              p.K = trans_a ? a.rows : a.cols;
              p.lda = a.ld, p.ldb = b.ld, p.ldc = c.ld;
              if (p.a_rows() != a.rows || p.b_rows() != b.rows || p.b_cols() != b.cols) {
                  throw ShapeError("operand shapes do not match: op(A) is " + std::to_string(p.M) + "x" +
                                   std::to_string(p.K) + ", op(B) must be " + std::to_string(p.K) + "x" +
                                   std::to_string(p.N));
              }
              const bool automatic = kernel.empty() || kernel == "auto";
              const Kernel* named = automatic ? nullptr : &Registry::global().resolve_kernel(backend, kernel);
              // alpha == 0 or K == 0: run_once is BLAS's quick return (C = beta C).
              const Kernel* ran = interruptible([&] {
                  const Kernel* k = named;
                  if (k) k->run_once(p, a.data, b.data, c.data);
                  else k = &run_selected(backend, p, accuracy, a.data, b.data, c.data);
                  return k;
              });
              return ran->info().name;
          },
          py::arg("backend"), py::arg("kernel"), py::arg("A"), py::arg("B"), py::arg("C"),
          py::arg("trans_a"), py::arg("trans_b"), py::arg("alpha"), py::arg("beta"), py::arg("precision") = "fp32",
          "The general path of fastgemm.sgemm: C = alpha * op(A) op(B) + beta * C on unit-inner-stride views. "
          "Returns the name of the kernel whose result C holds.");

    m.attr("max_threads") = kMaxThreads;
    m.def("get_num_threads", &get_num_threads);
    m.def("set_num_threads", &set_num_threads, py::arg("n"));
    m.def("available_cores", &available_cores);
    m.def("tolerance_for", [](const std::string& precision, int64_t K) {
        return tolerance_for(parse_precision(precision), K);
    }, py::arg("precision"), py::arg("K"));
    m.def("tuning_table", &tuning_table);
    py::class_<ProvisionalChoice>(m, "ProvisionalChoice")
        .def(py::init([](int64_t calls_left, std::map<std::string, double> rates) {
                 ProvisionalChoice p;
                 p.calls_left = calls_left, p.rates = std::move(rates);
                 return p;
             }),
             py::arg("calls_left"), py::arg("rates"))
        .def_readonly("calls_left", &ProvisionalChoice::calls_left)
        .def_readonly("rates", &ProvisionalChoice::rates);
    m.def("load_tuning_table", &load_tuning_table, py::arg("table"),
          py::arg("provisional") = std::map<std::string, ProvisionalChoice>{},
          "Adds validated entries to the tuning table (those in `provisional` awaiting their second opinion); "
          "returns how many were discarded.");
    m.def("provisional_choices", &provisional_choices,
          "shape class -> ProvisionalChoice: the choices still awaiting their second opinion.");
    m.def("clear_tuning_table", &clear_tuning_table);
    m.def("tuning_rejections", &tuning_rejections);
    m.def("tuning_records", [] {
        py::list out;
        for (const TuningRecord& r : tuning_records()) {
            py::dict seconds;
            for (const auto& [name, s] : r.seconds) seconds[py::str(name)] = s;
            out.append(py::dict(py::arg("shape_class") = r.shape_class, py::arg("winner") = r.winner,
                                py::arg("seconds") = seconds, py::arg("second_opinion") = r.second_opinion));
        }
        return out;
    }, "The tunings of this process, most recent last: shape class, winner, each candidate's best time, "
       "and whether it was a class's second opinion.");
    m.def("autotune_enabled", &autotune_enabled);
    m.def("shape_class",
          [](const std::string& backend, int64_t M, int64_t N, int64_t K, bool ta, bool tb, float beta,
             const std::string& precision) {
              return shape_class(backend, problem_from(M, N, K, ta, tb, 1.0f, beta), parse_accuracy(precision));
          },
          py::arg("backend"), py::arg("M"), py::arg("N"), py::arg("K"), py::arg("trans_a") = false,
          py::arg("trans_b") = false, py::arg("beta") = 0.0f, py::arg("precision") = "fp32");
    m.def("resolve_kernel",
          [](const std::string& backend, const std::string& name) {
              return Registry::global().resolve_kernel(backend, name).info();
          },
          py::arg("backend"), py::arg("kernel"),
          "KernelInfo of a kernel by name; backend 'auto' picks the best available backend that has it.");

    py::dict build;
    build["version"] = version();
    build["compiler"] = compiler();
    build["ladder_flags"] = build_flags();
    build["cpu_model"] = cpu_model();
    build["cpu_isa"] = cpu_isa();
    build["build_type"] = build_type();
    build["cxx_flags"] = cxx_flags();
    build["commit"] = source_commit();
    build["describe"] = source_describe();
    build["dirty"] = source_dirty();
    build["pybind11"] = std::to_string(PYBIND11_VERSION_MAJOR) + "." + std::to_string(PYBIND11_VERSION_MINOR) +
                        "." + std::to_string(PYBIND11_VERSION_PATCH);
    m.attr("build_info") = build;
    m.attr("__version__") = version();

    bind_benchmark(m);
    bind_backend_extras(m);
    fastgemm::bindings::bind_sgemm_call(m);
}
