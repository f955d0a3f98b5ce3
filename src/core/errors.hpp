// The errors fastgemm raises. Each maps to one Python exception class of the same name
// (python/fastgemm/errors.py), so C++ and Python users see the same message.
#pragma once

#include <stdexcept>
#include <string>

namespace fastgemm {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Operand shapes, ranks or leading dimensions do not fit the problem.  (Python: ValueError)
struct ShapeError : Error {
    using Error::Error;
};
// An operand has the wrong element type.  (Python: TypeError)
struct DTypeError : Error {
    using Error::Error;
};
// The problem violates a kernel's registered constraint.  (Python: ValueError)
struct ConstraintError : Error {
    using Error::Error;
};
// No kernel or backend of that name.  (Python: KeyError + ValueError)
struct NotFoundError : Error {
    using Error::Error;
};
// The backend exists but cannot run on this machine.  (Python: RuntimeError)
struct BackendUnavailableError : Error {
    using Error::Error;
};
// A kernel ran but its result failed verification, or a device reported an error.
struct KernelError : Error {
    using Error::Error;
};
// An option other than the problem is out of its range (iters < 1, say).  (Python: ValueError)
struct ArgumentError : Error {
    using Error::Error;
};
// The request needs more host or device memory than is available.  (Python: MemoryError)
// It derives from Error, not std::bad_alloc: one `catch (const fastgemm::Error&)` then
// sees every refusal of fastgemm's own, and a class deriving from both would make
// `catch (const std::exception&)` miss it (two std::exception bases are ambiguous).
struct OutOfMemoryError : Error {
    using Error::Error;
};

}  // namespace fastgemm
