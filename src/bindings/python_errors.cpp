// See python_errors.hpp.
#include "bindings/python_errors.hpp"

#include <pybind11/pybind11.h>

#include <new>
#include <stdexcept>

#include "core/errors.hpp"

namespace py = pybind11;

namespace fastgemm::bindings {

namespace {

void raise(const char* cls, const std::exception& e) {
    py::object errors = py::module_::import("fastgemm.errors");
    PyErr_SetString(errors.attr(cls).ptr(), e.what());
}

// True when `e` was one of ours (or a standard error with a Python counterpart) and
// the Python error is now set.
bool translate(std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (const ShapeError& x) {
        raise("ShapeError", x);
    } catch (const DTypeError& x) {
        raise("DTypeError", x);
    } catch (const ConstraintError& x) {
        raise("ConstraintError", x);
    } catch (const NotFoundError& x) {
        raise("NotFoundError", x);
    } catch (const BackendUnavailableError& x) {
        raise("BackendUnavailableError", x);
    } catch (const KernelError& x) {
        raise("KernelError", x);
    } catch (const ArgumentError& x) {
        raise("ArgumentError", x);
    } catch (const OutOfMemoryError& x) {
        raise("OutOfMemoryError", x);
    } catch (const Error& x) {
        raise("FastgemmError", x);
    } catch (const std::bad_alloc& x) {  // an allocation the system refused inside the core
        py::object errors = py::module_::import("fastgemm.errors");
        PyErr_SetString(errors.attr("OutOfMemoryError").ptr(),
                        (std::string("out of memory: ") + x.what() + " in fastgemm's native core").c_str());
    } catch (...) {
        return false;
    }
    return true;
}

}  // namespace

void register_error_translator() {
    py::register_exception_translator([](std::exception_ptr e) {
        if (e && !translate(e)) std::rethrow_exception(e);  // pybind11's own translators next
    });
}

void* set_python_error(std::exception_ptr e) {
    try {
        if (translate(e)) return nullptr;
        std::rethrow_exception(e);
    } catch (py::error_already_set& x) {
        x.restore();
    } catch (const std::invalid_argument& x) {
        PyErr_SetString(PyExc_ValueError, x.what());
    } catch (const std::exception& x) {
        PyErr_SetString(PyExc_RuntimeError, x.what());
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception in fastgemm");
    }
    return nullptr;
}

}  // namespace fastgemm::bindings
