// Interrupt: lets Ctrl-C stop long native work without waiting for the call to end.
//
// A caller that can be interrupted (the Python face) holds an InterruptScope around a
// native call that may run long. While any scope is alive, SIGINT sets a process-wide
// flag and then runs the handler that was installed before ours (CPython's, which
// schedules KeyboardInterrupt). Long loops poll interrupt_requested() between blocks
// and return early; callers see the flag after the kernel returns and throw
// Interrupted, so a partial C is never reported as a result.
//
// The flag means something only inside a scope: a SIGINT that arrives while no scope
// is alive leaves it clear, so a later call (scoped or not, the C++ face included)
// never returns early because of an old Ctrl-C.
//
// Cost: the chaining handler is installed by the first scope and stays; each scope
// then asks the kernel once whether it is still ours (Python's signal.signal may have
// replaced it) and reinstalls it if not. That one system call is why callers open a
// scope only for calls long enough to need one (the bindings: above ~1e8 FLOPs).
#pragma once

#include "errors.hpp"

namespace fastgemm {

// One relaxed atomic load: cheap enough for every block of a loop nest.
bool interrupt_requested();

// Thrown instead of returning a result that an interrupt cut short.
struct Interrupted : KernelError {
    Interrupted() : KernelError("interrupted by a signal (Ctrl-C) before the result was complete") {}
};

// Throws Interrupted when the flag is set.
void throw_if_interrupted();

// Whether a Ctrl-C would reach interrupt_requested() now: a scope is alive and its
// handler is installed. Work that can only stop between calls it makes (the BLAS
// baseline) splits itself into pieces only then.
bool interrupt_armed();

// Arms the flag for its lifetime (counted across threads: the first live scope clears
// it). Nothing is installed when SIGINT is ignored or has its default action, since
// chaining to those has no meaning; the flag is then never set.
class InterruptScope {
public:
    InterruptScope();
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;
};

}  // namespace fastgemm
