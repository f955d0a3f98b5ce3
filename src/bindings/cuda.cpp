// Python entry point of the cuda backend for arrays already on the GPU. The generic
// numpy path (fastgemm.sgemm on host arrays) goes through the registry like every
// backend; python/fastgemm/cuda.py turns CuPy / PyTorch / DLPack arrays into the raw
// pointers this function takes.
//
// Written against the CPython API (METH_FASTCALL) rather than pybind11: a small
// product on the GPU costs about ten microseconds of host time in all, and converting
// seventeen arguments through pybind11's casters is a measurable part of that.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "bindings/gil.hpp"
#include "bindings/python_errors.hpp"
#include "cuda/interop.hpp"

namespace py = pybind11;

namespace fastgemm::bindings {
namespace {

// cuda_sgemm's parameters, in order; the last three have defaults.
constexpr const char* kParams[] = {"kernel", "M",    "N",       "K",       "A",     "lda",   "B",      "ldb",
                                   "C",      "ldc",  "trans_a", "trans_b", "alpha", "beta",  "stream", "device",
                                   "precision"};
constexpr int kCount = int(sizeof(kParams) / sizeof(kParams[0]));
constexpr int kRequired = 14;

PyObject* type_error(const char* param, const char* want, PyObject* got) {
    PyErr_Format(PyExc_TypeError, "cuda_sgemm: %s must be %s, not %.100s", param, want, Py_TYPE(got)->tp_name);
    return nullptr;
}

bool as_int(PyObject* o, const char* param, int64_t& out) {
    if (!PyLong_Check(o) || PyBool_Check(o)) return type_error(param, "an int", o), false;
    const long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) return false;
    out = v;
    return true;
}

bool as_pointer(PyObject* o, const char* param, uintptr_t& out) {
    if (!PyLong_Check(o) || PyBool_Check(o)) return type_error(param, "an int (a device address)", o), false;
    const unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return false;
    out = uintptr_t(v);
    return true;
}

bool as_bool(PyObject* o, const char* param, bool& out) {
    if (!PyBool_Check(o)) return type_error(param, "a bool", o), false;
    out = o == Py_True;
    return true;
}

bool as_float(PyObject* o, const char* param, float& out) {
    if (!PyFloat_Check(o) && !(PyLong_Check(o) && !PyBool_Check(o))) return type_error(param, "a float", o), false;
    const double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) return false;
    out = float(v);
    return true;
}

bool as_string(PyObject* o, const char* param, std::string& out) {
    if (!PyUnicode_Check(o)) return type_error(param, "a str", o), false;
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(o, &n);
    if (!s) return false;
    out.assign(s, size_t(n));
    return true;
}

// The arguments by position, keywords matched to their parameters; nullptr where a
// defaulted one was left out. False (with a TypeError set) for a missing, repeated or
// unknown argument.
bool bind_arguments(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject* (&slot)[kCount]) {
    for (PyObject*& s : slot) s = nullptr;
    if (nargs > kCount) {
        PyErr_Format(PyExc_TypeError, "cuda_sgemm takes at most %d arguments (%zd given)", kCount, nargs);
        return false;
    }
    for (Py_ssize_t i = 0; i < nargs; ++i) slot[i] = args[i];
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; ++j) {
        const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, j));
        if (!key) return false;
        int at = -1;
        for (int i = 0; i < kCount; ++i)
            if (std::string(kParams[i]) == key) at = i;
        if (at < 0) {
            PyErr_Format(PyExc_TypeError, "cuda_sgemm got an unexpected keyword argument '%s'", key);
            return false;
        }
        if (slot[at]) {
            PyErr_Format(PyExc_TypeError, "cuda_sgemm got multiple values for argument '%s'", key);
            return false;
        }
        slot[at] = args[nargs + j];
    }
    for (int i = 0; i < kRequired; ++i)
        if (!slot[i]) {
            PyErr_Format(PyExc_TypeError, "cuda_sgemm missing required argument '%s'", kParams[i]);
            return false;
        }
    return true;
}

