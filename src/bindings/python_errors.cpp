// See python_errors.hpp.
#include "bindings/python_errors.hpp"

#include <pybind11/pybind11.h>

#include <new>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"

namespace py = pybind11;

namespace fastgemm::bindings {

namespace {

void raise(const char* cls, const std::string& message) {
    py::object errors = py::module_::import("fastgemm.errors");
    PyErr_SetString(errors.attr(cls).ptr(), message.c_str());
}

// True when `e` was one of ours (or a standard error with a Python counterpart) and
// the Python error is now set.
bool translate(std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (const ShapeError& x) {
        raise("ShapeError", x.what());
    } catch (const DTypeError& x) {
        raise("DTypeError", x.what());
    } catch (const ConstraintError& x) {
        raise("ConstraintError", x.what());
    } catch (const NotFoundError& x) {
        raise("NotFoundError", x.what());
    } catch (const BackendUnavailableError& x) {
        raise("BackendUnavailableError", x.what());
    } catch (const KernelError& x) {
        raise("KernelError", x.what());
    } catch (const ArgumentError& x) {
        raise("ArgumentError", x.what());
    } catch (const OutOfMemoryError& x) {
        raise("OutOfMemoryError", x.what());
    } catch (const Error& x) {
        raise("FastgemmError", x.what());
    } catch (const std::bad_alloc& x) {  // an allocation the system refused inside the core
        raise("OutOfMemoryError", std::string("out of memory: ") + x.what() + " in fastgemm's native core");
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
