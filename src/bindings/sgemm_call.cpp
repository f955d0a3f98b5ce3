// fastgemm.sgemm's native half: the whole call for plain numpy arrays, in one C
// function, so that a small problem costs about what np.matmul does.
//
// python/fastgemm/api.py's sgemm passes its arguments straight here. When every
// argument is of the common kind (exact float32 ndarrays with unit stride along rows
// or columns, C absent or not overlapping A and B, Python floats and bools, str names)
// the call is made here: views and the problem are read off the arrays through the
// NumPy C API, the kernel is looked up (kernel="auto": the selection policy's table),
// and it runs, with the GIL released only when the problem is big enough for that to
// matter and an InterruptScope only when it is long enough to need one. Anything else
// returns NotImplemented, and api.py takes its general path (array-likes, strided and
// overlapping views, device arrays, every error message), which ends in the same core.
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL fastgemm_ARRAY_API
#include <pybind11/pybind11.h>

#include <numpy/arrayobject.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "bindings/gil.hpp"
#include "bindings/python_errors.hpp"
#include "core/registry.hpp"
#include "core/selection.hpp"

namespace py = pybind11;

namespace fastgemm::bindings {
namespace {

// Below this many FLOPs the GIL stays held (releasing and taking it back costs more
// than other threads could gain); above the second, Ctrl-C must be able to stop the
// call, which costs a system call to arm.
constexpr double kReleaseGilFlops = 2.0e5;
constexpr double kInterruptibleFlops = 1.0e8;

// A 2-D float32 array as a row-major (pointer, rows, cols, ld) view. transposed: the
// view is the array's transpose (the array is column-major), so its op flag flips.
struct View {
    float* data = nullptr;
    int64_t rows = 0, cols = 0, ld = 0;
    bool transposed = false;
    const char* begin() const { return reinterpret_cast<const char*>(data); }
    const char* end() const { return begin() + ((rows - 1) * ld + cols) * int64_t(sizeof(float)); }
};

bool overlap(const View& a, const View& b) { return a.begin() < b.end() && b.begin() < a.end(); }

// False when `obj` is not an array the fast path takes (the general path decides).
bool view_of(PyObject* obj, View& v, bool writable) {
    if (!PyArray_CheckExact(obj)) return false;
    auto* a = reinterpret_cast<PyArrayObject*>(obj);
    if (PyArray_NDIM(a) != 2 || PyArray_TYPE(a) != NPY_FLOAT || !PyArray_ISNOTSWAPPED(a) || !PyArray_ISALIGNED(a))
        return false;
    if (writable && !PyArray_ISWRITEABLE(a)) return false;
    const npy_intp r = PyArray_DIM(a, 0), c = PyArray_DIM(a, 1);
    const npy_intp s0 = PyArray_STRIDE(a, 0), s1 = PyArray_STRIDE(a, 1);
    const npy_intp f = npy_intp(sizeof(float));
    if (r == 0 || c == 0) return false;
    auto row_step_ok = [f](npy_intp step, npy_intp n, npy_intp len) {
        return n == 1 || (step > 0 && step % f == 0 && step >= f * len);
    };
    v.data = static_cast<float*>(PyArray_DATA(a));
    if ((c == 1 || s1 == f) && row_step_ok(s0, r, c)) {
        v.rows = r, v.cols = c, v.ld = r == 1 ? c : s0 / f, v.transposed = false;
        return true;
    }
    if ((r == 1 || s0 == f) && row_step_ok(s1, c, r)) {
        v.rows = c, v.cols = r, v.ld = c == 1 ? r : s1 / f, v.transposed = true;
        return true;
    }
    return false;
}

bool flag_of(PyObject* obj, bool& out) {
    if (obj == Py_True) return out = true, true;
    if (obj == Py_False) return out = false, true;
    return false;
}

// A Python float or int that float32 represents (NaN and Inf included); a finite value
// that float32 would turn into Inf or 0 is left to the general path, which refuses it.
bool scalar_of(PyObject* obj, float& out) {
    double d = 0.0;
    if (PyFloat_CheckExact(obj)) {
        d = PyFloat_AS_DOUBLE(obj);
    } else if (PyLong_CheckExact(obj)) {
        d = PyLong_AsDouble(obj);
        if (d == -1.0 && PyErr_Occurred()) return PyErr_Clear(), false;
    } else {
        return false;
    }
    out = float(d);
    return !std::isfinite(d) || (std::isfinite(out) && (out != 0.0f || d == 0.0));
}

// A non-empty name without NUL (the general path explains any other).
bool text_of(PyObject* obj, std::string& out) {
    if (!PyUnicode_CheckExact(obj)) return false;
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(obj, &n);
    if (!s) return PyErr_Clear(), false;
    if (n == 0 || std::memchr(s, '\0', size_t(n))) return false;
    out.assign(s, size_t(n));
    return true;
}

PyObject* not_mine() { Py_RETURN_NOTIMPLEMENTED; }

// sgemm_call(A, B, C, alpha, beta, trans_a, trans_b, kernel, backend, precision):
// C (or a new array) after C = alpha * op(A) op(B) + beta * C, or NotImplemented.
PyObject* sgemm_call(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "sgemm_call takes 10 positional arguments");
        return nullptr;
    }
    View a, b, c;
    bool trans_a = false, trans_b = false;
    float alpha = 1.0f, beta = 0.0f;
    std::string kernel, backend, precision;
    PyObject* C = args[2];
    if (!view_of(args[0], a, false) || !view_of(args[1], b, false) || !scalar_of(args[3], alpha) ||
        !scalar_of(args[4], beta) || !flag_of(args[5], trans_a) || !flag_of(args[6], trans_b) ||
        !text_of(args[7], kernel) || !text_of(args[8], backend) || !text_of(args[9], precision))
        return not_mine();
    // The caller's op(A) is M x K and op(B) K x N; a transposed view flips its flag.
    const int64_t M = trans_a != a.transposed ? a.cols : a.rows;
    const int64_t K = trans_a != a.transposed ? a.rows : a.cols;
    const int64_t Kb = trans_b != b.transposed ? b.cols : b.rows;
    const int64_t N = trans_b != b.transposed ? b.rows : b.cols;
    if (K != Kb) return not_mine();
    // The emulator runs a product thousands of times slower than a CPU kernel, so even a
    // small one can take seconds: its calls take the general path, which always lets
    // Ctrl-C stop them (this path's call overhead is nothing beside theirs).
    if (backend == "metal-emu") return not_mine();
    Accuracy accuracy;
    if (precision == "fp32") accuracy = Accuracy::fp32;
    else if (precision == "strict") accuracy = Accuracy::strict;
    else if (precision == "tf32") accuracy = Accuracy::tf32;
    else return not_mine();