PyObject* cuda_sgemm(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    PyObject* a[kCount];
    if (!bind_arguments(args, nargs, kwnames, a)) return nullptr;
    cuda::DeviceOperands d;
    Problem& p = d.problem;
    cuda::DeviceCall call;
    uintptr_t A = 0, B = 0, C = 0, stream = 0;
    int64_t device = -1;
    std::string precision = "fp32";
    if (!as_string(a[0], "kernel", call.kernel) || !as_int(a[1], "M", p.M) || !as_int(a[2], "N", p.N) ||
        !as_int(a[3], "K", p.K) || !as_pointer(a[4], "A", A) || !as_int(a[5], "lda", p.lda) ||
        !as_pointer(a[6], "B", B) || !as_int(a[7], "ldb", p.ldb) || !as_pointer(a[8], "C", C) ||
        !as_int(a[9], "ldc", p.ldc) || !as_bool(a[10], "trans_a", p.trans_a) ||
        !as_bool(a[11], "trans_b", p.trans_b) || !as_float(a[12], "alpha", p.alpha) ||
        !as_float(a[13], "beta", p.beta) || (a[14] && !as_pointer(a[14], "stream", stream)) ||
        (a[15] && !as_int(a[15], "device", device)) || (a[16] && !as_string(a[16], "precision", precision)))
        return nullptr;
    if (device < -1 || device > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "cuda_sgemm: device must be -1 (the current one) or a device index, not %lld",
                     static_cast<long long>(device));
        return nullptr;
    }
    d.A = reinterpret_cast<const float*>(A);
    d.B = reinterpret_cast<const float*>(B);
    d.C = reinterpret_cast<float*>(C);
    call.stream = stream;
    call.device = int(device);
    std::string ran;
    try {
        call.accuracy = parse_accuracy(precision);
        // Queuing work takes microseconds, but the first call of a shape class tunes,
        // which takes milliseconds: other Python threads run meanwhile either way.
        without_gil([&] { ran = cuda::run_device_gemm(d, call); });
#if defined(__GLIBCXX__)
    } catch (abi::__forced_unwind&) {
        throw;  // this thread is being ended (see gil.hpp): never stop the unwind here
#endif
    } catch (...) {
        return static_cast<PyObject*>(set_python_error(std::current_exception()));
    }
    return PyUnicode_FromStringAndSize(ran.data(), Py_ssize_t(ran.size()));
}

PyMethodDef kMethods[] = {
    {"cuda_sgemm", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&cuda_sgemm)),
     METH_FASTCALL | METH_KEYWORDS,
     "cuda_sgemm(kernel, M, N, K, A, lda, B, ldb, C, ldc, trans_a, trans_b, alpha, beta, stream=0, device=-1, "
     "precision='fp32')\n--\n\n"
     "C = alpha * op(A) op(B) + beta * C on device pointers (row-major, leading dimensions in elements), "
     "queued on `stream` without synchronising. kernel='auto' picks with the core's selection policy "
     "within `precision` (fp32: FP32-accurate, strict: FP32 arithmetic only, tf32: relaxed). Returns the "
     "name of the kernel that ran."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace
}  // namespace fastgemm::bindings

void bind_cuda(py::module_& m) {
    if (PyModule_AddFunctions(m.ptr(), fastgemm::bindings::kMethods) < 0) throw py::error_already_set();
    m.def(
        "cuda_sgemm_batched",
        [](const std::string& kernel, int64_t M, int64_t N, int64_t K, uintptr_t A, int64_t lda, int64_t stride_a,
           uintptr_t B, int64_t ldb, int64_t stride_b, uintptr_t C, int64_t ldc, int64_t stride_c, int64_t count,
           bool trans_a, bool trans_b, float alpha, float beta, uintptr_t stream, int device,
           const std::string& precision) {
            fastgemm::cuda::DeviceOperands d;
            fastgemm::Problem& p = d.problem;
            p.M = M, p.N = N, p.K = K;
            p.lda = lda, p.ldb = ldb, p.ldc = ldc;
            p.trans_a = trans_a, p.trans_b = trans_b;
            p.alpha = alpha, p.beta = beta;
            d.A = reinterpret_cast<const float*>(A);
            d.B = reinterpret_cast<const float*>(B);
            d.C = reinterpret_cast<float*>(C);
            fastgemm::cuda::BatchStrides batch{count, stride_a, stride_b, stride_c};
            fastgemm::cuda::DeviceCall call;
            call.kernel = kernel;
            call.accuracy = fastgemm::parse_accuracy(precision);
            call.stream = stream;
            call.device = device;
            return fastgemm::bindings::without_gil(
                [&] { return fastgemm::cuda::run_device_gemm_batched(d, batch, call); });
        },
        py::arg("kernel"), py::arg("M"), py::arg("N"), py::arg("K"), py::arg("A"), py::arg("lda"),
        py::arg("stride_a"), py::arg("B"), py::arg("ldb"), py::arg("stride_b"), py::arg("C"), py::arg("ldc"),
        py::arg("stride_c"), py::arg("count"), py::arg("trans_a"), py::arg("trans_b"), py::arg("alpha"),
        py::arg("beta"), py::arg("stream") = 0, py::arg("device") = -1, py::arg("precision") = "fp32",
        "`count` products of one shape on device pointers, operand i at A + i * stride_a (likewise B, C; "
        "elements, 0 repeats a matrix), in one cuBLAS strided-batched launch queued on `stream`. Returns the "
        "name of what ran.");
}
