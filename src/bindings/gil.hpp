// Running native work without the GIL, safely at interpreter exit, and interruptibly.
//
// without_gil(f): releases the GIL around f() and takes it back afterwards with no C++
// destructor involved. At interpreter exit CPython ends (pthread_exit) a thread that
// asks for the GIL; unwinding that through a destructor (which is noexcept) would abort
// the process, so a call finishing while the interpreter finalizes parks its thread
// instead (it is a daemon thread that CPython is about to discard anyway), as CPython
// 3.14 itself does.
//
// interruptible(f): without_gil inside an InterruptScope, so Ctrl-C stops a long kernel
// (its loops poll the flag), when Python's default SIGINT handler is in place. An
// interrupted call raises what Python's SIGINT handler raises (KeyboardInterrupt); off
// the main thread, where Python runs no handlers, it raises KernelError saying the call
// was interrupted.
#pragma once

#include <pybind11/pybind11.h>

#include <unistd.h>

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif

#include "core/interrupt.hpp"

namespace fastgemm::bindings {

inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

// Finalization can still begin between the check and PyEval_RestoreThread, which then
// ends the thread by a forced unwind from here (a race seen on CPython 3.11, where Ctrl-C
// in join() can drop the joined thread from those that finalization waits for, so the
// interpreter finalizes while that thread computes). The unwind must reach CPython's
// frames: every catch (...) between a call of this and Python rethrows
// abi::__forced_unwind.
inline void take_gil_back(PyThreadState* state) {
    while (interpreter_finalizing()) pause();
    PyEval_RestoreThread(state);
}

// The GIL is taken back outside any handler, so a forced unwind (pthread_exit at
// interpreter exit, from inside f()) passes through untouched.
template <class F>
auto without_gil(F&& f) -> decltype(f()) {
    using Result = decltype(f());
    PyThreadState* state = PyEval_SaveThread();
    std::exception_ptr error;
    [[maybe_unused]] std::optional<std::conditional_t<std::is_void_v<Result>, char, Result>> result;
    try {
        if constexpr (std::is_void_v<Result>)
            f();
        else
            result.emplace(f());
#if defined(__GLIBCXX__)
    } catch (abi::__forced_unwind&) {
        throw;
#endif
    } catch (...) {
        error = std::current_exception();
    }
    take_gil_back(state);
    if (error) std::rethrow_exception(error);
    if constexpr (!std::is_void_v<Result>) return std::move(*result);
}

// Whether Ctrl-C should stop native work: only while Python's SIGINT handler is its
// default, the one that raises KeyboardInterrupt. A program that installed its own
// handler (which may just log and return) gets what numpy gives it: the call completes,
// then the handler runs. Needs the GIL. The signal module is imported once and its
// objects kept (never released: they outlive finalization), because an import on every
// call takes a module lock, and a fork() while another thread holds it leaves the child
// a lock that nobody will release.
inline bool ctrl_c_raises_keyboard_interrupt() {
    namespace py = pybind11;
    struct SignalApi {
        PyObject* getsignal = nullptr;
        PyObject* sigint = nullptr;
        PyObject* default_handler = nullptr;
    };
    static const SignalApi api = [] {
        SignalApi a;
        try {
            py::module_ signal = py::module_::import("signal");
            a.getsignal = py::object(signal.attr("getsignal")).release().ptr();
            a.sigint = py::object(signal.attr("SIGINT")).release().ptr();
            a.default_handler = py::object(signal.attr("default_int_handler")).release().ptr();
        } catch (const py::error_already_set&) {
            a = SignalApi{};  // no signal module (an embedded interpreter): run to completion
        }
        return a;
    }();
    if (!api.getsignal) return false;
    try {
        py::object current = py::reinterpret_borrow<py::object>(api.getsignal)(py::handle(api.sigint));
        return current.ptr() == api.default_handler;
    } catch (const py::error_already_set&) {
        return false;
    }
}

template <class F>
auto interruptible(F&& f) -> decltype(f()) {
    if (!ctrl_c_raises_keyboard_interrupt()) return without_gil(std::forward<F>(f));
    InterruptScope scope;
    try {
        return without_gil(std::forward<F>(f));
    } catch (const Interrupted&) {
        if (PyErr_CheckSignals() != 0) throw pybind11::error_already_set();
        throw;
    }
}

}  // namespace fastgemm::bindings