    py::object out;
    if (C == Py_None) {
        if (beta != 0.0f) return not_mine();
        npy_intp dims[2] = {npy_intp(M), npy_intp(N)};
        PyObject* fresh = PyArray_SimpleNew(2, dims, NPY_FLOAT);
        if (!fresh) return nullptr;
        out = py::reinterpret_steal<py::object>(fresh);
        if (!view_of(fresh, c, true)) return not_mine();
    } else {
        if (!view_of(C, c, true)) return not_mine();
        auto* ca = reinterpret_cast<PyArrayObject*>(C);
        if (PyArray_DIM(ca, 0) != M || PyArray_DIM(ca, 1) != N) return not_mine();
        if (overlap(c, a) || overlap(c, b)) return not_mine();  // the general path copies
        out = py::reinterpret_borrow<py::object>(C);
    }

    Problem p;
    p.alpha = alpha, p.beta = beta;
    const float *pa = a.data, *pb = b.data;
    bool ta = trans_a != a.transposed, tb = trans_b != b.transposed;
    if (!c.transposed) {
        p.M = M, p.N = N, p.K = K, p.lda = a.ld, p.ldb = b.ld;
    } else {
        // Column-major C: C^T = op(B)^T op(A)^T is a row-major problem, without copies.
        p.M = N, p.N = M, p.K = K, p.lda = b.ld, p.ldb = a.ld;
        std::swap(pa, pb);
        const bool t = ta;
        ta = !tb, tb = !t;
    }
    p.trans_a = ta, p.trans_b = tb, p.ldc = c.ld;

    try {
        const Kernel* named = nullptr;
        if (kernel != "auto") {
            named = &Registry::global().resolve_kernel(backend, kernel);
            // A kernel with constraints sees the caller's problem exactly, never a
            // rewrite of it that its constraints might refuse: the general path keeps it.
            if (!named->info().constraints.empty() && (a.transposed || b.transposed || c.transposed))
                return not_mine();
        }
        float* pc = c.data;
        auto work = [&] {
            if (named) {
                named->run_once(p, pa, pb, pc);
            } else {
                run_selected(backend, p, accuracy, pa, pb, pc);
            }
        };
        const double flops = p.flops();
        if (flops >= kInterruptibleFlops)
            interruptible(work);
        else if (flops >= kReleaseGilFlops)
            without_gil(work);
        else
            work();
#if defined(__GLIBCXX__)
    } catch (abi::__forced_unwind&) {
        throw;  // this thread is being ended (see gil.hpp): never stop the unwind here
#endif
    } catch (...) {
        return static_cast<PyObject*>(set_python_error(std::current_exception()));
    }
    return out.release().ptr();
}

PyMethodDef kMethods[] = {
    {"sgemm_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&sgemm_call)), METH_FASTCALL,
     "sgemm_call(A, B, C, alpha, beta, trans_a, trans_b, kernel, backend, precision)\n--\n\n"
     "fastgemm.sgemm for plain float32 numpy arrays: C (or a new array), or NotImplemented when the "
     "arguments need the general path."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void bind_sgemm_call(py::module_& m) {
    if (_import_array() < 0) throw py::error_already_set();
    if (PyModule_AddFunctions(m.ptr(), kMethods) < 0) throw py::error_already_set();
}

}  // namespace fastgemm::bindings
