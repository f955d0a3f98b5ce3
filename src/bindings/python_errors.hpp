// The core's exceptions as the Python classes of fastgemm.errors (same names, same
// messages), for pybind11-bound functions (register_error_translator) and for the
// functions written against the CPython API directly (set_python_error).
#pragma once

#include <exception>

namespace fastgemm::bindings {

// Registers the translation with pybind11; call once from the module's init.
void register_error_translator();

// Sets the Python error for the exception `e` (a fastgemm error, std::bad_alloc, any
// std::exception) and returns nullptr, for a CPython-API function to return.
void* set_python_error(std::exception_ptr e);

}  // namespace fastgemm::bindings
