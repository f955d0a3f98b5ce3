// Interrupt: lets Ctrl-C stop long native work (a slow loop order at 2048^3 runs for a
// minute per call) without waiting for the call to end.
//
// A caller that can be interrupted (the Python face) holds an InterruptScope around the
// native call. While any scope is alive, SIGINT first sets a process-wide flag and then
// runs the handler that was installed before (CPython's, which schedules
// KeyboardInterrupt). Long host loops poll interrupt_requested() between rows or
// columns and return early; the Runner and the bindings see the flag after the kernel
// returns and throw Interrupted, so a partial C is never reported as a result. Without
// a scope the flag is never set and kernels run to completion (the C++ face).
#pragma once

#include "errors.hpp"

namespace fastgemm {

// One relaxed atomic load: cheap enough for every row of a loop nest.
bool interrupt_requested();

// Thrown instead of returning a result that an interrupt cut short.
struct Interrupted : KernelError {
    Interrupted() : KernelError("interrupted by a signal (Ctrl-C) before the result was complete") {}
};

// Throws Interrupted when the flag is set.
void throw_if_interrupted();

// Installs the chaining SIGINT handler for its lifetime (reference-counted across
// threads: the first scope installs it and clears the flag, the last one restores the
// previous handler). Nothing is installed when SIGINT is ignored or has its default
// action, since chaining to those has no meaning.
class InterruptScope {
public:
    InterruptScope();
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;
};

}  // namespace fastgemm
