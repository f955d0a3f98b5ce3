// fastgemm: the public C++ API. One header for programs that embed fastgemm; the
// Python package is a second face of the same library (libfastgemm), so a kernel,
// its constraints, its error messages and its timings are the same in both.
//
//   #include <fastgemm/fastgemm.hpp>
//   fastgemm::Context ctx;                                  // best available backend
//   ctx.sgemm(fastgemm::Trans::N, fastgemm::Trans::N, M, N, K,
//             1.0f, A, lda, B, ldb, 0.0f, C, ldc);          // row-major, BLAS semantics
//   for (const auto& k : ctx.kernels()) std::cout << k.name << "\n";
//   fastgemm::Timings t = ctx.benchmark("auto", 512, 512, 512, {});
//
// Errors are exceptions derived from fastgemm::Error (a std::runtime_error), declared
// in core/errors.hpp. The Python module translates each one to the class of the same
// name in fastgemm.errors with the same what() text:
//   ShapeError               sizes, leading dimensions, null or overlapping operands
//   DTypeError               (Python only: C++ operands are float* by type)
//   ConstraintError          the chosen kernel's registered constraint rejects the problem
//   NotFoundError            no backend or kernel of that name
//   BackendUnavailableError  the backend exists but cannot run on this machine
//   KernelError              a device reported an error, or a run was interrupted
//   ArgumentError            an option out of its range (iters < 1, a thread count < 1)
//   OutOfMemoryError         the request needs more host or device memory than is free
//
// Thread safety: see context.hpp. A Context may be shared by any number of threads.
#pragma once

#include "core/backend.hpp"
#include "core/build_info.hpp"  // version(), compiler(), cpu_model()
#include "core/errors.hpp"
#include "core/kernel_info.hpp"
#include "core/problem.hpp"
#include "core/runner.hpp"      // BenchResult, Verification, tolerance_for
#include "core/threads.hpp"     // get_num_threads, set_num_threads
#include "context.hpp"
#include "timings.hpp"
#include "trans.hpp"
